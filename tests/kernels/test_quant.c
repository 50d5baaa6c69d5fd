/*
 * test_quant.c - tensor types: table, fp16/bf16 conversion, block layouts
 * (hand-built blocks with known values, so a layout mistake in the
 * reference shows up here and not as wrong logits), and quantize ->
 * dequantize round trips with error bounds per type.
 */
#include <errno.h>
#include <stdlib.h>

#include "harness.h"
#include "quant.h"

TEST(type_table)
{
	CHECK_STR_EQ(tensor_type_name(TENSOR_TYPE_Q4_K), "q4_k");
	CHECK(tensor_type_name(4) == NULL); /* ggml's removed Q4_2 */
	CHECK(!tensor_type_valid(15));      /* Q8_K: activations only, never in a file */
	CHECK(!tensor_type_valid(9));       /* Q8_1 likewise */
	CHECK(tensor_type_valid(13));
	CHECK_STR_EQ(tensor_type_name(TENSOR_TYPE_IQ4_XS), "iq4_xs");
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_Q5_0, 5504), 172 * 22);
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_Q3_K, 256), 110);
	CHECK(tensor_type_valid(30));
	enum tensor_type t;
	CHECK(tensor_type_from_name("Q6_K", &t) && t == TENSOR_TYPE_Q6_K);
	CHECK(tensor_type_from_name("bf16", &t) && t == TENSOR_TYPE_BF16);
	CHECK(tensor_type_from_name("q5_k", &t) && t == TENSOR_TYPE_Q5_K);
	CHECK(!tensor_type_from_name("q8_k", &t));
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_F32, 10), 40);
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_Q4_0, 2048), 64 * 18);
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_Q8_0, 64), 68);
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_Q4_K, 5504 - 5504 % 256 + 256), 22 * 144);
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_Q6_K, 4096), 16 * 210);
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_Q4_0, 33), 0);
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_F16, -2), 0);
	CHECK_INT_EQ(tensor_type_row_size(77, 32), 0);
	CHECK_INT_EQ(tensor_type_row_size(TENSOR_TYPE_F32, INT64_MAX), 0); /* overflow */
	CHECK_INT_EQ(tensor_type_block_size(TENSOR_TYPE_Q6_K), 256);
	CHECK_INT_EQ(tensor_type_block_bytes(TENSOR_TYPE_Q4_K), 144);
	float x[32] = { 0 };
	CHECK_INT_EQ(tensor_row_dequantize(TENSOR_TYPE_Q4_0, x, x, 31), -EINVAL);
	CHECK_INT_EQ(tensor_row_quantize(99, x, x, 32), -EINVAL);
}

TEST(fp16_exhaustive)
{
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = tensor_f16_to_f32((uint16_t)h);
		if (f != f) { /* NaN stays NaN */
			uint16_t back = tensor_f32_to_f16(f);
			bad += (back & 0x7C00) != 0x7C00 || !(back & 0x3FF);
			continue;
		}
		bad += tensor_f32_to_f16(f) != h;
	}
	CHECK_INT_EQ(bad, 0);
	CHECK(tensor_f16_to_f32(0x3C00) == 1.0f);
	CHECK(tensor_f16_to_f32(0xC000) == -2.0f);
	CHECK(tensor_f16_to_f32(0x0001) == 0x1p-24f);
	CHECK(tensor_f16_to_f32(0x7BFF) == 65504.0f);
	/* round to nearest even at the halfway points */
	CHECK_INT_EQ(tensor_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);
	CHECK_INT_EQ(tensor_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);
	CHECK_INT_EQ(tensor_f32_to_f16(65519.0f), 0x7BFF);
	CHECK_INT_EQ(tensor_f32_to_f16(65520.0f), 0x7C00);
	CHECK_INT_EQ(tensor_f32_to_f16(0x1p-25f), 0);
	CHECK_INT_EQ(tensor_f32_to_f16(0x1.8p-25f), 1);
	CHECK_INT_EQ(tensor_f32_to_f16(-0x1p-14f), 0x8400);
	CHECK_INT_EQ(tensor_f32_to_f16(1e30f), 0x7C00);
}

TEST(bf16_exhaustive)
{
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = tensor_bf16_to_f32((uint16_t)h);
		if (f != f) continue;
		bad += tensor_f32_to_bf16(f) != h;
	}
	CHECK_INT_EQ(bad, 0);
	CHECK_INT_EQ(tensor_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);     /* tie, even stays */
	CHECK_INT_EQ(tensor_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82); /* tie, odd rounds up */
	CHECK_INT_EQ(tensor_f32_to_bf16(1.0f + 0x1.1p-8f), 0x3F81);
}

/* Known blocks: each element's value is predictable, so a wrong nibble
 * order, scale index or bias fails loudly. */
TEST(layout_q4_0_q8_0)
{
	struct block_q4_0 b4 = { .d = 0x3C00 }; /* d = 1 */
	for (int j = 0; j < 16; j++) b4.qs[j] = (uint8_t)(j | ((15 - j) << 4));
	float y[32];
	CHECK_INT_EQ(tensor_row_dequantize(TENSOR_TYPE_Q4_0, &b4, y, 32), 0);
	for (int j = 0; j < 16; j++) {
		CHECK(y[j] == (float)(j - 8));
		CHECK(y[j + 16] == (float)(7 - j));
	}
	struct block_q8_0 b8 = { .d = 0x3800 }; /* d = 0.5 */
	for (int j = 0; j < 32; j++) b8.qs[j] = (int8_t)(j * 8 - 128);
	CHECK_INT_EQ(tensor_row_dequantize(TENSOR_TYPE_Q8_0, &b8, y, 32), 0);
	for (int j = 0; j < 32; j++) CHECK(y[j] == 0.5f * (float)(j * 8 - 128));
}

TEST(layout_q4_k)
{
	struct block_q4_k b = { .d = 0x3C00, .dmin = 0x3800 }; /* d = 1, dmin = 0.5 */
	/* sub-block s: scale s + 1 + 40 * (s >= 4) (needs the high bits), min 2s + 1 */
	uint8_t sc[8], m[8];
	for (int s = 0; s < 8; s++) {
		sc[s] = (uint8_t)(s + 1 + (s >= 4 ? 40 : 0));
		m[s] = (uint8_t)(2 * s + 1 + (s >= 4 ? 32 : 0));
	}
	/* pack by the spec's bit positions */
	for (int j = 0; j < 4; j++) {
		b.scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
		b.scales[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
		b.scales[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
	}
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++)
			b.qs[32 * c + l] = (uint8_t)((l % 16) | ((15 - l % 16) << 4));
	float y[256];
	CHECK_INT_EQ(tensor_row_dequantize(TENSOR_TYPE_Q4_K, &b, y, 256), 0);
	int bad = 0;
	for (int i = 0; i < 256; i++) {
		int s = i / 32, l = i % 32;
		int q = (s % 2 == 0) ? l % 16 : 15 - l % 16; /* even sub-block: low nibbles */
		float want = (float)sc[s] * (float)q - 0.5f * (float)m[s];
		bad += y[i] != want;
	}
	CHECK_INT_EQ(bad, 0);
}

TEST(layout_q6_k)
{
	struct block_q6_k b = { .d = 0x3C00 };
	for (int s = 0; s < 16; s++) b.scales[s] = (int8_t)(s % 2 ? -(s + 1) : s + 1);
	/* element i of the block gets q = i % 64 */
	for (int h = 0; h < 2; h++) {
		for (int l = 0; l < 32; l++) {
			int base = 128 * h;
			int q1 = (base + l) % 64, q2 = (base + l + 32) % 64,
			    q3 = (base + l + 64) % 64, q4 = (base + l + 96) % 64;
			b.ql[64 * h + l] = (uint8_t)((q1 & 15) | ((q3 & 15) << 4));
			b.ql[64 * h + l + 32] = (uint8_t)((q2 & 15) | ((q4 & 15) << 4));
			b.qh[32 * h + l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) |
			                             ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
		}
	}
	float y[256];
	CHECK_INT_EQ(tensor_row_dequantize(TENSOR_TYPE_Q6_K, &b, y, 256), 0);
	int bad = 0;
	for (int i = 0; i < 256; i++) bad += y[i] != (float)b.scales[i / 16] * (float)(i % 64 - 32);
	CHECK_INT_EQ(bad, 0);
}

/* xorshift + Box-Muller: deterministic N(0,1) without libc rand state */
static double gauss(uint64_t *s)
{
	double u[2];
	for (int k = 0; k < 2; k++) {
		*s ^= *s << 13;
		*s ^= *s >> 7;
		*s ^= *s << 17;
		u[k] = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
	}
	return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

struct rt_stats {
	double max_err_over_amax; /* max |x - x'| / max|x| of its block */
	double rel_rms;           /* rms(x - x') / rms(x) */
};

static struct rt_stats round_trip(uint32_t type, int64_t n, int64_t block)
{
	uint64_t seed = 0x9E3779B97F4A7C15ull ^ type;
	float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
	uint8_t *q = malloc(tensor_type_row_size(type, n));
	for (int64_t i = 0; i < n; i++) x[i] = (float)(0.02 * gauss(&seed));
	for (int64_t i = 0; i < n; i += 997) /* outliers, as real weights have */
		x[i] *= 8;
	for (int64_t i = 512; i < 512 + 256; i++) /* an all-zero stretch */
		x[i] = 0;
	tensor_row_quantize(type, x, q, n);
	tensor_row_dequantize(type, q, y, n);
	struct rt_stats st = { 0, 0 };
	double se = 0, sx = 0;
	for (int64_t b = 0; b < n; b += block) {
		double amax = 0;
		for (int64_t i = b; i < b + block; i++) amax = fmax(amax, fabs(x[i]));
		for (int64_t i = b; i < b + block; i++) {
			double e = fabs((double)x[i] - y[i]);
			if (amax > 0 && e / amax > st.max_err_over_amax)
				st.max_err_over_amax = e / amax;
			if (amax == 0 && y[i] != 0) st.max_err_over_amax = 1e9;
			se += e * e;
			sx += (double)x[i] * x[i];
		}
	}
	st.rel_rms = sqrt(se / sx);
	free(x);
	free(y);
	free(q);
	return st;
}

/*
 * Bounds (per block of the type, relative to the block's largest |x|):
 * F16 2^-11 and BF16 2^-8 (half an ulp); Q8_0 1/254 (half a step of
 * amax/127) plus the fp16 rounding of d; Q4_0 1/8 (the value opposite the
 * largest one can sit a whole step from the clamped level 15), Q4_K and
 * Q6_K by their step sizes with slack for the 6/8-bit quantized scales;
 * Q4_1/Q5_0/Q5_1/Q5_K half a step (range / 2^bits) plus the fp16 scale;
 * IQ4_NL the widest gap at the grid's end (127 vs 113) over 127; Q2_K,
 * Q3_K and IQ4_XS measured with ~15% slack (4/6-bit scales add to it).
 * The rms bounds are what the quantizers give on Gaussian weights with
 * outliers, with ~20% margin.
 */
TEST(round_trip_error_bounds)
{
	const int64_t n = 256 * 64;
	struct {
		uint32_t type;
		int64_t block;
		double max_bound, rms_bound;
	} cases[] = {
		{ TENSOR_TYPE_F32, 256, 0, 0 },
		{ TENSOR_TYPE_F16, 256, 1.0 / 2048, 3e-4 },
		{ TENSOR_TYPE_BF16, 256, 1.0 / 256, 3e-3 },
		{ TENSOR_TYPE_Q8_0, 32, 1.0 / 254 + 1.0 / 2048, 7.5e-3 },
		{ TENSOR_TYPE_Q4_0, 32, 1.0 / 8 + 1.0 / 1024, 0.12 },
		{ TENSOR_TYPE_Q4_K, 256, 1.0 / 15, 0.12 },
		{ TENSOR_TYPE_Q6_K, 256, 1.0 / 32, 0.04 },
		{ TENSOR_TYPE_Q4_1, 32, 1.0 / 15 + 1.0 / 512, 0.10 },
		{ TENSOR_TYPE_Q5_0, 32, 1.0 / 16 + 1.0 / 1024, 0.06 },
		{ TENSOR_TYPE_Q5_1, 32, 1.0 / 31 + 1.0 / 512, 0.05 },
		{ TENSOR_TYPE_Q2_K, 256, 0.36, 0.40 },
		{ TENSOR_TYPE_Q3_K, 256, 0.27, 0.20 },
		{ TENSOR_TYPE_Q5_K, 256, 1.0 / 31 + 1.0 / 512, 0.05 },
		{ TENSOR_TYPE_IQ4_NL, 32, 14.0 / 127 + 1.0 / 512, 0.10 },
		{ TENSOR_TYPE_IQ4_XS, 256, 0.13, 0.11 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct rt_stats st = round_trip(cases[i].type, n, cases[i].block);
		printf("  %-5s max |err|/amax %.4f (bound %.4f)  rel rms %.5f (bound %.4f)\n",
		       tensor_type_name(cases[i].type), st.max_err_over_amax, cases[i].max_bound,
		       st.rel_rms, cases[i].rms_bound);
		CHECK(st.max_err_over_amax <= cases[i].max_bound);
		CHECK(st.rel_rms <= cases[i].rms_bound);
	}
}

/* ggml's Q4_0 reference rule on a block we can work out by hand. */
TEST(q4_0_reference_rule)
{
	float x[32];
	for (int j = 0; j < 32; j++)
		x[j] = (float)(j - 16) * 0.25f; /* -4 .. 3.75: signed max-magnitude is -4 */
	struct block_q4_0 b;
	tensor_row_quantize(TENSOR_TYPE_Q4_0, x, &b, 32);
	CHECK(tensor_f16_to_f32(b.d) == 0.5f); /* d = -4 / -8 */
	CHECK_INT_EQ(b.qs[0] & 0xF, 0);        /* -4 -> q = 0 */
	CHECK_INT_EQ(b.qs[15] >> 4, 15);       /* 3.75/0.5 + 8.5 = 16 -> clamped to 15 */
	CHECK_INT_EQ(b.qs[1] & 0xF, 1);        /* -3.75/0.5 + 8.5 = 1.0 */
	CHECK_INT_EQ(b.qs[8] & 0xF, 4); /* -2 * 2 + 8.5 = 4.5 truncates to 4 (value -2, exact) */
}

TEST_MAIN()
