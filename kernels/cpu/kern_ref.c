/*
 * kern_ref.c - the plain C kernels: the reference every SIMD kernel is
 * tested against, and the fallback on CPUs without AVX2.
 *
 * The arithmetic follows ggml's reference dot products so that results track
 * llama.cpp: Q8_0/Q4_0 weights meet activations quantized to Q8_0 (integer
 * block sums, then scaled by both fp16 scales in float); F16 and BF16
 * weights are widened to float and meet float activations (that, not
 * rounding the activations to fp16, is what reproduces llama.cpp's F16
 * reference logits to 3e-7). Each weight type meets the activation format
 * ggml's CPU backend gives it (cpu_act_for): Q8_0 for Q4_0, Q5_0, Q8_0 and
 * IQ4_NL, Q8_1 for Q4_1 and Q5_1, Q8_K for the K-quants and IQ4_XS.
 */
#include "cpu.h"

#include <math.h>
#include <string.h>

#include "quant.h"

/* ---- activation conversion ---- */

static void act_f32(const float *x, void *dst, int64_t n)
{
	memcpy(dst, x, (size_t)n * sizeof(float));
}

/* Round half to even for |x| < 2^22, by the float adder (ggml's nearest_int):
 * plain arithmetic where nearbyintf is a libm call on a generic x86-64 build. */
static inline int nearest_int(float x)
{
	float v = x + 12582912.0f; /* 1.5 * 2^23: the integer lands in the low mantissa bits */
	int32_t i;
	memcpy(&i, &v, sizeof i);
	return (i & 0x007fffff) - 0x00400000;
}

/*
 * What ggml's CPU backend computes on x86 (quantize_row_q8_0 / _q8_1, the
 * AVX2 versions): d = amax / 127 stored as fp16, q = round-half-even(x *
 * (127 / amax)) (its generic reference instead rounds half away from zero
 * and multiplies by 1 / d: the two differ only at rounding ties).
 */
void cpu_q8_0_quantize(const float *x, void *blocks, int64_t n)
{
	struct block_q8_0 *y = blocks;
	for (int64_t b = 0; b < n / QK8_0; b++) {
		const float *xb = x + b * QK8_0;
		float amax = 0;
		for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(xb[j]));
		float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
		y[b].d = tensor_f32_to_f16(d);
		for (int j = 0; j < QK8_0; j++) y[b].qs[j] = (int8_t)nearest_int(xb[j] * id);
	}
}

void cpu_q8_lanes_pack(const void *blocks, int64_t q_stride, int g, int64_t hd,
                       struct cpu_q8_lanes *qt)
{
	memset(qt, 0, (size_t)(hd / QK8_0) * sizeof *qt);
	for (int j = 0; j < g; j++) {
		const struct block_q8_0 *q = (const void *)((const char *)blocks + j * q_stride);
		for (int64_t b = 0; b < hd / QK8_0; b++) {
			int32_t sum = 0;
			for (int e = 0; e < QK8_0; e++) {
				qt[b].qs[e / 4][j][e % 4] = q[b].qs[e];
				sum += q[b].qs[e];
			}
			qt[b].d[j] = tensor_f16_to_f32(q[b].d);
			qt[b].sum[j] = sum;
		}
	}
}

static void act_q8_0(const float *x, void *dst, int64_t n)
{
	cpu_q8_0_quantize(x, dst, n);
	cpu_q8_tail_fill(dst, n / QK8_0);
}

/* Q8_1: as Q8_0, plus s = fp16(d * sum(q)) with the float d. */
static void act_q8_1(const float *x, void *dst, int64_t n)
{
	struct block_q8_1 *y = dst;
	for (int64_t b = 0; b < n / QK8_0; b++) {
		const float *xb = x + b * QK8_0;
		float amax = 0;
		for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(xb[j]));
		float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
		y[b].d = tensor_f32_to_f16(d);
		int sum = 0;
		for (int j = 0; j < QK8_0; j++) {
			y[b].qs[j] = (int8_t)nearest_int(xb[j] * id);
			sum += y[b].qs[j];
		}
		y[b].s = tensor_f32_to_f16(d * (float)sum);
	}
}

/*
 * Q8_K, ggml's quantize_row_q8_K_ref (what x86 runs): max = the value of
 * largest magnitude (the first such), iscale = -127 / max, q = min(127,
 * round-half-even(iscale * x)), d = 1 / iscale; the sums of each 16 q. An
 * all-zero block has d = 0 and q = 0.
 */
static void act_q8_k(const float *x, void *dst, int64_t n)
{
	struct block_q8_k *y = dst;
	for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
		float amax = 0, max = 0;
		for (int j = 0; j < QK_K; j++)
			if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
		if (amax == 0) {
			memset(&y[b], 0, sizeof y[b]);
			continue;
		}
		float iscale = -127.0f / max;
		for (int j = 0; j < QK_K; j++) {
			int v = nearest_int(iscale * x[j]);
			y[b].qs[j] = (int8_t)(v < 127 ? v : 127);
		}
		for (int g = 0; g < 16; g++) {
			int sum = 0;
			for (int l = 0; l < 16; l++) sum += y[b].qs[16 * g + l];
			y[b].bsums[g] = (int16_t)sum;
		}
		y[b].d = 1 / iscale;
	}
}

/* ---- dot products ---- */

static float dot_f32(int64_t n, const float *w, const float *x)
{
	float s = 0;
	for (int64_t i = 0; i < n; i++) s += w[i] * x[i];
	return s;
}

static float dot_f16(int64_t n, const uint16_t *w, const float *x)
{
	float s = 0;
	for (int64_t i = 0; i < n; i++) s += tensor_f16_to_f32(w[i]) * x[i];
	return s;
}

static float dot_bf16(int64_t n, const uint16_t *w, const float *x)
{
	float s = 0;
	for (int64_t i = 0; i < n; i++) s += tensor_bf16_to_f32(w[i]) * x[i];
	return s;
}

static float dot_q8_0(int64_t n, const struct block_q8_0 *w, const struct block_q8_0 *x)
{
	float s = 0;
	for (int64_t b = 0; b < n / QK8_0; b++) {
		int32_t sum = 0;
		for (int j = 0; j < QK8_0; j++) sum += w[b].qs[j] * x[b].qs[j];
		s += (float)sum * (tensor_f16_to_f32(w[b].d) * tensor_f16_to_f32(x[b].d));
	}
	return s;
}

static float dot_q4_0(int64_t n, const struct block_q4_0 *w, const struct block_q8_0 *x)
{
	float s = 0;
	for (int64_t b = 0; b < n / QK4_0; b++) {
		int32_t sum = 0;
		for (int j = 0; j < QK4_0 / 2; j++) {
			int lo = (w[b].qs[j] & 0xF) - 8, hi = (w[b].qs[j] >> 4) - 8;
			sum += lo * x[b].qs[j] + hi * x[b].qs[j + QK4_0 / 2];
		}
		s += (float)sum * (tensor_f16_to_f32(w[b].d) * tensor_f16_to_f32(x[b].d));
	}
	return s;
}

/* ---- gemm drivers: rows outer, tokens inner (the weight row stays in L1) ---- */

#define GEMM_LOOP(dotexpr)                                               \
	for (int64_t r = 0; r < nr; r++) {                               \
		const void *wr = (const char *)w + r * w_stride;         \
		for (int64_t t = 0; t < nt; t++) {                       \
			const void *xt = (const char *)x + t * x_stride; \
			y[t * ldy + r] = dotexpr;                        \
		}                                                        \
	}

static void gemm_f32(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                     size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	GEMM_LOOP(dot_f32(n, wr, xt))
}

static void gemm_f16(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                     size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	GEMM_LOOP(dot_f16(n, wr, xt))
}

static void gemm_bf16(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                      size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	GEMM_LOOP(dot_bf16(n, wr, xt))
}

static void gemm_q8_0(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                      size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	GEMM_LOOP(dot_q8_0(n, wr, xt))
}

static void gemm_q4_0(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                      size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	GEMM_LOOP(dot_q4_0(n, wr, xt))
}

/*
 * K-quants (and IQ4_XS) against Q8_K activations, as ggml does: a weight
 * super-block is decoded to its 256 integer levels q (signed), one integer
 * scale per 16 values and, for the types with mins, one integer min per 16
 * values (Q4_K/Q5_K's per-32 scales repeated twice); then, exactly in
 * integers, sumi = sum_g sc[g] * sum(q y) and summ = sum_g m[g] * bsums[g],
 * and in float d_y * (d * sumi - dmin * summ).
 */
struct kdec {
	int8_t q[QK_K];
	int16_t sc[16], m[16];
	float d, dmin;
};

static void kdec_q4_k(const void *blk, struct kdec *k)
{
	const struct block_q4_k *b = blk;
	k->d = tensor_f16_to_f32(b->d), k->dmin = tensor_f16_to_f32(b->dmin);
	for (int s = 0; s < 8; s++) {
		uint8_t sc, m;
		tensor_q4_k_scale_min(b->scales, s, &sc, &m);
		k->sc[2 * s] = k->sc[2 * s + 1] = sc;
		k->m[2 * s] = k->m[2 * s + 1] = m;
		for (int l = 0; l < 32; l++) {
			uint8_t v = b->qs[32 * (s / 2) + l];
			k->q[32 * s + l] = (int8_t)(s % 2 ? v >> 4 : v & 0xF);
		}
	}
}

static void kdec_q5_k(const void *blk, struct kdec *k)
{
	const struct block_q5_k *b = blk;
	k->d = tensor_f16_to_f32(b->d), k->dmin = tensor_f16_to_f32(b->dmin);
	for (int s = 0; s < 8; s++) {
		uint8_t sc, m;
		tensor_q4_k_scale_min(b->scales, s, &sc, &m);
		k->sc[2 * s] = k->sc[2 * s + 1] = sc;
		k->m[2 * s] = k->m[2 * s + 1] = m;
		for (int l = 0; l < 32; l++) {
			uint8_t v = b->qs[32 * (s / 2) + l];
			int lo = s % 2 ? v >> 4 : v & 0xF;
			k->q[32 * s + l] = (int8_t)(lo | (((b->qh[l] >> s) & 1) << 4));
		}
	}
}

static void kdec_q6_k(const void *blk, struct kdec *k)
{
	const struct block_q6_k *b = blk;
	k->d = tensor_f16_to_f32(b->d), k->dmin = 0;
	for (int g = 0; g < 16; g++) k->sc[g] = b->scales[g], k->m[g] = 0;
	for (int h = 0; h < 2; h++) {
		const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
		for (int l = 0; l < 32; l++)
			for (int c = 0; c < 4; c++) {
				int lo = c % 2 ? ql[l + 32] : ql[l];
				lo = c < 2 ? lo & 0xF : lo >> 4;
				k->q[128 * h + 32 * c + l] =
				        (int8_t)((lo | (((qh[l] >> (2 * c)) & 3) << 4)) - 32);
			}
	}
}

static void kdec_q3_k(const void *blk, struct kdec *k)
{
	const struct block_q3_k *b = blk;
	int8_t sc[16];
	tensor_q3_k_scales(b->scales, sc);
	k->d = tensor_f16_to_f32(b->d), k->dmin = 0;
	for (int g = 0; g < 16; g++) k->sc[g] = sc[g], k->m[g] = 0;
	for (int h = 0; h < 2; h++)
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++) {
				int v = (b->qs[32 * h + l] >> (2 * c)) & 3;
				if (!(b->hmask[l] & (1 << (4 * h + c)))) v -= 4;
				k->q[128 * h + 32 * c + l] = (int8_t)v;
			}
}

static void kdec_q2_k(const void *blk, struct kdec *k)
{
	const struct block_q2_k *b = blk;
	k->d = tensor_f16_to_f32(b->d), k->dmin = tensor_f16_to_f32(b->dmin);
	for (int g = 0; g < 16; g++) k->sc[g] = b->scales[g] & 0xF, k->m[g] = b->scales[g] >> 4;
	for (int h = 0; h < 2; h++)
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++)
				k->q[128 * h + 32 * c + l] =
				        (int8_t)((b->qs[32 * h + l] >> (2 * c)) & 3);
}

static void kdec_iq4_xs(const void *blk, struct kdec *k)
{
	const struct block_iq4_xs *b = blk;
	k->d = tensor_f16_to_f32(b->d), k->dmin = 0;
	for (int s = 0; s < 8; s++) {
		int ls = ((b->scales_l[s / 2] >> (4 * (s % 2))) & 0xF) |
		         (((b->scales_h >> (2 * s)) & 3) << 4);
		k->sc[2 * s] = k->sc[2 * s + 1] = (int16_t)(ls - 32);
		k->m[2 * s] = k->m[2 * s + 1] = 0;
		for (int j = 0; j < 16; j++) {
			k->q[32 * s + j] = tensor_iq4_values[b->qs[16 * s + j] & 0xF];
			k->q[32 * s + j + 16] = tensor_iq4_values[b->qs[16 * s + j] >> 4];
		}
	}
}

typedef void (*kdec_fn)(const void *blk, struct kdec *k);

static float dot_k(int64_t n, const void *w, size_t block_bytes, kdec_fn dec,
                   const struct block_q8_k *x)
{
	float s = 0;
	struct kdec k;
	for (int64_t b = 0; b < n / QK_K; b++) {
		dec((const char *)w + b * block_bytes, &k);
		int32_t sumi = 0, summ = 0;
		for (int g = 0; g < 16; g++) {
			int32_t qy = 0;
			for (int l = 0; l < 16; l++) qy += k.q[16 * g + l] * x[b].qs[16 * g + l];
			sumi += k.sc[g] * qy;
			summ += k.m[g] * x[b].bsums[g];
		}
		s += x[b].d * (k.d * (float)sumi) - x[b].d * (k.dmin * (float)summ);
	}
	return s;
}

#define GEMM_K(fname, blk, dec)                                                                 \
	static void fname(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x, \
	                  size_t x_stride, int64_t nt, float *y, int64_t ldy)                   \
	{                                                                                       \
		GEMM_LOOP(dot_k(n, wr, sizeof(blk), dec, xt))                                   \
	}

GEMM_K(gemm_q4_k, struct block_q4_k, kdec_q4_k)
GEMM_K(gemm_q5_k, struct block_q5_k, kdec_q5_k)
GEMM_K(gemm_q6_k, struct block_q6_k, kdec_q6_k)
GEMM_K(gemm_q3_k, struct block_q3_k, kdec_q3_k)
GEMM_K(gemm_q2_k, struct block_q2_k, kdec_q2_k)
GEMM_K(gemm_iq4_xs, struct block_iq4_xs, kdec_iq4_xs)

/*
 * 32-value blocks beyond Q4_0/Q8_0, decoded to integer levels q and a float
 * scale d (and min m): Q5_0 and IQ4_NL meet Q8_0 activations, d * d_y *
 * sum(q y); Q4_1 and Q5_1 meet Q8_1, d * d_y * sum(q y) + m * s_y, as ggml.
 */
static void dec32_q5_0(const void *blk, int8_t q[32], float *d, float *m)
{
	const struct block_q5_0 *b = blk;
	uint32_t h;
	memcpy(&h, b->qh, 4);
	for (int j = 0; j < 16; j++) {
		q[j] = (int8_t)(((b->qs[j] & 0xF) | (((h >> j) & 1) << 4)) - 16);
		q[j + 16] = (int8_t)(((b->qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4)) - 16);
	}
	*d = tensor_f16_to_f32(b->d), *m = 0;
}

static void dec32_iq4_nl(const void *blk, int8_t q[32], float *d, float *m)
{
	const struct block_iq4_nl *b = blk;
	for (int j = 0; j < 16; j++) {
		q[j] = tensor_iq4_values[b->qs[j] & 0xF];
		q[j + 16] = tensor_iq4_values[b->qs[j] >> 4];
	}
	*d = tensor_f16_to_f32(b->d), *m = 0;
}

static void dec32_q4_1(const void *blk, int8_t q[32], float *d, float *m)
{
	const struct block_q4_1 *b = blk;
	for (int j = 0; j < 16; j++)
		q[j] = (int8_t)(b->qs[j] & 0xF), q[j + 16] = (int8_t)(b->qs[j] >> 4);
	*d = tensor_f16_to_f32(b->d), *m = tensor_f16_to_f32(b->m);
}

static void dec32_q5_1(const void *blk, int8_t q[32], float *d, float *m)
{
	const struct block_q5_1 *b = blk;
	uint32_t h;
	memcpy(&h, b->qh, 4);
	for (int j = 0; j < 16; j++) {
		q[j] = (int8_t)((b->qs[j] & 0xF) | (((h >> j) & 1) << 4));
		q[j + 16] = (int8_t)((b->qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4));
	}
	*d = tensor_f16_to_f32(b->d), *m = tensor_f16_to_f32(b->m);
}

typedef void (*dec32_fn)(const void *blk, int8_t q[32], float *d, float *m);

static float dot32_q8_0(int64_t n, const void *w, size_t block_bytes, dec32_fn dec,
                        const struct block_q8_0 *x)
{
	float s = 0;
	for (int64_t b = 0; b < n / 32; b++) {
		int8_t q[32];
		float d, m;
		dec((const char *)w + b * block_bytes, q, &d, &m);
		int32_t sumi = 0;
		for (int j = 0; j < 32; j++) sumi += q[j] * x[b].qs[j];
		s += (float)sumi * (d * tensor_f16_to_f32(x[b].d));
	}
	return s;
}

static float dot32_q8_1(int64_t n, const void *w, size_t block_bytes, dec32_fn dec,
                        const struct block_q8_1 *x)
{
	float s = 0;
	for (int64_t b = 0; b < n / 32; b++) {
		int8_t q[32];
		float d, m;
		dec((const char *)w + b * block_bytes, q, &d, &m);
		int32_t sumi = 0;
		for (int j = 0; j < 32; j++) sumi += q[j] * x[b].qs[j];
		s += (d * tensor_f16_to_f32(x[b].d)) * (float)sumi + m * tensor_f16_to_f32(x[b].s);
	}
	return s;
}

#define GEMM_32(fname, blk, dec, dot)                                                           \
	static void fname(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x, \
	                  size_t x_stride, int64_t nt, float *y, int64_t ldy)                   \
	{                                                                                       \
		GEMM_LOOP(dot(n, wr, sizeof(blk), dec, xt))                                     \
	}

GEMM_32(gemm_q5_0, struct block_q5_0, dec32_q5_0, dot32_q8_0)
GEMM_32(gemm_iq4_nl, struct block_iq4_nl, dec32_iq4_nl, dot32_q8_0)
GEMM_32(gemm_q4_1, struct block_q4_1, dec32_q4_1, dot32_q8_1)
GEMM_32(gemm_q5_1, struct block_q5_1, dec32_q5_1, dot32_q8_1)

static float attn_dot(int64_t n, const float *a, const float *b)
{
	return dot_f32(n, a, b);
}

static void axpy_f32(int64_t n, float s, const float *x, float *y)
{
	for (int64_t i = 0; i < n; i++) y[i] += s * x[i];
}

static float dot_f16_ref(int64_t n, const float *a, const uint16_t *h)
{
	float s = 0;
	for (int64_t i = 0; i < n; i++) s += a[i] * tensor_f16_to_f32(h[i]);
	return s;
}

static void axpy_f16(int64_t n, float s, const uint16_t *h, float *y)
{
	for (int64_t i = 0; i < n; i++) y[i] += s * tensor_f16_to_f32(h[i]);
}

static void score_f32(int64_t hd, int g, const float *q, int64_t q_stride, const float *r,
                      int64_t stride, int64_t n, float scale, float *s, int64_t ld)
{
	for (int j = 0; j < g; j++)
		for (int64_t i = 0; i < n; i++)
			s[j * ld + i] = dot_f32(hd, q + j * q_stride, r + i * stride) * scale;
}

static void mix_f32(int64_t hd, int g, const float *p, int64_t ld, const float *r, int64_t stride,
                    int64_t n, float *o, int64_t o_stride)
{
	for (int j = 0; j < g; j++)
		for (int64_t i = 0; i < n; i++)
			axpy_f32(hd, p[j * ld + i], r + i * stride, o + j * o_stride);
}

static void score_f16(int64_t hd, int g, const float *q, int64_t q_stride, const uint16_t *r,
                      int64_t stride, int64_t n, float scale, float *s, int64_t ld)
{
	for (int j = 0; j < g; j++)
		for (int64_t i = 0; i < n; i++)
			s[j * ld + i] = dot_f16_ref(hd, q + j * q_stride, r + i * stride) * scale;
}

static void mix_f16(int64_t hd, int g, const float *p, int64_t ld, const uint16_t *r,
                    int64_t stride, int64_t n, float *o, int64_t o_stride)
{
	for (int j = 0; j < g; j++)
		for (int64_t i = 0; i < n; i++)
			axpy_f16(hd, p[j * ld + i], r + i * stride, o + j * o_stride);
}

static void softmax(float *s, int64_t n, bool round_f16)
{
	float mx = -INFINITY;
	for (int64_t i = 0; i < n; i++)
		if (s[i] > mx) mx = s[i];
	double sum = 0;
	for (int64_t i = 0; i < n; i++) {
		s[i] = expf(s[i] - mx);
		sum += s[i];
	}
	float inv = (float)(1.0 / sum);
	for (int64_t i = 0; i < n; i++)
		s[i] = round_f16 ? tensor_f16_to_f32(tensor_f32_to_f16(s[i] * inv)) : s[i] * inv;
}

/* The queries-in-lanes forms (cpu.h): each score the sum over k in order,
 * as dot_f16_ref, each output the row-ordered sum, as axpy_f16. */
static void score_t_f16(int64_t hd, const float *qt, const uint16_t *r, int64_t stride, int64_t n,
                        float scale, float *st)
{
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < CPU_ATTN_QT; j++) {
			float s = 0;
			for (int64_t k = 0; k < hd; k++)
				s += qt[k * CPU_ATTN_QT + j] * tensor_f16_to_f32(r[i * stride + k]);
			st[i * CPU_ATTN_QT + j] = s * scale;
		}
}

static void softmax_t(float *st, int64_t n, const int32_t *last, bool round_f16)
{
	for (int j = 0; j < CPU_ATTN_QT; j++) {
		float mx = -INFINITY;
		for (int64_t i = 0; i <= last[j] && i < n; i++)
			if (st[i * CPU_ATTN_QT + j] > mx) mx = st[i * CPU_ATTN_QT + j];
		double sum = 0;
		for (int64_t i = 0; i < n; i++) {
			float *x = &st[i * CPU_ATTN_QT + j];
			*x = i <= last[j] ? expf(*x - mx) : 0.0f;
			sum += *x;
		}
		float inv = sum > 0 ? (float)(1.0 / sum) : 0.0f;
		for (int64_t i = 0; i < n; i++) {
			float *x = &st[i * CPU_ATTN_QT + j];
			*x = round_f16 ? tensor_f16_to_f32(tensor_f32_to_f16(*x * inv)) : *x * inv;
		}
	}
}

static void mix_t_f16(int64_t hd, const float *st, const uint16_t *r, int64_t stride, int64_t n,
                      float *ot)
{
	for (int64_t i = 0; i < n; i++)
		for (int64_t c = 0; c < hd; c++)
			for (int j = 0; j < CPU_ATTN_QT; j++)
				ot[c * CPU_ATTN_QT + j] += st[i * CPU_ATTN_QT + j] *
				                           tensor_f16_to_f32(r[i * stride + c]);
}

/* q8_0 cache rows (cpu.h's score_q8 / mix_q8): the blocks' integer dots
 * exact, their terms added in block order. */
static void score_q8(int64_t hd, int g, const void *q, int64_t q_stride, const void *r,
                     int64_t stride, int64_t n, float scale, float *s, int64_t ld)
{
	for (int j = 0; j < g; j++) {
		const struct block_q8_0 *qj = (const void *)((const char *)q + j * q_stride);
		for (int64_t i = 0; i < n; i++) {
			const struct block_q8_0 *ri = (const void *)((const char *)r + i * stride);
			float acc = 0;
			for (int64_t b = 0; b < hd / QK8_0; b++) {
				int32_t sum = 0;
				for (int e = 0; e < QK8_0; e++) sum += ri[b].qs[e] * qj[b].qs[e];
				acc += (float)sum *
				       (tensor_f16_to_f32(ri[b].d) * tensor_f16_to_f32(qj[b].d));
			}
			s[j * ld + i] = acc * scale;
		}
	}
}

static void mix_q8(int64_t hd, int g, const float *p, int64_t ld, const void *r, int64_t stride,
                   int64_t n, float *o, int64_t o_stride)
{
	for (int j = 0; j < g; j++)
		for (int64_t i = 0; i < n; i++) {
			const struct block_q8_0 *ri = (const void *)((const char *)r + i * stride);
			for (int64_t b = 0; b < hd / QK8_0; b++) {
				float w = p[j * ld + i] * tensor_f16_to_f32(ri[b].d);
				float *oj = o + j * o_stride + b * QK8_0;
				for (int e = 0; e < QK8_0; e++)
					oj[e] = fmaf(w, (float)ri[b].qs[e], oj[e]);
			}
		}
}

static void to_f16(const float *x, uint16_t *h, int64_t n)
{
	for (int64_t i = 0; i < n; i++) h[i] = tensor_f32_to_f16(x[i]);
}

static void from_f16(const uint16_t *h, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++) y[i] = tensor_f16_to_f32(h[i]);
}

const struct cpu_kernels cpu_kernels_ref = {
	.name = "ref",
	.act = { act_f32, act_q8_0, act_q8_1, act_q8_k },
	.gemm_f32 = gemm_f32,
	.gemm_f16 = gemm_f16,
	.gemm_bf16 = gemm_bf16,
	.gemm_q8_0 = gemm_q8_0,
	.gemm_q4_0 = gemm_q4_0,
	.gemm_q4_k = gemm_q4_k,
	.gemm_q6_k = gemm_q6_k,
	.gemm_q4_1 = gemm_q4_1,
	.gemm_q5_0 = gemm_q5_0,
	.gemm_q5_1 = gemm_q5_1,
	.gemm_q2_k = gemm_q2_k,
	.gemm_q3_k = gemm_q3_k,
	.gemm_q5_k = gemm_q5_k,
	.gemm_iq4_nl = gemm_iq4_nl,
	.gemm_iq4_xs = gemm_iq4_xs,
	.dot_f32 = attn_dot,
	.axpy_f32 = axpy_f32,
	.dot_f16 = dot_f16_ref,
	.axpy_f16 = axpy_f16,
	.score_f32 = score_f32,
	.mix_f32 = mix_f32,
	.score_f16 = score_f16,
	.mix_f16 = mix_f16,
	.score_q8 = score_q8,
	.mix_q8 = mix_q8,
	.softmax = softmax,
	.attn_qb = CPU_ATTN_QB,
	.score_t_f16 = score_t_f16,
	.softmax_t = softmax_t,
	.mix_t_f16 = mix_t_f16,
	.rmsnorm = cpu_rmsnorm,
	.swiglu = cpu_swiglu,
	.to_f16 = to_f16,
	.from_f16 = from_f16,
	.rope = cpu_rope_apply,
};
