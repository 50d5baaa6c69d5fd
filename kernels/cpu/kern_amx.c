/*
 * kern_amx.c - prefill matrix products on AMX int8 tiles (Sapphire Rapids
 * and later), for Q8_0 and Q4_0 weights against Q8_0 activations.
 *
 * One TDPBSSD multiplies a 16-row x 32-byte weight tile (one Q8_0 block of
 * 16 rows: loaded straight from the GGUF blocks with the row stride; Q4_0
 * nibbles are unpacked to int8 first) by a 32 x 16-token activation tile,
 * giving exact int32 block sums for 16 rows x 16 tokens. Each block has its
 * own scales, so after every block the int32 tile is stored and folded into
 * float accumulators: acc[row] += float(C[row]) * dx[tokens] * dw[row], three
 * AVX-512 instructions per row. The integer sums are exact, so results equal
 * the VNNI and reference kernels up to the order of float accumulation.
 *
 * Linux hands out the tile state only after arch_prctl(ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA); cpu_amx_available() asks once and reports.
 */
#include "cpu.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "quant.h"

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

/* Above the target pragma on purpose: this runs on CPUs without AVX-512,
 * and with the pragma in force the compiler may use AVX-512 anywhere in the
 * function (ASan's stack poisoning did: SIGILL on an AVX2-only host). */
bool cpu_amx_available(void)
{
	unsigned a, b, c, d;
	if (!cpu_has_avx512() || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
	bool tile = d & (1u << 24), int8 = d & (1u << 25);
	if (!tile || !int8) return false;
	/* Idempotent: asking again after a grant succeeds again. */
	if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return false;
	return true;
}

#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,amx-tile,amx-int8")
#include <immintrin.h>

struct tile_config {
	uint8_t palette;
	uint8_t start_row;
	uint8_t reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

/* Tiles: 0 = C (int32 sums), 4 = A (weights), 5 = B (activations). The
 * intrinsics stringify their tile operand, so the numbers are literal. */
enum { T_C = 0, T_A = 4, T_B = 5 };

static void tiles_configure(void)
{
	struct tile_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	cfg.rows[T_C] = 16, cfg.colsb[T_C] = 64; /* 16 rows x 16 int32 */
	cfg.rows[T_A] = 16, cfg.colsb[T_A] = 32; /* 16 rows x 32 int8 (one block) */
	cfg.rows[T_B] = 8, cfg.colsb[T_B] = 64;  /* 8 rows of 4 k x 16 tokens */
	_tile_loadconfig(&cfg);
}

size_t cpu_amx_scratch_bytes(int64_t n)
{
	int64_t nb = n / QK8_0;
	return (size_t)nb * (CPU_AMX_TOKENS / 16) * 512  /* packed activations */
	       + (size_t)nb * (CPU_AMX_TOKENS / 16) * 64 /* activation scales */
	       + (size_t)nb * 512                        /* unpacked Q4_0 rows */
	       + (size_t)nb * 64 + 4096;                 /* weight scales, C tile */
}

/*
 * y[t * ldy + r] for r < nr, t < nt with nt a multiple of 16, nt <=
 * CPU_AMX_TOKENS and nr a multiple of 16; x holds nt Q8_0 rows.
 */
void cpu_amx_gemm(uint32_t type, int64_t n, const void *w, size_t w_stride, int64_t nr,
                  const void *x, size_t x_stride, int64_t nt, float *y, int64_t ldy, void *scratch)
{
	int64_t nb = n / QK8_0, ng = nt / 16;
	char *sp = scratch;
	int8_t *bpack = (int8_t *)sp; /* [ng][nb][8][64] */
	sp += (size_t)nb * (CPU_AMX_TOKENS / 16) * 512;
	float *dxv = (float *)sp; /* [ng][nb][16] */
	sp += (size_t)nb * (CPU_AMX_TOKENS / 16) * 64;
	int8_t *aq = (int8_t *)sp; /* [nb][16][32] */
	sp += (size_t)nb * 512;
	float *dw = (float *)sp; /* [nb][16] */
	sp += (size_t)nb * 64;
	int32_t *cbuf = (int32_t *)(((uintptr_t)sp + 63) & ~(uintptr_t)63); /* [16][16] */

	/* Pack activations: B[kk][j] (dwords) = token j's bytes 4kk..4kk+3 of block b. */
	for (int64_t g = 0; g < ng; g++)
		for (int64_t b = 0; b < nb; b++) {
			uint32_t *dst = (uint32_t *)(bpack + ((size_t)g * nb + b) * 512);
			float *dv = dxv + ((size_t)g * nb + b) * 16;
			for (int j = 0; j < 16; j++) {
				const struct block_q8_0 *xb =
				        (const struct block_q8_0 *)((const char *)x +
				                                    (16 * g + j) * x_stride) +
				        b;
				uint32_t dwords[8];
				memcpy(dwords, xb->qs, 32);
				for (int kk = 0; kk < 8; kk++) dst[kk * 16 + j] = dwords[kk];
				dv[j] = tensor_f16_to_f32(xb->d);
			}
		}

	tiles_configure();
	for (int64_t r0 = 0; r0 < nr; r0 += 16) {
		const char *wr = (const char *)w + r0 * w_stride;
		/* Weight scales as floats [b][row]; Q4_0 rows unpacked to int8 (q - 8). */
		for (int64_t b = 0; b < nb; b++)
			for (int i = 0; i < 16; i++) {
				const char *blk =
				        wr + i * w_stride +
				        b * (type == TENSOR_TYPE_Q8_0 ? sizeof(struct block_q8_0)
				                                      : sizeof(struct block_q4_0));
				uint16_t d;
				memcpy(&d, blk, 2);
				dw[b * 16 + i] = tensor_f16_to_f32(d);
				if (type == TENSOR_TYPE_Q4_0) {
					const struct block_q4_0 *q4 =
					        (const struct block_q4_0 *)blk;
					__m128i raw = _mm_loadu_si128((const __m128i *)q4->qs);
					__m128i m4 = _mm_set1_epi8(0xF), e8 = _mm_set1_epi8(8);
					__m128i lo = _mm_sub_epi8(_mm_and_si128(raw, m4), e8);
					__m128i hi = _mm_sub_epi8(
					        _mm_and_si128(_mm_srli_epi16(raw, 4), m4), e8);
					int8_t *dst = aq + (b * 16 + i) * 32;
					_mm_storeu_si128((__m128i *)dst, lo);
					_mm_storeu_si128((__m128i *)(dst + 16), hi);
				}
			}
		for (int64_t g = 0; g < ng; g++) {
			__m512 acc[16];
			for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
			for (int64_t b = 0; b < nb; b++) {
				if (type == TENSOR_TYPE_Q8_0)
					_tile_loadd(4, wr + b * sizeof(struct block_q8_0) + 2,
					            (long)w_stride);
				else
					_tile_loadd(4, aq + b * 512, 32);
				_tile_loadd(5, bpack + ((size_t)g * nb + b) * 512, 64);
				_tile_zero(0);
				_tile_dpbssd(0, 4, 5);
				_tile_stored(0, cbuf, 64);
				__m512 dx = _mm512_loadu_ps(dxv + ((size_t)g * nb + b) * 16);
				const float *dwb = dw + b * 16;
				for (int i = 0; i < 16; i++) {
					__m512 c = _mm512_cvtepi32_ps(
					        _mm512_load_si512(cbuf + i * 16));
					acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(c, dx),
					                         _mm512_set1_ps(dwb[i]), acc[i]);
				}
			}
			/* acc[i] holds tokens 16g..16g+15 of row r0+i: transpose out to y[token][row]. */
			float tmp[16][16];
			for (int i = 0; i < 16; i++) _mm512_storeu_ps(tmp[i], acc[i]);
			for (int j = 0; j < 16; j++)
				for (int i = 0; i < 16; i++)
					y[(16 * g + j) * ldy + r0 + i] = tmp[i][j];
		}
	}
	_tile_release();
}

#else
bool cpu_amx_available(void)
{
	return false;
}

size_t cpu_amx_scratch_bytes(int64_t n)
{
	(void)n;
	return 0;
}

void cpu_amx_gemm(uint32_t type, int64_t n, const void *w, size_t w_stride, int64_t nr,
                  const void *x, size_t x_stride, int64_t nt, float *y, int64_t ldy, void *scratch)
{
}
#endif
