/*
 * cpu.h - private to kernels/cpu: the worker pool, the per-ISA matrix
 * kernels and the small vector ops the CPU forward pass is built from.
 *
 * Matrix products run as "weights x activations": a weight matrix keeps its
 * GGUF blocks; the activations are first converted to the type the weight's
 * kernel wants (act_type_for), e.g. Q8_0 blocks for Q8_0/Q4_0 weights as
 * ggml does, so dot products run in integers and results follow llama.cpp.
 */
#ifndef INFILL_KERNELS_CPU_H
#define INFILL_KERNELS_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- worker pool ---- */

struct cpu_pool;

/* The task runs on n threads at once (the caller is thread 0). */
typedef void (*cpu_task_fn)(void *arg, int ith, int nth);

/* New pool of n_threads (>= 1) threads including the caller; NULL on failure. */
struct cpu_pool *cpu_pool_create(int n_threads);
void cpu_pool_destroy(struct cpu_pool *p); /* accepts NULL */
int cpu_pool_threads(const struct cpu_pool *p);
/* Runs fn(arg, ith, nth) for ith in [0, nth) in parallel and returns when all finished. */
void cpu_pool_run(struct cpu_pool *p, cpu_task_fn fn, void *arg);

/* Splits [0, n) into nth contiguous parts aligned to `align`; part ith is [*lo, *hi). */
void cpu_split(int64_t n, int64_t align, int ith, int nth, int64_t *lo, int64_t *hi);

/* ---- activations ---- */

/* The activation format a weight type's kernel consumes. */
enum cpu_act {
	CPU_ACT_F32,  /* float: F32, F16, BF16 weights */
	CPU_ACT_Q8_0, /* Q8_0 blocks + tail: Q8_0, Q4_0, Q5_0, IQ4_NL weights */
	CPU_ACT_Q8_1, /* Q8_1 blocks: Q4_1, Q5_1 weights */
	CPU_ACT_Q8_K, /* Q8_K blocks: Q2_K..Q6_K, IQ4_XS weights */
};
#define CPU_ACT_COUNT 4

enum cpu_act cpu_act_for(uint32_t weight_type);
/* The formats follow ggml's CPU backend (its vec_dot_type of each weight
 * type), so integer block sums and the rounding of activations are the same
 * as llama.cpp's and logits match it. */
/* Bytes of one activation row of n elements in format a (a multiple of 64). */
size_t cpu_act_row_bytes(enum cpu_act a, int64_t n);

/*
 * A CPU_ACT_Q8_0 row of nb = n / 32 blocks: the blocks in ggml's layout
 * (what the reference kernels read), then, from a 64-byte boundary, three
 * arrays of nb entries the SIMD kernels read instead of recomputing them for
 * every weight row: vpdpbusd multiplies unsigned by signed bytes, so the
 * kernels feed weights offset by +128 (or Q4_0's raw nibbles) and correct
 * with the block sums of x.
 */
struct cpu_q8_tail {
	int32_t *bias; /* -128 * sum of the block's 32 values */
	float *d;      /* the block's scale widened to float */
	float *dsum;   /* d * sum of the block's 32 values (rounded once) */
};

/* Byte offset of the tail in a row of nb blocks: bias at +0, d at + 4 nb,
 * dsum at + 8 nb. */
static inline size_t cpu_q8_tail_offset(int64_t nb)
{
	return ((size_t)nb * 34 + 63) / 64 * 64;
}

static inline struct cpu_q8_tail cpu_q8_tail_of(const void *row, int64_t nb)
{
	char *base = (char *)row + cpu_q8_tail_offset(nb);
	struct cpu_q8_tail t = { (int32_t *)base, (float *)(base + 4 * nb),
		                 (float *)(base + 8 * nb) };
	return t;
}

/* Fills the tail of a Q8_0 activation row whose blocks are written (every act_q8_0 calls it). */
void cpu_q8_tail_fill(void *row, int64_t nb);

/*
 * y[t * ldy + r] = dot(weight row r, activation row t) for r < nr, t < nt.
 * w: nr rows of w_stride bytes; x: nt rows of x_stride bytes in the
 * weight's activation format; n: elements per row (a multiple of the block).
 */
typedef void (*cpu_gemm_fn)(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                            size_t x_stride, int64_t nt, float *y, int64_t ldy);

/*
 * Prompts on Q4_0 / Q8_0 panels read their activations interleaved: a tile
 * of 8 CPU_ACT_Q8_0 rows, block by block, the 8 tokens' 32 quant bytes,
 * their biases (the tail's, and >> 4: Q4_0's -8 sum(x)) and their scales,
 * CPU_IL_BLK bytes a block. A kernel then takes every activation it
 * broadcasts at a constant offset from one pointer, where 8 row pointers
 * took more instructions than its vpdpbusd (AVX-512, two-panel Q4_0 tile,
 * 8 tokens, one core: 588-647 -> 716-758 GFLOP/s, 2048- and 5504-wide).
 * The values are the rows' own: the results are the same bits.
 */
#define CPU_IL_BLK   352
#define CPU_IL_BIAS4 256 /* int32[8]: bias >> 4 */
#define CPU_IL_BIAS  288 /* int32[8]: bias */
#define CPU_IL_D     320 /* float[8]: scales */

static inline size_t cpu_il_tile_bytes(int64_t n)
{
	return (size_t)(n / 32) * CPU_IL_BLK;
}

/* Interleaves the 8 CPU_ACT_Q8_0 rows at x (x_stride apart, n values each)
 * into il (cpu_il_tile_bytes(n)). */
void cpu_il_pack(const void *x, size_t x_stride, int64_t n, void *il);

/* y[t * ldy + r] for r < nr (a multiple of 16: two full panels at a time)
 * and t < 8 ntl, from w's panels (a cpu_gemm_fn's w) and ntl tiles of
 * cpu_il_pack, cpu_il_tile_bytes(n) apart: the set's panel kernel's bits. */
typedef void (*cpu_gemm_il_fn)(int64_t n, const void *w, size_t w_stride, int64_t nr,
                               const void *il, int64_t ntl, float *y, int64_t ldy);

/* ---- Q4_0 in 8-row panels (repack.c) ---- */

/*
 * A weight type private to the CPU backend (outside GGML's numbering): Q4_0
 * rows re-laid out by cpu_q4_0_p8_pack, read by a set's gemm_q4_0_p8. Its
 * row size and activation format are Q4_0's; a gemm call's w is a panel
 * start (row r0 a multiple of 8) and w_stride the Q4_0 row size.
 */
#define CPU_TYPE_Q4_0_P8 0x1002u

/* How far ahead the panel kernels prefetch, bytes: a single core streams
 * packed Q4_0 from DRAM at 17 GB/s with 2 KB ahead and 26 GB/s with 8 KB
 * (AVX-512 host, 500 MB, nt=1; ~100 ns of DRAM latency at that rate is
 * 2.7 KB in flight). */
#define CPU_P8_PREFETCH 8192

/* Where block b of a Q4_0 / Q8_0 panel (repack.c) lies, blk = 8 (2 + q)
 * its bytes: blocks go in groups of 4 (k < 4 in a last group), the
 * group's scales (16 k bytes) then its quants (blk - 16 bytes a block). */
static inline size_t cpu_p8_scales_at(int64_t b, size_t blk)
{
	return (size_t)(b & ~3) * blk + 16 * (size_t)(b & 3);
}

static inline size_t cpu_p8_quants_at(int64_t b, int64_t nb, size_t blk)
{
	int64_t b0 = b & ~3, k = nb - b0 < 4 ? nb - b0 : 4;
	return (size_t)b0 * blk + 16 * (size_t)k + (size_t)(b & 3) * (blk - 16);
}

/* Bytes of nr rows of n values packed (the last panel padded to 8 rows). */
size_t cpu_q4_0_p8_bytes(int64_t nr, int64_t n);
/* Packs panels [p0, p1) (rows 8 p0 .. 8 p1 - 1, those past nr zero) of the
 * nr Q4_0 rows at w (stride w_stride, n values each) into dst, which holds
 * cpu_q4_0_p8_bytes(nr, n). Plain C; panels are independent (threads may
 * pack disjoint ranges). */
void cpu_q4_0_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst);
/* Row r of a packed tensor of n-value rows dequantized into y[n], bit for bit
 * what tensor_row_dequantize gives on the original row (embedding lookups
 * of a tied output). */
void cpu_q4_0_p8_row(const void *packed, int64_t n, int64_t r, float *y);

/* Q8_0 in 8-row panels (repack.c): the same as Q4_0's, 8 vectors of
 * quant dwords per block; row size and activation format (Q8_0) are Q8_0's. */
#define CPU_TYPE_Q8_0_P8 0x1004u
size_t cpu_q8_0_p8_bytes(int64_t nr, int64_t n);
void cpu_q8_0_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst);
void cpu_q8_0_p8_row(const void *packed, int64_t n, int64_t r, float *y);

/* Q5_0 and Q5_1 in 8-row panels (repack.c): the rows' bytes, the fifth
 * bits transposed inside their dword; row size and activation format are
 * the file type's (Q8_0; Q8_1). A set's gemm gives the reference's bits. */
#define CPU_TYPE_Q5_0_P8 0x1006u
size_t cpu_q5_0_p8_bytes(int64_t nr, int64_t n);
void cpu_q5_0_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst);
void cpu_q5_0_p8_row(const void *packed, int64_t n, int64_t r, float *y);
#define CPU_TYPE_Q5_1_P8 0x1007u
size_t cpu_q5_1_p8_bytes(int64_t nr, int64_t n);
void cpu_q5_1_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst);
void cpu_q5_1_p8_row(const void *packed, int64_t n, int64_t r, float *y);

/* ---- Q4_K in 8-row panels (repack.c) ---- */

/*
 * Q4_K rows re-laid out by cpu_q4_k_p8_pack (the layout is in repack.c),
 * read by a set's gemm_q4_k_p8; row size and activation format (Q8_K) are
 * Q4_K's, and a gemm call's w is a panel start as for CPU_TYPE_Q4_0_P8.
 */
#define CPU_TYPE_Q4_K_P8 0x1003u

/* Bytes of nr rows of n values packed (the last panel padded to 8 rows). */
size_t cpu_q4_k_p8_bytes(int64_t nr, int64_t n);
/* Packs panels [p0, p1) of the nr Q4_K rows at w into dst, which holds
 * cpu_q4_k_p8_bytes(nr, n); as cpu_q4_0_p8_pack. */
void cpu_q4_k_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst);
/* Row r of a packed tensor dequantized into y[n], bit for bit the file's row. */
void cpu_q4_k_p8_row(const void *packed, int64_t n, int64_t r, float *y);

/* Q5_K in 8-row panels (repack.c): Q4_K's with the rows' qh words between
 * the scales and the quants; row size and activation format (Q8_K) are
 * Q5_K's; results are gemm_q5_k's bits in the reference. */
#define CPU_TYPE_Q5_K_P8 0x1008u
size_t cpu_q5_k_p8_bytes(int64_t nr, int64_t n);
void cpu_q5_k_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst);
void cpu_q5_k_p8_row(const void *packed, int64_t n, int64_t r, float *y);

/* Q6_K in 8-row panels (repack.c), as Q4_K's: row size and activation
 * format (Q8_K) are Q6_K's; results are gemm_q6_k's bits. */
#define CPU_TYPE_Q6_K_P8 0x1005u
size_t cpu_q6_k_p8_bytes(int64_t nr, int64_t n);
void cpu_q6_k_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst);
void cpu_q6_k_p8_row(const void *packed, int64_t n, int64_t r, float *y);

/* IQ4_XS in 8-row panels (repack.c): Q4_K's cut of the blocks in dwords;
 * row size and activation format (Q8_K) are IQ4_XS's; results are
 * gemm_iq4_xs's bits in the reference. */
#define CPU_TYPE_IQ4_XS_P8 0x1009u
size_t cpu_iq4_xs_p8_bytes(int64_t nr, int64_t n);
void cpu_iq4_xs_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0,
                        int64_t p1, void *dst);
void cpu_iq4_xs_p8_row(const void *packed, int64_t n, int64_t r, float *y);

/* Converts one float row of n elements into format a at dst. */
typedef void (*cpu_act_fn)(const float *x, void *dst, int64_t n);

struct cpu_q8_lanes;
/* n floats (a multiple of 32) into n / 32 q8_0 blocks (struct block_q8_0),
 * as ggml's x86 quantize_row_q8_0 (the bits of act_q8_0's blocks): what a
 * q8_0 KV cache stores and what its queries are rounded to. */
void cpu_q8_0_quantize(const float *x, void *blocks, int64_t n);
/* g <= CPU_ATTN_QT queries' q8_0 blocks (query j's at blocks + j *
 * q_stride bytes, hd / 32 each) into hd / 32 struct cpu_q8_lanes for
 * score_t_q8, the lanes past g all 0. */
void cpu_q8_lanes_pack(const void *blocks, int64_t q_stride, int g, int64_t hd,
                       struct cpu_q8_lanes *qt);

#define CPU_ATTN_QB 8  /* queries per attention kernel call at most (a set's attn_qb) */
#define CPU_ATTN_QT 32 /* a prompt's queries per block in the lanes (score_t_f16 ...) */
/* One q8_0 block of 32 values of CPU_ATTN_QT queries in the lanes
 * (score_t_q8): value 4 * k + e of query j at qs[k][j][e], so that a dword
 * lane holds one query's 4 bytes; d the block's scale as float; sum its 32
 * values' sum. */
struct cpu_q8_lanes {
	int8_t qs[8][CPU_ATTN_QT][4];
	float d[CPU_ATTN_QT];
	int32_t sum[CPU_ATTN_QT];
};

/* One instruction-set level's kernels; NULL entries fall back to the reference. */
struct cpu_kernels {
	const char *name;              /* "ref", "avx2", "avx2-vnni", "avx512-vnni" */
	cpu_act_fn act[CPU_ACT_COUNT]; /* indexed by enum cpu_act */
	cpu_gemm_fn gemm_f32, gemm_f16, gemm_bf16, gemm_q8_0, gemm_q4_0, gemm_q4_k, gemm_q6_k;
	/* CPU_TYPE_Q8_0_P8 weights, or NULL (Q8_0 read as rows); a token's
	 * results are the same bits at any batch size and in every set */
	cpu_gemm_fn gemm_q8_0_p8;
	cpu_gemm_fn gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_q2_k, gemm_q3_k, gemm_q5_k, gemm_iq4_nl,
	        gemm_iq4_xs;
	/* CPU_TYPE_Q4_0_P8 weights; NULL: the set reads Q4_0 as rows and the
	 * backend does not repack. A token's results do not depend on the batch
	 * size or its place in the batch (prompt lookup's exactness). */
	cpu_gemm_fn gemm_q4_0_p8;
	/* the same panels from interleaved tiles, or NULL (cpu_gemm_il_fn) */
	cpu_gemm_il_fn gemm_q4_0_p8il, gemm_q8_0_p8il;
	/* CPU_TYPE_Q4_K_P8 weights, or NULL (Q4_K read as rows). Every result
	 * is the same bits as the reference's gemm_q4_k on the unpacked rows,
	 * so at any batch size and in every set. */
	cpu_gemm_fn gemm_q4_k_p8;
	cpu_gemm_fn gemm_q5_k_p8;   /* CPU_TYPE_Q5_K_P8, the same (NULL: rows) */
	cpu_gemm_fn gemm_q6_k_p8;   /* CPU_TYPE_Q6_K_P8, the same (NULL: rows) */
	cpu_gemm_fn gemm_iq4_xs_p8; /* CPU_TYPE_IQ4_XS_P8, the same (NULL: rows) */
	/* CPU_TYPE_Q5_0_P8 / _Q5_1_P8: gemm_q5_0's / gemm_q5_1's bits in the
	 * reference (NULL: rows) */
	cpu_gemm_fn gemm_q5_0_p8, gemm_q5_1_p8;
	/* attention: sum a[i] b[i]; y[i] += s x[i] (NULL: reference) */
	float (*dot_f32)(int64_t n, const float *a, const float *b);
	void (*axpy_f32)(int64_t n, float s, const float *x, float *y);
	/* the same with an fp16 operand (F16 KV cache): sum a[i] h[i]; y[i] += s h[i] */
	float (*dot_f16)(int64_t n, const float *a, const uint16_t *h);
	void (*axpy_f16)(int64_t n, float s, const uint16_t *h, float *y);
	/* Attention for g <= attn_qb queries at once over n cache rows of hd
	 * values, row i at r + i * stride (elements). score: s[j * ld + i] =
	 * scale * (q_j . row i), q_j = q + j * q_stride. mix: o_j[0, hd) +=
	 * sum_i p[j * ld + i] row i, o_j = o + j * o_stride, i ascending (each
	 * o_j[c] is the same FMA chain as one axpy per row). One call per run of
	 * contiguous slots reads each row once for all the queries. F32 and F16
	 * rows. */
	void (*score_f32)(int64_t hd, int g, const float *q, int64_t q_stride, const float *r,
	                  int64_t stride, int64_t n, float scale, float *s, int64_t ld);
	void (*mix_f32)(int64_t hd, int g, const float *p, int64_t ld, const float *r,
	                int64_t stride, int64_t n, float *o, int64_t o_stride);
	void (*score_f16)(int64_t hd, int g, const float *q, int64_t q_stride, const uint16_t *r,
	                  int64_t stride, int64_t n, float scale, float *s, int64_t ld);
	void (*mix_f16)(int64_t hd, int g, const float *p, int64_t ld, const uint16_t *r,
	                int64_t stride, int64_t n, float *o, int64_t o_stride);
	/* The same over a q8_0 cache (cache.kvType q8_0): a row is hd / 32
	 * blocks of struct block_q8_0 (quant.h), row i at r + i * stride
	 * BYTES. score_q8: the queries are q8_0 blocks too (cpu_q8_0_quantize;
	 * q_j at q + j * q_stride bytes), scale * sum over blocks of the block's
	 * integer dot times d_row * d_q, as ggml's q8_0 x q8_0 dot: the sets sum
	 * the blocks' float terms in their own order (within float rounding of
	 * the reference), the same order for every g and n. mix_q8: o_j[c] =
	 * fma(p[j * ld + i] * d_row, q_row[c], o_j[c]) for i ascending, the same
	 * bits in every set. NULL: the reference's. */
	void (*score_q8)(int64_t hd, int g, const void *q, int64_t q_stride, const void *r,
	                 int64_t stride, int64_t n, float scale, float *s, int64_t ld);
	void (*mix_q8)(int64_t hd, int g, const float *p, int64_t ld, const void *r, int64_t stride,
	               int64_t n, float *o, int64_t o_stride);
	/* Softmax of s[0, n) in place, the sum in double as ggml does; with
	 * round_f16 the probabilities are rounded to fp16 (an F16 cache's V). */
	void (*softmax)(float *s, int64_t n, bool round_f16);
	int attn_qb; /* queries per score/mix call this set handles, <= CPU_ATTN_QB */
	/* A prompt's attention with its queries in the lanes: a block of up to
	 * CPU_ATTN_QT queries of one head, lane j query j (a lane unused: its
	 * query 0, its last -1). Arrays of CPU_ATTN_QT floats a row, contiguous.
	 * score_t: st[i][j] = scale * sum_k qt[k][j] row_i[k], i < n, F16 rows
	 * at r + i * stride; softmax_t: lane j over rows i <= last[j] as
	 * softmax (the sum per lane in double, probabilities rounded to fp16 with
	 * round_f16), the rows past last[j] 0; mix_t: ot[c][j] += sum_i st[i][j]
	 * row_i[c], i ascending. No query's dot needs a sum across lanes, which
	 * the row-major score spends a third of its instructions on. NULL in a
	 * set (not filled from the reference): its prompts take score/mix. */
	void (*score_t_f16)(int64_t hd, const float *qt, const uint16_t *r, int64_t stride,
	                    int64_t n, float scale, float *st);
	void (*softmax_t)(float *st, int64_t n, const int32_t *last, bool round_f16);
	void (*mix_t_f16)(int64_t hd, const float *st, const uint16_t *r, int64_t stride, int64_t n,
	                  float *ot);
	/* The same over a q8_0 cache (score_q8 / mix_q8's numerics, their bits):
	 * qt is hd / 32 struct cpu_q8_lanes, the block's queries rounded to
	 * q8_0 (cpu_q8_0_quantize) with a lane unused all 0; rows at r + i *
	 * stride BYTES. score_t_q8: st[i][j] = scale * sum over blocks in order
	 * of (float)isum * (d_row * d_q); mix_t_q8: ot[c][j] = fma(st[i][j] *
	 * d_row, q_row[c], ot[c][j]), i ascending. NULL: prompts take score_q8
	 * / mix_q8. */
	void (*score_t_q8)(int64_t hd, const struct cpu_q8_lanes *qt, const void *r, int64_t stride,
	                   int64_t n, float scale, float *st);
	void (*mix_t_q8)(int64_t hd, const float *st, const void *r, int64_t stride, int64_t n,
	                 float *ot);
	/* The per-row steps of the forward pass. rmsnorm: cpu_rmsnorm's bits
	 * (its lane order is the contract). swiglu: g[i] = silu(g[i]) * u[i];
	 * the SIMD sets' exp is a polynomial within 2 ulp of expf, so theirs is
	 * within a few ulp of the reference's (libm) and the same bits in every
	 * set. to_f16 / from_f16: n values to fp16 rounded to nearest even and
	 * back, tensor_f32_to_f16's / tensor_f16_to_f32's bits (NaN payloads
	 * aside: F16C keeps them, the scalar code makes every NaN 0x7E00). */
	void (*rmsnorm)(const float *x, const float *w, float *y, int64_t n, float eps);
	void (*swiglu)(float *g, const float *u, int64_t n);
	void (*to_f16)(const float *x, uint16_t *h, int64_t n);
	void (*from_f16)(const uint16_t *h, float *y, int64_t n);
	/* cpu_rope_apply, its bits (the same products and sums per pair) */
	void (*rope)(float *x, int n_heads, int head_dim, int n_rot, const float *cs,
	             const float *sn, bool neox);
};

extern const struct cpu_kernels cpu_kernels_ref;
/* kern.c's alone: elsewhere cpu_kernels_named (a set may not be compiled) */
extern const struct cpu_kernels cpu_kernels_avx2;
extern const struct cpu_kernels
        cpu_kernels_avx2_vnni; /* avx2's kernels with AVX-VNNI: the same bits */
extern const struct cpu_kernels cpu_kernels_avx512;

/* CPU feature checks (cpuid + OS support of the register state): isa.c. */
bool cpu_has_avx2(void);      /* AVX2 + FMA + F16C */
bool cpu_has_avx2_vnni(void); /* that + AVX-VNNI (vpdpbusd on ymm) */
bool cpu_has_avx512(void);    /* AVX-512 F/BW/VL + VNNI */
/* The sets above exist only where this build compiled them: meson's
 * -Dcpu_kernels=host keeps just the one the build machine picks (the
 * default, all, keeps every set). Code outside kern.c reaches a set by name:
 * cpu_kernels_named gives the set named name (ref|avx2|avx2-vnni|
 * avx512-vnni) where it was compiled and this CPU runs it, else NULL;
 * cpu_kernels_built says whether it was compiled. */
const struct cpu_kernels *cpu_kernels_named(const char *name);
bool cpu_kernels_built(const char *name);
/* The widest compiled set this CPU runs (ref where none), or the one named
 * by $INFILL_CPU_KERNELS where cpu_kernels_named gives it. */
const struct cpu_kernels *cpu_kernels_best(void);
/* The names of the sets cpu_kernels_named gives on this CPU, widest first,
 * ", " between them, into buf (cap bytes, cut to fit). */
void cpu_kernels_runnable(char *buf, size_t cap);
/* Gemm of a kernel set for a weight type (reference fallback for NULL entries); NULL if unsupported. */
cpu_gemm_fn cpu_kernels_gemm(const struct cpu_kernels *k, uint32_t weight_type);
/* The set's cpu_gemm_il_fn for weight_type (a panel type), or NULL. */
cpu_gemm_il_fn cpu_kernels_gemm_il(const struct cpu_kernels *k, uint32_t weight_type);
cpu_act_fn cpu_kernels_act(const struct cpu_kernels *k, enum cpu_act a);
/* A kernel set with every NULL entry filled from the reference. */
struct cpu_kernels cpu_kernels_complete(const struct cpu_kernels *k);

/* ---- AMX int8 tiles (kern_amx.c) ---- */

/* Tokens per cpu_amx_gemm call at most. */
#define CPU_AMX_TOKENS 64

/* True when the CPU has AMX-INT8 and the kernel granted the tile state to this process. */
bool cpu_amx_available(void);
/* Per-thread scratch for rows of n elements. */
size_t cpu_amx_scratch_bytes(int64_t n);
/* Q8_0/Q4_0 weights x Q8_0 activations like cpu_gemm_fn, for nr and nt
 * multiples of 16 and nt <= CPU_AMX_TOKENS; scratch of cpu_amx_scratch_bytes(n). */
void cpu_amx_gemm(uint32_t type, int64_t n, const void *w, size_t w_stride, int64_t nr,
                  const void *x, size_t x_stride, int64_t nt, float *y, int64_t ldy, void *scratch);

/* ---- small ops (ops.c), plain C, shapes in the names' comments ---- */

/* y[n] = x[n] / sqrt(mean(x^2) + eps) * w[n]. The squares are summed in
 * double (exact products) in 8 lanes, lane i % 8, added lane 0 to 7 at the
 * end: the order the SIMD sets' rmsnorm keeps, so they give the same bits. */
void cpu_rmsnorm(const float *x, const float *w, float *y, int64_t n, float eps);
/* y[n] = (x - mean(x)) / sqrt(var(x) + eps) * w[n] + b[n] (b may be NULL) */
void cpu_layernorm(const float *x, const float *w, const float *b, float *y, int64_t n, float eps);
/* Rotates n_heads heads of head_dim floats at x (n_rot dims each) to position pos. */
void cpu_rope(float *x, int n_heads, int head_dim, int n_rot, float pos, float base,
              float freq_scale, bool neox);
/* cpu_rope in two halves, so a position's angles serve every layer: the
 * cosines and sines of the n_rot / 2 pairs (cs, sn: n_rot / 2 floats each,
 * at most CPU_ROPE_MAX_PAIRS), then the rotation with them. */
#define CPU_ROPE_MAX_PAIRS 256
void cpu_rope_angles(int n_rot, float pos, float base, float freq_scale, float *cs, float *sn);
void cpu_rope_apply(float *x, int n_heads, int head_dim, int n_rot, const float *cs,
                    const float *sn, bool neox);
/* silu(g) * u in place into g, n floats */
void cpu_swiglu(float *g, const float *u, int64_t n);
/* 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))) in float: the formula
 * ggml's GELU table is made from */
float cpu_gelu_exact(float x);
/* tab[65536]: for each half h, cpu_gelu_exact(h) rounded to half, as float
 * (ggml_table_gelu_f16) */
void cpu_gelu_table_fill(float *tab);
/* gelu in place over n floats through tab (ggml_vec_gelu_f32 with GGML_GELU_FP16) */
void cpu_gelu(float *x, int64_t n, const float *tab);
/* gelu(g) * u in place into g, n floats, through tab (ggml_vec_geglu_f32) */
void cpu_geglu(float *g, const float *u, int64_t n, const float *tab);

#endif
