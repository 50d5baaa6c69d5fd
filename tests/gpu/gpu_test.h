/*
 * gpu_test.h - what every GPU test shares: skip cleanly (exit 77, which meson
 * counts as skipped) when there is no CUDA device, a seeded generator, and
 * device buffers that abort the case on failure.
 */
#ifndef INFILL_TESTS_GPU_TEST_H
#define INFILL_TESTS_GPU_TEST_H

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

/* Prints the reason and returns 77 when there is no CUDA device (nor an
 * NVIDIA driver), 1 when the driver is there but the runtime cannot use it
 * (a driver older than the runtime, say: a failure, not a skip), else 0. */
static int gpu_skip_reason(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e == cudaSuccess && n > 0) return 0;
	if (e == cudaSuccess || e == cudaErrorNoDevice ||
	    access("/proc/driver/nvidia/version", F_OK) != 0) {
		printf("SKIP: no CUDA device (%s)\n",
		       e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
		return 77;
	}
	printf("FAIL: the NVIDIA driver is here but the CUDA runtime cannot use it: %s\n",
	       cudaGetErrorString(e));
	return 1;
}

/* The harness loop of TEST_MAIN, behind the device check. */
#define GPU_TEST_MAIN()                                                       \
	int main(void)                                                        \
	{                                                                     \
		int skip = gpu_skip_reason();                                 \
		if (skip) return skip;                                        \
		const char *filter = getenv("TEST_FILTER");                   \
		int passed = 0, failed = 0;                                   \
		for (struct test_case *t = test_cases_head; t; t = t->next) { \
			if (filter && !strstr(t->name, filter)) continue;     \
			int f = 0;                                            \
			t->fn(&f);                                            \
			printf("%s %s\n", f ? "FAIL" : "ok  ", t->name);      \
			fflush(stdout);                                       \
			f ? failed++ : passed++;                              \
		}                                                             \
		printf("%d passed, %d failed\n", passed, failed);             \
		return failed ? 1 : 0;                                        \
	}

/* xorshift64*: reproducible data for every run. */
static inline uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [-1, 1). */
static inline float rng_f(uint64_t *s)
{
	return (float)((rng_next(s) >> 40) / (double)(1ull << 24)) * 2.f - 1.f;
}

static inline void rng_fill(uint64_t *s, float *x, size_t n, float scale)
{
	for (size_t i = 0; i < n; i++) x[i] = rng_f(s) * scale;
}

/* Device copy of host bytes; NULL on failure (the caller REQUIREs it). */
static inline void *dev_from(const void *host, size_t bytes)
{
	void *d = NULL;
	if (cudaMalloc(&d, bytes ? bytes : 16) != cudaSuccess) return NULL;
	if (host && cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
		cudaFree(d);
		return NULL;
	}
	if (!host) cudaMemset(d, 0, bytes);
	return d;
}

static inline int dev_to(void *host, const void *dev, size_t bytes)
{
	if (cudaDeviceSynchronize() != cudaSuccess) return -1;
	return cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
}

#endif
