/*
 * nextedit.h - next edits: after an edit settles, the places it implies
 * elsewhere in the document and, where the change is mechanical, the text
 * to write there. The server (lsp/nextedit_rpc.c) and `infill eval
 * --next-edit` (cli/eval_nextedit.c) call it; it needs no model.
 *
 * Three parts:
 *   1. The settled edit: consecutive changes that touch one another (the
 *      keystrokes of one word, a paste and its fix) merge into one edit,
 *      its text before and its span now. A change elsewhere starts a new one.
 *   2. The finder: from the document now and its settled edit, the places,
 *      ranked by kind and then by distance after the edit:
 *      - rename: the edit turned one identifier into another; the other
 *        tokens of the old name in its scope (ast_ident_refs) get the new;
 *      - signature: the edit changed a definition's parameter list; at its
 *        call sites a removed parameter's argument is removed, a renamed
 *        one's keyword argument renamed; an added parameter without a
 *        default is a place with no text (a model would have to write the
 *        argument: not offered);
 *      - repeat: the same change of one line's text, applied where the
 *        same text stands on other lines (an operator-only fragment only
 *        where a neighbouring token matches too);
 *      - member (nextedit_members.c): a variant added to an enum -> an arm
 *        in each switch/match listing all the others, written in their
 *        shape where they agree; a field added to a struct -> its
 *        initialisers and keyword constructions (places with no text);
 *      - definition (nextedit_calls.c): an argument added or removed at a
 *        call -> the parameter at its place in the definition;
 *      - import (nextedit_imports.c): the last use of an imported name
 *        removed -> it leaves its import; a name introduced that the
 *        project defines in one other file -> it is imported.
 *      Every edit with text is checked by the ast layer
 *      (ast_replace_check): one that would add a syntax error to the file
 *      is dropped and counted.
 *   3. Other files (nextedit_files.c): a rename of a name the document
 *      defines at its top level, in a file that imports it; the caller
 *      chooses the files (the project index, the open documents).
 *
 * Units: byte offsets into the document's UTF-8 text.
 * Threads: none of its own; a track belongs to its caller's thread.
 */
#ifndef INFILL_PIPELINE_NEXTEDIT_H
#define INFILL_PIPELINE_NEXTEDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ast.h"

/* ---- 1. The settled edit ---- */

struct nextedit_track {
	bool valid;
	size_t start, end; /* the edit's span in the document now */
	char *old;         /* what stood at [start, end) before it (owned) */
	size_t old_len;
};

/* Records one change of the document: [start, end) of its text before the
 * change, whose bytes were removed[0..end - start), became inserted bytes.
 * Call it in order for every change. Returns 0 or -ENOMEM (the track is
 * then empty). An edit grown past 64 KiB is dropped (a rewrite, not an edit
 * to propagate). */
int nextedit_track_change(struct nextedit_track *t, size_t start, size_t end, const char *removed,
                          size_t inserted);

/* Empties the track (frees its text); the struct may be reused. */
void nextedit_track_finish(struct nextedit_track *t);

/* ---- 2. The finder ---- */

enum nextedit_kind {
	NEXTEDIT_RENAME,
	NEXTEDIT_SIGNATURE,
	NEXTEDIT_REPEAT,
	NEXTEDIT_MEMBER,     /* an enum variant or struct field added */
	NEXTEDIT_DEFINITION, /* a call's arguments changed: its definition */
	NEXTEDIT_IMPORT,     /* an import the edit left unused or wanting */
	NEXTEDIT_KIND_COUNT,
};

/* Static name: "rename", "signature", "repeat", "member", "definition",
 * "import". */
const char *nextedit_kind_name(enum nextedit_kind k);

struct nextedit_edit {
	enum nextedit_kind kind;
	size_t start, end; /* replace these bytes of the document now... */
	char *text;        /* ...with this (owned, NUL-terminated); NULL: a place
	                    * found with no computed text (the model's to write:
	                    * nextedit_model.h) */
	size_t text_len;
};

struct nextedit_params {
	const struct ast_lang *lang; /* NULL: plain text (repeat only, unchecked) */
	const char *text;            /* the document now, borrowed */
	size_t len;
	const struct nextedit_track *edit; /* the settled edit, borrowed */
	/* CLOCK_MONOTONIC ns after which no more edits are checked (those not
	 * checked are not returned); 0: no deadline */
	uint64_t deadline_ns;
	size_t max_edits; /* 0: 32 */
	/* The project, for an import the edit left wanting: where a name this
	 * document neither defines nor imports is defined, as the path of the
	 * one file that defines it relative to the document's folder
	 * ("models.py", "lib/util.js"), into buf[0..cap) NUL-terminated; false
	 * when nowhere or in several files. NULL: no project (an import left
	 * unused is still found). Called on the caller's thread, during
	 * nextedit_find only. */
	bool (*defined_in)(void *ud, const char *name, char *buf, size_t cap);
	void *defined_in_ud;
};

struct nextedit_result {
	struct nextedit_edit *edits; /* owned, ranked, n of them */
	size_t n;
	size_t dropped_invalid; /* computed edits that would break the syntax */
	bool cut;               /* the deadline passed before all were checked */
	/* The edit renamed a name the document defines at its top level (a
	 * function, class, type, constant: what another file may import), from
	 * renamed_from to renamed_to; both "" otherwise (a local, a parameter,
	 * a method). For the files that import it: nextedit_find_importer. */
	char renamed_from[64], renamed_to[64];
};

/* Finds the next edits into *out (caller's memory; release with
 * nextedit_result_finish whatever the result). Edits never overlap one
 * another nor the settled edit. 0, -EINVAL (an edit outside the text) or
 * -ENOMEM. */
int nextedit_find(const struct nextedit_params *p, struct nextedit_result *out);
void nextedit_result_finish(struct nextedit_result *r);

/* ---- 3. Other files: a top-level name renamed, where it is imported ---- */

struct nextedit_importer {
	const struct ast_lang *lang; /* the other file's grammar (NULL: nothing found) */
	const char *text;            /* the other file, borrowed */
	size_t len;
	/* the defining file's path or name ("/p/shapes.py", "lib/util.js",
	 * "list.h"): how the other file's imports name it, by its base name */
	const char *defining_path;
	const char *old_name, *new_name; /* nextedit_result.renamed_* */
	/* the other file's path or URI (NULL: unknown): a C/C++ header of the
	 * defining .c file's name declares what it defines */
	const char *path;
	uint64_t deadline_ns; /* as nextedit_params' */
	size_t max_edits;     /* 0: 32 */
};

/*
 * The rename's places in another file, into *out (caller's memory; release
 * with nextedit_result_finish whatever the result), kind rename, in
 * document order, each checked like nextedit_find's (one that would break
 * the other file's syntax is dropped and counted). Only where that file
 * imports the name from the defining file, as its own import statements
 * say (the caller may pass any file; the project index narrows which):
 *   - Python `from mod import old` / JS `import { old } from './mod'`: the
 *     import's entry and the file's uses of the name (not an attribute
 *     `x.old` of something else); aliased (`old as o`), the entry alone;
 *   - Python `import mod` / `import mod as m`, `from pkg import mod`:
 *     `mod.old` (`m.old`);
 *   - C/C++ `#include "mod.h"` (for mod.h or mod.c defining it): the uses
 *     of the name that are not members (`x.old`, `p->old`), its definition
 *     in the file that implements the header among them; and for mod.c,
 *     mod.h itself (p->path), which declares it.
 * 0, -EINVAL (a NULL text or name) or -ENOMEM.
 */
int nextedit_find_importer(const struct nextedit_importer *p, struct nextedit_result *out);

/* ns on CLOCK_MONOTONIC (what deadline_ns counts in). */
uint64_t nextedit_now_ns(void);

#endif
