/*
 * pipeline.c - the completion pipeline behind pipeline.h with the model
 * running in-process, loop-thread half: it queues jobs for the engine
 * thread (engine_thread.c), delivers their results, answers from the last result
 * when the user types what is on screen (the fast path, pipeline_fast.c)
 * and keeps the counters. pipeline_internal.h states which thread owns what.
 *
 * A job is freed only on the loop thread, after the engine has handed it
 * back through the done list (or after the engine thread has exited), so the
 * engine never sees a freed job even when pipeline_cancel ran meanwhile.
 * Until a model is ready every job is answered at once with no candidates.
 */
#include "pipeline_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- jobs (loop thread) -------------------------------------------------- */

static void job_free(struct pipeline *p, struct pipeline_job *job)
{
	if (job->prev)
		job->prev->next = job->next;
	else
		p->live = job->next;
	if (job->next) job->next->prev = job->prev;
	worker_result_finish(&job->result);
	completion_request_free(job->req);
	free(job->previous);
	free(job);
}

/* Counts what the user is shown of an answer the model computed (r: its
 * items; live_id: the live candidate that grows it, 0: none): its top
 * item's bytes at every horizon, until growth adds to them (shown_grew). */
static void shown_answer(struct pipeline *p, const struct completion_result *r, uint64_t live_id)
{
	if (!r->count && !live_id) return;
	size_t len = r->count ? r->items[0].text_len : 0;
	pthread_mutex_lock(&p->mu);
	p->stats.shown_answers++;
	p->stats.shown_chars_answer += len;
	p->stats.shown_chars_500ms += len;
	p->stats.shown_chars_1s += len;
	p->stats.shown_chars_end += len;
	pthread_mutex_unlock(&p->mu);
	if (!live_id) return;
	struct shown_track *t = &p->shown[0];
	for (int i = 1; i < SHOWN_TRACK_MAX; i++)
		if (p->shown[i].t0 < t->t0) t = &p->shown[i];
	*t = (struct shown_track){ live_id, uv_hrtime(), { len, len, len } };
}

/* Live candidate live_id grew its top item to len bytes: what it adds
 * counts at each horizon not yet past. */
static void shown_grew(struct pipeline *p, uint64_t live_id, size_t len)
{
	static const uint64_t horizon_ns[SHOWN_AT_N] = { 500000000ull, 1000000000ull, UINT64_MAX };
	for (int i = 0; i < SHOWN_TRACK_MAX; i++) {
		struct shown_track *t = &p->shown[i];
		if (t->live_id != live_id) continue;
		uint64_t dt = uv_hrtime() - t->t0;
		uint64_t add[SHOWN_AT_N] = { 0 };
		for (int h = 0; h < SHOWN_AT_N; h++)
			if (dt <= horizon_ns[h] && len > t->at[h])
				add[h] = len - t->at[h], t->at[h] = len;
		pthread_mutex_lock(&p->mu);
		p->stats.shown_chars_500ms += add[SHOWN_AT_500MS];
		p->stats.shown_chars_1s += add[SHOWN_AT_1S];
		p->stats.shown_chars_end += add[SHOWN_AT_END];
		pthread_mutex_unlock(&p->mu);
		return;
	}
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
		          "completion %llu: prompt %d tokens (%d cached, %d shifted, %d computed; "
		          "budget %s), %d generated, %zu of %d candidates shown; slice %.1f ms, "
		          "engine %.1f ms (prefill %.1f, decode %.1f), post %.1f ms",
		          (unsigned long long)job->req->seq, f->prompt_tokens, f->cached_tokens,
		          f->shifted_tokens, f->prefilled_tokens, engine_budget_name(f->budget),
		          f->generated_tokens, f->count, f->n_generated, f->slice_ms, f->engine_ms,
		          f->prefill_ms, f->decode_ms, f->post_ms);
	job->result.path = job->fast          ? COMPLETION_PATH_FAST
	                   : job->cold        ? COMPLETION_PATH_COLD
	                   : f->prompt_tokens ? COMPLETION_PATH_TYPED
	                                      : COMPLETION_PATH_NONE;
	job->result.deadline_cut = f->deadline_hit;
	struct completion_result empty = { NULL, 0, COMPLETION_PATH_NONE, false };
	const struct completion_result *r = job->status ? &empty : &job->result;
	pipeline_done_fn done = job->done;
	void *ud = job->ud;
	/* record before the callback: it may submit the next job at once */
	struct fast_origin o = job->from;
	if (!job->fast)
		o = (struct fast_origin){ .live_id = job->live_id,
			                  .live_running = job->live_id != 0,
			                  .ctx_start = job->ctx_start,
			                  .ctx_end = job->ctx_end };
	/* a next edit's rewrite is no suggestion at the cursor: the fast path
	 * and the shown figures are the completions' */
	bool cursor = !job->req->rewrite;
	if (cursor && !job->status && !job->fast) shown_answer(p, r, job->live_id);
	if (cursor && !job->status && job->req->text) fast_record(&p->docs, job->req, r, &o);
	remote_bridge_record(p, job);
	if (!job->fast && !job->status && p->on_embedded) pipeline_model_tell_embedded(p);
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
	case EVENT_LOAD_END: {
		const char *end =
		        !ev->ok        ? "failed"
		        : ev->fallback ? "ready: the embedded model (the model set failed to load)"
		                       : "ready";
		if (progress && p->loading) progress(p->host.ud, LOAD_TITLE, end, 100, true);
		p->loading = false;
		if (ev->ok) p->on_embedded = ev->embedded;
		if (ev->ok)
			log_info(p->log, "model ready: %s", ev->message);
		else if (p->host.message)
			p->host.message(p->host.ud, 1, ev->message);
		else
			log_error(p->log, "%s", ev->message);
		break;
	}
	case EVENT_WARNING:
	case EVENT_INFO:
		if (p->host.message) /* which logs it too */
			p->host.message(p->host.ud, ev->kind == EVENT_INFO ? 3 : 2, ev->message);
		else
			log_warn(p->log, "%s", ev->message);
		break;
	case EVENT_LOG: log_info(p->log, "%s", ev->message); break;
	case EVENT_AHEAD: {
		const struct ahead *a = ev->ahead;
		bool kept = fast_ahead(&p->docs, a->uri, a->text, a->text_len, a->cursor,
		                       a->ctx_start, a->ctx_end, &a->result);
		log_debug(p->log, "%s: %zu candidates decoded ahead%s", a->uri, a->result.count,
		          kept ? "" : " (not kept)");
		break;
	}
	case EVENT_EXTENDED: {
		const struct extension *x = ev->ext;
		bool first;
		size_t grown = fast_grow(&p->docs, x->uri, x->live_id, &x->result, x->done, &first);
		if (grown) {
			shown_grew(p, x->live_id,
			           x->result.count ? x->result.items[0].text_len : 0);
			pthread_mutex_lock(&p->mu);
			p->stats.extended += first; /* answers, not growths */
			pthread_mutex_unlock(&p->mu);
			if (p->host.grew) p->host.grew(p->host.ud, x->uri, x->line_end, x->done);
		}
		log_debug(p->log, "%s: %zu shown candidates grew (live %llu%s)", x->uri, grown,
		          (unsigned long long)x->live_id, x->done ? ", ended" : "");
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

static void close_async(struct pipeline *p)
{
	if (p->async_started) {
		uv_close((uv_handle_t *)&p->async, closed);
	} else {
		p->async.data = p;
		closed((uv_handle_t *)&p->async);
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
	req_queue_clear(&p->warm);
	if (p->loading && p->host.progress)
		p->host.progress(p->host.ud, LOAD_TITLE, "stopped", 100, true);
	p->loading = false;
	/* the HTTP client's handles first, then the async handle */
	remote_bridge_close(p, close_async);
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
	remote_bridge_start_pending(p); /* HTTP calls the engine thread asked for */

	for (struct event *ev = events, *next; ev; ev = next) {
		next = ev->next;
		if (!p->closing) handle_event(p, ev);
		worker_event_free(ev);
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
	atomic_init(&p->zeta, false);
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
		remote_bridge_cancel_job(p, j);
	}
	remote_bridge_start_pending(p); /* ends those not started yet */
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
	remote_client_free(p->remote);
	for (struct event *ev = p->events_head, *next; ev; ev = next) {
		next = ev->next;
		worker_event_free(ev);
	}
	fast_doc_free_all(&p->docs);
	free(p->told_model);
	free(p->awaited_model);
	free(p->probe_key);
	free(p->probe_error);
	worker_spec_finish(&p->loaded);
	worker_spec_finish(&p->pending_load);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

void pipeline_load_ask(struct pipeline *p, char *path, const struct complete_model_spec *want,
                       char *fallback)
{
	pthread_mutex_lock(&p->mu);
	worker_spec_finish(&p->loaded);
	p->loaded = (struct load_spec){ path, NULL, *want };
	worker_spec_finish(&p->pending_load);
	p->pending_load = p->loaded;
	p->pending_load.path = strdup(path);
	p->pending_load.fallback = fallback;
	if (p->pending_load.path) {
		p->load_pending = true;
		p->draft_pending = false; /* the load takes the draft too */
		atomic_store(&p->extend_cancel, 1);
		atomic_store(&p->ready, false); /* answer empty until the new model is in */
	}
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void pipeline_configure(struct pipeline *p, const struct settings *settings)
{
	if (p->closing) return;
	free(p->awaited_model); /* these settings say anew what is awaited */
	p->awaited_model = NULL;
	char *path;
	if (settings->backend == CONFIG_BACKEND_REMOTE) { /* no model: a tokenizer, maybe */
		const char *tp = settings->remote_tokenizer ? settings->remote_tokenizer : "";
		path = malloc(strlen(PIPELINE_REMOTE_PREFIX) + strlen(tp) + 1);
		if (path) strcat(strcpy(path, PIPELINE_REMOTE_PREFIX), tp);
	} else {
		path = settings->model && settings->model[0]
		               ? pipeline_model_path(p, settings->model, settings->model_fallback)
		               : complete_default_model_path();
	}
	if (!path || async_start(p)) {
		free(path);
		log_error(p->log, "cannot configure the engine (out of memory or handles)");
		return;
	}
	struct complete_model_spec want = complete_model_spec_from(settings);
	const struct complete_model_spec *had = &p->loaded.model;
	bool reload = !p->configured || strcmp(path, p->loaded.path) ||
	              want.backend != had->backend || want.threads != had->threads ||
	              want.cache_memory_mb != had->cache_memory_mb || want.kv_type != had->kv_type;
	/* another draft model is swapped in beside the model loaded: the model
	 * and its cache stay */
	bool draft_changed = !reload && strcmp(want.draft_model, had->draft_model);
	bool shifted_changed = settings->cache_reuse_shifted_suffix != p->reuse_shifted;
	p->reuse_shifted = settings->cache_reuse_shifted_suffix;
	if (!reload && !shifted_changed && !draft_changed) {
		free(path);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->reuse_shifted_pending = p->reuse_shifted;
	p->params_pending = true;
	if (draft_changed) {
		memcpy(p->loaded.model.draft_model, want.draft_model, sizeof want.draft_model);
		memcpy(p->draft_pending_path, want.draft_model, sizeof want.draft_model);
		p->draft_pending = true;
		atomic_store(&p->extend_cancel, 1);
	}
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (reload) {
		/* the embedded model stands in for one that fails to load */
		pipeline_load_ask(p, path, &want,
		                  settings->model_fallback && settings->model && settings->model[0]
		                          ? complete_default_model_path()
		                          : NULL);
		p->configured = true;
	} else {
		free(path);
	}
	if (!p->thread_started && !strcmp(p->loaded.path, PIPELINE_NO_MODEL)) {
		/* nothing to load: no thread either, so closing is immediate */
		pthread_mutex_lock(&p->mu);
		p->load_pending = false;
		worker_spec_finish(&p->pending_load);
		pthread_mutex_unlock(&p->mu);
		log_info(p->log, "model: none; completions will be empty");
		return;
	}
	if (!p->thread_started) {
		if (pthread_create(&p->thread, NULL, worker_main, p)) {
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
	pipeline_model_landed(p);
	job->p = p;
	job->req = req;
	job->done = done;
	job->ud = ud;
	job->submit_ns = uv_hrtime();
	atomic_init(&job->cancel, 0);
	job->next = p->live;
	if (p->live) p->live->prev = job;
	p->live = job;
	*out = job;

	/* Answered without the engine: the fast path, or no model yet. Either
	 * way through the done list, so the callback runs later, never inside
	 * this call. */
	bool immediate = false;
	if (!req->rewrite && fast_answer(&p->docs, req, &job->result, &job->from)) {
		job->fast = true;
		immediate = true;
		pthread_mutex_lock(&p->mu);
		p->stats.fast_path++;
		if (job->from.live_id) p->stats.live_answers++;
		p->stats.past_answers += job->from.source == FAST_SOURCE_PAST;
		p->stats.ahead_answers += job->from.source == FAST_SOURCE_AHEAD;
		pthread_mutex_unlock(&p->mu);
	} else if (!atomic_load(&p->ready)) {
		immediate = true;
		pthread_mutex_lock(&p->mu);
		if (p->thread_started) {
			p->recheck_pending = true;
			pthread_cond_signal(&p->cv);
		}
		pthread_mutex_unlock(&p->mu);
	}
	if (!immediate && !req->rewrite) {
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
		atomic_store(&p->extend_cancel, 1); /* a live candidate's slice yields */
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	if (immediate) uv_async_send(&p->async);
	return 0;
}

bool pipeline_answers_at_once(struct pipeline *p, const struct completion_request *req)
{
	return fast_applies(&p->docs, req);
}

void pipeline_cancel(struct pipeline *p, struct pipeline_job *job)
{
	if (!job) return;
	job->dropped = true;
	atomic_store(&job->cancel, 1);
	remote_bridge_cancel_job(p, job); /* its connections close now */
	/* freed when the engine hands it back (at its next decode step) */
}

/* Hands the engine thread the id of a live candidate the loop ended. */
static void live_drop(struct pipeline *p, uint64_t id)
{
	if (!id || !p->thread_started) return;
	pthread_mutex_lock(&p->mu);
	if (p->n_live_drop < LIVE_DROP_MAX)
		p->live_drop[p->n_live_drop++] = id;
	else
		p->live_drop_all = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void pipeline_doc_open(struct pipeline *p, const char *uri, const char *language_id,
                       const struct doc *doc)
{
	(void)language_id, (void)doc;
	live_drop(p, fast_doc_remove(&p->docs, uri)); /* a reopened document starts afresh */
}

void pipeline_doc_edit(struct pipeline *p, const char *uri, const struct doc *doc, size_t start,
                       size_t old_end, size_t new_end)
{
	/* The fast path compares contexts when the next request comes, which
	 * also covers edits that arrive in several pieces; here only a live
	 * candidate is checked, so that one the edit contradicts stops
	 * decoding now (a document past the request window is left to the next
	 * request: its memory is of a window, in other offsets). */
	if (!fast_live_running(&p->docs, uri) || doc_length(doc) > COMPLETION_WINDOW_BYTES) return;
	char *text = doc_text(doc);
	if (!text) return;
	uint64_t id = fast_edit(&p->docs, uri, text, doc_length(doc), start, old_end, new_end);
	free(text);
	if (id)
		log_debug(p->log, "%s: an edit ended live candidate %llu", uri,
		          (unsigned long long)id);
	live_drop(p, id);
}

void pipeline_doc_close(struct pipeline *p, const char *uri)
{
	live_drop(p, fast_doc_remove(&p->docs, uri));
}

void pipeline_warm(struct pipeline *p, struct completion_request *req)
{
	if (p->closing || !p->thread_started || !atomic_load(&p->ready)) {
		completion_request_free(req);
		return;
	}
	/* Typing along the suggestion shown: the memory answers there, and the
	 * engine's work in progress (the live candidate growing it, the answer
	 * as if it were accepted) is what that place needs; a hint would stop
	 * it at every key, and throw the accepted answer's decode away. */
	if (fast_covers(&p->docs, req)) {
		completion_request_free(req);
		return;
	}
	pthread_mutex_lock(&p->mu);
	/* the same document's older hint goes, else the oldest (push_front) */
	p->warm.cap = WORKER_WARM_MAX;
	req_queue_drop_uri(&p->warm, req->uri);
	req_queue_push_front(&p->warm, (struct req_queue_item){ req, true, 0, false });
	/* background work in progress is older than this hint: it yields */
	atomic_store(&p->extend_cancel, 1);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

bool pipeline_model_is_zeta(struct pipeline *p)
{
	return atomic_load(&p->ready) && atomic_load(&p->zeta);
}

void pipeline_get_stats(const struct pipeline *p, struct stats *out)
{
	struct pipeline *mp = (struct pipeline *)p; /* the mutex, not the state, changes */
	pthread_mutex_lock(&mp->mu);
	*out = p->stats;
	pthread_mutex_unlock(&mp->mu);
	remote_bridge_stats(p, out);
}
