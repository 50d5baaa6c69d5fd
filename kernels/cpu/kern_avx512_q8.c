/*
 * kern_avx512_q8.c - the AVX-512 set's attention over a q8_0 cache
 * (cpu.h's score_q8 / mix_q8 contracts), in its own file so that its
 * compile is not the whole set's; kern_avx512.c's table points here
 * (kern_avx512_q8.h); the AVX2 sets' are kern_avx2_q8.c. kern_ref.c's score_q8 / mix_q8 are the plain C it equals bit
 * for bit (tests/kernels: attention_q8_0_zmm_same_bits_as_reference).
 */
#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")

#include <immintrin.h>

#include "backend.h"
#include "cpu.h"
#include "kern_avx512_q8.h"
#include "quant.h"

/* Rows ahead of the one in hand that a score prefetches (kern_simd.h's
 * ATTN_PF: the same distance as the F16 loops). */
#define ATTN_PF 6

static inline void attn_prefetch_row(const void *row, int64_t bytes)
{
	for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)row + o, _MM_HINT_T0);
}

static inline float f16_to_f32(uint16_t h)
{
	return _cvtsh_ss(h);
}
/*
 * A q8_0 cache on zmm (cpu.h's score_q8 / mix_q8). Decode reads these rows
 * from DRAM at 34 bytes per 32 values where F16 reads 64, which pays only
 * if the instructions per row stay under the reads' time: the ymm loops
 * kern_simd.h had (since replaced by kern_avx2_q8.c) spent two sign ops, a
 * widening, a scalar fp16 scale and a horizontal sum per block and row, and
 * were slower than F16 (docs/benchmarks.md). Here four rows pass at once,
 * their blocks two to a zmm:
 *
 * score: k + 128 (one xor) as vpdpbusd's unsigned operand against the
 * query's signed bytes, 128 * sum(q) of the block subtracted after: the
 * block's integer dot, exact. The 8 zmm of 4 rows x 4 blocks reduce by
 * three rounds of two-source permutes to one zmm, lane 4r + b holding
 * row r's block b, whose scales come in by one gather. The float terms
 * then add in block order from 0, as the reference does, so a score is the
 * reference's bits (whatever g, n or the row's place in the run).
 *
 * mix: per 16 rows, the weights p_i * d_(i,b) in a small table first (one
 * gather of 16 scales and a multiply per 4 rows); then o of the g queries
 * in registers per strip of blocks, each block's bytes widened once for all
 * the queries and its weight broadcast from the table into the FMA:
 * o[c] = fma(p * d, q[c], o[c]) per row in order, the reference's bits.
 */

#define Q8_QUADS (BACKEND_MAX_HEAD_DIM / QK8_0 / 4) /* groups of 4 blocks a head */

/* Block b of a row as 32 bytes, zeros where b is past the head's nb. */
static inline __m256i q8_blk(const struct block_q8_0 *row, int64_t b, int64_t nb)
{
	return b < nb ? _mm256_loadu_si256((const __m256i *)row[b].qs) : _mm256_setzero_si256();
}

static inline __m512i q8_pair(const struct block_q8_0 *row, int64_t b, int64_t nb)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(q8_blk(row, b, nb)),
	                          q8_blk(row, b + 1, nb), 1);
}

/* Pairwise sums of two vectors' lanes: out lane l = x[e[l]] + x[e[l] + 1]
 * with x = a (index < 16) or b (index 16..31), e = the even index table. */
static inline __m512i q8_fold(__m512i a, __m512i b, __m512i even)
{
	const __m512i one = _mm512_set1_epi32(1);
	return _mm512_add_epi32(_mm512_permutex2var_epi32(a, even, b),
	                        _mm512_permutex2var_epi32(a, _mm512_add_epi32(even, one), b));
}

/* Scales of 4 rows x 4 blocks (lane 4r + b: row r's block b0 + b), the
 * lanes past the rows or the head's blocks 0 (never read). */
static inline __m512 q8_scales(const char *r0, __m512i off, __mmask16 valid)
{
	__m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, off, r0, 1);
	return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
}

/* Lanes of 4 rows x 4 blocks valid for rows < rows and blocks < nb - b0. */
static inline __mmask16 q8_valid(int rows, int64_t blocks)
{
	unsigned bm = blocks >= 4 ? 0xFu : (1u << blocks) - 1, m = 0;
	for (int u = 0; u < rows; u++) m |= bm << (4 * u);
	return (__mmask16)m;
}

static inline __attribute__((always_inline)) void
attn512_score_q8_g(int g, int64_t hd, const void *q, int64_t qs, const void *r, int64_t stride,
                   int64_t n, float scale, float *s, int64_t ld)
{
	int64_t nb = hd / QK8_0, nq = (nb + 3) / 4;
	int64_t row_bytes = nb * (int64_t)sizeof(struct block_q8_0);
	/* the queries' pairs of blocks, 128 * their byte sums, their scales:
	 * lane 4r + b for block 4 * quad + b, the same for every row r */
	__m512i qv[CPU_ATTN_QB][Q8_QUADS][2], corr[CPU_ATTN_QB][Q8_QUADS];
	__m512 dq[CPU_ATTN_QB][Q8_QUADS];
	const __m512i e1 =
	        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i ones = _mm512_set1_epi8(1);
	for (int j = 0; j < g; j++) {
		const struct block_q8_0 *qb = (const struct block_q8_0 *)((const char *)q + j * qs);
		for (int64_t k = 0; k < nq; k++) {
			float ds[4];
			for (int b = 0; b < 4; b++)
				ds[b] = 4 * k + b < nb ? f16_to_f32(qb[4 * k + b].d) : 0.0f;
			__m512i q0 = q8_pair(qb, 4 * k, nb), q1 = q8_pair(qb, 4 * k + 2, nb);
			qv[j][k][0] = q0;
			qv[j][k][1] = q1;
			/* the blocks' byte sums folded as the scores are, the same
			 * for the four "rows" */
			__m512i z = _mm512_setzero_si512();
			__m512i f = q8_fold(_mm512_dpbusd_epi32(z, ones, q0),
			                    _mm512_dpbusd_epi32(z, ones, q1), e1);
			f = q8_fold(f, f, e1);
			corr[j][k] = _mm512_slli_epi32(q8_fold(f, f, e1), 7);
			dq[j][k] = _mm512_broadcast_f32x4(_mm_loadu_ps(ds));
		}
	}
	/* fold tables: rows' two pairs -> 4 blocks x 4; two rows -> 2 x 4 x 2;
	 * two of those -> 4 rows x 4 blocks */
	const __m512i off_row = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
	const __m512i off_blk =
	        _mm512_setr_epi32(0, 34, 68, 102, 0, 34, 68, 102, 0, 34, 68, 102, 0, 34, 68, 102);
	const __m512i off0 = _mm512_add_epi32(
	        _mm512_mullo_epi32(off_row, _mm512_set1_epi32((int)stride)), off_blk);
	const __m512i x80 = _mm512_set1_epi8((char)0x80);
	for (int64_t i = 0; i < n; i += 4) {
		int rows = n - i >= 4 ? 4 : (int)(n - i);
		for (int u = 0; u < 4; u++) {
			const char *pf = (const char *)r + (i + ATTN_PF + u) * stride;
			attn_prefetch_row(pf, row_bytes);
			_mm_prefetch(pf + row_bytes - 1, _MM_HINT_T0);
		}
		const struct block_q8_0 *rr[4];
		for (int u = 0; u < 4; u++)
			rr[u] = (const struct block_q8_0 *)((const char *)r +
			                                    (i + (u < rows ? u : 0)) * stride);
		__m512 acc[CPU_ATTN_QB];
		_Pragma("GCC unroll 8") for (int j = 0; j < CPU_ATTN_QB; j++) acc[j] =
		        _mm512_setzero_ps();
		for (int64_t k = 0; k < nq; k++) {
			__m512i kv[4][2];
			_Pragma("GCC unroll 4") for (int u = 0; u < 4; u++)
			{
				kv[u][0] = _mm512_xor_si512(q8_pair(rr[u], 4 * k, nb), x80);
				kv[u][1] = _mm512_xor_si512(q8_pair(rr[u], 4 * k + 2, nb), x80);
			}
			__m512 dk =
			        q8_scales((const char *)rr[0],
			                  _mm512_add_epi32(off0, _mm512_set1_epi32((int)(136 * k))),
			                  q8_valid(rows, nb - 4 * k));
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
			{
				__m512i p[4];
				_Pragma("GCC unroll 4") for (int u = 0; u < 4; u++)
				{
					__m512i z = _mm512_setzero_si512();
					p[u] = q8_fold(
					        _mm512_dpbusd_epi32(z, kv[u][0], qv[j][k][0]),
					        _mm512_dpbusd_epi32(z, kv[u][1], qv[j][k][1]), e1);
				}
				__m512i isum = q8_fold(q8_fold(p[0], p[1], e1),
				                       q8_fold(p[2], p[3], e1), e1);
				__m512 t = _mm512_mul_ps(
				        _mm512_cvtepi32_ps(_mm512_sub_epi32(isum, corr[j][k])),
				        _mm512_mul_ps(dk, dq[j][k]));
				/* lane 4r: the row's terms added in block order */
				acc[j] = _mm512_add_ps(acc[j], t);
				acc[j] = _mm512_add_ps(acc[j], _mm512_permute_ps(t, 0x01));
				acc[j] = _mm512_add_ps(acc[j], _mm512_permute_ps(t, 0x02));
				acc[j] = _mm512_add_ps(acc[j], _mm512_permute_ps(t, 0x03));
			}
		}
		_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
		{
			__m128 v = _mm512_castps512_ps128(_mm512_maskz_compress_ps(
			        0x1111, _mm512_mul_ps(acc[j], _mm512_set1_ps(scale))));
			if (rows == 4)
				_mm_storeu_ps(s + j * ld + i, v);
			else {
				float t4[4];
				_mm_storeu_ps(t4, v);
				for (int u = 0; u < rows; u++) s[j * ld + i + u] = t4[u];
			}
		}
	}
}

/* Rows per weight table (mix). */
#define Q8_MIX_ROWS 16
#define Q8_MIX_W    (Q8_MIX_ROWS * BACKEND_MAX_HEAD_DIM / QK8_0) /* a query's table */

/* w[j][u * nb + b] = p[j * ld + u] * d of row u's block b, u < rows: 16
 * entries a gather, entry e in row e / nb (a float division: e + 0.5 is
 * never a multiple of nb, so its floor is exact). */
static inline void q8_mix_weights(int g, int64_t nb, const float *p, int64_t ld, const char *r0,
                                  int64_t stride, int rows, float (*w)[Q8_MIX_W])
{
	int64_t ne = rows * nb;
	const __m512i lane =
	        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	for (int64_t e = 0; e < ne; e += 16) {
		__mmask16 m = ne - e >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (ne - e)) - 1);
		__m512i idx = _mm512_add_epi32(lane, _mm512_set1_epi32((int)e));
		__m512 fi = _mm512_add_ps(_mm512_cvtepi32_ps(idx), _mm512_set1_ps(0.5f));
		__m512i ri = _mm512_cvttps_epi32(
		        nb == 1 ? fi : _mm512_div_ps(fi, _mm512_set1_ps((float)nb)));
		__m512i bi =
		        _mm512_sub_epi32(idx, _mm512_mullo_epi32(ri, _mm512_set1_epi32((int)nb)));
		__m512i off = _mm512_add_epi32(
		        _mm512_mullo_epi32(ri, _mm512_set1_epi32((int)stride)),
		        _mm512_mullo_epi32(bi, _mm512_set1_epi32((int)sizeof(struct block_q8_0))));
		__m512 dk = q8_scales(r0, off, m);
		for (int j = 0; j < g; j++) {
			__m512 pv =
			        _mm512_maskz_loadu_ps((__mmask16)((1u << rows) - 1), p + j * ld);
			_mm512_storeu_ps(w[j] + e,
			                 _mm512_mul_ps(_mm512_permutexvar_ps(ri, pv), dk));
		}
	}
}

/* o of g queries over one strip of B blocks (2B zmm a query, g * B <= 8)
 * for rows [0, rows) of the table w. */
static inline __attribute__((always_inline)) void q8_mix_strip(int g, int B, int64_t nb, int64_t b0,
                                                               float (*w)[Q8_MIX_W], const char *r0,
                                                               int64_t stride, int rows, float *o,
                                                               int64_t os)
{
	__m512 a[CPU_ATTN_QB][16];
	_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
	        _Pragma("GCC unroll 16") for (int v = 0; v < 2 * B; v++) a[j][v] =
	                _mm512_loadu_ps(o + j * os + b0 * QK8_0 + 16 * v);
	for (int u = 0; u < rows; u++) {
		const struct block_q8_0 *ri = (const struct block_q8_0 *)(r0 + u * stride) + b0;
		_Pragma("GCC unroll 8") for (int b = 0; b < B; b++)
		{
			__m512 v0 = _mm512_cvtepi32_ps(
			        _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)ri[b].qs)));
			__m512 v1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
			        _mm_loadu_si128((const __m128i *)(ri[b].qs + 16))));
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
			{
				__m512 wv = _mm512_set1_ps(w[j][u * nb + b0 + b]);
				a[j][2 * b] = _mm512_fmadd_ps(wv, v0, a[j][2 * b]);
				a[j][2 * b + 1] = _mm512_fmadd_ps(wv, v1, a[j][2 * b + 1]);
			}
		}
	}
	_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)
	        _Pragma("GCC unroll 16") for (int v = 0; v < 2 * B; v++)
	                _mm512_storeu_ps(o + j * os + b0 * QK8_0 + 16 * v, a[j][v]);
}

static inline __attribute__((always_inline)) void attn512_mix_q8_g(int g, int64_t hd,
                                                                   const float *p, int64_t ld,
                                                                   const void *r, int64_t stride,
                                                                   int64_t n, float *o, int64_t os)
{
	int64_t nb = hd / QK8_0;
	int64_t row_bytes = nb * (int64_t)sizeof(struct block_q8_0);
	float w[CPU_ATTN_QB][Q8_MIX_W] __attribute__((aligned(64)));
	for (int64_t i0 = 0; i0 < n; i0 += Q8_MIX_ROWS) {
		int rows = n - i0 >= Q8_MIX_ROWS ? Q8_MIX_ROWS : (int)(n - i0);
		const char *r0 = (const char *)r + i0 * stride;
		/* the next table's rows while this one's are summed */
		for (int u = 0; u < Q8_MIX_ROWS && i0 + Q8_MIX_ROWS + u < n; u++) {
			const char *pf = r0 + (Q8_MIX_ROWS + u) * stride;
			attn_prefetch_row(pf, row_bytes);
			_mm_prefetch(pf + row_bytes - 1, _MM_HINT_T0);
		}
		q8_mix_weights(g, nb, p + i0, ld, r0, stride, rows, w);
		/* strips as wide as the registers allow for g queries */
		int64_t b0 = 0;
		if (g == 1)
			for (; b0 + 8 <= nb; b0 += 8)
				q8_mix_strip(1, 8, nb, b0, w, r0, stride, rows, o, os);
		if (g <= 2)
			for (; b0 + 4 <= nb; b0 += 4)
				q8_mix_strip(g, 4, nb, b0, w, r0, stride, rows, o, os);
		if (g <= 4)
			for (; b0 + 2 <= nb; b0 += 2)
				q8_mix_strip(g, 2, nb, b0, w, r0, stride, rows, o, os);
		for (; b0 < nb; b0++) q8_mix_strip(g, 1, nb, b0, w, r0, stride, rows, o, os);
	}
}

#define ATTN512_Q8_CASES(call)   \
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

void cpu_avx512_score_q8(int64_t hd, int g, const void *q, int64_t qs, const void *r,
                         int64_t stride, int64_t n, float scale, float *s, int64_t ld)
{
#define SCORE_Q8(G) attn512_score_q8_g(G, hd, q, qs, r, stride, n, scale, s, ld)
	ATTN512_Q8_CASES(SCORE_Q8)
#undef SCORE_Q8
}

void cpu_avx512_mix_q8(int64_t hd, int g, const float *p, int64_t ld, const void *r, int64_t stride,
                       int64_t n, float *o, int64_t os)
{
#define MIX_Q8(G) attn512_mix_q8_g(G, hd, p, ld, r, stride, n, o, os)
	ATTN512_Q8_CASES(MIX_Q8)
#undef MIX_Q8
}

/*
 * A prompt's attention over a q8_0 cache with the queries in the lanes
 * (cpu.h's score_t_q8 / mix_t_q8): two zmm hold a dword for all 32
 * queries. score: a row's 4 bytes + 128 broadcast as vpdpbusd's unsigned
 * operand against the 32 queries' 4 bytes (struct cpu_q8_lanes), 8 dots a
 * block and half, 128 * the query's block sum subtracted: each query's
 * exact block dot, with no sum across lanes; then its float term
 * (float)isum * (d_row * d_q) added in block order, the reference's bits.
 * mix: attn512_mix_t_f16's loop with the row's values widened from bytes
 * and each block's weights p * d_row (per lane) in place of p.
 */
#define QT CPU_ATTN_QT

/* Two rows at a time, each block's 8 dots of a row and half split over two
 * chains (the integer sums are exact in any order). */
void cpu_avx512_score_t_q8(int64_t hd, const struct cpu_q8_lanes *qt, const void *r, int64_t stride,
                           int64_t n, float scale, float *st)
{
	int64_t nb = hd / QK8_0;
	int64_t row_bytes = nb * (int64_t)sizeof(struct block_q8_0);
	const __m256i x80 = _mm256_set1_epi8((char)0x80);
	const __m512 sv = _mm512_set1_ps(scale);
	int32_t ku[2][8] __attribute__((aligned(32)));
	for (int64_t i0 = 0; i0 < n; i0 += 2) {
		int rows = n - i0 < 2 ? 1 : 2;
		const struct block_q8_0 *rr[2];
		for (int u = 0; u < 2; u++) {
			rr[u] = (const struct block_q8_0 *)((const char *)r +
			                                    (i0 + (u < rows ? u : 0)) * stride);
			const char *pf = (const char *)r + (i0 + ATTN_PF + u) * stride;
			attn_prefetch_row(pf, row_bytes);
			_mm_prefetch(pf + row_bytes - 1, _MM_HINT_T0);
		}
		__m512 acc[2][2];
		for (int u = 0; u < 2; u++) acc[u][0] = acc[u][1] = _mm512_setzero_ps();
		for (int64_t b = 0; b < nb; b++) {
			const struct cpu_q8_lanes *ql = qt + b;
			for (int u = 0; u < 2; u++)
				_mm256_store_si256(
				        (__m256i *)ku[u],
				        _mm256_xor_si256(
				                _mm256_loadu_si256((const __m256i *)rr[u][b].qs),
				                x80));
			__m512i s[2][2][2];
			_Pragma("GCC unroll 2") for (int u = 0; u < 2; u++) s[u][0][0] =
			        s[u][0][1] = s[u][1][0] = s[u][1][1] = _mm512_setzero_si512();
			_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
			{
				__m512i q0 = _mm512_loadu_si512(ql->qs[k][0]);
				__m512i q1 = _mm512_loadu_si512(ql->qs[k][16]);
				_Pragma("GCC unroll 2") for (int u = 0; u < 2; u++)
				{
					__m512i a = _mm512_set1_epi32(ku[u][k]);
					s[u][0][k & 1] = _mm512_dpbusd_epi32(s[u][0][k & 1], a, q0);
					s[u][1][k & 1] = _mm512_dpbusd_epi32(s[u][1][k & 1], a, q1);
				}
			}
			_Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
			{
				__m512i corr =
				        _mm512_slli_epi32(_mm512_loadu_si512(ql->sum + 16 * h), 7);
				__m512 dq = _mm512_loadu_ps(ql->d + 16 * h);
				_Pragma("GCC unroll 2") for (int u = 0; u < 2; u++)
				{
					__m512i isum = _mm512_sub_epi32(
					        _mm512_add_epi32(s[u][h][0], s[u][h][1]), corr);
					__m512 d = _mm512_mul_ps(
					        _mm512_set1_ps(f16_to_f32(rr[u][b].d)), dq);
					acc[u][h] = _mm512_add_ps(
					        acc[u][h],
					        _mm512_mul_ps(_mm512_cvtepi32_ps(isum), d));
				}
			}
		}
		for (int u = 0; u < rows; u++) {
			_mm512_storeu_ps(st + (i0 + u) * QT, _mm512_mul_ps(acc[u][0], sv));
			_mm512_storeu_ps(st + (i0 + u) * QT + 16, _mm512_mul_ps(acc[u][1], sv));
		}
	}
}

/* Per 16 rows and block: the rows' 32 values as floats in vf and their
 * weights p * d_row in wt; then per strip of 8 values 8 x 2 accumulators
 * take every row in order. */
void cpu_avx512_mix_t_q8(int64_t hd, const float *st, const void *r, int64_t stride, int64_t n,
                         float *ot)
{
	int64_t nb = hd / QK8_0;
	int64_t row_bytes = nb * (int64_t)sizeof(struct block_q8_0);
	float vf[16][QK8_0] __attribute__((aligned(64)));
	float wt[16][QT] __attribute__((aligned(64)));
	for (int64_t i0 = 0; i0 < n; i0 += 16) {
		int rows = n - i0 < 16 ? (int)(n - i0) : 16;
		const char *r0 = (const char *)r + i0 * stride;
		for (int u = 0; u < 16 && i0 + 16 + u < n; u++) {
			const char *pf = r0 + (16 + u) * stride;
			attn_prefetch_row(pf, row_bytes);
			_mm_prefetch(pf + row_bytes - 1, _MM_HINT_T0);
		}
		for (int64_t b = 0; b < nb; b++) {
			for (int i = 0; i < rows; i++) {
				const struct block_q8_0 *ri =
				        (const struct block_q8_0 *)(r0 + i * stride) + b;
				_mm512_store_ps(vf[i],
				                _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
				                        _mm_loadu_si128((const __m128i *)ri->qs))));
				_mm512_store_ps(
				        vf[i] + 16,
				        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
				                _mm_loadu_si128((const __m128i *)(ri->qs + 16)))));
				__m512 d = _mm512_set1_ps(f16_to_f32(ri->d));
				const float *p = st + (i0 + i) * QT;
				_mm512_store_ps(wt[i], _mm512_mul_ps(_mm512_loadu_ps(p), d));
				_mm512_store_ps(wt[i] + 16,
				                _mm512_mul_ps(_mm512_loadu_ps(p + 16), d));
			}
			for (int h = 0; h < QK8_0; h += 8) {
				float *o = ot + (b * QK8_0 + h) * QT;
				__m512 a[8][2];
				_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++)
				{
					a[u][0] = _mm512_loadu_ps(o + u * QT);
					a[u][1] = _mm512_loadu_ps(o + u * QT + 16);
				}
				for (int i = 0; i < rows; i++) {
					__m512 w0 = _mm512_load_ps(wt[i]),
					       w1 = _mm512_load_ps(wt[i] + 16);
					_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++)
					{
						__m512 vb = _mm512_set1_ps(vf[i][h + u]);
						a[u][0] = _mm512_fmadd_ps(w0, vb, a[u][0]);
						a[u][1] = _mm512_fmadd_ps(w1, vb, a[u][1]);
					}
				}
				_Pragma("GCC unroll 8") for (int u = 0; u < 8; u++)
				{
					_mm512_storeu_ps(o + u * QT, a[u][0]);
					_mm512_storeu_ps(o + u * QT + 16, a[u][1]);
				}
			}
		}
	}
}
#undef QT
#else
#include "cpu.h"
#include "kern_avx512_q8.h"
#endif
