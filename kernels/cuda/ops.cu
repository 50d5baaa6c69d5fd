/*
 * ops.cu - the small kernels of the forward pass: embedding lookup
 * (dequantizing), RMSNorm (f32 out, or f16/bf16 out feeding a tensor-core
 * GEMM), SwiGLU, residual add, and RoPE fused with the write of K and V into
 * their KV pages, plus the RoPE shift of cached keys. Each is memory-trivial;
 * what matters is that there are few of them per layer.
 */
#include <cuda_bf16.h>
#include <math.h>

#include "common.cuh"

/* ---- embedding ---- */

template <int T> static __global__ void embed_kernel(cuq_weight w, const int32_t *ids, float *x)
{
	const int t = blockIdx.x;
	int id = ids[t];
	if (id < 0 || id >= w.rows)
		id = 0; /* the host checks ids; this only keeps a bad one in bounds */
	const int nsb = w.cols / 32;
	for (int sb = threadIdx.x; sb < nsb; sb += blockDim.x) {
		float v[32];
		deq32<T>(w, id, sb, v);
		float4 *o = (float4 *)(x + (size_t)t * w.cols + 32 * sb);
#pragma unroll
		for (int i = 0; i < 8; i++)
			o[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
	}
}

extern "C" int cuq_embed_launch(const struct cuq_weight *w, const int32_t *ids, int n, float *x,
                                cudaStream_t stream)
{
	if (!w || !ids || !x || n < 1 || w->cols % 32) return -EINVAL;
#define EMB_CASE(T) embed_kernel<T><<<n, 64, 0, stream>>>(*w, ids, x)
	CUQ_DISPATCH_TYPE(w->type, EMB_CASE)
#undef EMB_CASE
	return cuq_launch_status();
}

/* ---- RMSNorm ---- */

/* Sum over the block; every thread gets the result. blockDim.x is a multiple of 32, <= 1024. */
__device__ float block_sum(float v)
{
	__shared__ float s[32];
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	v = warp_sum(v);
	__syncthreads(); /* s may still be read by a previous call */
	if (lane == 0) s[warp] = v;
	__syncthreads();
	const int nw = blockDim.x / 32;
	v = lane < nw ? s[lane] : 0.f;
	return warp_sum(v);
}

/* OUT: 0 f32, 1 f16, 2 bf16. */
template <int OUT>
static __global__ void rmsnorm_kernel(const float *x, const float *w, int dim, float eps, void *y)
{
	const size_t t = blockIdx.x;
	const float *xr = x + t * dim;
	float s = 0.f;
	for (int k = threadIdx.x; k < dim; k += blockDim.x) s += xr[k] * xr[k];
	const float inv = eps >= 0.f ? rsqrtf(block_sum(s) / (float)dim + eps) : 1.f;
	for (int k = threadIdx.x; k < dim; k += blockDim.x) {
		const float v = xr[k] * inv * (w ? w[k] : 1.f);
		if (OUT == 0)
			((float *)y)[t * dim + k] = v;
		else if (OUT == 1)
			((__half *)y)[t * dim + k] = __float2half_rn(v);
		else
			((__nv_bfloat16 *)y)[t * dim + k] = __float2bfloat16_rn(v);
	}
}

extern "C" int cuq_rmsnorm_launch(const float *x, const float *w, int n, int dim, float eps,
                                  float *y, cudaStream_t stream)
{
	if (!x || !y || n < 1 || dim < 1) return -EINVAL;
	rmsnorm_kernel<0><<<n, 256, 0, stream>>>(x, w, dim, eps, y);
	return cuq_launch_status();
}

/* The f16 input of a GEMM, scaled so that it cannot overflow. f16 ends at
 * 65504; activations that are not normed (the FFN's gated hidden state, the
 * attention output) pass that in some models, and inf there would make the
 * prompt's logits NaN while decode (f32 activations) stays finite. So the
 * chunk is written times 2^-e, e the least that brings its largest |value|
 * under 2^15, and the GEMM's alpha is 2^e: powers of two scale exactly, so a
 * chunk that fits (e = 0) is computed bit for bit as before.
 *
 * Pass 1, a block a row: 1/rms and the largest |x w| of the row into
 * scratch (inv[n], big[n]). */
static __global__ void row_absmax_kernel(const float *x, const float *w, int dim, float eps,
                                         float *inv, float *big)
{
	const size_t t = blockIdx.x;
	const float *xr = x + t * dim;
	float s = 0.f, m = 0.f;
	for (int k = threadIdx.x; k < dim; k += blockDim.x) {
		s += xr[k] * xr[k];
		m = fmaxf(m, fabsf(xr[k] * (w ? w[k] : 1.f)));
	}
	__shared__ float sm[32];
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	m = warp_max(m);
	if (lane == 0) sm[warp] = m;
	__syncthreads();
	const float r = eps >= 0.f ? rsqrtf(block_sum(s) / (float)dim + eps) : 1.f;
	if (threadIdx.x == 0) {
		for (int i = 1; i < (int)(blockDim.x / 32); i++) m = fmaxf(m, sm[i]);
		inv[t] = r;
		big[t] = m * r;
	}
}

/* Pass 2, a block a row: the chunk's exponent from big[0..n), then the row. */
static __global__ void half_scaled_kernel(const float *x, const float *w, int dim, int n,
                                          const float *inv, const float *big, void *y, float *alpha)
{
	float m = 0.f;
	for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, big[i]);
	__shared__ float sm[32];
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	m = warp_max(m);
	if (lane == 0) sm[warp] = m;
	__syncthreads();
	m = lane < (int)(blockDim.x / 32) ? sm[lane] : 0.f;
	m = warp_max(m);
	int e = 0;
	if (m >= 32768.f && m <= 3.4e38f) { /* inf and NaN go through as they are */
		frexpf(m, &e);              /* m < 2^e */
		e -= 15;
	}
	const float down = ldexpf(1.f, -e);
	const size_t t = blockIdx.x;
	if (t == 0 && threadIdx.x == 0) *alpha = ldexpf(1.f, e);
	const float r = inv[t] * down;
	const float *xr = x + t * dim;
	for (int k = threadIdx.x; k < dim; k += blockDim.x)
		((__half *)y)[t * dim + k] = __float2half_rn(xr[k] * r * (w ? w[k] : 1.f));
}

extern "C" int cuq_rmsnorm_half_launch(const float *x, const float *w, int n, int dim, float eps,
                                       int is_bf16, void *y, float *scale, cudaStream_t stream)
{
	if (!x || !y || n < 1 || dim < 1) return -EINVAL;
	/* Without a norm weight this is a plain conversion: eps < 0 skips the scaling. */
	const float e = w ? eps : -1.f;
	if (is_bf16)
		rmsnorm_kernel<2><<<n, 256, 0, stream>>>(x, w, dim, e, y);
	else if (!scale)
		rmsnorm_kernel<1><<<n, 256, 0, stream>>>(x, w, dim, e, y);
	else {
		float *inv = scale + 1, *big = scale + 1 + n;
		row_absmax_kernel<<<n, 256, 0, stream>>>(x, w, dim, e, inv, big);
		half_scaled_kernel<<<n, 256, 0, stream>>>(x, w, dim, n, inv, big, y, scale);
	}
	return cuq_launch_status();
}

/* ---- SwiGLU and add ---- */

static __global__ void swiglu_kernel(const float *g, const float *u, size_t count, float *out)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
	     i += (size_t)gridDim.x * blockDim.x) {
		const float a = g[i];
		out[i] = a / (1.f + __expf(-a)) * u[i];
	}
}

static unsigned grid_for(size_t count, int block)
{
	size_t g = (count + block - 1) / block;
	return (unsigned)(g > 4096 ? 4096 : (g ? g : 1));
}

extern "C" int cuq_swiglu_launch(const float *g, const float *u, int n, int width, float *out,
                                 cudaStream_t stream)
{
	if (!g || !u || !out || n < 1 || width < 1) return -EINVAL;
	const size_t count = (size_t)n * width;
	swiglu_kernel<<<grid_for(count, 256), 256, 0, stream>>>(g, u, count, out);
	return cuq_launch_status();
}

static __global__ void geglu_kernel(const float *g, const float *u, size_t count, float *out)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] = cuq_gelu(g[i]) * u[i];
}

extern "C" int cuq_geglu_launch(const float *g, const float *u, int n, int width, float *out,
                                cudaStream_t stream)
{
	if (!g || !u || !out || n < 1 || width < 1) return -EINVAL;
	const size_t count = (size_t)n * width;
	geglu_kernel<<<grid_for(count, 256), 256, 0, stream>>>(g, u, count, out);
	return cuq_launch_status();
}

static __global__ void layernorm_kernel(const float *x, const float *w, const float *b, int dim,
                                        float eps, float *y)
{
	const size_t t = blockIdx.x;
	const float *xr = x + t * dim;
	float s = 0.f;
	for (int k = threadIdx.x; k < dim; k += blockDim.x) s += xr[k];
	const float mean = block_sum(s) / (float)dim;
	float v = 0.f;
	for (int k = threadIdx.x; k < dim; k += blockDim.x) v += (xr[k] - mean) * (xr[k] - mean);
	const float inv = rsqrtf(block_sum(v) / (float)dim + eps);
	for (int k = threadIdx.x; k < dim; k += blockDim.x)
		y[t * dim + k] = (xr[k] - mean) * inv * w[k] + (b ? b[k] : 0.f);
}

extern "C" int cuq_layernorm_launch(const float *x, const float *w, const float *b, int n, int dim,
                                    float eps, float *y, cudaStream_t stream)
{
	if (!x || !w || !y || n < 1 || dim < 1) return -EINVAL;
	layernorm_kernel<<<n, 256, 0, stream>>>(x, w, b, dim, eps, y);
	return cuq_launch_status();
}

static __global__ void bias_kernel(float *x, const float *b, size_t count, int width)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
	     i += (size_t)gridDim.x * blockDim.x)
		x[i] += b[i % width];
}

extern "C" int cuq_bias_launch(float *x, const float *b, int n, int width, cudaStream_t stream)
{
	if (!x || !b || n < 1 || width < 1) return -EINVAL;
	const size_t count = (size_t)n * width;
	bias_kernel<<<grid_for(count, 256), 256, 0, stream>>>(x, b, count, width);
	return cuq_launch_status();
}

static __global__ void gelu_kernel(float *x, size_t count)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
	     i += (size_t)gridDim.x * blockDim.x)
		x[i] = cuq_gelu(x[i]);
}

extern "C" int cuq_gelu_launch(float *x, size_t count, cudaStream_t stream)
{
	if (!x || !count) return -EINVAL;
	gelu_kernel<<<grid_for(count, 256), 256, 0, stream>>>(x, count);
	return cuq_launch_status();
}

static __global__ void scale_kernel(float *x, size_t count, float s)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
	     i += (size_t)gridDim.x * blockDim.x)
		x[i] *= s;
}

extern "C" int cuq_scale_launch(float *x, size_t count, float s, cudaStream_t stream)
{
	if (!x || !count) return -EINVAL;
	scale_kernel<<<grid_for(count, 256), 256, 0, stream>>>(x, count, s);
	return cuq_launch_status();
}

static __global__ void add_kernel(float *x, const float *y, size_t count)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
	     i += (size_t)gridDim.x * blockDim.x)
		x[i] += y[i];
}

extern "C" int cuq_add_launch(float *x, const float *y, size_t count, cudaStream_t stream)
{
	if (!x || !y || !count) return -EINVAL;
	add_kernel<<<grid_for(count, 256), 256, 0, stream>>>(x, y, count);
	return cuq_launch_status();
}

/* ---- RoPE ---- */

extern "C" void cuq_rope_freqs(float base, float scale, int n_rot, float *freq)
{
	/* In double on the host, so the table is exact to f32 rounding. */
	for (int i = 0; i < n_rot / 2; i++)
		freq[i] = (float)((double)scale * pow((double)base, -2.0 * i / (double)n_rot));
}

__device__ __forceinline__ void rotate(float &a, float &b, float angle)
{
	float s, c;
	sincosf(angle, &s, &c);
	const float x0 = a, x1 = b;
	a = x0 * c - x1 * s;
	b = x0 * s + x1 * c;
}

/* Pair i (0..D/2-1) of a head: its two element indices and whether it rotates
 * (and with which frequency index). Pairs past n_rot/2 cover the unrotated
 * tail [n_rot, D) two by two. */
__device__ __forceinline__ bool pair_of(int i, const cuq_rope &r, int *a, int *b)
{
	const int h = r.n_rot / 2;
	if (i < h) {
		*a = r.neox ? i : 2 * i;
		*b = r.neox ? i + h : 2 * i + 1;
		return true;
	}
	*a = r.n_rot + 2 * (i - h);
	*b = *a + 1;
	return false;
}

/* Element e (0..D-1) of one head x (+ bias) after RoPE at angle factor fp:
 * its pair rotated as the pair loops do, then the one of the two e is. The
 * q8_0 writers work a block of 32 elements to a warp, so each lane needs
 * its own element, not a pair. */
__device__ __forceinline__ float rope_elem(const float *x, const float *bias, int e,
                                           const cuq_rope &r, float fp)
{
	const int h = r.n_rot / 2;
	const int pr = e >= r.n_rot ? h + (e - r.n_rot) / 2 : r.neox ? (e < h ? e : e - h) : e / 2;
	int ia, ib;
	const bool rot = pair_of(pr, r, &ia, &ib);
	float a = x[ia], b = x[ib];
	if (bias) a += bias[ia], b += bias[ib];
	if (rot) rotate(a, b, fp * r.freq[pr]);
	return e == ia ? a : b;
}

__device__ __forceinline__ __half *kv_at(const cuq_kv &kv, int page, int layer, int which, int slot)
{
	const size_t kvd = (size_t)kv.n_kv_heads * kv.head_dim;
	return (__half *)kv.pool +
	       ((((size_t)page * kv.n_layers + layer) * 2 + which) * kv.page_size + slot) * kvd;
}

/* One block per entry t: threads over the pairs of q, then of k (rotated and
 * written) and v (written); with a q8_0 pool a warp per block of k and v. */
static __global__ void rope_kv_kernel(float *q, const float *k, const float *v, const float *bq,
                                      const float *bk, const float *bv, const int32_t *pos,
                                      const int32_t *seq, int n_heads, cuq_rope rope, cuq_kv kv,
                                      int layer)
{
	const int t = blockIdx.x;
	const int D = kv.head_dim, hp = D / 2;
	const int qd = n_heads * D, kvd = kv.n_kv_heads * D;
	const int p = pos[t];
	const float fp = (float)p;
	float *qr = q + (size_t)t * qd;
	for (int i = threadIdx.x; i < qd / 2; i += blockDim.x) {
		const int head = i / hp, pr = i % hp;
		int ia, ib;
		const bool rot = pair_of(pr, rope, &ia, &ib);
		ia += head * D, ib += head * D;
		float a = qr[ia], b = qr[ib];
		if (bq) a += bq[ia], b += bq[ib];
		if (rot) rotate(a, b, fp * rope.freq[pr]);
		qr[ia] = a, qr[ib] = b;
	}
	const int page = kv.tables[(size_t)seq[t] * kv.max_pages + p / kv.page_size];
	const int slot = p % kv.page_size;
	const float *kr = k + (size_t)t * kvd, *vr = v + (size_t)t * kvd;
	if (kv.q8) {
		/* a warp per block of 32: each lane its element, rotated */
		const int lane = threadIdx.x % 32, nw = blockDim.x / 32;
		unsigned char *kb = kv_row(kv, page, layer, 0, slot),
		              *vb = kv_row(kv, page, layer, 1, slot);
		for (int b = threadIdx.x / 32; b < kvd / 32; b += nw) {
			const int e = 32 * b + lane, head = e / D;
			const float kx =
			        rope_elem(kr + (size_t)head * D, bk ? bk + (size_t)head * D : NULL,
			                  e % D, rope, fp);
			q8_store_warp(kx, lane, kb + (size_t)b * CUQ_Q8_BLOCK);
			q8_store_warp(vr[e] + (bv ? bv[e] : 0.f), lane,
			              vb + (size_t)b * CUQ_Q8_BLOCK);
		}
		return;
	}
	__half *kd = kv_at(kv, page, layer, 0, slot);
	__half *vd = kv_at(kv, page, layer, 1, slot);
	for (int i = threadIdx.x; i < kvd / 2; i += blockDim.x) {
		const int head = i / hp, pr = i % hp;
		int ia, ib;
		const bool rot = pair_of(pr, rope, &ia, &ib);
		ia += head * D, ib += head * D;
		float a = kr[ia], b = kr[ib];
		if (bk) a += bk[ia], b += bk[ib];
		if (rot) rotate(a, b, fp * rope.freq[pr]);
		kd[ia] = __float2half_rn(a);
		kd[ib] = __float2half_rn(b);
		vd[2 * i] = __float2half_rn(vr[2 * i] + (bv ? bv[2 * i] : 0.f));
		vd[2 * i + 1] = __float2half_rn(vr[2 * i + 1] + (bv ? bv[2 * i + 1] : 0.f));
	}
}

extern "C" int cuq_rope_kv_launch(float *q, const float *k, const float *v, const float *bq,
                                  const float *bk, const float *bv, const int32_t *pos,
                                  const int32_t *seq, int n, int n_heads,
                                  const struct cuq_rope *rope, const struct cuq_kv *kv, int layer,
                                  cudaStream_t stream)
{
	if (!q || !k || !v || !pos || !seq || !kv || !rope || !rope->freq || n < 1 ||
	    kv->head_dim % 2 || rope->n_rot % 2 || rope->n_rot > kv->head_dim || layer < 0 ||
	    layer >= kv->n_layers || (kv->q8 && kv->head_dim % 32))
		return -EINVAL;
	rope_kv_kernel<<<n, 128, 0, stream>>>(q, k, v, bq, bk, bv, pos, seq, n_heads, *rope, *kv,
	                                      layer);
	return cuq_launch_status();
}

/* One block per (token, layer). Each thread reads its pair (and V values)
 * before writing them, so an in-place move is safe. */
static __global__ void kv_shift_kernel(cuq_kv kv, const int32_t *sp, const int32_t *ss,
                                       const int32_t *dp, const int32_t *ds, int delta,
                                       cuq_rope rope)
{
	const int i = blockIdx.x, layer = blockIdx.y;
	const int D = kv.head_dim, hp = D / 2, kvd = kv.n_kv_heads * D;
	const __half *ks = kv_at(kv, sp[i], layer, 0, ss[i]),
	             *vs = kv_at(kv, sp[i], layer, 1, ss[i]);
	__half *kd = kv_at(kv, dp[i], layer, 0, ds[i]), *vd = kv_at(kv, dp[i], layer, 1, ds[i]);
	for (int j = threadIdx.x; j < kvd / 2; j += blockDim.x) {
		const int head = j / hp, pr = j % hp;
		int ia, ib;
		const bool rot = pair_of(pr, rope, &ia, &ib);
		ia += head * D, ib += head * D;
		float a = __half2float(ks[ia]), b = __half2float(ks[ib]);
		const __half v0 = vs[2 * j], v1 = vs[2 * j + 1];
		if (rot) rotate(a, b, (float)delta * rope.freq[pr]);
		kd[ia] = __float2half_rn(a);
		kd[ib] = __float2half_rn(b);
		vd[2 * j] = v0;
		vd[2 * j + 1] = v1;
	}
}

/* kv_shift_kernel for a q8_0 pool: per KV head, K's values dequantized into
 * shared memory (all read before any is written: a move may be in place),
 * each block re-quantized by a warp after the rotation (as the CPU backend:
 * dequantize, rotate, quantize); V's blocks copied as bytes. */
static __global__ void kv_shift_q8_kernel(cuq_kv kv, const int32_t *sp, const int32_t *ss,
                                          const int32_t *dp, const int32_t *ds, int delta,
                                          cuq_rope rope)
{
	__shared__ float kh[256];
	const int i = blockIdx.x, layer = blockIdx.y;
	const int D = kv.head_dim, nbh = D / 32;
	const int lane = threadIdx.x % 32, nw = blockDim.x / 32;
	const unsigned char *ks = kv_row(kv, sp[i], layer, 0, ss[i]),
	                    *vs = kv_row(kv, sp[i], layer, 1, ss[i]);
	unsigned char *kd = kv_row(kv, dp[i], layer, 0, ds[i]),
	              *vd = kv_row(kv, dp[i], layer, 1, ds[i]);
	for (int head = 0; head < kv.n_kv_heads; head++) {
		const unsigned char *src = ks + (size_t)head * nbh * CUQ_Q8_BLOCK;
		for (int e = threadIdx.x; e < D; e += blockDim.x) {
			const unsigned char *blk = src + (e / 32) * CUQ_Q8_BLOCK;
			kh[e] = h2f(*(const uint16_t *)blk) * (float)(signed char)blk[2 + e % 32];
		}
		__syncthreads();
		for (int b = threadIdx.x / 32; b < nbh; b += nw)
			q8_store_warp(rope_elem(kh, NULL, 32 * b + lane, rope, (float)delta), lane,
			              kd + ((size_t)head * nbh + b) * CUQ_Q8_BLOCK);
		__syncthreads();
	}
	if (vs != vd)
		for (size_t o = threadIdx.x; o < kv_row_bytes(kv); o += blockDim.x) vd[o] = vs[o];
}

extern "C" int cuq_kv_shift_launch(const struct cuq_kv *kv, const int32_t *src_page,
                                   const int32_t *src_slot, const int32_t *dst_page,
                                   const int32_t *dst_slot, int n, int delta,
                                   const struct cuq_rope *rope, cudaStream_t stream)
{
	if (!kv || !src_page || !src_slot || !dst_page || !dst_slot || !rope || !rope->freq ||
	    n < 0 || rope->n_rot > kv->head_dim)
		return -EINVAL;
	if (kv->q8 && (kv->head_dim % 32 || kv->head_dim > 256)) return -EINVAL;
	if (n == 0) return 0;
	if (kv->q8)
		kv_shift_q8_kernel<<<dim3(n, kv->n_layers), 64, 0, stream>>>(
		        *kv, src_page, src_slot, dst_page, dst_slot, delta, *rope);
	else
		kv_shift_kernel<<<dim3(n, kv->n_layers), 64, 0, stream>>>(
		        *kv, src_page, src_slot, dst_page, dst_slot, delta, *rope);
	return cuq_launch_status();
}

/* ---- row gather (the rows whose logits are wanted) ---- */

static __global__ void gather_kernel(const float *src, const int32_t *rows, int width, float *dst)
{
	const int i = blockIdx.x;
	const float *s = src + (size_t)rows[i] * width;
	for (int k = threadIdx.x; k < width; k += blockDim.x) dst[(size_t)i * width + k] = s[k];
}

extern "C" int cuq_gather_launch(const float *src, const int32_t *rows, int n, int width,
                                 float *dst, cudaStream_t stream)
{
	if (!src || !rows || !dst || n < 1 || width < 1) return -EINVAL;
	gather_kernel<<<n, 256, 0, stream>>>(src, rows, width, dst);
	return cuq_launch_status();
}
