/*
 * bench_kernels.c - speed of one CPU matrix kernel on one thread, in GB/s
 * of weights read: the figure decode is judged by. Not a test (no timing
 * assertions); `meson test` does not run it.
 *
 *   bench-kernels [TYPE] [NT] [MB] [N]
 *
 * TYPE q4_0|q8_0|f16|bf16|q4_k|q6_k|q5_0|q5_1|f32|q5_k|q3_k|q2_k|q4_1|iq4_nl|iq4_xs
 * (default: all), NT tokens (default
 * 1: decode), MB the weight matrix size (default: 2 MB, which stays in L2 and
 * so measures the kernel's compute ceiling; 1000 MB measures DRAM streaming).
 * Rows are N wide (default 2048, the 1.3B model's; its FFN's down rows are
 * 5504: a panel's size decides where prefetches land). Prints, per kernel set, GB/s and
 * GFLOP/s-equivalent (2 * rows * n * nt / s); for Q4_0 / Q8_0 from 8 tokens
 * on, also the interleaved prompt path (`-il`, cpu.h's cpu_il_pack).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu.h"
#include "quant.h"

/* The thread's own CPU time: on a shared machine another process's turn on
 * this core is not counted against the kernel (one thread, no waits: on an
 * idle machine it equals the wall time). */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(uint32_t type, int64_t nt, double mb, int64_t n)
{
	size_t ws = tensor_type_row_size(type, n);
	int64_t nr = (int64_t)(mb * 1e6 / ws);
	nr = nr < 16 ? 16 : nr / 16 * 16;
	unsigned char *w = malloc(ws * nr);
	float *row = malloc(n * sizeof(float));
	uint64_t s = 1;
	for (int64_t r = 0; r < nr; r++) {
		for (int64_t i = 0; i < n; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			row[i] = (float)((s >> 40) / 16777216.0 - 0.5) * 0.1f;
		}
		if (r < 64)
			tensor_row_quantize(type, row, w + r * ws, n);
		else /* quantizing is slow: repeat the first 64 rows */
			memcpy(w + r * ws, w + (r % 64) * ws, ws);
	}
	enum cpu_act a = cpu_act_for(type);
	size_t xs = cpu_act_row_bytes(a, n);
	unsigned char *x = malloc(xs * nt);
	for (int64_t t = 0; t < nt; t++) {
		for (int64_t i = 0; i < n; i++) row[i] = (float)((t * 7 + i) % 13) - 6.0f;
		cpu_kernels_act(&cpu_kernels_ref, a)(row, x + t * xs, n);
	}
	float *y = malloc(sizeof(float) * nr * nt);
	/* The same bytes read by a plain loop (what backend_cpu_read_gbs does):
	 * the kernel's GB/s over this tells how close it streams to the bound. */
	double read_best = 1e9;
	for (int rep = 0; rep < 3; rep++) {
		const uint64_t *p = (const uint64_t *)w;
		uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
		double t0 = now_s();
		for (size_t i = 0; i + 4 <= ws * nr / 8; i += 4)
			a0 ^= p[i], a1 ^= p[i + 1], a2 ^= p[i + 2], a3 ^= p[i + 3];
		double dt = now_s() - t0;
		if (dt < read_best) read_best = dt;
		if ((a0 ^ a1 ^ a2 ^ a3) == 42) printf(" ");
	}
	printf("%-5s plain read of the same %.1f MB: %.2f GB/s\n", tensor_type_name(type),
	       ws * nr / 1e6, ws * nr / read_best / 1e9);
	/* each set where this build compiled it and the CPU runs it */
	const struct cpu_kernels *sets[] = { &cpu_kernels_ref, cpu_kernels_named("avx2"),
		                             cpu_kernels_named("avx2-vnni"),
		                             cpu_kernels_named("avx512-vnni") };
	for (int k = 0; k < 4; k++) {
		if (!sets[k]) continue;
		cpu_gemm_fn f = cpu_kernels_gemm(sets[k], type);
		f(n, w, ws, nr, x, xs, nt, y, nr); /* warm */
		double best = 1e9, total = 0;
		int reps = 0;
		while (total < 0.5 || reps < 3) {
			double t0 = now_s();
			f(n, w, ws, nr, x, xs, nt, y, nr);
			double dt = now_s() - t0;
			total += dt;
			reps++;
			if (dt > 0 && dt < best) best = dt; /* 0: a clock glitch seen here */
			if (k == 0 && total > 0.2) break;   /* the reference is slow */
		}
		printf("%-5s nt=%-3lld %7.1f MB  %-12s %7.2f GB/s  %8.1f GFLOP/s\n",
		       tensor_type_name(type), (long long)nt, ws * nr / 1e6, sets[k]->name,
		       ws * nr / best / 1e9, 2.0 * nr * n * nt / best / 1e9);
	}
	/* The types the backend packs at load when a set has the panel kernel
	 * (packings.c's table), as it runs them. */
	static const struct {
		uint32_t type;
		size_t (*bytes)(int64_t nr, int64_t n);
		void (*pack)(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0,
		             int64_t p1, void *dst);
		size_t kernel; /* offset of the set's cpu_gemm_fn */
	} packed[] = {
		{ TENSOR_TYPE_Q4_0, cpu_q4_0_p8_bytes, cpu_q4_0_p8_pack,
		  offsetof(struct cpu_kernels, gemm_q4_0_p8) },
		{ TENSOR_TYPE_Q8_0, cpu_q8_0_p8_bytes, cpu_q8_0_p8_pack,
		  offsetof(struct cpu_kernels, gemm_q8_0_p8) },
		{ TENSOR_TYPE_Q4_K, cpu_q4_k_p8_bytes, cpu_q4_k_p8_pack,
		  offsetof(struct cpu_kernels, gemm_q4_k_p8) },
		{ TENSOR_TYPE_Q5_K, cpu_q5_k_p8_bytes, cpu_q5_k_p8_pack,
		  offsetof(struct cpu_kernels, gemm_q5_k_p8) },
		{ TENSOR_TYPE_Q6_K, cpu_q6_k_p8_bytes, cpu_q6_k_p8_pack,
		  offsetof(struct cpu_kernels, gemm_q6_k_p8) },
		{ TENSOR_TYPE_IQ4_XS, cpu_iq4_xs_p8_bytes, cpu_iq4_xs_p8_pack,
		  offsetof(struct cpu_kernels, gemm_iq4_xs_p8) },
		{ TENSOR_TYPE_Q5_0, cpu_q5_0_p8_bytes, cpu_q5_0_p8_pack,
		  offsetof(struct cpu_kernels, gemm_q5_0_p8) },
		{ TENSOR_TYPE_Q5_1, cpu_q5_1_p8_bytes, cpu_q5_1_p8_pack,
		  offsetof(struct cpu_kernels, gemm_q5_1_p8) },
	};
	int pi = -1;
	for (int i = 0; i < (int)(sizeof packed / sizeof packed[0]); i++)
		if (packed[i].type == type) pi = i;
	for (int k = 1; pi >= 0 && k < 4; k++) {
		if (!sets[k]) continue;
		cpu_gemm_fn pf = *(const cpu_gemm_fn *)((const char *)sets[k] + packed[pi].kernel);
		if (!pf) continue;
		size_t pb = packed[pi].bytes(nr, n);
		void *pw = aligned_alloc(64, (pb + 63) / 64 * 64);
		packed[pi].pack(w, ws, nr, n, 0, (nr + 7) / 8, pw);
		double best = 1e9, total = 0;
		int reps = 0;
		while (total < 0.5 || reps < 3) {
			double t0 = now_s();
			pf(n, pw, ws, nr, x, xs, nt, y, nr);
			double dt = now_s() - t0;
			total += dt;
			reps++;
			if (dt > 0 && dt < best) best = dt; /* 0: a clock glitch seen here */
		}
		char name[32];
		snprintf(name, sizeof name, "%s-packed", sets[k]->name);
		printf("%-5s nt=%-3lld %7.1f MB  %-12s %7.2f GB/s  %8.1f GFLOP/s\n",
		       tensor_type_name(type), (long long)nt, ws * nr / 1e6, name,
		       ws * nr / best / 1e9, 2.0 * nr * n * nt / best / 1e9);
		/* Prompts as the backend runs them: the activations interleaved
		 * (counted here, once a matmul there), then the full tiles. */
		cpu_gemm_il_fn fi =
		        cpu_kernels_gemm_il(sets[k], type == TENSOR_TYPE_Q4_0   ? CPU_TYPE_Q4_0_P8
		                                     : type == TENSOR_TYPE_Q8_0 ? CPU_TYPE_Q8_0_P8
		                                                                : 0);
		int64_t ntl = nt / 8, nr16 = nr / 16 * 16;
		char *il = fi && ntl && nr16 ? malloc(ntl * cpu_il_tile_bytes(n)) : NULL;
		if (il) {
			best = 1e9, total = 0, reps = 0;
			while (total < 0.5 || reps < 3) {
				double t0 = now_s();
				for (int64_t t = 0; t < ntl; t++)
					cpu_il_pack((const char *)x + 8 * t * xs, xs, n,
					            il + t * cpu_il_tile_bytes(n));
				fi(n, pw, ws, nr16, il, ntl, y, nr);
				double dt = now_s() - t0;
				total += dt;
				reps++;
				if (dt > 0 && dt < best) best = dt;
			}
			snprintf(name, sizeof name, "%s-il", sets[k]->name);
			printf("%-5s nt=%-3lld %7.1f MB  %-12s %7.2f GB/s  %8.1f GFLOP/s  "
			       "(%lld of %lld tokens, %lld of %lld rows)\n",
			       tensor_type_name(type), (long long)nt, ws * nr16 / 1e6, name,
			       ws * nr16 / best / 1e9, 2.0 * nr16 * n * ntl * 8 / best / 1e9,
			       (long long)(ntl * 8), (long long)nt, (long long)nr16, (long long)nr);
			free(il);
		}
		free(pw);
	}
	free(w), free(row), free(x), free(y);
}

int main(int argc, char **argv)
{
	const char *names[] = { "q4_0", "q8_0", "f16",  "bf16", "q4_k", "q6_k",   "q5_0",  "q5_1",
		                "f32",  "q5_k", "q3_k", "q2_k", "q4_1", "iq4_nl", "iq4_xs" };
	uint32_t types[] = { TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q8_0,   TENSOR_TYPE_F16,
		             TENSOR_TYPE_BF16, TENSOR_TYPE_Q4_K,   TENSOR_TYPE_Q6_K,
		             TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_1,   TENSOR_TYPE_F32,
		             TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q3_K,   TENSOR_TYPE_Q2_K,
		             TENSOR_TYPE_Q4_1, TENSOR_TYPE_IQ4_NL, TENSOR_TYPE_IQ4_XS };
	const char *want = argc > 1 ? argv[1] : "all";
	int64_t nt = argc > 2 ? atoll(argv[2]) : 1;
	double mb = argc > 3 ? atof(argv[3]) : 2.0;
	int64_t n = argc > 4 ? atoll(argv[4]) : 2048;
	if (nt < 1) nt = 1;
	for (int i = 0; i < (int)(sizeof types / sizeof types[0]); i++)
		if (!strcmp(want, "all") || !strcmp(want, names[i])) bench(types[i], nt, mb, n);
	return 0;
}
