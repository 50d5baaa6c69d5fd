/*
 * pipeline_fast.h - the fast path of the pipeline (private to pipeline/):
 * per document, the last answer given (its text snapshot, cursor, the span
 * of it the candidates' context was cut from, and the candidates shown),
 * and the live candidate it came from, if any. A request is answered from
 * it, without the model, when its text still holds that context around its
 * cursor (edits outside it allowed) with characters typed at the cursor
 * that begin a candidate shown (the rest of that candidate is the answer),
 * or, while a live candidate grows it, with nothing typed (a re-ask at the
 * same place: the whole candidate, as long as it has grown).
 *
 * Besides the last answer, a few past ones (FAST_PAST_MAX, a result cache
 * keyed by the context around the cursor): the answers the last one
 * replaced, and answers computed ahead "as if the suggestion were accepted"
 * (fast_ahead). A request whose text holds one's context around its cursor
 * is answered from it, with nothing typed too: backspace, undo, a return to
 * a place, and the Tab after an accepted suggestion answer at once. Each
 * keeps only its context's bytes, not the whole snapshot.
 *
 * Threads: the loop thread only (pipeline.c calls these from
 * pipeline_submit, from its result delivery and from its document events).
 */
#ifndef INFILL_LSP_PIPELINE_FAST_H
#define INFILL_LSP_PIPELINE_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"

/* One document's memory; a list of them starts as NULL. */
struct fast_doc;

/* Past answers a document keeps besides its last one. */
#define FAST_PAST_MAX 8

/* Which memory answered. */
enum fast_source {
	FAST_SOURCE_LAST,  /* the last answer (typed along, or its live candidate) */
	FAST_SOURCE_PAST,  /* an answer given before it, at a place returned to */
	FAST_SOURCE_AHEAD, /* an answer computed as if the suggestion were accepted */
};

/* Where an answer came from, for the memory (fast_record) and the figures. */
struct fast_origin {
	enum fast_source source;
	uint64_t live_id;  /* the live candidate behind it (0: none) */
	bool live_running; /* that candidate still decodes */
	/* bytes typed since the live candidate's own answer: its texts begin
	 * with them, then go on with what is remembered */
	size_t live_typed;
	bool live_grew;            /* it has grown the answer at least once */
	size_t ctx_start, ctx_end; /* the candidates' context in the request's text
	                            * (ctx_end 0: all of it) */
};

/* If req can be answered from what its document remembers (see above),
 * fills out with the rest of each candidate that applies (texts new; ranges
 * at the new cursor), *from with where that memory came from (as it stands
 * after this answer), and returns true; else returns false and leaves out
 * alone. Where the user typed a live candidate to the end of what it has
 * decoded so far, the answer has no items (count 0): it goes on decoding,
 * and the client hears when it grew. */
bool fast_answer(struct fast_doc **docs, const struct completion_request *req,
                 struct completion_result *out, struct fast_origin *from);

/* Whether fast_answer would answer req (nothing allocated). */
bool fast_applies(struct fast_doc **docs, const struct completion_request *req);

/* Whether the memory already covers req's place: fast_applies, or the last
 * answer typed to its end (what follows there is the answer as if it were
 * accepted, which the engine decodes ahead). A hint of the next request
 * there would only interrupt that work. */
bool fast_covers(struct fast_doc **docs, const struct completion_request *req);

/* Remembers res as the answer shown for req's document, from origin o.
 * Takes req->text (req->text becomes NULL); res and o are borrowed. */
void fast_record(struct fast_doc **docs, struct completion_request *req,
                 const struct completion_result *res, const struct fast_origin *o);

/*
 * The live candidate live_id of uri decoded on: ext holds its whole texts
 * from the cursor of the request it first answered (borrowed). Each
 * remembered candidate that one of them continues (past what was typed
 * since) is lengthened to it; done: it decodes no more. Returns how many
 * grew (0 when the document's memory is of another answer by now); *first
 * says whether this is the first time that answer grew.
 */
size_t fast_grow(struct fast_doc **docs, const char *uri, uint64_t live_id,
                 const struct completion_result *ext, bool done, bool *first);

/*
 * An edit of uri's document, whose text is now text[0, len) (borrowed): the
 * live candidate behind its memory ends when the edit contradicts it (the
 * context around the cursor changed, or what was typed at the cursor does
 * not begin a candidate). Returns its id, for the engine thread to free,
 * or 0 when it survives (or there is none).
 */
uint64_t fast_edit(struct fast_doc **docs, const char *uri, const char *text, size_t len,
                   size_t start, size_t old_end, size_t new_end);

/* The best candidate last shown for uri (borrowed until the next call that
 * changes docs), its length in *len; NULL when none. */
const char *fast_top(struct fast_doc **docs, const char *uri, size_t *len);

/*
 * Remembers res as a past answer of uri for a text the document does not
 * hold yet: text[0, len) with its cursor, the candidates' context
 * [ctx_start, ctx_end) of it (ctx_end 0: all), computed ahead as if the
 * suggestion shown were accepted. All borrowed. False when out of memory
 * (nothing kept).
 */
bool fast_ahead(struct fast_doc **docs, const char *uri, const char *text, size_t len,
                size_t cursor, size_t ctx_start, size_t ctx_end,
                const struct completion_result *res);

/* Whether uri's memory has a live candidate still decoding. */
bool fast_live_running(struct fast_doc **docs, const char *uri);

/* Forgets a document, returning the id of a live candidate still decoding
 * (0: none); forgets them all. */
uint64_t fast_doc_remove(struct fast_doc **docs, const char *uri);
void fast_doc_free_all(struct fast_doc **docs);

#endif
