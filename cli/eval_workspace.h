/*
 * eval_workspace.h - `infill eval --workspace DIR` and `infill context`:
 * the project around a file, as the server would see it with the file's
 * imports open (context/). Private to cli/.
 */
#ifndef INFILL_LSP_EVAL_WORKSPACE_H
#define INFILL_LSP_EVAL_WORKSPACE_H

#include <stddef.h>

#include "context.h"
#include "engine.h"
#include "tokenizer.h"

/*
 * The index of dir, scanned now, bounded by max_files and max_mb (as the
 * settings context.index.*). Returns it (free with ctx_index_free), or NULL
 * with a message on stderr.
 */
struct ctx_index *eval_workspace_open(const char *dir, int max_files, int max_mb);

/*
 * The project context for the cursor in text (the file at path, absolute,
 * with its hole), chosen as the server chooses it, with the files it
 * imports read as its open neighbours, within budget tokens counted by tok
 * (NULL: estimated). Fills *chunks (release with ctx_chunks_finish) and
 * *snips (a new array borrowing chunks' texts, n = chunks->n; free it).
 * 0 or -ENOMEM.
 */
int eval_workspace_context(struct ctx_index *ix, const struct tokenizer *tok, const char *path,
                           const char *language_id, const char *text, size_t len, size_t cursor,
                           size_t budget, struct ctx_chunks *chunks, struct engine_snippet **snips);

#endif
