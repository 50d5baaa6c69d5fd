/*
 * context_internal.h - what the files of context/ share and nobody else
 * sees: the index's lookup of definitions by name, for select.c.
 */
#ifndef INFILL_LSP_CONTEXT_INTERNAL_H
#define INFILL_LSP_CONTEXT_INTERNAL_H

#include "context.h"

/* Called for each definition found: rel is its file relative to the root,
 * def and name are borrowed for the call (the index is locked: do not call
 * back into it). global: found by name anywhere, not through an import.
 * A non-zero return stops the search and is returned. */
typedef int (*ctx_def_fn)(void *ud, const char *rel, const struct ast_def *def,
                          const struct ast_name *name, bool global);

/*
 * Definitions of names[0..n_names) in the files paths[0..n_paths) (absolute,
 * as ctx_index_imported gives them), then, for names of 4 bytes or more
 * defined at most twice in the whole index, wherever they are, except in
 * the file self (absolute, may be NULL: the current file, whose indexed copy
 * may differ from the text being completed). Returns 0 or what fn returned.
 */
int ctx_index_find_defs(struct ctx_index *ix, const char *self, char *const *paths, size_t n_paths,
                        const struct ast_name *names, size_t n_names, ctx_def_fn fn, void *ud);

/* Chunks in the ring, and the i-th newest (0: the newest): borrowed until
 * the ring changes. */
size_t ctx_ring_count(const struct ctx_ring *r);
void ctx_ring_at(const struct ctx_ring *r, size_t i, const char **path, const char **text,
                 size_t *len);

#endif
