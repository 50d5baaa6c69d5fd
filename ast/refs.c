/*
 * refs.c - what an edit implies elsewhere in a file, as the tree sees it:
 * the other uses of an identifier in its scope, the call sites of a
 * function with their arguments, the parameter list an edit falls in, and
 * whether a replacement leaves the file's syntax as whole as it was. The
 * next-edit finder (pipeline/nextedit.c) asks these; ast.h section 6 states
 * the contracts.
 *
 * Scope is syntactic, not semantic: the innermost function, method or
 * lambda whose body or parameters hold the identifier, else the file. Two
 * functions' locals of one name stay apart; a global shadowed by a local of
 * its name is not told apart (no binding resolution).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool type_has(TSNode n, const char *part)
{
	return strstr(ts_node_type(n), part) != NULL;
}

bool ast_is_ident_byte(unsigned char c)
{
	return c == '_' || c == '$' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || c >= 0x80;
}

static bool is_ident_leaf(TSNode n)
{
	return ts_node_child_count(n) == 0 && type_has(n, "identifier");
}

/* A node that opens a scope of locals: a function, method, lambda or
 * closure, not its declarator, type or call. */
static bool is_scope(TSNode n)
{
	const char *t = ts_node_type(n);
	bool fn = strstr(t, "function") || strstr(t, "method") || strstr(t, "lambda") ||
	          strstr(t, "closure") || strstr(t, "constructor") || strstr(t, "func_literal");
	return fn && !strstr(t, "call") && !strstr(t, "invocation") && !strstr(t, "declarator") &&
	       !strstr(t, "type") && !strstr(t, "signature") && !strstr(t, "arguments");
}

static bool holds(TSNode outer, size_t s, size_t e)
{
	return !ts_node_is_null(outer) && ts_node_start_byte(outer) <= s &&
	       e <= ts_node_end_byte(outer);
}

/* Whether [s, e) lies in f's body, or in a parameter list under f (C puts
 * it inside the declarator): the scope f opens, rather than f's name. */
static bool in_scope_part(TSNode f, size_t s, size_t e)
{
	if (holds(ts_node_child_by_field_name(f, "body", 4), s, e)) return true;
	TSNode n = ts_node_descendant_for_byte_range(f, (uint32_t)s, (uint32_t)e);
	for (; !ts_node_is_null(n) && !ts_node_eq(n, f); n = ts_node_parent(n))
		if (type_has(n, "parameter")) return true;
	return false;
}

static bool span_text_is(const char *text, size_t len, TSNode n, const char *name, size_t nlen)
{
	size_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
	return e <= len && e - s == nlen && !memcmp(text + s, name, nlen);
}

/* ---- identifiers in scope ---- */

struct refs_acc {
	const char *text;
	size_t len;
	const char *name;
	size_t nlen;
	struct ast_span *out;
	size_t cap, n;
};

static void collect(TSNode n, struct refs_acc *a)
{
	if (is_ident_leaf(n)) {
		if (span_text_is(a->text, a->len, n, a->name, a->nlen) && a->n < a->cap)
			a->out[a->n++] =
			        (struct ast_span){ ts_node_start_byte(n), ts_node_end_byte(n) };
		return;
	}
	uint32_t nc = ts_node_child_count(n);
	for (uint32_t i = 0; i < nc && a->n < a->cap; i++) collect(ts_node_child(n, i), a);
}

int ast_ident_refs(struct ast_doc *doc, const char *text, size_t len, size_t at, const char *name,
                   size_t name_len, struct ast_span *out, size_t cap)
{
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || !name_len || at > len) return 0;
	TSNode scope = root;
	TSNode n = ts_node_descendant_for_byte_range(root, (uint32_t)at, (uint32_t)at);
	for (; !ts_node_is_null(n); n = ts_node_parent(n))
		if (is_scope(n) && in_scope_part(n, at, at + name_len)) {
			scope = n;
			break;
		}
	struct refs_acc a = { text, len, name, name_len, out, cap, 0 };
	collect(scope, &a);
	return (int)a.n;
}

/* ---- call sites ---- */

/* The identifier a callee ends with (`f`, `obj.f`, `pkg::f`, `a->f`). */
static TSNode callee_name(TSNode fn)
{
	while (ts_node_child_count(fn) > 0) fn = ts_node_child(fn, ts_node_child_count(fn) - 1);
	return fn;
}

struct calls_acc {
	const char *text;
	size_t len;
	const char *name;
	size_t nlen;
	struct ast_call *out;
	size_t cap, n;
};

static void call_add(TSNode call, struct calls_acc *a)
{
	TSNode fn = ts_node_child_by_field_name(call, "function", 8);
	bool java = ts_node_is_null(fn);
	if (java) fn = ts_node_child_by_field_name(call, "name", 4); /* method_invocation */
	TSNode args = ts_node_child_by_field_name(call, "arguments", 9);
	if (ts_node_is_null(fn) || ts_node_is_null(args)) return;
	TSNode id = callee_name(fn);
	if (!type_has(id, "identifier") || !span_text_is(a->text, a->len, id, a->name, a->nlen))
		return;
	struct ast_call *c = &a->out[a->n++];
	memset(c, 0, sizeof *c);
	c->start = ts_node_start_byte(call);
	c->end = ts_node_end_byte(call);
	c->args_start = ts_node_start_byte(args);
	c->args_end = ts_node_end_byte(args);
	c->method = java ? !ts_node_is_null(ts_node_child_by_field_name(call, "object", 6))
	                 : !ts_node_eq(fn, id);
	uint32_t nc = ts_node_named_child_count(args);
	for (uint32_t i = 0; i < nc && c->n_args < AST_CALL_ARGS; i++) {
		TSNode arg = ts_node_named_child(args, i);
		if (type_has(arg, "comment")) continue;
		struct ast_arg *g = &c->args[c->n_args++];
		g->start = ts_node_start_byte(arg);
		g->end = ts_node_end_byte(arg);
		g->name_start = g->name_end = 0;
		if (type_has(arg, "keyword_argument")) {
			TSNode k = ts_node_child_by_field_name(arg, "name", 4);
			if (!ts_node_is_null(k)) {
				g->name_start = ts_node_start_byte(k);
				g->name_end = ts_node_end_byte(k);
			}
		}
	}
}

static void calls_walk(TSNode n, struct calls_acc *a)
{
	if (a->n >= a->cap) return;
	if (type_has(n, "call") || type_has(n, "invocation")) call_add(n, a);
	uint32_t nc = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < nc && a->n < a->cap; i++) calls_walk(ts_node_named_child(n, i), a);
}

int ast_calls_of(struct ast_doc *doc, const char *text, size_t len, const char *name,
                 size_t name_len, struct ast_call *out, size_t cap)
{
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || !name_len) return 0;
	struct calls_acc a = { text, len, name, name_len, out, cap, 0 };
	calls_walk(root, &a);
	return (int)a.n;
}

/* ---- parameter lists ---- */

/* C, C++ and Java write the type first: a parameter's name is its last
 * identifier before any default; the others name it first. */
static bool name_last(const struct ast_lang *lang)
{
	const char *n = ast_lang_name(lang);
	return !strcmp(n, "c") || !strcmp(n, "cpp") || !strcmp(n, "java");
}

struct leaf_pick {
	bool last;
	TSNode found;
	bool stop;
};

static void pick_ident(TSNode n, struct leaf_pick *p)
{
	if (p->stop) return;
	if (ts_node_child_count(n) == 0) {
		const char *t = ts_node_type(n);
		if (!strcmp(t, "=")) {
			p->stop = true;
			return;
		}
		if (!strcmp(t, "identifier") && !(p->found.id && !p->last)) p->found = n;
		return;
	}
	/* a default value or a type annotation names no parameter */
	uint32_t nc = ts_node_child_count(n);
	for (uint32_t i = 0; i < nc && !p->stop; i++) {
		const char *field = ts_node_field_name_for_child(n, i);
		if (field && (!strcmp(field, "value") || (!p->last && !strcmp(field, "type"))))
			continue;
		pick_ident(ts_node_child(n, i), p);
	}
}

bool ast_params_at(struct ast_doc *doc, const char *text, size_t len, size_t at,
                   struct ast_params *out)
{
	memset(out, 0, sizeof *out);
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || at > len) return false;
	TSNode n = ts_node_descendant_for_byte_range(root, (uint32_t)at, (uint32_t)at);
	TSNode list = { 0 };
	for (; !ts_node_is_null(n); n = ts_node_parent(n)) {
		const char *t = ts_node_type(n);
		if (!strcmp(t, "parameters") || !strcmp(t, "formal_parameters") ||
		    !strcmp(t, "parameter_list")) {
			list = n;
			break;
		}
		if (is_scope(n)) return false;
	}
	if (ts_node_is_null(list)) return false;
	/* the definition it belongs to, and the name it defines */
	TSNode def = ts_node_parent(list);
	while (!ts_node_is_null(def) && !is_scope(def)) def = ts_node_parent(def);
	if (ts_node_is_null(def)) return false;
	char name[sizeof out->name];
	if (!lang_def_name(def, text, name, sizeof name)) return false;
	memcpy(out->name, name, sizeof name);
	out->list_start = ts_node_start_byte(list);
	out->list_end = ts_node_end_byte(list);
	bool last = name_last(ast_doc_lang(doc));
	uint32_t nc = ts_node_named_child_count(list);
	for (uint32_t i = 0; i < nc && out->n < AST_CALL_ARGS; i++) {
		TSNode p = ts_node_named_child(list, i);
		if (type_has(p, "comment")) continue;
		struct ast_arg *g = &out->params[out->n++];
		g->start = ts_node_start_byte(p);
		g->end = ts_node_end_byte(p);
		struct leaf_pick pk = { .last = last };
		if (!strcmp(ts_node_type(p), "identifier"))
			pk.found = p;
		else
			pick_ident(p, &pk);
		if (pk.found.id) {
			g->name_start = ts_node_start_byte(pk.found);
			g->name_end = ts_node_end_byte(pk.found);
		} else {
			g->name_start = g->name_end = g->start;
		}
		g->has_default =
		        strstr(ts_node_type(p), "default") || strstr(ts_node_type(p), "optional");
	}
	return true;
}

/* ---- does a replacement break the syntax? ---- */

struct splice_in {
	const char *text;
	size_t len, start, end;
	const char *repl;
	size_t rlen;
};

static const char *splice_read(void *payload, uint32_t byte, TSPoint pos, uint32_t *n)
{
	(void)pos;
	struct splice_in *in = payload;
	size_t b = byte, newlen = in->len - (in->end - in->start) + in->rlen;
	if (b >= newlen) {
		*n = 0;
		return "";
	}
	if (b < in->start) {
		*n = (uint32_t)(in->start - b);
		return in->text + b;
	}
	if (b < in->start + in->rlen) {
		*n = (uint32_t)(in->start + in->rlen - b);
		return in->repl + (b - in->start);
	}
	size_t o = b - in->rlen + (in->end - in->start);
	*n = (uint32_t)(in->len - o);
	return in->text + o;
}

static TSPoint point_of(const char *text, size_t upto)
{
	TSPoint p = { 0, 0 };
	for (size_t i = 0; i < upto; i++) {
		if (text[i] == '\n') {
			p.row++;
			p.column = 0;
		} else {
			p.column++;
		}
	}
	return p;
}

int ast_replace_check(struct ast_doc *doc, const char *text, size_t len, size_t start, size_t end,
                      const char *repl, size_t repl_len, bool *ok)
{
	*ok = false;
	if (start > end || end > len) return AST_EINVAL;
	const TSTree *tree = doc ? ast_doc_tree(doc) : NULL;
	if (!tree) { /* no grammar: nothing to check against */
		*ok = true;
		return 0;
	}
	size_t before = tree_error_count(ts_tree_root_node(tree));
	TSTree *copy = ts_tree_copy(tree);
	if (!copy) return AST_ENOMEM;
	TSPoint sp = point_of(text, start), op = point_of(text, end);
	TSPoint np = sp;
	for (size_t i = 0; i < repl_len; i++) {
		if (repl[i] == '\n') {
			np.row++;
			np.column = 0;
		} else {
			np.column++;
		}
	}
	TSInputEdit ed = {
		(uint32_t)start, (uint32_t)end, (uint32_t)(start + repl_len), sp, op, np
	};
	ts_tree_edit(copy, &ed);
	struct splice_in in = { text, len, start, end, repl, repl_len };
	TSInput input = { &in, splice_read, TSInputEncodingUTF8, NULL };
	TSTree *after = ts_parser_parse(ast_doc_parser(doc), copy, input);
	ts_tree_delete(copy);
	if (!after) return AST_EPARSE;
	*ok = tree_error_count(ts_tree_root_node(after)) <= before;
	ts_tree_delete(after);
	return 0;
}

/* ---- the call an edit falls in, and a definition by name ---- */

bool ast_call_at(struct ast_doc *doc, const char *text, size_t len, size_t at, struct ast_call *out,
                 char *name, size_t cap)
{
	memset(out, 0, sizeof *out);
	if (cap) name[0] = 0;
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || at > len || cap < 2) return false;
	TSNode n = ts_node_descendant_for_byte_range(root, (uint32_t)at, (uint32_t)at);
	for (; !ts_node_is_null(n); n = ts_node_parent(n)) {
		if (is_scope(n)) return false;
		if (!type_has(n, "call") && !type_has(n, "invocation")) continue;
		TSNode args = ts_node_child_by_field_name(n, "arguments", 9);
		if (ts_node_is_null(args) || at <= ts_node_start_byte(args) ||
		    at >= ts_node_end_byte(args))
			continue;
		TSNode fn = ts_node_child_by_field_name(n, "function", 8);
		if (ts_node_is_null(fn)) fn = ts_node_child_by_field_name(n, "name", 4);
		if (ts_node_is_null(fn)) return false;
		TSNode id = callee_name(fn);
		size_t s = ts_node_start_byte(id), e = ts_node_end_byte(id);
		if (!type_has(id, "identifier") || e - s >= cap || e > len) return false;
		memcpy(name, text + s, e - s);
		name[e - s] = 0;
		struct calls_acc a = { text, len, name, e - s, out, 1, 0 };
		call_add(n, &a);
		return a.n == 1;
	}
	return false;
}

/* The parameter list of def: the first list under it outside its body. */
static TSNode params_of(TSNode def)
{
	uint32_t nc = ts_node_child_count(def);
	for (uint32_t i = 0; i < nc; i++) {
		const char *field = ts_node_field_name_for_child(def, i);
		if (field && !strcmp(field, "body")) continue;
		TSNode c = ts_node_child(def, i);
		const char *t = ts_node_type(c);
		if (!strcmp(t, "parameters") || !strcmp(t, "formal_parameters") ||
		    !strcmp(t, "parameter_list"))
			return c;
		if (ts_node_child_count(c) > 0) {
			TSNode r = params_of(c);
			if (!ts_node_is_null(r)) return r;
		}
	}
	return (TSNode){ 0 };
}

struct def_acc {
	const char *text;
	const char *name;
	TSNode found;
	size_t n;
};

static void defs_walk(TSNode n, struct def_acc *a)
{
	if (a->n > 1) return;
	if (is_scope(n)) {
		char buf[64];
		if (lang_def_name(n, a->text, buf, sizeof buf) && !strcmp(buf, a->name)) {
			TSNode p = params_of(n);
			if (!ts_node_is_null(p)) {
				a->found = p;
				a->n++;
			}
		}
	}
	uint32_t nc = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < nc && a->n <= 1; i++) defs_walk(ts_node_named_child(n, i), a);
}

bool ast_def_params(struct ast_doc *doc, const char *text, size_t len, const char *name,
                    struct ast_params *out)
{
	memset(out, 0, sizeof *out);
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || !name[0]) return false;
	struct def_acc a = { .text = text, .name = name };
	defs_walk(root, &a);
	if (a.n != 1) return false;
	return ast_params_at(doc, text, len, ts_node_start_byte(a.found) + 1, out) &&
	       !strcmp(out->name, name);
}
