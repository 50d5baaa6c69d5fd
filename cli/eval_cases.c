/*
 * eval_cases.c - cuts fill-in-the-middle cases out of source files for the
 * quality harness (eval_cases.h). It reads lines and indentation only, no
 * tree: the cases must not depend on the parser whose help is being
 * measured, and a file with syntax errors still yields cases.
 *
 * A cut is chosen uniformly among all eligible places of a file, so a file
 * contributes cases from everywhere in it, not just from its first lines.
 */
#include "eval_cases.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MIN_TEXT   4   /* bytes of text a REST/LINE line needs: not `}` or `);` */
#define LINE_MAX_TEXT   160 /* longer lines are data tables, not code being typed */
#define BLOCK_MIN_LINES 2   /* one line would be a LINE case */
#define BLOCK_MAX_LINES 8   /* within completion.maxLines (12) with room to spare */
#define BLOCK_MAX_BYTES 600

const char *eval_kind_name(enum eval_kind k)
{
	switch (k) {
	case EVAL_KIND_REST: return "rest_of_line";
	case EVAL_KIND_LINE: return "line";
	case EVAL_KIND_BLOCK: return "block";
	case EVAL_KIND_COUNT: break;
	}
	return "?";
}

void eval_case_finish(struct eval_case *c)
{
	if (!c) return;
	free(c->text);
	free(c->expected);
	memset(c, 0, sizeof *c);
}

uint64_t eval_rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

size_t eval_rng_below(uint64_t *state, size_t n)
{
	return n ? (size_t)(eval_rng_next(state) % n) : 0;
}

/* ---- lines ------------------------------------------------------------------ */

/* One line: [start, end) without its newline or a CR before it; text is
 * [text_start, text_end): after the indentation, before trailing blanks. */
struct line {
	size_t start, end;
	size_t text_start, text_end;
	unsigned indent; /* columns, a tab advancing to the next multiple of 8 */
};

struct lines {
	struct line *v;
	size_t n;
};

static bool is_blank_char(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static int lines_split(const char *t, size_t len, struct lines *out)
{
	size_t cap = 64;
	out->n = 0;
	out->v = malloc(cap * sizeof *out->v);
	if (!out->v) return -ENOMEM;
	size_t i = 0;
	while (i < len) {
		if (out->n == cap) {
			cap *= 2;
			struct line *v = realloc(out->v, cap * sizeof *v);
			if (!v) return -ENOMEM;
			out->v = v;
		}
		struct line *l = &out->v[out->n++];
		l->start = i;
		const char *nl = memchr(t + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - t) : len;
		i = nl ? e + 1 : len;
		if (e > l->start && t[e - 1] == '\r') e--;
		l->end = e;
		size_t s = l->start;
		unsigned col = 0;
		while (s < e && (t[s] == ' ' || t[s] == '\t')) {
			col = t[s] == '\t' ? (col / 8 + 1) * 8 : col + 1;
			s++;
		}
		size_t te = e;
		while (te > s && is_blank_char(t[te - 1])) te--;
		l->text_start = s;
		l->text_end = te;
		l->indent = col;
	}
	return 0;
}

static bool line_blank(const struct line *l)
{
	return l->text_end == l->text_start;
}

static bool line_ok_for_text(const char *t, const struct line *l)
{
	size_t n = l->text_end - l->text_start;
	return n >= LINE_MIN_TEXT && n <= LINE_MAX_TEXT && !memchr(t + l->text_start, 0, n);
}

static bool starts_with(const char *t, size_t at, size_t end, const char *w)
{
	size_t n = strlen(w);
	return end - at >= n && !memcmp(t + at, w, n);
}

/* A line that opens a block: it ends with the opener and is not a comment;
 * an indentation header starts with a keyword that takes a block. */
static bool block_header(const char *t, const struct line *l, enum eval_blocks blocks)
{
	if (line_blank(l)) return false;
	size_t s = l->text_start, e = l->text_end;
	if (blocks == EVAL_BLOCKS_BRACE) {
		if (t[e - 1] != '{') return false;
		return !starts_with(t, s, e, "//") && !starts_with(t, s, e, "/*") && t[s] != '*' &&
		       t[s] != '#';
	}
	if (t[e - 1] != ':') return false;
	static const char *const kw[] = {
		"def ", "class ", "if ",      "elif ", "else:",  "for ", "while ",
		"try:", "except", "finally:", "with ", "async ", NULL
	};
	for (size_t i = 0; kw[i]; i++)
		if (starts_with(t, s, e, kw[i])) return true;
	return false;
}

/*
 * The body of the block opened at line h: lines (h, *last] hold its text.
 * False when it is not a block the harness takes (see eval_case_cut).
 */
static bool block_body(const char *t, const struct lines *ls, size_t h, enum eval_blocks blocks,
                       size_t *first, size_t *last)
{
	unsigned hi = ls->v[h].indent;
	size_t nonblank = 0, f = 0, l = 0;
	size_t i = h + 1;
	for (; i < ls->n; i++) {
		const struct line *x = &ls->v[i];
		if (line_blank(x)) continue;
		if (x->indent <= hi) break;
		if (x->text_end - x->text_start > LINE_MAX_TEXT) return false;
		if (!nonblank) f = i;
		l = i;
		if (++nonblank > BLOCK_MAX_LINES) return false;
	}
	if (nonblank < BLOCK_MIN_LINES) return false;
	if (blocks == EVAL_BLOCKS_BRACE) {
		/* the closing brace must be there, where the indentation says */
		if (i >= ls->n || t[ls->v[i].text_start] != '}') return false;
	}
	if (ls->v[l].text_end - ls->v[f].text_start > BLOCK_MAX_BYTES) return false;
	*first = f;
	*last = l;
	return true;
}

/* ---- the cut ------------------------------------------------------------------ */

static bool utf8_continuation(char c)
{
	return ((unsigned char)c & 0xC0) == 0x80;
}

/* Fills *out with text less [from, to); expected = [from, text_to). */
static int make_case(const char *t, size_t len, enum eval_kind kind, size_t from, size_t text_to,
                     size_t to, uint32_t line, struct eval_case *out)
{
	struct eval_case c = { .kind = kind, .cursor = from, .line = line };
	c.len = len - (to - from);
	c.hole_len = to - from;
	c.text = malloc(c.len + 1);
	c.expected_len = text_to - from;
	c.expected = malloc(c.expected_len + 1);
	if (!c.text || !c.expected) {
		eval_case_finish(&c);
		return -ENOMEM;
	}
	memcpy(c.text, t, from);
	memcpy(c.text + from, t + to, len - to);
	c.text[c.len] = 0;
	memcpy(c.expected, t + from, c.expected_len);
	c.expected[c.expected_len] = 0;
	*out = c;
	return 0;
}

int eval_case_cut(const char *text, size_t len, enum eval_kind kind, enum eval_blocks blocks,
                  uint64_t *rng, struct eval_case *out)
{
	memset(out, 0, sizeof *out);
	struct lines ls = { 0 };
	if (lines_split(text, len, &ls)) {
		free(ls.v);
		return -ENOMEM;
	}
	/* eligible places: line indices (REST, LINE) or header indices (BLOCK) */
	size_t *cand = malloc((ls.n + 1) * sizeof *cand);
	if (!cand) {
		free(ls.v);
		return -ENOMEM;
	}
	size_t nc = 0;
	for (size_t i = 0; i < ls.n; i++) {
		size_t f, l;
		if (kind == EVAL_KIND_BLOCK ? block_header(text, &ls.v[i], blocks) &&
		                                      block_body(text, &ls, i, blocks, &f, &l)
		                            : line_ok_for_text(text, &ls.v[i]))
			cand[nc++] = i;
	}
	int rc = EVAL_ENONE;
	if (nc) {
		size_t i = cand[eval_rng_below(rng, nc)];
		const struct line *x = &ls.v[i];
		if (kind == EVAL_KIND_LINE) {
			rc = make_case(text, len, kind, x->text_start, x->text_end, x->end,
			               (uint32_t)i, out);
		} else if (kind == EVAL_KIND_REST) {
			/* cursor in (text_start, text_end - 2], on a character boundary */
			size_t lo = x->text_start + 1, hi = x->text_end - 2, n = 0;
			for (size_t p = lo; p <= hi; p++) n += !utf8_continuation(text[p]);
			if (n) {
				size_t k = eval_rng_below(rng, n), p = lo;
				for (;; p++) {
					if (!utf8_continuation(text[p]) && k-- == 0) break;
				}
				rc = make_case(text, len, kind, p, x->text_end, x->end, (uint32_t)i,
				               out);
			}
		} else {
			size_t f = 0, l = 0;
			block_body(text, &ls, i, blocks, &f, &l);
			rc = make_case(text, len, kind, ls.v[f].text_start, ls.v[l].text_end,
			               ls.v[l].end, (uint32_t)f, out);
		}
	}
	free(cand);
	free(ls.v);
	return rc;
}
