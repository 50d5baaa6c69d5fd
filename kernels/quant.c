/*
 * quant.c - tensor type table and the plain C reference (de)quantizers.
 *
 * These are the slow, obviously-correct versions: the SIMD and CUDA kernels
 * are tested against them, and the GGUF writer uses the quantizers. Block
 * layouts are documented in quant.h.
 */
#include "quant.h"
#include "quant_internal.h"

#include <errno.h>
#include <math.h>
#include <strings.h>

/* ---- type table ---- */

struct type_desc {
	uint32_t id;
	const char *name;
	int64_t block_size;
	size_t block_bytes;
};

static const struct type_desc type_table[] = {
#define X(name_, id, str, bs, bb) { id, str, bs, bb },
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

/* ---- dequantization ---- */

static void dequant_q4_0(const struct block_q4_0 *b, float *y, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, y += QK4_0) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int j = 0; j < QK4_0 / 2; j++) {
			y[j] = (float)((b[i].qs[j] & 0xF) - 8) * d;
			y[j + QK4_0 / 2] = (float)((b[i].qs[j] >> 4) - 8) * d;
		}
	}
}

static void dequant_q8_0(const struct block_q8_0 *b, float *y, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, y += QK8_0) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int j = 0; j < QK8_0; j++) y[j] = (float)b[i].qs[j] * d;
	}
}

static void dequant_q4_k(const struct block_q4_k *b, float *y, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++) {
		float d = tensor_f16_to_f32(b[i].d), dmin = tensor_f16_to_f32(b[i].dmin);
		const uint8_t *q = b[i].qs;
		for (int c = 0; c < 4; c++, q += 32, y += 64) {
			uint8_t sc0, m0, sc1, m1;
			tensor_q4_k_scale_min(b[i].scales, 2 * c, &sc0, &m0);
			tensor_q4_k_scale_min(b[i].scales, 2 * c + 1, &sc1, &m1);
			float d0 = d * sc0, mn0 = dmin * m0, d1 = d * sc1, mn1 = dmin * m1;
			for (int l = 0; l < 32; l++) {
				y[l] = d0 * (float)(q[l] & 0xF) - mn0;
				y[l + 32] = d1 * (float)(q[l] >> 4) - mn1;
			}
		}
	}
}

static void dequant_q6_k(const struct block_q6_k *b, float *y, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++) {
		float d = tensor_f16_to_f32(b[i].d);
		for (int h = 0; h < 2; h++, y += 128) {
			const uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
			const int8_t *sc = b[i].scales + 8 * h;
			for (int l = 0; l < 32; l++) {
				int is = l / 16;
				int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
				int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
				int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
				int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
				y[l] = d * (float)sc[is] * (float)q1;
				y[l + 32] = d * (float)sc[is + 2] * (float)q2;
				y[l + 64] = d * (float)sc[is + 4] * (float)q3;
				y[l + 96] = d * (float)sc[is + 6] * (float)q4;
			}
		}
	}
}

int tensor_row_dequantize(uint32_t type, const void *src, float *dst, int64_t n)
{
	if (tensor_type_row_size(type, n) == 0 && n != 0) return -EINVAL;
	if (!tensor_type_valid(type)) return -EINVAL;
	const uint8_t *s = src;
	switch ((enum tensor_type)type) {
	case TENSOR_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); return 0;
	case TENSOR_TYPE_F16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, s + 2 * i, 2);
			dst[i] = tensor_f16_to_f32(h);
		}
		return 0;
	case TENSOR_TYPE_BF16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, s + 2 * i, 2);
			dst[i] = tensor_bf16_to_f32(h);
		}
		return 0;
	case TENSOR_TYPE_Q4_0: dequant_q4_0(src, dst, n / QK4_0); return 0;
	case TENSOR_TYPE_Q8_0: dequant_q8_0(src, dst, n / QK8_0); return 0;
	case TENSOR_TYPE_Q4_K: dequant_q4_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_Q6_K: dequant_q6_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_Q4_1: quant_dequant_q4_1(src, dst, n / 32); return 0;
	case TENSOR_TYPE_Q5_0: quant_dequant_q5_0(src, dst, n / 32); return 0;
	case TENSOR_TYPE_Q5_1: quant_dequant_q5_1(src, dst, n / 32); return 0;
	case TENSOR_TYPE_Q2_K: quant_dequant_q2_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_Q3_K: quant_dequant_q3_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_Q5_K: quant_dequant_q5_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_IQ4_NL: quant_dequant_iq4_nl(src, dst, n / 32); return 0;
	case TENSOR_TYPE_IQ4_XS: quant_dequant_iq4_xs(src, dst, n / QK_K); return 0;
	}
	return -EINVAL;
}

/* ---- quantization ---- */

/* ggml's reference Q8_0: d = amax / 127, q = round-half-away(x / d). */
static void quant_q8_0(const float *x, struct block_q8_0 *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += QK8_0) {
		float amax = 0.0f;
		for (int j = 0; j < QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
		float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		b[i].d = tensor_f32_to_f16(d);
		for (int j = 0; j < QK8_0; j++) b[i].qs[j] = (int8_t)roundf(x[j] * id);
	}
}

/* ggml's reference Q4_0: d = m / -8 with m the signed value of largest
 * magnitude, so m maps to q = 0 exactly; q = min(15, (int)(x/d + 8.5)). */
static void quant_q4_0(const float *x, struct block_q4_0 *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += QK4_0) {
		float amax = 0.0f, m = 0.0f;
		for (int j = 0; j < QK4_0; j++) {
			if (fabsf(x[j]) > amax) {
				amax = fabsf(x[j]);
				m = x[j];
			}
		}
		float d = m / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		b[i].d = tensor_f32_to_f16(d);
		for (int j = 0; j < QK4_0 / 2; j++) {
			int q0 = (int)(int8_t)(x[j] * id + 8.5f);
			int q1 = (int)(int8_t)(x[j + QK4_0 / 2] * id + 8.5f);
			q0 = q0 < 15 ? q0 : 15;
			q1 = q1 < 15 ? q1 : 15;
			b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
		}
	}
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Round half away from zero; inline and branch-light (lroundf is a libm
 * call per element, which made quantizing a 1.3B model take minutes). The
 * argument must fit an int: callers pass values already bounded by a scale. */
static int round_int(float x)
{
	return (int)(x + (x >= 0.0f ? 0.5f : -0.5f));
}

/*
 * Q4_K, our own quantizer: per 32-element sub-block, min = min(0, lowest)
 * and scale = (highest - min) / 15; the 8 scales and 8 (negated) mins are
 * quantized to 6 bits against their super-block maxima (d, dmin), then each
 * element is rounded to the nearest level of the *quantized* scale and min,
 * so rounding of the scales does not bias the elements.
 */
static void quant_q4_k(const float *x, struct block_q4_k *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += QK_K) {
		float scale[8], mn[8], max_scale = 0.0f, max_min = 0.0f;
		for (int s = 0; s < 8; s++) {
			float lo = x[32 * s], hi = x[32 * s];
			for (int l = 1; l < 32; l++) {
				lo = fminf(lo, x[32 * s + l]);
				hi = fmaxf(hi, x[32 * s + l]);
			}
			if (lo > 0.0f) lo = 0.0f;
			scale[s] = (hi - lo) / 15.0f;
			mn[s] = -lo;
			max_scale = fmaxf(max_scale, scale[s]);
			max_min = fmaxf(max_min, mn[s]);
		}
		float d = max_scale / 63.0f, dmin = max_min / 63.0f;
		b[i].d = tensor_f32_to_f16(d);
		b[i].dmin = tensor_f32_to_f16(dmin);
		d = tensor_f16_to_f32(b[i].d);
		dmin = tensor_f16_to_f32(b[i].dmin);
		uint8_t sc[8], m[8];
		for (int s = 0; s < 8; s++) {
			sc[s] = (uint8_t)clampi(d > 0.0f ? (int)lroundf(scale[s] / d) : 0, 0, 63);
			m[s] = (uint8_t)clampi(dmin > 0.0f ? (int)lroundf(mn[s] / dmin) : 0, 0, 63);
		}
		for (int j = 0; j < 4; j++) {
			b[i].scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
			b[i].scales[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
			b[i].scales[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
		}
		uint8_t q[QK_K];
		for (int s = 0; s < 8; s++) {
			float ds = d * sc[s], ms = dmin * m[s], ids = ds > 0.0f ? 1.0f / ds : 0.0f;
			for (int l = 0; l < 32; l++) {
				float v = (x[32 * s + l] + ms) * ids;
				v = v < 0.0f ? 0.0f : v > 15.0f ? 15.0f : v;
				q[32 * s + l] = (uint8_t)round_int(v);
			}
		}
		for (int c = 0; c < 4; c++)
			for (int l = 0; l < 32; l++)
				b[i].qs[32 * c + l] =
				        (uint8_t)(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
	}
}

/*
 * Q6_K, our own quantizer: per 16-element sub-block a signed scale m / -32
 * (m the value of largest magnitude, as Q4_0 does, so q spans -32..31), the
 * 16 scales quantized to int8 against their maximum magnitude (d = max/127),
 * then elements rounded against the quantized scale.
 */
static void quant_q6_k(const float *x, struct block_q6_k *b, int64_t nb)
{
	for (int64_t i = 0; i < nb; i++, x += QK_K) {
		float scale[16], max_abs_scale = 0.0f;
		for (int s = 0; s < 16; s++) {
			float amax = 0.0f, m = 0.0f;
			for (int l = 0; l < 16; l++) {
				float v = x[16 * s + l];
				if (fabsf(v) > amax) {
					amax = fabsf(v);
					m = v;
				}
			}
			scale[s] = m / -32.0f;
			max_abs_scale = fmaxf(max_abs_scale, fabsf(scale[s]));
		}
		float d = max_abs_scale / 127.0f;
		b[i].d = tensor_f32_to_f16(d);
		d = tensor_f16_to_f32(b[i].d);
		uint8_t q[QK_K];
		for (int s = 0; s < 16; s++) {
			int sc = d > 0.0f ? clampi((int)lroundf(scale[s] / d), -127, 127) : 0;
			b[i].scales[s] = (int8_t)sc;
			float ds = d * (float)sc, ids = ds != 0.0f ? 1.0f / ds : 0.0f;
			for (int l = 0; l < 16; l++) {
				float v = x[16 * s + l] * ids;
				v = v < -32.0f ? -32.0f : v > 31.0f ? 31.0f : v;
				q[16 * s + l] = (uint8_t)(round_int(v) + 32);
			}
		}
		for (int h = 0; h < 2; h++) {
			uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
			const uint8_t *qq = q + 128 * h;
			for (int l = 0; l < 32; l++) {
				uint8_t q1 = qq[l], q2 = qq[l + 32], q3 = qq[l + 64],
				        q4 = qq[l + 96];
				ql[l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
				ql[l + 32] = (uint8_t)((q2 & 0xF) | ((q4 & 0xF) << 4));
				qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
				                  ((q4 >> 4) << 6));
			}
		}
	}
}

int tensor_row_quantize(uint32_t type, const float *src, void *dst, int64_t n)
{
	if (!tensor_type_valid(type) || (tensor_type_row_size(type, n) == 0 && n != 0))
		return -EINVAL;
	uint8_t *d = dst;
	switch ((enum tensor_type)type) {
	case TENSOR_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); return 0;
	case TENSOR_TYPE_F16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h = tensor_f32_to_f16(src[i]);
			memcpy(d + 2 * i, &h, 2);
		}
		return 0;
	case TENSOR_TYPE_BF16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h = tensor_f32_to_bf16(src[i]);
			memcpy(d + 2 * i, &h, 2);
		}
		return 0;
	case TENSOR_TYPE_Q4_0: quant_q4_0(src, dst, n / QK4_0); return 0;
	case TENSOR_TYPE_Q8_0: quant_q8_0(src, dst, n / QK8_0); return 0;
	case TENSOR_TYPE_Q4_K: quant_q4_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_Q6_K: quant_q6_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_Q4_1: quant_quant_q4_1(src, dst, n / 32); return 0;
	case TENSOR_TYPE_Q5_0: quant_quant_q5_0(src, dst, n / 32); return 0;
	case TENSOR_TYPE_Q5_1: quant_quant_q5_1(src, dst, n / 32); return 0;
	case TENSOR_TYPE_Q2_K: quant_quant_q2_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_Q3_K: quant_quant_q3_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_Q5_K: quant_quant_q5_k(src, dst, n / QK_K); return 0;
	case TENSOR_TYPE_IQ4_NL: quant_quant_iq4_nl(src, dst, n / 32); return 0;
	case TENSOR_TYPE_IQ4_XS: quant_quant_iq4_xs(src, dst, n / QK_K); return 0;
	}
	return -EINVAL;
}
