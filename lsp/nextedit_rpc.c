/*
 * nextedit_rpc.c - next edits over LSP: each document's settled edit (fed
 * by textsync.c before every change is applied), the request
 *   infill/nextEdit, textDocument/copilotInlineEdit
 *     {textDocument: {uri, version?}, position}
 *     -> {edits: [{textDocument: {uri, version}, range, text,
 *                  command: {title, command: "infill.didAcceptNextEdit",
 *                            arguments: ["<id>"]}}]}
 * (copilot-language-server's shape, so its next-edit clients can point
 * here), and the reports on what was offered: textDocument/didShowInlineEdit
 * {item: {command}} (Copilot's), the accept command through
 * workspace/executeCommand, and infill/didRejectNextEdit {item: {command}}.
 *
 * The places come from pipeline/nextedit.h, found and checked on the loop
 * thread, bounded by completion.deadlineMs (places not checked by then are
 * left out) and by NEXTEDIT_MAX_DOC bytes. A place whose text is not
 * mechanical (an added parameter's argument, an arm whose neighbours
 * differ) is written by the model: up to NEXTEDIT_MODEL_MAX of them go to
 * the pipeline as rewrite requests (pipeline/nextedit_model.h, the
 * nextEdit.format prompt, the recent edits of the document as before/after
 * pairs), and the reply waits for them: the deadline is the completions'
 * (completion.deadlineMs from the request's arrival), a $/cancelRequest
 * answers at once with the mechanical edits and cancels the model's work.
 * A model-written edit is offered only when it adds no syntax error.
 *
 * While edits offered for a document are outstanding, a change that is
 * exactly one of them (the client applied it) removes it from the list and
 * keeps the settled edit, so the next request offers the rest: applying a
 * rename's second place is not a new rename from scratch, and removing an
 * argument at one call site is not a "repeated change" to find elsewhere.
 * Any other change drops the list.
 *
 * A rename of a name the document defines at its top level reaches the
 * files that import it (nextedit_find_importer): the open documents of its
 * language family, and the files on disk the project index says import it
 * (their text as the index kept it). Their edits come after the
 * document's own, each with its file's URI (and version when open); the
 * same deadline bounds them, and at most NEXTEDIT_FILES files are read. A
 * change of such a file that is one of them takes it off the list; any
 * other change of it drops that file's edits. A request for such a file
 * that has no edits of its own is answered with them (the user went there
 * to apply them; the editors' clients show the current document's).
 */
#include "nextedit.h"
#include "nextedit_model.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feedback.h"
#include "server_priv.h"

#define NEXTEDIT_MAX_DOC \
	(256u << 10)             /* bytes: larger documents get no next edits (the
                                          * two parses of one stay near 100 ms) */
#define NEXTEDIT_ITEMS       128 /* offered edits remembered for their reports */
#define NEXTEDIT_LAT_SAMPLES 256
#define NEXTEDIT_MODEL_MAX   2  /* places per request the model writes (each a model run) */
#define NEXTEDIT_HISTORY     3  /* recent edits of a document shown to the model */
#define NEXTEDIT_FILES       16 /* other files a rename looks into */
#define NEXTEDIT_FILE_EDITS  64 /* edits in other files kept per request */

/* What an offered edit became; each counts once. */
enum item_state { ITEM_FREE, ITEM_OFFERED, ITEM_SHOWN, ITEM_DONE };

struct item {
	uint64_t id;
	enum item_state state;
};

/* One offered edit still outstanding in a document. */
struct pending {
	size_t start, end;
	char *text; /* owned */
	size_t len;
	/* another file's edit (owned; NULL: the document's own), and its range
	 * as LSP positions, computed when found */
	char *uri;
	struct doc_pos from, to;
};

/* A place found with no computed text: the model's to write. */
struct model_place {
	size_t at;
	enum nextedit_kind kind;
};

struct ne_wait;

struct ne_doc {
	char *uri; /* owned */
	struct nextedit_track track;
	struct pending *pend; /* owned, n_pend of them, ranked */
	size_t n_pend;
	/* the places of the last search the model has yet to write */
	struct model_place model[NEXTEDIT_MODEL_MAX];
	size_t n_model;
	/* the settled edits before the current one, oldest first (owned) */
	struct nextedit_pair hist[NEXTEDIT_HISTORY];
	size_t n_hist;
	struct ne_wait *wait; /* a request waiting for the model, or NULL */
	struct ne_doc *next;
};

/* One rewrite in flight for a waiting request. */
struct ne_job {
	struct ne_wait *w;
	struct pipeline_job *job; /* NULL once answered */
	struct nextedit_rewrite rw;
	size_t place; /* its index in the document's model places */
	bool done;
};

/* A request whose reply waits for the model's rewrites. */
struct ne_wait {
	struct server *s;
	struct ne_doc *d;
	json_t *id; /* owned reference */
	int64_t version;
	uint64_t t0;
	struct ne_job jobs[NEXTEDIT_MODEL_MAX];
	size_t n_jobs, outstanding;
};

struct nextedits {
	struct ne_doc *docs;
	struct item items[NEXTEDIT_ITEMS];
	uint64_t next_id;
	uint64_t requests, offered, shown, accepted, rejected, dropped_invalid;
	uint64_t rewrite_seq; /* the rewrite requests' seq (sampling seed) */
	double lat[NEXTEDIT_LAT_SAMPLES];
	size_t n_lat, lat_at;
};

struct nextedits *nextedits_new(void)
{
	struct nextedits *n = calloc(1, sizeof *n);
	if (n) n->next_id = 1;
	return n;
}

static void pending_clear(struct ne_doc *d)
{
	for (size_t i = 0; i < d->n_pend; i++) {
		free(d->pend[i].text);
		free(d->pend[i].uri);
	}
	free(d->pend);
	d->pend = NULL;
	d->n_pend = 0;
}

static void history_clear(struct ne_doc *d)
{
	for (size_t i = 0; i < d->n_hist; i++) nextedit_pair_finish(&d->hist[i]);
	d->n_hist = 0;
}

static void wait_abandon(struct ne_wait *w, bool reply);

static void ne_doc_drop(struct ne_doc *d, bool reply)
{
	if (d->wait) wait_abandon(d->wait, reply);
	pending_clear(d);
	history_clear(d);
	nextedit_track_finish(&d->track);
	free(d->uri);
	free(d);
}

void nextedits_free(struct nextedits *n)
{
	if (!n) return;
	while (n->docs) {
		struct ne_doc *d = n->docs;
		n->docs = d->next;
		ne_doc_drop(d, false); /* the pipeline is closed: no callbacks, no replies */
	}
	free(n);
}

static struct ne_doc *doc_find(struct nextedits *n, const char *uri, bool create)
{
	for (struct ne_doc *d = n->docs; d; d = d->next)
		if (!strcmp(d->uri, uri)) return d;
	if (!create) return NULL;
	struct ne_doc *d = calloc(1, sizeof *d);
	if (!d || !(d->uri = strdup(uri))) {
		free(d);
		return NULL;
	}
	d->next = n->docs;
	n->docs = d;
	return d;
}

static bool applied_elsewhere(struct nextedits *n, const char *uri, size_t start, size_t end,
                              const char *t, size_t tlen);

void nextedits_doc_closed(struct nextedits *n, const char *uri)
{
	/* its buffer may differ from the file on disk: the others' edits of it
	 * are stale (a change no edit matches drops them) */
	applied_elsewhere(n, uri, SIZE_MAX, SIZE_MAX, "", 0);
	for (struct ne_doc **p = &n->docs; *p; p = &(*p)->next)
		if (!strcmp((*p)->uri, uri)) {
			struct ne_doc *d = *p;
			*p = d->next;
			ne_doc_drop(d, true);
			return;
		}
}

/* ---- the settled edit ---- */

/* An outstanding edit applied as offered: taken off the list, the others
 * moved by its growth. True when the change was one. */
static bool pending_applied(struct ne_doc *d, size_t start, size_t end, const char *t, size_t tlen)
{
	for (size_t i = 0; i < d->n_pend; i++) {
		struct pending *p = &d->pend[i];
		if (p->uri || p->start != start || p->end != end || p->len != tlen ||
		    memcmp(p->text, t, tlen))
			continue;
		free(p->text);
		memmove(p, p + 1, (d->n_pend - i - 1) * sizeof *p);
		d->n_pend--;
		long delta = (long)tlen - (long)(end - start);
		for (size_t k = 0; k < d->n_pend; k++)
			if (!d->pend[k].uri && d->pend[k].start >= end) {
				d->pend[k].start = (size_t)((long)d->pend[k].start + delta);
				d->pend[k].end = (size_t)((long)d->pend[k].end + delta);
			}
		if (d->track.valid && d->track.start >= end) {
			d->track.start = (size_t)((long)d->track.start + delta);
			d->track.end = (size_t)((long)d->track.end + delta);
		}
		return true;
	}
	return false;
}

/* The settled edit as a before/after pair, from the document as it is now
 * (before the change that ends it), onto the history (the oldest goes). */
static void history_push(struct docs_entry *e, struct ne_doc *d)
{
	char *text = doc_text(e->doc);
	if (!text) return;
	struct nextedit_pair pr;
	if (!nextedit_pair_make(text, doc_length(e->doc), d->track.start, d->track.end,
	                        d->track.old ? d->track.old : "", d->track.old_len, &pr)) {
		if (d->n_hist == NEXTEDIT_HISTORY) {
			nextedit_pair_finish(&d->hist[0]);
			memmove(d->hist, d->hist + 1, (NEXTEDIT_HISTORY - 1) * sizeof d->hist[0]);
			d->n_hist--;
		}
		d->hist[d->n_hist++] = pr;
	}
	free(text);
}

/* A change of the document uri, seen from the other documents' lists: an
 * edit of theirs applied as offered leaves them (true), and the others of
 * that file move by its growth; any other change drops their edits there
 * (their offsets and positions are stale). */
static bool applied_elsewhere(struct nextedits *n, const char *uri, size_t start, size_t end,
                              const char *t, size_t tlen)
{
	bool applied = false;
	for (struct ne_doc *d = n->docs; d; d = d->next) {
		size_t hit = d->n_pend;
		for (size_t i = 0; i < d->n_pend && hit == d->n_pend; i++) {
			struct pending *p = &d->pend[i];
			if (p->uri && !strcmp(p->uri, uri) && p->start == start && p->end == end &&
			    p->len == tlen && !memcmp(p->text, t, tlen))
				hit = i;
		}
		size_t k = 0;
		long delta = (long)tlen - (long)(end - start);
		for (size_t i = 0; i < d->n_pend; i++) {
			struct pending *p = &d->pend[i];
			bool here = p->uri && !strcmp(p->uri, uri);
			if (here && (i == hit || hit == d->n_pend)) {
				free(p->text);
				free(p->uri);
				continue;
			}
			if (here && p->start >= end) { /* its positions: from the open file */
				p->start = (size_t)((long)p->start + delta);
				p->end = (size_t)((long)p->end + delta);
			}
			d->pend[k++] = *p;
		}
		applied |= hit < d->n_pend;
		d->n_pend = k;
	}
	return applied;
}

void nextedits_change(struct server *s, struct docs_entry *e, size_t start, size_t end,
                      const char *text, size_t len)
{
	struct nextedits *n = s->nextedits;
	if (applied_elsewhere(n, e->uri, start, end, text, len)) {
		/* the file's own settled edit, if any, is older than this one */
		struct ne_doc *o = doc_find(n, e->uri, false);
		if (o) {
			pending_clear(o);
			nextedit_track_finish(&o->track);
		}
		return;
	}
	struct ne_doc *d = doc_find(n, e->uri, true);
	if (!d) return;
	if (pending_applied(d, start, end, text, len)) return;
	pending_clear(d);
	d->n_model = 0;
	if (end - start > (64u << 10) || doc_length(e->doc) > NEXTEDIT_MAX_DOC) {
		nextedit_track_finish(&d->track);
		return;
	}
	char *removed = malloc(end - start + 1);
	if (!removed) {
		nextedit_track_finish(&d->track);
		return;
	}
	doc_read(e->doc, start, end, removed);
	/* a change away from the settled edit starts a new one: the old one
	 * joins the history the model is shown */
	if (d->track.valid && (end < d->track.start || start > d->track.end)) history_push(e, d);
	if (nextedit_track_change(&d->track, start, end, removed, len))
		log_warn(s->log, "next edits: out of memory tracking an edit of %s", e->uri);
	free(removed);
}

/* ---- the request ---- */

static json_t *range_json(const struct doc *d, size_t s, size_t e, enum pos_encoding enc)
{
	struct doc_pos a = doc_pos_at(d, s, enc), b = doc_pos_at(d, e, enc);
	return json_pack("{s:{s:I, s:I}, s:{s:I, s:I}}", "start", "line", (json_int_t)a.line,
	                 "character", (json_int_t)a.character, "end", "line", (json_int_t)b.line,
	                 "character", (json_int_t)b.character);
}

static uint64_t item_new(struct nextedits *n)
{
	uint64_t id = n->next_id++;
	n->items[id % NEXTEDIT_ITEMS] = (struct item){ id, ITEM_OFFERED };
	n->offered++;
	return id;
}

static json_t *edit_json(struct server *s, struct docs_entry *e, const struct pending *p)
{
	char ids[24];
	snprintf(ids, sizeof ids, "%llu", (unsigned long long)item_new(s->nextedits));
	if (p->uri) { /* another file: open, its version and its text's positions */
		struct docs_entry *o = docs_find(s->docs, p->uri);
		json_t *range = o && p->end <= doc_length(o->doc)
		                        ? range_json(o->doc, p->start, p->end, s->encoding)
		                        : json_pack("{s:{s:I, s:I}, s:{s:I, s:I}}", "start", "line",
		                                    (json_int_t)p->from.line, "character",
		                                    (json_int_t)p->from.character, "end", "line",
		                                    (json_int_t)p->to.line, "character",
		                                    (json_int_t)p->to.character);
		json_t *td = o ? json_pack("{s:s, s:I}", "uri", p->uri, "version",
		                           (json_int_t)o->version)
		               : json_pack("{s:s, s:n}", "uri", p->uri, "version");
		return json_pack("{s:o, s:o, s:s%, s:{s:s, s:s, s:[s]}}", "textDocument", td,
		                 "range", range, "text", p->text, p->len, "command", "title",
		                 "Accept next edit", "command", NEXTEDIT_ACCEPT_COMMAND,
		                 "arguments", ids);
	}
	return json_pack("{s:{s:s, s:I}, s:o, s:s%, s:{s:s, s:s, s:[s]}}", "textDocument", "uri",
	                 e->uri, "version", (json_int_t)e->version, "range",
	                 range_json(e->doc, p->start, p->end, s->encoding), "text", p->text, p->len,
	                 "command", "title", "Accept next edit", "command", NEXTEDIT_ACCEPT_COMMAND,
	                 "arguments", ids);
}

static void latency_note(struct nextedits *n, double ms)
{
	n->lat[n->lat_at] = ms;
	n->lat_at = (n->lat_at + 1) % NEXTEDIT_LAT_SAMPLES;
	if (n->n_lat < NEXTEDIT_LAT_SAMPLES) n->n_lat++;
}

struct where {
	struct server *s;
	struct docs_entry *e;
};

/* nextedit_params.defined_in over the project index. */
static bool where_defined(void *ud, const char *name, char *buf, size_t cap)
{
	struct where *w = ud;
	return project_defined_in(w->s->project, w->e->uri, w->e->language_id, name, buf, cap);
}

/* ---- a rename in the files that import the name ---- */

struct kin_docs {
	const struct docs_entry *self;
	const struct ast_lang *lang;
	struct docs_entry *v[NEXTEDIT_FILES];
	size_t n;
};

static void collect_kin(struct docs_entry *e, void *ud)
{
	struct kin_docs *k = ud;
	if (k->n < NEXTEDIT_FILES && e != k->self && doc_length(e->doc) <= NEXTEDIT_MAX_DOC &&
	    ast_lang_kin(k->lang, ast_lang_from_id(e->language_id)))
		k->v[k->n++] = e;
}

/* The edits of one other file (uri; o when open, else text from the
 * index) appended to d's list. */
static int add_file(struct server *s, struct ne_doc *d, const char *uri, struct docs_entry *o,
                    const char *text, size_t len, struct nextedit_importer *ip)
{
	ip->lang = o ? ast_lang_from_id(o->language_id) : ast_lang_from_path(uri);
	ip->path = uri;
	ip->text = text;
	ip->len = len;
	struct nextedit_result r;
	int rc = nextedit_find_importer(ip, &r);
	if (rc) return rc;
	s->nextedits->dropped_invalid += r.dropped_invalid;
	struct doc *tmp = !o && r.n ? doc_new(text, len) : NULL;
	const struct doc *dd = o ? o->doc : tmp;
	if (r.n && !dd) rc = -ENOMEM;
	struct pending *v = rc ? NULL : realloc(d->pend, (d->n_pend + r.n + 1) * sizeof *v);
	if (!v) rc = -ENOMEM;
	for (size_t i = 0; !rc && i < r.n; i++) {
		struct pending *q = &v[d->n_pend];
		q->uri = strdup(uri);
		if (!q->uri) {
			rc = -ENOMEM;
			break;
		}
		q->start = r.edits[i].start;
		q->end = r.edits[i].end;
		q->text = r.edits[i].text;
		q->len = r.edits[i].text_len;
		q->from = doc_pos_at(dd, q->start, s->encoding);
		q->to = doc_pos_at(dd, q->end, s->encoding);
		r.edits[i].text = NULL; /* moved */
		d->n_pend++;
	}
	if (v) d->pend = v;
	doc_free(tmp);
	nextedit_result_finish(&r);
	return rc;
}

/* The rename from -> to of a top-level name of e's document in the open
 * documents of its family and in the files the index says import it. */
static int add_importers(struct server *s, struct docs_entry *e, struct ne_doc *d, const char *from,
                         const char *to, uint64_t deadline)
{
	char *self = workspace_uri_to_path(e->uri);
	struct nextedit_importer ip = { .defining_path = self ? self : e->uri,
		                        .old_name = from,
		                        .new_name = to,
		                        .deadline_ns = deadline,
		                        .max_edits = NEXTEDIT_FILE_EDITS };
	struct kin_docs k = { .self = e, .lang = ast_lang_from_id(e->language_id) };
	docs_each(s->docs, collect_kin, &k);
	int rc = 0;
	size_t own = d->n_pend, files = 0;
	for (size_t i = 0; i < k.n && !rc && files < NEXTEDIT_FILES; i++, files++) {
		if (deadline && nextedit_now_ns() > deadline) break;
		char *text = doc_text(k.v[i]->doc);
		rc = text ? add_file(s, d, k.v[i]->uri, k.v[i], text, doc_length(k.v[i]->doc), &ip)
		          : -ENOMEM;
		free(text);
	}
	char **paths = NULL;
	int np = rc ? 0 : project_importers(s->project, e->uri, &paths, NEXTEDIT_FILES);
	for (int i = 0; i < np; i++) {
		char *uri = workspace_path_to_uri(paths[i]);
		bool skip = !uri || rc || files >= NEXTEDIT_FILES ||
		            d->n_pend - own >= NEXTEDIT_FILE_EDITS ||
		            (deadline && nextedit_now_ns() > deadline);
		/* an open one was read as the editor has it */
		for (size_t j = 0; j < k.n && !skip; j++) {
			char *op = workspace_uri_to_path(k.v[j]->uri);
			skip = op && !strcmp(op, paths[i]);
			free(op);
		}
		char *text = NULL;
		size_t len = 0;
		if (!skip && !docs_find(s->docs, uri) &&
		    project_file_text(s->project, paths[i], &text, &len)) {
			files++;
			rc = add_file(s, d, uri, NULL, text, len, &ip);
		}
		free(text);
		free(uri);
		free(paths[i]);
	}
	free(paths);
	free(self);
	return rc;
}

/* The pending list from a fresh search. */
static int pending_fill(struct server *s, struct docs_entry *e, struct ne_doc *d)
{
	pending_clear(d); /* the list emptied by applying its edits */
	char *text = doc_text(e->doc);
	if (!text) return -ENOMEM;
	const struct settings *st = config_get(s->config, e->language_id);
	/* completion.deadlineMs 0 is "no deadline" (settings.md), not "none
	 * checked": then every place is validated */
	uint64_t deadline = 0;
	if (st->completion_deadline_ms)
		deadline = nextedit_now_ns() + (uint64_t)st->completion_deadline_ms * 1000000u;
	struct where w = { s, e };
	struct nextedit_params p = { .lang = ast_lang_from_id(e->language_id),
		                     .text = text,
		                     .len = doc_length(e->doc),
		                     .edit = &d->track,
		                     .deadline_ns = deadline,
		                     .defined_in = where_defined,
		                     .defined_in_ud = &w };
	struct nextedit_result r;
	int rc = nextedit_find(&p, &r);
	free(text);
	if (rc) return rc;
	s->nextedits->dropped_invalid += r.dropped_invalid;
	d->pend = calloc(r.n ? r.n : 1, sizeof *d->pend);
	if (!d->pend) rc = -ENOMEM;
	d->n_model = 0;
	for (size_t i = 0; !rc && i < r.n; i++) {
		if (!r.edits[i].text) { /* a place the model writes */
			if (d->n_model < NEXTEDIT_MODEL_MAX)
				d->model[d->n_model++] =
				        (struct model_place){ r.edits[i].start, r.edits[i].kind };
			continue;
		}
		struct pending *q = &d->pend[d->n_pend++];
		q->start = r.edits[i].start;
		q->end = r.edits[i].end;
		q->text = r.edits[i].text;
		q->len = r.edits[i].text_len;
		r.edits[i].text = NULL; /* moved */
	}
	if (!rc && r.renamed_from[0])
		rc = add_importers(s, e, d, r.renamed_from, r.renamed_to, deadline);
	nextedit_result_finish(&r);
	return rc;
}

/* The reply: every outstanding edit of d in e (d NULL: none); with none, the
 * edits a rename elsewhere left for e's file; e NULL: nothing at all. */
static void reply_edits(struct server *s, json_t *id, struct docs_entry *e, struct ne_doc *d,
                        uint64_t t0)
{
	json_t *edits = json_array();
	for (size_t i = 0; e && d && i < d->n_pend; i++) {
		json_t *j = edit_json(s, e, &d->pend[i]);
		if (j) json_array_append_new(edits, j);
	}
	/* nothing of its own: what a rename elsewhere left for this file (the
	 * user went there to apply it; clients show their document's edits) */
	for (struct ne_doc *o = s->nextedits->docs; e && !json_array_size(edits) && o; o = o->next)
		for (size_t i = 0; o != d && i < o->n_pend; i++)
			if (o->pend[i].uri && !strcmp(o->pend[i].uri, e->uri)) {
				json_t *j = edit_json(s, e, &o->pend[i]);
				if (j) json_array_append_new(edits, j);
			}
	latency_note(s->nextedits, (double)(nextedit_now_ns() - t0) / 1e6);
	server_reply(s, id, json_pack("{s:o}", "edits", edits));
}

/* ---- the model's places ---- */

/* Whether [a, b) overlaps an outstanding edit of d or its settled edit. */
static bool pending_clashes(const struct ne_doc *d, size_t a, size_t b)
{
	if (d->track.valid && a < d->track.end && d->track.start < b) return true;
	for (size_t i = 0; i < d->n_pend; i++) {
		const struct pending *p = &d->pend[i];
		if ((a < p->end && p->start < b) || (a == p->start && b == p->end)) return true;
	}
	return false;
}

static void wait_free(struct ne_wait *w)
{
	if (w->d && w->d->wait == w) w->d->wait = NULL;
	json_decref(w->id);
	free(w);
}

/* Ends a wait before its rewrites are in. reply: the server runs on, so
 * the jobs are cancelled (no callbacks) and the request answered with the
 * mechanical edits (the model's places stay for the next request); else it
 * is being freed and its closed pipeline has freed the jobs already. */
static void wait_abandon(struct ne_wait *w, bool reply)
{
	for (size_t i = 0; reply && i < w->n_jobs; i++)
		if (w->jobs[i].job) pipeline_cancel(w->s->pipeline, w->jobs[i].job);
	if (reply) {
		struct docs_entry *e = docs_find(w->s->docs, w->d->uri);
		bool same = e && e->version == w->version;
		reply_edits(w->s, w->id, same ? e : NULL, same ? w->d : NULL, w->t0);
	}
	wait_free(w);
}

/* The places answered leave the document's list (written or not, the
 * model was asked once). */
static void places_done(struct ne_wait *w)
{
	struct ne_doc *d = w->d;
	size_t k = 0;
	for (size_t i = 0; i < d->n_model; i++) {
		bool answered = false;
		for (size_t j = 0; j < w->n_jobs; j++)
			answered |= w->jobs[j].done && w->jobs[j].place == i;
		if (!answered) d->model[k++] = d->model[i];
	}
	d->n_model = k;
}

/* A rewrite's answer (pipeline_done_fn): its edit joins the outstanding
 * ones when it is still about the text the request saw and adds no
 * syntax error; the last answer sends the reply. */
static void rewrite_done(void *ud, int status, const struct completion_result *res)
{
	struct ne_job *j = ud;
	struct ne_wait *w = j->w;
	struct server *s = w->s;
	struct ne_doc *d = w->d;
	j->job = NULL;
	j->done = true;
	struct docs_entry *e = docs_find(s->docs, d->uri);
	bool same = e && e->version == w->version;
	char *text = same && !status && res->count ? doc_text(e->doc) : NULL;
	if (text) {
		struct nextedit_edit ed;
		bool invalid = false;
		int rc = nextedit_rewrite_edit(&j->rw, res, ast_lang_from_id(e->language_id), text,
		                               doc_length(e->doc), &ed, &invalid);
		if (invalid) s->nextedits->dropped_invalid++;
		struct pending *v = rc == 1 && !pending_clashes(d, ed.start, ed.end)
		                            ? realloc(d->pend, (d->n_pend + 1) * sizeof *d->pend)
		                            : NULL;
		if (v) {
			d->pend = v;
			d->pend[d->n_pend++] = (struct pending){ .start = ed.start,
				                                 .end = ed.end,
				                                 .text = ed.text,
				                                 .len = ed.text_len };
		} else if (rc == 1) {
			free(ed.text);
		}
		if (rc < 0) log_warn(s->log, "next edits for %s: out of memory", d->uri);
		free(text);
	}
	if (--w->outstanding) return;
	if (same) places_done(w);
	reply_edits(s, w->id, same ? e : NULL, same ? d : NULL, w->t0);
	wait_free(w);
}

/* The document's path for the model's headers: the URI's, or the URI. */
static const char *uri_path(const char *uri)
{
	return strncmp(uri, "file://", 7) ? uri : uri + 7;
}

/* Sends the document's model places to the pipeline; true when a reply now
 * waits for them (then w owns id's reference). */
static bool rewrites_start(struct server *s, json_t *id, struct docs_entry *e, struct ne_doc *d,
                           uint64_t t0)
{
	if (!d->n_model || !s->pipeline) return false;
	const struct settings *st = config_get(s->config, e->language_id);
	enum nextedit_format fmt =
	        nextedit_format_resolve(st->next_edit_format, pipeline_model_is_zeta(s->pipeline));
	char *text = doc_text(e->doc);
	struct ne_wait *w = text ? calloc(1, sizeof *w) : NULL;
	if (!w) {
		free(text);
		return false;
	}
	*w = (struct ne_wait){
		.s = s, .d = d, .id = json_incref(id), .version = e->version, .t0 = t0
	};
	/* the recent edits, oldest first, then the settled one */
	struct nextedit_pair pairs[NEXTEDIT_HISTORY + 1];
	size_t np = 0;
	for (size_t i = 0; i < d->n_hist; i++) pairs[np++] = d->hist[i];
	struct nextedit_pair cur = { 0 };
	if (d->track.valid &&
	    !nextedit_pair_make(text, doc_length(e->doc), d->track.start, d->track.end,
	                        d->track.old ? d->track.old : "", d->track.old_len, &cur))
		pairs[np++] = cur;
	d->wait = w;
	for (size_t i = 0; i < d->n_model; i++) {
		struct ne_job *j = &w->jobs[w->n_jobs];
		struct nextedit_rewrite_params rp = {
			.format = fmt,
			.text = text,
			.len = doc_length(e->doc),
			.at = d->model[i].at,
			.kind = d->model[i].kind,
			.pairs = pairs,
			.n_pairs = np,
			.uri = e->uri,
			.language_id = e->language_id,
			.path = uri_path(e->uri),
			.version = e->version,
			.seq = ++s->nextedits->rewrite_seq,
			.arrival_ns = t0,
			.encoding = s->encoding,
			.settings = st,
		};
		struct completion_request *req = nextedit_rewrite_request(&rp, &j->rw);
		if (!req) continue;
		j->w = w;
		j->job = NULL;
		j->place = i;
		j->done = false;
		w->n_jobs++;
		w->outstanding++; /* before submit: its callback never runs inside it */
		if (pipeline_submit(s->pipeline, req, rewrite_done, j, &j->job)) {
			w->outstanding--;
			w->n_jobs--;
		}
	}
	nextedit_pair_finish(&cur);
	free(text);
	if (!w->outstanding) {
		wait_free(w);
		return false;
	}
	return true;
}

void nextedit_on_request(struct server *s, json_t *id, json_t *params)
{
	uint64_t t0 = nextedit_now_ns();
	struct nextedits *n = s->nextedits;
	json_t *td = json_object_get(params, "textDocument");
	const char *uri = json_get_string(td, "uri");
	if (!uri) {
		server_reply_error(s, id, RPC_ERROR_INVALID_PARAMS, "textDocument.uri is missing");
		return;
	}
	n->requests++;
	struct docs_entry *e = docs_find(s->docs, uri);
	json_t *version = json_object_get(td, "version");
	struct ne_doc *d = e ? doc_find(n, uri, false) : NULL;
	/* a request about another version of the text than ours: nothing */
	bool stale = e && json_is_integer(version) && json_integer_value(version) != e->version;
	bool on = e && config_get(s->config, e->language_id)->enabled;
	bool ok = d && !stale && on && doc_length(e->doc) <= NEXTEDIT_MAX_DOC;
	if (ok) {
		/* a newer request takes over the model's work from an older one,
		 * which is answered with what is ready */
		if (d->wait) wait_abandon(d->wait, true);
		if (!d->n_pend && !d->n_model && pending_fill(s, e, d))
			log_warn(s->log, "next edits for %s: out of memory", uri);
		if (rewrites_start(s, id, e, d, t0)) return;
	}
	reply_edits(s, id, e && !stale && on ? e : NULL, ok ? d : NULL, t0);
}

bool nextedits_cancel(struct server *s, json_t *id)
{
	for (struct ne_doc *d = s->nextedits->docs; d; d = d->next)
		if (d->wait && json_equal(d->wait->id, id)) {
			wait_abandon(d->wait, true);
			return true;
		}
	return false;
}

/* ---- the reports ---- */

static uint64_t id_of_item(json_t *item)
{
	json_t *a =
	        json_array_get(json_object_get(json_object_get(item, "command"), "arguments"), 0);
	if (json_is_integer(a)) return (uint64_t)json_integer_value(a);
	const char *str = json_string_value(a);
	if (!str || !*str) return 0;
	char *end;
	unsigned long long v = strtoull(str, &end, 10);
	return *end ? 0 : (uint64_t)v;
}

static struct item *item_find(struct nextedits *n, uint64_t id)
{
	struct item *it = &n->items[id % NEXTEDIT_ITEMS];
	return id && it->id == id && it->state != ITEM_FREE ? it : NULL;
}

void nextedit_did_show(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	struct item *it = item_find(s->nextedits, id_of_item(json_object_get(params, "item")));
	if (!it || it->state != ITEM_OFFERED) {
		log_debug(s->log, "didShowInlineEdit: unknown, stale or repeated item: ignored");
		return;
	}
	it->state = ITEM_SHOWN;
	s->nextedits->shown++;
}

void nextedit_did_reject(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	struct item *it = item_find(s->nextedits, id_of_item(json_object_get(params, "item")));
	if (!it || it->state == ITEM_DONE) {
		log_debug(s->log, "didRejectNextEdit: unknown, stale or closed item: ignored");
		return;
	}
	if (it->state == ITEM_OFFERED) s->nextedits->shown++; /* it was seen to be rejected */
	it->state = ITEM_DONE;
	s->nextedits->rejected++;
}

bool nextedits_accept_command(struct server *s, json_t *params)
{
	const char *command = json_get_string(params, "command");
	if (!command || strcmp(command, NEXTEDIT_ACCEPT_COMMAND)) return false;
	json_t *item = json_pack("{s:{s:O}}", "command", "arguments",
	                         json_object_get(params, "arguments"));
	struct item *it = item ? item_find(s->nextedits, id_of_item(item)) : NULL;
	json_decref(item);
	if (!it || it->state == ITEM_DONE) {
		log_debug(s->log, "next edit accepted: unknown, stale or closed item: ignored");
		return true;
	}
	if (it->state == ITEM_OFFERED) s->nextedits->shown++;
	it->state = ITEM_DONE;
	s->nextedits->accepted++;
	return true;
}

void nextedits_stats(struct nextedits *n, struct stats *st)
{
	double sorted[NEXTEDIT_LAT_SAMPLES];
	memcpy(sorted, n->lat, n->n_lat * sizeof *sorted);
	stats_sort(sorted, n->n_lat);
	st->next_edit_requests = n->requests;
	st->next_edit_offered = n->offered;
	st->next_edit_shown = n->shown;
	st->next_edit_accepted = n->accepted;
	st->next_edit_rejected = n->rejected;
	st->next_edit_invalid = n->dropped_invalid;
	st->next_edit_latency_ms = (struct stats_latency){
		.p50 = stats_percentile(sorted, n->n_lat, 0.50),
		.p90 = stats_percentile(sorted, n->n_lat, 0.90),
		.p99 = stats_percentile(sorted, n->n_lat, 0.99),
		.samples = n->n_lat,
	};
}
