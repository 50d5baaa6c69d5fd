/*
 * document.h - the text of one open document, editable in time that does not
 * grow with its size.
 *
 * A document is a sequence of bytes (normally UTF-8, but any bytes are kept
 * as they are) split into chunks of a few KiB. Per-chunk byte and line-break
 * counts sit in Fenwick trees, so offset <-> line lookups cost O(log n) plus a
 * scan of one chunk, and a keystroke touches one chunk and O(log n) tree
 * nodes. A chunk never ends between the \r and \n of a CRLF pair.
 *
 * Lines end at "\n", "\r\n" or a lone "\r" (the LSP specification counts all
 * three). A document of N line terminators has N + 1 lines; the empty
 * document has one empty line.
 *
 * Threads: a struct doc belongs to the thread that created it (the LSP loop
 * thread); readers on other threads need their own copy (doc_text).
 */
#ifndef INFILL_LSP_DOCUMENT_H
#define INFILL_LSP_DOCUMENT_H

#include <stddef.h>

struct doc;

/* A new document holding a copy of text[0..len). Returns NULL when out of
 * memory. The caller owns the result and frees it with doc_free. text may be
 * NULL when len is 0. */
struct doc *doc_new(const char *text, size_t len);

/* Frees the document; accepts NULL. */
void doc_free(struct doc *d);

/* Length in bytes. */
size_t doc_length(const struct doc *d);

/* Number of lines: line terminators + 1 (so at least 1). */
size_t doc_line_count(const struct doc *d);

/* Byte offset where line `line` (0-based) starts. A line past the last one
 * clamps to doc_length. */
size_t doc_line_start(const struct doc *d, size_t line);

/* Byte offset where the content of line `line` ends, before its terminator
 * ("\n", "\r\n" or "\r"); for the last line, doc_length. A line past the
 * last one clamps to doc_length. */
size_t doc_line_end(const struct doc *d, size_t line);

/* The 0-based line holding byte `offset` (clamped to doc_length). An offset
 * inside a terminator (between \r and \n, or at the terminator itself)
 * belongs to the line the terminator ends. */
size_t doc_line_at(const struct doc *d, size_t offset);

/* Replaces bytes [start, end) with a copy of text[0..len). Returns 0, or
 * -EINVAL when start > end or end > doc_length (nothing changed), or
 * -ENOMEM (nothing changed). text may be NULL when len is 0. */
int doc_replace(struct doc *d, size_t start, size_t end, const char *text, size_t len);

/* Copies bytes [start, end) into buf (which holds at least end - start
 * bytes; no NUL is added) and returns the number copied. start and end are
 * clamped to doc_length; start >= end copies nothing. */
size_t doc_read(const struct doc *d, size_t start, size_t end, char *buf);

/* The whole text as a new NUL-terminated string (allocated with malloc; the
 * caller frees it), or NULL when out of memory. Embedded NUL bytes are kept,
 * so use doc_length for the size. */
char *doc_text(const struct doc *d);

/* A contiguous run of bytes starting at `offset`: returns a pointer to it
 * and stores its length (> 0) in *len. At or past the end returns a pointer
 * to "" and stores 0 (what tree-sitter's TSInput.read expects). Borrowed:
 * valid until the next doc_replace or doc_free. */
const char *doc_chunk(const struct doc *d, size_t offset, size_t *len);

#endif
