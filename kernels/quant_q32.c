/*
 * quant_q32.c - the plain C reference (de)quantizers of the types whose
 * blocks hold 32 values with one fp16 scale (and a min or high bits):
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and IQ4_NL. Layouts are in quant.h; quant.c's
 * type table points at these functions.
 *
 * Dequantization follows ggml's dequantize_row_* value for value (the same
 * float products: scale times integer, minus min); tests/kernels checks it
 * against llama.cpp's own output. Q4_0 and Q8_0 quantize as ggml's reference
 * does (the SIMD and CUDA kernels are tested against them); the others are
 * ours and simple (round to nearest against per-block min/max or the
 * largest-magnitude value): valid blocks for `infill mkmodel` and the kernel
 * tests, not ggml's error-minimising choices.
 */
#include <math.h>
#include <string.h>

#include "quant.h"
#include "quant_internal.h"

const int8_t tensor_iq4_values[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
	                               1,    13,   25,  38,  53,  69,  89,  113 };

/* ---- dequantization ---- */

/* Bit 4 of the 5-bit value j of a Q5_0/Q5_1 block (qh as a little-endian u32). */
static inline int q5_high(const uint8_t qh[4], int j)
{
	uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
	             (uint32_t)qh[3] << 24;
	return (int)((h >> j) & 1) << 4;
}

void quant_dequant_q4_0(const void *src, float *y, int64_t nb)
{
	const struct block_q4_0 *b = src;
	for (int64_t i = 0; i < nb; i++, y += QK4_0) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int j = 0; j < QK4_0 / 2; j++) {
			y[j] = (float)((b[i].qs[j] & 0xF) - 8) * d;
			y[j + QK4_0 / 2] = (float)((b[i].qs[j] >> 4) - 8) * d;
		}
	}
}

void quant_dequant_q8_0(const void *src, float *y, int64_t nb)
{
	const struct block_q8_0 *b = src;
	for (int64_t i = 0; i < nb; i++, y += QK8_0) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int j = 0; j < QK8_0; j++) y[j] = (float)b[i].qs[j] * d;
	}
}

void quant_dequant_q4_1(const void *src, float *y, int64_t nb)
{
	const struct block_q4_1 *b = src;
	for (int64_t i = 0; i < nb; i++, y += 32) {
		float d = tensor_f16_to_f32(b[i].d), m = tensor_f16_to_f32(b[i].m);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)(b[i].qs[j] & 0xF) * d + m;
			y[j + 16] = (float)(b[i].qs[j] >> 4) * d + m;
		}
	}
}

void quant_dequant_q5_0(const void *src, float *y, int64_t nb)
{
	const struct block_q5_0 *b = src;
	for (int64_t i = 0; i < nb; i++, y += 32) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)(((b[i].qs[j] & 0xF) | q5_high(b[i].qh, j)) - 16) * d;
			y[j + 16] =
			        (float)(((b[i].qs[j] >> 4) | q5_high(b[i].qh, j + 16)) - 16) * d;
		}
	}
}

void quant_dequant_q5_1(const void *src, float *y, int64_t nb)
{
	const struct block_q5_1 *b = src;
	for (int64_t i = 0; i < nb; i++, y += 32) {
		float d = tensor_f16_to_f32(b[i].d), m = tensor_f16_to_f32(b[i].m);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)((b[i].qs[j] & 0xF) | q5_high(b[i].qh, j)) * d + m;
			y[j + 16] = (float)((b[i].qs[j] >> 4) | q5_high(b[i].qh, j + 16)) * d + m;
		}
	}
}

void quant_dequant_iq4_nl(const void *src, float *y, int64_t nb)
{
	const struct block_iq4_nl *b = src;
	for (int64_t i = 0; i < nb; i++, y += 32) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int j = 0; j < 16; j++) {
			y[j] = d * (float)tensor_iq4_values[b[i].qs[j] & 0xF];
			y[j + 16] = d * (float)tensor_iq4_values[b[i].qs[j] >> 4];
		}
	}
}

/* ---- quantization ---- */

/* Packs 32 5-bit values as Q5_0/Q5_1 do. */
static void pack_q5(const int q[32], uint8_t qs[16], uint8_t qh[4])
{
	uint32_t h = 0;
	for (int j = 0; j < 16; j++) {
		qs[j] = (uint8_t)((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
		h |= (uint32_t)((q[j] >> 4) & 1) << j;
		h |= (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
	}
	for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}

/* min/max blocks of 32 with 2^bits - 1 steps: d and m as fp16, q against the rounded ones. */
static void affine32(const float *x, int levels, uint16_t *d16, uint16_t *m16, int q[32])
{
	float lo, hi;
	minmax(x, 32, &lo, &hi);
	*d16 = tensor_f32_to_f16((hi - lo) / (float)levels);
	*m16 = tensor_f32_to_f16(lo);
	float d = tensor_f16_to_f32(*d16), m = tensor_f16_to_f32(*m16);
	float id = d > 0.0f ? 1.0f / d : 0.0f;
	for (int j = 0; j < 32; j++) q[j] = clampi(round_int((x[j] - m) * id), 0, levels);
}

/* ggml's reference Q8_0: d = amax / 127, q = round-half-away(x / d). */
void quant_quant_q8_0(const float *x, void *dst, int64_t nb)
{
	struct block_q8_0 *b = dst;
	for (int64_t i = 0; i < nb; i++, x += QK8_0) {
		float amax = 0.0f;
		for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
		float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		b[i].d = tensor_f32_to_f16(d);
		for (int j = 0; j < QK8_0; j++) b[i].qs[j] = (int8_t)roundf(x[j] * id);
	}
}

/* ggml's reference Q4_0: d = m / -8 with m the signed value of largest
 * magnitude, so m maps to q = 0 exactly; q = min(15, (int)(x/d + 8.5)). */
void quant_quant_q4_0(const float *x, void *dst, int64_t nb)
{
	struct block_q4_0 *b = dst;
	for (int64_t i = 0; i < nb; i++, x += QK4_0) {
		float amax = 0.0f, m = 0.0f;
		for (int j = 0; j < QK4_0; j++) {
			if (fabsf(x[j]) > amax) {
				amax = fabsf(x[j]);
				m = x[j];
			}
		}
		float d = m / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		b[i].d = tensor_f32_to_f16(d);
		for (int j = 0; j < QK4_0 / 2; j++) {
			int q0 = (int)(int8_t)(x[j] * id + 8.5f);
			int q1 = (int)(int8_t)(x[j + QK4_0 / 2] * id + 8.5f);
			q0 = q0 < 15 ? q0 : 15;
			q1 = q1 < 15 ? q1 : 15;
			b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
		}
	}
}

void quant_quant_q4_1(const float *x, void *dst, int64_t nb)
{
	struct block_q4_1 *b = dst;
	for (int64_t i = 0; i < nb; i++, x += 32) {
		int q[32];
		affine32(x, 15, &b[i].d, &b[i].m, q);
		for (int j = 0; j < 16; j++) b[i].qs[j] = (uint8_t)(q[j] | (q[j + 16] << 4));
	}
}

void quant_quant_q5_1(const float *x, void *dst, int64_t nb)
{
	struct block_q5_1 *b = dst;
	for (int64_t i = 0; i < nb; i++, x += 32) {
		int q[32];
		affine32(x, 31, &b[i].d, &b[i].m, q);
		pack_q5(q, b[i].qs, b[i].qh);
	}
}

/* As ggml's Q5_0 reference: d = m / -16 (m the largest-magnitude value), q = min(31, x/d + 16.5). */
void quant_quant_q5_0(const float *x, void *dst, int64_t nb)
{
	struct block_q5_0 *b = dst;
	for (int64_t i = 0; i < nb; i++, x += 32) {
		float d = signed_max(x, 32) / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		b[i].d = tensor_f32_to_f16(d);
		int q[32];
		for (int j = 0; j < 32; j++) q[j] = clampi((int)(x[j] * id + 16.5f), 0, 31);
		pack_q5(q, b[i].qs, b[i].qh);
	}
}

void quant_quant_iq4_nl(const float *x, void *dst, int64_t nb)
{
	struct block_iq4_nl *b = dst;
	for (int64_t i = 0; i < nb; i++, x += 32) {
		b[i].d = tensor_f32_to_f16(signed_max(x, 32) / -127.0f);
		float d = tensor_f16_to_f32(b[i].d);
		for (int j = 0; j < 16; j++)
			b[i].qs[j] =
			        (uint8_t)(iq4_nearest(x[j], d) | iq4_nearest(x[j + 16], d) << 4);
	}
}
