/*
 * cli_replay.c - `infill replay`: the daemon's latency benchmark. It starts
 * the real server (this binary, /proc/self/exe) as a child over pipes,
 * opens a source file with the next K characters after the start of line N
 * taken out, and types them back one at a time through the protocol, asking
 * for an inline completion after each keystroke as an editor does. It
 * prints p50/p90/p99 latency from request to response, how often the top
 * item was what the file really says next, and the share of
 * prompt tokens the prefix cache served (from infill/stats).
 *
 *   infill replay FILE [--line N] [--chars K] [--model M] [--no-cache] [--both]
 *                 [--pace MS] [--debounce MS] [--truncate] [--settings JSON]
 *                 [--json] [--verbose] [--log FILE]
 *
 * Pace: keystrokes are sequential. The next one is sent only after the
 * answer to the previous request arrived, then --pace ms later (default 0:
 * as fast as answers arrive). So every request is measured whole and none is
 * superseded; an editor typing faster than the answers come would see
 * superseded requests answered empty at once instead. completion.debounceMs
 * is 0 unless --debounce says otherwise: the figure is the pipeline's
 * latency, not a wait we chose.
 *
 * The document keeps the text after the retyped characters (the suffix an
 * editor would have) unless --truncate drops everything after the cursor.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ast.h"
#include "cli.h"
#include "stats.h"

/* ---- a minimal LSP client over pipes ------------------------------------ */

struct child {
	pid_t pid;
	int to, from; /* our ends of the child's stdin and stdout */
	char *buf;    /* bytes read, not yet parsed */
	size_t len, cap;
	json_int_t next_id;
	bool load_done, load_failed;
	char error[1024]; /* the last showMessage error */
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time the child has used so far, in ms (user + system, from
 * /proc/PID/stat); -1 when unknown. On a machine shared with other work the
 * wall-clock latency depends on what else runs; the CPU time a keystroke
 * costs does not. */
static double child_cpu_ms(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f) return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p) return -1;
	unsigned long long ut = 0, st = 0;
	/* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static int child_start(struct child *c, char *const argv[], const char *log_path)
{
	int in[2], out[2];
	if (pipe(in) || pipe(out)) return -errno;
	pid_t pid = fork();
	if (pid < 0) return -errno;
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		int fd = open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND,
		              0644);
		if (fd >= 0) dup2(fd, 2);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	memset(c, 0, sizeof *c);
	c->pid = pid;
	c->to = in[1];
	c->from = out[0];
	return 0;
}

static int child_send(struct child *c, json_t *msg)
{
	json_object_set_new(msg, "jsonrpc", json_string("2.0"));
	char *body = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!body) return -ENOMEM;
	char head[64];
	int hn = snprintf(head, sizeof head, "Content-Length: %zu\r\n\r\n", strlen(body));
	size_t blen = strlen(body);
	int rc = 0;
	if (write(c->to, head, (size_t)hn) != hn || write(c->to, body, blen) != (ssize_t)blen)
		rc = -EPIPE;
	free(body);
	return rc;
}

/* One message parsed from what was read, or NULL when it is not whole yet. */
static json_t *take_message(struct child *c)
{
	if (!c->buf) return NULL; /* nothing read yet */
	char *sep = memmem(c->buf, c->len, "\r\n\r\n", 4);
	if (!sep) return NULL;
	size_t hlen = (size_t)(sep - c->buf) + 4;
	size_t clen = 0;
	for (char *p = c->buf; p < sep; p++) {
		if (!strncasecmp(p, "Content-Length:", 15)) {
			clen = strtoul(p + 15, NULL, 10);
			break;
		}
	}
	if (c->len < hlen + clen) return NULL;
	json_t *m = json_loadb(c->buf + hlen, clen, 0, NULL);
	memmove(c->buf, c->buf + hlen + clen, c->len - hlen - clen);
	c->len -= hlen + clen;
	return m ? m : json_object();
}

/* The next message, waiting at most timeout_ms; NULL on timeout or EOF. */
static json_t *child_read(struct child *c, int timeout_ms)
{
	double deadline = now_ms() + timeout_ms;
	for (;;) {
		json_t *m = take_message(c);
		if (m) return m;
		int left = (int)(deadline - now_ms());
		if (left <= 0) return NULL;
		struct pollfd pfd = { c->from, POLLIN, 0 };
		if (poll(&pfd, 1, left) <= 0) continue;
		if (c->cap - c->len < 65536) {
			size_t cap = c->cap ? c->cap * 2 : 1 << 17;
			char *b = realloc(c->buf, cap);
			if (!b) return NULL;
			c->buf = b;
			c->cap = cap;
		}
		ssize_t n = read(c->from, c->buf + c->len, c->cap - c->len);
		if (n <= 0) return NULL;
		c->len += (size_t)n;
	}
}

/* Server requests get a plain answer; notifications update the load state. */
static void on_other(struct child *c, json_t *m)
{
	const char *method = json_string_value(json_object_get(m, "method"));
	json_t *id = json_object_get(m, "id");
	if (!method) return;
	if (id) {
		json_t *result =
		        !strcmp(method, "workspace/configuration") ? json_pack("[n]") : json_null();
		child_send(c, json_pack("{s:O, s:o}", "id", id, "result", result));
		return;
	}
	json_t *params = json_object_get(m, "params");
	if (!strcmp(method, "$/progress")) {
		json_t *v = json_object_get(params, "value");
		const char *kind = json_string_value(json_object_get(v, "kind"));
		if (kind && !strcmp(kind, "end")) {
			c->load_done = true;
			const char *msg = json_string_value(json_object_get(v, "message"));
			if (msg && !strcmp(msg, "failed")) c->load_failed = true;
		}
	} else if (!strcmp(method, "window/showMessage")) {
		if (json_integer_value(json_object_get(params, "type")) == 1) {
			snprintf(c->error, sizeof c->error, "%s",
			         json_string_value(json_object_get(params, "message")) ?: "");
			c->load_failed = true;
		}
	}
}

static json_t *child_request(struct child *c, const char *method, json_t *params, int timeout_ms)
{
	json_int_t id = ++c->next_id;
	if (child_send(c, json_pack("{s:I, s:s, s:o}", "id", id, "method", method, "params",
	                            params ? params : json_object())))
		return NULL;
	double deadline = now_ms() + timeout_ms;
	for (;;) {
		int left = (int)(deadline - now_ms());
		json_t *m = left > 0 ? child_read(c, left) : NULL;
		if (!m) return NULL;
		json_t *mid = json_object_get(m, "id");
		if (mid && !json_object_get(m, "method") && json_integer_value(mid) == id) return m;
		on_other(c, m);
		json_decref(m);
	}
}

static void child_notify(struct child *c, const char *method, json_t *params)
{
	child_send(c, json_pack("{s:s, s:o}", "method", method, "params", params));
}

static int child_finish(struct child *c)
{
	json_t *r = child_request(c, "shutdown", json_null(), 10000);
	json_decref(r);
	child_notify(c, "exit", json_null());
	close(c->to);
	int status = 0;
	for (int i = 0; i < 100; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid) goto done;
		usleep(50000);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
done:
	close(c->from);
	free(c->buf);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- the replay ------------------------------------------------------- */

struct replay_opts {
	const char *path, *model, *settings, *log;
	long line, chars, pace_ms, debounce_ms;
	bool truncate, as_json, verbose;
};

struct replay_figures {
	bool cache;
	size_t keystrokes, answered, non_empty;
	/* the top item is what the file really says next (its text is a prefix
	 * of the rest of the original file), and the characters it got right */
	size_t correct, correct_chars;
	double p50, p90, p99, mean, cold_ms, load_ms;
	double cpu_p50, cpu_p90, cpu_mean; /* server CPU ms per keystroke */
	json_int_t prompt, cached, generated, fast_path, rejected;
	double server_p50;
	char backend[32];
};

/* UTF-16 code units of the UTF-8 sequence starting with byte b. */
static int utf16_units(unsigned char b)
{
	return b >= 0xF0 ? 2 : 1;
}

static size_t utf8_len(unsigned char b)
{
	return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

static json_t *pos_json(long line, long ch)
{
	return json_pack("{s:I, s:I}", "line", (json_int_t)line, "character", (json_int_t)ch);
}

static json_t *stats_of(struct child *c)
{
	json_t *r = child_request(c, "infill/stats", NULL, 30000);
	json_t *res = json_incref(json_object_get(r, "result"));
	json_decref(r);
	return res;
}


static int replay_once(const struct replay_opts *o, const char *text, size_t len, size_t start,
                       size_t typed_len, bool cache, struct replay_figures *fig)
{
	memset(fig, 0, sizeof *fig);
	fig->cache = cache;
	char *argv[8];
	int argc = 0;
	argv[argc++] = "infill";
	argv[argc++] = "serve";
	argv[argc++] = "--user-config";
	argv[argc++] = "";
	if (o->model) {
		argv[argc++] = "--model";
		argv[argc++] = (char *)o->model;
	}
	argv[argc] = NULL;
	struct child c;
	int rc = child_start(&c, argv, o->log);
	if (rc) {
		fprintf(stderr, "infill replay: cannot start the server: %s\n", strerror(-rc));
		return 1;
	}
	json_t *init = json_object();
	if (o->settings) {
		json_error_t jerr;
		json_t *extra = json_loads(o->settings, 0, &jerr);
		if (!extra || !json_is_object(extra)) {
			fprintf(stderr, "infill replay: --settings is not a JSON object\n");
			json_decref(extra);
			json_decref(init);
			child_finish(&c);
			return 2;
		}
		json_object_update(init, extra);
		json_decref(extra);
	}
	json_object_set_new(init, "cache.enabled", json_boolean(cache));
	json_object_set_new(init, "completion.debounceMs", json_integer(o->debounce_ms));
	double t0 = now_ms();
	json_t *r = child_request(&c, "initialize",
	                          json_pack("{s:i, s:n, s:{s:{s:b}}, s:o}", "processId",
	                                    (int)getpid(), "rootUri", "capabilities", "window",
	                                    "workDoneProgress", 1, "initializationOptions", init),
	                          30000);
	if (!r) {
		fprintf(stderr, "infill replay: the server did not answer initialize\n");
		child_finish(&c);
		return 1;
	}
	json_decref(r);
	child_notify(&c, "initialized", json_object());
	/* the model loads on the server's engine thread: wait for its $/progress end */
	while (!c.load_done && !c.load_failed && now_ms() - t0 < 600000) {
		json_t *m = child_read(&c, 1000);
		if (m) {
			on_other(&c, m);
			json_decref(m);
		}
	}
	if (!c.load_done || c.load_failed) {
		/* the error message follows the progress end */
		for (int i = 0; i < 10 && !c.error[0]; i++) {
			json_t *m = child_read(&c, 100);
			if (m) {
				on_other(&c, m);
				json_decref(m);
			}
		}
		fprintf(stderr, "infill replay: the model did not load: %s\n",
		        c.error[0] ? c.error : "no progress report");
		child_finish(&c);
		return 1;
	}
	fig->load_ms = now_ms() - t0;

	/* the document: the file less the characters to retype */
	const char *uri = "file:///replay/document";
	size_t doc_len = o->truncate ? start : len - typed_len;
	char *doc = malloc(doc_len + 1);
	if (!doc) {
		child_finish(&c);
		return 1;
	}
	memcpy(doc, text, start);
	if (!o->truncate) memcpy(doc + start, text + start + typed_len, len - start - typed_len);
	doc[doc_len] = 0;
	const char *lang = ast_lang_id_from_path(o->path);
	json_t *docj = json_stringn(doc, doc_len);
	free(doc);
	if (!docj) {
		fprintf(stderr, "infill replay: the file is not valid UTF-8\n");
		child_finish(&c);
		return 1;
	}
	child_notify(&c, "textDocument/didOpen",
	             json_pack("{s:{s:s, s:s, s:i, s:o}}", "textDocument", "uri", uri, "languageId",
	                       lang, "version", 1, "text", docj));
	long line = o->line - 1, ch = 0;

	/* a first request from cold (the whole prompt is new): measured apart */
	double ts = now_ms();
	r = child_request(&c, "textDocument/inlineCompletion",
	                  json_pack("{s:{s:s}, s:o, s:{s:i}}", "textDocument", "uri", uri,
	                            "position", pos_json(line, ch), "context", "triggerKind", 2),
	                  600000);
	fig->cold_ms = now_ms() - ts;
	json_decref(r);
	if (o->verbose) fprintf(stderr, "first request (cold): %.1f ms\n", fig->cold_ms);
	json_t *s0 = stats_of(&c);

	size_t cap = typed_len + 1, n = 0;
	double *lat = malloc(cap * sizeof *lat);
	double *cpu = malloc(cap * sizeof *cpu);
	int version = 1;
	for (size_t i = 0; lat && cpu && i < typed_len;) {
		size_t k = utf8_len((unsigned char)text[start + i]);
		if (i + k > typed_len) k = typed_len - i;
		json_t *chunk = json_stringn(text + start + i, k);
		if (!chunk) chunk = json_string("?");
		child_notify(&c, "textDocument/didChange",
		             json_pack("{s:{s:s, s:i}, s:[{s:{s:o, s:o}, s:o}]}", "textDocument",
		                       "uri", uri, "version", ++version, "contentChanges", "range",
		                       "start", pos_json(line, ch), "end", pos_json(line, ch),
		                       "text", chunk));
		if (text[start + i] == '\n') {
			line++;
			ch = 0;
		} else {
			ch += utf16_units((unsigned char)text[start + i]);
		}
		i += k;
		fig->keystrokes++;
		double c0 = child_cpu_ms(c.pid);
		ts = now_ms();
		r = child_request(&c, "textDocument/inlineCompletion",
		                  json_pack("{s:{s:s}, s:o, s:{s:i}}", "textDocument", "uri", uri,
		                            "position", pos_json(line, ch), "context",
		                            "triggerKind", 2),
		                  600000);
		double ms = now_ms() - ts;
		if (r) {
			cpu[n] = child_cpu_ms(c.pid) - c0;
			lat[n++] = ms;
			fig->answered++;
			json_t *items = json_object_get(json_object_get(r, "result"), "items");
			if (json_array_size(items)) fig->non_empty++;
			const char *top = json_string_value(
			        json_object_get(json_array_get(items, 0), "insertText"));
			size_t tl = top ? strlen(top) : 0, rest = len - (start + i);
			if (tl && tl <= rest && !memcmp(top, text + start + i, tl)) {
				fig->correct++;
				fig->correct_chars += tl;
			}
			json_decref(r);
		}
		if (o->verbose)
			fprintf(stderr, "keystroke %zu: %.1f ms, server CPU %.0f ms%s\n",
			        fig->keystrokes, ms, r ? cpu[n - 1] : 0.0, r ? "" : " (no answer)");
		if (o->pace_ms > 0) usleep((useconds_t)o->pace_ms * 1000);
	}
	json_t *s1 = stats_of(&c);
	struct stats a, b; /* before and after the keystrokes (names borrowed from s1) */
	stats_from_json(s0, &a);
	stats_from_json(s1, &b);
	fig->prompt = (json_int_t)b.prompt_tokens - (json_int_t)a.prompt_tokens;
	fig->cached = (json_int_t)b.cached_prompt_tokens - (json_int_t)a.cached_prompt_tokens;
	fig->generated = (json_int_t)b.generated_tokens - (json_int_t)a.generated_tokens;
	fig->fast_path = (json_int_t)b.fast_path - (json_int_t)a.fast_path;
	fig->rejected = (json_int_t)b.rejected_candidates - (json_int_t)a.rejected_candidates;
	fig->server_p50 = b.latency_ms.p50;
	snprintf(fig->backend, sizeof fig->backend, "%s", b.backend ?: "?");
	json_decref(s0);
	json_decref(s1);
	if (lat && n) {
		double sum = 0;
		for (size_t i = 0; i < n; i++) sum += lat[i];
		fig->mean = sum / (double)n;
		stats_sort(lat, n);
		fig->p50 = stats_percentile(lat, n, 0.5);
		fig->p90 = stats_percentile(lat, n, 0.9);
		fig->p99 = stats_percentile(lat, n, 0.99);
		sum = 0;
		for (size_t i = 0; i < n; i++) sum += cpu[i];
		fig->cpu_mean = sum / (double)n;
		stats_sort(cpu, n);
		fig->cpu_p50 = stats_percentile(cpu, n, 0.5);
		fig->cpu_p90 = stats_percentile(cpu, n, 0.9);
	}
	free(lat);
	free(cpu);
	child_finish(&c);
	return fig->answered == fig->keystrokes ? 0 : 1;
}

static json_t *figures_json(const struct replay_figures *f)
{
	return json_pack(
	        "{s:b, s:I, s:I, s:I, s:{s:f, s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:f, s:f, "
	        "s:I, s:I, s:f, s:I, s:I, s:I, s:s, s:I, s:I}",
	        "cache", f->cache, "keystrokes", (json_int_t)f->keystrokes, "answered",
	        (json_int_t)f->answered, "nonEmpty", (json_int_t)f->non_empty, "latencyMs", "p50",
	        f->p50, "p90", f->p90, "p99", f->p99, "mean", f->mean, "serverCpuMs", "p50",
	        f->cpu_p50, "p90", f->cpu_p90, "mean", f->cpu_mean, "coldMs", f->cold_ms, "loadMs",
	        f->load_ms, stats_keys.prompt_tokens, f->prompt, stats_keys.cached_prompt_tokens,
	        f->cached, "cachedShare", f->prompt ? (double)f->cached / (double)f->prompt : 0.0,
	        stats_keys.generated_tokens, f->generated, stats_keys.fast_path, f->fast_path,
	        stats_keys.rejected_candidates, f->rejected, stats_keys.backend, f->backend,
	        "correct", (json_int_t)f->correct, "correctChars", (json_int_t)f->correct_chars);
}

static void figures_print(const struct replay_figures *f)
{
	printf("cache %s: %zu keystrokes, %zu answered (%zu non-empty), backend %s\n",
	       f->cache ? "on " : "off", f->keystrokes, f->answered, f->non_empty, f->backend);
	printf("  latency ms  p50 %.1f  p90 %.1f  p99 %.1f  mean %.1f  (first request, cold: %.1f; "
	       "model load %.0f)\n",
	       f->p50, f->p90, f->p99, f->mean, f->cold_ms, f->load_ms);
	printf("  server CPU ms per keystroke  p50 %.0f  p90 %.0f  mean %.0f\n", f->cpu_p50,
	       f->cpu_p90, f->cpu_mean);
	printf("  prompt tokens %lld, from the prefix cache %lld (%.1f%%); generated %lld; "
	       "fast path %lld; rejected %lld\n",
	       (long long)f->prompt, (long long)f->cached,
	       f->prompt ? 100.0 * (double)f->cached / (double)f->prompt : 0.0,
	       (long long)f->generated, (long long)f->fast_path, (long long)f->rejected);
	printf("  top item is what the file says next: %zu of %zu keystrokes (%.1f%%), %zu "
	       "characters\n",
	       f->correct, f->keystrokes,
	       f->keystrokes ? 100.0 * (double)f->correct / (double)f->keystrokes : 0.0,
	       f->correct_chars);
}

static void replay_usage(FILE *f)
{
	fprintf(f,
	        "usage: infill replay FILE [--line N] [--chars K] [--model M] [--no-cache] "
	        "[--both]\n"
	        "                     [--pace MS] [--debounce MS] [--truncate] [--settings JSON]\n"
	        "                     [--json] [--verbose] [--log FILE]\n"
	        "Starts the server as a child, opens FILE without the K characters (default 60)\n"
	        "from the start of line N (default: the middle line), retypes them one at a time\n"
	        "(didChange + inlineCompletion each; the next keystroke after the answer, plus\n"
	        "--pace ms), and reports request-to-response latency and prefix-cache reuse.\n"
	        "--both runs with the cache and then without; --no-cache runs without only.\n");
}

int cli_replay(int argc, char **argv)
{
	struct replay_opts o = { .line = 0, .chars = 60, .debounce_ms = 0 };
	bool no_cache = false, both = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			replay_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--line") && more) {
			o.line = atol(argv[++i]);
		} else if (!strcmp(a, "--chars") && more) {
			o.chars = atol(argv[++i]);
		} else if (!strcmp(a, "--model") && more) {
			o.model = argv[++i];
		} else if (!strcmp(a, "--pace") && more) {
			o.pace_ms = atol(argv[++i]);
		} else if (!strcmp(a, "--debounce") && more) {
			o.debounce_ms = atol(argv[++i]);
		} else if (!strcmp(a, "--settings") && more) {
			o.settings = argv[++i];
		} else if (!strcmp(a, "--log") && more) {
			o.log = argv[++i];
		} else if (!strcmp(a, "--no-cache")) {
			no_cache = true;
		} else if (!strcmp(a, "--both")) {
			both = true;
		} else if (!strcmp(a, "--truncate")) {
			o.truncate = true;
		} else if (!strcmp(a, "--json")) {
			o.as_json = true;
		} else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
			o.verbose = true;
		} else if (!o.path && a[0] != '-') {
			o.path = a;
		} else {
			fprintf(stderr, "infill replay: unknown argument %s (see --help)\n", a);
			return 2;
		}
	}
	if (!o.path || o.chars < 1 || o.line < 0 || o.pace_ms < 0 || o.debounce_ms < 0) {
		replay_usage(stderr);
		return 2;
	}
	FILE *f = fopen(o.path, "rb");
	if (!f) {
		fprintf(stderr, "infill replay: cannot open %s: %s\n", o.path, strerror(errno));
		return 1;
	}
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap + 1);
	while (text) {
		len += fread(text + len, 1, cap - len, f);
		if (len < cap) break;
		cap *= 2;
		char *t = realloc(text, cap + 1);
		if (!t) free(text);
		text = t;
	}
	fclose(f);
	if (!text) {
		fprintf(stderr, "infill replay: out of memory\n");
		return 1;
	}
	text[len] = 0;
	size_t lines = 1;
	for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
	if (o.line == 0) o.line = (long)(lines / 2);
	size_t start = 0;
	for (long l = 1; l < o.line && start < len; l++) {
		const char *nl = memchr(text + start, '\n', len - start);
		start = nl ? (size_t)(nl - text) + 1 : len;
	}
	size_t typed = 0;
	for (long k = 0; k < o.chars && start + typed < len; k++)
		typed += utf8_len((unsigned char)text[start + typed]);
	if (start + typed > len) typed = len - start;
	if (!typed) {
		fprintf(stderr, "infill replay: %s has nothing to type at line %ld\n", o.path,
		        o.line);
		free(text);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	struct replay_figures figs[2];
	int nf = 0, status = 0;
	if (!no_cache || both)
		status |= replay_once(&o, text, len, start, typed, true, &figs[nf++]);
	if ((no_cache || both) && !status)
		status |= replay_once(&o, text, len, start, typed, false, &figs[nf++]);
	free(text);
	if (o.as_json) {
		json_t *runs = json_array();
		for (int i = 0; i < nf; i++) json_array_append_new(runs, figures_json(&figs[i]));
		json_t *out = json_pack("{s:s, s:I, s:I, s:I, s:s, s:o}", "file", o.path, "line",
		                        (json_int_t)o.line, "chars", (json_int_t)o.chars, "paceMs",
		                        (json_int_t)o.pace_ms, "model",
		                        o.model ? o.model : "(default)", "runs", runs);
		if (nf == 2 && figs[0].p50 > 0)
			json_object_set_new(out, "p50NoCacheOverCache",
			                    json_real(figs[1].p50 / figs[0].p50));
		json_dumpf(out, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(out);
	} else {
		printf("replay %s from line %ld, %ld characters, pace %ld ms, model %s\n", o.path,
		       o.line, o.chars, o.pace_ms, o.model ? o.model : "(default)");
		for (int i = 0; i < nf; i++) figures_print(&figs[i]);
		if (nf == 2 && figs[0].p50 > 0)
			printf("p50 without the cache / with it: %.2fx\n",
			       figs[1].p50 / figs[0].p50);
	}
	return status ? 1 : 0;
}
