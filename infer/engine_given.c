/*
 * engine_given.c - scoring the candidates the pipeline hands in
 * (engine_request.given: lines of the document and of other files that
 * continue the cursor's line). Each text, healed bytes first, is forced
 * through the model after the prompt in one batched forward of forked
 * sequences, so it is ranked by the same log-probabilities as a decoded
 * candidate (engine.c), at about prefill's cost instead of decode steps'.
 * engine.c's engine_run calls it between prefill and decode; the prefill
 * budget is its neighbour engine_budget.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

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
 * spell (as engine.c's cand_step scores a decoded token), *heal_done advanced. */
static double given_token_lp(struct engine *e, const float *lg, int32_t tok,
                             const struct fim_prompt *fp, size_t *heal_done)
{
	if (*heal_done < fp->heal_len) {
		lg = engine_heal_mask(e, lg, fp->heal + *heal_done, fp->heal_len - *heal_done);
		*heal_done += e->off[tok + 1] - e->off[tok];
	}
	return (double)lg[tok] - (double)sample_logsumexp(lg, e->n_vocab);
}

/*
 * Encodes the first ng given texts, each after the healed bytes, into
 * ids[g * cap ..] ([ng][cap]); count[g] is its token count, left 0 for an
 * empty text or one longer than cap (it is not scored). Returns the total
 * of the counts, or a negative code.
 */
static int32_t given_encode(struct engine *e, const struct engine_request *req,
                            const struct fim_prompt *fp, size_t ng, int32_t cap, int32_t *ids,
                            int32_t *count)
{
	char *buf = NULL;
	int32_t total = 0;
	int rc = 0;
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
	free(buf);
	return rc ? rc : total;
}

/*
 * Their forward costs about as much per token as prefill (a few document
 * lines: tens of tokens, hundreds of ms on a CPU with a 1B model), so under
 * a deadline only those that fit before it, less a decode step, are scored,
 * in the order given (the document's lines first). Zeroes count[g] of the
 * others, counts them in res->given_dropped, and returns the tokens kept.
 */
static int32_t given_fit_deadline(struct engine *e, const struct engine_request *req, size_t ng,
                                  int32_t *count, int32_t total, struct engine_result *res)
{
	if (req->deadline_ms <= 0 || engine_ms_per_token(e) <= 0) return total;
	double left = req->deadline_ms - engine_now_ms() - engine_fwd_cost(e, req->n_candidates);
	int32_t fit = engine_fwd_fit(e, left, total), kept = 0;
	for (size_t g = 0; g < ng; g++) {
		if (count[g] && kept + count[g] > fit) {
			count[g] = 0;
			res->given_dropped++;
		}
		kept += count[g];
	}
	return kept;
}

/*
 * One forward of every counted text's total tokens, each on its own fork
 * of seq (fork[g], owned by the caller, who frees them) at positions L..,
 * with logits for every row into lg ([total][n_vocab], in text order).
 * 0 or a negative code.
 */
static int given_forward(struct engine *e, const int32_t *ids, const int32_t *count, size_t ng,
                         int32_t cap, int32_t L, int32_t total, struct kv_seq *seq,
                         struct kv_seq **fork, float *lg, struct infill_error *err)
{
	int32_t *pos = malloc((size_t)total * sizeof *pos);
	int32_t *rows = malloc((size_t)total * sizeof *rows);
	struct kv_seq **seqs = malloc((size_t)total * sizeof *seqs);
	int32_t *tok = malloc((size_t)total * sizeof *tok);
	int rc = pos && rows && seqs && tok ? 0 : -ENOMEM;
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
	free(tok), free(pos), free(rows), free(seqs);
	return rc;
}

/* The log-probability of text t[0..n) after the prompt: its first token
 * under the prompt's row, each next one under its predecessor's row of lg
 * ([n - 1][n_vocab] used), healed bytes masked as a decode would. */
static double given_text_lp(struct engine *e, const struct fim_prompt *fp, const int32_t *t,
                            int32_t n, const float *lg)
{
	const float *prompt_lg = e->logits + (size_t)STEP_ROWS * (size_t)e->n_vocab;
	size_t heal_done = 0;
	double sum = given_token_lp(e, prompt_lg, t[0], fp, &heal_done);
	for (int32_t j = 1; j < n; j++)
		sum += given_token_lp(e, lg + (size_t)(j - 1) * (size_t)e->n_vocab, t[j], fp,
		                      &heal_done);
	return sum;
}

/*
 * Scores req->given after the prompt in seq (last logits in the prompt row):
 * every text (healed bytes first) forced through the model in one batch of
 * forked sequences, logits for all its rows. Fills out[0..*n_out) with a
 * candidate per text that fits max_tokens (texts owned by the caller then).
 * 0 or a negative code.
 */
int engine_given_score(struct engine *e, const struct engine_request *req,
                       const struct fim_prompt *fp, struct kv_seq *seq,
                       struct engine_candidate *out, int *n_out, struct engine_result *res,
                       struct infill_error *err)
{
	size_t ng = req->n_given < ENGINE_MAX_GIVEN ? req->n_given : ENGINE_MAX_GIVEN;
	int32_t cap = req->max_tokens;
	int32_t *ids = calloc(ng * (size_t)cap + 1, sizeof *ids);
	int32_t count[ENGINE_MAX_GIVEN] = { 0 };
	struct kv_seq *fork[ENGINE_MAX_GIVEN] = { 0 };
	float *lg = NULL;
	int rc = ids ? 0 : -ENOMEM;
	int32_t total = 0;
	if (!rc) {
		total = given_encode(e, req, fp, ng, cap, ids, count);
		if (total < 0) rc = total, total = 0;
	}
	if (!rc) total = given_fit_deadline(e, req, ng, count, total, res);
	if (!rc && total) {
		lg = malloc((size_t)total * (size_t)e->n_vocab * sizeof *lg);
		rc = lg ? given_forward(e, ids, count, ng, cap, fp->n, total, seq, fork, lg, err)
		        : -ENOMEM;
	}
	*n_out = 0;
	int32_t at = 0;
	for (size_t g = 0; g < ng && !rc && total; g++) {
		if (!count[g]) continue;
		double sum = given_text_lp(e, fp, ids + (size_t)g * (size_t)cap, count[g],
		                           lg + (size_t)at * (size_t)e->n_vocab);
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
	free(ids), free(lg);
	return rc;
}

/* Moves the scored given candidates to the end of res (their texts with them). */
int engine_given_append(struct engine_result *res, struct engine_candidate *given, int n)
{
	struct engine_candidate *all =
	        realloc(res->candidates, ((size_t)res->n_candidates + (size_t)n) * sizeof *all);
	if (!all) return -ENOMEM;
	memcpy(all + res->n_candidates, given, (size_t)n * sizeof *all);
	res->candidates = all;
	res->n_candidates += n;
	return 0;
}
