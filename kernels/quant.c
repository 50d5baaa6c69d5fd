/*
 * quant.c - the tensor type table: each type's name, block shape and its
 * plain C reference row converters (quant_q32.c, quant_k.c; the float types
 * here). These are the slow, obviously-correct versions: the SIMD and CUDA
 * kernels are tested against them, and the GGUF writer uses the
 * quantizers. Block layouts are documented in quant.h.
 */
#include "quant.h"
#include "quant_internal.h"

#include <errno.h>
#include <math.h>
#include <strings.h>

/* ---- type table ---- */

/* nb counts blocks; the float types' blocks are one value. */
typedef void (*type_dequant_fn)(const void *src, float *y, int64_t nb);
typedef void (*type_quant_fn)(const float *x, void *dst, int64_t nb);

struct type_desc {
	uint32_t id;
	const char *name;
	int64_t block_size;
	size_t block_bytes;
	type_dequant_fn dequant;
	type_quant_fn quant;
};

static void dequant_f32(const void *src, float *y, int64_t n)
{
	memcpy(y, src, (size_t)n * sizeof(float));
}

static void quant_f32(const float *x, void *dst, int64_t n)
{
	memcpy(dst, x, (size_t)n * sizeof(float));
}

static void dequant_f16(const void *src, float *y, int64_t n)
{
	const uint8_t *s = src;
	for (int64_t i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, s + 2 * i, 2);
		y[i] = tensor_f16_to_f32(h);
	}
}

static void quant_f16(const float *x, void *dst, int64_t n)
{
	uint8_t *d = dst;
	for (int64_t i = 0; i < n; i++) {
		uint16_t h = tensor_f32_to_f16(x[i]);
		memcpy(d + 2 * i, &h, 2);
	}
}

static void dequant_bf16(const void *src, float *y, int64_t n)
{
	const uint8_t *s = src;
	for (int64_t i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, s + 2 * i, 2);
		y[i] = tensor_bf16_to_f32(h);
	}
}

static void quant_bf16(const float *x, void *dst, int64_t n)
{
	uint8_t *d = dst;
	for (int64_t i = 0; i < n; i++) {
		uint16_t h = tensor_f32_to_bf16(x[i]);
		memcpy(d + 2 * i, &h, 2);
	}
}

/* Each type's converters, by the name TENSOR_TYPE_LIST gives it. */
#define TYPE_FNS_F32    dequant_f32, quant_f32
#define TYPE_FNS_F16    dequant_f16, quant_f16
#define TYPE_FNS_BF16   dequant_bf16, quant_bf16
#define TYPE_FNS_Q4_0   quant_dequant_q4_0, quant_quant_q4_0
#define TYPE_FNS_Q4_1   quant_dequant_q4_1, quant_quant_q4_1
#define TYPE_FNS_Q5_0   quant_dequant_q5_0, quant_quant_q5_0
#define TYPE_FNS_Q5_1   quant_dequant_q5_1, quant_quant_q5_1
#define TYPE_FNS_Q8_0   quant_dequant_q8_0, quant_quant_q8_0
#define TYPE_FNS_Q2_K   quant_dequant_q2_k, quant_quant_q2_k
#define TYPE_FNS_Q3_K   quant_dequant_q3_k, quant_quant_q3_k
#define TYPE_FNS_Q4_K   quant_dequant_q4_k, quant_quant_q4_k
#define TYPE_FNS_Q5_K   quant_dequant_q5_k, quant_quant_q5_k
#define TYPE_FNS_Q6_K   quant_dequant_q6_k, quant_quant_q6_k
#define TYPE_FNS_IQ4_NL quant_dequant_iq4_nl, quant_quant_iq4_nl
#define TYPE_FNS_IQ4_XS quant_dequant_iq4_xs, quant_quant_iq4_xs

static const struct type_desc type_table[] = {
#define X(name_, id, str, bs, bb) { id, str, bs, bb, TYPE_FNS_##name_ },
	TENSOR_TYPE_LIST(X)
#undef X
};

static const struct type_desc *type_find(uint32_t type)
{
	for (size_t i = 0; i < sizeof type_table / sizeof type_table[0]; i++)
		if (type_table[i].id == type) return &type_table[i];
	return NULL;
}

bool tensor_type_valid(uint32_t type)
{
	return type_find(type) != NULL;
}

const char *tensor_type_name(uint32_t type)
{
	const struct type_desc *d = type_find(type);
	return d ? d->name : NULL;
}

bool tensor_type_from_name(const char *name, enum tensor_type *out)
{
	for (size_t i = 0; i < sizeof type_table / sizeof type_table[0]; i++) {
		if (!strcasecmp(name, type_table[i].name)) {
			*out = (enum tensor_type)type_table[i].id;
			return true;
		}
	}
	return false;
}

int64_t tensor_type_block_size(uint32_t type)
{
	const struct type_desc *d = type_find(type);
	return d ? d->block_size : 0;
}

size_t tensor_type_block_bytes(uint32_t type)
{
	const struct type_desc *d = type_find(type);
	return d ? d->block_bytes : 0;
}

uint64_t tensor_type_row_size(uint32_t type, int64_t n)
{
	const struct type_desc *d = type_find(type);
	if (!d || n < 0 || n % d->block_size != 0) return 0;
	uint64_t blocks = (uint64_t)(n / d->block_size);
	if (blocks > UINT64_MAX / d->block_bytes) return 0;
	return blocks * d->block_bytes;
}

/* ---- row conversion ---- */

int tensor_row_dequantize(uint32_t type, const void *src, float *dst, int64_t n)
{
	const struct type_desc *d = type_find(type);
	if (!d || (tensor_type_row_size(type, n) == 0 && n != 0)) return -EINVAL;
	d->dequant(src, dst, n / d->block_size);
	return 0;
}

int tensor_row_quantize(uint32_t type, const float *src, void *dst, int64_t n)
{
	const struct type_desc *d = type_find(type);
	if (!d || (tensor_type_row_size(type, n) == 0 && n != 0)) return -EINVAL;
	d->quant(src, dst, n / d->block_size);
	return 0;
}
