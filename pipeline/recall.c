/*
 * recall.c - candidates from elsewhere in the document (recall.h).
 *
 * One pass over the lines of a window around the cursor; distinct candidate
 * texts are counted in a small table (a line offers at most one), so the cost
 * is the window's bytes plus lines x distinct texts compared, small next to a
 * model step even for a file of many thousand lines.
 */
#include "ast.h"
#include "recall.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RECALL_DISTINCT 64  /* texts counted; later new ones are ignored */
#define RECALL_MAX_TEXT 240 /* longer lines are data, not code being typed */
#define RECALL_WINDOW   (256u << 10)

struct line {
	size_t start, text, end; /* line start, first non-blank byte, end (trailing blanks cut) */
};

static bool is_blank_byte(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The line starting at s (s at a line start). *next gets the next line's start. */
static struct line line_at(const char *t, size_t len, size_t s, size_t *next)
{
	const char *nl = memchr(t + s, '\n', len - s);
	size_t e = nl ? (size_t)(nl - t) : len;
	*next = nl ? e + 1 : len;
	struct line l = { s, s, e };
	while (l.text < e && (t[l.text] == ' ' || t[l.text] == '\t')) l.text++;
	while (l.end > l.text && is_blank_byte(t[l.end - 1])) l.end--;
	return l;
}

struct tally {
	struct recall_item *v;
	size_t file[RECALL_DISTINCT]; /* the last file that offered each */
	size_t n;
};

/* Counts one more place offering s[0..n); file: which of the other files
 * it is in (0 in the document), a file counting once. */
static void tally_add(struct tally *ty, const char *s, size_t n, size_t dist, size_t source,
                      size_t file)
{
	for (size_t i = 0; i < ty->n; i++) {
		struct recall_item *it = &ty->v[i];
		if (it->len == n && !memcmp(it->text, s, n)) {
			if (!file || ty->file[i] != file) it->count++;
			ty->file[i] = file;
			if (dist < it->nearest) {
				it->nearest = dist;
				it->source = source;
			}
			return;
		}
	}
	if (ty->n < RECALL_DISTINCT) {
		ty->file[ty->n] = file;
		ty->v[ty->n++] = (struct recall_item){ s, n, 1, dist, source };
	}
}

/* The line between two other files (RECALL_FILE_SEP). */
static bool is_sep(const char *t, struct line l)
{
	return l.end - l.text == 1 && t[l.text] == '\f';
}

static int cmp_item(const void *a, const void *b)
{
	const struct recall_item *x = a, *y = b;
	if (x->count != y->count) return x->count < y->count ? 1 : -1;
	return (x->nearest > y->nearest) - (x->nearest < y->nearest);
}

static size_t dist(size_t a, size_t b)
{
	return a > b ? a - b : b - a;
}

int recall_find(const struct recall_params *p, struct recall_item *out, size_t cap)
{
	const char *t = p->text;
	size_t len = p->len, cur = p->cursor;
	if (!cap || cur > len) return 0;
	size_t next;
	size_t cl = ast_line_start(t, cur);
	struct line here = line_at(t, len, cl, &next);
	/* what the cursor's line holds before and after the cursor */
	size_t pre = here.text < cur ? here.text : cur;
	size_t plen = cur > pre ? cur - pre : 0;
	size_t rest = cur, rend = here.end > cur ? here.end : cur;
	size_t rlen = rend - rest;

	/* the previous non-blank line (the key of a blank line) */
	struct line key = { 0 };
	bool blank_line = !plen && !rlen;
	if (blank_line) {
		size_t s = cl;
		bool found = false;
		while (s > 0 && !found) {
			s = ast_line_start(t, s - 1);
			key = line_at(t, len, s, &next);
			found = key.end > key.text;
		}
		if (!found) return 0;
	} else if (!plen) {
		return 0; /* text after the cursor only: nothing to continue */
	}

	size_t win = p->window ? p->window : RECALL_WINDOW;
	size_t from = ast_line_start(t, cur > win ? cur - win : 0);
	size_t to = len - cur > win ? cur + win : len;
	/* where the copies are looked for: the document, or the other files
	 * (then the cursor's line is no line of theirs: skip_line none) */
	const char *const here_t = t;
	size_t skip_line = cl;
	if (p->other) {
		t = p->other;
		len = p->other_len;
		from = 0;
		to = len;
		skip_line = SIZE_MAX;
	}
	struct tally ty = { .v = calloc(RECALL_DISTINCT, sizeof *ty.v) };
	if (!ty.v) return -ENOMEM;
	size_t key_indent = key.text - key.start, here_indent = cur - cl;
	/* in the other files, a line offered by several counts once in each
	 * (a sibling that repeats an error path ten times is one file that
	 * writes it), and the nearest is the earliest: the files come most
	 * like the cursor's surroundings first */
	size_t file = p->other ? 1 : 0;
	for (size_t s = from; s < to; s = next) {
		struct line l = line_at(t, len, s, &next);
		if (p->other && is_sep(t, l)) {
			file++;
			continue;
		}
		size_t d = p->other ? s : dist(s, cur);
		if (s == skip_line || l.end - l.text > RECALL_MAX_TEXT) continue;
		if (!blank_line) {
			size_t n = l.end - l.text;
			if (n <= plen || memcmp(t + l.text, here_t + pre, plen)) continue;
			const char *c = t + l.text + plen;
			size_t cn = n - plen;
			if (rlen) { /* it must end with the text after the cursor */
				if (cn <= rlen || memcmp(c + cn - rlen, here_t + rest, rlen))
					continue;
				cn -= rlen;
			}
			tally_add(&ty, c, cn, d, s, file);
			continue;
		}
		if ((!p->other && s == key.start) || l.end - l.text != key.end - key.text ||
		    memcmp(t + l.text, here_t + key.text, key.end - key.text))
			continue;
		/* the line that followed this copy of the key */
		struct line f = { 0 };
		size_t fs = next, fnext = next;
		bool found = false;
		while (fs < len && !found) {
			f = line_at(t, len, fs, &fnext);
			found = f.end > f.text;
			if (!found) fs = fnext;
		}
		if (!found || fs == skip_line || f.end - f.text > RECALL_MAX_TEXT || is_sep(t, f))
			continue;
		/* the same step in indentation as from the key to the cursor */
		if ((f.text - f.start) + key_indent != here_indent + (l.text - l.start)) continue;
		tally_add(&ty, t + f.text, f.end - f.text, d, fs, file);
	}
	qsort(ty.v, ty.n, sizeof *ty.v, cmp_item);
	size_t n = ty.n < cap ? ty.n : cap;
	memcpy(out, ty.v, n * sizeof *out);
	free(ty.v);
	return (int)n;
}
