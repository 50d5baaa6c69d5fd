/*
 * pipeline_fast.c - the typed-ahead fast path (pipeline_fast.h): what was
 * last answered for each document, and the answer "the rest of the
 * suggestion on screen" when the user types its beginning. Loop thread only.
 */
#include "pipeline_fast.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h" /* rerank_is_blank */

/* Per-document fast-path state: the last answer given (loop thread). */
struct fast_doc {
	char *uri;
	char *text; /* the snapshot the answer was for (owned) */
	size_t len;
	size_t cursor;
	char **cands; /* the candidates shown, best first (owned) */
	size_t *cand_len;
	size_t *cand_tail; /* bytes after the cursor each one replaced */
	size_t n;
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
	for (size_t i = 0; i < d->n; i++) free(d->cands[i]);
	free(d->cands);
	free(d->cand_len);
	free(d->cand_tail);
	free(d->text);
	d->cands = NULL;
	d->cand_len = d->cand_tail = NULL;
	d->text = NULL;
	d->n = d->len = d->cursor = 0;
}

void fast_doc_remove(struct fast_doc **docs, const char *uri)
{
	for (struct fast_doc **pp = docs; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->uri, uri)) {
			struct fast_doc *d = *pp;
			*pp = d->next;
			doc_clear(d);
			free(d->uri);
			free(d);
			return;
		}
	}
}

/*
 * The typed-ahead fast path. The last answer for this document was given
 * at cursor c of text T. If the new text is T with k > 0 bytes inserted at
 * c, the cursor sits after them, and those bytes begin a candidate that was
 * shown, the rest of that candidate is the answer: the model would only be
 * asked to continue text it has already written. Fills out (texts new) and
 * returns true; false when it does not apply (then out is untouched).
 */
/* The document's memory when req is its last answer's snapshot with bytes
 * typed at the cursor (their count in *k); NULL otherwise. */
static struct fast_doc *typed_at_cursor(struct fast_doc **docs,
                                        const struct completion_request *req, size_t *k)
{
	struct fast_doc *d = doc_find(docs, req->uri);
	if (!d || !d->n || !d->text || req->text_len <= d->len) return NULL;
	*k = req->text_len - d->len;
	if (req->cursor != d->cursor + *k || memcmp(req->text, d->text, d->cursor) ||
	    memcmp(req->text + d->cursor + *k, d->text + d->cursor, d->len - d->cursor))
		return NULL;
	return d;
}

/* Whether candidate i of d begins with the k bytes typed and has more than
 * blanks after them. */
static bool continues(const struct fast_doc *d, size_t i, const char *typed, size_t k)
{
	return d->cand_len[i] > k && !memcmp(d->cands[i], typed, k) &&
	       !rerank_is_blank(d->cands[i] + k, d->cand_len[i] - k);
}

bool fast_applies(struct fast_doc **docs, const struct completion_request *req)
{
	size_t k;
	struct fast_doc *d = typed_at_cursor(docs, req, &k);
	for (size_t i = 0; d && i < d->n; i++)
		if (continues(d, i, req->text + d->cursor, k)) return true;
	return false;
}

bool fast_answer(struct fast_doc **docs, const struct completion_request *req,
                 struct completion_result *out)
{
	size_t k;
	struct fast_doc *d = typed_at_cursor(docs, req, &k);
	if (!d) return false;
	const char *typed = req->text + d->cursor;
	struct completion_candidate *items = calloc(d->n, sizeof *items);
	if (!items) return false;
	size_t n = 0;
	for (size_t i = 0; i < d->n; i++) {
		if (!continues(d, i, typed, k)) continue;
		const char *rest = d->cands[i] + k;
		size_t rest_len = d->cand_len[i] - k;
		char *t = malloc(rest_len + 1);
		if (!t) break;
		memcpy(t, rest, rest_len);
		t[rest_len] = 0;
		items[n++] = (struct completion_candidate){
			.text = t,
			.text_len = rest_len,
			.start = req->cursor,
			.end = req->cursor + d->cand_tail[i],
			.score = (double)(d->n - i),
			.confidence = -1, /* typed along: the first answer was judged */
		};
	}
	if (!n) {
		free(items);
		return false;
	}
	out->items = items;
	out->count = n;
	return true;
}

/* Remembers what was answered for the fast path and the rerank's "previous
 * suggestion". Takes the request's text. */
void fast_record(struct fast_doc **docs, struct completion_request *req,
                 const struct completion_result *res)
{
	struct fast_doc *d = doc_find(docs, req->uri);
	if (!d) {
		d = calloc(1, sizeof *d);
		if (!d || !(d->uri = strdup(req->uri))) {
			free(d);
			return;
		}
		d->next = *docs;
		*docs = d;
	}
	doc_clear(d);
	size_t n = 0;
	for (size_t i = 0; i < res->count; i++)
		if (res->items[i].start == req->cursor && res->items[i].end >= req->cursor) n++;
	if (!n) return;
	d->cands = calloc(n, sizeof *d->cands);
	d->cand_len = calloc(n, sizeof *d->cand_len);
	d->cand_tail = calloc(n, sizeof *d->cand_tail);
	if (!d->cands || !d->cand_len || !d->cand_tail) {
		doc_clear(d);
		return;
	}
	for (size_t i = 0; i < res->count && d->n < n; i++) {
		const struct completion_candidate *c = &res->items[i];
		if (c->start != req->cursor || c->end < req->cursor) continue;
		char *t = malloc(c->text_len + 1);
		if (!t) break;
		memcpy(t, c->text, c->text_len);
		t[c->text_len] = 0;
		d->cands[d->n] = t;
		d->cand_len[d->n] = c->text_len;
		d->cand_tail[d->n] = c->end - c->start;
		d->n++;
	}
	d->text = req->text;
	d->len = req->text_len;
	d->cursor = req->cursor;
	req->text = NULL; /* taken */
	req->text_len = 0;
}

size_t fast_extend(struct fast_doc **docs, const char *uri, const char *text, size_t len,
                   size_t cursor, const struct completion_result *ext)
{
	struct fast_doc *d = doc_find(docs, uri);
	if (!d || !d->text || d->len != len || d->cursor != cursor || memcmp(d->text, text, len))
		return 0; /* typed on, edited or answered anew since */
	size_t grown = 0;
	for (size_t i = 0; i < d->n; i++) {
		for (size_t j = 0; j < ext->count; j++) {
			const struct completion_candidate *c = &ext->items[j];
			if (c->start != cursor || c->end - c->start != d->cand_tail[i] ||
			    c->text_len <= d->cand_len[i] ||
			    memcmp(c->text, d->cands[i], d->cand_len[i]))
				continue;
			char *t = malloc(c->text_len + 1);
			if (!t) return grown;
			memcpy(t, c->text, c->text_len);
			t[c->text_len] = 0;
			free(d->cands[i]);
			d->cands[i] = t;
			d->cand_len[i] = c->text_len;
			grown++;
			break;
		}
	}
	return grown;
}

const char *fast_top(struct fast_doc **docs, const char *uri, size_t *len)
{
	struct fast_doc *d = doc_find(docs, uri);
	if (!d || !d->n) return NULL;
	*len = d->cand_len[0];
	return d->cands[0];
}

void fast_doc_free_all(struct fast_doc **docs)
{
	while (*docs) fast_doc_remove(docs, (*docs)->uri);
}
