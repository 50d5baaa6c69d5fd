/*
 * ast.h - the tree-sitter layer: what the model sees, and which of its
 * answers may be shown.
 *
 * Its parts, each a section below:
 *   1. Languages: LSP languageId or file name -> grammar. A language without a
 *      grammar is NULL and still usable: every function here accepts a NULL
 *      language and falls back to plain line-based behaviour.
 *   2. Documents: one tree per open document, kept in step with edits by
 *      ast_doc_edit() and an incremental re-parse that pulls the text through a
 *      read callback (no copy of the text is kept here).
 *   3. Context slicing and completion shape: prefix, suffix and ranked extra
 *      snippets under token budgets, cut at syntactic boundaries.
 *   4. Validation: does inserting a candidate add syntax errors? Valid,
 *      invalid, or trimmed to its longest valid prefix.
 *   (5. Outlines, and 6. references: what an edit implies elsewhere: an
 *      identifier's uses in its scope, a function's calls, a parameter
 *      list, whether a replacement breaks the syntax; 7. members: an enum's
 *      variants and a struct's fields, the switches and initialisers that
 *      list them; 8. the names imports bind.)
 *
 * Units: every offset and length is in bytes of UTF-8 text; a point's column
 * is in bytes too (the LSP layer converts from UTF-16 or code points).
 *
 * Threads: an ast_doc belongs to one thread at a time (the loop thread in the
 * daemon). The language table is immutable and may be read from any thread.
 * Nothing here uses global mutable state.
 *
 * Errors: functions return 0 or a negative errno value (below), so
 * strerror(-rc) names any of them and a caller passes them on unchanged.
 *
 * Depends on nothing of ours (not libuv, not jansson).
 */
#ifndef INFILL_AST_H
#define INFILL_AST_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Errors --------------------------------------------------------------- */

/* Names for the negative errno values this layer returns (as libuv's UV_E*
 * are on Unix): one error space with infer/, kernels/ and the server. */
enum {
	AST_OK = 0,
	AST_ENOMEM = -ENOMEM, /* an allocation failed */
	AST_EINVAL = -EINVAL, /* an argument out of range (offset past the end, ...) */
	/* tree-sitter returned no tree: the grammar's ABI does not match the
	 * runtime's, or the parse was cancelled */
	AST_EPARSE = -EPROTO,
};

/* ---- 1. Languages --------------------------------------------------------- */

struct ast_lang;

/* The grammar for an LSP languageId ("python", "c", "cpp", "javascript",
 * "javascriptreact", "typescript", "typescriptreact", "go", "rust", "java",
 * "json", "jsonc", "shellscript", "lua", ...). NULL when there is none.
 * The result is static: never freed. */
const struct ast_lang *ast_lang_from_id(const char *language_id);

/* The grammar for a file name or path, by its extension (".py", ".h", ".tsx",
 * ...). NULL when there is none. Static result. */
const struct ast_lang *ast_lang_from_path(const char *path);

/* The languageId to open a file of this path with (what an editor would
 * send): its grammar's canonical id by the extension, as ast_lang_from_path
 * finds it ("python" for x.py, "c" for x.h), or "plaintext" when no grammar
 * has the extension. Static string. */
const char *ast_lang_id_from_path(const char *path);

/* The canonical languageId of a grammar ("python", "c", ...); "plaintext" for
 * NULL. Static string. */
const char *ast_lang_name(const struct ast_lang *lang);

/*
 * Texts that would close what the document left open at the cursor, which
 * a model seldom proposes where the file lacks them (closers.c): the rest of
 * a closing line the cursor's line has begun (C's `#endif`); on a line of
 * closing brackets, what the closed block's first line opened with it and
 * nothing closes (`)` and `);` after `}` under `it('x', () => {`); in a
 * string an earlier line opened, its delimiter (`"""`). Only where nothing
 * follows the cursor on its line; doc (optional, in step with text) is
 * needed for all but the first kind. Returns how many went to out[0..cap).
 */
struct ast_doc;
struct ast_closer {
	char text[16];
	/* a guess that only a mended file confirms: show it only where it
	 * removes an error the document has */
	bool must_mend;
};
size_t ast_closers_at(struct ast_doc *doc, const struct ast_lang *lang, const char *text,
                      size_t len, size_t cursor, struct ast_closer *out, size_t cap);

/* Whether files of language b may lend lines to a document of language a:
 * the same language, or one family (C and C++, whose headers they share;
 * JavaScript and TypeScript, with and without JSX). False when either is
 * NULL: a file without a grammar is nobody's kin. */
bool ast_lang_kin(const struct ast_lang *a, const struct ast_lang *b);

/* The language's own stop strings, NULL-terminated (an empty list for NULL
 * or a language without): a candidate is cut before the first it reaches.
 * Each starts a top-level definition or directive at column 0 ("\ndef ",
 * "\n#include"). Static. */
const char *const *ast_lang_stops(const struct ast_lang *lang);

/* Number of grammars built in, and the i-th one (for tests and --help). */
size_t ast_lang_count(void);
const struct ast_lang *ast_lang_at(size_t i);

/* ---- 2. Documents ----------------------------------------------------------- */

struct ast_point {
	uint32_t row;    /* 0-based line */
	uint32_t column; /* bytes from the start of the line */
};

/*
 * Reads the document's text from byte `offset`: returns a pointer to the next
 * chunk and sets *len to its length; at or past the end returns NULL or sets
 * *len to 0. The chunk must stay valid until the next call. Matches the
 * daemon's doc_chunk() with ctx = the document.
 */
typedef const char *(*ast_read_fn)(void *ctx, size_t offset, size_t *len);

/* Text in one piece, for ast_doc_new(lang, ast_text_read, &text) where the
 * caller holds the whole text (a snapshot, a file read in): the struct and
 * the text it points to are borrowed while the document lives. */
struct ast_text {
	const char *text;
	size_t len;
};

/* An ast_read_fn over a struct ast_text (ctx): the rest of the text from
 * offset, in one chunk. */
const char *ast_text_read(void *ctx, size_t offset, size_t *len);

struct ast_doc;

/* A new document of language `lang` (may be NULL: then no tree is ever built
 * and every call below is a cheap no-op) whose text is read through
 * read(ctx, ...). `ctx` is borrowed: it must stay valid while the document
 * lives. Nothing is parsed until the first ast_doc_parse(). NULL on no memory. */
struct ast_doc *ast_doc_new(const struct ast_lang *lang, ast_read_fn read, void *ctx);

/* Frees the document and its tree. Accepts NULL. */
void ast_doc_delete(struct ast_doc *doc);

const struct ast_lang *ast_doc_lang(const struct ast_doc *doc);

/*
 * Records one edit of the text (call it for each didChange content change, in
 * order, after the text itself changed): bytes [start_byte, old_end_byte) were
 * replaced and now end at new_end_byte. The tree is adjusted at once (cheap);
 * the re-parse waits for ast_doc_parse(), so a burst of edits costs one parse.
 */
void ast_doc_edit(struct ast_doc *doc, size_t start_byte, size_t old_end_byte, size_t new_end_byte,
                  struct ast_point start_point, struct ast_point old_end_point,
                  struct ast_point new_end_point);

/* Brings the tree up to date with the text: a full parse the first time,
 * incremental after edits, nothing when already current. 0 or AST_E*. */
int ast_doc_parse(struct ast_doc *doc);

/* Marks the tree stale so that the next parse starts from scratch (after a
 * full-text replacement, for instance). */
void ast_doc_reset(struct ast_doc *doc);

/* Whether the document has a current tree (false for a NULL language). */
bool ast_doc_has_tree(const struct ast_doc *doc);

/* Number of ERROR and MISSING nodes in the current tree (0 without one). */
size_t ast_doc_error_count(const struct ast_doc *doc);

/* The tree as an S-expression (tree-sitter's format), newly allocated with
 * malloc (the caller frees it), or NULL without a tree. For tests and debug. */
char *ast_doc_sexp(const struct ast_doc *doc);

/* ---- 3. Context slicing and completion shape -------------------------------- */

/* The line holding byte pos of text: its first byte, and the byte after its
 * last (the '\n', or len). Every layer above cuts text at lines. */
size_t ast_line_start(const char *text, size_t pos);
size_t ast_line_end(const char *text, size_t len, size_t pos);

/* Number of model tokens in text[0..len). The engine passes its tokenizer;
 * ast_tokens_estimate() is a stand-in (bytes / 3.5) when there is no model. */
typedef size_t (*ast_count_fn)(void *ctx, const char *text, size_t len);
size_t ast_tokens_estimate(void *ctx, const char *text, size_t len);

enum ast_shape_kind {
	AST_SHAPE_REST_OF_LINE, /* text follows the cursor on its line: finish the line only */
	AST_SHAPE_LINE,         /* one line (a statement being typed, a blank line in a body) */
	AST_SHAPE_BLOCK,        /* an empty body after `:`+newline or `{`: several lines */
};

/* Static name of a shape: "rest_of_line", "line", "block". */
const char *ast_shape_name(enum ast_shape_kind kind);

struct ast_shape {
	enum ast_shape_kind kind;
	char indent[64];   /* the whitespace the completion's lines start with */
	size_t indent_len; /* bytes in indent (the line's own whitespace before the cursor counts) */
};

enum ast_snippet_kind {
	AST_SNIPPET_IMPORTS,   /* the file's imports/includes that the prefix left out */
	AST_SNIPPET_SIGNATURE, /* header of a same-file definition referenced near the cursor */
};

struct ast_snippet {
	enum ast_snippet_kind kind;
	char *text; /* owned by the slice; NUL-terminated */
	size_t len;
	char name[64];     /* the defined name for signatures, "" for imports */
	size_t start_byte; /* where it comes from in the document */
	double score;      /* higher first; snippets are sorted by it */
	size_t tokens;
};

struct ast_slice_params {
	const struct ast_lang *lang; /* NULL: line-based slicing */
	const char *text;            /* the whole document, borrowed for the call */
	size_t len;
	size_t cursor;        /* byte offset of the cursor, <= len */
	size_t prefix_tokens; /* budgets (context.*Tokens: 1024, 192, 512) */
	size_t suffix_tokens;
	size_t extra_tokens;
	ast_count_fn count; /* NULL: ast_tokens_estimate */
	void *count_ctx;
	struct ast_doc *doc; /* optional: a parsed tree in step with text, reused */
	/* > 0: the prefix starts at the first boundary at or after the first
	 * multiple of start_step bytes at or after the earliest boundary that
	 * fits, so that cursors near each other (a jump a few lines away, or
	 * back) get the same window start and their prompts share the cached
	 * tokens up to the nearer cursor. Costs up to start_step bytes of
	 * context. 0: the earliest boundary that fits. */
	size_t start_step;
};

struct ast_slice {
	char *prefix; /* text[prefix_start .. cursor), owned, NUL-terminated */
	size_t prefix_len;
	size_t prefix_start;
	char *suffix; /* text[cursor .. suffix_end), owned, NUL-terminated */
	size_t suffix_len;
	size_t suffix_end;
	size_t prefix_tokens_used, suffix_tokens_used, extra_tokens_used;
	struct ast_snippet *snippets; /* owned; sorted by score, highest first */
	size_t n_snippets;
	struct ast_shape shape;
	size_t scope_end; /* end byte of the innermost enclosing definition or
	                           block (len when at top level): the engine's stop rule */
	bool syntactic;   /* true when cut by the tree, false for line-based */
};

/*
 * Builds the context for a completion at p->cursor into *out (caller's
 * memory; release with ast_slice_finish() whatever the result).
 *   - prefix: starts at the earliest statement/definition boundary whose text
 *     to the cursor fits prefix_tokens, so the enclosing function or class is
 *     whole when it fits, and nothing starts mid-token;
 *   - suffix: ends at a statement end inside the enclosing scope, at most at
 *     the scope's end, within suffix_tokens;
 *   - snippets: imports/includes the prefix dropped, then signatures (not
 *     bodies) of same-file functions, classes and types named near the
 *     cursor, ranked by distance, within extra_tokens.
 * Without a grammar the prefix and suffix are whole lines within budget.
 * 0, AST_EINVAL (cursor > len) or AST_ENOMEM.
 */
int ast_slice(const struct ast_slice_params *p, struct ast_slice *out);
void ast_slice_finish(struct ast_slice *s);

/* The completion shape at `cursor` (no tree needed: it reads the lines). */
struct ast_shape ast_shape_at(const struct ast_lang *lang, const char *text, size_t len,
                              size_t cursor);

/* ---- 4. Validation ------------------------------------------------------------- */

enum ast_verdict {
	AST_VERDICT_VALID,     /* the whole candidate (less duplicated closers) is fine */
	AST_VERDICT_TRIMMED,   /* a shorter prefix of it is fine: keep_len bytes */
	AST_VERDICT_INVALID,   /* nothing of it can be shown */
	AST_VERDICT_UNCHECKED, /* no grammar: accepted as is (scope cut still applied) */
};

/* Static name: "valid", "trimmed", "invalid", "unchecked". */
const char *ast_verdict_name(enum ast_verdict v);

struct ast_validate_params {
	const struct ast_lang *lang;
	const char *text; /* the document as it is, borrowed */
	size_t len;
	size_t cursor;         /* insertion point */
	const char *candidate; /* borrowed */
	size_t candidate_len;
	struct ast_doc *doc; /* optional: its tree (in step with text) is reused by
	                           copy + ts_tree_edit + incremental parse; it is not
	                           modified. NULL: the document is parsed here. */
	/* The line it makes is a copy of the line at copy_at (a byte offset in
	 * text): the errors that line has around it are taken as the grammar not
	 * knowing the project (a macro before a declaration), and the copy may
	 * have as many. Otherwise errors that deleting the line's text would
	 * remove are a line left unfinished. */
	bool copied;
	size_t copy_at;
};

struct ast_validation {
	enum ast_verdict verdict;
	size_t keep_len;      /* bytes of the candidate kept: a prefix of it */
	size_t errors_before; /* error nodes the document had that count against it */
	size_t errors_after;  /* error nodes with the kept text inserted */
	bool scope_cut;       /* cut where it left the enclosing scope */
	bool closers_dropped; /* trailing closers the suffix supplies were dropped */
	/* The language rule (ast_rule_name) the whole candidate broke, even
	 * where a shorter prefix of it passed; NULL when none did. Static. */
	const char *rule;
	unsigned parses; /* re-parses it took (for benchmarks) */
};

/*
 * Checks candidate inserted at cursor. In order: cut where the candidate
 * leaves the enclosing scope (a line dedented below the cursor's block in
 * Python; an unmatched `}` in C-family when the suffix closes the block), drop
 * trailing closing brackets/quotes that the suffix already starts with, then
 * compare syntax errors with the document as it is: errors at or after the
 * cursor's line that touch the inserted text, or more errors elsewhere than
 * before, make it invalid, and so do more errors from the cursor's line to
 * the next line with text, or in the file, than the file has with the text
 * of the cursor's line deleted (a line left unfinished: `...o` with no comma
 * before the next entry); if so the longest prefix cut at a line or
 * statement end that passes is kept (TRIMMED). When a break earlier in the
 * file (an unclosed bracket) has swallowed the cursor's region into an error
 * node, a candidate that does not heal that break is judged inside the
 * top-level construct around the cursor instead (errors_* then count that
 * region), and where that construct is broken too, must not add errors to
 * the file either. Whatever the errors say, the line's own text after the
 * cursor must not end up in a comment the candidate opened, and the text
 * inserted may break none of the language's rules (ast_rule_name): a parse that mends the
 * line by reading a keyword as a name (`r->` completed with
 * `\n\n    if (r->flags)` is the call `r->if(...)` to the grammar) is no
 * mending. Whitespace-only results are INVALID. The kept text is candidate[0 .. keep_len).
 * 0, AST_EINVAL or AST_ENOMEM (then *out says INVALID).
 */
int ast_validate(const struct ast_validate_params *p, struct ast_validation *out);

/*
 * The language rules validation applies beside the grammar (rules.c): what
 * parses but is almost never meant (`if (x);`, `while (x);`, `else ;`) and
 * what the grammar lets through but the language refuses (a Python `\u`
 * with fewer than 4 hex digits, C's `\x` with none, `0x` with no digit).
 * A candidate that breaks one in the text it inserts is cut before it or
 * refused; ast_validation.rule names it. Rows in table order; names and
 * the languageIds of each row (space-separated) are static, NULL past the
 * end.
 */
size_t ast_rule_count(void);
const char *ast_rule_name(size_t i);
const char *ast_rule_langs(size_t i);

/* ---- 5. Outlines: what a file defines and imports --------------------------- */

/* How an import names what it brings in; the caller resolves it to files
 * (context/ does, against the workspace). */
enum ast_import_kind {
	AST_IMPORT_PYTHON,   /* dotted module, leading dots relative: "pkg.mod", "..x" */
	AST_IMPORT_INCLUDE,  /* C/C++ #include "x.h": a path from the file's folder */
	AST_IMPORT_RELATIVE, /* JS/TS import ... from './x': a path, extension optional */
	AST_IMPORT_GO,       /* an import path "example.com/m/pkg" */
	AST_IMPORT_RUST_MOD, /* mod x; : x.rs or x/mod.rs beside the file */
	AST_IMPORT_RUST_USE, /* use crate::a::b : "a/b" from the crate root */
};

struct ast_import {
	enum ast_import_kind kind;
	char spec[240]; /* as above, NUL-terminated; longer ones are skipped */
};

struct ast_def {
	char name[64];
	size_t start, end; /* the definition's bytes in the text */
	char *sig;         /* its signature: header, methods' headers, no bodies
	                    * (owned by the outline, NUL-terminated) */
	size_t sig_len;
};

struct ast_outline {
	struct ast_def *defs; /* owned, in document order */
	size_t n_defs;
	struct ast_import *imports; /* owned, in document order */
	size_t n_imports;
};

/*
 * The top-level definitions of text (and those one level inside a class,
 * namespace or impl; C prototypes and #defines of headers too) with their
 * signatures, and its imports. doc (optional, a parsed tree of the same
 * text) is reused; else the text is parsed here. A NULL language gives an
 * empty outline. *out is the caller's memory: release it with
 * ast_outline_finish whatever the result. 0, AST_ENOMEM or AST_EPARSE.
 */
int ast_outline(const struct ast_lang *lang, const char *text, size_t len, struct ast_doc *doc,
                struct ast_outline *out);
void ast_outline_finish(struct ast_outline *o);

struct ast_name {
	char name[64];
	size_t dist; /* lines from the cursor to its nearest use */
};

/*
 * The identifiers used in the lines around cursor (40 before, 8 after),
 * nearest first, into out[0..cap); returns how many, or a negative AST_E*.
 * The callee, the receiver's attribute, the annotated type are all among
 * them. doc as for ast_outline.
 */
int ast_names_near(const struct ast_lang *lang, const char *text, size_t len, size_t cursor,
                   struct ast_doc *doc, struct ast_name *out, size_t cap);

/* ---- 6. References: what an edit implies elsewhere (refs.c) ----------------- */

/* Every function here reads doc's current tree (parsed, in step with text:
 * the caller ran ast_doc_parse); without one they find nothing. Offsets are
 * bytes of text. Scope is syntactic: the innermost function, method or
 * lambda whose body or parameters hold the place, else the whole file. */

struct ast_span {
	size_t start, end;
};

/* Whether c may be part of an identifier (ASCII letters, digits, `_`, `$`,
 * and any byte of a multi-byte UTF-8 character). */
bool ast_is_ident_byte(unsigned char c);

/* The identifier tokens whose text is name[0..name_len) in the scope of
 * the place at (the start of one of them), in document order, into
 * out[0..cap): strings and comments that spell the name are not tokens of
 * it. Returns how many. */
int ast_ident_refs(struct ast_doc *doc, const char *text, size_t len, size_t at, const char *name,
                   size_t name_len, struct ast_span *out, size_t cap);

#define AST_CALL_ARGS 16 /* arguments or parameters looked at per call or list */

/* One argument or parameter: its bytes, and the name in it (a keyword
 * argument's name; a parameter's own name; name_start == name_end when
 * none). */
struct ast_arg {
	size_t start, end;
	size_t name_start, name_end;
	bool has_default; /* a parameter with a default value */
};

struct ast_call {
	size_t start, end;           /* the whole call */
	size_t args_start, args_end; /* the argument list, brackets included */
	bool method;                 /* called through a receiver (`obj.f(...)`) */
	struct ast_arg args[AST_CALL_ARGS];
	size_t n_args;
};

/* The calls in text of a function or method whose name (the callee's last
 * identifier: `f`, `obj.f`, `pkg::f`) is name[0..name_len), in document
 * order, into out[0..cap). Returns how many. */
int ast_calls_of(struct ast_doc *doc, const char *text, size_t len, const char *name,
                 size_t name_len, struct ast_call *out, size_t cap);

struct ast_params {
	char name[64];               /* the function's name */
	size_t list_start, list_end; /* the parameter list, brackets included */
	struct ast_arg params[AST_CALL_ARGS];
	size_t n;
};

/* The parameter list of a named definition that holds byte at, into *out;
 * false when at is in none. */
bool ast_params_at(struct ast_doc *doc, const char *text, size_t len, size_t at,
                   struct ast_params *out);

/* The innermost call whose argument list holds byte at (between its
 * brackets), into *out, and its callee's last name into name[0..cap)
 * (NUL-terminated); false when at is in none inside its function. */
bool ast_call_at(struct ast_doc *doc, const char *text, size_t len, size_t at, struct ast_call *out,
                 char *name, size_t cap);

/* The parameter list of the one definition of a function or method named
 * name in the file, into *out; false when there is none, or more than one
 * (overloads, methods of two classes: which one a call means is a guess). */
bool ast_def_params(struct ast_doc *doc, const char *text, size_t len, const char *name,
                    struct ast_params *out);

/* Whether replacing [start, end) of text by repl[0..repl_len) leaves the
 * file with no more syntax errors than it has (*ok), judged by an
 * incremental re-parse of a copy of doc's tree (doc is not changed). *ok is
 * true without a grammar. 0, AST_EINVAL, AST_ENOMEM or AST_EPARSE (then
 * *ok is false). */
int ast_replace_check(struct ast_doc *doc, const char *text, size_t len, size_t start, size_t end,
                      const char *repl, size_t repl_len, bool *ok);

/* ---- 7. Members: an enum's variants, a struct's fields, and the places
 * that list them again (members.c) --------------------------------------- */

/* Read like section 6: doc's current tree, syntax only (a switch belongs to
 * an enum by the names its labels spell, not by types). */

#define AST_MEMBERS 64 /* members looked at per enum or struct */

struct ast_members {
	bool is_enum;                       /* variants (else fields) */
	char type_name[64];                 /* the enum's or struct's name; "" when none */
	size_t list_start, list_end;        /* the body that lists them */
	struct ast_span items[AST_MEMBERS]; /* each member's whole entry */
	struct ast_span names[AST_MEMBERS]; /* the name it defines */
	size_t n;
};

/* The member list that holds byte at, into *out: a C/C++ enumerator list
 * or field list, a TypeScript or Java enum body, a Rust enum's variants or
 * a struct's fields, the body of a Python class (its assignments; an enum
 * when it derives from an Enum or Flag). False when at is in none (a
 * function's body inside a class is not its member list). */
bool ast_members_at(struct ast_doc *doc, const char *text, size_t len, size_t at,
                    struct ast_members *out);

#define AST_ARMS 64 /* arms looked at per switch */

struct ast_arm {
	size_t start, end;             /* the arm: its label through its body */
	size_t label_start, label_end; /* what it matches; equal for a default */
	size_t name_start, name_end;   /* the name its label ends with (`Kind::A` ->
	                              * `A`); equal when it names none */
	bool multi;                    /* the label lists several values (`A | B`) */
	bool fallback;                 /* `default`, `_` */
};

struct ast_switch {
	size_t start, end;
	struct ast_arm arms[AST_ARMS];
	size_t n;
};

/* The switch and match statements of the file (C/C++/Java/JS/TS `switch`,
 * Go's expression switch, Rust's `match`, Python's `match`), each with its
 * arms in order, in document order into out[0..cap). Returns how many. */
int ast_switches(struct ast_doc *doc, const char *text, size_t len, struct ast_switch *out,
                 size_t cap);

struct ast_init {
	size_t start, end;                   /* the braces */
	bool designated;                     /* its entries name their fields (`.x = 1`, `x: 1`) */
	struct ast_arg items[AST_CALL_ARGS]; /* name_*: the field an entry names */
	size_t n;
};

/* The initialisers of struct name[0..name_len): C/C++ declarations and
 * compound literals of `struct name` or of the type name (each element's
 * braces for an array of it), Rust struct expressions. Document order into
 * out[0..cap); returns how many. */
int ast_inits_of(struct ast_doc *doc, const char *text, size_t len, const char *name,
                 size_t name_len, struct ast_init *out, size_t cap);

/* ---- 8. Imports: the names a file's imports bind (imported.c) ------------- */

struct ast_imported {
	struct ast_span name;   /* the name it binds (an alias when aliased) */
	struct ast_span item;   /* the entry that binds it (`b as c`, `{ x }`'s `x`) */
	struct ast_span stmt;   /* the whole import statement */
	struct ast_span module; /* what it imports from (a Python module, a JS
	                         * source string with its quotes); empty for a
	                         * Python `import m` */
	size_t in_stmt;         /* names its statement binds */
	bool named;
};

/* The names the top-level imports of a Python, JavaScript or TypeScript
 * file bind, in document order into out[0..cap); returns how many. `import
 * a.b` (binding a, but not removable by name) and `*` are left out. */
int ast_imported_names(struct ast_doc *doc, const char *text, size_t len, struct ast_imported *out,
                       size_t cap);

/* The identifiers [start, end) of doc's text holds that are uses of a name
 * (not a definition's or parameter's name, an attribute, a keyword
 * argument's name, an assignment's target, nor in an import), in order into
 * out[0..cap); returns how many. */
int ast_idents_in(struct ast_doc *doc, size_t start, size_t end, struct ast_span *out, size_t cap);

#endif
