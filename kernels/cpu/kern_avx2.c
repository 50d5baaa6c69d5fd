/*
 * kern_avx2.c - AVX2/FMA/F16C kernels: kern_simd.h with the integer dot
 * product done by maddubs (u8 x s8 -> s16 pairs) and madd (-> s32), plus
 * kern_simd_k.h (BF16) and kern_simd_q.h (K-quants, Q4_1..Q5_1, IQ4). The
 * pragma lets this file use the instructions while the project builds for a
 * generic x86-64; kern.c only selects these after cpuid confirmed them.
 *
 * kern_avx2_vnni.c builds this file again with KERN_AVX2_VNNI: the same
 * kernels where the host has AVX-VNNI (Intel's client cores since Alder
 * Lake, which have no AVX-512): the panel tiles' products go through
 * vpdpbusd on ymm, one instruction where maddubs + madd (+ add) took two or
 * three. Both sum the same integers exactly, so the two sets give the same
 * bits. Each set is compiled in two files (KERN_AVX2_PART, below).
 */
#ifndef KERN_AVX2_PART
#define KERN_AVX2_PART 1
#endif

#if defined(__x86_64__)
#if KERN_AVX2_PART == 2
/* part 2 reads part 1's kernels, calls none of them, and emits only its own */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-const-variable"
#endif
#ifdef KERN_AVX2_VNNI
#pragma GCC target("avx2,fma,f16c,avxvnni")
#define SIMD_DOT_I8(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define KERN_AVX2_SET          cpu_kernels_avx2_vnni
#define KERN_AVX2_NAME         "avx2-vnni"
#define KERN_AVX2_Q8(name)     cpu_avx2_vnni_##name
#else
#pragma GCC target("avx2,fma,f16c")
#define SIMD_DOT_I8(acc, u, s)  \
	_mm256_add_epi32((acc), \
	                 _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define KERN_AVX2_SET      cpu_kernels_avx2
#define KERN_AVX2_NAME     "avx2"
#define KERN_AVX2_Q8(name) cpu_avx2_##name
#endif

#include "kern_simd.h"
#include "kern_simd_k.h"
#include "kern_simd_q.h"

#include <stddef.h>
#include <string.h>

#define P8_T        4 /* tokens per register tile */
#define P8_TILE2_IL 1 /* p16_tile_il: 8 tokens interleaved (prompts) */

#include "kern_avx2_q8.h"
#include "kern_p8.h"

static inline int32_t load_i32(const void *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* dot2_acc adds the u8 x s8 products of (u0, s0) and (u1, s1) to p's sums
 * (dot_acc those of one pair), dot2_widen turns the sums into int32 lanes
 * (dot_widen_scaled times a scale). Without VNNI the sums stay int16 over
 * a block (at most 16 products of 15 x 127: 30480, no saturation) and one
 * madd widens them; with it they are int32 from the start. */
#ifdef KERN_AVX2_VNNI
static inline __m256i dot2_acc(__m256i p, __m256i u0, __m256i s0, __m256i u1, __m256i s1)
{
	return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(p, u0, s0), u1, s1);
}

static inline __m256i dot2_widen(__m256i p)
{
	return p;
}

#define KEEP_CHAIN(v) ((void)0)

static inline __m256i dot_acc(__m256i p, __m256i u, __m256i s)
{
	return _mm256_dpbusd_avx_epi32(p, u, s);
}

/* sc: int16 pairs (c, c), c >= 0 */
static inline __m256i dot_widen_scaled(__m256i p, __m256i sc)
{
	return _mm256_mullo_epi32(p, _mm256_srli_epi32(sc, 16));
}
#else
static inline __m256i dot2_acc(__m256i p, __m256i u0, __m256i s0, __m256i u1, __m256i s1)
{
	return _mm256_add_epi16(
	        p, _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1)));
}

static inline __m256i dot2_widen(__m256i p)
{
	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* GCC reassociates a tile's int16 sums into trees over all of a block's
 * maddubs, whose results then spill to the stack: an empty asm on each
 * running sum keeps the chains (one core, Q4_0 tile, 64 tokens x 2048:
 * 190 -> 266 GFLOP/s; Q4_K 163 -> 248). vpdpbusd's chains need nothing. */
#define KEEP_CHAIN(v) __asm__("" : "+x"(v))

static inline __m256i dot_acc(__m256i p, __m256i u, __m256i s)
{
	return _mm256_add_epi16(p, _mm256_maddubs_epi16(u, s));
}

static inline __m256i dot_widen_scaled(__m256i p, __m256i sc)
{
	return _mm256_madd_epi16(p, sc);
}
#endif

/* Every token's data from one base pointer per token plus offsets shared by
 * all (the block's qs, the tail's arrays), so the tile's pointers fit the
 * general registers. */
#define TAIL_I32(base, off) (*(const int32_t *)((base) + (off)))
#define TAIL_F32(base, off) (*(const float *)((base) + (off)))

/* ---- Q4_0 repacked at load (repack.c): 8 rows x up to 4 tokens, any batch ---- */

/*
 * Panels made once at load (a ymm dword lane is a row) and kept 4-bit: a
 * panel vector holds 8 rows' dword kk, unpacked here into its low nibbles
 * (values 4kk..) and high nibbles (16 + 4kk..) with an and and a shift +
 * and, shared by the tile's tokens. One maddubs against a token's 4
 * activation bytes broadcast does 8 rows x 4 products; per token and block
 * of 8 rows: 8 maddubs, 7 int16 adds (16 products of at most 15 x 127:
 * 30480, no saturation), madd, the bias add (-8 sum(x): the +8 offset), a
 * convert and one FMA, ~20 ops per 256 products against ~8 per 32 for a
 * row at a time, so decode gains as much as prefill. Block sums are exact
 * integers; a token's 8 results are one FMA chain over the blocks in order,
 * whatever the batch size or the token's place in it, so every nt gives the
 * same bits. (Panels built per call, as before the packing, cost more than
 * they saved for the few tokens of a decode step.) The VNNI set sums in
 * int32 with vpdpbusd instead (dot2_acc): 8 instructions where 15 were.
 */
static inline __attribute__((always_inline)) void p8_tile(int g, bool pf, int64_t nb,
                                                          const char *panel, const char *x0,
                                                          size_t xs, float *y, int64_t ldy,
                                                          int rows)
{
	const __m256i m4 = _mm256_set1_epi8(0xF);
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *xb[P8_T];
	__m256 acc[P8_T];
#pragma GCC unroll 4
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q = panel + cpu_p8_quants_at(b, nb, 144);
		if (pf) p8_prefetch(panel, b, 144);
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
				p[j] = dot2_acc(
				        kk ? p[j] : _mm256_setzero_si256(), lo,
				        _mm256_set1_epi32(load_i32(xb[j] + oq + 4 * kk)), hi,
				        _mm256_set1_epi32(load_i32(xb[j] + oq + 16 + 4 * kk)));
				KEEP_CHAIN(p[j]);
			}
		}
		__m256 dwv = _mm256_cvtph_ps(
		        _mm_loadu_si128((const __m128i *)(panel + cpu_p8_scales_at(b, 144))));
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m256i s = _mm256_add_epi32(dot2_widen(p[j]),
			                             _mm256_set1_epi32(TAIL_I32(xb[j], ob) >> 4));
			acc[j] = _mm256_fmadd_ps(
			        _mm256_cvtepi32_ps(s),
			        _mm256_mul_ps(dwv, _mm256_set1_ps(TAIL_F32(xb[j], od))), acc[j]);
		}
	}
	p8_store(acc, g, rows, y, ldy);
}

/*
 * p8_tile's work for the 8 tokens of an interleaved tile (cpu_il_pack), two
 * panels in turn: every broadcast at a constant offset from one pointer,
 * the bias already >> 4, and each panel vector unpacked once for 8 tokens,
 * not 4. The 8 int16 sums, the nibbles and the broadcasts take the 16
 * registers; most float accumulators live on the stack (a load and a store
 * per token and block), which still beats two passes of 4 tokens (AVX-512
 * host, one core, 64 tokens x 2048: 266 -> 285-296 GFLOP/s). The same
 * integer sums and float steps as p8_tile: its bits.
 */
static inline __attribute__((always_inline)) void p16_tile_il(bool pf, int64_t nb,
                                                              const char *panel, size_t panel_bytes,
                                                              const char *il, float *y, int64_t ldy)
{
	const __m256i m4 = _mm256_set1_epi8(0xF);
	for (int h = 0; h < 2; h++, panel += panel_bytes, y += 8) {
		__m256 acc[8];
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
		for (int64_t b = 0; b < nb; b++) {
			const char *q = panel + cpu_p8_quants_at(b, nb, 144);
			const char *xi = il + (size_t)b * CPU_IL_BLK;
			if (pf) p8_prefetch(panel, b, 144);
			__m256i p[8];
#pragma GCC unroll 4
			for (int kk = 0; kk < 4; kk++) {
				__m256i raw = _mm256_loadu_si256((const __m256i *)(q + 32 * kk));
				__m256i lo = _mm256_and_si256(raw, m4);
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
#pragma GCC unroll 8
				for (int j = 0; j < 8; j++) {
					const char *x = xi + 32 * j + 4 * kk;
					p[j] = dot2_acc(kk ? p[j] : _mm256_setzero_si256(), lo,
					                _mm256_set1_epi32(load_i32(x)), hi,
					                _mm256_set1_epi32(load_i32(x + 16)));
					KEEP_CHAIN(p[j]);
				}
			}
			__m256 dwv = _mm256_cvtph_ps(_mm_loadu_si128(
			        (const __m128i *)(panel + cpu_p8_scales_at(b, 144))));
#pragma GCC unroll 8
			for (int j = 0; j < 8; j++) {
				__m256i s = _mm256_add_epi32(
				        dot2_widen(p[j]),
				        _mm256_set1_epi32(TAIL_I32(xi, CPU_IL_BIAS4 + 4 * j)));
				__m256 dx = _mm256_set1_ps(TAIL_F32(xi, CPU_IL_D + 4 * j));
				acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
				                         _mm256_mul_ps(dwv, dx), acc[j]);
			}
		}
		p8_store(acc, 8, 8, y, ldy);
	}
}

/* ---- Q8_0 repacked at load (repack.c): 8 rows x up to 4 tokens ---- */

/*
 * Signed weights against signed activations, the usual way round maddubs's
 * unsigned operand: |w| (once per vector, shared by the tile's tokens)
 * times x with w's sign, pairs of products (at most 2 x 128 x 127: no
 * saturation) widened by madd and summed in int32: the exact sum(w x), so
 * with kern_avx512.c's float step these are the same bits as its tiles'.
 */
static inline __attribute__((always_inline)) void q8p_tile(int g, bool pf, int64_t nb,
                                                           const char *panel, const char *x0,
                                                           size_t xs, float *y, int64_t ldy,
                                                           int rows)
{
	const size_t toff = cpu_q8_tail_offset(nb);
	const char *xb[P8_T];
	__m256 acc[P8_T];
#pragma GCC unroll 4
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nb; b++) {
		const char *q = panel + cpu_p8_quants_at(b, nb, 272);
		if (pf) p8_prefetch(panel, b, 272);
		size_t oq = (size_t)b * 34 + 2, od = toff + 4 * (size_t)b + 4 * (size_t)nb;
		__m256i p[P8_T];
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) p[j] = _mm256_setzero_si256();
#pragma GCC unroll 8
		for (int kk = 0; kk < 8; kk++) {
			__m256i wq = _mm256_loadu_si256((const __m256i *)(q + 32 * kk));
			__m256i aw = _mm256_abs_epi8(wq);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i xv = _mm256_set1_epi32(load_i32(xb[j] + oq + 4 * kk));
				p[j] = SIMD_DOT_I8(p[j], aw, _mm256_sign_epi8(xv, wq));
			}
		}
		__m256 dwv = _mm256_cvtph_ps(
		        _mm_loadu_si128((const __m128i *)(panel + cpu_p8_scales_at(b, 272))));
#pragma GCC unroll 4
		for (int j = 0; j < g; j++)
			acc[j] = _mm256_fmadd_ps(
			        _mm256_cvtepi32_ps(p[j]),
			        _mm256_mul_ps(dwv, _mm256_set1_ps(TAIL_F32(xb[j], od))), acc[j]);
	}
	p8_store(acc, g, rows, y, ldy);
}

#define P8_GEMM    gemm_q8_0_p8
#define P8_TILE_FN q8p_tile
#include "kern_p8_gemm.h"

/* ---- the panel kernels of kern_avx2_k.c / kern_avx2_vnni_k.c ---- */

/*
 * As in kern_avx512.c: the K-quant, IQ4_XS and Q5_0 / Q5_1 panel kernels
 * below are compiled in a second file that builds this one again with
 * KERN_AVX2_PART 2 (kern_avx2_k.c, kern_avx2_vnni_k.c), so that two cores
 * compile the set at once; part 2 emits only these, under external names
 * the table at the end of part 1 takes.
 */
#ifdef KERN_AVX2_VNNI
#define KERN_AVX2_EXT(f) cpu_avx2_vnni_##f
#else
#define KERN_AVX2_EXT(f) cpu_avx2_##f
#endif
#define gemm_q4_k_p8   KERN_AVX2_EXT(gemm_q4_k_p8)
#define gemm_q5_k_p8   KERN_AVX2_EXT(gemm_q5_k_p8)
#define gemm_q6_k_p8   KERN_AVX2_EXT(gemm_q6_k_p8)
#define gemm_iq4_xs_p8 KERN_AVX2_EXT(gemm_iq4_xs_p8)
#define gemm_q5_0_p8   KERN_AVX2_EXT(gemm_q5_0_p8)
#define gemm_q5_1_p8   KERN_AVX2_EXT(gemm_q5_1_p8)
#define KERN_AVX2_GEMM_DECL(f)                                                       \
	void f(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x, \
	       size_t x_stride, int64_t nt, float *y, int64_t ldy)
KERN_AVX2_GEMM_DECL(gemm_q4_k_p8);
KERN_AVX2_GEMM_DECL(gemm_q5_k_p8);
KERN_AVX2_GEMM_DECL(gemm_q6_k_p8);
KERN_AVX2_GEMM_DECL(gemm_iq4_xs_p8);
KERN_AVX2_GEMM_DECL(gemm_q5_0_p8);
KERN_AVX2_GEMM_DECL(gemm_q5_1_p8);

#if KERN_AVX2_PART == 2
#define P8_GEMM_LINKAGE /* external: part 1's table takes them */

/* ---- Q4_K and Q5_K repacked at load (repack.c): 8 rows x up to 4 tokens, any batch ---- */

/*
 * A panel vector holds 8 rows' dword kk of a 32-byte quant group c: its
 * low nibbles are sub-block 2c (values 4kk..), its high nibbles sub-block
 * 2c + 1, each one maddubs against the token's 4 activation bytes
 * broadcast (8 rows x 4 products), 8 of them summed in int16 (at most 16
 * products of 15 x 127: 30480, no saturation). madd with the sub-block's
 * scale in both halves of each row's lane gives scale x sum in int32; the
 * min term is 8 madds of (min, min) against the activation's pairs of
 * 16-value sums. Per super-block and token: 64 maddubs, ~60 int adds, 16
 * madds and the reference's 7 float ops (q4k_p8_step), against decoding
 * every row's super-block for each group of 4 tokens before. The VNNI set
 * sums the sub-blocks in int32 (vpdpbusd) and multiplies by the scale once.
 *
 * Q5_K (q5): the nibbles take their fifth bits from the qh word of the
 * same values (q5k_p8_levels: a shift, an and and an or, shared by the
 * tile's tokens). A level is then at most 31, a maddubs pair at most
 * 2 x 31 x 127 = 7874, so an int16 sum holds 4 of them (31496), not a
 * sub-block's 8: the sub-block is widened by its scale in two halves
 * (K5_RUN); vpdpbusd's int32 sums take all 8. The same integers and float
 * steps as the reference's gemm_q4_k / gemm_q5_k: their bits.
 */
#ifdef KERN_AVX2_VNNI
#define K5_RUN 8
#else
#define K5_RUN 4
#endif

static inline __attribute__((always_inline)) void k4_tile(bool q5, int g, bool pf, int64_t nsb,
                                                          const char *panel, const char *x0,
                                                          size_t xs, float *y, int64_t ldy,
                                                          int rows)
{
	const size_t sbb = q5 ? Q5K_P8_SB : Q4K_P8_SB, oqs = q5 ? 384 : 128;
	const int run = q5 ? K5_RUN : 8; /* products summed before widening */
	const __m256i m4 = _mm256_set1_epi8(0xF);
	const char *xb[P8_T];
	__m256 acc[P8_T];
#pragma GCC unroll 4
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *sb = panel + (size_t)b * sbb;
		if (pf) p8_prefetch(panel, b, sbb); /* decode streams the panels from DRAM */
		struct q4k_p8_sm sm = q4k_p8_scales(sb);
		size_t ox = (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, qs);
		size_t obs =
		        (size_t)b * sizeof(struct block_q8_k) + offsetof(struct block_q8_k, bsums);
		__m256i isum[P8_T];
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			__m256i scl = q4k_p8_i16x2(sm.sc[c / 2], (2 * c) % 4);
			__m256i sch = q4k_p8_i16x2(sm.sc[c / 2], (2 * c + 1) % 4);
			__m256i pl[P8_T], ph[P8_T];
			/* read again for each c: GCC would keep the 8 qh vectors
			 * over the super-block and spill the sums (VNNI nt=16
			 * 150 -> 208 GFLOP/s) */
			const char *qh8 = sb + 128;
			if (q5) __asm__ volatile("" : "+r"(qh8));
#pragma GCC unroll 8
			for (int kk = 0; kk < 8; kk++) {
				__m256i raw = _mm256_loadu_si256(
				        (const __m256i *)(sb + oqs + 256 * c + 32 * kk));
				__m256i lo = _mm256_and_si256(raw, m4);
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
				if (q5) {
					__m256i qh = _mm256_loadu_si256(
					        (const __m256i *)(qh8 + 32 * kk));
					lo = q5k_p8_levels(lo, qh, 2 * c);
					hi = q5k_p8_levels(hi, qh, 2 * c + 1);
				}
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					const char *q = xb[j] + ox + 64 * c + 4 * kk;
					__m256i z = _mm256_setzero_si256();
					pl[j] = dot_acc(kk % run ? pl[j] : z, lo,
					                _mm256_set1_epi32(load_i32(q)));
					ph[j] = dot_acc(kk % run ? ph[j] : z, hi,
					                _mm256_set1_epi32(load_i32(q + 32)));
					KEEP_CHAIN(pl[j]);
					KEEP_CHAIN(ph[j]);
					if (kk % run < run - 1) continue;
					__m256i s = _mm256_add_epi32(dot_widen_scaled(pl[j], scl),
					                             dot_widen_scaled(ph[j], sch));
					isum[j] = c || kk >= run ? _mm256_add_epi32(isum[j], s) : s;
				}
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < g; j++) {
			__m256i ms = _mm256_setzero_si256();
#pragma GCC unroll 8
			for (int s = 0; s < 8; s++)
				ms = _mm256_add_epi32(
				        ms, _mm256_madd_epi16(q4k_p8_i16x2(sm.mn[s / 4], s % 4),
				                              _mm256_set1_epi32(load_i32(
				                                      xb[j] + obs + 4 * s))));
			acc[j] = q4k_p8_step(acc[j], sb,
			                     TAIL_F32(xb[j], (size_t)b * sizeof(struct block_q8_k)),
			                     isum[j], ms);
		}
	}
	p8_store(acc, g, rows, y, ldy);
}

static inline __attribute__((always_inline)) void q4k_tile(int g, bool pf, int64_t nsb,
                                                           const char *panel, const char *x0,
                                                           size_t xs, float *y, int64_t ldy,
                                                           int rows)
{
	k4_tile(false, g, pf, nsb, panel, x0, xs, y, ldy, rows);
}

static inline __attribute__((always_inline)) void q5k_tile(int g, bool pf, int64_t nsb,
                                                           const char *panel, const char *x0,
                                                           size_t xs, float *y, int64_t ldy,
                                                           int rows)
{
	k4_tile(true, g, pf, nsb, panel, x0, xs, y, ldy, rows);
}

#define P8_GEMM    gemm_q4_k_p8
#define P8_TILE_FN q4k_tile
#define P8_BLOCK   QK_K
#include "kern_p8_gemm.h"

#define P8_GEMM    gemm_q5_k_p8
#define P8_TILE_FN q5k_tile
#define P8_BLOCK   QK_K
#include "kern_p8_gemm.h"

#include "kern_p8_q6k.h"

/* ---- IQ4_XS repacked at load (repack.c): 8 rows x up to 4 tokens ---- */

/*
 * kern_avx512.c's iq4xs_tile on AVX2: a sub-block's 32 levels of 8 rows
 * are 4 qs vectors (low and high nibbles) looked up by vpshufb. With VNNI
 * the lookup gives level + 128 for vpdpbusd, whose sum starts at
 * -128 x sum(x) (iq4xs_p8_bias), as there; maddubs would saturate on
 * those (2 x 241 x 127), so without VNNI it takes |level| against x with
 * the level's sign (vpsignb; a pair at most 2 x 127 x 127 = 32258) and
 * each product goes to int32 at once (madd). Either way the sub-block's
 * exact sum(level x), times ls - 32 (vpmulld), summed over the 8: the
 * reference's sumi, then its float steps (iq4xs_p8_step): its bits.
 */
static inline __attribute__((always_inline)) void iq4xs_tile(int g, bool pf, int64_t nsb,
                                                             const char *panel, const char *x0,
                                                             size_t xs, float *y, int64_t ldy,
                                                             int rows)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F);
#ifdef KERN_AVX2_VNNI
	const __m256i tab = iq4xs_p8_table();
#else
	const __m256i tab =
	        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tensor_iq4_values));
#endif
	const char *xb[P8_T];
	__m256 acc[P8_T];
#pragma GCC unroll 4
	for (int j = 0; j < P8_T; j++) {
		acc[j] = _mm256_setzero_ps();
		xb[j] = x0 + (size_t)j * xs;
	}
	for (int64_t b = 0; b < nsb; b++) {
		const char *sb = panel + (size_t)b * IQ4XS_P8_SB;
		if (pf) p8_prefetch(panel, b, IQ4XS_P8_SB); /* decode streams the panels */
		__m256i sl = _mm256_loadu_si256((const __m256i *)(sb + 32));
		__m256i sh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(sb + 16)));
		size_t ob = (size_t)b * sizeof(struct block_q8_k);
		size_t ox = ob + offsetof(struct block_q8_k, qs);
		__m256i isum[P8_T];
#pragma GCC unroll 8
		for (int s = 0; s < 8; s++) {
			__m256i p[P8_T];
#pragma GCC unroll 4
			for (int j = 0; j < g; j++)
#ifdef KERN_AVX2_VNNI
				p[j] = _mm256_set1_epi32(iq4xs_p8_bias(xb[j] + ob, s));
#else
				p[j] = _mm256_setzero_si256();
#endif
#pragma GCC unroll 8
			for (int k = 0; k < 8; k++) { /* word k / 2; the high nibbles at odd k */
				__m256i raw = _mm256_loadu_si256(
				        (const __m256i *)(sb + 64 + 128 * s + 32 * (k / 2)));
				__m256i v = _mm256_shuffle_epi8(
				        tab, k % 2 ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4)
				                   : _mm256_and_si256(raw, m4));
#ifndef KERN_AVX2_VNNI
				__m256i av = _mm256_abs_epi8(v);
#endif
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					__m256i xv = _mm256_set1_epi32(load_i32(
					        xb[j] + ox + 32 * s + 16 * (k % 2) + 4 * (k / 2)));
#ifdef KERN_AVX2_VNNI
					p[j] = SIMD_DOT_I8(p[j], v, xv);
#else
					p[j] = SIMD_DOT_I8(p[j], av, _mm256_sign_epi8(xv, v));
#endif
				}
			}
			__m256i sc = iq4xs_p8_scale(sl, sh, s);
#pragma GCC unroll 4
			for (int j = 0; j < g; j++) {
				__m256i v = _mm256_mullo_epi32(p[j], sc);
				isum[j] = s ? _mm256_add_epi32(isum[j], v) : v;
			}
		}
#pragma GCC unroll 4
		for (int j = 0; j < g; j++)
			acc[j] = iq4xs_p8_step(acc[j], sb, TAIL_F32(xb[j], ob), isum[j]);
	}
	p8_store(acc, g, rows, y, ldy);
}

#define P8_GEMM    gemm_iq4_xs_p8
#define P8_TILE_FN iq4xs_tile
#define P8_BLOCK   QK_K
#include "kern_p8_gemm.h"

/* ---- Q5_0 and Q5_1 repacked at load (repack.c): 8 rows x up to 4 tokens ---- */

/* Four maddubs summed in int16 (each pair of products at most 2 x 31 x
 * 127: four pairs stay below 32767), then one madd to int32: the panel
 * levels are at most 31. With VNNI, four vpdpbusd. */
#ifdef KERN_AVX2_VNNI
#define SIMD_DOT4_I8(acc, u0, s0, u1, s1, u2, s2, u3, s3) \
	SIMD_DOT_I8(SIMD_DOT_I8(SIMD_DOT_I8(SIMD_DOT_I8(acc, u0, s0), u1, s1), u2, s2), u3, s3)
#else
#define SIMD_DOT4_I8(acc, u0, s0, u1, s1, u2, s2, u3, s3)                                          \
	_mm256_add_epi32((acc),                                                                    \
	                 _mm256_madd_epi16(                                                        \
	                         _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u0, s0),   \
	                                                           _mm256_maddubs_epi16(u1, s1)),  \
	                                          _mm256_add_epi16(_mm256_maddubs_epi16(u2, s2),   \
	                                                           _mm256_maddubs_epi16(u3, s3))), \
	                         _mm256_set1_epi16(1)))
#endif

#include "kern_p8_q5.h"
#undef P8_GEMM_LINKAGE
#endif /* KERN_AVX2_PART == 2 */
/* the table's fields keep these names */
#undef gemm_q4_k_p8
#undef gemm_q5_k_p8
#undef gemm_q6_k_p8
#undef gemm_iq4_xs_p8
#undef gemm_q5_0_p8
#undef gemm_q5_1_p8

#if KERN_AVX2_PART == 1

const struct cpu_kernels KERN_AVX2_SET = {
	.name = KERN_AVX2_NAME,
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
	.gemm_q4_0 = gemm_q4_0, /* unpacked rows (the model's are packed: gemm_q4_0_p8) */
	.gemm_q4_0_p8 = gemm_q4_0_p8,
	.gemm_q4_0_p8il = gemm_q4_0_p8il,
	.gemm_q4_k_p8 = KERN_AVX2_EXT(gemm_q4_k_p8),
	.gemm_q5_k_p8 = KERN_AVX2_EXT(gemm_q5_k_p8),
	.gemm_q6_k_p8 = KERN_AVX2_EXT(gemm_q6_k_p8),
	.gemm_iq4_xs_p8 = KERN_AVX2_EXT(gemm_iq4_xs_p8),
	.gemm_q8_0_p8 = gemm_q8_0_p8,
	.gemm_q5_0_p8 = KERN_AVX2_EXT(gemm_q5_0_p8),
	.gemm_q5_1_p8 = KERN_AVX2_EXT(gemm_q5_1_p8),
	.dot_f32 = attn_dot,
	.axpy_f32 = attn_axpy,
	.dot_f16 = attn_dot_f16,
	.axpy_f16 = attn_axpy_f16,
	.score_f32 = attn_score_f32,
	.mix_f32 = attn_mix_f32,
	.score_f16 = attn_score_f16,
	.mix_f16 = attn_mix_f16,
	.score_q8 = KERN_AVX2_Q8(score_q8), /* kern_avx2_q8.c */
	.mix_q8 = KERN_AVX2_Q8(mix_q8),
	.softmax = attn_softmax,
	.attn_qb = ATTN_QB,
	.score_t_f16 = simd_score_t_f16,
	.softmax_t = simd_softmax_t,
	.mix_t_f16 = simd_mix_t_f16,
	.score_t_q8 = KERN_AVX2_Q8(score_t_q8), /* kern_avx2_q8.c */
	.mix_t_q8 = KERN_AVX2_Q8(mix_t_q8),
	.rmsnorm = row_rmsnorm,
	.swiglu = row_swiglu,
	.to_f16 = row_to_f16,
	.from_f16 = row_from_f16,
	.rope = row_rope,
};
#endif /* KERN_AVX2_PART == 1 */
#elif KERN_AVX2_PART == 1
#include "cpu.h"
#ifdef KERN_AVX2_VNNI
const struct cpu_kernels cpu_kernels_avx2_vnni = { .name = "avx2-vnni" };
#else
const struct cpu_kernels cpu_kernels_avx2 = { .name = "avx2" };
#endif
#endif
