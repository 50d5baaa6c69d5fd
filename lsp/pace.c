/*
 * pace.c - the typing pace and its deadline (pace.h).
 */
#include "pace.h"

#include <string.h>

static double median(const double *v, size_t n)
{
	double s[PACE_SAMPLES];
	memcpy(s, v, n * sizeof *s);
	for (size_t i = 1; i < n; i++) /* insertion sort: at most 8 */
		for (size_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
			double t = s[j];
			s[j] = s[j - 1], s[j - 1] = t;
		}
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

double pace_note(struct pace *p, uint64_t now_ns, bool typing)
{
	uint64_t last = p->last_ns;
	p->last_ns = typing ? now_ns : 0;
	if (!typing || !last || now_ns <= last) return 0;
	double gap = (double)(now_ns - last) / 1e6;
	if (gap > PACE_BURST_MS) return 0;
	p->gap_ms[p->next] = gap;
	p->next = (p->next + 1) % PACE_SAMPLES;
	if (p->n < PACE_SAMPLES) p->n++;
	if (p->n < PACE_MIN_SAMPLES) return 0;
	double due = PACE_SHARE * median(p->gap_ms, p->n);
	return due >= PACE_FLOOR_MS ? due : 0;
}
