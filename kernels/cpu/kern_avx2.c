/*
 * kern_avx2.c - AVX2/FMA/F16C kernels: kern_simd.h with the integer dot
 * product done by maddubs (u8 x s8 -> s16 pairs) and madd (-> s32), plus
 * kern_simd_k.h (BF16) and kern_simd_q.h (K-quants, Q4_1..Q5_1, IQ4). The
 * pragma lets this file use the instructions while the project builds for a
 * generic x86-64; kern.c only selects these after cpuid confirmed them.
 */
#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")

#define SIMD_DOT_I8(acc, u, s)  \
	_mm256_add_epi32((acc), \
	                 _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))

#include "kern_simd.h"
#include "kern_simd_k.h"
#include "kern_simd_q.h"

#include <string.h>

/* ---- decode: Q4_0 weight rows x up to 4 tokens ---- */

/*
 * The generic q4_0_block spends most of its work per block on the nibble
 * offset (the tail's bias in lane 0, a division and an insert) and on the
 * scale (a scalar fp16 widening, a multiply and a broadcast): decode on
 * this AVX2 host ran at half the plain read bandwidth, bound by those.
 * Here the scales of 8 blocks are widened at once and multiplied with the
 * tokens' 8 scales in one vector op, each block's product then broadcast
 * from a stack copy (a load, no shuffle); the +8 offset leaves once per row
 * as 8 * sum_b dw_b * dsum_b (the tail's dsum, 8 blocks per FMA). Integer
 * block sums stay exact (maddubs: 2 x 15 x 127 fits int16); only the float
 * summation order differs from the reference.
 */
static inline __m256 q4_0_scales8_avx2(const struct block_q4_0 *w)
{
	__m128i h = _mm_setr_epi16((short)w[0].d, (short)w[1].d, (short)w[2].d, (short)w[3].d,
	                           (short)w[4].d, (short)w[5].d, (short)w[6].d, (short)w[7].d);
	return _mm256_cvtph_ps(h);
}

static inline __attribute__((always_inline)) void
q4_0_row2(int g, int64_t nb, const struct block_q4_0 *w, const struct block_q8_0 *const *x,
          const struct cpu_q8_tail *xt, float *out)
{
	const int CH = g == 1 ? 4 : g == 2 ? 2 : 1; /* independent FMA chains per token */
	const __m256i m4 = _mm256_set1_epi8(0xF), ones = _mm256_set1_epi16(1);
	__m256 acc[TG][4], cacc[TG];
	float ctail[TG];
	_Alignas(32) float sc[TG][8];
#pragma GCC unroll 4
	for (int j = 0; j < TG; j++) {
		cacc[j] = _mm256_setzero_ps();
		ctail[j] = 0;
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) acc[j][c] = _mm256_setzero_ps();
	}
	int64_t b = 0;
	for (; b + 8 <= nb; b += 8) {
		_mm_prefetch((const char *)(w + b) + PREFETCH_BYTES, _MM_HINT_T0);
		_mm_prefetch((const char *)(w + b) + PREFETCH_BYTES + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)(w + b) + PREFETCH_BYTES + 128, _MM_HINT_T0);
		__m256 dw = q4_0_scales8_avx2(w + b);
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			_mm256_store_ps(sc[j], _mm256_mul_ps(dw, _mm256_loadu_ps(xt[j].d + b)));
			cacc[j] = _mm256_fmadd_ps(dw, _mm256_loadu_ps(xt[j].dsum + b), cacc[j]);
		}
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++) {
			__m128i raw = _mm_loadu_si128((const __m128i *)w[b + k].qs);
			__m256i q = _mm256_and_si256(
			        _mm256_inserti128_si256(_mm256_castsi128_si256(raw),
			                                _mm_srli_epi16(raw, 4), 1),
			        m4);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i p = _mm256_madd_epi16(
				        _mm256_maddubs_epi16(
				                q, _mm256_loadu_si256(
				                           (const __m256i *)x[j][b + k].qs)),
				        ones);
				acc[j][k % CH] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
				                                 _mm256_broadcast_ss(&sc[j][k]),
				                                 acc[j][k % CH]);
			}
		}
	}
	for (; b < nb; b++) {
		float dw = f16_to_f32(w[b].d);
		__m128i raw = _mm_loadu_si128((const __m128i *)w[b].qs);
		__m256i q = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(raw),
		                                                     _mm_srli_epi16(raw, 4), 1),
		                             m4);
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m256i p = _mm256_madd_epi16(
			        _mm256_maddubs_epi16(
			                q, _mm256_loadu_si256((const __m256i *)x[j][b].qs)),
			        ones);
			acc[j][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
			                            _mm256_set1_ps(dw * xt[j].d[b]), acc[j][0]);
			ctail[j] += dw * xt[j].dsum[b];
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < g; j++) {
		__m256 a = acc[j][0];
#pragma GCC unroll 4
		for (int c = 1; c < CH; c++) a = _mm256_add_ps(a, acc[j][c]);
		out[j] = hsum_ps(a) - 8.0f * (hsum_ps(cacc[j]) + ctail[j]);
	}
}

GEMM_GROUPED(gemm_q4_0_dec, struct block_q4_0, 32, q4_0_row2)

/* ---- prefill: Q4_0 on 8 rows x 4 tokens register tiles ---- */

/*
 * With many tokens the integer work dominates, so the weights of 8 rows are
 * re-laid out per call into panels where a ymm dword lane is a row: panel
 * vector kk of a block holds bytes 4kk..4kk+3 of each of the 8 rows (a 4x4
 * dword transpose of 4 ymm loads, each holding rows r and r + 4), split
 * into low and high nibbles as unsigned bytes (0..15). One maddubs against
 * a token's 4 activation bytes broadcast from memory then does 8 rows x 4
 * products; the 8 maddubs of a block add up in int16 (16 products of at
 * most 15 x 127: 30480, no saturation), one madd widens them to int32 and
 * the tail's bias / 16 = -8 sum(x) takes out the +8 offset, so block sums
 * are exact as in the reference; then one convert and one FMA per token for
 * 8 rows. The panels are built once per call and serve every token of it
 * (cpu.c passes a whole prompt chunk). Memory: the panels on the stack per
 * call, nothing kept.
 *
 * Decode keeps the row kernel above: a panel per token costs more than it
 * saves, and the 8 interleaved row streams read DRAM slower than one. Q8_0
 * keeps the generic kernel for every batch: its results do not depend on
 * the batch size, which prompt-lookup decoding's checks rely on (a Q8_0
 * panel's float order would differ from the rows').
 */
#define P8_T      4   /* tokens per register tile */
#define P8_MAX_NB 512 /* blocks per row in a panel (rows up to 16384; wider: the row kernel) */

struct p8_blk {
	__m256i q[8]; /* [kk] 8 rows x 4 nibbles: kk < 4 low nibbles of bytes 4kk.., kk >= 4 high */
	__m256 dw;    /* per row: the block's scale */
};

/* v[0..3] = dword kk of rows 0..7 from a[r] = [row r's 16 bytes | row r + 4's] */
static inline __attribute__((always_inline)) void p8_tr4(const __m256i a[4], __m256i v[4])
{
	__m256i t0 = _mm256_unpacklo_epi32(a[0], a[1]), t1 = _mm256_unpackhi_epi32(a[0], a[1]);
	__m256i t2 = _mm256_unpacklo_epi32(a[2], a[3]), t3 = _mm256_unpackhi_epi32(a[2], a[3]);
	v[0] = _mm256_unpacklo_epi64(t0, t2);
	v[1] = _mm256_unpackhi_epi64(t0, t2);
	v[2] = _mm256_unpacklo_epi64(t1, t3);
	v[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* Panels of the nb blocks of the 8 rows at w (stride ws). */
static void p8_build(const char *w, size_t ws, int64_t nb, struct p8_blk *pb)
{
	const __m256i m4 = _mm256_set1_epi8(0xF);
	for (int64_t b = 0; b < nb; b++) {
		const char *base = w + (size_t)b * sizeof(struct block_q4_0);
		uint16_t d[8];
		__m256i a[4], t[4];
		for (int r = 0; r < 8; r++) memcpy(&d[r], base + r * ws, 2);
		pb[b].dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d));
		for (int r = 0; r < 4; r++)
			a[r] = _mm256_inserti128_si256(
			        _mm256_castsi128_si256(
			                _mm_loadu_si128((const __m128i *)(base + r * ws + 2))),
			        _mm_loadu_si128((const __m128i *)(base + (r + 4) * ws + 2)), 1);
		p8_tr4(a, t);
		for (int kk = 0; kk < 4; kk++) {
			pb[b].q[kk] = _mm256_and_si256(t[kk], m4);
			pb[b].q[kk + 4] = _mm256_and_si256(_mm256_srli_epi16(t[kk], 4), m4);
		}
	}
}

static inline int32_t load_i32(const void *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Every token's data from one base pointer per token plus offsets shared by
 * all (the block's qs, the tail's arrays), so the tile's pointers fit the
 * general registers. */
#define TAIL_I32(base, off) (*(const int32_t *)((base) + (off)))
#define TAIL_F32(base, off) (*(const float *)((base) + (off)))

/* 8 rows x g tokens: y[j * ldy + r] for r < 8, j < g. */
static inline __attribute__((always_inline)) void p8_tile(int g, int64_t nb,
                                                          const struct p8_blk *pb, const char *x0,
                                                          size_t xs, float *y, int64_t ldy)
{
	const __m256i ones = _mm256_set1_epi16(1);
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *xb[P8_T];
	__m256 acc[P8_T];
#pragma GCC unroll 4
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const struct p8_blk *P = &pb[b];
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m256i p[P8_T];
#pragma GCC unroll 8
		for (int kk = 0; kk < 8; kk++) {
			__m256i wk = _mm256_load_si256(&P->q[kk]);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i m = _mm256_maddubs_epi16(
				        wk, _mm256_set1_epi32(load_i32(xb[j] + oq + 4 * kk)));
				p[j] = kk ? _mm256_add_epi16(p[j], m) : m;
			}
		}
		__m256 dwv = _mm256_load_ps((const float *)&P->dw);
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m256i s = _mm256_add_epi32(_mm256_madd_epi16(p[j], ones),
			                             _mm256_set1_epi32(TAIL_I32(xb[j], ob) >> 4));
			acc[j] = _mm256_fmadd_ps(
			        _mm256_cvtepi32_ps(s),
			        _mm256_mul_ps(dwv, _mm256_set1_ps(TAIL_F32(xb[j], od))), acc[j]);
		}
	}
#pragma GCC unroll 4
	for (int j = 0; j < g; j++) _mm256_storeu_ps(y + j * ldy, acc[j]);
}

static void gemm_q4_0_avx2(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                           size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	int64_t nb = n / 32;
	if (nt <= P8_T || nr < 8 || nb > P8_MAX_NB) {
		gemm_q4_0_dec(n, w, w_stride, nr, x, x_stride, nt, y, ldy);
		return;
	}
	/* ~150 KB of stack at most: fine for the caller and the pool's threads (8 MB stacks). */
	_Alignas(64) struct p8_blk pb[P8_MAX_NB];
	for (int64_t r0 = 0; r0 + 8 <= nr; r0 += 8) {
		p8_build((const char *)w + r0 * w_stride, w_stride, nb, pb);
		for (int64_t t0 = 0; t0 < nt; t0 += P8_T) {
			int g = nt - t0 < P8_T ? (int)(nt - t0) : P8_T;
			const char *x0 = (const char *)x + t0 * x_stride;
			float *yt = y + t0 * ldy + r0;
			switch (g) {
			case 4: p8_tile(4, nb, pb, x0, x_stride, yt, ldy); break;
			case 3: p8_tile(3, nb, pb, x0, x_stride, yt, ldy); break;
			case 2: p8_tile(2, nb, pb, x0, x_stride, yt, ldy); break;
			default: p8_tile(1, nb, pb, x0, x_stride, yt, ldy); break;
			}
		}
	}
	int64_t done = nr / 8 * 8;
	if (done < nr)
		gemm_q4_0_dec(n, (const char *)w + done * w_stride, w_stride, nr - done, x,
		              x_stride, nt, y + done, ldy);
}

/* ---- Q4_0 repacked at load (repack.c): 8 rows x up to 4 tokens, any batch ---- */

/*
 * The panels of p8_build above, made once at load instead of per call and
 * kept 4-bit: a panel vector holds 8 rows' dword kk, unpacked here into its
 * low nibbles (values 4kk..) and high nibbles (16 + 4kk..) with an and and a
 * shift + and, shared by the tile's tokens. Per token and block of 8 rows:
 * 8 maddubs, 7 int16 adds, madd, the bias add, a convert and one FMA (~20
 * ops per 256 products, against ~8 per 32 for q4_0_row2), so decode gains
 * as much as prefill. Block sums are exact integers (as p8_tile); a token's
 * 8 results are one FMA chain over the blocks in order, whatever the batch
 * size or the token's place in it, so every nt gives the same bits.
 */
static inline __attribute__((always_inline)) void pk_tile(int g, bool pf, int64_t nb,
                                                          const char *panel, const char *x0,
                                                          size_t xs, float *y, int64_t ldy,
                                                          int rows)
{
	const __m256i m4 = _mm256_set1_epi8(0xF), ones = _mm256_set1_epi16(1);
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *sc = panel, *qs = panel + 16 * (size_t)nb;
	const char *xb[P8_T];
	__m256 acc[P8_T];
#pragma GCC unroll 4
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q = qs + (size_t)b * 128;
		/* Decode streams the panels from DRAM: ask for them ahead of the
		 * hardware prefetcher (the quants' two lines, a scales line per 4
		 * blocks; 200 MB, one core, nt=1: 8.3 -> 10.1 GB/s). A prompt's
		 * panels are reused from cache: there it only costs (2-3% in L2). */
		if (pf) {
			_mm_prefetch(q + PREFETCH_BYTES, _MM_HINT_T0);
			_mm_prefetch(q + PREFETCH_BYTES + 64, _MM_HINT_T0);
			if (!(b & 3)) _mm_prefetch(sc + 16 * b + PREFETCH_BYTES / 8, _MM_HINT_T0);
		}
		size_t oq = (size_t)b * 34 + 2, ob = toff + 4 * (size_t)b;
		size_t od = ob + 4 * (size_t)nb;
		__m256i p[P8_T];
#pragma GCC unroll 4
		for (int kk = 0; kk < 4; kk++) {
			__m256i raw = _mm256_loadu_si256((const __m256i *)(q + 32 * kk));
			__m256i lo = _mm256_and_si256(raw, m4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i m = _mm256_add_epi16(
				        _mm256_maddubs_epi16(lo, _mm256_set1_epi32(load_i32(
				                                         xb[j] + oq + 4 * kk))),
				        _mm256_maddubs_epi16(
				                hi, _mm256_set1_epi32(
				                            load_i32(xb[j] + oq + 16 + 4 * kk))));
				p[j] = kk ? _mm256_add_epi16(p[j], m) : m;
			}
		}
		__m256 dwv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 16 * b)));
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m256i s = _mm256_add_epi32(_mm256_madd_epi16(p[j], ones),
			                             _mm256_set1_epi32(TAIL_I32(xb[j], ob) >> 4));
			acc[j] = _mm256_fmadd_ps(
			        _mm256_cvtepi32_ps(s),
			        _mm256_mul_ps(dwv, _mm256_set1_ps(TAIL_F32(xb[j], od))), acc[j]);
		}
	}
	if (rows == 8) {
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) _mm256_storeu_ps(y + j * ldy, acc[j]);
		return;
	}
	_Alignas(32) float t[8];
	for (int j = 0; j < g; j++) {
		_mm256_store_ps(t, acc[j]);
		memcpy(y + j * ldy, t, (size_t)rows * sizeof(float));
	}
}

static void gemm_q4_0_p8_avx2(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                              size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	int64_t nb = n / 32;
	for (int64_t r0 = 0; r0 < nr; r0 += 8) {
		const char *panel = (const char *)w + r0 * w_stride;
		int rows = nr - r0 < 8 ? (int)(nr - r0) : 8;
		for (int64_t t0 = 0; t0 < nt; t0 += P8_T) {
			int g = nt - t0 < P8_T ? (int)(nt - t0) : P8_T;
			const char *x0 = (const char *)x + t0 * x_stride;
			float *yt = y + t0 * ldy + r0;
#define PK(G, PF) pk_tile(G, PF, nb, panel, x0, x_stride, yt, ldy, rows)
			if (nt <= P8_T) {
				switch (g) {
				case 4: PK(4, true); break;
				case 3: PK(3, true); break;
				case 2: PK(2, true); break;
				default: PK(1, true); break;
				}
			} else {
				switch (g) {
				case 4: PK(4, false); break;
				case 3: PK(3, false); break;
				case 2: PK(2, false); break;
				default: PK(1, false); break;
				}
			}
#undef PK
		}
	}
}

const struct cpu_kernels cpu_kernels_avx2 = {
	.name = "avx2",
	.act = { NULL, act_q8_0, act_q8_1, act_q8_k },
	.gemm_f32 = gemm_f32,
	.gemm_f16 = gemm_f16,
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
	.gemm_q8_0 = gemm_q8_0,
	.gemm_q4_0 = gemm_q4_0_avx2,
	.gemm_q4_0_p8 = gemm_q4_0_p8_avx2,
	.dot_f32 = attn_dot,
	.axpy_f32 = attn_axpy,
	.dot_f16 = attn_dot_f16,
	.axpy_f16 = attn_axpy_f16,
	.score_f32 = attn_score_f32,
	.mix_f32 = attn_mix_f32,
	.score_f16 = attn_score_f16,
	.mix_f16 = attn_mix_f16,
	.softmax = attn_softmax,
	.attn_qb = ATTN_QB,
};
#else
#include "cpu.h"
const struct cpu_kernels cpu_kernels_avx2 = { .name = "avx2" };
#endif
