/*
 * pipeline_fast.c - the fast path (pipeline_fast.h): what was last answered
 * for each document, and the answers that need no model: "the rest of the
 * suggestion on screen" when the user types its beginning, the suggestion
 * itself when asked again at the same place while a live candidate grows it,
 * either of them after edits elsewhere that leave the candidates' context
 * alone. Loop thread only.
 *
 * Matching is by context, not by whole snapshots: the memory keeps the span
 * of its snapshot that the prompt was cut from (ctx_start..ctx_end around
 * the cursor); a request matches when its text holds the part before the
 * cursor, then k typed bytes, then the part after, around its own cursor.
 * An edit outside the span leaves the model's view unchanged (the extra
 * snippets of other places aside), so the candidates stand.
 */
#include "pipeline_fast.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h" /* rerank_is_blank */

/* A candidate shown. */
struct fast_cand {
	char *text; /* owned, NUL-terminated */
	size_t len;
	size_t tail;       /* bytes after the cursor it replaced */
	double confidence; /* as answered (completion_candidate.confidence) */
};

/* Per-document fast-path state: the last answer given (loop thread). */
struct fast_doc {
	char *uri;
	char *text; /* the snapshot the answer was for (owned) */
	size_t len;
	size_t cursor;
	size_t ctx_start, ctx_end; /* the candidates' context in text */
	struct fast_cand *cands;   /* the candidates shown, best first (owned) */
	size_t n;
	struct fast_origin live; /* the live candidate behind them (live.live_id 0: none) */
	size_t now;              /* the cursor as the edits since moved it (fast_edit) */
	/* A past answer (in a document's `pasts`): text holds only its
	 * context, and it answers with nothing typed too (returning to its
	 * place is the point). live.source says which kind. */
	bool past;
	struct fast_doc *pasts; /* the document's past answers, newest first (owned) */
	struct fast_doc *next;
};

static struct fast_doc *doc_find(struct fast_doc **docs, const char *uri)
{
	for (struct fast_doc *d = *docs; d; d = d->next)
		if (!strcmp(d->uri, uri)) return d;
	return NULL;
}

static void doc_clear(struct fast_doc *d)
{
	for (size_t i = 0; i < d->n; i++) free(d->cands[i].text);
	free(d->cands);
	free(d->text);
	d->cands = NULL;
	d->text = NULL;
	d->n = d->len = d->cursor = d->ctx_start = d->ctx_end = 0;
	memset(&d->live, 0, sizeof d->live);
}

/* Frees a list of past answers. */
static void pasts_free(struct fast_doc *h)
{
	while (h) {
		struct fast_doc *next = h->next;
		doc_clear(h);
		free(h);
		h = next;
	}
}

uint64_t fast_doc_remove(struct fast_doc **docs, const char *uri)
{
	for (struct fast_doc **pp = docs; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->uri, uri)) {
			struct fast_doc *d = *pp;
			uint64_t id = d->live.live_running ? d->live.live_id : 0;
			*pp = d->next;
			doc_clear(d);
			pasts_free(d->pasts);
			free(d->uri);
			free(d);
			return id;
		}
	}
	return 0;
}

/* Whether candidate i of d begins with the k bytes typed and has more than
 * blanks after them. */
static bool continues(const struct fast_doc *d, size_t i, const char *typed, size_t k)
{
	const struct fast_cand *x = &d->cands[i];
	return x->len > k && !memcmp(x->text, typed, k) &&
	       !rerank_is_blank(x->text + k, x->len - k);
}

/* Whether candidate i of d begins with the k bytes typed, perhaps all of
 * it: a live candidate typed to the end of what it has decoded so far. */
static bool reaches(const struct fast_doc *d, size_t i, const char *typed, size_t k)
{
	const struct fast_cand *x = &d->cands[i];
	return x->len >= k && !memcmp(x->text, typed, k);
}

/* Whether t[0, len) with the cursor at c holds d's context with the k bytes
 * before c typed in it, and those begin one of d's candidates (k == 0: only
 * behind a live candidate); whole: the candidate may end there (reaches),
 * else more than blanks must follow (continues). */
static bool holds(const struct fast_doc *d, const char *t, size_t len, size_t c, size_t k,
                  bool whole)
{
	size_t before = d->cursor - d->ctx_start, after = d->ctx_end - d->cursor;
	/* The rest of the cursor's line always counts, whatever the prompt
	 * took: the candidates were closed against it (an editor's auto-closed
	 * ")" after the cursor makes the remembered "f(x))" one paren too many). */
	const char *eol = memchr(d->text + d->cursor, '\n', d->len - d->cursor);
	size_t line_rest = eol ? (size_t)(eol - (d->text + d->cursor)) + 1 : d->len - d->cursor;
	if (after < line_rest) after = line_rest;
	if (c <= len) { /* the same length of line after the cursor, at the text's end too */
		const char *teol = memchr(t + c, '\n', len - c);
		size_t t_rest = teol ? (size_t)(teol - (t + c)) + 1 : len - c;
		if (t_rest != line_rest) return false;
	}
	if (c > len || len - c < after || c < k + before) return false;
	if (k == 0 && !d->live.live_id && !d->past) return false;
	/* the bytes nearest the cursor first: a wrong k or another place most
	 * often differs there, and the spans can be tens of kilobytes */
	size_t near = before < 32 ? before : 32;
	if (memcmp(t + c - k - near, d->text + d->cursor - near, near) ||
	    memcmp(t + c, d->text + d->cursor, after) ||
	    memcmp(t + c - k - before, d->text + d->ctx_start, before))
		return false;
	for (size_t i = 0; i < d->n; i++)
		if (whole ? reaches(d, i, t + c - k, k) : continues(d, i, t + c - k, k))
			return true;
	return false;
}

/*
 * The bytes typed at d's cursor when t[0, len) with its cursor at c matches
 * d (see holds): the length difference first (nothing edited elsewhere, the
 * common case, and the one answer when the context repeats itself), then
 * each count a candidate allows. SIZE_MAX when none.
 */
static size_t typed_count(const struct fast_doc *d, const char *t, size_t len, size_t c, bool whole)
{
	if (!d->n || !d->text) return SIZE_MAX;
	if (!d->past && len >= d->len && holds(d, t, len, c, len - d->len, whole))
		return len - d->len;
	size_t most = 0;
	for (size_t i = 0; i < d->n; i++)
		if (d->cands[i].len > most) most = d->cands[i].len;
	for (size_t k = 0; k < most + whole && k <= c; k++)
		if (holds(d, t, len, c, k, whole)) return k;
	return SIZE_MAX;
}

/* Whether d's live candidate still decodes (it may grow past what was typed). */
static bool live_decoding(const struct fast_doc *d)
{
	return d->live.live_id && d->live.live_running;
}

/* The memory of req's document that answers it: the last answer, else the
 * newest past one whose context the request holds; *k the bytes typed.
 * *wait: typed to the end of what the live candidate has decoded so far:
 * nothing to show yet, and the model must not start over (it would throw
 * the candidate away): the answer is empty, the candidate goes on, and the
 * client is told when it grew. */
static struct fast_doc *memory_for(struct fast_doc **docs, const struct completion_request *req,
                                   size_t *k, bool *wait)
{
	*wait = false;
	struct fast_doc *d = doc_find(docs, req->uri);
	if (!d) return NULL;
	if ((*k = typed_count(d, req->text, req->text_len, req->cursor, false)) != SIZE_MAX)
		return d;
	for (struct fast_doc *h = d->pasts; h; h = h->next)
		if ((*k = typed_count(h, req->text, req->text_len, req->cursor, false)) != SIZE_MAX)
			return h;
	if (live_decoding(d) &&
	    (*k = typed_count(d, req->text, req->text_len, req->cursor, true)) != SIZE_MAX) {
		*wait = true;
		return d;
	}
	return NULL;
}

bool fast_applies(struct fast_doc **docs, const struct completion_request *req)
{
	size_t k;
	bool wait;
	return memory_for(docs, req, &k, &wait) != NULL;
}

bool fast_covers(struct fast_doc **docs, const struct completion_request *req)
{
	if (fast_applies(docs, req)) return true;
	const struct fast_doc *d = doc_find(docs, req->uri);
	return d && typed_count(d, req->text, req->text_len, req->cursor, true) != SIZE_MAX;
}

bool fast_answer(struct fast_doc **docs, const struct completion_request *req,
                 struct completion_result *out, struct fast_origin *from)
{
	size_t k;
	bool wait;
	struct fast_doc *d = memory_for(docs, req, &k, &wait);
	if (!d) return false;
	const char *typed = req->text + req->cursor - k;
	struct completion_candidate *items = calloc(d->n, sizeof *items);
	if (!items) return false;
	size_t n = 0;
	for (size_t i = 0; i < d->n && !wait; i++) {
		if (!continues(d, i, typed, k)) continue;
		const char *rest = d->cands[i].text + k;
		size_t rest_len = d->cands[i].len - k;
		char *t = malloc(rest_len + 1);
		if (!t) break;
		memcpy(t, rest, rest_len);
		t[rest_len] = 0;
		items[n++] = (struct completion_candidate){
			.text = t,
			.text_len = rest_len,
			.start = req->cursor,
			.end = req->cursor + d->cands[i].tail,
			.score = (double)(d->n - i),
			/* typed along, or grown: the first answer was judged; a
			 * return to a past place is judged as it was then */
			.confidence = d->past && !k ? d->cands[i].confidence : -1,
		};
	}
	if (!n) {
		free(items);
		items = NULL;
		if (!wait) return false;
	}
	out->items = items;
	out->count = n;
	*from = d->live;
	from->source = d->past ? d->live.source : FAST_SOURCE_LAST;
	from->live_typed += k;
	from->ctx_start = req->cursor - k - (d->cursor - d->ctx_start);
	from->ctx_end = req->cursor + (d->ctx_end - d->cursor);
	return true;
}

/* The span of d's snapshot a past answer keeps: its context, and the rest
 * of the cursor's line (holds compares it whatever the context). */
static void kept_span(const struct fast_doc *d, size_t *lo, size_t *hi)
{
	const char *eol = memchr(d->text + d->cursor, '\n', d->len - d->cursor);
	size_t line_end = eol ? (size_t)(eol - d->text) + 1 : d->len;
	*lo = d->ctx_start;
	*hi = d->ctx_end > line_end ? d->ctx_end : line_end;
}

/* Whether past answers a and b are for the same context around their
 * cursors (the newer then stands for both). */
static bool same_place(const struct fast_doc *a, const struct fast_doc *b)
{
	return a->cursor == b->cursor && a->len == b->len && a->ctx_end == b->ctx_end &&
	       !memcmp(a->text, b->text, a->len);
}

/* Whether t[0, len) holds past answer h's context around its cursor c. */
static bool holds_place(const struct fast_doc *h, const char *t, size_t len, size_t c)
{
	return c >= h->cursor && c <= len && len - c >= h->len - h->cursor &&
	       !memcmp(t + c - h->cursor, h->text, h->len);
}

/* Puts h (taken) first in d's past answers: an older one for the same
 * place goes, and the oldest beyond FAST_PAST_MAX. */
static void pasts_push(struct fast_doc *d, struct fast_doc *h)
{
	size_t n = 1;
	struct fast_doc **pp = &d->pasts;
	while (*pp) {
		struct fast_doc *o = *pp;
		if (same_place(o, h) || n == FAST_PAST_MAX) {
			*pp = o->next;
			o->next = NULL;
			pasts_free(o);
			continue;
		}
		n++;
		pp = &o->next;
	}
	h->next = d->pasts;
	d->pasts = h;
}

/* A past answer from d's last one: its candidates moved out of d, its
 * snapshot's kept span copied (d's text stays d's). NULL when d holds
 * nothing to keep or out of memory (d unchanged). */
static struct fast_doc *past_from(struct fast_doc *d)
{
	struct fast_doc *h = NULL;
	size_t lo, hi;
	if (d->n && d->text) {
		kept_span(d, &lo, &hi);
		h = calloc(1, sizeof *h);
	}
	char *t = h ? malloc(hi - lo + 1) : NULL;
	if (!t) {
		free(h);
		return NULL;
	}
	memcpy(t, d->text + lo, hi - lo);
	t[hi - lo] = 0;
	*h = (struct fast_doc){ .text = t,
		                .len = hi - lo,
		                .cursor = d->cursor - lo,
		                .now = d->cursor - lo,
		                .ctx_end = d->ctx_end - lo,
		                .cands = d->cands,
		                .n = d->n,
		                .past = true,
		                .live = { .source = FAST_SOURCE_PAST } };
	d->cands = NULL; /* moved */
	d->n = 0;
	return h;
}

/* The items of res at cursor (and within a text of len bytes), as
 * candidates (new, *n of them; empty texts only when keep_empty). False
 * when out of memory (*out NULL). */
static bool cands_from(const struct completion_result *res, size_t cursor, size_t len,
                       bool keep_empty, struct fast_cand **out, size_t *n)
{
	*out = calloc(res->count + 1, sizeof **out);
	*n = 0;
	if (!*out) return false;
	for (size_t i = 0; i < res->count; i++) {
		const struct completion_candidate *c = &res->items[i];
		if (c->start != cursor || c->end < cursor || c->end > len ||
		    (!c->text_len && !keep_empty))
			continue;
		char *t = malloc(c->text_len + 1);
		if (!t) break;
		memcpy(t, c->text, c->text_len);
		t[c->text_len] = 0;
		(*out)[(*n)++] =
		        (struct fast_cand){ t, c->text_len, c->end - c->start, c->confidence };
	}
	return true;
}

/* fast_record's work: res, from origin o, becomes the last answer of d (NULL:
 * a new document's memory). */
static void record(struct fast_doc **docs, struct fast_doc *d, struct completion_request *req,
                   const struct completion_result *res, const struct fast_origin *o)
{
	if (!d) {
		d = calloc(1, sizeof *d);
		if (!d || !(d->uri = strdup(req->uri))) {
			free(d);
			return;
		}
		d->next = *docs;
		*docs = d;
	}
	struct fast_doc *h = past_from(d);
	doc_clear(d);
	if (h && holds_place(h, req->text, req->text_len, req->cursor))
		pasts_free(h); /* answered anew at the same place: the new one stands */
	else if (h)
		pasts_push(d, h);
	size_t n = 0;
	for (size_t i = 0; i < res->count; i++)
		if (res->items[i].start == req->cursor && res->items[i].end >= req->cursor) n++;
	/* nothing shown: remembered only behind a live candidate, whose growth
	 * may bring the first text */
	if (!n && !(o && o->live_id)) return;
	if (!cands_from(res, req->cursor, req->text_len, true, &d->cands, &d->n)) return;
	d->text = req->text;
	d->len = req->text_len;
	d->cursor = d->now = req->cursor;
	if (o) d->live = *o;
	/* the span as the run cut it, inside the snapshot and around the
	 * cursor; none known: all of it */
	d->ctx_start = o && o->ctx_start <= d->cursor ? o->ctx_start : 0;
	d->ctx_end = o && o->ctx_end >= d->cursor && o->ctx_end <= d->len ? o->ctx_end : d->len;
	req->text = NULL; /* taken */
	req->text_len = 0;
}

/* Remembers what was answered for the fast path and the rerank's "previous
 * suggestion". Takes the request's text. */
void fast_record(struct fast_doc **docs, struct completion_request *req,
                 const struct completion_result *res, const struct fast_origin *o)
{
	struct fast_doc *d = doc_find(docs, req->uri);
	/* An answer from this live candidate's memory was computed when it was
	 * asked; the candidate may have grown, or ended, before the answer is
	 * recorded. Recorded as it was, the older text would replace the grown
	 * one and, the end already told, would never grow again (re-asked at
	 * its place, the suggestion then stayed short of its end): answered
	 * again from the memory as it stands. */
	struct completion_result now = { 0 };
	struct fast_origin now_o;
	if (d && o && o->live_id && d->live.live_id == o->live_id &&
	    fast_answer(docs, req, &now, &now_o))
		res = &now, o = &now_o;
	record(docs, d, req, res, o);
	for (size_t i = 0; i < now.count; i++) free(now.items[i].text);
	free(now.items);
}

/* The first texts of a live candidate whose answer showed nothing (at its
 * cursor, or where it was typed to the end of what it had decoded): those
 * of its items that go on past what was typed since its cursor, from there,
 * become the candidates remembered. How many. */
static size_t adopt(struct fast_doc *d, const struct completion_result *ext)
{
	size_t typed = d->live.live_typed;
	const char *t = d->text + d->cursor - typed;
	struct fast_cand *cands = calloc(ext->count + 1, sizeof *cands);
	if (!cands) return 0;
	size_t n = 0;
	for (size_t j = 0; j < ext->count; j++) {
		const struct completion_candidate *c = &ext->items[j];
		if (c->text_len <= typed || c->end < c->start || memcmp(c->text, t, typed))
			continue;
		size_t rest = c->text_len - typed;
		char *nt = malloc(rest + 1);
		if (!nt) break;
		memcpy(nt, c->text + typed, rest);
		nt[rest] = 0;
		cands[n++] = (struct fast_cand){ nt, rest, c->end - c->start, c->confidence };
	}
	if (!n) {
		free(cands);
		return 0;
	}
	free(d->cands);
	d->cands = cands, d->n = n;
	return n;
}

static size_t grow(struct fast_doc *d, const struct completion_result *ext);

size_t fast_grow(struct fast_doc **docs, const char *uri, uint64_t live_id,
                 const struct completion_result *ext, bool done, bool *first)
{
	struct fast_doc *d = doc_find(docs, uri);
	*first = false;
	if (!d || !d->text || !live_id || d->live.live_id != live_id)
		return 0; /* answered anew since */
	if (done) d->live.live_running = false;
	size_t grown = grow(d, ext);
	*first = grown && !d->live.live_grew;
	if (grown) d->live.live_grew = true;
	return grown;
}

/* fast_grow for d, the memory of that live candidate. */
static size_t grow(struct fast_doc *d, const struct completion_result *ext)
{
	size_t typed = d->live.live_typed;
	if (typed > d->cursor) return 0;
	if (!d->n) return adopt(d, ext);
	const char *t = d->text + d->cursor - typed;
	size_t grown = 0;
	for (size_t i = 0; i < d->n; i++) {
		for (size_t j = 0; j < ext->count; j++) {
			const struct completion_candidate *c = &ext->items[j];
			struct fast_cand *x = &d->cands[i];
			if (c->end - c->start != x->tail || c->text_len <= typed + x->len ||
			    memcmp(c->text, t, typed) || memcmp(c->text + typed, x->text, x->len))
				continue;
			size_t rest = c->text_len - typed;
			char *nt = malloc(rest + 1);
			if (!nt) return grown;
			memcpy(nt, c->text + typed, rest);
			nt[rest] = 0;
			free(x->text);
			x->text = nt;
			x->len = rest;
			grown++;
			break;
		}
	}
	return grown;
}

uint64_t fast_edit(struct fast_doc **docs, const char *uri, const char *text, size_t len,
                   size_t start, size_t old_end, size_t new_end)
{
	struct fast_doc *d = doc_find(docs, uri);
	if (!d || !d->text || !d->live.live_id || !d->live.live_running) return 0;
	/* where the cursor most likely is now: after the edit (typing), or
	 * where the edits before left it, moved by one before it */
	/* typing along it, to the end of what it has decoded too */
	if (typed_count(d, text, len, new_end, true) != SIZE_MAX) {
		d->now = new_end;
		return 0;
	}
	size_t c = d->now;
	if (old_end <= c)
		c = c - old_end + new_end;
	else if (start < c)
		c = SIZE_MAX; /* the edit spans the cursor */
	if (c != SIZE_MAX && typed_count(d, text, len, c, true) != SIZE_MAX) {
		d->now = c;
		return 0;
	}
	d->live.live_running = false;
	uint64_t id = d->live.live_id;
	d->live.live_id = 0; /* what it showed stays, as a plain answer */
	return id;
}

bool fast_ahead(struct fast_doc **docs, const char *uri, const char *text, size_t len,
                size_t cursor, size_t ctx_start, size_t ctx_end,
                const struct completion_result *res)
{
	if (cursor > len) return false;
	struct fast_doc *d = doc_find(docs, uri);
	if (!d) {
		d = calloc(1, sizeof *d);
		if (!d || !(d->uri = strdup(uri))) {
			free(d);
			return false;
		}
		d->next = *docs;
		*docs = d;
	}
	/* built as a last answer over the snapshot (borrowed), then cut */
	struct fast_doc tmp = { .text = (char *)text, .len = len, .cursor = cursor, .now = cursor };
	tmp.ctx_start = ctx_start <= cursor ? ctx_start : 0;
	tmp.ctx_end = ctx_end >= cursor && ctx_end <= len ? ctx_end : len;
	struct fast_doc *h = NULL;
	if (cands_from(res, cursor, len, false, &tmp.cands, &tmp.n)) h = past_from(&tmp);
	tmp.text = NULL; /* not ours */
	doc_clear(&tmp);
	if (!h) return false;
	h->live.source = FAST_SOURCE_AHEAD;
	pasts_push(d, h);
	return true;
}

bool fast_live_running(struct fast_doc **docs, const char *uri)
{
	struct fast_doc *d = doc_find(docs, uri);
	return d && d->live.live_id && d->live.live_running;
}

const char *fast_top(struct fast_doc **docs, const char *uri, size_t *len)
{
	struct fast_doc *d = doc_find(docs, uri);
	if (!d || !d->n) return NULL;
	*len = d->cands[0].len;
	return d->cands[0].text;
}

void fast_doc_free_all(struct fast_doc **docs)
{
	while (*docs) fast_doc_remove(docs, (*docs)->uri);
}
