/*
 * kern_p8_q6k.h - the Q6_K panel kernel (repack.c's layout), written once
 * for kern_avx2.c and kern_avx512.c: each includes it after its
 * SIMD_DOT_I8 (u8 x s8 products summed 4 at a time into int32), load_i32,
 * TAIL_F32 and p8_store, and gets gemm_q6_k_p8. The integer sums are exact
 * either way and the float steps are the reference's, so both sets give
 * gemm_q6_k's bits. An includer that defines Q6K_TILE16 (a function like
 * p16_tile, declared before) has prompts take it on pairs of panels.
 */

#define Q6K_T 4 /* tokens per register tile */

/* ---- Q6_K repacked at load (repack.c): 8 rows x up to 4 tokens, any batch ---- */

/*
 * Per 16-value group g of a super-block: the 6-bit levels (0..63, the
 * stored bits: nibble | two qh bits << 4) of 8 rows x 4 values per vector,
 * 4 SIMD_DOT_I8 (vpdpbusd; maddubs + madd on AVX2, pairs of products at
 * most 2 x 63 x 127: no saturation) against the token's bytes, started
 * from -32 bsums[g] (the levels' offset), so the int32 is the group's
 * exact sum(q y) of kern_ref.c; vpmulld by the rows' int8 scales, summed
 * over the 16 groups; then the reference's float steps (its dmin term is
 * 0 x 0). The same bits as gemm_q6_k on the rows, at any batch, in both sets.
 */
static inline __attribute__((always_inline)) void q6k_tile(int g, bool pf, int64_t nsb,
                                                           const char *panel, const char *x0,
                                                           size_t xs, float *y, int64_t ldy,
                                                           int rows)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
	const char *xb[Q6K_T];
	__m256 acc[Q6K_T];
#pragma GCC unroll 4
	for (int j = 0; j < Q6K_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *sb = panel + (size_t)b * Q6K_P8_SB;
		if (pf)
			for (int l = 0; l < Q6K_P8_SB; l += 64)
				_mm_prefetch(sb + CPU_P8_PREFETCH + l, _MM_HINT_T0);
		size_t ox = (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, qs);
		size_t obs =
		        (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, bsums);
		__m256i isum[Q6K_T];
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
#pragma GCC unroll 2
				for (int half = 0; half < 2; half++) {
					int grp = 8 * h + 2 * c + half;
					__m256i p[Q6K_T];
#pragma GCC unroll 4
					for (int j = 0; j < g; j++) {
						int16_t bs;
						memcpy(&bs, xb[j] + obs + 2 * grp, 2);
						p[j] = _mm256_set1_epi32(-32 * bs);
					}
#pragma GCC unroll 4
					for (int kk = 4 * half; kk < 4 * half + 4; kk++) {
						__m256i raw = _mm256_loadu_si256((
						        const __m256i *)(sb + 144 +
						                         32 * ((2 * h + c % 2) * 8 +
						                               kk)));
						__m256i qh = _mm256_loadu_si256(
						        (const __m256i *)(sb + 1168 +
						                          32 * (8 * h + kk)));
						__m256i nib =
						        c < 2 ? _mm256_and_si256(raw, m4)
						              : _mm256_and_si256(
						                        _mm256_srli_epi16(raw, 4),
						                        m4);
						__m256i hb =
						        c == 3 ? _mm256_srli_epi16(qh, 2)
						               : _mm256_slli_epi16(qh, 4 - 2 * c);
						__m256i q = _mm256_or_si256(
						        nib, _mm256_and_si256(hb, m30));
#pragma GCC unroll 4
						for (int j = 0; j < g; j++)
							p[j] = SIMD_DOT_I8(
							        p[j], q,
							        _mm256_set1_epi32(load_i32(
							                xb[j] + ox + 128 * h +
							                32 * c + 4 * kk)));
					}
					__m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64(
					        (const __m128i *)(sb + 16 + 8 * grp)));
#pragma GCC unroll 4
					for (int j = 0; j < g; j++)
						isum[j] = _mm256_add_epi32(
						        isum[j], _mm256_mullo_epi32(p[j], sc));
				}
		__m256 dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)sb));
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m256 yd = _mm256_set1_ps(
			        TAIL_F32(xb[j], (size_t)b * sizeof(struct block_q8_k)));
			__m256 t1 =
			        _mm256_mul_ps(yd, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(isum[j])));
			__m256 t2 = _mm256_mul_ps(yd, _mm256_setzero_ps()); /* d_y * (0 * 0) */
			acc[j] = _mm256_add_ps(acc[j], _mm256_sub_ps(t1, t2));
		}
	}
	p8_store(acc, g, rows, y, ldy);
}

#define P8_GEMM    gemm_q6_k_p8
#define P8_TILE_FN q6k_tile
#ifdef Q6K_TILE16 /* the includer's 16-row tile for prompts (declared before) */
#define P8_TILE16_FN     Q6K_TILE16
#define P8_TILE16_MIN_NT 5
#endif
#define P8_BLOCK  QK_K
#define P8_TILE_T Q6K_T
#include "kern_p8_gemm.h"
