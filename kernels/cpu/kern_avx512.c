/*
 * kern_avx512.c - AVX-512 VNNI kernels: kern_simd.h with vpdpbusd (u8 x s8
 * summed 4 at a time into s32, no int16 saturation step), on ymm registers
 * (AVX512-VL), which keeps the clock up and halves the shuffles of 34-byte
 * blocks. Selected at run time by kern.c.
 */
#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")

#define SIMD_DOT_I8(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))

#include "kern_simd.h"

const struct cpu_kernels cpu_kernels_avx512 = {
	.name = "avx512-vnni",
	.act = {NULL, act_q8_0},
	.gemm_f32 = gemm_f32,
	.gemm_f16 = gemm_f16,
	.gemm_q8_0 = gemm_q8_0,
	.gemm_q4_0 = gemm_q4_0,
	.dot_f32 = attn_dot,
	.axpy_f32 = attn_axpy,
};
#else
#include "cpu.h"
const struct cpu_kernels cpu_kernels_avx512 = {.name = "avx512-vnni"};
#endif
