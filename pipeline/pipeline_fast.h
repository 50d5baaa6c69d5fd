/*
 * pipeline_fast.h - the typed-ahead fast path of the pipeline (private to
 * pipeline/): per document, the last answer given (its text snapshot, cursor and
 * the candidates shown); when the next request's text is that snapshot with
 * characters typed at the cursor and they begin a candidate shown, the rest
 * of that candidate is the answer, without the model.
 *
 * Threads: the loop thread only (pipeline.c calls these from
 * pipeline_submit and from its result delivery).
 */
#ifndef INFILL_LSP_PIPELINE_FAST_H
#define INFILL_LSP_PIPELINE_FAST_H

#include <stdbool.h>
#include <stddef.h>

#include "pipeline.h"

/* One document's memory; a list of them starts as NULL. */
struct fast_doc;

/* If req types the beginning of a candidate last shown for its document,
 * fills out with the rest of each such candidate (texts new; ranges at the
 * new cursor) and returns true; else returns false and leaves out alone. */
bool fast_answer(struct fast_doc **docs, const struct completion_request *req,
                 struct completion_result *out);

/* Whether fast_answer would answer req (nothing allocated). */
bool fast_applies(struct fast_doc **docs, const struct completion_request *req);

/* Remembers res as the answer shown for req's document. Takes req->text
 * (req->text becomes NULL); res is borrowed (copied). */
void fast_record(struct fast_doc **docs, struct completion_request *req,
                 const struct completion_result *res);

/*
 * Lengthens what is remembered for uri: when the snapshot last answered is
 * still text[0, len) with the cursor at cursor, each candidate shown that a
 * candidate of ext (same range) begins with and outruns is replaced by that
 * longer one, so typing along the suggestion is answered with more of it.
 * What was shown stays a prefix of what is remembered. Everything borrowed.
 * Returns how many candidates grew.
 */
size_t fast_extend(struct fast_doc **docs, const char *uri, const char *text, size_t len,
                   size_t cursor, const struct completion_result *ext);

/* The best candidate last shown for uri (borrowed until the next call that
 * changes docs), its length in *len; NULL when none. */
const char *fast_top(struct fast_doc **docs, const char *uri, size_t *len);

/* Forgets a document; forgets them all. */
void fast_doc_remove(struct fast_doc **docs, const char *uri);
void fast_doc_free_all(struct fast_doc **docs);

#endif
