/*
 * context.h - context from the rest of the project: what the
 * model is shown besides the file being edited.
 *
 * Four parts, each a section below:
 *   1. .gitignore rules (gitignore.c): which files of the workspace are not
 *      the project's.
 *   2. The workspace index (index.c): per file, its definitions' signatures
 *      and its imports (ast_outline), built by a scan of the root and kept
 *      current file by file; bounded in files and bytes.
 *   3. The ring of recent chunks (ring.c): the text around the last edits
 *      and views, as the editor showed it.
 *   4. Selection (select.c): for one cursor, the chunks that go before the
 *      prefix, in order of trust: definitions of the names used near the
 *      cursor, found in the files the current file imports; chunks of the
 *      other open documents most similar to the text around the cursor
 *      (Jaccard over identifier sets); the recent ring. Each chunk says why.
 *
 * Depends on ast/ and the C library only (no libuv, no jansson), so the
 * server, `infill context` and `infill eval --workspace` share it.
 *
 * Threads: a ctx_index may be used from any thread (one mutex inside; a
 * scan builds its table outside the lock and swaps it in). ctx_ignore and
 * ctx_ring belong to one thread at a time; ctx_select reads its query's
 * objects on the calling thread.
 *
 * Errors: 0 or a negative errno value.
 */
#ifndef INFILL_LSP_CONTEXT_H
#define INFILL_LSP_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "ast.h"

/* ---- 1. .gitignore -------------------------------------------------------- */

/*
 * A subset of gitignore(5) that covers what projects write: blank lines and
 * `#` comments, `!` negation (the last matching rule wins), a trailing `/`
 * for folders only, a leading or inner `/` anchoring a pattern to the
 * folder of its .gitignore (else it matches a name at any depth), and the
 * globs `*`, `?`, `[...]` and `**`. Not: escapes with `\`, trailing-space
 * rules, core.excludesFile.
 */
struct ctx_ignore;

/* A new empty rule set, or NULL on out of memory. Free with ctx_ignore_free
 * (accepts NULL). */
struct ctx_ignore *ctx_ignore_new(void);
void ctx_ignore_free(struct ctx_ignore *ig);

/* Adds the rules of one .gitignore file; base is its folder relative to the
 * root ("" for the root itself, no trailing '/'; copied). 0 or -ENOMEM. */
int ctx_ignore_add(struct ctx_ignore *ig, const char *base, const char *text, size_t len);

/* Whether relpath ('/'-separated, relative to the root) is ignored by the
 * rules (its parents are not looked at: a walk does not enter an ignored
 * folder). */
bool ctx_ignore_match(const struct ctx_ignore *ig, const char *relpath, bool is_dir);

/* ---- 2. The workspace index ----------------------------------------------- */

struct ctx_index_params {
	const char *root;      /* the workspace folder (copied) */
	int max_files;         /* context.index.maxFiles */
	int max_mb;            /* context.index.maxMB: paths, signatures, imports, texts */
	size_t max_file_bytes; /* larger files are skipped; 0: 1 MiB */
};

struct ctx_index;

/* A new empty index of p->root, or NULL on out of memory or when the root
 * cannot be resolved (not a folder). Nothing is read before ctx_index_scan.
 * Free with ctx_index_free (accepts NULL). */
struct ctx_index *ctx_index_new(const struct ctx_index_params *p);
void ctx_index_free(struct ctx_index *ix);

/*
 * Walks the root and replaces the index with what it finds: every file
 * with a grammar, under the root, not a symbolic link (links are never
 * followed: nothing outside the root is read), not ignored by .gitignore
 * files (nor .git, node_modules, __pycache__), not over max_file_bytes and
 * not generated (a "generated"/"do not edit" marker in its first lines, or
 * minified: lines over 1,000 bytes on average). Stops adding at max_files
 * or max_mb (stats say truncated). Slow (reads and parses every file): call
 * it off the loop thread. Lookups during a scan see the previous table.
 * 0 or -ENOMEM.
 */
int ctx_index_scan(struct ctx_index *ix);

/*
 * Brings one file up to date after a save or a change on disk: re-read and
 * re-outlined, added when new, dropped when gone, ignored, too big or out
 * of the root. path is absolute. 0, -ENOMEM; a path outside the root is
 * -EPERM (nothing changes).
 */
int ctx_index_update(struct ctx_index *ix, const char *path);

struct ctx_index_stats {
	size_t files, defs, imports;
	size_t bytes;             /* what max_mb bounds */
	size_t texts, text_bytes; /* files whose text is kept, and those texts' bytes */
	size_t skipped_ignored, skipped_big, skipped_generated, skipped_links;
	bool truncated; /* max_files or max_mb stopped the scan */
	unsigned scans, updates;
};
void ctx_index_stats(struct ctx_index *ix, struct ctx_index_stats *out);

/* The root as resolved (realpath; borrowed while the index lives). */
const char *ctx_index_root(const struct ctx_index *ix);

/*
 * The files that the file at path (absolute; need not be indexed) imports,
 * resolved against the index from imports[0..n) (its ast_outline's) and the
 * language's implicit neighbours (a Go file's package folder, a C file's
 * header of the same name): absolute paths (new strings, the caller frees
 * each and the array) into *out, at most cap. Returns how many or -ENOMEM.
 */
int ctx_index_imported(struct ctx_index *ix, const char *path, const struct ast_lang *lang,
                       const struct ast_import *imports, size_t n, char ***out, size_t cap);

/*
 * The files most like the file at path (absolute, under the root) by what
 * they import: same language and extension, Jaccard of the two import sets
 * (a path compared by its last component) at least 0.3 with two imports in
 * common (or all of the file's), best first, at most cap. The sibling files
 * of a module (the other `*_ops.c` that include the same headers) write the
 * same statements, which the headers they share do not show. A file with no
 * imports has none. Absolute paths (new strings, the caller frees each and
 * the array) into *out. Returns how many or -ENOMEM.
 */
int ctx_index_related(struct ctx_index *ix, const char *path, const struct ast_lang *lang,
                      const struct ast_import *imports, size_t n, char ***out, size_t cap);

/*
 * The text of the indexed file at path (absolute) as the index last read
 * it (the scan or an update), when it kept it: files up to 256 KiB, while
 * the kept texts stay within half of max_mb. What the server shows of a
 * file that is not open, without reading it on its loop. A copy (new
 * string, NUL-terminated; the caller frees it) into *out, its length into
 * *len. Returns 1, 0 when not indexed or not kept (*out NULL), or -ENOMEM.
 */
int ctx_index_text(struct ctx_index *ix, const char *path, char **out, size_t *len);

/*
 * Where name is defined at the top level of the project, for an import to
 * add: the one indexed file of lang's family, other than the file at path
 * (absolute, under the root), whose outline defines it, as a path relative
 * to path's folder ("models.py", "../lib/util.js") into buf[0..cap).
 * Returns 1, or 0 when no file or several define it.
 */
int ctx_index_defined_in(struct ctx_index *ix, const char *path, const struct ast_lang *lang,
                         const char *name, char *buf, size_t cap);

/*
 * The indexed files whose imports name the file at path (absolute, under
 * the root), as ctx_index_imported resolves them: a Python `from mod
 * import` or `import mod`, a JS/TS relative import, a C/C++ #include of
 * the file or, for a .c/.cpp file, of its header of the same name (and
 * that header itself, which declares what the file defines). Kin
 * languages only, the file itself left out, at most cap, in index order.
 * What a rename of one of its top-level names reaches. Absolute paths (new
 * strings, the caller frees each and the array) into *out. Returns how
 * many or -ENOMEM.
 */
int ctx_index_importers(struct ctx_index *ix, const char *path, char ***out, size_t cap);

/* The indexed files' absolute paths, sorted (new strings and array: the
 * caller frees them). Returns how many, or -ENOMEM. */
int ctx_index_paths(struct ctx_index *ix, char ***out);

/* ---- 3. The ring of recent chunks ----------------------------------------- */

struct ctx_ring;

/* A ring of at most cap chunks (0: 16), or NULL. Free with ctx_ring_free. */
struct ctx_ring *ctx_ring_new(size_t cap);
void ctx_ring_free(struct ctx_ring *r);

/* Records the lines around byte at of text (the 8 before and 8 after) of
 * the document path, as the newest chunk; an older chunk of the same
 * document that overlaps those lines is replaced. 0 or -ENOMEM. */
int ctx_ring_add(struct ctx_ring *r, const char *path, const char *text, size_t len, size_t at);

/* Forgets a document's chunks (closed). */
void ctx_ring_forget(struct ctx_ring *r, const char *path);

/* ---- 4. Selection ----------------------------------------------------------- */

enum ctx_source {
	CTX_SOURCE_DEFINITION, /* the signature of a name used near the cursor */
	CTX_SOURCE_SIMILAR,    /* the chunk of another open document most like the cursor's */
	CTX_SOURCE_RECENT,     /* a recently edited or viewed chunk */
	CTX_SOURCE_COUNT,
};

/* "definition", "similar", "recent" (static). */
const char *ctx_source_name(enum ctx_source s);

struct ctx_chunk {
	enum ctx_source source;
	char *path; /* shown above it: relative to the root when under it (owned) */
	char *text; /* owned, NUL-terminated */
	size_t len;
	double score;  /* within its source; higher first */
	size_t tokens; /* as the query's count function counted it */
	char why[96];  /* "send: defined in models.py, imported" */
};

struct ctx_chunks {
	struct ctx_chunk *v; /* owned; in prompt order (see ctx_select) */
	size_t n, cap;
	size_t tokens[CTX_SOURCE_COUNT]; /* per source, of those chosen */
	/* Text of the other files whose lines may continue the cursor's line
	 * (the open documents and imported files looked at, joined by blank
	 * lines; owned, may be NULL). */
	char *lines;
	size_t lines_len;
};

void ctx_chunks_finish(struct ctx_chunks *c);

/* Another open document (or a file standing for one), borrowed. */
struct ctx_doc {
	const char *path;
	const char *text;
	size_t len;
};

struct ctx_query {
	const char *path;        /* the current document's absolute path; may be NULL */
	const char *language_id; /* its LSP languageId */
	const char *text;        /* the current document, borrowed */
	size_t len;
	size_t cursor;
	const struct ctx_doc *open; /* other open documents; may be NULL */
	size_t n_open;
	struct ctx_index *index; /* may be NULL */
	struct ctx_ring *ring;   /* may be NULL */
	size_t budget;           /* tokens for all chunks (context.extraTokens) */
	ast_count_fn count;      /* NULL: ast_tokens_estimate */
	void *count_ctx;
	/* Files the current file imports, and the files most like it by
	 * their imports (ctx_index_related), join open (for similar chunks and
	 * their lines) unless they are open: read from disk when true (what
	 * `infill eval --workspace` and `infill context` do), else as the
	 * index kept them (ctx_index_text): the server leaves it false, so
	 * that nothing is read on its loop. */
	bool read_imported;
};

/*
 * Chooses the chunks for q into *out (caller's memory, zeroed here; release
 * with ctx_chunks_finish whatever the result). Chunks are taken in order of
 * trust (definitions, similar, recent) while they fit q->budget, then put
 * in prompt order: recent, similar, definitions - the most trusted nearest
 * the prefix. A query with nothing to offer (no index, no other documents,
 * an empty ring) gives no chunks, and the prompt is the one without project
 * context. 0 or -ENOMEM.
 */
int ctx_select(const struct ctx_query *q, struct ctx_chunks *out);

#endif
