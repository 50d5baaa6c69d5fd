/*
 * lookup.c - prompt-lookup decoding's drafts: where they come from (the
 * candidate's own context), and how many of them a step should check.
 *
 * A draft is worth checking only when what it saves pays for the wider
 * step: with a chance p that each drafted token is the one the model would
 * choose (geometric: a draft is kept up to its first miss), k drafted tokens
 * yield 1 + p + ... + p^k tokens for a forward of one row more per token.
 * On a CPU a forward of 4 rows costs 1.2-2x one row (the weights stream
 * once; the arithmetic and attention grow), so short n-gram matches, which
 * are mostly wrong, would make decoding slower than without drafts. p is
 * learned per match length, and after a hit or a miss, from every step:
 * a draft that was not checked is still compared with the token chosen
 * next, so learning costs no wider steps.
 *
 * On text that does not repeat, lookup must cost nothing (it is on by
 * default): a draft must promise LOOKUP_MARGIN more than the plain step,
 * each row it adds is priced at least LOOKUP_ROW_FLOOR of that step (the
 * learned costs of different widths were sampled under different loads, and
 * can make a wide step look free), and a candidate whose draft missed at
 * once backs off (struct lookup_gate) until a draft's first token is right.
 */
#include "engine_internal.h"

/* Token i of the candidate's context: the prompt, then what it chose. */
static inline int32_t ctx_at(const int32_t *prompt, int32_t L, const int32_t *gen, int32_t i)
{
	return i < L ? prompt[i] : gen[i - L];
}

int32_t lookup_draft_find(const int32_t *prompt, int32_t L, const int32_t *gen, int32_t n_gen,
                          int32_t kmax, int32_t *out, int32_t *ngram)
{
	int32_t total = L + n_gen;
	*ngram = 0;
	for (int32_t n = LOOKUP_NGRAM; n >= 1 && kmax > 0; n--) {
		if (n >= total) continue;
		/* The occurrence ends at j (< total - 1: not the key itself) and
		 * must leave at least one token after it. */
		for (int32_t j = total - 2; j >= n - 1; j--) {
			int32_t k = 0;
			while (k < n && ctx_at(prompt, L, gen, j - k) ==
			                        ctx_at(prompt, L, gen, total - 1 - k))
				k++;
			if (k < n) continue;
			int32_t m = 0;
			while (m < kmax && j + 1 + m < total) {
				out[m] = ctx_at(prompt, L, gen, j + 1 + m);
				m++;
			}
			*ngram = n;
			return m;
		}
	}
	return 0;
}

/* Counts fade by this much per draft checked, so p follows the document:
 * a file that repeats itself, then one that does not. */
#define LOOKUP_FADE        0.95
/* Before any draft of a length was checked: p = 1/2, worth two drafts. */
#define LOOKUP_PRIOR_KEPT  1.0
#define LOOKUP_PRIOR_TRIED 2.0

static void count(struct lookup_stats *st, int32_t ngram, bool after_hit, double kept, double tried)
{
	st->kept[after_hit][ngram] = LOOKUP_FADE * st->kept[after_hit][ngram] + kept;
	st->tried[after_hit][ngram] = LOOKUP_FADE * st->tried[after_hit][ngram] + tried;
}

void lookup_note(struct lookup_stats *st, int32_t ngram, bool after_hit, int32_t drafted,
                 int32_t kept)
{
	if (ngram < 1 || ngram > LOOKUP_NGRAM || drafted <= 0) return;
	count(st, ngram, after_hit, kept > 0, 1);
	/* the tokens after a kept one were drafted after a hit; the tokens
	 * after the first miss were never tested (their row saw a wrong input) */
	if (kept > 0) count(st, ngram, true, kept - 1, kept - 1 + (kept < drafted));
}

double lookup_p(const struct lookup_stats *st, int32_t ngram, bool after_hit)
{
	if (ngram < 1 || ngram > LOOKUP_NGRAM) return 0;
	return (st->kept[after_hit][ngram] + LOOKUP_PRIOR_KEPT) /
	       (st->tried[after_hit][ngram] + LOOKUP_PRIOR_TRIED);
}

/* The gain over the plain step a draft must promise. */
#define LOOKUP_MARGIN      0.05
/* The least a row more costs, as a share of the step it widens (a forward
 * of 1 + 3 rows measured 1.3x one row: ~0.1 a row). */
#define LOOKUP_ROW_FLOOR   0.04
/* The longest a candidate's back-off closes it, in steps. */
#define LOOKUP_BACKOFF_MAX 16

int32_t lookup_choose(double p, int32_t m, double tokens, int32_t rows, const double *cost)
{
	/* tokens per ms of the step with k drafts, k = 0..m; the smallest k of
	 * the best wins (a tie is not worth the wider step) */
	if (cost[rows] <= 0) return 0;
	int32_t best = 0;
	double best_rate = tokens / cost[rows] * (1 + LOOKUP_MARGIN), gain = 0, pk = 1;
	for (int32_t k = 1; k <= m; k++) {
		pk *= p;
		gain += pk;
		double c = cost[rows + k], least = cost[rows] * (1 + LOOKUP_ROW_FLOOR * k);
		if (c <= 0) break;
		double rate = (tokens + gain) / (c > least ? c : least);
		if (rate > best_rate * (1 + 1e-9)) best = k, best_rate = rate;
	}
	return best;
}

bool lookup_gate_open(struct lookup_gate *g)
{
	if (g->wait <= 0) return true;
	g->wait--;
	return false;
}

void lookup_gate_note(struct lookup_gate *g, bool checked, bool first_kept)
{
	if (first_kept) {
		g->wait = g->backoff = 0;
		return;
	}
	if (!checked) return;
	g->backoff = g->backoff <= 0 ? 1 : g->backoff * 2;
	if (g->backoff > LOOKUP_BACKOFF_MAX) g->backoff = LOOKUP_BACKOFF_MAX;
	g->wait = g->backoff;
}
