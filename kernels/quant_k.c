/*
 * quant_k.c - the plain C reference (de)quantizers of the super-block types
 * (256 values in sub-blocks with quantized scales): Q2_K, Q3_K, Q4_K, Q5_K,
 * Q6_K and IQ4_XS. Layouts are in quant.h; quant.c's type table points at
 * these functions.
 *
 * Dequantization follows ggml's dequantize_row_* value for value; the
 * quantizers are ours (scales from each sub-block's range, quantized
 * against the super-block's, then each element rounded against the
 * *quantized* scale): valid blocks for `infill mkmodel` and the kernel
 * tests, not ggml's error-minimising choices.
 */
#include <math.h>
#include <string.h>

#include "quant.h"
#include "quant_internal.h"

/* ---- dequantization ---- */

void quant_dequant_q4_k(const void *src, float *y, int64_t nb)
{
	const struct block_q4_k *b = src;
	for (int64_t i = 0; i < nb; i++) {
		float d = tensor_f16_to_f32(b[i].d), dmin = tensor_f16_to_f32(b[i].dmin);
		const uint8_t *q = b[i].qs;
		for (int c = 0; c < 4; c++, q += 32, y += 64) {
			uint8_t sc0, m0, sc1, m1;
			tensor_q4_k_scale_min(b[i].scales, 2 * c, &sc0, &m0);
			tensor_q4_k_scale_min(b[i].scales, 2 * c + 1, &sc1, &m1);
			float d0 = d * sc0, mn0 = dmin * m0, d1 = d * sc1, mn1 = dmin * m1;
			for (int l = 0; l < 32; l++) {
				y[l] = d0 * (float)(q[l] & 0xF) - mn0;
				y[l + 32] = d1 * (float)(q[l] >> 4) - mn1;
			}
		}
	}
}

void quant_dequant_q6_k(const void *src, float *y, int64_t nb)
{
	const struct block_q6_k *b = src;
	for (int64_t i = 0; i < nb; i++) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int h = 0; h < 2; h++, y += 128) {
			const uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
			const int8_t *sc = b[i].scales + 8 * h;
			for (int l = 0; l < 32; l++) {
				int is = l / 16;
				int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
				int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
				int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
				int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
				y[l] = d * (float)sc[is] * (float)q1;
				y[l + 32] = d * (float)sc[is + 2] * (float)q2;
				y[l + 64] = d * (float)sc[is + 4] * (float)q3;
				y[l + 96] = d * (float)sc[is + 6] * (float)q4;
			}
		}
	}
}

void quant_dequant_q2_k(const void *src, float *y, int64_t nb)
{
	const struct block_q2_k *b = src;
	for (int64_t i = 0; i < nb; i++) {
		float d = tensor_f16_to_f32(b[i].d), dmin = tensor_f16_to_f32(b[i].dmin);
		for (int h = 0; h < 2; h++) {
			const uint8_t *q = b[i].qs + 32 * h;
			for (int k = 0; k < 4; k++)
				for (int half = 0; half < 2; half++, y += 16) {
					uint8_t sc = b[i].scales[8 * h + 2 * k + half];
					float dl = d * (float)(sc & 0xF),
					      ml = dmin * (float)(sc >> 4);
					for (int l = 0; l < 16; l++)
						y[l] = dl * (float)((q[16 * half + l] >> (2 * k)) &
						                    3) -
						       ml;
				}
		}
	}
}

void quant_dequant_q3_k(const void *src, float *y, int64_t nb)
{
	const struct block_q3_k *b = src;
	for (int64_t i = 0; i < nb; i++) {
		float d = tensor_f16_to_f32(b[i].d);
		int8_t sc[16];
		tensor_q3_k_scales(b[i].scales, sc);
		for (int h = 0; h < 2; h++) {
			const uint8_t *q = b[i].qs + 32 * h;
			for (int k = 0; k < 4; k++)
				for (int half = 0; half < 2; half++, y += 16) {
					float dl = d * (float)sc[8 * h + 2 * k + half];
					for (int l = 16 * half; l < 16 * half + 16; l++) {
						int v = (q[l] >> (2 * k)) & 3;
						if (!(b[i].hmask[l] & (1 << (4 * h + k)))) v -= 4;
						y[l - 16 * half] = dl * (float)v;
					}
				}
		}
	}
}

void quant_dequant_q5_k(const void *src, float *y, int64_t nb)
{
	const struct block_q5_k *b = src;
	for (int64_t i = 0; i < nb; i++) {
		float d = tensor_f16_to_f32(b[i].d), dmin = tensor_f16_to_f32(b[i].dmin);
		const uint8_t *q = b[i].qs;
		for (int c = 0; c < 4; c++, q += 32, y += 64) {
			uint8_t sc0, m0, sc1, m1;
			tensor_q4_k_scale_min(b[i].scales, 2 * c, &sc0, &m0);
			tensor_q4_k_scale_min(b[i].scales, 2 * c + 1, &sc1, &m1);
			float d0 = d * sc0, mn0 = dmin * m0, d1 = d * sc1, mn1 = dmin * m1;
			for (int l = 0; l < 32; l++) {
				int h0 = ((b[i].qh[l] >> (2 * c)) & 1) << 4;
				int h1 = ((b[i].qh[l] >> (2 * c + 1)) & 1) << 4;
				y[l] = d0 * (float)((q[l] & 0xF) + h0) - mn0;
				y[l + 32] = d1 * (float)((q[l] >> 4) + h1) - mn1;
			}
		}
	}
}

/* Sub-block s's 6-bit IQ4_XS scale minus 32. */
static inline int iq4_xs_scale(const struct block_iq4_xs *b, int s)
{
	int ls = ((b->scales_l[s / 2] >> (4 * (s % 2))) & 0xF) |
	         (((b->scales_h >> (2 * s)) & 3) << 4);
	return ls - 32;
}

void quant_dequant_iq4_xs(const void *src, float *y, int64_t nb)
{
	const struct block_iq4_xs *b = src;
	for (int64_t i = 0; i < nb; i++) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int s = 0; s < 8; s++, y += 32) {
			float dl = d * (float)iq4_xs_scale(&b[i], s);
			const uint8_t *qs = b[i].qs + 16 * s;
			for (int j = 0; j < 16; j++) {
				y[j] = dl * (float)tensor_iq4_values[qs[j] & 0xF];
				y[j + 16] = dl * (float)tensor_iq4_values[qs[j] >> 4];
			}
		}
	}
}

int quant_iq4_xs_scale(const void *block, int s)
{
	return iq4_xs_scale(block, s);
}

/* ---- quantization ---- */

/*
 * Q4_K, our own quantizer: per 32-element sub-block, min = min(0, lowest)
 * and scale = (highest - min) / 15; the 8 scales and 8 (negated) mins are
 * quantized to 6 bits against their super-block maxima (d, dmin), then each
 * element is rounded to the nearest level of the *quantized* scale and min,
 * so rounding of the scales does not bias the elements.
 */
void quant_quant_q4_k(const float *x, void *dst, int64_t nb)
{
	struct block_q4_k *b = dst;
	for (int64_t i = 0; i < nb; i++, x += QK_K) {
		float scale[8], mn[8], max_scale = 0.0f, max_min = 0.0f;
		for (int s = 0; s < 8; s++) {
			float lo = x[32 * s], hi = x[32 * s];
			for (int l = 1; l < 32; l++) {
				lo = fminf(lo, x[32 * s + l]);
				hi = fmaxf(hi, x[32 * s + l]);
			}
			if (lo > 0.0f) lo = 0.0f;
			scale[s] = (hi - lo) / 15.0f;
			mn[s] = -lo;
			max_scale = fmaxf(max_scale, scale[s]);
			max_min = fmaxf(max_min, mn[s]);
		}
		float d = max_scale / 63.0f, dmin = max_min / 63.0f;
		b[i].d = tensor_f32_to_f16(d);
		b[i].dmin = tensor_f32_to_f16(dmin);
		d = tensor_f16_to_f32(b[i].d);
		dmin = tensor_f16_to_f32(b[i].dmin);
		uint8_t sc[8], m[8];
		for (int s = 0; s < 8; s++) {
			sc[s] = (uint8_t)clampi(d > 0.0f ? (int)lroundf(scale[s] / d) : 0, 0, 63);
			m[s] = (uint8_t)clampi(dmin > 0.0f ? (int)lroundf(mn[s] / dmin) : 0, 0, 63);
		}
		for (int j = 0; j < 4; j++) {
			b[i].scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
			b[i].scales[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
			b[i].scales[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
		}
		uint8_t q[QK_K];
		for (int s = 0; s < 8; s++) {
			float ds = d * sc[s], ms = dmin * m[s], ids = ds > 0.0f ? 1.0f / ds : 0.0f;
			for (int l = 0; l < 32; l++) {
				float v = (x[32 * s + l] + ms) * ids;
				v = v < 0.0f ? 0.0f : v > 15.0f ? 15.0f : v;
				q[32 * s + l] = (uint8_t)round_int(v);
			}
		}
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++)
				b[i].qs[32 * c + l] =
				        (uint8_t)(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
	}
}

/*
 * Q6_K, our own quantizer: per 16-element sub-block a signed scale m / -32
 * (m the value of largest magnitude, as Q4_0 does, so q spans -32..31), the
 * 16 scales quantized to int8 against their maximum magnitude (d = max/127),
 * then elements rounded against the quantized scale.
 */
void quant_quant_q6_k(const float *x, void *dst, int64_t nb)
{
	struct block_q6_k *b = dst;
	for (int64_t i = 0; i < nb; i++, x += QK_K) {
		float scale[16], max_abs_scale = 0.0f;
		for (int s = 0; s < 16; s++) {
			float amax = 0.0f, m = 0.0f;
			for (int l = 0; l < 16; l++) {
				float v = x[16 * s + l];
				if (fabsf(v) > amax) {
					amax = fabsf(v);
					m = v;
				}
			}
			scale[s] = m / -32.0f;
			max_abs_scale = fmaxf(max_abs_scale, fabsf(scale[s]));
		}
		float d = max_abs_scale / 127.0f;
		b[i].d = tensor_f32_to_f16(d);
		d = tensor_f16_to_f32(b[i].d);
		uint8_t q[QK_K];
		for (int s = 0; s < 16; s++) {
			int sc = d > 0.0f ? clampi((int)lroundf(scale[s] / d), -127, 127) : 0;
			b[i].scales[s] = (int8_t)sc;
			float ds = d * (float)sc, ids = ds != 0.0f ? 1.0f / ds : 0.0f;
			for (int l = 0; l < 16; l++) {
				float v = x[16 * s + l] * ids;
				v = v < -32.0f ? -32.0f : v > 31.0f ? 31.0f : v;
				q[16 * s + l] = (uint8_t)(round_int(v) + 32);
			}
		}
		for (int h = 0; h < 2; h++) {
			uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
			const uint8_t *qq = q + 128 * h;
			for (int l = 0; l < 32; l++) {
				uint8_t q1 = qq[l], q2 = qq[l + 32], q3 = qq[l + 64],
				        q4 = qq[l + 96];
				ql[l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
				ql[l + 32] = (uint8_t)((q2 & 0xF) | ((q4 & 0xF) << 4));
				qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
				                  ((q4 >> 4) << 6));
			}
		}
	}
}

/* Q2_K: per 16 values min(0, lowest) and (highest - min) / 3, both to 4 bits
 * against their block maxima. */
void quant_quant_q2_k(const float *x, void *dst, int64_t nb)
{
	struct block_q2_k *b = dst;
	for (int64_t i = 0; i < nb; i++, x += QK_K) {
		float scale[16], mn[16], ms = 0.0f, mm = 0.0f;
		for (int s = 0; s < 16; s++) {
			float lo, hi;
			minmax(x + 16 * s, 16, &lo, &hi);
			if (lo > 0.0f) lo = 0.0f;
			scale[s] = (hi - lo) / 3.0f;
			mn[s] = -lo;
			ms = fmaxf(ms, scale[s]), mm = fmaxf(mm, mn[s]);
		}
		b[i].d = tensor_f32_to_f16(ms / 15.0f);
		b[i].dmin = tensor_f32_to_f16(mm / 15.0f);
		float d = tensor_f16_to_f32(b[i].d), dmin = tensor_f16_to_f32(b[i].dmin);
		int q[QK_K];
		for (int s = 0; s < 16; s++) {
			int sc = d > 0.0f ? clampi(round_int(scale[s] / d), 0, 15) : 0;
			int m = dmin > 0.0f ? clampi(round_int(mn[s] / dmin), 0, 15) : 0;
			b[i].scales[s] = (uint8_t)(sc | (m << 4));
			float ds = d * (float)sc, ms_ = dmin * (float)m;
			float ids = ds > 0.0f ? 1.0f / ds : 0.0f;
			for (int l = 0; l < 16; l++)
				q[16 * s + l] =
				        clampi(round_int((x[16 * s + l] + ms_) * ids), 0, 3);
		}
		for (int h = 0; h < 2; h++)
			for (int l = 0; l < 32; l++) {
				int v = 0;
				for (int k = 0; k < 4; k++) v |= q[128 * h + 32 * k + l] << (2 * k);
				b[i].qs[32 * h + l] = (uint8_t)v;
			}
	}
}

/* Q3_K: per 16 values a signed scale m / -4 (q spans -4..3), six bits signed
 * against the block's largest. */
void quant_quant_q3_k(const float *x, void *dst, int64_t nb)
{
	struct block_q3_k *b = dst;
	for (int64_t i = 0; i < nb; i++, x += QK_K) {
		float scale[16], amax = 0.0f;
		for (int s = 0; s < 16; s++) {
			scale[s] = signed_max(x + 16 * s, 16) / -4.0f;
			amax = fmaxf(amax, fabsf(scale[s]));
		}
		b[i].d = tensor_f32_to_f16(amax / 31.0f);
		float d = tensor_f16_to_f32(b[i].d);
		memset(b[i].scales, 0, sizeof b[i].scales);
		memset(b[i].hmask, 0, sizeof b[i].hmask);
		memset(b[i].qs, 0, sizeof b[i].qs);
		for (int s = 0; s < 16; s++) {
			int sc = d > 0.0f ? clampi(round_int(scale[s] / d), -32, 31) : 0;
			int u = sc + 32;
			if (s < 8)
				b[i].scales[s] |= (uint8_t)(u & 0xF);
			else
				b[i].scales[s - 8] |= (uint8_t)((u & 0xF) << 4);
			b[i].scales[8 + s % 4] |= (uint8_t)((u >> 4) << (2 * (s / 4)));
			float ds = d * (float)sc, ids = ds != 0.0f ? 1.0f / ds : 0.0f;
			for (int l = 0; l < 16; l++) {
				int e = 16 * s + l; /* element 128h + 32k + l' */
				int h = e / 128, k = (e % 128) / 32, lp = e % 32;
				int v = clampi(round_int(x[e] * ids), -4, 3);
				if (v >= 0) {
					b[i].hmask[lp] |= (uint8_t)(1 << (4 * h + k));
				} else {
					v += 4;
				}
				b[i].qs[32 * h + lp] |= (uint8_t)(v << (2 * k));
			}
		}
	}
}

/* Q5_K: Q4_K's quantizer (quant.c) with 31 steps and a fifth bit. */
void quant_quant_q5_k(const float *x, void *dst, int64_t nb)
{
	struct block_q5_k *b = dst;
	for (int64_t i = 0; i < nb; i++, x += QK_K) {
		float scale[8], mn[8], max_scale = 0.0f, max_min = 0.0f;
		for (int s = 0; s < 8; s++) {
			float lo, hi;
			minmax(x + 32 * s, 32, &lo, &hi);
			if (lo > 0.0f) lo = 0.0f;
			scale[s] = (hi - lo) / 31.0f;
			mn[s] = -lo;
			max_scale = fmaxf(max_scale, scale[s]);
			max_min = fmaxf(max_min, mn[s]);
		}
		b[i].d = tensor_f32_to_f16(max_scale / 63.0f);
		b[i].dmin = tensor_f32_to_f16(max_min / 63.0f);
		float d = tensor_f16_to_f32(b[i].d), dmin = tensor_f16_to_f32(b[i].dmin);
		uint8_t sc[8], m[8];
		for (int s = 0; s < 8; s++) {
			sc[s] = (uint8_t)clampi(d > 0.0f ? round_int(scale[s] / d) : 0, 0, 63);
			m[s] = (uint8_t)clampi(dmin > 0.0f ? round_int(mn[s] / dmin) : 0, 0, 63);
		}
		for (int j = 0; j < 4; j++) {
			b[i].scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
			b[i].scales[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
			b[i].scales[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
		}
		uint8_t q[QK_K];
		for (int s = 0; s < 8; s++) {
			float ds = d * sc[s], ms = dmin * m[s], ids = ds > 0.0f ? 1.0f / ds : 0.0f;
			for (int l = 0; l < 32; l++)
				q[32 * s + l] = (uint8_t)clampi(
				        round_int((x[32 * s + l] + ms) * ids), 0, 31);
		}
		memset(b[i].qh, 0, sizeof b[i].qh);
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++) {
				uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
				b[i].qs[32 * c + l] = (uint8_t)((lo & 0xF) | ((hi & 0xF) << 4));
				b[i].qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) |
				                        ((hi >> 4) << (2 * c + 1)));
			}
	}
}

void quant_quant_iq4_xs(const float *x, void *dst, int64_t nb)
{
	struct block_iq4_xs *b = dst;
	for (int64_t i = 0; i < nb; i++, x += QK_K) {
		float s[8], amax = 0.0f;
		for (int k = 0; k < 8; k++) {
			s[k] = signed_max(x + 32 * k, 32) / -127.0f;
			amax = fmaxf(amax, fabsf(s[k]));
		}
		b[i].d = tensor_f32_to_f16(amax / 31.0f);
		float d = tensor_f16_to_f32(b[i].d);
		memset(b[i].scales_l, 0, sizeof b[i].scales_l);
		b[i].scales_h = 0;
		for (int k = 0; k < 8; k++) {
			int ls = d > 0.0f ? clampi(round_int(s[k] / d), -32, 31) : 0;
			int u = ls + 32;
			b[i].scales_l[k / 2] |= (uint8_t)((u & 0xF) << (4 * (k % 2)));
			b[i].scales_h |= (uint16_t)((u >> 4) << (2 * k));
			float dl = d * (float)ls;
			const float *xs = x + 32 * k;
			for (int j = 0; j < 16; j++)
				b[i].qs[16 * k + j] = (uint8_t)(iq4_nearest(xs[j], dl) |
				                                iq4_nearest(xs[j + 16], dl) << 4);
		}
	}
}
