/*
 * test_cuda_convert.c - the CUDA backend's upload conversion
 * (kernels/cuda/convert.c), plain C, so it runs on every machine: each type
 * the CPU backend runs and the GPU kernels do not is converted, and the
 * converted row dequantizes to the source's values exactly (Q5_0, IQ4_NL ->
 * Q8_0) or within one f16 rounding (the rest -> F16: |Δ| <= 2^-11 |x|, plus
 * f16's subnormal step near zero).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "harness.h"
#include "quant.h"

enum { ROWS = 3, COLS = 512 };

/* Rows of `type` quantized from a fixed pseudo-random signal (our own
 * quantizers write valid blocks of every type). Caller frees. */
static void *make_rows(uint32_t type)
{
	size_t rs = (size_t)tensor_type_row_size(type, COLS);
	uint8_t *q = malloc(rs * ROWS);
	float x[COLS];
	uint32_t s = 12345u + type;
	for (int r = 0; q && r < ROWS; r++) {
		for (int i = 0; i < COLS; i++) {
			s = s * 1664525u + 1013904223u;
			x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * (r + 1) * 0.7f;
		}
		if (tensor_row_quantize(type, x, q + (size_t)r * rs, COLS)) {
			free(q);
			return NULL;
		}
	}
	return q;
}

static void check_type(int *test_failed_, uint32_t type, int want_target)
{
	CHECK_INT_EQ(cuq_convert_target(type), want_target);
	void *src = make_rows(type);
	REQUIRE(src != NULL);
	size_t out_rs = (size_t)tensor_type_row_size((uint32_t)want_target, COLS);
	uint8_t *dst = malloc(out_rs * ROWS);
	float *scratch = malloc(COLS * sizeof(float));
	REQUIRE(dst && scratch);
	CHECK_INT_EQ(cuq_convert(type, ROWS, COLS, src, dst, scratch), 0);
	size_t in_rs = (size_t)tensor_type_row_size(type, COLS);
	float a[COLS], b[COLS];
	int off = 0;
	for (int r = 0; r < ROWS; r++) {
		REQUIRE(tensor_row_dequantize(type, (uint8_t *)src + r * in_rs, a, COLS) == 0);
		REQUIRE(tensor_row_dequantize((uint32_t)want_target, dst + r * out_rs, b, COLS) ==
		        0);
		for (int i = 0; i < COLS; i++) {
			double tol = want_target == TENSOR_TYPE_Q8_0
			                     ? 0
			                     : fabs(a[i]) * 0x1p-11 + 0x1p-25;
			off += fabs((double)a[i] - b[i]) > tol;
		}
	}
	if (off) printf("  %s: %d values off\n", tensor_type_name(type), off);
	CHECK_INT_EQ(off, 0);
	free(src);
	free(dst);
	free(scratch);
}

TEST(every_cpu_type_reaches_the_gpu)
{
	check_type(test_failed_, TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q8_0);
	check_type(test_failed_, TENSOR_TYPE_IQ4_NL, TENSOR_TYPE_Q8_0);
	const uint32_t to_f16[] = { TENSOR_TYPE_Q4_1, TENSOR_TYPE_Q5_1, TENSOR_TYPE_Q2_K,
		                    TENSOR_TYPE_Q3_K, TENSOR_TYPE_Q5_K, TENSOR_TYPE_IQ4_XS };
	for (size_t i = 0; i < sizeof to_f16 / sizeof to_f16[0]; i++)
		check_type(test_failed_, to_f16[i], TENSOR_TYPE_F16);
	/* the kernels' own types are not converted; unknown ones have no target */
	CHECK_INT_EQ(cuq_convert_target(TENSOR_TYPE_Q4_K), TENSOR_TYPE_Q4_K);
	CHECK_INT_EQ(cuq_convert_target(TENSOR_TYPE_BF16), TENSOR_TYPE_BF16);
	CHECK_INT_EQ(cuq_convert_target(77), -1);
	float row[32];
	uint8_t buf[64] = { 0 };
	CHECK_INT_EQ(cuq_convert(TENSOR_TYPE_Q4_K, 1, 256, buf, buf, row), -EINVAL);
	CHECK_INT_EQ(cuq_convert(TENSOR_TYPE_Q5_0, 1, 33, buf, buf, row), -EINVAL);
}

/* A Q5_0 block whose scale is NaN (a corrupt file) is refused, not rounded
 * into garbage weights. */
TEST(corrupt_scale_refused)
{
	uint8_t src[22] = { 0 }, dst[34];
	const uint16_t nan16 = 0x7E00;
	memcpy(src, &nan16, 2);
	float row[32];
	CHECK_INT_EQ(cuq_convert(TENSOR_TYPE_Q5_0, 1, 32, src, dst, row), -EINVAL);
	const uint16_t one = 0x3C00; /* d = 1, all q = 0: values -16 */
	memcpy(src, &one, 2);
	CHECK_INT_EQ(cuq_convert(TENSOR_TYPE_Q5_0, 1, 32, src, dst, row), 0);
	CHECK_INT_EQ((int8_t)dst[2], -16);
}

TEST(describe)
{
	char buf[64];
	cuq_convert_describe(0, buf, sizeof buf);
	CHECK_STR_EQ(buf, "");
	cuq_convert_describe(1u << TENSOR_TYPE_Q5_0 | 1u << TENSOR_TYPE_Q5_K |
	                             1u << TENSOR_TYPE_Q4_K,
	                     buf, sizeof buf);
	CHECK_STR_EQ(buf, "; q5_0 as q8_0, q5_k as f16");
	cuq_convert_describe(1u << TENSOR_TYPE_Q5_0, buf, 8); /* truncated, terminated */
	CHECK(strlen(buf) == 7);
}

TEST_MAIN()
