/*
 * eval_workspace.c - the project around a file for `infill eval
 * --workspace` (mode cross) and `infill context`: context/'s index and
 * selection, with the model's tokenizer counting, and the chunks as the
 * engine takes them.
 */
#include "eval_workspace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t count_with(void *ctx, const char *text, size_t len)
{
	int n = tokenizer_count(ctx, text, len, false);
	return n < 0 ? len : (size_t)n;
}

struct ctx_index *eval_workspace_open(const char *dir, int max_files, int max_mb)
{
	struct ctx_index_params ip = { .root = dir, .max_files = max_files, .max_mb = max_mb };
	struct ctx_index *ix = ctx_index_new(&ip);
	if (!ix) {
		fprintf(stderr, "infill: cannot index %s: not a readable folder\n", dir);
		return NULL;
	}
	int rc = ctx_index_scan(ix);
	if (rc) {
		fprintf(stderr, "infill: indexing %s: %s\n", dir, strerror(-rc));
		ctx_index_free(ix);
		return NULL;
	}
	struct ctx_index_stats st;
	ctx_index_stats(ix, &st);
	fprintf(stderr,
	        "infill: workspace %s: %zu files, %zu definitions, %zu imports, %zu KiB%s "
	        "(skipped: %zu ignored, %zu big, %zu generated, %zu links)\n",
	        ctx_index_root(ix), st.files, st.defs, st.imports, st.bytes >> 10,
	        st.truncated ? ", truncated" : "", st.skipped_ignored, st.skipped_big,
	        st.skipped_generated, st.skipped_links);
	return ix;
}

int eval_workspace_context(struct ctx_index *ix, const struct tokenizer *tok, const char *path,
                           const char *language_id, const char *text, size_t len, size_t cursor,
                           size_t budget, struct ctx_chunks *chunks, struct engine_snippet **snips)
{
	*snips = NULL;
	struct ctx_query q = { .path = path,
		               .language_id = language_id,
		               .text = text,
		               .len = len,
		               .cursor = cursor,
		               .index = ix,
		               .budget = budget,
		               .count = tok ? count_with : NULL,
		               .count_ctx = (void *)tok,
		               .read_imported = true };
	int rc = ctx_select(&q, chunks);
	if (rc || !chunks->n) return rc;
	*snips = calloc(chunks->n, sizeof **snips);
	if (!*snips) {
		ctx_chunks_finish(chunks);
		return -ENOMEM;
	}
	for (size_t i = 0; i < chunks->n; i++)
		(*snips)[i] = (struct engine_snippet){ chunks->v[i].text, chunks->v[i].len,
			                               chunks->v[i].path };
	return 0;
}
