/*
 * engine.h - completion jobs over a loaded model (part of infer/'s public
 * face; infer.h includes it): FIM prompts, the prefix cache, N candidates
 * decoded as one batch, stop rules, cancellation, and the rerank functions.
 *
 * Threads: a struct engine belongs to the thread that runs its jobs (the
 * engine thread), like the model under it; none of its functions locks. The
 * only thing another thread may touch during engine_run is the request's
 * cancel flag (an atomic). The fim_ and rerank_ functions are pure and may
 * be called from any thread.
 *
 * Typical use (the LSP side, on its engine thread):
 *
 *   struct engine_params ep = engine_params_default();
 *   struct engine *e = engine_new(model, &ep, &err);       // model borrowed
 *   struct engine_request rq = engine_request_default();
 *   rq.prefix = ...; rq.suffix = ...; rq.cancel = &job->cancel;
 *   struct engine_result res;
 *   int rc = engine_run(e, &rq, &res, &err);   // 0, ENGINE_ECANCELED or < 0
 *   ... res.candidates[i].text ...  rerank_run(...) ...
 *   engine_result_finish(&res);
 *   engine_free(e);                            // before model_free
 */
#ifndef INFILL_INFER_ENGINE_H
#define INFILL_INFER_ENGINE_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infer.h"

/* engine_run's return when the request's cancel flag was set: a name for
 * -ECANCELED, in the one errno space of infer/ (error.h). */
#define ENGINE_ECANCELED (-ECANCELED)

/* ---- FIM templates (fim.c) ---- */

enum fim_template {
	FIM_TEMPLATE_AUTO,      /* from the vocabulary's special tokens */
	FIM_TEMPLATE_DEEPSEEK,  /* <｜fim▁begin｜>P<｜fim▁hole｜>S<｜fim▁end｜> */
	FIM_TEMPLATE_QWEN,      /* <|fim_prefix|>P<|fim_suffix|>S<|fim_middle|> */
	FIM_TEMPLATE_STARCODER, /* <fim_prefix>P<fim_suffix>S<fim_middle> */
	FIM_TEMPLATE_CODELLAMA, /* ▁<PRE> P ▁<SUF>S ▁<MID> */
	FIM_TEMPLATE_CUSTOM,    /* a string with {prefix} and {suffix} */
	/* Qwen's markers, files after <|file_separator|> (a vocabulary with
	 * <|fim_prefix|> and <|file_separator|>: CodeGemma) */
	FIM_TEMPLATE_CODEGEMMA,
};

/*
 * The order of a FIM prompt's parts. PSM: prefix, then suffix (what every
 * family here was trained on); SPM: suffix first, then the prefix, so text
 * typed at the cursor extends the prompt's end and the suffix stays cached
 * (StarCoder's "SPMv2" <fim_prefix><fim_suffix>S<fim_middle>P, and
 * CodeLlama's "<PRE> <SUF>S <MID> P", both trained on half their FIM
 * samples). AUTO: fim_order_for the template.
 */
enum fim_order {
	FIM_ORDER_AUTO,
	FIM_ORDER_PSM,
	FIM_ORDER_SPM,
};

/* Parses the fim.order setting ("auto", "psm", "spm"; NULL or "": auto).
 * -1 for anything else. */
int fim_order_parse(const char *s, enum fim_order *out);
const char *fim_order_name(enum fim_order o); /* static: "auto", "psm", "spm" */
/*
 * The suffix path of a model family (checked against each
 * family's FIM training): SPM for STARCODER and CODELLAMA, whose training
 * mixed PSM and SPM, so typing never re-prefills the suffix; PSM for
 * DEEPSEEK (PSM only) and QWEN (its FIM format is PSM only), where the
 * suffix is re-prefilled on each key and the prefill budget cuts it when
 * it would break the deadline; PSM for CUSTOM and AUTO.
 */
enum fim_order fim_order_for(enum fim_template t);

/* Parses the fim.template setting: "auto", "deepseek", "qwen", "starcoder",
 * "codellama", "codegemma", or anything containing both {prefix} and {suffix} (CUSTOM).
 * NULL or "" is AUTO. Returns 0, or -EINVAL for a name that is none of
 * these (a custom string lacking a placeholder). */
int fim_template_parse(const char *s, enum fim_template *out);
/* Static name: "auto", "deepseek", ... */
const char *fim_template_name(enum fim_template t);
/* The template AUTO resolves to for this vocabulary (DEEPSEEK, QWEN for
 * <|fim_prefix|>, CODEGEMMA for <|fim_prefix|> with <|file_separator|>,
 * STARCODER for <fim_prefix>, CODELLAMA); AUTO when the
 * vocabulary has no FIM tokens (then engine_run fails with a message). */
enum fim_template fim_template_for(const struct tokenizer *t);

/*
 * Text form of a FIM prompt, for logs, tests and remote backends: the
 * template's special tokens written as text around prefix and suffix.
 * custom: the template string when t is CUSTOM (else ignored). Returns a new
 * NUL-terminated string (caller frees) or NULL on out of memory or AUTO.
 */
char *fim_format_text(enum fim_template t, const char *custom, const char *prefix,
                      const char *suffix);

/* ---- requests and results ---- */

struct engine_request;

/*
 * The prompt engine_run would build for req with tokenizer t, as token ids,
 * without an engine (fim_tokens.c): what a remote backend sends, so that
 * the server prefills what the in-process engine would. Budgets and
 * templates as engine_run; with req->token_healing the prefix's last token
 * is backed up over (*healed_bytes, may be NULL), which only a local
 * sampler can undo, so a remote caller turns healing off. Returns the
 * count with *out new (caller frees), or a negative code with *err set.
 */
int fim_prompt_tokens(const struct tokenizer *t, const struct engine_request *req, int32_t **out,
                      int32_t *healed_bytes, struct infill_error *err);

/* One extra context snippet (another file, a signature, imports): a chunk
 * of repository context. */
struct engine_snippet {
	const char *text; /* borrowed for engine_run */
	size_t len;
	const char *path; /* its file, relative to the repository root; may be NULL */
};

/*
 * Repository context in the family's own format: what fim_prompt_build puts
 * before the prefix for engine_request.extra (chunks, in order), .repo_name
 * and .path (the current file), as text with the special tokens written
 * out. A family with a file separator in its vocabulary writes files the
 * way it was trained on repositories:
 *   qwen:       <|repo_name|>REPO\n <|file_sep|>PATH\nTEXT ... <|file_sep|>CURRENT\n
 *   starcoder:  <repo_name>REPO <file_sep>PATH\nTEXT ... <file_sep>CURRENT\n
 *   codegemma:  <|file_separator|>PATH\nTEXT ... <|file_separator|>CURRENT\n
 * (no repository name token in CodeGemma's vocabulary). The others get each
 * chunk under a comment line holding its path ("// PATH\n" with comment
 * "//"), nothing for the repository name or the current file. Each chunk's
 * text ends with a newline (one is added when missing). NULL repo, path or
 * comment: none ("//" for comment). Returns a new string (caller frees) or
 * NULL when out of memory. The prompt itself holds only the chunks that fit
 * engine_request.extra_tokens, whole.
 */
char *fim_context_text(enum fim_template t, const char *repo, const struct engine_snippet *chunks,
                       size_t n, const char *path, const char *comment);

/* A candidate the caller found without the model (a line that continues the
 * same way elsewhere in the document): the engine does not decode it, it
 * scores it after the same prompt, so it ranks against the decoded ones. */
struct engine_given {
	const char *text; /* what goes at the cursor; borrowed for engine_run */
	size_t len;
};

#define ENGINE_MAX_GIVEN 4

/* Why a candidate stopped. */
enum engine_stop {
	ENGINE_STOP_NONE = 0,
	ENGINE_STOP_EOG,    /* end-of-text / FIM end / other control token */
	ENGINE_STOP_STRING, /* a stop string (cut before it) */
	ENGINE_STOP_MAX_TOKENS,
	ENGINE_STOP_MAX_LINES, /* cut before the newline that would start line max_lines+1 */
	ENGINE_STOP_SCOPE,     /* stop_text said the last line leaves the scope (line cut) */
	ENGINE_STOP_CANCELLED,
	ENGINE_STOP_DEADLINE, /* the request's deadline passed (cut back to a word end) */
	ENGINE_STOP_GIVEN,    /* not decoded: a given text, scored */
};
const char *engine_stop_name(enum engine_stop s); /* static */

/*
 * One job. Everything is borrowed for the duration of engine_run. The text
 * fields are bytes (UTF-8) and need not be NUL-terminated.
 */
struct engine_request {
	const char *prefix; /* text before the cursor (as ast_slice cut it) */
	size_t prefix_len;
	const char *suffix; /* text after the cursor */
	size_t suffix_len;
	const struct engine_snippet *extra; /* put first in the prompt, in order, while they fit */
	size_t n_extra;
	/* The repository's name and the current file's path (relative to its
	 * root), for the families with a repository format (fim_context_text);
	 * NULL: none. */
	const char *repo_name, *path;
	const char *comment; /* line comment marker for snippet headers ("#", "//"); NULL: "//" */

	enum fim_template fim;  /* AUTO: from the vocabulary */
	const char *fim_custom; /* the template when fim is CUSTOM */
	/* Token budgets (context.*Tokens); <= 0: the defaults 1024/192/512. The
	 * prefix keeps its end, the suffix its start; whole snippets only. */
	int32_t prefix_tokens, suffix_tokens, extra_tokens;
	bool token_healing; /* back up over the prefix's last token (default true) */

	int32_t n_candidates; /* 1..ENGINE_MAX_CANDIDATES; candidate 0 is greedy */
	/* Texts to score as further candidates (0..ENGINE_MAX_GIVEN), in one
	 * batched forward before decoding (left out when the deadline has passed
	 * by then); one longer than max_tokens tokens is left out of the result. */
	const struct engine_given *given;
	size_t n_given;
	int32_t max_tokens;       /* per candidate */
	int32_t max_lines;        /* per candidate; <= 0: no limit */
	float temperature, top_p; /* for candidates 1.. (completion.temperature/topP) */
	int32_t top_k;            /* <= 0: off */
	uint64_t seed;            /* candidate i samples with seed + i */
	const char *const *stop;  /* stop strings (completion.stop); text is cut before them */
	size_t n_stop;
	/*
	 * Scope check (the ast/ scope end), may be NULL. Called with a
	 * candidate's whole text so far each time it completes a line (text ends
	 * with '\n') and once more at its end if it has an unfinished last line.
	 * Returning true means the last line (after the previous '\n') leaves the
	 * scope: the engine cuts the candidate before that line and stops it.
	 */
	bool (*stop_text)(void *ud, const char *text, size_t len);
	void *stop_ud;
	/* Set to non-zero (from any thread) to stop the job at its next prefill
	 * chunk or decode step; may be NULL. */
	atomic_int *cancel;
	/*
	 * Answer-by time on CLOCK_MONOTONIC, in ms (completion.deadlineMs after
	 * the request arrived); 0: none. When the next decode step would end
	 * past it (judged by the last step's time), every
	 * candidate still going stops (ENGINE_STOP_DEADLINE) with what it has,
	 * minus an unfinished trailing word. The first token of each candidate
	 * comes from the prompt's logits, so even a late prefill yields one.
	 * Output then depends on the machine's speed: leave it 0 where a result
	 * must be reproducible.
	 */
	double deadline_ms;
	bool use_cache;       /* look up and fill the prefix cache (default true) */
	enum fim_order order; /* AUTO: fim_order_for the template (custom: as written) */
	/*
	 * The prefill budget (completion.deadlineMs governs prefill too). When
	 * fit_deadline is set, deadline_ms is set and the engine knows its
	 * prefill rate (measured at run time, or engine_params), it estimates
	 * the time of the prompt's uncached part before prefilling; when that
	 * would end past the deadline less room for the first decode steps:
	 *   1. PSM: the suffix is cut at a line end to what fits, when the
	 *      excess is no more than the suffix (the cached prefix is kept);
	 *   2. else the short context below answers (no snippets), its front
	 *      trimmed further when even it does not fit;
	 *   3. else (no short context) the full prompt runs late.
	 * engine_result.budget says which. The full prompt is not prefilled:
	 * the caller may engine_prefill it in the background.
	 */
	bool fit_deadline;
	const char *short_prefix; /* the nearest lines and the scope's head; NULL: none */
	size_t short_prefix_len;
	const char *short_suffix;
	size_t short_suffix_len;
	/*
	 * Prompt-lookup decoding (completion.promptLookup, on by default in the
	 * server; false in engine_request_default, which decodes plainly unless
	 * asked; tests/infer/bench_lookup.c measures it): each
	 * step, a candidate whose last tokens also occur earlier in the prompt
	 * or in its own text drafts the tokens that followed them there (up to
	 * ENGINE_DRAFT_MAX), and the step's forward pass checks them all; the
	 * prefix the candidate would have chosen anyway is kept. The output is
	 * that of decoding token by token (same choices, same sampler draws),
	 * up to the float rounding of a wider batch; only fewer steps are run.
	 */
	bool prompt_lookup;
	/*
	 * Draft with the engine's draft model when it has one
	 * (engine_set_draft; default true). Greedy candidates keep a drafted
	 * token when it is the model's own choice, so their text is that of
	 * plain decoding; sampled ones keep it by the speculative-sampling rule
	 * (sampler_spec_take), which keeps the model's law but not the plain
	 * sampler's draws. Lookup drafts come first, the draft model fills.
	 */
	bool draft;
	/* Progress, may be NULL: called on the engine thread after each prefill
	 * chunk (prefilled = prompt tokens computed so far, step = -1) and after
	 * each decode step (step = 0, 1, ...). For tests and progress reports. */
	void (*on_progress)(void *ud, int32_t prefilled, int32_t step);
	void *progress_ud;
	/* Decode steps (forwards) this call may run; <= 0: no limit. Past it
	 * the candidates still going stop as at the deadline (or pause, with
	 * live). For tests and for engine_live_continue's slices of work. */
	int32_t max_steps;
	/*
	 * Where to keep candidates the deadline (or max_steps) stopped before
	 * their natural end, may be NULL. When set, engine_run stores in *live
	 * a new struct engine_live holding them, paused between two decode
	 * steps with their KV pages, sampler and text (the result shows them
	 * cut as at the deadline), or NULL when none was paused, the job
	 * failed or was cancelled. The caller frees it (engine_live_free).
	 */
	struct engine_live **live;
};

#define ENGINE_MAX_CANDIDATES 16
/* Tokens one candidate may draft per decode step (prompt lookup); a step
 * holds at most 8 rows with its drafts (engine.c, STEP_CHEAP_ROWS). */
#define ENGINE_DRAFT_MAX      7

/* What the prefill budget did with a request (engine_request.fit_deadline). */
enum engine_budget {
	ENGINE_BUDGET_OFF,    /* not asked, no deadline, or the rate is not known yet */
	ENGINE_BUDGET_FITS,   /* the full prompt fits */
	ENGINE_BUDGET_SUFFIX, /* the suffix was cut to fit */
	ENGINE_BUDGET_SHORT,  /* the short context answered */
	ENGINE_BUDGET_LATE,   /* nothing shorter to use: the full prompt, past the deadline */
};
const char *engine_budget_name(enum engine_budget b); /* static */

/* Defaults: budgets 1024/192/512, healing on, 3 candidates, 64 tokens, 12
 * lines, temperature 0.2, top_p 0.95, seed 1, cache on, everything else 0 (prompt lookup off). */
struct engine_request engine_request_default(void);

struct engine_candidate {
	char *text; /* owned by the result; NUL-terminated; what goes at the
				* cursor (the healed text already removed) */
	size_t len;
	int32_t n_tokens;    /* generated tokens (including a final stop token) */
	double sum_logprob;  /* of the chosen tokens, natural log */
	double mean_logprob; /* sum / n_tokens (0 when none) */
	enum engine_stop stop;
	/* A given text (stop ENGINE_STOP_GIVEN): its tokens are n_tokens - 1,
	 * and the last term of sum_logprob is end_logprob, the log-probability
	 * that the completion ends after it (an end token or a line break). */
	double end_logprob;
};

struct engine_result {
	/* owned; n_candidates entries: the decoded ones (index 0 greedy), then
	 * the given ones that were scored */
	struct engine_candidate *candidates;
	int32_t n_candidates;
	int32_t prompt_tokens;  /* tokens of the prompt */
	int32_t cached_tokens;  /* of those, KV re-used from the prefix cache */
	int32_t shifted_tokens; /* of those, re-used by RoPE shift (approximate) */
	/* of prompt_tokens, those whose KV the job holds after its prefill
	 * (cached, shifted or computed): fewer when it was cancelled during
	 * the prefill, 0 when before it */
	int32_t processed_tokens;
	int32_t generated_tokens;      /* over all candidates */
	int32_t healed_bytes;          /* bytes of the prefix backed up over by token healing */
	int32_t draft_tokens;          /* prompt lookup: tokens drafted and checked */
	int32_t accepted_draft_tokens; /* of those, kept (each saved a decode step) */
	int32_t model_draft_tokens;    /* draft model: tokens drafted and checked */
	int32_t accepted_model_draft_tokens; /* of those, kept */
	/* prompt tokens the draft model computed for the job: 0 where its
	 * cache held them (a background prefill), or where the deadline left
	 * no time for them (the job then decodes without drafts) */
	int32_t draft_prefilled_tokens;
	int32_t decode_steps; /* forward passes of the decode loop */
	double prefill_ms, decode_ms, total_ms;
	/* of decode_ms, the draft model's drafting (its forwards and choices),
	 * and the steps that checked its drafts */
	double draft_ms;
	int32_t model_draft_steps;
	bool cancelled;
	int32_t prefilled_tokens;  /* prompt tokens actually computed (prompt - cached - shifted,
	                           * or fewer when cancelled) */
	enum engine_budget budget; /* what the prefill budget did (fit_deadline) */
	int32_t full_uncached; /* uncached tokens of the full prompt (fit_deadline), estimated */
	double estimated_prefill_ms; /* of the full prompt's uncached part; 0: rate unknown */
	int32_t given_dropped; /* given texts not scored: no time for them before the deadline */
};

/* Frees what a result owns; accepts a zeroed or already finished result. */
void engine_result_finish(struct engine_result *r);

/* Now on the clock engine_request.deadline_ms is read against (CLOCK_MONOTONIC, ms). */
double engine_now_ms(void);

/* ---- the engine ---- */

struct engine_params {
	/* Pages the prefix cache may hold at most (cache.memoryMB is the pool
	 * as a whole, given to model_load); <= 0: the pool's pages minus room for
	 * one job's prompt and candidates. */
	int32_t cache_max_pages;
	bool reuse_shifted_suffix; /* cache.reuseShiftedSuffix: approximate, off by default */
	int32_t prefill_chunk;     /* tokens per prefill forward (cancel checked between); 0: 64 */
	/* Tokens per forward of engine_prefill (background work): a request
	 * that comes waits at most one of these; 0: 16. */
	int32_t background_chunk;
	/* The prefill rate the budget assumes, tokens/s; 0: measured at run
	 * time (a moving average over chunks of 16 tokens or more). For tests
	 * and reproducible benchmarks. */
	double prefill_tokens_per_s;
	/* Decode steps the budget leaves room for after the prefill (at the
	 * measured cost of a step of every candidate); < 0: 1. The first
	 * token needs none: it comes from the prompt's last row. Two steps of
	 * three candidates on a 1B model on 2 cores were ~150 ms, all a 200 ms
	 * deadline had left for prefill. */
	int32_t decode_reserve_steps;
};

struct engine_params engine_params_default(void);

struct engine;

/* New engine over m (borrowed: m must outlive it; the engine owns the KV
 * pages it takes from m's pool). NULL with *err set on out of memory. */
struct engine *engine_new(struct model *m, const struct engine_params *p, struct infill_error *err);
/* Releases every cached page; accepts NULL. */
void engine_free(struct engine *e);
/*
 * Speculative decoding with a draft model (completion.draftModel): dm
 * (borrowed: it must outlive e, or be replaced first) drafts tokens that
 * the model checks in one batched forward of each decode step, for
 * requests with engine_request.draft. The pair is checked: a draft whose
 * vocabulary (every token; the model's may add unused padding after it),
 * special tokens or FIM prompt differ, that reads as many weight bytes a
 * token as the model or more, or that runs on another backend (CPU against
 * GPU: neither can pay), is refused with -EINVAL and a message naming why, and e goes on without a draft. NULL detaches. Call only while no engine_live of e exists (their
 * candidates hold pages of the draft's pool). 0 or a negative code.
 */
int engine_set_draft(struct engine *e, struct model *dm, struct infill_error *err);
/* The same, dm taken: e frees it (at once when refused). */
int engine_take_draft(struct engine *e, struct model *dm, struct infill_error *err);
/* The draft model drafting for e (borrowed), or NULL when none does: its
 * owner checks its file as the model's (model_file_changed). */
const struct model *engine_draft_model(const struct engine *e);
/* New settings (cache size, shifted reuse); a smaller cache evicts at once. */
void engine_configure(struct engine *e, const struct engine_params *p);
/* The parameters the engine runs with (engine_new's or the last
 * engine_configure's, defaults filled in). */
struct engine_params engine_get_params(const struct engine *e);
/* Drops the whole prefix cache (all its pages go back to the pool). */
void engine_cache_clear(struct engine *e);

/*
 * Runs one completion job on the calling thread: builds the FIM prompt,
 * re-uses the longest cached prefix, prefills the rest in chunks, forks
 * req->n_candidates sequences sharing the prompt's pages, decodes them as one
 * batch per step until each stops, inserts the prompt into the cache.
 * Fills *res (caller's memory; release with engine_result_finish whatever the
 * return). Returns 0, ENGINE_ECANCELED (res->cancelled set, candidates may be
 * partial or absent; every page of the job freed), or a negative code with
 * *err set (e.g. -ENOSPC when the pool is too small for the prompt even
 * after evicting the cache).
 */
int engine_run(struct engine *e, const struct engine_request *req, struct engine_result *res,
               struct infill_error *err);

/*
 * Background prefill: builds req's prompt as engine_run would (no budget,
 * no decoding) and prefills what the prefix cache lacks of it, in chunks of
 * engine_params.background_chunk, checking req->cancel before each chunk;
 * everything computed goes into the cache (bounded by its page budget,
 * cache.memoryMB). For warming the next request: the full context after a
 * shortened answer, the text around an edit, a file just opened, the
 * prompt as if a suggestion were accepted. Fills res's prompt_tokens,
 * cached_tokens and prefilled_tokens (caller's memory; finish it). Returns
 * 0, ENGINE_ECANCELED, or a negative code with *err set.
 */
int engine_prefill(struct engine *e, const struct engine_request *req, struct engine_result *res,
                   struct infill_error *err);

/* Builds the prompt's token ids without running anything (tests, tools):
 * writes at most cap ids to out and returns the prompt's length, or a
 * negative code. *healed_bytes (may be NULL) receives the bytes backed up. */
int engine_prompt_tokens(struct engine *e, const struct engine_request *req, int32_t *out,
                         size_t cap, int32_t *healed_bytes, struct infill_error *err);

/* ---- live candidates: decoding on after the deadline ---- */

/*
 * A job's candidates that the deadline paused (engine_request.live): they
 * go on decoding from where they stopped, nothing recomputed, to their
 * natural end (end of generation, a stop string, the scope's end,
 * max_lines, max_tokens), in as many slices as the caller likes, with other
 * jobs run in between. The tokens are those of one decode never paused,
 * bit for bit. Owned by the engine thread, like the engine; its pages come
 * from the model's pool (free it before engine_free).
 */
struct engine_live;

/*
 * Decodes lv's candidates on, until each ends, req->max_steps forwards have
 * run, req's deadline would pass, or req->cancel is set (then it returns
 * ENGINE_ECANCELED and lv pauses again, resumable: a forward stopped half
 * way is dropped and computed again next time). req (borrowed for the call)
 * gives the stop rules (stop, n_stop, stop_text, stop_ud, max_lines), the
 * cancel flag, the deadline, max_steps and on_progress; its prompt fields
 * are not read, and max_tokens, prompt_lookup and the sampling parameters
 * are those of the request that made lv. Fills *res (caller's memory;
 * finish it) with every candidate's whole text so far, from the cursor
 * (those still going written as at the deadline), and generated_tokens
 * with the tokens this call decoded. 0, ENGINE_ECANCELED or a negative
 * code (then lv has ended, with what it had). Where the request that made
 * lv asked for the draft model and its job decoded without it (no time for
 * the draft's prompt), lv takes it here: the draft's prompt first
 * (res->draft_prefilled_tokens), then drafts as engine_run's would.
 */
int engine_live_continue(struct engine *e, struct engine_live *lv, const struct engine_request *req,
                         struct engine_result *res, struct infill_error *err);
/* Whether every candidate of lv has ended (true for NULL). */
bool engine_live_done(const struct engine_live *lv);
/* Tokens lv's candidates decoded over its life, from the first. */
int64_t engine_live_generated(const struct engine_live *lv);
/* Releases lv's pages, samplers and texts; accepts NULL. */
void engine_live_free(struct engine_live *lv);

/* Measures the prefill rate and a decode step once, so the prefill budget
 * holds from the first job (the rates are otherwise learnt as jobs run).
 * Costs about one prefill chunk. 0 or a negative code. */
int engine_calibrate(struct engine *e, struct infill_error *err);

struct engine_stats {
	uint64_t jobs, cancelled;
	uint64_t prompt_tokens, cached_tokens, shifted_tokens, generated_tokens;
	uint64_t cache_lookups, cache_hits; /* a hit re-used at least one token */
	uint64_t cache_evictions;           /* nodes evicted */
	int32_t cache_nodes, cache_pages;   /* now */
	uint64_t prefilled_tokens;          /* computed by engine_run (not cached, not shifted) */
	uint64_t background_tokens;         /* computed by engine_prefill */
	uint64_t budget_suffix, budget_short, budget_late; /* engine_run's budget decisions */
	double prefill_tokens_per_s; /* the rate the budget uses now; 0: not known yet */
	double decode_step_ms;       /* the measured decode step (moving average); 0: none yet */
	uint64_t draft_tokens, accepted_draft_tokens;             /* prompt lookup */
	uint64_t model_draft_tokens, accepted_model_draft_tokens; /* draft model */
};
void engine_get_stats(const struct engine *e, struct engine_stats *out);

/* ---- rerank (rerank.c): pure functions, no model ---- */

/* Byte-level Levenshtein distance, exact (bit-parallel: alen * blen / 64
 * word steps); SIZE_MAX when out of memory. */
size_t rerank_levenshtein(const char *a, size_t alen, const char *b, size_t blen);
/* The same by the plain dynamic program: the reference for tests. */
size_t rerank_levenshtein_ref(const char *a, size_t alen, const char *b, size_t blen);
/* 1 - levenshtein(a, b) / max(len a, len b) over bytes; 1 for two empty
 * strings. Past 2 KiB the heads are compared and the rest counted by the
 * length difference, so a pair costs at most ~64k word steps. */
double rerank_similarity(const char *a, size_t alen, const char *b, size_t blen);
/* Whether s[0..n) is only spaces, tabs and line breaks (true for n == 0): a
 * candidate that would show nothing. */
bool rerank_is_blank(const char *s, size_t n);

struct rerank_item {
	const char *text; /* borrowed */
	size_t len;
	double mean_logprob; /* from the engine */
	double prior;        /* added to the score: what the caller knows beyond the model */
	/* Set by rerank_run: */
	double score;     /* higher is better */
	int32_t evidence; /* how many candidates merged into this one (itself included) */
	int32_t index;    /* position before reranking (engine candidate index) */
};

struct rerank_params {
	const char *suffix; /* text after the cursor (its start is what counts); may be NULL */
	size_t suffix_len;
	const char *previous; /* the suggestion already shown (remaining part); may be NULL */
	size_t previous_len;
	double dedup_threshold; /* merge when similarity >= this; default 0.9 */
	double min_confidence;  /* drop items whose score < this; default -inf (keep all) */
	/* score = mean_logprob + prior + w_evidence*log(evidence)
	 *         - w_suffix*[repeats suffix] + w_previous*similarity(previous) */
	double w_evidence, w_suffix, w_previous;
};

struct rerank_params rerank_params_default(void);

/*
 * Drops empty/whitespace-only items, merges near-duplicates (keeps the one
 * with the better mean_logprob, adds up evidence), scores, drops those below
 * min_confidence, and sorts best first, in place. Returns how many items
 * remain at the front of items[].
 */
size_t rerank_run(const struct rerank_params *p, struct rerank_item *items, size_t n);

#endif
