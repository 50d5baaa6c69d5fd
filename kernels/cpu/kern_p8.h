/*
 * kern_p8.h - what kern_avx2.c's and kern_avx512.c's Q4_0 panel kernels
 * share (repack.c's layout): a tile's store, and gemm_q4_0_p8 from the
 * loop over panels and token tiles (kern_p8_gemm.h). A file defines P8_T
 * (tokens per tile: 4 or 8), includes this, and defines p8_tile (declared
 * here); with P8_TILE2, p16_tile too, for two full panels at once; with
 * P8_TILE2_IL, p16_tile_il, whose 8 interleaved tokens make gemm_q4_0_p8il.
 */

/* g tokens (at x0, x_stride apart) x one panel of nb blocks into y. */
static inline __attribute__((always_inline)) void p8_tile(int g, bool pf, int64_t nb,
                                                          const char *panel, const char *x0,
                                                          size_t xs, float *y, int64_t ldy,
                                                          int rows);
#ifdef P8_TILE2_IL
/* 8 tokens interleaved (cpu_il_pack) x two full panels. */
static inline __attribute__((always_inline)) void p16_tile_il(bool pf, int64_t nb,
                                                              const char *panel, size_t panel_bytes,
                                                              const char *il, float *y,
                                                              int64_t ldy);
#endif
#ifdef P8_TILE2
static inline __attribute__((always_inline)) void p16_tile(int g, bool pf, int64_t nb,
                                                           const char *panel, size_t panel_bytes,
                                                           const char *x0, size_t xs, float *y,
                                                           int64_t ldy);
#endif

/* The first token tile over a panel streams it from DRAM (kern_p8_gemm.h
 * prefetches only there): a Q4_0 / Q8_0 tile (blk bytes a block) asks, at
 * block b, for the lines CPU_P8_PREFETCH bytes ahead in its panel, each
 * line once or twice. */
static inline __attribute__((always_inline)) void p8_prefetch(const char *panel, int64_t b,
                                                              size_t blk)
{
	const char *f = panel + (size_t)b * blk + CPU_P8_PREFETCH;
	for (size_t l = 0; l < blk; l += 64) _mm_prefetch(f + l, _MM_HINT_T0);
}

/* A tile's results: 8 rows, or fewer in the last panel (the padding rows'
 * lanes are not stored). */
static inline __attribute__((always_inline)) void p8_store(const __m256 *acc, int g, int rows,
                                                           float *y, int64_t ldy)
{
	if (rows == 8) {
#pragma GCC unroll 8
		for (int j = 0; j < g; j++) _mm256_storeu_ps(y + j * ldy, acc[j]);
		return;
	}
	_Alignas(32) float t[8];
	for (int j = 0; j < g; j++) {
		_mm256_store_ps(t, acc[j]);
		memcpy(y + j * ldy, t, (size_t)rows * sizeof(float));
	}
}

#define P8_GEMM    gemm_q4_0_p8
#define P8_TILE_FN p8_tile
#ifdef P8_TILE2
#define P8_TILE16_FN p16_tile
#endif
#ifdef P8_TILE2_IL
#define P8_GEMM_IL      gemm_q4_0_p8il
#define P8_TILE16_IL_FN p16_tile_il
#endif
#include "kern_p8_gemm.h"
