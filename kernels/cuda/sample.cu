/*
 * sample.cu - greedy / top-k / top-p sampling on the device, so only token
 * ids (and their log-probabilities) cross to the host.
 *
 * One block per row. The top k are found by k passes, each taking the best
 * (logit, id) pair strictly after the previous one in the order "larger logit
 * first, then lower id": no sort and no scratch, and k <= 64 passes over a
 * 32K-128K vocabulary read from L2 cost a few microseconds. The random draw u
 * comes from the host's seeded generator, so a run reproduces exactly.
 */
#include <math.h>

#include "common.cuh"

#define SAMPLE_THREADS 1024

struct pair {
	float v;
	int id;
};

/* a comes before b: larger value, then lower id. Invalid entries have id < 0. */
__device__ __forceinline__ bool before(pair a, pair b)
{
	if (b.id < 0) return a.id >= 0;
	if (a.id < 0) return false;
	return a.v > b.v || (a.v == b.v && a.id < b.id);
}

__device__ pair block_best(pair p)
{
	__shared__ pair s[32];
	for (int o = 16; o > 0; o >>= 1) {
		pair q;
		q.v = __shfl_xor_sync(0xffffffffu, p.v, o);
		q.id = __shfl_xor_sync(0xffffffffu, p.id, o);
		if (before(q, p)) p = q;
	}
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads();
	if (lane == 0) s[warp] = p;
	__syncthreads();
	if (warp == 0) {
		p = lane < (int)(blockDim.x / 32) ? s[lane] : pair{ 0.f, -1 };
		for (int o = 16; o > 0; o >>= 1) {
			pair q;
			q.v = __shfl_xor_sync(0xffffffffu, p.v, o);
			q.id = __shfl_xor_sync(0xffffffffu, p.id, o);
			if (before(q, p)) p = q;
		}
		if (lane == 0) s[0] = p;
	}
	__syncthreads();
	return s[0];
}

__device__ float block_sum_f(float v)
{
	__shared__ float s[32];
	v = warp_sum(v);
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads();
	if (lane == 0) s[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x / 32) ? s[lane] : 0.f;
	return warp_sum(v);
}

static __global__ void __launch_bounds__(SAMPLE_THREADS)
        sample_kernel(const float *logits, int vocab, cuq_sample_params p, int32_t *ids,
                      float *logprob)
{
	__shared__ pair top[CUQ_TOPK_MAX];
	const int r = blockIdx.x;
	const float *x = logits + (size_t)r * vocab;

	/* Pass 1: the best pair (also the greedy answer). NaN never wins. */
	pair best = { 0.f, -1 };
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		pair c = { x[i], x[i] == x[i] ? i : -1 };
		if (before(c, best)) best = c;
	}
	best = block_best(best);
	const float M = best.v;
	float se = 0.f;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x)
		if (x[i] == x[i]) se += __expf(x[i] - M);
	const float lse = M + logf(block_sum_f(se));

	const float temp = p.temp ? p.temp[r] : 0.f;
	int k = p.top_k ? p.top_k[r] : 1;
	if (k < 1) k = 1;
	if (k > CUQ_TOPK_MAX) k = CUQ_TOPK_MAX;
	if (k > vocab) k = vocab;
	if (!(temp > 0.f) || k == 1 || best.id < 0) {
		if (threadIdx.x == 0) {
			ids[r] = best.id < 0 ? 0 : best.id;
			if (logprob) logprob[r] = best.id < 0 ? -INFINITY : best.v - lse;
		}
		return;
	}

	/* Passes 2..k: the next pair strictly after the previous one. */
	if (threadIdx.x == 0) top[0] = best;
	pair prev = best;
	int got = 1;
	for (; got < k; got++) {
		pair c = { 0.f, -1 };
		for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
			pair e = { x[i], x[i] == x[i] ? i : -1 };
			if (e.id >= 0 && before(prev, e) && before(e, c)) c = e;
		}
		c = block_best(c);
		if (c.id < 0) break;
		if (threadIdx.x == 0) top[got] = c;
		prev = c;
	}
	__syncthreads();
	if (threadIdx.x != 0) return;

	/* Softmax over the kept ones at temperature, then the top-p prefix. */
	const float top_p = p.top_p ? p.top_p[r] : 1.f;
	float w[CUQ_TOPK_MAX], total = 0.f;
	for (int i = 0; i < got; i++) {
		w[i] = __expf((top[i].v - top[0].v) / temp);
		total += w[i];
	}
	int keep = got;
	float mass = 0.f;
	for (int i = 0; i < got; i++) {
		mass += w[i];
		if (mass >= top_p * total) {
			keep = i + 1;
			break;
		}
	}
	float kept = 0.f;
	for (int i = 0; i < keep; i++) kept += w[i];
	const float target = (p.u ? p.u[r] : 0.f) * kept;
	int pick = keep - 1;
	float c = 0.f;
	for (int i = 0; i < keep; i++) {
		c += w[i];
		if (target < c) {
			pick = i;
			break;
		}
	}
	ids[r] = top[pick].id;
	if (logprob) logprob[r] = top[pick].v - lse;
}

extern "C" int cuq_sample_launch(const float *logits, int n, int vocab,
                                 const struct cuq_sample_params *p, int32_t *ids, float *logprob,
                                 cudaStream_t stream)
{
	if (!logits || !p || !ids || n < 1 || vocab < 1) return -EINVAL;
	sample_kernel<<<n, SAMPLE_THREADS, 0, stream>>>(logits, vocab, *p, ids, logprob);
	return cuq_launch_status();
}
