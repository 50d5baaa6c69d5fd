/*
 * ref.c - plain C references of the CUDA kernels (see cuda_ref.h). Written
 * straight from the math, in double where sums are long, with weights
 * dequantized by quant.h's reference (kernels/quant.c, written apart from
 * the CUDA code) so the tests check the kernels' block decoding against an
 * independent one.
 */
#include "cuda_ref.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

int cuq_ref_gemv(int type, const void *w0, const void *w1, int rows, int cols, const float *x,
                 int n, const float *norm_w, float eps, int mode, float *y0)
{
	const uint64_t rs = tensor_type_row_size((uint32_t)type, cols);
	if (!rs) return -EINVAL;
	float *row = malloc(sizeof(float) * (size_t)cols * 2);
	float *xn = malloc(sizeof(float) * (size_t)cols);
	if (!row || !xn) {
		free(row);
		free(xn);
		return -ENOMEM;
	}
	for (int t = 0; t < n; t++) {
		const float *xt = x + (size_t)t * cols;
		double ss = 0;
		for (int k = 0; k < cols; k++) ss += (double)xt[k] * xt[k];
		const double inv = norm_w ? 1.0 / sqrt(ss / cols + eps) : 1.0;
		for (int k = 0; k < cols; k++)
			xn[k] = norm_w ? (float)(xt[k] * inv * norm_w[k]) : xt[k];
		for (int r = 0; r < rows; r++) {
			tensor_row_dequantize((uint32_t)type, (const uint8_t *)w0 + rs * r, row,
			                      cols);
			double a = 0, b = 0;
			for (int k = 0; k < cols; k++) a += (double)row[k] * xn[k];
			if (mode == CUQ_GEMV_SWIGLU || mode == CUQ_GEMV_GEGLU) {
				tensor_row_dequantize((uint32_t)type, (const uint8_t *)w1 + rs * r,
				                      row + cols, cols);
				for (int k = 0; k < cols; k++) b += (double)row[cols + k] * xn[k];
			}
			float *y = y0 + (size_t)t * rows + r;
			if (mode == CUQ_GEMV_ADD)
				*y += (float)a;
			else if (mode == CUQ_GEMV_SWIGLU)
				*y = (float)(a / (1.0 + exp(-a)) * b);
			else if (mode == CUQ_GEMV_GEGLU)
				*y = cuq_ref_gelu((float)a) * (float)b;
			else
				*y = (float)a;
		}
	}
	free(row);
	free(xn);
	return 0;
}

int cuq_ref_embed(int type, const void *w, int rows, int cols, const int32_t *ids, int n, float *x)
{
	const uint64_t rs = tensor_type_row_size((uint32_t)type, cols);
	if (!rs) return -EINVAL;
	for (int t = 0; t < n; t++) {
		const int id = ids[t] >= 0 && ids[t] < rows ? ids[t] : 0;
		tensor_row_dequantize((uint32_t)type, (const uint8_t *)w + rs * id,
		                      x + (size_t)t * cols, cols);
	}
	return 0;
}

void cuq_ref_rmsnorm(const float *x, const float *w, int n, int dim, float eps, float *y)
{
	for (int t = 0; t < n; t++) {
		double ss = 0;
		for (int k = 0; k < dim; k++)
			ss += (double)x[(size_t)t * dim + k] * x[(size_t)t * dim + k];
		const double inv = 1.0 / sqrt(ss / dim + eps);
		for (int k = 0; k < dim; k++)
			y[(size_t)t * dim + k] =
			        (float)(x[(size_t)t * dim + k] * inv * (w ? w[k] : 1.f));
	}
}

void cuq_ref_swiglu(const float *g, const float *u, size_t count, float *out)
{
	for (size_t i = 0; i < count; i++)
		out[i] = (float)(g[i] / (1.0 + exp(-(double)g[i])) * u[i]);
}

void cuq_ref_layernorm(const float *x, const float *w, const float *b, int n, int dim, float eps,
                       float *y)
{
	for (int t = 0; t < n; t++) {
		const float *xr = x + (size_t)t * dim;
		double mean = 0, var = 0;
		for (int k = 0; k < dim; k++) mean += xr[k];
		mean /= dim;
		for (int k = 0; k < dim; k++) var += (xr[k] - mean) * (xr[k] - mean);
		const double inv = 1.0 / sqrt(var / dim + eps);
		for (int k = 0; k < dim; k++)
			y[(size_t)t * dim + k] =
			        (float)((xr[k] - mean) * inv * w[k] + (b ? b[k] : 0));
	}
}

float cuq_ref_gelu(float x)
{
	if (x <= -10.f) return 0.f;
	if (x >= 10.f) return x;
	const double h = tensor_f16_to_f32(tensor_f32_to_f16(x));
	const double g = 0.5 * h * (1.0 + tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)));
	return tensor_f16_to_f32(tensor_f32_to_f16((float)g));
}

void cuq_ref_geglu(const float *g, const float *u, size_t count, float *out)
{
	for (size_t i = 0; i < count; i++) out[i] = cuq_ref_gelu(g[i]) * u[i];
}

/* ---- RoPE and the KV pool ---- */

static uint16_t *kv_at(const struct cuq_kv *kv, int page, int layer, int which, int slot)
{
	const size_t kvd = (size_t)kv->n_kv_heads * kv->head_dim;
	return (uint16_t *)kv->pool +
	       ((((size_t)page * kv->n_layers + layer) * 2 + which) * kv->page_size + slot) * kvd;
}

/* A slot's vector as bytes, for either pool type (cuq_kv_row_bytes). */
static unsigned char *kv_row(const struct cuq_kv *kv, int page, int layer, int which, int slot)
{
	return (unsigned char *)kv->pool +
	       ((((size_t)page * kv->n_layers + layer) * 2 + which) * kv->page_size + slot) *
	               cuq_kv_row_bytes(kv);
}

/* n floats (a multiple of 32) to q8_0 blocks: d = amax / 127 stored as fp16,
 * q = x * (127 / amax) rounded half to even (the CPU backend's
 * cpu_q8_0_quantize, written again here from the format's definition). */
static void q8_quantize(const float *x, unsigned char *dst, int n)
{
	for (int b = 0; b < n / 32; b++, x += 32, dst += CUQ_Q8_BLOCK) {
		struct block_q8_0 blk;
		float amax = 0;
		for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
		const float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
		blk.d = tensor_f32_to_f16(d);
		for (int j = 0; j < 32; j++) blk.qs[j] = (int8_t)nearbyintf(x[j] * id);
		memcpy(dst, &blk, CUQ_Q8_BLOCK);
	}
}

/* A slot's K or V vector (kv_dim values) from floats, in the pool's type. */
static void kv_store(const struct cuq_kv *kv, int page, int layer, int which, int slot,
                     const float *x)
{
	const int kvd = kv->n_kv_heads * kv->head_dim;
	if (kv->q8) {
		q8_quantize(x, kv_row(kv, page, layer, which, slot), kvd);
		return;
	}
	uint16_t *h = kv_at(kv, page, layer, which, slot);
	for (int i = 0; i < kvd; i++) h[i] = tensor_f32_to_f16(x[i]);
}

/* Head h's D values of a slot's K or V vector as floats (quant.h's
 * dequantizer for q8_0). */
static void kv_load_head(const struct cuq_kv *kv, int page, int layer, int which, int slot, int h,
                         float *out)
{
	const int D = kv->head_dim;
	if (kv->q8) {
		tensor_row_dequantize(TENSOR_TYPE_Q8_0,
		                      kv_row(kv, page, layer, which, slot) +
		                              (size_t)h * (D / 32) * CUQ_Q8_BLOCK,
		                      out, D);
		return;
	}
	const uint16_t *p = kv_at(kv, page, layer, which, slot) + (size_t)h * D;
	for (int d = 0; d < D; d++) out[d] = tensor_f16_to_f32(p[d]);
}

static int pair_of(int i, const struct cuq_rope *r, int *a, int *b)
{
	const int h = r->n_rot / 2;
	if (i < h) {
		*a = r->neox ? i : 2 * i;
		*b = r->neox ? i + h : 2 * i + 1;
		return 1;
	}
	*a = r->n_rot + 2 * (i - h);
	*b = *a + 1;
	return 0;
}

static void rotate(float *a, float *b, double angle)
{
	const double c = cos(angle), s = sin(angle), x0 = *a, x1 = *b;
	*a = (float)(x0 * c - x1 * s);
	*b = (float)(x0 * s + x1 * c);
}

/* Rotates one head-major vector of nh heads in place; bias added first. */
static void rope_vec(float *x, const float *bias, int nh, int D, const struct cuq_rope *r, double p)
{
	for (int h = 0; h < nh; h++)
		for (int i = 0; i < D / 2; i++) {
			int ia, ib;
			const int rot = pair_of(i, r, &ia, &ib);
			ia += h * D, ib += h * D;
			if (bias) x[ia] += bias[ia], x[ib] += bias[ib];
			if (rot) rotate(&x[ia], &x[ib], p * r->freq[i]);
		}
}

void cuq_ref_rope_kv(float *q, const float *k, const float *v, const float *bq, const float *bk,
                     const float *bv, const int32_t *pos, const int32_t *seq, int n, int n_heads,
                     const struct cuq_rope *rope, const struct cuq_kv *kv, int layer)
{
	const int D = kv->head_dim, kvd = kv->n_kv_heads * D;
	float *kr = malloc(sizeof(float) * (size_t)kvd), *vr = malloc(sizeof(float) * (size_t)kvd);
	if (!kr || !vr) goto out;
	for (int t = 0; t < n; t++) {
		/* The angle is formed in f32 as the kernel does (pos * freq), then taken exactly. */
		rope_vec(q + (size_t)t * n_heads * D, bq, n_heads, D, rope, (double)pos[t]);
		memcpy(kr, k + (size_t)t * kvd, sizeof(float) * (size_t)kvd);
		rope_vec(kr, bk, kv->n_kv_heads, D, rope, (double)pos[t]);
		const int page =
		        kv->tables[(size_t)seq[t] * kv->max_pages + pos[t] / kv->page_size];
		const int slot = pos[t] % kv->page_size;
		for (int i = 0; i < kvd; i++) vr[i] = v[(size_t)t * kvd + i] + (bv ? bv[i] : 0.f);
		kv_store(kv, page, layer, 0, slot, kr);
		kv_store(kv, page, layer, 1, slot, vr);
	}
out:
	free(kr);
	free(vr);
}

void cuq_ref_kv_shift(const struct cuq_kv *kv, const int32_t *src_page, const int32_t *src_slot,
                      const int32_t *dst_page, const int32_t *dst_slot, int n, int delta,
                      const struct cuq_rope *rope)
{
	const int D = kv->head_dim, kvd = kv->n_kv_heads * D;
	const size_t rb = cuq_kv_row_bytes(kv);
	float *kr = malloc(sizeof(float) * (size_t)kvd);
	unsigned char *vr = malloc(rb);
	if (!kr || !vr) goto out;
	for (int i = 0; i < n; i++)
		for (int l = 0; l < kv->n_layers; l++) {
			for (int h = 0; h < kv->n_kv_heads; h++)
				kv_load_head(kv, src_page[i], l, 0, src_slot[i], h,
				             kr + (size_t)h * D);
			memcpy(vr, kv_row(kv, src_page[i], l, 1, src_slot[i]), rb);
			rope_vec(kr, NULL, kv->n_kv_heads, D, rope, (double)delta);
			kv_store(kv, dst_page[i], l, 0, dst_slot[i], kr);
			memcpy(kv_row(kv, dst_page[i], l, 1, dst_slot[i]), vr, rb);
		}
out:
	free(kr);
	free(vr);
}

void cuq_ref_attn(const float *q, const int32_t *pos, const int32_t *seq, int n, int n_heads,
                  const struct cuq_kv *kv, int layer, float *out)
{
	const int D = kv->head_dim, group = n_heads / kv->n_kv_heads;
	for (int t = 0; t < n; t++) {
		const int L = pos[t] + 1;
		double *sc = malloc(sizeof(double) * (size_t)L);
		float *row = malloc(sizeof(float) * (size_t)D),
		      *qr = malloc(sizeof(float) * (size_t)D);
		double *acc = malloc(sizeof(double) * (size_t)D);
		unsigned char *q8 = malloc((size_t)D / 32 * CUQ_Q8_BLOCK + CUQ_Q8_BLOCK);
		if (!sc || !row || !qr || !acc || !q8) {
			free(sc), free(row), free(qr), free(acc), free(q8);
			return;
		}
		const int32_t *table = kv->tables + (size_t)seq[t] * kv->max_pages;
		for (int h = 0; h < n_heads; h++) {
			const float *qh = q + ((size_t)t * n_heads + h) * D;
			const int kh = h / group;
			/* a q8_0 cache's keys meet the query rounded to q8_0 too */
			if (kv->q8) {
				q8_quantize(qh, q8, D);
				tensor_row_dequantize(TENSOR_TYPE_Q8_0, q8, qr, D);
			} else
				memcpy(qr, qh, sizeof(float) * (size_t)D);
			double m = -INFINITY, sum = 0;
			for (int p = 0; p < L; p++) {
				kv_load_head(kv, table[p / kv->page_size], layer, 0,
				             p % kv->page_size, kh, row);
				double s = 0;
				for (int d = 0; d < D; d++) s += (double)qr[d] * row[d];
				sc[p] = s / sqrt((double)D);
				if (sc[p] > m) m = sc[p];
			}
			for (int p = 0; p < L; p++) sum += (sc[p] = exp(sc[p] - m));
			for (int d = 0; d < D; d++) acc[d] = 0;
			for (int p = 0; p < L; p++) {
				kv_load_head(kv, table[p / kv->page_size], layer, 1,
				             p % kv->page_size, kh, row);
				for (int d = 0; d < D; d++) acc[d] += sc[p] * row[d];
			}
			for (int d = 0; d < D; d++)
				out[((size_t)t * n_heads + h) * D + d] = (float)(acc[d] / sum);
		}
		free(sc), free(row), free(qr), free(acc), free(q8);
	}
}

/* ---- sampling ---- */

struct cand {
	float v;
	int id;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->v != y->v) return x->v > y->v ? -1 : 1;
	return x->id - y->id;
}

void cuq_ref_sample(const float *logits, int n, int vocab, const float *temp, const int32_t *top_k,
                    const float *top_p, const float *u, int32_t *ids, float *logprob)
{
	struct cand *c = malloc(sizeof *c * (size_t)vocab);
	if (!c) return;
	for (int r = 0; r < n; r++) {
		const float *x = logits + (size_t)r * vocab;
		int nc = 0;
		for (int i = 0; i < vocab; i++)
			if (x[i] == x[i]) c[nc++] = (struct cand){ x[i], i };
		qsort(c, (size_t)nc, sizeof *c, cand_cmp);
		double se = 0;
		for (int i = 0; i < nc; i++) se += exp((double)c[i].v - c[0].v);
		const double lse = c[0].v + log(se);
		const float t = temp ? temp[r] : 0.f;
		int k = top_k ? top_k[r] : 1;
		k = k < 1 ? 1 : k > CUQ_TOPK_MAX ? CUQ_TOPK_MAX : k;
		if (k > nc) k = nc;
		int pick = 0;
		if (t > 0.f && k > 1) {
			double w[CUQ_TOPK_MAX], total = 0, mass = 0, kept = 0, acc = 0;
			for (int i = 0; i < k; i++)
				total += (w[i] = exp(((double)c[i].v - c[0].v) / t));
			int keep = k;
			const double tp = top_p ? top_p[r] : 1.0;
			for (int i = 0; i < k; i++) {
				mass += w[i];
				if (mass >= tp * total) {
					keep = i + 1;
					break;
				}
			}
			for (int i = 0; i < keep; i++) kept += w[i];
			const double target = (u ? u[r] : 0.0) * kept;
			pick = keep - 1;
			for (int i = 0; i < keep; i++) {
				acc += w[i];
				if (target < acc) {
					pick = i;
					break;
				}
			}
		}
		ids[r] = c[pick].id;
		if (logprob) logprob[r] = (float)(c[pick].v - lse);
	}
	free(c);
}
