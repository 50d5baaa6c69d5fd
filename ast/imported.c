/*
 * imported.c - the names a file's import statements bind, each with the
 * bytes that bring it in (Python `import`/`from ... import`, JavaScript
 * and TypeScript `import`), and the identifiers a range of the file
 * spells. The next-edit finder (pipeline/nextedit_imports.c) asks these to
 * tell an import an edit left unused or wanting; ast.h section 8 states the
 * contracts. outline.c reads the same statements for the modules they name
 * (to find files); this file reads them for the names they bind.
 */
#include <string.h>

#include "internal.h"

struct imp_acc {
	struct ast_imported *out;
	size_t cap, n;
	TSNode stmt, module;
	size_t first; /* the statement's first entry in out */
};

/* One bound name: item is the entry to remove with it, bound the name. */
static void bind(struct imp_acc *a, TSNode item, TSNode bound)
{
	if (a->n >= a->cap || ts_node_is_null(bound)) return;
	struct ast_imported *m = &a->out[a->n++];
	memset(m, 0, sizeof *m);
	m->name = (struct ast_span){ ts_node_start_byte(bound), ts_node_end_byte(bound) };
	m->item = (struct ast_span){ ts_node_start_byte(item), ts_node_end_byte(item) };
	m->stmt = (struct ast_span){ ts_node_start_byte(a->stmt), ts_node_end_byte(a->stmt) };
	if (!ts_node_is_null(a->module))
		m->module = (struct ast_span){ ts_node_start_byte(a->module),
			                       ts_node_end_byte(a->module) };
	m->named = true;
}

static void python_stmt(struct imp_acc *a, TSNode st)
{
	bool from = node_is(st, "import_from_statement");
	if (from) a->module = node_field(st, "module_name");
	uint32_t nc = ts_node_child_count(st);
	for (uint32_t i = 0; i < nc; i++) {
		const char *f = ts_node_field_name_for_child(st, i);
		if (!f || strcmp(f, "name")) continue;
		TSNode it = ts_node_child(st, i);
		if (node_is(it, "aliased_import")) {
			bind(a, it, node_field(it, "alias"));
		} else if (node_is(it, "dotted_name")) {
			/* `import os.path` binds os; only a one-part name is removable
			 * by name alone */
			if (!from && ts_node_named_child_count(it) != 1) continue;
			bind(a, it, ts_node_named_child(it, 0));
		}
	}
}

static void js_stmt(struct imp_acc *a, TSNode st)
{
	a->module = node_field(st, "source");
	uint32_t nc = ts_node_named_child_count(st);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode cl = ts_node_named_child(st, i);
		if (!node_is(cl, "import_clause")) continue;
		uint32_t kc = ts_node_named_child_count(cl);
		for (uint32_t k = 0; k < kc; k++) {
			TSNode c = ts_node_named_child(cl, k);
			if (node_is(c, "identifier")) {
				bind(a, c, c);
			} else if (node_is(c, "namespace_import")) {
				bind(a, c, ts_node_named_child(c, 0));
			} else if (node_is(c, "named_imports")) {
				uint32_t sc = ts_node_named_child_count(c);
				for (uint32_t s = 0; s < sc; s++) {
					TSNode sp = ts_node_named_child(c, s);
					if (!node_is(sp, "import_specifier")) continue;
					TSNode al = node_field(sp, "alias");
					bind(a, sp,
					     ts_node_is_null(al) ? node_field(sp, "name") : al);
				}
			}
		}
	}
}

int ast_imported_names(struct ast_doc *doc, const char *text, size_t len, struct ast_imported *out,
                       size_t cap)
{
	(void)text;
	(void)len;
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || !cap) return 0;
	struct imp_acc a = { .out = out, .cap = cap };
	uint32_t nc = ts_node_named_child_count(root);
	for (uint32_t i = 0; i < nc && a.n < cap; i++) {
		TSNode st = ts_node_named_child(root, i);
		bool py = node_is(st, "import_statement") || node_is(st, "import_from_statement");
		if (!py) continue;
		a.stmt = st;
		a.module = (TSNode){ 0 };
		a.first = a.n;
		if (node_field(st, "source").id) /* JavaScript's has a source */
			js_stmt(&a, st);
		else
			python_stmt(&a, st);
		for (size_t k = a.first; k < a.n; k++) out[k].in_stmt = a.n - a.first;
	}
	return (int)a.n;
}

/* ---- identifiers in a range ---- */

struct ids_acc {
	bool role_ok;
	size_t s, e;
	struct ast_span *out;
	size_t cap, n;
};

static void ids_walk(TSNode n, struct ids_acc *a)
{
	if (a->n >= a->cap || ts_node_end_byte(n) <= a->s || ts_node_start_byte(n) >= a->e) return;
	if (ts_node_child_count(n) == 0) {
		const char *t = ts_node_type(n);
		/* a use, not a name being defined or an attribute */
		TSNode up = ts_node_parent(n);
		a->role_ok = !ts_node_is_null(up) && !strstr(ts_node_type(up), "parameter") &&
		             !strstr(ts_node_type(up), "import") && !node_is(up, "dotted_name");
		for (uint32_t i = 0; a->role_ok && i < ts_node_child_count(up); i++) {
			if (!ts_node_eq(ts_node_child(up, i), n)) continue;
			const char *f = ts_node_field_name_for_child(up, i);
			a->role_ok = !f || (strcmp(f, "name") && strcmp(f, "attribute") &&
			                    strcmp(f, "alias") && strcmp(f, "property") &&
			                    strcmp(f, "left") && strcmp(f, "declarator"));
		}
		if ((!strcmp(t, "identifier") || !strcmp(t, "type_identifier")) &&
		    ts_node_start_byte(n) >= a->s && ts_node_end_byte(n) <= a->e && a->role_ok)
			a->out[a->n++] =
			        (struct ast_span){ ts_node_start_byte(n), ts_node_end_byte(n) };
		return;
	}
	uint32_t nc = ts_node_child_count(n);
	for (uint32_t i = 0; i < nc && a->n < a->cap; i++) ids_walk(ts_node_child(n, i), a);
}

int ast_idents_in(struct ast_doc *doc, size_t start, size_t end, struct ast_span *out, size_t cap)
{
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || !cap || start >= end) return 0;
	struct ids_acc a = { .s = start, .e = end, .out = out, .cap = cap };
	ids_walk(root, &a);
	return (int)a.n;
}
