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
 */
#include "nextedit.h"

#include <errno.h>
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
	for (size_t i = 0; i < d->n_pend; i++) free(d->pend[i].text);
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

void nextedits_doc_closed(struct nextedits *n, const char *uri)
{
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
		if (p->start != start || p->end != end || p->len != tlen ||
		    memcmp(p->text, t, tlen))
			continue;
		free(p->text);
		memmove(p, p + 1, (d->n_pend - i - 1) * sizeof *p);
		d->n_pend--;
		long delta = (long)tlen - (long)(end - start);
		for (size_t k = 0; k < d->n_pend; k++)
			if (d->pend[k].start >= end) {
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

void nextedits_change(struct server *s, struct docs_entry *e, size_t start, size_t end,
                      const char *text, size_t len)
{
	struct nextedits *n = s->nextedits;
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
