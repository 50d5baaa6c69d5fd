/*
 * docs.h - the open documents: URI -> text, version, language (private to
 * lsp/).
 *
 * Threads: the loop thread owns the table and every entry in it.
 */
#ifndef INFILL_LSP_DOCS_H
#define INFILL_LSP_DOCS_H

#include <stddef.h>
#include <stdint.h>

#include "document.h"

struct docs_entry {
	char *uri;
	char *language_id;
	int64_t version;     /* as the client numbers it */
	uint64_t generation; /* bumped by every edit, ours (versions can repeat) */
	struct doc *doc;
	struct docs_entry *next; /* hash chain */
};

struct docs;

/* A new, empty table; NULL when out of memory. */
struct docs *docs_new(void);

/* Frees the table and every document in it; accepts NULL. */
void docs_free(struct docs *d);

/* The entry for uri, or NULL. Borrowed: valid until docs_close of that uri
 * or docs_free. */
struct docs_entry *docs_find(struct docs *d, const char *uri);

/* Opens (or reopens, replacing) uri with a copy of text[0..len). Returns the
 * entry, or NULL when out of memory (the table is unchanged). */
struct docs_entry *docs_open(struct docs *d, const char *uri, const char *language_id,
                             int64_t version, const char *text, size_t len);

/* Closes uri; returns 0, or -ENOENT when it was not open. */
int docs_close(struct docs *d, const char *uri);

/* Calls fn(entry, ud) for each open document, in no particular order; fn
 * must not open or close documents. */
void docs_each(struct docs *d, void (*fn)(struct docs_entry *e, void *ud), void *ud);

/* Number of open documents. */
size_t docs_count(const struct docs *d);

#endif
