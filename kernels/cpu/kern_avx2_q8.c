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
 *
 * score_t_q8 / mix_t_q8 (a prompt's, the queries in the lanes) follow them,
 * the same bits (tests/kernels:
 * attention_q8_0_queries_in_lanes_same_bits_as_reference).
 */
#if defined(__x86_64__)
#ifdef KERN_AVX2_VNNI
#pragma GCC target("avx2,fma,f16c,avxvnni")
#define Q8_DOT(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define Q8_FN(name)       cpu_avx2_vnni_##name
#else
#pragma GCC target("avx2,fma,f16c")
#define Q8_DOT(acc, u, s)       \
	_mm256_add_epi32((acc), \
	                 _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define Q8_FN(name) cpu_avx2_##name
#endif

#include <immintrin.h>
#include <string.h>

#include "backend.h"
#include "cpu.h"
#include "kern_avx2_q8.h"
#include "quant.h"

#define Q8_ROWS 8                              /* cache rows a pass: a ymm's lanes */
#define Q8_NB   (BACKEND_MAX_HEAD_DIM / QK8_0) /* blocks a head at most */

#ifndef Q8_PF
#define Q8_PF 24 /* rows ahead of a score pass that it prefetches */
#endif
#define Q8_MIX_PF 6 /* rows ahead of the mix's row that it prefetches */

/* The rows Q8_PF ahead of pass i (the first pass: every row up to there).
 * A pass's work is shorter than a DRAM read, so one pass ahead (8 rows)
 * left most rows waiting where the cache is out of the caches. */
static inline void q8_prefetch_rows(const char *r, int64_t stride, int64_t i, int64_t n,
                                    int64_t row_bytes)
{
	for (int64_t k = i == 0 ? 0 : i + Q8_PF; k < i + Q8_PF + Q8_ROWS && k < n; k++)
		for (int64_t o = 0; o < row_bytes + 63; o += 64)
			_mm_prefetch(r + k * stride + (o < row_bytes ? o : row_bytes - 1),
			             _MM_HINT_T0);
}

/* The fp16 scales of 8 rows, block-major: h[b * 8 + u] = d of row u's
 * block b (rows past `rows` repeat row 0: valid memory, lanes never kept). */
static inline void q8_scale_table(const char *r, int64_t stride, int rows, int64_t nb, uint16_t *h)
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

static inline __attribute__((always_inline)) void score_q8_g(int g, int64_t hd, const void *q,
                                                             int64_t qs, const void *r,
                                                             int64_t stride, int64_t n, float scale,
                                                             float *s, int64_t ld)
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
		q8_prefetch_rows(rc, stride, i, n, row_bytes);
		q8_scale_table(r0, stride, rows, nb, dh);
		const struct block_q8_0 *rr[Q8_ROWS];
		for (int u = 0; u < Q8_ROWS; u++)
			rr[u] = (const struct block_q8_0 *)(r0 + (u < rows ? u : 0) * stride);
		__m256 acc[CPU_ATTN_QB];
		_Pragma("GCC unroll 8") for (int j = 0; j < CPU_ATTN_QB; j++) acc[j] =
		        _mm256_setzero_ps();
		for (int64_t b = 0; b < nb; b++) {
			const __m256 dk = _mm256_cvtph_ps(
			        _mm_load_si128((const __m128i *)(dh + b * Q8_ROWS)));
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
			{
				const __m256i qv = _mm256_loadu_si256((const __m256i *)qb[j][b].qs);
				__m256i p[Q8_ROWS];
				_Pragma("GCC unroll 8") for (int u = 0; u < Q8_ROWS; u++)
				{
					const __m256i kv =
					        _mm256_loadu_si256((const __m256i *)rr[u][b].qs);
					p[u] = Q8_DOT(_mm256_setzero_si256(),
					              _mm256_sign_epi8(kv, kv),
					              _mm256_sign_epi8(qv, kv));
				}
				const __m256 t =
				        _mm256_mul_ps(_mm256_cvtepi32_ps(q8_fold8(p)),
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

/* o of g queries in registers per strip of W values (W / 8 ymm a query:
 * 64 values for one query, 32 for two, 16 past that) while the run's rows
 * pass; each row's 16-byte pieces widened once for all the queries, o[c] =
 * fma(p * d, q[c], o[c]) per row in order as the reference does. A table of
 * the weights per 8 rows, as the score's scales, measured slower here with
 * the cache out of the caches (bench-attn; the rows are read in strips). */
static inline __attribute__((always_inline)) void mix_q8_strip(int g, int W, int64_t c, int64_t hd,
                                                               const float *p, int64_t ld,
                                                               const char *r, int64_t stride,
                                                               int64_t n, float *o, int64_t os)
{
	const int64_t row_bytes = hd / QK8_0 * (int64_t)sizeof(struct block_q8_0);
	__m256 a[CPU_ATTN_QB][8];
	_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
	        _Pragma("GCC unroll 8") for (int u = 0; u < W / 8; u++) a[j][u] =
	                _mm256_loadu_ps(o + j * os + c + 8 * u);
	for (int64_t i = 0; i < n; i++) {
		if (c == 0 && i + Q8_MIX_PF < n) /* the first strip brings whole rows in */
			for (int64_t b = 0; b < row_bytes + 63; b += 64)
				_mm_prefetch(r + (i + Q8_MIX_PF) * stride +
				                     (b < row_bytes ? b : row_bytes - 1),
				             _MM_HINT_T0);
		const struct block_q8_0 *ri = (const struct block_q8_0 *)(r + i * stride);
		_Pragma("GCC unroll 4") for (int u = 0; u < W / 16; u++)
		{
			const struct block_q8_0 *rb = ri + (c + 16 * u) / QK8_0;
			const __m128i v8 =
			        _mm_loadu_si128((const __m128i *)(rb->qs + (c + 16 * u) % QK8_0));
			const __m256 v0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v8));
			const __m256 v1 =
			        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v8, 8)));
			const float dv = _cvtsh_ss(rb->d);
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
			{
				const __m256 w = _mm256_set1_ps(p[j * ld + i] * dv);
				a[j][2 * u] = _mm256_fmadd_ps(w, v0, a[j][2 * u]);
				a[j][2 * u + 1] = _mm256_fmadd_ps(w, v1, a[j][2 * u + 1]);
			}
		}
	}
	_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
	        _Pragma("GCC unroll 8") for (int u = 0; u < W / 8; u++)
	                _mm256_storeu_ps(o + j * os + c + 8 * u, a[j][u]);
}

static inline __attribute__((always_inline)) void mix_q8_g(int g, int64_t hd, const float *p,
                                                           int64_t ld, const void *r,
                                                           int64_t stride, int64_t n, float *o,
                                                           int64_t os)
{
	int64_t c = 0;
	if (g == 1)
		for (; c + 64 <= hd; c += 64)
			mix_q8_strip(1, 64, c, hd, p, ld, r, stride, n, o, os);
	if (g <= 2)
		for (; c + 32 <= hd; c += 32)
			mix_q8_strip(g, 32, c, hd, p, ld, r, stride, n, o, os);
	for (; c < hd; c += 16) mix_q8_strip(g, 16, c, hd, p, ld, r, stride, n, o, os);
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

/*
 * A prompt's attention over a q8_0 cache with the queries in the lanes
 * (cpu.h's score_t_q8 / mix_t_q8): 32 queries in 4 ymm, a dword lane one
 * query's 4 bytes of a block (struct cpu_q8_lanes), so a row's dword
 * broadcast meets 8 queries a vector and no query's dot is summed across
 * lanes.
 *
 * score: a row a pass, per block 8 dwords x 4 vectors of integer dots.
 * With VNNI, vpdpbusd of the row's bytes + 128 (unsigned) against the
 * queries' (signed), 128 * the query's block sum subtracted after; without,
 * |k| against q with k's sign (vpmaddubsw cannot take k + 128: 255 * 127
 * twice overflows its int16; q from cpu_q8_0_quantize is within +-127, so
 * the sign never negates -128), widened by vpmaddwd. Both give each query's
 * exact block dot; its float term (float)isum * (d_row * d_q) then adds in
 * block order from 0, times scale at the end: the reference's operations
 * in its order, so its bits.
 *
 * mix: simd_mix_t_f16's loop (3 head values x 4 vectors of queries take
 * every row in order) per block of 16 rows: the rows' bytes widened to
 * floats and their weights st * d_row a lane in small tables first, then
 * ot[c][j] = fma(st[i][j] * d_row, q_row[c], ot[c][j]) per row in order,
 * the reference's bits.
 */
#define QT       CPU_ATTN_QT
#define QT_VECS  (QT / 8) /* ymm of a row of st: lane j query j */
#define QT_ROWS  16       /* rows per table of the mix */
#define QT_VALS  33       /* a table's row: a block's 32 values, one pad */
#define QT_STRIP 3        /* head values a mix strip */

#ifdef KERN_AVX2_VNNI
/* The row's block as vpdpbusd's unsigned operand: k + 128. */
static inline __m256i qt_row_bytes(const struct block_q8_0 *b)
{
	return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)b->qs),
	                        _mm256_set1_epi8((char)0x80));
}
#endif

void Q8_FN(score_t_q8)(int64_t hd, const struct cpu_q8_lanes *qt, const void *r, int64_t stride,
                       int64_t n, float scale, float *st)
{
	const int64_t nb = hd / QK8_0, row_bytes = nb * (int64_t)sizeof(struct block_q8_0);
	const __m256 sv = _mm256_set1_ps(scale);
#ifdef KERN_AVX2_VNNI
	int32_t ku[8] __attribute__((aligned(32))); /* the row's block + 128, dword k */
#else
	const __m256i ones = _mm256_set1_epi16(1);
#endif
	for (int64_t i = 0; i < n; i++) {
		const struct block_q8_0 *ri =
		        (const struct block_q8_0 *)((const char *)r + i * stride);
		if (i + Q8_MIX_PF < n)
			for (int64_t o = 0; o < row_bytes + 63; o += 64)
				_mm_prefetch((const char *)r + (i + Q8_MIX_PF) * stride +
				                     (o < row_bytes ? o : row_bytes - 1),
				             _MM_HINT_T0);
		__m256 acc[QT_VECS];
		_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++) acc[l] =
		        _mm256_setzero_ps();
		for (int64_t b = 0; b < nb; b++) {
			const struct cpu_q8_lanes *ql = qt + b;
			__m256i is[QT_VECS];
			_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++) is[l] =
			        _mm256_setzero_si256();
#ifdef KERN_AVX2_VNNI
			_mm256_store_si256((__m256i *)ku, qt_row_bytes(ri + b));
			_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
			{
				const __m256i a = _mm256_set1_epi32(ku[k]);
				_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++) is[l] =
				        _mm256_dpbusd_avx_epi32(
				                is[l], a,
				                _mm256_loadu_si256(
				                        (const __m256i *)ql->qs[k][8 * l]));
			}
			_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++) is[l] =
			        _mm256_sub_epi32(
			                is[l], _mm256_slli_epi32(
			                               _mm256_loadu_si256(
			                                       (const __m256i *)(ql->sum + 8 * l)),
			                               7));
#else
			_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
			{
				int32_t kw;
				memcpy(&kw, ri[b].qs + 4 * k, sizeof kw);
				const __m256i kb = _mm256_set1_epi32(kw);
				const __m256i ka = _mm256_abs_epi8(kb);
				_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++)
				{
					const __m256i qv = _mm256_loadu_si256(
					        (const __m256i *)ql->qs[k][8 * l]);
					is[l] = _mm256_add_epi32(
					        is[l],
					        _mm256_madd_epi16(
					                _mm256_maddubs_epi16(
					                        ka, _mm256_sign_epi8(qv, kb)),
					                ones));
				}
			}
#endif
			const __m256 dk = _mm256_set1_ps(_cvtsh_ss(ri[b].d));
			_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++) acc[l] =
			        _mm256_add_ps(
			                acc[l],
			                _mm256_mul_ps(
			                        _mm256_cvtepi32_ps(is[l]),
			                        _mm256_mul_ps(dk, _mm256_loadu_ps(ql->d + 8 * l))));
		}
		_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++)
		        _mm256_storeu_ps(st + i * QT + 8 * l, _mm256_mul_ps(acc[l], sv));
	}
}

void Q8_FN(mix_t_q8)(int64_t hd, const float *st, const void *r, int64_t stride, int64_t n,
                     float *ot)
{
	const int64_t nb = hd / QK8_0, row_bytes = nb * (int64_t)sizeof(struct block_q8_0);
	/* the pad value is read by the last strip's third broadcast, never kept */
	float vf[QT_ROWS][QT_VALS] = { { 0 } };
	float wt[QT_ROWS][QT] __attribute__((aligned(32)));
	for (int64_t i0 = 0; i0 < n; i0 += QT_ROWS) {
		const int rows = n - i0 < QT_ROWS ? (int)(n - i0) : QT_ROWS;
		const char *r0 = (const char *)r + i0 * stride;
		/* the next table's rows while this one's are summed */
		for (int u = 0; u < QT_ROWS && i0 + QT_ROWS + u < n; u++)
			for (int64_t o = 0; o < row_bytes + 63; o += 64)
				_mm_prefetch(r0 + (QT_ROWS + u) * stride +
				                     (o < row_bytes ? o : row_bytes - 1),
				             _MM_HINT_T0);
		for (int64_t b = 0; b < nb; b++) {
			for (int i = 0; i < rows; i++) {
				const struct block_q8_0 *ri =
				        (const struct block_q8_0 *)(r0 + i * stride) + b;
				_Pragma("GCC unroll 4") for (int v = 0; v < QK8_0; v += 8)
				        _mm256_storeu_ps(
				                vf[i] + v,
				                _mm256_cvtepi32_ps(
				                        _mm256_cvtepi8_epi32(_mm_loadl_epi64(
				                                (const __m128i *)(ri->qs + v)))));
				const __m256 d = _mm256_set1_ps(_cvtsh_ss(ri->d));
				const float *p = st + (i0 + i) * QT;
				_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++)
				        _mm256_store_ps(
				                wt[i] + 8 * l,
				                _mm256_mul_ps(_mm256_loadu_ps(p + 8 * l), d));
			}
			for (int h = 0; h < QK8_0; h += QT_STRIP) {
				const int nc = QK8_0 - h < QT_STRIP ? QK8_0 - h : QT_STRIP;
				float *o = ot + (b * QK8_0 + h) * QT;
				__m256 a[QT_STRIP][QT_VECS];
				_Pragma("GCC unroll 3") for (int u = 0; u < QT_STRIP; u++)
				        _Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++)
				                a[u][l] =
				                        u < nc ? _mm256_loadu_ps(o + u * QT + 8 * l)
				                               : _mm256_setzero_ps();
				for (int i = 0; i < rows; i++) {
					const __m256 b0 = _mm256_set1_ps(vf[i][h]),
					             b1 = _mm256_set1_ps(vf[i][h + 1]),
					             b2 = _mm256_set1_ps(vf[i][h + 2]);
					_Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++)
					{
						const __m256 w = _mm256_load_ps(wt[i] + 8 * l);
						a[0][l] = _mm256_fmadd_ps(w, b0, a[0][l]);
						a[1][l] = _mm256_fmadd_ps(w, b1, a[1][l]);
						a[2][l] = _mm256_fmadd_ps(w, b2, a[2][l]);
					}
				}
				_Pragma("GCC unroll 3") for (int u = 0; u < QT_STRIP;
				                             u++) if (u < nc)
				        _Pragma("GCC unroll 4") for (int l = 0; l < QT_VECS; l++)
				                _mm256_storeu_ps(o + u * QT + 8 * l, a[u][l]);
			}
		}
	}
}
#undef QT
#else
#include "cpu.h"
#include "kern_avx2_q8.h"
#endif
