/*
 * complete.h - one completion, synchronously, start to end: AST context
 * slice, FIM prompt and N candidates from the engine, validation and
 * trimming, rerank, and the exact range each answer replaces. Private to
 * lsp/.
 *
 * The server's engine thread (engine_thread.c), `infill complete` and the
 * quality harness (`infill eval`) all call complete_run, so what is measured
 * is what the editor gets. The options switch the AST parts and the rerank
 * off one at a time, for ablations.
 *
 * Threads: complete_run runs on the thread that owns the engine (see
 * infer/engine.h); it touches nothing else that is shared. Everything it
 * reads is borrowed for the call.
 */
#ifndef INFILL_LSP_COMPLETE_CORE_H
#define INFILL_LSP_COMPLETE_CORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ast.h"
#include "config.h"
#include "infer.h"
#include "engine.h"

/*
 * What one document's previous completion chose as extra snippets, so the
 * next one can keep them (the caller's memory, one per document, on the
 * engine thread). Snippets come first in the prompt, so a snippet that comes
 * or goes as the user types invalidates the whole cached prompt after it;
 * they are therefore chosen once per line being typed and kept while the
 * cursor stays on that line (same line start, same prefix start).
 * Zero-initialize; release with complete_memory_finish.
 */
struct complete_memory {
	bool valid;
	size_t line_start;   /* byte offset of the cursor's line when chosen */
	size_t prefix_start; /* where the prefix began then */
	char **texts;        /* the snippets (owned) */
	char **paths;        /* their paths, NULL where none (owned) */
	size_t *lens;
	size_t n;
	/* Where the short context (the prefill budget's) began, kept while
	 * typing moves the cursor on from it, so its cached tokens serve the
	 * next key (0 at first: a candidate like any other, judged by
	 * short_keep_start). Survives the snippets' renewal. */
	size_t short_start;
};

void complete_memory_finish(struct complete_memory *m);

struct complete_options {
	bool ast_slice; /* false: plain line window (slicing as for a language with no grammar) */
	bool validate;  /* false: candidates are shown unchecked (no trim, no scope cut) */
	bool rerank;    /* false: engine order, no merging of near-duplicates */
	bool use_cache; /* the prefix cache (cache.enabled) */
	const char *previous; /* the suggestion on screen (for rerank); may be NULL */
	size_t previous_len;
	atomic_int *cancel; /* set from another thread to stop the job; may be NULL */
	uint64_t seed;      /* sampling seed of candidate 1 (candidate i: seed + i - 1) */
	int32_t n_ctx;      /* the model's trained context (model_info()->n_ctx_train):
	                        the budgets are fitted into it; 0: used as they are */
	struct complete_memory *memory; /* this document's; may be NULL (no stickiness) */
	double deadline_ms; /* engine_request.deadline_ms: answer-by time (engine_now_ms clock); 0: none */
	/* The prefill budget: with a deadline, a prompt whose uncached part
	 * cannot be prefilled in time is answered from a shorter one (the
	 * suffix cut, or the nearest lines; engine_request.fit_deadline). */
	bool fit_deadline;
	/* Always answer from the short context the budget would fall back to
	 * (`infill eval --short-context`: its quality against the full one). */
	bool short_only;
	/* Context from the rest of the project (context/ chose it, in
	 * prompt order), put before the document's own snippets in what
	 * context.extraTokens leaves them; each under its path. Borrowed for
	 * the call. None: the prompt is the one without a project. */
	const struct engine_snippet *project;
	size_t n_project;
	/* Other files' text whose lines continue the cursor's line, scored as
	 * candidates beside the document's own (completion.fromDocument);
	 * borrowed, may be NULL. */
	const char *project_lines;
	size_t project_lines_len;
	/* The repository's name and the current file's path in it, for the
	 * families with a repository format (engine_request.repo_name, .path);
	 * used only when project chunks are given. Borrowed; may be NULL. */
	const char *repo_name, *path;
	/* Prefill the prompt into the prefix cache and stop (background work):
	 * no candidates; out->prefilled_tokens says what was computed. */
	bool prefill_only;
	/* Another generator in the engine's place (the remote backend,
	 * remote_bridge.c): called on the run's thread with the request that
	 * complete_run built (borrowed for the call), it fills *res as
	 * engine_run would (candidates, then the given texts scored) and
	 * returns 0, ENGINE_ECANCELED or a negative code with *err set. NULL:
	 * engine_run on the engine passed to complete_run. */
	int (*generate)(void *ud, const struct engine_request *rq, struct engine_result *res,
	                struct infill_error *err);
	void *generate_ud;
	/* Where to keep the candidates the deadline paused (the engine's own
	 * runs only, not generate): *live receives a new struct complete_live
	 * (complete_live_free) or NULL when none was paused. May be NULL. */
	struct complete_live **live;
};

/* Everything on: what the server does. */
struct complete_options complete_options_default(void);

/* One shown candidate: replace text[start, end) with text. */
struct complete_item {
	char *text; /* owned by the result, NUL-terminated */
	size_t len;
	size_t start,
	        end;  /* start == cursor; end > cursor when it re-types the line's closing text */
	double score; /* higher is better; items are sorted by it */
	double mean_logprob; /* per generated token, natural log */
	double prior;        /* added by rerank: a text found elsewhere in the document */
	enum ast_verdict verdict;
	enum engine_stop stop;
	int32_t index; /* engine candidate index (0: greedy) */
};

struct complete_result {
	struct complete_item *items; /* owned; count entries, best first */
	size_t count;
	int32_t n_generated; /* candidates the engine returned: decoded, and document lines scored */
	int32_t rejected;    /* of those, dropped by validation, emptiness or confidence */
	int32_t merged;      /* of those, merged into a near-duplicate by rerank */
	int32_t given_shown;    /* items shown that the engine scored, not decoded: document
	                      * lines and closers (ast_closers_at) */
	int32_t project_given;  /* of the texts scored, lines of other files (opt.project_lines) */
	int32_t project_tokens; /* prompt tokens the project chunks were counted at, of
	                         * those kept (n_project_kept) */
	int32_t n_project_kept;
	int32_t prompt_tokens, cached_tokens, generated_tokens;
	int32_t shifted_tokens;   /* of prompt_tokens, a remembered suffix's moved by RoPE shift */
	int32_t processed_tokens; /* of prompt_tokens, those prefilled or found cached
	                           * before a cancel (engine_result.processed_tokens) */
	int32_t draft_tokens, accepted_draft_tokens;             /* prompt lookup (engine_result) */
	int32_t model_draft_tokens, accepted_model_draft_tokens; /* draft model (engine_result) */
	enum ast_shape_kind shape;
	int32_t max_lines; /* what the shape and completion.multiline allowed */
	double slice_ms, engine_ms, post_ms, total_ms;
	double prefill_ms, decode_ms; /* the engine's own split of engine_ms */
	bool cancelled;
	bool deadline_hit;         /* the deadline stopped candidates: longer ones were to come */
	int32_t prefilled_tokens;  /* prompt tokens actually computed */
	enum engine_budget budget; /* what the prefill budget did */
	bool shortened;            /* answered from the short context (budget SHORT): the full
	                 * one is worth prefilling in the background */
	/* The span of the snapshot the prompt was cut from (the full slice's
	 * prefix start and suffix end): an edit outside it leaves the
	 * candidates' context as it was. */
	size_t context_start, context_end;
};

/* Frees what a result owns; accepts a zeroed or already finished result. */
void complete_result_finish(struct complete_result *r);

/*
 * A run's candidates that the deadline paused (complete_options.live), with
 * what checking them needs: a copy of the snapshot and its tree, the
 * cursor, the stop rules and the scope rule. Engine thread only, like the
 * engine it decodes on; free it before engine_free.
 */
struct complete_live;

/*
 * Decodes cl's candidates on (engine_live_continue) for at most max_steps
 * steps (<= 0: to their end), stopped by cancel (may be NULL) within one
 * step, and fills *out (caller's memory; finish it) with every candidate as
 * it now stands, validated and trimmed as complete_run would, in the
 * engine's order (the greedy one first), with out->generated_tokens the
 * tokens decoded by this call and out->deadline_hit while some still go on.
 * Returns 0, ENGINE_ECANCELED (out filled all the same; cl resumable) or a
 * negative code (cl has then ended).
 */
int complete_live_continue(struct engine *engine, struct complete_live *cl, atomic_int *cancel,
                           int32_t max_steps, struct complete_result *out);
/* Whether every candidate of cl has ended (true for NULL). */
bool complete_live_done(const struct complete_live *cl);
/* Tokens its candidates decoded over their life (engine_live_generated). */
int64_t complete_live_generated(const struct complete_live *cl);
/* Frees cl and what it holds; accepts NULL. */
void complete_live_free(struct complete_live *cl);

/* Without a vocabulary, a token is counted as this many bytes: source code
 * runs 3 to 4 bytes a token in the BPE vocabularies of code models, so 3
 * errs towards a prompt shorter than the budget, never longer. */
#define COMPLETE_BYTES_PER_TOKEN 3

/* Why a run failed: code is what complete_run returned (a negative errno
 * value; ENGINE_ECANCELED when cancelled), message says it for a person. */
/*
 * Runs one completion of text[0..len) at byte offset cursor, for
 * language_id (an LSP languageId; one without a grammar is completed and
 * shown unchecked), with the settings already resolved for that language.
 * engine and tok belong to the calling thread's model (borrowed); engine may
 * be NULL when opt->generate is set, and tok NULL when no vocabulary is
 * known (the remote backend without remote.tokenizer): token budgets are
 * then counted as COMPLETE_BYTES_PER_TOKEN bytes a token. Fills *out
 * (caller's memory; release with complete_result_finish whatever the
 * return). Returns 0, ENGINE_ECANCELED when opt->cancel was set (out->count
 * is 0), -EINVAL (cursor past len), -ENOMEM, or the engine's negative code;
 * *err (caller's memory, may be NULL) is zeroed, then filled on any non-zero
 * return.
 */
int complete_run(struct engine *engine, const struct tokenizer *tok, const char *language_id,
                 const char *text, size_t len, size_t cursor, const struct settings *st,
                 const struct complete_options *opt, struct complete_result *out,
                 struct infill_error *err);

/*
 * Scales the prefix, suffix and extra token budgets of *st down together
 * (keeping their proportions) so that they, the completion
 * (completion.maxTokens) and the template's few tokens fit n_ctx; in a
 * context too small for that the completion gets half of it. Budgets that
 * fit, or n_ctx <= 0, are left alone. A prompt past the trained context
 * makes a model produce noise, and the defaults (1024 + 192 + 512) are
 * larger than small models' contexts.
 */
void complete_fit_context(struct settings *st, int32_t n_ctx);

/*
 * Lines a candidate may have for this shape and settings:
 * completion.multiline never -> 1, always -> completion.maxLines, auto ->
 * completion.maxLines for a BLOCK shape and 1 otherwise; REST_OF_LINE is 1
 * whatever the setting (the line's own text follows the completion).
 */
int32_t complete_max_lines(enum ast_shape_kind shape, const struct settings *st);

/* The bytes of cand[0, keep) to show: without its trailing blank lines
 * when the rest of the cursor's line in text[0, len) is blank (a server's
 * or a model's final "\n" there would only add an empty line). */
size_t complete_trim_trailing_lines(const char *text, size_t len, size_t cursor, const char *cand,
                                    size_t keep);

/*
 * The bytes of a candidate that the shape allows, where max_lines is 1:
 * up to its first newline (a CR before it dropped), so that nothing shown
 * on one line carries a line break, not even after leading blank lines
 * (which the engine's line count skips). Other limits: len (the engine
 * cut at max_lines). complete_run applies it to every candidate before
 * validation.
 */
size_t complete_shape_bind(const char *text, size_t len, int32_t max_lines);

/*
 * Whether a candidate is a runaway loop: one line, stopped by maxTokens while
 * repeating itself (`_type_type_type`, `int *w, int *w, int *w,`): its tail is
 * one period of 1..16 bytes over at least 16 bytes and four periods. A small
 * model's confident loop, never code: validation drops it rather than cut it,
 * since any cut of it is a made-up identifier.
 */
bool complete_is_runaway(const char *text, size_t len, enum engine_stop stop);

/*
 * The end of the span a candidate inserted at cursor replaces: cursor, or
 * the end of the cursor's line (trailing blanks aside) when the candidate is
 * one line that ends with exactly the rest of that line (`print(|)` and
 * `x)`: the candidate re-types the `)`, so it replaces it).
 */
size_t complete_replace_end(const char *text, size_t len, size_t cursor, const char *cand,
                            size_t cand_len);

/* ---- the model (model_open.c) ---- */

/*
 * Where the embedded model lives when the `model` setting is unset: the
 * first existing of <dir of the binary>/models/infill-default.gguf,
 * <dir of the binary>/../share/infill/infill-default.gguf and
 * <source root>/models/infill-default.gguf. Returns a new string (caller
 * frees), the last candidate path when none exists (so the error names it),
 * or NULL on out of memory.
 */
char *complete_default_model_path(void);

/*
 * The settings that open a model (backend, threads, cache.memoryMB,
 * cache.kvType) and set up its engine (cache.reuseShiftedSuffix), copied
 * out of struct settings: a plain value that the loop thread hands to the
 * engine thread, and compares with the last one to tell a reload.
 */
struct complete_model_spec {
	enum config_backend backend;
	int threads; /* <= 0: one per physical core */
	int cache_memory_mb;
	enum config_kv_type kv_type;
	bool reuse_shifted_suffix; /* engine only: changed without a reload */
	/* completion.draftModel; "": none; one that fills the array was cut
	 * (no path is that long: refused) */
	char draft_model[4096];
};

struct complete_model_spec complete_model_spec_from(const struct settings *st);

/* What the engine is given (engine_configure takes it too). */
struct engine_params complete_engine_params(const struct complete_model_spec *spec);

/*
 * Opens the model at path (borrowed) as spec says, and an engine on it: the
 * one way the server's engine thread, `infill complete` and `infill eval`
 * load a model, so they honour the same settings. progress (may be NULL) is
 * called with progress_user on this thread during the load (as
 * model_params.progress). Returns 0 with *model and *engine new (release
 * with engine_free, then model_free), or a negative errno with both NULL
 * and *err (may be NULL) saying "cannot load the model PATH: why".
 * With spec->draft_model, the draft model is loaded and attached too; one
 * that cannot be (missing, another vocabulary) leaves the engine without a
 * draft, and a success then leaves *err's message saying why (code 0).
 * So does a cache.kvType q8_0 the model cannot take (its head size): the
 * model is loaded with an f16 cache.
 */
int complete_model_open(const char *path, const struct complete_model_spec *spec,
                        void (*progress)(void *user, float fraction), void *progress_user,
                        struct model **model, struct engine **engine, struct infill_error *err);

/*
 * The draft model spec->draft_model names (a path, or a catalog name: its
 * download), loaded with a KV pool a quarter of the model's. It needs no
 * engine, so a thread of its own may load it while the engine answers (a
 * large draft takes a second). Returns the model (the caller owns it), or
 * NULL with *warn's message saying why (code 0; "" when none is set).
 */
struct model *complete_draft_load(const struct complete_model_spec *spec,
                                  struct infill_error *warn);
/*
 * dm (complete_draft_load's; NULL for none) made e's draft in place of the
 * one it had, and owned by e; one e refuses (another vocabulary, not
 * smaller) is freed, leaving e without a draft, and why is added to *warn.
 * Call only while no engine_live of e exists.
 */
void complete_draft_give(struct engine *e, const struct complete_model_spec *spec, struct model *dm,
                         struct infill_error *warn);
/* The file a completion.draftModel value names: a path ("~/" expanded), or
 * a catalog name's download, there yet or not. New string, or NULL for a
 * name that is neither (or out of memory). Its owner watches it: a draft
 * that could not be used is tried again when this file changes. */
char *complete_draft_where(const char *name);

#endif
