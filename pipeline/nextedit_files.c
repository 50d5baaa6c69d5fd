/*
 * nextedit_files.c - a rename's places in the other files of the project
 * (nextedit.h section 3): when the settled edit renamed a name its file
 * defines at the top level, the files that import that name from it are
 * to follow. Which files those are, the caller asks the project index and
 * the open documents; whether one of them really imports the name, and
 * where it uses it, its own import statements say here, read from its
 * tree (ast/imported.c for Python and JavaScript/TypeScript, the outline's
 * #includes for C and C++). The text of each place is the new name: a
 * mechanical edit, checked against the other file's syntax like every
 * edit nextedit_find returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nextedit_internal.h"

#define MAX_EDITS   32
#define MAX_IMPORTS 128
#define MAX_REFS    512

/* The base name of path without its extension, into out[0..cap). */
static void stem_of(const char *path, char *out, size_t cap)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t l = strlen(b);
	const char *dot = strrchr(b, '.');
	if (dot && dot > b) l = (size_t)(dot - b);
	if (l >= cap) l = cap - 1;
	memcpy(out, b, l);
	out[l] = 0;
}

static bool span_is(const char *t, size_t s, size_t e, const char *w)
{
	size_t wl = strlen(w);
	return e - s == wl && !memcmp(t + s, w, wl);
}

/* Whether an import's module names the defining file: its last dotted
 * (Python) or slashed (JS, quotes and extension off) component is stem. */
static bool module_names(enum nextedit_flavour fl, const char *t, struct ast_span m,
                         const char *stem)
{
	size_t s = m.start, e = m.end;
	if (e <= s) return false;
	if (fl == NE_FL_JS) {
		if (e - s < 2) return false;
		s++;
		e--;
		size_t q = e;
		while (q > s && t[q - 1] != '/') q--;
		for (size_t x = q; x < e; x++) /* an extension: ./mod.js */
			if (t[x] == '.' && x > q) {
				e = x;
				break;
			}
		return span_is(t, q, e, stem);
	}
	size_t q = e;
	while (q > s && t[q - 1] != '.') q--;
	return span_is(t, q, e, stem);
}

/* The first word of an import's entry (`old` of `old as o`, `mod` of
 * `mod as m`): [s, e) of the text. */
static void first_word(const char *t, struct ast_span item, size_t *s, size_t *e)
{
	size_t x = item.start;
	while (x < item.end && !ast_is_ident_byte((unsigned char)t[x])) x++;
	*s = x;
	while (x < item.end && ast_is_ident_byte((unsigned char)t[x])) x++;
	*e = x;
}

/* Whether the token at s is a member of something (`x.old`, `p->old`,
 * `ns::old`); *owner gets the start of the word before the operator when
 * it is `word.` (else s). */
static bool is_member(const char *t, size_t s, size_t *owner)
{
	*owner = s;
	size_t x = s;
	while (x > 0 && (t[x - 1] == ' ' || t[x - 1] == '\t')) x--;
	bool dot = x > 0 && t[x - 1] == '.';
	bool arrow = x > 1 &&
	             ((t[x - 1] == '>' && t[x - 2] == '-') || (t[x - 1] == ':' && t[x - 2] == ':'));
	if (dot) {
		size_t w = x - 1;
		while (w > 0 && ast_is_ident_byte((unsigned char)t[w - 1])) w--;
		*owner = w;
	}
	return dot || arrow;
}

struct places {
	struct nextedit_edit *v;
	size_t n, cap;
};

static int place_add(struct places *pl, size_t s, size_t e, const char *text)
{
	for (size_t i = 0; i < pl->n; i++)
		if (pl->v[i].start == s) return 0; /* one token, found twice */
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? pl->cap * 2 : 16;
		struct nextedit_edit *v = realloc(pl->v, cap * sizeof *v);
		if (!v) return -ENOMEM;
		pl->v = v;
		pl->cap = cap;
	}
	size_t tl = strlen(text);
	char *c = malloc(tl + 1);
	if (!c) return -ENOMEM;
	memcpy(c, text, tl + 1);
	pl->v[pl->n++] = (struct nextedit_edit){ NEXTEDIT_RENAME, s, e, c, tl };
	return 0;
}

/* The tokens of old in the file: those that are not members when bare,
 * only `owner.old` when owner is given ([os, oe) of the text). */
static int add_uses(struct places *pl, const struct nextedit_importer *p,
                    const struct ast_span *refs, int n, bool bare, size_t os, size_t oe)
{
	for (int i = 0; i < n; i++) {
		size_t owner;
		bool member = is_member(p->text, refs[i].start, &owner);
		bool ok = bare ? !member
		               : member && owner < refs[i].start &&
		                          refs[i].start - owner == oe - os + 1 &&
		                          !memcmp(p->text + owner, p->text + os, oe - os);
		if (ok && place_add(pl, refs[i].start, refs[i].end, p->new_name)) return -ENOMEM;
	}
	return 0;
}

/* Python and JavaScript: by the names the imports bind. */
static int scripts(struct places *pl, struct ast_doc *doc, const struct nextedit_importer *p,
                   enum nextedit_flavour fl, const char *stem, const struct ast_span *refs, int n)
{
	struct ast_imported *im = malloc(MAX_IMPORTS * sizeof *im);
	if (!im) return -ENOMEM;
	int ni = ast_imported_names(doc, p->text, p->len, im, MAX_IMPORTS);
	int rc = 0;
	for (int i = 0; i < ni && !rc; i++) {
		const struct ast_imported *x = &im[i];
		size_t ws, we;
		first_word(p->text, x->item, &ws, &we);
		if (module_names(fl, p->text, x->module, stem)) {
			/* from mod import old [as o] */
			if (!span_is(p->text, ws, we, p->old_name)) continue;
			if (span_is(p->text, x->name.start, x->name.end, p->old_name))
				rc = add_uses(pl, p, refs, n, true, 0, 0);
			else /* aliased: the file goes on calling it o */
				rc = place_add(pl, ws, we, p->new_name);
		} else if (fl == NE_FL_PY && span_is(p->text, ws, we, stem)) {
			/* import mod [as m], from pkg import mod [as m] */
			rc = add_uses(pl, p, refs, n, false, x->name.start, x->name.end);
		}
	}
	free(im);
	return rc;
}

/* C and C++: a file that includes the defining file's header. */
static int includes(struct places *pl, struct ast_doc *doc, const struct nextedit_importer *p,
                    const char *stem, const struct ast_span *refs, int n)
{
	struct ast_outline ol;
	int rc = ast_outline(p->lang, p->text, p->len, doc, &ol);
	bool in = false;
	for (size_t i = 0; !rc && i < ol.n_imports && !in; i++) {
		if (ol.imports[i].kind != AST_IMPORT_INCLUDE) continue;
		char s[256];
		stem_of(ol.imports[i].spec, s, sizeof s);
		const char *dot = strrchr(ol.imports[i].spec, '.');
		in = !strcmp(s, stem) && dot &&
		     (!strcmp(dot, ".h") || !strcmp(dot, ".hpp") || !strcmp(dot, ".hh"));
	}
	ast_outline_finish(&ol);
	/* mod.c's own header */
	const char *dext = strrchr(p->defining_path, '.');
	const char *ext = p->path ? strrchr(p->path, '.') : NULL;
	char own[256];
	if (!rc && !in && p->path && dext && ext &&
	    (!strcmp(dext, ".c") || !strcmp(dext, ".cpp")) &&
	    (!strcmp(ext, ".h") || !strcmp(ext, ".hpp") || !strcmp(ext, ".hh"))) {
		stem_of(p->path, own, sizeof own);
		in = !strcmp(own, stem);
	}
	if (rc || !in) return rc == -ENOMEM ? rc : 0;
	return add_uses(pl, p, refs, n, true, 0, 0);
}

static void order(struct nextedit_edit *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct nextedit_edit x = v[i];
		size_t j = i;
		while (j > 0 && v[j - 1].start > x.start) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

int nextedit_find_importer(const struct nextedit_importer *p, struct nextedit_result *out)
{
	memset(out, 0, sizeof *out);
	if (!p->text || !p->old_name || !p->new_name || !p->defining_path) return -EINVAL;
	enum nextedit_flavour fl = nextedit_flavour_of(p->lang);
	size_t olen = strlen(p->old_name);
	if (fl == NE_FL_NONE || !olen || !p->new_name[0] || !strcmp(p->old_name, p->new_name))
		return 0;
	char stem[256];
	stem_of(p->defining_path, stem, sizeof stem);
	struct ast_text tx = { p->text, p->len };
	struct ast_doc *doc = ast_doc_new(p->lang, ast_text_read, &tx);
	struct ast_span *refs = malloc(MAX_REFS * sizeof *refs);
	struct places pl = { 0 };
	int rc = doc && refs ? 0 : -ENOMEM;
	if (!rc && ast_doc_parse(doc) == 0) {
		/* at 0 the scope is the file's: every token of the name */
		int n = ast_ident_refs(doc, p->text, p->len, 0, p->old_name, olen, refs, MAX_REFS);
		rc = fl == NE_FL_C ? includes(&pl, doc, p, stem, refs, n)
		                   : scripts(&pl, doc, p, fl, stem, refs, n);
	}
	order(pl.v, pl.n);
	size_t max = p->max_edits ? p->max_edits : MAX_EDITS, k = 0;
	for (size_t i = 0; i < pl.n; i++) {
		struct nextedit_edit *e = &pl.v[i];
		bool keep = !rc && k < max;
		if (keep && p->deadline_ns && nextedit_now_ns() > p->deadline_ns) {
			out->cut = true;
			keep = false;
		}
		if (keep) {
			bool ok = false;
			if (ast_replace_check(doc, p->text, p->len, e->start, e->end, e->text,
			                      e->text_len, &ok))
				ok = false;
			if (!ok) out->dropped_invalid++;
			keep = ok;
		}
		if (keep)
			pl.v[k++] = *e;
		else
			free(e->text);
	}
	ast_doc_delete(doc);
	free(refs);
	if (rc) {
		for (size_t i = 0; i < k; i++) free(pl.v[i].text);
		free(pl.v);
		return rc;
	}
	out->edits = pl.v;
	out->n = k;
	return 0;
}
