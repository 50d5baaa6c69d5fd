/*
 * bench_cuda.c - the GPU figures of the CUDA issue that `infill bench` does
 * not print: decode at batch 1 and 3 (candidates), prefill of 512 tokens, and
 * an inline completion while typing (prefix cache warm: a few new prompt
 * tokens, then 16 tokens x 3 candidates), each next to its physical bound.
 *
 *   bench_cuda --model M.gguf [--peak-gbs 4800] [--peak-tflops 989] [--label L]
 *
 * Prints one line per figure:
 *   FIGURE <label> <figure>: <value> ms | bound <b> ms | <pct>% of bound [| aim ...]
 * The bounds: decode reads every weight but the embedding table once per step
 * (model_info.decode_read_bytes / peak bandwidth); prefill does 2 flops per
 * weight per token at the peak tensor-core rate. Not a test: never run by
 * `meson test`; tests/gpu/run.sh runs it on a GPU machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infer.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

static void fill_ids(int32_t *ids, int n, int nv)
{
	uint64_t x = 12345;
	ids[0] = 32013 < nv ? 32013 : 0;
	for (int i = 1; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		ids[i] = (int32_t)((x >> 33) % (uint64_t)(nv > 32000 ? 32000 : nv));
	}
}

/* One forward of n entries on the given sequences at their current ends; argmax of every row. */
static int step(struct model *m, struct kv_seq **seqs, const int32_t *tok, int n, int32_t *argmax,
                struct infill_error *err)
{
	int32_t pos[64], rows[64];
	for (int i = 0; i < n; i++) {
		pos[i] = kv_seq_len(seqs[i]);
		rows[i] = i;
	}
	struct model_batch b = { .n_tokens = n,
		                 .tokens = tok,
		                 .pos = pos,
		                 .seqs = seqs,
		                 .n_out = n,
		                 .out_rows = rows,
		                 .argmax = argmax };
	return model_forward(m, &b, err);
}

static void line(const char *label, const char *fig, double ms, double bound_ms, const char *aim)
{
	printf("FIGURE %s %s: %.3f ms | bound %.3f ms | %.0f%% of bound%s%s\n", label, fig, ms,
	       bound_ms, bound_ms > 0 ? 100.0 * bound_ms / ms : 0.0, aim ? " | aim " : "",
	       aim ? aim : "");
}

int main(int argc, char **argv)
{
	const char *path = NULL, *label = "model";
	double peak_gbs = 4800, peak_tflops = 989;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--model") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--label") && i + 1 < argc)
			label = argv[++i];
		else if (!strcmp(argv[i], "--peak-gbs") && i + 1 < argc)
			peak_gbs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--peak-tflops") && i + 1 < argc)
			peak_tflops = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_cuda --model M.gguf [--label L] [--peak-gbs "
			                "4800] [--peak-tflops 989]\n");
			return 2;
		}
	}
	if (!path) {
		fprintf(stderr, "bench_cuda: --model is required\n");
		return 2;
	}
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.backend = INFER_BACKEND_CUDA;
	mp.kv_bytes = (size_t)2 << 30;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) {
		fprintf(stderr, "bench_cuda: %s\n", err.message);
		return 1;
	}
	const struct model_info *mi = model_info(m);
	const int nv = mi->n_vocab;
	printf("bench_cuda: %s on %s\n", path, mi->backend_name);
	const double E = mi->n_embd, qd = (double)mi->n_head * mi->head_dim,
	             kvd = (double)mi->n_head_kv * mi->head_dim;
	const double params =
	        mi->n_layer * (2 * E * qd + 2 * E * kvd + 3 * E * mi->n_ff) + (double)nv * E;
	const double decode_bound = (double)mi->decode_read_bytes / (peak_gbs * 1e9) * 1e3;
	const double prefill_bound = 2 * params * 512 / (peak_tflops * 1e12) * 1e3;

	enum { P = 512, NDEC = 64, CTX = 1024, REPS = 21 };
	int32_t *ids = malloc(sizeof(int32_t) * CTX);
	float *logits = malloc(sizeof(float) * (size_t)nv);
	double t[REPS];
	int rc = ids && logits ? 0 : -ENOMEM;
	if (rc) goto out;
	fill_ids(ids, CTX, nv);

	/* Prefill 512: median of 5 after a warm-up. */
	for (int r = 0; !rc && r < 6; r++) {
		struct kv_seq *s = kv_seq_new(model_kv_pool(m));
		double t0 = now_ms();
		rc = model_eval(m, s, ids, P, logits, &err);
		if (r > 0) t[r - 1] = now_ms() - t0;
		kv_seq_free(s);
	}
	if (rc) goto out;
	line(label, "prefill_512", pct(t, 5, 0.5), prefill_bound, "< 5 ms (1.3B)");

	/* Decode at batch 1 and 3 after a 512-token prompt. */
	double dec[2] = { 0, 0 };
	for (int nb = 1, k = 0; nb <= 3 && !rc; nb += 2, k++) {
		struct kv_seq *s[3];
		s[0] = kv_seq_new(model_kv_pool(m));
		rc = model_eval(m, s[0], ids, P, NULL, &err);
		for (int i = 1; i < nb; i++) s[i] = kv_seq_fork(s[0]);
		int32_t tok[3] = { 100, 200, 300 }, am[3];
		for (int w = 0; !rc && w < 3; w++) /* graph capture happens here */
			rc = step(m, s, tok, nb, am, &err);
		double t0 = now_ms();
		for (int i = 0; !rc && i < NDEC; i++) {
			rc = step(m, s, tok, nb, am, &err);
			memcpy(tok, am, sizeof(int32_t) * nb);
		}
		dec[k] = (now_ms() - t0) / NDEC;
		for (int i = 0; i < nb; i++) kv_seq_free(s[i]);
	}
	if (rc) goto out;
	line(label, "decode_b1_per_token", dec[0], decode_bound, ">= 70% of bound");
	char aim[64];
	snprintf(aim, sizeof aim, "< 1.3x batch 1 (is %.2fx)", dec[1] / dec[0]);
	line(label, "decode_b3_per_step", dec[1], decode_bound, aim);

	/* Inline completion while typing: a 1024-token prompt is cached; each
	 * request adds 4 typed tokens, forks 3 candidates, decodes 16 steps. */
	struct kv_seq *base = kv_seq_new(model_kv_pool(m));
	rc = model_eval(m, base, ids, CTX - 64, NULL, &err);
	for (int r = 0; !rc && r < REPS; r++) {
		double t0 = now_ms();
		struct kv_seq *s[3] = { kv_seq_fork(base), NULL, NULL };
		int32_t am[3], tok[3];
		rc = model_eval(m, s[0], ids + CTX - 64 + (r % 8) * 4, 4, logits, &err);
		s[1] = kv_seq_fork(s[0]);
		s[2] = kv_seq_fork(s[0]);
		for (int k = 0; k < 3; k++) tok[k] = (int32_t)((r * 31 + k * 7 + 5) % 32000);
		for (int i = 0; !rc && i < 16; i++) {
			rc = step(m, s, tok, 3, am, &err);
			memcpy(tok, am, sizeof tok);
		}
		t[r] = now_ms() - t0;
		for (int k = 0; k < 3; k++) kv_seq_free(s[k]);
	}
	kv_seq_free(base);
	if (rc) goto out;
	/* Bound: 4 prompt tokens + 16 steps, each at least one read of the weights. */
	line(label, "completion_16x3_p50", pct(t, REPS, 0.5), 17 * decode_bound,
	     "< 15 ms p50 (1.3B)");
out:
	if (rc) fprintf(stderr, "bench_cuda: %s\n", err.message);
	free(ids);
	free(logits);
	model_free(m);
	return rc ? 1 : 0;
}
