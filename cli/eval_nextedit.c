/*
 * eval_nextedit.c - `infill eval --next-edit`: how well next edits
 * (pipeline/nextedit.h) find the places a change implies and write them.
 *
 * Cases are made from real files: a known change is applied at its first
 * site, the finder is asked, and its answer is compared with the places the
 * change implies. Those places are found here by plain text scanning
 * (words outside strings and comments, brackets matched by hand), not by
 * the tree the finder reads, so the two do not share their mistakes.
 *   rename            a name used only inside one function, renamed at its
 *                     first use: its other uses
 *   repeat            an argument put first in a call made on three or more
 *                     lines (`f(a)` -> `f(ctx, a)`): the other calls
 *   signature-rename  a parameter renamed in its definition: its uses in
 *                     the body and keyword arguments at the calls
 *   signature-remove  the last parameter removed: the last argument of each
 *                     call that passes it
 *   signature-add     a parameter added at the end: each call (a place; the
 *                     argument is a model's to write, so no text is expected)
 *   enum-member, call-add, call-remove, import-unused: eval_nextedit_kinds.c
 *   model-rewrite     a parameter and its arguments taken out, the parameter
 *                     put back: each call's argument, written by the model
 *                     (eval_nextedit_model.c; --model, --format)
 *   field-init, import-missing, rename-cross-file: eval_nextedit_files.c
 * Figures per kind: precision and recall of the places (a predicted place
 * matches an expected one on the same line whose bytes it overlaps or
 * touches), exact (of matched places with expected text, the document
 * after the predicted edit equals it after the expected one), breaks
 * (offered edits that give the file more syntax errors than it had: what
 * validation promises never happens) and the finder's wall time p50/p90.
 *
 *   infill eval --next-edit --files FILE... [--json] [--max-per-kind N]
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "cli.h"
#include "nextedit.h"
#include "stats.h"
#include "eval_nextedit.h"

static const char *const ekind_names[EK_COUNT] = {
	"rename",        "repeat",      "signature-rename", "signature-remove",
	"signature-add", "enum-member", "call-add",         "call-remove",
	"import-unused", "field-init",  "import-missing",   "rename-cross-file",
	"model-rewrite"
};

struct tally {
	size_t cases, expected, predicted, matched_pred, matched_exp, with_text, exact, breaks;
	size_t offered;
	double ms[4096];
	size_t n_ms;
};

/* ---- text scanning: what is code ---- */

/* code[i] is true where text[i] is outside strings and comments. Owned. */
static bool *code_mask(const char *t, size_t n, bool hash_comments)
{
	bool *m = calloc(n + 1, 1);
	if (!m) return NULL;
	for (size_t i = 0; i < n;) {
		if (hash_comments && t[i] == '#') {
			while (i < n && t[i] != '\n') i++;
		} else if (!hash_comments && t[i] == '/' && i + 1 < n && t[i + 1] == '/') {
			while (i < n && t[i] != '\n') i++;
		} else if (!hash_comments && t[i] == '/' && i + 1 < n && t[i + 1] == '*') {
			i += 2;
			while (i + 1 < n && !(t[i] == '*' && t[i + 1] == '/')) i++;
			i += 2;
		} else if (t[i] == '"' || t[i] == '\'' || t[i] == '`') {
			char q = t[i];
			bool triple = i + 2 < n && t[i + 1] == q && t[i + 2] == q;
			i += triple ? 3 : 1;
			while (i < n) {
				if (t[i] == '\\') {
					i += 2;
					continue;
				}
				if (triple ? (i + 2 < n && t[i] == q && t[i + 1] == q &&
				              t[i + 2] == q)
				           : (t[i] == q || (t[i] == '\n' && q != '`')))
					break;
				i++;
			}
			i += triple ? 3 : 1;
		} else {
			m[i++] = true;
		}
	}
	return m;
}

bool evne_word_at(const char *t, size_t n, const bool *code, size_t i, const char *w, size_t wl)
{
	if (i + wl > n || memcmp(t + i, w, wl) || !code[i]) return false;
	if (i > 0 && ast_is_ident_byte((unsigned char)t[i - 1])) return false;
	return i + wl == n || !ast_is_ident_byte((unsigned char)t[i + wl]);
}

bool evne_after_member(const char *t, size_t i)
{
	return (i > 0 && t[i - 1] == '.') || (i > 1 && t[i - 1] == '>' && t[i - 2] == '-');
}

size_t evne_skip_ws(const char *t, size_t n, size_t i)
{
	while (i < n && (t[i] == ' ' || t[i] == '\t')) i++;
	return i;
}

size_t evne_word_end(const char *t, size_t n, size_t i)
{
	while (i < n && ast_is_ident_byte((unsigned char)t[i])) i++;
	return i;
}

bool evne_starts_word(const struct file *f, size_t i, const char *w)
{
	return evne_word_at(f->t, f->n, f->code, i, w, strlen(w));
}

/* The bracket matching the one at open (its index), or n. */
size_t evne_match_paren(const char *t, size_t n, const bool *code, size_t open)
{
	int depth = 0;
	for (size_t i = open; i < n; i++) {
		if (!code[i]) continue;
		if (t[i] == '(' || t[i] == '[' || t[i] == '{') depth++;
		if (t[i] == ')' || t[i] == ']' || t[i] == '}')
			if (--depth == 0) return i;
	}
	return n;
}

/* Comma-separated items between brackets [open, close]. */
size_t evne_split_items(const char *t, const bool *code, size_t open, size_t close,
                        struct item *out, size_t cap)
{
	size_t n = 0, s = open + 1;
	int depth = 0;
	for (size_t i = open + 1; i <= close && n < cap; i++) {
		if (code[i] && (t[i] == '(' || t[i] == '[' || t[i] == '{')) depth++;
		if (code[i] && (t[i] == ')' || t[i] == ']' || t[i] == '}') && i < close) depth--;
		if (i == close || (code[i] && depth == 0 && t[i] == ',')) {
			size_t a = s, b = i;
			while (a < b && (t[a] == ' ' || t[a] == '\n' || t[a] == '\t')) a++;
			while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\n' || t[b - 1] == '\t'))
				b--;
			if (b > a) out[n++] = (struct item){ a, b };
			s = i + 1;
		}
	}
	return n;
}

/* ---- making cases ---- */

/* The case with [s, e) of the file replaced by r: the track and the text. */
int evne_case_start(struct ecase *c, enum ekind k, const struct file *f, size_t s, size_t e,
                    const char *r)
{
	memset(c, 0, sizeof *c);
	c->kind = k;
	size_t rl = strlen(r);
	c->len = f->n - (e - s) + rl;
	c->now = malloc(c->len + 1);
	if (!c->now) return -ENOMEM;
	memcpy(c->now, f->t, s);
	memcpy(c->now + s, r, rl);
	memcpy(c->now + s + rl, f->t + e, f->n - e);
	c->now[c->len] = 0;
	return nextedit_track_change(&c->track, s, e, f->t + s, rl);
}

/* An expected place given in the file's offsets before the first edit. */
void evne_expect(struct ecase *c, size_t s, size_t e, const char *text)
{
	if (c->n_exp >= MAX_PLACES) return;
	size_t a = c->track.start, old_end = a + c->track.old_len;
	long d = (long)(c->track.end - a) - (long)c->track.old_len;
	if (s >= old_end) {
		s = (size_t)((long)s + d);
		e = (size_t)((long)e + d);
	}
	struct place *p = &c->exp[c->n_exp++];
	p->start = s;
	p->end = e;
	p->has_text = text != NULL;
	snprintf(p->text, sizeof p->text, "%s", text ? text : "");
}

bool evne_is_keyword(const char *w, size_t l)
{
	static const char *const kw[] = { "if",       "else",   "for",    "while", "return",
		                          "def",      "int",    "char",   "void",  "self",
		                          "None",     "True",   "False",  "const", "let",
		                          "var",      "in",     "is",     "not",   "and",
		                          "or",       "struct", "size_t", "this",  "new",
		                          "function", "class",  "import", "from",  "static",
		                          "unsigned", "long",   "double", NULL };
	for (size_t i = 0; kw[i]; i++)
		if (strlen(kw[i]) == l && !memcmp(kw[i], w, l)) return true;
	return false;
}

static size_t count_word(const struct file *f, size_t s, size_t e, const char *w, size_t wl)
{
	size_t n = 0;
	for (size_t i = s; i < e; i++) n += evne_word_at(f->t, f->n, f->code, i, w, wl);
	return n;
}

/* rename: a name all of whose uses lie in def [ds, de), none a member or a
 * call. */
static void make_renames(const struct file *f, size_t ds, size_t de, struct ecase *out, size_t *n,
                         size_t cap, size_t per_def)
{
	size_t made = 0;
	for (size_t i = ds; i < de && *n < cap && made < per_def; i++) {
		if (!f->code[i] || !ast_is_ident_byte((unsigned char)f->t[i]) ||
		    (i > 0 && ast_is_ident_byte((unsigned char)f->t[i - 1])) ||
		    (f->t[i] >= '0' && f->t[i] <= '9'))
			continue;
		size_t j = i;
		while (j < de && ast_is_ident_byte((unsigned char)f->t[j])) j++;
		const char *w = f->t + i;
		size_t wl = j - i;
		if (wl < 2 || wl > 40 || evne_is_keyword(w, wl)) continue;
		/* the first use in the def only */
		if (count_word(f, ds, i, w, wl)) continue;
		size_t inside = count_word(f, ds, de, w, wl);
		if (inside < 2 || count_word(f, 0, f->n, w, wl) != inside) continue;
		bool plain = true;
		for (size_t k = ds; k < de && plain; k++)
			if (evne_word_at(f->t, f->n, f->code, k, w, wl))
				plain = !evne_after_member(f->t, k) &&
				        f->t[evne_skip_ws(f->t, f->n, k + wl)] != '(';
		if (!plain) continue;
		char nw[64];
		snprintf(nw, sizeof nw, "%.*s_2", (int)wl, w);
		struct ecase *c = &out[*n];
		if (evne_case_start(c, EK_RENAME, f, i, j, nw)) continue;
		for (size_t k = j; k < de; k++)
			if (evne_word_at(f->t, f->n, f->code, k, w, wl))
				evne_expect(c, k, k + wl, nw);
		(*n)++;
		made++;
	}
}

/* A call of name at i (a word followed by `(`): its brackets; false when
 * i is the definition itself. */
bool evne_call_at(const struct file *f, size_t i, const char *w, size_t wl, size_t *open,
                  size_t *close)
{
	if (!evne_word_at(f->t, f->n, f->code, i, w, wl)) return false;
	size_t p = evne_skip_ws(f->t, f->n, i + wl);
	if (p >= f->n || f->t[p] != '(') return false;
	size_t ls = i;
	while (ls > 0 && f->t[ls - 1] != '\n') ls--;
	/* a definition's line starts at column 0 (C, top-level Python/JS) or with
	 * a definition keyword */
	const char *l = f->t + evne_skip_ws(f->t, f->n, ls);
	if (ls == (size_t)(l - f->t) || !strncmp(l, "def ", 4) || !strncmp(l, "function ", 9) ||
	    !strncmp(l, "async ", 6))
		return false;
	*open = p;
	*close = evne_match_paren(f->t, f->n, f->code, p);
	return *close < f->n;
}

static void make_repeats(const struct file *f, struct ecase *out, size_t *n, size_t cap)
{
	size_t made = 0;
	for (size_t i = 0; i < f->n && *n < cap && made < 3; i++) {
		if (!f->code[i] || !ast_is_ident_byte((unsigned char)f->t[i]) ||
		    (i > 0 && ast_is_ident_byte((unsigned char)f->t[i - 1])))
			continue;
		size_t j = i;
		while (j < f->n && ast_is_ident_byte((unsigned char)f->t[j])) j++;
		const char *w = f->t + i;
		size_t wl = j - i, o, cl;
		if (wl < 2 || evne_is_keyword(w, wl) || !evne_call_at(f, i, w, wl, &o, &cl) ||
		    cl == o + 1)
			continue;
		/* the first call of w, with arguments; three or more such calls */
		bool first = true;
		size_t calls = 0;
		for (size_t k = 0; k < f->n; k++) {
			size_t o2, c2;
			if (!evne_call_at(f, k, w, wl, &o2, &c2) || c2 == o2 + 1) continue;
			if (k < i) first = false;
			calls++;
		}
		if (!first || calls < 3) continue;
		struct ecase *c = &out[*n];
		if (evne_case_start(c, EK_REPEAT, f, o + 1, o + 1, "ctx, ")) continue;
		for (size_t k = j; k < f->n; k++) {
			size_t o2, c2;
			if (evne_call_at(f, k, w, wl, &o2, &c2) && c2 > o2 + 1)
				evne_expect(c, o2 + 1, o2 + 1, "ctx, ");
		}
		(*n)++;
		made++;
	}
}

/* The name inside a parameter: [s, e) of it, false when none. */
bool evne_param_name(const struct file *f, const struct item *p, size_t *s, size_t *e)
{
	bool found = false;
	for (size_t i = p->start; i < p->end; i++) {
		if (f->t[i] == '=' || f->t[i] == '[') break;
		if (f->t[i] == ':' && !f->name_last) break;
		if (!ast_is_ident_byte((unsigned char)f->t[i]) ||
		    (i > p->start && ast_is_ident_byte((unsigned char)f->t[i - 1])))
			continue;
		size_t j = i;
		while (j < p->end && ast_is_ident_byte((unsigned char)f->t[j])) j++;
		*s = i;
		*e = j;
		found = true;
		if (!f->name_last) break;
		i = j - 1;
	}
	return found && !evne_is_keyword(f->t + *s, *e - *s);
}

static void make_signatures(const struct file *f, const char *name, size_t ds, size_t de,
                            struct ecase *out, size_t *n, size_t cap)
{
	size_t nl = strlen(name);
	size_t at = ds;
	while (at < de && !evne_word_at(f->t, f->n, f->code, at, name, nl)) at++;
	size_t open = evne_skip_ws(f->t, f->n, at + nl);
	if (at >= de || open >= de || f->t[open] != '(') return;
	size_t close = evne_match_paren(f->t, f->n, f->code, open);
	if (close >= de) return;
	struct item ps[16];
	size_t np = evne_split_items(f->t, f->code, open, close, ps, 16);
	if (np == 0) return;
	bool self =
	        np > 0 && ps[0].end - ps[0].start >= 3 &&
	        (!memcmp(f->t + ps[0].start, "self", 4) || !memcmp(f->t + ps[0].start, "cls", 3));
	for (size_t i = 0; i < np; i++)
		if (memchr(f->t + ps[i].start, '*', ps[i].end - ps[i].start) ||
		    memchr(f->t + ps[i].start, '=', ps[i].end - ps[i].start) ||
		    !memcmp(f->t + ps[i].start, "...", 3))
			return; /* defaults, varargs: calls vary in what they pass */
	/* the calls, each with its arguments */
	struct {
		size_t open, close, n;
		struct item a[16];
		bool method;
	} calls[32];
	size_t nc = 0;
	for (size_t k = 0; k < f->n && nc < 32; k++) {
		if (k >= ds && k < de) continue;
		size_t o, c;
		if (!evne_call_at(f, k, name, nl, &o, &c)) continue;
		calls[nc].open = o;
		calls[nc].close = c;
		calls[nc].method = evne_after_member(f->t, k);
		calls[nc].n = evne_split_items(f->t, f->code, o, c, calls[nc].a, 16);
		nc++;
	}
	if (!nc) return;
	size_t last = np - 1, s, e;
	/* rename the last parameter */
	if (*n < cap && evne_param_name(f, &ps[last], &s, &e) && !(self && last == 0)) {
		char nw[64];
		snprintf(nw, sizeof nw, "%.*s_2", (int)(e - s), f->t + s);
		struct ecase *c = &out[*n];
		if (!evne_case_start(c, EK_SIG_RENAME, f, s, e, nw)) {
			for (size_t k = close; k < de; k++)
				if (evne_word_at(f->t, f->n, f->code, k, f->t + s, e - s) &&
				    !evne_after_member(f->t, k))
					evne_expect(c, k, k + (e - s), nw);
			for (size_t q = 0; q < nc; q++)
				for (size_t a = 0; a < calls[q].n; a++) {
					const struct item *g = &calls[q].a[a];
					size_t eq = g->start;
					while (eq < g->end &&
					       ast_is_ident_byte((unsigned char)f->t[eq]))
						eq++;
					if (eq - g->start == e - s &&
					    !memcmp(f->t + g->start, f->t + s, e - s) &&
					    f->t[evne_skip_ws(f->t, f->n, eq)] == '=' &&
					    f->t[evne_skip_ws(f->t, f->n, eq) + 1] != '=')
						evne_expect(c, g->start, eq, nw);
				}
			if (c->n_exp)
				(*n)++;
			else
				nextedit_track_finish(&c->track), free(c->now);
		}
	}
	/* remove the last parameter */
	if (*n < cap && !(self && np == 1)) {
		struct ecase *c = &out[*n];
		size_t rs = np > 1 ? ps[last - 1].end : ps[last].start;
		if (!evne_case_start(c, EK_SIG_REMOVE, f, rs, ps[last].end, "")) {
			for (size_t q = 0; q < nc; q++) {
				size_t want = np - (self && calls[q].method ? 1 : 0);
				if (calls[q].n != want || want == 0) continue;
				const struct item *a = calls[q].a;
				size_t w = want - 1;
				evne_expect(c, w ? a[w - 1].end : a[w].start, a[w].end, "");
			}
			if (c->n_exp)
				(*n)++;
			else
				nextedit_track_finish(&c->track), free(c->now);
		}
	}
	/* add a parameter at the end */
	if (*n < cap) {
		struct ecase *c = &out[*n];
		const char *add = f->name_last ? ", int extra" : ", extra";
		if (!evne_case_start(c, EK_SIG_ADD, f, ps[last].end, ps[last].end, add)) {
			for (size_t q = 0; q < nc; q++) {
				size_t at2 = calls[q].n ? calls[q].a[calls[q].n - 1].end
				                        : calls[q].open + 1;
				evne_expect(c, at2, at2, NULL);
			}
			(*n)++;
		}
	}
}


/* Whether definition d of o is a function with no definition inside it. */
static bool leaf_function(const struct ast_outline *o, size_t d)
{
	const struct ast_def *df = &o->defs[d];
	for (size_t k = 0; k < o->n_defs; k++)
		if (k != d && o->defs[k].start >= df->start && o->defs[k].end <= df->end)
			return false;
	return strchr(df->sig, '(') != NULL;
}
static size_t make_cases(const struct file *f, struct ecase *out, size_t cap, size_t per_kind)
{
	size_t n = 0;
	struct ast_outline o;
	if (ast_outline(f->lang, f->t, f->n, NULL, &o)) {
		ast_outline_finish(&o);
		return 0;
	}
	size_t renames = 0;
	for (size_t d = 0; d < o.n_defs && n < cap; d++) {
		const struct ast_def *df = &o.defs[d];
		if (!leaf_function(&o, d)) continue;
		size_t before = n;
		if (renames < per_kind) make_renames(f, df->start, df->end, out, &n, cap, 1);
		renames += n - before;
		make_signatures(f, df->name, df->start, df->end, out, &n, cap);
	}

	make_repeats(f, out, &n, cap);
	/* the kinds of eval_nextedit_kinds.c, in room of their own, so that
	 * the cases above stay what they were */
	size_t cap2 = n + MAX_CASES_MORE;
	for (size_t d = 0; d < o.n_defs && n < cap2; d++) {
		const struct ast_def *df = &o.defs[d];
		if (!leaf_function(&o, d)) continue;
		evne_make_calls(f, df->name, df->start, df->end, out, &n, cap2);
	}
	evne_make_enum_members(f, out, &n, cap2);
	evne_make_imports(f, out, &n, cap2);
	/* the model's kind last, in room of its own too */
	size_t cap3 = n + MAX_CASES_MODEL;
	for (size_t d = 0, k = 0; d < o.n_defs && n < cap3 && k < per_kind; d++) {
		if (!leaf_function(&o, d)) continue;
		size_t before = n;
		evne_make_model_rewrites(f, o.defs[d].name, o.defs[d].start, o.defs[d].end, out, &n,
		                         cap3);
		k += n - before;
	}
	ast_outline_finish(&o);
	evne_make_fields(f, out, &n, n + MAX_CASES_FILES);
	return n;
}

/* ---- scoring ---- */

static size_t line_of(const char *t, size_t at)
{
	size_t l = 0;
	for (size_t i = 0; i < at; i++) l += t[i] == '\n';
	return l;
}

static bool places_meet(const char *t, const struct place *e, const struct nextedit_edit *p)
{
	if (line_of(t, e->start) != line_of(t, p->start)) return false;
	return p->start <= e->end + 1 && e->start <= p->end + 1;
}

/* The document with [s, e) replaced by r (new string). */
static char *splice(const char *t, size_t n, size_t s, size_t e, const char *r, size_t rl,
                    size_t *out_len)
{
	char *o = malloc(n - (e - s) + rl + 1);
	if (!o) return NULL;
	memcpy(o, t, s);
	memcpy(o + s, r, rl);
	memcpy(o + s + rl, t + e, n - e);
	*out_len = n - (e - s) + rl;
	o[*out_len] = 0;
	return o;
}

static size_t errors_of(const struct ast_lang *lang, const char *t, size_t n)
{
	struct ast_text tx = { t, n };
	struct ast_doc *d = ast_doc_new(lang, ast_text_read, &tx);
	size_t e = d && !ast_doc_parse(d) ? ast_doc_error_count(d) : 0;
	ast_doc_delete(d);
	return e;
}

/* The model the model-rewrite kind's places are written with (opened at
 * its first case; NULL: none could be, and the places stay without text). */
struct model_use {
	const char *path, *format;
	struct evne_model *em;
	bool tried;
};

/* A rename-cross-file case: the finder's answer in the other file. */
static int find_other(const struct file *f, const struct ecase *c, struct nextedit_result *r)
{
	struct nextedit_importer ip = { .lang = c->other->lang,
		                        .path = c->other->path,
		                        .text = c->other->t,
		                        .len = c->other->n,
		                        .defining_path = f->path,
		                        .old_name = r->renamed_from,
		                        .new_name = r->renamed_to };
	struct nextedit_result o = { 0 };
	int rc = r->renamed_from[0] ? nextedit_find_importer(&ip, &o) : 0;
	nextedit_result_finish(r);
	*r = o;
	return rc;
}

static void score(const struct file *f, struct ecase *c, struct tally *t, bool verbose,
                  struct model_use *mu)
{
	struct nextedit_params p = {
		.lang = f->lang, .text = c->now, .len = c->len, .edit = &c->track
	};
	if (c->all) {
		p.defined_in = evne_defined_in;
		p.defined_in_ud = c;
	}
	struct nextedit_result r;
	if (c->kind == EK_MODEL_REWRITE && mu && !mu->tried) { /* not timed: once */
		mu->em = evne_model_open(mu->path, mu->format);
		mu->tried = true;
	}
	uint64_t t0 = nextedit_now_ns();
	int rc = nextedit_find(&p, &r);
	/* the model's time counts: it is the place's latency */
	if (!rc && c->kind == EK_MODEL_REWRITE && mu) evne_model_write(mu->em, f, c, &r);
	if (!rc && c->other) rc = find_other(f, c, &r);
	double ms = (double)(nextedit_now_ns() - t0) / 1e6;
	if (rc) return;
	/* what is scored: the document, or the other file for a rename that
	 * reaches it (unchanged: its places are in its own offsets) */
	const struct file *g = c->other ? c->other : f;
	const char *now = c->other ? g->t : c->now;
	size_t len = c->other ? g->n : c->len;
	if (t->n_ms < sizeof t->ms / sizeof t->ms[0]) t->ms[t->n_ms++] = ms;
	t->cases++;
	t->expected += c->n_exp;
	t->predicted += r.n;
	bool used[MAX_PLACES] = { 0 };
	size_t before = errors_of(g->lang, now, len);
	for (size_t i = 0; i < r.n; i++) {
		const struct nextedit_edit *pe = &r.edits[i];
		if (pe->text) {
			t->offered++;
			size_t l;
			char *a = splice(now, len, pe->start, pe->end, pe->text, pe->text_len, &l);
			if (a && errors_of(g->lang, a, l) > before) t->breaks++;
			free(a);
		}
		size_t k = 0;
		while (k < c->n_exp && (used[k] || !places_meet(now, &c->exp[k], pe))) k++;
		if (k == c->n_exp) {
			if (verbose)
				fprintf(stderr, "  %s %s: extra place at line %zu\n", g->path,
				        ekind_names[c->kind], line_of(now, pe->start) + 1);
			continue;
		}
		used[k] = true;
		t->matched_pred++;
		const struct place *ex = &c->exp[k];
		if (!ex->has_text) continue;
		t->with_text++;
		if (!pe->text) continue;
		size_t la, lb;
		char *a = splice(now, len, pe->start, pe->end, pe->text, pe->text_len, &la);
		char *b = splice(now, len, ex->start, ex->end, ex->text, strlen(ex->text), &lb);
		if (a && b && la == lb && !memcmp(a, b, la))
			t->exact++;
		else if (verbose)
			fprintf(stderr, "  %s %s: inexact at line %zu: %s for %s\n", g->path,
			        ekind_names[c->kind], line_of(now, pe->start) + 1, pe->text,
			        ex->text);
		free(a);
		free(b);
	}
	for (size_t k = 0; k < c->n_exp; k++) {
		t->matched_exp += used[k];
		if (!used[k] && verbose)
			fprintf(stderr, "  %s %s: missed line %zu\n", g->path, ekind_names[c->kind],
			        line_of(now, c->exp[k].start) + 1);
	}
	nextedit_result_finish(&r);
}

/* ---- the command ---- */

static double ratio(size_t a, size_t b)
{
	return b ? (double)a / (double)b : 0;
}

static json_t *row_json(const char *kind, struct tally *t)
{
	stats_sort(t->ms, t->n_ms);
	json_t *row = json_pack(
	        "{s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:f, s:f}", "mode", "next-edit",
	        "kind", kind, "cases", (json_int_t)t->cases, "places", (json_int_t)t->expected,
	        "predicted", (json_int_t)t->predicted, "offered", (json_int_t)t->offered,
	        "precision", ratio(t->matched_pred, t->predicted), "recall",
	        ratio(t->matched_exp, t->expected), "exact", ratio(t->exact, t->with_text),
	        "breaks", (json_int_t)t->breaks, "p50Ms", stats_percentile(t->ms, t->n_ms, 0.5),
	        "p90Ms", stats_percentile(t->ms, t->n_ms, 0.9));
	/* no place of the kind has a text to be exact about */
	if (row && !t->with_text) json_object_set_new(row, "exact", json_null());
	return row;
}

static void usage(FILE *to)
{
	fprintf(to, "usage: infill eval --next-edit --files FILE... [--max-per-kind N] [--json] "
	            "[--verbose] [--model PATH] [--format fim|zeta]\n"
	            "  cases: a change applied at its first site in each file (rename a local,\n"
	            "  put an argument first in a repeated call, rename/remove/add a parameter,\n"
	            "  append an enum member, add/remove a call's last argument, remove an\n"
	            "  import's one use, append a struct field, use a name another of the files\n"
	            "  defines, rename a top-level name another of the files imports; a parameter\n"
	            "  and its arguments taken out and the parameter put back, the arguments\n"
	            "  written by the model: model-rewrite, with --model PATH (default: the\n"
	            "  embedded model) and --format fim|zeta);\n"
	            "  figures per kind: precision and recall of the places, exact text, breaks,\n"
	            "  the finder's wall time\n");
}

int cli_eval_next_edit(int argc, char **argv)
{
	const char *files[256];
	size_t nf = 0, per_kind = 4;
	bool json = false, verbose = false;
	struct model_use mu = { 0 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--next-edit")) continue;
		if (!strcmp(a, "--json"))
			json = true;
		else if (!strcmp(a, "--verbose"))
			verbose = true;
		else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--model") && i + 1 < argc) {
			mu.path = argv[++i];
		} else if (!strcmp(a, "--format") && i + 1 < argc) {
			mu.format = argv[++i];
			if (strcmp(mu.format, "fim") && strcmp(mu.format, "zeta")) {
				fprintf(stderr,
				        "infill eval --next-edit: --format is fim or zeta, "
				        "not %s\n",
				        mu.format);
				return 2;
			}
		} else if (!strcmp(a, "--max-per-kind") && i + 1 < argc) {
			per_kind = (size_t)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(a, "--files")) {
			while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) && nf < 256)
				files[nf++] = argv[++i];
		} else {
			fprintf(stderr, "infill eval --next-edit: unknown argument %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!nf) {
		fprintf(stderr, "infill eval --next-edit: no --files given\n");
		usage(stderr);
		return 2;
	}
	struct tally *tl = calloc(EK_COUNT + 1, sizeof *tl);
	struct ecase *cases =
	        calloc(64 + MAX_CASES_MORE + MAX_CASES_MODEL + 2 * MAX_CASES_FILES, sizeof *cases);
	/* all files first: the cross-file kinds take them as one project */
	struct file *fs = calloc(nf, sizeof *fs);
	if (!tl || !cases || !fs) {
		free(tl);
		free(cases);
		free(fs);
		fprintf(stderr, "infill eval --next-edit: out of memory\n");
		return 1;
	}
	size_t nfiles = 0;
	for (size_t i = 0; i < nf; i++) {
		struct file f = { .path = files[i], .lang = ast_lang_from_path(files[i]) };
		size_t len;
		char *t = cli_read_file(files[i], &len);
		if (!t) {
			fprintf(stderr, "infill eval --next-edit: cannot read %s\n", files[i]);
			continue;
		}
		if (!f.lang) {
			free(t);
			continue;
		}
		f.t = t;
		f.n = len;
		const char *ln = ast_lang_name(f.lang);
		f.name_last = !strcmp(ln, "c") || !strcmp(ln, "cpp") || !strcmp(ln, "java");
		f.code = code_mask(t, len, !strcmp(ln, "python") || !strcmp(ln, "shellscript"));
		if (!f.code) {
			free(t);
			continue;
		}
		f.ol = calloc(1, sizeof *f.ol);
		if (f.ol && ast_outline(f.lang, f.t, f.n, NULL, f.ol)) {
			ast_outline_finish(f.ol);
			free(f.ol);
			f.ol = NULL;
		}
		fs[nfiles++] = f;
	}
	for (size_t i = 0; i < nfiles; i++) {
		const struct file *f = &fs[i];
		size_t nc = make_cases(f, cases, 64, per_kind);
		evne_make_cross(f, fs, nfiles, cases, &nc, nc + MAX_CASES_FILES);
		size_t per[EK_COUNT] = { 0 };
		for (size_t k = 0; k < nc; k++) {
			if (per[cases[k].kind]++ < per_kind) {
				score(f, &cases[k], &tl[cases[k].kind], verbose, &mu);
				/* the finder alone: "all" stays what it was */
				if (cases[k].kind != EK_MODEL_REWRITE)
					score(f, &cases[k], &tl[EK_COUNT], false, NULL);
			}
			nextedit_track_finish(&cases[k].track);
			free(cases[k].now);
		}
	}
	for (size_t i = 0; i < nfiles; i++) {
		free(fs[i].code);
		free((char *)fs[i].t);
		if (fs[i].ol) ast_outline_finish(fs[i].ol);
		free(fs[i].ol);
	}
	free(fs);
	json_t *rows = json_array();
	FILE *tab = json ? stderr : stdout;
	fprintf(tab,
	        "next edits: %zu files\n\n"
	        "| kind | cases | places | predicted | precision | recall | exact | breaks | "
	        "p50 ms | p90 ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	        nfiles);
	for (int k = 0; k <= EK_COUNT; k++) {
		const char *name = k == EK_COUNT ? "all" : ekind_names[k];
		json_t *row = row_json(name, &tl[k]);
		struct tally *t = &tl[k];
		char exact[16] = "-";
		if (t->with_text)
			snprintf(exact, sizeof exact, "%.1f%%",
			         100 * ratio(t->exact, t->with_text));
		fprintf(tab,
		        "| %s | %zu | %zu | %zu | %.1f%% | %.1f%% | %s | %zu | %.2f | %.2f |\n",
		        name, t->cases, t->expected, t->predicted,
		        100 * ratio(t->matched_pred, t->predicted),
		        100 * ratio(t->matched_exp, t->expected), exact, t->breaks,
		        json_real_value(json_object_get(row, "p50Ms")),
		        json_real_value(json_object_get(row, "p90Ms")));
		json_array_append_new(rows, row);
	}
	if (json) {
		json_t *o = json_pack("{s:b, s:I, s:o}", "nextEdit", 1, "files", (json_int_t)nfiles,
		                      "rows", rows);
		char *s = json_dumps(o, JSON_COMPACT);
		if (s) puts(s);
		free(s);
		json_decref(o);
	} else {
		json_decref(rows);
	}
	evne_model_close(mu.em);
	free(cases);
	free(tl);
	return 0;
}
