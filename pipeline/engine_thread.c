/*
 * engine_thread.c - the engine thread of the in-process pipeline: it loads the
 * model, runs each queued job through complete_run (complete.c), and keeps
 * the candidates the deadline paused decoding, from where they stopped, while
 * nothing else waits (the live candidates, one per document: live_slice). It
 * hands results and events to the loop thread (pipeline.c) through
 * pipeline_internal.h's lists and the async handle; it never touches a
 * loop-thread field.
 *
 * Its states (worker_main): load (a model, or the remote backend), job (the
 * queue's first: run, then its live candidate and background work kept), and
 * background, when no job waits: a slice of the newest live candidate
 * still going, else prefill at low priority of what the next request will
 * likely need: the full context of an answer the prefill budget shortened,
 * the prompt as if the shown suggestion were accepted, and the loop's hints
 * (pipeline_warm: a file just opened, the place of the last edit). Each is
 * stopped by a new job within one decode step or chunk (p->extend_cancel,
 * set whenever a job is queued).
 *
 * The model loads at the first pipeline_configure (during `initialize`,
 * once initializationOptions are in), and again when `model`, `backend`,
 * `threads` or `cache.memoryMB` change. A draft model set or changed while
 * a model answers loads on a thread of its own (draft_loader.h), and is
 * taken between jobs.
 */
#include "pipeline_internal.h"

#include "draft_loader.h"
#include "gguf.h"
#include "nextedit_model.h"

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

void worker_post_message(struct pipeline *p, enum event_kind kind, const char *msg)
{
	post_event(p, kind, 0, false, msg);
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
		worker_result_finish(&ev->ext->result);
		free(ev->ext);
	}
	if (ev->ahead) {
		free(ev->ahead->uri);
		free(ev->ahead->text);
		worker_result_finish(&ev->ahead->result);
		free(ev->ahead);
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
                            int32_t kv_pages, const struct engine *e)
{
	pthread_mutex_lock(&p->mu);
	p->stats.backend = backend;
	p->stats.kv_type = kv_type;
	p->stats.kv_pages = kv_pages > 0 ? (uint64_t)kv_pages : 0;
	p->stats.draft_model = e && engine_draft_model(e) ? "on" : "none";
	pthread_mutex_unlock(&p->mu);
}

static const char *backend_word(const struct model *m)
{
	return model_info(m)->backend == INFER_BACKEND_CUDA ? "cuda" : "cpu";
}

/* Whether a model was fine-tuned for Zeta's edit-prediction prompt: its
 * vocabulary has the region marker as a token, or its file name says so
 * (whether Zeta's files hold the marker as a token was not checked). */
static bool is_zeta(const char *path, const struct tokenizer *tok)
{
	static const char mark[] = NEXTEDIT_ZETA_REGION_START;
	if (tok && tokenizer_find(tok, mark, sizeof mark - 1) >= 0) return true;
	return nextedit_zeta_named(path);
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
		stats_set_model(p, "none", "none", 0, NULL);
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
			stats_set_model(p, "none", "none", 0, NULL);
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
			stats_set_model(p, "none", "none", 0, NULL);
			return;
		}
		path = fallback;
		fell_back = true;
	}
	if (err.message[0]) { /* the draft model could not be used */
		snprintf(msg, sizeof msg, "infill: %.500s", err.message);
		post_event(p, EVENT_WARNING, 0, false, msg);
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
	const char *kv = mi->kv_type; /* cache.kvType auto resolved by the backend */
	snprintf(msg, sizeof msg, "%s: %d layers, %d dims, %s, KV cache %s (%d pages of %d tokens)",
	         path, mi->n_layer, mi->n_embd, mi->backend_name ? mi->backend_name : "cpu", kv,
	         mi->kv_n_pages, mi->kv_page_size);
	stats_set_model(p, backend_word(m), kv, mi->kv_n_pages, e);
	atomic_store(&p->zeta, is_zeta(path, model_tokenizer(m)));
	*mp = m;
	*ep = e;
	atomic_store(&p->ready, true);
	struct event *ev = calloc(1, sizeof *ev);
	if (ev) {
		ev->kind = EVENT_LOAD_END;
		ev->percentage = 100;
		ev->ok = true;
		ev->fallback = fell_back;
		char *embedded = complete_default_model_path();
		ev->embedded = fell_back || (embedded && !strcmp(embedded, path));
		free(embedded);
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
	stats_set_model(p, "remote", "none", 0, NULL);
	/* the served model is Zeta as far as its vocabulary tells */
	atomic_store(&p->zeta, file[0] && is_zeta(file, *tp));
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

/* The request as if the text [start, end) -> text[0, len) were accepted:
 * the text in place, the cursor after it. New, or NULL when out of memory
 * or out of range. */
static struct completion_request *as_accepted(const struct completion_request *req, size_t start,
                                              size_t end, const char *text, size_t len)
{
	if (start > end || end > req->text_len) return NULL;
	struct completion_request *a = completion_request_clone(req);
	if (!a) return NULL;
	size_t n = req->text_len - (end - start) + len;
	char *t = malloc(n + 1);
	if (!t) {
		completion_request_free(a);
		return NULL;
	}
	memcpy(t, req->text, start);
	memcpy(t + start, text, len);
	memcpy(t + start + len, req->text + end, req->text_len - end);
	t[n] = 0;
	free(a->text);
	a->text = t;
	a->text_len = n;
	a->cursor = start + len;
	return a;
}

/* ---- live candidates ------------------------------------------------------ */

/* Documents whose live candidate the engine thread keeps at most: the least
 * recently made goes first. Each holds a few KV pages per candidate. */
#define LIVE_MAX         4
/* Decode steps per slice of a live candidate. A job waits at most one step
 * whatever this is (the cancel flag is read every step and between layers);
 * it bounds how often growth is looked at. */
#define LIVE_SLICE_STEPS 4
/* Growth goes to the loop at most this often, unless the top candidate ends
 * a line or ends: an editor redrawing ghost text every step would flicker,
 * and one that waits a whole line would show little. */
#define LIVE_POST_NS     (150 * 1000000ull)

struct live_doc {
	char *uri;                      /* owned; NULL: a free slot */
	uint64_t id;                    /* the seq of the request it answered */
	struct complete_live *cl;       /* owned */
	struct completion_request *req; /* that request (owned): its end is decoded ahead */
	int64_t made;                   /* tokens its candidates had at the answer */
	uint64_t posted_ns;             /* when growth was last posted */
	size_t posted_len;              /* the top candidate's bytes then */
	size_t posted_lines;            /* and its line breaks */
	uint64_t tick;                  /* when it was made (newest decodes first) */
};

struct live_set {
	struct live_doc doc[LIVE_MAX];
	uint64_t tick;
};

/* Ends ld. thrown: before its natural end, for an edit or a job that made
 * it useless: what it decoded after the answer counts as thrown away. */
static void live_end(struct pipeline *p, struct live_doc *ld, bool thrown)
{
	if (!ld->uri) return;
	if (thrown && !complete_live_done(ld->cl)) {
		int64_t after = complete_live_generated(ld->cl) - ld->made;
		pthread_mutex_lock(&p->mu);
		p->stats.live_thrown_tokens += (uint64_t)(after > 0 ? after : 0);
		pthread_mutex_unlock(&p->mu);
	}
	complete_live_free(ld->cl);
	completion_request_free(ld->req);
	free(ld->uri);
	memset(ld, 0, sizeof *ld);
}

/* Ends every live candidate (before the engine goes: they hold its pages). */
static void live_clear(struct pipeline *p, struct live_set *ls)
{
	for (int i = 0; i < LIVE_MAX; i++) live_end(p, &ls->doc[i], true);
}

static struct live_doc *live_find(struct live_set *ls, const char *uri)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (ls->doc[i].uri && !strcmp(ls->doc[i].uri, uri)) return &ls->doc[i];
	return NULL;
}

/* Keeps cl (taken) as the live candidate of req's document for the answer
 * to it, in place of the document's previous one, or of the oldest. */
static void live_keep(struct pipeline *p, struct live_set *ls, const struct completion_request *req,
                      struct complete_live *cl, const struct completion_result *shown)
{
	const char *uri = req->uri;
	struct live_doc *ld = live_find(ls, uri);
	for (int i = 0; !ld && i < LIVE_MAX; i++)
		if (!ls->doc[i].uri) ld = &ls->doc[i];
	for (int i = 0; !ld && i < LIVE_MAX; i++) /* none free: the oldest goes */
		if (!ld || ls->doc[i].tick < ld->tick) ld = &ls->doc[i];
	if (!ld) ld = &ls->doc[0];
	live_end(p, ld, true);
	char *u = strdup(uri);
	struct completion_request *r = completion_request_clone(req);
	if (!u || !r) {
		free(u);
		completion_request_free(r);
		complete_live_free(cl);
		return;
	}
	*ld = (struct live_doc){ .uri = u,
		                 .id = req->seq,
		                 .req = r,
		                 .cl = cl,
		                 .made = complete_live_generated(cl),
		                 .posted_ns = uv_hrtime(),
		                 .tick = ++ls->tick };
	if (shown->count) {
		ld->posted_len = shown->items[0].text_len;
		for (size_t i = 0; i < shown->items[0].text_len; i++)
			ld->posted_lines += shown->items[0].text[i] == '\n';
	}
}

/* Whether any document has a live candidate. */
static bool live_any(const struct live_set *ls)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (ls->doc[i].uri) return true;
	return false;
}

/* Whether some live candidate still decodes. */
static bool live_pending(const struct live_set *ls)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (ls->doc[i].uri && !complete_live_done(ls->doc[i].cl)) return true;
	return false;
}

/* The loop's ends (p->live_drop), applied; mu held (released meanwhile). */
static void live_apply_drops(struct pipeline *p, struct live_set *ls)
{
	uint64_t ids[LIVE_DROP_MAX];
	size_t n = p->n_live_drop;
	bool all = p->live_drop_all;
	memcpy(ids, p->live_drop, n * sizeof ids[0]);
	p->n_live_drop = 0;
	p->live_drop_all = false;
	pthread_mutex_unlock(&p->mu); /* live_end counts under mu */
	for (int i = 0; i < LIVE_MAX; i++) {
		struct live_doc *ld = &ls->doc[i];
		bool drop = ld->uri && all;
		for (size_t k = 0; ld->uri && k < n; k++) drop |= ids[k] == ld->id;
		if (drop) live_end(p, ld, true);
	}
	pthread_mutex_lock(&p->mu);
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
static uint64_t kv_touched_mb(struct model *m)
{
	const struct model_info *mi = model_info(m);
	/* q8_0: 34 bytes per 32 values */
	uint64_t page = 2ull * (uint64_t)mi->n_layer * (uint64_t)mi->kv_page_size *
	                (uint64_t)mi->n_head_kv * (uint64_t)mi->head_dim *
	                (!strcmp(mi->kv_type, "f32")    ? 128u
	                 : !strcmp(mi->kv_type, "q8_0") ? 34u
	                                                : 64u) /
	                32u;
	return (uint64_t)kv_pool_touched_pages(model_kv_pool(m)) * page >> 20;
}

/* Runs one job; fills job->status and job->result, and *live with the
 * candidates the deadline paused (new, or NULL). */
static void run_job(struct pipeline *p, struct engine *e, struct model *m, struct edoc **edocs,
                    struct pipeline_job *job, bool remote, const struct tokenizer *rtok,
                    struct complete_live **live)
{
	*live = NULL;
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
	opt.memory = req->rewrite ? NULL : edoc_memory(edocs, req->uri);
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
	/* the engine's runs only (complete_run ignores it for generate); a next
	 * edit's rewrite is answered whole, not grown on screen */
	opt.live = req->rewrite ? NULL : live;
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
	p->stats.model_draft_tokens +=
	        (uint64_t)(res.model_draft_tokens > 0 ? res.model_draft_tokens : 0);
	p->stats.model_drafts_kept +=
	        (uint64_t)(res.accepted_model_draft_tokens > 0 ? res.accepted_model_draft_tokens
	                                                       : 0);
	p->stats.rejected_candidates += (uint64_t)(res.rejected > 0 ? res.rejected : 0);
	p->stats.document_lines += (uint64_t)(res.given_shown > 0 ? res.given_shown : 0);
	p->stats.project_tokens += (uint64_t)(res.project_tokens > 0 ? res.project_tokens : 0);
	p->stats.project_lines += (uint64_t)(res.project_given > 0 ? res.project_given : 0);
	p->stats.short_contexts += res.shortened;
	if (m) p->stats.kv_touched_mb = kv_touched_mb(m);
	if (!rc && res.count) {
		p->stats.first_answers++;
		p->stats.first_answer_chars += res.items[0].len;
	}
	pthread_mutex_unlock(&p->mu);
	job->ctx_start = res.context_start;
	job->ctx_end = res.context_end;
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

/* Hands the live candidate's texts (res, moved) to the loop: the fast path
 * lengthens what it shows for that answer, and the editor is told. */
static void live_post(struct pipeline *p, struct live_doc *ld, struct complete_result *res,
                      bool done, bool line_end)
{
	struct event *ev = calloc(1, sizeof *ev);
	if (!ev || !(ev->ext = calloc(1, sizeof *ev->ext)) || !(ev->ext->uri = strdup(ld->uri)) ||
	    result_take(&ev->ext->result, res)) {
		if (ev) worker_event_free(ev);
		return;
	}
	ev->kind = EVENT_EXTENDED;
	ev->ext->live_id = ld->id;
	ev->ext->done = done;
	ev->ext->line_end = line_end;
	event_push(p, ev);
}

/*
 * One slice of the newest live candidate still going: a few decode steps,
 * stopped within one by a job (p->extend_cancel), then its texts checked
 * (validation, trimming) and, when they grew enough to show (a line ended,
 * LIVE_POST_NS passed, or it ended), posted to the loop. When it ended
 * with a text, *next is its request as if that text were accepted (new),
 * else NULL.
 */
static void live_slice(struct pipeline *p, struct engine *e, struct live_set *ls, int steps,
                       struct completion_request **next)
{
	*next = NULL;
	struct live_doc *ld = NULL;
	for (int i = 0; i < LIVE_MAX; i++) {
		struct live_doc *d = &ls->doc[i];
		if (d->uri && !complete_live_done(d->cl) && (!ld || d->tick > ld->tick)) ld = d;
	}
	if (!ld) return;
	struct complete_result res;
	int rc = complete_live_continue(e, ld->cl, &p->extend_cancel, steps, &res);
	pthread_mutex_lock(&p->mu);
	uint64_t made = (uint64_t)(res.generated_tokens > 0 ? res.generated_tokens : 0);
	p->stats.live_tokens += made;
	p->stats.generated_tokens += made;
	pthread_mutex_unlock(&p->mu);
	bool done = complete_live_done(ld->cl) || (rc && rc != ENGINE_ECANCELED);
	const struct complete_item *top = res.count ? &res.items[0] : NULL;
	size_t lines = 0;
	for (size_t i = 0; top && i < top->len; i++) lines += top->text[i] == '\n';
	bool grown = top && top->len > ld->posted_len;
	bool line_end = lines > ld->posted_lines;
	uint64_t now = uv_hrtime();
	if (done && top && !rerank_is_blank(top->text, top->len)) /* before live_post moves it */
		*next = as_accepted(ld->req, top->start, top->end, top->text, top->len);
	if (done || (grown && (line_end || now - ld->posted_ns >= LIVE_POST_NS))) {
		if (top) ld->posted_len = top->len, ld->posted_lines = lines;
		ld->posted_ns = now;
		live_post(p, ld, &res, done, line_end);
	}
	complete_result_finish(&res);
	if (done) live_end(p, ld, false);
}

/* ---- background work -------------------------------------------------------- */

/* Background work the engine thread found for itself, in order: the full
 * context of a shortened answer (prefilled), then the answer as if the
 * suggestion were accepted (decoded ahead: for a live candidate, once it
 * has ended). */
#define TODO_MAX 2

/*
 * How long background work waits before it starts. Each piece costs the
 * request that comes next up to one chunk and a parse of the document (the
 * slicing is not cancellable), so work that a keystroke most likely makes
 * useless waits a typist's pause first: the answer as if accepted (the user
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

/* Decodes req's answer (no deadline: nobody waits for it) until done or
 * until a job comes (p->extend_cancel), and hands it to the loop, whose
 * fast path keeps it among the document's past answers: req is the
 * request as if a suggestion were accepted, and the Tab that accepts it
 * is then answered at once. req is taken. */
static void ahead(struct pipeline *p, struct engine *e, struct model *m,
                  struct completion_request *req)
{
	struct complete_options opt = complete_options_default();
	opt.cancel = &p->extend_cancel;
	opt.use_cache = req->settings.cache_enabled;
	opt.n_ctx = model_info(m)->n_ctx_train;
	opt.seed = req->seq;
	struct engine_snippet *proj = project_apply(req, &opt);
	struct complete_result res;
	int rc = ENGINE_ECANCELED;
	if (req->cursor <= req->text_len)
		rc = complete_run(e, model_tokenizer(m), req->language_id, req->text, req->text_len,
		                  req->cursor, &req->settings, &opt, &res, NULL);
	else
		memset(&res, 0, sizeof res);
	free(proj);
	uint64_t made = (uint64_t)(res.generated_tokens > 0 ? res.generated_tokens : 0);
	pthread_mutex_lock(&p->mu);
	p->stats.background_prefill_tokens +=
	        (uint64_t)(res.prefilled_tokens > 0 ? res.prefilled_tokens : 0);
	p->stats.generated_tokens += made;
	p->stats.ahead_tokens += made;
	if (rc) p->stats.ahead_thrown_tokens += made;
	pthread_mutex_unlock(&p->mu);
	struct event *ev = NULL;
	if (!rc && res.count && (ev = calloc(1, sizeof *ev)) &&
	    (ev->ahead = calloc(1, sizeof *ev->ahead)) && !result_take(&ev->ahead->result, &res)) {
		struct ahead *a = ev->ahead;
		ev->kind = EVENT_AHEAD;
		a->uri = req->uri, a->text = req->text; /* moved */
		a->text_len = req->text_len, a->cursor = req->cursor;
		a->ctx_start = res.context_start, a->ctx_end = res.context_end;
		req->uri = req->text = NULL;
		event_push(p, ev);
	} else if (ev) {
		worker_event_free(ev);
	}
	complete_result_finish(&res);
	completion_request_free(req);
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

/* ---- the engine thread's states --------------------------------------------- */

/* What the engine thread holds (its own; the pipeline's shared fields are
 * reached through p under mu). */
struct worker_state {
	struct pipeline *p;
	struct model *m;
	struct engine *e;
	struct edoc *edocs;
	struct current_load cur;
	/* the settings of the model loaded, with the latest shifted-suffix
	 * choice (which the engine takes without a reload) */
	struct complete_model_spec ms;
	struct req_queue todo; /* its own background work (cap TODO_MAX) */
	/* the remote backend: on, and remote.tokenizer's vocabulary (or NULL) */
	bool remote;
	struct gguf_file *rgguf;
	struct tokenizer *rtok;
	struct live_set live;
	/* completion.draftModel set but not drafting (a catalog model not
	 * pulled yet, a file refused or being written): the file it names, as
	 * it was then (st zeroed while there was none). The first job after it
	 * changes (`infill pull` renaming its download in) tries it again. */
	char *draft_where;
	struct stat draft_st;
	/* the draft's file changed (either way): the draft is loaded again,
	 * beside the jobs (dl) */
	bool draft_due;
	char draft_why[128]; /* how the file of the draft drafting changed; "" */
	/* a draft loading beside the jobs (its setting or its file changed),
	 * taken between jobs once no suggestion grows; announce: say that it
	 * drafts once it does (it was tried again after its file changed) */
	struct draft_loader *dl;
	bool dl_announce;
	/* the setting changed while dl loaded: its draft is dropped once
	 * loaded (no thread is waited for), and the one set now loaded */
	bool dl_stale;
	/* INFILL_TEST_DRAFT_LOAD_DELAY_MS: each draft load held back that long,
	 * so that tests can see jobs answered while a draft loads; 0 in use */
	unsigned dl_delay_ms;
	/* INFILL_TEST_LIVE_DELAY_MS: a pause between live slices of one step, so that
	 * tests can act while a live candidate still decodes (the tiny test
	 * model ends one in a few ms); 0 in use */
	uint64_t live_delay_ns, live_next_ns;
};

/* Whether anything waits for the engine thread (mu held). */
static bool has_work(const struct worker_state *w)
{
	const struct pipeline *p = w->p;
	return p->stop || p->load_pending || p->draft_pending || w->draft_due ||
	       (w->dl && draft_loader_done(w->dl)) || p->queue_head || w->todo.n || p->warm.n ||
	       p->recheck_pending || p->n_live_drop || p->live_drop_all ||
	       (w->e && live_pending(&w->live));
}

static void worker_swap_draft(struct worker_state *w);

static void stat_or_zero(const char *path, struct stat *st)
{
	if (stat(path, st) != 0) memset(st, 0, sizeof *st);
}

/* After a load or a swap: whether there is a draft to watch for. */
static void draft_watch_set(struct worker_state *w)
{
	w->draft_due = false;
	free(w->draft_where);
	w->draft_where = NULL;
	if (!w->e || !w->ms.draft_model[0] || engine_draft_model(w->e)) return;
	w->draft_where = complete_draft_where(w->ms.draft_model);
	if (w->draft_where) stat_or_zero(w->draft_where, &w->draft_st);
}

/* The draft model's file changed under it (a new `infill pull`, a copy
 * over it): the draft is due to be loaded again. Answers stay right
 * meanwhile (the model checks every drafted token); a draft read from
 * zeros has each refused, and only costs time. A draft that could not be
 * used is due again once its file changes (draft_where). */
static void worker_draft_check(struct worker_state *w)
{
	const struct model *dm = w->e ? engine_draft_model(w->e) : NULL;
	if (w->draft_due || !w->e || w->dl) return;
	if (!dm && w->draft_where) {
		struct stat now;
		stat_or_zero(w->draft_where, &now);
		w->draft_due = !same_file(&now, &w->draft_st);
		return;
	}
	w->draft_due = dm && model_file_changed(dm, w->draft_why, sizeof w->draft_why);
}

/* Wakes the engine thread: a draft loaded (called on the loader's thread). */
static void draft_loaded_wake(void *user)
{
	struct pipeline *p = user;
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* A draft loading, waited for and dropped: a later setting or a new model
 * replaced it. */
static void draft_load_drop(struct worker_state *w)
{
	if (!w->dl) return;
	struct infill_error warn;
	model_free(draft_loader_finish(w->dl, &warn));
	w->dl = NULL;
	w->dl_stale = false;
}

/* dm (a loaded draft, or NULL with *warn saying why) made the engine's;
 * live candidates end first (their pages are in the old draft's pool). */
static void draft_apply(struct worker_state *w, struct model *dm, struct infill_error *warn)
{
	if (!w->e) {
		model_free(dm);
		return;
	}
	bool had = engine_draft_model(w->e) != NULL;
	live_clear(w->p, &w->live);
	complete_draft_give(w->e, &w->ms, dm, warn);
	draft_watch_set(w);
	const struct model_info *mi = model_info(w->m);
	stats_set_model(w->p, backend_word(w->m), mi->kv_type, mi->kv_n_pages, w->e);
	char msg[600];
	if (engine_draft_model(w->e)) { /* tests wait for it: the draft is taken */
		snprintf(msg, sizeof msg, "draft model ready: %.500s", w->ms.draft_model);
		worker_post_message(w->p, EVENT_LOG, msg);
	}
	if (warn->message[0]) {
		snprintf(msg, sizeof msg, "infill: %.500s", warn->message);
		worker_post_message(w->p, EVENT_WARNING, msg);
	} else if (w->dl_announce && !had && engine_draft_model(w->e)) {
		snprintf(msg, sizeof msg, "infill: the draft model %.300s drafts now",
		         w->ms.draft_model);
		worker_post_message(w->p, EVENT_INFO, msg);
	}
}

/* w->ms's draft starts loading beside the jobs (in place where no thread
 * starts). announce: as struct worker_state's dl_announce. */
static void draft_load_begin(struct worker_state *w, bool announce)
{
	draft_load_drop(w);
	w->draft_due = false;
	w->dl_announce = announce;
	w->dl = draft_loader_start(&w->ms, draft_loaded_wake, w->p, w->dl_delay_ms);
	if (w->dl) return;
	struct infill_error warn;
	struct model *dm = complete_draft_load(&w->ms, &warn);
	draft_apply(w, dm, &warn);
}

/* The draft loaded, taken (no job waits, no suggestion grows), or
 * dropped for the one set since. */
static void draft_load_take(struct worker_state *w)
{
	struct infill_error warn;
	struct model *dm = draft_loader_finish(w->dl, &warn);
	w->dl = NULL;
	if (w->dl_stale) {
		w->dl_stale = false;
		model_free(dm);
		if (w->ms.draft_model[0]) draft_load_begin(w, false);
		return;
	}
	draft_apply(w, dm, &warn);
	worker_draft_check(w); /* its file may have changed again meanwhile */
}

/* A due draft, loaded again: a changed file said first, a draft that
 * drafts where none did after (draft_apply). */
static void worker_draft_retry(struct worker_state *w)
{
	if (w->e && engine_draft_model(w->e)) {
		char msg[600];
		snprintf(msg, sizeof msg,
		         "infill: the draft model file %.300s changed on disk (%s); loading it "
		         "again",
		         w->ms.draft_model, w->draft_why);
		worker_post_message(w->p, EVENT_WARNING, msg);
	}
	draft_load_begin(w, true);
}

/* The model file changed under it: loaded again (live candidates first
 * ended: their pages are the old engine's), its draft with it. True when
 * it was. Else the draft's file alone may have changed (worker_draft_check). */
static bool worker_reload_if_changed(struct worker_state *w)
{
	bool changed = w->m ? model_file_changed(w->m, NULL, 0) : w->cur.failed;
	if (!changed) {
		worker_draft_check(w);
		return false;
	}
	live_clear(w->p, &w->live);
	draft_load_drop(w); /* the reload loads the draft too */
	if (!reload_if_changed(w->p, &w->cur, &w->ms, &w->m, &w->e)) return false;
	draft_watch_set(w);
	edoc_free_all(w->edocs); /* remembered from the old model's output */
	w->edocs = NULL;
	return true;
}

/* State "load": a new model (or the remote backend) as the loop asked.
 * Entered and left with mu held. */
static void state_load(struct worker_state *w)
{
	struct pipeline *p = w->p;
	struct load_spec spec = p->pending_load;
	p->pending_load.path = NULL; /* spec owns them now */
	p->pending_load.fallback = NULL;
	p->load_pending = false;
	p->params_pending = false;
	w->ms = spec.model;
	w->ms.reuse_shifted_suffix = p->reuse_shifted_pending;
	atomic_store(&p->ready, false);
	pthread_mutex_unlock(&p->mu);
	live_clear(p, &w->live);
	draft_load_drop(w); /* the load loads the draft too */
	w->remote = !strncmp(spec.path, PIPELINE_REMOTE_PREFIX, strlen(PIPELINE_REMOTE_PREFIX));
	if (w->remote) {
		engine_free(w->e);
		model_free(w->m);
		w->e = NULL;
		w->m = NULL;
		load_remote(p, spec.path, &w->rgguf, &w->rtok);
		free(w->cur.path);
		w->cur = (struct current_load){ 0 };
		worker_swap_draft(w); /* says a draft is not used here */
	} else {
		tokenizer_free(w->rtok);
		gguf_close(w->rgguf);
		w->rtok = NULL;
		w->rgguf = NULL;
		load(p, spec.path, spec.fallback, &w->ms, &w->m, &w->e);
		current_set(&w->cur, spec.path, w->m);
	}
	draft_watch_set(w);
	worker_spec_finish(&spec);
	pthread_mutex_lock(&p->mu);
}

/* State "background": no job waits. A live candidate's slice first (the
 * user is reading it), then background prefill, newest first. Entered and
 * left with mu held. */
static void state_background(struct worker_state *w)
{
	struct pipeline *p = w->p;
	if (w->e && live_pending(&w->live)) {
		if (w->live_next_ns > uv_hrtime()) {
			wait_until(p, w->live_next_ns);
			return;
		}
		atomic_store(&p->extend_cancel, 0);
		pthread_mutex_unlock(&p->mu);
		struct completion_request *next;
		/* slowed for a test: a step a slice, so that even a short
		 * candidate grows in several stages a test can see */
		live_slice(p, w->e, &w->live, w->live_delay_ns ? 1 : LIVE_SLICE_STEPS, &next);
		w->live_next_ns = w->live_delay_ns ? uv_hrtime() + w->live_delay_ns : 0;
		if (next) /* NULL: out of memory, nothing ahead */
			req_queue_push_back(&w->todo,
			                    (struct req_queue_item){ next, false,
			                                             uv_hrtime() + ACCEPT_DELAY_NS,
			                                             true });
		pthread_mutex_lock(&p->mu);
		return;
	}
	if (p->warm.n) req_queue_clear(&w->todo); /* an edit came since: stale */
	if (!w->todo.n && !p->warm.n) return;
	uint64_t at = w->todo.n ? w->todo.it[0].not_before
	                        : p->warm.it[0].req->arrival_ns + HINT_DELAY_NS;
	if (at > uv_hrtime()) {
		wait_until(p, at);
		return; /* whatever came meanwhile goes first */
	}
	struct req_queue_item it =
	        w->todo.n ? req_queue_take(&w->todo, 0) : req_queue_take(&p->warm, 0);
	if (!w->e) {
		completion_request_free(it.req);
		return;
	}
	atomic_store(&p->extend_cancel, 0);
	pthread_mutex_unlock(&p->mu);
	if (it.ahead)
		ahead(p, w->e, w->m, it.req);
	else
		warm(p, w->e, w->m, &w->edocs, it.req, it.keep_memory);
	pthread_mutex_lock(&p->mu);
}

/* State "job": the queue's first job, run; its live candidate kept; its
 * background work queued. Entered and left with mu held. */
static void state_job(struct worker_state *w)
{
	struct pipeline *p = w->p;
	struct pipeline_job *job = p->queue_head;
	p->queue_head = job->qnext;
	if (!p->queue_head) p->queue_tail = NULL;
	job->qnext = NULL;
	/* the job computes its document's place itself: older hints there go */
	req_queue_drop_uri(&p->warm, job->req->uri);
	pthread_mutex_unlock(&p->mu);

	worker_reload_if_changed(w);
	/* a job there asks anew: the live candidate there has not answered it
	 * (the fast path would have), so it is of an older place */
	struct live_doc *old = live_find(&w->live, job->req->uri);
	if (old) live_end(p, old, true);
	struct complete_live *cl = NULL;
	run_job(p, w->e, w->m, &w->edocs, job, w->remote, w->rtok, &cl);
	if ((job->status == -ENOMEM || job->status == -ENOSPC) && live_any(&w->live)) {
		/* the live candidates' pages may be what the job lacked: they
		 * give way to the request, which runs again */
		complete_live_free(cl);
		live_clear(p, &w->live);
		worker_result_finish(&job->result);
		run_job(p, w->e, w->m, &w->edocs, job, w->remote, w->rtok, &cl);
	}
	if (w->m && model_file_changed(w->m, NULL, 0)) {
		/* computed (in part) from a file that changed under the read:
		 * answered empty; the next job reloads */
		worker_result_finish(&job->result);
		job->status = 0;
	}
	req_queue_clear(&w->todo); /* an older job's background work is stale now */
	bool answered = w->e && !job->status && !atomic_load(&job->cancel);
	if (answered && !job->req->rewrite) { /* a next edit's rewrite: nothing ahead */
		if (job->figures.shortened)
			req_queue_push_back(&w->todo, (struct req_queue_item){
			                                      completion_request_clone(job->req),
			                                      true, uv_hrtime(), false });
		/* the answer as if its top item were accepted, decoded ahead;
		 * a live candidate's when it ends (live_slice) */
		const struct completion_candidate *top = job->result.items;
		struct completion_request *acc =
		        job->result.count && !cl ? as_accepted(job->req, top->start, top->end,
		                                               top->text, top->text_len)
		                                 : NULL;
		if (acc)
			req_queue_push_back(&w->todo,
			                    (struct req_queue_item){ acc, false,
			                                             uv_hrtime() + ACCEPT_DELAY_NS,
			                                             true });
	}
	/* The candidates the deadline paused decode on from where they
	 * stopped (not for the remote backend: no local model) */
	/* (also when nothing could be shown yet: cut that early, the answer
	 * was empty, and the first growth is the first text the user sees) */
	if (cl && answered) {
		job->live_id = job->req->seq;
		live_keep(p, &w->live, job->req, cl, &job->result);
	} else {
		complete_live_free(cl);
	}
	pthread_mutex_lock(&p->mu);
	if (p->done_tail)
		p->done_tail->qnext = job;
	else
		p->done_head = job;
	p->done_tail = job;
	uv_async_send(&p->async);
}

/* completion.draftModel changed (w->ms has the new one): the draft beside
 * the model loaded is replaced, the old one drafting until the new one is
 * loaded (after the one loading, if any). None is at once. Without a
 * model, the next load takes it. */
static void worker_swap_draft(struct worker_state *w)
{
	if (w->remote && w->ms.draft_model[0])
		worker_post_message(w->p, EVENT_WARNING,
		                    "infill: completion.draftModel is not used with the remote "
		                    "backend: its server decodes, and drafts with a model of its "
		                    "own if it does");
	if (!w->e) return;
	w->dl_stale = w->dl != NULL;
	if (!w->ms.draft_model[0]) {
		struct infill_error none = { 0 };
		draft_apply(w, NULL, &none);
	} else if (!w->dl) {
		draft_load_begin(w, false);
	}
}

void *worker_main(void *arg)
{
	struct worker_state w = { .p = arg, .todo = { .cap = TODO_MAX } };
	struct pipeline *p = w.p;
	const char *delay = getenv("INFILL_TEST_LIVE_DELAY_MS");
	if (delay) w.live_delay_ns = (uint64_t)strtoul(delay, NULL, 10) * 1000000ull;
	const char *dl_delay = getenv("INFILL_TEST_DRAFT_LOAD_DELAY_MS");
	if (dl_delay) w.dl_delay_ms = (unsigned)strtoul(dl_delay, NULL, 10);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!has_work(&w)) pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop) break;
		if (p->n_live_drop || p->live_drop_all) live_apply_drops(p, &w.live);
		if (p->load_pending) {
			state_load(&w);
			continue;
		}
		if (p->draft_pending) {
			p->draft_pending = false;
			memcpy(w.ms.draft_model, p->draft_pending_path, sizeof w.ms.draft_model);
			pthread_mutex_unlock(&p->mu);
			worker_swap_draft(&w);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->recheck_pending) {
			p->recheck_pending = false;
			pthread_mutex_unlock(&p->mu);
			worker_reload_if_changed(&w);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (w.draft_due) { /* loads beside the jobs */
			pthread_mutex_unlock(&p->mu);
			worker_draft_retry(&w);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		/* taken after the jobs, and after the suggestions being read
		 * have grown (a swap ends them) */
		if (w.dl && draft_loader_done(w.dl) &&
		    (w.dl_stale || (!p->queue_head && !(w.e && live_pending(&w.live))))) {
			pthread_mutex_unlock(&p->mu);
			draft_load_take(&w);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->params_pending && w.e) {
			w.ms.reuse_shifted_suffix = p->reuse_shifted_pending;
			struct engine_params ep = complete_engine_params(&w.ms);
			engine_configure(w.e, &ep);
		}
		p->params_pending = false;
		if (p->queue_head)
			state_job(&w);
		else
			state_background(&w);
	}
	pthread_mutex_unlock(&p->mu);
	req_queue_clear(&w.todo);
	atomic_store(&p->ready, false);
	live_clear(p, &w.live);
	draft_load_drop(&w);
	edoc_free_all(w.edocs);
	engine_free(w.e);
	model_free(w.m);
	tokenizer_free(w.rtok);
	gguf_close(w.rgguf);
	free(w.cur.path);
	free(w.draft_where);
	pthread_mutex_lock(&p->mu);
	p->thread_exited = true;
	pthread_mutex_unlock(&p->mu);
	uv_async_send(&p->async);
	return NULL;
}
