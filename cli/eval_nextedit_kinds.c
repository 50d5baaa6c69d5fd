/*
 * eval_nextedit_kinds.c - the cases of `infill eval --next-edit` whose
 * change reaches across a file's structure (eval_nextedit.c makes the
 * others, scores them and prints):
 *   enum-member    a variant appended to an enum (C/C++, TypeScript, Java,
 *                  Rust `enum ... {`, a Python class deriving from Enum):
 *                  each switch/match whose labels list every old variant
 *                  gets an arm after the last one's; its text is expected
 *                  where the single-variant arms, on lines of their own,
 *                  read alike once their variant's name is put as the new
 *                  one's (as written, lower case, lower case without the
 *                  prefix all variants share)
 *   call-add       an argument appended at a function's first call: the
 *                  definition's parameter list gets it (its text, the
 *                  argument's name, where parameters need no type: Python,
 *                  JavaScript); the other calls of as many arguments are
 *                  places too (no text expected: what they pass is theirs)
 *   call-remove    the last argument removed at the first call: the last
 *                  parameter removed; the other calls' last arguments are
 *                  places too
 *   import-unused  the one use of a name a `from m import a, b` / `import
 *                  a` / `import { a } from` line binds replaced by a
 *                  constant: the name leaves its import (the line goes
 *                  when it was its only name)
 * As in eval_nextedit.c, the expected places come from scanning the text
 * (brackets matched by hand, words outside strings and comments), not
 * from the tree the finder reads.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_nextedit.h"

#define MAX_MEMBERS 64
#define MAX_ARMS    64

static bool blank_line(const char *t, size_t n, size_t ls)
{
	for (size_t i = ls; i < n && t[i] != '\n'; i++)
		if (t[i] != ' ' && t[i] != '\t' && t[i] != '\r') return false;
	return true;
}

static size_t indent_at(const char *t, size_t n, size_t ls)
{
	size_t i = ls;
	while (i < n && (t[i] == ' ' || t[i] == '\t')) i++;
	return i - ls;
}

static bool has_word(const struct file *f, size_t s, size_t e, const char *w, size_t wl)
{
	for (size_t i = s; i + wl <= e; i++)
		if (evne_word_at(f->t, e, f->code, i, w, wl)) return true;
	return false;
}

/* ---- enum-member ---- */

struct members {
	struct item name[MAX_MEMBERS];
	size_t n;
	size_t insert_at; /* where the new variant goes */
	char insert[200]; /* and its text */
	char new_name[72];
};

/* `enum [class] [Name] {` at i: its members; false when not one. */
static bool brace_enum(const struct file *f, size_t i, struct members *m)
{
	size_t p = evne_skip_ws(f->t, f->n, i + 4);
	for (int w = 0; w < 2 && p < f->n && ast_is_ident_byte((unsigned char)f->t[p]); w++)
		p = evne_skip_ws(f->t, f->n, evne_word_end(f->t, f->n, p));
	while (p < f->n && (f->t[p] == '\n' || f->t[p] == ' ')) p++;
	if (p >= f->n || f->t[p] != '{') return false;
	size_t close = evne_match_paren(f->t, f->n, f->code, p);
	if (close >= f->n) return false;
	for (size_t k = p; k < close; k++)
		if (f->code[k] && (f->t[k] == ';' || f->t[k] == '#')) return false;
	struct item it[MAX_MEMBERS];
	size_t ni = evne_split_items(f->t, f->code, p, close, it, MAX_MEMBERS);
	if (ni < 2 || ni >= MAX_MEMBERS) return false;
	for (size_t k = 0; k < ni; k++) {
		size_t s = it[k].start;
		while (s < it[k].end && !f->code[s]) s++; /* a comment before it */
		s = evne_skip_ws(f->t, f->n, s);
		while (s < it[k].end && (f->t[s] == '\n' || f->t[s] == ' ' || f->t[s] == '\t')) s++;
		size_t e = evne_word_end(f->t, f->n, s);
		if (e == s || isdigit((unsigned char)f->t[s])) return false;
		m->name[k] = (struct item){ s, e };
	}
	m->n = ni;
	const struct item *last = &m->name[ni - 1];
	snprintf(m->new_name, sizeof m->new_name, "%.*s_2", (int)(last->end - last->start),
	         f->t + last->start);
	m->insert_at = it[ni - 1].end;
	snprintf(m->insert, sizeof m->insert, ", %s", m->new_name);
	return true;
}

/* `class Name(...Enum...):` at line ls: its `NAME = value` lines. */
static bool python_enum(const struct file *f, size_t ls, struct members *m)
{
	size_t le = ast_line_end(f->t, f->n, ls);
	size_t ci = indent_at(f->t, f->n, ls);
	const char *l = f->t + ls + ci;
	if (strncmp(l, "class ", 6) || !memchr(l, '(', le - ls - ci)) return false;
	bool en = false;
	for (size_t k = ls; k + 4 <= le; k++) en |= !memcmp(f->t + k, "Enum", 4);
	if (!en) return false;
	m->n = 0;
	size_t last_line = 0;
	for (size_t at = le + 1; at < f->n; at = ast_line_end(f->t, f->n, at) + 1) {
		if (blank_line(f->t, f->n, at)) continue;
		size_t in = indent_at(f->t, f->n, at);
		if (in <= ci) break;
		size_t s = at + in, e = evne_word_end(f->t, f->n, s);
		size_t q = evne_skip_ws(f->t, f->n, e);
		if (e == s || f->t[s] == '_' || q >= f->n || f->t[q] != '=' || f->t[q + 1] == '=')
			continue;
		if (m->n >= MAX_MEMBERS) return false;
		m->name[m->n++] = (struct item){ s, e };
		last_line = at;
	}
	if (m->n < 2) return false;
	const struct item *last = &m->name[m->n - 1];
	snprintf(m->new_name, sizeof m->new_name, "%.*s_2", (int)(last->end - last->start),
	         f->t + last->start);
	size_t lle = ast_line_end(f->t, f->n, last_line);
	if (lle >= f->n || lle - last->end > 100) return false;
	m->insert_at = lle + 1;
	snprintf(m->insert, sizeof m->insert, "%.*s%s%.*s\n", (int)(last->start - last_line),
	         f->t + last_line, m->new_name, (int)(lle - last->end), f->t + last->end);
	return true;
}

struct arm {
	size_t start; /* the label's first byte (`case`, a pattern) */
	size_t label_s, label_e;
	bool fallback;
};

struct sw {
	struct arm a[MAX_ARMS];
	size_t n;
	size_t end; /* the closing brace, or the block's end (Python) */
};

/* C-family `switch (...) {`: arms at `case`/`default` in the body's top
 * level. */
static bool c_switch(const struct file *f, size_t i, struct sw *s)
{
	size_t p = evne_skip_ws(f->t, f->n, i + 6);
	if (p >= f->n || f->t[p] != '(') return false;
	p = evne_match_paren(f->t, f->n, f->code, p);
	if (p >= f->n) return false;
	p++;
	while (p < f->n && (f->t[p] == ' ' || f->t[p] == '\n' || f->t[p] == '\t')) p++;
	if (p >= f->n || f->t[p] != '{') return false;
	size_t close = evne_match_paren(f->t, f->n, f->code, p);
	if (close >= f->n) return false;
	s->n = 0;
	s->end = close;
	int depth = 0;
	for (size_t k = p + 1; k < close && s->n < MAX_ARMS; k++) {
		if (!f->code[k]) continue;
		char c = f->t[k];
		if (c == '(' || c == '[' || c == '{') depth++;
		if (c == ')' || c == ']' || c == '}') depth--;
		if (depth) continue;
		bool cs = evne_starts_word(f, k, "case"), df = evne_starts_word(f, k, "default");
		if (!cs && !df) continue;
		size_t colon = k + (cs ? 4 : 7);
		int d2 = 0;
		while (colon < close && !(f->code[colon] && d2 == 0 && f->t[colon] == ':' &&
		                          f->t[colon + 1] != ':' && f->t[colon - 1] != ':')) {
			if (f->code[colon] && (f->t[colon] == '(' || f->t[colon] == '[')) d2++;
			if (f->code[colon] && (f->t[colon] == ')' || f->t[colon] == ']')) d2--;
			colon++;
		}
		s->a[s->n++] = (struct arm){ k, k + (cs ? 4 : 7), colon, df };
		k = colon;
	}
	return s->n > 0;
}

/* Rust `match ... {`: an arm per line of the body's top level with `=>`. */
static bool rust_match(const struct file *f, size_t i, struct sw *s)
{
	size_t p = i + 5;
	while (p < f->n && !(f->code[p] && (f->t[p] == '{' || f->t[p] == ';'))) p++;
	if (p >= f->n || f->t[p] != '{') return false;
	size_t close = evne_match_paren(f->t, f->n, f->code, p);
	if (close >= f->n) return false;
	s->n = 0;
	s->end = close;
	int depth = 0;
	bool line_has_arm = false;
	size_t ls = 0;
	for (size_t k = p + 1; k < close && s->n < MAX_ARMS; k++) {
		if (f->t[k] == '\n') {
			line_has_arm = false;
			continue;
		}
		if (!f->code[k]) continue;
		char c = f->t[k];
		if (k == ast_line_start(f->t, k) + indent_at(f->t, f->n, ast_line_start(f->t, k)) &&
		    !depth)
			ls = k;
		if (c == '(' || c == '[' || c == '{') depth++;
		if (c == ')' || c == ']' || c == '}') depth--;
		if (!depth && !line_has_arm && c == '=' && f->t[k + 1] == '>') {
			bool fb = k - ls >= 1 && f->t[ls] == '_' &&
			          !ast_is_ident_byte((unsigned char)f->t[ls + 1]);
			s->a[s->n++] = (struct arm){ ls, ls, k, fb };
			line_has_arm = true;
		}
	}
	return s->n > 0;
}

/* Python `match ...:` at line ls: an arm per `case` line of its block. */
static bool python_match(const struct file *f, size_t ls, struct sw *s)
{
	size_t mi = indent_at(f->t, f->n, ls), le = ast_line_end(f->t, f->n, ls);
	if (strncmp(f->t + ls + mi, "match ", 6) || le == 0 || f->t[le - 1] != ':') return false;
	s->n = 0;
	s->end = f->n;
	size_t last_nonblank = le;
	for (size_t at = le + 1; at < f->n; at = ast_line_end(f->t, f->n, at) + 1) {
		if (blank_line(f->t, f->n, at)) continue;
		size_t in = indent_at(f->t, f->n, at);
		if (in <= mi) break;
		last_nonblank = ast_line_end(f->t, f->n, at);
		size_t k = at + in;
		if (!evne_starts_word(f, k, "case") || s->n >= MAX_ARMS) continue;
		size_t e = ast_line_end(f->t, f->n, k);
		while (e > k && f->t[e - 1] != ':') e--;
		bool fb = e >= k + 7 && !memcmp(f->t + k + 5, "_:", 2);
		s->a[s->n++] = (struct arm){ k, k + 4, e ? e - 1 : e, fb };
	}
	s->end = last_nonblank < f->n ? last_nonblank + 1 : f->n;
	return s->n > 0;
}

/* Whether the line at ls is a comment alone: it opens with two slashes, a
 * slash and a star, a star (the middle of a block comment) or a hash. */
static bool comment_line(const char *t, size_t n, size_t ls)
{
	size_t i = ls + indent_at(t, n, ls);
	return i < n &&
	       (t[i] == '#' || (t[i] == '/' && i + 1 < n && (t[i + 1] == '/' || t[i + 1] == '*')) ||
	        (t[i] == '*' && i + 1 < n && (t[i + 1] == ' ' || t[i + 1] == '/')));
}

/* The first line after the last line of code of [from, to): comments
 * before the next arm are that arm's. */
static size_t after_last_nonblank(const char *t, size_t n, size_t from, size_t to)
{
	size_t best = ast_line_end(t, n, from), stop = ast_line_start(t, to);
	for (size_t at = ast_line_start(t, from); at < stop && at < n;
	     at = ast_line_end(t, n, at) + 1)
		if (!blank_line(t, n, at) && !comment_line(t, n, at)) best = ast_line_end(t, n, at);
	return best < n ? best + 1 : n;
}

struct respell {
	char form[3][72];
	size_t len[3];
	size_t n;
};

static void forms_of(const char *w, size_t wl, size_t prefix, struct respell *r)
{
	memset(r, 0, sizeof *r);
	if (wl >= 72) return;
	memcpy(r->form[0], w, wl);
	r->len[0] = wl;
	r->n = 1;
	bool upper = false;
	for (size_t i = 0; i < wl; i++) upper |= isupper((unsigned char)w[i]) != 0;
	if (!upper) return;
	for (size_t i = 0; i < wl; i++) r->form[1][i] = (char)tolower((unsigned char)w[i]);
	r->len[1] = wl;
	r->n = 2;
	if (prefix && prefix < wl) {
		memcpy(r->form[2], r->form[1] + prefix, wl - prefix);
		r->len[2] = wl - prefix;
		r->n = 3;
	}
}

/* t[s..e) with each form of `from` put as `to`'s, into out; its length or
 * 0 when longer than cap. */
static size_t respelt(const char *t, size_t s, size_t e, const struct respell *from,
                      const struct respell *to, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = s; i < e;) {
		size_t k = from->n;
		for (size_t j = 0; j < from->n && j < to->n && k == from->n; j++) {
			size_t l = from->len[j];
			if (i + l <= e && !memcmp(t + i, from->form[j], l) &&
			    (i == s || !ast_is_ident_byte((unsigned char)t[i - 1])) &&
			    (i + l == e || !ast_is_ident_byte((unsigned char)t[i + l])))
				k = j;
		}
		if (k < from->n) {
			if (o + to->len[k] >= cap) return 0;
			memcpy(out + o, to->form[k], to->len[k]);
			o += to->len[k];
			i += from->len[k];
		} else {
			if (o + 1 >= cap) return 0;
			out[o++] = t[i++];
		}
	}
	out[o] = 0;
	return o;
}

static size_t shared_prefix(const struct file *f, const struct members *m)
{
	size_t p = m->name[0].end - m->name[0].start;
	for (size_t i = 1; i < m->n; i++) {
		size_t q = 0, l = m->name[i].end - m->name[i].start;
		while (q < p && q < l && f->t[m->name[0].start + q] == f->t[m->name[i].start + q])
			q++;
		p = q;
	}
	while (p > 0 && f->t[m->name[0].start + p - 1] != '_') p--;
	return p;
}

/* The expected place (and text) in switch s for the new variant. */
static void expect_arm(const struct file *f, const struct members *m, const struct sw *s,
                       struct ecase *c)
{
	for (size_t i = 0; i < m->n; i++) {
		bool listed = false;
		for (size_t k = 0; k < s->n && !listed; k++)
			listed = has_word(f, s->a[k].label_s, s->a[k].label_e,
			                  f->t + m->name[i].start,
			                  m->name[i].end - m->name[i].start);
		if (!listed) return;
	}
	const struct item *ln = &m->name[m->n - 1];
	size_t after = s->n;
	for (size_t k = 0; k < s->n; k++)
		if (has_word(f, s->a[k].label_s, s->a[k].label_e, f->t + ln->start,
		             ln->end - ln->start))
			after = k;
	/* the end of each arm: the next one's start, or the switch's end */
	size_t next = after + 1 < s->n ? s->a[after + 1].start : s->end;
	bool own_lines =
	        ast_line_start(f->t, next) != ast_line_start(f->t, s->a[after].start) &&
	        ast_line_start(f->t, next) + indent_at(f->t, f->n, ast_line_start(f->t, next)) ==
	                next;
	size_t at = own_lines ? after_last_nonblank(f->t, f->n, s->a[after].start, next) : next;
	if (!own_lines) {
		while (at > 0 && (f->t[at - 1] == ' ' || f->t[at - 1] == '\t')) at--;
		evne_expect(c, at, at, NULL);
		return;
	}
	/* the shape the single-variant arms share */
	size_t prefix = shared_prefix(f, m);
	struct respell to;
	forms_of(m->new_name, strlen(m->new_name), prefix, &to);
	char shape[400], cur[400];
	size_t alike = 0;
	bool differ = false;
	for (size_t k = 0; k < s->n && !differ; k++) {
		const struct arm *a = &s->a[k];
		if (a->fallback) continue;
		size_t named = 0, which = 0;
		for (size_t i = 0; i < m->n; i++)
			if (has_word(f, a->label_s, a->label_e, f->t + m->name[i].start,
			             m->name[i].end - m->name[i].start))
				named++, which = i;
		bool multi = memchr(f->t + a->label_s, '|', a->label_e - a->label_s) ||
		             memchr(f->t + a->label_s, ',', a->label_e - a->label_s);
		if (named != 1 || multi) continue;
		size_t nx = k + 1 < s->n ? s->a[k + 1].start : s->end;
		if (ast_line_start(f->t, nx) == ast_line_start(f->t, a->start)) {
			differ = true;
			break;
		}
		size_t as = ast_line_start(f->t, a->start);
		size_t ae = after_last_nonblank(f->t, f->n, a->start, nx);
		struct respell from;
		forms_of(f->t + m->name[which].start, m->name[which].end - m->name[which].start,
		         prefix, &from);
		size_t l = respelt(f->t, as, ae, &from, &to, alike ? cur : shape, sizeof shape);
		if (!l || (alike && strcmp(cur, shape))) differ = true;
		alike++;
	}
	evne_expect(c, at, at, !differ && alike >= 2 ? shape : NULL);
}

static void enum_case(const struct file *f, const struct members *m, struct ecase *out, size_t *n,
                      size_t cap, bool python)
{
	if (*n >= cap) return;
	struct sw *s = malloc(sizeof *s);
	if (!s) return;
	struct ecase *c = &out[*n];
	if (evne_case_start(c, EK_ENUM_MEMBER, f, m->insert_at, m->insert_at, m->insert)) {
		free(s);
		return;
	}
	for (size_t i = 0; i < f->n; i++) {
		if (!f->code[i] || (i > 0 && ast_is_ident_byte((unsigned char)f->t[i - 1])))
			continue;
		bool ok =
		        python                             ? (i == ast_line_start(f->t, i) +
                                                  indent_at(f->t, f->n, ast_line_start(f->t, i)) &&
                                  evne_starts_word(f, i, "match") &&
                                  python_match(f, ast_line_start(f->t, i), s))
		        : evne_starts_word(f, i, "switch") ? c_switch(f, i, s)
		        : evne_starts_word(f, i, "match")  ? rust_match(f, i, s)
		                                           : false;
		if (ok) expect_arm(f, m, s, c);
	}
	free(s);
	if (c->n_exp) {
		(*n)++;
	} else {
		nextedit_track_finish(&c->track);
		free(c->now);
	}
}

void evne_make_enum_members(const struct file *f, struct ecase *out, size_t *n, size_t cap)
{
	struct members *m = malloc(sizeof *m);
	if (!m) return;
	bool python = !strcmp(ast_lang_name(f->lang), "python");
	for (size_t i = 0; i < f->n && *n < cap; i++) {
		if (!f->code[i] || (i > 0 && ast_is_ident_byte((unsigned char)f->t[i - 1])))
			continue;
		bool found = python ? (i == ast_line_start(f->t, i) &&
		                       evne_starts_word(f, i, "class") && python_enum(f, i, m))
		                    : evne_starts_word(f, i, "enum") && brace_enum(f, i, m);
		if (found) enum_case(f, m, out, n, cap, python);
	}
	free(m);
}

/* ---- call-add, call-remove ---- */

/* The other calls that pass na arguments too: the same change is implied
 * there once the definition has it (the argument appended, or the last
 * removed), places with no text expected (what another call passes is
 * its own). */
static void other_calls(const struct file *f, const char *name, size_t ds, size_t de, size_t first,
                        size_t na, struct ecase *ec, bool add)
{
	size_t nl = strlen(name);
	for (size_t k = first + 1; k < f->n; k++) {
		if (k >= ds && k < de) continue;
		size_t o, c;
		if (!evne_call_at(f, k, name, nl, &o, &c)) continue;
		struct item a[16];
		if (evne_split_items(f->t, f->code, o, c, a, 16) != na) continue;
		if (add)
			evne_expect(ec, a[na - 1].end, a[na - 1].end, NULL);
		else
			evne_expect(ec, na > 1 ? a[na - 2].end : a[na - 1].start, a[na - 1].end,
			            NULL);
	}
}

void evne_make_calls(const struct file *f, const char *name, size_t ds, size_t de,
                     struct ecase *out, size_t *n, size_t cap)
{
	size_t nl = strlen(name), at = ds;
	while (at < de && !evne_word_at(f->t, f->n, f->code, at, name, nl)) at++;
	size_t open = evne_skip_ws(f->t, f->n, at + nl);
	if (at >= de || open >= de || f->t[open] != '(') return;
	size_t close = evne_match_paren(f->t, f->n, f->code, open);
	if (close >= de) return;
	struct item ps[16];
	size_t np = evne_split_items(f->t, f->code, open, close, ps, 16);
	if (np == 0 || np >= 16) return;
	bool self = ps[0].end - ps[0].start >= 3 && (!memcmp(f->t + ps[0].start, "self", 4) ||
	                                             !memcmp(f->t + ps[0].start, "cls", 3));
	for (size_t i = 0; i < np; i++)
		if (memchr(f->t + ps[i].start, '*', ps[i].end - ps[i].start) ||
		    memchr(f->t + ps[i].start, '=', ps[i].end - ps[i].start) ||
		    !memcmp(f->t + ps[i].start, "...", 3))
			return;
	/* the first call outside the definition that passes every parameter;
	 * the name defined once in the file */
	size_t defs = 0;
	for (size_t k = 0; k < f->n; k++) {
		size_t o, c;
		if (evne_word_at(f->t, f->n, f->code, k, name, nl) &&
		    !evne_call_at(f, k, name, nl, &o, &c) &&
		    f->t[evne_skip_ws(f->t, f->n, k + nl)] == '(')
			defs++;
	}
	if (defs != 1) return;
	for (size_t k = 0; k < f->n; k++) {
		if (k >= ds && k < de) continue;
		size_t o, c;
		if (!evne_call_at(f, k, name, nl, &o, &c)) continue;
		struct item a[16];
		size_t na = evne_split_items(f->t, f->code, o, c, a, 16);
		bool method = evne_after_member(f->t, k);
		if (na == 0 || na + (self && method ? 1 : 0) != np) return;
		if (self && !method) return;
		bool typeless = !strcmp(ast_lang_name(f->lang), "python") ||
		                !strcmp(ast_lang_name(f->lang), "javascript");
		if (*n < cap) {
			struct ecase *ec = &out[*n];
			if (!evne_case_start(ec, EK_CALL_ADD, f, a[na - 1].end, a[na - 1].end,
			                     ", extra")) {
				evne_expect(ec, ps[np - 1].end, ps[np - 1].end,
				            typeless ? ", extra" : NULL);
				other_calls(f, name, ds, de, k, na, ec, true);
				(*n)++;
			}
		}
		if (*n < cap && !(self && np == 1)) {
			struct ecase *ec = &out[*n];
			size_t rs = na > 1 ? a[na - 2].end : a[na - 1].start;
			if (!evne_case_start(ec, EK_CALL_REMOVE, f, rs, a[na - 1].end, "")) {
				size_t ps0 = np > 1 ? ps[np - 2].end : ps[np - 1].start;
				evne_expect(ec, ps0, ps[np - 1].end, "");
				other_calls(f, name, ds, de, k, na, ec, false);
				(*n)++;
			}
		}
		return;
	}
}

/* ---- import-unused ---- */

static size_t count_uses(const struct file *f, const char *w, size_t wl, size_t skip_s,
                         size_t skip_e, size_t *at)
{
	size_t k = 0;
	for (size_t i = 0; i < f->n; i++)
		if ((i < skip_s || i >= skip_e) && evne_word_at(f->t, f->n, f->code, i, w, wl) &&
		    !evne_after_member(f->t, i))
			k++, *at = i;
	/* a word after a dot may be the name too (an attribute): not one use */
	for (size_t i = 0; i < f->n; i++)
		if ((i < skip_s || i >= skip_e) && evne_word_at(f->t, f->n, f->code, i, w, wl) &&
		    evne_after_member(f->t, i))
			return 99;
	return k;
}

/* One import line's names: `from m import a, b`, `import a`, `import {
 * a, b } from '...'`. Items are the names; false for other lines. */
static bool import_line(const struct file *f, size_t ls, struct item *it, size_t *ni, size_t *le)
{
	*le = ast_line_end(f->t, f->n, ls);
	const char *l = f->t + ls;
	size_t s = 0, e = *le;
	*ni = 0;
	if (!f->code[ls]) return false;
	if (!strncmp(l, "from ", 5)) {
		const char *imp = strstr(l, " import ");
		if (!imp || (size_t)(imp - f->t) > *le) return false;
		s = (size_t)(imp - f->t) + 8;
	} else if (!strncmp(l, "import {", 8)) {
		const char *cl = memchr(l, '}', *le - ls);
		if (!cl) return false;
		s = ls + 8;
		e = (size_t)(cl - f->t);
	} else if (!strncmp(l, "import ", 7) && !strcmp(ast_lang_name(f->lang), "python")) {
		s = ls + 7;
	} else {
		return false;
	}
	for (size_t i = s; i < e; i++)
		if (strchr("(*\\.;", f->t[i]) && !(f->t[i] == ';' && i + 1 == e)) return false;
	/* names, each alone (no `as`) */
	size_t i = s;
	while (i < e && *ni < 16) {
		while (i < e && (f->t[i] == ' ' || f->t[i] == ',')) i++;
		if (i >= e) break;
		size_t we = evne_word_end(f->t, f->n, i);
		if (we == i) return false;
		size_t after = evne_skip_ws(f->t, f->n, we);
		if (after < e && f->t[after] != ',') {
			if (f->t[after] == ';' && after + 1 == e) {
				it[(*ni)++] = (struct item){ i, we };
				break;
			}
			return false;
		}
		it[(*ni)++] = (struct item){ i, we };
		i = after;
	}
	return *ni > 0;
}

void evne_make_imports(const struct file *f, struct ecase *out, size_t *n, size_t cap)
{
	const char *ln = ast_lang_name(f->lang);
	bool py = !strcmp(ln, "python");
	if (!py && strcmp(ln, "javascript") && strcmp(ln, "typescript")) return;
	size_t made = 0;
	for (size_t ls = 0; ls < f->n && *n < cap && made < 4;
	     ls = ast_line_end(f->t, f->n, ls) + 1) {
		struct item it[16];
		size_t ni, le;
		if (!import_line(f, ls, it, &ni, &le)) continue;
		for (size_t k = 0; k < ni && *n < cap && made < 4; k++) {
			const char *w = f->t + it[k].start;
			size_t wl = it[k].end - it[k].start, use = 0;
			if (wl < 2 || count_uses(f, w, wl, ls, le, &use) != 1) continue;
			struct ecase *c = &out[*n];
			if (evne_case_start(c, EK_IMPORT_UNUSED, f, use, use + wl,
			                    py ? "None" : "null"))
				continue;
			if (ni == 1)
				evne_expect(c, ls, le < f->n ? le + 1 : le, "");
			else if (k + 1 < ni)
				evne_expect(c, it[k].start, it[k + 1].start, "");
			else
				evne_expect(c, it[k - 1].end, it[k].end, "");
			(*n)++;
			made++;
		}
	}
}
