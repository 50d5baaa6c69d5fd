/*
 * emu.cc - the CPU side of cuda_emu.h: fibers for CUDA threads, and the
 * subset of the CUDA runtime and cuBLAS our backend calls, done on host
 * memory ("device" pointers are host pointers). Stream capture records the
 * launches and a graph launch replays them, so the backend's graph path runs
 * here too. Single-threaded; one emulated device with 4 multiprocessors.
 * Fibers switch with a few instructions of x86-64 assembly (no system call,
 * unlike swapcontext), which makes the emulation fast enough for CI.
 */
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "cuda_emu.h"

/* Saves the callee-saved registers on the current stack, stores the stack
 * pointer in *from, switches to `to` and restores what was saved there. */
extern "C" void emu_switch(void **from, void *to);
asm(".text\n"
    ".globl emu_switch\n"
    ".type emu_switch,@function\n"
    "emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size emu_switch, .-emu_switch\n");

namespace emu {

thread_state *g_cur;
uint3 g_block;
dim3 g_bdim, g_gdim;

namespace {

struct group {
	int live = 0, arrived = 0;
	unsigned gen = 0;
};

struct fiber {
	void *sp;
	thread_state st;
	bool done = false;
	group *wait = nullptr;
	unsigned wait_gen = 0;
};

const size_t STACK = 64 * 1024;
void *sched_sp;
std::vector<fiber> fibers;
std::vector<char *> stacks;
group block_group;
std::vector<group> warp_groups;
std::vector<uint32_t> warp_slots;
fiber *cur_fiber;
const std::function<void()> *cur_fn;

struct capture {
	bool on = false;
	std::vector<std::function<void()>> ops;
} cap;

void release_if_complete(group &g)
{
	if (g.live > 0 && g.arrived == g.live) {
		g.arrived = 0;
		g.gen++;
	}
}

void barrier(group &g)
{
	g.arrived++;
	unsigned my = g.gen;
	release_if_complete(g);
	if (g.gen != my)
		return; /* this fiber completed the barrier */
	cur_fiber->wait = &g;
	cur_fiber->wait_gen = my;
	emu_switch(&cur_fiber->sp, sched_sp);
}

[[noreturn]] void fiber_main()
{
	(*cur_fn)();
	fiber *f = cur_fiber;
	f->done = true;
	block_group.live--;
	release_if_complete(block_group);
	group &w = warp_groups[f->st.warp];
	w.live--;
	release_if_complete(w);
	void *dead;
	emu_switch(&dead, sched_sp); /* never resumed */
	abort();
}

void run_block(const std::function<void()> &fn)
{
	const int n = (int)(g_bdim.x * g_bdim.y * g_bdim.z);
	const int nw = (n + 31) / 32;
	fibers.assign((size_t)n, fiber());
	while ((int)stacks.size() < n)
		stacks.push_back((char *)malloc(STACK));
	block_group = group();
	block_group.live = n;
	warp_groups.assign((size_t)nw, group());
	warp_slots.assign((size_t)nw * 32, 0);
	for (int i = 0; i < n; i++)
		warp_groups[(size_t)i / 32].live++;
	cur_fn = &fn;
	for (int i = 0; i < n; i++) {
		fiber &f = fibers[(size_t)i];
		f.st.tid = make_uint3((unsigned)i % g_bdim.x, (unsigned)(i / g_bdim.x) % g_bdim.y,
			(unsigned)i / (g_bdim.x * g_bdim.y));
		f.st.lane = i % 32;
		f.st.warp = i / 32;
		/* A fresh stack that emu_switch "returns" into fiber_main from:
		 * six zeroed registers, the entry address, an alignment slot. */
		uintptr_t top = ((uintptr_t)stacks[(size_t)i] + STACK) & ~(uintptr_t)15;
		void **sp = (void **)(top - 64);
		memset(sp, 0, 64);
		sp[6] = (void *)&fiber_main;
		f.sp = sp;
	}
	int left = n;
	while (left > 0) {
		bool progress = false;
		for (int i = 0; i < n; i++) {
			fiber &f = fibers[(size_t)i];
			if (f.done)
				continue;
			if (f.wait) {
				if (f.wait->gen == f.wait_gen)
					continue;
				f.wait = nullptr;
			}
			cur_fiber = &f;
			g_cur = &f.st;
			emu_switch(&sched_sp, f.sp);
			progress = true;
			if (f.done)
				left--;
		}
		if (!progress) {
			fprintf(stderr, "cuda_emu: deadlock in block (%u,%u,%u): %d threads wait at a barrier that "
					"not all threads of their block/warp reach\n",
				g_block.x, g_block.y, g_block.z, left);
			abort();
		}
	}
}

void run_grid(dim3 g, dim3 b, const std::function<void()> &fn)
{
	g_gdim = g;
	g_bdim = b;
	for (unsigned z = 0; z < g.z; z++)
		for (unsigned y = 0; y < g.y; y++)
			for (unsigned x = 0; x < g.x; x++) {
				g_block = make_uint3(x, y, z);
				run_block(fn);
			}
}

} // namespace

void sync_block()
{
	barrier(block_group);
}

void sync_warp()
{
	barrier(warp_groups[(size_t)g_cur->warp]);
}

uint32_t *warp_slot()
{
	return &warp_slots[(size_t)g_cur->warp * 32];
}

void launch(dim3 g, dim3 b, cudaStream_t s, std::function<void()> fn)
{
	(void)s;
	if (g.x == 0 || g.y == 0 || g.z == 0 || b.x * b.y * b.z == 0 || b.x * b.y * b.z > 1024) {
		fprintf(stderr, "cuda_emu: bad launch configuration grid (%u,%u,%u) block (%u,%u,%u)\n", g.x, g.y, g.z,
			b.x, b.y, b.z);
		abort();
	}
	if (cap.on) {
		cap.ops.push_back([=]() { run_grid(g, b, fn); });
		return;
	}
	run_grid(g, b, fn);
}

} // namespace emu

/* ---- the CUDA runtime subset ---- */

struct CUgraph_st {
	std::vector<std::function<void()>> ops;
};
struct CUgraphExec_st {
	std::vector<std::function<void()>> ops;
};
struct CUstream_st {
	int unused;
};

static void enqueue(std::function<void()> op)
{
	if (emu::cap.on)
		emu::cap.ops.push_back(op);
	else
		op();
}

cudaError_t cudaGetDeviceCount(int *n)
{
	*n = getenv("CUDA_EMU_NO_DEVICE") ? 0 : 1;
	return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated error"; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int)
{
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "cuda_emu (CPU)");
	p->major = 9;
	p->minor = 0;
	p->multiProcessorCount = 4;
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n)
{
	if (n > ((size_t)8 << 30))
		return cudaErrorMemoryAllocation;
	*p = aligned_alloc(256, (n + 255) & ~(size_t)255);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p)
{
	free(p);
	return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) { return cudaMalloc(p, n); }
cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }
cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot)
{
	*fr = (size_t)8 << 30;
	*tot = (size_t)8 << 30;
	return cudaSuccess;
}

cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind)
{
	memmove(d, s, n);
	return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t)
{
	enqueue([=]() { memmove(d, s, n); });
	return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, cudaMemcpyKind,
	cudaStream_t)
{
	enqueue([=]() {
		for (size_t r = 0; r < h; r++)
			memmove((char *)d + r * dp, (const char *)s + r * sp, w);
	});
	return cudaSuccess;
}
cudaError_t cudaMemset(void *d, int v, size_t n)
{
	memset(d, v, n);
	return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t)
{
	enqueue([=]() { memset(d, v, n); });
	return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int)
{
	*s = new CUstream_st();
	return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	delete s;
	return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode)
{
	if (emu::cap.on)
		return cudaErrorIllegalState;
	emu::cap.on = true;
	emu::cap.ops.clear();
	return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *g)
{
	if (!emu::cap.on)
		return cudaErrorIllegalState;
	emu::cap.on = false;
	*g = new CUgraph_st();
	(*g)->ops.swap(emu::cap.ops);
	return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long)
{
	*e = new CUgraphExec_st();
	(*e)->ops = g->ops;
	return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t)
{
	for (auto &op : e->ops)
		op();
	return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
	delete g;
	return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e)
{
	delete e;
	return cudaSuccess;
}

/* ---- the cuBLAS subset: GemmEx with op(A) = A^T, op(B) = B, f32 C ---- */

struct cublasContext {
	cublasPointerMode_t mode;
};

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
	*h = new cublasContext{ CUBLAS_POINTER_MODE_HOST };
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h)
{
	delete h;
	return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode)
{
	h->mode = mode;
	return CUBLAS_STATUS_SUCCESS;
}

static float load_el(const void *p, cudaDataType_t t, size_t i)
{
	switch (t) {
	case CUDA_R_32F: return ((const float *)p)[i];
	case CUDA_R_16F: return __half2float(((const __half *)p)[i]);
	case CUDA_R_16BF: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
	default: abort();
	}
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
	const void *alpha, const void *A, cudaDataType_t at, int lda, const void *B, cudaDataType_t bt, int ldb,
	const void *beta, void *C, cudaDataType_t ct, int ldc, cublasComputeType_t, cublasGemmAlgo_t)
{
	if (ta != CUBLAS_OP_T || tb != CUBLAS_OP_N || ct != CUDA_R_32F)
		return CUBLAS_STATUS_NOT_SUPPORTED;
	/* in device mode alpha and beta are read when the GEMM runs: a kernel
	 * queued before it may write them */
	const bool dev = h->mode == CUBLAS_POINTER_MODE_DEVICE;
	const float hal = dev ? 0.f : *(const float *)alpha, hbe = dev ? 0.f : *(const float *)beta;
	enqueue([=]() {
		const float al = dev ? *(const float *)alpha : hal, be = dev ? *(const float *)beta : hbe;
		for (int j = 0; j < n; j++)
			for (int i = 0; i < m; i++) {
				double s = 0;
				for (int x = 0; x < k; x++)
					s += (double)load_el(A, at, (size_t)x + (size_t)i * lda) *
					     load_el(B, bt, (size_t)x + (size_t)j * ldb);
				float *c = (float *)C + (size_t)i + (size_t)j * ldc;
				*c = (float)(al * s + (be != 0.f ? be * *c : 0.f));
			}
	});
	return CUBLAS_STATUS_SUCCESS;
}
