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
 * a shorter one (engine_budget.c). engine_prefill is the background half: it
 * fills the cache with a prompt and decodes nothing. The candidates the
 * pipeline hands in are scored in engine_given.c, between prefill and
 * decode; what those files share with this one is in engine_internal.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"

/* Prompt lookup: drafts fill a decode step up to STEP_CHEAP_ROWS rows, no
 * further: the CPU backend streams each weight row once for up to 8 batch
 * rows (CPU_DEC_MAX, kernels/cpu/cpu.c mm_plan), and the weight types it
 * packs (kernels/cpu/packings.c's `packings` table) give a token the same bits in
 * such a step as alone (other types: up to float rounding); a ninth row
 * makes the step a prompt chunk, computed through the prefill kernels.
 * Within that, lookup.c weighs each draft's chance against the step's cost. */
#define STEP_CHEAP_ROWS 8
/* A shifted tail is re-used at most this many keystrokes in a row before it
 * is computed exactly again, so its staleness (it attended to an older
 * prefix) stays bounded. */
#define SHIFT_MAX_AGE   8

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
double engine_ms_per_token(const struct engine *e)
{
	return e->p.prefill_tokens_per_s > 0 ? 1000.0 / e->p.prefill_tokens_per_s
	                                     : e->prefill_ms_per_tok;
}

/* A forward's estimated cost (fwdcost.c); a rate given in the parameters
 * (prefill_tokens_per_s) is taken as stated. */
double engine_fwd_cost(const struct engine *e, int32_t n)
{
	if (e->p.prefill_tokens_per_s > 0) return n > 0 ? n * engine_ms_per_token(e) : 0;
	return fwd_cost_ms(&e->fwd, n, e->step_ms, engine_ms_per_token(e));
}

/* The most rows, up to cap, whose forward fits in left ms, by the same
 * costs as engine_fwd_cost. */
int32_t engine_fwd_fit(const struct engine *e, double left, int32_t cap)
{
	if (e->p.prefill_tokens_per_s > 0) {
		int32_t n = left > 0 ? (int32_t)(left / engine_ms_per_token(e)) : 0;
		return n < cap ? n : cap;
	}
	return fwd_cost_fit(&e->fwd, left, cap, e->step_ms, engine_ms_per_token(e));
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
		.draft = true,
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
	draft_free(e->draft);
	free(e->pieces);
	free(e->off);
	free(e->ends);
	free(e->logits);
	free(e->scratch);
	free(e);
}

int engine_set_draft(struct engine *e, struct model *dm, struct infill_error *err)
{
	draft_free(e->draft);
	e->draft = NULL;
	if (!dm) return 0;
	e->draft = draft_new(e->m, dm, err);
	return e->draft ? 0 : err->code;
}

const struct model *engine_draft_model(const struct engine *e)
{
	return e->draft ? draft_model(e->draft) : NULL;
}

int engine_take_draft(struct engine *e, struct model *dm, struct infill_error *err)
{
	int rc = engine_set_draft(e, dm, err);
	if (rc)
		model_free(dm);
	else if (dm)
		draft_own(e->draft);
	return rc;
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
	if (e->draft) draft_cache_clear(e->draft);
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
struct recent *engine_recent_find(struct engine *e, const struct fim_prompt *fp)
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
	bool after_hit;          /* the last drafted token compared with a choice was right */
	int32_t n_look;          /* of the drafts, the first n_look are lookup's, the rest
	                       * the draft model's */
	int32_t look0;           /* the lookup draft's first token (found, checked or not) */
	struct lookup_gate gate; /* lookup's back-off after drafts that missed */
	uint8_t dconf[ENGINE_DRAFT_MAX]; /* the model drafts' confidence classes */
	struct kv_seq *dseq;             /* the draft model's sequence; NULL: no draft model */
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
const float *engine_heal_mask(struct engine *e, const float *logits, const char *heal, size_t hl)
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

static int cand_apply(struct engine *e, struct cand *c, int32_t tok, float lp,
                      const struct fim_prompt *fp, const struct engine_request *req);

/*
 * Picks candidate c's next token from logits, applies it to its text and
 * stop rules. Returns 0 or -ENOMEM.
 */
static int cand_step(struct engine *e, struct cand *c, int idx, const float *logits,
                     const struct fim_prompt *fp, const struct engine_request *req)
{
	const float *lg = logits;
	if (c->heal_done < fp->heal_len)
		lg = engine_heal_mask(e, logits, fp->heal + c->heal_done,
		                      fp->heal_len - c->heal_done);
	int32_t tok;
	float lp;
	if (idx == 0 || !c->smp) {
		tok = sample_greedy(lg, e->n_vocab);
		lp = (float)(lg[tok] - sample_logsumexp(lg, e->n_vocab));
	} else {
		tok = sampler_sample(c->smp, lg, NULL, 0, &lp);
	}
	return cand_apply(e, c, tok, lp, fp, req);
}

/*
 * Applies the chosen token tok (log-probability lp) to candidate c: its
 * history, text, healing and stop rules. 0 or -ENOMEM.
 */
static int cand_apply(struct engine *e, struct cand *c, int32_t tok, float lp,
                      const struct fim_prompt *fp, const struct engine_request *req)
{
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
		kv_seq_free(c[i].dseq);
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
                     int32_t *accepted, int32_t *model_tried, int32_t *model_kept)
{
	int32_t pos0 = fp->n + c->n_tok - 1; /* position of the entry at c->row */
	int32_t n_draft = c->n_draft, n_look = c->n_look, a = 0;
	c->n_draft = 0;
	(void)first;
	int rc = 0;
	for (;;) {
		const float *lg = e->logits + (size_t)(c->row + a) * (size_t)e->n_vocab;
		if (a < n_draft && a >= n_look && idx > 0 && c->smp) {
			/* the draft model's token, drawn from its law q: kept by the
			 * speculative-sampling rule, else the residual's draw */
			float *res, *p = draft_scratch(e->draft, &res);
			sampler_probs(c->smp, lg, p);
			int32_t tok = sampler_spec_take(c->smp, p, draft_q(e->draft, c->row + a),
			                                c->draft[a], res);
			float lp = (float)(lg[tok] - sample_logsumexp(lg, e->n_vocab));
			rc = cand_apply(e, c, tok, lp, fp, req);
		} else {
			rc = cand_step(e, c, idx, lg, fp, req);
		}
		if (rc || c->stop || a >= n_draft || c->last != c->draft[a]) break;
		a++;
	}
	*accepted = a;
	/* a lookup draft that was found but not checked still says whether its
	 * first token was the one chosen */
	int32_t a_look = a < n_look ? a : n_look;
	bool hit = n_look ? a_look == n_look
	                  : c->n_found && c->n_tok > 0 && !n_draft && c->last == c->look0;
	if (c->n_found && (n_look || !n_draft))
		lookup_note(&e->lookup, c->draft_ngram, c->after_hit, n_look ? n_look : 1,
		            n_look ? a_look : hit);
	if (n_look)
		c->after_hit = hit;
	else if (!n_draft)
		c->after_hit = hit;
	if (c->n_found && (n_look || !n_draft))
		lookup_gate_note(&c->gate, n_look > 0, n_look ? a_look > 0 : hit);
	c->n_found = 0;
	/* the draft model's tokens were checked when the lookup's all held */
	if (n_draft > n_look && a >= n_look) {
		int32_t kept = a - n_look;
		int32_t tried = kept + (kept < n_draft - n_look && !c->stop);
		draft_note(e->draft, idx > 0 && c->smp ? NULL : c->dconf, tried, kept);
		*model_kept = kept, *model_tried = tried;
	}
	/* Slots pos0 .. pos0 + a hold the KV of right inputs; later drafted
	 * slots are dropped (a later step writes them again). The draft
	 * model's sequence alike. */
	if (n_draft > a) kv_seq_truncate(c->seq, pos0 + a + 1);
	if (c->dseq && kv_seq_len(c->dseq) > pos0 + a + 1) kv_seq_truncate(c->dseq, pos0 + a + 1);
	return rc;
}

/*
 * A job's candidates between decode steps: what engine_run decodes, and what
 * an engine_live keeps when the deadline pauses them. Between two steps each
 * live candidate has taken every logits row of the last forward, so its
 * next input (`last`, at position L + n_tok - 1) is not computed yet and
 * nothing else is pending: the state is its KV pages, its sampler, its text
 * and its detokenizer, all held here. Resuming runs that forward; the tokens
 * are then those of a decode never paused, bit for bit (the same batches of
 * the same rows, the same sampler draws).
 */
struct dec {
	struct fim_prompt fp; /* owned (moved in from engine_run) */
	struct cand c[ENGINE_MAX_CANDIDATES];
	int n;
	int32_t max_tokens; /* the first request's: pages, hist and stop */
	bool prompt_lookup; /* the first request's: hist is allocated for it */
	bool use_draft;     /* the draft model drafts (each candidate has a dseq) */
	bool want_draft;    /* the first request's engine_request.draft */
	bool fresh;         /* the last forward's rows (or the prompt's) wait to be taken */
	int step;           /* forwards taken so far (0: the prompt's row is next) */
	double step_ms;     /* the last decode step's wall time, and its rows */
	int32_t step_rows;
	bool paused; /* stopped between steps with candidates still going */
};

struct engine_live {
	struct dec d;
	int64_t generated; /* tokens decoded over its life */
};

static int dec_init(struct engine *e, struct dec *d, const struct engine_request *req,
                    struct kv_seq *seq, struct kv_seq *dseq)
{
	d->n = req->n_candidates;
	d->max_tokens = req->max_tokens;
	d->prompt_lookup = req->prompt_lookup;
	d->use_draft = dseq && e->draft;
	d->want_draft = req->draft;
	d->fresh = true;
	for (int i = 0; i < d->n; i++) {
		struct cand *c = &d->c[i];
		c->vis = d->fp.heal_len;
		tokenizer_detok_init(&c->dt, false);
		c->seq = kv_seq_fork(seq);
		if (!c->seq) return -ENOMEM;
		if (d->use_draft && !(c->dseq = kv_seq_fork(dseq))) return -ENOMEM;
		/* (a draft that could not start now may join a live candidate) */
		if (req->prompt_lookup || (req->draft && e->draft)) {
			c->hist = malloc((size_t)req->max_tokens * sizeof *c->hist);
			if (!c->hist) return -ENOMEM;
		}
		if (i > 0) {
			struct sampler_params sp = { .temperature = req->temperature,
				                     .top_k = req->top_k,
				                     .top_p = req->top_p,
				                     .repeat_penalty = 1.0f,
				                     .seed = req->seed + (uint64_t)i };
			c->smp = sampler_new(&sp, e->n_vocab);
			if (!c->smp) return -ENOMEM;
		}
	}
	return 0;
}

/* Stops every candidate still going (no pause). */
static void dec_stop_all(struct dec *d, enum engine_stop why)
{
	for (int i = 0; i < d->n; i++)
		if (!d->c[i].stop) d->c[i].stop = why;
}

/*
 * Runs decode steps over d's candidates until each stops, the request's
 * cancel flag is set, its deadline would pass in the next step, or
 * req->max_steps forwards have run. req holds the stop rules (its
 * max_tokens and prompt_lookup are d's). With pause, the last three leave
 * the candidates resumable (d->paused; stop still NONE) instead of stopped
 * (DEADLINE, or CANCELLED by the caller). 0, ENGINE_ECANCELED or < 0.
 *
 * A step is one forward pass over every live candidate's next input token
 * at its position, plus, with prompt lookup, the tokens drafted after it at
 * the following positions of the same sequence (logits for every row).
 */
/*
 * The next step's batch over d's candidates still going: each one's input,
 * then its drafts (prompt lookup) while the step stays cheap (candidate 0
 * first: it is shown first). Fills the row arrays; returns the rows,
 * *drafted the drafted ones.
 */
/* Lays out a step's rows over d's candidates still going: each one's input,
 * then its n_look lookup drafts and extra[i] model drafts (c->draft) at the
 * positions after it. Sets each one's row and n_draft; returns the rows. */
static int lay_rows(struct dec *d, const int32_t *extra, int32_t *tokens, int32_t *pos,
                    struct kv_seq **seqs, int32_t *rows)
{
	int nb = 0;
	for (int i = 0; i < d->n; i++) {
		struct cand *c = &d->c[i];
		if (c->stop) continue;
		int32_t p = d->fp.n + c->n_tok - 1;
		c->row = nb;
		c->n_draft = c->n_look + extra[i];
		for (int32_t j = 0; j <= c->n_draft; j++, nb++) {
			tokens[nb] = j ? c->draft[j - 1] : c->last;
			pos[nb] = p + j;
			seqs[nb] = c->seq;
			rows[nb] = nb;
		}
	}
	return nb;
}

static int dec_batch(struct engine *e, struct dec *d, const struct engine_request *req,
                     int32_t *tokens, int32_t *pos, struct kv_seq **seqs, int32_t *rows,
                     int32_t *drafted, int32_t *model_drafted, double *draft_ms,
                     struct infill_error *err)
{
	const struct fim_prompt *fp = &d->fp;
	struct cand *c = d->c;
	int n = d->n, nb = 0;
	int32_t L = fp->n;
	int32_t live = 0;
	for (int i = 0; i < n; i++) live += !c[i].stop;
	int32_t budget = STEP_CHEAP_ROWS - live, budget0 = budget > 0 ? budget : 0;
	double cost[STEP_CHEAP_ROWS + 1] = { 0 }; /* a forward's ms by its rows */
	if ((req->prompt_lookup || d->use_draft) && budget > 0)
		for (int32_t r = 1; r <= STEP_CHEAP_ROWS; r++) cost[r] = engine_fwd_cost(e, r);
	double expect = live; /* tokens the step is expected to give */
	int32_t kmaxs[ENGINE_MAX_CANDIDATES] = { 0 };
	double reach[ENGINE_MAX_CANDIDATES];
	/* lookup's drafts first */
	for (int i = 0; i < n; i++) {
		c[i].n_draft = c[i].n_look = 0;
		reach[i] = 1;
		if (c[i].stop) continue;
		/* the draft model's slots from the input's position on are
		 * drafts of a step that did not run (a pause, a cancel) */
		if (c[i].dseq && kv_seq_len(c[i].dseq) > L + c[i].n_tok - 1)
			kv_seq_truncate(c[i].dseq, L + c[i].n_tok - 1);
		/* Drafts stay within the candidate's max_tokens positions (the
		 * pages reserved for it; a draft past max_tokens could never be
		 * kept) and start once healing is done (the healed bytes
		 * constrain the choice, not a plain step). */
		int32_t kmax = req->max_tokens - c[i].n_tok - 1;
		if (kmax > ENGINE_DRAFT_MAX) kmax = ENGINE_DRAFT_MAX;
		if (c[i].heal_done < fp->heal_len || kmax <= 0) continue;
		kmaxs[i] = kmax;
		if (!req->prompt_lookup) continue;
		/* found even when the step has no room for it: the next
		 * choice then tells how good the draft was, for free */
		int32_t m = lookup_draft_find(fp->tok, L, c[i].hist, c[i].n_tok, kmax, c[i].draft,
		                              &c[i].draft_ngram);
		c[i].n_found = m;
		c[i].look0 = c[i].draft[0];
		if (m > budget) m = budget;
		if (m <= 0 || !lookup_gate_open(&c[i].gate)) continue;
		double keep = lookup_p(&e->lookup, c[i].draft_ngram, c[i].after_hit);
		/* rows so far: every live candidate's own, and earlier drafts */
		c[i].n_draft = lookup_choose(keep, m, expect, live + budget0 - budget, cost);
		for (int32_t j = 1; j <= c[i].n_draft; j++) expect += pow(keep, j);
		reach[i] = pow(keep, c[i].n_draft);
		c[i].n_look = c[i].n_draft;
		budget -= c[i].n_draft;
	}
	/* then the draft model fills: k tokens each, weighed as a whole */
	int32_t k = 0, extra[ENGINE_MAX_CANDIDATES] = { 0 };
	if (d->use_draft && budget > 0) {
		struct draft_plan pl = { .budget = budget,
			                 .rows = live + budget0 - budget,
			                 .tokens = expect,
			                 .cost = cost,
			                 .ms_per_row = engine_ms_per_token(e) };
		int idx[ENGINE_MAX_CANDIDATES];
		for (int i = 0; i < n; i++) {
			if (c[i].stop || kmaxs[i] - c[i].n_look <= 0) continue;
			idx[pl.n] = i;
			pl.room[pl.n] = kmaxs[i] - c[i].n_look;
			pl.reach[pl.n] = reach[i];
			pl.n++;
		}
		if (pl.n) k = draft_choose(e->draft, &pl);
		for (int u = 0; u < pl.n && k > 0; u++) {
			int32_t ki = k < pl.room[u] ? k : pl.room[u];
			if (ki > budget) ki = budget;
			extra[idx[u]] = ki > 0 ? ki : 0;
			budget -= extra[idx[u]];
		}
	}
	/* the rows: each candidate's input, its lookup drafts, its model
	 * drafts (their rows now, their tokens once drafted) */
	nb = lay_rows(d, extra, tokens, pos, seqs, rows);
	*model_drafted = 0;
	*drafted = 0;
	for (int i = 0; i < n; i++) *drafted += c[i].stop ? 0 : c[i].n_look;
	if (k > 0) {
		int32_t was_row[ENGINE_MAX_CANDIDATES];
		int who[ENGINE_MAX_CANDIDATES];
		struct draft_job jobs[ENGINE_MAX_CANDIDATES];
		int nj = 0;
		for (int i = 0; i < n; i++) {
			if (c[i].stop || !extra[i]) continue;
			was_row[i] = c[i].row;
			who[nj] = i;
			jobs[nj++] = (struct draft_job){
				.seq = c[i].dseq,
				.prompt = fp->tok,
				.L = L,
				.gen = c[i].hist,
				.n_gen = c[i].n_tok,
				.ahead = c[i].draft,
				.n_ahead = c[i].n_look,
				.k = extra[i],
				.smp = i > 0 ? c[i].smp : NULL,
				.reach = reach[i],
				.out = c[i].draft + c[i].n_look,
				.q = draft_q(e->draft, c[i].row + c[i].n_look),
				.conf = c[i].dconf,
			};
		}
		double t0 = engine_now_ms();
		int rc = draft_run(e->draft, jobs, nj, err);
		*draft_ms += engine_now_ms() - t0;
		if (rc) return rc;
		/* greedy jobs may have stopped short: the rows close up (a
		 * sampled candidate's laws move down with its rows; in order,
		 * a row only moves to one that was before it) */
		for (int u = 0; u < nj; u++) extra[who[u]] = jobs[u].got;
		nb = lay_rows(d, extra, tokens, pos, seqs, rows);
		for (int u = 0; u < nj; u++) {
			int i = who[u];
			if (c[i].row != was_row[i] && extra[i] && jobs[u].smp)
				memmove(draft_q(e->draft, c[i].row + c[i].n_look),
				        draft_q(e->draft, was_row[i] + c[i].n_look),
				        (size_t)extra[i] * (size_t)e->n_vocab * sizeof(float));
			*model_drafted += extra[i];
		}
	}
	return nb;
}

static int dec_run(struct engine *e, struct dec *d, const struct engine_request *req,
                   struct engine_result *res, bool pause, struct infill_error *err)
{
	const struct fim_prompt *fp = &d->fp;
	struct cand *c = d->c;
	int n = d->n, rc = 0;
	int32_t L = fp->n;
	float *prompt_logits = e->logits + (size_t)STEP_ROWS * (size_t)e->n_vocab;
	int32_t tokens[STEP_ROWS], pos[STEP_ROWS], rows[STEP_ROWS];
	struct kv_seq *seqs[STEP_ROWS];
	int32_t ran = 0; /* forwards in this call */
	d->paused = false;
	for (;;) {
		for (int i = 0; d->fresh && i < n && !rc; i++) {
			if (c[i].stop) continue;
			int32_t acc = 0, mt = 0, mk = 0;
			if (d->step == 0)
				rc = cand_step(e, &c[i], i, prompt_logits, fp, req);
			else
				rc = cand_take(e, &c[i], i,
				               e->logits + (size_t)c[i].row * (size_t)e->n_vocab,
				               fp, req, &acc, &mt, &mk);
			res->accepted_draft_tokens += acc - mk;
			res->accepted_model_draft_tokens += mk;
		}
		d->fresh = false;
		if (rc) break;
		int32_t drafted = 0, model_drafted = 0;
		int nb = dec_batch(e, d, req, tokens, pos, seqs, rows, &drafted, &model_drafted,
		                   &res->draft_ms, err);
		if (nb < 0) {
			/* the draft model failed (its pool full): on without it */
			for (int i = 0; i < n; i++) {
				kv_seq_free(c[i].dseq);
				c[i].dseq = NULL;
			}
			d->use_draft = false;
			error_set(err, 0, "%s", "");
			nb = dec_batch(e, d, req, tokens, pos, seqs, rows, &drafted, &model_drafted,
			               &res->draft_ms, err);
		}
		if (nb <= 0) break;
		if (cancelled(req)) {
			rc = ENGINE_ECANCELED;
			d->paused = pause;
			break;
		}
		/* Stop before a step that would end past the deadline, not after
		 * it: a step of a large model on a CPU is a good part of the whole
		 * budget. */
		double now = engine_now_ms();
		double next_ms = d->step_ms <= 0 ? engine_fwd_cost(e, nb)
		                 : e->p.prefill_tokens_per_s > 0
		                         ? d->step_ms /* a set rate says nothing of steps */
		                         : fwd_cost_next(&e->fwd, d->step_ms, d->step_rows, nb,
		                                         e->step_ms, engine_ms_per_token(e));
		bool late = req->deadline_ms > 0 && now + next_ms >= req->deadline_ms;
		if (late || (req->max_steps > 0 && ran >= req->max_steps)) {
			if (pause)
				d->paused = true;
			else
				dec_stop_all(d, ENGINE_STOP_DEADLINE);
			break;
		}
		/* stoppable between layers, as a prefill chunk: a live candidate
		 * runs steps back to back while the user types, and the next key
		 * should not wait out a whole step */
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
		if (rc == ENGINE_ECANCELED) {
			/* the step is dropped: each candidate's sequence goes back to
			 * its computed slots, and its input waits for the next call */
			for (int i = 0; i < n; i++) {
				if (c[i].stop) continue;
				kv_seq_truncate(c[i].seq, L + c[i].n_tok - 1);
				/* (the next call drafts again: these drafts are not kept) */
				if (c[i].dseq && kv_seq_len(c[i].dseq) > L + c[i].n_tok)
					kv_seq_truncate(c[i].dseq, L + c[i].n_tok);
				c[i].n_draft = c[i].n_look = 0;
			}
			d->paused = pause;
			break;
		}
		d->step_ms = engine_now_ms() - now;
		d->step_rows = nb;
		if (!rc) average(&e->step_ms, d->step_ms), fwd_cost_note(&e->fwd, nb, d->step_ms);
		if (rc) break;
		res->decode_steps++;
		res->draft_tokens += drafted;
		res->model_draft_tokens += model_drafted;
		res->model_draft_steps += model_drafted > 0;
		if (req->on_progress) req->on_progress(req->progress_ud, L, d->step);
		d->step++;
		ran++;
		d->fresh = true;
	}
	if (rc == -ENOMEM) error_set(err, rc, "decode: out of memory");
	return rc;
}

/*
 * Writes d's candidates to res as they stand (new texts; a result filled
 * before is finished first). A candidate paused between steps is written as
 * one the deadline stopped (its unfinished word cut, its unfinished line
 * scope-checked) from a copy: the candidate itself goes on from where it
 * was. cancelled: the job was cancelled (candidates still going say so and
 * are written as they are). 0 or -ENOMEM.
 */
static int dec_output(struct engine *e, struct dec *d, const struct engine_request *req,
                      struct engine_result *res, bool cancelled_job)
{
	(void)e;
	for (int32_t i = 0; i < res->n_candidates && res->candidates; i++)
		free(res->candidates[i].text);
	free(res->candidates);
	res->candidates = calloc((size_t)d->n, sizeof *res->candidates);
	res->n_candidates = 0;
	if (!res->candidates) return -ENOMEM;
	res->n_candidates = d->n;
	int rc = 0;
	for (int i = 0; i < d->n; i++) {
		struct cand t = d->c[i]; /* a copy: its text is duplicated below */
		t.text = malloc(t.len + 1);
		if (!t.text) {
			rc = -ENOMEM;
			continue;
		}
		memcpy(t.text, d->c[i].text ? d->c[i].text : "", t.len);
		t.text[t.len] = 0;
		t.cap = t.len + 1;
		if (!t.stop) t.stop = cancelled_job ? ENGINE_STOP_CANCELLED : ENGINE_STOP_DEADLINE;
		if (!cancelled_job && cand_final(&t, req)) rc = -ENOMEM;
		hide_restated_indent(&t, &d->fp);
		struct engine_candidate *o = &res->candidates[i];
		size_t vis = t.len > t.vis ? t.len - t.vis : 0;
		o->text = malloc(vis + 1);
		if (o->text) {
			if (vis) memcpy(o->text, t.text + t.vis, vis);
			o->text[vis] = 0;
			o->len = vis;
		}
		o->n_tokens = t.n_tok;
		o->sum_logprob = t.sum_lp;
		o->mean_logprob = t.n_tok ? t.sum_lp / t.n_tok : 0;
		o->stop = t.stop;
		free(t.text);
	}
	return rc;
}

static void dec_finish(struct dec *d)
{
	cands_free(d->c, d->n);
	memset(d->c, 0, sizeof d->c);
	d->n = 0;
	fim_prompt_finish(&d->fp);
}

static int32_t dec_tokens(const struct dec *d)
{
	int32_t t = 0;
	for (int i = 0; i < d->n; i++) t += d->c[i].n_tok;
	return t;
}

/*
 * Decodes the candidates of the prompt fp (taken: d owns it) in seq (length
 * fp->n) whose last logits are in the prompt row of e->logits. Fills res.
 * With req->live, candidates the deadline (or max_steps) paused are handed
 * to a new engine_live in *req->live instead of being freed. 0,
 * ENGINE_ECANCELED or < 0.
 */
static int decode(struct engine *e, const struct engine_request *req, struct fim_prompt *fp,
                  struct kv_seq *seq, struct kv_seq *dseq, struct engine_result *res,
                  struct infill_error *err)
{
	struct engine_live *lv = calloc(1, sizeof *lv);
	if (!lv) return -ENOMEM;
	struct dec *d = &lv->d;
	d->fp = *fp;
	memset(fp, 0, sizeof *fp); /* moved */
	int rc = dec_init(e, d, req, seq, dseq);
	if (!rc) rc = dec_run(e, d, req, res, req->live != NULL, err);
	if (rc == ENGINE_ECANCELED) dec_stop_all(d, ENGINE_STOP_CANCELLED);
	int orc = dec_output(e, d, req, res, rc == ENGINE_ECANCELED);
	if (!rc) rc = orc;
	res->generated_tokens += dec_tokens(d);
	lv->generated = dec_tokens(d);
	if (!rc && d->paused && req->live) {
		*req->live = lv;
		return 0;
	}
	dec_finish(d);
	free(lv);
	return rc;
}

/* ---- live candidates ---- */

/* Rows a live candidate's draft may catch up on when it joins (draft_run
 * takes them in one forward): beyond, it goes on without the draft. */
#define LIVE_JOIN_MAX_ROWS 256

/* A live candidate whose job decoded without the draft model (its prompt
 * did not fit the job's share of the deadline) takes it now, while the
 * suggestion grows: the draft's prompt (a few times cheaper than the
 * model's, and cached for the next jobs) then its sequences, which catch up
 * on the tokens chosen so far in the next drafting forward. Cancelled or
 * short of time, the prompt's part computed stays cached for the next try. */
static void live_join_draft(struct engine *e, struct dec *d, const struct engine_request *req,
                            struct engine_result *res)
{
	if (d->use_draft || !d->want_draft || !e->draft) return;
	int32_t rows = 0;
	for (int i = 0; i < d->n; i++) {
		if (d->c[i].stop) continue;
		if (!d->c[i].hist) return; /* nothing to catch up from */
		rows += d->c[i].n_tok;
	}
	if (rows > LIVE_JOIN_MAX_ROWS) return;
	double left = req->deadline_ms > 0 ? fmax(0, req->deadline_ms - engine_now_ms()) : -1;
	struct kv_seq *dseq = NULL;
	struct infill_error derr;
	memset(&derr, 0, sizeof derr);
	int got = draft_prefill(e->draft, d->fp.tok, d->fp.n, d->n, d->max_tokens, true, left, true,
	                        engine_ms_per_token(e), req->cancel ? stop_asked : NULL,
	                        (void *)req, &dseq, &derr);
	if (got < 0) return;
	res->draft_prefilled_tokens = got;
	bool ok = true;
	for (int i = 0; i < d->n && ok; i++)
		if (!d->c[i].stop) ok = (d->c[i].dseq = kv_seq_fork(dseq)) != NULL;
	kv_seq_free(dseq);
	if (!ok) {
		for (int i = 0; i < d->n; i++) {
			kv_seq_free(d->c[i].dseq);
			d->c[i].dseq = NULL;
		}
		return;
	}
	d->use_draft = true;
}

int engine_live_continue(struct engine *e, struct engine_live *lv, const struct engine_request *req,
                         struct engine_result *res, struct infill_error *err)
{
	memset(res, 0, sizeof *res);
	error_set(err, 0, "%s", "");
	double t0 = engine_now_ms();
	struct dec *d = &lv->d;
	/* the stop rules are the caller's; what the pages, the sampler and
	 * the history were sized for is the first request's */
	struct engine_request q = *req;
	q.max_tokens = d->max_tokens;
	q.prompt_lookup = d->prompt_lookup;
	q.n_candidates = d->n;
	int32_t before = dec_tokens(d);
	int rc = 0;
	if (d->paused) live_join_draft(e, d, &q, res);
	q.draft = d->use_draft;
	if (d->paused) rc = dec_run(e, d, &q, res, true, err);
	int32_t made = dec_tokens(d) - before;
	lv->generated += made;
	res->generated_tokens = made;
	e->st.generated_tokens += (uint64_t)made;
	e->st.draft_tokens += (uint64_t)res->draft_tokens;
	e->st.accepted_draft_tokens += (uint64_t)res->accepted_draft_tokens;
	e->st.model_draft_tokens += (uint64_t)res->model_draft_tokens;
	e->st.accepted_model_draft_tokens += (uint64_t)res->accepted_model_draft_tokens;
	if (rc && rc != ENGINE_ECANCELED) {
		/* broken (out of memory): it ends here, with what it has */
		dec_stop_all(d, ENGINE_STOP_DEADLINE);
		d->paused = false;
	}
	int orc = dec_output(e, d, &q, res, false);
	res->prompt_tokens = d->fp.n;
	res->healed_bytes = (int32_t)d->fp.heal_len;
	res->cancelled = rc == ENGINE_ECANCELED;
	res->decode_ms = res->total_ms = engine_now_ms() - t0;
	if (!rc) rc = orc;
	if (rc == ENGINE_ECANCELED) error_set(err, rc, "cancelled");
	return rc;
}

bool engine_live_done(const struct engine_live *lv)
{
	return !lv || !lv->d.paused;
}

int64_t engine_live_generated(const struct engine_live *lv)
{
	return lv ? lv->generated : 0;
}

void engine_live_free(struct engine_live *lv)
{
	if (!lv) return;
	dec_finish(&lv->d);
	free(lv);
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
		rc = error_set(err, -ENOSPC,
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
	/* the draft model's cache too: a job whose deadline leaves no time
	 * for the draft's prefill then finds it done (draft_prefill) */
	if (!rc && e->draft && req->draft && done == L) {
		struct kv_seq *dseq = NULL;
		struct infill_error derr;
		memset(&derr, 0, sizeof derr);
		if (draft_prefill(e->draft, fp.tok, L, 0, 0, true, -1, false, 0,
		                  req->cancel ? stop_asked : NULL, (void *)req, &dseq, &derr) >= 0)
			kv_seq_free(dseq);
	}
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

/* The request's counts the job is sized by: 0, or -EINVAL with the setting
 * to fix in *err. */
static int request_check(const struct engine_request *req, struct infill_error *err)
{
	if (req->n_candidates >= 1 && req->n_candidates <= ENGINE_MAX_CANDIDATES &&
	    req->max_tokens >= 1)
		return 0;
	error_set(err, -EINVAL,
	          "completion.candidates must be 1..%d and completion.maxTokens >= 1 "
	          "(got %d, %d)",
	          ENGINE_MAX_CANDIDATES, req->n_candidates, req->max_tokens);
	const char *key = req->max_tokens < 1 ? "completion.maxTokens" : "completion.candidates";
	error_key(err, key, strlen(key));
	return -EINVAL;
}

/* Room in the KV pool for an L-token prompt and every candidate's tokens,
 * decoded or given: the remembered prompts and the cache give way. 0, or
 * -ENOSPC when the whole pool could not hold them. */
static int pages_reserve(struct engine *e, const struct engine_request *req, int32_t L,
                         struct infill_error *err)
{
	int32_t n_seqs =
	        req->n_candidates +
	        (int32_t)(req->n_given < ENGINE_MAX_GIVEN ? req->n_given : ENGINE_MAX_GIVEN);
	int32_t need =
	        (L + e->ps - 1) / e->ps + 1 + n_seqs * ((req->max_tokens + e->ps - 1) / e->ps + 1);
	if (need > kv_pool_n_pages(e->pool)) {
		int rc = error_set(err, -ENOSPC,
		                   "the KV pool (%d pages of %d tokens) cannot hold a %d-token "
		                   "prompt and %d x %d new tokens: raise cache.memoryMB or lower "
		                   "the budgets",
		                   kv_pool_n_pages(e->pool), e->ps, L, n_seqs, req->max_tokens);
		error_key(err, "cache.memoryMB", strlen("cache.memoryMB"));
		return rc;
	}
	if (kv_pool_free_pages(e->pool) < need) {
		recent_clear(e);
		pcache_evict(e->cache, need);
	}
	return 0;
}

/*
 * Computes fp's KV into seq (empty) and its last token's logits into the
 * prompt row of e->logits: the longest cached prefix taken as is, a
 * remembered tail shifted into place where one matches, the rest
 * prefilled. Fills res's cached, shifted and processed counts and
 * prefill_ms. 0, ENGINE_ECANCELED or a negative code.
 */
static int prompt_prefill(struct engine *e, const struct engine_request *req,
                          const struct fim_prompt *fp, struct kv_seq *seq,
                          struct engine_result *res, struct infill_error *err)
{
	int32_t L = fp->n;
	float *prompt_logits = e->logits + (size_t)STEP_ROWS * (size_t)e->n_vocab;
	/* The last token is always computed: its logits start the candidates. */
	int32_t matched = 0;
	if (req->use_cache) {
		e->st.cache_lookups++;
		matched = pcache_match(e->cache, fp->tok, L - 1, seq);
		if (matched > 0) e->st.cache_hits++;
	}
	res->cached_tokens = matched;

	double tp = engine_now_ms();
	int32_t done = matched, exact_end = L;
	struct recent *r = NULL;
	int shift_age = 0, rc;
	/* matched == tail_start: the same head as a remembered prompt whose
	 * (approximate, so uncached) tail is re-used as is, shifted by 0. */
	if (e->p.reuse_shifted_suffix && req->use_cache && matched <= fp->tail_start)
		r = engine_recent_find(e, fp);
	if (r) {
		shift_age = r->age;
		/* the old tail shifted into place first, then the new prefix
		 * tokens (exact: they attend to the prefix only) and the last
		 * token (which sees the shifted tail) in one forward */
		int32_t nshift = L - 1 - fp->tail_start;
		if (model_kv_shift(e->m, r->seq, r->tail_start, seq, fp->tail_start, nshift, err) ==
		    0) {
			res->shifted_tokens = nshift;
			rc = prefill_chunked(e, req, seq, fp->tok, matched, fp->tail_start, L - 1,
			                     prompt_logits, &done, e->p.prefill_chunk, err);
			exact_end = fp->tail_start;
		} else {
			/* the backend could not shift: prefill the tail exactly */
			kv_seq_truncate(seq, matched);
			error_set(err, 0, "%s", "");
			rc = prefill(e, req, seq, fp->tok, matched, L, prompt_logits, &done, err);
		}
	} else {
		rc = prefill(e, req, seq, fp->tok, matched, L, prompt_logits, &done, err);
	}
	res->prefill_ms = engine_now_ms() - tp;
	res->processed_tokens = done;
	/* What was computed exactly goes into the cache, even when cancelled. */
	if (req->use_cache) {
		int32_t upto = done < exact_end ? done : exact_end;
		if (pcache_insert(e->cache, fp->tok, upto, seq) == 0 && rc == 0 &&
		    e->p.reuse_shifted_suffix)
			recent_store(e, fp, seq, res->shifted_tokens ? shift_age + 1 : 0);
	}
	return rc;
}

/* Adds a finished job's counts (its result's) to the engine's totals. */
static void stats_add(struct engine *e, const struct engine_result *res)
{
	e->st.prefilled_tokens += (uint64_t)res->prefilled_tokens;
	e->st.prompt_tokens += (uint64_t)res->prompt_tokens;
	e->st.cached_tokens += (uint64_t)res->cached_tokens;
	e->st.shifted_tokens += (uint64_t)res->shifted_tokens;
	e->st.generated_tokens += (uint64_t)res->generated_tokens;
	e->st.draft_tokens += (uint64_t)res->draft_tokens;
	e->st.accepted_draft_tokens += (uint64_t)res->accepted_draft_tokens;
	e->st.model_draft_tokens += (uint64_t)res->model_draft_tokens;
	e->st.accepted_model_draft_tokens += (uint64_t)res->accepted_model_draft_tokens;
}

int engine_run(struct engine *e, const struct engine_request *req, struct engine_result *res,
               struct infill_error *err)
{
	memset(res, 0, sizeof *res);
	error_set(err, 0, "%s", "");
	if (req->live) *req->live = NULL;
	double t0 = engine_now_ms();
	int rc = request_check(req, err);
	if (rc) return rc;
	struct fim_prompt fp;
	rc = fim_prompt_build(e->tk, req, &fp, err);
	if (!rc) rc = engine_budget_fit(e, req, &fp, res, err);
	if (rc) {
		fim_prompt_finish(&fp);
		return rc;
	}
	res->prompt_tokens = fp.n;
	e->st.jobs++;
	uint64_t computed0 = e->computed;
	struct kv_seq *seq = NULL;

	if (cancelled(req)) {
		rc = ENGINE_ECANCELED;
		goto out;
	}
	rc = pages_reserve(e, req, fp.n, err);
	if (rc) goto out;
	seq = kv_seq_new(e->pool);
	if (!seq) {
		rc = -ENOMEM;
		goto out;
	}
	rc = prompt_prefill(e, req, &fp, seq, res, err);
	if (rc) goto out;

	double td = engine_now_ms();
	/* Given texts first: one batched forward, and often the answer; decoding
	 * then has what is left before the deadline. */
	struct engine_candidate given[ENGINE_MAX_GIVEN];
	int n_given = 0;
	if (req->n_given && !cancelled(req) && !(req->deadline_ms > 0 && td >= req->deadline_ms))
		rc = engine_given_score(e, req, &fp, seq, given, &n_given, res, err);
	res->healed_bytes = (int32_t)fp.heal_len; /* decode takes fp */
	/* The draft model's prompt: its own cache, then its prefill (a few
	 * times cheaper than the model's). A draft that cannot follow (its
	 * pool too small) leaves the job to decode without it. */
	struct kv_seq *dseq = NULL;
	if (!rc && e->draft && req->draft && !cancelled(req)) {
		struct infill_error derr;
		memset(&derr, 0, sizeof derr);
		int32_t n_seqs = req->n_candidates;
		/* the time before the deadline (0 once past), -1: none */
		double left =
		        req->deadline_ms > 0 ? fmax(0, req->deadline_ms - engine_now_ms()) : -1;
		int got = draft_prefill(e->draft, fp.tok, fp.n, n_seqs, req->max_tokens,
		                        req->use_cache, left, false, engine_ms_per_token(e),
		                        req->cancel ? stop_asked : NULL, (void *)req, &dseq, &derr);
		if (got < 0) dseq = NULL;
		res->draft_prefilled_tokens = got > 0 ? got : 0;
	}
	if (!rc) rc = decode(e, req, &fp, seq, dseq, res, err);
	kv_seq_free(dseq);
	if (!rc && n_given) rc = engine_given_append(res, given, n_given);
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
	if (fp.tok) res->healed_bytes = (int32_t)fp.heal_len;
	res->prefilled_tokens = (int32_t)(e->computed - computed0);
	stats_add(e, res);
	res->total_ms = engine_now_ms() - t0;
	fim_prompt_finish(&fp);
	return rc;
}
