/*
 * project.c - the server's side of context/ (project context): the workspace
 * index, scanned off the loop (uv_queue_work) after `initialized` and kept
 * current on didSave and workspace/didChangeWatchedFiles (it keeps the
 * texts of the files it read, which stand for the imported and related
 * files that are not open: nothing is read on the loop); the recent ring,
 * fed by edits; and the project context each completion request carries,
 * chosen once per line of a document (the chunks sit before the prefix,
 * so a choice that changed per keystroke would cost the prefix cache).
 *
 * Threads: everything here runs on the loop thread, except the work
 * callbacks, which touch only the index (it has its own lock) and the
 * batch of paths handed to them.
 */
#include "server_priv.h"

#include <stdlib.h>
#include <string.h>

#include "context.h"

#define MAX_OPEN       8            /* other open documents looked into */
#define MAX_OPEN_BYTES (512u << 10) /* larger ones are not */
#define MAX_RING_DOC   (256u << 10) /* edits of larger documents are not kept */

struct project {
	struct server *s;
	struct ctx_index *ix; /* NULL: no root, or context.index.maxFiles 0 */
	struct ctx_ring *ring;
	/* one piece of work at a time: the scan, or a batch of updates */
	uv_work_t work;
	bool busy, scan_wanted;
	char **queued; /* paths to update, waiting (owned) */
	size_t n_queued, cap_queued;
	char **batch; /* the batch in flight (owned) */
	size_t n_batch;
	unsigned version; /* bumped when the index changed: old choices are stale */
	bool closing;
	void (*close_done)(void *ud);
	void *close_ud;
	/* the last choice, reused while the cursor stays on its line */
	char *last_uri;
	size_t last_line;
	uint64_t last_generation_ring; /* ring edits seen when chosen */
	unsigned last_version;
	struct ctx_chunks last;
	bool have_last;
	uint64_t ring_edits;
};

struct project *project_new(struct server *s)
{
	struct project *p = calloc(1, sizeof *p);
	if (!p) return NULL;
	p->s = s;
	p->ring = ctx_ring_new(16);
	if (!p->ring) {
		free(p);
		return NULL;
	}
	return p;
}

static void forget_last(struct project *p)
{
	ctx_chunks_finish(&p->last);
	free(p->last_uri);
	p->last_uri = NULL;
	p->have_last = false;
}

void project_free(struct project *p)
{
	if (!p) return;
	forget_last(p);
	for (size_t i = 0; i < p->n_queued; i++) free(p->queued[i]);
	free(p->queued);
	for (size_t i = 0; i < p->n_batch; i++) free(p->batch[i]);
	free(p->batch);
	ctx_ring_free(p->ring);
	ctx_index_free(p->ix);
	free(p);
}

/* ---- work off the loop ---- */

static void work_run(uv_work_t *w)
{
	struct project *p = w->data;
	if (p->scan_wanted) {
		ctx_index_scan(p->ix); /* out of memory: the old table stays */
		return;
	}
	for (size_t i = 0; i < p->n_batch; i++) ctx_index_update(p->ix, p->batch[i]);
}

static void work_next(struct project *p);

static void work_done(uv_work_t *w, int status)
{
	struct project *p = w->data;
	(void)status;
	p->busy = false;
	p->version++;
	if (p->scan_wanted) {
		p->scan_wanted = false;
		struct ctx_index_stats st;
		ctx_index_stats(p->ix, &st);
		log_info(p->s->log,
		         "workspace index: %zu files, %zu definitions, %zu KiB%s (skipped: %zu "
		         "ignored, %zu big, %zu generated, %zu links)",
		         st.files, st.defs, st.bytes >> 10,
		         st.truncated ? ", truncated by context.index.maxFiles/maxMB" : "",
		         st.skipped_ignored, st.skipped_big, st.skipped_generated,
		         st.skipped_links);
	}
	if (p->n_batch) {
		struct ctx_index_stats st;
		ctx_index_stats(p->ix, &st);
		log_debug(p->s->log, "workspace index: %zu files after %zu updates", st.files,
		          p->n_batch);
	}
	for (size_t i = 0; i < p->n_batch; i++) free(p->batch[i]);
	p->n_batch = 0;
	if (p->closing) {
		if (p->close_done) p->close_done(p->close_ud);
		p->close_done = NULL;
		return;
	}
	work_next(p);
}

static void work_next(struct project *p)
{
	if (p->busy || p->closing || !p->ix || (!p->scan_wanted && !p->n_queued)) return;
	if (!p->scan_wanted) { /* the queue becomes the batch */
		free(p->batch);
		p->batch = p->queued;
		p->n_batch = p->n_queued;
		p->queued = NULL;
		p->n_queued = p->cap_queued = 0;
	}
	p->work.data = p;
	if (uv_queue_work(p->s->loop, &p->work, work_run, work_done) == 0) p->busy = true;
}

/* The watcher the client is asked for (when it can register one): every
 * file when the index is kept, else only the project's settings file, so
 * that saving .infill.json outside a synced document reloads it too. */
static void watch_files(struct server *s, bool everything)
{
	if (!s->client_watch_files || !s->root_path) return;
	server_request(s, "client/registerCapability",
	               json_pack("{s:[{s:s, s:s, s:{s:[{s:s}]}}]}", "registrations", "id",
	                         "infill-watched-files", "method",
	                         "workspace/didChangeWatchedFiles", "registerOptions", "watchers",
	                         "globPattern", everything ? "**/*" : "**/.infill.json"),
	               NULL, NULL);
}

void project_start(struct project *p)
{
	struct server *s = p->s;
	const struct settings *st = config_get(s->config, NULL);
	if (p->ix || !s->root_path) return;
	if (st->context_index_max_files <= 0) {
		watch_files(s, false);
		return;
	}
	struct ctx_index_params ip = { .root = s->root_path,
		                       .max_files = st->context_index_max_files,
		                       .max_mb = st->context_index_max_mb };
	p->ix = ctx_index_new(&ip);
	if (!p->ix) {
		log_warn(s->log, "workspace index: cannot index %s", s->root_path);
		watch_files(s, false);
		return;
	}
	p->scan_wanted = true;
	work_next(p);
	/* Files changed outside the editor (a checkout, a generator): clients
	 * send them once asked to watch. */
	watch_files(s, true);
}

void project_file_changed(struct project *p, const char *uri)
{
	if (!p->ix) return;
	char *path = workspace_uri_to_path(uri);
	if (!path) return;
	if (p->n_queued == p->cap_queued) {
		size_t cap = p->cap_queued ? p->cap_queued * 2 : 8;
		if (cap > 4096) { /* a flood (a checkout): scan again instead */
			free(path);
			p->scan_wanted = true;
			work_next(p);
			return;
		}
		char **v = realloc(p->queued, cap * sizeof *v);
		if (!v) {
			free(path);
			return;
		}
		p->queued = v;
		p->cap_queued = cap;
	}
	p->queued[p->n_queued++] = path;
	work_next(p);
}

void project_close(struct project *p, void (*done)(void *ud), void *ud)
{
	p->closing = true;
	if (!p->busy) {
		done(ud);
		return;
	}
	p->close_done = done; /* a running work callback cannot be stopped: wait for it */
	p->close_ud = ud;
}

uint64_t project_index_files(struct project *p)
{
	if (!p->ix) return 0;
	struct ctx_index_stats st;
	ctx_index_stats(p->ix, &st);
	return st.files;
}

/* ---- the ring ---- */

void project_did_edit(struct project *p, const struct docs_entry *e, size_t at)
{
	if (doc_length(e->doc) > MAX_RING_DOC) return;
	char *path = workspace_uri_to_path(e->uri);
	char *text = doc_text(e->doc);
	if (path && text && !ctx_ring_add(p->ring, path, text, doc_length(e->doc), at))
		p->ring_edits++;
	free(text);
	free(path);
}

void project_doc_closed(struct project *p, const char *uri)
{
	char *path = workspace_uri_to_path(uri);
	if (path) ctx_ring_forget(p->ring, path);
	free(path);
	if (p->last_uri && !strcmp(p->last_uri, uri)) forget_last(p);
}

/* ---- a request's context ---- */

struct open_docs {
	const char *self;
	struct ctx_doc v[MAX_OPEN];
	size_t n;
};

static void collect_open(struct docs_entry *e, void *ud)
{
	struct open_docs *o = ud;
	if (o->n >= MAX_OPEN || !strcmp(e->uri, o->self) || doc_length(e->doc) > MAX_OPEN_BYTES)
		return;
	char *path = workspace_uri_to_path(e->uri);
	char *text = path ? doc_text(e->doc) : NULL;
	if (!text) {
		free(path);
		return;
	}
	o->v[o->n++] = (struct ctx_doc){ path, text, doc_length(e->doc) };
}

/* Chooses again into p->last for the request's line. */
static int choose(struct project *p, const struct docs_entry *e,
                  const struct completion_request *req, size_t line)
{
	forget_last(p);
	struct open_docs od = { .self = e->uri };
	docs_each(p->s->docs, collect_open, &od);
	char *path = workspace_uri_to_path(e->uri);
	struct ctx_query q = {
		.path = path,
		.language_id = req->language_id,
		.text = req->text,
		.len = req->text_len,
		.cursor = req->cursor,
		.open = od.v,
		.n_open = od.n,
		.index = p->ix,
		.ring = p->ring,
		.budget = (size_t)(req->settings.context_extra_tokens > 0
		                           ? req->settings.context_extra_tokens
		                           : 0),
	};
	int rc = ctx_select(&q, &p->last);
	for (size_t i = 0; i < od.n; i++) {
		free((char *)od.v[i].path);
		free((char *)od.v[i].text);
	}
	free(path);
	if (rc) return rc;
	p->last_uri = strdup(e->uri);
	if (!p->last_uri) {
		ctx_chunks_finish(&p->last);
		return -ENOMEM;
	}
	/* what was chosen and why, once per line: `infill context` for the
	 * server's own choice (open tabs, the index's texts, the ring) */
	for (size_t i = 0; i < p->last.n; i++)
		log_debug(p->s->log, "project context for %s line %zu: %s %s, %zu tokens (%s)",
		          e->uri, line + 1, ctx_source_name(p->last.v[i].source), p->last.v[i].path,
		          p->last.v[i].tokens, p->last.v[i].why);
	p->last_line = line;
	p->last_version = p->version;
	p->last_generation_ring = p->ring_edits;
	p->have_last = true;
	return 0;
}

int project_fill(struct project *p, const struct docs_entry *e, size_t cursor,
                 struct completion_request *req)
{
	if (!req->settings.context_project || req->settings.context_extra_tokens <= 0) return 0;
	size_t line = doc_line_at(e->doc, cursor);
	/* Typing on one line keeps the choice (and the prompt's head); a new
	 * line, another document or a changed index chooses again. Ring edits
	 * in this document do not: its own chunks are never offered. */
	if (!(p->have_last && !strcmp(p->last_uri, e->uri) && p->last_line == line &&
	      p->last_version == p->version)) {
		int rc = choose(p, e, req, line);
		if (rc) return rc;
	}
	const struct ctx_chunks *c = &p->last;
	if (c->n && p->ix) { /* the repository format's name and path */
		const char *root = ctx_index_root(p->ix), *base = strrchr(root, '/');
		char *path = workspace_uri_to_path(e->uri);
		size_t rl = strlen(root);
		req->project_repo = strdup(base && base[1] ? base + 1 : root);
		if (path && !strncmp(path, root, rl) && path[rl] == '/')
			req->project_path = strdup(path + rl + 1);
		free(path);
	}
	if (c->n) {
		req->project = calloc(c->n, sizeof *req->project);
		if (!req->project) return -ENOMEM;
		for (size_t i = 0; i < c->n; i++) {
			struct completion_chunk *d = &req->project[i];
			d->path = strdup(c->v[i].path);
			d->text = malloc(c->v[i].len + 1);
			req->n_project = i + 1;
			if (!d->path || !d->text) return -ENOMEM;
			memcpy(d->text, c->v[i].text, c->v[i].len);
			d->text[c->v[i].len] = 0;
			d->len = c->v[i].len;
		}
	}
	if (c->lines && req->settings.completion_from_document) {
		req->project_lines = malloc(c->lines_len + 1);
		if (!req->project_lines) return -ENOMEM;
		memcpy(req->project_lines, c->lines, c->lines_len + 1);
		req->project_lines_len = c->lines_len;
	}
	return 0;
}

bool project_defined_in(struct project *p, const char *uri, const char *language_id,
                        const char *name, char *buf, size_t cap)
{
	if (!p || !p->ix) return false;
	char *path = workspace_uri_to_path(uri);
	if (!path) return false;
	int rc = ctx_index_defined_in(p->ix, path, ast_lang_from_id(language_id), name, buf, cap);
	free(path);
	return rc == 1;
}

int project_importers(struct project *p, const char *uri, char ***out, size_t cap)
{
	*out = NULL;
	if (!p || !p->ix) return 0;
	char *path = workspace_uri_to_path(uri);
	if (!path) return 0;
	int n = ctx_index_importers(p->ix, path, out, cap);
	free(path);
	return n;
}

bool project_file_text(struct project *p, const char *path, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	return p && p->ix && ctx_index_text(p->ix, path, out, len) == 1;
}
