/*
 * test_engine.c - the engine on the tiny random-weight F32 model: the prefix
 * cache is exact (logits with and without it within 1e-4), greedy runs are
 * deterministic, candidate 0 of a batch equals the single greedy run,
 * cancellation stops within a step and gives every page back, eviction
 * holds the page budget, stop strings and line limits cut where they should,
 * token healing backs up over the prefix's last token.
 *
 * Random weights write random text, so the expectations are relations
 * between runs (same text, cut at the first occurrence), not fixed strings.
 */
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include "engine_internal.h"
#include "harness.h"
#include "infer.h"

static bool have_model(void)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/models/tiny-dsc-f32.gguf", testdata());
	if (access(path, R_OK) == 0) return true;
	printf("SKIP: %s missing\n", path);
	return false;
}

static struct model *load_file(const char *file)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/models/%s", testdata(), file);
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.backend = INFER_BACKEND_CPU;
	mp.n_threads = 2;
	mp.kv_bytes = 4u << 20;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) fprintf(stderr, "model_load: %s\n", err.message);
	return m;
}

static struct model *load(void)
{
	return load_file("tiny-dsc-f32.gguf");
}

static double maxdiff(const float *a, const float *b, int n)
{
	double d = 0;
	for (int i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
	return d;
}

/* ---- the cache itself, against fresh prefills ---- */

static void ref_logits(struct model *m, const int32_t *tok, int n, float *out)
{
	struct infill_error err;
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	if (model_eval(m, s, tok, n, out, &err)) fprintf(stderr, "model_eval: %s\n", err.message);
	kv_seq_free(s);
}

/* Matches, prefills the rest, inserts; returns the matched length. */
static int cached_logits(struct model *m, struct pcache *c, const int32_t *tok, int n, float *out)
{
	struct infill_error err;
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	int got = pcache_match(c, tok, n - 1, s);
	if (model_eval(m, s, tok + got, n - got, out, &err))
		fprintf(stderr, "model_eval: %s\n", err.message);
	pcache_insert(c, tok, n, s);
	kv_seq_free(s);
	return got;
}

static void cache_logits_exact(int *test_failed_, const char *file, double tol)
{
	if (!have_model()) return;
	struct model *m = load_file(file);
	REQUIRE(m != NULL);
	int nv = model_info(m)->n_vocab;
	struct kv_pool *pool = model_kv_pool(m);
	int32_t free0 = kv_pool_free_pages(pool);
	struct pcache *c = pcache_new(pool, 1000);
	float *a = malloc((size_t)nv * sizeof(float)), *b = malloc((size_t)nv * sizeof(float));
	int32_t p1[60], p2[45], p3[60], p4[30];
	for (int i = 0; i < 60; i++) p1[i] = (int32_t)((i * 7919 + 13) % 32000);
	memcpy(p2, p1, 35 * sizeof(int32_t)); /* diverges inside page 2 */
	for (int i = 35; i < 45; i++) p2[i] = (int32_t)((i * 104729 + 7) % 32000);
	memcpy(p3, p1, 60 * sizeof(int32_t)); /* extends the first 40 */
	memcpy(p4, p2, 20 * sizeof(int32_t)); /* diverges inside page 1 of a split */
	for (int i = 20; i < 30; i++) p4[i] = 5 + i;
	struct {
		const int32_t *tok;
		int n, want;
	} steps[] = {
		{ p1, 40, 0 },  { p2, 45, 35 }, { p3, 60, 40 }, { p4, 30, 20 },
		{ p1, 40, 39 }, { p2, 45, 44 }, { p3, 50, 49 }, { p4, 30, 29 },
	};
	for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
		ref_logits(m, steps[k].tok, steps[k].n, a);
		int got = cached_logits(m, c, steps[k].tok, steps[k].n, b);
		CHECK_INT_EQ(got, steps[k].want);
		double d = maxdiff(a, b, nv);
		if (d > tol || getenv("ENGINE_TEST_VERBOSE"))
			fprintf(stderr, "%s step %zu: max |diff| %g\n", file, k, d);
		CHECK(d <= tol);
	}
	struct pcache_stats st;
	pcache_get_stats(c, &st);
	CHECK(st.nodes >= 4);
	pcache_free(c);
	CHECK_INT_EQ(kv_pool_free_pages(pool), free0);
	free(a);
	free(b);
	model_free(m);
}

TEST(cache_logits_exact_f32)
{
	cache_logits_exact(test_failed_, "tiny-dsc-f32.gguf", 1e-4);
}

/* Quantized kernels may round differently for different batch shapes (a
 * cached prompt is computed in other chunks than a fresh one), so Q8_0 gets
 * a looser bound; the cache itself adds no error (the F32 case). */
TEST(cache_logits_close_q8_0)
{
	cache_logits_exact(test_failed_, "tiny-dsc-q8_0.gguf", 1e-2);
}

/* ---- jobs ---- */

static const char *PREFIX =
        "import os\nimport sys\n\n\ndef read_config(path):\n    with open(path) as f:\n"
        "        data = f.read()\n    return parse(data)\n\n\ndef main(argv):\n    cfg = ";
static const char *SUFFIX = "\n    run(cfg)\n    return 0\n";

static struct engine_request request(const char *prefix, int n_cand, int max_tokens)
{
	struct engine_request rq = engine_request_default();
	rq.prefix = prefix;
	rq.prefix_len = strlen(prefix);
	rq.suffix = SUFFIX;
	rq.suffix_len = strlen(SUFFIX);
	rq.n_candidates = n_cand;
	rq.max_tokens = max_tokens;
	rq.max_lines = 0;
	return rq;
}

static int run(struct engine *e, const struct engine_request *rq, struct engine_result *res)
{
	struct infill_error err;
	int rc = engine_run(e, rq, res, &err);
	if (rc && rc != ENGINE_ECANCELED) fprintf(stderr, "engine_run: %d %s\n", rc, err.message);
	return rc;
}

TEST(greedy_deterministic_and_cache_exact)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	int32_t free0 = kv_pool_free_pages(model_kv_pool(m));
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, 1, 24);
	struct engine_result r0, r1, r2;
	rq.use_cache = false;
	REQUIRE(run(e, &rq, &r0) == 0);
	rq.use_cache = true;
	REQUIRE(run(e, &rq, &r1) == 0); /* fills the cache */
	REQUIRE(run(e, &rq, &r2) == 0); /* served from it */
	CHECK_INT_EQ(r0.cached_tokens, 0);
	CHECK_INT_EQ(r1.cached_tokens, 0);
	CHECK_INT_EQ(r2.cached_tokens, r2.prompt_tokens - 1);
	CHECK(r0.candidates[0].n_tokens > 0);
	CHECK_STR_EQ(r0.candidates[0].text, r1.candidates[0].text);
	CHECK_STR_EQ(r0.candidates[0].text, r2.candidates[0].text);
	CHECK_NEAR(r0.candidates[0].sum_logprob, r2.candidates[0].sum_logprob, 1e-3);
	CHECK_INT_EQ(r0.candidates[0].n_tokens, r2.candidates[0].n_tokens);
	/* one character typed: most of the prompt comes from the cache, same result as without */
	char *typed = malloc(strlen(PREFIX) + 2);
	sprintf(typed, "%sx", PREFIX);
	struct engine_request rq2 = request(typed, 1, 24);
	struct engine_result r3, r4;
	REQUIRE(run(e, &rq2, &r3) == 0);
	CHECK(r3.cached_tokens >=
	      r3.prompt_tokens - 20); /* the suffix and the last prefix tokens */
	rq2.use_cache = false;
	REQUIRE(run(e, &rq2, &r4) == 0);
	CHECK_STR_EQ(r3.candidates[0].text, r4.candidates[0].text);
	CHECK_NEAR(r3.candidates[0].sum_logprob, r4.candidates[0].sum_logprob, 1e-3);
	struct engine_stats st;
	engine_get_stats(e, &st);
	CHECK_INT_EQ(st.jobs, 5);
	CHECK(st.cache_hits >= 2);
	engine_result_finish(&r0);
	engine_result_finish(&r1);
	engine_result_finish(&r2);
	engine_result_finish(&r3);
	engine_result_finish(&r4);
	free(typed);
	engine_free(e);
	CHECK_INT_EQ(kv_pool_free_pages(model_kv_pool(m)), free0);
	model_free(m);
}

TEST(batch_candidate0_equals_single_greedy)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, 1, 20);
	rq.use_cache = false;
	struct engine_result one, three, again;
	REQUIRE(run(e, &rq, &one) == 0);
	rq.n_candidates = 3;
	rq.temperature = 1.0f;
	rq.top_p = 1.0f;
	REQUIRE(run(e, &rq, &three) == 0);
	CHECK_INT_EQ(three.n_candidates, 3);
	CHECK_STR_EQ(one.candidates[0].text, three.candidates[0].text);
	CHECK_NEAR(one.candidates[0].sum_logprob, three.candidates[0].sum_logprob, 1e-3);
	for (int i = 0; i < 3; i++) {
		CHECK(three.candidates[i].n_tokens > 0 && three.candidates[i].sum_logprob <= 0);
		/* markup tokens end a candidate, never show in its text */
		CHECK(!strstr(three.candidates[i].text, "[PAD"));
		CHECK(!strstr(three.candidates[i].text, "<｜"));
	}
	/* sampled candidates are reproducible for a seed */
	REQUIRE(run(e, &rq, &again) == 0);
	for (int i = 1; i < 3; i++)
		CHECK_STR_EQ(three.candidates[i].text, again.candidates[i].text);
	CHECK(three.generated_tokens >= 3);
	engine_result_finish(&one);
	engine_result_finish(&three);
	engine_result_finish(&again);
	engine_free(e);
	model_free(m);
}

struct cancel_at {
	atomic_int flag;
	int32_t step,
	        prefilled; /* cancel at this decode step / after this many prefilled (0: off) */
	int calls;
};

static void on_progress(void *ud, int32_t prefilled, int32_t step)
{
	struct cancel_at *c = ud;
	c->calls++;
	if ((step >= 0 && step == c->step) ||
	    (step < 0 && c->prefilled && prefilled >= c->prefilled))
		atomic_store(&c->flag, 1);
}

TEST(cancel_stops_within_a_step_and_frees_pages)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	struct kv_pool *pool = model_kv_pool(m);
	int32_t free0 = kv_pool_free_pages(pool);
	struct engine_params ep = engine_params_default();
	ep.prefill_chunk = 16;
	struct engine *e = engine_new(m, &ep, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct cancel_at ca = { .step = 2 };
	atomic_init(&ca.flag, 0);
	struct engine_request rq = request(PREFIX, 3, 40);
	rq.cancel = &ca.flag;
	rq.on_progress = on_progress;
	rq.progress_ud = &ca;
	struct engine_result r;
	CHECK_INT_EQ(run(e, &rq, &r), ENGINE_ECANCELED);
	CHECK(r.cancelled);
	CHECK_INT_EQ(r.processed_tokens, r.prompt_tokens); /* cancelled in decode: all prefilled */
	for (int i = 0; i < r.n_candidates; i++) {
		CHECK(r.candidates[i].n_tokens <= 4);
		CHECK(r.candidates[i].stop == ENGINE_STOP_CANCELLED ||
		      r.candidates[i].stop == ENGINE_STOP_EOG);
	}
	engine_result_finish(&r);
	/* during prefill: stops after the chunk that crossed 20 tokens */
	struct cancel_at cb = { .step = -100, .prefilled = 20 };
	atomic_init(&cb.flag, 0);
	rq.cancel = &cb.flag;
	rq.progress_ud = &cb;
	rq.use_cache = false;
	CHECK_INT_EQ(run(e, &rq, &r), ENGINE_ECANCELED);
	CHECK_INT_EQ(r.generated_tokens, 0);
	CHECK_INT_EQ(cb.calls, 2);
	/* what infill/stats counts: the two chunks done, not the whole prompt */
	CHECK_INT_EQ(r.processed_tokens, 32);
	CHECK(r.prompt_tokens > 32);
	engine_result_finish(&r);
	/* already cancelled: nothing runs */
	rq.on_progress = NULL;
	CHECK_INT_EQ(run(e, &rq, &r), ENGINE_ECANCELED);
	CHECK_INT_EQ(r.processed_tokens, 0);
	engine_result_finish(&r);
	struct engine_stats st;
	engine_get_stats(e, &st);
	CHECK_INT_EQ(st.cancelled, 3);
	/* every page of the jobs came back; what stays is the cache's */
	engine_cache_clear(e);
	CHECK_INT_EQ(kv_pool_free_pages(pool), free0);
	engine_free(e);
	model_free(m);
}

TEST(eviction_keeps_the_budget)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	struct kv_pool *pool = model_kv_pool(m);
	int32_t free0 = kv_pool_free_pages(pool);
	struct engine_params ep = engine_params_default();
	ep.cache_max_pages = 12;
	struct engine *e = engine_new(m, &ep, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	const char *files[] = { "int a = 1;\nint b = 2;\nint main(void) {\n    return ",
		                "package main\n\nimport \"fmt\"\n\nfunc main() {\n    fmt.",
		                "fn main() {\n    let v: Vec<u32> = Vec::new();\n    for x in ",
		                "class Foo:\n    def __init__(self):\n        self.x = ",
		                "SELECT name, count(*) FROM users WHERE age > 30 GROUP BY " };
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 5; i++) {
			struct engine_request rq = request(files[i], 1, 8);
			struct engine_result r;
			CHECK(run(e, &rq, &r) == 0);
			engine_result_finish(&r);
			struct engine_stats st;
			engine_get_stats(e, &st);
			CHECK(st.cache_pages <= 12);
		}
	struct engine_stats st;
	engine_get_stats(e, &st);
	CHECK(st.cache_evictions > 0);
	CHECK(st.cache_nodes > 0);
	/* a smaller budget evicts at once */
	ep.cache_max_pages = 3;
	engine_configure(e, &ep);
	engine_get_stats(e, &st);
	CHECK(st.cache_pages <= 3);
	engine_free(e);
	CHECK_INT_EQ(kv_pool_free_pages(pool), free0);
	model_free(m);
}

TEST(stop_strings_and_lines_cut_at_first_occurrence)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, 1, 32);
	struct engine_result full, cut;
	REQUIRE(run(e, &rq, &full) == 0);
	const char *t = full.candidates[0].text;
	size_t tl = full.candidates[0].len;
	if (tl >= 8) {
		char stop[5];
		memcpy(stop, t + 3, 4); /* 4 bytes from inside the text: likely spans tokens */
		stop[4] = 0;
		if (!memchr(stop, 0, 4)) {
			const char *stops[] = { stop };
			rq.stop = stops;
			rq.n_stop = 1;
			REQUIRE(run(e, &rq, &cut) == 0);
			size_t at = (size_t)(strstr(t, stop) - t);
			CHECK_INT_EQ(cut.candidates[0].len, at);
			CHECK(!memcmp(cut.candidates[0].text, t, at));
			CHECK(cut.candidates[0].stop == ENGINE_STOP_STRING);
			engine_result_finish(&cut);
			rq.stop = NULL;
			rq.n_stop = 0;
		}
	}
	ssize_t ml = stop_find_max_lines(t, tl, 1);
	if (ml >= 0) {
		rq.max_lines = 1;
		REQUIRE(run(e, &rq, &cut) == 0);
		CHECK_INT_EQ(cut.candidates[0].len, ml);
		CHECK(cut.candidates[0].stop == ENGINE_STOP_MAX_LINES);
		engine_result_finish(&cut);
		rq.max_lines = 0;
	} else {
		printf("note: greedy text has no second line; max_lines checked by engine_pure "
		       "only\n");
	}
	engine_result_finish(&full);
	engine_free(e);
	model_free(m);
}

static bool always_leaves(void *ud, const char *text, size_t len)
{
	(void)text, (void)len;
	(*(int *)ud)++;
	return true;
}

TEST(scope_callback_cuts_the_last_line)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, 1, 16);
	int calls = 0;
	rq.stop_text = always_leaves;
	rq.stop_ud = &calls;
	struct engine_result r;
	REQUIRE(run(e, &rq, &r) == 0);
	/* whatever was written, its first line (or unfinished line) left the scope */
	if (calls) {
		CHECK(r.candidates[0].stop == ENGINE_STOP_SCOPE);
		CHECK(strchr(r.candidates[0].text, '\n') == NULL);
	}
	engine_result_finish(&r);
	engine_free(e);
	model_free(m);
}

TEST(token_healing_backs_up_one_token)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request("def main():\n    pri", 2, 6);
	struct infill_error err;
	int32_t healed = 0;
	int n1 = engine_prompt_tokens(e, &rq, NULL, 0, &healed, &err);
	rq.token_healing = false;
	int32_t none = -1;
	int n0 = engine_prompt_tokens(e, &rq, NULL, 0, &none, &err);
	CHECK_INT_EQ(n1, n0 - 1);
	CHECK(healed >= 3);
	CHECK_INT_EQ(none, 0);
	rq.token_healing = true;
	struct engine_result r;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.healed_bytes, healed);
	engine_result_finish(&r);
	engine_free(e);
	model_free(m);
}

TEST(shifted_suffix_reuse_runs_and_frees)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	struct kv_pool *pool = model_kv_pool(m);
	int32_t free0 = kv_pool_free_pages(pool);
	struct engine_params ep = engine_params_default();
	ep.reuse_shifted_suffix = true;
	struct engine *e = engine_new(m, &ep, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", PREFIX);
	struct engine_result r;
	int shifted = 0, run_len = 0, longest = 0;
	for (int k = 0; k < 12; k++) {
		strcat(buf, k % 2 ? "b" : "a "); /* crosses token boundaries */
		struct engine_request rq = request(buf, 2, 4);
		REQUIRE(run(e, &rq, &r) == 0);
		CHECK(r.cached_tokens + r.shifted_tokens < r.prompt_tokens);
		if (k > 0 && r.shifted_tokens > 0) shifted++;
		run_len = r.shifted_tokens > 0 ? run_len + 1 : 0;
		longest = run_len > longest ? run_len : longest;
		engine_result_finish(&r);
	}
	CHECK(shifted >= 1);
	/* a shifted tail is recomputed exactly after 8 re-uses in a row */
	CHECK(longest <= 8);
	struct engine_stats st;
	engine_get_stats(e, &st);
	CHECK(st.shifted_tokens > 0);
	engine_free(e);
	CHECK_INT_EQ(kv_pool_free_pages(pool), free0);
	model_free(m);
}

/* Moves the request's deadline into the past once decode step `step` is done. */
struct deadline_at {
	struct engine_request *rq;
	int32_t step;
};

static void expire_at(void *ud, int32_t prefilled, int32_t step)
{
	(void)prefilled;
	struct deadline_at *d = ud;
	if (step == d->step) d->rq->deadline_ms = engine_now_ms() - 1;
}

static bool word_byte(unsigned char b)
{
	return b == '_' || b >= 0x80 || (b >= '0' && b <= '9') ||
	       ((b | 0x20) >= 'a' && (b | 0x20) <= 'z');
}

static bool ends_in_word_or_is_one(const char *t)
{
	size_t n = strlen(t);
	if (!n || !word_byte((unsigned char)t[n - 1])) return true;
	for (size_t i = 0; i < n; i++)
		if (!word_byte((unsigned char)t[i]))
			return false; /* a word after other text: it must have been a whole one */
	return true;
}

TEST(deadline_stops_every_candidate_with_a_prefix_of_its_answer)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	int32_t free0 = kv_pool_free_pages(model_kv_pool(m));
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, 3, 48);
	struct engine_result full, late, past;
	REQUIRE(run(e, &rq, &full) == 0);
	/* A deadline passed after the 6th decode step. */
	struct deadline_at d = { &rq, 5 };
	rq.on_progress = expire_at;
	rq.progress_ud = &d;
	REQUIRE(run(e, &rq, &late) == 0);
	for (int i = 0; i < 3; i++) {
		const struct engine_candidate *c = &late.candidates[i];
		if (full.candidates[i].n_tokens > 7) {
			CHECK_INT_EQ(c->stop, ENGINE_STOP_DEADLINE);
			CHECK_INT_EQ(c->n_tokens, 7); /* 1 from the prompt's logits + 6 steps */
		}
		CHECK(ends_in_word_or_is_one(c->text));
	}
	/* The greedy candidate is the same text, only shorter. */
	CHECK(late.candidates[0].len <= full.candidates[0].len);
	CHECK(!strncmp(full.candidates[0].text, late.candidates[0].text, late.candidates[0].len));
	/* A deadline already past when the job starts: one token each, no forward. */
	rq.on_progress = NULL;
	rq.deadline_ms = engine_now_ms() - 1;
	REQUIRE(run(e, &rq, &past) == 0);
	CHECK_INT_EQ(past.generated_tokens, 3);
	for (int i = 0; i < 3; i++) CHECK(past.candidates[i].n_tokens == 1);
	CHECK_STR_EQ(engine_stop_name(ENGINE_STOP_DEADLINE), "deadline");
	engine_result_finish(&full);
	engine_result_finish(&late);
	engine_result_finish(&past);
	engine_free(e);
	CHECK_INT_EQ(kv_pool_free_pages(model_kv_pool(m)), free0);
	model_free(m);
}

/* log-softmax of the given text's tokens after the prompt, by a plain
 * sequential forward (no forks, no batch with other sequences) */
static double ref_given_sum(struct model *m, const int32_t *prompt, int32_t L, const int32_t *ids,
                            int32_t k)
{
	int32_t nv = model_info(m)->n_vocab;
	struct infill_error err;
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	if (!s || model_eval(m, s, prompt, L - 1, NULL, &err)) return NAN;
	int32_t tok[64], pos[64], rows[64];
	struct kv_seq *seqs[64];
	float *lg = malloc((size_t)k * (size_t)nv * sizeof *lg);
	for (int32_t j = 0; j < k; j++) {
		tok[j] = j ? ids[j - 1] : prompt[L - 1];
		pos[j] = L - 1 + j, rows[j] = j, seqs[j] = s;
	}
	struct model_batch b = { .n_tokens = k,
		                 .tokens = tok,
		                 .pos = pos,
		                 .seqs = seqs,
		                 .n_out = k,
		                 .out_rows = rows,
		                 .logits = lg };
	double sum = NAN;
	if (lg && model_forward(m, &b, &err) == 0) {
		sum = 0;
		for (int32_t j = 0; j < k; j++)
			sum += lg[(size_t)j * (size_t)nv + (size_t)ids[j]] -
			       sample_logsumexp(lg + (size_t)j * (size_t)nv, nv);
	}
	free(lg);
	kv_seq_free(s);
	return sum;
}

TEST(given_texts_score_as_a_sequential_forward)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	int32_t free0 = kv_pool_free_pages(model_kv_pool(m));
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_given given[] = { { "parse(argv)", 11 },
		                        { "load_config(argv[1], strict=True)", 34 },
		                        { "", 0 } };
	struct engine_request rq = request(PREFIX, 2, 16);
	rq.token_healing = false;
	rq.use_cache = false;
	rq.given = given;
	rq.n_given = 3; /* the empty one is left out */
	struct engine_result r;
	REQUIRE(run(e, &rq, &r) == 0);
	REQUIRE(r.n_candidates == 4);
	int32_t prompt[1024];
	struct infill_error err;
	int32_t L = engine_prompt_tokens(e, &rq, prompt, 1024, NULL, &err);
	REQUIRE(L > 1 && L <= 1024);
	for (int g = 0; g < 2; g++) {
		const struct engine_candidate *c = &r.candidates[2 + g];
		CHECK_STR_EQ(c->text, given[g].text);
		CHECK(c->stop == ENGINE_STOP_GIVEN);
		int32_t ids[64];
		int k = tokenizer_encode(model_tokenizer(m), given[g].text, given[g].len, false,
		                         ids, 64);
		REQUIRE(k > 0 && k < 64);
		CHECK_INT_EQ(c->n_tokens, k + 1);
		CHECK(c->end_logprob < 0 && c->end_logprob > -1e3);
		CHECK_NEAR(c->sum_logprob - c->end_logprob, ref_given_sum(m, prompt, L, ids, k),
		           1e-3);
		CHECK_NEAR(c->mean_logprob, c->sum_logprob / c->n_tokens, 1e-9);
	}
	engine_result_finish(&r);
	/* scored before decoding, and not at all once the deadline has passed */
	rq.deadline_ms = engine_now_ms() - 1;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.n_candidates, 2);
	for (int i = 0; i < r.n_candidates; i++) CHECK(r.candidates[i].stop != ENGINE_STOP_GIVEN);
	engine_result_finish(&r);
	rq.deadline_ms = 0;
	/* under a deadline, only those whose forward fits before it: at an
	 * assumed 10 ms a token, 100 ms leave room for 10 tokens at most, less
	 * than the long one's 12 (the prompt is cached first, so its prefill
	 * cannot use up the time even under a sanitizer) */
	struct engine_params slow = engine_params_default();
	slow.prefill_tokens_per_s = 100;
	struct engine *es = engine_new(m, &slow, &(struct infill_error){ 0 });
	REQUIRE(es != NULL);
	rq.use_cache = true;
	rq.deadline_ms = engine_now_ms() + 100000;
	REQUIRE(run(es, &rq, &r) == 0);
	CHECK_INT_EQ(r.given_dropped, 0);
	CHECK_INT_EQ(r.n_candidates, 4);
	engine_result_finish(&r);
	rq.deadline_ms = engine_now_ms() + 100;
	REQUIRE(run(es, &rq, &r) == 0);
	CHECK(r.given_dropped >= 1);
	for (int i = 0; i < r.n_candidates; i++) CHECK(strcmp(r.candidates[i].text, given[1].text));
	engine_result_finish(&r);
	engine_free(es);
	rq.use_cache = false;
	rq.deadline_ms = 0;
	/* longer than max_tokens: left out, not cut */
	rq.max_tokens = 3;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.n_candidates, 2);
	engine_result_finish(&r);
	/* with healing, the healed bytes are spelled first and masked as when decoding */
	struct engine_request hq = request("def main():\n    pri", 1, 8);
	struct engine_given pr = { "nt(main)", 8 };
	hq.given = &pr;
	hq.n_given = 1;
	REQUIRE(run(e, &hq, &r) == 0);
	REQUIRE(r.n_candidates == 2);
	CHECK(r.healed_bytes >= 3);
	CHECK_STR_EQ(r.candidates[1].text, "nt(main)");
	CHECK(r.candidates[1].sum_logprob < 0 && isfinite(r.candidates[1].sum_logprob));
	engine_result_finish(&r);
	engine_free(e);
	CHECK_INT_EQ(kv_pool_free_pages(model_kv_pool(m)), free0);
	model_free(m);
}

TEST(bad_requests_fail_with_a_message)
{
	if (!have_model()) return;
	struct model *m = load();
	REQUIRE(m != NULL);
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, 0, 8);
	struct engine_result r;
	struct infill_error err;
	CHECK_INT_EQ(engine_run(e, &rq, &r, &err), -EINVAL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK_STR_EQ(err.key, "completion.candidates");
	engine_result_finish(&r);
	rq = request(PREFIX, 1, 8);
	rq.prefix_tokens = 100000;
	char *big = malloc(200000);
	for (int i = 0; i < 199999; i++)
		big[i] = (char)('a' + (i * 7) % 26 - (i % 5 == 0 ? 'a' - ' ' : 0));
	big[199999] = 0;
	rq.prefix = big;
	rq.prefix_len = strlen(big);
	CHECK_INT_EQ(engine_run(e, &rq, &r, &err), -ENOSPC);
	CHECK_INT_EQ(err.code, -ENOSPC);
	CHECK_STR_EQ(err.key, "cache.memoryMB");
	CHECK(strstr(err.message, "cache.memoryMB") != NULL); /* the message says what to raise */
	engine_result_finish(&r);
	free(big);
	engine_free(e);
	model_free(m);
}

TEST_MAIN()
