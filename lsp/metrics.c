/*
 * metrics.c - metrics.file: the server's counters in Prometheus text format
 * (exposition format 0.0.4), written every METRICS_INTERVAL_MS and once more
 * when the server closes, for node_exporter's textfile collector or anything
 * that reads such a file. No listening socket: a file is all an operator has
 * to point a collector at, and it costs nothing while nobody reads it.
 *
 * The file is written whole to "<file>.<pid>.tmp" beside it and renamed over
 * it, so a reader sees the previous version or the new one, never half of
 * one (rename is atomic within a filesystem; the temporary name does not end
 * in .prom, so the textfile collector never reads it).
 *
 * What it holds: the infill/stats counters (completion_rpc.c fills a struct
 * stats, stats.h), the latency of every answered request as a histogram per
 * path (typed, cold, fast, none: enum completion_path), the length of the top
 * suggestion as a histogram, the prefix cache's share of prompt tokens, the
 * feedback counts per language and shape, and answers the deadline cut.
 * Neighbours: completion_rpc.c calls metrics_record for each answer,
 * workspace.c calls metrics_apply when the settings change, server.c owns it.
 *
 * Threads: the loop thread's alone (the file is small, written synchronously
 * there: a few KiB every 5 s).
 */
#include "server_priv.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define METRICS_INTERVAL_MS 5000

/* Upper bounds of the histograms' buckets (+Inf is added): latency in
 * seconds, as Prometheus names durations; suggestion lengths in bytes. */
static const double latency_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 5.0 };
#define LATENCY_BUCKETS (sizeof latency_bounds / sizeof latency_bounds[0])
static const double length_bounds[] = { 1, 4, 16, 32, 64, 128, 256, 512, 1024, 4096 };
#define LENGTH_BUCKETS (sizeof length_bounds / sizeof length_bounds[0])

/* The label of each enum completion_path, in enum order. */
static const char *const path_names[] = { "none", "typed", "cold", "fast" };
#define PATHS (sizeof path_names / sizeof path_names[0])

/* infill/stats counts exported as they are: X(stats field, metric name,
 * TYPE, help). Counters only grow while the server lives; gauges are the
 * current value. */
#define METRICS_STATS(X)                                                                       \
	X(requests, "infill_requests_total", "counter", "completion requests received")        \
	X(cancelled, "infill_requests_cancelled_total", "counter",                             \
	  "requests cancelled or superseded before their answer")                              \
	X(never_started, "infill_requests_never_started_total", "counter",                     \
	  "requests dropped before the engine processed any of their prompt")                  \
	X(fast_path, "infill_fast_path_total", "counter",                                      \
	  "answers from the previous result, no model run")                                    \
	X(cold_requests, "infill_cold_requests_total", "counter",                              \
	  "model runs that found less than half of their prompt in the prefix cache")          \
	X(prompt_tokens, "infill_prompt_tokens_total", "counter", "prompt tokens processed")   \
	X(cached_prompt_tokens, "infill_cached_prompt_tokens_total", "counter",                \
	  "prompt tokens served from the prefix cache")                                        \
	X(generated_tokens, "infill_generated_tokens_total", "counter", "tokens generated")    \
	X(rejected_candidates, "infill_rejected_candidates_total", "counter",                  \
	  "candidates dropped by validation or confidence")                                    \
	X(extended, "infill_extended_total", "counter",                                        \
	  "answers cut by the deadline whose candidates grew afterwards")                      \
	X(short_contexts, "infill_short_contexts_total", "counter",                            \
	  "answers from a shorter context (the full one not prefillable before the deadline)") \
	X(pace_deadlines, "infill_pace_deadlines_total", "counter",                            \
	  "requests whose deadline the typing pace set")                                       \
	X(remote_requests, "infill_remote_requests_total", "counter",                          \
	  "HTTP calls made to the remote server")                                              \
	X(remote_failures, "infill_remote_failures_total", "counter",                          \
	  "HTTP calls to the remote server that failed")                                       \
	X(remote_retries, "infill_remote_retries_total", "counter",                            \
	  "connection attempts to the remote server repeated")                                 \
	X(remote_deadline_cuts, "infill_remote_deadline_cuts_total", "counter",                \
	  "remote streams closed at completion.deadlineMs")                                    \
	X(open_documents, "infill_open_documents", "gauge", "documents open in the editor")    \
	X(kv_pages, "infill_kv_pages", "gauge", "pages in the KV pool of the loaded model")    \
	X(kv_touched_mb, "infill_kv_touched_megabytes", "gauge",                               \
	  "MiB of the KV pool ever written")                                                   \
	X(index_files, "infill_index_files", "gauge", "files in the workspace index")

/* The feedback counts exported per language and shape: X(key in the
 * feedback object, metric name, help). */
#define METRICS_FEEDBACK(X)                                                              \
	X("shown", "infill_suggestions_shown_total", "suggestions shown")                \
	X("accepted", "infill_suggestions_accepted_total", "suggestions accepted whole") \
	X("partlyAccepted", "infill_suggestions_partly_accepted_total",                  \
	  "suggestions accepted in part")                                                \
	X("acceptedChars", "infill_suggestions_accepted_chars_total",                    \
	  "characters of suggestions accepted")                                          \
	X("dismissed", "infill_suggestions_dismissed_total", "suggestions dismissed")

struct histogram {
	uint64_t buckets[LATENCY_BUCKETS > LENGTH_BUCKETS ? LATENCY_BUCKETS : LENGTH_BUCKETS];
	uint64_t count;
	double sum;
};

struct metrics {
	struct server *s;
	char *path;        /* metrics.file, or NULL: off */
	uv_timer_t timer;  /* runs while path is set */
	bool timer_inited; /* the handle exists (closed in metrics_close) */
	int last_error;    /* of the last write (0: it worked): warn once per change */
	struct histogram latency[PATHS];
	struct histogram length;
	uint64_t deadline_cuts;
	void (*close_done)(void *ud);
	void *close_ud;
};

struct metrics *metrics_new(struct server *s)
{
	struct metrics *m = calloc(1, sizeof *m);
	if (m) m->s = s;
	return m;
}

/* Counts v in h, whose bucket upper bounds are bounds[0..n). */
static void histogram_add(struct histogram *h, const double *bounds, size_t n, double v)
{
	for (size_t i = 0; i < n; i++)
		if (v <= bounds[i]) h->buckets[i]++;
	h->count++;
	h->sum += v;
}

void metrics_record(struct metrics *m, const struct completion_result *res, double ms)
{
	if (!m) return;
	size_t path = res && (size_t)res->path < PATHS ? (size_t)res->path : 0;
	histogram_add(&m->latency[path], latency_bounds, LATENCY_BUCKETS, ms / 1000.0);
	if (res && res->count)
		histogram_add(&m->length, length_bounds, LENGTH_BUCKETS,
		              (double)res->items[0].text_len);
	if (res && res->deadline_cut) m->deadline_cuts++;
}

/* ---- the text ----------------------------------------------------------- */

/* A growing text buffer; ok turns false on out of memory. */
struct out {
	char *buf;
	size_t len, cap;
	bool ok;
};

static void __attribute__((format(printf, 2, 3))) outf(struct out *o, const char *fmt, ...)
{
	if (!o->ok) return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->ok = false;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap * 2 + (size_t)n + 1;
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->ok = false;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
}

/* A label value as the format wants it: backslash, double quote and line
 * feed escaped. Language ids come from the client, so anything may be in
 * them. */
static void out_label(struct out *o, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			outf(o, "\\\\");
		else if (*v == '"')
			outf(o, "\\\"");
		else if (*v == '\n')
			outf(o, "\\n");
		else
			outf(o, "%c", *v);
	}
}

static void out_head(struct out *o, const char *name, const char *type, const char *help)
{
	outf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One histogram's series; label is `name="value",` or "". */
static void out_histogram(struct out *o, const char *name, const char *label,
                          const struct histogram *h, const double *bounds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		outf(o, "%s_bucket{%sle=\"%g\"} %llu\n", name, label, bounds[i],
		     (unsigned long long)h->buckets[i]);
	outf(o, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, label, (unsigned long long)h->count);
	size_t ll = strlen(label);
	/* the label without its trailing comma, in braces, or nothing */
	if (ll)
		outf(o, "%s_sum{%.*s} %.9g\n%s_count{%.*s} %llu\n", name, (int)(ll - 1), label,
		     h->sum, name, (int)(ll - 1), label, (unsigned long long)h->count);
	else
		outf(o, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name,
		     (unsigned long long)h->count);
}

/* The feedback object's counts ({language: {shape: {key: n}}}) as one
 * counter family per key, labelled by language and shape. */
static void out_feedback(struct out *o, const json_t *fb, const char *key, const char *name,
                         const char *help)
{
	out_head(o, name, "counter", help);
	const char *lang;
	json_t *shapes;
	json_object_foreach((json_t *)fb, lang, shapes)
	{
		const char *shape;
		json_t *counts;
		json_object_foreach(shapes, shape, counts)
		{
			json_t *v = json_object_get(counts, key);
			if (!json_is_integer(v)) continue;
			outf(o, "%s{language=\"", name);
			out_label(o, lang);
			outf(o, "\",shape=\"");
			out_label(o, shape);
			outf(o, "\"} %lld\n", (long long)json_integer_value(v));
		}
	}
}

/* The whole file as text (a new string the caller frees), NULL on out of
 * memory. */
static char *metrics_text(struct metrics *m)
{
	struct stats st;
	completions_stats(m->s, &st);
	struct out o = { .ok = true };

#define X(field, name, type, help)      \
	out_head(&o, name, type, help); \
	outf(&o, "%s %llu\n", name, (unsigned long long)st.field);
	METRICS_STATS(X)
#undef X

	out_head(&o, "infill_cache_share", "gauge",
	         "share of prompt tokens served from the prefix cache (0 before any)");
	outf(&o, "infill_cache_share %.6f\n",
	     st.prompt_tokens ? (double)st.cached_prompt_tokens / (double)st.prompt_tokens : 0.0);
	out_head(&o, "infill_deadline_cuts_total", "counter",
	         "answers whose candidates completion.deadlineMs stopped short");
	outf(&o, "infill_deadline_cuts_total %llu\n", (unsigned long long)m->deadline_cuts);
	out_head(&o, "infill_backend_info", "gauge",
	         "where the model runs (label backend), always 1");
	outf(&o, "infill_backend_info{backend=\"");
	out_label(&o, st.backend ? st.backend : "none");
	outf(&o, "\",kv_type=\"");
	out_label(&o, st.kv_type ? st.kv_type : "none");
	outf(&o, "\"} 1\n");

	out_head(&o, "infill_request_duration_seconds", "histogram",
	         "from a completion request's arrival to its answer, by path (typed: a model run "
	         "on a warm cache; cold: one on a mostly cold cache; fast: from the previous "
	         "result; none: no model run)");
	for (size_t i = 0; i < PATHS; i++) {
		char label[32];
		snprintf(label, sizeof label, "path=\"%s\",", path_names[i]);
		out_histogram(&o, "infill_request_duration_seconds", label, &m->latency[i],
		              latency_bounds, LATENCY_BUCKETS);
	}
	out_head(&o, "infill_suggestion_bytes", "histogram",
	         "length of the first suggestion of each answer that had one (bytes)");
	out_histogram(&o, "infill_suggestion_bytes", "", &m->length, length_bounds, LENGTH_BUCKETS);

	if (st.feedback) {
#define X(key, name, help) out_feedback(&o, st.feedback, key, name, help);
		METRICS_FEEDBACK(X)
#undef X
	}
	json_decref(st.feedback);
	if (!o.ok) {
		free(o.buf);
		return NULL;
	}
	return o.buf;
}

/* ---- writing ------------------------------------------------------------ */

/* Writes the file whole beside it and renames it over: 0 or a negative
 * errno. */
static int write_file(const char *path, const char *text)
{
	size_t len = strlen(path) + 32;
	char *tmp = malloc(len);
	if (!tmp) return -ENOMEM;
	snprintf(tmp, len, "%s.%ld.tmp", path, (long)getpid());
	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		free(tmp);
		return rc;
	}
	size_t n = strlen(text), done = 0;
	while (done < n) {
		ssize_t w = write(fd, text + done, n - done);
		if (w < 0) {
			if (errno == EINTR) continue;
			rc = -errno;
			break;
		}
		done += (size_t)w;
	}
	if (close(fd) && !rc) rc = -errno;
	if (!rc && rename(tmp, path)) rc = -errno;
	if (rc) unlink(tmp);
	free(tmp);
	return rc;
}

static void metrics_write(struct metrics *m)
{
	if (!m->path) return;
	char *text = metrics_text(m);
	int rc = text ? write_file(m->path, text) : -ENOMEM;
	free(text);
	if (rc && rc != m->last_error)
		log_warn(m->s->log, "metrics.file %s: not written: %s", m->path, strerror(-rc));
	else if (!rc && m->last_error)
		log_info(m->s->log, "metrics.file %s: written again", m->path);
	m->last_error = rc;
}

static void on_timer(uv_timer_t *t)
{
	metrics_write(t->data);
}

void metrics_apply(struct metrics *m, const char *path)
{
	if (!m) return;
	if (path && !*path) path = NULL;
	if ((!path && !m->path) || (path && m->path && !strcmp(path, m->path))) return;
	free(m->path);
	m->path = path ? strdup(path) : NULL;
	m->last_error = 0;
	if (path && !m->path) log_warn(m->s->log, "metrics.file: out of memory; metrics are off");
	if (!m->path) {
		if (m->timer_inited) uv_timer_stop(&m->timer);
		return;
	}
	if (!m->timer_inited) {
		if (uv_timer_init(m->s->loop, &m->timer)) {
			log_warn(m->s->log, "metrics.file: no timer; metrics are off");
			free(m->path);
			m->path = NULL;
			return;
		}
		m->timer.data = m;
		m->timer_inited = true;
		uv_unref((uv_handle_t *)&m->timer); /* never what keeps the loop alive */
	}
	log_info(m->s->log, "metrics.file: writing %s every %d s", m->path,
	         METRICS_INTERVAL_MS / 1000);
	metrics_write(m); /* at once: an operator sees the file appear */
	uv_timer_start(&m->timer, on_timer, METRICS_INTERVAL_MS, METRICS_INTERVAL_MS);
}

static void timer_closed(uv_handle_t *h)
{
	struct metrics *m = h->data;
	void (*done)(void *) = m->close_done;
	m->close_done = NULL;
	if (done) done(m->close_ud);
}

void metrics_close(struct metrics *m, void (*done)(void *ud), void *ud)
{
	metrics_write(m); /* the last counts, so a short session leaves them too */
	if (!m->timer_inited) {
		done(ud);
		return;
	}
	m->close_done = done;
	m->close_ud = ud;
	uv_close((uv_handle_t *)&m->timer, timer_closed);
}

void metrics_free(struct metrics *m)
{
	if (!m) return;
	free(m->path);
	free(m);
}
