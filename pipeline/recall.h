/*
 * recall.h - candidates taken from the document itself, with no model.
 *
 * Code repeats itself: the same call, the same guard, the same line after
 * the same line. On the held-out files of `infill eval`, the most frequent
 * way the rest of the cursor's line continues elsewhere in the same file was
 * exactly the text cut out in 10% of rest-of-line cases (the embedded model's
 * own answer: under 1%). The completion pipeline gives these texts to the
 * engine, which scores them with the model like its own candidates; the model
 * then decides whether the copy fits here.
 *
 * Two ways to find them, chosen by the cursor's line:
 *   rest   text before the cursor on its line (after the indentation): other
 *          lines that start with that text offer what follows it there;
 *   next   a blank line: other copies of the previous non-blank line offer
 *          the line that followed them, if it sat at the same relative
 *          indentation as the cursor.
 * A candidate is one line. Pure: no allocation kept, texts point into the
 * document.
 */
#ifndef INFILL_LSP_RECALL_H
#define INFILL_LSP_RECALL_H

#include <stddef.h>
#include <stdint.h>

struct recall_item {
	const char *text; /* borrowed from the document: goes at the cursor */
	size_t len;
	int32_t count;  /* places in the window that offered it */
	size_t nearest; /* distance in bytes from the cursor to the nearest of them */
	size_t source;  /* start of the line it came from there */
};

#define RECALL_FILE_SEP "\n\f\n"

struct recall_params {
	const char *text; /* the document */
	size_t len;
	size_t cursor;
	size_t window; /* bytes scanned on each side of the cursor; 0: 256 KiB */
	/* Other files' text (context/): when set, its lines are scanned,
	 * all of them, instead of the document's, against the cursor's line
	 * of text; the items then point into it. Files are separated by a
	 * line of one form feed (RECALL_FILE_SEP): a candidate counts once per
	 * file, and its nearest is its first offset in the text. */
	const char *other;
	size_t other_len;
};

/*
 * Fills out[0..cap) with the most frequent candidates, most frequent first
 * (ties: nearest first), and returns how many. 0 when the cursor's line has
 * text after the cursor that no candidate ends with, or nothing repeats.
 * Never more than cap; -ENOMEM on out of memory.
 */
int recall_find(const struct recall_params *p, struct recall_item *out, size_t cap);

#endif
