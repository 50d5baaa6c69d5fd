/*
 * convert.c - weight types without CUDA kernels, converted at upload (see
 * convert.h for why and at what cost).
 */
#include "convert.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quant.h"

int cuq_convert_target(uint32_t type)
{
	switch (type) {
	case TENSOR_TYPE_F32:
	case TENSOR_TYPE_F16:
	case TENSOR_TYPE_BF16:
	case TENSOR_TYPE_Q8_0:
	case TENSOR_TYPE_Q4_0:
	case TENSOR_TYPE_Q4_K:
	case TENSOR_TYPE_Q6_K: return (int)type;
	case TENSOR_TYPE_Q5_0:
	case TENSOR_TYPE_IQ4_NL: return TENSOR_TYPE_Q8_0;
	case TENSOR_TYPE_Q4_1:
	case TENSOR_TYPE_Q5_1:
	case TENSOR_TYPE_Q2_K:
	case TENSOR_TYPE_Q3_K:
	case TENSOR_TYPE_Q5_K:
	case TENSOR_TYPE_IQ4_XS: return TENSOR_TYPE_F16;
	default: return -1;
	}
}

/* One row of a 32-value type whose blocks start with an f16 scale d and
 * whose values are d times an integer in [-128, 127] (Q5_0: q - 16, IQ4_NL:
 * a table entry): the same d and those integers are a Q8_0 row. The integer
 * is recovered by division, which is exact for such products; anything else
 * (a NaN or infinite scale in a corrupt file) is refused, not rounded. */
static int row_to_q8_0(const uint8_t *src, size_t block_bytes, const float *x, int64_t cols,
                       uint8_t *dst)
{
	for (int64_t b = 0; b < cols / 32; b++) {
		const uint8_t *sb = src + (size_t)b * block_bytes;
		uint8_t *db = dst + (size_t)b * 34;
		uint16_t d16;
		memcpy(&d16, sb, 2);
		memcpy(db, &d16, 2);
		const float d = tensor_f16_to_f32(d16);
		for (int i = 0; i < 32; i++) {
			const float v = x[b * 32 + i];
			const float k = d != 0.0f ? rintf(v / d) : 0.0f;
			if (!(k >= -128.0f && k <= 127.0f) || k * d != v) return -EINVAL;
			db[2 + i] = (uint8_t)(int8_t)k;
		}
	}
	return 0;
}

int cuq_convert(uint32_t type, int64_t rows, int64_t cols, const void *src, void *dst, float *row)
{
	const int target = cuq_convert_target(type);
	const int64_t bs = tensor_type_block_size(type);
	if (target < 0 || target == (int)type || rows < 0 || cols <= 0 || bs <= 0 || cols % bs)
		return -EINVAL;
	const size_t in_row = (size_t)tensor_type_row_size(type, cols);
	const size_t out_row = (size_t)tensor_type_row_size((uint32_t)target, cols);
	for (int64_t r = 0; r < rows; r++) {
		const uint8_t *s = (const uint8_t *)src + (size_t)r * in_row;
		uint8_t *d = (uint8_t *)dst + (size_t)r * out_row;
		int rc = tensor_row_dequantize(type, s, row, cols);
		if (rc) return rc;
		if (target == TENSOR_TYPE_Q8_0) {
			rc = row_to_q8_0(s, tensor_type_block_bytes(type), row, cols, d);
			if (rc) return rc;
		} else {
			uint16_t *h = (uint16_t *)d;
			for (int64_t i = 0; i < cols; i++) h[i] = tensor_f32_to_f16(row[i]);
		}
	}
	return 0;
}

void cuq_convert_describe(uint32_t mask, char *buf, size_t n)
{
	if (!n) return;
	buf[0] = '\0';
	size_t at = 0;
	for (uint32_t t = 0; t < 32 && at < n; t++) {
		const int to = cuq_convert_target(t);
		if (!(mask >> t & 1) || to < 0 || to == (int)t) continue;
		int k = snprintf(buf + at, n - at, "%s%s as %s", at ? ", " : "; ",
		                 tensor_type_name(t), tensor_type_name((uint32_t)to));
		if (k < 0) break;
		at += (size_t)k;
	}
}
