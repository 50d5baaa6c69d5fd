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
 * The places come from pipeline/nextedit.h; no model runs, so the request
 * is answered at once on the loop thread, its work bounded by
 * completion.deadlineMs (places not checked by then are left out) and by
 * NEXTEDIT_MAX_DOC bytes. A $/cancelRequest therefore always finds it
 * answered.
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

struct ne_doc {
	char *uri; /* owned */
	struct nextedit_track track;
	struct pending *pend; /* owned, n_pend of them, ranked */
	size_t n_pend;
	struct ne_doc *next;
};

struct nextedits {
	struct ne_doc *docs;
	struct item items[NEXTEDIT_ITEMS];
	uint64_t next_id;
	uint64_t requests, offered, shown, accepted, rejected, dropped_invalid;
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

static void ne_doc_drop(struct ne_doc *d)
{
	pending_clear(d);
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
		ne_doc_drop(d);
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
			ne_doc_drop(d);
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
	for (size_t i = 0; !rc && i < r.n; i++) {
		if (!r.edits[i].text) continue; /* a place a model would have to write */
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
	json_t *edits = json_array();
	struct docs_entry *e = docs_find(s->docs, uri);
	json_t *version = json_object_get(td, "version");
	struct ne_doc *d = e ? doc_find(n, uri, false) : NULL;
	/* a request about another version of the text than ours: nothing */
	bool stale = e && json_is_integer(version) && json_integer_value(version) != e->version;
	bool on = e && config_get(s->config, e->language_id)->enabled;
	if (d && !stale && on && doc_length(e->doc) <= NEXTEDIT_MAX_DOC) {
		if (!d->n_pend && pending_fill(s, e, d))
			log_warn(s->log, "next edits for %s: out of memory", uri);
		for (size_t i = 0; i < d->n_pend; i++) {
			json_t *j = edit_json(s, e, &d->pend[i]);
			if (j) json_array_append_new(edits, j);
		}
	}
	/* nothing of its own: what a rename elsewhere left for this file (the
	 * user went there to apply it; clients show their document's edits) */
	for (struct ne_doc *o = n->docs; e && !stale && on && !json_array_size(edits) && o;
	     o = o->next)
		for (size_t i = 0; o != d && i < o->n_pend; i++)
			if (o->pend[i].uri && !strcmp(o->pend[i].uri, uri)) {
				json_t *j = edit_json(s, e, &o->pend[i]);
				if (j) json_array_append_new(edits, j);
			}
	latency_note(n, (double)(nextedit_now_ns() - t0) / 1e6);
	server_reply(s, id, json_pack("{s:o}", "edits", edits));
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
