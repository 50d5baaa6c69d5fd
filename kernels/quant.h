/*
 * quant.h - tensor element types: GGUF block layouts, fp16/bf16 conversion,
 * and the plain C reference (de)quantizers every backend is checked against.
 *
 * The type ids are GGML's (they are what GGUF files store). A row of n
 * elements of a block type is n / block_size blocks laid out back to back;
 * n must be a multiple of the block size. All functions here are pure and
 * thread-safe; none allocates.
 */
#ifndef INFILL_KERNELS_QUANT_H
#define INFILL_KERNELS_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* X(NAME, ggml id, lowercase name, elements per block, bytes per block) */
#define TENSOR_TYPE_LIST(X)               \
	X(F32, 0, "f32", 1, 4)            \
	X(F16, 1, "f16", 1, 2)            \
	X(Q4_0, 2, "q4_0", 32, 18)        \
	X(Q4_1, 3, "q4_1", 32, 20)        \
	X(Q5_0, 6, "q5_0", 32, 22)        \
	X(Q5_1, 7, "q5_1", 32, 24)        \
	X(Q8_0, 8, "q8_0", 32, 34)        \
	X(Q2_K, 10, "q2_k", 256, 84)      \
	X(Q3_K, 11, "q3_k", 256, 110)     \
	X(Q4_K, 12, "q4_k", 256, 144)     \
	X(Q5_K, 13, "q5_k", 256, 176)     \
	X(Q6_K, 14, "q6_k", 256, 210)     \
	X(IQ4_NL, 20, "iq4_nl", 32, 18)   \
	X(IQ4_XS, 23, "iq4_xs", 256, 136) \
	X(BF16, 30, "bf16", 1, 2)

enum tensor_type {
#define X(name, id, str, bs, bb) TENSOR_TYPE_##name = id,
	TENSOR_TYPE_LIST(X)
#undef X
};

/* ---- block layouts (exactly as stored in GGUF; all little-endian) ---- */

#define QK4_0 32
#define QK8_0 32
#define QK_K  256

/* Q4_0: value(i) = (q(i) - 8) * d. qs[j] low nibble = element j, high nibble = element j + 16. */
struct block_q4_0 {
	uint16_t d; /* fp16 scale */
	uint8_t qs[QK4_0 / 2];
};

/* Q8_0: value(i) = qs[i] * d. */
struct block_q8_0 {
	uint16_t d; /* fp16 scale */
	int8_t qs[QK8_0];
};

/*
 * Q4_K: 256 elements in 8 sub-blocks of 32. Sub-block s has a 6-bit scale
 * sc[s] and 6-bit min m[s] packed in scales[12] (see tensor_q4_k_scale_min);
 * value = d * sc[s] * q - dmin * m[s], q in 0..15. qs holds 4 chunks of 32
 * bytes: chunk c's low nibbles are sub-block 2c (elements 64c + l), its high
 * nibbles sub-block 2c + 1 (elements 64c + 32 + l).
 */
struct block_q4_k {
	uint16_t d;    /* fp16 super-block scale for the scales */
	uint16_t dmin; /* fp16 super-block scale for the mins */
	uint8_t scales[12];
	uint8_t qs[QK_K / 2];
};

/*
 * Q6_K: 256 elements, 16 sub-blocks of 16 each with an int8 scale
 * (scales[i / 16] for element i). value = d * scales[i/16] * (q - 32), q in
 * 0..63 = 4 low bits from ql and 2 high bits from qh. For each half h (128
 * elements, ql + 64h, qh + 32h), l in 0..31:
 *   element l      : ql[l] & 15,       (qh[l] >> 0) & 3
 *   element l + 32 : ql[l + 32] & 15,  (qh[l] >> 2) & 3
 *   element l + 64 : ql[l] >> 4,       (qh[l] >> 4) & 3
 *   element l + 96 : ql[l + 32] >> 4,  (qh[l] >> 6) & 3
 */
struct block_q6_k {
	uint8_t ql[QK_K / 2];
	uint8_t qh[QK_K / 4];
	int8_t scales[QK_K / 16];
	uint16_t d; /* fp16 */
};

/* Q4_1: value(i) = q(i) * d + m, q in 0..15, nibbles packed as Q4_0. */
struct block_q4_1 {
	uint16_t d; /* fp16 scale */
	uint16_t m; /* fp16 min */
	uint8_t qs[QK4_0 / 2];
};

/*
 * Q5_0: value(i) = (q(i) - 16) * d, q in 0..31: the low 4 bits packed as
 * Q4_0, bit 4 of element j is bit j of qh read as a little-endian u32.
 */
struct block_q5_0 {
	uint16_t d; /* fp16 scale */
	uint8_t qh[4];
	uint8_t qs[QK4_0 / 2];
};

/* Q5_1: value(i) = q(i) * d + m, q in 0..31 packed as Q5_0. */
struct block_q5_1 {
	uint16_t d; /* fp16 scale */
	uint16_t m; /* fp16 min */
	uint8_t qh[4];
	uint8_t qs[QK4_0 / 2];
};

/*
 * Q2_K: 256 elements, 16 sub-blocks of 16; scales[s] holds sub-block s's
 * 4-bit scale (low nibble) and 4-bit min (high nibble); value = d * sc * q -
 * dmin * m, q in 0..3. For half h (128 elements, qs + 32h) and shift k (0..3,
 * 2 bits each): elements 128h + 32k + l (l < 32) are (qs[32h + l] >> 2k) & 3,
 * in sub-blocks 8h + 2k (l < 16) and 8h + 2k + 1.
 */
struct block_q2_k {
	uint8_t scales[QK_K / 16];
	uint8_t qs[QK_K / 4];
	uint16_t d;    /* fp16 scale of the scales */
	uint16_t dmin; /* fp16 scale of the mins */
};

/*
 * Q3_K: 256 elements, 16 sub-blocks of 16 with 6-bit scales (stored + 32,
 * see tensor_q3_k_scales); value = d * (sc - 32) * q, q in -4..3: the low 2
 * bits laid out as Q2_K's, minus 4 where the element's bit in hmask is clear.
 * Element 128h + 32k + l's bit is bit 4h + k of hmask[l].
 */
struct block_q3_k {
	uint8_t hmask[QK_K / 8];
	uint8_t qs[QK_K / 4];
	uint8_t scales[12];
	uint16_t d; /* fp16 */
};

/*
 * Q5_K: Q4_K's scales, mins and nibbles plus a fifth bit: element 64c + l
 * adds 16 * ((qh[l] >> 2c) & 1), element 64c + 32 + l adds
 * 16 * ((qh[l] >> (2c + 1)) & 1); value = d * sc * q - dmin * m, q in 0..31.
 */
struct block_q5_k {
	uint16_t d;
	uint16_t dmin;
	uint8_t scales[12];
	uint8_t qh[QK_K / 8];
	uint8_t qs[QK_K / 2];
};

/* IQ4_NL: value(i) = d * tensor_iq4_values[nibble(i)], nibbles packed as Q4_0. */
struct block_iq4_nl {
	uint16_t d; /* fp16 */
	uint8_t qs[QK4_0 / 2];
};

/*
 * IQ4_XS: 256 elements, 8 sub-blocks of 32 with a 6-bit scale ls (low 4 bits
 * in scales_l[s / 2] >> 4 (s % 2), high 2 bits in scales_h >> 2s); value =
 * d * (ls - 32) * tensor_iq4_values[nibble]; sub-block s's 32 nibbles are
 * qs[16s..16s+15] packed as Q4_0.
 */
struct block_iq4_xs {
	uint16_t d; /* fp16 */
	uint16_t scales_h;
	uint8_t scales_l[QK_K / 64];
	uint8_t qs[QK_K / 2];
};

/* The 16 levels of IQ4_NL and IQ4_XS (a non-uniform 4-bit grid). */
extern const int8_t tensor_iq4_values[16];

/* ---- activation blocks: never in a file; what the CPU kernels quantize
 * activations to for some weight types (ggml's Q8_1 and Q8_K) ---- */

/* Q8_1: Q8_0 plus s = fp16(d * sum(qs)), which folds a weight block's min in. */
struct block_q8_1 {
	uint16_t d; /* fp16 */
	uint16_t s; /* fp16 d * sum(qs) */
	int8_t qs[QK8_0];
};

/* Q8_K: 256 values on one float scale, with the sums of each 16 (for the
 * K-quants' mins and offsets). value = d * qs[i]. */
struct block_q8_k {
	float d;
	int8_t qs[QK_K];
	int16_t bsums[QK_K / 16];
};

_Static_assert(sizeof(struct block_q4_0) == 18, "q4_0 block");
_Static_assert(sizeof(struct block_q4_1) == 20, "q4_1 block");
_Static_assert(sizeof(struct block_q5_0) == 22, "q5_0 block");
_Static_assert(sizeof(struct block_q5_1) == 24, "q5_1 block");
_Static_assert(sizeof(struct block_q2_k) == 84, "q2_k block");
_Static_assert(sizeof(struct block_q3_k) == 110, "q3_k block");
_Static_assert(sizeof(struct block_q5_k) == 176, "q5_k block");
_Static_assert(sizeof(struct block_iq4_nl) == 18, "iq4_nl block");
_Static_assert(sizeof(struct block_iq4_xs) == 136, "iq4_xs block");
_Static_assert(sizeof(struct block_q8_1) == 36, "q8_1 block");
_Static_assert(sizeof(struct block_q8_k) == 292, "q8_k block");
_Static_assert(sizeof(struct block_q8_0) == 34, "q8_0 block");
_Static_assert(sizeof(struct block_q4_k) == 144, "q4_k block");
_Static_assert(sizeof(struct block_q6_k) == 210, "q6_k block");

/* Sub-block s (0..7) of a Q4_K block: 6-bit scale and min from the 12 packed bytes. */
static inline void tensor_q4_k_scale_min(const uint8_t *scales, int s, uint8_t *sc, uint8_t *m)
{
	if (s < 4) {
		*sc = scales[s] & 63;
		*m = scales[s + 4] & 63;
	} else {
		*sc = (uint8_t)((scales[s + 4] & 0xF) | ((scales[s - 4] >> 6) << 4));
		*m = (uint8_t)((scales[s + 4] >> 4) | ((scales[s] >> 6) << 4));
	}
}

/* The 16 six-bit scales of a Q3_K block, minus 32 (-32..31): sub-block s < 8
 * has its low 4 bits in scales[s] & 15 (s >= 8: scales[s - 8] >> 4) and its
 * high 2 bits in scales[8 + s % 4] >> 2 (s / 4). */
static inline void tensor_q3_k_scales(const uint8_t *scales, int8_t out[16])
{
	for (int s = 0; s < 16; s++) {
		int lo = s < 8 ? scales[s] & 0xF : scales[s - 8] >> 4;
		int hi = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
		out[s] = (int8_t)((lo | (hi << 4)) - 32);
	}
}

/* ---- type properties ---- */

/* True for the ids in TENSOR_TYPE_LIST. */
bool tensor_type_valid(uint32_t type);
/* Lowercase name ("q4_k"); NULL for an unknown id. Static string. */
const char *tensor_type_name(uint32_t type);
/* Parses a lowercase or uppercase name; false when unknown. */
bool tensor_type_from_name(const char *name, enum tensor_type *out);
/* Elements per block (1 for F32/F16/BF16); 0 for an unknown id. */
int64_t tensor_type_block_size(uint32_t type);
/* Bytes per block; 0 for an unknown id. */
size_t tensor_type_block_bytes(uint32_t type);
/* Bytes of a row of n elements; 0 when the type is unknown, n < 0, n is not
 * a multiple of the block size, or the size would overflow. */
uint64_t tensor_type_row_size(uint32_t type, int64_t n);

/* ---- fp16 / bf16 (IEEE half, bfloat16), round to nearest even ---- */

static inline float tensor_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
	if (exp == 0x1F) {
		bits = sign | 0x7F800000u | (mant << 13);
	} else if (exp != 0) {
		bits = sign | ((exp + 112) << 23) | (mant << 13);
	} else if (mant == 0) {
		bits = sign;
	} else { /* subnormal half: normalize */
		int e = -1;
		do {
			e++;
			mant <<= 1;
		} while (!(mant & 0x400));
		bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3FF) << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static inline uint16_t tensor_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t absx = x & 0x7FFFFFFFu;
	if (absx >= 0x7F800000u) /* inf or nan (keep nan quiet) */
		return (uint16_t)(sign | 0x7C00 | (absx > 0x7F800000u ? 0x200 : 0));
	if (absx >= 0x477FF000u) /* rounds to >= 65520: overflow to inf */
		return (uint16_t)(sign | 0x7C00);
	if (absx < 0x38800000u) {       /* below the smallest normal half: subnormal or zero */
		if (absx < 0x33000000u) /* < 2^-25 rounds to zero */
			return sign;
		uint32_t e = absx >> 23, m = (absx & 0x7FFFFF) | 0x800000;
		uint32_t shift = 126 - e; /* 14..24 */
		uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1))) q++;
		return (uint16_t)(sign | q);
	}
	uint32_t r = absx + 0xFFF + ((absx >> 13) & 1); /* round to nearest even at bit 13 */
	return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

static inline float tensor_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static inline uint16_t tensor_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7FFFFFFFu) > 0x7F800000u) /* nan: keep it a quiet nan */
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

/* ---- reference row conversion (plain C; the tests' ground truth) ---- */

/* Dequantizes n elements (a multiple of the block size) of `src` into dst[n].
 * Returns 0, or -EINVAL for an unknown type or bad n. */
int tensor_row_dequantize(uint32_t type, const void *src, float *dst, int64_t n);

/*
 * Quantizes src[n] into tensor_type_row_size(type, n) bytes at dst.
 * F16/BF16 round to nearest even. Q8_0 and Q4_0 follow ggml's reference
 * round-to-nearest quantizers bit for bit (Q8_0: d = amax/127, q =
 * round(x/d); Q4_0: d = m/-8 where m is the value of largest magnitude, q =
 * min(15, (int)(x/d + 8.5))), and Q5_0 likewise with 16. The other types use
 * our own simple quantizers (quant_q32.c, quant_k.c: per sub-block min/max or
 * max-magnitude scale, scales quantized against the super-block maximum,
 * then round-to-nearest); valid blocks, not identical to ggml's. Returns 0
 * or -EINVAL.
 */
int tensor_row_quantize(uint32_t type, const float *src, void *dst, int64_t n);

#endif
