/*
 * nextedit_imports.c - the import lines an edit leaves wanting (nextedit.h,
 * kind "import"), in Python, JavaScript and TypeScript:
 *   - unused: the edit removed the last use of a name an import binds ->
 *     the name comes out of its import (the whole line when it was the
 *     statement's only name);
 *   - missing: the edit introduced a name the file neither defines nor
 *     imports, and the project (the caller's defined_in) knows the one file
 *     that defines it -> the name goes into the file's import from that
 *     module, or a new import line after the others.
 * Both texts are mechanical. The tree's answers come from ast/imported.c
 * and ast/refs.c; nextedit.c ranks and validates what is pushed here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nextedit_internal.h"

#define MAX_IMPORTS 128
#define MAX_IDS     64
#define MAX_USES    8

static size_t next_line(const char *t, size_t len, size_t at)
{
	while (at < len && t[at] != '\n') at++;
	return at < len ? at + 1 : at;
}

static bool span_eq(const char *ta, struct ast_span a, const char *tb, struct ast_span b)
{
	return a.end - a.start == b.end - b.start &&
	       !memcmp(ta + a.start, tb + b.start, a.end - a.start);
}

/* Identifier tokens spelling name in the whole file (text, doc) outside
 * [skip_s, skip_e): 0, 1, or more (capped). */
static int uses_outside(struct ast_doc *doc, const char *text, size_t len, const char *name,
                        size_t nlen, size_t skip_s, size_t skip_e, struct ast_span *buf)
{
	/* at 0 the scope is the file's */
	int n = ast_ident_refs(doc, text, len, 0, name, nlen, buf, MAX_USES * 4);
	int k = 0;
	for (int i = 0; i < n; i++)
		if (buf[i].end <= skip_s || buf[i].start >= skip_e) k++;
	return k;
}

/* ---- unused ---- */

static int remove_unused(struct finder *f, const struct ast_imported *im, size_t n_im,
                         struct ast_span *ids, struct ast_span *buf)
{
	if (!f->olen) return 0;
	int nid = ast_idents_in(f->dold, f->a, f->a + f->olen, ids, MAX_IDS);
	for (int i = 0; i < nid; i++) {
		const char *w = f->old + ids[i].start;
		size_t wl = ids[i].end - ids[i].start;
		bool dup = false;
		for (int k = 0; k < i && !dup; k++) dup = span_eq(f->old, ids[k], f->old, ids[i]);
		if (dup) continue;
		for (size_t m = 0; m < n_im; m++) {
			const struct ast_imported *x = &im[m];
			if (x->name.end - x->name.start != wl ||
			    memcmp(f->now + x->name.start, w, wl))
				continue;
			/* the import is outside the edit, and nothing else uses it now */
			if (x->stmt.start < f->b && f->a < x->stmt.end) continue;
			if (uses_outside(f->dnow, f->now, f->len, w, wl, x->stmt.start, x->stmt.end,
			                 buf))
				continue;
			size_t s, e;
			if (x->in_stmt == 1) {
				s = ast_line_start(f->now, x->stmt.start);
				e = next_line(f->now, f->len, x->stmt.end);
			} else {
				/* with one comma: towards the next entry of its statement,
				 * else from the one before */
				const struct ast_imported *nx = m + 1 < n_im ? &im[m + 1] : NULL;
				const struct ast_imported *pv = m > 0 ? &im[m - 1] : NULL;
				if (nx && nx->stmt.start == x->stmt.start) {
					s = x->item.start;
					e = nx->item.start;
				} else if (pv && pv->stmt.start == x->stmt.start) {
					s = pv->item.end;
					e = x->item.end;
				} else {
					continue;
				}
				/* only commas and spaces between: no bracket of a list */
				bool plain = true;
				size_t gs = s == x->item.start ? x->item.end : s;
				size_t ge = s == x->item.start ? e : x->item.start;
				for (size_t q = gs; q < ge && plain; q++)
					plain = strchr(", \t\n\r", f->now[q]) != NULL;
				if (!plain) continue;
			}
			if (nextedit_push(f, NEXTEDIT_IMPORT, s, e, "", 0)) return -ENOMEM;
		}
	}
	return 0;
}

/* ---- missing ---- */

/* The module a file at rel (relative to the document's folder) is imported
 * as: "pkg.mod" (Python), "./lib/util" (JS). False when it cannot be. */
static bool module_spec(enum nextedit_flavour fl, const char *rel, char *out, size_t cap)
{
	size_t l = strlen(rel);
	const char *dot = strrchr(rel, '.');
	const char *slash = strrchr(rel, '/');
	if (!dot || (slash && dot < slash) || l + 3 >= cap) return false;
	size_t base = (size_t)(dot - rel);
	if (fl == NE_FL_PY) {
		if (strcmp(dot, ".py") || !strncmp(rel, "../", 3) || rel[0] == '/') return false;
		if (base >= 9 && !strncmp(rel + base - 9, "/__init__", 9)) base -= 9;
		for (size_t i = 0; i < base; i++) {
			out[i] = rel[i] == '/' ? '.' : rel[i];
			if (rel[i] == '.' || rel[i] == '-') return false;
		}
		out[base] = 0;
		return base > 0;
	}
	size_t o = 0;
	if (strncmp(rel, "../", 3) && strncmp(rel, "./", 2)) out[o++] = '.', out[o++] = '/';
	memcpy(out + o, rel, base);
	out[o + base] = 0;
	return true;
}

/* Past a Python file's leading comments and docstring. */
static size_t after_preamble(const char *t, size_t len)
{
	size_t at = 0;
	while (at < len && t[at] == '#') at = next_line(t, len, at);
	for (int q = 0; q < 2; q++) {
		const char *tq = q ? "\'\'\'" : "\"\"\"";
		if (len - at >= 3 && !memcmp(t + at, tq, 3)) {
			const char *end = NULL;
			for (size_t i = at + 3; i + 3 <= len && !end; i++)
				if (!memcmp(t + i, tq, 3)) end = t + i;
			if (!end) return at;
			return next_line(t, len, (size_t)(end - t) + 3);
		}
	}
	return at;
}

/* Whether an import's module (as the file spells it) is spec. */
static bool module_is(enum nextedit_flavour fl, const char *t, struct ast_span m, const char *spec)
{
	size_t s = m.start, e = m.end, sl = strlen(spec);
	if (fl == NE_FL_JS && e - s >= 2) { /* the quotes; an extension may follow */
		s++;
		e--;
		if (e - s > sl && t[s + sl] == '.' && !memchr(t + s + sl, '/', e - s - sl))
			e = s + sl;
	}
	return e - s == sl && !memcmp(t + s, spec, sl);
}

static int add_missing(struct finder *f, enum nextedit_flavour fl, const struct ast_imported *im,
                       size_t n_im, struct ast_span *ids, struct ast_span *buf)
{
	const struct nextedit_params *p = f->p;
	if (!p->defined_in || f->b == f->a) return 0;
	int nid = ast_idents_in(f->dnow, f->a, f->b, ids, MAX_IDS);
	for (int i = 0; i < nid; i++) {
		const char *w = f->now + ids[i].start;
		size_t wl = ids[i].end - ids[i].start;
		if (wl >= 64) continue;
		bool dup = false;
		for (int k = 0; k < i && !dup; k++) dup = span_eq(f->now, ids[k], f->now, ids[i]);
		if (dup) continue;
		/* new to the file: no token of it before the edit, none now but in it */
		if (uses_outside(f->dold, f->old, f->old_len, w, wl, 0, 0, buf) ||
		    uses_outside(f->dnow, f->now, f->len, w, wl, f->a, f->b, buf))
			continue;
		char name[64], rel[256], spec[256];
		memcpy(name, w, wl);
		name[wl] = 0;
		if (!p->defined_in(p->defined_in_ud, name, rel, sizeof rel) ||
		    !module_spec(fl, rel, spec, sizeof spec))
			continue;
		/* an import from that module already: the name joins it */
		const struct ast_imported *last = NULL, *from = NULL;
		for (size_t m = 0; m < n_im; m++) {
			last = &im[m];
			if (im[m].module.end > im[m].module.start &&
			    module_is(fl, f->now, im[m].module, spec))
				from = &im[m];
		}
		char text[400];
		int tl;
		size_t at;
		if (from) {
			/* after its last name, where a list goes on (`{ a }`, `a, b`) */
			at = from->item.end;
			size_t q = at;
			while (q < f->len && (f->now[q] == ' ' || f->now[q] == '\t')) q++;
			if (fl == NE_FL_JS && f->now[q] != ',' && f->now[q] != '}') continue;
			tl = snprintf(text, sizeof text, ", %s", name);
		} else {
			at = last ? next_line(f->now, f->len, last->stmt.end) : 0;
			if (fl == NE_FL_PY) {
				tl = snprintf(text, sizeof text, "from %s import %s\n", spec, name);
			} else {
				char q = last && last->module.end > last->module.start
				                 ? f->now[last->module.start]
				                 : '"';
				bool semi = last && f->now[last->stmt.end - 1] == ';';
				tl = snprintf(text, sizeof text, "import { %s } from %c%s%c%s\n",
				              name, q, spec, q, semi || !last ? ";" : "");
			}
			/* a Python file's docstring and a script's #! line stay first */
			if (!last && fl == NE_FL_PY) at = after_preamble(f->now, f->len);
		}
		if (tl <= 0 || (size_t)tl >= sizeof text) continue;
		if (nextedit_push(f, NEXTEDIT_IMPORT, at, at, text, (size_t)tl)) return -ENOMEM;
	}
	return 0;
}

int nextedit_find_import(struct finder *f)
{
	if (!f->dold || !f->dnow) return 0;
	enum nextedit_flavour fl = nextedit_flavour_of(f->p->lang);
	if (fl != NE_FL_PY && fl != NE_FL_JS) return 0;
	struct ast_imported *im = malloc(MAX_IMPORTS * sizeof *im);
	struct ast_span *ids = malloc((MAX_IDS + MAX_USES * 4) * sizeof *ids);
	if (!im || !ids) {
		free(im);
		free(ids);
		return -ENOMEM;
	}
	int n_im = ast_imported_names(f->dnow, f->now, f->len, im, MAX_IMPORTS);
	int rc = remove_unused(f, im, (size_t)n_im, ids, ids + MAX_IDS);
	if (!rc) rc = add_missing(f, fl, im, (size_t)n_im, ids, ids + MAX_IDS);
	free(im);
	free(ids);
	return rc;
}
