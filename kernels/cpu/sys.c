/*
 * sys.c - facts about the machine the CPU backend needs: physical cores
 * (the default thread count) and a read-bandwidth measurement, the bound
 * that decode speed is judged against.
 */
#include "cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"

/* Counts distinct (physical id, core id) pairs in /proc/cpuinfo; falls back to online CPUs. */
int backend_cpu_physical_cores(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	int n = 0;
	if (f) {
		char line[256];
		long phys = 0, pairs[1024][2];
		while (fgets(line, sizeof line, f)) {
			long v;
			if (sscanf(line, "physical id : %ld", &v) == 1) {
				phys = v;
			} else if (sscanf(line, "core id : %ld", &v) == 1) {
				bool seen = false;
				for (int i = 0; i < n; i++)
					if (pairs[i][0] == phys && pairs[i][1] == v) seen = true;
				if (!seen && n < 1024) {
					pairs[n][0] = phys;
					pairs[n][1] = v;
					n++;
				}
			}
		}
		fclose(f);
	}
	if (n < 1) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (int)c : 1;
	}
	return n;
}

struct bw_task {
	const uint64_t *buf;
	size_t words;
	uint64_t sink[64][8];
};

static void bw_run(void *arg, int ith, int nth)
{
	struct bw_task *t = arg;
	int64_t lo, hi;
	cpu_split((int64_t)t->words, 64, ith, nth, &lo, &hi);
	uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
	for (int64_t i = lo; i + 8 <= hi; i += 8) {
		const uint64_t *p = t->buf + i;
		a0 ^= p[0], a1 ^= p[1], a2 ^= p[2], a3 ^= p[3];
		a4 ^= p[4], a5 ^= p[5], a6 ^= p[6], a7 ^= p[7];
	}
	t->sink[ith % 64][0] = a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double backend_cpu_read_gbs(int n_threads, size_t bytes, double *cpu_gbs)
{
	if (n_threads < 1) n_threads = backend_cpu_physical_cores();
	size_t words = bytes / 8;
	uint64_t *buf = malloc(words * 8);
	struct cpu_pool *pool = cpu_pool_create(n_threads);
	if (!buf || !pool) {
		free(buf);
		cpu_pool_destroy(pool);
		return -1;
	}
	for (size_t i = 0; i < words; i++) /* touch every page with non-zero data */
		buf[i] = i * 0x9E3779B97F4A7C15ull;
	struct bw_task t = { .buf = buf, .words = words };
	double best = 0, best_cpu = 0;
	for (int rep = 0; rep < 4; rep++) {
		double t0 = now_s(), c0 = cpu_s();
		cpu_pool_run(pool, bw_run, &t);
		double dt = now_s() - t0, dc = (cpu_s() - c0) / n_threads;
		double gbs = (double)words * 8 / dt / 1e9;
		if (gbs > best) best = gbs;
		if (dc > 0 && (double)words * 8 / dc / 1e9 > best_cpu)
			best_cpu = (double)words * 8 / dc / 1e9;
	}
	if (cpu_gbs) *cpu_gbs = best_cpu;
	cpu_pool_destroy(pool);
	free(buf);
	return best;
}
