/*
 * pipeline_engine.c - the completion pipeline behind pipeline.h with the
 * model running in-process: an engine thread that loads the model and runs
 * jobs through complete_run (complete_core.c), and the loop-thread side that
 * queues jobs, delivers results, answers from the last result when the user
 * types what is on screen (the fast path) and keeps the counters.
 *
 * Threads (DESIGN.md, "Threads"):
 *   - loop thread: struct pipeline's loop fields, the live-job list, the
 *     per-document fast-path state (pipeline_fast.c), the host hooks. Every pipeline_*
 *     function and every callback runs here.
 *   - engine thread: the model and the engine (locals of engine_main). It
 *     sees jobs only through the queue.
 *   - between them: `mu` guards the job queue, the done list, the event list
 *     and the counters; `cv` wakes the engine thread; `async` wakes the loop.
 *     A job's cancel flag is an atomic the engine checks every decode step.
 *
 * A job is freed only on the loop thread, after the engine has handed it
 * back through the done list (or after the engine thread has exited), so the
 * engine never sees a freed job even when pipeline_cancel ran meanwhile.
 *
 * The model loads on the engine thread at the first pipeline_configure
 * (during `initialize`, once initializationOptions are in), and again when
 * `model`, `backend`, `threads` or `cache.memoryMB` change. Until it is
 * ready every job is answered at once with no candidates.
 */
#include "pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "complete_core.h"
#include "pipeline_fast.h"

/* The `model` value that means "no model": every answer is empty. Tests of
 * the server core use it so that they need no model file. */
#define PIPELINE_NO_MODEL "none"

/* ---- state ---------------------------------------------------------------- */

struct pipeline_job {
	struct pipeline *p;
	struct completion_request *req;
	pipeline_done_fn done;
	void *ud;
	atomic_int cancel; /* set by pipeline_cancel/close; read by the engine */
	bool dropped;      /* loop: cancelled, no callback */
	int status;        /* engine -> loop: 0 or negative */
	struct completion_result result;
	char *previous; /* the suggestion on screen for this document, or NULL */
	size_t previous_len;
	bool fast;                        /* answered by the fast path */
	struct complete_result figures;   /* counts and timings of the run (no items) */
	struct pipeline_job *qnext;       /* queue / done list (under mu) */
	struct pipeline_job *prev, *next; /* live list (loop) */
};

enum event_kind { EVENT_LOAD_BEGIN, EVENT_PROGRESS, EVENT_LOAD_END, EVENT_EXTENDED };

/* Longer candidates for an answer the deadline cut short (EVENT_EXTENDED):
 * for the snapshot text[0, len) with the cursor at cursor. All owned. */
struct extension {
	char *uri;
	char *text;
	size_t len, cursor;
	struct completion_result result;
};

struct event {
	enum event_kind kind;
	int percentage;
	bool ok;
	char message[600];
	struct extension *ext; /* EVENT_EXTENDED only; owned */
	struct event *next;
};

/* What a load needs; compared to decide whether a configure means a reload. */
struct load_spec {
	char *path; /* resolved */
	enum config_backend backend;
	int threads;
	int cache_mb;
	enum config_kv_type kv_type;
};

struct pipeline {
	uv_loop_t *loop;
	struct log *log;
	uv_async_t async; /* started lazily (see async_start) */
	bool async_started;
	struct pipeline_host host; /* copied at pipeline_new */
	bool loading;              /* a progress report is open */
	struct pipeline_job *live; /* every job not yet freed (loop) */
	struct fast_doc *docs;     /* the fast path's memory (loop) */
	struct load_spec loaded;   /* the spec of the last load requested (loop) */
	bool configured;
	bool reuse_shifted; /* cache.reuseShiftedSuffix (loop copy) */
	bool closing;
	void (*close_done)(void *ud);
	void *close_ud;
	bool thread_started;
	pthread_t thread;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	struct pipeline_job *queue_head, *queue_tail;
	struct pipeline_job *done_head, *done_tail;
	struct event *events_head, *events_tail;
	struct load_spec pending_load;
	bool load_pending;
	bool params_pending; /* new engine params (shifted suffix) */
	bool reuse_shifted_pending;
	bool stop;
	bool thread_exited;
	atomic_bool ready; /* a model and an engine are loaded */
	/* Stops an extension run (see extend): set with mu held whenever a job
	 * is queued, a load is asked for or the pipeline stops; cleared by the
	 * engine thread, also with mu held, only when none of these is pending. */
	atomic_int extend_cancel;
	struct pipeline_stats stats;
};

static void spec_finish(struct load_spec *s)
{
	free(s->path);
	s->path = NULL;
}

/* ---- engine thread ---------------------------------------------------- */

/* Per-document memory of the engine thread (sticky snippets; see
 * complete_core.h), most recently used first, at most EDOC_MAX documents. */
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

static void result_finish(struct completion_result *r)
{
	for (size_t i = 0; i < r->count; i++) free(r->items[i].text);
	free(r->items);
	r->items = NULL;
	r->count = 0;
}

static void event_free(struct event *ev)
{
	if (ev->ext) {
		free(ev->ext->uri);
		free(ev->ext->text);
		result_finish(&ev->ext->result);
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

static void load(struct pipeline *p, struct load_spec *spec, struct model **mp, struct engine **ep,
                 bool reuse_shifted)
{
	engine_free(*ep);
	model_free(*mp);
	*ep = NULL;
	*mp = NULL;
	if (!strcmp(spec->path, PIPELINE_NO_MODEL)) {
		stats_set_model(p, "none", "none", 0);
		return; /* unloaded on purpose: answers stay empty */
	}
	char msg[600];
	snprintf(msg, sizeof msg, "%s", spec->path);
	post_event(p, EVENT_LOAD_BEGIN, 0, true, msg);

	struct settings asked = { .backend = spec->backend,
		                  .threads = spec->threads,
		                  .cache_memory_mb = spec->cache_mb,
		                  .cache_kv_type = spec->kv_type };
	struct model_params mp_ = complete_model_params(&asked, spec->path);
	struct load_progress lp = { p, -100 };
	mp_.progress = on_load_progress;
	mp_.progress_user = &lp;
	struct infer_error err = { { 0 } };
	struct model *m = model_load(&mp_, &err);
	struct engine *e = NULL;
	if (m) {
		struct engine_params eprm = engine_params_default();
		eprm.reuse_shifted_suffix = reuse_shifted;
		e = engine_new(m, &eprm, &err);
		if (!e) {
			model_free(m);
			m = NULL;
		}
	}
	if (!m) {
		snprintf(msg, sizeof msg, "infill: cannot load the model %s: %s", spec->path,
		         err.message[0] ? err.message : "unknown error");
		post_event(p, EVENT_LOAD_END, 100, false, msg);
		stats_set_model(p, "none", "none", 0);
		return;
	}
	const struct model_info *mi = model_info(m);
	const char *kv = spec->kv_type == CONFIG_KV_F32 ? "f32" : "f16";
	snprintf(msg, sizeof msg, "%s: %d layers, %d dims, %s, KV cache %s (%d pages of %d tokens)",
	         spec->path, mi->n_layer, mi->n_embd, mi->backend_name ? mi->backend_name : "cpu",
	         kv, mi->kv_n_pages, mi->kv_page_size);
	stats_set_model(p, backend_word(m), kv, mi->kv_n_pages);
	*mp = m;
	*ep = e;
	atomic_store(&p->ready, true);
	post_event(p, EVENT_LOAD_END, 100, true, msg);
}

/* Runs one job; fills job->status and job->result. */
static void run_job(struct pipeline *p, struct engine *e, struct model *m, struct edoc **edocs,
                    struct pipeline_job *job)
{
	struct completion_request *req = job->req;
	job->status = 0;
	if (!e || atomic_load(&job->cancel)) return; /* no model (answered empty) or nobody waits */
	struct complete_options opt = complete_options_default();
	opt.cancel = &job->cancel;
	opt.previous = job->previous;
	opt.previous_len = job->previous_len;
	opt.use_cache = req->settings.cache_enabled;
	opt.seed = req->seq;
	opt.n_ctx = model_info(m)->n_ctx_train;
	opt.memory = edoc_memory(edocs, req->uri);
	/* The deadline counts from the request's arrival: the debounce and any
	 * wait in the queue are part of what the user waits for. */
	if (req->settings.completion_deadline_ms > 0 && req->arrival_ns)
		opt.deadline_ms =
		        (double)req->arrival_ns / 1e6 + req->settings.completion_deadline_ms;
	struct complete_result res;
	char err[512] = "";
	int rc = complete_run(e, model_tokenizer(m), req->language_id, req->text, req->text_len,
	                      req->cursor, &req->settings, &opt, &res, err, sizeof err);
	job->figures = res;
	job->figures.items = NULL;
	job->figures.count = res.count;
	pthread_mutex_lock(&p->mu);
	p->stats.prompt_tokens += (uint64_t)(res.prompt_tokens > 0 ? res.prompt_tokens : 0);
	p->stats.cached_prompt_tokens += (uint64_t)(res.cached_tokens > 0 ? res.cached_tokens : 0);
	p->stats.generated_tokens +=
	        (uint64_t)(res.generated_tokens > 0 ? res.generated_tokens : 0);
	p->stats.rejected_candidates += (uint64_t)(res.rejected > 0 ? res.rejected : 0);
	p->stats.document_lines += (uint64_t)(res.given_shown > 0 ? res.given_shown : 0);
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
	struct complete_result res;
	char err[512] = "";
	int rc = complete_run(e, model_tokenizer(m), req->language_id, req->text, req->text_len,
	                      req->cursor, &req->settings, &opt, &res, err, sizeof err);
	pthread_mutex_lock(&p->mu);
	p->stats.generated_tokens +=
	        (uint64_t)(res.generated_tokens > 0 ? res.generated_tokens : 0);
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
		event_free(ev);
	}
	complete_result_finish(&res);
	completion_request_free(req);
}

static void *engine_main(void *arg)
{
	struct pipeline *p = arg;
	struct model *m = NULL;
	struct engine *e = NULL;
	struct edoc *edocs = NULL;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && !p->load_pending && !p->queue_head)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop) break;
		if (p->load_pending) {
			struct load_spec spec = p->pending_load;
			p->pending_load.path = NULL;
			p->load_pending = false;
			p->params_pending = false;
			bool shifted = p->reuse_shifted_pending;
			atomic_store(&p->ready, false);
			pthread_mutex_unlock(&p->mu);
			load(p, &spec, &m, &e, shifted);
			spec_finish(&spec);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->params_pending && e) {
			struct engine_params ep = engine_params_default();
			ep.reuse_shifted_suffix = p->reuse_shifted_pending;
			engine_configure(e, &ep);
		}
		p->params_pending = false;
		struct pipeline_job *job = p->queue_head;
		p->queue_head = job->qnext;
		if (!p->queue_head) p->queue_tail = NULL;
		job->qnext = NULL;
		pthread_mutex_unlock(&p->mu);

		run_job(p, e, m, &edocs, job);
		/* copied before the job goes back: the loop frees it */
		struct completion_request *again = NULL;
		char *shown = NULL;
		if (job->figures.deadline_hit && !job->status && job->result.count &&
		    !atomic_load(&job->cancel)) {
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
	atomic_store(&p->ready, false);
	edoc_free_all(edocs);
	engine_free(e);
	model_free(m);
	pthread_mutex_lock(&p->mu);
	p->thread_exited = true;
	pthread_mutex_unlock(&p->mu);
	uv_async_send(&p->async);
	return NULL;
}

/* ---- jobs (loop thread) -------------------------------------------------- */

static void job_free(struct pipeline *p, struct pipeline_job *job)
{
	if (job->prev)
		job->prev->next = job->next;
	else
		p->live = job->next;
	if (job->next) job->next->prev = job->prev;
	result_finish(&job->result);
	completion_request_free(job->req);
	free(job->previous);
	free(job);
}

static void deliver(struct pipeline *p, struct pipeline_job *job)
{
	if (job->dropped || p->closing) {
		job_free(p, job);
		return;
	}
	if (job->status)
		log_warn(p->log, "completion %llu for %s failed: %s",
		         (unsigned long long)job->req->seq, job->req->uri, strerror(-job->status));
	const struct complete_result *f = &job->figures;
	if (job->fast)
		log_debug(p->log, "completion %llu: fast path, %zu candidates",
		          (unsigned long long)job->req->seq, job->result.count);
	else if (f->prompt_tokens)
		log_debug(p->log,
		          "completion %llu: prompt %d tokens (%d cached), %d generated, %zu of %d "
		          "candidates shown; slice %.1f ms, engine %.1f ms (prefill %.1f, decode "
		          "%.1f), "
		          "post %.1f ms",
		          (unsigned long long)job->req->seq, f->prompt_tokens, f->cached_tokens,
		          f->generated_tokens, f->count, f->n_generated, f->slice_ms, f->engine_ms,
		          f->prefill_ms, f->decode_ms, f->post_ms);
	struct completion_result empty = { NULL, 0 };
	const struct completion_result *r = job->status ? &empty : &job->result;
	pipeline_done_fn done = job->done;
	void *ud = job->ud;
	/* record before the callback: it may submit the next job at once */
	if (!job->status && job->req->text) fast_record(&p->docs, job->req, r);
	done(ud, job->status, r);
	job_free(p, job);
}

#define LOAD_TITLE "infill: loading the model"

static void handle_event(struct pipeline *p, const struct event *ev)
{
	void (*progress)(void *, const char *, const char *, int, bool) = p->host.progress;
	switch (ev->kind) {
	case EVENT_LOAD_BEGIN:
		if (p->loading && progress)
			progress(p->host.ud, LOAD_TITLE, "superseded", 100, true);
		p->loading = true;
		if (progress) progress(p->host.ud, LOAD_TITLE, ev->message, 0, false);
		break;
	case EVENT_PROGRESS:
		if (progress && p->loading)
			progress(p->host.ud, LOAD_TITLE, NULL, ev->percentage, false);
		break;
	case EVENT_LOAD_END:
		if (progress && p->loading)
			progress(p->host.ud, LOAD_TITLE, ev->ok ? "ready" : "failed", 100, true);
		p->loading = false;
		if (ev->ok)
			log_info(p->log, "model ready: %s", ev->message);
		else if (p->host.message)
			p->host.message(p->host.ud, 1, ev->message);
		else
			log_error(p->log, "%s", ev->message);
		break;
	case EVENT_EXTENDED: {
		const struct extension *x = ev->ext;
		size_t grown =
		        fast_extend(&p->docs, x->uri, x->text, x->len, x->cursor, &x->result);
		if (grown) {
			pthread_mutex_lock(&p->mu);
			p->stats.extended++;
			pthread_mutex_unlock(&p->mu);
		}
		log_debug(p->log, "%s: %zu shown candidates lengthened after the deadline", x->uri,
		          grown);
		break;
	}
	}
}

static void closed(uv_handle_t *h)
{
	struct pipeline *p = h->data;
	if (p->close_done) {
		void (*done)(void *) = p->close_done;
		p->close_done = NULL;
		done(p->close_ud);
	}
}

static void finish_close(struct pipeline *p)
{
	if (p->thread_started) {
		pthread_join(p->thread, NULL);
		p->thread_started = false;
	}
	/* the engine is gone: whatever it still held is ours to free */
	p->queue_head = p->queue_tail = p->done_head = p->done_tail = NULL;
	while (p->live) job_free(p, p->live);
	if (p->loading && p->host.progress)
		p->host.progress(p->host.ud, LOAD_TITLE, "stopped", 100, true);
	p->loading = false;
	if (p->async_started) {
		uv_close((uv_handle_t *)&p->async, closed);
	} else {
		p->async.data = p;
		closed((uv_handle_t *)&p->async);
	}
}

static void on_async(uv_async_t *a)
{
	struct pipeline *p = a->data;
	pthread_mutex_lock(&p->mu);
	struct pipeline_job *done = p->done_head;
	p->done_head = p->done_tail = NULL;
	struct event *events = p->events_head;
	p->events_head = p->events_tail = NULL;
	bool exited = p->thread_exited;
	pthread_mutex_unlock(&p->mu);

	for (struct event *ev = events, *next; ev; ev = next) {
		next = ev->next;
		if (!p->closing) handle_event(p, ev);
		event_free(ev);
	}
	for (struct pipeline_job *job = done, *next; job; job = next) {
		next = job->qnext;
		deliver(p, job);
	}
	if (p->closing && exited && !uv_is_closing((uv_handle_t *)&p->async)) finish_close(p);
}

/* ---- the pipeline.h functions ------------------------------------------- */

struct pipeline *pipeline_new(uv_loop_t *loop, struct log *log, const struct settings *settings,
                              const struct pipeline_host *host)
{
	(void)settings; /* the model loads at the first pipeline_configure */
	struct pipeline *p = calloc(1, sizeof *p);
	if (!p) return NULL;
	p->loop = loop;
	p->log = log;
	if (host) p->host = *host;
	p->stats.backend = p->stats.kv_type = "none";
	atomic_init(&p->ready, false);
	atomic_init(&p->extend_cancel, 0);
	if (pthread_mutex_init(&p->mu, NULL)) {
		free(p);
		return NULL;
	}
	if (pthread_cond_init(&p->cv, NULL)) {
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	return p;
}

/* The async handle is opened at the first use, not in pipeline_new, so that
 * a server that fails half-way through its creation can free a pipeline
 * that owns no libuv handle. */
static int async_start(struct pipeline *p)
{
	if (p->async_started) return 0;
	int rc = uv_async_init(p->loop, &p->async, on_async);
	if (rc) return rc;
	p->async.data = p;
	p->async_started = true;
	return 0;
}

void pipeline_close(struct pipeline *p, void (*done)(void *ud), void *ud)
{
	p->closing = true;
	p->close_done = done;
	p->close_ud = ud;
	for (struct pipeline_job *j = p->live; j; j = j->next) {
		j->dropped = true;
		atomic_store(&j->cancel, 1);
	}
	if (!p->thread_started) {
		finish_close(p);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	atomic_store(&p->extend_cancel, 1);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	/* on_async finishes when the engine thread says it has exited */
}

void pipeline_free(struct pipeline *p)
{
	if (!p) return;
	if (p->thread_started) { /* never closed (server_new failed): stop it here */
		pthread_mutex_lock(&p->mu);
		p->stop = true;
		atomic_store(&p->extend_cancel, 1);
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
	}
	while (p->live) job_free(p, p->live);
	for (struct event *ev = p->events_head, *next; ev; ev = next) {
		next = ev->next;
		event_free(ev);
	}
	fast_doc_free_all(&p->docs);
	spec_finish(&p->loaded);
	spec_finish(&p->pending_load);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

void pipeline_configure(struct pipeline *p, const struct settings *settings)
{
	if (p->closing) return;
	char *path = settings->model && settings->model[0] ? strdup(settings->model)
	                                                   : complete_default_model_path();
	if (!path || async_start(p)) {
		free(path);
		log_error(p->log, "cannot configure the engine (out of memory or handles)");
		return;
	}
	bool reload = !p->configured || strcmp(path, p->loaded.path) ||
	              settings->backend != p->loaded.backend ||
	              settings->threads != p->loaded.threads ||
	              settings->cache_memory_mb != p->loaded.cache_mb ||
	              settings->cache_kv_type != p->loaded.kv_type;
	bool shifted_changed = settings->cache_reuse_shifted_suffix != p->reuse_shifted;
	p->reuse_shifted = settings->cache_reuse_shifted_suffix;
	if (!reload && !shifted_changed) {
		free(path);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->reuse_shifted_pending = p->reuse_shifted;
	p->params_pending = true;
	if (reload) {
		spec_finish(&p->loaded);
		p->loaded =
		        (struct load_spec){ path, settings->backend, settings->threads,
			                    settings->cache_memory_mb, settings->cache_kv_type };
		spec_finish(&p->pending_load);
		p->pending_load = p->loaded;
		p->pending_load.path = strdup(path);
		if (p->pending_load.path) {
			p->load_pending = true;
			atomic_store(&p->extend_cancel, 1);
			atomic_store(&p->ready, false); /* answer empty until the new model is in */
		}
		p->configured = true;
	}
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (!reload) free(path);
	if (!p->thread_started && !strcmp(p->loaded.path, PIPELINE_NO_MODEL)) {
		/* nothing to load: no thread either, so closing is immediate */
		pthread_mutex_lock(&p->mu);
		p->load_pending = false;
		spec_finish(&p->pending_load);
		pthread_mutex_unlock(&p->mu);
		log_info(p->log, "model: none; completions will be empty");
		return;
	}
	if (!p->thread_started) {
		if (pthread_create(&p->thread, NULL, engine_main, p)) {
			log_error(p->log, "cannot start the engine thread: completions stay empty");
			return;
		}
		p->thread_started = true;
	}
}

int pipeline_submit(struct pipeline *p, struct completion_request *req, pipeline_done_fn done,
                    void *ud, struct pipeline_job **out)
{
	if (p->closing) {
		completion_request_free(req);
		return -ECANCELED;
	}
	struct pipeline_job *job = calloc(1, sizeof *job);
	if (!job || async_start(p)) {
		free(job);
		completion_request_free(req);
		return -ENOMEM;
	}
	job->p = p;
	job->req = req;
	job->done = done;
	job->ud = ud;
	atomic_init(&job->cancel, 0);
	job->next = p->live;
	if (p->live) p->live->prev = job;
	p->live = job;
	*out = job;

	/* Answered without the engine: the fast path, or no model yet. Either
	 * way through the done list, so the callback runs later, never inside
	 * this call. */
	bool immediate = false;
	if (fast_answer(&p->docs, req, &job->result)) {
		job->fast = true;
		immediate = true;
		pthread_mutex_lock(&p->mu);
		p->stats.fast_path++;
		pthread_mutex_unlock(&p->mu);
	} else if (!atomic_load(&p->ready)) {
		immediate = true;
	}
	if (!immediate) {
		size_t top_len;
		const char *top = fast_top(&p->docs, req->uri, &top_len);
		if (top) {
			job->previous = strdup(top);
			job->previous_len = job->previous ? top_len : 0;
		}
	}
	pthread_mutex_lock(&p->mu);
	if (immediate) {
		if (p->done_tail)
			p->done_tail->qnext = job;
		else
			p->done_head = job;
		p->done_tail = job;
	} else {
		if (p->queue_tail)
			p->queue_tail->qnext = job;
		else
			p->queue_head = job;
		p->queue_tail = job;
		atomic_store(&p->extend_cancel, 1); /* an extension in progress yields */
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	if (immediate) uv_async_send(&p->async);
	return 0;
}

void pipeline_cancel(struct pipeline *p, struct pipeline_job *job)
{
	(void)p;
	if (!job) return;
	job->dropped = true;
	atomic_store(&job->cancel, 1);
	/* freed when the engine hands it back (at its next decode step) */
}

void pipeline_doc_open(struct pipeline *p, const char *uri, const char *language_id,
                       const struct doc *doc)
{
	(void)language_id, (void)doc;
	fast_doc_remove(&p->docs, uri); /* a reopened document starts afresh */
}

void pipeline_doc_edit(struct pipeline *p, const char *uri, const struct doc *doc, size_t start,
                       size_t old_end, size_t new_end)
{
	/* Nothing to do: the fast path compares snapshots, which also covers
	 * edits that arrive in several pieces. */
	(void)p, (void)uri, (void)doc, (void)start, (void)old_end, (void)new_end;
}

void pipeline_doc_close(struct pipeline *p, const char *uri)
{
	fast_doc_remove(&p->docs, uri);
}

void pipeline_get_stats(const struct pipeline *p, struct pipeline_stats *out)
{
	struct pipeline *mp = (struct pipeline *)p; /* the mutex, not the state, changes */
	pthread_mutex_lock(&mp->mu);
	*out = p->stats;
	pthread_mutex_unlock(&mp->mu);
}
