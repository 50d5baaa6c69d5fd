/*
 * cuda_emu.h - compiles our CUDA kernels as host C++ and runs them on the
 * CPU, so tests/gpu checks every kernel's indexing, reductions and
 * synchronization on machines without a GPU (CI, this project's dev box).
 *
 * Force-included (g++ -include) into the kernels/cuda sources after emu_prep.py
 * rewrote each launch `k<<<grid, block, smem, stream>>>(args)` into
 * `emu::launcher(grid, block, smem, stream).bind(k)(args)`. Each CUDA thread
 * becomes a fiber (ucontext); a block's fibers run round-robin on one OS
 * thread, __syncthreads() is a block barrier and warp shuffles a warp
 * barrier around a shared exchange slot, so divergent barriers deadlock here
 * as they would hang on a GPU (the emulator reports it and aborts).
 * __shared__ becomes static: blocks run one after another, so one copy per
 * kernel is enough. What this cannot check: timing, memory coalescing, races
 * between blocks, and the numerics of fast-math intrinsics (they map to libm).
 */
#ifndef INFILL_TESTS_GPU_CUDA_EMU_H
#define INFILL_TESTS_GPU_CUDA_EMU_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <functional>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__      static
#define __launch_bounds__(...)

namespace emu
{

struct thread_state {
	uint3 tid;
	int lane, warp;
};

extern thread_state *g_cur;
extern uint3 g_block;
extern dim3 g_bdim, g_gdim;

void sync_block();
void sync_warp();
uint32_t *warp_slot();
void launch(dim3 g, dim3 b, cudaStream_t s, std::function<void()> fn);

template <class T> inline T shfl_xor(T v, int o)
{
	static_assert(sizeof(T) == 4, "32-bit shuffles only");
	uint32_t *slot = warp_slot();
	memcpy(&slot[g_cur->lane], &v, 4);
	sync_warp();
	T r;
	memcpy(&r, &slot[g_cur->lane ^ o], 4);
	sync_warp();
	return r;
}

template <class... P> struct bound {
	dim3 g, b;
	cudaStream_t s;
	void (*f)(P...);
	template <class... A> void operator()(A... a) const
	{
		void (*fn)(P...) = f;
		launch(g, b, s, [=]() { fn(static_cast<P>(a)...); });
	}
};

struct launcher {
	dim3 g, b;
	cudaStream_t s;
	launcher(dim3 g_, dim3 b_, size_t smem = 0, cudaStream_t s_ = 0) : g(g_), b(b_), s(s_)
	{
		(void)smem;
	}
	template <class... P> bound<P...> bind(void (*f)(P...)) const
	{
		return bound<P...>{ g, b, s, f };
	}
};

} // namespace emu

#define threadIdx                   (emu::g_cur->tid)
#define blockIdx                    (emu::g_block)
#define blockDim                    (emu::g_bdim)
#define gridDim                     (emu::g_gdim)
#define __syncthreads()             emu::sync_block()
#define __shfl_xor_sync(mask, v, o) emu::shfl_xor((v), (o))
#define __ldg(p)                    (*(p))
#define __expf                      expf

static inline float rsqrtf(float x)
{
	return 1.f / sqrtf(x);
}

static inline float __uint_as_float(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline int min(int a, int b)
{
	return a < b ? a : b;
}

#endif
