/*
 * cuda_ref.h - plain C versions of the CUDA kernels (ref.c), the ground
 * truth tests/gpu compares each kernel with. Same arguments as the launchers
 * in cuda_ops.h, but every pointer is host memory, weights are in their GGUF
 * layout (not repacked) and sums run in double. Pure functions; no allocation
 * beyond a row buffer.
 */
#ifndef INFILL_KERNELS_CUDA_REF_H
#define INFILL_KERNELS_CUDA_REF_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y as in cuq_gemv_launch; w0/w1 GGUF bytes [rows][cols] of `type`. Returns 0 or -EINVAL. */
int cuq_ref_gemv(int type, const void *w0, const void *w1, int rows, int cols, const float *x,
                 int n, const float *norm_w, float eps, int mode, float *y0);
int cuq_ref_embed(int type, const void *w, int rows, int cols, const int32_t *ids, int n, float *x);
void cuq_ref_rmsnorm(const float *x, const float *w, int n, int dim, float eps, float *y);
void cuq_ref_swiglu(const float *g, const float *u, size_t count, float *out);
void cuq_ref_layernorm(const float *x, const float *w, const float *b, int n, int dim, float eps,
                       float *y);
/* gelu as ggml's CPU backend (see cuq_geglu_launch), and out = gelu(g) * u. */
float cuq_ref_gelu(float x);
void cuq_ref_geglu(const float *g, const float *u, size_t count, float *out);
/* kv->pool and kv->tables are host memory here; rope->freq too. A q8_0 pool
 * (kv->q8): the writers quantize as the kernels do (bit for bit, the same
 * float operations), and cuq_ref_attn rounds each query head to q8_0 blocks
 * before its dot products with the dequantized keys, in double. */
void cuq_ref_rope_kv(float *q, const float *k, const float *v, const float *bq, const float *bk,
                     const float *bv, const int32_t *pos, const int32_t *seq, int n, int n_heads,
                     const struct cuq_rope *rope, const struct cuq_kv *kv, int layer);
void cuq_ref_kv_shift(const struct cuq_kv *kv, const int32_t *src_page, const int32_t *src_slot,
                      const int32_t *dst_page, const int32_t *dst_slot, int n, int delta,
                      const struct cuq_rope *rope);
void cuq_ref_attn(const float *q, const int32_t *pos, const int32_t *seq, int n, int n_heads,
                  const struct cuq_kv *kv, int layer, float *out);
/* Host-side parameters (arrays of n, NULL as in cuq_sample_params). */
void cuq_ref_sample(const float *logits, int n, int vocab, const float *temp, const int32_t *top_k,
                    const float *top_p, const float *u, int32_t *ids, float *logprob);

#ifdef __cplusplus
}
#endif

#endif
