/*
 * kern_ref.c - the plain C kernels: the reference every SIMD kernel is
 * tested against, and the fallback on CPUs without AVX2.
 *
 * The arithmetic follows ggml's reference dot products so that results track
 * llama.cpp: Q8_0/Q4_0 weights meet activations quantized to Q8_0 (integer
 * block sums, then scaled by both fp16 scales in float); F16 and BF16
 * weights are widened to float and meet float activations (that, not
 * rounding the activations to fp16, is what reproduces llama.cpp's F16
 * reference logits to 3e-7). Q4_K/Q6_K weights meet Q8_0 activations too
 * (see dot_q4_k).
 */
#include "cpu.h"

#include <math.h>

#include "quant.h"

/* ---- activation conversion ---- */

static void act_f32(const float *x, void *dst, int64_t n)
{
	memcpy(dst, x, (size_t)n * sizeof(float));
}

/* ggml's quantize_row_q8_0_ref: d = amax / 127, q = round(x / d) (half away from zero). */
static void act_q8_0(const float *x, void *dst, int64_t n)
{
	struct block_q8_0 *y = dst;
	for (int64_t b = 0; b < n / QK8_0; b++) {
		const float *xb = x + b * QK8_0;
		float amax = 0;
		for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(xb[j]));
		float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
		y[b].d = tensor_f32_to_f16(d);
		for (int j = 0; j < QK8_0; j++) y[b].qs[j] = (int8_t)roundf(xb[j] * id);
	}
	cpu_q8_tail_fill(dst, n / QK8_0);
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
 * K-quants against Q8_0 activations (as llama.cpp quantizes activations for
 * them, to Q8_K there): each Q8_0 activation block lines up with one 32-value
 * Q4_K sub-block or two 16-value Q6_K groups, whose integer sums are exact;
 * then, per activation block with scale dx:
 *   Q4_K: dx * (d * sc * sum(q x) - dmin * m * sum(x))
 *   Q6_K: dx * d * scale * sum((q - 32) x), per 16-value group.
 */
static float dot_q4_k(int64_t n, const struct block_q4_k *w, const struct block_q8_0 *x)
{
	float s = 0;
	for (int64_t b = 0; b < n / QK_K; b++) {
		float d = tensor_f16_to_f32(w[b].d), dmin = tensor_f16_to_f32(w[b].dmin);
		for (int sub = 0; sub < 8; sub++) {
			const struct block_q8_0 *xb = &x[8 * b + sub];
			const uint8_t *q = w[b].qs + 32 * (sub / 2);
			uint8_t sc, m;
			tensor_q4_k_scale_min(w[b].scales, sub, &sc, &m);
			int32_t qx = 0, sx = 0;
			for (int l = 0; l < 32; l++) {
				int v = sub % 2 ? q[l] >> 4 : q[l] & 0xF;
				qx += v * xb->qs[l];
				sx += xb->qs[l];
			}
			float dx = tensor_f16_to_f32(xb->d);
			s += dx * (d * (float)sc * (float)qx - dmin * (float)m * (float)sx);
		}
	}
	return s;
}

static float dot_q6_k(int64_t n, const struct block_q6_k *w, const struct block_q8_0 *x)
{
	float s = 0;
	for (int64_t b = 0; b < n / QK_K; b++) {
		float d = tensor_f16_to_f32(w[b].d);
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = w[b].ql + 64 * h, *qh = w[b].qh + 32 * h;
			const int8_t *sc = w[b].scales + 8 * h;
			for (int k = 0; k < 4; k++) {
				const struct block_q8_0 *xb = &x[8 * b + 4 * h + k];
				float dx = tensor_f16_to_f32(xb->d);
				for (int half = 0; half < 2; half++) {
					int32_t qx = 0;
					for (int l = 16 * half; l < 16 * half + 16; l++) {
						int lo = k % 2 ? ql[l + 32] : ql[l];
						lo = k < 2 ? lo & 0xF : lo >> 4;
						int q = (lo | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
						qx += q * xb->qs[l];
					}
					s += dx * (d * (float)sc[2 * k + half] * (float)qx);
				}
			}
		}
	}
	return s;
}

static void gemm_q4_k(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                      size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	GEMM_LOOP(dot_q4_k(n, wr, xt))
}

static void gemm_q6_k(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                      size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	GEMM_LOOP(dot_q6_k(n, wr, xt))
}

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

const struct cpu_kernels cpu_kernels_ref = {
	.name = "ref",
	.act = { act_f32, act_q8_0 },
	.gemm_f32 = gemm_f32,
	.gemm_f16 = gemm_f16,
	.gemm_bf16 = gemm_bf16,
	.gemm_q8_0 = gemm_q8_0,
	.gemm_q4_0 = gemm_q4_0,
	.gemm_q4_k = gemm_q4_k,
	.gemm_q6_k = gemm_q6_k,
	.dot_f32 = attn_dot,
	.axpy_f32 = axpy_f32,
	.dot_f16 = dot_f16_ref,
	.axpy_f16 = axpy_f16,
	.score_f32 = score_f32,
	.mix_f32 = mix_f32,
	.score_f16 = score_f16,
	.mix_f16 = mix_f16,
	.softmax = softmax,
	.attn_qb = CPU_ATTN_QB,
};
