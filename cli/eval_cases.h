/*
 * eval_cases.h - the quality harness's building blocks (`infill eval`,
 * cli/cli_eval.c): the files held out for it, fill-in-the-middle cases cut
 * from them, and the metrics that score a completion against the text that
 * was cut out.
 * Private to lsp/.
 *
 * Cutting is deterministic: the same file text, kind and random state give
 * the same case on every machine (a splitmix64 generator, no libc rand).
 * Nothing here loads a model; the tests check it without one.
 *
 * Threads: pure functions over borrowed text; any thread.
 */
#ifndef INFILL_LSP_EVAL_CASES_H
#define INFILL_LSP_EVAL_CASES_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ast.h"

/* ---- cases (eval_cases.c) ------------------------------------------------ */

/*
 * What is cut out. In every kind the cursor ends up at the end of its line
 * (whatever followed on that line is part of the hole), so the pipeline sees
 * the state of a user about to type the rest:
 *   REST:  from a point inside a line's text to the end of that line;
 *   LINE:  a whole line's text after its indentation (the line stays, blank
 *          but indented);
 *   BLOCK: the body of a block (2..8 non-blank lines after a line ending in
 *          the block opener, `:` for indentation languages, `{` otherwise),
 *          from the first body line's text to the end of the last one; the
 *          first line's indentation and the line closing the block stay.
 */
enum eval_kind {
	EVAL_KIND_REST,
	EVAL_KIND_LINE,
	EVAL_KIND_BLOCK,
	EVAL_KIND_COUNT,
};

/* Static name: "rest_of_line", "line", "block". */
const char *eval_kind_name(enum eval_kind k);

/* How blocks open in a language: indentation after `:` (Python) or braces. */
enum eval_blocks {
	EVAL_BLOCKS_BRACE,
	EVAL_BLOCKS_INDENT,
};

struct eval_case {
	enum eval_kind kind;
	char *text; /* the file with the hole; owned, NUL-terminated */
	size_t len;
	size_t cursor;  /* where the hole was (byte offset into text) */
	char *expected; /* the text cut out, trailing whitespace dropped; owned */
	size_t expected_len;
	size_t hole_len; /* bytes removed from the file (expected plus trailing blanks) */
	uint32_t line;   /* 0-based line of the cursor */
};

/* Frees what a case owns; accepts a zeroed or already finished case. */
void eval_case_finish(struct eval_case *c);

/* Returned by eval_case_cut when the file has no place for that kind: an
 * error code like the others (negative), so `rc < 0` never mistakes it for
 * success. */
#define EVAL_ENONE (-ENODATA)

/*
 * Cuts one case of `kind` from text[0..len) (a whole source file, borrowed),
 * choosing uniformly among the eligible places with *rng (advanced). Lines
 * eligible for REST and LINE have 4..160 bytes of text; REST leaves at least
 * one byte of text before the cursor and cuts at least two, never inside a
 * UTF-8 sequence. BLOCK bodies are 2..8 non-blank lines, at most 600 bytes,
 * every non-blank line indented deeper than the opener's line; a brace body
 * must end at a line starting with `}`; an indentation header must start
 * with a block keyword (def, if, for, ...), so docstring headings are not
 * taken for blocks. Fills *out (caller's memory; release with
 * eval_case_finish). Returns 0, EVAL_ENONE (out stays zeroed) or -ENOMEM.
 */
int eval_case_cut(const char *text, size_t len, enum eval_kind kind, enum eval_blocks blocks,
                  uint64_t *rng, struct eval_case *out);

/* splitmix64: the next value of the sequence seeded by *state. */
uint64_t eval_rng_next(uint64_t *state);

/* A value in [0, n) (n > 0) from *state. */
size_t eval_rng_below(uint64_t *state, size_t n);

/* ---- files (eval_files.c) ------------------------------------------------- */

/* A list of paths; owned strings. */
struct eval_files {
	char **v;
	size_t n, cap;
};

/* Frees the paths; accepts a zeroed or already finished list. */
void eval_files_finish(struct eval_files *f);

/*
 * Fills *out (caller's memory, zeroed; release with eval_files_finish) with
 * the files named by args[0..n_args) - an argument ending in .txt is a list
 * of paths, one a line, or language<TAB>path lines - or, when n_args is 0,
 * with <source root>/models/eval-files.txt. Every file listed in
 * <source root>/models/train-files.txt is reported on stderr; then, unless
 * allow_train, -EINVAL is returned. 0, -EINVAL, -ENOMEM or a negative errno
 * of an unreadable list (named on stderr).
 */
int eval_files_collect(const char *const *args, size_t n_args, bool allow_train,
                       struct eval_files *out);

/* The whole file as a new NUL-terminated buffer (caller frees), its length
 * in *len; NULL with errno set when unreadable or longer than limit
 * (EFBIG). */
char *eval_file_read(const char *path, size_t *len, size_t limit);

/* ---- metrics (eval_metrics.c) ------------------------------------------- */

/*
 * The comparison form of a completion or an expected text: trailing blanks
 * (space, tab, CR) of every line and trailing blank lines removed. Writes
 * at most n bytes plus a NUL to out (caller's, n + 1 bytes) and returns the
 * length written.
 */
size_t eval_normalize(const char *s, size_t n, char *out);

/* Whether got equals want modulo trailing whitespace (eval_normalize). */
bool eval_exact_match(const char *got, size_t got_len, const char *want, size_t want_len);


/* 1 - levenshtein / max(len) over the normalized texts, in [0, 1]; 1 when
 * both are empty. Negative when out of memory. */
double eval_edit_similarity(const char *got, size_t got_len, const char *want, size_t want_len);

/*
 * Syntax errors (ERROR and MISSING nodes) of text[0..len) parsed as lang.
 * Returns 0 and sets *errors, or an AST_E* code (lang NULL: AST_EINVAL).
 */
int eval_parse_errors(const struct ast_lang *lang, const char *text, size_t len, size_t *errors);

/*
 * Whether text with repl[0..repl_len) replacing [start, end) has no more
 * syntax errors than `baseline` (the original file's count). Sets *ok.
 * Returns 0, -ENOMEM or an AST_E* code.
 */
int eval_parses_with(const struct ast_lang *lang, const char *text, size_t len, size_t start,
                     size_t end, const char *repl, size_t repl_len, size_t baseline, bool *ok);

/* The p-quantile (0..1, nearest rank) of v[0..n); sorts v in place. 0 when
 * n is 0. */
double eval_percentile(double *v, size_t n, double p);

#endif
