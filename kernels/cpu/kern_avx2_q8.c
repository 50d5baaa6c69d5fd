/*
 * kern_avx2_q8.c - the AVX2 sets' attention over a q8_0 cache (cpu.h's
 * score_q8 / mix_q8 contracts), in its own file as the AVX-512 set's
 * (kern_avx512_q8.c); kern_avx2.c's table points here (kern_avx2_q8.h).
 * kern_avx2_vnni_q8.c builds it again with KERN_AVX2_VNNI (the block dots
 * through vpdpbusd). kern_ref.c's score_q8 / mix_q8 are the plain C these
 * equal bit for bit (tests/kernels: attention_q8_0_ymm_same_bits_as_reference).
 *
 * score: eight cache rows a pass, lane u of a ymm for row u. Per block, the
 * 8 rows' integer dots with the query (|k| against q with k's sign, as the
 * other 256-bit kernels: exact) fold from 8 vectors of partial sums to one
 * of 8 sums by a hadd tree; the scales of the 8 rows' block come from a
 * small fp16 table made once a pass (one vcvtph2ps a block). The float
 * terms (float)isum * (d_k * d_q) then add lane by lane in block order from
 * 0, the reference's operations in its order, so a score is its bits. The
 * loops these replace (kern_simd.h) summed each row's blocks in the lanes
 * of one vector and a horizontal sum at the end: a different order (within
 * a tolerance) and a horizontal sum per row and query.
 *
 * mix: the weights p_i * d_(i,b) of 8 rows in a table first (8 at a time),
 * then o of the g queries in registers per strip of values while the rows
 * pass, each 8 int8 widened by one vpmovsxbd from memory, the weight
 * broadcast from the table into the FMA: o[c] = fma(p * d, q[c], o[c]) per
 * row in order, the reference's bits.
 */
#if defined(__x86_64__)
#ifdef KERN_AVX2_VNNI
#pragma GCC target("avx2,fma,f16c,avxvnni")
#define Q8_DOT(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define Q8_FN(name)       cpu_avx2_vnni_##name
#else
#pragma GCC target("avx2,fma,f16c")
#define Q8_DOT(acc, u, s) \
	_mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define Q8_FN(name) cpu_avx2_##name
#endif

#include <immintrin.h>
#include <string.h>

#include "backend.h"
#include "cpu.h"
#include "kern_avx2_q8.h"
#include "quant.h"

#define Q8_ROWS 8                               /* cache rows a pass: a ymm's lanes */
#define Q8_NB   (BACKEND_MAX_HEAD_DIM / QK8_0) /* blocks a head at most */

static inline void q8_prefetch_rows(const char *r, int64_t stride, int64_t from, int64_t n,
                                    int64_t row_bytes)
{
	for (int64_t i = from; i < from + Q8_ROWS && i < n; i++)
		for (int64_t o = 0; o < row_bytes; o += 64)
			_mm_prefetch(r + i * stride + o, _MM_HINT_T0);
}

/* The fp16 scales of 8 rows, block-major: h[b * 8 + u] = d of row u's
 * block b (rows past `rows` repeat row 0: valid memory, lanes never kept). */
static inline void q8_scale_table(const char *r, int64_t stride, int rows, int64_t nb,
                                  uint16_t *h)
{
	for (int u = 0; u < Q8_ROWS; u++) {
		const struct block_q8_0 *ru =
		        (const struct block_q8_0 *)(r + (u < rows ? u : 0) * stride);
		for (int64_t b = 0; b < nb; b++) h[b * Q8_ROWS + u] = ru[b].d;
	}
}

/* One vector of 8 int32 sums from 8 vectors of 8 partial sums: lane u = the
 * sum of v[u]'s lanes (exact: integers). */
static inline __m256i q8_fold8(const __m256i *v)
{
	__m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
	__m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
	return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
	                        _mm256_permute2x128_si256(a, b, 0x31));
}

static inline __attribute__((always_inline)) void
score_q8_g(int g, int64_t hd, const void *q, int64_t qs, const void *r, int64_t stride, int64_t n,
           float scale, float *s, int64_t ld)
{
	const int64_t nb = hd / QK8_0, row_bytes = nb * (int64_t)sizeof(struct block_q8_0);
	const struct block_q8_0 *qb[CPU_ATTN_QB];
	float dq[CPU_ATTN_QB][Q8_NB];
	for (int j = 0; j < g; j++) {
		qb[j] = (const struct block_q8_0 *)((const char *)q + j * qs);
		for (int64_t b = 0; b < nb; b++) dq[j][b] = _cvtsh_ss(qb[j][b].d);
	}
	uint16_t dh[Q8_NB * Q8_ROWS] __attribute__((aligned(32)));
	const char *rc = r;
	for (int64_t i = 0; i < n; i += Q8_ROWS) {
		const int rows = n - i >= Q8_ROWS ? Q8_ROWS : (int)(n - i);
		const char *r0 = rc + i * stride;
		q8_prefetch_rows(rc, stride, i + Q8_ROWS, n, row_bytes);
		q8_scale_table(r0, stride, rows, nb, dh);
		const struct block_q8_0 *rr[Q8_ROWS];
		for (int u = 0; u < Q8_ROWS; u++)
			rr[u] = (const struct block_q8_0 *)(r0 + (u < rows ? u : 0) * stride);
		__m256 acc[CPU_ATTN_QB];
		_Pragma("GCC unroll 8") for (int j = 0; j < CPU_ATTN_QB; j++) acc[j] = _mm256_setzero_ps();
		for (int64_t b = 0; b < nb; b++) {
			const __m256 dk = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(dh + b * Q8_ROWS)));
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
			{
				const __m256i qv = _mm256_loadu_si256((const __m256i *)qb[j][b].qs);
				__m256i p[Q8_ROWS];
				_Pragma("GCC unroll 8") for (int u = 0; u < Q8_ROWS; u++)
				{
					const __m256i kv = _mm256_loadu_si256((const __m256i *)rr[u][b].qs);
					p[u] = Q8_DOT(_mm256_setzero_si256(), _mm256_sign_epi8(kv, kv),
					              _mm256_sign_epi8(qv, kv));
				}
				const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(q8_fold8(p)),
				                               _mm256_mul_ps(dk, _mm256_set1_ps(dq[j][b])));
				acc[j] = _mm256_add_ps(acc[j], t);
			}
		}
		_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
		{
			const __m256 v = _mm256_mul_ps(acc[j], _mm256_set1_ps(scale));
			if (rows == Q8_ROWS)
				_mm256_storeu_ps(s + j * ld + i, v);
			else {
				float t8[Q8_ROWS];
				_mm256_storeu_ps(t8, v);
				memcpy(s + j * ld + i, t8, (size_t)rows * sizeof(float));
			}
		}
	}
}

/* o of g queries over values [c, c + 8V) (V ymm a query) for the pass's
 * rows; w[j][b * 8 + u] the weight of row u's block b for query j. */
static inline __attribute__((always_inline)) void
mix_q8_strip(int g, int V, int64_t c, const float (*w)[Q8_NB * Q8_ROWS], const char *r0,
             int64_t stride, int rows, float *o, int64_t os)
{
	__m256 a[CPU_ATTN_QB][8];
	_Pragma("GCC unroll 8") for (int j = 0; j < g; j++) _Pragma("GCC unroll 8") for (int v = 0;
	                                                                                 v < V; v++)
	        a[j][v] = _mm256_loadu_ps(o + j * os + c + 8 * v);
	for (int u = 0; u < rows; u++) {
		const struct block_q8_0 *ru = (const struct block_q8_0 *)(r0 + u * stride);
		_Pragma("GCC unroll 8") for (int v = 0; v < V; v++)
		{
			const int64_t e = c + 8 * v, b = e / QK8_0;
			const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
			        _mm_loadl_epi64((const __m128i *)(ru[b].qs + e % QK8_0))));
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++) a[j][v] =
			        _mm256_fmadd_ps(_mm256_set1_ps(w[j][b * Q8_ROWS + u]), x, a[j][v]);
		}
	}
	_Pragma("GCC unroll 8") for (int j = 0; j < g; j++) _Pragma("GCC unroll 8") for (int v = 0;
	                                                                                 v < V; v++)
	        _mm256_storeu_ps(o + j * os + c + 8 * v, a[j][v]);
}

static inline __attribute__((always_inline)) void mix_q8_g(int g, int64_t hd, const float *p,
                                                           int64_t ld, const void *r,
                                                           int64_t stride, int64_t n, float *o,
                                                           int64_t os)
{
	const int64_t nb = hd / QK8_0, row_bytes = nb * (int64_t)sizeof(struct block_q8_0);
	uint16_t dh[Q8_NB * Q8_ROWS] __attribute__((aligned(32)));
	float w[CPU_ATTN_QB][Q8_NB * Q8_ROWS] __attribute__((aligned(32)));
	const char *rc = r;
	for (int64_t i = 0; i < n; i += Q8_ROWS) {
		const int rows = n - i >= Q8_ROWS ? Q8_ROWS : (int)(n - i);
		const char *r0 = rc + i * stride;
		q8_prefetch_rows(rc, stride, i + Q8_ROWS, n, row_bytes);
		q8_scale_table(r0, stride, rows, nb, dh);
		for (int j = 0; j < g; j++) {
			float pj[Q8_ROWS] = { 0 };
			memcpy(pj, p + j * ld + i, (size_t)rows * sizeof(float));
			const __m256 pv = _mm256_loadu_ps(pj);
			for (int64_t b = 0; b < nb; b++)
				_mm256_store_ps(w[j] + b * Q8_ROWS,
				                _mm256_mul_ps(pv, _mm256_cvtph_ps(_mm_load_si128(
				                                          (const __m128i *)(dh + b * Q8_ROWS)))));
		}
		/* strips as wide as the registers allow for g queries */
		int64_t c = 0;
		if (g == 1)
			for (; c + 64 <= hd; c += 64) mix_q8_strip(1, 8, c, w, r0, stride, rows, o, os);
		if (g <= 2)
			for (; c + 32 <= hd; c += 32) mix_q8_strip(g, 4, c, w, r0, stride, rows, o, os);
		if (g <= 4)
			for (; c + 16 <= hd; c += 16) mix_q8_strip(g, 2, c, w, r0, stride, rows, o, os);
		for (; c < hd; c += 8) mix_q8_strip(g, 1, c, w, r0, stride, rows, o, os);
	}
}

#define Q8_CASES(call)           \
	switch (g) {             \
	case 8: call(8); break;  \
	case 7: call(7); break;  \
	case 6: call(6); break;  \
	case 5: call(5); break;  \
	case 4: call(4); break;  \
	case 3: call(3); break;  \
	case 2: call(2); break;  \
	default: call(1); break; \
	}

void Q8_FN(score_q8)(int64_t hd, int g, const void *q, int64_t qs, const void *r, int64_t stride,
                     int64_t n, float scale, float *s, int64_t ld)
{
#define SCORE_Q8(G) score_q8_g(G, hd, q, qs, r, stride, n, scale, s, ld)
	Q8_CASES(SCORE_Q8)
#undef SCORE_Q8
}

void Q8_FN(mix_q8)(int64_t hd, int g, const float *p, int64_t ld, const void *r, int64_t stride,
                   int64_t n, float *o, int64_t os)
{
#define MIX_Q8(G) mix_q8_g(G, hd, p, ld, r, stride, n, o, os)
	Q8_CASES(MIX_Q8)
#undef MIX_Q8
}
#else
#include "cpu.h"
#include "kern_avx2_q8.h"
#endif
