/*
 * bench_attn.c - one thread's decode attention over a long KV cache, per
 * kernel set and cache type: what cache.kvType q8_0 is for. Not a test (no
 * timing assertions); `meson test` does not run it.
 *
 *   bench-attn [POSITIONS] [LAYERS]
 *
 * The cache is laid out as the CPU backend's pool lays it out for the 1.3B
 * shape (16 KV heads of 128 values a slot, all of a slot's heads in one
 * row), LAYERS layers of POSITIONS slots each (default 2048 x 8: 72 MB of
 * F16, more than any cache), and one query attends to every slot of each
 * layer in turn as attn.c's decode does: per chunk of 64 positions the
 * scores of every head (score_f16 / score_q8 with g = 1), the softmax per
 * head, then the weighted sums of V per chunk. Prints per set and type the
 * time a layer, the K/V bytes read a second, and q8_0's time over F16's.
 * Then a prompt's attention (prompt_heads) where a set has the
 * queries-in-lanes kernels: F16 lanes, q8_0 lanes and q8_0 rows side by
 * side. The thread's CPU time is what is measured (a shared machine's
 * other processes are not counted against it); best of 5.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu.h"
#include "quant.h"

enum { HEADS = 16, HD = 128, CHUNK = 64 };

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One layer: K rows at k, V rows at v, row i of head h at + i * row + h *
 * head (bytes). q: the query as floats (F16) or q8_0 blocks. */
static void layer(const struct cpu_kernels *ks, bool q8, const void *q, const char *k,
                  const char *v, int64_t row, int64_t head, int64_t n, float *s, float *o)
{
	float scale = 0.0883883f;
	for (int64_t c = 0; c < n; c += CHUNK) {
		int64_t m = n - c < CHUNK ? n - c : CHUNK;
		for (int h = 0; h < HEADS; h++) {
			const char *r = k + c * row + h * head;
			if (q8)
				ks->score_q8(HD, 1, (const char *)q + h * (HD / 32 * 34), 0, r, row,
				             m, scale, s + h * n + c, n);
			else
				ks->score_f16(HD, 1, (const float *)q + h * HD, 0,
				              (const uint16_t *)r, row / 2, m, scale, s + h * n + c,
				              n);
		}
	}
	for (int h = 0; h < HEADS; h++) ks->softmax(s + h * n, n, !q8);
	memset(o, 0, HEADS * HD * sizeof(float));
	for (int64_t c = 0; c < n; c += CHUNK) {
		int64_t m = n - c < CHUNK ? n - c : CHUNK;
		for (int h = 0; h < HEADS; h++) {
			const char *r = v + c * row + h * head;
			if (q8)
				ks->mix_q8(HD, 1, s + h * n + c, n, r, row, m, o + h * HD, HD);
			else
				ks->mix_f16(HD, 1, s + h * n + c, n, (const uint16_t *)r, row / 2,
				            m, o + h * HD, HD);
		}
	}
}

/*
 * A prompt's attention: per head, one block of 32 queries (the last 32 of
 * n positions, causal) over the n slots in runs of PAGE rows, as attn.c's
 * attn_block_lanes (F16: score_t_f16 ...; q8_0: score_t_q8 ...) or
 * attn_block_rows (q8_0: score_q8 / mix_q8, attn_qb queries a call) runs
 * it. Returns the thread's CPU time for the 16 heads.
 */
enum { PAGE = 16, QT = CPU_ATTN_QT };

static double prompt_heads(const struct cpu_kernels *ks, int path, const char *k, const char *v,
                           int64_t row, int64_t head, int64_t n, const float *qt16,
                           const struct cpu_q8_lanes *qt8, const struct block_q8_0 *q8, float *st,
                           float *ot)
{
	float scale = 0.0883883f;
	int32_t last[QT];
	for (int j = 0; j < QT; j++) last[j] = (int32_t)(n - QT + j);
	double t0 = now_s();
	for (int h = 0; h < HEADS; h++) {
		const char *kh = k + h * head, *vh = v + h * head;
		if (path == 2) { /* q8_0 rows: st as [QT][n] */
			int qb = ks->attn_qb;
			for (int j0 = 0; j0 < QT; j0 += qb) {
				int g = QT - j0 < qb ? QT - j0 : qb;
				for (int64_t p = 0; p < n; p += PAGE)
					ks->score_q8(HD, g, q8 + j0 * (HD / 32), HD / 32 * 34,
					             kh + p * row, row, n - p < PAGE ? n - p : PAGE,
					             scale, st + j0 * n + p, n);
				for (int j = 0; j < g; j++)
					ks->softmax(st + (j0 + j) * n, last[j0 + j] + 1, false);
				memset(ot + j0 * HD, 0, (size_t)g * HD * sizeof(float));
				for (int64_t p = 0; p < n; p += PAGE)
					ks->mix_q8(HD, g, st + j0 * n + p, n, vh + p * row, row,
					           n - p < PAGE ? n - p : PAGE, ot + j0 * HD, HD);
			}
			continue;
		}
		for (int64_t p = 0; p < n; p += PAGE) {
			int64_t m = n - p < PAGE ? n - p : PAGE;
			if (path == 1)
				ks->score_t_q8(HD, qt8, kh + p * row, row, m, scale, st + p * QT);
			else
				ks->score_t_f16(HD, qt16, (const uint16_t *)(kh + p * row), row / 2,
				                m, scale, st + p * QT);
		}
		ks->softmax_t(st, n, last, path == 0);
		memset(ot, 0, (size_t)QT * HD * sizeof(float));
		for (int64_t p = 0; p < n; p += PAGE) {
			int64_t m = n - p < PAGE ? n - p : PAGE;
			if (path == 1)
				ks->mix_t_q8(HD, st + p * QT, vh + p * row, row, m, ot);
			else
				ks->mix_t_f16(HD, st + p * QT, (const uint16_t *)(vh + p * row),
				              row / 2, m, ot);
		}
	}
	return now_s() - t0;
}

int main(int argc, char **argv)
{
	int64_t n = argc > 1 ? atoll(argv[1]) : 2048;
	int layers = argc > 2 ? atoi(argv[2]) : 8;
	if (n < 1 || layers < 1) {
		fprintf(stderr, "usage: bench-attn [POSITIONS] [LAYERS]\n");
		return 2;
	}
	/* every set this build compiled that the CPU runs, by name: a
	 * -Dcpu_kernels=host build has no table for the others (the AVX2 sets'
	 * rows on an AVX-512 host need -Dcpu_kernels=all) */
	const struct cpu_kernels *sets[4];
	int n_sets = 0;
	sets[n_sets++] = &cpu_kernels_ref;
	const char *names[] = { "avx2", "avx2-vnni", "avx512-vnni" };
	for (int i = 0; i < 3; i++)
		if (cpu_kernels_named(names[i])) sets[n_sets++] = cpu_kernels_named(names[i]);
	int64_t head16 = HD * 2, head8 = HD / 32 * 34;
	int64_t row16 = HEADS * head16, row8 = HEADS * head8;
	/* owned here: the two caches (K then V per layer), scores, outputs */
	char *c16 = malloc((size_t)(2 * layers * n * row16));
	char *c8 = malloc((size_t)(2 * layers * n * row8));
	float *s = malloc((size_t)(HEADS * n) * sizeof(float));
	float o[HEADS * HD], qf[HEADS * HD], x[HD];
	struct block_q8_0 q8[HEADS * HD / 32];
	if (!c16 || !c8 || !s) {
		fprintf(stderr, "bench-attn: out of memory\n");
		return 1;
	}
	uint64_t st = 1;
	for (int64_t r = 0; r < 2 * layers * n * HEADS; r++) {
		for (int e = 0; e < HD; e++) {
			st = st * 6364136223846793005ull + 1442695040888963407ull;
			x[e] = (float)((st >> 40) / 16777216.0 - 0.5);
		}
		uint16_t *h16 = (uint16_t *)(c16 + r * head16);
		for (int e = 0; e < HD; e++) h16[e] = tensor_f32_to_f16(x[e]);
		cpu_q8_0_quantize(x, c8 + r * head8, HD);
	}
	for (int e = 0; e < HEADS * HD; e++) qf[e] = (float)((e * 7) % 13 - 6) * 0.1f;
	cpu_q8_0_quantize(qf, q8, HEADS * HD);
	printf("decode attention, one thread, %lld positions x %d layers, %d heads of %d\n",
	       (long long)n, layers, HEADS, HD);
	for (int k = 0; k < n_sets; k++) {
		double best[2] = { 1e9, 1e9 };
		for (int rep = 0; rep < 5; rep++)
			for (int t = 0; t < 2; t++) { /* F16 and q8_0 interleaved */
				int64_t row = t ? row8 : row16, head = t ? head8 : head16;
				const char *c = t ? c8 : c16;
				double t0 = now_s();
				for (int l = 0; l < layers; l++)
					layer(sets[k], t, t ? (const void *)q8 : (const void *)qf,
					      c + 2 * l * n * row, c + (2 * l + 1) * n * row, row,
					      head, n, s, o);
				double dt = (now_s() - t0) / layers;
				if (dt < best[t]) best[t] = dt;
				if (sets[k] == &cpu_kernels_ref) rep = 5; /* slow: once */
			}
		for (int t = 0; t < 2; t++)
			printf("%-12s %-5s %8.3f ms a layer  %6.2f GB/s of K/V\n", sets[k]->name,
			       t ? "q8_0" : "f16", best[t] * 1e3,
			       2.0 * n * (t ? row8 : row16) / best[t] / 1e9);
		printf("%-12s q8_0 / f16 time: %.2f\n", sets[k]->name, best[1] / best[0]);
	}
	/* a prompt's block of 32 queries a head (n >= 32), where a set has
	 * the queries-in-lanes kernels for both types */
	float *pst = malloc((size_t)(QT * n) * sizeof(float)), ot[QT * HD];
	float qt16[HD * QT];
	struct block_q8_0 qb8[QT * HD / 32];
	struct cpu_q8_lanes qt8[HD / 32];
	for (int e = 0; e < QT * HD; e++) qt16[e] = (float)((e * 5) % 11 - 5) * 0.1f;
	cpu_q8_0_quantize(qt16, qb8, QT * HD);
	cpu_q8_lanes_pack(qb8, HD / 32 * 34, QT, HD, qt8);
	if (pst && n >= QT) {
		printf("prompt attention, one thread, a block of %d queries x %d heads over %lld "
		       "positions\n",
		       QT, HEADS, (long long)n);
		for (int k = 0; k < n_sets; k++) {
			if (!sets[k]->score_t_f16 || !sets[k]->score_t_q8) continue;
			const char *what[3] = { "f16 lanes", "q8_0 lanes", "q8_0 rows" };
			double best[3] = { 1e9, 1e9, 1e9 };
			for (int rep = 0; rep < 5; rep++)
				for (int t = 0; t < 3; t++) { /* interleaved */
					int64_t row = t ? row8 : row16, head = t ? head8 : head16;
					const char *c = t ? c8 : c16;
					double dt = prompt_heads(sets[k], t, c, c + n * row, row,
					                         head, n, qt16, qt8, qb8, pst, ot);
					if (dt < best[t]) best[t] = dt;
				}
			for (int t = 0; t < 3; t++)
				printf("%-12s %-10s %8.3f ms a layer\n", sets[k]->name, what[t],
				       best[t] * 1e3);
			printf("%-12s q8_0 lanes / f16 lanes time: %.2f, q8_0 lanes / q8_0 rows: "
			       "%.2f\n",
			       sets[k]->name, best[1] / best[0], best[1] / best[2]);
		}
	}
	free(pst);
	free(c16), free(c8), free(s);
	return 0;
}
