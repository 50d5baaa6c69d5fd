/*
 * sample.c - choosing the next token from logits: greedy, temperature,
 * top-k, top-p (nucleus), repetition penalty, with a seeded generator so a
 * run can be reproduced. A sampler owns scratch arrays of n_vocab entries,
 * so sampling allocates nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"

int32_t sample_greedy(const float *logits, int32_t n_vocab)
{
	int32_t best = 0;
	for (int32_t i = 1; i < n_vocab; i++)
		if (logits[i] > logits[best]) best = i;
	return best;
}

double sample_logsumexp(const float *logits, int32_t n_vocab)
{
	float mx = logits[sample_greedy(logits, n_vocab)];
	double s = 0;
	for (int32_t i = 0; i < n_vocab; i++) s += exp((double)logits[i] - mx);
	return mx + log(s);
}

struct sampler {
	struct sampler_params p;
	int32_t n_vocab;
	uint64_t rng;
	float *work;  /* [n_vocab] modified logits */
	int32_t *idx; /* [n_vocab] candidate ids */
};

struct sampler *sampler_new(const struct sampler_params *p, int32_t n_vocab)
{
	struct sampler *s = calloc(1, sizeof *s);
	if (!s) return NULL;
	s->p = *p;
	s->n_vocab = n_vocab;
	s->work = malloc((size_t)n_vocab * sizeof *s->work);
	s->idx = malloc((size_t)n_vocab * sizeof *s->idx);
	if (!s->work || !s->idx) {
		sampler_free(s);
		return NULL;
	}
	sampler_seed(s, p->seed);
	return s;
}

void sampler_free(struct sampler *s)
{
	if (!s) return;
	free(s->work);
	free(s->idx);
	free(s);
}

void sampler_seed(struct sampler *s, uint64_t seed)
{
	s->rng = seed ^ 0x9E3779B97F4A7C15ull;
	if (!s->rng) s->rng = 1;
}

/* xorshift64*: a uniform float in [0, 1). */
static float rng_uniform(struct sampler *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	uint64_t r = s->rng * 0x2545F4914F6CDD1Dull;
	return (float)(r >> 40) / 16777216.0f;
}

/* Moves the k largest of work[idx[0..n)] to the front of idx, in descending order. */
static void partial_sort(const float *work, int32_t *idx, int32_t n, int32_t k)
{
	/* Selection by repeated max: O(n k), fine for the k <= 100 samplers use. */
	for (int32_t i = 0; i < k && i < n; i++) {
		int32_t best = i;
		for (int32_t j = i + 1; j < n; j++)
			if (work[idx[j]] > work[idx[best]]) best = j;
		int32_t t = idx[i];
		idx[i] = idx[best];
		idx[best] = t;
	}
}

/* The tokens sampling chooses among, from s->work (the scaled logits) and
 * s->idx (0..n-1): sorts their head into s->idx and returns how many, with
 * the largest logit (*mx) and their unnormalised mass (*kept_mass, the sum
 * of exp(work - mx)). top_k cuts first; top-p then keeps the smallest
 * prefix, in descending order, whose mass reaches top_p. Only the first 64
 * are sorted when top_k is off, so a nucleus wider than that keeps
 * everything (sampling itself is order-free). */
static int32_t nucleus(struct sampler *s, float *mx, double *kept_mass)
{
	int32_t n = s->n_vocab, m = n;
	if (s->p.top_k > 0 && s->p.top_k < n) {
		partial_sort(s->work, s->idx, n, s->p.top_k);
		m = s->p.top_k;
	} else {
		partial_sort(s->work, s->idx, n, n < 64 ? n : 64);
	}
	*mx = s->work[s->idx[0]];
	double sum = 0;
	for (int32_t i = 0; i < m; i++) sum += exp((double)s->work[s->idx[i]] - *mx);
	int32_t sorted = m < n ? m : (n < 64 ? n : 64);
	*kept_mass = sum;
	if (s->p.top_p > 0 && s->p.top_p < 1) {
		double acc = 0;
		for (int32_t i = 0; i < sorted; i++) {
			acc += exp((double)s->work[s->idx[i]] - *mx);
			if (acc / sum >= s->p.top_p) {
				*kept_mass = acc;
				return i + 1;
			}
		}
	}
	return m;
}

int32_t sampler_sample(struct sampler *s, const float *logits, const int32_t *history,
                       int32_t n_history, float *logprob)
{
	int32_t n = s->n_vocab, pick;
	if (s->p.temperature <= 0) {
		pick = sample_greedy(logits, n);
	} else {
		memcpy(s->work, logits, (size_t)n * sizeof *s->work);
		if (s->p.repeat_penalty > 0 && s->p.repeat_penalty != 1.0f && history) {
			int32_t from = n_history - s->p.repeat_last_n;
			if (s->p.repeat_last_n <= 0 || from < 0) from = 0;
			for (int32_t i = from; i < n_history; i++) {
				int32_t t = history[i];
				if (t < 0 || t >= n) continue;
				/* Penalise each id once even if it repeats: compare with the original. */
				if (s->work[t] != logits[t]) continue;
				s->work[t] = s->work[t] > 0 ? s->work[t] / s->p.repeat_penalty
				                            : s->work[t] * s->p.repeat_penalty;
			}
		}
		for (int32_t i = 0; i < n; i++) {
			s->work[i] /= s->p.temperature;
			s->idx[i] = i;
		}
		float mx;
		double kept_mass;
		int32_t keep = nucleus(s, &mx, &kept_mass);
		double r = rng_uniform(s) * kept_mass, acc = 0;
		pick = s->idx[keep - 1];
		for (int32_t i = 0; i < keep; i++) {
			acc += exp((double)s->work[s->idx[i]] - mx);
			if (acc > r) {
				pick = s->idx[i];
				break;
			}
		}
	}
	if (logprob) *logprob = (float)((double)logits[pick] - sample_logsumexp(logits, n));
	return pick;
}

/* ---- the distribution itself, for speculative sampling ---- */

float sampler_uniform(struct sampler *s)
{
	return rng_uniform(s);
}

void sampler_probs(struct sampler *s, const float *logits, float *probs)
{
	int32_t n = s->n_vocab;
	if (s->p.temperature <= 0) {
		memset(probs, 0, (size_t)n * sizeof *probs);
		probs[sample_greedy(logits, n)] = 1;
		return;
	}
	/* the same steps as sampler_sample (no repetition penalty: no history),
	 * so that the mass each token gets is the chance sampler_sample picks it */
	for (int32_t i = 0; i < n; i++) {
		s->work[i] = logits[i] / s->p.temperature;
		s->idx[i] = i;
	}
	float mx;
	double kept_mass;
	int32_t keep = nucleus(s, &mx, &kept_mass);
	memset(probs, 0, (size_t)n * sizeof *probs);
	for (int32_t i = 0; i < keep; i++)
		probs[s->idx[i]] = (float)(exp((double)s->work[s->idx[i]] - mx) / kept_mass);
}

int32_t sampler_pick(struct sampler *s, const float *weights)
{
	int32_t n = s->n_vocab, last = -1;
	double total = 0;
	for (int32_t i = 0; i < n; i++)
		if (weights[i] > 0) total += weights[i], last = i;
	if (last < 0) return -1;
	double r = rng_uniform(s) * total, acc = 0;
	for (int32_t i = 0; i < n; i++) {
		if (weights[i] <= 0) continue;
		acc += weights[i];
		if (acc > r) return i;
	}
	return last;
}

int32_t sampler_spec_take(struct sampler *s, const float *p, const float *q, int32_t d,
                          float *residual)
{
	/* accepted with min(1, p/q): a token the target favours more than the
	 * draft always stays; the others stay in the ratio */
	float u = rng_uniform(s);
	if (q[d] > 0 && (double)u * q[d] < p[d]) return d;
	int32_t n = s->n_vocab;
	for (int32_t i = 0; i < n; i++) residual[i] = p[i] > q[i] ? p[i] - q[i] : 0;
	int32_t t = sampler_pick(s, residual);
	/* p == q everywhere (rounding): the residual is empty; p itself is then
	 * the right law */
	return t >= 0 ? t : sampler_pick(s, p);
}
