/*
 * kern_avx512.c - AVX-512 VNNI kernels, selected at run time by kern.c:
 * kern_simd.h / kern_simd_k.h with vpdpbusd (u8 x s8 summed 4 at a time into
 * s32, no int16 saturation step) on ymm registers, plus the kernels below:
 * the panel kernel for Q4_0 packed at load (every Q4_0 matmul weight of a
 * model), decode rows for Q8_0 and unpacked Q4_0 (ymm only: a 512-bit uop
 * would take port 1's vector unit away from these loops on Intel), prefill
 * panels built per call for them where a zmm lane is a weight row, an
 * F16 prefill tile on zmm, and attention on zmm (kern_attn512.h; over a
 * q8_0 cache kern_avx512_q8.c's).
 */
/* kern_avx512_k.c builds this file again as part 2: see "the panel kernels
 * of kern_avx512_k.c" below */
#ifndef KERN_AVX512_PART
#define KERN_AVX512_PART 1
#endif

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#if KERN_AVX512_PART != 1
/* parts 2 and 3 read part 1's kernels, calls none of them, and emits only its own */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-const-variable"
#endif

#define SIMD_DOT_I8(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))
#define ATTN_QB                8 /* attention: 8 queries per pass over the cache rows */
#define ATTN_STRIP             2 /* 32 registers: 8 queries x 2 ymm of o */

#include "kern_simd.h"
#include "kern_simd_k.h"
#include "kern_simd_q.h"
#include "kern_attn512.h"
#include "kern_avx512_q8.h"

#include <stddef.h>
#include <string.h>

/* vpdpbusd with the token's 4 bytes broadcast from memory in the
 * instruction ({1to16}), which GCC 12 does not fold from a set1. */
static inline __m512i dpbusd_bcast(__m512i acc, __m512i u, const char *x)
{
	__asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const int32_t *)x));
	return acc;
}

/* ---- decode: Q4_0 / Q8_0 weight rows x up to 4 tokens ---- */

/*
 * One weight row streams from DRAM once for a group of up to TG tokens, so
 * these must keep up with ~10 GB/s per core with few instructions per block.
 * Q4_0: the 16 nibble bytes are broadcast to both halves of a ymm and masked
 * with 0x0F (low half: elements 0..15) and 0xF0 (high half: elements 16..31
 * times 16), which vpdpbusd takes as unsigned bytes against the activations'
 * signed ones: no unpacking shifts. The high lanes' factor 16 is exact and
 * taken out once per row; the nibbles' +8 offset is taken out once per row
 * too, as 8 * sum_b dw_b * d_x,b * sum(x_b) from the activations' tail.
 * Block scales are read 8 blocks at a time (vpermt2w picks the 8 fp16
 * words at a stride of 18 bytes). Q8_0: the usual |w| x sign(x, w), scales
 * 4 blocks at a time (stride 34). Integer block sums are exact; results
 * equal the reference up to float rounding of the sums.
 */
#define DEC_PF 4096 /* software prefetch distance along the rows, bytes (1024 measured slower) */

/*
 * The fp16 scales of 8 Q4_0 blocks (stride 9 words) or 4 Q8_0 blocks (17)
 * from the 128 bytes at p, widened to float. Only ymm instructions: any
 * 512-bit uop would shut port 1's vector unit, which these loops need.
 */
static inline __m256 q4_0_scales8(const char *p)
{
	const __m256i i0 = _mm256_setr_epi16(0, 9, 18, 27, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	const __m256i i1 = _mm256_setr_epi16(4, 13, 22, 31, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	__m256i a = _mm256_permutex2var_epi16(_mm256_loadu_si256((const __m256i *)p), i0,
	                                      _mm256_loadu_si256((const __m256i *)(p + 32)));
	__m256i b = _mm256_permutex2var_epi16(_mm256_loadu_si256((const __m256i *)(p + 64)), i1,
	                                      _mm256_loadu_si256((const __m256i *)(p + 96)));
	return _mm256_cvtph_ps(
	        _mm_unpacklo_epi64(_mm256_castsi256_si128(a), _mm256_castsi256_si128(b)));
}

static inline __m128 q8_0_scales4(const char *p)
{
	const __m256i i0 = _mm256_setr_epi16(0, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	const __m256i i1 = _mm256_setr_epi16(2, 19, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	__m256i a = _mm256_permutex2var_epi16(_mm256_loadu_si256((const __m256i *)p), i0,
	                                      _mm256_loadu_si256((const __m256i *)(p + 32)));
	__m256i b = _mm256_permutex2var_epi16(_mm256_loadu_si256((const __m256i *)(p + 64)), i1,
	                                      _mm256_loadu_si256((const __m256i *)(p + 96)));
	return _mm_cvtph_ps(
	        _mm_unpacklo_epi32(_mm256_castsi256_si128(a), _mm256_castsi256_si128(b)));
}

static inline __m256 lane_bcast(__m256 v, int k)
{
	return _mm256_permutexvar_ps(_mm256_set1_epi32(k), v);
}

static inline __attribute__((always_inline)) void q4_0_row(int g, int64_t nb,
                                                           const struct block_q4_0 *w,
                                                           const struct block_q8_0 *const *x,
                                                           const struct cpu_q8_tail *xt, float *out)
{
	const int CH = g == 1 ? 4 : 2; /* independent FMA chains per token */
	const __m256i mask = _mm256_set_epi64x((long long)0xF0F0F0F0F0F0F0F0ull,
	                                       (long long)0xF0F0F0F0F0F0F0F0ull,
	                                       0x0F0F0F0F0F0F0F0Fll, 0x0F0F0F0F0F0F0F0Fll);
	__m256 acc[TG][4], cacc[TG];
	float ctail[TG];
#pragma GCC unroll 4
	for (int j = 0; j < TG; j++) {
		cacc[j] = _mm256_setzero_ps();
		ctail[j] = 0;
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) acc[j][c] = _mm256_setzero_ps();
	}
	int64_t b = 0;
	for (; b + 8 <= nb; b += 8) {
		const char *wb = (const char *)(w + b);
		_mm_prefetch(wb + DEC_PF, _MM_HINT_T0);
		_mm_prefetch(wb + DEC_PF + 64, _MM_HINT_T0);
		_mm_prefetch(wb + DEC_PF + 128, _MM_HINT_T0);
		__m256 dw = q4_0_scales8(wb);
		__m256 sc[TG];
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			sc[j] = _mm256_mul_ps(dw, _mm256_loadu_ps(xt[j].d + b));
			cacc[j] = _mm256_fmadd_ps(dw, _mm256_loadu_ps(xt[j].dsum + b), cacc[j]);
		}
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++) {
			__m256i q = _mm256_and_si256(_mm256_broadcastsi128_si256(_mm_loadu_si128(
			                                     (const __m128i *)w[b + k].qs)),
			                             mask);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i p = _mm256_dpbusd_epi32(
				        _mm256_setzero_si256(), q,
				        _mm256_loadu_si256((const __m256i *)x[j][b + k].qs));
				acc[j][k % CH] =
				        _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), lane_bcast(sc[j], k),
				                        acc[j][k % CH]);
			}
		}
	}
	for (; b < nb; b++) {
		float dw = f16_to_f32(w[b].d);
		__m256i q = _mm256_and_si256(
		        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)w[b].qs)),
		        mask);
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m256i p = _mm256_dpbusd_epi32(
			        _mm256_setzero_si256(), q,
			        _mm256_loadu_si256((const __m256i *)x[j][b].qs));
			acc[j][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
			                            _mm256_set1_ps(dw * xt[j].d[b]), acc[j][0]);
			ctail[j] += dw * xt[j].dsum[b];
		}
	}
	const __m256 unscale =
	        _mm256_setr_ps(1, 1, 1, 1, 1.0f / 16, 1.0f / 16, 1.0f / 16, 1.0f / 16);
#pragma GCC unroll 4
	for (int j = 0; j < g; j++) {
		__m256 a = acc[j][0];
#pragma GCC unroll 4
		for (int c = 1; c < CH; c++) a = _mm256_add_ps(a, acc[j][c]);
		out[j] = hsum_ps(_mm256_mul_ps(a, unscale)) - 8.0f * (hsum_ps(cacc[j]) + ctail[j]);
	}
}

static inline __attribute__((always_inline)) void q8_0_row(int g, int64_t nb,
                                                           const struct block_q8_0 *w,
                                                           const struct block_q8_0 *const *x,
                                                           const struct cpu_q8_tail *xt, float *out)
{
	const int CH = g == 1 ? 4 : 2;
	__m256 acc[TG][4];
#pragma GCC unroll 4
	for (int j = 0; j < TG; j++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) acc[j][c] = _mm256_setzero_ps();
	int64_t b = 0;
	for (; b + 4 <= nb; b += 4) {
		const char *wb = (const char *)(w + b);
		_mm_prefetch(wb + DEC_PF, _MM_HINT_T0);
		_mm_prefetch(wb + DEC_PF + 64, _MM_HINT_T0);
		_mm_prefetch(wb + DEC_PF + 128, _MM_HINT_T0);
		__m128 dw = q8_0_scales4(wb);
		__m256 sc[TG];
#pragma GCC unroll 4
		for (int j = 0; j < g; j++)
			sc[j] = _mm256_zextps128_ps256(_mm_mul_ps(dw, _mm_loadu_ps(xt[j].d + b)));
#pragma GCC unroll 4
		for (int k = 0; k < 4; k++) {
			__m256i wq = _mm256_loadu_si256((const __m256i *)w[b + k].qs);
			__m256i aw = _mm256_abs_epi8(wq);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i xq = _mm256_loadu_si256((const __m256i *)x[j][b + k].qs);
				__m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw,
				                                _mm256_sign_epi8(xq, wq));
				acc[j][k % CH] =
				        _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), lane_bcast(sc[j], k),
				                        acc[j][k % CH]);
			}
		}
	}
	for (; b < nb; b++) {
		float dw = f16_to_f32(w[b].d);
		__m256i wq = _mm256_loadu_si256((const __m256i *)w[b].qs);
		__m256i aw = _mm256_abs_epi8(wq);
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m256i xq = _mm256_loadu_si256((const __m256i *)x[j][b].qs);
			__m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw,
			                                _mm256_sign_epi8(xq, wq));
			acc[j][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
			                            _mm256_set1_ps(dw * xt[j].d[b]), acc[j][0]);
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < g; j++) {
		__m256 a = acc[j][0];
#pragma GCC unroll 4
		for (int c = 1; c < CH; c++) a = _mm256_add_ps(a, acc[j][c]);
		out[j] = hsum_ps(a);
	}
}

GEMM_GROUPED(gemm_q4_0_dec, struct block_q4_0, 32, q4_0_row)
GEMM_GROUPED(gemm_q8_0_dec, struct block_q8_0, 32, q8_0_row)

/* ---- prefill: 16 rows x 8 tokens register tiles on zmm ---- */

/*
 * With many tokens the integer work dominates, so weights are re-laid out
 * per call into panels where a zmm lane is a row: panel dword [kk][row]
 * holds bytes 4kk..4kk+3 of that row's block as unsigned bytes (w + 128).
 * One vpdpbusd with the token's 4 activation bytes broadcast from memory
 * does 16 rows x 4 products; a block (8 of them) gives 16 rows' sums,
 * started from the token's bias -128 sum(x) (activation tail), so the sums
 * are exact. A panel is built once per call and serves every token of it
 * (cpu.c passes a whole prompt chunk); the 8 tokens' chains are interleaved
 * so the vpdpbusd latency is hidden.
 */
#define PT     8   /* tokens per register tile */
#define MAX_NB 512 /* blocks per row in a panel (rows up to 16384; wider: the row kernels) */

struct panel_blk {
	uint8_t q[8][64]; /* [kk][row * 4 + byte] */
	float dw[16];     /* per row: the block's scale */
};

static void panel_build(uint32_t type, const char *w, size_t w_stride, int64_t nb,
                        struct panel_blk *pb)
{
	/* Gathers of one dword from each of 16 rows: the transpose in one instruction. */
	const __m512i rows = _mm512_mullo_epi32(
	        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
	        _mm512_set1_epi32((int)w_stride));
	const __m512i m4 = _mm512_set1_epi8(0xF);
	for (int64_t b = 0; b < nb; b++) {
		if (type == TENSOR_TYPE_Q8_0) {
			const char *base = w + b * sizeof(struct block_q8_0);
			for (int kk = 0; kk < 8; kk++) {
				__m512i v = _mm512_i32gather_epi32(rows, base + 2 + 4 * kk, 1);
				_mm512_store_si512(
				        pb[b].q[kk],
				        _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)));
			}
			__m512i d = _mm512_i32gather_epi32(rows, base, 1);
			_mm512_store_ps(pb[b].dw,
			                _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
			                        _mm512_and_si512(d, _mm512_set1_epi32(0xFFFF)))));
		} else {
			const char *base = w + b * sizeof(struct block_q4_0);
			for (int kk = 0; kk < 4; kk++) {
				/* bytes 4kk..4kk+3: low nibbles are elements 4kk.., high 16+4kk.. */
				__m512i v = _mm512_i32gather_epi32(rows, base + 2 + 4 * kk, 1);
				__m512i e = _mm512_set1_epi8(120); /* q - 8 + 128 */
				_mm512_store_si512(pb[b].q[kk],
				                   _mm512_add_epi8(_mm512_and_si512(v, m4), e));
				_mm512_store_si512(
				        pb[b].q[kk + 4],
				        _mm512_add_epi8(
				                _mm512_and_si512(_mm512_srli_epi16(v, 4), m4), e));
			}
			__m512i d = _mm512_i32gather_epi32(rows, base, 1);
			_mm512_store_ps(pb[b].dw,
			                _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
			                        _mm512_and_si512(d, _mm512_set1_epi32(0xFFFF)))));
		}
	}
}

static inline int32_t load_i32(const void *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/*
 * The tiles address every token's data from one base pointer per token (x0 +
 * j * x_stride) plus offsets shared by all tokens (the block's qs, the
 * tail's arrays): 8 bases and a few offsets fit the 16 general registers,
 * where a pointer per token and array would spill.
 */
#define TAIL_I32(base, off) (*(const int32_t *)((base) + (off)))
#define TAIL_F32(base, off) (*(const float *)((base) + (off)))

/* Q8_0/Q4_0 entries: each token's sums start from its bias -128 sum(x). */
static inline __attribute__((always_inline)) void panel_tile(int g, int64_t nb,
                                                             const struct panel_blk *pb,
                                                             const char *x0, size_t xs, float *y,
                                                             int64_t ldy)
{
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *xb[PT];
	__m512 acc[PT];
#pragma GCC unroll 8
	for (int j = 0; j < PT; j++) {
		acc[j] = _mm512_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const struct panel_blk *P = &pb[b];
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m512i p[PT];
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) p[j] = _mm512_set1_epi32(TAIL_I32(xb[j], ob));
#pragma GCC unroll 8
		for (int kk = 0; kk < 8; kk++) {
			__m512i wk = _mm512_load_si512(P->q[kk]);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++)
				p[j] = dpbusd_bcast(p[j], wk, xb[j] + oq + 4 * kk);
		}
		__m512 dwv = _mm512_load_ps(P->dw);
#pragma GCC unroll 8
		for (int j = 0; j < g; j++)
			acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(p[j]),
			                                       _mm512_set1_ps(TAIL_F32(xb[j], od))),
			                         dwv, acc[j]);
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

/* The row-streaming kernel of a panel type: decode, and rows past the last panel. */
static cpu_gemm_fn row_kernel(uint32_t type)
{
	return type == TENSOR_TYPE_Q8_0 ? gemm_q8_0_dec : gemm_q4_0_dec;
}

static void gemm_panel(uint32_t type, int64_t n, const void *w, size_t w_stride, int64_t nr,
                       const void *x, size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	int64_t nb = n / 32;
	/* Up to ~300 KB of stack: fine for the caller and the pool's threads (8 MB stacks). */
	_Alignas(64) struct panel_blk pb[MAX_NB];
	for (int64_t r0 = 0; r0 + 16 <= nr; r0 += 16) {
		panel_build(type, (const char *)w + r0 * w_stride, w_stride, nb, pb);
		for (int64_t t0 = 0; t0 < nt; t0 += PT) {
			int g = nt - t0 < PT ? (int)(nt - t0) : PT;
			const char *x0 = (const char *)x + t0 * x_stride;
			float *yt = y + t0 * ldy + r0;
			switch (g) {
			case 8: panel_tile(8, nb, pb, x0, x_stride, yt, ldy); break;
			case 7: panel_tile(7, nb, pb, x0, x_stride, yt, ldy); break;
			case 6: panel_tile(6, nb, pb, x0, x_stride, yt, ldy); break;
			case 5: panel_tile(5, nb, pb, x0, x_stride, yt, ldy); break;
			case 4: panel_tile(4, nb, pb, x0, x_stride, yt, ldy); break;
			case 3: panel_tile(3, nb, pb, x0, x_stride, yt, ldy); break;
			case 2: panel_tile(2, nb, pb, x0, x_stride, yt, ldy); break;
			default: panel_tile(1, nb, pb, x0, x_stride, yt, ldy); break;
			}
		}
	}
	int64_t done = nr / 16 * 16;
	if (done < nr)
		row_kernel(type)(n, (const char *)w + done * w_stride, w_stride, nr - done, x,
		                 x_stride, nt, y + done, ldy);
}

/* Few tokens (decode): the row-streaming kernel; several: the panels. */
static void gemm_rows_or_panel(uint32_t type, int64_t n, const void *w, size_t w_stride, int64_t nr,
                               const void *x, size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	if (nt > TG && nr >= 16 && n / 32 <= MAX_NB)
		gemm_panel(type, n, w, w_stride, nr, x, x_stride, nt, y, ldy);
	else
		row_kernel(type)(n, w, w_stride, nr, x, x_stride, nt, y, ldy);
}

static void gemm_q8_0_512(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                          size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	gemm_rows_or_panel(TENSOR_TYPE_Q8_0, n, w, w_stride, nr, x, x_stride, nt, y, ldy);
}

static void gemm_q4_0_512(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                          size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	gemm_rows_or_panel(TENSOR_TYPE_Q4_0, n, w, w_stride, nr, x, x_stride, nt, y, ldy);
}

/* ---- Q4_0 repacked at load (repack.c): 8 rows x up to 8 tokens, any batch ---- */

/*
 * The panels kern_avx2.c reads, with vpdpbusd: a ymm of a block's vector kk
 * holds 8 rows' dword kk, its low nibbles (values 4kk..) and high nibbles
 * (16 + 4kk..) each go through one vpdpbusd against the token's 4
 * activation bytes broadcast, accumulating in int32 from the token's bias
 * (-8 sum(x): the +8 offset). A decode step (one token) would wait on the
 * vpdpbusd latency with one chain per block: its 8 products go to 4 chains,
 * 2 tokens' to 2 each. The sums are exact integers and the float step per
 * block is kern_avx2.c's (convert, scale product, one FMA in block order),
 * so results are the same bits as the AVX2 panel kernel's at any batch size
 * and place in it. With 32 registers a tile takes 8 tokens, halving the
 * unpacking per token in prefill.
 */
#define P8_T             8 /* tokens per register tile */
#define P8_TILE2         1 /* p16_tile: two full panels at once */
#define P8_TILE2_IL      1 /* p16_tile_il: and 8 tokens interleaved (prompts) */
/* Decode (one or two tokens) reads one panel at a time: one core streams
 * 36-39 GB/s so, 28-30 two at a time; from three tokens on the two-panel
 * tile's compute counts more (nt=3: 29 GB/s either way; nt=4 21 against 29). */
#define P8_TILE16_MIN_NT 3

#include "kern_p8.h"

static inline __attribute__((always_inline)) void p8_tile(int g, bool pf, int64_t nb,
                                                          const char *panel, const char *x0,
                                                          size_t xs, float *y, int64_t ldy,
                                                          int rows)
{
	const int CH = g == 1 ? 4 : g == 2 ? 2 : 1; /* independent int32 chains per token */
	const __m256i m4 = _mm256_set1_epi8(0xF);
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *xb[P8_T];
	__m256 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q = panel + cpu_p8_quants_at(b, nb, 144);
		if (pf) p8_prefetch(panel, b, 144);
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m256i p[P8_T][4];
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			p[j][0] = _mm256_set1_epi32(TAIL_I32(xb[j], ob) >> 4);
#pragma GCC unroll 4
			for (int c = 1; c < CH; c++) p[j][c] = _mm256_setzero_si256();
		}
#pragma GCC unroll 4
		for (int kk = 0; kk < 4; kk++) {
			__m256i raw = _mm256_loadu_si256((const __m256i *)(q + 32 * kk));
			__m256i lo = _mm256_and_si256(raw, m4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				int c = kk % CH;
				p[j][c] = _mm256_dpbusd_epi32(
				        p[j][c], lo,
				        _mm256_set1_epi32(load_i32(xb[j] + oq + 4 * kk)));
				p[j][c] = _mm256_dpbusd_epi32(
				        p[j][c], hi,
				        _mm256_set1_epi32(load_i32(xb[j] + oq + 16 + 4 * kk)));
			}
		}
		__m256 dwv = _mm256_cvtph_ps(
		        _mm_loadu_si128((const __m128i *)(panel + cpu_p8_scales_at(b, 144))));
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			__m256i s = p[j][0];
#pragma GCC unroll 4
			for (int c = 1; c < CH; c++) s = _mm256_add_epi32(s, p[j][c]);
			acc[j] = _mm256_fmadd_ps(
			        _mm256_cvtepi32_ps(s),
			        _mm256_mul_ps(dwv, _mm256_set1_ps(TAIL_F32(xb[j], od))), acc[j]);
		}
	}
	p8_store(acc, g, rows, y, ldy);
}

/*
 * Two panels at once on zmm (16 rows; both full): each activation broadcast
 * serves 16 rows instead of 8, and on a core with full-width 512-bit units
 * one vpdpbusd does twice the products. Lane for lane the operations are
 * p8_tile's, so the results are the same bits.
 */
/* The Q5 tiles' distance (their panels keep scales, fifth bits and quants
 * apart). Measured on Q4_0 panels of that kind, before their groups of 4:
 * two streams 8 panel rows apart, at 8 KB ahead the first one's prefetch
 * landed where the second is read (a 2048-wide panel was 9 KB), and one
 * core streamed 19-24 GB/s from DRAM against 26-29 at 12 KB (500 MB, nt=1). */
#define P16_PREFETCH (CPU_P8_PREFETCH * 3 / 2)

/* Prefetches, P16_PREFETCH bytes ahead, what a two-panel tile reads for
 * block b: its qb quant bytes in both panels (q0, q1 at the block), and
 * once a cache line (every 64 / sb blocks) the sb bytes a block of scales
 * at the same distance in blocks. */
static inline __attribute__((always_inline)) void p16_prefetch(const char *q0, const char *q1,
                                                               const char *sc0, const char *sc1,
                                                               int64_t b, int qb, int sb)
{
	for (int l = 0; l < qb; l += 64) {
		_mm_prefetch(q0 + P16_PREFETCH + l, _MM_HINT_T0);
		_mm_prefetch(q1 + P16_PREFETCH + l, _MM_HINT_T0);
	}
	if (!(b & (64 / sb - 1))) {
		_mm_prefetch(sc0 + sb * b + P16_PREFETCH * sb / qb, _MM_HINT_T0);
		_mm_prefetch(sc1 + sb * b + P16_PREFETCH * sb / qb, _MM_HINT_T0);
	}
}

/* As p16_prefetch for a Q4_0 / Q8_0 tile (blk bytes a block, each panel
 * one stream): what it will read P16_DQ_PREFETCH bytes later in either
 * panel, which past this pair's end is the next pair's (read right after).
 * 4 KB: 28-35 GB/s one core, nt=1-4, 2048- and 5504-wide; 8 KB 23-27. */
#define P16_DQ_PREFETCH 4096
static inline __attribute__((always_inline)) void
p16_prefetch_dq(const char *panel, size_t panel_bytes, int64_t b, size_t blk)
{
	size_t o = (size_t)b * blk + P16_DQ_PREFETCH;
	if (o >= panel_bytes) o += panel_bytes;
	for (size_t l = 0; l < blk; l += 64) {
		_mm_prefetch(panel + o + l, _MM_HINT_T0);
		_mm_prefetch(panel + panel_bytes + o + l, _MM_HINT_T0);
	}
}

/* The float step of a Q4_0 or Q8_0 block for g tokens over two panels:
 * each token's CH int32 chains p[j] summed, times the 16 rows' fp16 scales
 * (d0, d1: the block's in each panel) times the token's, into acc[j]. */
static inline __attribute__((always_inline)) void p16_float_step(int g, int CH, __m512i (*p)[4],
                                                                 const char *d0, const char *d1,
                                                                 const char *const *xb, size_t od,
                                                                 __m512 *acc)
{
	__m512 dwv = _mm512_cvtph_ps(_mm256_inserti128_si256(
	        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)d0)),
	        _mm_loadu_si128((const __m128i *)d1), 1));
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) {
		__m512i s = p[j][0];
#pragma GCC unroll 4
		for (int c = 1; c < CH; c++) s = _mm512_add_epi32(s, p[j][c]);
		acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
		                         _mm512_mul_ps(dwv, _mm512_set1_ps(TAIL_F32(xb[j], od))),
		                         acc[j]);
	}
}

static inline __attribute__((always_inline)) void p16_tile(int g, bool pf, int64_t nb,
                                                           const char *panel, size_t panel_bytes,
                                                           const char *x0, size_t xs, float *y,
                                                           int64_t ldy)
{
	const int CH = g == 1 ? 4 : g == 2 ? 2 : 1;
	const __m512i m4 = _mm512_set1_epi8(0xF);
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *pn0 = panel, *pn1 = panel + panel_bytes;
	const char *xb[P8_T];
	__m512 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm512_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		size_t oqs = cpu_p8_quants_at(b, nb, 144), osc = cpu_p8_scales_at(b, 144);
		const char *q0 = pn0 + oqs, *q1 = pn1 + oqs;
		if (pf) p16_prefetch_dq(panel, panel_bytes, b, 144);
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m512i p[P8_T][4];
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			p[j][0] = _mm512_set1_epi32(TAIL_I32(xb[j], ob) >> 4);
#pragma GCC unroll 4
			for (int c = 1; c < CH; c++) p[j][c] = _mm512_setzero_si512();
		}
#pragma GCC unroll 4
		for (int kk = 0; kk < 4; kk++) {
			__m512i raw = _mm512_inserti64x4(
			        _mm512_castsi256_si512(
			                _mm256_loadu_si256((const __m256i *)(q0 + 32 * kk))),
			        _mm256_loadu_si256((const __m256i *)(q1 + 32 * kk)), 1);
			__m512i lo = _mm512_and_si512(raw, m4);
			__m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				int c = kk % CH;
				p[j][c] = dpbusd_bcast(p[j][c], lo, xb[j] + oq + 4 * kk);
				p[j][c] = dpbusd_bcast(p[j][c], hi, xb[j] + oq + 16 + 4 * kk);
			}
		}
		p16_float_step(g, CH, p, pn0 + osc, pn1 + osc, xb, od, acc);
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

/* ---- Q8_0 repacked at load (repack.c): 8 or 16 rows x up to 8 tokens ---- */

/*
 * As the Q4_0 tiles, with 8 vectors per block of signed weights: flipped
 * to unsigned (w + 128, one xor shared by the tile's tokens) for vpdpbusd,
 * the sums start from the token's bias -128 sum(x), so they are the exact
 * sum(w x). The float step per block is the Q4_0 tiles' (and kern_avx2.c's
 * Q8_0 tile's): the same bits at any batch size and in both sets.
 */
static inline __attribute__((always_inline)) void q8p_tile(int g, bool pf, int64_t nb,
                                                           const char *panel, const char *x0,
                                                           size_t xs, float *y, int64_t ldy,
                                                           int rows)
{
	const int CH = g == 1 ? 4 : g == 2 ? 2 : 1;
	const __m256i flip = _mm256_set1_epi8((char)0x80);
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *xb[P8_T];
	__m256 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q = panel + cpu_p8_quants_at(b, nb, 272);
		if (pf) p8_prefetch(panel, b, 272);
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m256i p[P8_T][4];
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			p[j][0] = _mm256_set1_epi32(TAIL_I32(xb[j], ob));
#pragma GCC unroll 4
			for (int c = 1; c < CH; c++) p[j][c] = _mm256_setzero_si256();
		}
#pragma GCC unroll 8
		for (int kk = 0; kk < 8; kk++) {
			__m256i u = _mm256_xor_si256(
			        _mm256_loadu_si256((const __m256i *)(q + 32 * kk)), flip);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				int c = kk % CH;
				p[j][c] = _mm256_dpbusd_epi32(
				        p[j][c], u,
				        _mm256_set1_epi32(load_i32(xb[j] + oq + 4 * kk)));
			}
		}
		__m256 dwv = _mm256_cvtph_ps(
		        _mm_loadu_si128((const __m128i *)(panel + cpu_p8_scales_at(b, 272))));
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			__m256i s = p[j][0];
#pragma GCC unroll 4
			for (int c = 1; c < CH; c++) s = _mm256_add_epi32(s, p[j][c]);
			acc[j] = _mm256_fmadd_ps(
			        _mm256_cvtepi32_ps(s),
			        _mm256_mul_ps(dwv, _mm256_set1_ps(TAIL_F32(xb[j], od))), acc[j]);
		}
	}
	p8_store(acc, g, rows, y, ldy);
}

static inline __attribute__((always_inline)) void q8p16_tile(int g, bool pf, int64_t nb,
                                                             const char *panel, size_t panel_bytes,
                                                             const char *x0, size_t xs, float *y,
                                                             int64_t ldy)
{
	const int CH = g == 1 ? 4 : g == 2 ? 2 : 1;
	const __m512i flip = _mm512_set1_epi8((char)0x80);
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *pn0 = panel, *pn1 = panel + panel_bytes;
	const char *xb[P8_T];
	__m512 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm512_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		size_t oqs = cpu_p8_quants_at(b, nb, 272), osc = cpu_p8_scales_at(b, 272);
		const char *q0 = pn0 + oqs, *q1 = pn1 + oqs;
		if (pf) p16_prefetch_dq(panel, panel_bytes, b, 272);
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m512i p[P8_T][4];
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			p[j][0] = _mm512_set1_epi32(TAIL_I32(xb[j], ob));
#pragma GCC unroll 4
			for (int c = 1; c < CH; c++) p[j][c] = _mm512_setzero_si512();
		}
#pragma GCC unroll 8
		for (int kk = 0; kk < 8; kk++) {
			__m512i u = _mm512_xor_si512(
			        _mm512_inserti64x4(
			                _mm512_castsi256_si512(_mm256_loadu_si256(
			                        (const __m256i *)(q0 + 32 * kk))),
			                _mm256_loadu_si256((const __m256i *)(q1 + 32 * kk)), 1),
			        flip);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				int c = kk % CH;
				p[j][c] = dpbusd_bcast(p[j][c], u, xb[j] + oq + 4 * kk);
			}
		}
		p16_float_step(g, CH, p, pn0 + osc, pn1 + osc, xb, od, acc);
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

/*
 * p16_tile's and q8p16_tile's work for 8 tokens from their interleaved
 * activations (cpu_il_pack): every broadcast at a constant offset from one
 * pointer. blk, a constant, picks the type: 144 Q4_0 (nibbles, the bias
 * >> 4), 272 Q8_0 (bytes flipped to unsigned, the bias).
 */
static inline __attribute__((always_inline)) void p16_il(size_t blk, bool pf, int64_t nb,
                                                         const char *panel, size_t panel_bytes,
                                                         const char *il, float *y, int64_t ldy)
{
	const __m512i m4 = _mm512_set1_epi8(0xF), flip = _mm512_set1_epi8((char)0x80);
	const char *pn0 = panel, *pn1 = panel + panel_bytes;
	__m512 acc[8];
#pragma GCC unroll 8
	for (int j = 0; j < 8; j++) acc[j] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		size_t oqs = cpu_p8_quants_at(b, nb, blk), osc = cpu_p8_scales_at(b, blk);
		const char *q0 = pn0 + oqs, *q1 = pn1 + oqs, *xi = il + (size_t)b * CPU_IL_BLK;
		if (pf) p16_prefetch_dq(panel, panel_bytes, b, blk);
		__m512i p[8][4];
		const char *xd[8];
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++) {
			size_t bias = blk == 144 ? CPU_IL_BIAS4 : CPU_IL_BIAS;
			p[j][0] = _mm512_set1_epi32(TAIL_I32(xi, bias + 4 * j));
			xd[j] = xi + CPU_IL_D + 4 * j;
		}
#pragma GCC unroll 8
		for (int kk = 0; kk < (int)(blk - 16) / 32; kk++) {
			__m512i raw = _mm512_inserti64x4(
			        _mm512_castsi256_si512(
			                _mm256_loadu_si256((const __m256i *)(q0 + 32 * kk))),
			        _mm256_loadu_si256((const __m256i *)(q1 + 32 * kk)), 1);
			if (blk == 144) {
				__m512i lo = _mm512_and_si512(raw, m4);
				__m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
#pragma GCC unroll 8
				for (int j = 0; j < 8; j++) {
					p[j][0] = dpbusd_bcast(p[j][0], lo, xi + 32 * j + 4 * kk);
					p[j][0] = dpbusd_bcast(p[j][0], hi,
					                       xi + 32 * j + 16 + 4 * kk);
				}
			} else {
				__m512i u = _mm512_xor_si512(raw, flip);
#pragma GCC unroll 8
				for (int j = 0; j < 8; j++)
					p[j][0] = dpbusd_bcast(p[j][0], u, xi + 32 * j + 4 * kk);
			}
		}
		p16_float_step(8, 1, p, pn0 + osc, pn1 + osc, xd, 0, acc);
	}
#pragma GCC unroll 8
	for (int j = 0; j < 8; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

static inline __attribute__((always_inline)) void p16_tile_il(bool pf, int64_t nb,
                                                              const char *panel, size_t panel_bytes,
                                                              const char *il, float *y, int64_t ldy)
{
	p16_il(144, pf, nb, panel, panel_bytes, il, y, ldy);
}

static inline __attribute__((always_inline)) void q8p16_tile_il(bool pf, int64_t nb,
                                                                const char *panel,
                                                                size_t panel_bytes, const char *il,
                                                                float *y, int64_t ldy)
{
	p16_il(272, pf, nb, panel, panel_bytes, il, y, ldy);
}

#define P8_GEMM          gemm_q8_0_p8
#define P8_GEMM_IL       gemm_q8_0_p8il
#define P8_TILE16_IL_FN  q8p16_tile_il
#define P8_TILE_FN       q8p_tile
#define P8_TILE16_FN     q8p16_tile
#define P8_TILE16_MIN_NT 3
#include "kern_p8_gemm.h"

/* ---- the panel kernels of kern_avx512_k.c ---- */

/*
 * The K-quant, IQ4_XS and Q5_0 / Q5_1 panel kernels below are compiled in
 * kern_avx512_k.c (Q4_K, Q5_K, IQ4_XS) and kern_avx512_q56.c (Q6_K, Q5_0,
 * Q5_1), which build this file again with KERN_AVX512_PART 2 and 3: each
 * of them inlines its tiles for every token count, and in one file they
 * took 8 times the CPU time of all the rest of the set, while a
 * two-core machine compiles files at once. Parts 2 and 3 emit nothing else
 * (the compiler drops static functions nothing calls) and give theirs
 * external names, which the table at the end of part 1 takes.
 */
#define gemm_q4_k_p8   cpu_avx512_gemm_q4_k_p8
#define gemm_q5_k_p8   cpu_avx512_gemm_q5_k_p8
#define gemm_iq4_xs_p8 cpu_avx512_gemm_iq4_xs_p8
#define gemm_q6_k_p8   cpu_avx512_gemm_q6_k_p8
#define gemm_q5_0_p8   cpu_avx512_gemm_q5_0_p8
#define gemm_q5_1_p8   cpu_avx512_gemm_q5_1_p8
#define KERN_AVX512_GEMM_DECL(f)                                                     \
	void f(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x, \
	       size_t x_stride, int64_t nt, float *y, int64_t ldy)
#if KERN_AVX512_PART != 3
KERN_AVX512_GEMM_DECL(gemm_q4_k_p8);
KERN_AVX512_GEMM_DECL(gemm_q5_k_p8);
KERN_AVX512_GEMM_DECL(gemm_iq4_xs_p8);
#endif
#if KERN_AVX512_PART != 2
KERN_AVX512_GEMM_DECL(gemm_q6_k_p8);
KERN_AVX512_GEMM_DECL(gemm_q5_0_p8);
KERN_AVX512_GEMM_DECL(gemm_q5_1_p8);
#endif

#if KERN_AVX512_PART != 1
#if KERN_AVX512_PART == 2
#define P8_GEMM_LINKAGE /* external: part 1's table takes them */
#endif

/* ---- Q4_K repacked at load (repack.c): 8 rows x 4 tokens; in prompts 16 x 8 ---- */

/*
 * kern_avx2.c's Q4_K panel kernel with vpdpbusd: a vector of 8 rows' dword
 * kk of quant group c feeds sub-block 2c through its low nibbles (and 0x0F)
 * and sub-block 2c + 1 through its high nibbles left in place (and 0xF0:
 * 16 x the value, no shift), each one vpdpbusd into an int32 sum per row.
 * Those are multiplied by the rows' scales (vpmulld), the high ones summed
 * apart and divided by 16 once per super-block (exact: every term is a
 * multiple of 16; at most 4 x 32 x 240 x 127 x 63 < 2^31); the mins are 8
 * vpdpwssd. The integers are the reference's, the float steps too
 * (q4k_p8_step): the same bits as kern_avx2.c's kernel and the reference.
 * For one token the 8 products of a sub-block go to 2 chains (latency).
 */
#define K4_T 4 /* tokens per register tile */

/* A token's super-block of Q4_K or Q5_K panels from its exact scaled sum
 * isum: the mins' term (8 vpdpwssd of (min, min) against the token's pairs
 * of 16-value sums) and q4k_p8_step. */
static inline __attribute__((always_inline)) __m256 q4k_finish(__m256 acc,
                                                               const struct q4k_p8_sm *sm,
                                                               const char *sb, const char *xb,
                                                               int64_t b, __m256i isum)
{
	size_t ob = (size_t)b * sizeof(struct block_q8_k);
	__m256i ms = _mm256_setzero_si256();
#pragma GCC unroll 8
	for (int s = 0; s < 8; s++)
		ms = _mm256_dpwssd_epi32(
		        ms, q4k_p8_i16x2(sm->mn[s / 4], s % 4),
		        _mm256_set1_epi32(
		                load_i32(xb + ob + offsetof(struct block_q8_k, bsums) + 4 * s)));
	return q4k_p8_step(acc, sb, TAIL_F32(xb, ob), isum, ms);
}

static inline __attribute__((always_inline)) void q4k_tile(int g, bool pf, int64_t nsb,
                                                           const char *panel, const char *x0,
                                                           size_t xs, float *y, int64_t ldy,
                                                           int rows)
{
	const int CH = g == 1 ? 2 : 1;
	const __m256i m4 = _mm256_set1_epi8(0x0F), mh4 = _mm256_set1_epi8((char)0xF0);
	const char *xb[K4_T];
	__m256 acc[K4_T];
#pragma GCC unroll 4
	for (int j = 0; j < K4_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *sb = panel + (size_t)b * Q4K_P8_SB;
		if (pf)
			for (int l = 0; l < Q4K_P8_SB; l += 64)
				_mm_prefetch(sb + CPU_P8_PREFETCH + l, _MM_HINT_T0);
		struct q4k_p8_sm sm = q4k_p8_scales(sb);
		size_t ox = (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, qs);
		__m256i ev[K4_T], od[K4_T];
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			__m256i pl[K4_T][2], ph[K4_T][2];
#pragma GCC unroll 4
			for (int j = 0; j < g; j++)
#pragma GCC unroll 2
				for (int h = 0; h < CH; h++)
					pl[j][h] = ph[j][h] = _mm256_setzero_si256();
#pragma GCC unroll 8
			for (int kk = 0; kk < 8; kk++) {
				__m256i raw = _mm256_loadu_si256(
				        (const __m256i *)(sb + 128 + 256 * c + 32 * kk));
				__m256i lo = _mm256_and_si256(raw, m4);
				__m256i hi = _mm256_and_si256(raw, mh4);
				int h = kk % CH;
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					const char *q = xb[j] + ox + 64 * c + 4 * kk;
					pl[j][h] = _mm256_dpbusd_epi32(
					        pl[j][h], lo, _mm256_set1_epi32(load_i32(q)));
					ph[j][h] = _mm256_dpbusd_epi32(
					        ph[j][h], hi, _mm256_set1_epi32(load_i32(q + 32)));
				}
			}
			__m256i scl = q4k_p8_i32(sm.sc[c / 2], (2 * c) % 4);
			__m256i sch = q4k_p8_i32(sm.sc[c / 2], (2 * c + 1) % 4);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i l = pl[j][0], hh = ph[j][0];
				if (CH == 2) {
					l = _mm256_add_epi32(l, pl[j][1]);
					hh = _mm256_add_epi32(hh, ph[j][1]);
				}
				l = _mm256_mullo_epi32(l, scl);
				hh = _mm256_mullo_epi32(hh, sch);
				ev[j] = c ? _mm256_add_epi32(ev[j], l) : l;
				od[j] = c ? _mm256_add_epi32(od[j], hh) : hh;
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < g; j++)
			acc[j] = q4k_finish(acc[j], &sm, sb, xb[j], b,
			                    _mm256_add_epi32(ev[j], _mm256_srai_epi32(od[j], 4)));
	}
	p8_store(acc, g, rows, y, ldy);
}


/*
 * Prompts: two panels at once on zmm (16 rows, one per int32 lane), each
 * activation broadcast serving 16 rows. The vectors of quant group c feed
 * sub-block 2c through their low nibbles and 2c + 1 through their high
 * ones in two passes, so a pass holds one int32 sum per token and 8 tokens
 * fit the 32 registers with their super-block sums; a pass's sums are
 * multiplied by the rows' scales (vpmulld) and added into those (at most
 * 8 x 32 x 15 x 127 x 63 < 2^31). The mins are 8 vpdpwssd. The integers
 * are the reference's and the float steps q4k_p8_step's, lane for lane:
 * the same bits as q4k_tile, kern_avx2.c's kernel and the reference. Decode
 * keeps q4k_tile, one panel at a time: one stream from DRAM read 36 GB/s
 * where two panels at once read 30 (500 MB, nt=1, any prefetch distance
 * tried).
 */

static inline __m512i q4k16_join(__m256i lo, __m256i hi)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

static inline __m512i q4k16_load(const char *s0, const char *s1)
{
	return q4k16_join(_mm256_loadu_si256((const __m256i *)s0),
	                  _mm256_loadu_si256((const __m256i *)s1));
}

/* Byte s (0..3) of each dword lane as an int32 lane (q4k_p8_i32 on zmm). */
static inline __m512i q4k16_i32(__m512i v, int s)
{
	__m512i ctl = _mm512_add_epi32(
	        _mm512_set1_epi32((int)(0x80808000u | (unsigned)s)),
	        _mm512_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12));
	return _mm512_shuffle_epi8(v, ctl);
}

/* Byte s (0..3) of each dword lane in both int16 halves (q4k_p8_i16x2). */
static inline __m512i q4k16_i16x2(__m512i v, int s)
{
	const int k = 0x40004;
	__m512i ctl = _mm512_add_epi32(
	        _mm512_set1_epi32((int)(0x80008000u | ((unsigned)s << 16) | (unsigned)s)),
	        _mm512_setr_epi32(0, k, 2 * k, 3 * k, 0, k, 2 * k, 3 * k, 0, k, 2 * k, 3 * k, 0, k,
	                          2 * k, 3 * k));
	return _mm512_shuffle_epi8(v, ctl);
}

/* q4k_p8_step on 16 lanes, operation for operation: s0 and s1 the two
 * panels' super-blocks. */
static inline __attribute__((always_inline)) __m512
q4k16_step(__m512 acc, const char *s0, const char *s1, float yd, __m512i sumi, __m512i summ)
{
	__m512 dv = _mm512_cvtph_ps(_mm256_inserti128_si256(
	        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)s0)),
	        _mm_loadu_si128((const __m128i *)s1), 1));
	__m512 mv = _mm512_cvtph_ps(_mm256_inserti128_si256(
	        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(s0 + 16))),
	        _mm_loadu_si128((const __m128i *)(s1 + 16)), 1));
	__m512 y = _mm512_set1_ps(yd);
	__m512 t1 = _mm512_mul_ps(y, _mm512_mul_ps(dv, _mm512_cvtepi32_ps(sumi)));
	__m512 t2 = _mm512_mul_ps(y, _mm512_mul_ps(mv, _mm512_cvtepi32_ps(summ)));
	return _mm512_add_ps(acc, _mm512_sub_ps(t1, t2));
}

/* q4k_p8_scales's word arithmetic on both panels' words. */
struct q4k16_sm {
	__m512i sc[2], mn[2];
};

static inline __attribute__((always_inline)) struct q4k16_sm q4k16_scales(const char *s0,
                                                                          const char *s1)
{
	const __m512i k1 = _mm512_set1_epi8(0x3f), k2 = _mm512_set1_epi8(0xf),
	              k3 = _mm512_set1_epi8(3);
	__m512i w0 = q4k16_load(s0 + 32, s1 + 32), w1 = q4k16_load(s0 + 64, s1 + 64),
	        w2 = q4k16_load(s0 + 96, s1 + 96);
	struct q4k16_sm r;
	r.sc[0] = _mm512_and_si512(w0, k1);
	r.sc[1] = _mm512_or_si512(
	        _mm512_and_si512(w2, k2),
	        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w0, 6), k3), 4));
	r.mn[0] = _mm512_and_si512(w1, k1);
	r.mn[1] = _mm512_or_si512(
	        _mm512_and_si512(_mm512_srli_epi32(w2, 4), k2),
	        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w1, 6), k3), 4));
	return r;
}

/* q4k_finish on 16 lanes: the mins' 8 vpdpwssd and q4k16_step. */
static inline __attribute__((always_inline)) __m512
q4k16_finish(__m512 acc, const struct q4k16_sm *sm, const char *s0, const char *s1, const char *xb,
             int64_t b, __m512i isum)
{
	size_t ob = (size_t)b * sizeof(struct block_q8_k);
	__m512i ms = _mm512_setzero_si512();
#pragma GCC unroll 8
	for (int s = 0; s < 8; s++)
		ms = _mm512_dpwssd_epi32(
		        ms, q4k16_i16x2(sm->mn[s / 4], s % 4),
		        _mm512_set1_epi32(
		                load_i32(xb + ob + offsetof(struct block_q8_k, bsums) + 4 * s)));
	return q4k16_step(acc, s0, s1, TAIL_F32(xb, ob), isum, ms);
}

/* q5k_p8_levels on zmm. */
static inline __m512i q5k16_levels(__m512i nib, __m512i qh, int s)
{
	__m512i hb = s < 4   ? _mm512_slli_epi16(qh, 4 - s)
	             : s > 4 ? _mm512_srli_epi16(qh, s - 4)
	                     : qh;
	return _mm512_or_si512(nib, _mm512_and_si512(hb, _mm512_set1_epi8(0x10)));
}

/* Q4_K, or Q5_K (q5: the nibbles with their fifth bits, q5k16_levels;
 * the sums at most 8 x 32 x 31 x 127 x 63 < 2^31). */
static inline __attribute__((always_inline)) void k4_16_tile(bool q5, int g, int64_t nsb,
                                                             const char *p0, size_t panel_bytes,
                                                             const char *x0, size_t xs, float *y,
                                                             int64_t ldy)
{
	const size_t sbb = q5 ? Q5K_P8_SB : Q4K_P8_SB, oqs = q5 ? 384 : 128;
	const char *p1 = p0 + panel_bytes;
	const int CH = g == 1 ? 4 : g <= 4 ? 2 : 1; /* independent int32 chains per token */
	const __m512i m4 = _mm512_set1_epi8(0x0F);
	const char *xb[P8_T];
	__m512 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm512_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *s0 = p0 + (size_t)b * sbb, *s1 = p1 + (size_t)b * sbb;
		struct q4k16_sm sm = q4k16_scales(s0, s1);
		size_t ox = (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, qs);
		__m512i isum[P8_T];
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
#pragma GCC unroll 2
			for (int hi = 0; hi < 2; hi++) { /* sub-block 2c + hi */
				__m512i p[P8_T][4];
#pragma GCC unroll 8
				for (int j = 0; j < g; j++)
#pragma GCC unroll 4
					for (int h = 0; h < CH; h++)
						p[j][h] = _mm512_setzero_si512();
#pragma GCC unroll 8
				for (int kk = 0; kk < 8; kk++) {
					size_t oq = oqs + 256 * (size_t)c + 32 * (size_t)kk;
					__m512i raw = q4k16_load(s0 + oq, s1 + oq);
					__m512i v =
					        hi ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4)
					           : _mm512_and_si512(raw, m4);
					if (q5)
						v = q5k16_levels(v,
						                 q4k16_load(s0 + 128 + 32 * kk,
						                            s1 + 128 + 32 * kk),
						                 2 * c + hi);
					int h = kk % CH;
#pragma GCC unroll 8
					for (int j = 0; j < g; j++)
						p[j][h] = dpbusd_bcast(p[j][h], v,
						                       xb[j] + ox + 64 * c +
						                               32 * hi + 4 * kk);
				}
				__m512i scale = q4k16_i32(sm.sc[c / 2], (2 * c + hi) % 4);
#pragma GCC unroll 8
				for (int j = 0; j < g; j++) {
					__m512i s = p[j][0];
#pragma GCC unroll 4
					for (int h = 1; h < CH; h++)
						s = _mm512_add_epi32(s, p[j][h]);
					s = _mm512_mullo_epi32(s, scale);
					isum[j] = c || hi ? _mm512_add_epi32(isum[j], s) : s;
					/* kept here: GCC otherwise sinks the 64
					 * multiplies to the super-block's end and
					 * spills the sums waiting for them (64 stores
					 * and reloads; nt=16 ~10% slower) */
					__asm__("" : "+v"(isum[j]));
				}
			}
#pragma GCC unroll 8
		for (int j = 0; j < g; j++)
			acc[j] = q4k16_finish(acc[j], &sm, s0, s1, xb[j], b, isum[j]);
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

static inline __attribute__((always_inline)) void q4k16_tile(int g, bool pf, int64_t nsb,
                                                             const char *p0, size_t panel_bytes,
                                                             const char *x0, size_t xs, float *y,
                                                             int64_t ldy)
{
	(void)pf; /* the tile reads 16 rows for 5+ tokens: compute-bound */
	k4_16_tile(false, g, nsb, p0, panel_bytes, x0, xs, y, ldy);
}

#define P8_GEMM          gemm_q4_k_p8
#define P8_TILE_FN       q4k_tile
#define P8_TILE16_FN     q4k16_tile
#define P8_TILE16_MIN_NT 5 /* decode and verify steps: one panel at a time */
#define P8_BLOCK         QK_K
#define P8_TILE_T        K4_T
#include "kern_p8_gemm.h"

/* ---- Q5_K repacked at load (repack.c): 8 rows x 4 tokens; in prompts 16 x 8 ---- */

/*
 * q4k_tile with 5-bit levels (q5k_p8_levels: the nibbles with their fifth
 * bits from the qh word of the same values). A high level x 16 no longer
 * fits a byte, so the high nibbles are shifted down and both sub-blocks'
 * sums multiplied by their scales as they are (at most 8 x 32 x 31 x 127
 * x 63 < 2^31 a super-block). The integers and float steps are the
 * reference gemm_q5_k's: its bits, as kern_avx2.c's tile. Prompts take
 * k4_16_tile on pairs of panels.
 */
static inline __attribute__((always_inline)) void q5k_tile(int g, bool pf, int64_t nsb,
                                                           const char *panel, const char *x0,
                                                           size_t xs, float *y, int64_t ldy,
                                                           int rows)
{
	const int CH = g == 1 ? 2 : 1;
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	const char *xb[K4_T];
	__m256 acc[K4_T];
#pragma GCC unroll 4
	for (int j = 0; j < K4_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *sb = panel + (size_t)b * Q5K_P8_SB;
		if (pf) p8_prefetch(panel, b, Q5K_P8_SB);
		struct q4k_p8_sm sm = q4k_p8_scales(sb);
		size_t ox = (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, qs);
		__m256i isum[K4_T];
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			__m256i pl[K4_T][2], ph[K4_T][2];
#pragma GCC unroll 4
			for (int j = 0; j < g; j++)
#pragma GCC unroll 2
				for (int h = 0; h < CH; h++)
					pl[j][h] = ph[j][h] = _mm256_setzero_si256();
#pragma GCC unroll 8
			for (int kk = 0; kk < 8; kk++) {
				__m256i raw = _mm256_loadu_si256(
				        (const __m256i *)(sb + 384 + 256 * c + 32 * kk));
				__m256i qh =
				        _mm256_loadu_si256((const __m256i *)(sb + 128 + 32 * kk));
				__m256i lo = q5k_p8_levels(_mm256_and_si256(raw, m4), qh, 2 * c);
				__m256i hi = q5k_p8_levels(
				        _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), qh,
				        2 * c + 1);
				int h = kk % CH;
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					const char *q = xb[j] + ox + 64 * c + 4 * kk;
					pl[j][h] = _mm256_dpbusd_epi32(
					        pl[j][h], lo, _mm256_set1_epi32(load_i32(q)));
					ph[j][h] = _mm256_dpbusd_epi32(
					        ph[j][h], hi, _mm256_set1_epi32(load_i32(q + 32)));
				}
			}
			__m256i scl = q4k_p8_i32(sm.sc[c / 2], (2 * c) % 4);
			__m256i sch = q4k_p8_i32(sm.sc[c / 2], (2 * c + 1) % 4);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i l = pl[j][0], hh = ph[j][0];
				if (CH == 2) {
					l = _mm256_add_epi32(l, pl[j][1]);
					hh = _mm256_add_epi32(hh, ph[j][1]);
				}
				__m256i s = _mm256_add_epi32(_mm256_mullo_epi32(l, scl),
				                             _mm256_mullo_epi32(hh, sch));
				isum[j] = c ? _mm256_add_epi32(isum[j], s) : s;
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) acc[j] = q4k_finish(acc[j], &sm, sb, xb[j], b, isum[j]);
	}
	p8_store(acc, g, rows, y, ldy);
}

static inline __attribute__((always_inline)) void q5k16_tile(int g, bool pf, int64_t nsb,
                                                             const char *p0, size_t panel_bytes,
                                                             const char *x0, size_t xs, float *y,
                                                             int64_t ldy)
{
	(void)pf;
	k4_16_tile(true, g, nsb, p0, panel_bytes, x0, xs, y, ldy);
}

#define P8_GEMM          gemm_q5_k_p8
#define P8_TILE_FN       q5k_tile
#define P8_TILE16_FN     q5k16_tile
#define P8_TILE16_MIN_NT 5
#define P8_BLOCK         QK_K
#define P8_TILE_T        K4_T
#include "kern_p8_gemm.h"

/* ---- IQ4_XS repacked at load (repack.c): 8 rows x 4 tokens; in prompts 16 x 8 ---- */

/*
 * A sub-block's 32 levels of 8 rows are 4 qs vectors, low and high
 * nibbles; vpshufb looks up level + 128 (unsigned, iq4xs_p8_table) for
 * vpdpbusd, whose sum starts at -128 x sum(x) of the token's sub-block
 * (iq4xs_p8_bias, from the Q8_K bsums), so it ends exactly sum(level x).
 * That times the rows' scale ls - 32 (vpmulld) is added up over the 8
 * sub-blocks (at most 8 x 32 x 32 x 127 x 127 < 2^31, every partial sum
 * below 32 x 241 x 128 + 2^19): the reference's sumi, then its float steps
 * (iq4xs_p8_step). The reference's bits, as kern_avx2.c's tile.
 */
static inline __attribute__((always_inline)) void iq4xs_tile(int g, bool pf, int64_t nsb,
                                                             const char *panel, const char *x0,
                                                             size_t xs, float *y, int64_t ldy,
                                                             int rows)
{
	const int CH = g == 1 ? 2 : 1;
	const __m256i m4 = _mm256_set1_epi8(0x0F), tab = iq4xs_p8_table();
	const char *xb[K4_T];
	__m256 acc[K4_T];
#pragma GCC unroll 4
	for (int j = 0; j < K4_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *sb = panel + (size_t)b * IQ4XS_P8_SB;
		if (pf) p8_prefetch(panel, b, IQ4XS_P8_SB);
		__m256i sl = _mm256_loadu_si256((const __m256i *)(sb + 32));
		__m256i sh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(sb + 16)));
		size_t ob = (size_t)b * sizeof(struct block_q8_k);
		size_t ox = ob + offsetof(struct block_q8_k, qs);
		__m256i isum[K4_T];
#pragma GCC unroll 8
		for (int s = 0; s < 8; s++) {
			__m256i p[K4_T][2];
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				p[j][0] = _mm256_set1_epi32(iq4xs_p8_bias(xb[j] + ob, s));
				if (CH == 2) p[j][1] = _mm256_setzero_si256();
			}
#pragma GCC unroll 4
			for (int kk = 0; kk < 4; kk++) {
				__m256i raw = _mm256_loadu_si256(
				        (const __m256i *)(sb + 64 + 128 * s + 32 * kk));
				__m256i lo = _mm256_shuffle_epi8(tab, _mm256_and_si256(raw, m4));
				__m256i hi = _mm256_shuffle_epi8(
				        tab, _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4));
				int h = kk % CH;
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					const char *q = xb[j] + ox + 32 * s + 4 * kk;
					p[j][h] = _mm256_dpbusd_epi32(
					        p[j][h], lo, _mm256_set1_epi32(load_i32(q)));
					p[j][h] = _mm256_dpbusd_epi32(
					        p[j][h], hi, _mm256_set1_epi32(load_i32(q + 16)));
				}
			}
			__m256i sc = iq4xs_p8_scale(sl, sh, s);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i v = CH == 2 ? _mm256_add_epi32(p[j][0], p[j][1]) : p[j][0];
				v = _mm256_mullo_epi32(v, sc);
				isum[j] = s ? _mm256_add_epi32(isum[j], v) : v;
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < g; j++)
			acc[j] = iq4xs_p8_step(acc[j], sb, TAIL_F32(xb[j], ob), isum[j]);
	}
	p8_store(acc, g, rows, y, ldy);
}

/* Prompts: iq4xs_tile on two panels at once (16 rows on zmm, one per
 * int32 lane) and 8 tokens, each activation broadcast serving 16 rows;
 * the integers and float steps lane for lane iq4xs_tile's. */
static inline __attribute__((always_inline)) void iq4xs16_tile(int g, bool pf, int64_t nsb,
                                                               const char *p0, size_t panel_bytes,
                                                               const char *x0, size_t xs, float *y,
                                                               int64_t ldy)
{
	(void)pf; /* the tile reads 16 rows for 5+ tokens: compute-bound */
	const char *p1 = p0 + panel_bytes;
	const int CH = g == 1 ? 4 : g <= 4 ? 2 : 1; /* independent int32 chains per token */
	const __m512i m4 = _mm512_set1_epi8(0x0F), tab = _mm512_broadcast_i64x4(iq4xs_p8_table());
	const char *xb[P8_T];
	__m512 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm512_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *s0 = p0 + (size_t)b * IQ4XS_P8_SB, *s1 = p1 + (size_t)b * IQ4XS_P8_SB;
		__m512i sl = q4k16_load(s0 + 32, s1 + 32);
		__m512i sh = _mm512_cvtepu16_epi32(_mm256_inserti128_si256(
		        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(s0 + 16))),
		        _mm_loadu_si128((const __m128i *)(s1 + 16)), 1));
		size_t ob = (size_t)b * sizeof(struct block_q8_k);
		size_t ox = ob + offsetof(struct block_q8_k, qs);
		__m512i isum[P8_T];
#pragma GCC unroll 8
		for (int s = 0; s < 8; s++) {
			__m512i p[P8_T][4];
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				p[j][0] = _mm512_set1_epi32(iq4xs_p8_bias(xb[j] + ob, s));
#pragma GCC unroll 4
				for (int h = 1; h < CH; h++) p[j][h] = _mm512_setzero_si512();
			}
#pragma GCC unroll 8
			for (int k = 0; k < 8; k++) { /* kk = k / 2; the high nibbles at odd k */
				size_t oq = 64 + 128 * (size_t)s + 32 * (size_t)(k / 2);
				__m512i raw = q4k16_load(s0 + oq, s1 + oq);
				__m512i v = _mm512_shuffle_epi8(
				        tab, k % 2 ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4)
				                   : _mm512_and_si512(raw, m4));
				int h = k % CH;
#pragma GCC unroll 8
				for (int j = 0; j < g; j++)
					p[j][h] = dpbusd_bcast(p[j][h], v,
					                       xb[j] + ox + 32 * s + 16 * (k % 2) +
					                               4 * (k / 2));
			}
			__m512i lo = _mm512_and_si512(_mm512_srli_epi32(sl, 4 * s),
			                              _mm512_set1_epi32(15));
			__m512i hi = _mm512_and_si512(_mm512_srli_epi32(sh, 2 * s),
			                              _mm512_set1_epi32(3));
			__m512i sc = _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)),
			                              _mm512_set1_epi32(32));
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				__m512i v = p[j][0];
#pragma GCC unroll 4
				for (int h = 1; h < CH; h++) v = _mm512_add_epi32(v, p[j][h]);
				v = _mm512_mullo_epi32(v, sc);
				isum[j] = s ? _mm512_add_epi32(isum[j], v) : v;
				__asm__(""
				        : "+v"(isum[j])); /* as in k4_16_tile: no sunk multiplies */
			}
		}
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			__m512 dv = _mm512_cvtph_ps(_mm256_inserti128_si256(
			        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)s0)),
			        _mm_loadu_si128((const __m128i *)s1), 1));
			__m512 yv = _mm512_set1_ps(TAIL_F32(xb[j], ob));
			__m512 t1 =
			        _mm512_mul_ps(yv, _mm512_mul_ps(dv, _mm512_cvtepi32_ps(isum[j])));
			__m512 t2 = _mm512_mul_ps(yv, _mm512_setzero_ps()); /* iq4xs_p8_step's */
			acc[j] = _mm512_add_ps(acc[j], _mm512_sub_ps(t1, t2));
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

#define P8_GEMM          gemm_iq4_xs_p8
#define P8_TILE_FN       iq4xs_tile
#define P8_TILE16_FN     iq4xs16_tile
#define P8_TILE16_MIN_NT 5
#define P8_BLOCK         QK_K
#define P8_TILE_T        K4_T
#include "kern_p8_gemm.h"
/* part 2 ends here, part 3 (the rest) begins: the one's gemms are the
 * other's unused statics, dropped */
#undef P8_GEMM_LINKAGE
#if KERN_AVX512_PART == 3
#define P8_GEMM_LINKAGE
#endif

/* ---- Q6_K repacked at load (repack.c): kern_p8_q6k.h; in prompts 16 rows x 8 tokens ---- */

/*
 * Prompts: q6k_tile's sums on two panels at once (16 rows on zmm, one
 * per int32 lane) and 8 tokens: the 6-bit levels of 16 rows x 4 values per
 * vector, 4 vpdpbusd per 16-value group, vpmulld by the rows' int8 scales,
 * summed over the 16 groups (at most 16 x 16 x 63 x 127 x 128 < 2^31);
 * the levels' offset once per super-block, -32 sum(scale x bsum) by 8
 * vpdpwssd (where q6k_tile starts each group from -32 bsums[g]: the same
 * exact integer). Then the reference's float steps: gemm_q6_k's bits.
 * Decode keeps q6k_tile, one panel at a time (one DRAM stream, as Q4_K's).
 */
static inline __attribute__((always_inline)) void q6k16_tile(int g, bool pf, int64_t nsb,
                                                             const char *p0, size_t panel_bytes,
                                                             const char *x0, size_t xs, float *y,
                                                             int64_t ldy);
#define Q6K_TILE16 q6k16_tile

#include "kern_p8_q6k.h"

static inline __attribute__((always_inline)) void q6k16_tile(int g, bool pf, int64_t nsb,
                                                             const char *p0, size_t panel_bytes,
                                                             const char *x0, size_t xs, float *y,
                                                             int64_t ldy)
{
	const char *p1 = p0 + panel_bytes;
	const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
	const char *xb[P8_T];
	__m512 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm512_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *s0 = p0 + (size_t)b * Q6K_P8_SB, *s1 = p1 + (size_t)b * Q6K_P8_SB;
		size_t ox = (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, qs);
		size_t obs =
		        (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, bsums);
		__m512i isum[P8_T];
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
#pragma GCC unroll 2
				for (int half = 0; half < 2; half++) {
					int grp = 8 * h + 2 * c + half;
					__m512i p[P8_T];
#pragma GCC unroll 8
					for (int j = 0; j < g; j++) p[j] = _mm512_setzero_si512();
#pragma GCC unroll 4
					for (int kk = 4 * half; kk < 4 * half + 4; kk++) {
						size_t ol = 144 +
						            32 * (size_t)((2 * h + c % 2) * 8 + kk);
						size_t oh = 1168 + 32 * (size_t)(8 * h + kk);
						__m512i raw = q4k16_load(s0 + ol, s1 + ol);
						__m512i qh = q4k16_load(s0 + oh, s1 + oh);
						__m512i nib =
						        c < 2 ? _mm512_and_si512(raw, m4)
						              : _mm512_and_si512(
						                        _mm512_srli_epi16(raw, 4),
						                        m4);
						__m512i hb =
						        c == 3 ? _mm512_srli_epi16(qh, 2)
						               : _mm512_slli_epi16(qh, 4 - 2 * c);
						__m512i q = _mm512_or_si512(
						        nib, _mm512_and_si512(hb, m30));
#pragma GCC unroll 8
						for (int j = 0; j < g; j++)
							p[j] = dpbusd_bcast(p[j], q,
							                    xb[j] + ox + 128 * h +
							                            32 * c +
							                            4 * kk);
					}
					__m512i sc = _mm512_cvtepi8_epi32(_mm_unpacklo_epi64(
					        _mm_loadl_epi64(
					                (const __m128i *)(s0 + 16 + 8 * grp)),
					        _mm_loadl_epi64(
					                (const __m128i *)(s1 + 16 + 8 * grp))));
#pragma GCC unroll 8
					for (int j = 0; j < g; j++) {
						__m512i s = _mm512_mullo_epi32(p[j], sc);
						isum[j] = grp ? _mm512_add_epi32(isum[j], s) : s;
						__asm__("" : "+v"(isum[j])); /* as q4k16_tile's */
					}
				}
		/* the levels' offset: -32 sum over g of scale[g] bsums[g], two
		 * groups per vpdpwssd (each lane's pair of int16 scales) */
		__m512i sp[8];
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++) {
			const char *o0 = s0 + 16 + 16 * k, *o1 = s1 + 16 + 16 * k;
			__m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)o0),
			                              _mm_loadl_epi64((const __m128i *)(o0 + 8)));
			__m128i c = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)o1),
			                              _mm_loadl_epi64((const __m128i *)(o1 + 8)));
			sp[k] = _mm512_cvtepi8_epi16(
			        _mm256_inserti128_si256(_mm256_castsi128_si256(a), c, 1));
		}
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			__m512i ms = _mm512_setzero_si512();
#pragma GCC unroll 8
			for (int k = 0; k < 8; k++)
				ms = _mm512_dpwssd_epi32(
				        ms, sp[k],
				        _mm512_set1_epi32(load_i32(xb[j] + obs + 4 * k)));
			isum[j] = _mm512_sub_epi32(isum[j], _mm512_slli_epi32(ms, 5));
		}
		__m512 dv = _mm512_cvtph_ps(_mm256_inserti128_si256(
		        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)s0)),
		        _mm_loadu_si128((const __m128i *)s1), 1));
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			__m512 yd = _mm512_set1_ps(
			        TAIL_F32(xb[j], (size_t)b * sizeof(struct block_q8_k)));
			__m512 t1 =
			        _mm512_mul_ps(yd, _mm512_mul_ps(dv, _mm512_cvtepi32_ps(isum[j])));
			__m512 t2 = _mm512_mul_ps(yd, _mm512_setzero_ps()); /* d_y * (0 * 0) */
			acc[j] = _mm512_add_ps(acc[j], _mm512_sub_ps(t1, t2));
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

/* ---- Q5_0 and Q5_1 repacked at load (repack.c): 8 or 16 rows x up to 8 tokens ---- */

/* Four vpdpbusd in one chain. */
#define SIMD_DOT4_I8(acc, u0, s0, u1, s1, u2, s2, u3, s3)                                         \
	_mm256_dpbusd_epi32(                                                                      \
	        _mm256_dpbusd_epi32(                                                              \
	                _mm256_dpbusd_epi32(_mm256_dpbusd_epi32((acc), u0, s0), u1, s1), u2, s2), \
	        u3, s3)

/*
 * Q5_0 on two full panels at once (zmm: 16 rows; kern_p8_q5.h's q5_0p_tile
 * serves a last odd panel; Q5_1 the same below): each activation broadcast and vpdpbusd serve
 * 16 rows. Lane for lane q5_0p_tile's operations (a ternary logic op for
 * its or of the fifth bit), so the same bits.
 */
static inline __attribute__((always_inline)) __m512i q5p16_levels(const char *q0, const char *q1,
                                                                  __m512i qh, int v)
{
	const __m512i m4 = _mm512_set1_epi8(0x0F), m10 = _mm512_set1_epi8(0x10);
	int o = 32 + 32 * (v & 3);
	__m512i raw = _mm512_inserti64x4(
	        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(q0 + o))),
	        _mm256_loadu_si256((const __m256i *)(q1 + o)), 1);
	__m512i nib =
	        v < 4 ? _mm512_and_si512(raw, m4) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
	__m512i hb = v < 4   ? _mm512_slli_epi32(qh, 4 - v)
	             : v > 4 ? _mm512_srli_epi32(qh, v - 4)
	                     : qh;
	return _mm512_ternarylogic_epi32(nib, hb, m10, 0xF8); /* nib | (hb & m10) */
}

static inline __attribute__((always_inline)) void q5_0p16_tile(int g, bool pf, int64_t nb,
                                                               const char *panel,
                                                               size_t panel_bytes, const char *x0,
                                                               size_t xs, float *y, int64_t ldy)
{
	const int CH = g <= 2 ? 2 : 1;
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *sc0 = panel, *qv0 = panel + 16 * (size_t)nb;
	const char *sc1 = panel + panel_bytes, *qv1 = sc1 + 16 * (size_t)nb;
	const char *xb[P8_T];
	__m512 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm512_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q0 = qv0 + (size_t)b * 160, *q1 = qv1 + (size_t)b * 160;
		if (pf) p16_prefetch(q0, q1, sc0, sc1, b, 160, 16);
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m512i qh = _mm512_inserti64x4(
		        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)q0)),
		        _mm256_loadu_si256((const __m256i *)q1), 1);
		__m512i p[P8_T][2];
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m512i u[4];
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++) u[k] = q5p16_levels(q0, q1, qh, 4 * h + k);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				const char *xq = xb[j] + oq + 16 * h;
				int c = h % CH;
				__m512i a = h == 0  ? _mm512_set1_epi32(TAIL_I32(xb[j], ob) >> 3)
				            : c > 0 ? _mm512_setzero_si512()
				                    : p[j][0];
#pragma GCC unroll 4
				for (int k = 0; k < 4; k++) a = dpbusd_bcast(a, u[k], xq + 4 * k);
				p[j][c] = a;
			}
		}
		__m512 dwv = _mm512_cvtph_ps(_mm256_inserti128_si256(
		        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(sc0 + 16 * b))),
		        _mm_loadu_si128((const __m128i *)(sc1 + 16 * b)), 1));
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			__m512i s = CH > 1 ? _mm512_add_epi32(p[j][0], p[j][1]) : p[j][0];
			__m512 t = _mm512_mul_ps(
			        _mm512_cvtepi32_ps(s),
			        _mm512_mul_ps(dwv, _mm512_set1_ps(TAIL_F32(xb[j], od))));
			acc[j] = _mm512_add_ps(acc[j], t);
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

/* Q5_1 likewise (kern_p8_q5.h's q5_1p_tile lane for lane). */
static inline __attribute__((always_inline)) void q5_1p16_tile(int g, bool pf, int64_t nb,
                                                               const char *panel,
                                                               size_t panel_bytes, const char *x0,
                                                               size_t xs, float *y, int64_t ldy)
{
	const int CH = g <= 2 ? 2 : 1;
	const char *sc0 = panel, *qv0 = panel + 32 * (size_t)nb;
	const char *sc1 = panel + panel_bytes, *qv1 = sc1 + 32 * (size_t)nb;
	const char *xb[P8_T];
	__m512 acc[P8_T];
#pragma GCC unroll 8
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm512_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q0 = qv0 + (size_t)b * 160, *q1 = qv1 + (size_t)b * 160;
		if (pf) p16_prefetch(q0, q1, sc0, sc1, b, 160, 32);
		size_t ox = (size_t)b * sizeof(struct block_q8_1);
		__m512i qh = _mm512_inserti64x4(
		        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)q0)),
		        _mm256_loadu_si256((const __m256i *)q1), 1);
		__m512i p[P8_T][2];
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m512i u[4];
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++) u[k] = q5p16_levels(q0, q1, qh, 4 * h + k);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				const char *xq =
				        xb[j] + ox + offsetof(struct block_q8_1, qs) + 16 * h;
				int c = h % CH;
				__m512i a = h == 0 || c > 0 ? _mm512_setzero_si512() : p[j][0];
#pragma GCC unroll 4
				for (int k = 0; k < 4; k++) a = dpbusd_bcast(a, u[k], xq + 4 * k);
				p[j][c] = a;
			}
		}
		__m512 dv = _mm512_cvtph_ps(_mm256_inserti128_si256(
		        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(sc0 + 32 * b))),
		        _mm_loadu_si128((const __m128i *)(sc1 + 32 * b)), 1));
		__m512 mv = _mm512_cvtph_ps(_mm256_inserti128_si256(
		        _mm256_castsi128_si256(
		                _mm_loadu_si128((const __m128i *)(sc0 + 32 * b + 16))),
		        _mm_loadu_si128((const __m128i *)(sc1 + 32 * b + 16)), 1));
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			const struct block_q8_1 *xblk = (const struct block_q8_1 *)(xb[j] + ox);
			__m512i s = CH > 1 ? _mm512_add_epi32(p[j][0], p[j][1]) : p[j][0];
			__m512 t1 = _mm512_mul_ps(
			        _mm512_mul_ps(dv, _mm512_set1_ps(f16_to_f32(xblk->d))),
			        _mm512_cvtepi32_ps(s));
			__m512 t2 = _mm512_mul_ps(mv, _mm512_set1_ps(f16_to_f32(xblk->s)));
			acc[j] = _mm512_add_ps(acc[j], _mm512_add_ps(t1, t2));
		}
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

#define Q5P_TILE16 1
#include "kern_p8_q5.h"
#undef P8_GEMM_LINKAGE
#endif /* KERN_AVX512_PART != 1 */
/* the table's fields keep these names */
#undef gemm_q4_k_p8
#undef gemm_q5_k_p8
#undef gemm_iq4_xs_p8
#undef gemm_q6_k_p8
#undef gemm_q5_0_p8
#undef gemm_q5_1_p8

#if KERN_AVX512_PART == 1

/*
 * F16 with several tokens: a panel of up to 16 rows is widened to float once
 * per call (the conversion is then 1/(4 * tokens) of the work instead of a
 * quarter of it), then 4 rows x 4 tokens of zmm accumulators, each weight
 * vector used 4 times and each activation vector 4 times. Token groups are
 * the outer loop so their activations stay in L1 while the panel rows come
 * from L2.
 */
#define F16_PANEL_FLOATS 65536 /* 256 KB of stack */

static inline __attribute__((always_inline)) void f32_tile(int g, int64_t n, const float *const *w,
                                                           const float *const *x, float out[4][4])
{
	__m512 a[4][4];
#pragma GCC unroll 4
	for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
		for (int j = 0; j < 4; j++) a[r][j] = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 v[4];
#pragma GCC unroll 4
		for (int r = 0; r < 4; r++) v[r] = _mm512_loadu_ps(w[r] + i);
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m512 xv = _mm512_loadu_ps(x[j] + i);
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++) a[r][j] = _mm512_fmadd_ps(v[r], xv, a[r][j]);
		}
	}
	for (int r = 0; r < 4; r++)
		for (int j = 0; j < g; j++) {
			float sum = _mm512_reduce_add_ps(a[r][j]);
			for (int64_t k = i; k < n; k++) sum += w[r][k] * x[j][k];
			out[r][j] = sum;
		}
}

static void gemm_f16_512(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                         size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	int64_t pr = F16_PANEL_FLOATS / n / 4 * 4; /* panel rows */
	if (pr > 16) pr = 16;
	if (nt < 4 || pr < 4 || nr < 4) {
		gemm_f16(n, w, w_stride, nr, x, x_stride, nt, y, ldy);
		return;
	}
	_Alignas(64) float wf[F16_PANEL_FLOATS];
	int64_t nr4 = nr / 4 * 4;
	for (int64_t r0 = 0; r0 < nr4; r0 += pr) {
		int64_t rn = nr4 - r0 < pr ? nr4 - r0 : pr;
		for (int64_t r = 0; r < rn; r++) {
			const uint16_t *src =
			        (const uint16_t *)((const char *)w + (r0 + r) * w_stride);
			int64_t i = 0;
			for (; i + 16 <= n; i += 16)
				_mm512_storeu_ps(wf + r * n + i,
				                 _mm512_cvtph_ps(_mm256_loadu_si256(
				                         (const __m256i *)(src + i))));
			for (; i < n; i++) wf[r * n + i] = f16_to_f32(src[i]);
		}
		for (int64_t t0 = 0; t0 < nt; t0 += 4) {
			int g = nt - t0 < 4 ? (int)(nt - t0) : 4;
			const float *xs[4];
			for (int j = 0; j < g; j++)
				xs[j] = (const float *)((const char *)x + (t0 + j) * x_stride);
			for (int64_t r = 0; r < rn; r += 4) {
				const float *ws[4] = { wf + r * n, wf + (r + 1) * n,
					               wf + (r + 2) * n, wf + (r + 3) * n };
				float o[4][4];
				switch (g) {
				case 4: f32_tile(4, n, ws, xs, o); break;
				case 3: f32_tile(3, n, ws, xs, o); break;
				case 2: f32_tile(2, n, ws, xs, o); break;
				default: f32_tile(1, n, ws, xs, o); break;
				}
				for (int j = 0; j < g; j++)
					for (int k = 0; k < 4; k++)
						y[(t0 + j) * ldy + r0 + r + k] = o[k][j];
			}
		}
	}
	if (nr4 < nr)
		gemm_f16(n, (const char *)w + nr4 * w_stride, w_stride, nr - nr4, x, x_stride, nt,
		         y + nr4, ldy);
}

const struct cpu_kernels cpu_kernels_avx512 = {
	.name = "avx512-vnni",
	.act = { NULL, act_q8_0, act_q8_1, act_q8_k },
	.gemm_f32 = gemm_f32,
	.gemm_f16 = gemm_f16_512,
	.gemm_bf16 = gemm_bf16,
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
	.gemm_q8_0 = gemm_q8_0_512,
	.gemm_q4_0 = gemm_q4_0_512, /* unpacked rows (the model's are packed: gemm_q4_0_p8) */
	.gemm_q4_0_p8 = gemm_q4_0_p8,
	.gemm_q4_0_p8il = gemm_q4_0_p8il,
	.gemm_q8_0_p8il = gemm_q8_0_p8il,
	.gemm_q4_k_p8 = cpu_avx512_gemm_q4_k_p8,
	.gemm_q5_k_p8 = cpu_avx512_gemm_q5_k_p8,
	.gemm_iq4_xs_p8 = cpu_avx512_gemm_iq4_xs_p8,
	.gemm_q6_k_p8 = cpu_avx512_gemm_q6_k_p8,
	.gemm_q8_0_p8 = gemm_q8_0_p8,
	.gemm_q5_0_p8 = cpu_avx512_gemm_q5_0_p8,
	.gemm_q5_1_p8 = cpu_avx512_gemm_q5_1_p8,
	.dot_f32 = attn_dot,
	.axpy_f32 = attn_axpy,
	.dot_f16 = attn_dot_f16,
	.axpy_f16 = attn_axpy_f16,
	.score_f32 = attn512_score_f32,
	.mix_f32 = attn512_mix_f32,
	.score_f16 = attn512_score_f16,
	.mix_f16 = attn512_mix_f16,
	.score_q8 = cpu_avx512_score_q8, /* kern_avx512_q8.c */
	.mix_q8 = cpu_avx512_mix_q8,
	.softmax = attn512_softmax,
	.attn_qb = ATTN_QB,
	.score_t_f16 = attn512_score_t_f16,
	.softmax_t = attn512_softmax_t,
	.mix_t_f16 = attn512_mix_t_f16,
	.score_t_q8 = cpu_avx512_score_t_q8, /* kern_avx512_q8.c */
	.mix_t_q8 = cpu_avx512_mix_t_q8,
	.rmsnorm = row_rmsnorm,
	.swiglu = row_swiglu,
	.to_f16 = row_to_f16,
	.from_f16 = row_from_f16,
	.rope = row_rope,
};
#endif /* KERN_AVX512_PART == 1 */
#elif KERN_AVX512_PART == 1
#include "cpu.h"
const struct cpu_kernels cpu_kernels_avx512 = { .name = "avx512-vnni" };
#endif
