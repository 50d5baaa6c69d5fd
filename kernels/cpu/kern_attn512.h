/*
 * kern_attn512.h - the AVX-512 set's attention over runs of cache rows
 * (cpu.h's score and mix contracts), included by kern_avx512.c after
 * kern_simd.h, whose ymm versions the AVX2 set keeps. The same loops as
 * kern_simd.h's ATTN_SCORE / ATTN_MIX (and its softmax) on zmm: 16 values per instruction
 * where the 512-bit units are full width, and masked loads for the head's
 * last partial vector instead of a scalar tail.
 *
 * Bits: mix keeps each o_j[c] the FMA chain of one axpy per row in row
 * order, as the ymm loop does, so the two sets' mixes are the same bits.
 * A score is one dot product whose order depends on nothing but hd (not on
 * g, n or the row's place in the run): decode, one query at a time, and
 * prefill, eight at once, give a (query, row) pair the same bits. It sums
 * in another order than the ymm score, so the sets differ there by float
 * rounding.
 */

#define LOADK16_F32(m, p) _mm512_maskz_loadu_ps((m), (p))
#define LOADK16_F16(m, p) _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((m), (p)))

/* The 16 lanes of a zmm added down to 8, for the ymm hadd tree. */
static inline __m256 fold512(__m512 v)
{
	return _mm256_add_ps(_mm512_castps512_ps256(v),
	                     _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* t[0..3] = the sums of the 16 lanes of a0..a3. */
static inline __attribute__((always_inline)) void hsum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3,
                                                        float *t)
{
	__m256 h = _mm256_hadd_ps(_mm256_hadd_ps(fold512(a0), fold512(a1)),
	                          _mm256_hadd_ps(fold512(a2), fold512(a3)));
	_mm_storeu_ps(t, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}

/* Lanes of the head's vector at k, all but the last partial one full. */
static inline __mmask16 head_mask(int64_t hd, int64_t k)
{
	return hd - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (hd - k)) - 1);
}

/* Three rows x g queries of zmm accumulators (24 of the 32 registers);
 * each row vector is loaded once for all the queries and each query vector
 * once for the three rows. The loads bound this loop (the q loads are
 * masked, so they do not fold into the FMAs): two rows at a time made 118-125
 * GFLOP/s on one core, three 131-134 (hd 128, 8 queries). */
#define ATTN512_SCORE(fname, rtype, loadk)                                                       \
	static inline __attribute__((always_inline)) void fname##_g(                             \
	        int g, int64_t hd, const float *q, int64_t qs, const rtype *r, int64_t stride,   \
	        int64_t n, float scale, float *s, int64_t ld)                                    \
	{                                                                                        \
		for (int64_t i = 0; i < n; i += 3) {                                             \
			for (int u = 0; u < 3; u++)                                              \
				attn_prefetch_row(r + (i + ATTN_PF + u) * stride,                \
				                  hd * (int64_t)sizeof(rtype));                  \
			int rows = n - i >= 3 ? 3 : (int)(n - i);                                \
			const rtype *r0 = r + i * stride, *r1 = rows >= 2 ? r0 + stride : r0;    \
			const rtype *r2 = rows >= 3 ? r1 + stride : r0;                          \
			__m512 a[3][8];                                                          \
			_Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) a[0][j] = a[1][j] =  \
			        a[2][j] = _mm512_setzero_ps();                                   \
			for (int64_t k = 0; k < hd; k += 16) {                                   \
				__mmask16 m = head_mask(hd, k);                                  \
				__m512 k0 = loadk(m, r0 + k), k1 = loadk(m, r1 + k),             \
				       k2 = loadk(m, r2 + k);                                    \
				_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)              \
				{                                                                \
					__m512 qv = _mm512_maskz_loadu_ps(m, q + j * qs + k);    \
					a[0][j] = _mm512_fmadd_ps(qv, k0, a[0][j]);              \
					a[1][j] = _mm512_fmadd_ps(qv, k1, a[1][j]);              \
					a[2][j] = _mm512_fmadd_ps(qv, k2, a[2][j]);              \
				}                                                                \
			}                                                                        \
			/* every index constant, so the accumulators stay in registers */        \
			float t[3][8];                                                           \
			hsum4(a[0][0], a[0][1], a[0][2], a[0][3], t[0]);                         \
			hsum4(a[1][0], a[1][1], a[1][2], a[1][3], t[1]);                         \
			hsum4(a[2][0], a[2][1], a[2][2], a[2][3], t[2]);                         \
			if (g > 4) {                                                             \
				hsum4(a[0][4], a[0][5], a[0][6], a[0][7], t[0] + 4);             \
				hsum4(a[1][4], a[1][5], a[1][6], a[1][7], t[1] + 4);             \
				hsum4(a[2][4], a[2][5], a[2][6], a[2][7], t[2] + 4);             \
			}                                                                        \
			for (int u = 0; u < rows; u++)                                           \
				for (int j = 0; j < g; j++) s[j * ld + i + u] = t[u][j] * scale; \
		}                                                                                \
	}                                                                                        \
	static void fname(int64_t hd, int g, const float *q, int64_t qs, const rtype *r,         \
	                  int64_t stride, int64_t n, float scale, float *s, int64_t ld)          \
	{                                                                                        \
		switch (g) {                                                                     \
		case 8: fname##_g(8, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		case 7: fname##_g(7, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		case 6: fname##_g(6, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		case 5: fname##_g(5, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		case 4: fname##_g(4, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		case 3: fname##_g(3, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		case 2: fname##_g(2, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		default: fname##_g(1, hd, q, qs, r, stride, n, scale, s, ld); break;             \
		}                                                                                \
	}

/* o of g queries stays in registers per strip of 32 values (2 zmm; the last
 * strip of a head narrower, masked) while every row passes once. */
#define ATTN512_MIX(fname, rtype, loadk)                                                       \
	static inline __attribute__((always_inline)) void fname##_g(                           \
	        int g, int64_t hd, const float *p, int64_t ld, const rtype *r, int64_t stride, \
	        int64_t n, float *o, int64_t os)                                               \
	{                                                                                      \
		for (int64_t c = 0; c < hd; c += 32) {                                         \
			__mmask16 m0 = head_mask(hd, c),                                       \
			          m1 = c + 16 < hd ? head_mask(hd, c + 16) : 0;                \
			__m512 a[8][2];                                                        \
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)                    \
			{                                                                      \
				a[j][0] = _mm512_maskz_loadu_ps(m0, o + j * os + c);           \
				a[j][1] = _mm512_maskz_loadu_ps(m1, o + j * os + c + 16);      \
			}                                                                      \
			for (int64_t i = 0; i < n; i++) {                                      \
				if (c == 0) /* the first strip brings whole rows in */         \
					attn_prefetch_row(r + (i + ATTN_PF) * stride,          \
					                  hd * (int64_t)sizeof(rtype));        \
				const rtype *ri = r + i * stride + c;                          \
				__m512 v0 = loadk(m0, ri), v1 = loadk(m1, ri + 16);            \
				_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)            \
				{                                                              \
					__m512 pv = _mm512_set1_ps(p[j * ld + i]);             \
					a[j][0] = _mm512_fmadd_ps(pv, v0, a[j][0]);            \
					a[j][1] = _mm512_fmadd_ps(pv, v1, a[j][1]);            \
				}                                                              \
			}                                                                      \
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)                    \
			{                                                                      \
				_mm512_mask_storeu_ps(o + j * os + c, m0, a[j][0]);            \
				_mm512_mask_storeu_ps(o + j * os + c + 16, m1, a[j][1]);       \
			}                                                                      \
		}                                                                              \
	}                                                                                      \
	static void fname(int64_t hd, int g, const float *p, int64_t ld, const rtype *r,       \
	                  int64_t stride, int64_t n, float *o, int64_t os)                     \
	{                                                                                      \
		switch (g) {                                                                   \
		case 8: fname##_g(8, hd, p, ld, r, stride, n, o, os); break;                   \
		case 7: fname##_g(7, hd, p, ld, r, stride, n, o, os); break;                   \
		case 6: fname##_g(6, hd, p, ld, r, stride, n, o, os); break;                   \
		case 5: fname##_g(5, hd, p, ld, r, stride, n, o, os); break;                   \
		case 4: fname##_g(4, hd, p, ld, r, stride, n, o, os); break;                   \
		case 3: fname##_g(3, hd, p, ld, r, stride, n, o, os); break;                   \
		case 2: fname##_g(2, hd, p, ld, r, stride, n, o, os); break;                   \
		default: fname##_g(1, hd, p, ld, r, stride, n, o, os); break;                  \
		}                                                                              \
	}

ATTN512_SCORE(attn512_score_f32, float, LOADK16_F32)
ATTN512_SCORE(attn512_score_f16, uint16_t, LOADK16_F16)
ATTN512_MIX(attn512_mix_f32, float, LOADK16_F32)
ATTN512_MIX(attn512_mix_f16, uint16_t, LOADK16_F16)

/* exp_neg_ps (kern_simd.h) on 16 lanes, the same steps: within 2 ulp of
 * expf for x <= 0, 0 below -87. */
static inline __m512 exp_neg512(__m512 x)
{
	const __m512 lo = _mm512_set1_ps(-87.0f);
	__mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
	x = _mm512_max_ps(x, lo);
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
	                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
	__m512 p = _mm512_set1_ps(1.0f / 5040);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	__m512i e = _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23);
	p = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), e));
	return _mm512_maskz_mov_ps((__mmask16)~under, p);
}

/* attn_softmax's three passes on 16 lanes, the last partial vector masked
 * (-inf in, exp 0 out); the sum in double per lane (two zmm of 8), the lanes
 * added in order at the end. */
static void attn512_softmax(float *s, int64_t n, bool round_f16)
{
	__m512 mv = _mm512_set1_ps(-INFINITY);
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
		mv = _mm512_max_ps(mv, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, s + i));
	}
	const __m512 m16 = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
	__m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
		__m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, s + i);
		__m512 e = exp_neg512(_mm512_sub_ps(x, m16));
		sum0 = _mm512_add_pd(sum0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		sum1 = _mm512_add_pd(sum1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(
		                                   _mm512_castps_pd(e), 1))));
		_mm512_mask_storeu_ps(s + i, m, e);
	}
	double d[8], sum = 0;
	_mm512_storeu_pd(d, _mm512_add_pd(sum0, sum1));
	for (int l = 0; l < 8; l++) sum += d[l];
	const __m512 inv = _mm512_set1_ps((float)(1.0 / sum));
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
		__m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), inv);
		if (round_f16)
			p = _mm512_cvtph_ps(
			        _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		_mm512_mask_storeu_ps(s + i, m, p);
	}
}

/*
 * A prompt's attention with the queries in the lanes (cpu.h's score_t_f16,
 * softmax_t, mix_t_f16): two zmm hold a value for all 32 queries, so the
 * loops are FMAs with a cache row's value broadcast from memory, each
 * broadcast serving two, and nothing is summed across lanes. The rows go
 * through a small float buffer first (one conversion per value: a broadcast
 * cannot convert). On one core (hd 128, 16-row pages as the cache lays them
 * out) 16 queries made 150 GFLOP/s and 32 made 195.
 */

#define QT CPU_ATTN_QT

/* 8 rows x 32 queries of accumulators, the rows' values in kf 64 at a time. */
static void attn512_score_t_f16(int64_t hd, const float *qt, const uint16_t *r, int64_t stride,
                                int64_t n, float scale, float *st)
{
	float kf[8][64] __attribute__((aligned(64)));
	const __m512 sv = _mm512_set1_ps(scale);
	for (int64_t i0 = 0; i0 < n; i0 += 8) {
		int rows = n - i0 < 8 ? (int)(n - i0) : 8;
		__m512 a[8][2];
		_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++) a[u][0] = a[u][1] =
		        _mm512_setzero_ps();
		for (int64_t k0 = 0; k0 < hd; k0 += 64) {
			int w = hd - k0 < 64 ? (int)(hd - k0) : 64;
			for (int u = 0; u < 8; u++)
				for (int v = 0; v < 64; v += 16)
					_mm512_store_ps(
					        &kf[u][v],
					        u < rows && v < w
					                ? LOADK16_F16(head_mask(w, v),
					                              r + (i0 + u) * stride + k0 +
					                                      v)
					                : _mm512_setzero_ps());
			for (int k = 0; k < w; k++) {
				__m512 q0 = _mm512_loadu_ps(qt + (k0 + k) * QT);
				__m512 q1 = _mm512_loadu_ps(qt + (k0 + k) * QT + 16);
				_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++)
				{
					__m512 kb = _mm512_set1_ps(kf[u][k]);
					a[u][0] = _mm512_fmadd_ps(kb, q0, a[u][0]);
					a[u][1] = _mm512_fmadd_ps(kb, q1, a[u][1]);
				}
			}
		}
		_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++) if (u < rows)
		{
			_mm512_storeu_ps(st + (i0 + u) * QT, _mm512_mul_ps(a[u][0], sv));
			_mm512_storeu_ps(st + (i0 + u) * QT + 16, _mm512_mul_ps(a[u][1], sv));
		}
	}
}

/* attn512_softmax's steps for 16 lanes (one zmm of each row of st), a
 * lane's rows masked off past its last. */
static void softmax_t16(float *st, int64_t n, const int32_t *last, bool round_f16)
{
	const __m512i lv = _mm512_loadu_si512(last);
	__m512 mv = _mm512_set1_ps(-INFINITY);
	for (int64_t i = 0; i < n; i++) {
		__mmask16 m = _mm512_cmp_epi32_mask(_mm512_set1_epi32((int)i), lv, _MM_CMPINT_LE);
		mv = _mm512_mask_max_ps(mv, m, mv, _mm512_loadu_ps(st + i * QT));
	}
	__m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
	for (int64_t i = 0; i < n; i++) {
		__mmask16 m = _mm512_cmp_epi32_mask(_mm512_set1_epi32((int)i), lv, _MM_CMPINT_LE);
		__m512 e = _mm512_maskz_mov_ps(
		        m, exp_neg512(_mm512_sub_ps(_mm512_loadu_ps(st + i * QT), mv)));
		sum0 = _mm512_add_pd(sum0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		sum1 = _mm512_add_pd(sum1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(
		                                   _mm512_castps_pd(e), 1))));
		_mm512_storeu_ps(st + i * QT, e);
	}
	const __m512d one = _mm512_set1_pd(1.0);
	__m512 inv = _mm512_castpd_ps(_mm512_insertf64x4(
	        _mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_div_pd(one, sum0)))),
	        _mm256_castps_pd(_mm512_cvtpd_ps(_mm512_div_pd(one, sum1))), 1));
	/* a lane without rows (sum 0) gets 0s, not 0 * inf */
	inv = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(inv, _mm512_set1_ps(INFINITY), _CMP_LT_OQ),
	                          inv);
	for (int64_t i = 0; i < n; i++) {
		__m512 p = _mm512_mul_ps(_mm512_loadu_ps(st + i * QT), inv);
		if (round_f16)
			p = _mm512_cvtph_ps(
			        _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		_mm512_storeu_ps(st + i * QT, p);
	}
}

static void attn512_softmax_t(float *st, int64_t n, const int32_t *last, bool round_f16)
{
	for (int l = 0; l < QT; l += 16) softmax_t16(st + l, n, last + l, round_f16);
}

/* Per strip of 8 head values: 8 x 2 accumulators (one pair a value, lanes
 * the queries) take every row in order, its values broadcast from vf. */
static void attn512_mix_t_f16(int64_t hd, const float *st, const uint16_t *r, int64_t stride,
                              int64_t n, float *ot)
{
	float vf[16][16] __attribute__((aligned(64)));
	for (int64_t i0 = 0; i0 < n; i0 += 16) {
		int rows = n - i0 < 16 ? (int)(n - i0) : 16;
		for (int64_t c0 = 0; c0 < hd; c0 += 16) {
			__mmask16 m = head_mask(hd, c0);
			for (int i = 0; i < rows; i++)
				_mm512_store_ps(vf[i], LOADK16_F16(m, r + (i0 + i) * stride + c0));
			for (int h = 0; h < 16 && c0 + h < hd; h += 8) {
				int cw = hd - c0 - h < 8 ? (int)(hd - c0 - h) : 8;
				float *o = ot + (c0 + h) * QT;
				__m512 a[8][2];
				_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++)
				{
					a[u][0] = u < cw ? _mm512_loadu_ps(o + u * QT)
					                 : _mm512_setzero_ps();
					a[u][1] = u < cw ? _mm512_loadu_ps(o + u * QT + 16)
					                 : _mm512_setzero_ps();
				}
				for (int i = 0; i < rows; i++) {
					const float *p = st + (i0 + i) * QT;
					__m512 p0 = _mm512_loadu_ps(p),
					       p1 = _mm512_loadu_ps(p + 16);
					_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++)
					{
						__m512 vb = _mm512_set1_ps(vf[i][h + u]);
						a[u][0] = _mm512_fmadd_ps(vb, p0, a[u][0]);
						a[u][1] = _mm512_fmadd_ps(vb, p1, a[u][1]);
					}
				}
				_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++) if (u < cw)
				{
					_mm512_storeu_ps(o + u * QT, a[u][0]);
					_mm512_storeu_ps(o + u * QT + 16, a[u][1]);
				}
			}
		}
	}
}

#undef QT
