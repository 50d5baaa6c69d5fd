/*
 * outline.c - what a file defines and what it imports, for the workspace
 * index (context/): the definitions' signatures (their headers and the
 * headers of a class's methods, never bodies, as slice.c gives same-file
 * signatures) and each import as the language writes it, and the names
 * used near a cursor, which are what the index is asked for.
 *
 * One walk over the top level, going into the wrappers that hold top-level
 * code without being a scope of their own (C's #ifndef guards and
 * extern "C", JS's export, Rust's inline mod) and one level into classes,
 * namespaces and impls, whose methods are looked up by name too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct outline_acc {
	const struct ast_lang *lang;
	const char *text;
	struct ast_outline *o;
	size_t defs_cap, imports_cap;
};

static bool is_fn_type(const char *t)
{
	return strstr(t, "function") || strstr(t, "method") || strstr(t, "constructor");
}

static int def_push(struct outline_acc *a, const char *name, size_t start, size_t end,
                    const char *sig, size_t sig_len)
{
	struct ast_outline *o = a->o;
	if (o->n_defs == a->defs_cap) {
		size_t cap = a->defs_cap ? a->defs_cap * 2 : 32;
		struct ast_def *v = realloc(o->defs, cap * sizeof *v);
		if (!v) return AST_ENOMEM;
		o->defs = v;
		a->defs_cap = cap;
	}
	char *s = malloc(sig_len + 1);
	if (!s) return AST_ENOMEM;
	memcpy(s, sig, sig_len);
	s[sig_len] = 0;
	struct ast_def *d = &o->defs[o->n_defs++];
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "%s", name);
	d->start = start;
	d->end = end;
	d->sig = s;
	d->sig_len = sig_len;
	return 0;
}

static int import_push(struct outline_acc *a, enum ast_import_kind kind, const char *spec,
                       size_t len)
{
	struct ast_outline *o = a->o;
	if (len == 0 || len >= sizeof o->imports[0].spec) return 0; /* skipped, not an error */
	if (o->n_imports == a->imports_cap) {
		size_t cap = a->imports_cap ? a->imports_cap * 2 : 16;
		struct ast_import *v = realloc(o->imports, cap * sizeof *v);
		if (!v) return AST_ENOMEM;
		o->imports = v;
		a->imports_cap = cap;
	}
	struct ast_import *im = &o->imports[o->n_imports++];
	im->kind = kind;
	memcpy(im->spec, spec, len);
	im->spec[len] = 0;
	return 0;
}

/* The text of a string literal node without its quotes. */
static bool unquote(TSNode n, const char *text, const char **s, size_t *len)
{
	size_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (e - b < 2) return false;
	char q = text[b];
	if (q != '"' && q != '\'' && q != '`') return false;
	*s = text + b + 1;
	*len = e - b - 2;
	return true;
}

/* ---- definitions ---- */

/* A C prototype (`int f(int);` at top level): a declaration whose
 * declarator chain holds a function_declarator. */
static bool is_prototype(TSNode n)
{
	if (!node_is(n, "declaration")) return false;
	TSNode d = ts_node_child_by_field_name(n, "declarator", 10);
	for (int depth = 0; !ts_node_is_null(d) && depth < 6; depth++) {
		if (node_is(d, "function_declarator")) return true;
		d = ts_node_child_by_field_name(d, "declarator", 10);
	}
	return false;
}

/* Text of n cut to its first max bytes at a line end, trailing blanks off. */
static size_t first_lines(const char *text, size_t s, size_t e, size_t max)
{
	if (e - s > max) {
		size_t cut = s + max;
		while (cut > s && text[cut] != '\n') cut--;
		e = cut > s ? cut : s + max;
	}
	while (e > s && strchr(" \t\r\n", text[e - 1])) e--;
	return e;
}

static int add_def(struct outline_acc *a, TSNode n)
{
	const char *text = a->text;
	const char *t = ts_node_type(n);
	char name[64];
	char buf[1400];
	size_t l, s = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (is_prototype(n) || node_is(n, "preproc_function_def") || node_is(n, "preproc_def")) {
		TSNode nm = ts_node_child_by_field_name(n, "name", 4);
		if (!ts_node_is_null(nm)) {
			size_t ns = ts_node_start_byte(nm), ne = ts_node_end_byte(nm);
			if (ne - ns >= sizeof name) return 0;
			memcpy(name, text + ns, ne - ns);
			name[ne - ns] = 0;
		} else if (!lang_def_name(n, text, name, sizeof name)) {
			return 0;
		}
		size_t fe = first_lines(text, s, e, 400);
		return def_push(a, name, s, e, text + s, fe - s);
	}
	if (!lang_type_in(t, a->lang->defs)) return 0;
	/* `struct x *p` names a type without defining it */
	if (strstr(t, "_specifier") && ts_node_is_null(ts_node_child_by_field_name(n, "body", 4)))
		return 0;
	if (!lang_def_name(n, text, name, sizeof name)) return 0;
	bool fn = is_fn_type(t);
	if (node_is(n, "decorated_definition")) {
		TSNode inner = ts_node_child_by_field_name(n, "definition", 10);
		fn = !ts_node_is_null(inner) && is_fn_type(ts_node_type(inner));
	}
	size_t hs, he = slice_header_end(n, text, &hs);
	l = he - hs < 700 ? he - hs : 700;
	memcpy(buf, text + hs, l);
	if (!fn && he < e) {
		l = slice_members_add(a->lang, n, text, NULL, buf, l, sizeof buf);
	} else if (a->lang->blocks == AST_BLOCK_INDENT) {
		memcpy(buf + l, ": ...", 5);
		l += 5;
	} else if (a->lang->blocks == AST_BLOCK_BRACE && (he < e || strstr(t, "_specifier"))) {
		buf[l++] = ';';
	}
	return def_push(a, name, s, e, buf, l);
}

/* ---- imports ---- */

static int python_import(struct outline_acc *a, TSNode n)
{
	const char *text = a->text;
	char spec[240];
	if (node_is(n, "import_statement")) {
		uint32_t nc = ts_node_named_child_count(n);
		for (uint32_t i = 0; i < nc; i++) {
			TSNode m = ts_node_named_child(n, i);
			if (node_is(m, "aliased_import"))
				m = ts_node_child_by_field_name(m, "name", 4);
			if (ts_node_is_null(m) || !node_is(m, "dotted_name")) continue;
			size_t s = ts_node_start_byte(m), e = ts_node_end_byte(m);
			int rc = import_push(a, AST_IMPORT_PYTHON, text + s, e - s);
			if (rc) return rc;
		}
		return 0;
	}
	if (!node_is(n, "import_from_statement")) return 0;
	TSNode mod = ts_node_child_by_field_name(n, "module_name", 11);
	if (ts_node_is_null(mod)) return 0;
	size_t ms = ts_node_start_byte(mod), me = ts_node_end_byte(mod);
	int rc = import_push(a, AST_IMPORT_PYTHON, text + ms, me - ms);
	if (rc || me - ms >= 200) return rc;
	/* `from pkg import mod` may name modules: each name is tried as one */
	uint32_t nc = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode m = ts_node_named_child(n, i);
		if (ts_node_eq(m, mod)) continue;
		if (node_is(m, "aliased_import")) m = ts_node_child_by_field_name(m, "name", 4);
		if (ts_node_is_null(m) || !node_is(m, "dotted_name")) continue;
		size_t s = ts_node_start_byte(m), e = ts_node_end_byte(m);
		bool dot_end = text[me - 1] == '.';
		int w = snprintf(spec, sizeof spec, "%.*s%s%.*s", (int)(me - ms), text + ms,
		                 dot_end ? "" : ".", (int)(e - s), text + s);
		if (w > 0 && (size_t)w < sizeof spec &&
		    (rc = import_push(a, AST_IMPORT_PYTHON, spec, (size_t)w)))
			return rc;
	}
	return 0;
}

static int string_import(struct outline_acc *a, TSNode str, enum ast_import_kind kind)
{
	const char *s;
	size_t len;
	if (ts_node_is_null(str) || !unquote(str, a->text, &s, &len)) return 0;
	if (kind == AST_IMPORT_RELATIVE && (len == 0 || s[0] != '.')) return 0; /* a package */
	return import_push(a, kind, s, len);
}

static int go_imports(struct outline_acc *a, TSNode n)
{
	uint32_t nc = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode m = ts_node_named_child(n, i);
		int rc = 0;
		if (node_is(m, "import_spec_list"))
			rc = go_imports(a, m);
		else if (node_is(m, "import_spec"))
			rc = string_import(a, ts_node_child_by_field_name(m, "path", 4),
			                   AST_IMPORT_GO);
		if (rc) return rc;
	}
	return 0;
}

static int rust_use(struct outline_acc *a, TSNode n)
{
	TSNode arg = ts_node_child_by_field_name(n, "argument", 8);
	if (ts_node_is_null(arg)) return 0;
	size_t s = ts_node_start_byte(arg), e = ts_node_end_byte(arg);
	const char *t = a->text + s;
	if (e - s <= 7 || strncmp(t, "crate::", 7)) return 0;
	s += 7;
	/* up to a group or glob: `crate::a::b::{C, D}` -> a::b */
	size_t stop = s;
	while (stop < e && a->text[stop] != '{' && a->text[stop] != '*' && a->text[stop] != ' ')
		stop++;
	while (stop > s && a->text[stop - 1] == ':') stop--;
	return import_push(a, AST_IMPORT_RUST_USE, a->text + s, stop - s);
}

/* The imports n makes, if it is an import of its language. */
static int add_import(struct outline_acc *a, TSNode n)
{
	const char *name = a->lang->name;
	if (!strcmp(name, "python")) return python_import(a, n);
	if ((!strcmp(name, "c") || !strcmp(name, "cpp")) && node_is(n, "preproc_include")) {
		TSNode p = ts_node_child_by_field_name(n, "path", 4);
		if (!ts_node_is_null(p) && node_is(p, "string_literal")) {
			size_t s = ts_node_start_byte(p), e = ts_node_end_byte(p);
			if (e - s >= 2)
				return import_push(a, AST_IMPORT_INCLUDE, a->text + s + 1,
				                   e - s - 2);
		}
		return 0;
	}
	if (node_is(n, "import_statement") || node_is(n, "export_statement"))
		return string_import(a, ts_node_child_by_field_name(n, "source", 6),
		                     AST_IMPORT_RELATIVE);
	if (!strcmp(name, "go") && node_is(n, "import_declaration")) return go_imports(a, n);
	if (!strcmp(name, "rust") && node_is(n, "use_declaration")) return rust_use(a, n);
	if (!strcmp(name, "rust") && node_is(n, "mod_item") &&
	    ts_node_is_null(ts_node_child_by_field_name(n, "body", 4))) {
		TSNode nm = ts_node_child_by_field_name(n, "name", 4);
		if (ts_node_is_null(nm)) return 0;
		size_t s = ts_node_start_byte(nm), e = ts_node_end_byte(nm);
		return import_push(a, AST_IMPORT_RUST_MOD, a->text + s, e - s);
	}
	return 0;
}

/* ---- the walk ---- */

/* Nodes that hold top-level code without being a scope of their own. */
static bool is_wrapper(TSNode n)
{
	static const char *const w[] = { "preproc_ifdef",         "preproc_if",
		                         "preproc_else",          "preproc_elif",
		                         "linkage_specification", "declaration_list",
		                         "export_statement",      NULL };
	return lang_type_in(ts_node_type(n), w);
}

/* Definitions whose members are looked up by name too. */
static bool is_container(TSNode n)
{
	const char *t = ts_node_type(n);
	return strstr(t, "class") || !strcmp(t, "impl_item") || !strcmp(t, "trait_item") ||
	       !strcmp(t, "namespace_definition") || !strcmp(t, "mod_item");
}

static int walk(struct outline_acc *a, TSNode parent, int depth)
{
	uint32_t nc = ts_node_named_child_count(parent);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode n = ts_node_named_child(parent, i);
		int rc = add_import(a, n);
		if (!rc && depth < 8 && is_wrapper(n)) {
			rc = walk(a, n, depth + 1);
		} else if (!rc) {
			size_t before = a->o->n_defs;
			rc = add_def(a, n);
			/* one level into a class: its methods, by their own name */
			TSNode inner = n;
			if (node_is(n, "decorated_definition"))
				inner = ts_node_child_by_field_name(n, "definition", 10);
			if (!rc && a->o->n_defs > before && depth < 8 && !ts_node_is_null(inner) &&
			    is_container(inner)) {
				TSNode body = ts_node_child_by_field_name(inner, "body", 4);
				if (!ts_node_is_null(body)) rc = walk(a, body, depth + 4);
			}
		}
		if (rc) return rc;
	}
	return 0;
}

/* The tree of text: doc's when given, else a parse into *own. */
static int tree_of(const struct ast_lang *lang, struct ast_doc *doc, struct ast_text *flat,
                   struct ast_doc **own, TSNode *root)
{
	*own = NULL;
	if (!doc) {
		doc = *own = ast_doc_new(lang, ast_text_read, flat);
		if (!doc) return AST_ENOMEM;
	}
	int rc = ast_doc_parse(doc);
	if (rc) return rc;
	const TSTree *t = ast_doc_tree(doc);
	if (!t) return AST_EPARSE;
	*root = ts_tree_root_node(t);
	return 0;
}

int ast_outline(const struct ast_lang *lang, const char *text, size_t len, struct ast_doc *doc,
                struct ast_outline *out)
{
	memset(out, 0, sizeof *out);
	if (!lang) return 0;
	struct ast_text flat = { text, len };
	struct ast_doc *own;
	TSNode root;
	int rc = tree_of(lang, doc, &flat, &own, &root);
	if (!rc) {
		struct outline_acc a = { .lang = lang, .text = text, .o = out };
		rc = walk(&a, root, 0);
	}
	ast_doc_delete(own);
	if (rc) ast_outline_finish(out);
	return rc;
}

void ast_outline_finish(struct ast_outline *o)
{
	if (!o) return;
	for (size_t i = 0; i < o->n_defs; i++) free(o->defs[i].sig);
	free(o->defs);
	free(o->imports);
	memset(o, 0, sizeof *o);
}

static int cmp_ref(const void *x, const void *y)
{
	const struct ref *a = x, *b = y;
	return (a->dist > b->dist) - (a->dist < b->dist);
}

int ast_names_near(const struct ast_lang *lang, const char *text, size_t len, size_t cursor,
                   struct ast_doc *doc, struct ast_name *out, size_t cap)
{
	if (!lang || cursor > len) return 0;
	struct ast_text flat = { text, len };
	struct ast_doc *own;
	TSNode root;
	int rc = tree_of(lang, doc, &flat, &own, &root);
	if (rc) {
		ast_doc_delete(own);
		return rc;
	}
	size_t from = ast_line_start(text, cursor);
	for (int i = 0; i < 40 && from > 0; i++) from = ast_line_start(text, from - 1);
	size_t to = cursor;
	for (int i = 0; i < 8 && to < len; i++) {
		size_t e = ast_line_end(text, len, to);
		to = e < len ? e + 1 : len;
	}
	struct refs *r = calloc(1, sizeof *r);
	if (!r) {
		ast_doc_delete(own);
		return AST_ENOMEM;
	}
	slice_refs_collect(root, text, from, to, cursor, r);
	ast_doc_delete(own);
	qsort(r->v, r->n, sizeof r->v[0], cmp_ref);
	size_t n = r->n < cap ? r->n : cap;
	for (size_t i = 0; i < n; i++) {
		memcpy(out[i].name, r->v[i].name, sizeof out[i].name);
		out[i].dist = r->v[i].dist;
	}
	free(r);
	return (int)n;
}
