/*
 * test_reference.c - the forward pass against llama.cpp's numbers for the
 * tiny models of every family (testdata/models/README.md; the gemma one is
 * this repository's, tests/infer/model_data/README.md).
 *
 * For each (model file, K/V type) run of a reference JSON (the table
 * `runs` below) and each of its prompts, the prompt's token ids (taken from the JSON, so this test
 * does not depend on the tokenizer) are evaluated in one batch and the last
 * position's logits compared:
 *
 *   - F32 file: every logit within 1e-4 of llama.cpp's (the README shows
 *     wrong RoPE variants move them by >= 1.6e-3, so 1e-4 tells them apart),
 *     and the same 16 greedy tokens.
 *   - F16 file: weights widened to float, float activations. (Rounding the
 *     activations to fp16, as the README says llama.cpp does, puts us 1.8e-4
 *     away from its F16 logits; not rounding them matches to 3e-7, so its
 *     run did not.) Tolerance 1e-4 as for F32.
 *   - F32 file with an F16 KV cache (the 4th run): K/V rounded to fp16 and,
 *     as llama.cpp does with such a cache, q and the softmax probabilities
 *     rounded to fp16 before their products (measured: 4.4e-6; without
 *     those roundings 7e-5, the size of the F32-vs-F16-cache difference):
 *     tolerance 1e-4 like F32.
 *   - Q8_0 file: activations quantized to Q8_0 blocks as ggml does, integer
 *     block sums (measured: 6e-8 from llama.cpp). A rounding tie resolved
 *     the other way in the activation quantizer (ggml's reference rounds
 *     half away from zero, its AVX2 path half to even) moves one int8 step,
 *     about d_x * w ~ 1e-4 on one product: tolerance 5e-4, still 10x
 *     tighter than the F32-vs-Q8_0 difference (5.9e-3 and up), so an
 *     engine that did not quantize activations like ggml would fail.
 *
 * Greedy continuations: where our choice differs from llama.cpp's at a step
 * whose reference top-2 margin is below the tolerance, the swap is tolerated
 * (printed) and the rest of that continuation is not compared, since it
 * follows a different token.
 */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>

#include "harness.h"
#include "infer.h"
#include "json_mini.h"

/* This repository's own reference data (tests/infer/model_data): the tiny
 * gemma model made with tools/refgen-gemma. */
static const char *modeldata(void)
{
	const char *t = getenv("INFILL_MODELDATA");
	return t ? t : "tests/infer/model_data";
}

/* One (model file, KV type) run of a reference JSON and how close we must be. */
struct ref_run {
	const char *json;  /* file name under models/ */
	bool ours;         /* under modeldata() instead of testdata()/models */
	int run;           /* index in runs[] */
	const char *model; /* its model_file, checked */
	bool kv_f16;
	double tol; /* last-position logits (full row or top-50), logsumexp, greedy margins */
	/* Q8_0 runs: at least min_tight prompts within 1e-5 (an engine that
	 * quantizes activations as ggml does matches the prompts no rounding
	 * tie touched to ~1e-7; one that does not is off by ~5e-3 on all) */
	int min_tight;
};

/*
 * Tolerances (testdata/models/README.md and the comment at the top):
 * F32 weights 1e-4 (wrong RoPE pairs, scaling or bases move logits by
 * >= 1.2e-3; StarCoder2's GELU table alone by 1e-4, so 5e-5 there, as its
 * README asks); Q8_0 weights: activations quantized as ggml does, but
 * rounding ties upstream move single values: 5e-4 for tiny-dsc, 1e-2 where
 * the README measured flips of up to 5e-3 (Qwen2, StarCoder2). F16 K/V:
 * 1e-4.
 */
static const struct ref_run runs[] = {
	{ "tiny-dsc-reference.json", false, 0, "tiny-dsc-f32.gguf", false, 1e-4, 0 },
	{ "tiny-dsc-reference.json", false, 1, "tiny-dsc-f16.gguf", false, 1e-4, 0 },
	{ "tiny-dsc-reference.json", false, 2, "tiny-dsc-q8_0.gguf", false, 5e-4, 0 },
	{ "tiny-dsc-reference.json", false, 3, "tiny-dsc-f32.gguf", true, 1e-4, 0 },
	{ "tiny-qwen2-reference.json", false, 0, "tiny-qwen2-f32.gguf", false, 1e-5, 0 },
	{ "tiny-qwen2-reference.json", false, 1, "tiny-qwen2-q8_0.gguf", false, 1e-2, 6 },
	{ "tiny-qwen2-reference.json", false, 2, "tiny-qwen2-f32.gguf", true, 1e-4, 0 },
	{ "tiny-starcoder2-reference.json", false, 0, "tiny-starcoder2-f32.gguf", false, 5e-5, 0 },
	{ "tiny-starcoder2-reference.json", false, 1, "tiny-starcoder2-q8_0.gguf", false, 1e-2, 6 },
	{ "tiny-starcoder2-reference.json", false, 2, "tiny-starcoder2-f32.gguf", true, 1e-4, 0 },
	{ "tiny-gemma-reference.json", true, 0, "tiny-gemma-f32.gguf", false, 1e-4, 0 },
	{ "tiny-gemma-reference.json", true, 1, "tiny-gemma-q8_0.gguf", false, 1e-2, 6 },
	{ "tiny-gemma-reference.json", true, 2, "tiny-gemma-f32.gguf", true, 1e-4, 0 },
};

/* Model files of testdata/models checked elsewhere, by their own recipe:
 * the K-quant mixtures (activations on Q8_K, rounding flips; the README's
 * share-within-1e-4 and size tests) are the quantization work's. */
static const char *const elsewhere[] = { "tiny-kq-q4_k_m.gguf", "tiny-kq-q5_k_m.gguf",
	                                 "tiny-kq-q6_k.gguf" };

static void ref_path(char *out, size_t size, const struct ref_run *r, const char *file)
{
	if (r->ours)
		snprintf(out, size, "%s/%s", modeldata(), file);
	else
		snprintf(out, size, "%s/models/%s", testdata(), file);
}

/* Checks run r: each prompt's token ids (taken from the JSON, so this does
 * not depend on the tokenizer) evaluated in one batch, the last position's
 * logits against llama.cpp's, then 16 greedy steps. */
static void check_run(int *test_failed_, const struct ref_run *r)
{
	char path[1024];
	ref_path(path, sizeof path, r, r->json);
	struct jm_doc doc;
	if (jm_load(&doc, path) != 0) {
		fprintf(stderr, "cannot read %s\n", path);
		CHECK(0);
		return;
	}
	int run = jm_at(&doc, jm_get(&doc, 0, "runs"), r->run);
	REQUIRE(run >= 0);
	REQUIRE(jm_str_eq(&doc, jm_get(&doc, run, "model_file"), r->model));
	REQUIRE(jm_str_eq(&doc, jm_get(&doc, run, "kv_cache_type"), r->kv_f16 ? "f16" : "f32"));
	ref_path(path, sizeof path, r, r->model);
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.backend = INFER_BACKEND_CPU;
	mp.n_threads = 2;
	mp.kv_bytes = 8u << 20;
	mp.kv_f32 = !r->kv_f16;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) fprintf(stderr, "model_load: %s\n", err.message);
	REQUIRE(m != NULL);
	int32_t nv = model_info(m)->n_vocab;
	CHECK_INT_EQ(nv, (int64_t)jm_num(&doc, jm_get(&doc, run, "n_vocab")));
	float *logits = malloc((size_t)nv * sizeof(float));
	double *ref = malloc((size_t)nv * sizeof(double));
	int prompts = jm_get(&doc, run, "prompts");
	double worst = 0;
	int n_full = 0, n_tight = 0;
	for (int pi = 0; pi < jm_len(&doc, prompts); pi++) {
		int pr = jm_at(&doc, prompts, pi);
		static double idsd[4096];
		int n = jm_nums(&doc, jm_get(&doc, pr, "token_ids"), idsd, 4096);
		REQUIRE(n > 0 && n <= 4096);
		static int32_t ids[4096];
		for (int i = 0; i < n; i++) ids[i] = (int32_t)idsd[i];
		struct kv_seq *s = kv_seq_new(model_kv_pool(m));
		int rc = model_eval(m, s, ids, n, logits, &err);
		if (rc) fprintf(stderr, "eval: %s\n", err.message);
		REQUIRE(rc == 0);
		double maxd = 0;
		/* the full row where the run has it (the F32 runs), else the top 50 */
		int full = jm_get(&doc, pr, "last_logits");
		if (full >= 0) {
			CHECK_INT_EQ(jm_nums(&doc, full, ref, nv), nv);
			for (int i = 0; i < nv; i++) maxd = fmax(maxd, fabs(logits[i] - ref[i]));
			n_full++;
		}
		int top = jm_get(&doc, pr, "last_top50");
		CHECK(jm_len(&doc, top) == 50);
		for (int i = 0; i < jm_len(&doc, top); i++) {
			int pair = jm_at(&doc, top, i);
			int id = (int)jm_num(&doc, jm_at(&doc, pair, 0));
			REQUIRE(id >= 0 && id < nv);
			maxd = fmax(maxd, fabs(logits[id] - jm_num(&doc, jm_at(&doc, pair, 1))));
		}
		if (maxd > r->tol || getenv("INFILL_REF_VERBOSE"))
			fprintf(stderr, "  %s prompt %d: max diff %.3g\n", r->model, pi, maxd);
		CHECK(maxd <= r->tol);
		n_tight += maxd <= 1e-5;
		CHECK_NEAR(sample_logsumexp(logits, nv),
		           jm_num(&doc, jm_get(&doc, pr, "last_logsumexp")), r->tol);
		worst = fmax(worst, maxd);

		/* greedy16: a swap where llama.cpp's own top-2 margin is within
		 * the tolerance is allowed (printed), and the rest of that
		 * continuation, which follows another token, not compared */
		double g[16], margin[16];
		CHECK_INT_EQ(jm_nums(&doc, jm_get(&doc, pr, "greedy16"), g, 16), 16);
		jm_nums(&doc, jm_get(&doc, pr, "greedy16_margin"), margin, 16);
		for (int step = 0; step < 16; step++) {
			int32_t tok = sample_greedy(logits, nv);
			if (tok != (int32_t)g[step]) {
				if (margin[step] < r->tol) {
					printf("  %s step %d: %d instead of %d tolerated "
					       "(reference margin %.2g < %.2g)\n",
					       r->model, step, tok, (int)g[step], margin[step],
					       r->tol);
				} else {
					fprintf(stderr,
					        "%s prompt %d step %d: greedy %d, llama.cpp %d "
					        "(margin %.3g)\n",
					        r->model, pi, step, tok, (int)g[step],
					        margin[step]);
					CHECK(0);
				}
				break;
			}
			if (model_eval(m, s, &tok, 1, logits, &err) != 0) {
				CHECK(0);
				break;
			}
		}
		kv_seq_free(s);
	}
	CHECK(jm_len(&doc, prompts) >= 8);
	if (n_tight < r->min_tight)
		fprintf(stderr, "  %s: %d prompts within 1e-5, expected %d\n", r->model, n_tight,
		        r->min_tight);
	CHECK(n_tight >= r->min_tight);
	printf("  %s (%s K/V): max |logit - llama.cpp| over %d prompts = %.3g (%s, tolerance "
	       "%.g)\n",
	       r->model, r->kv_f16 ? "f16" : "f32", jm_len(&doc, prompts), worst,
	       n_full ? "full rows" : "top-50", r->tol);
	free(logits);
	free(ref);
	model_free(m);
	jm_free(&doc);
}

/* One case per family and weight type, named after it. */
#define RUN_CASE(name, i)                          \
	TEST(name)                                 \
	{                                          \
		check_run(test_failed_, &runs[i]); \
	}
RUN_CASE(dsc_f32, 0)
RUN_CASE(dsc_f16, 1)
RUN_CASE(dsc_q8_0, 2)
RUN_CASE(dsc_f32_f16_kv, 3)
RUN_CASE(qwen2_f32, 4)
RUN_CASE(qwen2_q8_0, 5)
RUN_CASE(qwen2_f32_f16_kv, 6)
RUN_CASE(starcoder2_f32, 7)
RUN_CASE(starcoder2_q8_0, 8)
RUN_CASE(starcoder2_f32_f16_kv, 9)
RUN_CASE(gemma_f32, 10)
RUN_CASE(gemma_q8_0, 11)
RUN_CASE(gemma_f32_f16_kv, 12)

/* Every model file in testdata/models is covered: by a run above or by the
 * K-quant work's own test. A file added there without a check fails here. */
TEST(every_model_file_checked)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/models", testdata());
	DIR *d = opendir(dir);
	REQUIRE(d != NULL);
	int seen = 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 5, ".gguf") != 0) continue;
		seen++;
		bool covered = false;
		for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
			if (!runs[i].ours && !strcmp(runs[i].model, e->d_name)) covered = true;
		for (size_t i = 0; i < sizeof elsewhere / sizeof elsewhere[0]; i++)
			if (!strcmp(elsewhere[i], e->d_name)) covered = true;
		if (!covered) fprintf(stderr, "  %s/%s has no reference check\n", dir, e->d_name);
		CHECK(covered);
	}
	closedir(d);
	CHECK(seen >= 10);
}

int main(void)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/models/tiny-dsc-reference.json", testdata());
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("SKIP: %s not found\n", path);
		return 77;
	}
	fclose(f);
	const char *filter = getenv("TEST_FILTER");
	int passed = 0, failed = 0;
	for (struct test_case *t = test_cases_head; t; t = t->next) {
		if (filter && !strstr(t->name, filter)) continue;
		int fl = 0;
		t->fn(&fl);
		printf("%s %s\n", fl ? "FAIL" : "ok  ", t->name);
		fl ? failed++ : passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
