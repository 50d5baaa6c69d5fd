/*
 * test_reference_kq.c - llama.cpp's K-quant mixtures (testdata/models/
 * tiny-kq-*.gguf: Q4_K_M, Q5_K_M, Q6_K with their Q5_0 / Q5_1 / Q8_0
 * fallback tensors) against llama.cpp's logits in tiny-kq-reference.json.
 *
 * The README of those files explains why exact agreement is not the test:
 * activations are quantized to Q8_K (256 values on one scale), and a value
 * that lands on a rounding boundary flips with the last bit of anything
 * upstream, moving that position's logits by ~0.1 and the later positions
 * with it; llama.cpp's own x86 code paths disagree with each other that
 * way. So each run is held to what every correct implementation measured
 * there achieves and every wrong recipe misses:
 *
 *   - recipe: at least 10% of all prompt positions have max_logit and
 *     logsumexp within 1e-4 of llama.cpp's (correct: >= 29%; Q8_0 instead
 *     of Q8_K activations, or none: 0%, not even position 0);
 *   - size: everywhere |d max_logit| <= 0.2 and |d logsumexp| <= 0.1, the
 *     last position's top-50 within 0.2 (and the full last row where the
 *     JSON has it);
 *   - greedy16 the same up to the first step whose reference top-2 margin
 *     is below 0.35 (past that a flip may swap the two).
 *
 * Every tiny-kq-*.gguf in the folder must load and have a run here, so a
 * file added later is checked too.
 */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>

#include "harness.h"
#include "infer.h"
#include "json_mini.h"

#define RECIPE_TOL   1e-4
#define RECIPE_SHARE 0.10
#define SIZE_MAX_LOG 0.2
#define SIZE_LSE     0.1
#define GREEDY_SURE  0.35

static struct jm_doc doc;

struct run_stats {
	int positions, within;
	double worst_max, worst_lse, worst_top;
};

/* One prompt of one run: all positions in one batch, then greedy16. */
static void check_prompt(int *test_failed_, struct model *m, int pr, bool full_row,
                         struct run_stats *st)
{
	struct infill_error err;
	int32_t nv = model_info(m)->n_vocab;
	double idsd[1024];
	int n = jm_nums(&doc, jm_get(&doc, pr, "token_ids"), idsd, 1024);
	REQUIRE(n > 0 && n <= 1024);
	int32_t ids[1024], pos[1024];
	struct kv_seq *seqs[1024];
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	REQUIRE(s != NULL);
	for (int i = 0; i < n; i++) ids[i] = (int32_t)idsd[i], pos[i] = i, seqs[i] = s;
	float *logits = malloc((size_t)n * nv * sizeof(float));
	REQUIRE(logits != NULL);
	struct model_batch b = { .n_tokens = n,
		                 .tokens = ids,
		                 .pos = pos,
		                 .seqs = seqs,
		                 .n_out = n,
		                 .out_rows = pos,
		                 .logits = logits };
	int rc = model_forward(m, &b, &err);
	if (rc) fprintf(stderr, "forward: %s\n", err.message);
	REQUIRE(rc == 0);

	int pp = jm_get(&doc, pr, "per_position");
	CHECK_INT_EQ(jm_len(&doc, pp), n);
	for (int i = 0; i < n && i < jm_len(&doc, pp); i++) {
		const float *row = logits + (size_t)i * nv;
		float mx = row[0];
		for (int v = 1; v < nv; v++) mx = row[v] > mx ? row[v] : mx;
		double dm = fabs(mx - jm_num(&doc, jm_get(&doc, jm_at(&doc, pp, i), "max_logit")));
		double dl = fabs(sample_logsumexp(row, nv) -
		                 jm_num(&doc, jm_get(&doc, jm_at(&doc, pp, i), "logsumexp")));
		st->positions++;
		if (dm <= RECIPE_TOL && dl <= RECIPE_TOL) st->within++;
		st->worst_max = fmax(st->worst_max, dm);
		st->worst_lse = fmax(st->worst_lse, dl);
	}

	const float *last = logits + (size_t)(n - 1) * nv;
	int top = jm_get(&doc, pr, "last_top50");
	for (int i = 0; i < jm_len(&doc, top); i++) {
		int pair = jm_at(&doc, top, i);
		int id = (int)jm_num(&doc, jm_at(&doc, pair, 0));
		REQUIRE(id >= 0 && id < nv);
		st->worst_top =
		        fmax(st->worst_top, fabs(last[id] - jm_num(&doc, jm_at(&doc, pair, 1))));
	}
	if (full_row) {
		double *ref = malloc((size_t)nv * sizeof(double));
		REQUIRE(ref != NULL);
		CHECK_INT_EQ(jm_nums(&doc, jm_get(&doc, pr, "last_logits"), ref, nv), nv);
		for (int v = 0; v < nv; v++)
			st->worst_top = fmax(st->worst_top, fabs(last[v] - ref[v]));
		free(ref);
	}

	/* greedy16, as far as the reference is sure */
	double g[16], margin[16];
	CHECK_INT_EQ(jm_nums(&doc, jm_get(&doc, pr, "greedy16"), g, 16), 16);
	CHECK_INT_EQ(jm_nums(&doc, jm_get(&doc, pr, "greedy16_margin"), margin, 16), 16);
	float *cur = malloc((size_t)nv * sizeof(float));
	REQUIRE(cur != NULL);
	memcpy(cur, last, (size_t)nv * sizeof(float));
	for (int step = 0; step < 16 && margin[step] >= GREEDY_SURE; step++) {
		int32_t tok = sample_greedy(cur, nv);
		if (tok != (int32_t)g[step]) {
			fprintf(stderr, "  greedy step %d: %d, llama.cpp %d (margin %.3g)\n", step,
			        tok, (int)g[step], margin[step]);
			CHECK(0);
			break;
		}
		if (model_eval(m, s, &tok, 1, cur, &err) != 0) {
			CHECK(0);
			break;
		}
	}
	free(cur);
	free(logits);
	kv_seq_free(s);
}

/* Run `run` of the JSON: its model file with its K/V type, every prompt. */
static void check_run(int *test_failed_, int run)
{
	int r = jm_at(&doc, jm_get(&doc, 0, "runs"), run);
	REQUIRE(r >= 0);
	int mf = jm_get(&doc, r, "model_file");
	char name[256], path[1024];
	REQUIRE(mf >= 0 && doc.nodes[mf].type == JM_STR && doc.nodes[mf].len < sizeof name);
	memcpy(name, doc.nodes[mf].str, doc.nodes[mf].len);
	name[doc.nodes[mf].len] = 0;
	bool kv_f16 = jm_str_eq(&doc, jm_get(&doc, r, "kv_cache_type"), "f16");
	snprintf(path, sizeof path, "%s/models/%s", testdata(), name);
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.backend = INFER_BACKEND_CPU;
	mp.n_threads = 2;
	mp.kv_bytes = 32u << 20;
	mp.kv_f32 = !kv_f16;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) fprintf(stderr, "model_load %s: %s\n", name, err.message);
	REQUIRE(m != NULL);
	struct run_stats st = { 0 };
	int prompts = jm_get(&doc, r, "prompts");
	for (int pi = 0; pi < jm_len(&doc, prompts); pi++) {
		int pr = jm_at(&doc, prompts, pi);
		check_prompt(test_failed_, m, pr, jm_get(&doc, pr, "last_logits") >= 0, &st);
	}
	double share = st.positions ? (double)st.within / st.positions : 0;
	printf("  %s, %s K/V: %d of %d positions within %.0e (%.0f%%), max |d max_logit| %.3g, "
	       "|d logsumexp| %.3g, last row %.3g\n",
	       name, kv_f16 ? "f16" : "f32", st.within, st.positions, RECIPE_TOL, 100 * share,
	       st.worst_max, st.worst_lse, st.worst_top);
	CHECK(st.positions > 0);
	CHECK(share >= RECIPE_SHARE);
	CHECK(st.worst_max <= SIZE_MAX_LOG);
	CHECK(st.worst_lse <= SIZE_LSE);
	CHECK(st.worst_top <= SIZE_MAX_LOG);
	model_free(m);
}

TEST(q4_k_m_f32_kv)
{
	check_run(test_failed_, 0);
}

TEST(q5_k_m_f32_kv)
{
	check_run(test_failed_, 1);
}

TEST(q6_k_f32_kv)
{
	check_run(test_failed_, 2);
}

TEST(q4_k_m_f16_kv)
{
	check_run(test_failed_, 3);
}

/* Every tiny-kq-*.gguf of the folder has a run in the JSON (and so was checked above). */
TEST(every_kq_file_has_a_reference_run)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/models", testdata());
	DIR *d = opendir(dir);
	REQUIRE(d != NULL);
	int runs = jm_get(&doc, 0, "runs"), files = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "tiny-kq-", 8) || len < 5 ||
		    strcmp(e->d_name + len - 5, ".gguf"))
			continue;
		files++;
		bool found = false;
		for (int i = 0; i < jm_len(&doc, runs); i++)
			found = found ||
			        jm_str_eq(&doc, jm_get(&doc, jm_at(&doc, runs, i), "model_file"),
			                  e->d_name);
		if (!found)
			fprintf(stderr, "  %s has no run in tiny-kq-reference.json\n", e->d_name);
		CHECK(found);
	}
	closedir(d);
	CHECK(files >= 3);
	CHECK_INT_EQ(jm_len(&doc, runs), 4);
}

int main(void)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/models/tiny-kq-reference.json", testdata());
	if (jm_load(&doc, path) != 0) {
		printf("SKIP: %s not found\n", path);
		return 77;
	}
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
	jm_free(&doc);
	return failed ? 1 : 0;
}
