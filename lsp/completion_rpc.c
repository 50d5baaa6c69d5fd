/*
 * completion_rpc.c - textDocument/completion and textDocument/inlineCompletion:
 * the debounce, the cancel-superseded-request rule, $/cancelRequest, and
 * turning the pipeline's candidates into LSP items; plus infill/stats.
 *
 * One pending request per (document, kind): a newer completion request for
 * the same document answers the older one of the same kind at once with an
 * empty result (not -32800: the client did not cancel it, and an empty
 * answer is what every client handles), and cancels its pipeline job. The
 * two kinds do not supersede each other, because editors send both for the
 * same keystroke (a menu and ghost text).
 *
 * Each request waits completion.debounceMs (per language) before its job
 * starts, so a burst of keystrokes becomes one job; an explicitly invoked
 * inline request starts at once. The text is snapshotted when the request
 * arrives, because its position refers to that version.
 *
 * A result for a document that was edited (or closed) while the job ran is
 * answered empty: its ranges are in text the editor no longer shows, and
 * the client asks again after the edit anyway.
 */
#include "feedback.h"
#include "pace.h"
#include "server_priv.h"
#include "stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LATENCY_SAMPLES 1024

struct pending {
	struct completions *c;
	json_t *id; /* owned reference */
	enum completion_kind kind;
	char *uri;
	uint64_t generation; /* of the document when the request arrived */
	size_t cursor;       /* in the document */
	size_t text_offset;  /* where the request's snapshot starts in the document */
	struct doc_pos position;
	struct completion_request *req; /* until submitted */
	struct pipeline_job *job;       /* while the pipeline has it */
	uv_timer_t timer;               /* the debounce */
	uint64_t arrival_ns;
	struct pending *prev, *next;
};

/* Documents whose last inline answer is remembered for infill/suggestionGrew. */
#define SHOWN_MAX 8

struct shown {
	char *uri; /* owned; NULL: a free entry */
	int64_t version;
	uint64_t generation; /* of the document when answered */
	struct doc_pos position;
};

struct completions {
	struct server *s;
	struct pending *list;
	size_t closing; /* timers being closed */
	bool shutting;
	void (*close_done)(void *ud);
	void *close_ud;
	uint64_t seq;
	/* counters for infill/stats */
	uint64_t requests, cancelled;
	uint64_t never_started;             /* cancelled or superseded during their debounce */
	uint64_t pace_deadlines;            /* requests whose deadline the typing pace set */
	struct pace pace;                   /* of requests as they arrive */
	double latency_ms[LATENCY_SAMPLES]; /* ring of the latest answers */
	size_t latency_count, latency_next;
	/* the latest inline answers with items, one per document (newest
	 * first): where infill/suggestionGrew points when their live
	 * candidate grows */
	struct shown shown[SHOWN_MAX];
	uint64_t grew_notices;
};

struct completions *completions_new(struct server *s)
{
	struct completions *c = calloc(1, sizeof *c);
	if (c) c->s = s;
	return c;
}

/* ---- pending requests ------------------------------------------------- */

static void maybe_closed(struct completions *c)
{
	if (c->shutting && !c->list && !c->closing && c->close_done) {
		void (*done)(void *) = c->close_done;
		c->close_done = NULL;
		done(c->close_ud);
	}
}

static void pending_closed(uv_handle_t *h)
{
	struct pending *p = h->data;
	struct completions *c = p->c;
	free(p);
	c->closing--;
	maybe_closed(c);
}

/* Unlinks p, cancels what it started and frees it (after its timer closes).
 * It must have been answered already, or be dropped on purpose. */
static void pending_retire(struct pending *p)
{
	struct completions *c = p->c;
	if (p->prev)
		p->prev->next = p->next;
	else
		c->list = p->next;
	if (p->next) p->next->prev = p->prev;
	if (p->job) pipeline_cancel(c->s->pipeline, p->job);
	completion_request_free(p->req);
	json_decref(p->id);
	free(p->uri);
	c->closing++;
	uv_close((uv_handle_t *)&p->timer, pending_closed);
}

static json_t *empty_result(enum completion_kind kind)
{
	if (kind == COMPLETION_KIND_INLINE) return json_pack("{s:[]}", "items");
	return json_pack("{s:b, s:[]}", "isIncomplete", 1, "items");
}

/* A request dropped before it was answered: counted as cancelled, and as
 * never started when its debounce had not run out (no job yet). */
static void count_dropped(struct pending *p)
{
	p->c->cancelled++;
	if (p->req) p->c->never_started++;
}

static void answer_empty(struct pending *p)
{
	server_reply(p->c->s, p->id, empty_result(p->kind));
}

/* res: the answer's candidates (borrowed), NULL when no job ran. */
static void record_latency(struct completions *c, uint64_t arrival_ns,
                           const struct completion_result *res)
{
	double ms = (double)(uv_hrtime() - arrival_ns) / 1e6;
	metrics_record(c->s->metrics, res, ms);
	c->latency_ms[c->latency_next] = ms;
	c->latency_next = (c->latency_next + 1) % LATENCY_SAMPLES;
	if (c->latency_count < LATENCY_SAMPLES) c->latency_count++;
}

/* ---- candidates to LSP items ------------------------------------------- */

static json_t *range_json(struct doc_pos a, struct doc_pos b)
{
	return json_pack("{s:{s:i, s:i}, s:{s:i, s:i}}", "start", "line", (json_int_t)a.line,
	                 "character", (json_int_t)a.character, "end", "line", (json_int_t)b.line,
	                 "character", (json_int_t)b.character);
}

/* The label of a menu item: the candidate's first non-blank line, cut to a
 * readable width at a UTF-8 character boundary. */
static json_t *label_json(const char *text, size_t len)
{
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	size_t j = i;
	while (j < len && text[j] != '\n' && text[j] != '\r' && j - i < 80) j++;
	while (j > i && j < len && ((unsigned char)text[j] & 0xC0) == 0x80)
		j--; /* do not split a character */
	json_t *label = json_stringn(text + i, j - i);
	return label ? label : json_string("(completion)");
}

/*
 * The text a completion job gets: the whole document, or for one larger
 * than COMPLETION_WINDOW_BYTES a window of that size around the cursor
 * (a 50 MB one-line document once cost 28 s and 4.3 GB per completion,
 * all of it parsing, slicing and scanning text the prompt never holds). The
 * context budgets are tokens, a few KiB of text, so a window of 256 KiB loses
 * only far-away context (a one-line document of 1 MiB cost 3 s of CPU even
 * after the fixes in ast and rerank; 256 KiB about 1 s). Three quarters of it go before the cursor (the
 * prefix matters most); its start moves in steps of WINDOW_STEP (so typing
 * does not shift it every key, which keeps the fast path and prefix cache
 * useful) and is moved to the next line start when one is near, and to a
 * UTF-8 character boundary. Returns the copy (malloc'd, NUL-terminated) or
 * NULL; *offset and *len say where it is.
 */
#define WINDOW_STEP ((size_t)64 << 10)

static char *snapshot_window(const struct doc *d, size_t cursor, size_t *offset, size_t *len)
{
	size_t full = doc_length(d), w0 = 0, w1 = full;
	if (full > COMPLETION_WINDOW_BYTES) {
		size_t before = COMPLETION_WINDOW_BYTES / 4 * 3;
		w0 = cursor > before ? (cursor - before) / WINDOW_STEP * WINDOW_STEP : 0;
		w1 = w0 + COMPLETION_WINDOW_BYTES;
		if (w1 >= full) { /* near the end: a whole window that ends there */
			w0 = (full - COMPLETION_WINDOW_BYTES) / WINDOW_STEP * WINDOW_STEP;
			w1 = full;
		}
		size_t line = doc_line_at(d, w0);
		if (w0 > 0 && doc_line_start(d, line) < w0 && line + 1 < doc_line_count(d)) {
			size_t next = doc_line_start(d, line + 1);
			if (next - w0 <= WINDOW_STEP && next <= cursor) w0 = next;
		}
		size_t last = doc_line_start(d, doc_line_at(d, w1));
		if (w1 < full && last > cursor && w1 - last <= WINDOW_STEP) w1 = last;
	}
	char *t = malloc(w1 - w0 + 1);
	if (!t) return NULL;
	doc_read(d, w0, w1, t);
	/* not inside a character at either end */
	size_t head = 0, tail = w1 - w0;
	while (w0 + head < cursor && head < 3 && ((unsigned char)t[head] & 0xC0) == 0x80) head++;
	if (w1 < full && tail > 0) {
		/* the last character's lead byte, and whether all of it is in */
		size_t i = tail - 1;
		while (i > 0 && tail - i < 4 && ((unsigned char)t[i] & 0xC0) == 0x80) i--;
		unsigned char c = (unsigned char)t[i];
		size_t need = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		if (i + need > tail) tail = i; /* the cursor is at a boundary: i >= it */
	}
	if (head) memmove(t, t + head, tail - head);
	t[tail - head] = 0;
	*offset = w0 + head;
	*len = tail - head;
	return t;
}

/*
 * Where the word that ends at offset start begins (identifier bytes: ASCII
 * letters, digits, '_', '$' and any byte of a multi-byte character), on the
 * same line, looking back at most WORD_BACK bytes. A menu item replaces from
 * there (menu items were filtered away): editors filter items by the word typed before the cursor
 * (Neovim's omnifunc, eglot's completion-at-point, VS Code's suggest
 * widget), and an item whose edit starts at the cursor leaves that word
 * out, so every item is filtered away.
 */
#define WORD_BACK 256

static bool word_byte(unsigned char c)
{
	return c >= 0x80 || c == '_' || c == '$' || (c >= '0' && c <= '9') ||
	       ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static size_t word_start(const struct doc *d, size_t start)
{
	size_t from = start > WORD_BACK ? start - WORD_BACK : 0;
	char buf[WORD_BACK];
	size_t n = doc_read(d, from, start, buf);
	size_t i = n;
	while (i > 0 && word_byte((unsigned char)buf[i - 1])) i--;
	/* not in the middle of a character (the look-back may cut one) */
	while (i < n && ((unsigned char)buf[i] & 0xC0) == 0x80) i++;
	return from + i;
}

/* A menu item for the candidate text (borrowed) replacing [start, end) of
 * the document: its edit starts at the start of the word typed before
 * start, and its newText, filterText and label begin with that word. New
 * reference, or NULL. */
static json_t *menu_item_json(struct pending *p, struct docs_entry *e, size_t i, size_t start,
                              size_t end, const char *text, size_t text_len)
{
	struct server *s = p->c->s;
	size_t w = word_start(e->doc, start);
	size_t typed = start - w;
	char *full = malloc(typed + text_len + 1);
	if (!full) return NULL;
	doc_read(e->doc, w, start, full);
	memcpy(full + typed, text, text_len);
	full[typed + text_len] = 0;
	json_t *item = NULL;
	json_t *newtext = json_stringn(full, typed + text_len);
	if (newtext) {
		char sort[24];
		snprintf(sort, sizeof sort, "%04zu", i);
		struct doc_pos a = doc_pos_at(e->doc, w, s->encoding);
		struct doc_pos b = doc_pos_at(e->doc, end, s->encoding);
		item = json_pack("{s:o, s:i, s:s, s:s, s:O, s:i, s:{s:o, s:O}}", "label",
		                 label_json(full, typed + text_len), "kind", 1, "detail", "infill",
		                 "sortText", sort, "filterText", newtext, "insertTextFormat", 1,
		                 "textEdit", "range", range_json(a, b), "newText", newtext);
		json_decref(newtext);
	}
	free(full);
	return item;
}

/* An inline item for the candidate: its command is run by the client when
 * the item is accepted, and names it (feedback.h) for that and for the
 * didShow / didPartiallyAccept reports. New reference, or NULL. */
static json_t *inline_item_json(struct pending *p, struct docs_entry *e, size_t start,
                                const struct completion_candidate *cand, json_t *text,
                                struct doc_pos a, struct doc_pos b)
{
	struct server *s = p->c->s;
	uint64_t id = feedback_offer(s->feedback, p->uri, e->language_id, start, p->cursor,
	                             cand->text, cand->text_len, cand->confidence);
	if (!id) /* out of memory: the item still works, unreported */
		return json_pack("{s:o, s:o}", "insertText", text, "range", range_json(a, b));
	return json_pack("{s:o, s:o, s:{s:s, s:s, s:[I]}}", "insertText", text, "range",
	                 range_json(a, b), "command", "title", "infill: accepted", "command",
	                 FEEDBACK_ACCEPT_COMMAND, "arguments", (json_int_t)id);
}

static json_t *items_json(struct pending *p, struct docs_entry *e,
                          const struct completion_result *res)
{
	struct server *s = p->c->s;
	/* completion.minConfidence "auto" (negative): the floor learned from
	 * what was accepted (feedback.h), for ghost text only: the menu's
	 * items get no reports */
	bool gate = p->kind == COMPLETION_KIND_INLINE &&
	            config_get(s->config, e->language_id)->completion_min_confidence < 0;
	json_t *items = json_array();
	size_t len = doc_length(e->doc);
	for (size_t i = 0; items && i < res->count; i++) {
		/* only its well-formed UTF-8 (a JSON string's): a text cut at
		 * the deadline or a growth may end inside a character (a byte
		 * token), and random weights write stray bytes; the rest comes
		 * with the next growth, or never */
		struct completion_candidate whole = res->items[i];
		whole.text_len = pos_utf8_valid_prefix(whole.text, whole.text_len);
		const struct completion_candidate *cand = &whole;
		if (!cand->text_len && res->items[i].text_len) {
			log_debug(s->log, "candidate %zu: not valid UTF-8", i);
			continue;
		}
		/* the candidate's offsets are in the snapshot, a window of the
		 * document when it is huge (snapshot_window) */
		size_t start = cand->start + p->text_offset, end = cand->end + p->text_offset;
		if (start > len) start = len;
		if (end > len) end = len;
		if (start > p->cursor || end < p->cursor) {
			log_debug(s->log, "candidate %zu: range [%zu,%zu) misses the cursor %zu", i,
			          start, end, p->cursor);
			continue;
		}
		struct doc_pos a = doc_pos_at(e->doc, start, s->encoding);
		struct doc_pos b = doc_pos_at(e->doc, end, s->encoding);
		if (a.line != b.line) { /* LSP: both item kinds replace within one line */
			log_debug(s->log, "candidate %zu: range spans lines", i);
			continue;
		}
		if (gate && feedback_gate(s->feedback, e->language_id, cand->text, cand->text_len,
		                          cand->confidence)) {
			log_debug(s->log, "candidate %zu: confidence %.3f under the learned floor",
			          i, cand->confidence);
			continue;
		}
		json_t *text = json_stringn(cand->text, cand->text_len);
		if (!text) continue; /* out of memory */
		json_t *item;
		if (p->kind == COMPLETION_KIND_INLINE) {
			item = inline_item_json(p, e, start, cand, text, a, b);
		} else {
			json_decref(text);
			item = menu_item_json(p, e, i, start, end, cand->text, cand->text_len);
		}
		if (item) json_array_append_new(items, item);
	}
	if (!items) return NULL;
	if (p->kind == COMPLETION_KIND_INLINE) return json_pack("{s:o}", "items", items);
	/* isIncomplete: ask again as the user types; the model's answer
	 * depends on every character, not a filter over a fixed list */
	return json_pack("{s:b, s:o}", "isIncomplete", 1, "items", items);
}

/* Remembers p's answer as its document's latest inline one. */
static void shown_note(struct completions *c, const struct pending *p, int64_t version)
{
	size_t i = 0;
	while (i < SHOWN_MAX - 1 && c->shown[i].uri && strcmp(c->shown[i].uri, p->uri)) i++;
	char *uri = c->shown[i].uri && !strcmp(c->shown[i].uri, p->uri) ? c->shown[i].uri
	                                                                : strdup(p->uri);
	if (!uri) return;
	if (uri != c->shown[i].uri) free(c->shown[i].uri);
	memmove(&c->shown[1], &c->shown[0], i * sizeof c->shown[0]);
	c->shown[0] = (struct shown){ uri, version, p->generation, p->position };
}

static void job_done(void *ud, int status, const struct completion_result *res)
{
	struct pending *p = ud;
	struct completions *c = p->c;
	struct server *s = c->s;
	p->job = NULL;
	struct docs_entry *e = docs_find(s->docs, p->uri);
	if (status) {
		log_warn(s->log, "completion for %s failed: %s", p->uri, strerror(-status));
		answer_empty(p);
	} else if (!e || e->generation != p->generation) {
		log_debug(s->log, "completion for %s: the document changed meanwhile", p->uri);
		answer_empty(p);
	} else {
		json_t *result = items_json(p, e, res);
		/* (an empty answer too: a live candidate cut that early may
		 * bring the first text) */
		if (result && p->kind == COMPLETION_KIND_INLINE) shown_note(c, p, e->version);
		if (result)
			server_reply(s, p->id, result);
		else
			server_reply_error(s, p->id, RPC_ERROR_INTERNAL_ERROR, "out of memory");
	}
	record_latency(c, p->arrival_ns, status ? NULL : res);
	pending_retire(p);
}

static void debounce_fired(uv_timer_t *timer)
{
	struct pending *p = timer->data;
	struct server *s = p->c->s;
	struct completion_request *req = p->req;
	p->req = NULL;
	int rc = pipeline_submit(s->pipeline, req, job_done, p, &p->job);
	if (rc) {
		p->job = NULL;
		log_warn(s->log, "completion for %s not started: %s", p->uri, strerror(-rc));
		answer_empty(p);
		record_latency(p->c, p->arrival_ns, NULL);
		pending_retire(p);
	}
}

/* ---- the requests ----------------------------------------------------- */

static void supersede(struct completions *c, const char *uri, enum completion_kind kind)
{
	for (struct pending *p = c->list, *next; p; p = next) {
		next = p->next;
		if (p->kind == kind && !strcmp(p->uri, uri)) {
			answer_empty(p);
			count_dropped(p);
			pending_retire(p);
		}
	}
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void on_request(struct server *s, json_t *id, json_t *params, enum completion_kind kind)
{
	struct completions *c = s->completions;
	uint64_t arrival = uv_hrtime();
	const char *uri = json_get_string(json_object_get(params, "textDocument"), "uri");
	struct doc_pos pos;
	if (!uri || !json_get_position(json_object_get(params, "position"), &pos)) {
		server_reply_error(s, id, RPC_ERROR_INVALID_PARAMS,
		                   "expected {textDocument: {uri}, position: {line, character}}");
		return;
	}
	c->requests++;
	supersede(c, uri, kind);
	struct docs_entry *e = docs_find(s->docs, uri);
	if (!e) {
		log_warn(s->log, "completion for %s, which is not open: empty result", uri);
		server_reply(s, id, empty_result(kind));
		return;
	}
	const struct settings *st = config_get(s->config, e->language_id);
	if (!st->enabled) {
		server_reply(s, id, empty_result(kind));
		return;
	}
	json_t *context = json_object_get(params, "context");
	json_int_t trigger = json_integer_value(json_object_get(context, "triggerKind"));

	struct pending *p = calloc(1, sizeof *p);
	struct completion_request *req = calloc(1, sizeof *req);
	if (!p || !req) goto oom;
	req->seq = ++c->seq;
	req->uri = strdup(uri);
	req->language_id = strdup(e->language_id);
	req->version = e->version;
	size_t cursor = doc_offset_at(e->doc, pos, s->encoding);
	req->position = pos;
	req->text = snapshot_window(e->doc, cursor, &req->text_offset, &req->text_len);
	req->cursor = cursor - req->text_offset;
	req->encoding = s->encoding;
	req->kind = kind;
	req->trigger = trigger >= 1 && trigger <= 3 ? (enum completion_trigger)trigger
	                                            : COMPLETION_TRIGGER_AUTOMATIC;
	if (kind == COMPLETION_KIND_LIST)
		req->trigger_character = dup_or_null(json_get_string(context, "triggerCharacter"));
	else
		req->selected_text = dup_or_null(json_get_string(
		        json_object_get(context, "selectedCompletionInfo"), "text"));
	p->uri = strdup(uri);
	if (!req->uri || !req->language_id || !req->text || !p->uri ||
	    completion_settings_copy(&req->settings, st))
		goto oom;
	if (project_fill(s->project, e, cursor, req))
		log_warn(s->log, "project context for %s: out of memory; left out", uri);

	/* every request is noted, so that a jump or an explicit ask ends a
	 * burst even in a language where completions are off */
	double due = pace_note(&c->pace, arrival, req->trigger == COMPLETION_TRIGGER_AUTOMATIC);
	if (st->completion_deadline_follows_typing && due > 0 && st->completion_deadline_ms > 0 &&
	    due < st->completion_deadline_ms) {
		req->pace_deadline_ms = due;
		c->pace_deadlines++;
	}

	p->c = c;
	p->id = json_incref(id);
	p->kind = kind;
	p->generation = e->generation;
	p->cursor = cursor;
	p->text_offset = req->text_offset;
	p->position = pos;
	p->req = req;
	p->arrival_ns = arrival;
	req->arrival_ns = arrival;
	uv_timer_init(s->loop, &p->timer);
	p->timer.data = p;
	p->next = c->list;
	if (c->list) c->list->prev = p;
	c->list = p;
	uint64_t delay =
	        (uint64_t)(st->completion_debounce_ms > 0 ? st->completion_debounce_ms : 0);
	if (kind == COMPLETION_KIND_INLINE && req->trigger == COMPLETION_TRIGGER_INVOKED)
		delay = 0; /* asked for explicitly: no burst to wait out */
	if (pipeline_answers_at_once(s->pipeline, req))
		delay = 0; /* typed along the suggestion shown: no model run to spare */
	uv_timer_start(&p->timer, debounce_fired, delay, 0);
	return;
oom:
	if (p) free(p->uri);
	free(p);
	if (req) {
		memset(&req->settings, 0, sizeof req->settings);
		completion_request_free(req);
	}
	server_reply_error(s, id, RPC_ERROR_INTERNAL_ERROR, "out of memory");
}

void completion_on_completion(struct server *s, json_t *id, json_t *params)
{
	on_request(s, id, params, COMPLETION_KIND_LIST);
}

void completion_on_inline(struct server *s, json_t *id, json_t *params)
{
	on_request(s, id, params, COMPLETION_KIND_INLINE);
}

bool completions_cancel(struct completions *c, json_t *id)
{
	for (struct pending *p = c->list; p; p = p->next) {
		if (rpc_id_equal(p->id, id)) {
			server_reply_error(c->s, p->id, RPC_ERROR_REQUEST_CANCELLED,
			                   "cancelled by the client");
			count_dropped(p);
			pending_retire(p);
			return true;
		}
	}
	return false;
}

void completions_doc_closed(struct completions *c, const char *uri)
{
	for (struct pending *p = c->list, *next; p; p = next) {
		next = p->next;
		if (!strcmp(p->uri, uri)) {
			answer_empty(p);
			count_dropped(p);
			pending_retire(p);
		}
	}
}

void completions_close(struct completions *c, void (*done)(void *ud), void *ud)
{
	c->shutting = true;
	c->close_done = done;
	c->close_ud = ud;
	while (c->list) pending_retire(c->list);
	maybe_closed(c);
}

void completions_free(struct completions *c)
{
	if (!c) return;
	for (size_t i = 0; i < SHOWN_MAX; i++) free(c->shown[i].uri);
	free(c);
}

/* ---- infill/suggestionGrew ---------------------------------------------- */

/*
 * The pipeline's host.grew: the suggestion last answered for uri grew. When
 * the document is still as it was answered (the user has not typed on or
 * edited since: then the client asks again anyway), the client is told
 * where, and a request there is answered at once with the longer text.
 * Clients that do not know the notification ignore it (LSP: a notification
 * a client does not know is dropped).
 */
void completions_grew(struct server *s, const char *uri, bool line_end, bool done)
{
	struct completions *c = s->completions;
	if (!c || c->shutting) return;
	for (size_t i = 0; i < SHOWN_MAX && c->shown[i].uri; i++) {
		struct shown *sh = &c->shown[i];
		if (strcmp(sh->uri, uri)) continue;
		struct docs_entry *e = docs_find(s->docs, uri);
		if (!e || e->generation != sh->generation) return;
		json_t *params = json_pack("{s:s, s:I, s:{s:i, s:i}, s:b, s:b}", "uri", uri,
		                           "version", (json_int_t)sh->version, "position", "line",
		                           (json_int_t)sh->position.line, "character",
		                           (json_int_t)sh->position.character, "lineEnd", line_end,
		                           "done", done);
		if (!params) return;
		server_notify(s, "infill/suggestionGrew", params);
		c->grew_notices++;
		return;
	}
}

/* ---- infill/stats ----------------------------------------------------- */

void completions_warm(struct server *s, struct docs_entry *e, size_t cursor)
{
	const struct settings *st = config_get(s->config, e->language_id);
	if (!st->enabled || !st->cache_enabled) return;
	struct completion_request *req = calloc(1, sizeof *req);
	if (!req) return; /* a hint: nothing lost without it */
	req->uri = strdup(e->uri);
	req->language_id = strdup(e->language_id);
	req->version = e->version;
	if (cursor > doc_length(e->doc)) cursor = doc_length(e->doc);
	req->text = snapshot_window(e->doc, cursor, &req->text_offset, &req->text_len);
	req->cursor = cursor - req->text_offset;
	req->encoding = s->encoding;
	req->kind = COMPLETION_KIND_INLINE;
	req->arrival_ns = uv_hrtime(); /* the engine thread waits a little after it */
	if (!req->uri || !req->language_id || !req->text ||
	    completion_settings_copy(&req->settings, st)) {
		completion_request_free(req);
		return;
	}
	project_fill(s->project, e, cursor, req); /* a hint: what fits is enough */
	pipeline_warm(s->pipeline, req);
}

void completion_on_stats(struct server *s, json_t *id, json_t *params)
{
	(void)params;
	struct stats st;
	completions_stats(s, &st);
	server_reply(s, id, stats_to_json(&st));
	json_decref(st.feedback);
}

void completions_stats(struct server *s, struct stats *out)
{
	struct completions *c = s->completions;
	struct stats st;
	pipeline_get_stats(s->pipeline, &st);
	double sorted[LATENCY_SAMPLES];
	size_t n = c->latency_count;
	memcpy(sorted, c->latency_ms, n * sizeof *sorted);
	stats_sort(sorted, n);
	/* the fields the server keeps; the pipeline filled the rest */
	st.requests = c->requests;
	st.cancelled = c->cancelled;
	st.latency_ms = (struct stats_latency){ .p50 = stats_percentile(sorted, n, 0.50),
		                                .p90 = stats_percentile(sorted, n, 0.90),
		                                .p99 = stats_percentile(sorted, n, 0.99),
		                                .samples = n };
	st.open_documents = docs_count(s->docs);
	st.never_started += c->never_started;
	st.pace_deadlines = c->pace_deadlines;
	st.index_files = project_index_files(s->project);
	st.feedback = feedback_to_json(s->feedback); /* owned here until sent */
	st.live_share = c->requests ? (double)st.live_answers / (double)c->requests : 0;
	st.thrown_share = st.generated_tokens
	                          ? (double)(st.live_thrown_tokens + st.ahead_thrown_tokens) /
	                                    (double)st.generated_tokens
	                          : 0;
	st.grew_notices = c->grew_notices;
	nextedits_stats(s->nextedits, &st);
	*out = st;
}
