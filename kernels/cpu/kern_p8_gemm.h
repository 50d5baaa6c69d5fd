/*
 * kern_p8_gemm.h - a panel kernel's loop over 8-row panels and token tiles,
 * included once per weight type (a template): the includer defines
 * P8_GEMM (the function's name), P8_TILE_FN (its 8-row tile, declared
 * before) and, where it has one, P8_TILE16_FN (two full panels at once),
 * each taking (g, prefetch, nb, panel, [panel_bytes,] x0, x_stride, y, ldy
 * [, rows]) like p8_tile / p16_tile. Rows come in blocks of P8_BLOCK values
 * (default 32; 256 for the K-quants), a tile takes up to P8_TILE_T tokens
 * (default P8_T). The 16-row tile takes calls of P8_TILE16_MIN_NT tokens
 * or more (default 1); below, the panels are read one at a time: one
 * stream from DRAM, which one core reads faster than two. With P8_GEMM_IL
 * and P8_TILE16_IL_FN (8 interleaved tokens x two full panels, cpu.h's
 * cpu_il_pack), it also defines the set's cpu_gemm_il_fn.
 */

#ifndef P8_BLOCK
#define P8_BLOCK 32
#endif
#ifndef P8_TILE_T
#define P8_TILE_T P8_T
#endif
#ifndef P8_TILE16_MIN_NT
#define P8_TILE16_MIN_NT 1
#endif

#define P8_CALL(G)                                                        \
	(pf ? P8_TILE_FN(G, true, nb, panel, x0, x_stride, yt, ldy, rows) \
	    : P8_TILE_FN(G, false, nb, panel, x0, x_stride, yt, ldy, rows))
#define P16_CALL(G)                                                                 \
	(pf ? P8_TILE16_FN(G, true, nb, panel, 8 * w_stride, x0, x_stride, yt, ldy) \
	    : P8_TILE16_FN(G, false, nb, panel, 8 * w_stride, x0, x_stride, yt, ldy))

/* static unless the includer defines P8_GEMM_LINKAGE (kern_avx512.c's part 2:
 * external, for part 1's table) */
#ifdef P8_GEMM_LINKAGE
#define P8_LINK P8_GEMM_LINKAGE
#else
#define P8_LINK static
#endif
P8_LINK void P8_GEMM(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *x,
                     size_t x_stride, int64_t nt, float *y, int64_t ldy)
{
	int64_t nb = n / P8_BLOCK;
	/* The first token tile over a panel streams it from DRAM: prefetch it
	 * ahead; the later tiles find it in cache, where prefetching only costs. */
	for (int64_t r0 = 0; r0 < nr; r0 += 8) {
		const char *panel = (const char *)w + r0 * w_stride;
		int rows = nr - r0 < 8 ? (int)(nr - r0) : 8;
#ifdef P8_TILE16_FN
		if (r0 + 16 <= nr && nt >= P8_TILE16_MIN_NT) {
			for (int64_t t0 = 0; t0 < nt; t0 += P8_T) {
				int g = nt - t0 < P8_T ? (int)(nt - t0) : P8_T;
				bool pf = t0 == 0;
				const char *x0 = (const char *)x + t0 * x_stride;
				float *yt = y + t0 * ldy + r0;
				switch (g) {
				case 8: P16_CALL(8); break;
				case 7: P16_CALL(7); break;
				case 6: P16_CALL(6); break;
				case 5: P16_CALL(5); break;
				case 4: P16_CALL(4); break;
				case 3: P16_CALL(3); break;
				case 2: P16_CALL(2); break;
				default: P16_CALL(1); break;
				}
			}
			r0 += 8; /* two panels */
			continue;
		}
#endif
		for (int64_t t0 = 0; t0 < nt; t0 += P8_TILE_T) {
			int g = nt - t0 < P8_TILE_T ? (int)(nt - t0) : P8_TILE_T;
			bool pf = t0 == 0;
			const char *x0 = (const char *)x + t0 * x_stride;
			float *yt = y + t0 * ldy + r0;
			switch (g) {
#if P8_TILE_T > 4
			case 8: P8_CALL(8); break;
			case 7: P8_CALL(7); break;
			case 6: P8_CALL(6); break;
			case 5: P8_CALL(5); break;
#endif
			case 4: P8_CALL(4); break;
			case 3: P8_CALL(3); break;
			case 2: P8_CALL(2); break;
			default: P8_CALL(1); break;
			}
		}
	}
}

#ifdef P8_GEMM_IL
/* The set's cpu_gemm_il_fn: ntl tiles of 8 interleaved tokens x nr rows, a
 * multiple of 16, as two-panel tiles. */
static void P8_GEMM_IL(int64_t n, const void *w, size_t w_stride, int64_t nr, const void *il,
                       int64_t ntl, float *y, int64_t ldy)
{
	int64_t nb = n / P8_BLOCK;
	size_t tile = cpu_il_tile_bytes(n);
	for (int64_t r0 = 0; r0 + 16 <= nr; r0 += 16) {
		const char *panel = (const char *)w + r0 * w_stride;
		for (int64_t t = 0; t < ntl; t++) {
			const char *it = (const char *)il + t * tile;
			float *yt = y + 8 * t * ldy + r0;
			if (t == 0) /* streams the panels from DRAM: prefetch */
				P8_TILE16_IL_FN(true, nb, panel, 8 * w_stride, it, yt, ldy);
			else
				P8_TILE16_IL_FN(false, nb, panel, 8 * w_stride, it, yt, ldy);
		}
	}
}
#endif

#undef P8_LINK
#undef P8_GEMM_IL
#undef P8_TILE16_IL_FN
#undef P8_CALL
#undef P16_CALL
#undef P8_GEMM
#undef P8_TILE_FN
#undef P8_TILE16_FN
#undef P8_BLOCK
#undef P8_TILE_T
#undef P8_TILE16_MIN_NT
