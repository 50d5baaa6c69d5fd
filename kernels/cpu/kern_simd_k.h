/*
 * kern_simd_k.h - 256-bit kernels for BF16 weights (float activations),
 * included after kern_simd.h by kern_avx2.c and kern_avx512.c (same target
 * pragma and TG token groups). The K-quants are in kern_simd_q.h.
 */

#include <string.h>

/* ---- BF16: widen by a 16-bit shift, then the F32 kernel's loop ---- */

static inline float gemm_bf16_scalar(uint16_t h)
{
	return tensor_bf16_to_f32(h);
}

#define LOAD_BF16(i)                           \
	_mm256_castsi256_ps(_mm256_slli_epi32( \
	        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(w + (i)))), 16))
GEMM_FLOAT(gemm_bf16, uint16_t, LOAD_BF16)
