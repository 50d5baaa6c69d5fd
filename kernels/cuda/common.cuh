/*
 * common.cuh - device helpers shared by the CUDA kernels: warp reductions,
 * f16/bf16 conversion, and the one function every weight read goes through,
 * deq32(): 32 consecutive values of a weight row, dequantized to f32.
 * Private to kernels/cuda/.
 */
#ifndef INFILL_KERNELS_CUDA_COMMON_CUH
#define INFILL_KERNELS_CUDA_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>

#include "cuda_ops.h"

#define CUQ_WARP 32

/* A launch error becomes -EIO; the stream stays usable for the caller to report. */
static inline int cuq_launch_status(void)
{
	return cudaGetLastError() == cudaSuccess ? 0 : -EIO;
}

__device__ __forceinline__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

__device__ __forceinline__ float h2f(uint16_t h)
{
	return __half2float(__ushort_as_half(h));
}

/* ---- q8_0 KV slots (struct cuq_kv with q8) ---- */

/* Bytes of one slot's K or V vector: cuq_kv_row_bytes() for device code. */
__device__ __forceinline__ size_t kv_row_bytes(const cuq_kv &kv)
{
	const size_t kvd = (size_t)kv.n_kv_heads * kv.head_dim;
	return kv.q8 ? kvd / 32 * CUQ_Q8_BLOCK : kvd * 2;
}

/* The first byte of slot `slot`'s K (which 0) or V (1) vector of a layer. */
__device__ __forceinline__ unsigned char *kv_row(const cuq_kv &kv, int page, int layer, int which,
                                                 int slot)
{
	return (unsigned char *)kv.pool +
	       ((((size_t)page * kv.n_layers + layer) * 2 + which) * kv.page_size + slot) *
	               kv_row_bytes(kv);
}

/* Element o (a multiple of 4) of a q8_0 block: 4 int8 by two 2-byte loads
 * (blocks are 34 bytes, so only 2-byte alignment holds). */
__device__ __forceinline__ void q8_load4(const unsigned char *blk, int o, int *v)
{
	const uint16_t a = *(const uint16_t *)(blk + 2 + o), b = *(const uint16_t *)(blk + 4 + o);
	v[0] = (signed char)(a & 0xffu), v[1] = (signed char)(a >> 8);
	v[2] = (signed char)(b & 0xffu), v[3] = (signed char)(b >> 8);
}

/* One q8_0 block from a warp, lane l holding value l: d = amax / 127 (as
 * fp16), q = round-half-even(x * 127 / amax), the CPU backend's
 * cpu_q8_0_quantize to the bit. Every lane must call it (warp max). */
__device__ __forceinline__ void q8_store_warp(float x, int lane, unsigned char *blk)
{
	float amax = fabsf(x);
	for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
	const float d = amax / 127.f, id = amax != 0.f ? 127.f / amax : 0.f;
	if (lane == 0) *(__half *)blk = __float2half_rn(d);
	blk[2 + lane] = (unsigned char)(signed char)(int)rintf(x * id);
}

__device__ __forceinline__ float bf2f(uint16_t b)
{
	return __uint_as_float((uint32_t)b << 16);
}

/* Unpacks 8 halves/bf16 held in a uint4. */
template <bool BF> __device__ __forceinline__ void unpack8(uint4 u, float *v)
{
	const uint32_t w[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
	for (int i = 0; i < 4; i++) {
		v[2 * i] = BF ? bf2f((uint16_t)(w[i] & 0xffffu)) : h2f((uint16_t)(w[i] & 0xffffu));
		v[2 * i + 1] = BF ? bf2f((uint16_t)(w[i] >> 16)) : h2f((uint16_t)(w[i] >> 16));
	}
}

/* gelu as ggml's CPU backend: the tanh form at x rounded to f16, the
 * result rounded to f16; 0 at or below -10, x at or above 10. */
__device__ __forceinline__ float cuq_gelu(float x)
{
	if (x <= -10.f) return 0.f;
	if (x >= 10.f) return x;
	const float h = __half2float(__float2half_rn(x));
	const float g = 0.5f * h * (1.f + tanhf(0.7978845608028654f * (h + 0.044715f * h * h * h)));
	return __half2float(__float2half_rn(g));
}

/* 6-bit scale and min j (0..7) of a Q4_K super-block's 12 scale bytes. */
__device__ __forceinline__ void q4k_scale_min(int j, const uint8_t *s, int *sc, int *m)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*m = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
		*m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
	}
}

/*
 * deq32<T>: values [32*sb, 32*sb+32) of row `row` of w, as f32.
 * Contract: cols is a multiple of 32 (256 for K types) and the repacked
 * sections are 16-byte aligned (cuq_repack guarantees both), so every load
 * below is an aligned vector load.
 */
template <int T>
__device__ __forceinline__ void deq32(const cuq_weight &w, int row, int sb, float *v)
{
	const int nsb = w.cols / 32;
	const size_t b = (size_t)row * nsb + sb; /* global 32-block index */
	if (T == CUQ_F32) {
		const float4 *p = (const float4 *)((const float *)w.q + b * 32);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			float4 f = __ldg(p + i);
			v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
		}
	} else if (T == CUQ_F16 || T == CUQ_BF16) {
		const uint4 *p = (const uint4 *)((const uint16_t *)w.q + b * 32);
#pragma unroll
		for (int i = 0; i < 4; i++) unpack8<T == CUQ_BF16>(__ldg(p + i), v + 8 * i);
	} else if (T == CUQ_Q8_0) {
		const float d = h2f(__ldg((const uint16_t *)w.d + b));
		const uint4 *p = (const uint4 *)((const int8_t *)w.q + b * 32);
#pragma unroll
		for (int i = 0; i < 2; i++) {
			uint4 u = __ldg(p + i);
			const uint32_t ww[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
			for (int j = 0; j < 16; j++)
				v[16 * i + j] =
				        d * (float)(int8_t)((ww[j / 4] >> (8 * (j % 4))) & 0xff);
		}
	} else if (T == CUQ_Q4_0) {
		const float d = h2f(__ldg((const uint16_t *)w.d + b));
		uint4 u = __ldg((const uint4 *)((const uint8_t *)w.q + b * 16));
		const uint32_t ww[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
		for (int j = 0; j < 16; j++) {
			const int q = (ww[j / 4] >> (8 * (j % 4))) & 0xff;
			v[j] = d * (float)((q & 0xF) - 8);
			v[j + 16] = d * (float)((q >> 4) - 8);
		}
	} else if (T == CUQ_Q4_K) {
		/* 144-byte super-block: d, dmin (f16), scales[12], qs[128]. Sub-block j
		 * uses the low (even j) or high (odd j) nibbles of qs[32*(j/2) ..]. */
		const size_t sbk = b / 8;
		const int j = (int)(b % 8);
		const uint8_t *blk = (const uint8_t *)w.q + sbk * 144;
		const uint32_t dd = __ldg((const uint32_t *)blk);
		const float d = h2f((uint16_t)(dd & 0xffffu)), dmin = h2f((uint16_t)(dd >> 16));
		uint8_t s[12];
#pragma unroll
		for (int i = 0; i < 3; i++) {
			uint32_t x = __ldg((const uint32_t *)(blk + 4) + i);
			s[4 * i] = x & 0xff, s[4 * i + 1] = (x >> 8) & 0xff;
			s[4 * i + 2] = (x >> 16) & 0xff, s[4 * i + 3] = x >> 24;
		}
		int sc, m;
		q4k_scale_min(j, s, &sc, &m);
		const float d1 = d * (float)sc, m1 = dmin * (float)m;
		const int shift = (j & 1) * 4;
		const uint4 *p = (const uint4 *)(blk + 16 + 32 * (j / 2));
#pragma unroll
		for (int i = 0; i < 2; i++) {
			uint4 u = __ldg(p + i);
			const uint32_t ww[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
			for (int k = 0; k < 16; k++)
				v[16 * i + k] =
				        d1 * (float)((ww[k / 4] >> (8 * (k % 4) + shift)) & 0xF) -
				        m1;
		}
	} else if (T == CUQ_Q6_K) {
		/* Repacked super-block: ql[128], qh[64], sc[16], d. Sub-block j: half
		 * n = j/4, group g = j%4; value l = low nibble (g<2) or high nibble
		 * (g>=2) of ql[64n + 32(g&1) + l], plus bits 2g..2g+1 of qh[32n + l]
		 * as the top two bits, minus 32, times d*sc[8n + 2g + l/16]. */
		const size_t sbk = b / 8;
		const int j = (int)(b % 8), n = j / 4, g = j % 4;
		const float d = h2f(__ldg((const uint16_t *)w.d + sbk));
		const int8_t *scp = w.sc + sbk * 16 + 8 * n + 2 * g;
		const float s0 = d * (float)__ldg(scp), s1 = d * (float)__ldg(scp + 1);
		const uint4 *pl =
		        (const uint4 *)((const uint8_t *)w.q + sbk * 128 + 64 * n + 32 * (g & 1));
		const uint4 *ph = (const uint4 *)((const uint8_t *)w.q2 + sbk * 64 + 32 * n);
		const int lshift = (g >= 2) ? 4 : 0, hshift = 2 * g;
#pragma unroll
		for (int i = 0; i < 2; i++) {
			uint4 ul = __ldg(pl + i), uh = __ldg(ph + i);
			const uint32_t wl[4] = { ul.x, ul.y, ul.z, ul.w };
			const uint32_t wh[4] = { uh.x, uh.y, uh.z, uh.w };
#pragma unroll
			for (int k = 0; k < 16; k++) {
				const int lo = (wl[k / 4] >> (8 * (k % 4) + lshift)) & 0xF;
				const int hi = (wh[k / 4] >> (8 * (k % 4) + hshift)) & 3;
				v[16 * i + k] = (i == 0 ? s0 : s1) * (float)((lo | (hi << 4)) - 32);
			}
		}
	}
}

/* Calls F with the weight type as a template constant; returns -EINVAL for unknown types. */
#define CUQ_DISPATCH_TYPE(type, F)         \
	switch (type) {                    \
	case CUQ_F32: F(CUQ_F32); break;   \
	case CUQ_F16: F(CUQ_F16); break;   \
	case CUQ_BF16: F(CUQ_BF16); break; \
	case CUQ_Q8_0: F(CUQ_Q8_0); break; \
	case CUQ_Q4_0: F(CUQ_Q4_0); break; \
	case CUQ_Q4_K: F(CUQ_Q4_K); break; \
	case CUQ_Q6_K: F(CUQ_Q6_K); break; \
	default: return -EINVAL;           \
	}

#endif
