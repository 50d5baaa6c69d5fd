/*
 * draft.c - speculative decoding's second model (completion.draftModel):
 * whether a pair may draft for each other, the draft's own prompt KV (its
 * own prefix cache over its own page pool), the drafting rounds of a decode
 * step, and how many tokens a step should draft.
 *
 * The engine (engine.c, dec_batch and cand_take) puts the drafts after the
 * candidate's input in the target's one batched forward and keeps those the
 * target would have chosen: greedy candidates keep a draft when it is the
 * target's argmax (so the text is that of plain greedy decoding), sampled
 * candidates by the speculative-sampling rule (sample.c, sampler_spec_take),
 * which keeps the target's law. Lookup drafts (lookup.c) come first; the
 * draft model fills the step after them.
 *
 * How many to draft: each drafted token is kept with a chance alpha learned
 * from the steps (fading counts), k drafts yield alpha + ... + alpha^k
 * tokens more, for k forwards of the draft model and k rows more in the
 * target's forward. The k with the most tokens per ms wins (0: no drafts;
 * a probe of one token after DRAFT_PROBE steps without drafts keeps alpha
 * learned when it is 0; each probe that misses doubles the wait, up to
 * DRAFT_PROBE_MAX: a probe costs the draft's catch-up over every token
 * since its last forward, and with a draft that agreed on 15% of tokens
 * probes every 32 steps took 3% of the decode time).
 *
 * Where a step drafts, greedy drafting goes on token by token while the
 * next draft pays (draft_run): a draft the draft model is sure of is kept
 * far more often than one it is not, so the chance of each is learned by
 * the draft's confidence (its top token's probability, in DRAFT_CONF
 * classes). Drafting stops at the first unsure token instead of after a
 * fixed k: fewer draft forwards and verify rows spent on drafts that miss.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

/* Counts fade by this much per drafted token checked: alpha follows the text. */
#define DRAFT_FADE          0.97
/* Before any draft was checked: alpha = 1/2. */
#define DRAFT_PRIOR_KEPT    1.0
#define DRAFT_PRIOR_TRIED   2.0
/* The gain over a plain step a draft must promise (see draft_choose). */
#define DRAFT_MARGIN        0.06
/* A job's draft prefill may take this share of the time left before its
 * deadline: the first answer comes at the deadline, and the ~x1.4 the
 * draft gives the decode after it pays back at most 1 - 1/1.4 of it. */
#define DRAFT_PREFILL_SHARE 0.25
/* Steps without drafts before one drafts a single token to learn alpha
 * again; after probes that missed, up to DRAFT_PROBE_MAX. */
#define DRAFT_PROBE         32
#define DRAFT_PROBE_MAX     256
/* Confidence classes: the draft's top probability in tenths. */
#define DRAFT_CONF          10
/* A class's counts start as this many drafts kept at the overall rate. */
#define DRAFT_CONF_PRIOR    2.0

struct draft {
	struct model *m; /* borrowed */
	struct kv_pool *pool;
	struct pcache *cache;
	int32_t n_vocab; /* the draft's logits */
	int32_t n_law;   /* the model's: n_vocab and the model's padding tokens */
	float *logits;   /* [STEP_ROWS][n_vocab]: a drafting forward's output rows */
	float *q;        /* [STEP_ROWS][n_law]: sampled drafts' laws, by target row */
	float *p;        /* [n_law] scratch: the target's law */
	float *res;      /* [n_law] scratch: the residual */
	float *padded;   /* [n_law] scratch: a row of logits, the padding's -inf */
	struct fwd_cost fwd;
	double one_ms;      /* moving average of drafting forwards */
	double prompt_ms;   /* moving average of a prompt token's prefill, ms */
	double ratio;       /* weight bytes a step reads, draft over target */
	double kept, tried; /* drafted tokens kept and checked, fading */
	double ckept[DRAFT_CONF], ctried[DRAFT_CONF]; /* the same by confidence class */
	/* what a row of the target's step and a drafting forward cost, in
	 * tokens of the plain step's rate (draft_choose sets them) */
	double row_tokens, fwd_tokens;
	int32_t idle;        /* steps without a draft since the last */
	int32_t probe_after; /* idle steps before a probe: DRAFT_PROBE .. DRAFT_PROBE_MAX */
	bool probing;        /* the last draft chosen was a probe, not yet checked */
	bool owned;          /* m is freed with d */
};

void draft_own(struct draft *d)
{
	d->owned = true;
}

const struct model *draft_model(const struct draft *d)
{
	return d->m;
}

void draft_cache_clear(struct draft *d)
{
	pcache_clear(d->cache);
}

/* Whether the draft's vocabulary b is the model's a token for token, with
 * the same prompt for the same text: *why says what differs. The model's
 * may end in padding (unused tokens) the draft's lacks: a family's larger
 * models pad their embeddings further (Qwen2.5-Coder's 7B to 152064 rows,
 * its 0.5B to 151936); the draft never proposes them. */
static bool same_vocabulary(const struct tokenizer *a, const struct tokenizer *b, int32_t na,
                            int32_t nb, char *why, size_t cap)
{
	bool padding = nb < na;
	for (int32_t i = nb; i < na && padding; i++)
		padding = tokenizer_token_type(a, i) == TOKENIZER_TOKEN_UNUSED;
	if (na != nb && !padding) {
		snprintf(why, cap, "its vocabulary has %d tokens, the model's %d", nb, na);
		return false;
	}
	for (int32_t i = 0; i < nb; i++) {
		size_t la = 0, lb = 0;
		const char *ta = tokenizer_token_text(a, i, &la),
		           *tb = tokenizer_token_text(b, i, &lb);
		if (la != lb || (la && memcmp(ta, tb, la)) ||
		    tokenizer_token_type(a, i) != tokenizer_token_type(b, i)) {
			snprintf(why, cap, "token %d differs (%.*s vs %.*s)", i,
			         (int)(la < 40 ? la : 40), ta ? ta : "", (int)(lb < 40 ? lb : 40),
			         tb ? tb : "");
			return false;
		}
	}
	const struct tokenizer_special *sa = tokenizer_special(a), *sb = tokenizer_special(b);
	if (sa->bos != sb->bos || sa->eos != sb->eos || sa->add_bos != sb->add_bos ||
	    fim_template_for(a) != fim_template_for(b) || sa->fim_prefix != sb->fim_prefix ||
	    sa->fim_suffix != sb->fim_suffix || sa->fim_middle != sb->fim_middle) {
		snprintf(why, cap, "its FIM template or special tokens differ (%s vs %s)",
		         fim_template_name(fim_template_for(b)),
		         fim_template_name(fim_template_for(a)));
		return false;
	}
	/* the same request must give the same prompt, token for token */
	struct engine_request rq = engine_request_default();
	rq.prefix = "def f(x):\n    return ";
	rq.prefix_len = strlen(rq.prefix);
	rq.suffix = "\n\nprint(f(1))\n";
	rq.suffix_len = strlen(rq.suffix);
	struct fim_prompt pa = { 0 }, pb = { 0 };
	struct infill_error e1, e2;
	bool same = !fim_prompt_build(a, &rq, &pa, &e1) && !fim_prompt_build(b, &rq, &pb, &e2) &&
	            pa.n == pb.n && !memcmp(pa.tok, pb.tok, (size_t)pa.n * sizeof *pa.tok);
	fim_prompt_finish(&pa);
	fim_prompt_finish(&pb);
	if (!same) snprintf(why, cap, "the same text gives it a different FIM prompt");
	return same;
}

void draft_free(struct draft *d)
{
	if (!d) return;
	pcache_free(d->cache);
	free(d->logits);
	free(d->q);
	free(d->p);
	free(d->res);
	free(d->padded);
	if (d->owned) model_free(d->m);
	free(d);
}

struct draft *draft_new(struct model *target, struct model *dm, struct infill_error *err)
{
	const struct model_info *ti = model_info(target), *di = model_info(dm);
	char why[200];
	if (!same_vocabulary(model_tokenizer(target), model_tokenizer(dm), ti->n_vocab, di->n_vocab,
	                     why, sizeof why)) {
		error_set(err, -EINVAL,
		          "the draft model cannot draft for this model (%s); decoding goes on "
		          "without a draft",
		          why);
		error_key(err, "completion.draftModel", strlen("completion.draftModel"));
		return NULL;
	}
	/* A drafted token that costs a step of the target's or more cannot pay:
	 * k drafts and their check cost k + 1 steps at least, for k + 1 tokens
	 * at most. */
	if (di->decode_read_bytes >= ti->decode_read_bytes) {
		error_set(err, -EINVAL,
		          "the draft model is not smaller than the model (it reads %.1f MB a "
		          "token, the model %.1f MB), so drafting could only slow decoding; "
		          "choose a smaller model of the same vocabulary, or none; decoding "
		          "goes on without a draft",
		          di->decode_read_bytes / 1e6, ti->decode_read_bytes / 1e6);
		error_key(err, "completion.draftModel", strlen("completion.draftModel"));
		return NULL;
	}
	/* A draft on the CPU for a model on a GPU (backend "auto" with room on
	 * the GPU for one of them) costs more a token than the model's step. */
	if (ti->backend != di->backend) {
		error_set(err, -EINVAL,
		          "the draft model runs on %s and the model on %s, so drafting could only "
		          "slow decoding (where a GPU lacks memory for both, lower cache.memoryMB "
		          "or choose a smaller draft); decoding goes on without a draft",
		          di->backend == INFER_BACKEND_CUDA ? "cuda" : "cpu",
		          ti->backend == INFER_BACKEND_CUDA ? "cuda" : "cpu");
		error_key(err, "completion.draftModel", strlen("completion.draftModel"));
		return NULL;
	}
	struct draft *d = calloc(1, sizeof *d);
	if (!d) goto oom;
	d->m = dm;
	d->pool = model_kv_pool(dm);
	d->probe_after = DRAFT_PROBE;
	d->n_vocab = di->n_vocab;
	d->n_law = ti->n_vocab;
	/* its cache keeps room for one job's candidates, as the engine's */
	int32_t n = kv_pool_n_pages(d->pool), job = 16 * (128 / kv_pool_page_size(d->pool) + 1);
	if (job > n / 4) job = n / 4;
	d->cache = pcache_new(d->pool, n - job);
	size_t law = (size_t)d->n_law * sizeof(float);
	d->logits = malloc((size_t)STEP_ROWS * (size_t)d->n_vocab * sizeof(float));
	d->q = malloc((size_t)STEP_ROWS * law);
	d->p = malloc(law);
	d->res = malloc(law);
	d->padded = malloc(law);
	if (!d->cache || !d->logits || !d->q || !d->p || !d->res || !d->padded) goto oom;
	for (int32_t i = d->n_vocab; i < d->n_law; i++) d->padded[i] = -INFINITY;
	d->ratio = (double)di->decode_read_bytes / (double)ti->decode_read_bytes;
	return d;
oom:
	draft_free(d);
	error_set(err, -ENOMEM, "draft model: out of memory");
	return NULL;
}

float *draft_q(struct draft *d, int32_t row)
{
	return d->q + (size_t)row * (size_t)d->n_law;
}

float *draft_scratch(struct draft *d, float **residual)
{
	*residual = d->res;
	return d->p;
}

/* ---- the prompt ---- */

int draft_prefill(struct draft *d, const int32_t *tok, int32_t n, int32_t n_seqs,
                  int32_t max_tokens, bool use_cache, double ms_left, bool part,
                  double target_ms_per_token, bool (*stop)(void *), void *stop_ud,
                  struct kv_seq **out, struct infill_error *err)
{
	*out = NULL;
	int32_t ps = kv_pool_page_size(d->pool);
	int32_t need = (n + ps - 1) / ps + 1 + n_seqs * ((max_tokens + ENGINE_DRAFT_MAX) / ps + 2);
	if (need > kv_pool_n_pages(d->pool))
		return error_set(err, -ENOSPC,
		                 "the draft model's KV pool is too small for the job");
	if (kv_pool_free_pages(d->pool) < need) pcache_evict(d->cache, need);
	struct kv_seq *s = kv_seq_new(d->pool);
	if (!s) return error_set(err, -ENOMEM, "draft model: out of memory");
	int32_t done = use_cache ? pcache_match(d->cache, tok, n, s) : 0;
	/* the rate is learned from prompts of 64 tokens or more; where prompts
	 * are shorter (a small context) it was never learned, and at a rate
	 * of 0 a cold job's first answer waited for the draft's whole prompt */
	double rate = d->prompt_ms > 0 ? d->prompt_ms : target_ms_per_token * d->ratio;
	/* Where the whole prompt does not fit in the share, the job decodes
	 * without the draft; a live slice (part) computes what fits all the
	 * same and caches it, so that its next slice goes on from there. */
	int32_t upto = n;
	if (ms_left >= 0 && (n - done) * rate > DRAFT_PREFILL_SHARE * ms_left)
		upto = use_cache && part ? done + (int32_t)(DRAFT_PREFILL_SHARE * ms_left / rate)
		                         : done;
	enum { CHUNK = 64 };
	int32_t pos[CHUNK];
	struct kv_seq *seqs[CHUNK];
	int rc = 0;
	double t0 = engine_now_ms();
	int32_t from = done;
	for (int32_t at = done; at < upto && !rc; at += CHUNK) {
		int32_t m = upto - at < CHUNK ? upto - at : CHUNK;
		for (int32_t i = 0; i < m; i++) pos[i] = at + i, seqs[i] = s;
		struct model_batch b = { .n_tokens = m,
			                 .tokens = tok + at,
			                 .pos = pos,
			                 .seqs = seqs,
			                 .stop = stop,
			                 .stop_ud = stop_ud };
		rc = model_forward(d->m, &b, err);
		if (!rc) done = at + m;
	}
	if (done - from >= CHUNK) { /* a rate from a few rows would be a decode step's */
		double ms = (engine_now_ms() - t0) / (done - from);
		d->prompt_ms = d->prompt_ms > 0 ? 0.7 * d->prompt_ms + 0.3 * ms : ms;
	}
	/* what was computed is exact: the next keystroke's draft starts from it */
	if (use_cache && done > 0) pcache_insert(d->cache, tok, done, s);
	if (!rc && done < n)
		rc = error_set(err, -EAGAIN,
		               "the draft model's prefill (%d tokens) would not pay before the "
		               "deadline",
		               n - done);
	if (rc) {
		kv_seq_free(s);
		return rc;
	}
	*out = s;
	return done - from;
}

/* ---- drafting ---- */

/* Token i of a job's context: the prompt, the chosen tokens, the lookup drafts. */
static int32_t job_at(const struct draft_job *j, int32_t i)
{
	if (i < j->L) return j->prompt[i];
	i -= j->L;
	if (i < j->n_gen) return j->gen[i];
	return j->ahead[i - j->n_gen];
}

/* The learned chance that a greedy draft of confidence class b is kept. */
static double conf_alpha(const struct draft *d, int b)
{
	return (d->ckept[b] + DRAFT_CONF_PRIOR * draft_alpha(d)) /
	       (d->ctried[b] + DRAFT_CONF_PRIOR);
}

/* The confidence class of the draft's top token tok: its probability, in
 * tenths. A class is coarse, so the sum skips what cannot move it (terms
 * under e^-20) and stops once the top is below a tenth: a scan of the
 * logits, not an exp of each, most of the time. */
static uint8_t conf_class(const float *lg, int32_t n, int32_t tok)
{
	float top = lg[tok];
	double sum = 0;
	for (int32_t i = 0; i < n; i++) {
		float x = lg[i] - top;
		if (x < -20.0f) continue;
		sum += expf(x);
		if (sum > DRAFT_CONF) return 0;
	}
	int b = (int)(DRAFT_CONF / sum);
	return (uint8_t)(b < DRAFT_CONF ? b : DRAFT_CONF - 1);
}

int draft_run(struct draft *d, struct draft_job *jobs, int n, struct infill_error *err)
{
	/* Round r computes, for every job still drafting, its context's tokens
	 * not yet in its sequence (round 0: the catch-up, then the input and
	 * the lookup drafts) or its last drafted token, and drafts one more
	 * from the last row. */
	enum { MAXR = 512 };
	int32_t tokens[MAXR], pos[MAXR], outr[ENGINE_MAX_CANDIDATES];
	struct kv_seq *seqs[MAXR];
	int32_t kmax = 0;
	bool going[ENGINE_MAX_CANDIDATES];
	double reach[ENGINE_MAX_CANDIDATES];
	for (int i = 0; i < n; i++) {
		kmax = jobs[i].k > kmax ? jobs[i].k : kmax;
		jobs[i].got = 0;
		going[i] = jobs[i].k > 0;
		reach[i] = jobs[i].reach > 0 ? jobs[i].reach : 1;
	}
	double alpha = draft_alpha(d);
	for (int32_t r = 0; r < kmax; r++) {
		int32_t nr = 0, no = 0;
		for (int i = 0; i < n; i++) {
			struct draft_job *j = &jobs[i];
			if (!going[i] || r >= j->k) continue;
			/* positions 0 .. end - 1 are needed before drafting token r */
			int32_t end = j->L + j->n_gen + j->n_ahead + r;
			int32_t from = kv_seq_len(j->seq);
			if (from >= end) from = end - 1; /* recompute the last one: its logits */
			if (end - from > MAXR - nr)
				return error_set(err, -E2BIG, "draft: too many rows");
			for (int32_t p = from; p < end; p++, nr++) {
				tokens[nr] = p < j->L + j->n_gen + j->n_ahead
				                     ? job_at(j, p)
				                     : j->out[p - (j->L + j->n_gen + j->n_ahead)];
				pos[nr] = p;
				seqs[nr] = j->seq;
			}
			outr[no++] = nr - 1;
		}
		if (!no) break; /* every job stopped where the next draft would not pay */
		struct model_batch b = { .n_tokens = nr,
			                 .tokens = tokens,
			                 .pos = pos,
			                 .seqs = seqs,
			                 .n_out = no,
			                 .out_rows = outr,
			                 .logits = d->logits };
		double t = engine_now_ms();
		int rc = model_forward(d->m, &b, err);
		if (rc) return rc;
		double ms = engine_now_ms() - t;
		fwd_cost_note(&d->fwd, nr, ms);
		if (nr == 1) d->one_ms = d->one_ms > 0 ? 0.7 * d->one_ms + 0.3 * ms : ms;
		no = 0;
		for (int i = 0; i < n; i++) {
			struct draft_job *j = &jobs[i];
			if (!going[i] || r >= j->k) continue;
			const float *lg = d->logits + (size_t)no++ * (size_t)d->n_vocab;
			if (!j->smp) {
				j->out[r] = sample_greedy(lg, d->n_vocab);
				/* kept only if its chance pays for its row; one more
				 * only if that chance times alpha pays for a forward */
				uint8_t cls = conf_class(lg, d->n_vocab, j->out[r]);
				if (j->conf) j->conf[r] = cls;
				reach[i] *= conf_alpha(d, cls);
				/* a probe checks its token whatever the costs say: it
				 * is how they and alpha are learned again (cut here, a
				 * row's cost once learned too high was never learned
				 * back, and a pair at 70% drafted nothing) */
				if (reach[i] < d->row_tokens && !(d->probing && r == 0)) {
					going[i] = false;
					continue;
				}
				j->got = r + 1;
				if (reach[i] * alpha < d->row_tokens + d->fwd_tokens)
					going[i] = false;
			} else {
				/* the law over the model's tokens: 0 on its padding */
				float *q = j->q + (size_t)r * (size_t)d->n_law;
				if (d->n_law > d->n_vocab)
					lg = memcpy(d->padded, lg, (size_t)d->n_vocab * sizeof *lg);
				sampler_probs(j->smp, lg, q);
				int32_t t2 = sampler_pick(j->smp, q);
				j->out[r] = t2 >= 0 ? t2 : sample_greedy(lg, d->n_vocab);
				j->got = r + 1;
			}
		}
	}
	return 0;
}

/* ---- how many ---- */

void draft_note(struct draft *d, const uint8_t *conf, int32_t tried, int32_t kept)
{
	if (tried <= 0) return;
	if (kept > 0)
		d->probe_after = DRAFT_PROBE;
	else if (d->probing && d->probe_after < DRAFT_PROBE_MAX)
		d->probe_after *= 2;
	d->probing = false;
	for (int32_t i = 0; i < tried; i++) {
		d->kept = DRAFT_FADE * d->kept + (i < kept);
		d->tried = DRAFT_FADE * d->tried + 1;
		if (!conf || conf[i] >= DRAFT_CONF) continue;
		d->ckept[conf[i]] = DRAFT_FADE * d->ckept[conf[i]] + (i < kept);
		d->ctried[conf[i]] = DRAFT_FADE * d->ctried[conf[i]] + 1;
	}
}

double draft_alpha(const struct draft *d)
{
	return (d->kept + DRAFT_PRIOR_KEPT) / (d->tried + DRAFT_PRIOR_TRIED);
}

static double draft_cost_ms(const struct draft *d, int32_t rows, double target_one_ms,
                            double target_ms_per_row)
{
	double one = d->one_ms > 0 ? d->one_ms : target_one_ms * d->ratio;
	return fwd_cost_ms(&d->fwd, rows, one, target_ms_per_row * d->ratio);
}

int32_t draft_choose(struct draft *d, const struct draft_plan *pl)
{
	double alpha = draft_alpha(d);
	int32_t best = 0;
	double best_rate = pl->cost[pl->rows] > 0 ? pl->tokens / pl->cost[pl->rows] : 0;
	if (best_rate <= 0) return pl->room[0] < 4 ? pl->room[0] : 4; /* nothing measured yet */
	/* drafting must promise DRAFT_MARGIN more than a plain step: the costs
	 * are estimates on a machine whose load moves, and a step that drafts
	 * for nothing is slower than plain decoding */
	best_rate *= 1 + DRAFT_MARGIN;
	for (int32_t k = 1; k <= ENGINE_DRAFT_MAX; k++) {
		/* candidates in order take up to k rows each while the step has room */
		int32_t left = pl->budget, added = 0, users = 0;
		double gain = 0;
		for (int i = 0; i < pl->n; i++) {
			int32_t ki = k < pl->room[i] ? k : pl->room[i];
			if (ki > left) ki = left;
			if (ki <= 0) continue;
			left -= ki, added += ki, users++;
			double ak = 1;
			for (int32_t j = 0; j < ki; j++) ak *= alpha, gain += pl->reach[i] * ak;
		}
		if (!added) break;
		if (pl->cost[pl->rows + added] <= 0) break;
		/* A width's cost is learned only from steps of that width, so
		 * under a moving load a wider step can look cheaper than the
		 * plain one (then a draft that agreed on 15-34% of tokens drafted
		 * in a quarter to two thirds of the steps, x0.85-0.90 plain): it
		 * costs at least what the plain step does. (A floor of 4-8% of the
		 * step a row cost 3-7% of the speed-up on a quiet machine; one of
		 * the draft's share of the weight bytes a drafting forward is no
		 * floor for small models, whose forwards are not bound by bytes.) */
		double c = fmax(pl->cost[pl->rows + added], pl->cost[pl->rows]) +
		           k * draft_cost_ms(d, users, pl->cost[1], pl->ms_per_row);
		double rate = (pl->tokens + gain) / c;
		if (rate > best_rate * (1 + 1e-9)) best = k, best_rate = rate;
	}
	/* The costs draft_run weighs each greedy draft against, in tokens at
	 * the plain step's rate: a row more of the target's step, and a
	 * drafting forward. */
	double ms_per_token = pl->cost[pl->rows] / pl->tokens;
	double row_ms = pl->cost[pl->rows + 1] - pl->cost[pl->rows];
	d->row_tokens = (row_ms > 0 ? row_ms : 0) / ms_per_token;
	d->fwd_tokens = draft_cost_ms(d, 1, pl->cost[1], pl->ms_per_row) / ms_per_token;
	if (best == 0 && ++d->idle >= d->probe_after) best = 1, d->probing = true;
	if (best) d->idle = 0;
	return best;
}
