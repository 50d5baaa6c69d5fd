/*
 * members.c - the member lists of a type and the places that list them
 * again: an enum's variants (C/C++ enumerators, TypeScript and Java enum
 * bodies, Rust variants, a Python class deriving from an Enum) and a
 * struct's fields, the `switch`/`match` statements with their arms, and
 * the initialisers of a struct. The next-edit finder (pipeline/nextedit.c)
 * asks these when an edit adds a member; ast.h section 7 states the
 * contracts, refs.c answers the other questions about an edit.
 *
 * Like refs.c it reads the syntax, not the types: a switch is tied to an
 * enum by the names its labels spell, an initialiser to a struct by the
 * type name its declaration spells.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static struct ast_span span_of(TSNode n)
{
	return (struct ast_span){ ts_node_start_byte(n), ts_node_end_byte(n) };
}

/* The last identifier-like leaf under n (`Kind::A` -> A, `Kind.A` -> A),
 * or a null node. */
static TSNode last_ident(TSNode n)
{
	if (ts_node_is_null(n)) return n; /* a field with no declarator (`int : 3;`) */
	if (ts_node_child_count(n) == 0)
		return strstr(ts_node_type(n), "identifier") ? n : (TSNode){ 0 };
	for (uint32_t i = ts_node_child_count(n); i-- > 0;) {
		TSNode r = last_ident(ts_node_child(n, i));
		if (!ts_node_is_null(r)) return r;
	}
	return (TSNode){ 0 };
}

/* ---- member lists ---- */

/* A Python class that derives from an Enum (Enum, IntEnum, StrEnum, Flag):
 * its body's assignments are its variants. */
static bool python_enum_class(TSNode cls, const char *text)
{
	TSNode sup = node_field(cls, "superclasses");
	if (ts_node_is_null(sup)) return false;
	size_t s = ts_node_start_byte(sup), e = ts_node_end_byte(sup);
	for (size_t i = s; i + 4 <= e; i++)
		if (!memcmp(text + i, "Enum", 4) || !memcmp(text + i, "Flag", 4)) return true;
	return false;
}

static void member_push(struct ast_members *out, TSNode item, TSNode name)
{
	if (out->n >= AST_MEMBERS || ts_node_is_null(name)) return;
	out->items[out->n] = span_of(item);
	out->names[out->n] = span_of(name);
	out->n++;
}

static void type_name_copy(struct ast_members *out, TSNode def, const char *text)
{
	TSNode nm = node_field(def, "name");
	if (ts_node_is_null(nm)) return;
	size_t s = ts_node_start_byte(nm), e = ts_node_end_byte(nm);
	if (e - s >= sizeof out->type_name) return;
	memcpy(out->type_name, text + s, e - s);
	out->type_name[e - s] = 0;
}

/* Fills out from list, the body of def; false when def is no enum or
 * struct this file knows. */
static bool members_fill(TSNode def, TSNode list, const char *text, struct ast_members *out)
{
	const char *dt = ts_node_type(def);
	out->is_enum = strstr(dt, "enum") != NULL;
	if (!out->is_enum && !strstr(dt, "struct") && !node_is(def, "class_definition"))
		return false;
	out->list_start = ts_node_start_byte(list);
	out->list_end = ts_node_end_byte(list);
	type_name_copy(out, def, text);
	uint32_t nc = ts_node_named_child_count(list);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode m = ts_node_named_child(list, i);
		const char *t = ts_node_type(m);
		if (node_is(m, "property_identifier")) { /* TypeScript `enum { A }` */
			member_push(out, m, m);
		} else if (!strcmp(t, "enumerator") || !strcmp(t, "enum_variant") ||
		           !strcmp(t, "enum_constant") || !strcmp(t, "enum_assignment")) {
			member_push(out, m, node_field(m, "name"));
		} else if (!strcmp(t, "field_declaration")) {
			TSNode nm = node_field(m, "name"); /* Rust, Go */
			if (ts_node_is_null(nm))
				nm = last_ident(node_field(m, "declarator")); /* C */
			member_push(out, m, nm);
		} else if (!strcmp(t, "expression_statement")) { /* Python: `A = 1`, `x: int` */
			TSNode as = ts_node_named_child(m, 0);
			if (ts_node_is_null(as) || !node_is(as, "assignment")) continue;
			TSNode left = node_field(as, "left");
			if (!ts_node_is_null(left) && node_is(left, "identifier"))
				member_push(out, m, left);
		}
	}
	return true;
}

bool ast_members_at(struct ast_doc *doc, const char *text, size_t len, size_t at,
                    struct ast_members *out)
{
	memset(out, 0, sizeof *out);
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || at > len) return false;
	TSNode n = ts_node_descendant_for_byte_range(root, (uint32_t)at, (uint32_t)at);
	for (; !ts_node_is_null(n); n = ts_node_parent(n)) {
		const char *t = ts_node_type(n);
		if (!strcmp(t, "enumerator_list") || !strcmp(t, "enum_body") ||
		    !strcmp(t, "enum_variant_list") || !strcmp(t, "field_declaration_list")) {
			TSNode def = ts_node_parent(n);
			if (ts_node_is_null(def)) return false;
			/* a Rust variant's own fields are not the enum's members */
			if (node_is(def, "enum_variant")) continue;
			return members_fill(def, n, text, out);
		}
		if (node_is(n, "block")) {
			TSNode cls = ts_node_parent(n);
			if (!ts_node_is_null(cls) && node_is(cls, "class_definition")) {
				if (!members_fill(cls, n, text, out)) return false;
				out->is_enum = python_enum_class(cls, text);
				return true;
			}
		}
		/* a function's body is no member list, whatever holds it */
		if (strstr(t, "function") || strstr(t, "method")) return false;
	}
	return false;
}

/* ---- switch and match statements ---- */

static bool is_switch(const char *t)
{
	return !strcmp(t, "switch_statement") || !strcmp(t, "switch_expression") ||
	       !strcmp(t, "match_expression") || !strcmp(t, "match_statement") ||
	       !strcmp(t, "expression_switch_statement");
}

static bool is_arm(const char *t)
{
	return !strcmp(t, "case_statement") || !strcmp(t, "switch_case") ||
	       !strcmp(t, "switch_default") || !strcmp(t, "match_arm") ||
	       !strcmp(t, "case_clause") || !strcmp(t, "expression_case") ||
	       !strcmp(t, "default_case") || !strcmp(t, "switch_block_statement_group") ||
	       !strcmp(t, "switch_rule");
}

/* The label of an arm: what it matches, or a null node for a default. */
static TSNode arm_label(TSNode arm)
{
	TSNode l = node_field(arm, "value");
	if (ts_node_is_null(l) && !node_is(arm, "match_arm")) l = node_field(arm, "pattern");
	if (node_is(arm, "match_arm")) l = node_field(arm, "pattern");
	if (!ts_node_is_null(l)) return l;
	uint32_t nc = ts_node_named_child_count(arm);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode c = ts_node_named_child(arm, i);
		const char *t = ts_node_type(c);
		if (!strcmp(t, "case_pattern") || !strcmp(t, "switch_label")) return c;
	}
	return (TSNode){ 0 };
}

/* Whether a label lists several values: `A | B` (Rust, Python), `case A,
 * B:` (Go, Java). */
static bool label_multi(TSNode l)
{
	const char *t = ts_node_type(l);
	uint32_t nc = ts_node_named_child_count(l);
	if (strstr(t, "or_pattern") || strstr(t, "union_pattern")) return true;
	if ((node_is(l, "expression_list") || node_is(l, "switch_label")) && nc > 1) return true;
	for (uint32_t i = 0; i < nc; i++)
		if (label_multi(ts_node_named_child(l, i))) return true;
	return false;
}

static void arm_add(TSNode arm, const char *text, struct ast_switch *sw)
{
	if (sw->n >= AST_ARMS) return;
	struct ast_arm *a = &sw->arms[sw->n++];
	memset(a, 0, sizeof *a);
	a->start = ts_node_start_byte(arm);
	a->end = ts_node_end_byte(arm);
	TSNode l = arm_label(arm);
	a->label_start = a->label_end = a->start;
	if (!ts_node_is_null(l)) {
		a->label_start = ts_node_start_byte(l);
		a->label_end = ts_node_end_byte(l);
	}
	if (ts_node_is_null(l) || strstr(ts_node_type(arm), "default")) {
		a->fallback = true;
		a->name_start = a->name_end = a->start;
		return;
	}
	TSNode id = last_ident(l);
	if (ts_node_is_null(id)) { /* a literal, or Rust's `_` */
		size_t s = ts_node_start_byte(l), e = ts_node_end_byte(l);
		a->fallback = e == s + 1 && text[s] == '_';
		a->name_start = a->name_end = a->start;
		return;
	}
	a->name_start = ts_node_start_byte(id);
	a->name_end = ts_node_end_byte(id);
	a->multi = label_multi(l);
}

struct switch_acc {
	const char *text;
	struct ast_switch *out;
	size_t cap, n;
};

static void arms_walk(TSNode n, struct switch_acc *a, struct ast_switch *sw)
{
	uint32_t nc = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode c = ts_node_named_child(n, i);
		const char *t = ts_node_type(c);
		if (is_arm(t))
			arm_add(c, a->text, sw);
		else if (!is_switch(t)) /* the body's wrapper (switch_body, match_block) */
			arms_walk(c, a, sw);
	}
}

static void switches_walk(TSNode n, struct switch_acc *a)
{
	if (a->n >= a->cap) return;
	if (is_switch(ts_node_type(n))) {
		struct ast_switch *sw = &a->out[a->n++];
		memset(sw, 0, sizeof *sw);
		sw->start = ts_node_start_byte(n);
		sw->end = ts_node_end_byte(n);
		TSNode body = node_field(n, "body");
		arms_walk(ts_node_is_null(body) ? n : body, a, sw);
	}
	uint32_t nc = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < nc && a->n < a->cap; i++)
		switches_walk(ts_node_named_child(n, i), a);
}

int ast_switches(struct ast_doc *doc, const char *text, size_t len, struct ast_switch *out,
                 size_t cap)
{
	(void)len;
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || !cap) return 0;
	struct switch_acc a = { text, out, cap, 0 };
	switches_walk(root, &a);
	return (int)a.n;
}

/* ---- initialisers of a struct ---- */

struct init_acc {
	const char *text;
	const char *name;
	size_t nlen;
	struct ast_init *out;
	size_t cap, n;
};

static bool names_type(TSNode t, const struct init_acc *a)
{
	if (ts_node_is_null(t)) return false;
	if (strstr(ts_node_type(t), "struct_specifier") || node_is(t, "type_descriptor"))
		return names_type(node_field(t, "name"), a) || names_type(node_field(t, "type"), a);
	size_t s = ts_node_start_byte(t), e = ts_node_end_byte(t);
	return e - s == a->nlen && !memcmp(a->text + s, a->name, a->nlen) &&
	       strstr(ts_node_type(t), "identifier");
}

static void init_add(TSNode list, struct init_acc *a)
{
	if (a->n >= a->cap) return;
	struct ast_init *in = &a->out[a->n++];
	memset(in, 0, sizeof *in);
	in->start = ts_node_start_byte(list);
	in->end = ts_node_end_byte(list);
	uint32_t nc = ts_node_named_child_count(list);
	for (uint32_t i = 0; i < nc && in->n < AST_CALL_ARGS; i++) {
		TSNode it = ts_node_named_child(list, i);
		const char *t = ts_node_type(it);
		if (strstr(t, "comment") || node_is(it, "base_field_initializer")) continue;
		struct ast_arg *g = &in->items[in->n++];
		g->start = ts_node_start_byte(it);
		g->end = ts_node_end_byte(it);
		g->name_start = g->name_end = g->start;
		TSNode nm = { 0 };
		if (node_is(it, "initializer_pair")) /* C `.x = 1` */
			nm = last_ident(node_field(it, "designator"));
		else if (node_is(it, "field_initializer")) /* Rust `x: 1` */
			nm = node_field(it, "field");
		else if (node_is(it, "shorthand_field_initializer")) /* Rust `x` */
			nm = ts_node_named_child(it, 0);
		if (!ts_node_is_null(nm)) {
			g->name_start = ts_node_start_byte(nm);
			g->name_end = ts_node_end_byte(nm);
			in->designated = true;
		}
	}
}

/* The struct's initialisers under n: a declaration or compound literal of
 * the type, its braces (each element's, for an array of it); a Rust struct
 * expression's fields. */
static void inits_walk(TSNode n, struct init_acc *a)
{
	if (a->n >= a->cap) return;
	if (node_is(n, "compound_literal_expression") && names_type(node_field(n, "type"), a)) {
		TSNode v = node_field(n, "value");
		if (!ts_node_is_null(v) && node_is(v, "initializer_list")) init_add(v, a);
	} else if (node_is(n, "declaration") && names_type(node_field(n, "type"), a)) {
		uint32_t nc = ts_node_named_child_count(n);
		for (uint32_t i = 0; i < nc; i++) {
			TSNode c = ts_node_named_child(n, i);
			TSNode v = node_field(c, "value");
			if (!node_is(c, "init_declarator") || ts_node_is_null(v) ||
			    !node_is(v, "initializer_list"))
				continue;
			TSNode d = node_field(c, "declarator");
			if (ts_node_is_null(d) || !node_is(d, "array_declarator")) {
				init_add(v, a);
				continue;
			}
			uint32_t vc = ts_node_named_child_count(v);
			for (uint32_t k = 0; k < vc; k++) {
				TSNode el = ts_node_named_child(v, k);
				if (node_is(el, "initializer_list")) init_add(el, a);
			}
		}
		return;
	} else if (node_is(n, "struct_expression") && names_type(node_field(n, "name"), a)) {
		TSNode body = node_field(n, "body");
		if (!ts_node_is_null(body)) init_add(body, a);
	}
	uint32_t nc = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < nc && a->n < a->cap; i++) inits_walk(ts_node_named_child(n, i), a);
}

int ast_inits_of(struct ast_doc *doc, const char *text, size_t len, const char *name,
                 size_t name_len, struct ast_init *out, size_t cap)
{
	(void)len;
	TSNode root = doc_root(doc);
	if (ts_node_is_null(root) || !name_len || !cap) return 0;
	struct init_acc a = { text, name, name_len, out, cap, 0 };
	inits_walk(root, &a);
	return (int)a.n;
}
