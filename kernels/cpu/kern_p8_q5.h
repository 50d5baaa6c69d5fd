/*
 * kern_p8_q5.h - the Q5_0 and Q5_1 panel kernels (repack.c's layout) on
 * ymm, 8 rows x up to Q5P_T tokens, written once for kern_avx2.c and
 * kern_avx512.c: each includes it after its SIMD_DOT4_I8 (four u8 x s8
 * vector products summed into int32 lanes), load_i32, TAIL_I32, TAIL_F32
 * and p8_store, and gets gemm_q5_0_p8 and gemm_q5_1_p8; kern_avx512.c
 * first defines Q5P_TILE16, q5_0p16_tile and q5_1p16_tile (two full panels
 * on zmm). The integer sums are exact and the float steps are kern_ref.c's,
 * operation for operation (the build does not contract them into FMAs), so
 * both sets give gemm_q5_0's / gemm_q5_1's bits at any batch size.
 */

#ifndef Q5P_T
#define Q5P_T P8_T /* tokens per register tile */
#endif

/*
 * The levels (0..31: nibble | fifth bit << 4) of group v of a panel block
 * (q: its 160 bytes) for 8 rows x 4 values: v < 4 the low nibbles of
 * vector v (values 4v..4v+3), v >= 4 the high nibbles of vector v - 4
 * (values 16 + 4(v - 4)..: 4v.. again). repack.c put byte m's fifth bit of
 * group v at bit v of byte m, so one shift brings it to bit 4. A group's
 * activation bytes are at 4v in the block.
 */
static inline __attribute__((always_inline)) __m256i q5p_levels(const char *q, __m256i qh, int v)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m10 = _mm256_set1_epi8(0x10);
	__m256i raw = _mm256_loadu_si256((const __m256i *)(q + 32 + 32 * (v & 3)));
	__m256i nib =
	        v < 4 ? _mm256_and_si256(raw, m4) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
	__m256i hb = v < 4   ? _mm256_slli_epi32(qh, 4 - v)
	             : v > 4 ? _mm256_srli_epi32(qh, v - 4)
	                     : qh;
	return _mm256_or_si256(nib, _mm256_and_si256(hb, m10));
}

/* Token j's 4 activation bytes of group 4h + k, broadcast (xq: its block's quants). */
#define Q5P_X(xq, h, k) _mm256_set1_epi32(load_i32((xq) + 16 * (h) + 4 * (k)))

/* ---- Q5_0 repacked at load (repack.c): 8 rows x up to Q5P_T tokens, any batch ---- */

/*
 * Per block and half h (the low nibbles, then the high ones): the 4
 * groups' levels (shared by the tile's tokens), one SIMD_DOT4_I8 per token
 * (16 products per row; AVX2's int16 pair sums stay below 4 x 2 x 31 x
 * 127 = 31496), the first half started from the token's -16 sum(x) (bias
 * >> 3: the levels' offset 16), so the int32 is kern_ref.c's exact
 * sum(q y); then its float step: acc + sumi * (d * d_y). One token (decode)
 * keeps the halves in two chains (the vpdpbusd latency).
 */
static inline __attribute__((always_inline)) void q5_0p_tile(int g, bool pf, int64_t nb,
                                                             const char *panel, const char *x0,
                                                             size_t xs, float *y, int64_t ldy,
                                                             int rows)
{
	const int CH = g <= 2 ? 2 : 1;
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *sc = panel, *qv = panel + 16 * (size_t)nb;
	const char *xb[Q5P_T];
	__m256 acc[Q5P_T];
#pragma GCC unroll 8
	for (int j = 0; j < Q5P_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q = qv + (size_t)b * 160;
		if (pf) { /* decode streams the panels from DRAM (kern_avx2.c's p8_tile) */
			_mm_prefetch(q + CPU_P8_PREFETCH, _MM_HINT_T0);
			_mm_prefetch(q + CPU_P8_PREFETCH + 64, _MM_HINT_T0);
			_mm_prefetch(q + CPU_P8_PREFETCH + 128, _MM_HINT_T0);
			if (!(b & 3)) _mm_prefetch(sc + 16 * b + CPU_P8_PREFETCH / 10, _MM_HINT_T0);
		}
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m256i qh = _mm256_loadu_si256((const __m256i *)q);
		__m256i p[Q5P_T][2];
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i u[4];
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++) u[k] = q5p_levels(q, qh, 4 * h + k);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				const char *xq = xb[j] + oq;
				int c = h % CH;
				__m256i a = h == 0  ? _mm256_set1_epi32(TAIL_I32(xb[j], ob) >> 3)
				            : c > 0 ? _mm256_setzero_si256()
				                    : p[j][0];
				p[j][c] = SIMD_DOT4_I8(a, u[0], Q5P_X(xq, h, 0), u[1],
				                       Q5P_X(xq, h, 1), u[2], Q5P_X(xq, h, 2), u[3],
				                       Q5P_X(xq, h, 3));
			}
		}
		__m256 dwv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 16 * b)));
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			__m256i s = CH > 1 ? _mm256_add_epi32(p[j][0], p[j][1]) : p[j][0];
			__m256 t = _mm256_mul_ps(
			        _mm256_cvtepi32_ps(s),
			        _mm256_mul_ps(dwv, _mm256_set1_ps(TAIL_F32(xb[j], od))));
			acc[j] = _mm256_add_ps(acc[j], t);
		}
	}
	p8_store(acc, g, rows, y, ldy);
}

#define P8_GEMM    gemm_q5_0_p8
#define P8_TILE_FN q5_0p_tile
#define P8_TILE_T  Q5P_T
#ifdef Q5P_TILE16
#define P8_TILE16_FN q5_0p16_tile
#endif
#include "kern_p8_gemm.h"

/* ---- Q5_1 repacked at load (repack.c): 8 rows x up to Q5P_T tokens, any batch ---- */

/*
 * As Q5_0's, the levels unsigned as stored (Q5_1 has no offset: its min m
 * is added per block), against Q8_1 activations (36-byte blocks: fp16 d,
 * fp16 s = d * sum(x), the quants); the float step is kern_ref.c's
 * dot32_q8_1: acc + ((d * d_y) * sumi + m * s_y).
 */
static inline __attribute__((always_inline)) void q5_1p_tile(int g, bool pf, int64_t nb,
                                                             const char *panel, const char *x0,
                                                             size_t xs, float *y, int64_t ldy,
                                                             int rows)
{
	const int CH = g <= 2 ? 2 : 1;
	const char *sc = panel, *qv = panel + 32 * (size_t)nb;
	const char *xb[Q5P_T];
	__m256 acc[Q5P_T];
#pragma GCC unroll 8
	for (int j = 0; j < Q5P_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q = qv + (size_t)b * 160;
		if (pf) {
			_mm_prefetch(q + CPU_P8_PREFETCH, _MM_HINT_T0);
			_mm_prefetch(q + CPU_P8_PREFETCH + 64, _MM_HINT_T0);
			_mm_prefetch(q + CPU_P8_PREFETCH + 128, _MM_HINT_T0);
			if (!(b & 1)) _mm_prefetch(sc + 32 * b + CPU_P8_PREFETCH / 5, _MM_HINT_T0);
		}
		size_t ox = (size_t)b * sizeof(struct block_q8_1);
		__m256i qh = _mm256_loadu_si256((const __m256i *)q);
		__m256i p[Q5P_T][2];
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i u[4];
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++) u[k] = q5p_levels(q, qh, 4 * h + k);
#pragma GCC unroll 8
			for (int j = 0; j < g; j++) {
				const char *xq = xb[j] + ox + offsetof(struct block_q8_1, qs);
				int c = h % CH;
				__m256i a = h == 0 || c > 0 ? _mm256_setzero_si256() : p[j][0];
				p[j][c] = SIMD_DOT4_I8(a, u[0], Q5P_X(xq, h, 0), u[1],
				                       Q5P_X(xq, h, 1), u[2], Q5P_X(xq, h, 2), u[3],
				                       Q5P_X(xq, h, 3));
			}
		}
		__m256 dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 32 * b)));
		__m256 mv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 32 * b + 16)));
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) {
			const struct block_q8_1 *xblk = (const struct block_q8_1 *)(xb[j] + ox);
			__m256i s = CH > 1 ? _mm256_add_epi32(p[j][0], p[j][1]) : p[j][0];
			__m256 t1 = _mm256_mul_ps(
			        _mm256_mul_ps(dv, _mm256_set1_ps(f16_to_f32(xblk->d))),
			        _mm256_cvtepi32_ps(s));
			__m256 t2 = _mm256_mul_ps(mv, _mm256_set1_ps(f16_to_f32(xblk->s)));
			acc[j] = _mm256_add_ps(acc[j], _mm256_add_ps(t1, t2));
		}
	}
	p8_store(acc, g, rows, y, ldy);
}

#define P8_GEMM    gemm_q5_1_p8
#define P8_TILE_FN q5_1p_tile
#define P8_TILE_T  Q5P_T
#ifdef Q5P_TILE16
#define P8_TILE16_FN q5_1p16_tile
#endif
#include "kern_p8_gemm.h"

#undef Q5P_X
