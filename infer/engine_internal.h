/*
 * engine_internal.h - private to infer/: the parts engine.c puts together
 * (FIM prompt builder, prefix cache, stop rules), and the engine's state
 * with the helpers engine.c shares with engine_given.c and engine_budget.c.
 * Same thread rules as engine.h: a pcache and an engine belong to the
 * engine thread.
 */
#ifndef INFILL_INFER_ENGINE_INTERNAL_H
#define INFILL_INFER_ENGINE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine.h"

/* ---- fwdcost.c: a forward's cost by its rows ---- */

/* Forwards of up to this many rows are learned by their count; larger ones
 * go by the chunk rate. */
#define FWD_SMALL_MAX 15

/* Forwards of 1..FWD_EACH_MAX rows each have their own average (a decode
 * step with its drafts: the weights' streaming, not the rows, sets most of
 * its time); larger small ones share one per row. */
#define FWD_EACH_MAX 8

struct fwd_cost {
	double ms[FWD_EACH_MAX + 1]; /* moving averages: ms for 1..8 rows, ms per row for
	                              * 9..15; 0: none */
};

/* A forward of n rows took ms (larger ones are ignored). */
void fwd_cost_note(struct fwd_cost *c, int32_t n, double ms);
/* Its estimate for n rows. A count of 1..8 not seen yet lies on the line
 * between the nearest counts seen below and above it (one_ms for 1 row,
 * ms_per_row past the last seen); larger ones are one row's time plus
 * ms_per_row (the chunk rate) per further row. */
double fwd_cost_ms(const struct fwd_cost *c, int32_t n, double one_ms, double ms_per_row);
/* The next forward's time, n rows, after one of last_n rows took last_ms:
 * that time (it knows the load and the context's length) scaled by the
 * learned costs of the two row counts (a step that checks drafts, or one
 * after a candidate stopped, is wider or narrower). */
double fwd_cost_next(const struct fwd_cost *c, double last_ms, int32_t last_n, int32_t n,
                     double one_ms, double ms_per_row);
/* The most rows, up to cap, whose forward fits in left ms (0 when none). */
int32_t fwd_cost_fit(const struct fwd_cost *c, double left, int32_t cap, double one_ms,
                     double ms_per_row);

/* ---- lookup.c: prompt lookup's drafts ---- */

/* The longest run of last tokens looked up (then shorter ones). */
#define LOOKUP_NGRAM 3

/*
 * Drafted tokens checked and kept (fading counts), by the match's length and
 * by whether the candidate's previous drafted token was right: code either
 * repeats for a stretch or not at all, so a hit is the best sign of the next.
 */
struct lookup_stats {
	double kept[2][LOOKUP_NGRAM + 1], tried[2][LOOKUP_NGRAM + 1];
};

/*
 * Drafts what follows the candidate's context (prompt[0..L) then
 * gen[0..n_gen)) by looking its last LOOKUP_NGRAM tokens up in it, then
 * fewer down to one: the latest earlier occurrence wins (code repeats what
 * it wrote last), and the tokens that followed it there are the draft.
 * Writes at most kmax tokens to out, the match's length to *ngram, and
 * returns how many (0: no match). A linear scan: a few thousand
 * comparisons a step, nothing next to a forward pass.
 */
int32_t lookup_draft_find(const int32_t *prompt, int32_t L, const int32_t *gen, int32_t n_gen,
                          int32_t kmax, int32_t *out, int32_t *ngram);
/*
 * A draft of a match of length ngram, made after a hit (after_hit) or not:
 * of its drafted tokens, the first kept were right and the next was wrong
 * (kept < drafted) . A draft that was not checked counts too, as one token:
 * whether the token chosen next was its first, which costs nothing to learn.
 */
void lookup_note(struct lookup_stats *st, int32_t ngram, bool after_hit, int32_t drafted,
                 int32_t kept);
/* The chance that a drafted token of such a match is kept. */
double lookup_p(const struct lookup_stats *st, int32_t ngram, bool after_hit);
/*
 * How many of m drafted tokens (each kept with chance p, up to the first
 * miss) a step should check: the k that gives the most tokens per ms, where
 * the step without them has `rows` rows expected to give `tokens` tokens
 * and cost[r] is a forward of r rows (for r <= rows + m). 0: none.
 */
int32_t lookup_choose(double p, int32_t m, double tokens, int32_t rows, const double *cost);

/*
 * One candidate's back-off: after a checked draft whose first token was
 * wrong the candidate checks none in its next 1, then 2, 4 ..
 * LOOKUP_BACKOFF_MAX steps that find one; a first token right (checked, or
 * found and not checked: the text repeats again) opens it at once. Drafts are still found and learned from
 * while it waits. This bounds what a source whose drafts are never kept can
 * cost whatever the estimates say (a zero-initialized gate is open).
 */
struct lookup_gate {
	int32_t wait, backoff; /* steps left closed; the next closing's length */
};
/* Whether the candidate may check drafts this step (called once a step). */
bool lookup_gate_open(struct lookup_gate *g);
/* A found draft's outcome: checked or not, and whether its first token was
 * the one chosen. */
void lookup_gate_note(struct lookup_gate *g, bool checked, bool first_kept);

/* ---- draft.c: a draft model's drafts ---- */

struct draft;

/* A draft model for target (dm borrowed, outlives the result), or NULL with
 * *err saying why the pair is refused (vocabularies, FIM template differ)
 * or -ENOMEM. */
struct draft *draft_new(struct model *target, struct model *dm, struct infill_error *err);
void draft_free(struct draft *d); /* accepts NULL; every sequence of it freed first */
/* d frees its model (after its cache) in draft_free. */
void draft_own(struct draft *d);
/* The draft's model (borrowed). */
const struct model *draft_model(const struct draft *d);
/* Empties the draft model's prefix cache. */
void draft_cache_clear(struct draft *d);

/* The draft model's KV of tok[0..n) in a new sequence *out (its prefix
 * cache first, then prefilled; what was computed enters the cache), room
 * made for n_seqs candidates of max_tokens. With ms_left >= 0 (the time
 * before the job's deadline), -EAGAIN where the prefill left, at the rate
 * learned (before one is: the target's target_ms_per_token times the
 * pair's weight bytes), would take more than its share of it: the job
 * decodes without the draft. With part, what fits in the share is then
 * computed and cached (with use_cache): a live candidate's next slice goes
 * on from it. Without, nothing is: before a job's first answer a part
 * would only make that answer later, and the live candidate or a
 * background prefill computes it after. Returns the tokens computed, or a
 * negative code (then no sequence). */
int draft_prefill(struct draft *d, const int32_t *tok, int32_t n, int32_t n_seqs,
                  int32_t max_tokens, bool use_cache, double ms_left, bool part,
                  double target_ms_per_token, bool (*stop)(void *), void *stop_ud,
                  struct kv_seq **out, struct infill_error *err);

/* One candidate's part of a step's drafting. */
struct draft_job {
	struct kv_seq *seq; /* the draft model's sequence of the candidate (borrowed) */
	const int32_t *prompt, *gen, *ahead; /* its context: prompt[0..L), the chosen */
	int32_t L, n_gen, n_ahead;           /* gen[0..n_gen), lookup drafts ahead[..n_ahead) */
	int32_t k;                           /* tokens to draft after them, at most */
	struct sampler *smp;                 /* NULL: greedy drafts; else drawn from q */
	double reach;                        /* the chance the lookup drafts all hold */
	int32_t *out;                        /* [k] the drafts */
	float *q;                            /* [k][n_vocab] their laws (smp only) */
	uint8_t *conf;                       /* [k] out: greedy drafts' confidence class */
	int32_t got;                         /* out: drafts made, <= k */
};
/* Drafts up to each job's k tokens: up to k forwards of the draft model, all
 * jobs in each. A greedy job stops where the next draft would not pay: its
 * chance to be kept (learned by the draft's confidence in it, times the
 * chance that the drafts before it hold) against a row of the target's
 * step and, to draft one more, a forward of the draft (draft_choose's
 * costs). 0 or a negative code. */
int draft_run(struct draft *d, struct draft_job *jobs, int n, struct infill_error *err);

/* What a step's choice of draft length weighs. */
struct draft_plan {
	int n;                               /* candidates that may draft */
	int32_t room[ENGINE_MAX_CANDIDATES]; /* the most each may draft */
	double reach[ENGINE_MAX_CANDIDATES]; /* the chance its lookup drafts all hold */
	int32_t budget;                      /* rows the step has left */
	int32_t rows;                        /* rows it has already */
	double tokens;                       /* tokens it is expected to give */
	const double *cost;                  /* [8 + 1] target forward ms by rows */
	double ms_per_row;                   /* the prefill rate */
};
/* How many tokens each candidate drafts this step, at most (0: none;
 * draft_run stops greedy ones sooner where the next draft would not pay). */
int32_t draft_choose(struct draft *d, const struct draft_plan *pl);
/* Of the model drafts of one candidate, tried were checked and kept held;
 * conf: their confidence classes (draft_job.conf), NULL for sampled ones. */
void draft_note(struct draft *d, const uint8_t *conf, int32_t tried, int32_t kept);
/* The learned chance that a drafted token is kept. */
double draft_alpha(const struct draft *d);
/* Rows' q laws by target row [n_vocab]; scratch p (returned) and residual. */
float *draft_q(struct draft *d, int32_t row);
float *draft_scratch(struct draft *d, float **residual);

/* ---- fim.c: prompt tokens ---- */

/*
 * A prompt laid out for the cache: [BOS] [extra] [prefix start] prefix
 * [suffix marker] suffix [middle marker] (PSM templates), with the segments
 * encoded separately so the prefix's tokens do not change when text is
 * typed at its end (only its last token or two do).
 */
struct fim_prompt {
	int32_t *tok; /* n ids, owned */
	int32_t n;
	int32_t tail_start; /* index where the part after the prefix starts (the suffix
			     * marker); n when unknown (custom suffix-first templates) */
	char heal[64];      /* bytes of the prefix's last token, backed up over */
	size_t heal_len;
	int32_t prefix_tokens, suffix_tokens, extra_tokens; /* used, after budgets */
	int32_t suffix_at;                                  /* index of the suffix's first token */
};

/* The prefix's front is cut in steps of this many tokens (fim.c): a budget
 * of b keeps between b - FIM_FRONT_STEP + 1 and b of a longer prefix. */
#define FIM_FRONT_STEP 32

/* Builds req's prompt for tokenizer t. 0 or a negative code with *err. */
int fim_prompt_build(const struct tokenizer *t, const struct engine_request *req,
                     struct fim_prompt *out, struct infill_error *err);
void fim_prompt_finish(struct fim_prompt *p); /* accepts a zeroed prompt */
/* Tokens of text that continues a prompt's prefix (the healed bytes, then a
 * given candidate), encoded as the prefix's own segments are: for
 * SentencePiece without a dummy space. Writes at most cap ids; returns the
 * token count (more than cap: out holds the first cap) or a negative code. */
int fim_encode_continuation(const struct tokenizer *t, const char *text, size_t len, int32_t *out,
                            size_t cap);

/* ---- pcache.c: the prefix cache ---- */

struct pcache;

/* New empty cache over pool (borrowed); at most max_pages pages held. */
struct pcache *pcache_new(struct kv_pool *pool, int32_t max_pages);
void pcache_free(struct pcache *c); /* releases every page; accepts NULL */
void pcache_clear(struct pcache *c);
void pcache_set_max_pages(struct pcache *c, int32_t max_pages);

/*
 * Longest cached prefix of tok[0..n): appends its pages to seq (which must
 * be empty) and returns the matched length (0..n). The last page may be
 * partly used; the sequence copies it before writing into it.
 */
int32_t pcache_match(struct pcache *c, const int32_t *tok, int32_t n, struct kv_seq *seq);

/* How many of tok[0..n) pcache_match would re-use, without taking pages or
 * touching the recency of any node (the prefill budget's estimate). */
int32_t pcache_peek(const struct pcache *c, const int32_t *tok, int32_t n);

/* Records tok[0..n), whose KV is in seq's slots 0..n (exact values), taking
 * references on seq's pages. 0 or -ENOMEM (the cache is then unchanged or
 * holds a shorter prefix). Evicts down to the page budget after. */
int pcache_insert(struct pcache *c, const int32_t *tok, int32_t n, const struct kv_seq *seq);

/* Evicts least recently used leaves until the pool has at least want_free
 * free pages or no leaf is left. Leaves whose pages are all held only by
 * the cache go first. Returns the nodes evicted. */
int32_t pcache_evict(struct pcache *c, int32_t want_free);

struct pcache_stats {
	int32_t nodes, pages;
	uint64_t evictions;
};
void pcache_get_stats(const struct pcache *c, struct pcache_stats *out);

/* ---- stop.c: stop rules over a candidate's text ---- */

/* Where the earliest stop string occurrence that ends after byte `from`
 * starts in text[0..len), or -1. */
ssize_t stop_find_string(const char *text, size_t len, size_t from, const char *const *stop,
                         size_t n_stop);

/* Where to cut text[0..len) so it has at most max_lines lines: the offset of
 * the newline that would start line max_lines + 1, or -1. Leading
 * whitespace (newlines included) is not counted as a line, so a candidate
 * starting with "\n" at the end of a line still gets max_lines lines. */
ssize_t stop_find_max_lines(const char *text, size_t len, int32_t max_lines);

/* Start of the last line of text[0..len) (just after its previous '\n', 0 if none),
 * ignoring a final '\n'. */
size_t stop_last_line_start(const char *text, size_t len);

/* ---- engine.c: the engine's state, shared with engine_given.c and engine_budget.c ---- */

/* Prompts remembered with their sequences for shifted suffix reuse. */
#define N_RECENT  4
/* Rows of e->logits: a decode step's (every candidate plus the drafts),
 * then the prompt's last row. */
#define STEP_ROWS (ENGINE_MAX_CANDIDATES + ENGINE_DRAFT_MAX)

struct recent {
	int32_t *tok; /* the prompt */
	int32_t n, tail_start;
	struct kv_seq *seq; /* its KV, slots 0..n */
	uint64_t tick;
	int age; /* shifts since its tail was computed exactly */
};

/* Defined here, not in engine.c, because engine_given.c and engine_budget.c
 * read its rates, vocabulary and cache: one engine thread owns it. */
struct engine {
	struct model *m;
	const struct tokenizer *tk;
	struct kv_pool *pool;
	struct engine_params p;
	struct pcache *cache;
	int32_t n_vocab, ps;
	/* Every token's bytes (for token healing), built once: piece i is
	 * pieces[off[i] .. off[i+1]). */
	char *pieces;
	uint32_t *off;
	/* [n_vocab]: tokens that end a candidate: end-of-generation, FIM markers,
	 * control tokens, and user-defined markup tokens (<|User|>, [PAD123])
	 * that a model should never write into code. */
	bool *ends;
	float *logits;  /* [STEP_ROWS + 1][n_vocab]: a step's rows, then the prompt's */
	float *scratch; /* [n_vocab]: masked copy for healing */
	struct recent recent[N_RECENT];
	uint64_t tick;
	struct engine_stats st;
	double prefill_ms_per_tok;  /* moving average over chunks of >= RATE_MIN_CHUNK
	                             * (engine.c); 0: none */
	double step_ms;             /* moving average of decode steps; 0: none */
	struct fwd_cost fwd;        /* small forwards' costs by their rows (fwdcost.c) */
	struct lookup_stats lookup; /* drafts kept by match length (lookup.c) */
	uint64_t computed;          /* prompt tokens prefilled, ever (for per-job differences) */
	struct draft *draft;        /* the draft model's state (draft.c); NULL: none */
};

/* The prefill rate the budgets use in ms per token: the setting, else the
 * measured one (0: neither yet). */
double engine_ms_per_token(const struct engine *e);
/* A forward of n rows' estimated ms (fwdcost.c); a rate given in the
 * parameters (prefill_tokens_per_s) is taken as stated. */
double engine_fwd_cost(const struct engine *e, int32_t n);
/* The most rows, up to cap, whose forward fits in left ms, by the same
 * costs as engine_fwd_cost. */
int32_t engine_fwd_fit(const struct engine *e, double left, int32_t cap);
/* A remembered prompt whose tail (from its suffix marker on) equals fp's,
 * or NULL: the budget counts its tail as not to be computed. Borrowed. */
struct recent *engine_recent_find(struct engine *e, const struct fim_prompt *fp);
/* logits masked to the tokens that continue spelling heal[0..hl): decoded
 * and given candidates spell the healed bytes alike. Returns e->scratch
 * ([n_vocab], valid until the next call). */
const float *engine_heal_mask(struct engine *e, const float *logits, const char *heal, size_t hl);

/* ---- engine_given.c: scoring the candidates the pipeline hands in ---- */

/*
 * Scores req->given after the prompt fp in seq (whose last logits are in
 * e->logits' prompt row): fills out[0..*n_out) with a candidate per text
 * that fits max_tokens and the deadline (texts new, owned by the caller),
 * counting those the deadline dropped in res->given_dropped. 0 or a
 * negative code with *err.
 */
int engine_given_score(struct engine *e, const struct engine_request *req,
                       const struct fim_prompt *fp, struct kv_seq *seq,
                       struct engine_candidate *out, int *n_out, struct engine_result *res,
                       struct infill_error *err);
/* Moves the n scored given candidates to the end of res (their texts taken).
 * 0 or -ENOMEM (given then still owns them). */
int engine_given_append(struct engine_result *res, struct engine_candidate *given, int n);

/* ---- engine_budget.c: the prefill budget ---- */

/* Replaces *fp by a shorter prompt when its uncached part would not be
 * prefilled before req's deadline (engine_request.fit_deadline), and says
 * which in res->budget. 0 or a negative code with *err. */
int engine_budget_fit(struct engine *e, const struct engine_request *req, struct fim_prompt *fp,
                      struct engine_result *res, struct infill_error *err);

#endif
