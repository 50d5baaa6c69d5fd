/*
 * doc_internal.h - helpers shared by document.c and position.c, not part of
 * the public face of lsp/.
 */
#ifndef INFILL_LSP_DOC_INTERNAL_H
#define INFILL_LSP_DOC_INTERNAL_H

#include <stddef.h>

struct doc;

/* Number of '\n' bytes in [0, offset) (offset clamped). */
size_t doc_lf_before(const struct doc *d, size_t offset);

/* Offset just past the k-th (0-based) '\n'; doc_length when there are not
 * that many. */
size_t doc_after_lf(const struct doc *d, size_t k);

#endif
