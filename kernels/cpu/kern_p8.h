/*
 * kern_p8.h - what kern_avx2.c's and kern_avx512.c's Q4_0 panel kernels
 * share (repack.c's layout): a tile's store and the loop over panels and
 * token tiles. A file defines P8_T (tokens per tile: 4 or 8), includes
 * this, and defines p8_tile (declared here); it gets gemm_q4_0_p8. With
 * P8_TILE2 it defines p16_tile too, for two full panels at once.
 */

/* g tokens (at x0, x_stride apart) x one panel of nb blocks into y. */
static inline __attribute__((always_inline)) void p8_tile(int g, bool pf, int64_t nb,
                                                          const char *panel, const char *x0,
                                                          size_t xs, float *y, int64_t ldy,
                                                          int rows);
#ifdef P8_TILE2
static inline __attribute__((always_inline)) void p16_tile(int g, bool pf, int64_t nb,
                                                           const char *panel, size_t panel_bytes,
                                                           const char *x0, size_t xs, float *y,
                                                           int64_t ldy);
#endif

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

#define P8_TILE(G)                                                     \
	(pf ? p8_tile(G, true, nb, panel, x0, x_stride, yt, ldy, rows) \
	    : p8_tile(G, false, nb, panel, x0, x_stride, yt, ldy, rows))

#define P16_TILE(G)                                                             \
	(pf ? p16_tile(G, true, nb, panel, 8 * w_stride, x0, x_stride, yt, ldy) \
	    : p16_tile(G, false, nb, panel, 8 * w_stride, x0, x_stride, yt, ldy))

static void gemm_q4_0_p8(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                         size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	int64_t nb = n / 32;
	/* Decode streams the panels from DRAM: prefetch them ahead; a prompt's
	 * are reused from cache, where it only costs. */
	bool pf = nt <= 4;
	for (int64_t r0 = 0; r0 < nr; r0 += 8) {
		const char *panel = (const char *)w + r0 * w_stride;
		int rows = nr - r0 < 8 ? (int)(nr - r0) : 8;
#ifdef P8_TILE2
		if (r0 + 16 <= nr) {
			for (int64_t t0 = 0; t0 < nt; t0 += P8_T) {
				int g = nt - t0 < P8_T ? (int)(nt - t0) : P8_T;
				const char *x0 = (const char *)x + t0 * x_stride;
				float *yt = y + t0 * ldy + r0;
				switch (g) {
				case 8: P16_TILE(8); break;
				case 7: P16_TILE(7); break;
				case 6: P16_TILE(6); break;
				case 5: P16_TILE(5); break;
				case 4: P16_TILE(4); break;
				case 3: P16_TILE(3); break;
				case 2: P16_TILE(2); break;
				default: P16_TILE(1); break;
				}
			}
			r0 += 8; /* two panels */
			continue;
		}
#endif
		for (int64_t t0 = 0; t0 < nt; t0 += P8_T) {
			int g = nt - t0 < P8_T ? (int)(nt - t0) : P8_T;
			const char *x0 = (const char *)x + t0 * x_stride;
			float *yt = y + t0 * ldy + r0;
			switch (g) {
#if P8_T > 4
			case 8: P8_TILE(8); break;
			case 7: P8_TILE(7); break;
			case 6: P8_TILE(6); break;
			case 5: P8_TILE(5); break;
#endif
			case 4: P8_TILE(4); break;
			case 3: P8_TILE(3); break;
			case 2: P8_TILE(2); break;
			default: P8_TILE(1); break;
			}
		}
	}
}

#undef P8_TILE
#undef P16_TILE
