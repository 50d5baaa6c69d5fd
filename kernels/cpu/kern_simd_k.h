/*
 * kern_simd_k.h - 256-bit kernels for BF16 weights (float activations) and
 * Q4_K / Q6_K weights (Q8_0 activations), included after kern_simd.h by
 * kern_avx2.c and kern_avx512.c (same target pragma, SIMD_DOT_I8 and TG
 * token groups).
 *
 * K-quants compute what the reference computes (kern_ref.c, dot_q4_k): exact
 * integer sums per Q8_0 activation block, combined in float, so results
 * differ from it only by float rounding. Q4_K: the nibbles of a 32-value
 * sub-block are unsigned bytes against the signed activations; the min term
 * dmin * m * dx * sum(x) comes from the activation tail 8 sub-blocks at a
 * time. Q6_K: q - 32 is signed, so |q - 32| x sign(x, q - 32); the two
 * 16-value groups of an activation block are the low and high 4 int32 lanes,
 * scaled by a vector holding both groups' scales. The products stay below
 * the int16 saturation of AVX2's maddubs (15 * 127 * 2 and 32 * 127 * 2).
 */

#include <string.h>

/* ---- BF16: widen by a 16-bit shift, then the F32 kernel's loop ---- */

static inline float gemm_bf16_scalar(uint16_t h)
{
	return tensor_bf16_to_f32(h);
}

#define LOAD_BF16(i)                           \
	_mm256_castsi256_ps(_mm256_slli_epi32( \
	        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(w + (i)))), 16))
GEMM_FLOAT(gemm_bf16, uint16_t, LOAD_BF16)

/* The 8 six-bit scales and mins of a Q4_K block as floats (the packing of
 * tensor_q4_k_scale_min, four at a time in 32-bit words, kept in registers). */
static inline __attribute__((always_inline)) void q4_k_scales(const uint8_t *scales, __m256 *sc,
                                                              __m256 *mn)
{
	uint32_t u0, u1, u2;
	memcpy(&u0, scales, 4);
	memcpy(&u1, scales + 4, 4);
	memcpy(&u2, scales + 8, 4);
	uint32_t sc03 = u0 & 0x3f3f3f3fu, m03 = u1 & 0x3f3f3f3fu;
	uint32_t sc47 = (u2 & 0x0f0f0f0fu) | (((u0 >> 6) & 0x03030303u) << 4);
	uint32_t m47 = ((u2 >> 4) & 0x0f0f0f0fu) | (((u1 >> 6) & 0x03030303u) << 4);
	__m128i s8 = _mm_cvtsi64_si128((long long)((uint64_t)sc47 << 32 | sc03));
	__m128i m8 = _mm_cvtsi64_si128((long long)((uint64_t)m47 << 32 | m03));
	*sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(s8));
	*mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m8));
}

static inline __m256 lane8(__m256 v, int k)
{
	return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(k));
}

/* ---- Q4_K ---- */

static inline __attribute__((always_inline)) void q4_k_row(int g, int64_t nblk,
                                                           const struct block_q4_k *w,
                                                           const struct block_q8_0 *const *x,
                                                           const struct cpu_q8_tail *xt, float *out)
{
	const __m256i m4 = _mm256_set1_epi8(0xF);
	__m256 acc[TG][2], macc[TG];
#pragma GCC unroll 4
	for (int j = 0; j < TG; j++) acc[j][0] = acc[j][1] = macc[j] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nblk; b++) {
		const struct block_q4_k *blk = &w[b];
		_mm_prefetch((const char *)blk + PREFETCH_BYTES, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 128, _MM_HINT_T0);
		__m256 sc, mn;
		q4_k_scales(blk->scales, &sc, &mn);
		sc = _mm256_mul_ps(sc, _mm256_set1_ps(f16_to_f32(blk->d)));
		mn = _mm256_mul_ps(mn, _mm256_set1_ps(f16_to_f32(blk->dmin)));
		__m256 s8[TG];
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			s8[j] = _mm256_mul_ps(sc, _mm256_loadu_ps(xt[j].d + 8 * b));
			macc[j] = _mm256_fmadd_ps(mn, _mm256_loadu_ps(xt[j].dsum + 8 * b), macc[j]);
		}
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(blk->qs + 32 * c));
			__m256i q[2] = { _mm256_and_si256(v, m4),
				         _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) };
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++) {
				int sub = 2 * c + h;
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					__m256i p = SIMD_DOT_I8(
					        _mm256_setzero_si256(), q[h],
					        _mm256_loadu_si256(
					                (const __m256i *)x[j][8 * b + sub].qs));
					acc[j][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
					                            lane8(s8[j], sub), acc[j][h]);
				}
			}
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < g; j++)
		out[j] = hsum_ps(_mm256_add_ps(acc[j][0], acc[j][1])) - hsum_ps(macc[j]);
}

/* ---- Q6_K ---- */

static inline __attribute__((always_inline)) void q6_k_row(int g, int64_t nblk,
                                                           const struct block_q6_k *w,
                                                           const struct block_q8_0 *const *x,
                                                           const struct cpu_q8_tail *xt, float *out)
{
	const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3),
	              o32 = _mm256_set1_epi8(32);
	__m256 acc[TG][2];
#pragma GCC unroll 4
	for (int j = 0; j < TG; j++) acc[j][0] = acc[j][1] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nblk; b++) {
		const struct block_q6_k *blk = &w[b];
		_mm_prefetch((const char *)blk + PREFETCH_BYTES, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 128, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 192, _MM_HINT_T0);
		__m256 d = _mm256_set1_ps(f16_to_f32(blk->d));
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = blk->ql + 64 * h, *qh = blk->qh + 32 * h;
			__m256i l0 = _mm256_loadu_si256((const __m256i *)ql),
			        l1 = _mm256_loadu_si256((const __m256i *)(ql + 32)),
			        hb = _mm256_loadu_si256((const __m256i *)qh);
			/* scales[8h + 2k + half] * d: group k's low / high 16 values */
			__m256 ds = _mm256_mul_ps(
			        d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
			                   (const __m128i *)(blk->scales + 8 * h)))));
			__m256i q[4] = {
				_mm256_or_si256(_mm256_and_si256(l0, m4),
				                _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4)),
				_mm256_or_si256(
				        _mm256_and_si256(l1, m4),
				        _mm256_slli_epi16(
				                _mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4)),
				_mm256_or_si256(
				        _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
				        _mm256_slli_epi16(
				                _mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4)),
				_mm256_or_si256(
				        _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
				        _mm256_slli_epi16(
				                _mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4)),
			};
#pragma GCC unroll 4
			for (int k = 0; k < 4; k++) {
				__m256i qs = _mm256_sub_epi8(q[k], o32); /* -32..31 */
				__m256i aq = _mm256_sign_epi8(qs, qs);
				/* lanes 0-3: scale 2k, lanes 4-7: scale 2k + 1 */
				__m256 sv = _mm256_permutevar8x32_ps(
				        ds, _mm256_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1,
				                              2 * k + 1, 2 * k + 1, 2 * k + 1));
				int64_t xb = 8 * b + 4 * h + k;
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					__m256i xq =
					        _mm256_loadu_si256((const __m256i *)x[j][xb].qs);
					__m256i p = SIMD_DOT_I8(_mm256_setzero_si256(), aq,
					                        _mm256_sign_epi8(xq, qs));
					acc[j][k % 2] = _mm256_fmadd_ps(
					        _mm256_cvtepi32_ps(p),
					        _mm256_mul_ps(sv, _mm256_set1_ps(xt[j].d[xb])),
					        acc[j][k % 2]);
				}
			}
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < g; j++) out[j] = hsum_ps(_mm256_add_ps(acc[j][0], acc[j][1]));
}

GEMM_GROUPED(gemm_q4_k, struct block_q4_k, QK_K, q4_k_row)
GEMM_GROUPED(gemm_q6_k, struct block_q6_k, QK_K, q6_k_row)
