/*
 * kern_simd_q.h - 256-bit kernels for the weight types whose activations are
 * Q8_K (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) or Q8_1 (Q4_1, Q5_1), and for
 * Q5_0 / IQ4_NL against Q8_0; the Q8_K and Q8_1 activation quantizers.
 * Included after kern_simd.h by kern_avx2.c and kern_avx512.c (same target
 * pragma, TG token groups, QUANT_GROUP / GEMM_GROUPED for the Q8_0 ones).
 *
 * Every kernel computes what kern_ref.c computes: a weight block is decoded
 * in registers to its integer levels (unsigned where the type has mins,
 * signed otherwise: |q| x sign(y, q)), multiplied with the activations'
 * int8 by maddubs (u8 x s8 -> s16 pairs; the products stay below int16
 * saturation: 31 * 127 * 2, 32 * 127 * 2, and IQ4's 127 * 127 * 2 = 32258),
 * scaled per 16 or 32 values by madd with the integer scales (-> s32), so
 * each super-block's sum is exact as in the reference; only the float
 * accumulation across blocks is ordered differently.
 */

/* ---- activations ---- */

/* Q8_K, bit for bit the reference (kern_ref.c act_q8_k). */
static void act_q8_k(const float *x, void *dst, int64_t n)
{
	struct block_q8_k *y = dst;
	const __m256 sign = _mm256_set1_ps(-0.0f);
	for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
		__m256 m = _mm256_setzero_ps();
		for (int i = 0; i < QK_K; i += 8)
			m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
		float amax = hmax_ps(m), max = 0;
		if (amax == 0) {
			memset(&y[b], 0, sizeof y[b]);
			continue;
		}
		for (int j = 0; j < QK_K; j++) /* the first value of that magnitude, signed */
			if (fabsf(x[j]) == amax) {
				max = x[j];
				break;
			}
		float iscale = -127.0f / max;
		const __m256 vs = _mm256_set1_ps(iscale);
		const __m256i top = _mm256_set1_epi32(127);
		for (int i = 0; i < QK_K; i += 32) {
			__m256i q[4];
			for (int k = 0; k < 4; k++)
				q[k] = _mm256_min_epi32(
				        top,
				        _mm256_cvtps_epi32(_mm256_round_ps(
				                _mm256_mul_ps(vs, _mm256_loadu_ps(x + i + 8 * k)),
				                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
			/* sums of the two 16s: q0 + q1 and q2 + q3, across lanes */
			__m256i s01 = _mm256_add_epi32(q[0], q[1]),
			        s23 = _mm256_add_epi32(q[2], q[3]);
			__m256i h =
			        _mm256_hadd_epi32(s01, s23); /* [a01 a23 b01 b23 | a45 a67 ...] */
			h = _mm256_hadd_epi32(h, h);
			__m128i t = _mm_add_epi32(_mm256_castsi256_si128(h),
			                          _mm256_extracti128_si256(h, 1));
			y[b].bsums[i / 16] = (int16_t)_mm_extract_epi32(t, 0);
			y[b].bsums[i / 16 + 1] = (int16_t)_mm_extract_epi32(t, 1);
			__m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
			                               _mm256_packs_epi32(q[2], q[3]));
			p = _mm256_permutevar8x32_epi32(p,
			                                _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
			_mm256_storeu_si256((__m256i *)(y[b].qs + i), p);
		}
		y[b].d = 1 / iscale;
	}
}

/* Q8_1, bit for bit the reference (kern_ref.c act_q8_1). */
static void act_q8_1(const float *x, void *dst, int64_t n)
{
	struct block_q8_1 *y = dst;
	const __m256 sign = _mm256_set1_ps(-0.0f);
	for (int64_t b = 0; b < n / QK8_0; b++, x += QK8_0) {
		__m256 v[4], m = _mm256_setzero_ps();
		for (int i = 0; i < 4; i++) {
			v[i] = _mm256_loadu_ps(x + 8 * i);
			m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[i]));
		}
		float amax = hmax_ps(m);
		float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
		__m256 vid = _mm256_set1_ps(id);
		__m256i q[4];
		for (int i = 0; i < 4; i++)
			q[i] = _mm256_cvtps_epi32(
			        _mm256_round_ps(_mm256_mul_ps(v[i], vid),
			                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		__m256i s4 = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]),
		                              _mm256_add_epi32(q[2], q[3]));
		__m128i s2 =
		        _mm_add_epi32(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
		s2 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0x4E));
		s2 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xB1));
		y[b].d = tensor_f32_to_f16(d);
		y[b].s = tensor_f32_to_f16(d * (float)_mm_cvtsi128_si32(s2));
		__m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
		                               _mm256_packs_epi32(q[2], q[3]));
		p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
		_mm256_storeu_si256((__m256i *)y[b].qs, p);
	}
}

/* ---- shared pieces ---- */

/* 16 int16 lanes: the low 8 = a, the high 8 = b (the scales of two 16-value groups). */
static inline __m256i scale_pair(int a, int b)
{
	return _mm256_set_m128i(_mm_set1_epi16((short)b), _mm_set1_epi16((short)a));
}

static inline int32_t hsum_epi32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
	return _mm_cvtsi128_si32(s);
}

/* The 32 IQ4 levels of 16 packed bytes: low nibbles (values 0..15), then high (16..31). */
static inline __m256i iq4_levels(const uint8_t *qs)
{
	const __m256i table =
	        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tensor_iq4_values));
	const __m128i m4 = _mm_set1_epi8(0xF);
	__m128i raw = _mm_loadu_si128((const __m128i *)qs);
	__m256i nib =
	        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), _mm_and_si128(raw, m4));
	return _mm256_shuffle_epi8(table, nib);
}

/*
 * One decoded super-block: q[k] holds values 32k..32k+31 (unsigned if
 * `has_min`, else signed), sc[k] their scales as 16 int16 lanes (low 8: the
 * first 16 values, high 8: the next 16), mins the 16 per-16-value mins (in
 * the order of the activation's bsums), d and dmin the float scales.
 */
struct kblk {
	__m256i q[8], sc[8], mins;
	float d, dmin;
};

/*
 * The 8 six-bit scales and mins of a Q4_K / Q5_K super-block, unpacked a
 * word at a time (the layout tensor_q4_k_scale_min reads byte by byte:
 * sub-blocks 0..3 in the low 6 bits of bytes 0..3 and 4..7, sub-blocks 4..7
 * in the nibbles of bytes 8..11 with their top 2 bits in bits 6..7 of bytes
 * 0..3 and 4..7): sc[s] broadcast as 16 int16 lanes, mins as the 16 lanes
 * m0 m0 m1 m1 .. m7 m7 (one per 16 values, the order of the bsums). Per
 * super-block this was 8 branchy scalar decodes, most of a decode step's
 * work on these types.
 */
static inline __attribute__((always_inline)) void kblk_scales_k4(const uint8_t *scales,
                                                                 struct kblk *k)
{
	const uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
	uint32_t w[3];
	memcpy(w, scales, sizeof w);
	uint32_t sc[2] = { w[0] & k1, (w[2] & k2) | (((w[0] >> 6) & k3) << 4) };
	uint32_t mn[2] = { w[1] & k1, ((w[2] >> 4) & k2) | (((w[1] >> 6) & k3) << 4) };
	uint8_t b[8];
	memcpy(b, sc, sizeof b);
	for (int s = 0; s < 8; s++) k->sc[s] = _mm256_set1_epi16(b[s]);
	__m128i m8 = _mm_set_epi32(0, 0, (int)mn[1], (int)mn[0]);
	k->mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
}

static inline __attribute__((always_inline)) void kblk_q4_k(const struct block_q4_k *b,
                                                            struct kblk *k)
{
	const __m256i m4 = _mm256_set1_epi8(0xF);
	kblk_scales_k4(b->scales, k);
	for (int c = 0; c < 4; c++) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * c));
		k->q[2 * c] = _mm256_and_si256(v, m4);
		k->q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
	}
	k->d = f16_to_f32(b->d), k->dmin = f16_to_f32(b->dmin);
}

static inline __attribute__((always_inline)) void kblk_q5_k(const struct block_q5_k *b,
                                                            struct kblk *k)
{
	const __m256i m4 = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
	kblk_scales_k4(b->scales, k);
	__m256i hb = _mm256_loadu_si256((const __m256i *)b->qh);
	for (int c = 0; c < 4; c++) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * c));
		__m256i h0 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one);
		__m256i h1 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one);
		k->q[2 * c] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_slli_epi16(h0, 4));
		k->q[2 * c + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
		                                  _mm256_slli_epi16(h1, 4));
	}
	k->d = f16_to_f32(b->d), k->dmin = f16_to_f32(b->dmin);
}

/* Q6_K levels kept unsigned (0..63, the stored 6 bits) and the -32 taken
 * out once per token as 32 * sum of bsums x scales (KQ_ROW's has_min 2):
 * maddubs then needs no sign flips, two per 32 values and token, and
 * mins carries the 16 scales for that (one per 16 values, as the bsums). */
static inline __attribute__((always_inline)) void kblk_q6_k(const struct block_q6_k *b,
                                                            struct kblk *k)
{
	const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3);
	for (int h = 0; h < 2; h++) {
		const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
		__m256i l0 = _mm256_loadu_si256((const __m256i *)ql),
		        l1 = _mm256_loadu_si256((const __m256i *)(ql + 32)),
		        hb = _mm256_loadu_si256((const __m256i *)qh);
		__m256i lo[4] = { _mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
			          _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
			          _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4) };
		for (int c = 0; c < 4; c++) {
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), m2);
			k->q[4 * h + c] = _mm256_or_si256(lo[c], _mm256_slli_epi16(hi, 4));
			k->sc[4 * h + c] =
			        scale_pair(b->scales[8 * h + 2 * c], b->scales[8 * h + 2 * c + 1]);
		}
	}
	k->mins = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
	k->d = f16_to_f32(b->d), k->dmin = 0;
}

static inline __attribute__((always_inline)) void kblk_q3_k(const struct block_q3_k *b,
                                                            struct kblk *k)
{
	const __m256i m2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1),
	              four = _mm256_set1_epi8(4);
	int8_t sc[16];
	tensor_q3_k_scales(b->scales, sc);
	__m256i hm = _mm256_loadu_si256((const __m256i *)b->hmask);
	for (int h = 0; h < 2; h++) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * h));
		for (int c = 0; c < 4; c++) {
			__m256i lo = _mm256_and_si256(_mm256_srli_epi16(v, 2 * c), m2);
			__m256i hbit = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + c), one);
			/* q = lo - 4 where the bit is clear: lo + 4 * bit - 4 */
			k->q[4 * h + c] = _mm256_sub_epi8(
			        _mm256_add_epi8(lo, _mm256_slli_epi16(hbit, 2)), four);
			k->sc[4 * h + c] = scale_pair(sc[8 * h + 2 * c], sc[8 * h + 2 * c + 1]);
		}
	}
	k->mins = _mm256_setzero_si256();
	k->d = f16_to_f32(b->d), k->dmin = 0;
}

static inline __attribute__((always_inline)) void kblk_q2_k(const struct block_q2_k *b,
                                                            struct kblk *k)
{
	const __m256i m2 = _mm256_set1_epi8(3);
	__m128i raw = _mm_loadu_si128((const __m128i *)b->scales);
	k->mins = _mm256_cvtepu8_epi16(
	        _mm_srli_epi16(_mm_and_si128(raw, _mm_set1_epi8((char)0xF0)), 4));
	for (int h = 0; h < 2; h++) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * h));
		for (int c = 0; c < 4; c++) {
			int g = 8 * h + 2 * c;
			k->q[4 * h + c] = _mm256_and_si256(_mm256_srli_epi16(v, 2 * c), m2);
			k->sc[4 * h + c] = scale_pair(b->scales[g] & 0xF, b->scales[g + 1] & 0xF);
		}
	}
	k->d = f16_to_f32(b->d), k->dmin = f16_to_f32(b->dmin);
}

static inline __attribute__((always_inline)) void kblk_iq4_xs(const struct block_iq4_xs *b,
                                                              struct kblk *k)
{
	for (int s = 0; s < 8; s++) {
		int ls = ((b->scales_l[s / 2] >> (4 * (s % 2))) & 0xF) |
		         (((b->scales_h >> (2 * s)) & 3) << 4);
		k->sc[s] = _mm256_set1_epi16((short)(ls - 32));
		k->q[s] = iq4_levels(b->qs + 16 * s);
	}
	k->mins = _mm256_setzero_si256();
	k->d = f16_to_f32(b->d), k->dmin = 0;
}

/*
 * A weight row against up to TG Q8_K activation rows: each super-block is
 * decoded once (decode), then per token sumi = sum_k madd(maddubs(q_k, y_k),
 * sc_k) and summ = madd(bsums, mins), exact in int32 lanes, scaled by
 * d_y * d and d_y * dmin into float accumulators. has_min: 1 levels
 * unsigned with mins; 0 signed levels (maddubs on |q| and sign(y, q)); 2
 * unsigned levels 32 too high, mins holding the 16 scales: sumi -=
 * 32 * madd(bsums, scales), still exact.
 */
#define KQ_ROW(name, wblock, decode, has_min)                                                      \
	static inline __attribute__((always_inline)) void name(                                    \
	        int g, int64_t nblk, const wblock *w, const struct block_q8_k *const *x,           \
	        float *out)                                                                        \
	{                                                                                          \
		__m256 acc[TG], macc[TG];                                                          \
		_Pragma("GCC unroll 4") for (int j = 0; j < TG; j++) acc[j] = macc[j] =            \
		        _mm256_setzero_ps();                                                       \
		for (int64_t b = 0; b < nblk; b++) {                                               \
			_mm_prefetch((const char *)&w[b] + PREFETCH_BYTES, _MM_HINT_T0);           \
			_mm_prefetch((const char *)&w[b] + PREFETCH_BYTES + 64, _MM_HINT_T0);      \
			_mm_prefetch((const char *)&w[b] + PREFETCH_BYTES + 128, _MM_HINT_T0);     \
			struct kblk k;                                                             \
			decode(&w[b], &k);                                                         \
			__m256i aq[8];                                                             \
			if ((has_min) == 0)                                                        \
				for (int c = 0; c < 8; c++)                                        \
					aq[c] = _mm256_sign_epi8(k.q[c], k.q[c]);                  \
			_Pragma("GCC unroll 4") for (int j = 0; j < g; j++)                        \
			{                                                                          \
				const struct block_q8_k *y = &x[j][b];                             \
				__m256i s0 = _mm256_setzero_si256(), s1 = s0;                      \
				_Pragma("GCC unroll 8") for (int c = 0; c < 8; c++)                \
				{                                                                  \
					__m256i yv = _mm256_loadu_si256(                           \
					        (const __m256i *)(y->qs + 32 * c));                \
					__m256i p =                                                \
					        (has_min) ? _mm256_maddubs_epi16(k.q[c], yv)       \
					                  : _mm256_maddubs_epi16(                  \
					                            aq[c],                         \
					                            _mm256_sign_epi8(yv, k.q[c])); \
					p = _mm256_madd_epi16(p, k.sc[c]);                         \
					if (c % 2)                                                 \
						s1 = _mm256_add_epi32(s1, p);                      \
					else                                                       \
						s0 = _mm256_add_epi32(s0, p);                      \
				}                                                                  \
				__m256 dy = _mm256_set1_ps(y->d * k.d);                            \
				if ((has_min) == 2)                                                \
					s0 = _mm256_sub_epi32(                                     \
					        s0, _mm256_slli_epi32(                             \
					                    _mm256_madd_epi16(                     \
					                            _mm256_loadu_si256(            \
					                                    (const __m256i *)      \
					                                            y->bsums),     \
					                            k.mins),                       \
					                    5));                                   \
				acc[j] = _mm256_fmadd_ps(                                          \
				        _mm256_cvtepi32_ps(_mm256_add_epi32(s0, s1)), dy, acc[j]); \
				if ((has_min) == 1) {                                              \
					__m256i mm = _mm256_madd_epi16(                            \
					        _mm256_loadu_si256((const __m256i *)y->bsums),     \
					        k.mins);                                           \
					macc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm),          \
					                          _mm256_set1_ps(y->d * k.dmin),   \
					                          macc[j]);                        \
				}                                                                  \
			}                                                                          \
		}                                                                                  \
		_Pragma("GCC unroll 4") for (int j = 0; j < g; j++) out[j] =                       \
		        hsum_ps(acc[j]) - hsum_ps(macc[j]);                                        \
	}

KQ_ROW(q4_k_row, struct block_q4_k, kblk_q4_k, 1)
KQ_ROW(q5_k_row, struct block_q5_k, kblk_q5_k, 1)
KQ_ROW(q2_k_row, struct block_q2_k, kblk_q2_k, 1)
KQ_ROW(q6_k_row, struct block_q6_k, kblk_q6_k, 2)
KQ_ROW(q3_k_row, struct block_q3_k, kblk_q3_k, 0)
KQ_ROW(iq4_xs_row, struct block_iq4_xs, kblk_iq4_xs, 0)

/* The driver for activations without a tail (Q8_K, Q8_1): tokens in groups
 * of up to TG, each weight row once per group. */
#define GEMM_ACT(fname, wblock, wblock_n, ablock, ablock_n, rowfn)                               \
	static void fname(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,  \
	                  size_t x_stride, int64_t nt, float *y, int64_t ldy)                    \
	{                                                                                        \
		int64_t nw = n / (wblock_n);                                                     \
		(void)(ablock_n);                                                                \
		for (int64_t t0 = 0; t0 < nt; t0 += TG) {                                        \
			const ablock *xs[TG];                                                    \
			int g = nt - t0 < TG ? (int)(nt - t0) : TG;                              \
			for (int j = 0; j < g; j++)                                              \
				xs[j] = (const ablock *)((const char *)x + (t0 + j) * x_stride); \
			for (int64_t r = 0; r < nr; r++) {                                       \
				const wblock *wr =                                               \
				        (const wblock *)((const char *)w + r * w_stride);        \
				float out[TG];                                                   \
				switch (g) {                                                     \
				case 4: rowfn(4, nw, wr, xs, out); break;                        \
				case 3: rowfn(3, nw, wr, xs, out); break;                        \
				case 2: rowfn(2, nw, wr, xs, out); break;                        \
				default: rowfn(1, nw, wr, xs, out); break;                       \
				}                                                                \
				for (int j = 0; j < g; j++) y[(t0 + j) * ldy + r] = out[j];      \
			}                                                                        \
		}                                                                                \
	}

GEMM_ACT(gemm_q4_k, struct block_q4_k, QK_K, struct block_q8_k, QK_K, q4_k_row)
GEMM_ACT(gemm_q5_k, struct block_q5_k, QK_K, struct block_q8_k, QK_K, q5_k_row)
GEMM_ACT(gemm_q2_k, struct block_q2_k, QK_K, struct block_q8_k, QK_K, q2_k_row)
GEMM_ACT(gemm_q6_k, struct block_q6_k, QK_K, struct block_q8_k, QK_K, q6_k_row)
GEMM_ACT(gemm_q3_k, struct block_q3_k, QK_K, struct block_q8_k, QK_K, q3_k_row)
GEMM_ACT(gemm_iq4_xs, struct block_iq4_xs, QK_K, struct block_q8_k, QK_K, iq4_xs_row)

/* ---- 32-value blocks ---- */

/* The 32 fifth bits of a Q5_0/Q5_1 block as bytes 0x10 or 0. */
static inline __m256i q5_high_bits(const uint8_t qh[4])
{
	uint32_t h;
	memcpy(&h, qh, 4);
	const __m256i shuf = _mm256_setr_epi64x(0, 0x0101010101010101ll, 0x0202020202020202ll,
	                                        0x0303030303030303ll);
	const __m256i bit = _mm256_set1_epi64x(0x8040201008040201ll);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), shuf);
	v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
	return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

static inline __m256i nibbles32(const uint8_t *qs)
{
	const __m128i m4 = _mm_set1_epi8(0xF);
	__m128i raw = _mm_loadu_si128((const __m128i *)qs);
	return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), _mm_and_si128(raw, m4));
}

/* Signed levels of a block against a Q8_0 activation block: |q| x sign(y, q). */
static inline __attribute__((always_inline)) void
signed32_block(int g, __m256i q, float dw, int64_t b, const struct block_q8_0 *const *x,
               const struct cpu_q8_tail *xt, __m256 *acc)
{
	__m256i aq = _mm256_sign_epi8(q, q);
#pragma GCC unroll 4
	for (int j = 0; j < g; j++) {
		__m256i xq = _mm256_loadu_si256((const __m256i *)x[j][b].qs);
		__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aq, _mm256_sign_epi8(xq, q)),
		                              _mm256_set1_epi16(1));
		acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * xt[j].d[b]),
		                         acc[j]);
	}
}

static inline __attribute__((always_inline)) void
q5_0_block(int g, const struct block_q5_0 *w, int64_t b, const struct block_q8_0 *const *x,
           const struct cpu_q8_tail *xt, __m256 *acc)
{
	__m256i q = _mm256_sub_epi8(_mm256_or_si256(nibbles32(w[b].qs), q5_high_bits(w[b].qh)),
	                            _mm256_set1_epi8(16));
	signed32_block(g, q, f16_to_f32(w[b].d), b, x, xt, acc);
}

static inline __attribute__((always_inline)) void
iq4_nl_block(int g, const struct block_iq4_nl *w, int64_t b, const struct block_q8_0 *const *x,
             const struct cpu_q8_tail *xt, __m256 *acc)
{
	signed32_block(g, iq4_levels(w[b].qs), f16_to_f32(w[b].d), b, x, xt, acc);
}

QUANT_GROUP(q5_0_group, struct block_q5_0, q5_0_block)
QUANT_GROUP(iq4_nl_group, struct block_iq4_nl, iq4_nl_block)
GEMM_GROUPED(gemm_q5_0, struct block_q5_0, 32, q5_0_group)
GEMM_GROUPED(gemm_iq4_nl, struct block_iq4_nl, 32, iq4_nl_group)

/* Q4_1 / Q5_1 against Q8_1: d * d_y * sum(q y) with q unsigned, plus m * s_y. */
#define Q8_1_ROW(name, wblock, levels)                                                             \
	static inline __attribute__((always_inline)) void name(                                    \
	        int g, int64_t nb, const wblock *w, const struct block_q8_1 *const *x, float *out) \
	{                                                                                          \
		__m256 acc[TG];                                                                    \
		float macc[TG] = { 0 };                                                            \
		_Pragma("GCC unroll 4") for (int j = 0; j < TG; j++) acc[j] = _mm256_setzero_ps(); \
		for (int64_t b = 0; b < nb; b++) {                                                 \
			_mm_prefetch((const char *)&w[b] + PREFETCH_BYTES, _MM_HINT_T0);           \
			__m256i q = levels(&w[b]);                                                 \
			float d = f16_to_f32(w[b].d), m = f16_to_f32(w[b].m);                      \
			_Pragma("GCC unroll 4") for (int j = 0; j < g; j++)                        \
			{                                                                          \
				__m256i p = _mm256_madd_epi16(                                     \
				        _mm256_maddubs_epi16(                                      \
				                q,                                                 \
				                _mm256_loadu_si256((const __m256i *)x[j][b].qs)),  \
				        _mm256_set1_epi16(1));                                     \
				acc[j] = _mm256_fmadd_ps(                                          \
				        _mm256_cvtepi32_ps(p),                                     \
				        _mm256_set1_ps(d * f16_to_f32(x[j][b].d)), acc[j]);        \
				macc[j] += m * f16_to_f32(x[j][b].s);                              \
			}                                                                          \
		}                                                                                  \
		_Pragma("GCC unroll 4") for (int j = 0; j < g; j++) out[j] =                       \
		        hsum_ps(acc[j]) + macc[j];                                                 \
	}

static inline __m256i q4_1_levels(const struct block_q4_1 *b)
{
	return nibbles32(b->qs);
}

static inline __m256i q5_1_levels(const struct block_q5_1 *b)
{
	return _mm256_or_si256(nibbles32(b->qs), q5_high_bits(b->qh));
}

Q8_1_ROW(q4_1_row, struct block_q4_1, q4_1_levels)
Q8_1_ROW(q5_1_row, struct block_q5_1, q5_1_levels)
GEMM_ACT(gemm_q4_1, struct block_q4_1, 32, struct block_q8_1, 32, q4_1_row)
GEMM_ACT(gemm_q5_1, struct block_q5_1, 32, struct block_q8_1, 32, q5_1_row)

/* ---- Q4_K and Q5_K panels (repack.c): the pieces both sets' panel kernels share ---- */

/*
 * A panel super-block's 6-bit scales and mins for its 8 rows, unpacked by
 * kblk_scales_k4's word arithmetic done in the 8 dword lanes at once: byte
 * s of lane i of sc[0] is row i's scale of sub-block s (0..3), of sc[1]
 * sub-block 4 + s; mn the mins likewise. ~12 ops per super-block, shared
 * by a tile's tokens.
 */
struct q4k_p8_sm {
	__m256i sc[2], mn[2];
};

static inline __attribute__((always_inline)) struct q4k_p8_sm q4k_p8_scales(const char *sb)
{
	const __m256i k1 = _mm256_set1_epi8(0x3f), k2 = _mm256_set1_epi8(0xf),
	              k3 = _mm256_set1_epi8(3);
	__m256i w0 = _mm256_loadu_si256((const __m256i *)(sb + 32)),
	        w1 = _mm256_loadu_si256((const __m256i *)(sb + 64)),
	        w2 = _mm256_loadu_si256((const __m256i *)(sb + 96));
	struct q4k_p8_sm r;
	r.sc[0] = _mm256_and_si256(w0, k1);
	r.sc[1] = _mm256_or_si256(
	        _mm256_and_si256(w2, k2),
	        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w0, 6), k3), 4));
	r.mn[0] = _mm256_and_si256(w1, k1);
	r.mn[1] = _mm256_or_si256(
	        _mm256_and_si256(_mm256_srli_epi32(w2, 4), k2),
	        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w1, 6), k3), 4));
	return r;
}

/* Byte s (0..3) of each dword lane of v as an int32 lane. */
static inline __m256i q4k_p8_i32(__m256i v, int s)
{
	__m256i ctl = _mm256_add_epi32(_mm256_set1_epi32((int)(0x80808000u | (unsigned)s)),
	                               _mm256_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12));
	return _mm256_shuffle_epi8(v, ctl);
}

/* Byte s (0..3) of each dword lane of v in both int16 halves of the lane
 * (a madd against two int16 sums multiplies both by it). */
static inline __m256i q4k_p8_i16x2(__m256i v, int s)
{
	__m256i ctl = _mm256_add_epi32(
	        _mm256_set1_epi32((int)(0x80008000u | ((unsigned)s << 16) | (unsigned)s)),
	        _mm256_setr_epi32(0, 0x40004, 0x80008, 0xC000C, 0, 0x40004, 0x80008, 0xC000C));
	return _mm256_shuffle_epi8(v, ctl);
}

/*
 * A token's super-block ends in kern_ref.c's float steps, operation for
 * operation, on the exact integer sums (sumi, summ) of the 8 rows: acc +=
 * d_y * (d * sumi) - d_y * (dmin * summ). The build does not contract
 * these into FMAs (ISO C mode: -ffp-contract=off), so every result is the
 * reference's bits, whatever the batch or the set.
 */
static inline __attribute__((always_inline)) __m256
q4k_p8_step(__m256 acc, const char *sb, float yd, __m256i sumi, __m256i summ)
{
	__m256 dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)sb));
	__m256 mv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sb + 16)));
	__m256 y = _mm256_set1_ps(yd);
	__m256 t1 = _mm256_mul_ps(y, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(sumi)));
	__m256 t2 = _mm256_mul_ps(y, _mm256_mul_ps(mv, _mm256_cvtepi32_ps(summ)));
	return _mm256_add_ps(acc, _mm256_sub_ps(t1, t2));
}

#define Q4K_P8_SB   1152 /* bytes of a panel's super-block: 8 rows x 144 */
#define Q5K_P8_SB   1408 /* of Q5_K: 8 rows x 176, the qh words at +128, the qs at +384 */
#define Q6K_P8_SB   1680 /* and of Q6_K: 8 rows x 210 */
#define IQ4XS_P8_SB 1088 /* of IQ4_XS: 8 rows x 136, scales_h at +16, scales_l at +32, qs at +64 */

/* IQ4_XS panels: the 16 levels + 128 as bytes (1..241), in both lanes, the
 * unsigned operand of a vpdpbusd looked up by nibble (vpshufb). */
static inline __m256i iq4xs_p8_table(void)
{
	__m128i t = _mm_add_epi8(_mm_loadu_si128((const __m128i *)tensor_iq4_values),
	                         _mm_set1_epi8((char)0x80));
	return _mm256_broadcastsi128_si256(t);
}

/* A token's 128 x sum(x) over sub-block s (0..7) of a Q8_K block at xb,
 * negated: the start of the sub-block's sum of (level + 128) x, which then
 * comes out exactly sum(level x) (|sum| < 2^20). */
static inline int32_t iq4xs_p8_bias(const char *xb, int s)
{
	int16_t bs[2];
	memcpy(bs, xb + offsetof(struct block_q8_k, bsums) + 4 * s, 4);
	return -128 * ((int32_t)bs[0] + bs[1]);
}

/* q4k_p8_step with dmin and the mins' sum 0: kern_ref.c subtracts
 * d_y x (0 x 0) too, a zero of d_y's sign, which decides the sign of a
 * zero result. */
static inline __attribute__((always_inline)) __m256 iq4xs_p8_step(__m256 acc, const char *sb,
                                                                  float yd, __m256i sumi)
{
	__m256 dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)sb));
	__m256 y = _mm256_set1_ps(yd);
	__m256 t1 = _mm256_mul_ps(y, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(sumi)));
	__m256 t2 = _mm256_mul_ps(y, _mm256_setzero_ps());
	return _mm256_add_ps(acc, _mm256_sub_ps(t1, t2));
}

/* Sub-block s's scales ls - 32 of the 8 rows as int32 lanes: sl the rows'
 * scales_l dwords, sh their scales_h zero-extended. */
static inline __m256i iq4xs_p8_scale(__m256i sl, __m256i sh, int s)
{
	__m256i lo = _mm256_and_si256(_mm256_srli_epi32(sl, 4 * s), _mm256_set1_epi32(15));
	__m256i hi = _mm256_and_si256(_mm256_srli_epi32(sh, 2 * s), _mm256_set1_epi32(3));
	return _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)),
	                        _mm256_set1_epi32(32));
}

/* Q5_K panels: the levels (0..31) of sub-block s for 8 rows x 4 values,
 * nib their nibbles (masked), qh the qh word of the same values, whose
 * byte m holds the fifth bit of sub-block s at bit s (repack.c): one
 * shift takes it to bit 4, in the byte it came from. */
static inline __m256i q5k_p8_levels(__m256i nib, __m256i qh, int s)
{
	__m256i hb = s < 4   ? _mm256_slli_epi16(qh, 4 - s)
	             : s > 4 ? _mm256_srli_epi16(qh, s - 4)
	                     : qh;
	return _mm256_or_si256(nib, _mm256_and_si256(hb, _mm256_set1_epi8(0x10)));
}
