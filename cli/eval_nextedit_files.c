/*
 * eval_nextedit_files.c - the cases of `infill eval --next-edit` for a
 * struct's added field and for the kinds that need more than one file
 * (eval_nextedit.c scores and prints them):
 *   field-init         a field appended to a C struct (`struct s { ... };`)
 *                      or a Python @dataclass: each initialiser that gives
 *                      every old field (C positional, one brace list per
 *                      element of an array) or names some and not the new
 *                      one (C designated), each construction that passes
 *                      every field by position or names only fields by
 *                      keyword (Python), is a place after its last entry;
 *                      no text is expected (the value is a model's to write)
 *   import-missing     in a Python or JS/TS file, before the first `return
 *                      EXPR`, a line calling with EXPR a function that one
 *                      other file of --files defines and this one never
 *                      mentions:
 *                      the name joins the file's import from that module
 *                      (`, name`), or a new import line follows the last
 *   rename-cross-file  a top-level function or class renamed at its
 *                      definition in one file: in each other file of
 *                      --files that imports it (`from mod import name`,
 *                      `import mod` + `mod.name`, `import { name } from
 *                      './mod'`, C `#include "mod.h"`; for mod.c, mod.h
 *                      itself), its uses there (an alias's import entry
 *                      alone); the places scored
 *                      are the other file's only
 * The files of --files are one project: a name's module is its file's base
 * name, imports resolve within the set. As in the other case makers, the
 * expected places come from scanning the text, not from the tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_nextedit.h"

#define MAX_STRUCT_FIELDS 16
#define MAX_INIT_ITEMS    16

static void stem_of(const char *path, char *out, size_t cap)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	snprintf(out, cap, "%s", b);
	char *dot = strrchr(out, '.');
	if (dot && dot > out) *dot = 0;
}

static bool is_lang(const struct file *f, const char *a, const char *b)
{
	const char *ln = ast_lang_name(f->lang);
	return !strcmp(ln, a) || (b && !strcmp(ln, b));
}

static bool is_script(const struct file *f)
{
	return is_lang(f, "javascript", "typescript") || is_lang(f, "python", NULL);
}

/* ---- field-init ---- */

/* Each brace list of struct name s after its declarations' `= {` (and
 * the elements of an array of it), or a compound literal `(struct s){`:
 * expected places for a field appended as the n-th, whose name is nw. */
static void c_inits(const struct file *f, struct ecase *c, const char *s, size_t sl,
                    size_t body_start, size_t body_end, size_t nfields, const char *nw)
{
	for (size_t i = 0; i < f->n; i++) {
		if (i >= body_start && i < body_end) continue;
		if (!evne_starts_word(f, i, "struct")) continue;
		size_t j = evne_skip_ws(f->t, f->n, i + 6);
		if (!evne_word_at(f->t, f->n, f->code, j, s, sl)) continue;
		j = evne_skip_ws(f->t, f->n, j + sl);
		size_t open = f->n;
		bool array = false;
		if (f->t[j] == ')' && i > 0 && f->t[i - 1] == '(') { /* (struct s){ */
			j = evne_skip_ws(f->t, f->n, j + 1);
			if (f->t[j] == '{') open = j;
		} else if (ast_is_ident_byte((unsigned char)f->t[j])) {
			j = evne_skip_ws(f->t, f->n, evne_word_end(f->t, f->n, j));
			if (f->t[j] == '[') {
				array = true;
				while (j < f->n && f->t[j] != ']') j++;
				j = evne_skip_ws(f->t, f->n, j + 1);
			}
			if (f->t[j] == '=') {
				j = evne_skip_ws(f->t, f->n, j + 1);
				if (f->t[j] == '{') open = j;
			}
		}
		if (open >= f->n) continue;
		size_t close = evne_match_paren(f->t, f->n, f->code, open);
		if (close >= f->n) continue;
		struct item lists[MAX_INIT_ITEMS];
		size_t nl = 0;
		if (array) {
			struct item el[MAX_INIT_ITEMS];
			size_t ne =
			        evne_split_items(f->t, f->code, open, close, el, MAX_INIT_ITEMS);
			for (size_t k = 0; k < ne; k++)
				if (f->t[el[k].start] == '{') lists[nl++] = el[k];
		} else {
			lists[nl++] = (struct item){ open, close + 1 };
		}
		for (size_t k = 0; k < nl; k++) {
			struct item it[MAX_INIT_ITEMS];
			size_t o = lists[k].start, cl = lists[k].end - 1;
			size_t ni = evne_split_items(f->t, f->code, o, cl, it, MAX_INIT_ITEMS);
			if (!ni || (ni == 1 && f->t[it[0].start] == '0')) continue;
			bool designated = f->t[it[0].start] == '.';
			bool names_new = false;
			for (size_t q = 0; q < ni; q++)
				names_new |= f->t[it[q].start] == '.' &&
				             evne_word_at(f->t, f->n, f->code, it[q].start + 1, nw,
				                          strlen(nw));
			if ((designated && !names_new) || (!designated && ni == nfields))
				evne_expect(c, it[ni - 1].end, it[ni - 1].end, NULL);
		}
	}
}

static void c_fields(const struct file *f, struct ecase *out, size_t *n, size_t cap)
{
	for (size_t i = 0; i < f->n && *n < cap; i++) {
		if (i != ast_line_start(f->t, i) || !evne_starts_word(f, i, "struct")) continue;
		size_t ns = evne_skip_ws(f->t, f->n, i + 6), ne = evne_word_end(f->t, f->n, ns);
		size_t open = evne_skip_ws(f->t, f->n, ne);
		if (ne == ns || f->t[open] != '{') continue;
		size_t close = evne_match_paren(f->t, f->n, f->code, open);
		if (close >= f->n || f->t[evne_skip_ws(f->t, f->n, close + 1)] != ';') continue;
		/* plain fields: `type name;`, one a line */
		size_t nf = 0, last_semi = 0, last_ls = 0, name_s = 0, name_e = 0;
		bool plain = true;
		for (size_t k = open + 1; k < close && plain; k++) {
			if (strchr("(,:[{", f->t[k]) && f->code[k]) plain = false;
			if (f->t[k] != ';' || !f->code[k]) continue;
			nf++;
			last_semi = k;
			last_ls = ast_line_start(f->t, k);
			name_e = k;
			name_s = k;
			while (name_s > last_ls &&
			       ast_is_ident_byte((unsigned char)f->t[name_s - 1]))
				name_s--;
		}
		if (!plain || nf < 1 || nf > MAX_STRUCT_FIELDS || name_e == name_s) continue;
		char nw[64], ins[160];
		snprintf(nw, sizeof nw, "%.*s_2", (int)(name_e - name_s), f->t + name_s);
		size_t ind = last_ls;
		while (f->t[ind] == ' ' || f->t[ind] == '\t') ind++;
		snprintf(ins, sizeof ins, "\n%.*sint %s;", (int)(ind - last_ls), f->t + last_ls,
		         nw);
		struct ecase *c = &out[*n];
		if (evne_case_start(c, EK_FIELD_INIT, f, last_semi + 1, last_semi + 1, ins))
			continue;
		c_inits(f, c, f->t + ns, ne - ns, open, close, nf, nw);
		if (c->n_exp) {
			(*n)++;
		} else {
			nextedit_track_finish(&c->track);
			free(c->now);
		}
		i = close;
	}
}

/* A @dataclass's annotated fields, none with a default: a field appended;
 * the constructions that give all fields by position or only fields by
 * keyword are places. */
static void py_fields(const struct file *f, struct ecase *out, size_t *n, size_t cap)
{
	for (size_t i = 0; i < f->n && *n < cap; i++) {
		if (i != ast_line_start(f->t, i) || strncmp(f->t + i, "@dataclass\n", 11)) continue;
		size_t cl = i + 11;
		if (strncmp(f->t + cl, "class ", 6)) continue;
		size_t ns = cl + 6, ne = evne_word_end(f->t, f->n, ns);
		size_t le = ast_line_end(f->t, f->n, cl);
		if (ne == ns || f->t[le - 1] != ':') continue;
		char fields[MAX_STRUCT_FIELDS][64];
		size_t nf = 0, after = le + 1, ind = 0;
		bool plain = true;
		for (size_t ls = le + 1; ls < f->n; ls = ast_line_end(f->t, f->n, ls) + 1) {
			size_t x = ls;
			while (x < f->n && f->t[x] == ' ') x++;
			if (x == ls || f->t[x] == '\n') break; /* the body's end, or a blank line */
			size_t we = evne_word_end(f->t, f->n, x), e = ast_line_end(f->t, f->n, ls);
			if (we == x || f->t[we] != ':' || memchr(f->t + x, '=', e - x) ||
			    nf == MAX_STRUCT_FIELDS) {
				plain = false;
				break;
			}
			snprintf(fields[nf++], 64, "%.*s", (int)(we - x), f->t + x);
			after = e + 1;
			ind = x - ls;
		}
		if (!plain || !nf) continue;
		char nw[80], ins[128];
		snprintf(nw, sizeof nw, "%s_2", fields[nf - 1]);
		snprintf(ins, sizeof ins, "%*s%s: int\n", (int)ind, "", nw);
		struct ecase *c = &out[*n];
		if (evne_case_start(c, EK_FIELD_INIT, f, after, after, ins)) continue;
		for (size_t k = 0; k < f->n; k++) {
			size_t o, cp;
			if (!evne_call_at(f, k, f->t + ns, ne - ns, &o, &cp) || cp == o + 1)
				continue;
			struct item a[MAX_INIT_ITEMS];
			size_t na = evne_split_items(f->t, f->code, o, cp, a, MAX_INIT_ITEMS);
			size_t kw = 0, named_fields = 0;
			for (size_t q = 0; q < na; q++) {
				size_t we = evne_word_end(f->t, f->n, a[q].start);
				size_t eq = evne_skip_ws(f->t, f->n, we);
				if (we == a[q].start || f->t[eq] != '=' || f->t[eq + 1] == '=')
					continue;
				kw++;
				for (size_t r = 0; r < nf; r++)
					named_fields += strlen(fields[r]) == we - a[q].start &&
					                !memcmp(fields[r], f->t + a[q].start,
					                        we - a[q].start);
			}
			if (kw ? kw == named_fields && kw == na : na == nf)
				evne_expect(c, a[na - 1].end, a[na - 1].end, NULL);
		}
		if (c->n_exp) {
			(*n)++;
		} else {
			nextedit_track_finish(&c->track);
			free(c->now);
		}
	}
}

void evne_make_fields(const struct file *f, struct ecase *out, size_t *n, size_t cap)
{
	if (is_lang(f, "c", "cpp")) c_fields(f, out, n, cap);
	if (is_lang(f, "python", NULL)) py_fields(f, out, n, cap);
}

/* ---- the project: the other files of --files ---- */

/* Whether name is a top-level definition of file g (its outline, a
 * definition no other one holds). */
static bool defines(const struct file *g, const char *name)
{
	const struct ast_outline *o = g->ol;
	bool yes = false;
	for (size_t d = 0; o && d < o->n_defs && !yes; d++) {
		if (strcmp(o->defs[d].name, name)) continue;
		bool nested = false;
		for (size_t k = 0; k < o->n_defs && !nested; k++)
			nested = k != d && o->defs[k].start <= o->defs[d].start &&
			         o->defs[d].end <= o->defs[k].end;
		yes = !nested;
	}
	return yes;
}

bool evne_defined_in(void *ud, const char *name, char *buf, size_t cap)
{
	const struct ecase *c = ud;
	const struct file *hit = NULL;
	size_t hits = 0;
	for (size_t i = 0; i < c->n_all; i++) {
		const struct file *g = &c->all[i];
		if (g == c->self || !ast_lang_kin(g->lang, c->self->lang) || !defines(g, name))
			continue;
		hit = g;
		hits++;
	}
	if (hits != 1) return false;
	const char *b = strrchr(hit->path, '/');
	snprintf(buf, cap, "%s", b ? b + 1 : hit->path);
	return true;
}

/* ---- import-missing ---- */

/* The place and text a name defined in module stem takes among b's
 * imports: `, name` after the last of an import from stem, else a new
 * line after the last import. False when b has no plain imports. */
static bool import_place(const struct file *b, const char *stem, const char *name, size_t *at,
                         char *text, size_t cap)
{
	bool py = is_lang(b, "python", NULL);
	size_t last_end = b->n, sl = strlen(stem);
	char quote = '"';
	bool semi = false;
	for (size_t ls = 0; ls < b->n; ls = ast_line_end(b->t, b->n, ls) + 1) {
		size_t le = ast_line_end(b->t, b->n, ls);
		const char *l = b->t + ls;
		bool imp = py ? !strncmp(l, "from ", 5) || !strncmp(l, "import ", 7)
		              : !strncmp(l, "import ", 7);
		if (!imp || !b->code[ls]) continue; /* not in a string */
		if (memchr(l, '(', le - ls)) return false;
		last_end = le;
		if (py && !strncmp(l, "from ", 5) && !strncmp(l + 5, stem, sl) &&
		    l[5 + sl] == ' ') {
			*at = le;
			while (*at > ls && b->t[*at - 1] == ' ') (*at)--;
			snprintf(text, cap, ", %s", name);
			return true;
		}
		if (!py) {
			const char *from = strstr(l, " from ");
			if (!from || from > b->t + le) continue;
			const char *q = from + 6;
			quote = *q;
			semi = b->t[le - 1] == ';';
			const char *qe = memchr(q + 1, quote, (size_t)(b->t + le - q - 1));
			char spec[256];
			if (!qe) continue;
			snprintf(spec, sizeof spec, "./%s", stem);
			const char *cb = memchr(l, '}', le - ls);
			if ((size_t)(qe - q - 1) == strlen(spec) &&
			    !memcmp(q + 1, spec, strlen(spec)) && cb) {
				*at = (size_t)(cb - b->t);
				while (b->t[*at - 1] == ' ') (*at)--;
				snprintf(text, cap, ", %s", name);
				return true;
			}
		}
	}
	if (last_end >= b->n) return false;
	*at = last_end + 1;
	if (py)
		snprintf(text, cap, "from %s import %s\n", stem, name);
	else
		snprintf(text, cap, "import { %s } from %c./%s%c%s\n", name, quote, stem, quote,
		         semi ? ";" : "");
	return true;
}

static void make_import_missing(const struct file *f, const struct file *all, size_t n_all,
                                struct ecase *out, size_t *n, size_t cap)
{
	if (!is_script(f)) return;
	/* the site: the first `return EXPR` of a line of its own; the call
	 * goes on a line of its own before it (a change within a line would
	 * be repeated where the same text stands: the repeat kind's guess) */
	size_t xs = 0, xe = 0, rl = 0, ri = 0;
	bool semi = false;
	for (size_t ls = 0; ls < f->n && !xe; ls = ast_line_end(f->t, f->n, ls) + 1) {
		size_t x = evne_skip_ws(f->t, f->n, ls), le = ast_line_end(f->t, f->n, ls);
		if (x == ls || !evne_starts_word(f, x, "return")) continue;
		/* an expression whole on its line */
		int depth = 0;
		for (size_t k = x; k < le; k++)
			if (f->code[k])
				depth += !!strchr("([{", f->t[k]) - !!strchr(")]}", f->t[k]);
		if (depth || f->t[le - 1] == '\\' || f->t[le - 1] == ',') continue;
		rl = ls;
		ri = x;
		semi = f->t[le - 1] == ';';
		xs = evne_skip_ws(f->t, f->n, x + 6);
		xe = le;
		if (xe > xs && f->t[xe - 1] == ';') xe--;
		if (xe <= xs || f->t[xe - 1] == ':' || f->t[xe - 1] == '{') xe = 0;
	}
	if (!xe) return;
	size_t made = 0;
	for (size_t i = 0; i < n_all && *n < cap && made < 4; i++) {
		const struct file *g = &all[i];
		if (g == f || !ast_lang_kin(g->lang, f->lang) || !g->ol) continue;
		char stem[128], probe_text[300];
		size_t probe_at;
		stem_of(g->path, stem, sizeof stem);
		/* imports the scan can place a name among, or none of g's */
		if (!import_place(f, stem, "x", &probe_at, probe_text, sizeof probe_text)) continue;
		for (size_t d = 0; d < g->ol->n_defs && *n < cap && made < 4; d++) {
			const char *nm = g->ol->defs[d].name;
			size_t nl = strlen(nm);
			bool seen = nl < 2 || nl > 40;
			for (const char *q = f->t; !seen && (q = strstr(q, nm)); q++)
				seen = evne_word_at(f->t, f->n, f->code, (size_t)(q - f->t), nm,
				                    nl);
			struct ecase probe = { .self = f, .all = all, .n_all = n_all };
			char rel[256], text[300], wrapped[600];
			size_t at;
			if (seen || !evne_defined_in(&probe, nm, rel, sizeof rel) ||
			    !import_place(f, stem, nm, &at, text, sizeof text) ||
			    snprintf(wrapped, sizeof wrapped, "%.*s%s(%.*s)%s\n", (int)(ri - rl),
			             f->t + rl, nm, (int)(xe - xs), f->t + xs,
			             semi ? ";" : "") >= (int)sizeof wrapped)
				continue;
			struct ecase *c = &out[*n];
			if (evne_case_start(c, EK_IMPORT_MISSING, f, rl, rl, wrapped)) continue;
			c->self = f;
			c->all = all;
			c->n_all = n_all;
			evne_expect(c, at, at, text);
			(*n)++;
			made++;
		}
	}
}

/* ---- rename-cross-file ---- */

/* The places in b of a rename of name (defined in the file of stem) to
 * nw, as b's own imports bind it; none when b does not import it. */
static void importer_places(const struct file *b, const char *stem, bool header_ok, bool own_header,
                            const char *name, const char *nw, struct ecase *c)
{
	size_t nl = strlen(name), sl = strlen(stem);
	bool bare = own_header; /* every use of the name in the file */
	char alias[64] = "";
	size_t entry = b->n; /* an aliased entry: only it */
	for (size_t ls = 0; ls < b->n; ls = ast_line_end(b->t, b->n, ls) + 1) {
		size_t le = ast_line_end(b->t, b->n, ls);
		const char *l = b->t + ls;
		if (is_lang(b, "c", "cpp")) {
			char inc[300];
			snprintf(inc, sizeof inc, "#include \"%s.h\"", stem);
			bare |= header_ok && !strncmp(l, inc, strlen(inc));
			continue;
		}
		size_t names_from = 0;
		if (is_lang(b, "python", NULL)) {
			if (!strncmp(l, "import ", 7) && !strncmp(l + 7, stem, sl) &&
			    (l[7 + sl] == '\n' || l[7 + sl] == ' ')) {
				const char *as = l[7 + sl] == ' ' && !strncmp(l + 7 + sl, " as ", 4)
				                         ? l + 7 + sl + 4
				                         : l + 7;
				snprintf(alias, sizeof alias, "%.*s",
				         (int)(evne_word_end(b->t, b->n, (size_t)(as - b->t)) -
				               (size_t)(as - b->t)),
				         as);
				continue;
			}
			if (strncmp(l, "from ", 5)) continue;
			size_t me = evne_word_end(b->t, b->n, ls + 5);
			while (b->t[me] == '.') me = evne_word_end(b->t, b->n, me + 1);
			size_t lc = me;
			while (lc > ls + 5 && b->t[lc - 1] != '.') lc--;
			if (me - lc != sl || memcmp(b->t + lc, stem, sl)) continue;
			names_from = me;
		} else {
			const char *from = strstr(l, " from ");
			if (strncmp(l, "import {", 8) || !from || from > b->t + le) continue;
			const char *q = from + 7, *qe = b->t + le;
			while (qe > q && (qe[-1] == ';' || qe[-1] == '"' || qe[-1] == '\'')) qe--;
			const char *lc = qe;
			while (lc > q && lc[-1] != '/') lc--;
			const char *dot = memchr(lc, '.', (size_t)(qe - lc));
			if (dot) qe = dot;
			if ((size_t)(qe - lc) != sl || memcmp(lc, stem, sl)) continue;
			names_from = ls + 8;
		}
		for (size_t k = names_from; k < le; k++) {
			if (!evne_word_at(b->t, b->n, b->code, k, name, nl)) continue;
			size_t after = evne_skip_ws(b->t, b->n, k + nl);
			if (!strncmp(b->t + after, "as ", 3))
				entry = k;
			else
				bare = true;
			break;
		}
	}
	for (size_t k = 0; k < b->n; k++) {
		if (!evne_word_at(b->t, b->n, b->code, k, name, nl)) continue;
		size_t al = strlen(alias);
		bool member = evne_after_member(b->t, k);
		bool via_alias =
		        al && member && k > al && !memcmp(b->t + k - 1 - al, alias, al) &&
		        (k - 1 - al == 0 || !ast_is_ident_byte((unsigned char)b->t[k - 2 - al]));
		if ((bare && !member) || via_alias || k == entry) {
			if (c->n_exp >= MAX_PLACES) break;
			struct place *p = &c->exp[c->n_exp++];
			p->start = k;
			p->end = k + nl;
			p->has_text = true;
			snprintf(p->text, sizeof p->text, "%s", nw);
		}
	}
}

static void make_cross_renames(const struct file *f, const struct file *all, size_t n_all,
                               struct ecase *out, size_t *n, size_t cap)
{
	const struct ast_outline *o = f->ol;
	if (!o) return;
	char stem[128];
	stem_of(f->path, stem, sizeof stem);
	const char *ext = strrchr(f->path, '.');
	bool header_ok = ext && (!strcmp(ext, ".h") || !strcmp(ext, ".c"));
	for (size_t i = 0; i < n_all && *n < cap; i++) {
		const struct file *b = &all[i];
		/* a file whose text never spells the module imports nothing of it */
		if (b == f || !ast_lang_kin(b->lang, f->lang) || !strstr(b->t, stem)) continue;
		/* stem.c's own header declares what it defines */
		char bstem[128];
		stem_of(b->path, bstem, sizeof bstem);
		const char *bext = strrchr(b->path, '.');
		bool own_header = ext && !strcmp(ext, ".c") && bext && !strcmp(bext, ".h") &&
		                  !strcmp(bstem, stem);
		for (size_t d = 0; d < o->n_defs && *n < cap; d++) {
			const struct ast_def *df = &o->defs[d];
			size_t nl = strlen(df->name);
			if (nl < 2 || evne_is_keyword(df->name, nl) || !defines(f, df->name) ||
			    !strstr(b->t, df->name))
				continue;
			size_t at = df->start;
			while (at < df->end && !evne_word_at(f->t, f->n, f->code, at, df->name, nl))
				at++;
			if (at >= df->end) continue;
			char nw[80];
			snprintf(nw, sizeof nw, "%s_2", df->name);
			struct ecase *c = &out[*n];
			if (evne_case_start(c, EK_RENAME_CROSS_FILE, f, at, at + nl, nw)) continue;
			c->other = b;
			importer_places(b, stem, header_ok, own_header, df->name, nw, c);
			if (c->n_exp) {
				(*n)++;
			} else {
				nextedit_track_finish(&c->track);
				free(c->now);
			}
		}
	}
}

void evne_make_cross(const struct file *f, const struct file *all, size_t n_all, struct ecase *out,
                     size_t *n, size_t cap)
{
	make_import_missing(f, all, n_all, out, n, cap);
	make_cross_renames(f, all, n_all, out, n, cap);
}
