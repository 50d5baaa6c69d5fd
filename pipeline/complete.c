/*
 * complete.c - one completion from document text to ranked, validated
 * candidates with exact ranges (complete.h). The order is that of
 * docs/architecture.md's "The life of a completion", steps 4 to 7:
 *
 *   parse once (a tree over the snapshot, reused by slicing and by every
 *   validation) -> ast_slice under the token budgets, counted with the
 *   model's own tokenizer -> shape decides max lines -> engine_run (FIM
 *   prompt, prefix cache, N candidates in one batch, scope-end stop) ->
 *   ast_validate each candidate (trim or drop) -> rerank_run -> ranges.
 *
 * Why the parse happens here and not on the loop thread: the request
 * carries an immutable snapshot, so the engine thread can parse it without
 * sharing a tree with the loop; a full parse of a source file of a few
 * hundred lines costs about a millisecond, small next to one decode step,
 * and it keeps `infill complete`, `infill eval` and the server on one code
 * path.
 */
#include "complete.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "recall.h"

/* The short context the prefill budget falls back to (to answer within the
 * deadline after a jump): the
 * nearest statements before the cursor and the start of what follows, cut
 * by ast_slice on syntax boundaries; the engine trims its front further
 * when even this cannot be prefilled in time. No snippets: they come first
 * in the prompt, so they would cost their whole length uncached. */
#define SHORT_PREFIX_TOKENS 96
#define SHORT_SUFFIX_TOKENS 24
#define SHORT_STEP_BYTES    128

/* The full context's window starts on a 1 KiB grid (ast_slice_params.
 * start_step): a jump a few lines away, or back, keeps the same start and
 * re-uses the cached prompt up to the nearer cursor, for at most 1 KiB
 * (~300 tokens) less context. */
#define WINDOW_STEP_BYTES 1024

/* Lines from the document scored per request: their tokens go through the
 * model in one batched forward before the candidates are decoded. */
#define RECALL_CANDIDATES 3

/*
 * Rerank priors, tuned on `infill eval --seed 2` (300 cases; the reported
 * figures use seed 1). A line copied from the document scores 3 + 2 ln(copies)
 * above its mean log-probability: the embedded model gives a real line of
 * code about -2 to -4 nats per token and its own confident loops (`todl_todl_`)
 * -0.5, so without it the copies never won. A one-line candidate still going
 * when it ran out of tokens is most likely such a loop, even when it does not
 * visibly repeat (those that do are dropped, complete_is_runaway): -1.
 */
#define RECALL_PRIOR       3.0
#define RECALL_PRIOR_COUNT 2.0
#define RUNAWAY_LINE_PRIOR (-1.0)

struct complete_options complete_options_default(void)
{
	return (struct complete_options){
		.ast_slice = true,
		.validate = true,
		.rerank = true,
		.use_cache = true,
		.seed = 1,
	};
}

void complete_result_finish(struct complete_result *r)
{
	if (!r) return;
	for (size_t i = 0; i < r->count; i++) free(r->items[i].text);
	free(r->items);
	r->items = NULL;
	r->count = 0;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int32_t complete_max_lines(enum ast_shape_kind shape, const struct settings *st)
{
	switch (st->completion_multiline) {
	case CONFIG_MULTILINE_NEVER: return 1;
	case CONFIG_MULTILINE_ALWAYS: break;
	case CONFIG_MULTILINE_AUTO: return shape == AST_SHAPE_BLOCK ? st->completion_max_lines : 1;
	}
	/* Text after the cursor is the line's own end: a second line would
	 * push it below the completion, even when multi-line is asked for. */
	return shape == AST_SHAPE_REST_OF_LINE ? 1 : st->completion_max_lines;
}

size_t complete_trim_trailing_lines(const char *text, size_t len, size_t cursor, const char *cand,
                                    size_t keep)
{
	const char *eol = memchr(text + cursor, '\n', len - cursor);
	if (!rerank_is_blank(text + cursor, eol ? (size_t)(eol - (text + cursor)) : len - cursor))
		return keep;
	size_t last = keep; /* one past the candidate's last non-blank byte */
	while (last > 0 && strchr(" \t\r\n", cand[last - 1])) last--;
	return last && memchr(cand + last, '\n', keep - last) ? last : keep;
}

size_t complete_shape_bind(const char *text, size_t len, int32_t max_lines)
{
	if (max_lines != 1) return len;
	const char *nl = memchr(text, '\n', len);
	size_t keep = nl ? (size_t)(nl - text) : len;
	while (keep > 0 && text[keep - 1] == '\r') keep--;
	return keep;
}

/* ---- sticky snippets ---------------------------------------------------- */

void complete_memory_finish(struct complete_memory *m)
{
	if (!m) return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->texts[i]);
		if (m->paths) free(m->paths[i]);
	}
	free(m->texts);
	free(m->paths);
	free(m->lens);
	memset(m, 0, sizeof *m);
}

/* Remembers snippets (copies); on out of memory the memory is just invalid. */
static void memory_store(struct complete_memory *m, size_t line_start, size_t prefix_start,
                         const struct engine_snippet *snips, size_t n)
{
	size_t short_start = m->short_start;
	complete_memory_finish(m);
	m->short_start = short_start;
	if (n) {
		m->texts = calloc(n, sizeof *m->texts);
		m->paths = calloc(n, sizeof *m->paths);
		m->lens = calloc(n, sizeof *m->lens);
		if (!m->texts || !m->paths || !m->lens) {
			complete_memory_finish(m);
			return;
		}
		for (size_t i = 0; i < n; i++) {
			m->texts[i] = malloc(snips[i].len + 1);
			if (!m->texts[i]) {
				m->n = i;
				complete_memory_finish(m);
				return;
			}
			memcpy(m->texts[i], snips[i].text, snips[i].len);
			m->texts[i][snips[i].len] = 0;
			if (snips[i].path && !(m->paths[i] = strdup(snips[i].path))) {
				m->n = i + 1;
				complete_memory_finish(m);
				return;
			}
			m->lens[i] = snips[i].len;
		}
	}
	m->n = n;
	m->line_start = line_start;
	m->prefix_start = prefix_start;
	m->valid = true;
}

/* ---- token counts for the slicer ------------------------------------------ */

static size_t count_tokens(void *ctx, const char *text, size_t len)
{
	if (!ctx) return (len + COMPLETE_BYTES_PER_TOKEN - 1) / COMPLETE_BYTES_PER_TOKEN;
	int n = tokenizer_count(ctx, text, len, false);
	return n < 0 ? len : (size_t)n; /* out of memory: bytes over-count, safely */
}

/* ---- the scope-end stop rule -------------------------------------------- */

/*
 * The engine asks, line by line, whether a candidate's last line leaves the
 * scope the cursor is in; then it cuts before that line and stops decoding,
 * which saves the tokens ast_validate would throw away anyway. The rule is
 * cheap and conservative (validation still makes the exact cut):
 *   - indentation languages (Python): a non-blank line after the first one
 *     indented less than the completion's own lines;
 *   - brace languages: a line after the first that starts with a closing
 *     bracket the candidate did not open, indented less than its lines.
 */
struct scope_rule {
	bool by_indent;
	size_t indent; /* the completion's lines start with this many bytes of whitespace */
};

static size_t leading_ws(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
	return i;
}

static bool scope_stop(void *ud, const char *text, size_t len)
{
	const struct scope_rule *r = ud;
	size_t end = len;
	if (end && text[end - 1] == '\n') end--;
	size_t start = end;
	while (start > 0 && text[start - 1] != '\n') start--;
	if (start == 0) return false; /* the first line continues the cursor's line */
	const char *line = text + start;
	size_t n = end - start;
	size_t ws = leading_ws(line, n);
	if (ws == n || (ws < n && line[ws] == '\r')) return false; /* blank */
	if (r->by_indent) return ws < r->indent;
	if (line[ws] != '}' && line[ws] != ')' && line[ws] != ']') return false;
	/* does the candidate so far open more than it closes before this line? */
	long depth = 0;
	for (size_t i = 0; i < start; i++) {
		char c = text[i];
		if (c == '{' || c == '(' || c == '[')
			depth++;
		else if (c == '}' || c == ')' || c == ']')
			depth--;
	}
	return depth <= 0 && ws < r->indent;
}

static bool lang_by_indent(const char *name)
{
	return !strcmp(name, "python");
}

static const char *lang_comment(const char *name)
{
	static const char *const hash[] = { "python", "shellscript", "ruby",     "perl",  "r",
		                            "yaml",   "toml",        "makefile", "cmake", NULL };
	for (size_t i = 0; hash[i]; i++)
		if (!strcmp(name, hash[i])) return "#";
	if (!strcmp(name, "lua") || !strcmp(name, "sql") || !strcmp(name, "haskell")) return "--";
	return "//";
}

/* ---- ranges --------------------------------------------------------------- */

/*
 * The end of the span an inserted candidate replaces. Inline completions
 * insert at the cursor; but when the rest of the cursor's line (its text up
 * to the newline, trailing blanks aside) is exactly how the candidate ends -
 * `print(|)` completed with `x)` - the candidate re-types that closing text,
 * so it replaces it instead of doubling it. The span stays on the cursor's
 * line, as LSP requires.
 */
/*
 * Whether head leaves a bracket open ( [ { outside string quotes. Then the
 * closers after it in the candidate close the candidate's own brackets, not
 * the ones the rest of the line closes: `print(are|)` completed with
 * `a_of_circle(2.0)` needs the line's `)` as well (replacing only up to it once
 * left `print(area_of_circle(2.0)`, one `)` short, a line validation had
 * passed with the `)` kept).
 */
static bool opens_brackets(const char *head, size_t n)
{
	int depth = 0;
	char quote = 0;
	for (size_t i = 0; i < n; i++) {
		char c = head[i];
		if (quote) {
			if (c == '\\')
				i++;
			else if (c == quote)
				quote = 0;
		} else if (c == '"' || c == '\'' || c == '`') {
			quote = c;
		} else if (c == '(' || c == '[' || c == '{') {
			depth++;
		} else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return depth > 0;
}

size_t complete_replace_end(const char *text, size_t len, size_t cursor, const char *cand,
                            size_t cand_len)
{
	size_t eol = cursor;
	while (eol < len && text[eol] != '\n' && text[eol] != '\r') eol++;
	size_t rest = eol;
	while (rest > cursor && (text[rest - 1] == ' ' || text[rest - 1] == '\t')) rest--;
	size_t n = rest - cursor;
	if (n == 0 || n > cand_len || memchr(cand, '\n', cand_len)) return cursor;
	if (memcmp(cand + cand_len - n, text + cursor, n)) return cursor;
	if (opens_brackets(cand, cand_len - n)) return cursor;
	return rest;
}

/* ---- the run ------------------------------------------------------------ */

/* Fills *err (may be NULL) and returns code: the one way complete_run
 * reports a failure. */
static int fail(struct infill_error *err, int code, const char *message)
{
	return error_set(err, code, "%s", message);
}

/* The engine's error passed on whole (its key, tensor and offset kept),
 * with the step's code; `fallback` when the engine said nothing. */
static int fail_from(struct infill_error *err, int code, const struct infill_error *from,
                     const char *fallback)
{
	if (!from->message[0]) return fail(err, code, fallback);
	if (err) {
		*err = *from;
		err->code = code;
	}
	return code;
}

bool complete_is_runaway(const char *text, size_t len, enum engine_stop stop)
{
	if (stop != ENGINE_STOP_MAX_TOKENS || memchr(text, '\n', len)) return false;
	for (size_t p = 1; p <= 16; p++) {
		size_t span = 3 * p > 16 ? 3 * p : 16;
		if (len < span + p) break;
		const char *t = text + len - span;
		if (!memcmp(t, t - p, span)) return true;
	}
	return false;
}

/* What a text given to the engine to score is worth, beside it. */
struct given_note {
	double prior;   /* added to its score */
	bool must_mend; /* shown only where it removes an error the document has */
	bool copied;    /* a line the document has at copy_at (ast_validate_params) */
	size_t copy_at;
};

/* Validation, trimming, ranges: survivors become items (texts new). */
static int post_process(const struct ast_lang *lang, struct ast_doc *doc, const char *text,
                        size_t len, size_t cursor, const struct complete_options *opt,
                        const struct engine_result *er, const struct engine_given *given,
                        const struct given_note *notes, size_t n_given, int32_t max_lines,
                        struct complete_result *out)
{
	out->items = calloc((size_t)er->n_candidates + 1, sizeof *out->items);
	/* per item: the errors it leaves when it removed one the document had
	 * (it mends), else SIZE_MAX */
	size_t *mends = calloc((size_t)er->n_candidates + 1, sizeof *mends);
	if (!out->items || !mends) {
		free(mends);
		return -ENOMEM;
	}
	size_t best = SIZE_MAX; /* fewest errors a mending candidate leaves */
	for (int32_t i = 0; i < er->n_candidates; i++) {
		const struct engine_candidate *c = &er->candidates[i];
		size_t keep = c->len;
		size_t left = SIZE_MAX; /* errors left, if it mends */
		enum ast_verdict verdict = AST_VERDICT_UNCHECKED;
		const struct given_note *note = NULL;
		for (size_t j = 0; c->stop == ENGINE_STOP_GIVEN && j < n_given; j++)
			if (given[j].len == c->len && !memcmp(given[j].text, c->text, c->len))
				note = &notes[j];
		if (opt->validate && complete_is_runaway(c->text, c->len, c->stop)) {
			out->rejected++;
			continue;
		}
		/* The shape binds every candidate, decoded or given, before it is
		 * judged: one line where one was asked for (the engine counts a
		 * line after leading blank ones, `\n\n    if (r->flags)`). */
		size_t bound = complete_shape_bind(c->text, c->len, max_lines);
		keep = bound;
		if (opt->validate && lang && bound) {
			struct ast_validate_params vp = {
				.lang = lang,
				.text = text,
				.len = len,
				.cursor = cursor,
				.candidate = c->text,
				.candidate_len = bound,
				.doc = doc,
				.copied = note && note->copied,
				.copy_at = note ? note->copy_at : 0,
			};
			struct ast_validation v;
			int rc = ast_validate(&vp, &v);
			if (rc == AST_ENOMEM) {
				free(mends);
				return -ENOMEM;
			}
			verdict = rc ? AST_VERDICT_INVALID : v.verdict;
			keep = verdict == AST_VERDICT_INVALID ? 0 : v.keep_len;
			if (v.errors_after < v.errors_before) left = v.errors_after;
		}
		if (!keep || rerank_is_blank(c->text, keep) ||
		    (note && note->must_mend && left == SIZE_MAX)) {
			out->rejected++;
			continue;
		}
		keep = complete_trim_trailing_lines(text, len, cursor, c->text, keep);
		struct complete_item *it = &out->items[out->count];
		it->text = malloc(keep + 1);
		if (!it->text) {
			free(mends);
			return -ENOMEM;
		}
		mends[out->count] = left;
		if (left < best) best = left;
		memcpy(it->text, c->text, keep);
		it->text[keep] = 0;
		it->len = keep;
		it->start = cursor;
		it->end = complete_replace_end(text, len, cursor, it->text, keep);
		it->mean_logprob = c->mean_logprob;
		it->score = c->mean_logprob;
		if (c->stop == ENGINE_STOP_MAX_TOKENS && !memchr(c->text, '\n', c->len))
			it->prior = RUNAWAY_LINE_PRIOR;
		if (note) it->prior = note->prior;
		it->verdict = verdict;
		it->stop = c->stop;
		it->index = i;
		out->count++;
	}
	/* Where the document is broken and some candidate mends it (the rest
	 * of an unclosed docstring, the `)` of a cut call), one that leaves it
	 * more broken is no answer to what was asked: only the candidates that
	 * leave the fewest errors stay (`#define` on a stray `#` mends the line
	 * but not the guard that `#endif` would close). */
	size_t w = 0;
	for (size_t i = 0; i < out->count; i++) {
		if (best != SIZE_MAX && mends[i] != best) {
			free(out->items[i].text);
			out->rejected++;
		} else {
			out->items[w++] = out->items[i];
		}
	}
	out->count = w;
	free(mends);
	return 0;
}

static int cmp_score(const void *a, const void *b)
{
	const struct complete_item *x = a, *y = b;
	if (x->score != y->score) return x->score < y->score ? 1 : -1;
	return (x->index > y->index) - (x->index < y->index);
}

/* Rerank the items in place (merging near-duplicates), then the confidence
 * floor. minConfidence is a probability per token: exp(mean log-prob). */
static int rank(const struct settings *st, const char *text, size_t len, size_t cursor,
                const struct complete_options *opt, struct complete_result *out)
{
	size_t n = out->count;
	if (opt->rerank && n) {
		struct rerank_item *ri = calloc(n, sizeof *ri);
		if (!ri) return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			ri[i].text = out->items[i].text;
			ri[i].len = out->items[i].len;
			ri[i].mean_logprob = out->items[i].mean_logprob;
			ri[i].prior = out->items[i].prior;
			ri[i].index = (int32_t)i; /* position in out->items */
		}
		struct rerank_params rp = rerank_params_default();
		rp.suffix = text + cursor;
		rp.suffix_len = len - cursor;
		rp.previous = opt->previous;
		rp.previous_len = opt->previous ? opt->previous_len : 0;
		size_t kept = rerank_run(&rp, ri, n);
		struct complete_item *sorted = calloc(n + 1, sizeof *sorted);
		bool *used = calloc(n + 1, sizeof *used);
		if (!sorted || !used) {
			free(sorted), free(used), free(ri);
			return -ENOMEM;
		}
		for (size_t i = 0; i < kept; i++) {
			size_t from = (size_t)ri[i].index;
			sorted[i] = out->items[from];
			sorted[i].score = ri[i].score;
			used[from] = true;
		}
		for (size_t i = 0; i < n; i++)
			if (!used[i]) free(out->items[i].text);
		out->merged += (int32_t)(n - kept);
		free(out->items);
		out->items = sorted;
		out->count = kept;
		free(used);
		free(ri);
	} else if (n) {
		qsort(out->items, n, sizeof *out->items, cmp_score);
	}
	if (st->completion_min_confidence > 0) {
		double floor_lp = log(st->completion_min_confidence);
		size_t w = 0;
		for (size_t i = 0; i < out->count; i++) {
			if (out->items[i].mean_logprob < floor_lp) {
				free(out->items[i].text);
				out->rejected++;
			} else {
				out->items[w++] = out->items[i];
			}
		}
		out->count = w;
	}
	return 0;
}

void complete_fit_context(struct settings *st, int32_t n_ctx)
{
	const int32_t template_tokens = 16;
	long total = (long)st->context_prefix_tokens + st->context_suffix_tokens +
	             st->context_extra_tokens;
	long avail = (long)n_ctx - st->completion_max_tokens - template_tokens;
	if (n_ctx <= 0 || total <= avail || total <= 0) return;
	if (avail < 64) { /* a tiny context: give the completion half of it */
		st->completion_max_tokens = n_ctx / 2;
		avail = (long)n_ctx - st->completion_max_tokens - template_tokens;
	}
	double f = (double)avail / (double)total;
	st->context_prefix_tokens = (int)(st->context_prefix_tokens * f);
	st->context_suffix_tokens = (int)(st->context_suffix_tokens * f);
	st->context_extra_tokens = (int)(st->context_extra_tokens * f);
}

/*
 * What one run holds between its steps. Everything in it is released once,
 * by run_finish at complete_run's one exit, whichever step stopped the run;
 * each step leaves what it made here even when it fails.
 */
struct run {
	const struct ast_lang *lang;  /* NULL: no grammar for the language */
	const char *lname;            /* its name, or the languageId asked for */
	struct ast_text flat;         /* the snapshot, for tree-sitter */
	struct ast_doc *doc;          /* one tree of the snapshot (owned); NULL: no tree */
	struct ast_slice slice;       /* prefix, suffix and snippets (owned) */
	struct ast_slice short_slice; /* the prefill budget's fallback (owned; empty when none) */
	bool has_short;
	struct ast_shape shape;
	struct engine_snippet *snips; /* extra snippets (owned array; texts borrowed from
	                               * slice or the document's memory) */
	size_t n_snips;
	/* texts given to the engine to score: given[i] borrows found[] (the
	 * document's text) or closers[]; notes[i] says what each is worth */
	struct recall_item found[ENGINE_MAX_GIVEN];
	struct ast_closer closers[ENGINE_MAX_GIVEN];
	struct engine_given given[ENGINE_MAX_GIVEN];
	struct given_note notes[ENGINE_MAX_GIVEN];
	size_t n_given;
	int32_t n_project_given; /* of them, lines of other files */
	struct scope_rule scope; /* the engine's scope-end stop reads it */
	const char **stops;      /* the language's stop strings, then completion.stop's
	                          * (owned array, strings borrowed from both) */
	struct engine_request rq;
	struct engine_result er; /* owned */
};

/* ---- live candidates ------------------------------------------------------ */

struct complete_live {
	struct engine_live *lv;
	char *text; /* the snapshot, owned, NUL-terminated */
	size_t len, cursor;
	const struct ast_lang *lang;
	struct ast_text flat; /* text, for the tree */
	struct ast_doc *doc;  /* its tree, for validation; NULL: none (parsed per check) */
	char **stop;          /* the stop strings (owned), n_stop of them */
	size_t n_stop;
	struct scope_rule scope;
	bool scope_check; /* the scope-end stop applies (as step_request decided) */
	bool validate;
	int32_t max_lines;
};

void complete_live_free(struct complete_live *cl)
{
	if (!cl) return;
	engine_live_free(cl->lv);
	ast_doc_delete(cl->doc);
	for (size_t i = 0; i < cl->n_stop; i++) free(cl->stop[i]);
	free(cl->stop);
	free(cl->text);
	free(cl);
}

bool complete_live_done(const struct complete_live *cl)
{
	return !cl || engine_live_done(cl->lv);
}

int64_t complete_live_generated(const struct complete_live *cl)
{
	return cl ? engine_live_generated(cl->lv) : 0;
}

/* A live candidate for run r's engine_live lv (taken): copies what checking
 * it needs. NULL when out of memory (lv freed). */
static struct complete_live *live_new(struct engine_live *lv, const struct run *r, const char *text,
                                      size_t len, size_t cursor, const struct complete_options *opt)
{
	struct complete_live *cl = calloc(1, sizeof *cl);
	if (!cl) goto oom;
	cl->lv = lv;
	cl->text = malloc(len + 1);
	cl->stop = calloc(r->rq.n_stop + 1, sizeof *cl->stop);
	if (!cl->text || !cl->stop) goto oom;
	memcpy(cl->text, text, len);
	cl->text[len] = 0;
	cl->len = len;
	cl->cursor = cursor;
	for (size_t i = 0; i < r->rq.n_stop; i++, cl->n_stop++)
		if (!(cl->stop[i] = strdup(r->rq.stop[i]))) goto oom;
	cl->lang = r->lang;
	cl->scope = r->scope;
	cl->scope_check = r->rq.stop_text != NULL;
	cl->validate = opt->validate;
	cl->max_lines = r->rq.max_lines;
	cl->flat = (struct ast_text){ cl->text, cl->len };
	if (cl->lang && cl->validate) {
		/* without a tree each check parses on its own: slower, as right */
		cl->doc = ast_doc_new(cl->lang, ast_text_read, &cl->flat);
		if (cl->doc && ast_doc_parse(cl->doc)) {
			ast_doc_delete(cl->doc);
			cl->doc = NULL;
		}
	}
	return cl;
oom:
	if (cl)
		complete_live_free(cl);
	else
		engine_live_free(lv);
	return NULL;
}

int complete_live_continue(struct engine *engine, struct complete_live *cl, atomic_int *cancel,
                           int32_t max_steps, struct complete_result *out)
{
	memset(out, 0, sizeof *out);
	double t0 = now_ms();
	struct engine_request q = engine_request_default();
	q.stop = (const char *const *)cl->stop;
	q.n_stop = cl->n_stop;
	q.stop_text = cl->scope_check ? scope_stop : NULL;
	q.stop_ud = &cl->scope;
	q.max_lines = cl->max_lines;
	q.cancel = cancel;
	q.max_steps = max_steps;
	struct engine_result er;
	struct infill_error ierr;
	int rc = engine_live_continue(engine, cl->lv, &q, &er, &ierr);
	out->generated_tokens = er.generated_tokens;
	out->decode_ms = out->engine_ms = er.decode_ms;
	out->cancelled = rc == ENGINE_ECANCELED;
	out->n_generated = er.n_candidates;
	out->deadline_hit = !engine_live_done(cl->lv);
	out->context_start = 0;
	out->context_end = cl->len;
	struct complete_options opt = complete_options_default();
	opt.validate = cl->validate;
	int prc = post_process(cl->lang, cl->validate ? cl->doc : NULL, cl->text, cl->len,
	                       cl->cursor, &opt, &er, NULL, NULL, 0, cl->max_lines, out);
	engine_result_finish(&er);
	out->total_ms = now_ms() - t0;
	if (prc) {
		complete_result_finish(out);
		return prc;
	}
	return rc;
}

static void run_finish(struct run *r)
{
	engine_result_finish(&r->er);
	free(r->stops);
	free(r->snips);
	ast_slice_finish(&r->slice);
	ast_slice_finish(&r->short_slice);
	ast_doc_delete(r->doc);
}

/* Step 1: one parse of the snapshot, shared by slicing and validation. A
 * parse that fails leaves no tree: slicing and validation then parse on
 * their own. Returns 0 or -ENOMEM. */
static int step_parse(struct run *r, const struct complete_options *opt)
{
	if (!r->lang || !(opt->ast_slice || opt->validate)) return 0;
	r->doc = ast_doc_new(r->lang, ast_text_read, &r->flat);
	if (!r->doc) return -ENOMEM;
	if (ast_doc_parse(r->doc)) {
		ast_doc_delete(r->doc);
		r->doc = NULL;
	}
	return 0;
}

/*
 * The short context's start as the last request had it, while the cursor
 * has moved on from it by less than another short context: it starts a
 * line and the text from it still fits twice the short budget (the engine
 * cuts its front in whole steps from there when time is short, which keeps
 * the cut starts too). Else the slice's own start, remembered. A start the
 * grid alone chose moved every 128 bytes typed, and after a jump, while
 * the first answer was computed, the user typed past one: the next key
 * then found nothing of the short prompt cached.
 */
static void short_keep_start(struct ast_slice *s, const struct tokenizer *tok, const char *text,
                             size_t cursor, struct complete_memory *mem)
{
	size_t st = mem->short_start;
	if (st < s->prefix_start && (st == 0 || text[st - 1] == '\n') &&
	    count_tokens((void *)tok, text + st, cursor - st) <= 2 * SHORT_PREFIX_TOKENS) {
		char *p = malloc(cursor - st + 1);
		if (p) {
			memcpy(p, text + st, cursor - st);
			p[cursor - st] = 0;
			free(s->prefix);
			s->prefix = p;
			s->prefix_len = cursor - st;
			s->prefix_start = st;
		}
	}
	mem->short_start = s->prefix_start;
}

/* Step 2: the prefix, suffix and snippets under the token budgets, counted
 * with the model's own tokenizer, and the shape that decides max lines.
 * Returns 0, -ENOMEM or -EINVAL. */
static int step_slice(struct run *r, const struct tokenizer *tok, const char *text, size_t len,
                      size_t cursor, const struct settings *st, const struct complete_options *opt)
{
	struct ast_slice_params sp = {
		.lang = opt->ast_slice ? r->lang : NULL,
		.text = text,
		.len = len,
		.cursor = cursor,
		.prefix_tokens = (size_t)st->context_prefix_tokens,
		.suffix_tokens = (size_t)st->context_suffix_tokens,
		.extra_tokens = opt->ast_slice ? (size_t)st->context_extra_tokens : 0,
		.count = count_tokens,
		.count_ctx = (void *)tok,
		.doc = opt->ast_slice ? r->doc : NULL,
		.start_step = WINDOW_STEP_BYTES,
	};
	int rc = ast_slice(&sp, &r->slice);
	if (rc) return rc; /* ast/ returns negative errno values too */
	/* The short context, for the prefill budget (or instead of the full one). */
	if (!opt->prefill_only &&
	    (opt->short_only || (opt->fit_deadline && opt->deadline_ms > 0))) {
		struct ast_slice_params ssp = sp;
		if (ssp.prefix_tokens > SHORT_PREFIX_TOKENS)
			ssp.prefix_tokens = SHORT_PREFIX_TOKENS;
		if (ssp.suffix_tokens > SHORT_SUFFIX_TOKENS)
			ssp.suffix_tokens = SHORT_SUFFIX_TOKENS;
		ssp.extra_tokens = 0;
		/* the nearest lines, on a finer grid than the full window's:
		 * typing moves the earliest boundary that fits forward with the
		 * cursor, and a start that moved with it would leave nothing of
		 * the short prompt cached for the next key */
		ssp.start_step = SHORT_STEP_BYTES;
		/* out of memory: no fallback, the full context answers */
		r->has_short = ast_slice(&ssp, &r->short_slice) == 0;
		if (r->has_short && opt->memory)
			short_keep_start(&r->short_slice, tok, text, cursor, opt->memory);
	}
	/* Without slicing the shape still comes from the lines (cheap, no tree). */
	r->shape = opt->ast_slice ? r->slice.shape : ast_shape_at(r->lang, text, len, cursor);
	return 0;
}

/*
 * Step 3: the extra snippets, and the document's sticky memory of them: the
 * ones chosen on this line are kept while it is typed (same line start, same
 * prefix start), so the cached prompt after them stays valid. Returns 0 or
 * -ENOMEM. Keeping the memory's snippets is best effort: out of memory
 * there, the slice's own are used.
 */
static int step_snippets(struct run *r, const struct tokenizer *tok, const char *text,
                         size_t cursor, const struct settings *st,
                         const struct complete_options *opt, struct complete_result *out)
{
	const struct ast_slice *sl = &r->slice;
	size_t n_all = sl->n_snippets + (opt->ast_slice ? opt->n_project : 0);
	if (n_all) {
		r->snips = calloc(n_all, sizeof *r->snips);
		if (!r->snips) return -ENOMEM;
	}
	/* The project's chunks first, in the order given, whole, in what the
	 * document's own snippets left of the budget (the path line above each
	 * counted too); the document's own come next, nearest the prefix. */
	long left = (long)st->context_extra_tokens - (long)sl->extra_tokens_used;
	for (size_t i = 0; opt->ast_slice && i < opt->n_project; i++) {
		const struct engine_snippet *ps = &opt->project[i];
		long t = (long)count_tokens((void *)tok, ps->text, ps->len) + 2 +
		         (ps->path ? (long)count_tokens((void *)tok, ps->path, strlen(ps->path))
		                   : 0);
		if (t > left) continue;
		left -= t;
		out->project_tokens += (int32_t)t;
		out->n_project_kept++;
		r->snips[r->n_snips++] = *ps;
	}
	for (size_t i = 0; i < sl->n_snippets; i++)
		r->snips[r->n_snips++] =
		        (struct engine_snippet){ sl->snippets[i].text, sl->snippets[i].len, NULL };
	struct complete_memory *mem = opt->memory;
	if (!mem) return 0;
	size_t line_start = cursor;
	while (line_start > 0 && text[line_start - 1] != '\n') line_start--;
	if (!(mem->valid && mem->line_start == line_start &&
	      mem->prefix_start == sl->prefix_start)) {
		memory_store(mem, line_start, sl->prefix_start, r->snips, r->n_snips);
		return 0;
	}
	struct engine_snippet *kept = calloc(mem->n + 1, sizeof *kept);
	if (!kept) return 0;
	for (size_t i = 0; i < mem->n; i++)
		kept[i] = (struct engine_snippet){ mem->texts[i], mem->lens[i], mem->paths[i] };
	free(r->snips);
	r->snips = kept;
	r->n_snips = mem->n;
	return 0;
}

/*
 * Another file's line without its trailing comment: the comment speaks of
 * that file (a header's `#endif  // ITS_GUARD_H_` or its block-comment
 * form, a note on its own variable), and copied here it is wrong even where the code
 * before it is right (eval --workspace: `#endif` completed with another
 * header's guard, where the document's own closer would have been exact).
 * Stripped only where it is plainly a comment: the marker (or, for the `//`
 * languages, a block comment closed at the line's end) after a blank, code before
 * it, the quotes before it balanced and none after it (the candidate may
 * start inside a string). Returns the length to keep.
 */
static size_t strip_trailing_comment(const char *t, size_t len, const char *marker)
{
	size_t ml = strlen(marker);
	bool slashes = !strcmp(marker, "//");
	int quotes = 0;
	bool code = false;
	for (size_t i = 0; i < len; i++) {
		char ch = t[i];
		if (ch == '"') quotes++;
		bool at_marker = i + ml <= len && !memcmp(t + i, marker, ml);
		bool at_block = slashes && i + 1 < len && t[i] == '/' && t[i + 1] == '*';
		if ((at_marker || at_block) && i > 0 && (t[i - 1] == ' ' || t[i - 1] == '\t') &&
		    code && quotes % 2 == 0) {
			const char *rest = t + i;
			size_t rl = len - i;
			if (memchr(rest, '"', rl) || memchr(rest, '\'', rl)) return len;
			if (at_block && !at_marker) {
				size_t e = rl;
				while (e > 0 && (rest[e - 1] == ' ' || rest[e - 1] == '\t')) e--;
				if (e < 4 || rest[e - 2] != '*' || rest[e - 1] != '/') return len;
			}
			size_t keep = i;
			while (keep > 0 && (t[keep - 1] == ' ' || t[keep - 1] == '\t')) keep--;
			return keep;
		}
		if (ch != ' ' && ch != '\t') code = true;
	}
	return len;
}

/*
 * Whether the line before the cursor's ends with a `\` (the cursor's line
 * continues a macro or a joined line).
 */
static bool line_continued(const char *text, size_t cursor)
{
	size_t s = cursor;
	while (s > 0 && text[s - 1] != '\n') s--;
	if (!s) return false;
	size_t e = s - 1; /* the previous line's newline */
	while (e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\r')) e--;
	return e > 0 && text[e - 1] == '\\';
}

/*
 * Another C file's line without the `\` that continued its macro, where
 * the cursor's line continues none (eval --workspace: the same loop header
 * is written in a sibling's macro body, with its `\` padded to column 80,
 * and the copy with it was wrong where the code before it was right).
 * Returns the length to keep.
 */
static size_t strip_continuation(const char *t, size_t len)
{
	size_t e = len;
	while (e > 0 && (t[e - 1] == ' ' || t[e - 1] == '\t')) e--;
	if (!e || t[e - 1] != '\\') return len;
	e--;
	while (e > 0 && (t[e - 1] == ' ' || t[e - 1] == '\t')) e--;
	return e;
}

/*
 * Step 4: the texts given to the engine to score beside its own candidates:
 * lines that continue the cursor's line elsewhere in the document
 * (completion.fromDocument), then what closes what the document left open
 * (`#endif`, `});`, `"""`), which this model seldom proposes.
 */
static void step_given(struct run *r, const char *text, size_t len, size_t cursor,
                       const struct settings *st, const struct complete_options *opt)
{
	r->n_given = 0;
	if (!st->completion_from_document) goto closers;
	struct recall_params recp = { .text = text, .len = len, .cursor = cursor };
	struct recall_item mine[RECALL_CANDIDATES], theirs[RECALL_CANDIDATES];
	int n_mine = recall_find(&recp, mine, RECALL_CANDIDATES), n_theirs = 0;
	/* Lines of the other files (project context), scored the same way with the
	 * same prior: they take turns with the document's own for the
	 * RECALL_CANDIDATES places (the document first), so that without them
	 * the candidates are the document's as before. */
	if (opt->project_lines) {
		recp.other = opt->project_lines;
		recp.other_len = opt->project_lines_len;
		n_theirs = recall_find(&recp, theirs, RECALL_CANDIDATES);
	}
	if (n_mine < 0) n_mine = 0;
	if (n_theirs < 0) n_theirs = 0;
	bool c_family = !strcmp(r->lname, "c") || !strcmp(r->lname, "cpp");
	bool continued = n_theirs && c_family && line_continued(text, cursor);
	for (int i = 0, a = 0, b = 0;
	     r->n_given < RECALL_CANDIDATES && (a < n_mine || b < n_theirs); i++) {
		bool take_mine = a < n_mine && (b >= n_theirs || i % 2 == 0);
		struct recall_item item = take_mine ? mine[a++] : theirs[b++];
		const struct recall_item *it = &item;
		if (!take_mine)
			item.len =
			        strip_trailing_comment(item.text, item.len, lang_comment(r->lname));
		if (!take_mine && c_family && !continued)
			item.len = strip_continuation(item.text, item.len);
		if (!item.len) continue;
		bool dup = false;
		for (size_t k = 0; k < r->n_given; k++)
			dup |= r->given[k].len == it->len &&
			       !memcmp(r->given[k].text, it->text, it->len);
		if (dup) continue;
		r->found[r->n_given] = *it;
		r->given[r->n_given] = (struct engine_given){ it->text, it->len };
		r->notes[r->n_given] = (struct given_note){
			.prior = RECALL_PRIOR + RECALL_PRIOR_COUNT * log(it->count),
			.copied = take_mine, /* a copy of a line of this document */
			.copy_at = take_mine ? it->source : 0,
		};
		r->n_given++;
		r->n_project_given += !take_mine;
	}
closers:;
	size_t n_closers = opt->validate ? ast_closers_at(r->doc, r->lang, text, len, cursor,
	                                                  r->closers, ENGINE_MAX_GIVEN - r->n_given)
	                                 : 0;
	for (size_t i = 0; i < n_closers; i++, r->n_given++) {
		r->given[r->n_given] =
		        (struct engine_given){ r->closers[i].text, strlen(r->closers[i].text) };
		r->notes[r->n_given] = (struct given_note){ .must_mend = r->closers[i].must_mend };
	}
}

/*
 * The stop strings: the language's own (ast_lang_stops: a new top-level
 * definition at column 0), then completion.stop's, which add to them. On
 * out of memory, completion.stop's alone, as they were before the
 * language had any.
 */
static size_t run_stops(struct run *r, const struct settings *st, const char *const **out)
{
	const char *const *own = ast_lang_stops(r->lang);
	size_t n_own = 0, n_set = 0;
	while (own[n_own]) n_own++;
	while (st->completion_stop && st->completion_stop[n_set]) n_set++;
	*out = (const char *const *)st->completion_stop;
	if (!n_own) return n_set;
	r->stops = calloc(n_own + n_set + 1, sizeof *r->stops);
	if (!r->stops) return n_set;
	memcpy(r->stops, own, n_own * sizeof *own);
	if (n_set) memcpy(r->stops + n_own, st->completion_stop, n_set * sizeof *r->stops);
	*out = r->stops;
	return n_own + n_set;
}

/* Step 5: the engine request from the settings, the options and what the
 * steps before made (all borrowed from *r). */
static void step_request(struct run *r, const struct settings *st,
                         const struct complete_options *opt, int32_t max_lines)
{
	const char *const *stops;
	size_t n_stop = run_stops(r, st, &stops);
	r->scope = (struct scope_rule){ .by_indent = lang_by_indent(r->lname),
		                        .indent = r->shape.indent_len };
	struct engine_request *rq = &r->rq;
	*rq = engine_request_default();
	rq->prefix = r->slice.prefix;
	rq->prefix_len = r->slice.prefix_len;
	rq->suffix = r->slice.suffix;
	rq->suffix_len = r->slice.suffix_len;
	rq->extra = r->snips;
	rq->n_extra = r->n_snips;
	rq->comment = lang_comment(r->lname);
	bool project = false; /* project chunks in the prompt (as kept for the line) */
	for (size_t i = 0; i < r->n_snips; i++) project |= r->snips[i].path != NULL;
	if (project) { /* a repository around the file: say so, in its format */
		rq->repo_name = opt->repo_name;
		rq->path = opt->path;
	}
	if (fim_template_parse(st->fim_template, &rq->fim) < 0) {
		rq->fim = FIM_TEMPLATE_AUTO;
	} else if (rq->fim == FIM_TEMPLATE_CUSTOM) {
		rq->fim_custom = st->fim_template;
	}
	/* the slice already fits the budgets with this tokenizer; the engine's
	 * own cut (same budgets) is then a no-op, except for template tokens */
	rq->prefix_tokens = st->context_prefix_tokens > 0 ? st->context_prefix_tokens : 1;
	rq->suffix_tokens = st->context_suffix_tokens > 0 ? st->context_suffix_tokens : 1;
	rq->extra_tokens = st->context_extra_tokens > 0 ? st->context_extra_tokens : 1;
	rq->given = r->given;
	rq->n_given = r->n_given;
	rq->n_candidates = st->completion_candidates;
	if (rq->n_candidates > ENGINE_MAX_CANDIDATES) rq->n_candidates = ENGINE_MAX_CANDIDATES;
	rq->max_tokens = st->completion_max_tokens;
	rq->max_lines = max_lines;
	rq->temperature = (float)st->completion_temperature;
	rq->top_p = (float)st->completion_top_p;
	rq->seed = opt->seed;
	rq->stop = stops;
	rq->n_stop = n_stop;
	rq->stop_text = opt->validate && max_lines > 1 ? scope_stop : NULL;
	rq->stop_ud = &r->scope;
	rq->cancel = opt->cancel;
	rq->use_cache = opt->use_cache;
	rq->deadline_ms = opt->deadline_ms;
	rq->prompt_lookup = st->completion_prompt_lookup;
	rq->fit_deadline = opt->fit_deadline;
	if (r->has_short && opt->short_only) {
		rq->prefix = r->short_slice.prefix;
		rq->prefix_len = r->short_slice.prefix_len;
		rq->suffix = r->short_slice.suffix;
		rq->suffix_len = r->short_slice.suffix_len;
		rq->n_extra = 0;
	} else if (r->has_short) {
		rq->short_prefix = r->short_slice.prefix;
		rq->short_prefix_len = r->short_slice.prefix_len;
		rq->short_suffix = r->short_slice.suffix;
		rq->short_suffix_len = r->short_slice.suffix_len;
	}
}

int complete_run(struct engine *engine, const struct tokenizer *tok, const char *language_id,
                 const char *text, size_t len, size_t cursor, const struct settings *st,
                 const struct complete_options *opt, struct complete_result *out,
                 struct infill_error *err)
{
	memset(out, 0, sizeof *out);
	if (err) memset(err, 0, sizeof *err);
	if (opt->live) *opt->live = NULL;
	double t0 = now_ms();
	struct settings fitted = *st; /* shallow: only numbers change */
	complete_fit_context(&fitted, opt->n_ctx);
	st = &fitted;
	if (cursor > len) return fail(err, -EINVAL, "cursor past the end of the text");

	/* zeroed: run_finish releases whatever the steps made */
	struct run run;
	memset(&run, 0, sizeof run);
	struct run *r = &run;
	r->lang = language_id ? ast_lang_from_id(language_id) : NULL;
	r->lname = r->lang || !language_id ? ast_lang_name(r->lang) : language_id;
	r->flat = (struct ast_text){ text, len };

	int rc = step_parse(r, opt);
	if (rc) {
		rc = fail(err, rc, "out of memory");
		goto done;
	}
	rc = step_slice(r, tok, text, len, cursor, st, opt);
	if (rc) {
		rc = fail(err, rc,
		          rc == -ENOMEM ? "context slicing failed (out of memory)"
		                        : "context slicing failed");
		goto done;
	}
	out->shape = r->shape.kind;
	out->context_start = r->slice.prefix_start;
	out->context_end = r->slice.suffix_end;
	out->max_lines = complete_max_lines(r->shape.kind, st);
	double t1 = now_ms();
	out->slice_ms = t1 - t0;
	rc = step_snippets(r, tok, text, cursor, st, opt, out);
	if (rc) {
		rc = fail(err, rc, "out of memory");
		goto done;
	}
	step_given(r, text, len, cursor, st, opt);
	out->project_given = r->n_project_given;
	step_request(r, st, opt, out->max_lines);

	struct infill_error ierr;
	memset(&ierr, 0, sizeof ierr);
	if (opt->prefill_only && !engine) { /* nothing to prefill into */
		rc = 0;
		goto done;
	}
	if (opt->prefill_only) { /* background work: the cache filled, nothing decoded */
		rc = engine_prefill(engine, &r->rq, &r->er, &ierr);
		out->prompt_tokens = r->er.prompt_tokens;
		out->cached_tokens = r->er.cached_tokens;
		out->prefilled_tokens = r->er.prefilled_tokens;
		out->cancelled = r->er.cancelled;
		out->engine_ms = out->total_ms = now_ms() - t1;
		if (rc < 0) rc = fail_from(err, rc, &ierr, "prefill failed");
		goto done;
	}
	struct engine_live *elv = NULL;
	if (opt->live && engine && !opt->generate) r->rq.live = &elv;
	rc = opt->generate ? opt->generate(opt->generate_ud, &r->rq, &r->er, &ierr)
	     : engine      ? engine_run(engine, &r->rq, &r->er, &ierr)
	                   : error_set(&ierr, -EINVAL, "no model loaded");
	if (elv) *opt->live = live_new(elv, r, text, len, cursor, opt);
	out->prefilled_tokens = r->er.prefilled_tokens;
	out->budget = r->er.budget;
	out->shortened = r->er.budget == ENGINE_BUDGET_SHORT;
	double t2 = now_ms();
	out->engine_ms = t2 - t1;
	out->prompt_tokens = r->er.prompt_tokens;
	out->cached_tokens = r->er.cached_tokens;
	out->shifted_tokens = r->er.shifted_tokens;
	out->processed_tokens = r->er.processed_tokens;
	out->generated_tokens = r->er.generated_tokens;
	out->draft_tokens = r->er.draft_tokens;
	out->accepted_draft_tokens = r->er.accepted_draft_tokens;
	out->model_draft_tokens = r->er.model_draft_tokens;
	out->accepted_model_draft_tokens = r->er.accepted_model_draft_tokens;
	out->n_generated = r->er.n_candidates;
	for (int32_t i = 0; i < r->er.n_candidates; i++)
		if (r->er.candidates[i].stop == ENGINE_STOP_DEADLINE) out->deadline_hit = true;
	out->prefill_ms = r->er.prefill_ms;
	out->decode_ms = r->er.decode_ms;
	if (rc == ENGINE_ECANCELED || (opt->cancel && atomic_load(opt->cancel))) {
		out->cancelled = true;
		rc = fail(err, ENGINE_ECANCELED, "cancelled");
		goto done;
	}
	if (rc < 0) {
		rc = fail_from(err, rc, &ierr, "the engine failed");
		goto done;
	}

	/* Step 6: validation, trimming and ranges; then rerank */
	rc = post_process(r->lang, opt->validate ? r->doc : NULL, text, len, cursor, opt, &r->er,
	                  r->given, r->notes, r->n_given, out->max_lines, out);
	if (!rc) rc = rank(st, text, len, cursor, opt, out);
	if (rc) {
		complete_result_finish(out);
		rc = fail(err, rc, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < out->count; i++)
		out->given_shown += out->items[i].stop == ENGINE_STOP_GIVEN;
	double t3 = now_ms();
	out->post_ms = t3 - t2;
	out->total_ms = t3 - t0;
done:
	run_finish(r);
	return rc;
}
