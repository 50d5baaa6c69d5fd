/*
 * internal.h - what the files of ast/ share and nobody else sees: the
 * language table's fields, the tree access of a document, and text helpers.
 */
#ifndef INFILL_AST_INTERNAL_H
#define INFILL_AST_INTERNAL_H

#include <string.h>

#include <tree_sitter/api.h>

#include "ast.h"

enum ast_block_style {
	AST_BLOCK_NONE,   /* data formats: no scopes to cut at */
	AST_BLOCK_INDENT, /* Python: a block is its indentation */
	AST_BLOCK_BRACE,  /* C-family: { } */
	AST_BLOCK_KEYWORD /* Lua, Bash: end/fi/done (no scope cut) */
};

struct ast_lang {
	const char *name;        /* canonical LSP languageId */
	const char *const *ids;  /* other languageIds, NULL-terminated */
	const char *const *exts; /* extensions with the dot, NULL-terminated */
	const TSLanguage *(*grammar)(void);
	enum ast_block_style blocks;
	const char *const *defs;    /* node types that define a named thing */
	const char *const *imports; /* top-level node types that import/include */
	const char *const *closers; /* lines that close what an earlier line opened
	                             * and that nothing else on the line follows
	                             * (C's `#endif`); NULL: none */
	/* Languages whose files may lend each other lines (C and C++ share
	 * headers, JavaScript and TypeScript code): the same name for a family,
	 * NULL for a language alone. */
	const char *family;
	/* Stop strings of the language (ast_lang_stops); NULL: none. */
	const char *const *stops;
};

/* ---- language rules (rules.c) ---- */

/* The document with [at, at + del) replaced by cand[0..k): what validation
 * parses, read by byte offset. */
struct spliced {
	const char *text;
	size_t len, at, del;
	const char *cand;
	size_t k;
};

/* The byte at offset b of the spliced text (0 past its end). */
char spliced_byte(const struct spliced *s, size_t b);

/* The first rule of lang's that the text inserted at [s, e) of the tree
 * breaks (an empty `if` body it wrote, a `\u` escape it left short), as
 * its static name, or NULL. */
const char *rules_broken(const struct ast_lang *lang, TSNode root, const struct spliced *sp,
                         size_t s, size_t e);

/* True when `type` is one of the NULL-terminated list. */
bool lang_type_in(const char *type, const char *const *list);

/* The node's defined name (its "name" field, or the identifier at the bottom of
 * its declarator chain for C/C++), copied into buf; false when it has none. */
bool lang_def_name(TSNode def, const char *text, char *buf, size_t cap);

/* The document's current tree (parsed), or NULL. Borrowed. */
const TSTree *ast_doc_tree(struct ast_doc *doc);

/* The document's parser, lent for parses of other trees (validation) so that
 * each check does not build a parser: borrowed, NULL for a NULL language. */
TSParser *ast_doc_parser(struct ast_doc *doc);

/* What validation counted in the document with the cursor's line emptied
 * (validate.c near_limit): the same for every candidate at one cursor, so
 * kept with the document until its next edit. */
struct doc_bare {
	bool valid;
	size_t line_start; /* of the line emptied */
	size_t near, total;
};

/* The document's slot for it (NULL for a NULL doc). */
struct doc_bare *ast_doc_bare(struct ast_doc *doc);

/* Calls fn for each error (ERROR or MISSING node) under `root`, outer ones
 * first, descending only into subtrees that have one, so a clean tree costs
 * O(1). */
void tree_each_error(TSNode root, void (*fn)(TSNode node, void *ctx), void *ctx);

/* Calls fn for each leaf (token) under `root` with bytes in [s, e), in
 * document order, until fn returns false. Zero-width leaves (MISSING) have
 * no bytes. */
void tree_each_leaf(TSNode root, size_t s, size_t e, bool (*fn)(TSNode leaf, void *ctx), void *ctx);

/* The same for the leaves of every node that has an error or overlaps
 * [s, e): the subtrees that do neither are skipped. */
void tree_each_broken_leaf(TSNode root, size_t s, size_t e, bool (*fn)(TSNode leaf, void *ctx),
                           void *ctx);

/* A bracket token: 1 for an opener (its closing character to *closer,
 * if not NULL), -1 for a closer, 0 for anything else, including the
 * brackets the parser made up (MISSING) and those inside strings. */
int tree_bracket(TSNode leaf, char *closer);

/* How many errors tree_each_error visits. */
size_t tree_error_count(TSNode node);

/* A new parser for lang (NULL on failure). */
TSParser *lang_parser_new(const struct ast_lang *lang);

/* ---- signatures (slice.c), shared with outline.c ---- */

/* Identifiers used near the cursor with their distance in lines. */
struct ref {
	char name[64];
	size_t dist;
};

struct refs {
	struct ref v[256];
	size_t n;
};

/* Adds to r the identifiers of the leaves under root within [from, to),
 * each with its least distance in lines from cursor (256 names at most). */
void slice_refs_collect(TSNode root, const char *text, size_t from, size_t to, size_t cursor,
                        struct refs *r);

/* The header of a definition: the end of its text up to its body (or all
 * of a short type); *start gets its start. */
size_t slice_header_end(TSNode def, const char *text, size_t *start);

/* Appends to buf[0..l) (cap bytes) the signatures of the methods in a
 * container definition's body that r names (all of them, up to 12, when r
 * is NULL) and constructors, closed as the language does. Returns the new
 * length. */
size_t slice_members_add(const struct ast_lang *lang, TSNode def, const char *text,
                         const struct refs *r, char *buf, size_t l, size_t cap);

/* ---- text helpers (scope.c) ---- */

/* Start of the line holding byte pos / end of it (the '\n' or len). */
/* Display width of leading whitespace of text[from..to) (tab = 8 columns). */
size_t text_indent_width(const char *text, size_t from, size_t to);
/* Whether text[from..to) is only spaces, tabs, CR and LF. */
bool text_is_blank(const char *text, size_t from, size_t to);

/* Small tree-sitter readings every walker in ast/ makes. */
static inline bool node_is(TSNode n, const char *type)
{
	return !strcmp(ts_node_type(n), type);
}

static inline TSNode node_field(TSNode n, const char *name)
{
	return ts_node_child_by_field_name(n, name, (uint32_t)strlen(name));
}

/* doc's root node; a null node when doc is NULL or has no tree. */
static inline TSNode doc_root(struct ast_doc *doc)
{
	const TSTree *t = doc ? ast_doc_tree(doc) : NULL;
	return t ? ts_tree_root_node(t) : (TSNode){ 0 };
}

/* Bytes of the candidate left once it stops where it leaves the enclosing
 * scope (see ast_validate). Returns cand_len when it stays inside. */
size_t scope_cut(const struct ast_lang *lang, const char *text, size_t len, size_t cursor,
                 const char *cand, size_t cand_len);

/* Bytes of the candidate left once trailing closers/quotes that the text after
 * the cursor starts with (and that the candidate does not itself open) are
 * dropped. */
size_t closers_cut(const char *text, size_t len, size_t cursor, const char *cand, size_t cand_len);

#endif
