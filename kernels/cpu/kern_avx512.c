/*
 * kern_avx512.c - AVX-512 VNNI kernels: kern_simd.h with vpdpbusd (u8 x s8
 * summed 4 at a time into s32, no int16 saturation step), on ymm registers
 * (AVX512-VL), which keeps the clock up and halves the shuffles of 34-byte
 * blocks. Selected at run time by kern.c.
 */
#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")

#define SIMD_DOT_I8(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))

#include "kern_simd.h"

#include <string.h>

/* ---- prefill: 16 rows x 8 tokens register tiles on zmm ---- */

/*
 * With several tokens the integer work dominates, so weights are re-laid out
 * per call into panels where a zmm lane is a row: panel dword [kk][row] holds
 * bytes 4kk..4kk+3 of that row's block, as unsigned bytes (w + 128). One
 * vpdpbusd with the token's 4 activation bytes broadcast from memory then
 * does 16 rows x 4 products, and a block (8 of them) gives 16 rows' sums at
 * once: sum((w + 128) x) - 128 sum(x), the last term precomputed per token
 * and block. A panel of 16 rows is built once per call and serves every
 * token of the call.
 */
#define PT 8 /* tokens per register tile */

struct panel_blk {
	uint8_t q[8][64]; /* [kk][row * 4 + byte] */
	float dw[16];
};

static void panel_build(uint32_t type, const char *w, size_t w_stride, int64_t nb,
                        struct panel_blk *pb)
{
	for (int64_t b = 0; b < nb; b++)
		for (int i = 0; i < 16; i++) {
			uint8_t q[32];
			uint16_t d;
			if (type == TENSOR_TYPE_Q8_0) {
				const struct block_q8_0 *blk =
				        (const struct block_q8_0 *)(w + i * w_stride) + b;
				d = blk->d;
				_mm256_storeu_si256(
				        (__m256i *)q,
				        _mm256_xor_si256(
				                _mm256_loadu_si256((const __m256i *)blk->qs),
				                _mm256_set1_epi8((char)0x80)));
			} else {
				const struct block_q4_0 *blk =
				        (const struct block_q4_0 *)(w + i * w_stride) + b;
				d = blk->d;
				/* q - 8 + 128 = q + 120 */
				__m128i raw = _mm_loadu_si128((const __m128i *)blk->qs),
				        m4 = _mm_set1_epi8(0xF);
				__m128i e = _mm_set1_epi8(120);
				_mm_storeu_si128((__m128i *)q,
				                 _mm_add_epi8(_mm_and_si128(raw, m4), e));
				_mm_storeu_si128(
				        (__m128i *)(q + 16),
				        _mm_add_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), e));
			}
			pb[b].dw[i] = f16_to_f32(d);
			for (int kk = 0; kk < 8; kk++) memcpy(&pb[b].q[kk][i * 4], q + 4 * kk, 4);
		}
}

static inline __attribute__((always_inline)) void
panel_tile(int g, int64_t nb, const struct panel_blk *pb, const struct block_q8_0 *const *x,
           const float *dx, const int32_t *corr, float *y, int64_t ldy)
{
	__m512 acc[PT];
	for (int j = 0; j < PT; j++) acc[j] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		const struct panel_blk *P = &pb[b];
		__m512i wk[8];
		for (int kk = 0; kk < 8; kk++) wk[kk] = _mm512_load_si512(P->q[kk]);
		__m512 dwv = _mm512_load_ps(P->dw);
		for (int j = 0; j < g; j++) {
			const int8_t *xq = x[j][b].qs;
			__m512i p = _mm512_setzero_si512();
			for (int kk = 0; kk < 8; kk++) {
				int32_t xd;
				memcpy(&xd, xq + 4 * kk, 4);
				p = _mm512_dpbusd_epi32(p, wk[kk], _mm512_set1_epi32(xd));
			}
			p = _mm512_sub_epi32(p, _mm512_set1_epi32(corr[j * MAX_NB + b]));
			acc[j] = _mm512_fmadd_ps(
			        _mm512_cvtepi32_ps(p),
			        _mm512_mul_ps(dwv, _mm512_set1_ps(dx[j * MAX_NB + b])), acc[j]);
		}
	}
	for (int j = 0; j < g; j++) _mm512_storeu_ps(y + j * ldy, acc[j]);
}

static void gemm_panel(uint32_t type, int64_t n, const void *w, size_t w_stride, int64_t nr,
                       const void *x, size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	int64_t nb = n / 32;
	/* ~330 KB of stack: fine for the caller and the pool's threads (8 MB stacks). */
	_Alignas(64) struct panel_blk pb[MAX_NB];
	_Alignas(64) float dx[PT * MAX_NB];
	_Alignas(64) int32_t corr[PT * MAX_NB];
	for (int64_t r0 = 0; r0 + 16 <= nr; r0 += 16) {
		panel_build(type, (const char *)w + r0 * w_stride, w_stride, nb, pb);
		for (int64_t t0 = 0; t0 < nt; t0 += PT) {
			int g = nt - t0 < PT ? (int)(nt - t0) : PT;
			const struct block_q8_0 *xs[PT];
			for (int j = 0; j < g; j++) {
				xs[j] = (const struct block_q8_0 *)((const char *)x +
				                                    (t0 + j) * x_stride);
				for (int64_t b = 0; b < nb; b++) {
					__m256i xq =
					        _mm256_loadu_si256((const __m256i *)xs[j][b].qs);
					__m256i s = _mm256_dpbusd_epi32(
					        _mm256_setzero_si256(),
					        _mm256_set1_epi8((char)0x80), xq);
					__m128i h = _mm_add_epi32(_mm256_castsi256_si128(s),
					                          _mm256_extracti128_si256(s, 1));
					h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
					h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
					corr[j * MAX_NB + b] = _mm_cvtsi128_si32(h);
					dx[j * MAX_NB + b] = f16_to_f32(xs[j][b].d);
				}
			}
			float *yt = y + t0 * ldy + r0;
			if (g == PT)
				panel_tile(PT, nb, pb, xs, dx, corr, yt, ldy);
			else
				for (int j = 0; j < g; j++) /* the token tail: one at a time */
					panel_tile(1, nb, pb, xs + j, dx + j * MAX_NB,
					           corr + j * MAX_NB, yt + j * ldy, ldy);
		}
	}
	int64_t done = nr / 16 * 16;
	if (done < nr) {
		cpu_gemm_fn f = type == TENSOR_TYPE_Q8_0 ? gemm_q8_0 : gemm_q4_0;
		f(n, (const char *)w + done * w_stride, w_stride, nr - done, x, x_stride, nt,
		  y + done, ldy);
	}
}

/* Few tokens (decode): the row-streaming kernels; several: the panels. */
static void gemm_q8_0_512(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                          size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	if (nt >= PT && nr >= 16 && n / 32 <= MAX_NB)
		gemm_panel(TENSOR_TYPE_Q8_0, n, w, w_stride, nr, x, x_stride, nt, y, ldy);
	else
		gemm_q8_0(n, w, w_stride, nr, x, x_stride, nt, y, ldy);
}

static void gemm_q4_0_512(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                          size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	if (nt >= PT && nr >= 16 && n / 32 <= MAX_NB)
		gemm_panel(TENSOR_TYPE_Q4_0, n, w, w_stride, nr, x, x_stride, nt, y, ldy);
	else
		gemm_q4_0(n, w, w_stride, nr, x, x_stride, nt, y, ldy);
}

/* F16 with several tokens: 4 rows x 4 tokens of zmm accumulators, each
 * widened weight vector used 4 times and each activation vector 4 times.
 * Token groups are the outer loop so their activations stay in L1 while
 * the rows stream from L2. */
static inline __attribute__((always_inline)) void
f16_tile(int g, int64_t n, const uint16_t *const *w, const float *const *x, float out[4][4])
{
	__m512 a[4][4];
	for (int r = 0; r < 4; r++)
		for (int j = 0; j < 4; j++) a[r][j] = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 v[4];
		for (int r = 0; r < 4; r++)
			v[r] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w[r] + i)));
		for (int j = 0; j < g; j++) {
			__m512 xv = _mm512_loadu_ps(x[j] + i);
			for (int r = 0; r < 4; r++) a[r][j] = _mm512_fmadd_ps(v[r], xv, a[r][j]);
		}
	}
	for (int r = 0; r < 4; r++)
		for (int j = 0; j < g; j++) {
			float sum = _mm512_reduce_add_ps(a[r][j]);
			for (int64_t k = i; k < n; k++) sum += f16_to_f32(w[r][k]) * x[j][k];
			out[r][j] = sum;
		}
}

static void gemm_f16_512(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                         size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	if (nt < 4) {
		gemm_f16(n, w, w_stride, nr, x, x_stride, nt, y, ldy);
		return;
	}
	int64_t nr4 = nr / 4 * 4;
	for (int64_t t0 = 0; t0 < nt; t0 += 4) {
		int g = nt - t0 < 4 ? (int)(nt - t0) : 4;
		const float *xs[4];
		for (int j = 0; j < g; j++)
			xs[j] = (const float *)((const char *)x + (t0 + j) * x_stride);
		for (int64_t r = 0; r < nr4; r += 4) {
			const uint16_t *ws[4];
			float o[4][4];
			for (int k = 0; k < 4; k++)
				ws[k] = (const uint16_t *)((const char *)w + (r + k) * w_stride);
			switch (g) {
			case 4: f16_tile(4, n, ws, xs, o); break;
			case 3: f16_tile(3, n, ws, xs, o); break;
			case 2: f16_tile(2, n, ws, xs, o); break;
			default: f16_tile(1, n, ws, xs, o); break;
			}
			for (int j = 0; j < g; j++)
				for (int k = 0; k < 4; k++) y[(t0 + j) * ldy + r + k] = o[k][j];
		}
	}
	if (nr4 < nr)
		gemm_f16(n, (const char *)w + nr4 * w_stride, w_stride, nr - nr4, x, x_stride, nt,
		         y + nr4, ldy);
}

const struct cpu_kernels cpu_kernels_avx512 = {
	.name = "avx512-vnni",
	.act = { NULL, act_q8_0 },
	.gemm_f32 = gemm_f32,
	.gemm_f16 = gemm_f16_512,
	.gemm_q8_0 = gemm_q8_0_512,
	.gemm_q4_0 = gemm_q4_0_512,
	.dot_f32 = attn_dot,
	.axpy_f32 = attn_axpy,
	.dot_f16 = attn_dot_f16,
	.axpy_f16 = attn_axpy_f16,
};
#else
#include "cpu.h"
/* F16 with several tokens: 2 rows x 4 tokens of zmm accumulators, each
 * widened weight vector used 4 times and each activation vector twice. */
static inline __attribute__((always_inline)) void f16_tile(int g, int64_t n, const uint16_t *w0,
                                                           const uint16_t *w1,
                                                           const float *const *x, float *out0,
                                                           float *out1)
{
	__m512 a0[4], a1[4];
	for (int j = 0; j < 4; j++) a0[j] = a1[j] = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 v0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w0 + i)));
		__m512 v1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w1 + i)));
		for (int j = 0; j < g; j++) {
			__m512 xv = _mm512_loadu_ps(x[j] + i);
			a0[j] = _mm512_fmadd_ps(v0, xv, a0[j]);
			a1[j] = _mm512_fmadd_ps(v1, xv, a1[j]);
		}
	}
	for (int j = 0; j < g; j++) {
		float s0 = _mm512_reduce_add_ps(a0[j]), s1 = _mm512_reduce_add_ps(a1[j]);
		for (int64_t k = i; k < n; k++) {
			s0 += f16_to_f32(w0[k]) * x[j][k];
			s1 += f16_to_f32(w1[k]) * x[j][k];
		}
		out0[j] = s0, out1[j] = s1;
	}
}

static void gemm_f16_512(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                         size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	if (nt < 4) {
		gemm_f16(n, w, w_stride, nr, x, x_stride, nt, y, ldy);
		return;
	}
	int64_t r = 0;
	for (; r + 2 <= nr; r += 2) {
		const uint16_t *w0 = (const uint16_t *)((const char *)w + r * w_stride);
		const uint16_t *w1 = (const uint16_t *)((const char *)w + (r + 1) * w_stride);
		for (int64_t t0 = 0; t0 < nt; t0 += 4) {
			int g = nt - t0 < 4 ? (int)(nt - t0) : 4;
			const float *xs[4];
			float o0[4], o1[4];
			for (int j = 0; j < g; j++)
				xs[j] = (const float *)((const char *)x + (t0 + j) * x_stride);
			switch (g) {
			case 4: f16_tile(4, n, w0, w1, xs, o0, o1); break;
			case 3: f16_tile(3, n, w0, w1, xs, o0, o1); break;
			case 2: f16_tile(2, n, w0, w1, xs, o0, o1); break;
			default: f16_tile(1, n, w0, w1, xs, o0, o1); break;
			}
			for (int j = 0; j < g; j++) {
				y[(t0 + j) * ldy + r] = o0[j];
				y[(t0 + j) * ldy + r + 1] = o1[j];
			}
		}
	}
	if (r < nr)
		gemm_f16(n, (const char *)w + r * w_stride, w_stride, nr - r, x, x_stride, nt,
		         y + r, ldy);
}

const struct cpu_kernels cpu_kernels_avx512 = { .name = "avx512-vnni" };
#endif
