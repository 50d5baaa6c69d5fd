/*
 * quant_internal.h - private to kernels/: the per-type reference row
 * converters (quant_q32.c, quant_k.c) that quant.c's type table points at,
 * and the small rounding helpers their quantizers share. nb counts blocks;
 * layouts are in quant.h.
 */
#ifndef INFILL_KERNELS_QUANT_INTERNAL_H
#define INFILL_KERNELS_QUANT_INTERNAL_H

#include <math.h>
#include <stdint.h>

void quant_dequant_q4_0(const void *src, float *y, int64_t nb);
void quant_dequant_q4_1(const void *src, float *y, int64_t nb);
void quant_dequant_q5_0(const void *src, float *y, int64_t nb);
void quant_dequant_q5_1(const void *src, float *y, int64_t nb);
void quant_dequant_q8_0(const void *src, float *y, int64_t nb);
void quant_dequant_q2_k(const void *src, float *y, int64_t nb);
void quant_dequant_q3_k(const void *src, float *y, int64_t nb);
void quant_dequant_q4_k(const void *src, float *y, int64_t nb);
void quant_dequant_q5_k(const void *src, float *y, int64_t nb);
void quant_dequant_q6_k(const void *src, float *y, int64_t nb);
void quant_dequant_iq4_nl(const void *src, float *y, int64_t nb);
void quant_dequant_iq4_xs(const void *src, float *y, int64_t nb);

void quant_quant_q4_0(const float *x, void *dst, int64_t nb);
void quant_quant_q4_1(const float *x, void *dst, int64_t nb);
void quant_quant_q5_0(const float *x, void *dst, int64_t nb);
void quant_quant_q5_1(const float *x, void *dst, int64_t nb);
void quant_quant_q8_0(const float *x, void *dst, int64_t nb);
void quant_quant_q2_k(const float *x, void *dst, int64_t nb);
void quant_quant_q3_k(const float *x, void *dst, int64_t nb);
void quant_quant_q4_k(const float *x, void *dst, int64_t nb);
void quant_quant_q5_k(const float *x, void *dst, int64_t nb);
void quant_quant_q6_k(const float *x, void *dst, int64_t nb);
void quant_quant_iq4_nl(const float *x, void *dst, int64_t nb);
void quant_quant_iq4_xs(const float *x, void *dst, int64_t nb);

/* Sub-block s (0..7) of an IQ4_XS block: its scale minus 32 (-32..31). */
int quant_iq4_xs_scale(const void *block, int s);

static inline int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Round half away from zero; x must fit an int (callers bound it by a scale). */
static inline int round_int(float x)
{
	return (int)(x + (x >= 0.0f ? 0.5f : -0.5f));
}

static inline void minmax(const float *x, int n, float *lo, float *hi)
{
	*lo = *hi = x[0];
	for (int j = 1; j < n; j++) *lo = fminf(*lo, x[j]), *hi = fmaxf(*hi, x[j]);
}

/* The value of largest magnitude (the first of ties), with its sign. */
static inline float signed_max(const float *x, int n)
{
	float amax = 0.0f, m = 0.0f;
	for (int j = 0; j < n; j++)
		if (fabsf(x[j]) > amax) amax = fabsf(x[j]), m = x[j];
	return m;
}

/* Nearest of the 16 IQ4 levels to x / d. */
static inline int iq4_nearest(float x, float d)
{
	if (d == 0.0f) return 8; /* level 1: the smallest */
	float v = x / d, best = INFINITY;
	int k = 0;
	for (int j = 0; j < 16; j++) {
		float e = fabsf(v - (float)tensor_iq4_values[j]);
		if (e < best) best = e, k = j;
	}
	return k;
}

#endif
