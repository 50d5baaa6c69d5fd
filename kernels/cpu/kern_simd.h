/*
 * kern_simd.h - the 256-bit kernels, written once and compiled twice: by
 * kern_avx2.c (integer dot products with maddubs/madd) and by kern_avx512.c
 * (the same with AVX-512 VNNI's vpdpbusd on ymm registers). The includer
 * sets the target pragma and defines SIMD_DOT_I8(acc, u, s): acc + the sums
 * of 4 adjacent products of unsigned bytes u and signed bytes s, per int32 lane.
 *
 * Decode reads each weight row once for a group of up to 4 tokens (the
 * batched GEMV of N candidates): the row's blocks are unpacked once and
 * multiplied with every token of the group while they sit in registers.
 * Results equal the reference kernels up to float summation order (the
 * integer block sums are exact).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "backend.h"
#include "cpu.h"
#include "quant.h"

#define TG             4 /* tokens per group */
/* Software prefetch distance along a weight row: decode streams weights from
 * DRAM and is otherwise stalled on each new line while the integer work of
 * the previous one waits; the next rows follow contiguously, so running past
 * the end of a row is useful too. */
#define PREFETCH_BYTES 2048

static inline float hsum_ps(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

static inline float hmax_ps(__m256 v)
{
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	m = _mm_max_ss(m, _mm_movehdup_ps(m));
	return _mm_cvtss_f32(m);
}

static inline float f16_to_f32(uint16_t h)
{
	return _cvtsh_ss(h);
}

/* ---- activations: Q8_0 as ggml's x86 quantize_row_q8_0, bit for bit ---- */

static void act_q8_0(const float *x, void *dst, int64_t n)
{
	struct block_q8_0 *y = dst;
	struct cpu_q8_tail tail = cpu_q8_tail_of(dst, n / QK8_0);
	const __m256 sign = _mm256_set1_ps(-0.0f);
	for (int64_t b = 0; b < n / QK8_0; b++) {
		const float *xb = x + b * QK8_0;
		__m256 v[4], m = _mm256_setzero_ps();
		for (int i = 0; i < 4; i++) {
			v[i] = _mm256_loadu_ps(xb + 8 * i);
			m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[i]));
		}
		float amax = hmax_ps(m);
		float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
		y[b].d = tensor_f32_to_f16(d);
		__m256 vid = _mm256_set1_ps(id);
		__m256i q[4];
		for (int i = 0; i < 4; i++)
			q[i] = _mm256_cvtps_epi32(
			        _mm256_round_ps(_mm256_mul_ps(v[i], vid),
			                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		/* int32 -> int8 keeping order: pack to 16 then 8 bits, then fix the lane interleave. */
		__m256i p01 = _mm256_packs_epi32(q[0], q[1]), p23 = _mm256_packs_epi32(q[2], q[3]);
		__m256i p = _mm256_packs_epi16(p01, p23);
		p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
		_mm256_storeu_si256((__m256i *)y[b].qs, p);
		/* The tail (cpu.h): the block's sum from the int32 values before packing. */
		__m256i s4 = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]),
		                              _mm256_add_epi32(q[2], q[3]));
		__m128i s2 =
		        _mm_add_epi32(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
		s2 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0x4E));
		s2 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xB1));
		int32_t sum = _mm_cvtsi128_si32(s2);
		float dd = f16_to_f32(y[b].d);
		tail.bias[b] = -128 * sum;
		tail.d[b] = dd;
		tail.dsum[b] = dd * (float)sum;
	}
}

/* ---- Q8_0 and Q4_0 weights x Q8_0 activations (kern_avx512.c has its own) ---- */

/*
 * Q8_0: |w| x sign(x, w). Q4_0: the nibbles as unsigned bytes against the
 * signed activations (q4_0_block). The activation scales come from the
 * activation tail, so there is no per-call preparation and no limit on the
 * row width.
 */

/* Independent accumulator chains per token, so the 4-cycle FMA latency is
 * hidden when a group has few tokens (decode). */
#define CHAINS(g) ((g) == 1 ? 4 : (g) == 2 ? 2 : 1)

static inline __attribute__((always_inline)) void
q8_0_block(int g, const struct block_q8_0 *w, int64_t b, const struct block_q8_0 *const *x,
           const struct cpu_q8_tail *xt, __m256 *acc)
{
	__m256i wq = _mm256_loadu_si256((const __m256i *)w[b].qs);
	__m256i aw = _mm256_sign_epi8(wq, wq);
	float dw = f16_to_f32(w[b].d);
#pragma GCC unroll 4
	for (int j = 0; j < g; j++) {
		__m256i xq = _mm256_loadu_si256((const __m256i *)x[j][b].qs);
		__m256i p = SIMD_DOT_I8(_mm256_setzero_si256(), aw, _mm256_sign_epi8(xq, wq));
		acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * xt[j].d[b]),
		                         acc[j]);
	}
}

/* The -8 sum(x) of the nibble offset enters the integer sum through lane 0
 * of the accumulator (the tail's bias is -128 sum(x)), so block sums are
 * exact as in the reference. */
static inline __attribute__((always_inline)) void
q4_0_block(int g, const struct block_q4_0 *w, int64_t b, const struct block_q8_0 *const *x,
           const struct cpu_q8_tail *xt, __m256 *acc)
{
	const __m128i m4 = _mm_set1_epi8(0xF);
	__m128i raw = _mm_loadu_si128((const __m128i *)w[b].qs);
	__m256i q =
	        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), _mm_and_si128(raw, m4));
	float dw = f16_to_f32(w[b].d);
#pragma GCC unroll 4
	for (int j = 0; j < g; j++) {
		__m256i xq = _mm256_loadu_si256((const __m256i *)x[j][b].qs);
		__m256i init = _mm256_zextsi128_si256(_mm_cvtsi32_si128(xt[j].bias[b] / 16));
		__m256i p = SIMD_DOT_I8(init, q, xq);
		acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * xt[j].d[b]),
		                         acc[j]);
	}
}

#define QUANT_GROUP(name, wblock, blockfn)                                               \
	static inline __attribute__((always_inline)) void name(                          \
	        int g, int64_t nb, const wblock *w, const struct block_q8_0 *const *x,   \
	        const struct cpu_q8_tail *xt, float *out)                                \
	{                                                                                \
		__m256 a0[TG], a1[TG];                                                   \
		_Pragma("GCC unroll 4") for (int j = 0; j < TG; j++) a0[j] = a1[j] =     \
		        _mm256_setzero_ps();                                             \
		int64_t b = 0;                                                           \
		for (; b + 2 <= nb; b += 2) { /* two chains hide the FMA latency */      \
			_mm_prefetch((const char *)&w[b] + PREFETCH_BYTES, _MM_HINT_T0); \
			blockfn(g, w, b, x, xt, a0);                                     \
			blockfn(g, w, b + 1, x, xt, a1);                                 \
		}                                                                        \
		if (b < nb) blockfn(g, w, b, x, xt, a0);                                 \
		_Pragma("GCC unroll 4") for (int j = 0; j < g; j++) out[j] =             \
		        hsum_ps(_mm256_add_ps(a0[j], a1[j]));                            \
	}

QUANT_GROUP(q8_0_group, struct block_q8_0, q8_0_block)
QUANT_GROUP(q4_0_group, struct block_q4_0, q4_0_block)

/*
 * The driver of every quantized GEMM against Q8_0 activations: tokens in
 * groups of up to TG, each weight row once per group through
 * groupfn(g, blocks, row, xs, xt, out), where blocks counts the row's weight
 * blocks of wblock_n elements (32 for Q4_0/Q8_0, QK_K for K-quants).
 */
#define GEMM_GROUPED(fname, wblock, wblock_n, groupfn)                                        \
	__attribute__((unused)) static void fname(int64_t n, const void *w, size_t w_stride,  \
	                                          int64_t nr, const void *x, size_t x_stride, \
	                                          int64_t nt, float *y, int64_t ldy)          \
	{                                                                                     \
		int64_t nb = n / 32, nw = n / (wblock_n);                                     \
		for (int64_t t0 = 0; t0 < nt; t0 += TG) {                                     \
			const struct block_q8_0 *xs[TG];                                      \
			struct cpu_q8_tail xt[TG];                                            \
			int g = nt - t0 < TG ? (int)(nt - t0) : TG;                           \
			for (int j = 0; j < g; j++) {                                         \
				xs[j] = (const struct block_q8_0 *)((const char *)x +         \
				                                    (t0 + j) * x_stride);     \
				xt[j] = cpu_q8_tail_of(xs[j], nb);                            \
			}                                                                     \
			for (int64_t r = 0; r < nr; r++) {                                    \
				const wblock *wr =                                            \
				        (const wblock *)((const char *)w + r * w_stride);     \
				float out[TG];                                                \
				switch (g) {                                                  \
				case 4: groupfn(4, nw, wr, xs, xt, out); break;               \
				case 3: groupfn(3, nw, wr, xs, xt, out); break;               \
				case 2: groupfn(2, nw, wr, xs, xt, out); break;               \
				default: groupfn(1, nw, wr, xs, xt, out); break;              \
				}                                                             \
				for (int j = 0; j < g; j++) y[(t0 + j) * ldy + r] = out[j];   \
			}                                                                     \
		}                                                                             \
	}

GEMM_GROUPED(gemm_q8_0, struct block_q8_0, 32, q8_0_group)
GEMM_GROUPED(gemm_q4_0, struct block_q4_0, 32, q4_0_group)

/* ---- F16 and F32 weights x float activations ---- */

#define GEMM_FLOAT(fname, wtype, loadw)                                                            \
	static inline __attribute__((always_inline)) void fname##_group(                           \
	        int g, int64_t n, const wtype *w, const float *const *x, float *out)               \
	{                                                                                          \
		const int U = CHAINS(g);                                                           \
		__m256 acc[4][TG];                                                                 \
		for (int u = 0; u < 4; u++)                                                        \
			for (int j = 0; j < TG; j++) acc[u][j] = _mm256_setzero_ps();              \
		int64_t i = 0;                                                                     \
		for (; i + 8 * U <= n; i += 8 * U) {                                               \
			_mm_prefetch((const char *)(w + i) + PREFETCH_BYTES, _MM_HINT_T0);         \
			for (int u = 0; u < U; u++) {                                              \
				int64_t iu = i + 8 * u;                                            \
				__m256 wv = loadw(iu);                                             \
				for (int j = 0; j < g; j++)                                        \
					acc[u][j] = _mm256_fmadd_ps(                               \
					        wv, _mm256_loadu_ps(x[j] + iu), acc[u][j]);        \
			}                                                                          \
		}                                                                                  \
		for (; i + 8 <= n; i += 8) {                                                       \
			__m256 wv = loadw(i);                                                      \
			for (int j = 0; j < g; j++)                                                \
				acc[0][j] =                                                        \
				        _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[j] + i), acc[0][j]); \
		}                                                                                  \
		for (int j = 0; j < g; j++) {                                                      \
			for (int u = 1; u < U; u++)                                                \
				acc[0][j] = _mm256_add_ps(acc[0][j], acc[u][j]);                   \
			out[j] = hsum_ps(acc[0][j]);                                               \
			for (int64_t k = i; k < n; k++) out[j] += fname##_scalar(w[k]) * x[j][k];  \
		}                                                                                  \
	}                                                                                          \
	static void fname(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,    \
	                  size_t x_stride, int64_t nt, float *y, int64_t ldy)                      \
	{                                                                                          \
		for (int64_t r = 0; r < nr; r++) {                                                 \
			const wtype *wr = (const wtype *)((const char *)w + r * w_stride);         \
			for (int64_t t0 = 0; t0 < nt; t0 += TG) {                                  \
				const float *xs[TG];                                               \
				float out[TG];                                                     \
				int g = nt - t0 < TG ? (int)(nt - t0) : TG;                        \
				for (int j = 0; j < g; j++)                                        \
					xs[j] = (const float *)((const char *)x +                  \
					                        (t0 + j) * x_stride);              \
				switch (g) {                                                       \
				case 4: fname##_group(4, n, wr, xs, out); break;                   \
				case 3: fname##_group(3, n, wr, xs, out); break;                   \
				case 2: fname##_group(2, n, wr, xs, out); break;                   \
				default: fname##_group(1, n, wr, xs, out); break;                  \
				}                                                                  \
				for (int j = 0; j < g; j++) y[(t0 + j) * ldy + r] = out[j];        \
			}                                                                          \
		}                                                                                  \
	}

static inline float gemm_f16_scalar(uint16_t h)
{
	return f16_to_f32(h);
}

static inline float gemm_f32_scalar(float f)
{
	return f;
}

#define LOAD_F16(i) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + (i))))
#define LOAD_F32(i) _mm256_loadu_ps(w + (i))
GEMM_FLOAT(gemm_f16, uint16_t, LOAD_F16)
GEMM_FLOAT(gemm_f32, float, LOAD_F32)

/* ---- attention helpers ---- */

static float attn_dot(int64_t n, const float *a, const float *b)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	float s = hsum_ps(_mm256_add_ps(s0, s1));
	for (; i < n; i++) s += a[i] * b[i];
	return s;
}

static void attn_axpy(int64_t n, float s, const float *x, float *y)
{
	__m256 vs = _mm256_set1_ps(s);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(
		        y + i, _mm256_fmadd_ps(vs, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
	for (; i < n; i++) y[i] += s * x[i];
}

static float attn_dot_f16(int64_t n, const float *a, const uint16_t *h)
{
	__m256 s0 = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i),
		                     _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))),
		                     s0);
	float s = hsum_ps(s0);
	for (; i < n; i++) s += a[i] * f16_to_f32(h[i]);
	return s;
}

static void attn_axpy_f16(int64_t n, float s, const uint16_t *h, float *y)
{
	__m256 vs = _mm256_set1_ps(s);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(
		        y + i,
		        _mm256_fmadd_ps(vs,
		                        _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))),
		                        _mm256_loadu_ps(y + i)));
	for (; i < n; i++) y[i] += s * f16_to_f32(h[i]);
}

/* ---- attention over runs of cache rows for up to ATTN_QB queries (cpu.h; the
 * AVX-512 set has its own on zmm, kern_attn512.h) ---- */

#ifndef ATTN_STRIP
#define ATTN_STRIP 2 /* ymm registers of o per query in the mix loop (16 registers: AVX2) */
#endif
#ifndef ATTN_QB
#define ATTN_QB 4 /* queries per call (AVX2: 2 rows x 4 queries of score accumulators) */
#endif

static inline float id_f32(float f)
{
	return f;
}

/* Cache rows of one head sit a whole KV row apart (n_head_kv * head_dim
 * values), so each is in another 4 KB page and the hardware prefetchers do
 * not follow them; decode reads them from DRAM. The kernels prefetch the
 * rows ATTN_PF ahead, every line of them. Prefetches never fault, so rows
 * past the run need no check. */
#define ATTN_PF 6

static inline void attn_prefetch_row(const void *row, int64_t bytes)
{
	for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)row + o, _MM_HINT_T0);
}

/* Cases 8..5 of the query-count switch, present when ATTN_QB is 8. */
#if ATTN_QB > 4
#define ATTN_CASES_HI(c8, c7, c6, c5) \
	case 8: c8 break;             \
	case 7: c7 break;             \
	case 6: c6 break;             \
	case 5:                       \
		c5 break;
#else
#define ATTN_CASES_HI(c8, c7, c6, c5)
#endif

#define LOADK_F32(p) _mm256_loadu_ps(p)
#define LOADK_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))

/* Two rows x g queries of accumulators; each row chunk is loaded once for
 * all queries, the 4 query sums of a row leave through two hadds. */
#define ATTN_SCORE(fname, rtype, loadk, scalar)                                                  \
	static inline __attribute__((always_inline)) void fname##_g(                             \
	        int g, int64_t hd, const float *q, int64_t qs, const rtype *r, int64_t stride,   \
	        int64_t n, float scale, float *s, int64_t ld)                                    \
	{                                                                                        \
		int64_t h8 = hd / 8 * 8;                                                         \
		for (int64_t i = 0; i < n; i += 2) {                                             \
			attn_prefetch_row(r + (i + ATTN_PF) * stride,                            \
			                  hd * (int64_t)sizeof(rtype));                          \
			attn_prefetch_row(r + (i + ATTN_PF + 1) * stride,                        \
			                  hd * (int64_t)sizeof(rtype));                          \
			int rows = n - i >= 2 ? 2 : 1;                                           \
			const rtype *r0 = r + i * stride, *r1 = rows == 2 ? r0 + stride : r0;    \
			__m256 a[2][ATTN_QB];                                                    \
			_Pragma("GCC unroll 8") for (int j = 0; j < ATTN_QB; j++) a[0][j] =      \
			        a[1][j] = _mm256_setzero_ps();                                   \
			for (int64_t k = 0; k < h8; k += 8) {                                    \
				__m256 k0 = loadk(r0 + k), k1 = loadk(r1 + k);                   \
				_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)              \
				{                                                                \
					__m256 qv = _mm256_loadu_ps(q + j * qs + k);             \
					a[0][j] = _mm256_fmadd_ps(qv, k0, a[0][j]);              \
					a[1][j] = _mm256_fmadd_ps(qv, k1, a[1][j]);              \
				}                                                                \
			}                                                                        \
			for (int u = 0; u < rows; u++) {                                         \
				float t[ATTN_QB];                                                \
				for (int q0 = 0; q0 < g; q0 += 4) {                              \
					__m256 h = _mm256_hadd_ps(                               \
					        _mm256_hadd_ps(a[u][q0], a[u][q0 + 1]),          \
					        _mm256_hadd_ps(a[u][q0 + 2], a[u][q0 + 3]));     \
					_mm_storeu_ps(t + q0,                                    \
					              _mm_add_ps(_mm256_castps256_ps128(h),      \
					                         _mm256_extractf128_ps(h, 1)));  \
				}                                                                \
				const rtype *ru = u ? r1 : r0;                                   \
				for (int j = 0; j < g; j++) {                                    \
					for (int64_t k = h8; k < hd; k++)                        \
						t[j] += q[j * qs + k] * scalar(ru[k]);           \
					s[j * ld + i + u] = t[j] * scale;                        \
				}                                                                \
			}                                                                        \
		}                                                                                \
	}                                                                                        \
	__attribute__((unused)) static void fname(int64_t hd, int g, const float *q, int64_t qs, \
	                                          const rtype *r, int64_t stride, int64_t n,     \
	                                          float scale, float *s, int64_t ld)             \
	{                                                                                        \
		switch (g) {                                                                     \
			ATTN_CASES_HI(fname##_g(8, hd, q, qs, r, stride, n, scale, s, ld);       \
			              , fname##_g(7, hd, q, qs, r, stride, n, scale, s, ld);     \
			              , fname##_g(6, hd, q, qs, r, stride, n, scale, s, ld);     \
			              , fname##_g(5, hd, q, qs, r, stride, n, scale, s, ld);)    \
		case 4: fname##_g(4, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		case 3: fname##_g(3, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		case 2: fname##_g(2, hd, q, qs, r, stride, n, scale, s, ld); break;              \
		default: fname##_g(1, hd, q, qs, r, stride, n, scale, s, ld); break;             \
		}                                                                                \
	}

/* o of g queries stays in registers per strip of 8 * ATTN_STRIP values while
 * every row passes once. */
#define ATTN_MIX(fname, rtype, loadk, scalar)                                                    \
	static inline __attribute__((always_inline)) void fname##_g(                             \
	        int g, int64_t hd, const float *p, int64_t ld, const rtype *r, int64_t stride,   \
	        int64_t n, float *o, int64_t os)                                                 \
	{                                                                                        \
		const int W = 8 * ATTN_STRIP;                                                    \
		int64_t c = 0;                                                                   \
		for (; c + W <= hd; c += W) {                                                    \
			__m256 a[ATTN_QB][ATTN_STRIP];                                           \
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)                      \
			        _Pragma("GCC unroll 4") for (int u = 0; u < ATTN_STRIP; u++)     \
			                a[j][u] = _mm256_loadu_ps(o + j * os + c + 8 * u);       \
			for (int64_t i = 0; i < n; i++) {                                        \
				if (c == 0) /* the first strip brings whole rows in */           \
					attn_prefetch_row(r + (i + ATTN_PF) * stride,            \
					                  hd * (int64_t)sizeof(rtype));          \
				const rtype *ri = r + i * stride + c;                            \
				__m256 v[ATTN_STRIP];                                            \
				_Pragma("GCC unroll 4") for (int u = 0; u < ATTN_STRIP; u++)     \
				        v[u] = loadk(ri + 8 * u);                                \
				_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)              \
				{                                                                \
					__m256 pv = _mm256_set1_ps(p[j * ld + i]);               \
					_Pragma("GCC unroll 4") for (int u = 0; u < ATTN_STRIP;  \
					                             u++) a[j][u] =              \
					        _mm256_fmadd_ps(pv, v[u], a[j][u]);              \
				}                                                                \
			}                                                                        \
			_Pragma("GCC unroll 8") for (int j = 0; j < g; j++)                      \
			        _Pragma("GCC unroll 4") for (int u = 0; u < ATTN_STRIP; u++)     \
			                _mm256_storeu_ps(o + j * os + c + 8 * u, a[j][u]);       \
		}                                                                                \
		for (; c + 8 <= hd; c += 8)                                                      \
			for (int j = 0; j < g; j++) {                                            \
				__m256 a = _mm256_loadu_ps(o + j * os + c);                      \
				for (int64_t i = 0; i < n; i++)                                  \
					a = _mm256_fmadd_ps(_mm256_set1_ps(p[j * ld + i]),       \
					                    loadk(r + i * stride + c), a);       \
				_mm256_storeu_ps(o + j * os + c, a);                             \
			}                                                                        \
		for (; c < hd; c++)                                                              \
			for (int j = 0; j < g; j++)                                              \
				for (int64_t i = 0; i < n; i++)                                  \
					o[j * os + c] +=                                         \
					        p[j * ld + i] * scalar(r[i * stride + c]);       \
	}                                                                                        \
	__attribute__((unused)) static void fname(int64_t hd, int g, const float *p, int64_t ld, \
	                                          const rtype *r, int64_t stride, int64_t n,     \
	                                          float *o, int64_t os)                          \
	{                                                                                        \
		switch (g) {                                                                     \
			ATTN_CASES_HI(fname##_g(8, hd, p, ld, r, stride, n, o, os);              \
			              , fname##_g(7, hd, p, ld, r, stride, n, o, os);            \
			              , fname##_g(6, hd, p, ld, r, stride, n, o, os);            \
			              , fname##_g(5, hd, p, ld, r, stride, n, o, os);)           \
		case 4: fname##_g(4, hd, p, ld, r, stride, n, o, os); break;                     \
		case 3: fname##_g(3, hd, p, ld, r, stride, n, o, os); break;                     \
		case 2: fname##_g(2, hd, p, ld, r, stride, n, o, os); break;                     \
		default: fname##_g(1, hd, p, ld, r, stride, n, o, os); break;                    \
		}                                                                                \
	}

ATTN_SCORE(attn_score_f32, float, LOADK_F32, id_f32)
ATTN_SCORE(attn_score_f16, uint16_t, LOADK_F16, f16_to_f32)
ATTN_MIX(attn_mix_f32, float, LOADK_F32, id_f32)
ATTN_MIX(attn_mix_f16, uint16_t, LOADK_F16, f16_to_f32)

/* A q8_0 cache (cpu.h's score_q8 / mix_q8) has its own files per set:
 * kern_avx2_q8.c (both AVX2 sets) and kern_avx512_q8.c. */

/*
 * exp(x) for x <= 88 (silu below takes any x through exp_ps), 8 lanes: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split
 * in two so n ln2 is exact to float precision), exp(r) by its Taylor series
 * to degree 7 (truncation 5e-9 relative, under the rounding of the Horner
 * steps), times 2^n built in the exponent bits. Within 2 ulp of expf; below
 * -87 (where 2^n would leave the normal range) it returns 0, which is
 * 1e-38 away from exp(x) and nothing next to the softmax's largest term 1.
 */
static inline __m256 exp_neg_ps(__m256 x)
{
	const __m256 lo = _mm256_set1_ps(-87.0f);
	__m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
	x = _mm256_max_ps(x, lo);
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
	                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
	__m256 p = _mm256_set1_ps(1.0f / 5040);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	__m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
	p = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
	return _mm256_andnot_ps(under, p);
}

/* exp(x) for any x, as exp_neg_ps up to 88 and exp(88) above: past 88.7
 * expf is inf, and the one caller (silu's 1 / (1 + exp(-x))) then gets
 * 6e-39 instead of 0 (both nothing next to its other terms). */
static inline __m256 exp_ps(__m256 x)
{
	/* n <= 127 at 88, so 2^n stays in the exponent's range */
	return exp_neg_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0f)));
}

/* The reference's three passes, 8 lanes at a time; the sum is taken in
 * double per lane and added across lanes at the end. The last partial
 * vector goes through a copy padded with -inf, whose exp is 0. */
__attribute__((unused)) static void attn_softmax(float *s, int64_t n, bool round_f16)
{
	__m256 mv = _mm256_set1_ps(-INFINITY);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(s + i));
	float mx = hmax_ps(mv);
	for (int64_t k = i; k < n; k++) mx = s[k] > mx ? s[k] : mx;
	__m256d sum0 = _mm256_setzero_pd(), sum1 = _mm256_setzero_pd();
	const __m256 m8 = _mm256_set1_ps(mx);
	for (i = 0; i < n; i += 8) {
		float pad[8];
		int64_t w = n - i < 8 ? n - i : 8;
		const float *src = s + i;
		if (w < 8) {
			for (int l = 0; l < 8; l++) pad[l] = l < w ? s[i + l] : -INFINITY;
			src = pad;
		}
		__m256 e = exp_neg_ps(_mm256_sub_ps(_mm256_loadu_ps(src), m8));
		sum0 = _mm256_add_pd(sum0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
		sum1 = _mm256_add_pd(sum1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
		if (w == 8) {
			_mm256_storeu_ps(s + i, e);
		} else {
			_mm256_storeu_ps(pad, e);
			memcpy(s + i, pad, (size_t)w * sizeof *s);
		}
	}
	double d[4], sum = 0;
	_mm256_storeu_pd(d, _mm256_add_pd(sum0, sum1));
	for (int l = 0; l < 4; l++) sum += d[l];
	const __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
	for (i = 0; i + 8 <= n; i += 8) {
		__m256 p = _mm256_mul_ps(_mm256_loadu_ps(s + i), inv);
		if (round_f16)
			p = _mm256_cvtph_ps(
			        _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		_mm256_storeu_ps(s + i, p);
	}
	for (int64_t k = i; k < n; k++) {
		float p = s[k] * _mm256_cvtss_f32(inv);
		s[k] = round_f16 ? f16_to_f32(_cvtss_sh(p, 0)) : p;
	}
}

/* ---- a prompt's attention with the queries in the lanes (cpu.h's
 * score_t_f16, softmax_t, mix_t_f16; the AVX-512 set has its own on zmm,
 * kern_attn512.h; a q8_0 cache's are kern_avx2_q8.c's): 32 queries in 4 ymm, so each broadcast of a cache row's
 * value serves 4 FMAs and nothing is summed across lanes. ---- */

#define QT CPU_ATTN_QT

/* n values of a cache row into a float buffer of w (zeros past n). */
static inline void row_to_buf(const uint16_t *h, int64_t n, float *buf, int w)
{
	int v = 0;
	for (; v + 8 <= n && v + 8 <= w; v += 8) _mm256_store_ps(buf + v, LOADK_F16(h + v));
	for (; v < w; v++) buf[v] = v < n ? f16_to_f32(h[v]) : 0.0f;
}

/* 3 rows x 32 queries of accumulators (12 of the 16 registers), the rows'
 * values through kf 64 at a time. */
__attribute__((unused)) static void simd_score_t_f16(int64_t hd, const float *qt, const uint16_t *r,
                                                     int64_t stride, int64_t n, float scale,
                                                     float *st)
{
	float kf[3][64] __attribute__((aligned(32)));
	const __m256 sv = _mm256_set1_ps(scale);
	for (int64_t i0 = 0; i0 < n; i0 += 3) {
		int rows = n - i0 < 3 ? (int)(n - i0) : 3;
		__m256 a[3][4];
		for (int u = 0; u < 3; u++)
			_Pragma("GCC unroll 4") for (int l = 0; l < 4; l++) a[u][l] =
			        _mm256_setzero_ps();
		for (int64_t k0 = 0; k0 < hd; k0 += 64) {
			int w = hd - k0 < 64 ? (int)(hd - k0) : 64;
			for (int u = 0; u < 3; u++)
				row_to_buf(u < rows ? r + (i0 + u) * stride + k0 : r,
				           u < rows ? w : 0, kf[u], 64);
			for (int k = 0; k < w; k++) {
				__m256 b0 = _mm256_set1_ps(kf[0][k]), b1 = _mm256_set1_ps(kf[1][k]),
				       b2 = _mm256_set1_ps(kf[2][k]);
				_Pragma("GCC unroll 4") for (int l = 0; l < 4; l++)
				{
					__m256 qv = _mm256_loadu_ps(qt + (k0 + k) * QT + 8 * l);
					a[0][l] = _mm256_fmadd_ps(b0, qv, a[0][l]);
					a[1][l] = _mm256_fmadd_ps(b1, qv, a[1][l]);
					a[2][l] = _mm256_fmadd_ps(b2, qv, a[2][l]);
				}
			}
		}
		for (int u = 0; u < rows; u++)
			_Pragma("GCC unroll 4") for (int l = 0; l < 4; l++) _mm256_storeu_ps(
			        st + (i0 + u) * QT + 8 * l, _mm256_mul_ps(a[u][l], sv));
	}
}

/* attn_softmax's steps for 8 lanes (one ymm of each row of st), a lane's
 * rows masked off past its last. */
static inline void softmax_t8(float *st, int64_t n, const int32_t *last, bool round_f16)
{
	const __m256i lv = _mm256_loadu_si256((const __m256i *)last);
	__m256 mv = _mm256_set1_ps(-INFINITY);
	for (int64_t i = 0; i < n; i++) {
		__m256 past =
		        _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)i), lv));
		mv = _mm256_blendv_ps(_mm256_max_ps(mv, _mm256_loadu_ps(st + i * QT)), mv, past);
	}
	__m256d sum0 = _mm256_setzero_pd(), sum1 = _mm256_setzero_pd();
	for (int64_t i = 0; i < n; i++) {
		__m256 past =
		        _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)i), lv));
		__m256 e = _mm256_andnot_ps(
		        past, exp_neg_ps(_mm256_sub_ps(_mm256_loadu_ps(st + i * QT), mv)));
		sum0 = _mm256_add_pd(sum0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
		sum1 = _mm256_add_pd(sum1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
		_mm256_storeu_ps(st + i * QT, e);
	}
	const __m256d one = _mm256_set1_pd(1.0);
	__m256 inv = _mm256_insertf128_ps(
	        _mm256_castps128_ps256(_mm256_cvtpd_ps(_mm256_div_pd(one, sum0))),
	        _mm256_cvtpd_ps(_mm256_div_pd(one, sum1)), 1);
	/* a lane without rows (sum 0) gets 0s, not 0 * inf */
	inv = _mm256_and_ps(inv, _mm256_cmp_ps(inv, _mm256_set1_ps(INFINITY), _CMP_LT_OQ));
	for (int64_t i = 0; i < n; i++) {
		__m256 p = _mm256_mul_ps(_mm256_loadu_ps(st + i * QT), inv);
		if (round_f16)
			p = _mm256_cvtph_ps(
			        _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		_mm256_storeu_ps(st + i * QT, p);
	}
}

__attribute__((unused)) static void simd_softmax_t(float *st, int64_t n, const int32_t *last,
                                                   bool round_f16)
{
	for (int l = 0; l < QT; l += 8) softmax_t8(st + l, n, last + l, round_f16);
}

/* Per 3 head values: 3 x 4 accumulators (lanes the queries) take every row
 * in order, its values broadcast from vf. */
__attribute__((unused)) static void simd_mix_t_f16(int64_t hd, const float *st, const uint16_t *r,
                                                   int64_t stride, int64_t n, float *ot)
{
	float vf[16][24] __attribute__((aligned(32)));
	for (int64_t i0 = 0; i0 < n; i0 += 16) {
		int rows = n - i0 < 16 ? (int)(n - i0) : 16;
		for (int64_t c0 = 0; c0 < hd; c0 += 24) {
			int cw = hd - c0 < 24 ? (int)(hd - c0) : 24;
			for (int i = 0; i < rows; i++)
				row_to_buf(r + (i0 + i) * stride + c0, cw, vf[i], 24);
			for (int h = 0; h < cw; h += 3) {
				int nc = cw - h < 3 ? cw - h : 3;
				float *o = ot + (c0 + h) * QT;
				__m256 a[3][4];
				_Pragma("GCC unroll 3") for (int u = 0; u < 3; u++)
				        _Pragma("GCC unroll 4") for (int l = 0; l < 4; l++)
				                a[u][l] =
				                        u < nc ? _mm256_loadu_ps(o + u * QT + 8 * l)
				                               : _mm256_setzero_ps();
				for (int i = 0; i < rows; i++) {
					__m256 b0 = _mm256_set1_ps(vf[i][h]),
					       b1 = _mm256_set1_ps(vf[i][h + 1]),
					       b2 = _mm256_set1_ps(vf[i][h + 2]);
					_Pragma("GCC unroll 4") for (int l = 0; l < 4; l++)
					{
						__m256 p =
						        _mm256_loadu_ps(st + (i0 + i) * QT + 8 * l);
						a[0][l] = _mm256_fmadd_ps(b0, p, a[0][l]);
						a[1][l] = _mm256_fmadd_ps(b1, p, a[1][l]);
						a[2][l] = _mm256_fmadd_ps(b2, p, a[2][l]);
					}
				}
				_Pragma("GCC unroll 3") for (int u = 0; u < 3; u++) if (u < nc)
				        _Pragma("GCC unroll 4") for (int l = 0; l < 4; l++)
				                _mm256_storeu_ps(o + u * QT + 8 * l, a[u][l]);
			}
		}
	}
}

#undef QT

/* ---- the per-row steps of the forward pass (cpu.h's contracts) ---- */

/* cpu_rmsnorm's bits: squares exact in double, lane i % 8 (two ymm of 4
 * doubles), the lanes added 0 to 7, then x * scale * w in float. */
static void row_rmsnorm(const float *x, const float *w, float *y, int64_t n, float eps)
{
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		__m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
		__m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
		s0 = _mm256_add_pd(s0, _mm256_mul_pd(lo, lo));
		s1 = _mm256_add_pd(s1, _mm256_mul_pd(hi, hi));
	}
	double lane[8];
	_mm256_storeu_pd(lane, s0);
	_mm256_storeu_pd(lane + 4, s1);
	for (; i < n; i++) lane[i % 8] += (double)x[i] * (double)x[i];
	double ss = 0;
	for (int l = 0; l < 8; l++) ss += lane[l];
	float scale = 1.0f / sqrtf((float)(ss / (double)n) + eps);
	__m256 vs = _mm256_set1_ps(scale);
	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs),
		                                      _mm256_loadu_ps(w + i)));
	for (; i < n; i++) y[i] = x[i] * scale * w[i];
}

/* g / (1 + exp(-g)) * u in the reference's order; the last partial vector
 * through a padded copy, so every value takes the same polynomial. */
static void row_swiglu(float *g, const float *u, int64_t n)
{
	const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
	for (int64_t i = 0; i < n; i += 8) {
		float pg[8] = { 0 }, pu[8] = { 0 };
		int64_t w = n - i < 8 ? n - i : 8;
		float *gi = g + i;
		const float *ui = u + i;
		if (w < 8) {
			memcpy(pg, gi, (size_t)w * sizeof *pg);
			memcpy(pu, ui, (size_t)w * sizeof *pu);
			gi = pg, ui = pu;
		}
		__m256 x = _mm256_loadu_ps(gi);
		__m256 e = exp_ps(_mm256_xor_ps(x, sign));
		_mm256_storeu_ps(gi, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)),
		                                   _mm256_loadu_ps(ui)));
		if (w < 8) memcpy(g + i, pg, (size_t)w * sizeof *pg);
	}
}

static void row_to_f16(const float *x, uint16_t *h, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(h + i),
		                 _mm256_cvtps_ph(_mm256_loadu_ps(x + i),
		                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	for (; i < n; i++) h[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static void row_from_f16(const uint16_t *h, float *y, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
	for (; i < n; i++) y[i] = f16_to_f32(h[i]);
}

/* cpu_rope_apply: per pair (a, b) a c - b s and a s + b c, each product
 * rounded, then the sum (the reference's operations, so its bits). NeoX
 * pairs are 8 apart in two vectors; interleaved pairs are the lanes (2i,
 * 2i + 1) of one, against the angles duplicated per pair and the pair
 * swapped. */
static void row_rope(float *x, int n_heads, int head_dim, int n_rot, const float *cs,
                     const float *sn, bool neox)
{
	int half = n_rot / 2;
	const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
	const __m256 even_neg = _mm256_setr_ps(-0.0f, 0, -0.0f, 0, -0.0f, 0, -0.0f, 0);
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (int64_t)h * head_dim;
		int i = 0;
		if (neox) {
			for (; i + 8 <= half; i += 8) {
				__m256 a = _mm256_loadu_ps(v + i),
				       b = _mm256_loadu_ps(v + i + half);
				__m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
				_mm256_storeu_ps(v + i, _mm256_sub_ps(_mm256_mul_ps(a, c),
				                                      _mm256_mul_ps(b, s)));
				_mm256_storeu_ps(v + i + half, _mm256_add_ps(_mm256_mul_ps(a, s),
				                                             _mm256_mul_ps(b, c)));
			}
		} else {
			for (; i + 4 <= half; i += 4) {
				__m256 p = _mm256_loadu_ps(v + 2 * i);
				__m256 c = _mm256_permutevar8x32_ps(
				        _mm256_castps128_ps256(_mm_loadu_ps(cs + i)), dup);
				__m256 s = _mm256_permutevar8x32_ps(
				        _mm256_castps128_ps256(_mm_loadu_ps(sn + i)), dup);
				/* even lanes a c + (-(b s)), odd lanes b c + a s */
				__m256 sw = _mm256_permute_ps(p, 0xB1);
				__m256 t = _mm256_xor_ps(_mm256_mul_ps(sw, s), even_neg);
				_mm256_storeu_ps(v + 2 * i, _mm256_add_ps(_mm256_mul_ps(p, c), t));
			}
		}
		for (; i < half; i++) {
			int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
			float x0 = v[a], x1 = v[b];
			v[a] = x0 * cs[i] - x1 * sn[i];
			v[b] = x0 * sn[i] + x1 * cs[i];
		}
	}
}
