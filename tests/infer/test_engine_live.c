/*
 * test_engine_live.c - live candidates (engine_request.live,
 * engine_live_continue): candidates the deadline paused go on decoding from
 * where they stopped and give, slice after slice, exactly what one decode
 * never paused gives: the same text, token count, stop reason and
 * log-probability sum (compared with ==, not a tolerance), greedy and
 * sampled, on the tiny random-weight models (F32 and Q8_0) and on the
 * embedded trained model. Other jobs run between the slices (the engine's
 * logits buffer and cache change under the paused candidates), a cancel
 * flag yields within a step and the candidate resumes, and every page goes
 * back to the pool when it is freed.
 *
 * Prompt lookup stays off here: its drafts depend on counts other jobs
 * change, and it is exact only up to float rounding (test_engine_lookup.c).
 */
#include <errno.h>
#include <unistd.h>

#include "harness.h"
#include "infer.h"

static struct model *load_path(const char *path)
{
	if (access(path, R_OK) != 0) {
		printf("SKIP: %s missing\n", path);
		return NULL;
	}
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.backend = INFER_BACKEND_CPU;
	mp.n_threads = 2;
	mp.kv_bytes = 8u << 20;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) fprintf(stderr, "model_load %s: %s\n", path, err.message);
	return m;
}

static struct model *load_tiny(const char *file)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/models/%s", testdata(), file);
	return load_path(path);
}

static const char *PREFIX =
        "import os\nimport sys\n\n\ndef read_config(path):\n    with open(path) as f:\n"
        "        data = f.read()\n    return parse(data)\n\n\ndef main(argv):\n    cfg = ";
static const char *SUFFIX = "\n    run(cfg)\n    return 0\n";
/* another document's job, run between slices */
static const char *OTHER = "#include <stdio.h>\n\nint main(void)\n{\n\tprintf(";

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

static void same_candidates(int *test_failed_, const struct engine_result *a,
                            const struct engine_result *b)
{
	CHECK_INT_EQ(a->n_candidates, b->n_candidates);
	for (int32_t i = 0; i < a->n_candidates && i < b->n_candidates; i++) {
		const struct engine_candidate *x = &a->candidates[i], *y = &b->candidates[i];
		CHECK_STR_EQ(x->text, y->text);
		CHECK_INT_EQ(x->n_tokens, y->n_tokens);
		CHECK_INT_EQ(x->stop, y->stop);
		CHECK(x->sum_logprob == y->sum_logprob); /* bit for bit */
	}
}

/* Whether b's texts begin a's (a paused answer shows a prefix). */
static bool texts_begin(const struct engine_result *whole, const struct engine_result *part)
{
	for (int32_t i = 0; i < part->n_candidates; i++)
		if (strncmp(whole->candidates[i].text, part->candidates[i].text,
		            part->candidates[i].len))
			return false;
	return true;
}

/* Sets the flag it points at after `at` decode steps of the call. */
struct cancel_at {
	atomic_int *flag;
	int32_t at, steps;
};

static void cancel_after(void *ud, int32_t prefilled, int32_t step)
{
	(void)prefilled, (void)step;
	struct cancel_at *c = ud;
	if (++c->steps == c->at) atomic_store(c->flag, 1);
}

/*
 * One model: the whole decode, then the same request paused after `first`
 * steps and continued in slices of `slice` steps with another job between
 * slices (and a cancelled slice among them), compared.
 */
static void slices_equal_one_decode(int *test_failed_, struct model *m, int n_cand, int32_t first,
                                    int32_t slice)
{
	struct kv_pool *pool = model_kv_pool(m);
	int32_t free0 = kv_pool_free_pages(pool);
	struct infill_error err;
	struct engine *e = engine_new(m, NULL, &err);
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, n_cand, 40);
	struct engine_result whole, part, more, other;
	REQUIRE(engine_run(e, &rq, &whole, &err) == 0);
	int32_t longest = 0;
	for (int32_t i = 0; i < whole.n_candidates; i++)
		if (whole.candidates[i].n_tokens > longest) longest = whole.candidates[i].n_tokens;
	/* the comparison means something only when the decode was long */
	CHECK(longest > first + 2 * slice);

	struct engine_live *lv = (struct engine_live *)1; /* engine_run must set it */
	rq.live = &lv;
	rq.max_steps = first;
	REQUIRE(engine_run(e, &rq, &part, &err) == 0);
	REQUIRE(lv != NULL);
	CHECK(!engine_live_done(lv));
	CHECK(texts_begin(&whole, &part));
	bool paused_one = false;
	for (int32_t i = 0; i < part.n_candidates; i++)
		paused_one |= part.candidates[i].stop == ENGINE_STOP_DEADLINE;
	CHECK(paused_one);
	engine_result_finish(&part);

	struct engine_request oq = request(OTHER, 2, 12);
	struct engine_request cq = request(PREFIX, n_cand, 40);
	cq.prefix = cq.suffix = NULL; /* not read */
	cq.prefix_len = cq.suffix_len = 0;
	cq.max_steps = slice;
	atomic_int cancel = 0;
	int slices = 0, yields = 0;
	memset(&more, 0, sizeof more);
	while (!engine_live_done(lv) && slices < 200) {
		engine_result_finish(&more);
		REQUIRE(engine_run(e, &oq, &other, &err) == 0); /* another job between */
		engine_result_finish(&other);
		struct cancel_at ca = { &cancel, 2, 0 };
		if (slices == 2) { /* this slice yields after its second step */
			cq.cancel = &cancel;
			cq.on_progress = cancel_after;
			cq.progress_ud = &ca;
		}
		int rc = engine_live_continue(e, lv, &cq, &more, &err);
		if (slices == 2) {
			CHECK_INT_EQ(rc, ENGINE_ECANCELED);
			CHECK(more.cancelled);
			CHECK(!engine_live_done(lv));
			yields++;
			atomic_store(&cancel, 0);
			cq.cancel = NULL;
			cq.on_progress = NULL;
		} else {
			CHECK_INT_EQ(rc, 0);
		}
		CHECK(texts_begin(&whole, &more));
		slices++;
	}
	CHECK(engine_live_done(lv));
	CHECK(slices >= 3);
	CHECK_INT_EQ(yields, 1);
	same_candidates(test_failed_, &whole, &more);
	int32_t gen = 0;
	for (int32_t i = 0; i < whole.n_candidates; i++) gen += whole.candidates[i].n_tokens;
	CHECK_INT_EQ(engine_live_generated(lv), gen); /* nothing decoded twice */
	/* a finished one gives the same again, and decodes nothing */
	engine_result_finish(&more);
	CHECK_INT_EQ(engine_live_continue(e, lv, &cq, &more, &err), 0);
	CHECK_INT_EQ(more.generated_tokens, 0);
	same_candidates(test_failed_, &whole, &more);
	engine_result_finish(&more);
	engine_result_finish(&whole);
	engine_live_free(lv);
	engine_free(e);
	CHECK_INT_EQ(kv_pool_free_pages(pool), free0);
}

TEST(live_slices_equal_one_decode_f32)
{
	struct model *m = load_tiny("tiny-dsc-f32.gguf");
	if (!m) return;
	slices_equal_one_decode(test_failed_, m, 1, 3, 5);
	slices_equal_one_decode(test_failed_, m, 3, 1, 4);
	model_free(m);
}

TEST(live_slices_equal_one_decode_q8_0)
{
	struct model *m = load_tiny("tiny-dsc-q8_0.gguf");
	if (!m) return;
	slices_equal_one_decode(test_failed_, m, 3, 2, 6);
	model_free(m);
}

/* The trained model ends its candidates itself (end of text, line limits):
 * the continuation reaches the same natural end. */
TEST(live_reaches_the_natural_end_default_model)
{
	const char *path = getenv("INFILL_DEFAULT_MODEL");
	struct model *m = load_path(path ? path : "models/infill-default.gguf");
	if (!m) return;
	struct infill_error err;
	struct engine *e = engine_new(m, NULL, &err);
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, 2, 48);
	rq.max_lines = 3;
	struct engine_result whole, part, more;
	REQUIRE(engine_run(e, &rq, &whole, &err) == 0);
	struct engine_live *lv = NULL;
	rq.live = &lv;
	rq.max_steps = 2;
	REQUIRE(engine_run(e, &rq, &part, &err) == 0);
	engine_result_finish(&part);
	if (whole.candidates[0].n_tokens > 3) REQUIRE(lv != NULL);
	rq.live = NULL;
	rq.max_steps = 3;
	int rc = 0;
	memset(&more, 0, sizeof more);
	while (lv && !engine_live_done(lv) && !rc) {
		engine_result_finish(&more);
		rc = engine_live_continue(e, lv, &rq, &more, &err);
	}
	CHECK_INT_EQ(rc, 0);
	if (lv) same_candidates(test_failed_, &whole, &more);
	for (int32_t i = 0; lv && i < more.n_candidates; i++)
		CHECK(more.candidates[i].stop != ENGINE_STOP_DEADLINE);
	engine_result_finish(&more);
	engine_result_finish(&whole);
	engine_live_free(lv);
	engine_free(e);
	model_free(m);
}

/* Nothing paused: no live object; a deadline that pauses: one. */
TEST(live_only_when_paused)
{
	struct model *m = load_tiny("tiny-dsc-f32.gguf");
	if (!m) return;
	struct infill_error err;
	struct engine *e = engine_new(m, NULL, &err);
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, 1, 6);
	struct engine_live *lv = (struct engine_live *)1;
	rq.live = &lv;
	struct engine_result r;
	REQUIRE(engine_run(e, &rq, &r, &err) == 0);
	CHECK(lv == NULL); /* it ran to max_tokens */
	engine_result_finish(&r);
	/* a cancelled job keeps nothing either */
	atomic_int cancel = 1;
	rq.cancel = &cancel;
	rq.max_tokens = 30;
	lv = (struct engine_live *)1;
	CHECK_INT_EQ(engine_run(e, &rq, &r, &err), ENGINE_ECANCELED);
	CHECK(lv == NULL);
	engine_result_finish(&r);
	/* a deadline already past: one token from the prompt's row, then paused */
	rq.cancel = NULL;
	rq.deadline_ms = engine_now_ms() - 1;
	REQUIRE(engine_run(e, &rq, &r, &err) == 0);
	CHECK(lv != NULL);
	CHECK_INT_EQ(r.candidates[0].n_tokens, 1);
	CHECK(!engine_live_done(lv));
	engine_result_finish(&r);
	engine_live_free(lv);
	engine_live_free(NULL);
	CHECK(engine_live_done(NULL));
	engine_free(e);
	model_free(m);
}

TEST_MAIN()
