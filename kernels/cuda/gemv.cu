/*
 * gemv.cu - quantized matrix-vector products for decode and small batches,
 * the weight repacking they rely on, and dequantization to f16 for the
 * cuBLAS prefill path.
 *
 * Decode is bound by memory bandwidth, so the kernel reads every weight block
 * once for all n (<= 8) activation rows: one warp per output row, each lane
 * walking 32-value sub-blocks of that row (deq32 in common.cuh), multiplying
 * by the n activation rows (small, L1-resident) and reducing across the warp.
 * RMSNorm of the input is fused by folding the norm weight into the
 * dequantized values and the per-row 1/rms into the final sum, so the
 * normalized activations are never written; the residual add and the SwiGLU
 * of gate and up are fused into the epilogue.
 */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"

/* ---- host: sizes and repacking ---- */

static size_t round256(size_t x)
{
	return (x + 255) & ~(size_t)255;
}

extern "C" size_t cuq_file_size(int type, int64_t rows, int64_t cols)
{
	if (rows <= 0 || cols <= 0) return 0;
	const size_t n = (size_t)rows * (size_t)cols;
	switch (type) {
	case CUQ_F32: return n * 4;
	case CUQ_F16:
	case CUQ_BF16: return cols % 32 ? 0 : n * 2;
	case CUQ_Q8_0: return cols % 32 ? 0 : n / 32 * 34;
	case CUQ_Q4_0: return cols % 32 ? 0 : n / 32 * 18;
	case CUQ_Q4_K: return cols % 256 ? 0 : n / 256 * 144;
	case CUQ_Q6_K: return cols % 256 ? 0 : n / 256 * 210;
	default: return 0;
	}
}

extern "C" size_t cuq_repacked_size(int type, int64_t rows, int64_t cols)
{
	const size_t fs = cuq_file_size(type, rows, cols);
	if (!fs) return 0;
	const size_t n = (size_t)rows * (size_t)cols;
	switch (type) {
	case CUQ_Q8_0: return round256(n / 32 * 2) + round256(n);
	case CUQ_Q4_0: return round256(n / 32 * 2) + round256(n / 2);
	case CUQ_Q6_K:
		return round256(n / 256 * 128) + round256(n / 256 * 64) + round256(n / 256 * 16) +
		       round256(n / 256 * 2);
	default: return round256(fs);
	}
}

/* Section offsets of the repacked layout, in the order cuq_weight_bind reads them. */
static void sections(int type, size_t n, size_t off[4])
{
	off[0] = off[1] = off[2] = off[3] = 0;
	if (type == CUQ_Q8_0 || type == CUQ_Q4_0) {
		off[0] = 0;                    /* d */
		off[1] = round256(n / 32 * 2); /* q */
	} else if (type == CUQ_Q6_K) {
		off[0] = 0;                                /* ql */
		off[1] = off[0] + round256(n / 256 * 128); /* qh */
		off[2] = off[1] + round256(n / 256 * 64);  /* sc */
		off[3] = off[2] + round256(n / 256 * 16);  /* d */
	}
}

extern "C" int cuq_repack(int type, int64_t rows, int64_t cols, const void *src, void *dst)
{
	const size_t fs = cuq_file_size(type, rows, cols);
	if (!fs || !src || !dst) return -EINVAL;
	const size_t n = (size_t)rows * (size_t)cols;
	const uint8_t *s = (const uint8_t *)src;
	uint8_t *o = (uint8_t *)dst;
	size_t off[4];
	sections(type, n, off);
	if (type == CUQ_Q8_0 || type == CUQ_Q4_0) {
		const size_t bs = type == CUQ_Q8_0 ? 34 : 18, qb = bs - 2;
		for (size_t b = 0; b < n / 32; b++) {
			memcpy(o + off[0] + 2 * b, s + b * bs, 2);
			memcpy(o + off[1] + qb * b, s + b * bs + 2, qb);
		}
	} else if (type == CUQ_Q6_K) {
		/* GGUF block: ql[128], qh[64], scales[16] (int8), d (f16). */
		for (size_t b = 0; b < n / 256; b++) {
			const uint8_t *blk = s + b * 210;
			memcpy(o + off[0] + 128 * b, blk, 128);
			memcpy(o + off[1] + 64 * b, blk + 128, 64);
			memcpy(o + off[2] + 16 * b, blk + 192, 16);
			memcpy(o + off[3] + 2 * b, blk + 208, 2);
		}
	} else {
		memcpy(o, s, fs);
	}
	return 0;
}

extern "C" void cuq_weight_bind(struct cuq_weight *w, int type, int64_t rows, int64_t cols,
                                const void *base)
{
	const size_t n = (size_t)rows * (size_t)cols;
	const uint8_t *b = (const uint8_t *)base;
	size_t off[4];
	sections(type, n, off);
	memset(w, 0, sizeof *w);
	w->type = type;
	w->rows = (int)rows;
	w->cols = (int)cols;
	if (type == CUQ_Q8_0 || type == CUQ_Q4_0) {
		w->d = b + off[0];
		w->q = b + off[1];
	} else if (type == CUQ_Q6_K) {
		w->q = b + off[0];
		w->q2 = b + off[1];
		w->sc = (const int8_t *)(b + off[2]);
		w->d = b + off[3];
	} else {
		w->q = b;
	}
}

/* ---- the GEMV kernel ---- */

#define GEMV_WARPS 4

struct gemv_dev {
	cuq_weight w[3];
	float *y[3];
	int nw, mode, n;
	const float *x;
	const float *norm_w;
	float eps;
	int row_start[4]; /* prefix sums of rows over w[] (STORE/ADD: rows are concatenated) */
};

__device__ __forceinline__ float dot32(const float *v, const float *x)
{
	const float4 *p = (const float4 *)x;
	float s = 0.f;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		float4 f = __ldg(p + i);
		s += v[4 * i] * f.x + v[4 * i + 1] * f.y + v[4 * i + 2] * f.z + v[4 * i + 3] * f.w;
	}
	return s;
}

/* Scales v by the norm weight (folded into the weight side, see the file comment). */
__device__ __forceinline__ void fold_norm(float *v, const float *nw)
{
	const float4 *p = (const float4 *)nw;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		float4 f = __ldg(p + i);
		v[4 * i] *= f.x, v[4 * i + 1] *= f.y, v[4 * i + 2] *= f.z, v[4 * i + 3] *= f.w;
	}
}

template <int T, int NB>
static __global__ void __launch_bounds__(GEMV_WARPS * 32) gemv_kernel(gemv_dev g)
{
	__shared__ float inv_rms[NB];
	__shared__ float red[GEMV_WARPS][NB];
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	const int cols = g.w[0].cols;

	if (g.norm_w) {
		/* Every block recomputes 1/rms of the n input rows: cols floats each
		 * from L2, far less than the weight bytes the block reads. */
		for (int t = 0; t < NB; t++) {
			float s = 0.f;
			if (t < g.n)
				for (int k = threadIdx.x; k < cols; k += blockDim.x) {
					const float xv = g.x[(size_t)t * cols + k];
					s += xv * xv;
				}
			s = warp_sum(s);
			if (lane == 0) red[warp][t] = s;
		}
		__syncthreads();
		if (threadIdx.x < NB) {
			float s = 0.f;
			for (int i = 0; i < GEMV_WARPS; i++) s += red[i][threadIdx.x];
			inv_rms[threadIdx.x] = rsqrtf(s / (float)cols + g.eps);
		}
		__syncthreads();
	}

	const int grow = blockIdx.x * GEMV_WARPS + warp;
	int wi = 0;
	const bool swiglu = g.mode == CUQ_GEMV_SWIGLU || g.mode == CUQ_GEMV_GEGLU; /* gated */
	if (!swiglu)
		while (wi + 1 < g.nw && grow >= g.row_start[wi + 1]) wi++;
	if (grow >= g.row_start[swiglu ? 1 : g.nw]) return;
	const int row = grow - g.row_start[wi];
	const cuq_weight &w = g.w[wi];

	float acc[NB], acc2[NB];
#pragma unroll
	for (int t = 0; t < NB; t++) acc[t] = acc2[t] = 0.f;

	const int nsb = cols / 32;
#pragma unroll 2
	for (int sb = lane; sb < nsb; sb += 32) {
		float v[32];
		deq32<T>(w, row, sb, v);
		if (g.norm_w) fold_norm(v, g.norm_w + 32 * sb);
#pragma unroll
		for (int t = 0; t < NB; t++)
			if (t < g.n) acc[t] += dot32(v, g.x + (size_t)t * cols + 32 * sb);
		if (swiglu) {
			deq32<T>(g.w[1], row, sb, v);
			if (g.norm_w) fold_norm(v, g.norm_w + 32 * sb);
#pragma unroll
			for (int t = 0; t < NB; t++)
				if (t < g.n) acc2[t] += dot32(v, g.x + (size_t)t * cols + 32 * sb);
		}
	}

#pragma unroll
	for (int t = 0; t < NB; t++) {
		if (t >= g.n) break;
		float a = warp_sum(acc[t]);
		float b = swiglu ? warp_sum(acc2[t]) : 0.f;
		if (lane != 0) continue;
		if (g.norm_w) {
			a *= inv_rms[t];
			b *= inv_rms[t];
		}
		float *y = g.y[wi] + (size_t)t * w.rows + row;
		if (g.mode == CUQ_GEMV_ADD)
			*y += a;
		else if (g.mode == CUQ_GEMV_GEGLU)
			*y = cuq_gelu(a) * b;
		else if (swiglu)
			*y = a / (1.f + __expf(-a)) * b;
		else
			*y = a;
	}
}

template <int T> static int gemv_dispatch_n(const gemv_dev &g, int total_rows, cudaStream_t stream)
{
	dim3 grid((total_rows + GEMV_WARPS - 1) / GEMV_WARPS), block(GEMV_WARPS * 32);
	if (g.n <= 1)
		gemv_kernel<T, 1><<<grid, block, 0, stream>>>(g);
	else if (g.n <= 2)
		gemv_kernel<T, 2><<<grid, block, 0, stream>>>(g);
	else if (g.n <= 4)
		gemv_kernel<T, 4><<<grid, block, 0, stream>>>(g);
	else
		gemv_kernel<T, 8><<<grid, block, 0, stream>>>(g);
	return cuq_launch_status();
}

extern "C" int cuq_gemv_launch(const struct cuq_gemv *a, cudaStream_t stream)
{
	const bool gated = a && (a->mode == CUQ_GEMV_SWIGLU || a->mode == CUQ_GEMV_GEGLU);
	if (!a || a->nw < 1 || a->nw > 3 || !a->x || a->n < 1 || (gated && a->nw != 2))
		return -EINVAL;
	gemv_dev g;
	memset(&g, 0, sizeof g);
	int total = 0;
	for (int i = 0; i < a->nw; i++) {
		if (a->w[i].type != a->w[0].type || a->w[i].cols != a->w[0].cols || !a->w[i].q ||
		    a->w[i].cols % 32 || a->w[i].rows < 1)
			return -EINVAL;
		if (gated && a->w[i].rows != a->w[0].rows) return -EINVAL;
		g.w[i] = a->w[i];
		g.y[i] = a->y[i];
		g.row_start[i] = total;
		total += a->w[i].rows;
	}
	g.row_start[a->nw] = total;
	if (gated) {
		total = a->w[0].rows;
		g.row_start[1] = total;
	}
	if (!g.y[0]) return -EINVAL;
	g.nw = a->nw;
	g.mode = a->mode;
	g.norm_w = a->norm_w;
	g.eps = a->eps;
	const int cols = a->w[0].cols;
	for (int t0 = 0; t0 < a->n; t0 += CUQ_GEMV_MAX_N) {
		g.n = a->n - t0 < CUQ_GEMV_MAX_N ? a->n - t0 : CUQ_GEMV_MAX_N;
		g.x = a->x + (size_t)t0 * cols;
		for (int i = 0; i < a->nw; i++)
			g.y[i] = a->y[i] ? a->y[i] + (size_t)t0 * a->w[i].rows : NULL;
		int rc = 0;
#define GEMV_CASE(T) rc = gemv_dispatch_n<T>(g, total, stream)
		CUQ_DISPATCH_TYPE(a->w[0].type, GEMV_CASE)
#undef GEMV_CASE
		if (rc) return rc;
	}
	return 0;
}

/* ---- dequantization to f16 (prefill through cuBLAS) ---- */

template <int T> static __global__ void dequant_f16_kernel(cuq_weight w, __half *out)
{
	const int nsb = w.cols / 32;
	const size_t total = (size_t)w.rows * nsb;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
	     i += (size_t)gridDim.x * blockDim.x) {
		const int row = (int)(i / nsb), sb = (int)(i % nsb);
		float v[32];
		deq32<T>(w, row, sb, v);
		uint4 *o = (uint4 *)(out + i * 32);
#pragma unroll
		for (int k = 0; k < 4; k++) {
			__half2 h[4];
#pragma unroll
			for (int j = 0; j < 4; j++)
				h[j] = __floats2half2_rn(v[8 * k + 2 * j], v[8 * k + 2 * j + 1]);
			uint4 u;
			memcpy(&u, h,
			       sizeof u); /* not a pointer cast: that breaks strict aliasing */
			o[k] = u;
		}
	}
}

extern "C" int cuq_dequant_f16_launch(const struct cuq_weight *w, void *out, cudaStream_t stream)
{
	if (!w || !out || w->cols % 32 || w->rows < 1) return -EINVAL;
	const size_t total = (size_t)w->rows * (w->cols / 32);
	const int block = 256;
	size_t nblk = (total + block - 1) / block;
	if (nblk > 65535) nblk = 65535;
#define DQ_CASE(T) dequant_f16_kernel<T><<<(unsigned)nblk, block, 0, stream>>>(*w, (__half *)out)
	CUQ_DISPATCH_TYPE(w->type, DQ_CASE)
#undef DQ_CASE
	return cuq_launch_status();
}
