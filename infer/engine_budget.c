/*
 * engine_budget.c - the prefill budget: a prompt whose uncached part would
 * not be prefilled before the deadline (engine_request.fit_deadline) is
 * answered from a shorter one, its suffix cut first, else the short context
 * trimmed to fit (engine_budget_fit); and engine_calibrate, which measures
 * the rates the budget needs before the first job. The rates are learned as
 * jobs run in engine.c (prefill chunks, decode steps) and fwdcost.c (small
 * forwards); engine.c's engine_run calls the budget before its prefill.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

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
	if (e->p.reuse_shifted_suffix && m <= fp->tail_start && engine_recent_find(e, fp))
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
int engine_budget_fit(struct engine *e, const struct engine_request *req, struct fim_prompt *fp,
                      struct engine_result *res, struct infill_error *err)
{
	double mpt = engine_ms_per_token(e);
	if (!req->fit_deadline || req->deadline_ms <= 0 || mpt <= 0) return 0;
	double left = req->deadline_ms - engine_now_ms() -
	              e->p.decode_reserve_steps * engine_fwd_cost(e, req->n_candidates);
	int32_t allowed = engine_fwd_fit(e, left, fp->n);
	int32_t reuse = reusable(e, req, fp);
	int32_t uncached = fp->n - reuse;
	res->full_uncached = uncached;
	res->estimated_prefill_ms = engine_fwd_cost(e, uncached);
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
