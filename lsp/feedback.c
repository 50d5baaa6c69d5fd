/*
 * feedback.c - the fate of suggestions shown, counted per language and
 * shape, and the learned confidence floor of completion.minConfidence
 * "auto" (feedback.h states the rules).
 *
 * Items live in a ring of FEEDBACK_ITEMS slots indexed by id: an id names
 * the slot id % FEEDBACK_ITEMS while no newer item took it, so a stale id is
 * found stale by comparing the slot's id. An item evicted while still shown
 * is left uncounted (it was neither accepted nor dismissed that we know of).
 */
#include "feedback.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS    20 /* of confidence, 0.05 each */
#define MAX_BUCKET 19 /* the floor never passes 0.95 */
#define SHAPES     2

enum item_state { ITEM_FREE, ITEM_OFFERED, ITEM_SHOWN, ITEM_DONE };

struct counts {
	uint64_t shown, accepted, partly, chars, dismissed, hidden;
	uint64_t gated; /* below the floor, hidden or explored: every EXPLORE'th passes */
	/* accepted (whole or partly) though under the floor learned so far: what
	 * "auto" hides, or would have hidden, of what users take */
	uint64_t under_floor;
	uint32_t n[BUCKETS], acc[BUCKETS];
};

struct lang {
	char *name; /* owned */
	struct counts c[SHAPES];
};

struct item {
	uint64_t id;
	enum item_state state;
	char *uri;   /* owned */
	size_t lang; /* index in fb->langs */
	enum feedback_shape shape;
	double confidence; /* < 0: unknown */
	char *text;        /* owned */
	size_t len;
	size_t anchor;        /* where the text starts in the document */
	size_t typed;         /* bytes of text in the document at anchor when offered */
	size_t progress;      /* bytes of text in the document now (>= typed) */
	size_t chars_counted; /* characters counted in acceptedChars */
	bool partly;          /* counted as partly accepted */
	bool continuation;    /* continues a typed-along item: shown counted there */
};

struct feedback {
	struct item items[FEEDBACK_ITEMS];
	uint64_t next_id;
	struct lang *langs; /* owned, nlangs entries */
	size_t nlangs;
};

struct feedback *feedback_new(void)
{
	struct feedback *fb = calloc(1, sizeof *fb);
	if (fb) fb->next_id = 1;
	return fb;
}

static void item_clear(struct item *it)
{
	free(it->uri);
	free(it->text);
	memset(it, 0, sizeof *it);
}

void feedback_free(struct feedback *fb)
{
	if (!fb) return;
	for (size_t i = 0; i < FEEDBACK_ITEMS; i++) item_clear(&fb->items[i]);
	for (size_t i = 0; i < fb->nlangs; i++) free(fb->langs[i].name);
	free(fb->langs);
	free(fb);
}

/* ---- helpers ------------------------------------------------------------- */

/* Index of language name, added when new; SIZE_MAX on out of memory. */
static size_t lang_index(struct feedback *fb, const char *name)
{
	if (!name) name = "unknown";
	for (size_t i = 0; i < fb->nlangs; i++)
		if (!strcmp(fb->langs[i].name, name)) return i;
	struct lang *l = realloc(fb->langs, (fb->nlangs + 1) * sizeof *l);
	if (!l) return SIZE_MAX;
	fb->langs = l;
	memset(&l[fb->nlangs], 0, sizeof *l);
	if (!(l[fb->nlangs].name = strdup(name))) return SIZE_MAX;
	return fb->nlangs++;
}

static const struct lang *lang_find(const struct feedback *fb, const char *name)
{
	if (!name) name = "unknown";
	for (size_t i = 0; i < fb->nlangs; i++)
		if (!strcmp(fb->langs[i].name, name)) return &fb->langs[i];
	return NULL;
}

static struct counts *counts_of(struct feedback *fb, const struct item *it)
{
	return &fb->langs[it->lang].c[it->shape];
}

/* Unicode characters in UTF-8 text (continuation bytes not counted). */
static size_t utf8_chars(const char *t, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++) n += ((unsigned char)t[i] & 0xC0) != 0x80;
	return n;
}

/* Characters of t covered by the first units units of enc. */
static size_t units_to_chars(const char *t, size_t len, size_t units, enum pos_encoding enc)
{
	size_t chars = 0, i = 0;
	while (i < len && units > 0) {
		unsigned char c = (unsigned char)t[i];
		size_t bytes = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		size_t u = enc == POS_ENCODING_UTF8    ? bytes
		           : enc == POS_ENCODING_UTF16 ? (bytes == 4 ? 2 : 1)
		                                       : 1;
		if (u > units) break;
		units -= u;
		i += bytes;
		chars++;
	}
	return chars;
}

enum feedback_shape feedback_shape_of(const char *text, size_t len)
{
	/* a trailing newline alone does not make a block */
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
	return memchr(text, '\n', len) || memchr(text, '\r', len) ? FEEDBACK_BLOCK
	                                                          : FEEDBACK_SINGLE;
}

static int bucket_of(double confidence)
{
	int b = (int)(confidence * BUCKETS);
	return b < 0 ? 0 : b >= BUCKETS ? BUCKETS - 1 : b;
}

static double counts_threshold(const struct counts *c);

/* The item ends: its learning sample, once, when its confidence is known. */
static void item_resolve(struct feedback *fb, struct item *it, bool taken)
{
	struct counts *c = counts_of(fb, it);
	if (taken && it->confidence >= 0 && it->confidence < counts_threshold(c)) c->under_floor++;
	if (it->confidence >= 0) {
		int b = bucket_of(it->confidence);
		c->n[b]++;
		c->acc[b] += taken;
	}
	it->state = ITEM_DONE;
}

static void item_dismiss(struct feedback *fb, struct item *it)
{
	if (it->state == ITEM_SHOWN) {
		if (!it->partly) counts_of(fb, it)->dismissed++;
		item_resolve(fb, it, it->partly);
	} else {
		it->state = ITEM_DONE; /* never shown: nothing to count */
	}
}

static void item_accept(struct feedback *fb, struct item *it)
{
	struct counts *c = counts_of(fb, it);
	size_t chars = utf8_chars(it->text + it->typed, it->len - it->typed);
	c->accepted++;
	if (chars > it->chars_counted) c->chars += chars - it->chars_counted;
	it->chars_counted = chars;
	item_resolve(fb, it, true);
}

static struct item *item_get(struct feedback *fb, uint64_t id)
{
	if (!id) return NULL;
	struct item *it = &fb->items[id % FEEDBACK_ITEMS];
	return it->state != ITEM_FREE && it->id == id ? it : NULL;
}

static struct item *shown_in(struct feedback *fb, const char *uri)
{
	for (size_t i = 0; i < FEEDBACK_ITEMS; i++) {
		struct item *it = &fb->items[i];
		if (it->state == ITEM_SHOWN && !strcmp(it->uri, uri)) return it;
	}
	return NULL;
}

/* ---- the events ------------------------------------------------------------ */

uint64_t feedback_offer(struct feedback *fb, const char *uri, const char *language, size_t anchor,
                        size_t cursor, const char *text, size_t len, double confidence)
{
	size_t lang = lang_index(fb, language);
	if (lang == SIZE_MAX) return 0;
	uint64_t id = fb->next_id++;
	struct item *it = &fb->items[id % FEEDBACK_ITEMS];
	item_clear(it); /* evicted: left uncounted (feedback.c's head comment) */
	it->uri = strdup(uri);
	it->text = malloc(len + 1);
	if (!it->uri || !it->text) {
		item_clear(it);
		return 0;
	}
	memcpy(it->text, text, len);
	it->text[len] = 0;
	it->len = len;
	it->id = id;
	it->state = ITEM_OFFERED;
	it->lang = lang;
	it->shape = feedback_shape_of(text, len);
	it->confidence = confidence > 1 ? 1 : confidence;
	it->anchor = anchor;
	size_t typed = cursor >= anchor ? cursor - anchor : 0;
	it->typed = it->progress = typed > len ? len : typed;
	return id;
}

int feedback_shown(struct feedback *fb, uint64_t id)
{
	struct item *it = item_get(fb, id);
	if (!it) return -ENOENT;
	if (it->state == ITEM_SHOWN) return 0; /* shown again (re-rendered): once */
	if (it->state != ITEM_OFFERED) return -EALREADY;
	struct item *prev = shown_in(fb, it->uri);
	if (prev && prev->progress > prev->typed) {
		/* typed along, and this one is what is left of it */
		it->lang = prev->lang;
		it->shape = prev->shape;
		it->confidence = prev->confidence;
		it->partly = prev->partly;
		it->continuation = true;
		prev->state = ITEM_DONE;
	} else if (prev) {
		item_dismiss(fb, prev); /* cycled past or asked again */
	}
	it->state = ITEM_SHOWN;
	if (!it->continuation) counts_of(fb, it)->shown++;
	return 0;
}

int feedback_accepted(struct feedback *fb, uint64_t id)
{
	struct item *it = item_get(fb, id);
	if (!it) return -ENOENT;
	if (it->state == ITEM_OFFERED) feedback_shown(fb, id);
	if (it->state != ITEM_SHOWN) return -EALREADY;
	item_accept(fb, it);
	return 0;
}

int feedback_partly_accepted(struct feedback *fb, uint64_t id, size_t accepted_units,
                             enum pos_encoding enc)
{
	struct item *it = item_get(fb, id);
	if (!it) return -ENOENT;
	if (it->state == ITEM_OFFERED) feedback_shown(fb, id);
	if (it->state != ITEM_SHOWN) return -EALREADY;
	struct counts *c = counts_of(fb, it);
	/* acceptedLength counts from the item's insertText start; what was
	 * typed before the request is not accepted */
	size_t chars = units_to_chars(it->text, it->len, accepted_units, enc);
	size_t before = utf8_chars(it->text, it->typed);
	chars = chars > before ? chars - before : 0;
	if (!it->partly) c->partly++;
	it->partly = true;
	if (chars > it->chars_counted)
		c->chars += chars - it->chars_counted, it->chars_counted = chars;
	return 0;
}

void feedback_edit(struct feedback *fb, const char *uri, const struct doc *d, size_t start,
                   size_t end, size_t inserted)
{
	(void)end; /* what the edit replaced is judged by the text it leaves */
	for (size_t i = 0; i < FEEDBACK_ITEMS; i++) {
		struct item *it = &fb->items[i];
		if ((it->state != ITEM_OFFERED && it->state != ITEM_SHOWN) || strcmp(it->uri, uri))
			continue;
		size_t typed_end = it->anchor + it->progress;
		size_t progress = it->progress;
		if (inserted > 0 && start >= it->anchor && start <= typed_end) {
			/* how far the document now matches the text, up to the
			 * end of what was inserted (the cursor): an auto-closed
			 * `)` after it is not typed along */
			size_t limit = start + inserted - it->anchor;
			if (limit > it->len) limit = it->len;
			char buf[256];
			size_t m = 0;
			while (m < limit) {
				size_t want = limit - m < sizeof buf ? limit - m : sizeof buf;
				size_t got =
				        doc_read(d, it->anchor + m, it->anchor + m + want, buf);
				size_t k = 0;
				while (k < got && buf[k] == it->text[m + k]) k++;
				m += k;
				if (k < want) break;
			}
			progress = m;
		}
		if (progress > it->progress) { /* typed (or accepted) along */
			it->progress = progress;
			if (progress >= it->len) {
				if (it->state == ITEM_SHOWN)
					item_accept(fb, it);
				else
					it->state = ITEM_DONE;
			}
		} else {
			item_dismiss(fb, it);
		}
	}
}

void feedback_doc_closed(struct feedback *fb, const char *uri)
{
	for (size_t i = 0; i < FEEDBACK_ITEMS; i++) {
		struct item *it = &fb->items[i];
		if ((it->state == ITEM_OFFERED || it->state == ITEM_SHOWN) && !strcmp(it->uri, uri))
			item_dismiss(fb, it);
	}
}

/* ---- the floor ---------------------------------------------------------------- */

static double counts_threshold(const struct counts *c)
{
	/* Up from the lowest bucket while each one's suggestions were almost
	 * never accepted. Judged per bucket, not over all below: a pool of many
	 * weak rejected ones would otherwise carry the floor over a few strong
	 * accepted ones. Empty buckets say nothing: the floor stops at the top
	 * of the last one with samples. */
	uint64_t n = 0;
	int top = 0;
	for (int b = 0; b < MAX_BUCKET; b++) {
		if (!c->n[b]) continue;
		if ((double)c->acc[b] > FEEDBACK_TARGET_RATE * (double)c->n[b]) break;
		n += c->n[b];
		top = b + 1;
	}
	return n >= FEEDBACK_MIN_SAMPLES ? (double)top / BUCKETS : 0;
}

double feedback_threshold(const struct feedback *fb, const char *language,
                          enum feedback_shape shape)
{
	const struct lang *l = lang_find(fb, language);
	return l ? counts_threshold(&l->c[shape]) : 0;
}

bool feedback_gate(struct feedback *fb, const char *language, const char *text, size_t len,
                   double confidence)
{
	if (confidence < 0) return false;
	enum feedback_shape shape = feedback_shape_of(text, len);
	const struct lang *found = lang_find(fb, language);
	if (!found) return false;
	struct counts *c = &fb->langs[found - fb->langs].c[shape];
	double t = counts_threshold(c);
	if (t <= 0 || confidence >= t) return false;
	if (c->gated++ % FEEDBACK_EXPLORE == FEEDBACK_EXPLORE - 1) return false; /* explored */
	c->hidden++;
	return true;
}

/* ---- infill/stats ----------------------------------------------------------- */

static json_t *counts_json(const struct counts *c)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "shown", (json_int_t)c->shown,
	                 "accepted", (json_int_t)c->accepted, "partlyAccepted",
	                 (json_int_t)c->partly, "acceptedChars", (json_int_t)c->chars, "dismissed",
	                 (json_int_t)c->dismissed, "hidden", (json_int_t)c->hidden,
	                 "acceptedUnderFloor", (json_int_t)c->under_floor, "minConfidence",
	                 counts_threshold(c));
}

json_t *feedback_to_json(const struct feedback *fb)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < fb->nlangs; i++) {
		const struct lang *l = &fb->langs[i];
		json_t *v = json_pack("{s:o, s:o}", "single", counts_json(&l->c[FEEDBACK_SINGLE]),
		                      "block", counts_json(&l->c[FEEDBACK_BLOCK]));
		if (!v || json_object_set_new(o, l->name, v)) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
