/*
 * engine_thread.c - the engine thread of the in-process pipeline: it loads the
 * model, runs each queued job through complete_run (complete.c), and,
 * when an answer was cut short by the deadline, decodes it again to full
 * length while nothing else waits (extend). It hands results and events to
 * the loop thread (pipeline.c) through pipeline_internal.h's lists and the async
 * handle; it never touches a loop-thread field.
 *
 * When nothing waits, it also prefills at low priority what the next
 * request will likely need (warm): the full context of an answer the
 * prefill budget shortened, the prompt as if the shown suggestion were
 * accepted, and the loop's hints (pipeline_warm: a file just opened, the
 * place of the last edit). Each is stopped by a new job within one chunk
 * (p->extend_cancel, set whenever a job is queued).
 *
 * The model loads at the first pipeline_configure (during `initialize`,
 * once initializationOptions are in), and again when `model`, `backend`,
 * `threads` or `cache.memoryMB` change.
 */
#include "pipeline_internal.h"

#include "gguf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void worker_spec_finish(struct load_spec *s)
{
	free(s->path);
	free(s->fallback);
	s->path = NULL;
	s->fallback = NULL;
}

/* Per-document memory of the engine thread (sticky snippets; see
 * complete.h), most recently used first, at most EDOC_MAX documents. */
#define EDOC_MAX 32

struct edoc {
	char *uri;
	struct complete_memory mem;
	struct edoc *next;
};

static struct complete_memory *edoc_memory(struct edoc **list, const char *uri)
{
	struct edoc **pp = list, *d;
	size_t n = 0;
	for (; (d = *pp); pp = &d->next, n++) {
		if (!strcmp(d->uri, uri)) {
			*pp = d->next; /* to the front */
			d->next = *list;
			*list = d;
			return &d->mem;
		}
	}
	if (n >= EDOC_MAX) { /* drop the least recently used */
		pp = list;
		while ((*pp)->next) pp = &(*pp)->next;
		complete_memory_finish(&(*pp)->mem);
		free((*pp)->uri);
		free(*pp);
		*pp = NULL;
	}
	d = calloc(1, sizeof *d);
	if (!d || !(d->uri = strdup(uri))) {
		free(d);
		return NULL;
	}
	d->next = *list;
	*list = d;
	return &d->mem;
}

static void edoc_free_all(struct edoc *d)
{
	while (d) {
		struct edoc *next = d->next;
		complete_memory_finish(&d->mem);
		free(d->uri);
		free(d);
		d = next;
	}
}

/* Hands ev (taken) to the loop thread. */
static void event_push(struct pipeline *p, struct event *ev)
{
	pthread_mutex_lock(&p->mu);
	if (p->events_tail)
		p->events_tail->next = ev;
	else
		p->events_head = ev;
	p->events_tail = ev;
	pthread_mutex_unlock(&p->mu);
	uv_async_send(&p->async);
}

static void post_event(struct pipeline *p, enum event_kind kind, int pct, bool ok, const char *msg)
{
	struct event *ev = calloc(1, sizeof *ev);
	if (!ev) return; /* a lost progress line is not worth failing for */
	ev->kind = kind;
	ev->percentage = pct;
	ev->ok = ok;
	snprintf(ev->message, sizeof ev->message, "%s", msg ? msg : "");
	event_push(p, ev);
}

void worker_result_finish(struct completion_result *r)
{
	for (size_t i = 0; i < r->count; i++) free(r->items[i].text);
	free(r->items);
	r->items = NULL;
	r->count = 0;
}

void worker_event_free(struct event *ev)
{
	if (ev->ext) {
		free(ev->ext->uri);
		free(ev->ext->text);
		worker_result_finish(&ev->ext->result);
		free(ev->ext);
	}
	free(ev);
}

/* Moves src's items into dst (texts moved, src left to finish). 0 or -ENOMEM. */
static int result_take(struct completion_result *dst, struct complete_result *src)
{
	dst->items = calloc(src->count + 1, sizeof *dst->items);
	if (!dst->items) return -ENOMEM;
	for (size_t i = 0; i < src->count; i++) {
		dst->items[i] = (struct completion_candidate){
			.text = src->items[i].text,
			.text_len = src->items[i].len,
			.start = src->items[i].start,
			.end = src->items[i].end,
			.score = src->items[i].score,
			.confidence = exp(src->items[i].mean_logprob),
		};
		src->items[i].text = NULL; /* moved */
	}
	dst->count = src->count;
	return 0;
}

struct load_progress {
	struct pipeline *p;
	int last;
};

static void on_load_progress(void *user, float fraction)
{
	struct load_progress *lp = user;
	int pct = (int)(fraction * 100.0f);
	if (pct < 0) pct = 0;
	if (pct > 100) pct = 100;
	if (pct / 5 == lp->last / 5) return; /* every 5%: enough for a progress bar */
	lp->last = pct;
	post_event(lp->p, EVENT_PROGRESS, pct, true, NULL);
}

/* What infill/stats says about the loaded model (engine thread). */
static void stats_set_model(struct pipeline *p, const char *backend, const char *kv_type,
                            int32_t kv_pages)
{
	pthread_mutex_lock(&p->mu);
	p->stats.backend = backend;
	p->stats.kv_type = kv_type;
	p->stats.kv_pages = kv_pages;
	pthread_mutex_unlock(&p->mu);
}

static const char *backend_word(const struct model *m)
{
	const char *name = model_info(m)->backend_name;
	return name && !strncmp(name, "cuda", 4) ? "cuda" : "cpu";
}

/* Loads the model at path as ms says (the engine thread's own copy),
 * replacing *mp and *ep. When it cannot be loaded and fallback (the
 * embedded model's path, or NULL) is given, the embedded model is loaded
 * instead with a warning that says so (a model that failed to load once
 * left completion silent after one message). */
static void load(struct pipeline *p, const char *path, const char *fallback,
                 const struct complete_model_spec *ms, struct model **mp, struct engine **ep)
{
	engine_free(*ep);
	model_free(*mp);
	*ep = NULL;
	*mp = NULL;
	if (!strcmp(path, PIPELINE_NO_MODEL)) {
		stats_set_model(p, "none", "none", 0);
		return; /* unloaded on purpose: answers stay empty */
	}
	char msg[600];
	snprintf(msg, sizeof msg, "%s", path);
	post_event(p, EVENT_LOAD_BEGIN, 0, true, msg);

	struct load_progress lp = { p, -100 };
	struct model *m;
	struct engine *e;
	struct infill_error err;
	bool fell_back = false;
	if (complete_model_open(path, ms, on_load_progress, &lp, &m, &e, &err)) {
		if (!fallback || !strcmp(fallback, path)) {
			snprintf(msg, sizeof msg, "infill: %s", err.message);
			post_event(p, EVENT_LOAD_END, 100, false, msg);
			stats_set_model(p, "none", "none", 0);
			return;
		}
		snprintf(msg, sizeof msg,
		         "infill: %.400s; using the embedded model instead (set \"modelFallback\": "
		         "false to turn this off)",
		         err.message);
		post_event(p, EVENT_WARNING, 0, false, msg);
		struct infill_error err2;
		lp.last = -100;
		if (complete_model_open(fallback, ms, on_load_progress, &lp, &m, &e, &err2)) {
			snprintf(msg, sizeof msg, "infill: %.280s; and the embedded model: %.280s",
			         err.message, err2.message);
			post_event(p, EVENT_LOAD_END, 100, false, msg);
			stats_set_model(p, "none", "none", 0);
			return;
		}
		path = fallback;
		fell_back = true;
	}
	/* Not fatal: without it the budget learns the rates from the first jobs.
	 * Skipped when the server is exiting: exit must not wait for it. */
	pthread_mutex_lock(&p->mu);
	bool stopping = p->stop;
	pthread_mutex_unlock(&p->mu);
	struct infill_error cerr;
	if (!stopping && engine_calibrate(e, &cerr)) {
		snprintf(msg, sizeof msg,
		         "infill: measuring the model's speed failed (%s); the first "
		         "answers may be late",
		         cerr.message);
		post_event(p, EVENT_WARNING, 0, false, msg);
	}
	const struct model_info *mi = model_info(m);
	const char *kv = ms->kv_type == CONFIG_KV_F32 ? "f32" : "f16";
	snprintf(msg, sizeof msg, "%s: %d layers, %d dims, %s, KV cache %s (%d pages of %d tokens)",
	         path, mi->n_layer, mi->n_embd, mi->backend_name ? mi->backend_name : "cpu", kv,
	         mi->kv_n_pages, mi->kv_page_size);
	stats_set_model(p, backend_word(m), kv, mi->kv_n_pages);
	*mp = m;
	*ep = e;
	atomic_store(&p->ready, true);
	struct event *ev = calloc(1, sizeof *ev);
	if (ev) {
		ev->kind = EVENT_LOAD_END;
		ev->percentage = 100;
		ev->ok = true;
		ev->fallback = fell_back;
		snprintf(ev->message, sizeof ev->message, "%s", msg);
		event_push(p, ev);
	}
}

/* The remote backend's "load" (path: PIPELINE_REMOTE_PREFIX then the
 * remote.tokenizer file, or nothing): no model, perhaps a vocabulary to
 * count and build prompts with. A vocabulary that cannot be read is
 * reported and the backend runs without it. */
static void load_remote(struct pipeline *p, const char *path, struct gguf_file **gp,
                        struct tokenizer **tp)
{
	tokenizer_free(*tp);
	gguf_close(*gp);
	*tp = NULL;
	*gp = NULL;
	const char *file = path + strlen(PIPELINE_REMOTE_PREFIX);
	char msg[600];
	atomic_store(&p->remote_no_sampling, false); /* perhaps another server now */
	if (file[0]) {
		struct infill_error err;
		memset(&err, 0, sizeof err);
		struct gguf_file *g = gguf_open(file, &err);
		struct tokenizer *t = g ? tokenizer_load(g, &err) : NULL;
		if (!t) {
			gguf_close(g);
			snprintf(msg, sizeof msg,
			         "infill: cannot read remote.tokenizer %.200s: %.250s; prompts are "
			         "counted at %d bytes a token and sent as text",
			         file, err.message, COMPLETE_BYTES_PER_TOKEN);
			post_event(p, EVENT_WARNING, 0, false, msg);
		} else {
			*gp = g;
			*tp = t;
		}
	}
	stats_set_model(p, "remote", "none", 0);
	pthread_mutex_lock(&p->mu);
	p->stats.kv_touched_mb = 0; /* no KV pool here */
	pthread_mutex_unlock(&p->mu);
	atomic_store(&p->ready, true);
	/* The same begin/end as a model load, so that clients waiting for the
	 * load to end (status lines, `infill replay`) see the backend ready. */
	post_event(p, EVENT_LOAD_BEGIN, 0, true, "the remote backend");
	snprintf(msg, sizeof msg, "the remote backend (%s)",
	         *tp ? "the prompt built with remote.tokenizer's vocabulary"
	             : "no vocabulary: a text prompt, 3 bytes a token");
	post_event(p, EVENT_LOAD_END, 100, true, msg);
}

/*
 * The model file changed on disk (it must not kill the daemon): a re-download truncates it or
 * puts another file in its place while it is mapped. Before each job the
 * file is compared with what was mapped, and after each job the SIGBUS guard
 * (infer/mapguard.h) is asked whether a read hit a page past a new end (it
 * then read zeros). Either way the model is loaded again from the path,
 * with a warning; a result computed from zeros is dropped. When the load
 * fails (the file is still being written), the next job tries again once the
 * file changes again (*failed keeps the failed attempt's stat).
 */
struct current_load {
	char *path;            /* what was loaded last (owned), or NULL */
	bool failed;           /* that load failed */
	struct stat failed_st; /* the file at that attempt */
};

static void current_set(struct current_load *c, const char *path, const struct model *m)
{
	char *copy = strdup(path);
	free(c->path);
	c->path = copy;
	c->failed = !m && copy && strcmp(copy, PIPELINE_NO_MODEL);
	if (c->failed && stat(copy, &c->failed_st) != 0)
		memset(&c->failed_st, 0, sizeof c->failed_st);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reloads (with the settings ms of the model loaded) when the file changed
 * (see above); true when it did. */
static bool reload_if_changed(struct pipeline *p, struct current_load *c,
                              const struct complete_model_spec *ms, struct model **mp,
                              struct engine **ep)
{
	if (!c->path) return false;
	char why[128] = "";
	if (*mp) {
		if (!model_file_changed(*mp, why, sizeof why)) return false;
	} else {
		struct stat now;
		if (!c->failed || stat(c->path, &now) != 0 || same_file(&now, &c->failed_st))
			return false;
		snprintf(why, sizeof why, "it changed since it failed to load");
	}
	char msg[600];
	snprintf(msg, sizeof msg,
	         "infill: the model file %s changed on disk (%s); loading it again", c->path, why);
	post_event(p, EVENT_WARNING, 0, false, msg);
	char *path = strdup(c->path);
	if (!path) return false;
	atomic_store(&p->ready, false);
	load(p, path, NULL, ms, mp, ep);
	current_set(c, path, *mp);
	free(path);
	return true;
}


/* The request's project context as complete_run takes it: a new array
 * borrowing the request's texts (free it after the run), or NULL. */
static struct engine_snippet *project_apply(const struct completion_request *req,
                                            struct complete_options *opt)
{
	opt->project_lines = req->project_lines;
	opt->project_lines_len = req->project_lines_len;
	opt->repo_name = req->project_repo;
	opt->path = req->project_path;
	if (!req->n_project) return NULL;
	struct engine_snippet *v = calloc(req->n_project, sizeof *v);
	if (!v) return NULL; /* out of memory: the prompt without a project */
	for (size_t i = 0; i < req->n_project; i++)
		v[i] = (struct engine_snippet){ req->project[i].text, req->project[i].len,
			                        req->project[i].path };
	opt->project = v;
	opt->n_project = req->n_project;
	return v;
}

/* MiB of m's KV pool ever written: on a CPU the part of it in resident
 * memory, which grows until the prefix cache reaches cache.memoryMB. */
static uint64_t kv_touched_mb(struct model *m, enum config_kv_type type)
{
	const struct model_info *mi = model_info(m);
	uint64_t page = 2ull * (uint64_t)mi->n_layer * (uint64_t)mi->kv_page_size *
	                (uint64_t)mi->n_head_kv * (uint64_t)mi->head_dim *
	                (type == CONFIG_KV_F32 ? 4u : 2u);
	return (uint64_t)kv_pool_touched_pages(model_kv_pool(m)) * page >> 20;
}

/* Runs one job; fills job->status and job->result. */
static void run_job(struct pipeline *p, struct engine *e, struct model *m, struct edoc **edocs,
                    struct pipeline_job *job, bool remote, const struct tokenizer *rtok)
{
	struct completion_request *req = job->req;
	job->status = 0;
	if (!e && !remote) return;       /* no model: answered empty */
	if (atomic_load(&job->cancel)) { /* nobody waits any more */
		pthread_mutex_lock(&p->mu);
		p->stats.never_started++;
		pthread_mutex_unlock(&p->mu);
		return;
	}
	struct complete_options opt = complete_options_default();
	opt.cancel = &job->cancel;
	opt.previous = job->previous;
	opt.previous_len = job->previous_len;
	opt.use_cache = req->settings.cache_enabled;
	opt.seed = req->seq;
	opt.memory = edoc_memory(edocs, req->uri);
	struct remote_gen gen = { p, job, rtok };
	/* The deadline counts from the request's arrival: the debounce and
	 * any wait in the queue are part of what the user waits for. */
	if (req->settings.completion_deadline_ms > 0 && req->arrival_ns) {
		double ms = req->settings.completion_deadline_ms;
		if (req->pace_deadline_ms > 0 && req->pace_deadline_ms < ms)
			ms = req->pace_deadline_ms;
		opt.deadline_ms = (double)req->arrival_ns / 1e6 + ms;
	}
	if (remote) {
		/* the server decides its own context (no prefill budget); the
		 * deadline closes its streams and answers with what came by
		 * then, remote.timeoutMs fails a call that reaches it first */
		opt.generate = remote_bridge_generate;
		opt.generate_ud = &gen;
	} else {
		opt.n_ctx = model_info(m)->n_ctx_train;
		opt.fit_deadline = req->settings.completion_prefill_budget;
	}
	struct engine_snippet *proj = project_apply(req, &opt);
	struct complete_result res;
	int rc = complete_run(e, remote ? rtok : model_tokenizer(m), req->language_id, req->text,
	                      req->text_len, req->cursor, &req->settings, &opt, &res, NULL);
	free(proj);
	job->figures = res;
	job->figures.items = NULL;
	job->figures.count = res.count;
	/* Only what was processed counts: a job superseded mid-prefill did not
	 * cost its whole prompt, and one superseded before the engine took it
	 * up cost nothing (counted apart). */
	int32_t processed = res.processed_tokens > 0 ? res.processed_tokens : 0;
	int32_t cached = res.cached_tokens > 0 ? res.cached_tokens : 0;
	if (cached > processed) cached = processed;
	pthread_mutex_lock(&p->mu);
	p->stats.prompt_tokens += (uint64_t)processed;
	p->stats.cached_prompt_tokens += (uint64_t)cached;
	if (!processed && rc == ENGINE_ECANCELED) p->stats.never_started++;
	if (!remote && processed && processed == res.prompt_tokens && 2 * cached < processed) {
		p->stats.cold_requests++; /* the remote server's cache is its own */
		job->cold = true;
	}
	p->stats.generated_tokens +=
	        (uint64_t)(res.generated_tokens > 0 ? res.generated_tokens : 0);
	p->stats.draft_tokens += (uint64_t)(res.draft_tokens > 0 ? res.draft_tokens : 0);
	p->stats.accepted_draft_tokens +=
	        (uint64_t)(res.accepted_draft_tokens > 0 ? res.accepted_draft_tokens : 0);
	p->stats.rejected_candidates += (uint64_t)(res.rejected > 0 ? res.rejected : 0);
	p->stats.document_lines += (uint64_t)(res.given_shown > 0 ? res.given_shown : 0);
	p->stats.project_tokens += (uint64_t)(res.project_tokens > 0 ? res.project_tokens : 0);
	p->stats.project_lines += (uint64_t)(res.project_given > 0 ? res.project_given : 0);
	p->stats.short_contexts += res.shortened;
	if (m) p->stats.kv_touched_mb = kv_touched_mb(m, req->settings.cache_kv_type);
	pthread_mutex_unlock(&p->mu);
	if (rc == ENGINE_ECANCELED) {
		complete_result_finish(&res);
		return;
	}
	if (rc) {
		/* reported on the loop (log) through the status; the message is
		 * kept short in the result's absence */
		complete_result_finish(&res);
		job->status = rc < 0 ? rc : -EIO;
		return;
	}
	if (result_take(&job->result, &res)) job->status = -ENOMEM;
	complete_result_finish(&res);
}

/*
 * After an answer the deadline cut short: the same request again with no
 * deadline, while nothing else waits (p->extend_cancel stops it at the next
 * decode step when a job comes). The prompt is in the prefix cache, so this
 * costs decode steps only. The longer candidates go to the loop, where the
 * fast path keeps those that continue what was shown: typing along the
 * suggestion is then answered with more of it at once. shown: the top
 * candidate answered (rerank keeps to it). req is taken.
 */
static void extend(struct pipeline *p, struct engine *e, struct model *m, struct edoc **edocs,
                   struct completion_request *req, const char *shown)
{
	struct complete_options opt = complete_options_default();
	opt.cancel = &p->extend_cancel;
	opt.previous = shown;
	opt.previous_len = shown ? strlen(shown) : 0;
	opt.use_cache = req->settings.cache_enabled;
	opt.seed = req->seq; /* the same samples as the answer, only longer */
	opt.n_ctx = model_info(m)->n_ctx_train;
	opt.memory = edoc_memory(edocs, req->uri);
	struct engine_snippet *proj = project_apply(req, &opt);
	struct complete_result res;
	int rc = complete_run(e, model_tokenizer(m), req->language_id, req->text, req->text_len,
	                      req->cursor, &req->settings, &opt, &res, NULL);
	free(proj);
	pthread_mutex_lock(&p->mu);
	p->stats.generated_tokens +=
	        (uint64_t)(res.generated_tokens > 0 ? res.generated_tokens : 0);
	p->stats.draft_tokens += (uint64_t)(res.draft_tokens > 0 ? res.draft_tokens : 0);
	p->stats.accepted_draft_tokens +=
	        (uint64_t)(res.accepted_draft_tokens > 0 ? res.accepted_draft_tokens : 0);
	pthread_mutex_unlock(&p->mu);
	struct event *ev = NULL;
	if (!rc && res.count && (ev = calloc(1, sizeof *ev)) &&
	    (ev->ext = calloc(1, sizeof *ev->ext)) && !result_take(&ev->ext->result, &res)) {
		ev->kind = EVENT_EXTENDED;
		ev->ext->uri = req->uri;
		ev->ext->text = req->text;
		ev->ext->len = req->text_len;
		ev->ext->cursor = req->cursor;
		req->uri = req->text = NULL; /* moved */
		event_push(p, ev);
	} else if (ev) {
		worker_event_free(ev);
	}
	complete_result_finish(&res);
	completion_request_free(req);
}

/* ---- background prefill ---------------------------------------------------- */

/* Background work the engine thread found for itself, in order: the full
 * context of a shortened answer, then the prompt as if it were accepted. */
#define TODO_MAX 2

struct todo {
	struct completion_request *req[TODO_MAX]; /* owned */
	bool keep_memory[TODO_MAX];    /* the document's sticky snippets apply (same place) */
	uint64_t not_before[TODO_MAX]; /* uv_hrtime ns: not started before then */
	int n;
};

/*
 * How long background work waits before it starts. Each piece costs the
 * request that comes next up to one chunk and a parse of the document (the
 * slicing is not cancellable), so work that a keystroke most likely makes
 * useless waits a typist's pause first: the prompt as if accepted (the user
 * is typing on, not accepting, if a key comes within it) and the loop's
 * hints (after didChange the completion request itself comes within the
 * debounce and computes that place). The full context of a shortened
 * answer starts at once: the next keystroke needs it.
 */
#define ACCEPT_DELAY_NS (150 * 1000000ull)
#define HINT_DELAY_NS   (100 * 1000000ull)

/* Waits on p->cv (mu held) until the monotonic time `at` (uv_hrtime ns) or
 * a signal. */
static void wait_until(struct pipeline *p, uint64_t at)
{
	uint64_t now = uv_hrtime();
	if (at <= now) return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's clock */
	uint64_t ns = (uint64_t)ts.tv_nsec + (at - now);
	ts.tv_sec += (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

static void todo_clear(struct todo *t)
{
	for (int i = 0; i < t->n; i++) completion_request_free(t->req[i]);
	t->n = 0;
}

static void todo_push(struct todo *t, struct completion_request *req, bool keep_memory,
                      uint64_t delay_ns)
{
	if (!req) return;
	if (t->n == TODO_MAX) {
		completion_request_free(req);
		return;
	}
	t->req[t->n] = req;
	t->not_before[t->n] = uv_hrtime() + delay_ns;
	t->keep_memory[t->n++] = keep_memory;
}

/* The request as if its top item were accepted: the item's text in place,
 * the cursor after it. New, or NULL when out of memory. */
static struct completion_request *as_accepted(const struct completion_request *req,
                                              const struct completion_candidate *it)
{
	if (it->start > it->end || it->end > req->text_len) return NULL;
	struct completion_request *a = completion_request_clone(req);
	if (!a) return NULL;
	size_t len = req->text_len - (it->end - it->start) + it->text_len;
	char *t = malloc(len + 1);
	if (!t) {
		completion_request_free(a);
		return NULL;
	}
	memcpy(t, req->text, it->start);
	memcpy(t + it->start, it->text, it->text_len);
	memcpy(t + it->start + it->text_len, req->text + it->end, req->text_len - it->end);
	t[len] = 0;
	free(a->text);
	a->text = t;
	a->text_len = len;
	a->cursor = it->start + it->text_len;
	return a;
}

/* Prefills req's prompt (complete_run with prefill_only) until done or
 * until a job comes (p->extend_cancel). req is taken. */
static void warm(struct pipeline *p, struct engine *e, struct model *m, struct edoc **edocs,
                 struct completion_request *req, bool keep_memory)
{
	struct complete_options opt = complete_options_default();
	opt.cancel = &p->extend_cancel;
	opt.use_cache = req->settings.cache_enabled;
	opt.n_ctx = model_info(m)->n_ctx_train;
	/* elsewhere than the document's last request: its sticky snippets stay
	 * as they are, for the keystroke that may come there */
	opt.memory = keep_memory ? edoc_memory(edocs, req->uri) : NULL;
	opt.prefill_only = true;
	struct engine_snippet *proj = project_apply(req, &opt);
	struct complete_result res;
	if (req->cursor <= req->text_len && opt.use_cache)
		complete_run(e, model_tokenizer(m), req->language_id, req->text, req->text_len,
		             req->cursor, &req->settings, &opt, &res, NULL);
	else
		memset(&res, 0, sizeof res);
	free(proj);
	pthread_mutex_lock(&p->mu);
	p->stats.background_prefill_tokens +=
	        (uint64_t)(res.prefilled_tokens > 0 ? res.prefilled_tokens : 0);
	pthread_mutex_unlock(&p->mu);
	complete_result_finish(&res);
	completion_request_free(req);
}

void *worker_main(void *arg)
{
	struct pipeline *p = arg;
	struct model *m = NULL;
	struct engine *e = NULL;
	struct edoc *edocs = NULL;
	struct current_load cur = { 0 };
	/* the settings of the model loaded, with the latest shifted-suffix
	 * choice (which the engine takes without a reload) */
	struct complete_model_spec ms = { 0 };
	struct todo todo = { 0 };
	/* the remote backend: on, and remote.tokenizer's vocabulary (or NULL) */
	bool remote = false;
	struct gguf_file *rgguf = NULL;
	struct tokenizer *rtok = NULL;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && !p->load_pending && !p->queue_head && !todo.n && !p->n_warm &&
		       !p->recheck_pending)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop) break;
		if (p->load_pending) {
			struct load_spec spec = p->pending_load;
			p->pending_load.path = NULL; /* spec owns them now */
			p->pending_load.fallback = NULL;
			p->load_pending = false;
			p->params_pending = false;
			ms = spec.model;
			ms.reuse_shifted_suffix = p->reuse_shifted_pending;
			atomic_store(&p->ready, false);
			pthread_mutex_unlock(&p->mu);
			remote = !strncmp(spec.path, PIPELINE_REMOTE_PREFIX,
			                  strlen(PIPELINE_REMOTE_PREFIX));
			if (remote) {
				engine_free(e);
				model_free(m);
				e = NULL;
				m = NULL;
				load_remote(p, spec.path, &rgguf, &rtok);
				free(cur.path);
				cur = (struct current_load){ 0 };
			} else {
				tokenizer_free(rtok);
				gguf_close(rgguf);
				rtok = NULL;
				rgguf = NULL;
				load(p, spec.path, spec.fallback, &ms, &m, &e);
				current_set(&cur, spec.path, m);
			}
			worker_spec_finish(&spec);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->recheck_pending) {
			p->recheck_pending = false;
			pthread_mutex_unlock(&p->mu);
			if (reload_if_changed(p, &cur, &ms, &m, &e)) {
				edoc_free_all(edocs);
				edocs = NULL;
			}
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->params_pending && e) {
			ms.reuse_shifted_suffix = p->reuse_shifted_pending;
			struct engine_params ep = complete_engine_params(&ms);
			engine_configure(e, &ep);
		}
		p->params_pending = false;
		if (!p->queue_head) { /* idle: background prefill, newest first */
			struct completion_request *w = NULL;
			bool keep = false;
			if (p->n_warm) todo_clear(&todo); /* an edit came since: stale */
			uint64_t at = todo.n ? todo.not_before[0]
			                     : p->warm[0]->arrival_ns + HINT_DELAY_NS;
			if (at > uv_hrtime()) {
				wait_until(p, at);
				continue; /* whatever came meanwhile goes first */
			}
			if (todo.n) {
				w = todo.req[0];
				keep = todo.keep_memory[0];
				todo.n--;
				memmove(&todo.req[0], &todo.req[1],
				        (size_t)todo.n * sizeof todo.req[0]);
				memmove(&todo.keep_memory[0], &todo.keep_memory[1],
				        (size_t)todo.n * sizeof todo.keep_memory[0]);
				memmove(&todo.not_before[0], &todo.not_before[1],
				        (size_t)todo.n * sizeof todo.not_before[0]);
			} else {
				w = p->warm[0];
				keep = true;
				p->n_warm--;
				memmove(&p->warm[0], &p->warm[1], p->n_warm * sizeof p->warm[0]);
			}
			if (!e) {
				completion_request_free(w);
				continue;
			}
			atomic_store(&p->extend_cancel, 0);
			pthread_mutex_unlock(&p->mu);
			warm(p, e, m, &edocs, w, keep);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		struct pipeline_job *job = p->queue_head;
		p->queue_head = job->qnext;
		if (!p->queue_head) p->queue_tail = NULL;
		job->qnext = NULL;
		/* the job computes its document's place itself: older hints there go */
		for (size_t i = 0; i < p->n_warm;) {
			if (strcmp(p->warm[i]->uri, job->req->uri)) {
				i++;
				continue;
			}
			completion_request_free(p->warm[i]);
			p->n_warm--;
			memmove(&p->warm[i], &p->warm[i + 1], (p->n_warm - i) * sizeof p->warm[0]);
		}
		pthread_mutex_unlock(&p->mu);

		if (reload_if_changed(p, &cur, &ms, &m, &e)) {
			edoc_free_all(edocs); /* remembered from the old model's output */
			edocs = NULL;
		}
		run_job(p, e, m, &edocs, job, remote, rtok);
		if (m && model_file_changed(m, NULL, 0)) {
			/* computed (in part) from a file that changed under the read:
			 * answered empty; the next job reloads */
			worker_result_finish(&job->result);
			job->status = 0;
		}
		/* copied before the job goes back: the loop frees it */
		struct completion_request *again = NULL;
		char *shown = NULL;
		todo_clear(&todo); /* an older job's background work is stale now */
		if (e && !job->status && !atomic_load(&job->cancel)) {
			if (job->figures.shortened)
				todo_push(&todo, completion_request_clone(job->req), true, 0);
			if (job->result.count)
				todo_push(&todo, as_accepted(job->req, &job->result.items[0]),
				          false, ACCEPT_DELAY_NS);
		}
		/* Lengthening re-runs the request without a deadline, so with its
		 * full prompt: only an answer from that prompt is extended (one the
		 * prefill budget shortened would prefill the rest in foreground-size
		 * chunks; its full context is background work instead). */
		bool full_prompt = job->figures.budget != ENGINE_BUDGET_SUFFIX &&
		                   job->figures.budget != ENGINE_BUDGET_SHORT;
		/* (not for the remote backend: no local model to lengthen with) */
		if (e && job->figures.deadline_hit && full_prompt && !job->status &&
		    job->result.count && !atomic_load(&job->cancel)) {
			again = completion_request_clone(job->req);
			shown = strdup(job->result.items[0].text);
		}

		pthread_mutex_lock(&p->mu);
		if (p->done_tail)
			p->done_tail->qnext = job;
		else
			p->done_head = job;
		p->done_tail = job;
		uv_async_send(&p->async);
		if (again && shown && !p->queue_head && !p->stop && !p->load_pending) {
			atomic_store(&p->extend_cancel, 0);
			pthread_mutex_unlock(&p->mu);
			extend(p, e, m, &edocs, again, shown);
			again = NULL;
			pthread_mutex_lock(&p->mu);
		}
		completion_request_free(again);
		free(shown);
	}
	pthread_mutex_unlock(&p->mu);
	todo_clear(&todo);
	atomic_store(&p->ready, false);
	edoc_free_all(edocs);
	engine_free(e);
	model_free(m);
	tokenizer_free(rtok);
	gguf_close(rgguf);
	free(cur.path);
	pthread_mutex_lock(&p->mu);
	p->thread_exited = true;
	pthread_mutex_unlock(&p->mu);
	uv_async_send(&p->async);
	return NULL;
}
