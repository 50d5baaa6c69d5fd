/*
 * engine.c - one completion job on the engine thread: FIM prompt, prefix
 * cache lookup, chunked prefill of the rest, N candidates forked off the
 * prompt's pages (copy-on-write) and decoded as one batch per step, stop
 * rules, and the cache updated with the prompt.
 *
 * Cancellation is a flag the loop thread sets; it is read between prefill
 * chunks and between decode steps, so a stale job stops within one forward
 * pass and gives all its sequences' pages back (what it had prefilled
 * exactly stays in the cache for the next keystroke).
 *
 * Shifted suffix reuse (params.reuse_shifted_suffix; the server turns it
 * on by default): the engine remembers its last few prompts with their
 * sequences; when a new prompt ends with the same [hole] suffix [end] tokens
 * as one of them, those tokens' KV is moved from the old sequence with
 * model_kv_shift (keys re-rotated to their new positions) instead of being
 * prefilled. The values are approximate (they attended to the old prefix),
 * so they never enter the exact prefix cache.
 *
 * The prefill budget (engine_request.fit_deadline): prefill and decode
 * rates are measured here as jobs run (moving averages), and a prompt whose
 * uncached part would not be prefilled before the deadline is answered from
 * a shorter one (fit_budget). engine_prefill is the background half: it
 * fills the cache with a prompt and decodes nothing.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"

#define N_RECENT        4
/* Prompt lookup: drafts fill a decode step up to STEP_CHEAP_ROWS rows, no
 * further: the CPU backend streams each weight row once for up to 8 batch
 * rows (CPU_DEC_MAX, kernels/cpu/cpu.c mm_plan), and the weight types it
 * packs (kernels/cpu/packings.c's `packings` table) give a token the same bits in
 * such a step as alone (other types: up to float rounding); a ninth row
 * makes the step a prompt chunk, computed through the prefill kernels.
 * Within that, lookup.c weighs each draft's chance against the step's cost. */
#define STEP_CHEAP_ROWS 8
/* Rows of e->logits: a decode step's (every candidate plus the drafts),
 * then the prompt's last row. */
#define STEP_ROWS       (ENGINE_MAX_CANDIDATES + ENGINE_DRAFT_MAX)
/* A shifted tail is re-used at most this many keystrokes in a row before it
 * is computed exactly again, so its staleness (it attended to an older
 * prefix) stays bounded. */
#define SHIFT_MAX_AGE   8

struct recent {
	int32_t *tok; /* the prompt */
	int32_t n, tail_start;
	struct kv_seq *seq; /* its KV, slots 0..n */
	uint64_t tick;
	int age; /* shifts since its tail was computed exactly */
};

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
	double prefill_ms_per_tok;  /* moving average over chunks of >= RATE_MIN_CHUNK; 0: none */
	double step_ms;             /* moving average of decode steps; 0: none */
	struct fwd_cost fwd;        /* small forwards' costs by their rows (fwdcost.c) */
	struct lookup_stats lookup; /* drafts kept by match length (lookup.c) */
	uint64_t computed;          /* prompt tokens prefilled, ever (for per-job differences) */
};

/* Chunks shorter than this say more about a forward's fixed cost than about
 * the rate, so they are left out of the average. */
#define RATE_MIN_CHUNK 16
/* Weight of the newest sample in the moving averages: the rate follows the
 * machine's load within a few chunks. */
#define RATE_ALPHA     0.3

static void average(double *avg, double sample)
{
	*avg = *avg > 0 ? (1 - RATE_ALPHA) * *avg + RATE_ALPHA * sample : sample;
}

/* The prefill rate the budgets use: the setting, else the measured one. */
static double ms_per_token(const struct engine *e)
{
	return e->p.prefill_tokens_per_s > 0 ? 1000.0 / e->p.prefill_tokens_per_s
	                                     : e->prefill_ms_per_tok;
}

/* A forward's estimated cost (fwdcost.c); a rate given in the parameters
 * (prefill_tokens_per_s) is taken as stated. */
static double fwd_cost(const struct engine *e, int32_t n)
{
	if (e->p.prefill_tokens_per_s > 0) return n > 0 ? n * ms_per_token(e) : 0;
	return fwd_cost_ms(&e->fwd, n, e->step_ms, ms_per_token(e));
}

static int32_t fwd_fit(const struct engine *e, double left, int32_t cap)
{
	if (e->p.prefill_tokens_per_s > 0) {
		int32_t n = left > 0 ? (int32_t)(left / ms_per_token(e)) : 0;
		return n < cap ? n : cap;
	}
	return fwd_cost_fit(&e->fwd, left, cap, e->step_ms, ms_per_token(e));
}

const char *engine_budget_name(enum engine_budget b)
{
	static const char *const names[] = { "off", "fits", "suffix", "short", "late" };
	return (unsigned)b < sizeof names / sizeof names[0] ? names[b] : "?";
}

double engine_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *engine_stop_name(enum engine_stop s)
{
	static const char *const names[] = { "none",       "eog",       "string",
		                             "max_tokens", "max_lines", "scope",
		                             "cancelled",  "deadline",  "given" };
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

struct engine_request engine_request_default(void)
{
	return (struct engine_request){
		.prefix = "",
		.suffix = "",
		.prefix_tokens = 1024,
		.suffix_tokens = 192,
		.extra_tokens = 512,
		.token_healing = true,
		.n_candidates = 3,
		.max_tokens = 64,
		.max_lines = 12,
		.temperature = 0.2f,
		.top_p = 0.95f,
		.seed = 1,
		.use_cache = true,
	};
}

struct engine_params engine_params_default(void)
{
	return (struct engine_params){ .cache_max_pages = 0,
		                       .reuse_shifted_suffix = false,
		                       .prefill_chunk = 64,
		                       .background_chunk = 16,
		                       .decode_reserve_steps = 1 };
}

void engine_result_finish(struct engine_result *r)
{
	if (!r) return;
	for (int32_t i = 0; i < r->n_candidates && r->candidates; i++) free(r->candidates[i].text);
	free(r->candidates);
	memset(r, 0, sizeof *r);
}

static int32_t cache_pages_for(const struct engine *e, const struct engine_params *p)
{
	if (p->cache_max_pages > 0) return p->cache_max_pages;
	/* Leave room for one job's candidates (its prompt's pages are the
	 * cache's own, shared): 16 candidates of 128 tokens, at most a quarter
	 * of the pool. */
	int32_t n = kv_pool_n_pages(e->pool);
	int32_t job = 16 * (128 / e->ps + 1);
	if (job > n / 4) job = n / 4;
	return n - job;
}

static int build_pieces(struct engine *e)
{
	size_t total = 0, cap = (size_t)e->n_vocab * 8;
	e->off = malloc(((size_t)e->n_vocab + 1) * sizeof *e->off);
	e->pieces = malloc(cap);
	if (!e->off || !e->pieces) return -ENOMEM;
	for (int32_t i = 0; i < e->n_vocab; i++) {
		e->off[i] = (uint32_t)total;
		char buf[256];
		size_t l = tokenizer_decode_token(e->tk, i, false, buf, sizeof buf);
		if (l > sizeof buf || tokenizer_token_type(e->tk, i) == TOKENIZER_TOKEN_CONTROL)
			l = 0; /* never a healing candidate */
		if (total + l > cap) {
			cap = cap * 2 + l;
			char *p = realloc(e->pieces, cap);
			if (!p) return -ENOMEM;
			e->pieces = p;
		}
		memcpy(e->pieces + total, buf, l);
		total += l;
	}
	e->off[e->n_vocab] = (uint32_t)total;
	e->ends = calloc((size_t)e->n_vocab, sizeof *e->ends);
	if (!e->ends) return -ENOMEM;
	const struct tokenizer_special *sp = tokenizer_special(e->tk);
	for (int32_t i = 0; i < e->n_vocab; i++) {
		enum tokenizer_token_type ty = tokenizer_token_type(e->tk, i);
		size_t l = 0;
		const char *s = tokenizer_token_text(e->tk, i, &l);
		bool markup = ty == TOKENIZER_TOKEN_USER_DEFINED && s && l >= 4 &&
		              ((s[0] == '<' && s[l - 1] == '>') || !strncmp(s, "[PAD", 4));
		e->ends[i] = tokenizer_is_eog(e->tk, i) || ty == TOKENIZER_TOKEN_CONTROL ||
		             markup || i == sp->fim_prefix || i == sp->fim_suffix ||
		             i == sp->fim_middle;
	}
	return 0;
}

static void params_fix(struct engine_params *p)
{
	if (p->prefill_chunk <= 0) p->prefill_chunk = 64;
	if (p->background_chunk <= 0) p->background_chunk = 16;
	if (p->decode_reserve_steps < 0) p->decode_reserve_steps = 1;
}

struct engine *engine_new(struct model *m, const struct engine_params *p, struct infill_error *err)
{
	struct engine *e = calloc(1, sizeof *e);
	if (!e) goto oom;
	e->m = m;
	e->tk = model_tokenizer(m);
	e->pool = model_kv_pool(m);
	e->p = p ? *p : engine_params_default();
	params_fix(&e->p);
	e->n_vocab = model_info(m)->n_vocab;
	e->ps = kv_pool_page_size(e->pool);
	e->cache = pcache_new(e->pool, cache_pages_for(e, &e->p));
	e->logits = malloc((size_t)(STEP_ROWS + 1) * (size_t)e->n_vocab * sizeof(float));
	e->scratch = malloc((size_t)e->n_vocab * sizeof(float));
	if (!e->cache || !e->logits || !e->scratch || build_pieces(e)) goto oom;
	return e;
oom:
	engine_free(e);
	error_set(err, -ENOMEM, "engine_new: out of memory");
	return NULL;
}

static void recent_clear(struct engine *e)
{
	for (int i = 0; i < N_RECENT; i++) {
		kv_seq_free(e->recent[i].seq);
		free(e->recent[i].tok);
		memset(&e->recent[i], 0, sizeof e->recent[i]);
	}
}

void engine_free(struct engine *e)
{
	if (!e) return;
	recent_clear(e);
	pcache_free(e->cache);
	free(e->pieces);
	free(e->off);
	free(e->ends);
	free(e->logits);
	free(e->scratch);
	free(e);
}

void engine_configure(struct engine *e, const struct engine_params *p)
{
	e->p = *p;
	params_fix(&e->p);
	if (!e->p.reuse_shifted_suffix) recent_clear(e);
	pcache_set_max_pages(e->cache, cache_pages_for(e, &e->p));
}

struct engine_params engine_get_params(const struct engine *e)
{
	return e->p;
}

void engine_cache_clear(struct engine *e)
{
	recent_clear(e);
	pcache_clear(e->cache);
}

void engine_get_stats(const struct engine *e, struct engine_stats *out)
{
	*out = e->st;
	struct pcache_stats ps;
	pcache_get_stats(e->cache, &ps);
	out->cache_nodes = ps.nodes;
	out->cache_pages = ps.pages;
	out->cache_evictions = ps.evictions;
	out->prefill_tokens_per_s = e->p.prefill_tokens_per_s > 0 ? e->p.prefill_tokens_per_s
	                            : e->prefill_ms_per_tok > 0   ? 1000.0 / e->prefill_ms_per_tok
	                                                          : 0;
	out->decode_step_ms = e->step_ms;
}

int engine_prompt_tokens(struct engine *e, const struct engine_request *req, int32_t *out,
                         size_t cap, int32_t *healed_bytes, struct infill_error *err)
{
	struct fim_prompt fp;
	int rc = fim_prompt_build(e->tk, req, &fp, err);
	if (rc) return rc;
	if (out) memcpy(out, fp.tok, ((size_t)fp.n < cap ? (size_t)fp.n : cap) * sizeof *out);
	if (healed_bytes) *healed_bytes = (int32_t)fp.heal_len;
	rc = fp.n;
	fim_prompt_finish(&fp);
	return rc;
}

static bool cancelled(const struct engine_request *req)
{
	return req->cancel && atomic_load_explicit(req->cancel, memory_order_relaxed);
}

/* model_batch.stop for a request's prefill chunks. */
static bool stop_asked(void *req)
{
	return cancelled(req);
}

/* ---- prefill ---- */

/*
 * Computes tok[from..to) into seq at positions from.. in chunks, checking the
 * cancel flag between chunks, then (last >= to) tok[last] at position last in
 * the final chunk: the shifted-suffix path puts the new prefix tokens and the
 * prompt's last token in one forward, since on the CPU a forward's cost is
 * mostly its weight reads, whatever few rows it carries. The final row's
 * logits go to logits (if not NULL). *done receives the contiguous slots
 * computed from `from` (last + 1 once last is). 0, ENGINE_ECANCELED or a
 * negative code.
 */
static int prefill_chunked(struct engine *e, const struct engine_request *req, struct kv_seq *seq,
                           const int32_t *tok, int32_t from, int32_t to, int32_t last,
                           float *logits, int32_t *done, int32_t chunk, struct infill_error *err)
{
	int32_t *pos = malloc((size_t)chunk * sizeof *pos);
	int32_t *ids = malloc((size_t)chunk * sizeof *ids);
	struct kv_seq **seqs = malloc((size_t)chunk * sizeof *seqs);
	int rc = 0;
	int32_t total = to - from + (last >= to ? 1 : 0);
	*done = from;
	if (!pos || !ids || !seqs) {
		rc = error_set(err, -ENOMEM, "prefill: out of memory");
	}
	for (int32_t k = 0; !rc && k < total; k += chunk) {
		if (cancelled(req)) {
			rc = ENGINE_ECANCELED;
			break;
		}
		int32_t n = total - k < chunk ? total - k : chunk;
		for (int32_t i = 0; i < n; i++) {
			int32_t at = from + k + i < to ? from + k + i : last;
			pos[i] = at, ids[i] = tok[at], seqs[i] = seq;
		}
		int32_t row = n - 1;
		bool final = k + n == total;
		struct model_batch b = {
			.n_tokens = n,
			.tokens = ids,
			.pos = pos,
			.seqs = seqs,
			.n_out = final && logits ? 1 : 0,
			.out_rows = &row,
			.logits = final ? logits : NULL,
			.stop = req->cancel ? stop_asked : NULL,
			.stop_ud = (void *)req,
		};
		double t = engine_now_ms();
		rc = model_forward(e->m, &b, err);
		if (rc == -ECANCELED) break; /* mid-chunk: the chunk is dropped */
		if (!rc && n >= RATE_MIN_CHUNK)
			average(&e->prefill_ms_per_tok, (engine_now_ms() - t) / n);
		if (!rc) fwd_cost_note(&e->fwd, n, engine_now_ms() - t);
		if (!rc) *done = pos[n - 1] + 1, e->computed += (uint64_t)n;
		if (!rc && req->on_progress) req->on_progress(req->progress_ud, *done, -1);
	}
	free(pos);
	free(ids);
	free(seqs);
	return rc;
}

static int prefill(struct engine *e, const struct engine_request *req, struct kv_seq *seq,
                   const int32_t *tok, int32_t from, int32_t to, float *logits, int32_t *done,
                   struct infill_error *err)
{
	return prefill_chunked(e, req, seq, tok, from, to, -1, logits, done, e->p.prefill_chunk,
	                       err);
}

/* ---- shifted suffix reuse ---- */

/* A remembered prompt whose tail (from its suffix marker on) equals fp's. */
static struct recent *recent_find(struct engine *e, const struct fim_prompt *fp)
{
	int32_t tail = fp->n - fp->tail_start;
	if (tail < 2 || fp->tail_start >= fp->n) return NULL;
	for (int i = 0; i < N_RECENT; i++) {
		struct recent *r = &e->recent[i];
		if (r->seq && r->age < SHIFT_MAX_AGE && r->n - r->tail_start == tail &&
		    !memcmp(r->tok + r->tail_start, fp->tok + fp->tail_start,
		            (size_t)tail * sizeof(int32_t)))
			return r;
	}
	return NULL;
}

static void recent_store(struct engine *e, const struct fim_prompt *fp, struct kv_seq *seq, int age)
{
	struct recent *r = NULL;
	int32_t tail = fp->n - fp->tail_start;
	for (int i = 0; i < N_RECENT && !r; i++) /* the same tail: replace it */
		if (e->recent[i].seq && e->recent[i].n - e->recent[i].tail_start == tail &&
		    !memcmp(e->recent[i].tok + e->recent[i].tail_start, fp->tok + fp->tail_start,
		            (size_t)tail * sizeof(int32_t)))
			r = &e->recent[i];
	if (!r) {
		r = &e->recent[0];
		for (int i = 1; i < N_RECENT; i++)
			if (!e->recent[i].seq || e->recent[i].tick < r->tick) r = &e->recent[i];
	}
	struct kv_seq *s = kv_seq_fork(seq);
	int32_t *t = malloc((size_t)fp->n * sizeof *t);
	if (!s || !t) {
		kv_seq_free(s);
		free(t);
		return;
	}
	kv_seq_free(r->seq);
	free(r->tok);
	memcpy(t, fp->tok, (size_t)fp->n * sizeof *t);
	*r = (struct recent){ .tok = t,
		              .n = fp->n,
		              .tail_start = fp->tail_start,
		              .seq = s,
		              .tick = ++e->tick,
		              .age = age };
}

/* ---- decoding ---- */

struct cand {
	struct kv_seq *seq;
	struct sampler *smp;
	struct tokenizer_detok dt;
	char *text; /* everything decoded, healed bytes included */
	size_t len, cap;
	size_t vis;       /* bytes of text that are the healed prefix (hidden) */
	size_t heal_done; /* healed bytes spelled out so far */
	size_t scanned;   /* visible bytes already checked for newlines */
	int32_t n_tok, last;
	double sum_lp;
	enum engine_stop stop;
	int32_t row;   /* logits row in the last forward, -1 when none */
	int32_t *hist; /* [max_tokens]: the tokens chosen, for prompt lookup; owned */
	int32_t draft[ENGINE_DRAFT_MAX]; /* drafted after `last` in the last forward, */
	int32_t n_draft;                 /* at rows row + 1 .. row + n_draft */
	int32_t draft_ngram;             /* the length of the match they came from */
	int32_t n_found;                 /* drafted tokens found (checked or not) */
	bool after_hit; /* the last drafted token compared with a choice was right */
};

static int cand_append(struct cand *c, const char *s, size_t n)
{
	if (c->len + n + 1 > c->cap) {
		size_t cap = (c->len + n + 1) * 2;
		char *t = realloc(c->text, cap);
		if (!t) return -ENOMEM;
		c->text = t, c->cap = cap;
	}
	memcpy(c->text + c->len, s, n);
	c->len += n;
	c->text[c->len] = 0;
	return 0;
}

/* Masks logits to the tokens that continue spelling the healed bytes
 * heal[done..len): a piece that starts with all of them, or is a
 * non-empty prefix of them. */
static const float *heal_mask(struct engine *e, const float *logits, const char *heal, size_t hl)
{
	for (int32_t v = 0; v < e->n_vocab; v++) {
		size_t pl = e->off[v + 1] - e->off[v];
		const char *pc = e->pieces + e->off[v];
		bool ok = pl > 0 && !memcmp(pc, heal, pl < hl ? pl : hl);
		e->scratch[v] = ok ? logits[v] : -INFINITY;
	}
	return e->scratch;
}

/* Cuts the candidate's visible text at byte v (an offset into the visible part). */
static void cand_cut(struct cand *c, size_t v, enum engine_stop why)
{
	c->len = c->vis + v;
	c->text[c->len] = 0;
	c->stop = why;
}

/* Applies stop strings, the line limit and the scope check to newly
 * appended visible text (from byte old_vis_len on). */
static void cand_check(struct cand *c, const struct engine_request *req, size_t old)
{
	const char *v = c->text + c->vis;
	size_t vl = c->len - c->vis;
	ssize_t at = stop_find_string(v, vl, old, req->stop, req->n_stop);
	if (at >= 0) {
		cand_cut(c, (size_t)at, ENGINE_STOP_STRING);
		vl = (size_t)at;
	}
	ssize_t ml = stop_find_max_lines(v, vl, req->max_lines);
	if (ml >= 0) {
		cand_cut(c, (size_t)ml, ENGINE_STOP_MAX_LINES);
		vl = (size_t)ml;
	}
	if (!req->stop_text) return;
	for (size_t i = c->scanned; i < vl; i++) {
		if (v[i] != '\n') continue;
		c->scanned = i + 1;
		if (req->stop_text(req->stop_ud, v, i + 1)) {
			size_t ls = stop_last_line_start(v, i + 1);
			cand_cut(c, ls ? ls - 1 : 0, ENGINE_STOP_SCOPE);
			return;
		}
	}
}

static bool ident_byte(unsigned char b)
{
	return b == '_' || (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z') ||
	       b >= 0x80;
}

/* A candidate stopped by the deadline most likely ends inside a word: the
 * model was about to spell the rest of it. Showing "retu" invites the user
 * to accept half an identifier, so cut back to the end of the last whole
 * word, unless the candidate is nothing but that word (then it continues the
 * word at the cursor and is kept as it is). */
static void cand_trim_word(struct cand *c)
{
	const char *v = c->text ? c->text + c->vis : "";
	size_t vl = c->len > c->vis ? c->len - c->vis : 0;
	size_t i = vl;
	while (i > 0 && ident_byte((unsigned char)v[i - 1])) i--;
	if (i > 0 && i < vl) cand_cut(c, i, ENGINE_STOP_DEADLINE);
}

/* End of a candidate: the held bytes, and the scope check of an unfinished last line. */
static int cand_final(struct cand *c, const struct engine_request *req)
{
	char held[8];
	size_t h = tokenizer_detok_flush(&c->dt, held);
	if (h && c->stop != ENGINE_STOP_STRING && c->stop != ENGINE_STOP_MAX_LINES &&
	    c->stop != ENGINE_STOP_SCOPE && cand_append(c, held, h))
		return -ENOMEM;
	if (c->len < c->vis) { /* never got past the healed bytes */
		c->vis = c->len;
	}
	if (c->stop == ENGINE_STOP_DEADLINE) cand_trim_word(c);
	const char *v = c->text ? c->text + c->vis : "";
	size_t vl = c->len - c->vis;
	if (req->stop_text && c->stop != ENGINE_STOP_SCOPE && vl && v[vl - 1] != '\n' &&
	    req->stop_text(req->stop_ud, v, vl)) {
		size_t ls = stop_last_line_start(v, vl);
		cand_cut(c, ls ? ls - 1 : 0, ENGINE_STOP_SCOPE);
	}
	return 0;
}

/*
 * Picks candidate c's next token from logits, applies it to its text and
 * stop rules. Returns 0 or -ENOMEM.
 */
static int cand_step(struct engine *e, struct cand *c, int idx, const float *logits,
                     const struct fim_prompt *fp, const struct engine_request *req)
{
	const float *lg = logits;
	if (c->heal_done < fp->heal_len)
		lg = heal_mask(e, logits, fp->heal + c->heal_done, fp->heal_len - c->heal_done);
	int32_t tok;
	float lp;
	if (idx == 0 || !c->smp) {
		tok = sample_greedy(lg, e->n_vocab);
		lp = (float)(lg[tok] - sample_logsumexp(lg, e->n_vocab));
	} else {
		tok = sampler_sample(c->smp, lg, NULL, 0, &lp);
	}
	if (c->hist) c->hist[c->n_tok] = tok;
	c->n_tok++;
	c->sum_lp += lp;
	c->last = tok;
	if (e->ends[tok]) {
		c->stop = ENGINE_STOP_EOG;
		return 0;
	}
	if (c->heal_done < fp->heal_len) {
		size_t pl = e->off[tok + 1] - e->off[tok];
		c->heal_done += pl;
		if (c->heal_done > fp->heal_len) c->heal_done = fp->heal_len;
	}
	char buf[512];
	int n = tokenizer_detok_push(e->tk, &c->dt, tok, buf, sizeof buf);
	if (n > 0) {
		size_t old = c->len > c->vis ? c->len - c->vis : 0;
		if (cand_append(c, buf, (size_t)n)) return -ENOMEM;
		if (c->len > c->vis) cand_check(c, req, old);
	}
	if (!c->stop && c->n_tok >= req->max_tokens) c->stop = ENGINE_STOP_MAX_TOKENS;
	return 0;
}

static void cands_free(struct cand *c, int n)
{
	for (int i = 0; i < n; i++) {
		kv_seq_free(c[i].seq);
		sampler_free(c[i].smp);
		free(c[i].text);
		free(c[i].hist);
	}
}

/* Healed indentation (a blank line's, see fim.c) that the candidate then
 * writes out again: models trained on middles that start at the line start
 * spell the indentation themselves after spelling the healed copy of it
 * (every candidate of a blank line in a Python body did, measured). The
 * editor already put that indentation in; showing it twice indents twice. */
static void hide_restated_indent(struct cand *c, const struct fim_prompt *fp)
{
	size_t h = fp->heal_len;
	if (!h || c->len < c->vis + h || memcmp(c->text + c->vis, fp->heal, h)) return;
	for (size_t i = 0; i < h; i++)
		if (fp->heal[i] != ' ' && fp->heal[i] != '\t') return;
	size_t after = c->vis + h;
	if (after < c->len && (c->text[after] == ' ' || c->text[after] == '\t'))
		return; /* deeper than the line: the model means it */
	c->vis = after;
}

/*
 * Takes candidate c's choices from the last forward pass: its own row, then
 * each drafted token's row while the token chosen equals the draft (then the
 * drafted token was the input the next row needed, so that row's logits are
 * exactly those a step of its own would have given). The sequence keeps the
 * KV of the entries whose input was right and drops the rest. Returns 0 or
 * -ENOMEM; *accepted counts the drafts kept.
 */
static int cand_take(struct engine *e, struct cand *c, int idx, const float *first,
                     const struct fim_prompt *fp, const struct engine_request *req,
                     int32_t *accepted)
{
	int32_t pos0 = fp->n + c->n_tok - 1; /* position of the entry at c->row */
	int32_t n_draft = c->n_draft, a = 0;
	c->n_draft = 0;
	int rc = cand_step(e, c, idx, first, fp, req);
	while (!rc && !c->stop && a < n_draft && c->last == c->draft[a]) {
		a++;
		const float *lg = e->logits + (size_t)(c->row + a) * (size_t)e->n_vocab;
		rc = cand_step(e, c, idx, lg, fp, req);
	}
	*accepted = a;
	/* a draft that was found but not checked still says whether its first
	 * token was the one chosen */
	bool hit = n_draft ? a == n_draft : c->n_found && c->last == c->draft[0];
	if (c->n_found)
		lookup_note(&e->lookup, c->draft_ngram, c->after_hit, n_draft ? n_draft : 1,
		            n_draft ? a : hit);
	c->after_hit = hit;
	c->n_found = 0;
	/* Slots pos0 .. pos0 + a hold the KV of right inputs; later drafted
	 * slots are dropped (a later step writes them again). */
	if (n_draft > a) kv_seq_truncate(c->seq, pos0 + a + 1);
	return rc;
}

/*
 * Decodes n candidates from the prompt in seq (length L) whose last logits
 * are in the prompt row of e->logits. Fills res. 0, ENGINE_ECANCELED or < 0.
 *
 * A step is one forward pass over every live candidate's next input token
 * at its position, plus, with prompt lookup, the tokens drafted after it at
 * the following positions of the same sequence (logits for every row).
 */
static int decode(struct engine *e, const struct engine_request *req, const struct fim_prompt *fp,
                  struct kv_seq *seq, struct engine_result *res, struct infill_error *err)
{
	int n = req->n_candidates;
	int32_t L = fp->n;
	struct cand c[ENGINE_MAX_CANDIDATES];
	memset(c, 0, sizeof c);
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		c[i].vis = fp->heal_len;
		tokenizer_detok_init(&c[i].dt, false);
		c[i].seq = kv_seq_fork(seq);
		if (!c[i].seq) rc = -ENOMEM;
		if (req->prompt_lookup && !rc) {
			c[i].hist = malloc((size_t)req->max_tokens * sizeof *c[i].hist);
			if (!c[i].hist) rc = -ENOMEM;
		}
		if (i > 0 && !rc) {
			struct sampler_params sp = { .temperature = req->temperature,
				                     .top_k = req->top_k,
				                     .top_p = req->top_p,
				                     .repeat_penalty = 1.0f,
				                     .seed = req->seed + (uint64_t)i };
			c[i].smp = sampler_new(&sp, e->n_vocab);
			if (!c[i].smp) rc = -ENOMEM;
		}
	}
	float *prompt_logits = e->logits + (size_t)STEP_ROWS * (size_t)e->n_vocab;
	int32_t tokens[STEP_ROWS], pos[STEP_ROWS], rows[STEP_ROWS];
	struct kv_seq *seqs[STEP_ROWS];
	double step_ms = 0;    /* the last decode step's wall time */
	int32_t step_rows = 0; /* and its rows */
	for (int step = 0; !rc; step++) {
		int nb = 0;
		for (int i = 0; i < n && !rc; i++) {
			if (c[i].stop) continue;
			int32_t acc = 0;
			if (step == 0)
				rc = cand_step(e, &c[i], i, prompt_logits, fp, req);
			else
				rc = cand_take(e, &c[i], i,
				               e->logits + (size_t)c[i].row * (size_t)e->n_vocab,
				               fp, req, &acc);
			res->accepted_draft_tokens += acc;
		}
		/* The step's batch: each live candidate's input, then its drafts
		 * while the budget lasts (candidate 0 first: it is shown first). */
		int32_t live = 0;
		for (int i = 0; i < n; i++) live += !c[i].stop;
		int32_t budget = STEP_CHEAP_ROWS - live, budget0 = budget > 0 ? budget : 0;
		double cost[STEP_CHEAP_ROWS + 1] = { 0 }; /* a forward's ms by its rows */
		if (req->prompt_lookup && budget > 0)
			for (int32_t r = 1; r <= STEP_CHEAP_ROWS; r++) cost[r] = fwd_cost(e, r);
		double expect = live; /* tokens the step is expected to give */
		for (int i = 0; i < n && !rc; i++) {
			if (c[i].stop) continue;
			int32_t p = L + c[i].n_tok - 1;
			tokens[nb] = c[i].last;
			pos[nb] = p;
			seqs[nb] = c[i].seq;
			rows[nb] = nb;
			c[i].row = nb;
			nb++;
			/* Drafts stay within the candidate's max_tokens positions (the
			 * pages reserved for it; a draft past max_tokens could never be
			 * kept) and start once healing is done (the healed bytes
			 * constrain the choice, not a plain step). */
			int32_t kmax = req->max_tokens - c[i].n_tok - 1;
			if (kmax > ENGINE_DRAFT_MAX) kmax = ENGINE_DRAFT_MAX;
			if (!req->prompt_lookup || c[i].heal_done < fp->heal_len || kmax <= 0)
				continue;
			/* found even when the step has no room for it: the next
			 * choice then tells how good the draft was, for free */
			int32_t m = lookup_draft_find(fp->tok, L, c[i].hist, c[i].n_tok, kmax,
			                              c[i].draft, &c[i].draft_ngram);
			c[i].n_found = m;
			if (m > budget) m = budget;
			if (m <= 0) continue;
			double keep = lookup_p(&e->lookup, c[i].draft_ngram, c[i].after_hit);
			/* rows so far: every live candidate's own, and earlier drafts */
			c[i].n_draft =
			        lookup_choose(keep, m, expect, live + budget0 - budget, cost);
			for (int32_t j = 1; j <= c[i].n_draft; j++) expect += pow(keep, j);
			for (int32_t j = 0; j < c[i].n_draft; j++, nb++) {
				tokens[nb] = c[i].draft[j];
				pos[nb] = p + 1 + j;
				seqs[nb] = c[i].seq;
				rows[nb] = nb;
			}
			budget -= c[i].n_draft;
		}
		if (rc || !nb) break;
		if (cancelled(req)) {
			rc = ENGINE_ECANCELED;
			break;
		}
		/* Stop before a step that would end past the deadline, not after
		 * it: a step of a large model on a CPU is a good part of the whole
		 * budget. */
		double now = engine_now_ms();
		double next_ms = step_ms <= 0 ? fwd_cost(e, nb)
		                 : e->p.prefill_tokens_per_s > 0
		                         ? step_ms /* a set rate says nothing of steps */
		                         : fwd_cost_next(&e->fwd, step_ms, step_rows, nb,
		                                         e->step_ms, ms_per_token(e));
		if (req->deadline_ms > 0 && now + next_ms >= req->deadline_ms) {
			for (int i = 0; i < n; i++)
				if (!c[i].stop) c[i].stop = ENGINE_STOP_DEADLINE;
			break;
		}
		/* stoppable between layers, as a prefill chunk: the lengthening
		 * of an answer (no deadline) runs steps back to back while the
		 * user types, and the next key should not wait out a whole step */
		struct model_batch b = { .n_tokens = nb,
			                 .tokens = tokens,
			                 .pos = pos,
			                 .seqs = seqs,
			                 .n_out = nb,
			                 .out_rows = rows,
			                 .logits = e->logits,
			                 .stop = req->cancel ? stop_asked : NULL,
			                 .stop_ud = (void *)req };
		rc = model_forward(e->m, &b, err);
		if (rc == ENGINE_ECANCELED) break;
		step_ms = engine_now_ms() - now;
		step_rows = nb;
		if (!rc) average(&e->step_ms, step_ms), fwd_cost_note(&e->fwd, nb, step_ms);
		res->decode_steps++;
		res->draft_tokens += budget0 - (budget > 0 ? budget : 0);
		if (!rc && req->on_progress) req->on_progress(req->progress_ud, L, step);
	}
	if (rc == -ENOMEM) error_set(err, rc, "decode: out of memory");
	res->candidates = calloc((size_t)n, sizeof *res->candidates);
	if (!res->candidates) {
		cands_free(c, n);
		return rc ? rc : -ENOMEM;
	}
	res->n_candidates = n;
	for (int i = 0; i < n; i++) {
		if (rc == ENGINE_ECANCELED && !c[i].stop) c[i].stop = ENGINE_STOP_CANCELLED;
		if (!rc) cand_final(&c[i], req);
		hide_restated_indent(&c[i], fp);
		struct engine_candidate *o = &res->candidates[i];
		size_t vis = c[i].len > c[i].vis ? c[i].len - c[i].vis : 0;
		o->text = malloc(vis + 1);
		if (o->text) {
			if (vis) memcpy(o->text, c[i].text + c[i].vis, vis);
			o->text[vis] = 0;
			o->len = vis;
		}
		o->n_tokens = c[i].n_tok;
		o->sum_logprob = c[i].sum_lp;
		o->mean_logprob = c[i].n_tok ? c[i].sum_lp / c[i].n_tok : 0;
		o->stop = c[i].stop;
		res->generated_tokens += c[i].n_tok;
	}
	cands_free(c, n);
	return rc;
}

/* ---- given candidates ---- */

/* log P(the completion ends here): an end token, or a token that starts a
 * new line (a one-line text from elsewhere in the document ends at its line's
 * end; the decoded one-line candidates stop on that same newline token). */
static bool ends_line(const struct engine *e, int32_t v)
{
	const char *pc = e->pieces + e->off[v];
	return e->ends[v] || (e->off[v + 1] > e->off[v] && (pc[0] == '\n' || pc[0] == '\r'));
}

static double end_logprob(const struct engine *e, const float *lg)
{
	double m = -INFINITY, s = 0;
	for (int32_t v = 0; v < e->n_vocab; v++)
		if (ends_line(e, v) && lg[v] > m) m = lg[v];
	if (m == -INFINITY) return -INFINITY;
	for (int32_t v = 0; v < e->n_vocab; v++)
		if (ends_line(e, v)) s += exp((double)lg[v] - m);
	return m + log(s) - (double)sample_logsumexp(lg, e->n_vocab);
}

/* log-softmax of token tok under lg, masked to the healed bytes still to
 * spell (as cand_step scores a decoded token), *heal_done advanced. */
static double given_token_lp(struct engine *e, const float *lg, int32_t tok,
                             const struct fim_prompt *fp, size_t *heal_done)
{
	if (*heal_done < fp->heal_len) {
		lg = heal_mask(e, lg, fp->heal + *heal_done, fp->heal_len - *heal_done);
		*heal_done += e->off[tok + 1] - e->off[tok];
	}
	return (double)lg[tok] - (double)sample_logsumexp(lg, e->n_vocab);
}

/*
 * Scores req->given after the prompt in seq (last logits in the prompt row):
 * every text (healed bytes first) forced through the model in one batch of
 * forked sequences, logits for all its rows. Fills out[0..*n_out) with a
 * candidate per text that fits max_tokens (texts owned by the caller then).
 * 0 or a negative code.
 */
static int score_given(struct engine *e, const struct engine_request *req,
                       const struct fim_prompt *fp, struct kv_seq *seq,
                       struct engine_candidate *out, int *n_out, struct engine_result *res,
                       struct infill_error *err)
{
	size_t ng = req->n_given < ENGINE_MAX_GIVEN ? req->n_given : ENGINE_MAX_GIVEN;
	int32_t cap = req->max_tokens, L = fp->n;
	int32_t *ids = calloc(ng * (size_t)cap + 1, sizeof *ids);
	int32_t count[ENGINE_MAX_GIVEN] = { 0 };
	struct kv_seq *fork[ENGINE_MAX_GIVEN] = { 0 };
	char *buf = NULL;
	float *lg = NULL;
	int32_t *pos = NULL, *rows = NULL;
	struct kv_seq **seqs = NULL;
	int rc = ids ? 0 : -ENOMEM;
	int32_t total = 0;
	for (size_t g = 0; g < ng && !rc; g++) {
		if (!req->given[g].len) continue;
		size_t n = fp->heal_len + req->given[g].len;
		char *b = realloc(buf, n + 1);
		if (!b) {
			rc = -ENOMEM;
			break;
		}
		buf = b;
		memcpy(buf, fp->heal, fp->heal_len);
		memcpy(buf + fp->heal_len, req->given[g].text, req->given[g].len);
		int k = fim_encode_continuation(e->tk, buf, n, ids + (size_t)g * (size_t)cap,
		                                (size_t)cap);
		if (k < 0)
			rc = k;
		else if (k >= 1 && k <= cap)
			count[g] = k, total += k;
	}
	/* Their forward costs about as much per token as prefill (a few document
	 * lines: tens of tokens, hundreds of ms on a CPU with a 1B model), so
	 * under a deadline only those that fit before it, less a decode step,
	 * are scored, in the order given (the document's lines first). */
	if (!rc && req->deadline_ms > 0 && ms_per_token(e) > 0) {
		double left = req->deadline_ms - engine_now_ms() - fwd_cost(e, req->n_candidates);
		int32_t fit = fwd_fit(e, left, total), kept = 0;
		for (size_t g = 0; g < ng; g++) {
			if (count[g] && kept + count[g] > fit) {
				count[g] = 0;
				res->given_dropped++;
			}
			kept += count[g];
		}
		total = kept;
	}
	if (!rc && total) {
		lg = malloc((size_t)total * (size_t)e->n_vocab * sizeof *lg);
		pos = malloc((size_t)total * sizeof *pos);
		rows = malloc((size_t)total * sizeof *rows);
		seqs = malloc((size_t)total * sizeof *seqs);
		int32_t *tok = malloc((size_t)total * sizeof *tok);
		if (!lg || !pos || !rows || !seqs || !tok) rc = -ENOMEM;
		int32_t at = 0;
		for (size_t g = 0; g < ng && !rc; g++) {
			if (!count[g]) continue;
			fork[g] = kv_seq_fork(seq);
			if (!fork[g]) {
				rc = -ENOMEM;
				break;
			}
			for (int32_t j = 0; j < count[g]; j++, at++) {
				tok[at] = ids[(size_t)g * (size_t)cap + (size_t)j];
				pos[at] = L + j;
				seqs[at] = fork[g];
				rows[at] = at;
			}
		}
		if (!rc) {
			struct model_batch b = { .n_tokens = total,
				                 .tokens = tok,
				                 .pos = pos,
				                 .seqs = seqs,
				                 .n_out = total,
				                 .out_rows = rows,
				                 .logits = lg };
			double t = engine_now_ms();
			rc = model_forward(e->m, &b, err);
			if (!rc) fwd_cost_note(&e->fwd, total, engine_now_ms() - t);
		}
		free(tok);
	}
	*n_out = 0;
	const float *prompt_lg = e->logits + (size_t)STEP_ROWS * (size_t)e->n_vocab;
	int32_t at = 0;
	for (size_t g = 0; g < ng && !rc && total; g++) {
		if (!count[g]) continue;
		const int32_t *t = ids + (size_t)g * (size_t)cap;
		size_t heal_done = 0;
		double sum = given_token_lp(e, prompt_lg, t[0], fp, &heal_done);
		for (int32_t j = 1; j < count[g]; j++)
			sum += given_token_lp(e, lg + (size_t)(at + j - 1) * (size_t)e->n_vocab,
			                      t[j], fp, &heal_done);
		double end = end_logprob(e, lg + (size_t)(at + count[g] - 1) * (size_t)e->n_vocab);
		at += count[g];
		struct engine_candidate *o = &out[*n_out];
		memset(o, 0, sizeof *o);
		o->text = malloc(req->given[g].len + 1);
		if (!o->text) {
			rc = -ENOMEM;
			break;
		}
		memcpy(o->text, req->given[g].text, req->given[g].len);
		o->text[req->given[g].len] = 0;
		o->len = req->given[g].len;
		o->n_tokens = count[g] + 1;
		o->end_logprob = end;
		o->sum_logprob = sum + end;
		o->mean_logprob = o->sum_logprob / o->n_tokens;
		o->stop = ENGINE_STOP_GIVEN;
		(*n_out)++;
	}
	if (rc == -ENOMEM) error_set(err, rc, "scoring: out of memory");
	for (size_t g = 0; g < ng; g++) kv_seq_free(fork[g]);
	free(ids), free(buf), free(lg), free(pos), free(rows), free(seqs);
	return rc;
}

/* Moves the scored given candidates to the end of res (their texts with them). */
static int append_given(struct engine_result *res, struct engine_candidate *given, int n)
{
	struct engine_candidate *all =
	        realloc(res->candidates, ((size_t)res->n_candidates + (size_t)n) * sizeof *all);
	if (!all) return -ENOMEM;
	memcpy(all + res->n_candidates, given, (size_t)n * sizeof *all);
	res->candidates = all;
	res->n_candidates += n;
	return 0;
}

/* ---- the prefill budget ---- */

/* Shortest prefix the short context is trimmed to: below this a model sees
 * too little to say anything useful (about a line and a half of code), so
 * the answer may then come a little late rather than be noise. */
#define SHORT_MIN_PREFIX 32

/* Prompt tokens engine_run would not compute: its cached prefix, and a
 * remembered tail it would shift. */
static int32_t reusable(struct engine *e, const struct engine_request *req,
                        const struct fim_prompt *fp)
{
	if (!req->use_cache || fp->n < 2) return 0;
	int32_t m = pcache_peek(e->cache, fp->tok, fp->n - 1);
	if (e->p.reuse_shifted_suffix && m <= fp->tail_start && recent_find(e, fp))
		m += fp->n - 1 - fp->tail_start;
	return m;
}

/* Bytes of req's suffix that its first keep tokens in fp spell, cut back to
 * the end of the last whole line among them (0 when none ends there). */
static size_t suffix_cut(const struct engine *e, const struct engine_request *req,
                         const struct fim_prompt *fp, int32_t keep)
{
	size_t bytes = 0;
	for (int32_t i = 0; i < keep && i < fp->suffix_tokens; i++) {
		int32_t t = fp->tok[fp->suffix_at + i];
		bytes += e->off[t + 1] - e->off[t];
	}
	if (bytes > req->suffix_len) bytes = req->suffix_len;
	while (bytes > 0 && req->suffix[bytes - 1] != '\n') bytes--;
	return bytes;
}

/* The prefix budget that drops k whole FIM_FRONT_STEP steps from the front
 * of a prefix that kept `full` tokens: fim.c drops the fewest steps leaving
 * at most the budget, the healed last token counted, so kept + step - 1. */
static int32_t front_cut_budget(int32_t full, int32_t k)
{
	return full - k * FIM_FRONT_STEP + FIM_FRONT_STEP - 1;
}

/* Replaces *fp with the prompt of alt. 0 or a negative code. */
static int rebuild(struct engine *e, const struct engine_request *alt, struct fim_prompt *fp,
                   struct infill_error *err)
{
	struct fim_prompt np;
	int rc = fim_prompt_build(e->tk, alt, &np, err);
	if (rc) return rc;
	fim_prompt_finish(fp);
	*fp = np;
	return 0;
}

/*
 * The prefill budget (engine_request.fit_deadline). The time left before the
 * deadline, less decode_reserve_steps decode steps, at the measured rate,
 * is `allowed` prompt tokens; a prompt whose uncached part is larger is
 * replaced in *fp: by the same prompt with a shorter suffix when that is
 * enough (PSM, where the suffix follows the cached prefix), else by the
 * short context, trimmed (suffix, then the prefix's front) to fit. Why the
 * suffix goes first: in PSM it is the part re-prefilled on every key, and
 * the prefix before it is what the cache holds. The short context is taken
 * only when it leaves less to compute than the full one; else the full
 * prompt runs, late. 0 or a negative code.
 */
static int fit_budget(struct engine *e, const struct engine_request *req, struct fim_prompt *fp,
                      struct engine_result *res, struct infill_error *err)
{
	double mpt = ms_per_token(e);
	if (!req->fit_deadline || req->deadline_ms <= 0 || mpt <= 0) return 0;
	double left = req->deadline_ms - engine_now_ms() -
	              e->p.decode_reserve_steps * fwd_cost(e, req->n_candidates);
	int32_t allowed = fwd_fit(e, left, fp->n);
	int32_t reuse = reusable(e, req, fp);
	int32_t uncached = fp->n - reuse;
	res->full_uncached = uncached;
	res->estimated_prefill_ms = fwd_cost(e, uncached);
	res->budget = ENGINE_BUDGET_FITS;
	if (uncached <= allowed) return 0;
	int32_t excess = uncached - allowed;
	enum fim_template tpl = req->fim == FIM_TEMPLATE_AUTO ? fim_template_for(e->tk) : req->fim;
	enum fim_order order = req->order == FIM_ORDER_AUTO ? fim_order_for(tpl) : req->order;
	struct engine_request alt = *req;
	if (tpl != FIM_TEMPLATE_CUSTOM && order == FIM_ORDER_PSM && reuse <= fp->suffix_at &&
	    excess <= fp->suffix_tokens) {
		alt.suffix_len = suffix_cut(e, req, fp, fp->suffix_tokens - excess);
		res->budget = ENGINE_BUDGET_SUFFIX;
		e->st.budget_suffix++;
		return rebuild(e, &alt, fp, err);
	}
	if (!req->short_prefix) {
		res->budget = ENGINE_BUDGET_LATE;
		e->st.budget_late++;
		return 0;
	}
	alt.prefix = req->short_prefix;
	alt.prefix_len = req->short_prefix_len;
	alt.suffix = req->short_suffix ? req->short_suffix : "";
	alt.suffix_len = req->short_suffix ? req->short_suffix_len : 0;
	alt.extra = NULL;
	alt.n_extra = 0;
	/* the full prompt is kept aside: the short one replaces it only when
	 * it leaves less to compute (on a cached full context a key costs as
	 * few tokens as the short one would, and the full one knows more) */
	struct fim_prompt full_fp = *fp;
	memset(fp, 0, sizeof *fp);
	int rc = rebuild(e, &alt, fp, err);
	int32_t over = rc ? 0 : fp->n - reusable(e, &alt, fp) - allowed;
	if (over > 0) {
		int32_t from_suffix = over < fp->suffix_tokens ? over : fp->suffix_tokens;
		struct engine_request cut = alt;
		cut.suffix_len = suffix_cut(e, &alt, fp, fp->suffix_tokens - from_suffix);
		rc = rebuild(e, &cut, fp, err);
		/* Then the prefix's front, in FIM_FRONT_STEP steps counted from
		 * its start, so that a cut start stays put while the user types
		 * at the end: the least cut whose uncached part fits (a cut an
		 * earlier key made is cached, and fits), else the one leaving the
		 * least to compute. The time left varies from key to key; a cut
		 * sized from it alone moved the start and lost the cache. */
		int32_t full = fp->prefix_tokens, best = 0;
		int32_t best_left = rc ? 0 : fp->n - reusable(e, &cut, fp);
		for (int32_t k = 1;
		     !rc && best_left > allowed && full - k * FIM_FRONT_STEP >= SHORT_MIN_PREFIX;
		     k++) {
			cut.prefix_tokens = front_cut_budget(full, k);
			rc = rebuild(e, &cut, fp, err);
			int32_t unc = rc ? 0 : fp->n - reusable(e, &cut, fp);
			if (!rc && unc < best_left) best_left = unc, best = k;
		}
		int32_t want = best ? front_cut_budget(full, best) : alt.prefix_tokens;
		if (!rc && cut.prefix_tokens != want) {
			cut.prefix_tokens = want;
			rc = rebuild(e, &cut, fp, err);
		}
	}
	if (!rc && fp->n - reusable(e, &alt, fp) >= uncached) {
		fim_prompt_finish(fp);
		*fp = full_fp;
		res->budget = ENGINE_BUDGET_LATE;
		e->st.budget_late++;
		return 0;
	}
	fim_prompt_finish(&full_fp);
	if (rc) return rc;
	res->budget = ENGINE_BUDGET_SHORT;
	e->st.budget_short++;
	return 0;
}

/*
 * Before the first job nothing is measured, and a budget without a rate
 * would let the first cold prompt (the most expensive one: nothing cached,
 * and the weights not yet paged in) run whole. One forward of a single
 * token pages the weights in, one chunk measures the prefill rate, one more
 * single token a decode step, and forwards of 3 and 6 rows what a step of
 * three candidates and a keystroke's few new tokens cost (fwd_cost): about
 * a chunk's time and a half more at load, which the first requests would
 * otherwise have paid anyway, and misjudged.
 */
int engine_calibrate(struct engine *e, struct infill_error *err)
{
	int32_t n = e->p.prefill_chunk;
	enum { RUNS = 5 };
	const int32_t len[RUNS] = { 1, n, 1, 3, 6 };
	int32_t total = 0;
	for (int k = 0; k < RUNS; k++) total += len[k];
	int32_t *tok = malloc((size_t)total * sizeof *tok);
	int32_t *pos = malloc((size_t)total * sizeof *pos);
	struct kv_seq **seqs = malloc((size_t)total * sizeof *seqs);
	struct kv_seq *seq = kv_seq_new(e->pool);
	int rc = tok && pos && seqs && seq ? 0 : -ENOMEM;
	/* any valid ids: a forward's cost does not depend on which */
	for (int32_t i = 0; !rc && i < total; i++)
		tok[i] = (int32_t)(((int64_t)i * 7919 + 1) % e->n_vocab), pos[i] = i, seqs[i] = seq;
	for (int k = 0, from = 0; !rc && k < RUNS; from += len[k], k++) {
		int32_t row = len[k] - 1;
		struct model_batch b = { .n_tokens = len[k],
			                 .tokens = tok + from,
			                 .pos = pos + from,
			                 .seqs = seqs,
			                 .n_out = 1,
			                 .out_rows = &row,
			                 .logits = e->logits };
		double t = engine_now_ms();
		rc = model_forward(e->m, &b, err);
		double ms = engine_now_ms() - t;
		if (rc || k == 0) continue; /* the first paged the weights in */
		if (k == 1) e->prefill_ms_per_tok = ms / n;
		if (k == 2) e->step_ms = ms;
		fwd_cost_note(&e->fwd, len[k], ms);
	}
	kv_seq_free(seq);
	free(seqs);
	free(pos);
	free(tok);
	if (rc == -ENOMEM) return error_set(err, rc, "calibrate: out of memory");
	return rc;
}

/* ---- background prefill ---- */

int engine_prefill(struct engine *e, const struct engine_request *req, struct engine_result *res,
                   struct infill_error *err)
{
	memset(res, 0, sizeof *res);
	error_set(err, 0, "%s", "");
	double t0 = engine_now_ms();
	struct fim_prompt fp;
	int rc = fim_prompt_build(e->tk, req, &fp, err);
	if (rc) return rc;
	res->prompt_tokens = fp.n;
	struct kv_seq *seq = NULL;
	/* The last token is the request's own to compute (its logits start the
	 * candidates), so it is left out: the cache takes the rest. */
	int32_t L = fp.n - 1;
	if (cancelled(req)) {
		rc = ENGINE_ECANCELED;
		goto out;
	}
	if (!req->use_cache || L <= 0) goto out;
	int32_t need = (L + e->ps - 1) / e->ps + 1;
	if (need > cache_pages_for(e, &e->p)) {
		rc = error_set(
		        err, -ENOSPC,
		        "background prefill: a %d-token prompt does not fit the prefix "
		        "cache (cache.memoryMB)",
		        L);
		error_key(err, "cache.memoryMB", strlen("cache.memoryMB"));
		goto out;
	}
	if (kv_pool_free_pages(e->pool) < need) pcache_evict(e->cache, need);
	seq = kv_seq_new(e->pool);
	if (!seq) {
		rc = -ENOMEM;
		goto out;
	}
	int32_t matched = pcache_match(e->cache, fp.tok, L, seq);
	int32_t done = matched;
	res->cached_tokens = matched;
	rc = prefill_chunked(e, req, seq, fp.tok, matched, L, -1, NULL, &done,
	                     e->p.background_chunk, err);
	res->prefilled_tokens = done - matched;
	e->st.background_tokens += (uint64_t)res->prefilled_tokens;
	/* what was computed is exact, cancelled or not */
	if (done > matched) pcache_insert(e->cache, fp.tok, done, seq);
out:
	kv_seq_free(seq);
	if (rc == ENGINE_ECANCELED) {
		res->cancelled = true;
		error_set(err, rc, "cancelled");
	} else if (rc && !err->message[0]) {
		error_set(err, rc, "background prefill: %s", strerror(-rc));
	}
	if (rc) err->code = rc; /* whatever step failed */
	res->prefill_ms = res->total_ms = engine_now_ms() - t0;
	fim_prompt_finish(&fp);
	return rc;
}

/* ---- the job ---- */

int engine_run(struct engine *e, const struct engine_request *req, struct engine_result *res,
               struct infill_error *err)
{
	memset(res, 0, sizeof *res);
	error_set(err, 0, "%s", "");
	double t0 = engine_now_ms();
	if (req->n_candidates < 1 || req->n_candidates > ENGINE_MAX_CANDIDATES ||
	    req->max_tokens < 1) {
		error_set(err, -EINVAL,
		                "completion.candidates must be 1..%d and completion.maxTokens >= 1 "
		                "(got %d, %d)",
		                ENGINE_MAX_CANDIDATES, req->n_candidates, req->max_tokens);
		const char *key =
		        req->max_tokens < 1 ? "completion.maxTokens" : "completion.candidates";
		error_key(err, key, strlen(key));
		return -EINVAL;
	}
	struct fim_prompt fp;
	int rc = fim_prompt_build(e->tk, req, &fp, err);
	if (!rc) rc = fit_budget(e, req, &fp, res, err);
	if (rc) {
		fim_prompt_finish(&fp);
		return rc;
	}
	res->prompt_tokens = fp.n;
	e->st.jobs++;
	uint64_t computed0 = e->computed;
	int32_t L = fp.n;
	struct kv_seq *seq = NULL;
	float *prompt_logits = e->logits + (size_t)STEP_ROWS * (size_t)e->n_vocab;

	if (cancelled(req)) {
		rc = ENGINE_ECANCELED;
		goto out;
	}
	/* Room for the prompt and every candidate's tokens; the cache gives way. */
	int32_t n_seqs =
	        req->n_candidates +
	        (int32_t)(req->n_given < ENGINE_MAX_GIVEN ? req->n_given : ENGINE_MAX_GIVEN);
	int32_t need =
	        (L + e->ps - 1) / e->ps + 1 + n_seqs * ((req->max_tokens + e->ps - 1) / e->ps + 1);
	if (need > kv_pool_n_pages(e->pool)) {
		rc = error_set(err, -ENOSPC,
		                     "the KV pool (%d pages of %d tokens) cannot hold a %d-token "
		                     "prompt and %d x %d new tokens: raise cache.memoryMB or lower "
		                     "the budgets",
		                     kv_pool_n_pages(e->pool), e->ps, L, n_seqs, req->max_tokens);
		error_key(err, "cache.memoryMB", strlen("cache.memoryMB"));
		goto out;
	}
	if (kv_pool_free_pages(e->pool) < need) {
		recent_clear(e);
		pcache_evict(e->cache, need);
	}
	seq = kv_seq_new(e->pool);
	if (!seq) {
		rc = -ENOMEM;
		goto out;
	}
	/* The last token is always computed: its logits start the candidates. */
	int32_t matched = 0;
	if (req->use_cache) {
		e->st.cache_lookups++;
		matched = pcache_match(e->cache, fp.tok, L - 1, seq);
		if (matched > 0) e->st.cache_hits++;
	}
	res->cached_tokens = matched;

	double tp = engine_now_ms();
	int32_t done = matched, exact_end = L;
	struct recent *r = NULL;
	int shift_age = 0;
	/* matched == tail_start: the same head as a remembered prompt whose
	 * (approximate, so uncached) tail is re-used as is, shifted by 0. */
	if (e->p.reuse_shifted_suffix && req->use_cache && matched <= fp.tail_start)
		r = recent_find(e, &fp);
	if (r) {
		shift_age = r->age;
		/* the old tail shifted into place first, then the new prefix
		 * tokens (exact: they attend to the prefix only) and the last
		 * token (which sees the shifted tail) in one forward */
		int32_t nshift = L - 1 - fp.tail_start;
		if (model_kv_shift(e->m, r->seq, r->tail_start, seq, fp.tail_start, nshift, err) ==
		    0) {
			res->shifted_tokens = nshift;
			rc = prefill_chunked(e, req, seq, fp.tok, matched, fp.tail_start, L - 1,
			                     prompt_logits, &done, e->p.prefill_chunk, err);
			exact_end = fp.tail_start;
		} else {
			/* the backend could not shift: prefill the tail exactly */
			kv_seq_truncate(seq, matched);
			error_set(err, 0, "%s", "");
			rc = prefill(e, req, seq, fp.tok, matched, L, prompt_logits, &done, err);
		}
	} else {
		rc = prefill(e, req, seq, fp.tok, matched, L, prompt_logits, &done, err);
	}
	res->prefill_ms = engine_now_ms() - tp;
	res->processed_tokens = done;
	/* What was computed exactly goes into the cache, even when cancelled. */
	if (req->use_cache) {
		int32_t upto = done < exact_end ? done : exact_end;
		if (pcache_insert(e->cache, fp.tok, upto, seq) == 0 && rc == 0 &&
		    e->p.reuse_shifted_suffix)
			recent_store(e, &fp, seq, res->shifted_tokens ? shift_age + 1 : 0);
	}
	if (rc) goto out;

	double td = engine_now_ms();
	/* Given texts first: one batched forward, and often the answer; decoding
	 * then has what is left before the deadline. */
	struct engine_candidate given[ENGINE_MAX_GIVEN];
	int n_given = 0;
	if (req->n_given && !cancelled(req) && !(req->deadline_ms > 0 && td >= req->deadline_ms))
		rc = score_given(e, req, &fp, seq, given, &n_given, res, err);
	if (!rc) rc = decode(e, req, &fp, seq, res, err);
	if (!rc && n_given) rc = append_given(res, given, n_given);
	for (int i = 0; rc && i < n_given; i++) free(given[i].text);
	res->decode_ms = engine_now_ms() - td;

out:
	kv_seq_free(seq);
	if (rc == ENGINE_ECANCELED) {
		res->cancelled = true;
		e->st.cancelled++;
		error_set(err, rc, "cancelled");
	} else if (rc && !err->message[0]) {
		error_set(err, rc, "completion job: %s", strerror(-rc));
	}
	/* Whatever step failed, the error's code is what engine_run returns. */
	if (rc) err->code = rc;
	res->healed_bytes = (int32_t)fp.heal_len;
	res->prefilled_tokens = (int32_t)(e->computed - computed0);
	e->st.prefilled_tokens += (uint64_t)res->prefilled_tokens;
	e->st.prompt_tokens += (uint64_t)res->prompt_tokens;
	e->st.cached_tokens += (uint64_t)res->cached_tokens;
	e->st.shifted_tokens += (uint64_t)res->shifted_tokens;
	e->st.generated_tokens += (uint64_t)res->generated_tokens;
	e->st.draft_tokens += (uint64_t)res->draft_tokens;
	e->st.accepted_draft_tokens += (uint64_t)res->accepted_draft_tokens;
	res->total_ms = engine_now_ms() - t0;
	fim_prompt_finish(&fp);
	return rc;
}
