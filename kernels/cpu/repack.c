/*
 * repack.c - the weight types of packings.c's `packings` table re-laid out into
 * 8-row panels at load (plain C), the layouts the sets' panel
 * kernels (kern_avx2.c, kern_avx512.c) read for decode and prefill alike.
 *
 * A panel holds 8 consecutive rows of nb = n / 32 blocks in exactly the
 * bytes of those 8 rows in the file (8 * 18 * nb), so row r0 (a multiple of
 * 8) of a packed tensor still starts at r0 * row_size and the matmul code
 * cuts the work as for rows. Blocks go in groups of 4 (the last one may
 * hold fewer, k), each group
 *
 *   [k][8] fp16 scales           block b, row i: the row's block scale
 *   [k][4][8] uint32 quants      block b, vector kk, row i: bytes 4kk..4kk+3
 *                                of the row's 16 quant bytes (low nibbles:
 *                                values 4kk..4kk+3, high: 16+4kk..16+4kk+3)
 *
 * (cpu_p8_scales_at, cpu_p8_quants_at), so a panel is read front to back:
 * one stream from DRAM. With all the scales first, one core streamed
 * 28-29 GB/s in decode where one stream gives 36-39 (AVX-512 host,
 * 1000 MB, nt=1). A group of 4 keeps every vector inside a cache line
 * (Q4_0: 64 + 512 bytes, Q8_0: 64 + 1024).
 *
 * Q8_0 panels are the same with 8 vectors per block of the rows' 32 signed
 * quant bytes (bytes 4kk..4kk+3: values 4kk..4kk+3).
 *
 * One 32-byte vector is then one dword lane per row: a kernel unpacks the
 * nibbles with an and / a shift and an and, and one maddubs against a
 * token's 4 activation bytes broadcast does 8 rows x 4 products. The last
 * panel of a row count that is not a multiple of 8 is padded with zero rows
 * (scale 0), whose results the kernel does not store.
 */
#include "cpu.h"

#include <string.h>

#include "quant.h"

/* Q4_0 and Q8_0 alike: blocks of an fp16 scale then q quant bytes (16 or
 * 32), packed as above with q / 4 vectors per block. */
static size_t dq_bytes(int64_t nr, int64_t nb, int q)
{
	return (size_t)((nr + 7) / 8) * 8 * (size_t)nb * (size_t)(2 + q);
}

static void dq_pack(const void *w, size_t w_stride, int64_t nr, int64_t nb, int q, int64_t p0,
                    int64_t p1, void *dst)
{
	size_t blk = (size_t)(2 + q), panel = 8 * (size_t)nb * blk;
	for (int64_t p = p0; p < p1; p++) {
		unsigned char *pn = (unsigned char *)dst + (size_t)p * panel;
		if (p * 8 + 8 > nr) memset(pn, 0, panel); /* the padding rows of a last panel */
		for (int i = 0; i < 8 && p * 8 + i < nr; i++) {
			const unsigned char *row =
			        (const unsigned char *)w + (size_t)(p * 8 + i) * w_stride;
			for (int64_t b = 0; b < nb; b++) {
				unsigned char *qs = pn + cpu_p8_quants_at(b, nb, 8 * blk);
				memcpy(pn + cpu_p8_scales_at(b, 8 * blk) + 2 * i,
				       row + (size_t)b * blk, 2);
				for (int kk = 0; kk < q / 4; kk++)
					memcpy(qs + kk * 32 + 4 * i,
					       row + (size_t)b * blk + 2 + 4 * kk, 4);
			}
		}
	}
}

/* Row r of a packed tensor (nb blocks of 2 + q bytes) dequantized into y,
 * 8 blocks at a time put back as the file held them, then the file's
 * dequantizer: the same values bit for bit. */
static void dq_dequantize(uint32_t type, const void *packed, int64_t nb, int q, int64_t r, float *y)
{
	size_t blk = (size_t)(2 + q);
	const unsigned char *pn = (const unsigned char *)packed + (size_t)(r / 8) * 8 * nb * blk;
	int i = (int)(r % 8);
	unsigned char blocks[8 * (2 + 32)];
	for (int64_t b0 = 0; b0 < nb; b0 += 8) {
		int64_t k = nb - b0 < 8 ? nb - b0 : 8;
		for (int64_t b = 0; b < k; b++) {
			const unsigned char *qs = pn + cpu_p8_quants_at(b0 + b, nb, 8 * blk);
			memcpy(blocks + (size_t)b * blk,
			       pn + cpu_p8_scales_at(b0 + b, 8 * blk) + 2 * i, 2);
			for (int kk = 0; kk < q / 4; kk++)
				memcpy(blocks + (size_t)b * blk + 2 + 4 * kk, qs + kk * 32 + 4 * i,
				       4);
		}
		tensor_row_dequantize(type, blocks, y + b0 * 32, k * 32);
	}
}

void cpu_il_pack(const void *x, size_t x_stride, int64_t n, void *il)
{
	int64_t nb = n / 32;
	for (int j = 0; j < 8; j++) {
		const char *r = (const char *)x + (size_t)j * x_stride;
		struct cpu_q8_tail t = cpu_q8_tail_of(r, nb);
		for (int64_t b = 0; b < nb; b++) {
			char *d = (char *)il + (size_t)b * CPU_IL_BLK;
			int32_t bias4 = t.bias[b] >> 4; /* -128 sum(x): exact */
			memcpy(d + 32 * j, r + (size_t)b * 34 + 2, 32);
			memcpy(d + CPU_IL_BIAS4 + 4 * j, &bias4, 4);
			memcpy(d + CPU_IL_BIAS + 4 * j, &t.bias[b], 4);
			memcpy(d + CPU_IL_D + 4 * j, &t.d[b], 4);
		}
	}
}

size_t cpu_q4_0_p8_bytes(int64_t nr, int64_t n)
{
	return dq_bytes(nr, n / QK4_0, 16);
}

void cpu_q4_0_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst)
{
	dq_pack(w, w_stride, nr, n / QK4_0, 16, p0, p1, dst);
}

void cpu_q4_0_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	dq_dequantize(TENSOR_TYPE_Q4_0, packed, n / QK4_0, 16, r, y);
}

size_t cpu_q8_0_p8_bytes(int64_t nr, int64_t n)
{
	return dq_bytes(nr, n / QK8_0, 32);
}

void cpu_q8_0_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst)
{
	dq_pack(w, w_stride, nr, n / QK8_0, 32, p0, p1, dst);
}

void cpu_q8_0_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	dq_dequantize(TENSOR_TYPE_Q8_0, packed, n / QK8_0, 32, r, y);
}

/*
 * Q5_0 and Q5_1 panels: 8 rows of nb blocks in the rows' bytes (8 * 22 or
 * 8 * 24 per block), the fp16 fields first, then per block the fifth bits
 * and the nibbles (160 bytes, 32-byte aligned vectors):
 *
 *   [nb][ns][8] fp16             block b, field f (d; Q5_1: d then m), row i
 *   [nb] { [8] uint32 qh         row i: the row's 32 fifth bits, transposed
 *          [4][8] uint32 qs }    vector kk, row i: as Q4_0's
 *
 * The fifth bits are moved inside their dword so that a vector's are one
 * shift and an and away: bit 8m + v of the stored word is the file's bit
 * 4v + m, so group v (v = kk: the low nibbles of vector kk, values 4kk + m;
 * v = 4 + kk: its high nibbles, values 16 + 4kk + m) has byte m's bit at
 * bit v of byte m. The row reader puts them back.
 */
static uint32_t q5_qh_transpose(uint32_t h)
{
	uint32_t t = 0;
	for (int v = 0; v < 8; v++)
		for (int m = 0; m < 4; m++) t |= ((h >> (4 * v + m)) & 1u) << (8 * m + v);
	return t;
}

static uint32_t q5_qh_untranspose(uint32_t t)
{
	uint32_t h = 0;
	for (int v = 0; v < 8; v++)
		for (int m = 0; m < 4; m++) h |= ((t >> (8 * m + v)) & 1u) << (4 * v + m);
	return h;
}

/* ns fp16 fields, then qh[4] and qs[16]: Q5_0 (ns 1) and Q5_1 (ns 2). */
static size_t q5_bytes(int64_t nr, int64_t nb, int ns)
{
	return (size_t)((nr + 7) / 8) * 8 * (size_t)nb * (size_t)(2 * ns + 20);
}

static void q5_pack(const void *w, size_t w_stride, int64_t nr, int64_t nb, int ns, int64_t p0,
                    int64_t p1, void *dst)
{
	size_t blk = (size_t)(2 * ns + 20), panel = 8 * (size_t)nb * blk;
	for (int64_t p = p0; p < p1; p++) {
		unsigned char *sc = (unsigned char *)dst + (size_t)p * panel;
		unsigned char *qv = sc + 16 * (size_t)ns * (size_t)nb;
		if (p * 8 + 8 > nr) memset(sc, 0, panel); /* the padding rows of a last panel */
		for (int i = 0; i < 8 && p * 8 + i < nr; i++) {
			const unsigned char *row =
			        (const unsigned char *)w + (size_t)(p * 8 + i) * w_stride;
			for (int64_t b = 0; b < nb; b++) {
				const unsigned char *bl = row + (size_t)b * blk;
				unsigned char *q = qv + (size_t)b * 160;
				for (int f = 0; f < ns; f++)
					memcpy(sc + ((size_t)b * ns + f) * 16 + 2 * i, bl + 2 * f,
					       2);
				uint32_t h;
				memcpy(&h, bl + 2 * ns, 4);
				h = q5_qh_transpose(h);
				memcpy(q + 4 * i, &h, 4);
				for (int kk = 0; kk < 4; kk++)
					memcpy(q + 32 + 32 * kk + 4 * i, bl + 2 * ns + 4 + 4 * kk,
					       4);
			}
		}
	}
}

/* Row r put back block by block as the file held it, then the file's
 * dequantizer: the same values bit for bit. */
static void q5_dequantize(uint32_t type, const void *packed, int64_t nb, int ns, int64_t r,
                          float *y)
{
	size_t blk = (size_t)(2 * ns + 20);
	const unsigned char *sc = (const unsigned char *)packed + (size_t)(r / 8) * 8 * nb * blk;
	const unsigned char *qv = sc + 16 * (size_t)ns * (size_t)nb;
	int i = (int)(r % 8);
	unsigned char blocks[8 * 24];
	for (int64_t b0 = 0; b0 < nb; b0 += 8) {
		int64_t k = nb - b0 < 8 ? nb - b0 : 8;
		for (int64_t b = 0; b < k; b++) {
			unsigned char *bl = blocks + (size_t)b * blk;
			const unsigned char *q = qv + (size_t)(b0 + b) * 160;
			for (int f = 0; f < ns; f++)
				memcpy(bl + 2 * f, sc + ((size_t)(b0 + b) * ns + f) * 16 + 2 * i,
				       2);
			uint32_t h;
			memcpy(&h, q + 4 * i, 4);
			h = q5_qh_untranspose(h);
			memcpy(bl + 2 * ns, &h, 4);
			for (int kk = 0; kk < 4; kk++)
				memcpy(bl + 2 * ns + 4 + 4 * kk, q + 32 + 32 * kk + 4 * i, 4);
		}
		tensor_row_dequantize(type, blocks, y + b0 * 32, k * 32);
	}
}

size_t cpu_q5_0_p8_bytes(int64_t nr, int64_t n)
{
	return q5_bytes(nr, n / QK4_0, 1);
}

void cpu_q5_0_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst)
{
	q5_pack(w, w_stride, nr, n / QK4_0, 1, p0, p1, dst);
}

void cpu_q5_0_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	q5_dequantize(TENSOR_TYPE_Q5_0, packed, n / QK4_0, 1, r, y);
}

size_t cpu_q5_1_p8_bytes(int64_t nr, int64_t n)
{
	return q5_bytes(nr, n / QK4_0, 2);
}

void cpu_q5_1_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst)
{
	q5_pack(w, w_stride, nr, n / QK4_0, 2, p0, p1, dst);
}

void cpu_q5_1_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	q5_dequantize(TENSOR_TYPE_Q5_1, packed, n / QK4_0, 2, r, y);
}

/*
 * Q4_K panels: 8 rows of nsb = n / 256 super-blocks, again in exactly the
 * bytes of those rows (8 * 144 per super-block), one super-block of the 8
 * rows after the other (1152 bytes, 18 cache lines read in order):
 *
 *   +0    [8] fp16 d             row i: the row's super-block scale
 *   +16   [8] fp16 dmin          row i: its scale of the mins
 *   +32   [3][8] uint32 scales   word j, row i: bytes 4j..4j+3 of the row's
 *                                12 packed 6-bit scales and mins
 *   +128  [4][8][8] uint32 qs    group c, word kk, row i: bytes
 *                                32c + 4kk .. +3 of the row's quants (low
 *                                nibbles: sub-block 2c values 4kk..4kk+3,
 *                                high: sub-block 2c + 1)
 *
 * A kernel unpacks the 8 rows' scales and mins with the word arithmetic
 * of tensor_q4_k_scale_min done in 8 lanes at once (a few ops per
 * super-block, shared by a tile's tokens), so nothing is widened in memory
 * and the packed tensor is the size of the file's.
 *
 * Q5_K panels are the same with the rows' qh between (8 * 176 = 1408 bytes
 * a super-block):
 *
 *   +128  [8][8] uint32 qh       word kk, row i: bytes 4kk..4kk+3 of qh
 *   +384  [4][8][8] uint32 qs    as Q4_K's
 *
 * Byte m of qh word kk holds the fifth bits of value 4kk + m of all 8
 * sub-blocks (bit s: sub-block s), the positions of the qs word's bytes,
 * so sub-block s's bits are a shift (by 4 - s) and an and (0x10) away,
 * from one vector that serves the super-block's 8 sub-blocks.
 *
 * Both are the file's blocks after d and dmin cut in dwords, dword w of
 * row i's block at +32 + 32w + 4i: one packer and one row reader.
 */
#define Q4K_P8_SB (8 * sizeof(struct block_q4_k)) /* bytes of one super-block of a panel */
#define Q5K_P8_SB (8 * sizeof(struct block_q5_k))

static void k4_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                    size_t blk, void *dst)
{
	int64_t nsb = n / QK_K;
	size_t panel = 8 * blk * (size_t)nsb;
	for (int64_t p = p0; p < p1; p++) {
		unsigned char *pd = (unsigned char *)dst + (size_t)p * panel;
		if (p * 8 + 8 > nr) memset(pd, 0, panel); /* the padding rows of a last panel */
		for (int i = 0; i < 8 && p * 8 + i < nr; i++) {
			const unsigned char *row =
			        (const unsigned char *)w + (size_t)(p * 8 + i) * w_stride;
			for (int64_t b = 0; b < nsb; b++) {
				const unsigned char *bl = row + (size_t)b * blk;
				unsigned char *sb = pd + (size_t)b * 8 * blk;
				memcpy(sb + 2 * i, bl, 2);
				memcpy(sb + 16 + 2 * i, bl + 2, 2);
				for (size_t k = 0; k < (blk - 4) / 4; k++)
					memcpy(sb + 32 + 32 * k + 4 * i, bl + 4 + 4 * k, 4);
			}
		}
	}
}

/* Row r put back block by block as the file held it, then the file's
 * dequantizer: the same values bit for bit. */
static void k4_dequantize(uint32_t type, const void *packed, int64_t n, int64_t r, size_t blk,
                          float *y)
{
	int64_t nsb = n / QK_K;
	const unsigned char *pd = (const unsigned char *)packed + (size_t)(r / 8) * 8 * blk * nsb;
	int i = (int)(r % 8);
	for (int64_t b = 0; b < nsb; b++) {
		const unsigned char *sb = pd + (size_t)b * 8 * blk;
		struct block_q5_k bl; /* the largest of the three */
		unsigned char *o = (unsigned char *)&bl;
		memcpy(o, sb + 2 * i, 2);
		memcpy(o + 2, sb + 16 + 2 * i, 2);
		for (size_t k = 0; k < (blk - 4) / 4; k++)
			memcpy(o + 4 + 4 * k, sb + 32 + 32 * k + 4 * i, 4);
		tensor_row_dequantize(type, &bl, y + b * QK_K, QK_K);
	}
}

size_t cpu_q4_k_p8_bytes(int64_t nr, int64_t n)
{
	return (size_t)((nr + 7) / 8) * Q4K_P8_SB * (size_t)(n / QK_K);
}

void cpu_q4_k_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst)
{
	k4_pack(w, w_stride, nr, n, p0, p1, sizeof(struct block_q4_k), dst);
}

void cpu_q4_k_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	k4_dequantize(TENSOR_TYPE_Q4_K, packed, n, r, sizeof(struct block_q4_k), y);
}

size_t cpu_q5_k_p8_bytes(int64_t nr, int64_t n)
{
	return (size_t)((nr + 7) / 8) * Q5K_P8_SB * (size_t)(n / QK_K);
}

void cpu_q5_k_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst)
{
	k4_pack(w, w_stride, nr, n, p0, p1, sizeof(struct block_q5_k), dst);
}

void cpu_q5_k_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	k4_dequantize(TENSOR_TYPE_Q5_K, packed, n, r, sizeof(struct block_q5_k), y);
}

/*
 * IQ4_XS panels: the same cut (8 * 136 = 1088 bytes a super-block):
 *
 *   +0    [8] fp16 d             row i: the row's super-block scale
 *   +16   [8] uint16 scales_h    row i: the high 2 bits of its 8 scales
 *   +32   [8] uint32 scales_l    row i: the low 4 bits (sub-block s: bits 4s..)
 *   +64   [32][8] uint32 qs      word k, row i: bytes 4k..4k+3 of the row's
 *                                quants (low nibbles: values 32(k/4) + 4(k%4)
 *                                ..+3, high: the same + 16)
 *
 * so a sub-block's 32 values of 8 rows are 4 vectors, and its 8 rows'
 * scales two shifts and two ands of one vector each.
 */
#define IQ4XS_P8_SB (8 * sizeof(struct block_iq4_xs))

size_t cpu_iq4_xs_p8_bytes(int64_t nr, int64_t n)
{
	return (size_t)((nr + 7) / 8) * IQ4XS_P8_SB * (size_t)(n / QK_K);
}

void cpu_iq4_xs_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0,
                        int64_t p1, void *dst)
{
	k4_pack(w, w_stride, nr, n, p0, p1, sizeof(struct block_iq4_xs), dst);
}

void cpu_iq4_xs_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	k4_dequantize(TENSOR_TYPE_IQ4_XS, packed, n, r, sizeof(struct block_iq4_xs), y);
}

/*
 * Q6_K panels: 8 rows of nsb super-blocks in the rows' bytes (8 * 210 per
 * super-block, 1680), one super-block of the 8 rows after the other:
 *
 *   +0     [8] fp16 d                row i: the row's super-block scale
 *   +16    [16][8] int8 scales       group g (16 values), row i
 *   +144   [2][2][8][8] uint32 ql    half h, e, word kk, row i: bytes
 *                                    64h + 32e + 4kk .. +3 of the row's ql
 *   +1168  [2][8][8] uint32 qh       half h, word kk, row i: bytes
 *                                    32h + 4kk .. +3 of the row's qh
 *
 * Value 128h + 32c + 4kk + m of a row is the low (c < 2) or high nibble of
 * ql word (h, e = c % 2, kk) byte m, with bits 2c, 2c + 1 of qh word
 * (h, kk) byte m on top, less 32 (kern_ref.c kdec_q6_k).
 */
#define Q6K_P8_SB (8 * sizeof(struct block_q6_k))

size_t cpu_q6_k_p8_bytes(int64_t nr, int64_t n)
{
	return (size_t)((nr + 7) / 8) * Q6K_P8_SB * (size_t)(n / QK_K);
}

void cpu_q6_k_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst)
{
	int64_t nsb = n / QK_K;
	size_t panel = Q6K_P8_SB * (size_t)nsb;
	for (int64_t p = p0; p < p1; p++) {
		unsigned char *pd = (unsigned char *)dst + (size_t)p * panel;
		if (p * 8 + 8 > nr) memset(pd, 0, panel); /* the padding rows of a last panel */
		for (int i = 0; i < 8 && p * 8 + i < nr; i++) {
			const struct block_q6_k *row =
			        (const struct block_q6_k *)((const char *)w +
			                                    (size_t)(p * 8 + i) * w_stride);
			for (int64_t b = 0; b < nsb; b++) {
				unsigned char *sb = pd + (size_t)b * Q6K_P8_SB;
				memcpy(sb + 2 * i, &row[b].d, 2);
				for (int g = 0; g < 16; g++)
					sb[16 + 8 * g + i] = (unsigned char)row[b].scales[g];
				for (int k = 0; k < 32; k++) /* (h, e, kk) */
					memcpy(sb + 144 + 32 * k + 4 * i, row[b].ql + 4 * k, 4);
				for (int k = 0; k < 16; k++) /* (h, kk) */
					memcpy(sb + 1168 + 32 * k + 4 * i, row[b].qh + 4 * k, 4);
			}
		}
	}
}

void cpu_q6_k_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	int64_t nsb = n / QK_K;
	const unsigned char *pd = (const unsigned char *)packed + (size_t)(r / 8) * Q6K_P8_SB * nsb;
	int i = (int)(r % 8);
	for (int64_t b = 0; b < nsb; b++) {
		const unsigned char *sb = pd + (size_t)b * Q6K_P8_SB;
		struct block_q6_k blk;
		memcpy(&blk.d, sb + 2 * i, 2);
		for (int g = 0; g < 16; g++) blk.scales[g] = (int8_t)sb[16 + 8 * g + i];
		for (int k = 0; k < 32; k++) memcpy(blk.ql + 4 * k, sb + 144 + 32 * k + 4 * i, 4);
		for (int k = 0; k < 16; k++) memcpy(blk.qh + 4 * k, sb + 1168 + 32 * k + 4 * i, 4);
		tensor_row_dequantize(TENSOR_TYPE_Q6_K, &blk, y + b * QK_K, QK_K);
	}
}
