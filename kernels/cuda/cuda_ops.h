/*
 * cuda_ops.h - the CUDA kernels of the CUDA backend, one launcher each.
 * Private to kernels/cuda/ and tests/gpu/.
 *
 * Every launcher sizes its own grid, enqueues on the given stream and returns
 * 0 or a negative error (-EINVAL for bad arguments, -EIO for a launch error);
 * it never synchronizes, so a sequence of launchers can be captured into a
 * CUDA graph. All pointers are device pointers unless a name says host.
 * Activations are f32, row-major [n_tokens][width]; KV pages are f16 or q8_0 (struct cuq_kv).
 *
 * Beside each kernel, ref.c holds a plain C version of the same math
 * (cuda_ref.h) that the tests compare against with stated tolerances.
 *
 * Threads: launchers may be called from any thread; the stream's owner
 * serializes them (the backend uses one stream per engine thread).
 */
#ifndef INFILL_KERNELS_CUDA_OPS_H
#define INFILL_KERNELS_CUDA_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Weight types the kernels read; values are GGUF tensor type numbers. */
enum cuq_type {
	CUQ_F32 = 0,
	CUQ_F16 = 1,
	CUQ_Q4_0 = 2,
	CUQ_Q8_0 = 8,
	CUQ_Q4_K = 12,
	CUQ_Q6_K = 14,
	CUQ_BF16 = 30,
};

/* ---- weights: layout on the device ----
 *
 * F32/F16/BF16 stay as in the file (row-major [rows][cols]). The block types
 * are repacked at upload into structure-of-arrays form so every load is an
 * aligned 16-byte load and a warp reads contiguous memory:
 *   Q8_0: d  = f16 [rows*cols/32], q  = int8 [rows*cols]      (32 per block)
 *   Q4_0: d  = f16 [rows*cols/32], q  = u8   [rows*cols/2]    (16 per block, GGUF nibble order)
 *   Q4_K: q  = the GGUF blocks unchanged (144 bytes: a multiple of 16)
 *   Q6_K: q  = ql u8 [nsb*128], q2 = qh u8 [nsb*64], sc = int8 [nsb*16], d = f16 [nsb]
 *         (nsb = rows*cols/256 super-blocks)
 * cuq_repack() writes that layout into one host buffer of cuq_repacked_size()
 * bytes; cuq_weight_bind() points a struct cuq_weight into the device copy. */
struct cuq_weight {
	int type; /* enum cuq_type */
	int rows; /* output size (GGUF ne1) */
	int cols; /* input size (GGUF ne0); a multiple of 32 (256 for K types) */
	const void *q;
	const void *q2;
	const int8_t *sc;
	const void *d; /* f16 scales */
};

/* Bytes of a [rows][cols] tensor of `type` as stored in GGUF; 0 if unsupported or misaligned cols. */
size_t cuq_file_size(int type, int64_t rows, int64_t cols);
/* Bytes of the repacked layout (same as the file size rounded up per section to 256). */
size_t cuq_repacked_size(int type, int64_t rows, int64_t cols);
/* Repacks `src` (GGUF bytes, borrowed) into `dst` (cuq_repacked_size bytes, caller-owned). */
int cuq_repack(int type, int64_t rows, int64_t cols, const void *src, void *dst);
/* Fills *w for a repacked copy at device address `base`. */
void cuq_weight_bind(struct cuq_weight *w, int type, int64_t rows, int64_t cols, const void *base);

/* ---- matrix-vector products (decode, N candidates) ----
 *
 * y[t][r] = sum_k W[r][k] * x'[t][k] for t < n, r < rows, where
 * x' = x, or rmsnorm(x) * norm_w when norm_w is set (eps as given). Each weight
 * block is read once for all n rows (n <= CUQ_GEMV_MAX_N per launch; the
 * launcher loops over chunks beyond that). Mode:
 *   STORE  : y0 = W0 x'                 (and y1 = W1 x', y2 = W2 x' when given)
 *   ADD    : y0 += W0 x'                (the residual add fused)
 *   SWIGLU : y0 = silu(W0 x') * (W1 x') (gate and up fused)
 *   GEGLU  : y0 = gelu(W0 x') * (W1 x') (gemma; gelu as cuq_gelu below)
 * Weights given together must share type and cols. Output stride = that weight's rows. */
enum cuq_gemv_mode {
	CUQ_GEMV_STORE = 0,
	CUQ_GEMV_ADD = 1,
	CUQ_GEMV_SWIGLU = 2,
	CUQ_GEMV_GEGLU = 3
};
#define CUQ_GEMV_MAX_N 8

struct cuq_gemv {
	struct cuq_weight w[3];
	float *y[3];
	int nw;         /* weights used: 1..3 (2 for SWIGLU and GEGLU) */
	int mode;       /* enum cuq_gemv_mode */
	const float *x; /* [n][cols] */
	int n;
	const float *norm_w; /* [cols] or NULL */
	float eps;
};
int cuq_gemv_launch(const struct cuq_gemv *g, cudaStream_t stream);

/* W (any type) -> f16 [rows][cols], for the cuBLAS prefill path. */
int cuq_dequant_f16_launch(const struct cuq_weight *w, void *out_f16, cudaStream_t stream);

/* ---- elementwise and small ops ---- */

/* x[t][:] = dequantized row ids[t] of the embedding table w ([vocab][dim]). */
int cuq_embed_launch(const struct cuq_weight *w, const int32_t *ids, int n, float *x,
                     cudaStream_t stream);
/* y[t][:] = rmsnorm(x[t][:]) * w; y may equal x. */
int cuq_rmsnorm_launch(const float *x, const float *w, int n, int dim, float eps, float *y,
                       cudaStream_t stream);
/* Like rmsnorm, writing f16 or bf16 (is_bf16) for a tensor-core GEMM; w may be
 * NULL (plain conversion). With scale (device, 1 + 2n floats; f16 only), the
 * n rows are written times 2^-e, e >= 0 the least that keeps every |value|
 * under 2^15, and scale[0] = 2^e: the GEMM's alpha. The rest is scratch. */
int cuq_rmsnorm_half_launch(const float *x, const float *w, int n, int dim, float eps, int is_bf16,
                            void *y, float *scale, cudaStream_t stream);
/* out[t][i] = silu(g[t][i]) * u[t][i]. */
int cuq_swiglu_launch(const float *g, const float *u, int n, int width, float *out,
                      cudaStream_t stream);
/* out[t][i] = gelu(g[t][i]) * u[t][i], gelu as ggml's CPU backend computes
 * it (the tanh form on the f16 grid: input and output rounded to f16; 0 at
 * or below -10, x at or above 10), which the CPU backend and llama.cpp's
 * logits use. */
int cuq_geglu_launch(const float *g, const float *u, int n, int width, float *out,
                     cudaStream_t stream);
/* y[t][:] = (x[t][:] - mean) / sqrt(var + eps) * w + b (starcoder2's
 * LayerNorm; b may be NULL); y may equal x. */
int cuq_layernorm_launch(const float *x, const float *w, const float *b, int n, int dim, float eps,
                         float *y, cudaStream_t stream);
/* x[t][i] += b[i] for t < n, i < width (output biases). */
int cuq_bias_launch(float *x, const float *b, int n, int width, cudaStream_t stream);
/* x[i] = gelu(x[i]) over count values (starcoder2's ungated MLP; gelu as
 * cuq_geglu_launch). */
int cuq_gelu_launch(float *x, size_t count, cudaStream_t stream);
/* x[i] *= s over count values (gemma's embedding scale). */
int cuq_scale_launch(float *x, size_t count, float s, cudaStream_t stream);
/* x += y elementwise over count values. */
int cuq_add_launch(float *x, const float *y, size_t count, cudaStream_t stream);

/* ---- paged KV ----
 *
 * The pool holds n_pages pages; page p, layer l, K (kv=0) or V (kv=1), slot s is
 * the f16 vector [n_kv_heads*head_dim] at
 *   pool + (((p*n_layers + l)*2 + kv)*page_size + s) * kv_dim
 * so one page of every layer is contiguous (a page copy is one memcpy).
 * A batch entry t has a sequence index seq[t] and a position pos[t]; its
 * page is tables[seq[t]*max_pages + pos[t]/page_size]. */
struct cuq_kv {
	void *pool; /* f16, or q8_0 blocks where q8 */
	int n_layers;
	int page_size; /* tokens per page */
	int n_kv_heads;
	int head_dim;
	int max_pages;         /* page-table width per sequence */
	const int32_t *tables; /* [n_seqs][max_pages] on the device */
	/* cache.kvType q8_0: a slot's vector is kv_dim/32 of llama.cpp's q8_0
	 * blocks (CUQ_Q8_BLOCK bytes: an fp16 scale d, then 32 int8; d = amax/127,
	 * q = round-half-even(x * 127/amax), as the CPU backend's
	 * cpu_q8_0_quantize), head h's blocks from block h*head_dim/32, so the
	 * offsets above count cuq_kv_row_bytes() per slot instead of kv_dim f16.
	 * head_dim must be a multiple of 32. The writers quantize as they store;
	 * attention reads the blocks directly (no dequantized copy). */
	int q8;
};

#define CUQ_Q8_BLOCK 34 /* bytes of one q8_0 block of 32 values */

/* Bytes of one slot's K (or V) vector in the pool. */
static inline size_t cuq_kv_row_bytes(const struct cuq_kv *kv)
{
	const size_t kvd = (size_t)kv->n_kv_heads * kv->head_dim;
	return kv->q8 ? kvd / 32 * CUQ_Q8_BLOCK : kvd * 2;
}

/* RoPE: for pair i < n_rot/2 of each head, angle = pos * freq[i] with
 * freq[i] = scale * base^(-2i/n_rot) (a host-made table: cuq_rope_freqs).
 * Pairs are adjacent (x[2i], x[2i+1]) (llama.cpp "NORM", Llama) or halves
 * (x[i], x[i + n_rot/2]) when neox (Qwen2). cuq_rope_kv_launch adds the
 * optional biases (bq [n_heads*head_dim], bk/bv [kv_dim], NULL when absent),
 * rotates q [n][n_heads*head_dim] in place, rotates k, and writes k and v
 * ([n][kv_dim]) as f16 into layer `layer` of the pool at each entry's slot. */
void cuq_rope_freqs(float base, float scale, int n_rot, float *freq_host);
struct cuq_rope {
	int n_rot;
	int neox;
	const float *freq; /* [n_rot/2] on the device */
};
int cuq_rope_kv_launch(float *q, const float *k, const float *v, const float *bq, const float *bk,
                       const float *bv, const int32_t *pos, const int32_t *seq, int n, int n_heads,
                       const struct cuq_rope *rope, const struct cuq_kv *kv, int layer,
                       cudaStream_t stream);
/* Moves n cached tokens, every layer: K/V of (src_page[i], src_slot[i]) go to
 * (dst_page[i], dst_slot[i]), K rotated by `delta` positions (RoPE composes).
 * A source may equal its destination (in place); otherwise they must not overlap. */
int cuq_kv_shift_launch(const struct cuq_kv *kv, const int32_t *src_page, const int32_t *src_slot,
                        const int32_t *dst_page, const int32_t *dst_slot, int n, int delta,
                        const struct cuq_rope *rope, cudaStream_t stream);
/* dst[i][:] = src[rows[i]][:] for i < n (width floats per row). */
int cuq_gather_launch(const float *src, const int32_t *rows, int n, int width, float *dst,
                      cudaStream_t stream);

/* Attention of query entry t (head h) over positions 0..pos[t] of sequence seq[t]
 * read through the page table, scores scaled by 1/sqrt(head_dim); GQA maps head
 * h to KV head h / (n_heads/n_kv_heads). The positions of each entry are split
 * into n_splits equal chunks worked on in parallel and merged after
 * (flash-decoding); the split count, not the chunk length, is fixed, so the
 * grid does not depend on sequence lengths and a captured graph stays valid as
 * sequences grow. n_splits == 1 writes `out` directly; otherwise `part` is
 * scratch of cuq_attn_scratch() bytes. head_dim: a multiple of 4, <= 256 (of
 * 32 with a q8_0 pool, whose keys are dotted with the query rounded to q8_0
 * blocks as the CPU backend and llama.cpp do: an exact integer sum per block
 * times both scales; values are widened in registers).
 * out [n][n_heads*head_dim] f32. cuq_attn_splits() picks a split count that
 * fills the GPU for n entries. */
#define CUQ_ATTN_MAX_SPLITS 32
size_t cuq_attn_scratch(int n, int n_heads, int head_dim, int n_splits);
int cuq_attn_splits(int n, int n_heads, int n_sm);
int cuq_attn_launch(const float *q, const int32_t *pos, const int32_t *seq, int n, int n_heads,
                    const struct cuq_kv *kv, int layer, int n_splits, float *part, float *out,
                    cudaStream_t stream);

/* ---- sampling ----
 * For each row r < n of logits [n][vocab]: temperature t[r] <= 0 means greedy
 * (argmax, lowest id on ties); otherwise keep the top_k[r] (1..CUQ_TOPK_MAX)
 * largest, softmax at temperature t[r], keep the smallest prefix whose mass
 * reaches top_p[r], and pick with the uniform number u[r] in [0,1) (made by the
 * host's seeded generator, so runs reproduce). Writes ids[r] and the chosen
 * token's log-probability under the untempered full softmax (logprob[r], may be NULL). */
#define CUQ_TOPK_MAX 64
struct cuq_sample_params {
	const float *temp;
	const int32_t *top_k;
	const float *top_p;
	const float *u;
};
int cuq_sample_launch(const float *logits, int n, int vocab, const struct cuq_sample_params *p,
                      int32_t *ids, float *logprob, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
