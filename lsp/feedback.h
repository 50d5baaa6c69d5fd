/*
 * feedback.h - what became of the suggestions shown: the clients
 * report a suggestion shown (textDocument/didShowCompletion), accepted whole
 * (the item's command, workspace/executeCommand "infill.didAcceptCompletion")
 * or partly (textDocument/didPartiallyAcceptCompletion, Copilot's names and
 * params); the server infers a dismissal from the edits. Counts are kept per
 * language and per shape (single line, block) and sent only in infill/stats;
 * nothing leaves the machine. completion.minConfidence "auto" reads them back
 * as a learned confidence floor (feedback_gate).
 *
 * An item's life, keyed by the id in its command's arguments:
 *   offered (answered, not yet shown) -> shown -> accepted | dismissed | closed
 * - shown: didShowCompletion, or an accept of an item never reported shown
 *   (a client that does not send didShow still counts it shown once).
 * - accepted: the accept command, or the text typed along to its end.
 * - partly accepted: didPartiallyAcceptCompletion (counted once per item;
 *   acceptedChars grows by what was newly accepted); it stays shown.
 * - typed along: an edit that inserts at or before where the typed part of
 *   the suggestion ends and leaves the document matching it further; the
 *   item stays shown. An item shown next in the same document after the
 *   previous one was typed along continues it: not counted shown again, and
 *   what happens to it counts for the first (its confidence and shape).
 * - dismissed: any other edit of the document while an item is shown (typed
 *   over, deleted, edited elsewhere), another item shown in the same document
 *   (cycled past, or asked again), or the document closed; an item partly
 *   accepted is closed then, not counted dismissed.
 * Unknown or stale ids (evicted from the last FEEDBACK_ITEMS, or already
 * closed) are reported as -ENOENT / -EALREADY for a debug log; never an
 * error to the client.
 *
 * Characters: acceptedChars counts Unicode characters of the inserted text;
 * a client's acceptedLength is in its position encoding's units (VS Code:
 * UTF-16), converted here.
 *
 * The "auto" rule (feedback_threshold): per language and shape, the
 * resolved items (accepted, partly accepted or dismissed) with a known
 * confidence are kept in 20 buckets of 0.05. The floor rises from the lowest
 * bucket through each one whose items were accepted (whole or partly) at
 * most FEEDBACK_TARGET_RATE (5%) of the time, the suggestions "almost never
 * accepted", and stops under the first bucket accepted more often (empty
 * buckets are passed over, but the floor ends at the top of the last one
 * with items: no hiding on no evidence); it acts once at least
 * FEEDBACK_MIN_SAMPLES (30) items lie under it, and never passes 0.95. Below the
 * floor a suggestion is hidden, except one in FEEDBACK_EXPLORE (10), so that
 * the counts under the floor keep coming and the floor can come down when
 * acceptance there rises. In memory only: a restart learns again.
 *
 * Threads: the loop thread's (the server's); no locks.
 */
#ifndef INFILL_LSP_FEEDBACK_H
#define INFILL_LSP_FEEDBACK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "document.h"
#include "position.h"

#define FEEDBACK_ITEMS          256 /* items remembered at once (oldest evicted) */
#define FEEDBACK_MIN_SAMPLES    30
#define FEEDBACK_TARGET_RATE    0.05
#define FEEDBACK_EXPLORE        10
#define FEEDBACK_ACCEPT_COMMAND "infill.didAcceptCompletion"
/* The command of a next edit (lsp/nextedit_rpc.c), run when it is applied. */
#define NEXTEDIT_ACCEPT_COMMAND "infill.didAcceptNextEdit"

/* The shape of a suggestion: one line, or more (a block). */
enum feedback_shape { FEEDBACK_SINGLE, FEEDBACK_BLOCK };

struct feedback;

/* A new, empty table (caller frees with feedback_free), NULL on out of
 * memory. */
struct feedback *feedback_new(void);
void feedback_free(struct feedback *fb);

/* An item answered: text (borrowed, copied) replaces [anchor, ...) of
 * uri's document, and the user had typed up to cursor (anchor <= cursor).
 * confidence in [0, 1], or negative when unknown (not learned from, never
 * gated). Returns its id (> 0), or 0 on out of memory. */
uint64_t feedback_offer(struct feedback *fb, const char *uri, const char *language, size_t anchor,
                        size_t cursor, const char *text, size_t len, double confidence);

/* The client's reports. 0, -ENOENT (unknown or evicted id) or -EALREADY
 * (already closed). accepted_units: the client's acceptedLength, in enc's
 * units of the item's text. */
int feedback_shown(struct feedback *fb, uint64_t id);
int feedback_accepted(struct feedback *fb, uint64_t id);
int feedback_partly_accepted(struct feedback *fb, uint64_t id, size_t accepted_units,
                             enum pos_encoding enc);

/* uri's document d was edited: [start, end) of the old text became
 * [start, start + inserted) of d. */
void feedback_edit(struct feedback *fb, const char *uri, const struct doc *d, size_t start,
                   size_t end, size_t inserted);

/* uri was closed: its shown item is dismissed, its others forgotten. */
void feedback_doc_closed(struct feedback *fb, const char *uri);

/* The learned floor for language and shape: 0 while it does not act. */
double feedback_threshold(const struct feedback *fb, const char *language,
                          enum feedback_shape shape);

/* Whether "auto" hides a suggestion of this text and confidence (negative:
 * unknown, never hidden). Counts the explored ones it lets through. */
bool feedback_gate(struct feedback *fb, const char *language, const char *text, size_t len,
                   double confidence);

/* The shape of a text. */
enum feedback_shape feedback_shape_of(const char *text, size_t len);

/* The counts as infill/stats's "feedback" object: {language: {single:
 * {...}, block: {...}}}, each {shown, accepted, partlyAccepted,
 * acceptedChars, dismissed, hidden, acceptedUnderFloor, minConfidence}
 * (acceptedUnderFloor: suggestions accepted, whole or partly, whose
 * confidence was under the floor learned by then: with "auto", the explored
 * ones users took; without it, the ones "auto" would have hidden). New reference, NULL on
 * out of memory. */
json_t *feedback_to_json(const struct feedback *fb);

#endif
