/*
 * doc.c - one tree per open document, kept in step with the text.
 *
 * The text is never copied here: tree-sitter pulls it through the caller's
 * read callback. Edits adjust the tree at once (ts_tree_edit, cheap) and mark
 * it stale; ast_doc_parse() re-parses incrementally, reusing every subtree
 * the edits did not touch. A NULL language makes every call a no-op so that
 * the daemon needs no special case for plain text.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ast_doc {
	const struct ast_lang *lang;
	ast_read_fn read;
	void *ctx;            /* borrowed: the daemon's document */
	TSParser *parser;     /* NULL for a NULL language */
	TSTree *tree;         /* NULL before the first parse */
	bool stale;           /* edits recorded since the last parse */
	struct doc_bare bare; /* validation's, for the current tree */
};

const char *ast_text_read(void *ctx, size_t offset, size_t *len)
{
	const struct ast_text *t = ctx;
	if (offset >= t->len) {
		*len = 0;
		return NULL;
	}
	*len = t->len - offset;
	return t->text + offset;
}

struct ast_doc *ast_doc_new(const struct ast_lang *lang, ast_read_fn read, void *ctx)
{
	struct ast_doc *doc = calloc(1, sizeof *doc);
	if (!doc) return NULL;
	doc->lang = lang;
	doc->read = read;
	doc->ctx = ctx;
	doc->stale = true;
	if (lang) {
		doc->parser = lang_parser_new(lang);
		if (!doc->parser) {
			free(doc);
			return NULL;
		}
	}
	return doc;
}

void ast_doc_delete(struct ast_doc *doc)
{
	if (!doc) return;
	ts_tree_delete(doc->tree);
	ts_parser_delete(doc->parser);
	free(doc);
}

const struct ast_lang *ast_doc_lang(const struct ast_doc *doc)
{
	return doc ? doc->lang : NULL;
}

static TSPoint to_ts(struct ast_point p)
{
	return (TSPoint){ p.row, p.column };
}

void ast_doc_edit(struct ast_doc *doc, size_t start_byte, size_t old_end_byte, size_t new_end_byte,
                  struct ast_point start_point, struct ast_point old_end_point,
                  struct ast_point new_end_point)
{
	if (!doc || !doc->parser) return;
	doc->stale = true;
	doc->bare.valid = false;
	if (!doc->tree) return;
	TSInputEdit e = {
		.start_byte = (uint32_t)start_byte,
		.old_end_byte = (uint32_t)old_end_byte,
		.new_end_byte = (uint32_t)new_end_byte,
		.start_point = to_ts(start_point),
		.old_end_point = to_ts(old_end_point),
		.new_end_point = to_ts(new_end_point),
	};
	ts_tree_edit(doc->tree, &e);
}

void ast_doc_reset(struct ast_doc *doc)
{
	if (!doc) return;
	ts_tree_delete(doc->tree);
	doc->tree = NULL;
	doc->stale = true;
	doc->bare.valid = false;
}

/* TSInput.read over the caller's callback: tree-sitter wants 32-bit lengths. */
static const char *doc_input_read(void *payload, uint32_t byte, TSPoint pos, uint32_t *n)
{
	(void)pos;
	struct ast_doc *doc = payload;
	size_t len = 0;
	const char *p = doc->read(doc->ctx, byte, &len);
	if (!p) len = 0;
	*n = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	return p ? p : "";
}

int ast_doc_parse(struct ast_doc *doc)
{
	if (!doc || !doc->parser) return 0;
	if (doc->tree && !doc->stale) return 0;
	TSInput in = { .payload = doc, .read = doc_input_read, .encoding = TSInputEncodingUTF8 };
	TSTree *t = ts_parser_parse(doc->parser, doc->tree, in);
	if (!t) {
		ts_parser_reset(doc->parser);
		return AST_EPARSE;
	}
	ts_tree_delete(doc->tree);
	doc->tree = t;
	doc->stale = false;
	return 0;
}

bool ast_doc_has_tree(const struct ast_doc *doc)
{
	return doc && doc->tree && !doc->stale;
}

const TSTree *ast_doc_tree(struct ast_doc *doc)
{
	if (!doc || !doc->parser) return NULL;
	if (ast_doc_parse(doc) != 0) return NULL;
	return doc->tree;
}

TSParser *ast_doc_parser(struct ast_doc *doc)
{
	return doc ? doc->parser : NULL;
}

struct doc_bare *ast_doc_bare(struct ast_doc *doc)
{
	return doc ? &doc->bare : NULL;
}

void tree_each_error(TSNode root, void (*fn)(TSNode node, void *ctx), void *ctx)
{
	if (ts_node_is_null(root) || !ts_node_has_error(root)) return;
	TSTreeCursor c = ts_tree_cursor_new(root);
	for (;;) {
		TSNode node = ts_tree_cursor_current_node(&c);
		if (ts_node_is_error(node) || ts_node_is_missing(node)) fn(node, ctx);
		/* Only subtrees that contain an error are worth entering. */
		if (ts_node_has_error(node) && ts_tree_cursor_goto_first_child(&c)) continue;
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (!ts_tree_cursor_goto_parent(&c)) {
				ts_tree_cursor_delete(&c);
				return;
			}
		}
	}
}

/* The leaves of each node entered, in document order: a node is entered
 * when it overlaps [s, e), or, if `broken`, when it has an error. Without
 * `broken` only the leaves inside [s, e) go to fn. */
static void each_leaf(TSNode root, size_t s, size_t e, bool broken,
                      bool (*fn)(TSNode leaf, void *ctx), void *ctx)
{
	TSTreeCursor c = ts_tree_cursor_new(root);
	for (;;) {
		TSNode n = ts_tree_cursor_current_node(&c);
		size_t ns = ts_node_start_byte(n), ne = ts_node_end_byte(n);
		bool inside = ne > s && ns < e;
		if (ts_node_child_count(n) == 0) {
			if ((inside || broken) && ne > ns && !fn(n, ctx)) break;
		} else if ((inside || (broken && ts_node_has_error(n))) &&
		           ts_tree_cursor_goto_first_child(&c)) {
			continue;
		}
		bool up = true;
		while (!ts_tree_cursor_goto_next_sibling(&c))
			if (!(up = ts_tree_cursor_goto_parent(&c))) break;
		if (!up) break;
	}
	ts_tree_cursor_delete(&c);
}

void tree_each_leaf(TSNode root, size_t s, size_t e, bool (*fn)(TSNode leaf, void *ctx), void *ctx)
{
	each_leaf(root, s, e, false, fn, ctx);
}

void tree_each_broken_leaf(TSNode root, size_t s, size_t e, bool (*fn)(TSNode leaf, void *ctx),
                           void *ctx)
{
	each_leaf(root, s, e, true, fn, ctx);
}

int tree_bracket(TSNode leaf, char *closer)
{
	if (ts_node_is_named(leaf) || ts_node_is_missing(leaf)) return 0;
	const char *ty = ts_node_type(leaf);
	char c = !strcmp(ty, "(")                        ? ')'
	         : !strcmp(ty, "[")                      ? ']'
	         : !strcmp(ty, "{") || !strcmp(ty, "${") ? '}'
	                                                 : 0;
	if (c) {
		if (closer) *closer = c;
		return 1;
	}
	return !strcmp(ty, "}") || !strcmp(ty, ")") || !strcmp(ty, "]") ? -1 : 0;
}

static void count_one(TSNode node, void *ctx)
{
	(void)node;
	(*(size_t *)ctx)++;
}

size_t tree_error_count(TSNode root)
{
	size_t n = 0;
	tree_each_error(root, count_one, &n);
	return n;
}

size_t ast_doc_error_count(const struct ast_doc *doc)
{
	if (!doc || !doc->tree) return 0;
	return tree_error_count(ts_tree_root_node(doc->tree));
}

char *ast_doc_sexp(const struct ast_doc *doc)
{
	if (!doc || !doc->tree) return NULL;
	return ts_node_string(ts_tree_root_node(doc->tree));
}
