/*
 * bench_peak.c - the physical bound of the quantized matmuls on this core:
 * how many int8 multiply-adds one thread's vector units do per second, by
 * the instruction each kernel set's tiles are built on (AVX-512 VNNI's
 * vpdpbusd on zmm, AVX2's vpmaddubsw + vpmaddwd). A prefill figure over
 * this (2 ops per multiply-add, as bench-kernels counts GFLOP/s) says how
 * much room the kernels have left. Not a test; `meson test` does not run it.
 *
 *   bench-peak
 *
 * Sixteen independent accumulators hide the instruction's latency; the
 * second figure of each line takes one operand from memory by broadcast, as
 * the tiles take an activation.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#define REPS 20000000L

/* The thread's own CPU time, as in bench_kernels.c. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int sink;

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static double vnni_zmm(bool from_memory)
{
	static const int src[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	const int *p = src;
	__m512i a[16], w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(5);
	for (int i = 0; i < 16; i++) a[i] = _mm512_set1_epi32(i);
	double t0 = now_s();
	for (long n = 0; n < REPS; n++) {
#pragma GCC unroll 16
		for (int i = 0; i < 16; i++)
			a[i] = _mm512_dpbusd_epi32(a[i], w,
			                           from_memory ? _mm512_set1_epi32(p[i]) : x);
		__asm__ volatile("" : "+v"(w), "+r"(p)); /* neither hoisted */
	}
	double t = now_s() - t0;
	for (int i = 1; i < 16; i++) a[0] = _mm512_add_epi32(a[0], a[i]);
	sink += _mm512_reduce_add_epi32(a[0]);
	return (double)REPS * 16 * 64 * 2 / t / 1e9;
}

__attribute__((target("avx2,fma"))) static double avx2_ymm(bool from_memory)
{
	static const int src[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	const int *p = src;
	__m256i a[16], w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(5);
	const __m256i one = _mm256_set1_epi16(1);
	for (int i = 0; i < 16; i++) a[i] = _mm256_set1_epi32(i);
	double t0 = now_s();
	for (long n = 0; n < REPS; n++) {
#pragma GCC unroll 16
		for (int i = 0; i < 16; i++) {
			__m256i xi = from_memory ? _mm256_set1_epi32(p[i]) : x;
			a[i] = _mm256_add_epi32(
			        a[i], _mm256_madd_epi16(_mm256_maddubs_epi16(w, xi), one));
		}
		__asm__ volatile("" : "+v"(w), "+r"(p));
	}
	double t = now_s() - t0;
	for (int i = 1; i < 16; i++) a[0] = _mm256_add_epi32(a[0], a[i]);
	sink += _mm256_extract_epi32(a[0], 0);
	return (double)REPS * 16 * 32 * 2 / t / 1e9;
}

int main(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
		printf("avx512-vnni  vpdpbusd zmm: %6.0f GOP/s, operand broadcast from memory "
		       "%6.0f\n",
		       vnni_zmm(false), vnni_zmm(true));
	if (__builtin_cpu_supports("avx2"))
		printf("avx2         vpmaddubsw+vpmaddwd ymm: %6.0f GOP/s, broadcast from memory "
		       "%6.0f\n",
		       avx2_ymm(false), avx2_ymm(true));
	return sink == 42; /* keeps the sums alive */
}
