/*
 * nextedit_members.c - what an added member implies (nextedit.h, kind
 * "member"): a variant added to an enum -> a new arm in each switch or
 * match that lists all the others; a field added to a struct -> each
 * initialiser that gives all the others (C, Rust) or each construction of
 * a Python class by keyword arguments. The tree's answers come from
 * ast/members.c; nextedit.c ranks and validates what is pushed here.
 *
 * The arm's text is computed only where it is mechanical: when the arms of
 * at least two other variants read alike once their own variant's name is
 * taken out (`case K_A: return "a";`, `case K_B: return "b";` both become
 * `case NEW: return "new";`), the new arm is written in that shape. Where
 * they differ, and for a field's value, the place is found with no text: a
 * model would have to write it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nextedit_internal.h"

#define MAX_SWITCHES 32
#define MAX_INITS    64
#define MAX_CALLS    128
#define ARM_MAX      2048 /* bytes of one arm copied as the shape of a new one */

static bool span_is(const char *t, struct ast_span s, const char *w, size_t wl)
{
	return s.end - s.start == wl && !memcmp(t + s.start, w, wl);
}

static bool is_word_at(const char *t, size_t len, size_t i, const char *w, size_t wl)
{
	if (i + wl > len || memcmp(t + i, w, wl)) return false;
	if (i > 0 && ast_is_ident_byte((unsigned char)t[i - 1])) return false;
	return i + wl == len || !ast_is_ident_byte((unsigned char)t[i + wl]);
}

static bool has_word(const char *t, size_t s, size_t e, const char *w, size_t wl)
{
	for (size_t i = s; i + wl <= e; i++)
		if (is_word_at(t, e, i, w, wl)) return true;
	return false;
}

/* ---- the spellings of a variant's name in its arm ---- */

/* A name and the forms an arm may spell it in: as written, lower case,
 * and the lower-case stem left after the prefix all the enum's variants
 * share (`NEXTEDIT_RENAME` -> `rename`). */
struct spellings {
	char form[3][72];
	size_t len[3];
	size_t n;
};

static void spellings_of(const char *name, size_t nl, size_t prefix, struct spellings *sp)
{
	memset(sp, 0, sizeof *sp);
	if (nl >= sizeof sp->form[0]) return;
	memcpy(sp->form[0], name, nl);
	sp->len[0] = nl;
	sp->n = 1;
	bool upper = false;
	for (size_t i = 0; i < nl; i++) upper |= isupper((unsigned char)name[i]) != 0;
	if (!upper) return;
	for (size_t i = 0; i < nl; i++) sp->form[1][i] = (char)tolower((unsigned char)name[i]);
	sp->len[1] = nl;
	sp->n = 2;
	if (prefix > 0 && prefix < nl) {
		memcpy(sp->form[2], sp->form[1] + prefix, nl - prefix);
		sp->len[2] = nl - prefix;
		sp->n = 3;
	}
}

/* text[0..len) with each spelling of `from` (as a whole word) put as the
 * same spelling of `to`, into out (cap bytes); its length, or 0 when it
 * does not fit. */
static size_t respell(const char *text, size_t len, const struct spellings *from,
                      const struct spellings *to, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		size_t k = from->n;
		for (size_t j = 0; j < from->n && j < to->n; j++)
			if (is_word_at(text, len, i, from->form[j], from->len[j])) {
				k = j;
				break;
			}
		if (k < from->n && k < to->n) {
			if (o + to->len[k] > cap) return 0;
			memcpy(out + o, to->form[k], to->len[k]);
			o += to->len[k];
			i += from->len[k];
		} else {
			if (o + 1 > cap) return 0;
			out[o++] = text[i++];
		}
	}
	return o;
}

/* The bytes all the variants' names share at their start, cut after an
 * underscore (`K_A`, `K_B` -> `K_`): 0 when none. */
static size_t common_prefix(const char *t, const struct ast_members *m)
{
	if (m->n < 2) return 0;
	size_t p = m->names[0].end - m->names[0].start;
	for (size_t i = 1; i < m->n; i++) {
		size_t q = 0, l = m->names[i].end - m->names[i].start;
		while (q < p && q < l && t[m->names[0].start + q] == t[m->names[i].start + q]) q++;
		p = q;
	}
	while (p > 0 && t[m->names[0].start + p - 1] != '_') p--;
	return p;
}

/* ---- enum variant -> switch arms ---- */

static bool blank(const char *t, size_t s, size_t e)
{
	for (size_t i = s; i < e; i++)
		if (t[i] != ' ' && t[i] != '\t' && t[i] != '\r') return false;
	return true;
}

/* What an arm is copied as: its whole lines (line mode: the arm alone on
 * them) or its bytes. */
static void arm_copy_span(const char *t, size_t len, const struct ast_arm *a, bool lines, size_t *s,
                          size_t *e)
{
	if (!lines) {
		*s = a->start;
		*e = a->end;
		return;
	}
	*s = ast_line_start(t, a->start);
	size_t x = a->end;
	while (x < len && t[x] != '\n') x++;
	*e = x < len ? x + 1 : x;
}

/* Whether an arm stands on lines of its own (nothing before it on its
 * first line, nothing after it on its last). */
static bool arm_on_own_lines(const char *t, size_t len, const struct ast_arm *a)
{
	size_t x = a->end;
	while (x < len && t[x] != '\n') x++;
	return blank(t, ast_line_start(t, a->start), a->start) && blank(t, a->end, x) && x < len;
}

/* The index of the old variant an arm's label names alone, or -1. */
static int arm_variant(const struct finder *f, const struct ast_arm *a,
                       const struct ast_members *mo)
{
	if (a->fallback || a->name_end == a->name_start || a->multi) return -1;
	size_t l = a->name_end - a->name_start;
	for (size_t i = 0; i < mo->n; i++)
		if (span_is(f->old, mo->names[i], f->now + a->name_start, l)) return (int)i;
	return -1;
}

/* The arm for the new variant in switch sw of the text now, whose labels
 * list every old variant: pushed after the arm of the variant before it
 * (or before the first listed), its text the shape the single-variant arms
 * share, or none. */
static int switch_arm(struct finder *f, const struct ast_switch *sw, const struct ast_members *mo,
                      const char *nw, size_t nwlen, size_t new_idx, char *buf, char *tmp)
{
	const char *t = f->now;
	/* every old variant named by some label, the new one by none */
	for (size_t i = 0; i < mo->n; i++) {
		const char *w = f->old + mo->names[i].start;
		size_t wl = mo->names[i].end - mo->names[i].start;
		bool listed = false;
		for (size_t k = 0; k < sw->n && !listed; k++)
			listed = has_word(t, sw->arms[k].label_start, sw->arms[k].label_end, w, wl);
		if (!listed) return 0;
	}
	for (size_t k = 0; k < sw->n; k++)
		if (has_word(t, sw->arms[k].label_start, sw->arms[k].label_end, nw, nwlen))
			return 0;
	/* where: after the arm of the nearest variant before the new one */
	size_t after = sw->n, before = sw->n;
	int best = -1;
	for (size_t k = 0; k < sw->n; k++) {
		int v = -1;
		for (size_t i = 0; i < mo->n && v < 0; i++)
			if (has_word(t, sw->arms[k].label_start, sw->arms[k].label_end,
			             f->old + mo->names[i].start,
			             mo->names[i].end - mo->names[i].start))
				v = (int)i;
		if (v < 0) continue;
		if (before == sw->n) before = k;
		/* old index v is the new list's index v, or v + 1 past the new one */
		size_t vi = (size_t)v < new_idx ? (size_t)v : (size_t)v + 1;
		if (vi < new_idx && v >= best) {
			best = v;
			after = k;
		}
	}
	const struct ast_arm *anchor = &sw->arms[after < sw->n ? after : before];
	bool lines = arm_on_own_lines(t, f->len, anchor);
	size_t at;
	if (after < sw->n) {
		size_t s, e;
		arm_copy_span(t, f->len, anchor, lines, &s, &e);
		at = e;
	} else {
		at = lines ? ast_line_start(t, anchor->start) : anchor->start;
	}
	/* the shape: single-variant arms, each respelt for the new name, all
	 * alike */
	size_t prefix = common_prefix(f->old, mo);
	struct spellings to;
	spellings_of(nw, nwlen, prefix <= nwlen ? prefix : 0, &to);
	size_t shape_len = 0, alike = 0;
	bool differ = false;
	for (size_t k = 0; k < sw->n && !differ; k++) {
		const struct ast_arm *a = &sw->arms[k];
		int v = arm_variant(f, a, mo);
		if (v < 0) continue;
		if (lines != arm_on_own_lines(t, f->len, a)) {
			differ = true;
			break;
		}
		size_t s, e;
		arm_copy_span(t, f->len, a, lines, &s, &e);
		if (e - s > ARM_MAX / 2) {
			differ = true;
			break;
		}
		struct spellings from;
		spellings_of(f->old + mo->names[v].start, mo->names[v].end - mo->names[v].start,
		             prefix, &from);
		size_t l = respell(t + s, e - s, &from, &to, alike ? tmp : buf, ARM_MAX);
		if (!l) {
			differ = true;
		} else if (alike && (l != shape_len || memcmp(tmp, buf, l))) {
			differ = true;
		} else {
			shape_len = l;
			alike++;
		}
	}
	if (differ || alike < 2) return nextedit_push(f, NEXTEDIT_MEMBER, at, at, NULL, 0);
	if (!lines) { /* one line of arms: a space between */
		memmove(buf + 1, buf, shape_len);
		buf[0] = ' ';
		shape_len++;
	}
	return nextedit_push(f, NEXTEDIT_MEMBER, at, at, buf, shape_len);
}

static int enum_arms(struct finder *f, const struct ast_members *mo, const char *nw, size_t nwlen,
                     size_t new_idx)
{
	struct ast_switch *sw = malloc(MAX_SWITCHES * sizeof *sw);
	char *buf = malloc(2 * ARM_MAX + 2);
	if (!sw || !buf) {
		free(sw);
		free(buf);
		return -ENOMEM;
	}
	int n = ast_switches(f->dnow, f->now, f->len, sw, MAX_SWITCHES);
	int rc = 0;
	for (int i = 0; i < n && !rc; i++)
		rc = switch_arm(f, &sw[i], mo, nw, nwlen, new_idx, buf, buf + ARM_MAX + 1);
	free(sw);
	free(buf);
	return rc;
}

/* ---- struct field -> initialisers ---- */

static int struct_inits(struct finder *f, const struct ast_members *mo, const char *nw,
                        size_t nwlen, size_t new_idx, const struct ast_members *mn)
{
	if (!mo->type_name[0]) return 0;
	struct ast_init *in = malloc(MAX_INITS * sizeof *in);
	if (!in) return -ENOMEM;
	int n = ast_inits_of(f->dnow, f->now, f->len, mo->type_name, strlen(mo->type_name), in,
	                     MAX_INITS);
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		const struct ast_init *x = &in[i];
		if (x->start >= mn->list_start && x->end <= mn->list_end) continue;
		if (!x->n) continue; /* `{0}`, `{}`: zero for every field */
		size_t at;
		if (x->designated) {
			bool named = false;
			for (size_t k = 0; k < x->n; k++)
				named |= x->items[k].name_end - x->items[k].name_start == nwlen &&
				         !memcmp(f->now + x->items[k].name_start, nw, nwlen);
			if (named) continue;
			at = x->items[x->n - 1].end;
		} else {
			/* positional: only where every old field is given */
			if (x->n != mo->n) continue;
			at = new_idx < x->n ? x->items[new_idx].start : x->items[x->n - 1].end;
		}
		rc = nextedit_push(f, NEXTEDIT_MEMBER, at, at, NULL, 0);
	}
	free(in);
	return rc;
}

/* A Python class's new annotated field -> the constructions that pass the
 * others by keyword or all of them by position. */
static int class_calls(struct finder *f, const struct ast_members *mo, const char *nw, size_t nwlen)
{
	if (!mo->type_name[0]) return 0;
	struct ast_call *calls = malloc(MAX_CALLS * sizeof *calls);
	if (!calls) return -ENOMEM;
	int n = ast_calls_of(f->dnow, f->now, f->len, mo->type_name, strlen(mo->type_name), calls,
	                     MAX_CALLS);
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		const struct ast_call *c = &calls[i];
		if (!c->n_args || c->n_args >= AST_CALL_ARGS) continue;
		size_t kw = 0;
		bool named = false;
		for (size_t k = 0; k < c->n_args; k++) {
			const struct ast_arg *g = &c->args[k];
			if (g->name_end == g->name_start) continue;
			kw++;
			named |= g->name_end - g->name_start == nwlen &&
			         !memcmp(f->now + g->name_start, nw, nwlen);
		}
		/* keywords that all name fields, or every field by position */
		size_t fields = 0;
		for (size_t k = 0; k < c->n_args; k++)
			for (size_t q = 0; q < mo->n; q++)
				fields += c->args[k].name_end > c->args[k].name_start &&
				          span_is(f->old, mo->names[q],
				                  f->now + c->args[k].name_start,
				                  c->args[k].name_end - c->args[k].name_start);
		if (named || (kw ? fields != kw : c->n_args != mo->n)) continue;
		rc = nextedit_push(f, NEXTEDIT_MEMBER, c->args[c->n_args - 1].end,
		                   c->args[c->n_args - 1].end, NULL, 0);
	}
	free(calls);
	return rc;
}

int nextedit_find_member(struct finder *f)
{
	if (!f->dold || !f->dnow) return 0;
	/* the edit's first byte of text now, or where it removed */
	size_t probe = f->a;
	while (probe < f->b && (f->now[probe] == ' ' || f->now[probe] == '\n' ||
	                        f->now[probe] == '\t' || f->now[probe] == ','))
		probe++;
	struct ast_members *m = malloc(2 * sizeof *m);
	if (!m) return -ENOMEM;
	struct ast_members *mn = &m[0], *mo = &m[1];
	int rc = 0;
	if (!ast_members_at(f->dnow, f->now, f->len, probe, mn) || mn->list_start >= f->a ||
	    !ast_members_at(f->dold, f->old, f->old_len, mn->list_start, mo) ||
	    mo->is_enum != mn->is_enum || strcmp(mo->type_name, mn->type_name) ||
	    mn->n != mo->n + 1 || mn->n >= AST_MEMBERS || mo->n < 1)
		goto out;
	/* the one name now that was not there before */
	size_t new_idx = mn->n;
	for (size_t i = 0; i < mn->n; i++) {
		const char *w = f->now + mn->names[i].start;
		size_t wl = mn->names[i].end - mn->names[i].start;
		bool was = false;
		for (size_t k = 0; k < mo->n && !was; k++)
			was = span_is(f->old, mo->names[k], w, wl);
		if (was) continue;
		if (new_idx != mn->n) goto out; /* two new names: not one added */
		new_idx = i;
	}
	if (new_idx == mn->n) goto out;
	const char *nw = f->now + mn->names[new_idx].start;
	size_t nwlen = mn->names[new_idx].end - mn->names[new_idx].start;
	/* the new member lies in the edit: it is what was added */
	if (mn->names[new_idx].start < f->a || mn->names[new_idx].end > f->b) goto out;
	rc = 1;
	int r;
	if (mn->is_enum)
		r = mo->n >= 2 ? enum_arms(f, mo, nw, nwlen, new_idx) : 0;
	else if (!strcmp(ast_lang_name(f->p->lang), "python"))
		r = class_calls(f, mo, nw, nwlen);
	else
		r = struct_inits(f, mo, nw, nwlen, new_idx, mn);
	if (r < 0) rc = r;
out:
	free(m);
	return rc;
}
