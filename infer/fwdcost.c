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
 *
 * Each count's cost is learned at a scale every forward moves: a count seen
 * only while the machine was quiet must not look cheaper, now that it is
 * busy, than the one-row steps that ran since (a two-row step learned at a
 * quiet moment once priced below the plain step learned under load, and
 * made drafts that were mostly wrong look free). For the same reason no
 * count is priced below a smaller one.
 */
#include <math.h>

#include "engine_internal.h"

/* Weight of the newest sample in the scale: the estimate follows the
 * machine's load within a few forwards. */
#define FWD_ALPHA 0.3
/* ... and in a count's cost relative to the others, which load does not
 * change; one sample moves it at most FWD_CLIP times (a change of load
 * between the two forwards of a pair must not undo what many pairs learned) */
#define FWD_BETA  0.3
#define FWD_CLIP  1.25

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
	if (c->scale <= 0) c->scale = 1, c->unit = b;
	if (c->ms[b] <= 0) {
		c->ms[b] = v / c->scale;
	} else {
		/* A count's cost relative to another is learned only from a
		 * forward of the other just before it, at about the same load:
		 * learned against the scale, it drifted with each change of load
		 * during a run of one count (the first one seen is the unit) */
		int a = c->last - 1;
		if (a >= 0 && a != b && b != c->unit) {
			double s = c->ms[a] * v / c->last_v;
			s = fmin(fmax(s, c->ms[b] / FWD_CLIP), c->ms[b] * FWD_CLIP);
			c->ms[b] = (1 - FWD_BETA) * c->ms[b] + FWD_BETA * s;
		}
		c->scale = (1 - FWD_ALPHA) * c->scale + FWD_ALPHA * v / c->ms[b];
	}
	c->last = b + 1, c->last_v = v;
}

/* A bucket's learned value now (0: not seen). */
static double seen(const struct fwd_cost *c, int b)
{
	return c->ms[b] > 0 ? c->ms[b] * c->scale : 0;
}

/* The estimate for n rows from the buckets alone, before the floor of the
 * smaller counts. */
static double estimate(const struct fwd_cost *c, int32_t n, double one_ms, double ms_per_row)
{
	int b = bucket(n);
	if (b >= 0 && c->ms[b] > 0) return b < FWD_EACH_MAX ? seen(c, b) : seen(c, b) * n;
	double one = c->ms[0] > 0 ? seen(c, 0) : one_ms;
	if (n > FWD_EACH_MAX) return one + (n - 1) * ms_per_row;
	/* calibration times 1, 3 and 6 rows; decode steps bring the others in */
	int32_t lo = 1, hi = 0;
	double lo_ms = one;
	for (int32_t k = n - 1; k > 1; k--)
		if (c->ms[k - 1] > 0) {
			lo = k, lo_ms = seen(c, k - 1);
			break;
		}
	for (int32_t k = n + 1; k <= FWD_EACH_MAX; k++)
		if (c->ms[k - 1] > 0) {
			hi = k;
			break;
		}
	if (!hi) return lo_ms + (n - lo) * ms_per_row;
	return lo_ms + (seen(c, hi - 1) - lo_ms) * (n - lo) / (hi - lo);
}

double fwd_cost_ms(const struct fwd_cost *c, int32_t n, double one_ms, double ms_per_row)
{
	if (n <= 0) return 0;
	/* past FWD_SMALL_MAX the estimate only grows with n */
	int32_t below = n <= FWD_SMALL_MAX ? n - 1 : FWD_SMALL_MAX;
	double ms = estimate(c, n, one_ms, ms_per_row);
	for (int32_t k = 1; k <= below; k++) ms = fmax(ms, estimate(c, k, one_ms, ms_per_row));
	return ms;
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

double fwd_cost_load(const struct fwd_cost *c)
{
	return c->scale > 0 ? c->scale : 1;
}
