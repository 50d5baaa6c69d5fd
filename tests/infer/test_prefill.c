/*
 * test_prefill.c - the prefill side of answering within the deadline, on the tiny random-weight
 * F32 model: what a cancelled prefill computed stays cached with exact
 * logits; background prefill (engine_prefill) is pre-empted within one chunk
 * and what it computed serves the next request; the prefill budget cuts the
 * suffix when that is enough, else answers from the short context, within
 * the tokens the deadline allows (judged on the engine's decisions and
 * counters with an assumed prefill rate, never on wall time); the suffix
 * order chosen per family, and typing in SPM order re-prefills no suffix.
 */
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include "engine_internal.h"
#include "harness.h"
#include "infer.h"

static struct model *load(void)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/models/tiny-dsc-f32.gguf", testdata());
	if (access(path, R_OK) != 0) {
		printf("SKIP: %s missing\n", path);
		return NULL;
	}
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

/* About 150 tokens of Python, so that prompts span several chunks. */
static const char *PREFIX =
        "import os\nimport sys\n\n\ndef read_config(path):\n    with open(path) as f:\n"
        "        data = f.read()\n    return parse(data)\n\n\ndef parse(text):\n"
        "    out = {}\n    for line in text.splitlines():\n        key, _, value = "
        "line.partition('=')\n        out[key.strip()] = value.strip()\n    return out\n\n\n"
        "def main(argv):\n    cfg = ";
/* Short lines, so a cut keeps some of them. */
static const char *SUFFIX = "\n    run(cfg)\n    log(cfg)\n    save(cfg)\n    check(cfg)\n"
                            "    report(cfg)\n    return 0\n\n\nif __name__ == '__main__':\n"
                            "    sys.exit(main(sys.argv))\n";

static struct engine_request request(const char *prefix, const char *suffix)
{
	struct engine_request rq = engine_request_default();
	rq.prefix = prefix;
	rq.prefix_len = strlen(prefix);
	rq.suffix = suffix;
	rq.suffix_len = strlen(suffix);
	rq.n_candidates = 1;
	rq.max_tokens = 8;
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

struct cancel_after {
	atomic_int flag;
	int32_t prefilled; /* set the flag once this many prompt tokens are done */
	int calls;
};

static void on_progress(void *ud, int32_t prefilled, int32_t step)
{
	struct cancel_after *c = ud;
	c->calls++;
	if (step < 0 && prefilled >= c->prefilled) atomic_store(&c->flag, 1);
}

TEST(cancelled_prefill_stays_cached_with_exact_logits)
{
	struct model *m = load();
	if (!m) return;
	struct engine_params ep = engine_params_default();
	ep.prefill_chunk = 16;
	struct engine *e = engine_new(m, &ep, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, SUFFIX);
	struct cancel_after ca = { .prefilled = 32 };
	atomic_init(&ca.flag, 0);
	rq.cancel = &ca.flag;
	rq.on_progress = on_progress;
	rq.progress_ud = &ca;
	struct engine_result r, cached, fresh;
	CHECK_INT_EQ(run(e, &rq, &r), ENGINE_ECANCELED);
	CHECK_INT_EQ(r.prefilled_tokens, 32); /* two chunks, then the flag was seen */
	engine_result_finish(&r);
	rq.cancel = NULL;
	rq.on_progress = NULL;
	REQUIRE(run(e, &rq, &cached) == 0);
	CHECK_INT_EQ(cached.cached_tokens, 32); /* what the cancelled job computed */
	CHECK_INT_EQ(cached.prefilled_tokens, cached.prompt_tokens - 32);
	rq.use_cache = false;
	REQUIRE(run(e, &rq, &fresh) == 0);
	CHECK_INT_EQ(fresh.cached_tokens, 0);
	/* same chunk boundaries from 0, so the same numbers: exact */
	CHECK_STR_EQ(cached.candidates[0].text, fresh.candidates[0].text);
	CHECK_NEAR(cached.candidates[0].sum_logprob, fresh.candidates[0].sum_logprob, 1e-5);
	struct engine_stats st;
	engine_get_stats(e, &st);
	CHECK_INT_EQ(st.prefilled_tokens,
	             32 + (uint64_t)cached.prefilled_tokens + (uint64_t)fresh.prefilled_tokens);
	engine_result_finish(&cached);
	engine_result_finish(&fresh);
	engine_free(e);
	model_free(m);
}

TEST(background_prefill_is_preempted_within_one_chunk)
{
	struct model *m = load();
	if (!m) return;
	int32_t free0 = kv_pool_free_pages(model_kv_pool(m));
	struct engine_params ep = engine_params_default();
	ep.background_chunk = 16;
	struct engine *e = engine_new(m, &ep, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct infill_error err;
	/* a request arrives (the flag is set) while the first chunk runs */
	struct engine_request rq = request(PREFIX, SUFFIX);
	struct cancel_after ca = { .prefilled = 1 };
	atomic_init(&ca.flag, 0);
	rq.cancel = &ca.flag;
	rq.on_progress = on_progress;
	rq.progress_ud = &ca;
	struct engine_result bg, r;
	CHECK_INT_EQ(engine_prefill(e, &rq, &bg, &err), ENGINE_ECANCELED);
	CHECK(bg.cancelled);
	CHECK_INT_EQ(ca.calls, 1); /* one chunk, no more */
	CHECK_INT_EQ(bg.prefilled_tokens, 16);
	engine_result_finish(&bg);
	/* the request finds the chunk in the cache */
	rq.cancel = NULL;
	rq.on_progress = NULL;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.cached_tokens, 16);
	engine_result_finish(&r);
	/* left alone, it prefills all but the last token; the request then
	 * computes that one only */
	struct engine_request other = request("def other(x):\n    return x + 1\n\n\ny = ", SUFFIX);
	REQUIRE(engine_prefill(e, &other, &bg, &err) == 0);
	CHECK(bg.cached_tokens <= 3); /* the template's head at most */
	CHECK_INT_EQ(bg.prefilled_tokens, bg.prompt_tokens - 1 - bg.cached_tokens);
	int32_t bg_tokens = bg.prefilled_tokens;
	engine_result_finish(&bg);
	REQUIRE(run(e, &other, &r) == 0);
	CHECK_INT_EQ(r.cached_tokens, r.prompt_tokens - 1);
	CHECK_INT_EQ(r.prefilled_tokens, 1);
	engine_result_finish(&r);
	struct engine_stats st;
	engine_get_stats(e, &st);
	CHECK_INT_EQ(st.background_tokens, 16 + bg_tokens);
	/* nothing to do: no forward at all */
	struct cancel_after none = { .prefilled = 1000 };
	atomic_init(&none.flag, 0);
	other.on_progress = on_progress;
	other.progress_ud = &none;
	REQUIRE(engine_prefill(e, &other, &bg, &err) == 0);
	CHECK_INT_EQ(bg.prefilled_tokens, 0);
	CHECK_INT_EQ(none.calls, 0);
	engine_result_finish(&bg);
	engine_cache_clear(e);
	CHECK_INT_EQ(kv_pool_free_pages(model_kv_pool(m)), free0);
	engine_free(e);
	model_free(m);
}

TEST(prefill_budget_cuts_the_suffix_or_answers_from_the_short_context)
{
	struct model *m = load();
	if (!m) return;
	struct engine_params ep = engine_params_default();
	ep.prefill_tokens_per_s = 100; /* assumed: 0.1 token per ms */
	ep.decode_reserve_steps = 0;
	struct engine *e = engine_new(m, &ep, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, SUFFIX);
	struct engine_result r;
	REQUIRE(run(e, &rq, &r) == 0); /* no deadline: the budget is off */
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_OFF);
	int32_t full_suffix = r.prompt_tokens;
	engine_result_finish(&r);

	/* a key typed: the prefix is cached, the suffix (~60 tokens) is not;
	 * 150 ms allow 15 tokens: the suffix is cut, the prefix kept */
	char *typed = malloc(strlen(PREFIX) + 2);
	REQUIRE(typed != NULL);
	sprintf(typed, "%sx", PREFIX);
	rq = request(typed, SUFFIX);
	rq.fit_deadline = true;
	rq.deadline_ms = engine_now_ms() + 150;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_SUFFIX);
	CHECK(r.full_uncached > 15);
	CHECK(r.prefilled_tokens <= 15);
	CHECK(r.prompt_tokens < full_suffix);
	CHECK(r.cached_tokens > 100); /* the prefix stayed a cache hit */
	CHECK(r.n_candidates == 1 && r.candidates[0].n_tokens >= 1);
	engine_result_finish(&r);

	/* a jump to an uncached place: the short context answers, within the
	 * 30 tokens that 300 ms allow */
	static const char *far =
	        "class Store:\n    def __init__(self, root):\n        self.root = root\n"
	        "        self.items = {}\n        self.dirty = False\n\n    def get(self, key):\n"
	        "        return self.items.get(key)\n\n    def put(self, key, value):\n"
	        "        self.items[key] = value\n        self.dirty = ";
	static const char *near = "        self.items[key] = value\n        self.dirty = ";
	rq = request(far, "\n\n    def flush(self):\n        pass\n");
	rq.fit_deadline = true;
	rq.short_prefix = near;
	rq.short_prefix_len = strlen(near);
	rq.short_suffix = "\n";
	rq.short_suffix_len = 1;
	rq.deadline_ms = engine_now_ms() + 300;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_SHORT);
	CHECK(r.full_uncached > 30);
	CHECK(r.prompt_tokens - r.cached_tokens <= 30);
	CHECK(r.prefilled_tokens <= 30);
	CHECK(r.n_candidates == 1 && r.candidates[0].n_tokens >= 1);
	engine_result_finish(&r);

	/* too little time even for that: the short context's front is trimmed */
	rq.deadline_ms = engine_now_ms() + 120;
	rq.short_prefix = far; /* long: must be trimmed to fit */
	rq.short_prefix_len = strlen(far);
	char *moved = malloc(strlen(PREFIX) + 32);
	REQUIRE(moved != NULL);
	sprintf(moved, "# another file\n%s", PREFIX); /* nothing of it cached */
	rq.prefix = moved;
	rq.prefix_len = strlen(moved);
	rq.suffix = SUFFIX;
	rq.suffix_len = strlen(SUFFIX);
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_SHORT);
	/* the floor (32 prefix tokens, front cut in 32-token steps), markers;
	 * the cut may land where the short context before it is cached */
	CHECK(r.prompt_tokens >= 32);
	CHECK(r.prompt_tokens - r.cached_tokens <= 32 + 31 + 4);
	int32_t cut_len = r.prompt_tokens;
	engine_result_finish(&r);
	/* a key typed at its end, with time left for 80 tokens (the uncut
	 * short context is ~85): the same cut start as before, which is
	 * cached, not a cut sized from the time left (~7 tokens off the
	 * front), which would be computed anew */
	char *far_typed = malloc(strlen(far) + 2);
	REQUIRE(far_typed != NULL);
	sprintf(far_typed, "%sT", far);
	rq.short_prefix = far_typed;
	rq.short_prefix_len = strlen(far_typed);
	rq.deadline_ms = engine_now_ms() + 800;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_SHORT);
	CHECK(r.prompt_tokens <= cut_len + 2);
	CHECK(r.cached_tokens >= cut_len - 4);
	engine_result_finish(&r);
	free(far_typed);
	free(moved);

	/* a cached full context with no suffix: a key leaves a token or three
	 * to compute, fewer than any short context would, so the full prompt
	 * runs (late) rather than a short one computed anew */
	char *nosuf = malloc(strlen(PREFIX) + 2);
	REQUIRE(nosuf != NULL);
	sprintf(nosuf, "%sq", PREFIX);
	rq = request(PREFIX, "");
	REQUIRE(run(e, &rq, &r) == 0);
	engine_result_finish(&r);
	rq = request(nosuf, "");
	rq.fit_deadline = true;
	rq.short_prefix = near;
	rq.short_prefix_len = strlen(near);
	rq.deadline_ms = engine_now_ms() - 1; /* no time: any token is over */
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_LATE);
	CHECK(r.prompt_tokens > 100);
	CHECK(r.prompt_tokens - r.cached_tokens <= 4);
	engine_result_finish(&r);
	free(nosuf);

	/* nothing shorter given: the full prompt, marked late */
	rq = request("def late(q):\n    return q * 2 + q * 3 + q * 4 + q * 5\n\n\nw = ", SUFFIX);
	rq.fit_deadline = true;
	rq.deadline_ms = engine_now_ms() + 50;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_LATE);
	engine_result_finish(&r);
	struct engine_stats st;
	engine_get_stats(e, &st);
	CHECK_INT_EQ(st.budget_suffix, 1);
	CHECK_INT_EQ(st.budget_short, 3);
	CHECK_INT_EQ(st.budget_late, 2);
	CHECK_NEAR(st.prefill_tokens_per_s, 100, 1e-9);
	free(typed);
	engine_free(e);

	/* measured rate: unknown before the first prefill, so the budget is off */
	e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	rq = request(PREFIX, SUFFIX);
	rq.fit_deadline = true;
	rq.deadline_ms = engine_now_ms() + 100000;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_OFF);
	engine_get_stats(e, &st);
	CHECK(st.prefill_tokens_per_s > 0);
	if (r.candidates[0].n_tokens > 1) CHECK(st.decode_step_ms > 0);
	engine_result_finish(&r);
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_FITS);
	engine_result_finish(&r);
	engine_free(e);
	model_free(m);
}

TEST(calibrated_budget_holds_from_the_first_job)
{
	struct model *m = load();
	if (!m) return;
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	int32_t free0 = kv_pool_free_pages(model_kv_pool(m));
	struct infill_error err = { 0 };
	REQUIRE(engine_calibrate(e, &err) == 0);
	struct engine_stats st;
	engine_get_stats(e, &st);
	CHECK(st.prefill_tokens_per_s > 0);
	CHECK(st.decode_step_ms > 0);
	CHECK_INT_EQ(st.jobs, 0); /* not a job: the counts users see stay clean */
	CHECK_INT_EQ(kv_pool_free_pages(model_kv_pool(m)), free0);
	/* the first job knows its rate: a deadline already past cannot be
	 * met, and with a short context given it answers from that */
	static const char *near = "        self.dirty = ";
	struct engine_request rq = request(PREFIX, SUFFIX);
	rq.fit_deadline = true;
	rq.short_prefix = near;
	rq.short_prefix_len = strlen(near);
	rq.deadline_ms = engine_now_ms() - 1;
	struct engine_result r;
	REQUIRE(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.budget, ENGINE_BUDGET_SHORT);
	CHECK(r.prompt_tokens < 40);
	engine_result_finish(&r);
	engine_free(e);
	model_free(m);
}

TEST(suffix_order_per_family)
{
	CHECK_INT_EQ(fim_order_for(FIM_TEMPLATE_STARCODER), FIM_ORDER_SPM);
	CHECK_INT_EQ(fim_order_for(FIM_TEMPLATE_CODELLAMA), FIM_ORDER_SPM);
	CHECK_INT_EQ(fim_order_for(FIM_TEMPLATE_DEEPSEEK), FIM_ORDER_PSM);
	CHECK_INT_EQ(fim_order_for(FIM_TEMPLATE_QWEN), FIM_ORDER_PSM);
	CHECK_INT_EQ(fim_order_for(FIM_TEMPLATE_CUSTOM), FIM_ORDER_PSM);
	enum fim_order o;
	CHECK(fim_order_parse("spm", &o) == 0 && o == FIM_ORDER_SPM);
	CHECK(fim_order_parse("", &o) == 0 && o == FIM_ORDER_AUTO);
	CHECK(fim_order_parse("sideways", &o) < 0);
	CHECK_STR_EQ(fim_order_name(FIM_ORDER_PSM), "psm");

	struct model *m = load();
	if (!m) return;
	const struct tokenizer_special *sp = tokenizer_special(model_tokenizer(m));
	struct engine *e = engine_new(m, NULL, &(struct infill_error){ 0 });
	REQUIRE(e != NULL);
	struct engine_request rq = request(PREFIX, SUFFIX);
	rq.order = FIM_ORDER_SPM;
	int32_t tok[512];
	struct infill_error err;
	int n = engine_prompt_tokens(e, &rq, tok, 512, NULL, &err);
	REQUIRE(n > 10 && n < 512);
	/* [BOS] <begin> <hole> suffix <end> prefix */
	int at = tok[0] == sp->fim_prefix ? 0 : 1;
	CHECK_INT_EQ(tok[at], sp->fim_prefix);
	CHECK_INT_EQ(tok[at + 1], sp->fim_suffix);
	int mid = -1;
	for (int i = at + 2; i < n; i++)
		if (tok[i] == sp->fim_middle) mid = i;
	CHECK(mid > at + 10); /* after the suffix */
	CHECK(n - mid > 100); /* the prefix follows it */
	CHECK(tok[n - 1] != sp->fim_middle);

	/* typing in SPM order re-uses all but the prefix's last tokens; in PSM
	 * the whole suffix is prefilled again */
	struct engine_result r;
	char *typed = malloc(strlen(PREFIX) + 2);
	REQUIRE(typed != NULL);
	sprintf(typed, "%sx", PREFIX);
	enum fim_order orders[2] = { FIM_ORDER_SPM, FIM_ORDER_PSM };
	int32_t refilled[2];
	for (int k = 0; k < 2; k++) {
		engine_cache_clear(e);
		rq = request(PREFIX, SUFFIX);
		rq.order = orders[k];
		REQUIRE(run(e, &rq, &r) == 0);
		engine_result_finish(&r);
		rq.prefix = typed;
		rq.prefix_len = strlen(typed);
		REQUIRE(run(e, &rq, &r) == 0);
		refilled[k] = r.prefilled_tokens;
		engine_result_finish(&r);
	}
	CHECK(refilled[0] <= 3);
	CHECK(refilled[1] > 40);
	free(typed);
	engine_free(e);
	model_free(m);
}

TEST_MAIN()
