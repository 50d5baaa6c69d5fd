/*
 * kern_avx2.c - AVX2/FMA/F16C kernels: kern_simd.h with the integer dot
 * product done by maddubs (u8 x s8 -> s16 pairs) and madd (-> s32), plus
 * kern_simd_k.h (BF16) and kern_simd_q.h (K-quants, Q4_1..Q5_1, IQ4). The
 * pragma lets this file use the instructions while the project builds for a
 * generic x86-64; kern.c only selects these after cpuid confirmed them.
 */
#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")

#define SIMD_DOT_I8(acc, u, s)  \
	_mm256_add_epi32((acc), \
	                 _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))

#include "kern_simd.h"
#include "kern_simd_k.h"
#include "kern_simd_q.h"

const struct cpu_kernels cpu_kernels_avx2 = {
	.name = "avx2",
	.act = { NULL, act_q8_0, act_q8_1, act_q8_k },
	.gemm_f32 = gemm_f32,
	.gemm_f16 = gemm_f16,
	.gemm_bf16 = gemm_bf16,
	.gemm_q4_k = gemm_q4_k,
	.gemm_q6_k = gemm_q6_k,
	.gemm_q4_1 = gemm_q4_1,
	.gemm_q5_0 = gemm_q5_0,
	.gemm_q5_1 = gemm_q5_1,
	.gemm_q2_k = gemm_q2_k,
	.gemm_q3_k = gemm_q3_k,
	.gemm_q5_k = gemm_q5_k,
	.gemm_iq4_nl = gemm_iq4_nl,
	.gemm_iq4_xs = gemm_iq4_xs,
	.gemm_q8_0 = gemm_q8_0,
	.gemm_q4_0 = gemm_q4_0,
	.dot_f32 = attn_dot,
	.axpy_f32 = attn_axpy,
	.dot_f16 = attn_dot_f16,
	.axpy_f16 = attn_axpy_f16,
	.score_f32 = attn_score_f32,
	.mix_f32 = attn_mix_f32,
	.score_f16 = attn_score_f16,
	.mix_f16 = attn_mix_f16,
	.softmax = attn_softmax,
	.attn_qb = ATTN_QB,
};
#else
#include "cpu.h"
const struct cpu_kernels cpu_kernels_avx2 = { .name = "avx2" };
#endif
