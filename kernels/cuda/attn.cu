/*
 * attn.cu - paged attention over the KV page pool (flash-decoding).
 *
 * One block of ATTN_WARPS warps per (split, head, entry). Each warp walks
 * keys of its split one at a time: the lanes hold 4 consecutive dimensions
 * each (one 8-byte load of f16 per key and lane, coalesced across the warp),
 * the dot product is a warp sum, and an online softmax keeps (max, sum,
 * unnormalized output) so nothing of length L is stored. The warps' states
 * are merged in shared memory, then the splits' states by a second kernel.
 * Keys of the entry's own batch were written to the pool beforehand
 * (cuq_rope_kv_launch), so prefill and decode share this path, causality
 * coming from each entry reading positions 0..pos only.
 */
#include <math.h>

#include "common.cuh"

#define ATTN_WARPS 4
#define ATTN_MAX_D 256
#define ATTN_DPL   (ATTN_MAX_D / 128) /* 4-dim groups per lane */

extern "C" size_t cuq_attn_scratch(int n, int n_heads, int head_dim, int n_splits)
{
	return (size_t)n * n_heads * n_splits * (head_dim + 2) * sizeof(float);
}

extern "C" int cuq_attn_splits(int n, int n_heads, int n_sm)
{
	/* Two blocks per SM is enough to keep the memory system busy. */
	const int want = 2 * (n_sm > 0 ? n_sm : 132);
	int s = want / (n * n_heads > 0 ? n * n_heads : 1);
	if (s < 1) s = 1;
	if (s > CUQ_ATTN_MAX_SPLITS) s = CUQ_ATTN_MAX_SPLITS;
	return s;
}

__device__ __forceinline__ void load4h(const __half *p, float *f)
{
	const uint2 u = *(const uint2 *)p; /* one 8-byte load */
	const __half2 a = __halves2half2(__ushort_as_half((unsigned short)(u.x & 0xffffu)),
	                                 __ushort_as_half((unsigned short)(u.x >> 16)));
	const __half2 b = __halves2half2(__ushort_as_half((unsigned short)(u.y & 0xffffu)),
	                                 __ushort_as_half((unsigned short)(u.y >> 16)));
	const float2 fa = __half22float2(a), fb = __half22float2(b);
	f[0] = fa.x, f[1] = fa.y, f[2] = fb.x, f[3] = fb.y;
}

/*
 * With a q8_0 pool (Q8) a lane's 4 dimensions lie in one block (8 lanes a
 * block): the query is rounded to q8_0 per block first, as the CPU backend
 * and llama.cpp do (its d from the 8 lanes' max), a key's block dot is an
 * exact integer sum over those 8 lanes times d_k * d_q, and a value's 4
 * int8 are widened and scaled in registers; nothing is dequantized to
 * memory. The f16 path is the same code with Q8 false.
 */
template <bool Q8>
__device__ __forceinline__ void attn_body(const float *q, const int32_t *pos, const int32_t *seq,
                                          int n_heads, const cuq_kv &kv, int layer, int n_splits,
                                          float *part, float *out)
{
	__shared__ float sm_m[ATTN_WARPS], sm_l[ATTN_WARPS];
	__shared__ float sm_acc[ATTN_WARPS][ATTN_MAX_D];
	const int split = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	const int D = kv.head_dim;
	const int kvh = h / (n_heads / kv.n_kv_heads);
	const int kvd = kv.n_kv_heads * D;
	const int L = pos[t] + 1;
	const int chunk = (L + n_splits - 1) / n_splits;
	const int p0 = split * chunk, p1 = min(p0 + chunk, L);
	const int32_t *table = kv.tables + (size_t)seq[t] * kv.max_pages;
	const float scale = rsqrtf((float)D);

	float qv[ATTN_DPL][4], acc[ATTN_DPL][4];
	int qi[ATTN_DPL][4]; /* Q8: the query's q8_0 levels, */
	float qd[ATTN_DPL];  /* and its block's d */
#pragma unroll
	for (int i = 0; i < ATTN_DPL; i++) {
		const int d = 4 * lane + 128 * i;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			/* Q8 scales the score after the dot, as the CPU backend does */
			qv[i][j] = d < D ? q[((size_t)t * n_heads + h) * D + d + j] *
			                           (Q8 ? 1.f : scale)
			                 : 0.f;
			acc[i][j] = 0.f;
		}
		if (Q8 && 128 * i < D) { /* uniform across the warp: the shuffles converge */
			float amax = fmaxf(fmaxf(fabsf(qv[i][0]), fabsf(qv[i][1])),
			                   fmaxf(fabsf(qv[i][2]), fabsf(qv[i][3])));
			for (int o = 1; o < 8; o <<= 1)
				amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
			const float id = amax != 0.f ? 127.f / amax : 0.f;
			qd[i] = __half2float(__float2half_rn(amax / 127.f));
#pragma unroll
			for (int j = 0; j < 4; j++) qi[i][j] = (int)rintf(qv[i][j] * id);
		}
	}
	float m = -INFINITY, l = 0.f;
	const size_t rb = kv_row_bytes(kv);

	for (int p = p0 + warp; p < p1; p += ATTN_WARPS) {
		const int page = table[p / kv.page_size], slot = p % kv.page_size;
		const size_t row = ((size_t)page * kv.n_layers + layer) * 2 * kv.page_size + slot;
		const __half *kp = (const __half *)kv.pool + row * kvd + (size_t)kvh * D;
		const __half *vp = kp + (size_t)kv.page_size * kvd;
		const unsigned char *kb = (const unsigned char *)kv.pool + row * rb +
		                          (size_t)kvh * (D / 32) * CUQ_Q8_BLOCK;
		const unsigned char *vb = kb + (size_t)kv.page_size * rb;
		float s = 0.f;
#pragma unroll
		for (int i = 0; i < ATTN_DPL; i++) {
			const int d = 4 * lane + 128 * i;
			if (Q8) {
				if (128 * i >= D) continue; /* uniform */
				int isum = 0;
				float dk = 0.f;
				if (d < D) {
					const unsigned char *blk = kb + (d / 32) * CUQ_Q8_BLOCK;
					int k4[4];
					q8_load4(blk, d % 32, k4);
					dk = h2f(*(const uint16_t *)blk);
					isum = qi[i][0] * k4[0] + qi[i][1] * k4[1] +
					       qi[i][2] * k4[2] + qi[i][3] * k4[3];
				}
				for (int o = 1; o < 8; o <<= 1)
					isum += __shfl_xor_sync(0xffffffffu, isum, o);
				if (lane % 8 == 0) s += (float)isum * (dk * qd[i]);
			} else if (d < D) {
				float k4[4];
				load4h(kp + d, k4);
				s += qv[i][0] * k4[0] + qv[i][1] * k4[1] + qv[i][2] * k4[2] +
				     qv[i][3] * k4[3];
			}
		}
		s = warp_sum(s);
		if (Q8) s *= scale;
		const float m_new = fmaxf(m, s);
		const float corr = __expf(m - m_new), e = __expf(s - m_new);
		l = l * corr + e;
		m = m_new;
#pragma unroll
		for (int i = 0; i < ATTN_DPL; i++) {
			const int d = 4 * lane + 128 * i;
			if (d < D) {
				float v4[4];
				if (Q8) {
					const unsigned char *blk = vb + (d / 32) * CUQ_Q8_BLOCK;
					const float dv = h2f(*(const uint16_t *)blk);
					int v8[4];
					q8_load4(blk, d % 32, v8);
					for (int j = 0; j < 4; j++) v4[j] = dv * (float)v8[j];
				} else
					load4h(vp + d, v4);
#pragma unroll
				for (int j = 0; j < 4; j++)
					acc[i][j] = acc[i][j] * corr + e * v4[j];
			}
		}
	}

	/* Merge the warps: warp w's state is (m, l, acc) over its keys. */
	if (lane == 0) {
		sm_m[warp] = m;
		sm_l[warp] = l;
	}
	__syncthreads();
	float M = -INFINITY;
	for (int w = 0; w < ATTN_WARPS; w++) M = fmaxf(M, sm_m[w]);
	const float my = m == -INFINITY ? 0.f : __expf(m - M);
#pragma unroll
	for (int i = 0; i < ATTN_DPL; i++) {
		const int d = 4 * lane + 128 * i;
		if (d < D)
			for (int j = 0; j < 4; j++) sm_acc[warp][d + j] = acc[i][j] * my;
	}
	__syncthreads();
	float Ls = 0.f;
	for (int w = 0; w < ATTN_WARPS; w++)
		Ls += sm_m[w] == -INFINITY ? 0.f : sm_l[w] * __expf(sm_m[w] - M);
	float *dst;
	float norm;
	if (n_splits == 1) {
		dst = out + ((size_t)t * n_heads + h) * D;
		norm = Ls > 0.f ? 1.f / Ls : 0.f;
	} else {
		float *pp = part + (((size_t)t * n_heads + h) * n_splits + split) * (D + 2);
		if (threadIdx.x == 0) {
			pp[0] = M;
			pp[1] = Ls;
		}
		dst = pp + 2;
		norm = 1.f;
	}
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float s = 0.f;
		for (int w = 0; w < ATTN_WARPS; w++) s += sm_acc[w][d];
		dst[d] = s * norm;
	}
}

static __global__ void __launch_bounds__(ATTN_WARPS * 32)
        attn_kernel(const float *q, const int32_t *pos, const int32_t *seq, int n_heads, cuq_kv kv,
                    int layer, int n_splits, float *part, float *out)
{
	attn_body<false>(q, pos, seq, n_heads, kv, layer, n_splits, part, out);
}

static __global__ void __launch_bounds__(ATTN_WARPS * 32)
        attn_q8_kernel(const float *q, const int32_t *pos, const int32_t *seq, int n_heads,
                       cuq_kv kv, int layer, int n_splits, float *part, float *out)
{
	attn_body<true>(q, pos, seq, n_heads, kv, layer, n_splits, part, out);
}

/* One block per (head, entry): out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s. */
static __global__ void attn_combine_kernel(const float *part, int n_heads, int D, int n_splits,
                                           float *out)
{
	const int h = blockIdx.x, t = blockIdx.y;
	const float *pp = part + ((size_t)t * n_heads + h) * n_splits * (D + 2);
	float M = -INFINITY;
	for (int s = 0; s < n_splits; s++)
		if (pp[s * (D + 2) + 1] > 0.f) M = fmaxf(M, pp[s * (D + 2)]);
	float Ls = 0.f;
	for (int s = 0; s < n_splits; s++) {
		const float *ps = pp + s * (D + 2);
		if (ps[1] > 0.f) Ls += ps[1] * __expf(ps[0] - M);
	}
	const float inv = Ls > 0.f ? 1.f / Ls : 0.f;
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float a = 0.f;
		for (int s = 0; s < n_splits; s++) {
			const float *ps = pp + s * (D + 2);
			if (ps[1] > 0.f) a += ps[2 + d] * __expf(ps[0] - M);
		}
		out[((size_t)t * n_heads + h) * D + d] = a * inv;
	}
}

extern "C" int cuq_attn_launch(const float *q, const int32_t *pos, const int32_t *seq, int n,
                               int n_heads, const struct cuq_kv *kv, int layer, int n_splits,
                               float *part, float *out, cudaStream_t stream)
{
	if (!q || !pos || !seq || !kv || !out || n < 1 || n_heads < 1 || kv->n_kv_heads < 1 ||
	    n_heads % kv->n_kv_heads || kv->head_dim % 4 || kv->head_dim > ATTN_MAX_D ||
	    n_splits < 1 || n_splits > CUQ_ATTN_MAX_SPLITS || (n_splits > 1 && !part) ||
	    layer < 0 || layer >= kv->n_layers || (kv->q8 && kv->head_dim % 32))
		return -EINVAL;
	if (kv->q8)
		attn_q8_kernel<<<dim3(n_splits, n_heads, n), ATTN_WARPS * 32, 0, stream>>>(
		        q, pos, seq, n_heads, *kv, layer, n_splits, part, out);
	else
		attn_kernel<<<dim3(n_splits, n_heads, n), ATTN_WARPS * 32, 0, stream>>>(
		        q, pos, seq, n_heads, *kv, layer, n_splits, part, out);
	if (n_splits > 1)
		attn_combine_kernel<<<dim3(n_heads, n), 64, 0, stream>>>(
		        part, n_heads, kv->head_dim, n_splits, out);
	return cuq_launch_status();
}
