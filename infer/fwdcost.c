/*
 * fwdcost.c - what a forward of n rows costs, for the deadline's budgets.
 *
 * Not n times a rate: on a CPU a forward streams every weight once whatever
 * it carries, so a few rows cost about one row's time plus the arithmetic of
 * the rest (on an AVX2 host with the 1.3B Q4_0 model: 42 ms for 1 row, ~70
 * for 3, ~180 for 6, 15 per row in chunks of 64). Small batches are learned
 * by their row count from the forwards that ran (decode steps, keystrokes'
 * prefill, calibration); a count not seen yet is read off the line between
 * its seen neighbours, large ones are one row's time plus the chunk rate
 * per further row.
 */
#include "engine_internal.h"

/* Weight of the newest sample: the estimate follows the machine's load
 * within a few forwards. */
#define FWD_ALPHA 0.3

/* 1..FWD_EACH_MAX rows: one bucket each (ms); up to FWD_SMALL_MAX: ms per row. */
static int bucket(int32_t n)
{
	return n <= 0               ? -1
	       : n <= FWD_EACH_MAX  ? (int)n - 1
	       : n <= FWD_SMALL_MAX ? FWD_EACH_MAX
	                            : -1;
}

void fwd_cost_note(struct fwd_cost *c, int32_t n, double ms)
{
	int b = bucket(n);
	if (b < 0 || ms <= 0) return;
	double v = b < FWD_EACH_MAX ? ms : ms / n;
	c->ms[b] = c->ms[b] > 0 ? (1 - FWD_ALPHA) * c->ms[b] + FWD_ALPHA * v : v;
}

double fwd_cost_ms(const struct fwd_cost *c, int32_t n, double one_ms, double ms_per_row)
{
	if (n <= 0) return 0;
	int b = bucket(n);
	if (b >= 0 && c->ms[b] > 0) return b < FWD_EACH_MAX ? c->ms[b] : c->ms[b] * n;
	double one = c->ms[0] > 0 ? c->ms[0] : one_ms;
	if (n > FWD_EACH_MAX) return one + (n - 1) * ms_per_row;
	/* calibration times 1, 3 and 6 rows; decode steps bring the others in */
	int32_t lo = 1, hi = 0;
	double lo_ms = one;
	for (int32_t k = n - 1; k > 1; k--)
		if (c->ms[k - 1] > 0) {
			lo = k, lo_ms = c->ms[k - 1];
			break;
		}
	for (int32_t k = n + 1; k <= FWD_EACH_MAX; k++)
		if (c->ms[k - 1] > 0) {
			hi = k;
			break;
		}
	if (!hi) return lo_ms + (n - lo) * ms_per_row;
	return lo_ms + (c->ms[hi - 1] - lo_ms) * (n - lo) / (hi - lo);
}

int32_t fwd_cost_fit(const struct fwd_cost *c, double left, int32_t cap, double one_ms,
                     double ms_per_row)
{
	if (left <= 0 || cap <= 0) return 0;
	if (fwd_cost_ms(c, cap, one_ms, ms_per_row) <= left) return cap;
	int32_t lo = 0, hi = cap; /* lo rows fit, hi do not */
	while (hi - lo > 1) {
		int32_t mid = lo + (hi - lo) / 2;
		if (fwd_cost_ms(c, mid, one_ms, ms_per_row) <= left)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

double fwd_cost_next(const struct fwd_cost *c, double last_ms, int32_t last_n, int32_t n,
                     double one_ms, double ms_per_row)
{
	double want = fwd_cost_ms(c, n, one_ms, ms_per_row);
	double was = fwd_cost_ms(c, last_n, one_ms, ms_per_row);
	if (last_ms <= 0 || was <= 0) return want;
	return last_ms * want / was;
}
