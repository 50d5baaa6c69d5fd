/*
 * nextedit_model.h - next edits the model writes: a place the finder
 * (nextedit.h) found whose text is not mechanical (an added parameter's
 * argument at a call, a new arm whose neighbours differ, a field in an
 * initialiser) becomes a completion request that runs on the pipeline's
 * own engine path (pipeline_submit -> complete_run: the model's template,
 * the deadline, cancellation, tree-sitter validation, rerank), and its best
 * candidate becomes an edit of the document, checked again against the
 * whole file (ast_replace_check) before it is offered.
 *
 * Two prompt formats (nextEdit.format):
 *   fim  - any FIM model. The recent edits go first, as a project chunk of
 *          comment lines in the file's comment syntax:
 *              # Recent edits (- before, + after):
 *              # @@ line 3
 *              # -    x = f(a)
 *              # +    x = f(a, b)
 *          then the document's own prefix and suffix around the place: a
 *          place inside a line is the hole itself (the model writes what
 *          goes there, one line); a place at a line start opens a line
 *          there, indented as the lines around it (the model writes the
 *          lines of a block after that indentation, as one types them).
 *   zeta - Zed's Zeta (a Qwen2.5-Coder fine-tune for edit prediction),
 *          raw text under the template "{prefix}{suffix}":
 *              ### Instruction:\n<its one-sentence instruction>\n\n
 *              ### User Edits:\n\nUser edited "PATH":\n```diff\n@@ -L,N +L,M @@\n
 *              -before\n+after\n```\n\n
 *              ### User Excerpt:\n\n```PATH\n[<|start_of_file|>\n]LINES BEFORE
 *              <|editable_region_start|>\n<|user_cursor_is_here|>THE LINE\n
 *              <|editable_region_end|>\nLINES AFTER```\n\n### Response:\n\n
 *          followed by the start of the answer Zeta writes (the excerpt
 *          again up to its region's first line), so the model writes only
 *          the region; its end marker stops it. The region is the place's
 *          line (rewritten whole; the edit offered is the part that
 *          changed) or, at a line start, an empty one (lines inserted).
 *
 * Units: byte offsets into the document's UTF-8 text.
 * Threads: none; the caller's (the server's loop thread, eval, tests).
 */
#ifndef INFILL_PIPELINE_NEXTEDIT_MODEL_H
#define INFILL_PIPELINE_NEXTEDIT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ast.h"
#include "nextedit.h"
#include "pipeline.h"

enum nextedit_format {
	NEXTEDIT_FORMAT_FIM,
	NEXTEDIT_FORMAT_ZETA,
};

/* Static: "fim", "zeta". */
const char *nextedit_format_name(enum nextedit_format f);

/* The format the setting means for a model: auto is zeta when is_zeta
 * (pipeline_model_is_zeta), else fim. */
enum nextedit_format nextedit_format_resolve(enum config_nextedit_format setting, bool is_zeta);

/* Zeta's markers (its vocabulary holds the first when it was fine-tuned
 * with them as tokens). */
#define NEXTEDIT_ZETA_REGION_START "<|editable_region_start|>"
#define NEXTEDIT_ZETA_REGION_END   "<|editable_region_end|>"
#define NEXTEDIT_ZETA_CURSOR       "<|user_cursor_is_here|>"
#define NEXTEDIT_ZETA_FILE_START   "<|start_of_file|>"

/* Whether a model file's name (its last path component) says it is Zeta:
 * "zeta" in it, in any case (whether Zeta's files hold the markers as
 * tokens of their own was not checked here: the name is asked too). */
bool nextedit_zeta_named(const char *path);

/* ---- the recent edits, before and after ---- */

/* One recent edit as whole lines: what they were and what they are now. */
struct nextedit_pair {
	char *before; /* owned, NUL-terminated, before_len bytes, no final newline */
	size_t before_len;
	char *after; /* owned, NUL-terminated */
	size_t after_len;
	size_t line; /* 0-based line of the first, in the text it was taken from */
};

/* The pair of an edit of text[0..len): now [start, end) stands where
 * old[0..old_len) stood; both widened to their whole lines. 0 or -ENOMEM
 * (then *out holds nothing); -EINVAL when the span is outside the text. */
int nextedit_pair_make(const char *text, size_t len, size_t start, size_t end, const char *old,
                       size_t old_len, struct nextedit_pair *out);
void nextedit_pair_finish(struct nextedit_pair *p); /* accepts a zeroed pair */

/* The fim format's edits block (above), oldest pair first, each line
 * under the line-comment marker comment ("#", "//", "--"). New string
 * (caller frees) or NULL when out of memory; "" for n == 0. */
char *nextedit_prompt_fim_edits(const struct nextedit_pair *v, size_t n, const char *comment);

/* The line-comment marker complete_run uses for an LSP language id. */
const char *nextedit_comment_for(const char *language_id);

/* ---- one rewrite ---- */

/* What a model-written place is, once the request is built. */
struct nextedit_rewrite {
	enum nextedit_format format;
	enum nextedit_kind kind;
	size_t at;         /* the place (an insertion point) in the document */
	size_t start, end; /* the document's bytes the model (re)writes */
	bool block;        /* lines inserted at a line start (start == end == at) */
	size_t cursor;     /* where the candidate goes in the request's text */
	/* fim, a block: the indentation the opened line was given (that of
	 * the lines around it), which the candidate follows */
	char indent[32];
	size_t indent_len;
};

struct nextedit_rewrite_params {
	enum nextedit_format format;
	const char *text; /* the document now, borrowed */
	size_t len;
	size_t at; /* the place: an insertion point found with no text */
	enum nextedit_kind kind;
	const struct nextedit_pair *pairs; /* recent edits, oldest first; borrowed */
	size_t n_pairs;
	const char *uri, *language_id; /* borrowed */
	const char *path;              /* the file's path for zeta's headers; NULL: the URI */
	int64_t version;
	uint64_t seq, arrival_ns;
	enum pos_encoding encoding;
	const struct settings *settings; /* resolved for the language; copied */
};

/*
 * The completion request that asks the model for p's place (new; the
 * caller gives it to pipeline_submit or frees it with
 * completion_request_free), with *rw filled. Its settings are the given
 * ones with what a rewrite needs: one line or a block, no lines from the
 * document as candidates, and for zeta the raw template and its stop
 * marker. NULL when out of memory or the place is outside the text.
 */
struct completion_request *nextedit_rewrite_request(const struct nextedit_rewrite_params *p,
                                                    struct nextedit_rewrite *rw);

/*
 * The edit the best of res's candidates makes in the document text[0..len)
 * (the one the request was built from) into *out (its text new, owned by
 * *out; free it), kind rw->kind: the candidate less what it leaves as it
 * was. Returns 1 with an edit, 0 when none is worth offering (no
 * candidate, an empty or unchanged one, one holding a Zeta marker, or one
 * that would add a syntax error to the file: then *invalid is set), or
 * -ENOMEM. lang NULL: no check (plain text).
 */
int nextedit_rewrite_edit(const struct nextedit_rewrite *rw, const struct completion_result *res,
                          const struct ast_lang *lang, const char *text, size_t len,
                          struct nextedit_edit *out, bool *invalid);

/* Zeta's prompt for the region [start, end) of text (the excerpt: up to 10
 * lines around it), and the start of its answer, as one string (new;
 * caller frees; *out_len its length), or NULL when out of memory. */
char *nextedit_prompt_zeta(const char *path, const char *text, size_t len, size_t start, size_t end,
                           size_t at, const struct nextedit_pair *pairs, size_t n, size_t *out_len);

#endif
