/*
 * kern_simd_k.h - 256-bit kernels for BF16, Q4_K and Q6_K weights against
 * float activations, included after kern_simd.h by kern_avx2.c and
 * kern_avx512.c (same target pragma, same TG token groups).
 *
 * They compute what the reference computes (kern_ref.c: the weights
 * dequantized as quant.c does, dotted with float activations), so results
 * differ from it only by float rounding: the dequantization is folded into
 * the dot product instead of materialized. For Q4_K, x . (d sc q - dmin m)
 * over a 32-element sub-block is d sc (x . q) - dmin m sum(x): the sums of x
 * per sub-block are computed once per call for each token. For Q6_K, each
 * 16-element group's x . (q - 32) is scaled by d * scale. Integer weights
 * are widened to float 8 at a time (vpmovzx/sx + cvtdq2ps): these kernels
 * are bound by that work (~10 GB/s a core), well above the reference.
 */

#define K_MAX_SUB 512 /* 32-element sub-blocks per row in one piece (rows up to 16384) */

/* ---- BF16: widen by a 16-bit shift, then the F32 kernel's loop ---- */

static inline float gemm_bf16_scalar(uint16_t h)
{
	return tensor_bf16_to_f32(h);
}

#define LOAD_BF16(i)                           \
	_mm256_castsi256_ps(_mm256_slli_epi32( \
	        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(w + (i)))), 16))
GEMM_FLOAT(gemm_bf16, uint16_t, LOAD_BF16)

/* 32 unsigned bytes -> four vectors of 8 floats, in element order. */
static inline __attribute__((always_inline)) void u8x32_to_ps(__m256i v, __m256 f[4])
{
	__m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
	f[0] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo));
	f[1] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
	f[2] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi));
	f[3] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
}

/* ---- Q4_K ---- */

static inline __attribute__((always_inline)) void
q4_k_row(int g, int64_t nblk, const struct block_q4_k *w, const float *const *x,
         const float (*xsum)[K_MAX_SUB], float *out)
{
	const __m256i m4 = _mm256_set1_epi8(0xF);
	__m256 acc[TG];
	float mins[TG];
	for (int j = 0; j < TG; j++) acc[j] = _mm256_setzero_ps(), mins[j] = 0;
	for (int64_t b = 0; b < nblk; b++) {
		const struct block_q4_k *blk = &w[b];
		_mm_prefetch((const char *)blk + PREFETCH_BYTES, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 128, _MM_HINT_T0);
		float d = f16_to_f32(blk->d), dmin = f16_to_f32(blk->dmin);
		for (int c = 0; c < 4; c++) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(blk->qs + 32 * c));
			__m256i half[2] = { _mm256_and_si256(v, m4),
				            _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) };
			for (int h = 0; h < 2; h++) {
				int s = 2 * c + h;
				uint8_t sc, m;
				tensor_q4_k_scale_min(blk->scales, s, &sc, &m);
				__m256 f[4];
				u8x32_to_ps(half[h], f);
				__m256 ds = _mm256_set1_ps(d * (float)sc);
				float mn = dmin * (float)m;
				int64_t e = b * 256 + 32 * s;
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					__m256 t = _mm256_mul_ps(f[0], _mm256_loadu_ps(x[j] + e));
					t = _mm256_fmadd_ps(f[1], _mm256_loadu_ps(x[j] + e + 8), t);
					t = _mm256_fmadd_ps(f[2], _mm256_loadu_ps(x[j] + e + 16),
					                    t);
					t = _mm256_fmadd_ps(f[3], _mm256_loadu_ps(x[j] + e + 24),
					                    t);
					acc[j] = _mm256_fmadd_ps(t, ds, acc[j]);
					mins[j] += mn * xsum[j][b * 8 + s];
				}
			}
		}
	}
	for (int j = 0; j < g; j++) out[j] = hsum_ps(acc[j]) - mins[j];
}

/* Sums of every 32 floats of x (n / 32 of them, n <= 32 * K_MAX_SUB). */
static void sums32(const float *x, int64_t n, float *s)
{
	for (int64_t i = 0; i < n / 32; i++) {
		const float *p = x + 32 * i;
		__m256 a = _mm256_add_ps(
		        _mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)),
		        _mm256_add_ps(_mm256_loadu_ps(p + 16), _mm256_loadu_ps(p + 24)));
		s[i] = hsum_ps(a);
	}
}

static void gemm_q4_k(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                      size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	if (n / 32 > K_MAX_SUB) { /* very wide rows: the reference handles them */
		cpu_kernels_ref.gemm_q4_k(n, w, w_stride, nr, x, x_stride, nt, y, ldy);
		return;
	}
	int64_t nblk = n / QK_K;
	float xsum[TG][K_MAX_SUB];
	for (int64_t t0 = 0; t0 < nt; t0 += TG) {
		int g = nt - t0 < TG ? (int)(nt - t0) : TG;
		const float *xs[TG];
		for (int j = 0; j < g; j++) {
			xs[j] = (const float *)((const char *)x + (t0 + j) * x_stride);
			sums32(xs[j], n, xsum[j]);
		}
		for (int64_t r = 0; r < nr; r++) {
			const struct block_q4_k *wr =
			        (const struct block_q4_k *)((const char *)w + r * w_stride);
			float out[TG];
			switch (g) {
			case 4: q4_k_row(4, nblk, wr, xs, xsum, out); break;
			case 3: q4_k_row(3, nblk, wr, xs, xsum, out); break;
			case 2: q4_k_row(2, nblk, wr, xs, xsum, out); break;
			default: q4_k_row(1, nblk, wr, xs, xsum, out); break;
			}
			for (int j = 0; j < g; j++) y[(t0 + j) * ldy + r] = out[j];
		}
	}
}

/* ---- Q6_K ---- */

static inline __attribute__((always_inline)) void
q6_k_row(int g, int64_t nblk, const struct block_q6_k *w, const float *const *x, float *out)
{
	const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3);
	__m256 acc[TG];
	for (int j = 0; j < TG; j++) acc[j] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nblk; b++) {
		const struct block_q6_k *blk = &w[b];
		_mm_prefetch((const char *)blk + PREFETCH_BYTES, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 128, _MM_HINT_T0);
		_mm_prefetch((const char *)blk + PREFETCH_BYTES + 192, _MM_HINT_T0);
		float d = f16_to_f32(blk->d);
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = blk->ql + 64 * h, *qh = blk->qh + 32 * h;
			const int8_t *sc = blk->scales + 8 * h;
			__m256i l0 = _mm256_loadu_si256((const __m256i *)ql),
			        l1 = _mm256_loadu_si256((const __m256i *)(ql + 32)),
			        hb = _mm256_loadu_si256((const __m256i *)qh);
			/* q - 32 of elements 32k + l, l in 0..31 (unsigned 0..63 then offset). */
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
			for (int k = 0; k < 4; k++) {
				__m256 f[4];
				u8x32_to_ps(q[k], f);
				/* remove the +32 offset in float: exact for 0..63 */
				const __m256 o = _mm256_set1_ps(32.0f);
				for (int i = 0; i < 4; i++) f[i] = _mm256_sub_ps(f[i], o);
				__m256 s0 = _mm256_set1_ps(d * (float)sc[2 * k]),
				       s1 = _mm256_set1_ps(d * (float)sc[2 * k + 1]);
				int64_t e = b * 256 + 128 * h + 32 * k;
#pragma GCC unroll 4
				for (int j = 0; j < g; j++) {
					__m256 t0 = _mm256_mul_ps(f[0], _mm256_loadu_ps(x[j] + e));
					t0 = _mm256_fmadd_ps(f[1], _mm256_loadu_ps(x[j] + e + 8),
					                     t0);
					__m256 t1 =
					        _mm256_mul_ps(f[2], _mm256_loadu_ps(x[j] + e + 16));
					t1 = _mm256_fmadd_ps(f[3], _mm256_loadu_ps(x[j] + e + 24),
					                     t1);
					acc[j] = _mm256_fmadd_ps(t0, s0, acc[j]);
					acc[j] = _mm256_fmadd_ps(t1, s1, acc[j]);
				}
			}
		}
	}
	for (int j = 0; j < g; j++) out[j] = hsum_ps(acc[j]);
}

static void gemm_q6_k(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                      size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	int64_t nblk = n / QK_K;
	for (int64_t t0 = 0; t0 < nt; t0 += TG) {
		int g = nt - t0 < TG ? (int)(nt - t0) : TG;
		const float *xs[TG];
		for (int j = 0; j < g; j++)
			xs[j] = (const float *)((const char *)x + (t0 + j) * x_stride);
		for (int64_t r = 0; r < nr; r++) {
			const struct block_q6_k *wr =
			        (const struct block_q6_k *)((const char *)w + r * w_stride);
			float out[TG];
			switch (g) {
			case 4: q6_k_row(4, nblk, wr, xs, out); break;
			case 3: q6_k_row(3, nblk, wr, xs, out); break;
			case 2: q6_k_row(2, nblk, wr, xs, out); break;
			default: q6_k_row(1, nblk, wr, xs, out); break;
			}
			for (int j = 0; j < g; j++) y[(t0 + j) * ldy + r] = out[j];
		}
	}
}
