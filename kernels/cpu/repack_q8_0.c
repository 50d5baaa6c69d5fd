/*
 * repack_q8_0.c - Q8_0 weights re-laid out into 8-row panels at load (plain
 * C), as repack.c does for Q4_0: a panel holds 8 consecutive rows of
 * nb = n / 32 blocks in exactly the bytes of those rows in the file
 * (8 * 34 * nb), so row r0 (a multiple of 8) still starts at r0 * row_size:
 *
 *   [nb][8] fp16 scales          block b, row i: the row's block scale
 *   [nb][8][8] int32 quants      block b, vector kk, row i: values
 *                                4kk..4kk+3 of the row's block (signed)
 *
 * A 32-byte vector is one dword lane per row, so one vpdpbusd (or maddubs)
 * against a token's 4 activation bytes broadcast does 8 rows x 4 products.
 * The last panel of a row count that is not a multiple of 8 is padded with
 * zero rows (scale 0), whose results the kernels do not store.
 */
#include "cpu.h"

#include <string.h>

#include "quant.h"

size_t cpu_q8_0_p8_bytes(int64_t nr, int64_t n)
{
	return (size_t)((nr + 7) / 8) * 8 * (size_t)(n / QK8_0) * sizeof(struct block_q8_0);
}

void cpu_q8_0_p8_pack(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
                      void *dst)
{
	int64_t nb = n / QK8_0;
	size_t panel = 8 * (size_t)nb * sizeof(struct block_q8_0);
	for (int64_t p = p0; p < p1; p++) {
		unsigned char *sc = (unsigned char *)dst + (size_t)p * panel;
		unsigned char *qs = sc + 16 * (size_t)nb;
		if (p * 8 + 8 > nr) memset(sc, 0, panel); /* the padding rows of a last panel */
		for (int i = 0; i < 8 && p * 8 + i < nr; i++) {
			const struct block_q8_0 *row =
			        (const struct block_q8_0 *)((const char *)w +
			                                    (size_t)(p * 8 + i) * w_stride);
			for (int64_t b = 0; b < nb; b++) {
				memcpy(sc + (size_t)b * 16 + 2 * i, &row[b].d, 2);
				for (int kk = 0; kk < 8; kk++)
					memcpy(qs + (size_t)b * 256 + kk * 32 + 4 * i,
					       row[b].qs + 4 * kk, 4);
			}
		}
	}
}

void cpu_q8_0_p8_row(const void *packed, int64_t n, int64_t r, float *y)
{
	int64_t nb = n / QK8_0;
	size_t panel = 8 * (size_t)nb * sizeof(struct block_q8_0);
	const unsigned char *sc = (const unsigned char *)packed + (size_t)(r / 8) * panel;
	const unsigned char *qs = sc + 16 * (size_t)nb;
	int i = (int)(r % 8);
	for (int64_t b = 0; b < nb; b++) {
		struct block_q8_0 blk;
		memcpy(&blk.d, sc + (size_t)b * 16 + 2 * i, 2);
		for (int kk = 0; kk < 8; kk++)
			memcpy(blk.qs + 4 * kk, qs + (size_t)b * 256 + kk * 32 + 4 * i, 4);
		/* the file's dequantizer on the block as it was: the same values bit for bit */
		tensor_row_dequantize(TENSOR_TYPE_Q8_0, &blk, y + b * QK8_0, QK8_0);
	}
}
