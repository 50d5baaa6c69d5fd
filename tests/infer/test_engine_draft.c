/*
 * test_engine_draft.c - speculative decoding with a draft model
 * (engine_set_draft, engine_request.draft).
 *
 * The pairs are written by `infill mkmodel` (draft_pair.py runs this test
 * with INFILL_DRAFT_DIR holding them): a 2-layer Q8_0 draft and 6-layer
 * targets whose further layers perturb it by 0 ("same"), 0.05 ("near": ~90%
 * greedy agreement), 0.2 ("mid": ~50%) and 3 ("far": none), tiny shape,
 * DeepSeek-Coder vocabulary.
 *
 *  - greedy candidates give the text of plain decoding, bit for bit: the
 *    same text, tokens, stop and the same sum of log-probabilities (Q8_0
 *    is a packed type: a row's logits in a step with drafts are the bits of
 *    a step alone), with and without prompt lookup beside the draft, and
 *    drafts were made and kept (the path is taken);
 *  - sampled candidates keep the model's law: sampler_spec_take against
 *    the exact law on made-up p and q, then the engine's sampled texts with
 *    the draft against the plain sampler's, by a two-sample chi-square test
 *    at a 0.1% false-alarm rate; the same test must tell the draft's own law
 *    from the target's (so a rule that took the draft's tokens would fail);
 *  - a job whose deadline leaves no time for the draft's prompt decodes
 *    without drafts; a background prefill fills the draft's cache too; its
 *    live candidate takes the draft as it grows, its text unchanged;
 *  - a pair of different vocabularies is refused with one message (its key
 *    completion.draftModel), and decoding goes on without a draft; so is a
 *    draft that reads as many weight bytes a token as the model or more; a
 *    model whose vocabulary ends in padding the draft's lacks is not (its
 *    greedy text and sampled law are checked as above);
 *  - mkmodel's pairs agree as dialled: perturbation 0 agrees on every greedy
 *    token, 0.05 on most, 0.2 on fewer, 3 on fewer still.
 */
#include <errno.h>
#include <math.h>
#include <unistd.h>

#include "engine_internal.h"
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
	mp.kv_bytes = 16u << 20;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) fprintf(stderr, "model_load %s: %s\n", path, err.message);
	return m;
}

static struct model *load_pair(const char *name)
{
	const char *dir = getenv("INFILL_DRAFT_DIR");
	if (!dir) {
		printf("SKIP: INFILL_DRAFT_DIR unset (run through draft_pair.py)\n");
		return NULL;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return load_path(path);
}

static const char *const PREFIXES[] = {
	"import os\nimport sys\n\n\ndef read_config(path):\n    with open(path) as f:\n"
	"        data = f.read()\n    return parse(data)\n\n\ndef main(argv):\n    cfg = ",
	"class Point:\n    def __init__(self, x, y, z):\n        self.x = x\n"
	"        self.y = y\n        self.z = z\n\n\nclass Size:\n"
	"    def __init__(self, x, y, z):\n        self.x = x\n        self.y = y\n"
	"        self.z = z\n\n\nclass Box:\n    def __init__(self, x, y, z):\n        self.",
	"static const struct op ops[] = {\n    { \"add\", op_add, 2 },\n"
	"    { \"sub\", op_sub, 2 },\n    { \"mul\", op_mul, 2 },\n    { \"",
};

static struct engine_request request(const char *prefix, int n, int max_tokens)
{
	struct engine_request rq = engine_request_default();
	rq.prefix = prefix;
	rq.prefix_len = strlen(prefix);
	rq.suffix = "\n\nreturn 0\n";
	rq.suffix_len = strlen(rq.suffix);
	rq.n_candidates = n;
	rq.max_tokens = max_tokens;
	rq.max_lines = 0;
	rq.use_cache = false;
	return rq;
}

static int run(struct engine *e, const struct engine_request *rq, struct engine_result *res)
{
	struct infill_error err;
	int rc = engine_run(e, rq, res, &err);
	if (rc) fprintf(stderr, "engine_run: %d %s\n", rc, err.message);
	return rc;
}

/* A target of the pair folder twice, each engine with its own cache: plain,
 * and with the draft attached (spec). */
struct twins {
	struct model *t, *d;
	struct engine *plain, *spec;
};

static void twins_close(struct twins *w)
{
	engine_free(w->plain);
	engine_free(w->spec);
	model_free(w->t);
	model_free(w->d);
	memset(w, 0, sizeof *w);
}

/* Opens w (engine params ep, NULL: the defaults). False where the pair is
 * missing (a skip) or a step failed (a failed check); w is then closed. */
static bool twins_open(int *test_failed_, struct twins *w, const char *target,
                       const struct engine_params *ep)
{
	memset(w, 0, sizeof *w);
	w->t = load_pair(target), w->d = load_pair("draft.gguf");
	struct infill_error err;
	if (w->t && w->d) {
		w->plain = engine_new(w->t, ep, &err), w->spec = engine_new(w->t, ep, &err);
		CHECK(w->plain && w->spec && engine_set_draft(w->spec, w->d, &err) == 0);
	}
	bool ok = w->t && w->d && !*test_failed_;
	if (!ok) twins_close(w);
	return ok;
}

/* Greedy (candidate 0) with the draft against without, each prompt, with
 * lookup or not on the drafted side. */
static void greedy_equal(int *test_failed_, const char *target, bool lookup, int n_cand)
{
	struct twins w;
	if (!twins_open(test_failed_, &w, target, NULL)) return;
	struct engine *plain = w.plain, *spec = w.spec;
	int64_t drafted = 0, kept = 0;
	for (size_t p = 0; p < sizeof PREFIXES / sizeof PREFIXES[0]; p++) {
		struct engine_request rq = request(PREFIXES[p], n_cand, 40);
		rq.temperature = 0.8f;
		struct engine_result a, b;
		REQUIRE(run(plain, &rq, &a) == 0);
		rq.prompt_lookup = lookup;
		REQUIRE(run(spec, &rq, &b) == 0);
		CHECK_INT_EQ(a.model_draft_tokens, 0);
		CHECK_STR_EQ(a.candidates[0].text, b.candidates[0].text);
		CHECK_INT_EQ(a.candidates[0].n_tokens, b.candidates[0].n_tokens);
		CHECK_INT_EQ(a.candidates[0].stop, b.candidates[0].stop);
		/* bit for bit: the same float sums of the same bits */
		CHECK(a.candidates[0].sum_logprob == b.candidates[0].sum_logprob);
		CHECK(b.decode_steps <= a.decode_steps);
		CHECK(b.accepted_model_draft_tokens <= b.model_draft_tokens);
		drafted += b.model_draft_tokens;
		kept += b.accepted_model_draft_tokens;
		if (getenv("ENGINE_TEST_VERBOSE"))
			printf("%s lookup=%d prompt %zu: steps %d vs %d, model drafts %d kept %d, "
			       "lookup drafts %d kept %d\n",
			       target, lookup, p, a.decode_steps, b.decode_steps,
			       b.model_draft_tokens, b.accepted_model_draft_tokens, b.draft_tokens,
			       b.accepted_draft_tokens);
		engine_result_finish(&a);
		engine_result_finish(&b);
	}
	CHECK(drafted > 0);
	CHECK(kept > 0);
	twins_close(&w);
}

TEST(greedy_with_a_draft_is_plain_greedy_bit_for_bit)
{
	greedy_equal(test_failed_, "target-near.gguf", false, 1);
	greedy_equal(test_failed_, "target-mid.gguf", false, 1);
}

/* A model whose vocabulary ends in padding the draft's lacks (Qwen2.5-Coder
 * 7B's 152064 rows against its 0.5B's 151936): the pair is taken, greedy
 * stays plain greedy and drafts are kept; the sampled candidates' draft law
 * is over the model's tokens (0 on the padding). */
TEST(a_draft_without_the_models_padding_drafts_for_it)
{
	greedy_equal(test_failed_, "target-near-padded.gguf", false, 3);
}

TEST(greedy_with_lookup_and_a_draft_is_plain_greedy)
{
	greedy_equal(test_failed_, "target-near.gguf", true, 1);
	greedy_equal(test_failed_, "target-mid.gguf", true, 3);
}

/* ---- sampled candidates keep the law ---- */

/* A job whose deadline leaves no time for the draft model's prompt decodes
 * without drafts, as plain decoding does; a background prefill
 * (engine_prefill) fills the draft's cache too, so the next job there may
 * draft with nothing of its prompt left to compute. */
TEST(the_drafts_prefill_waits_for_the_background_where_the_deadline_is_close)
{
	struct twins w;
	if (!twins_open(test_failed_, &w, "target-near.gguf", NULL)) return;
	struct engine *plain = w.plain, *spec = w.spec;
	struct infill_error err;
	/* long prompts: the draft learns its prefill rate from 64 rows or more */
	char a_text[4096], b_text[4096];
	snprintf(a_text, sizeof a_text, "%s%s%s", PREFIXES[2], PREFIXES[1], PREFIXES[0]);
	snprintf(b_text, sizeof b_text, "%s%s%s", PREFIXES[0], PREFIXES[2], PREFIXES[1]);
	struct engine_request ra = request(a_text, 1, 8);
	ra.use_cache = true;
	struct engine_result r;
	REQUIRE(run(spec, &ra, &r) == 0);
	CHECK(r.draft_prefilled_tokens >= 64);
	engine_result_finish(&r);

	/* a deadline already passed: the draft's prefill cannot pay */
	struct engine_request rb = request(b_text, 1, 8);
	rb.use_cache = true;
	rb.deadline_ms = engine_now_ms();
	struct engine_result p, q;
	REQUIRE(run(plain, &rb, &p) == 0);
	REQUIRE(run(spec, &rb, &q) == 0);
	CHECK_INT_EQ(q.draft_prefilled_tokens, 0);
	CHECK_INT_EQ(q.model_draft_tokens, 0);
	CHECK_STR_EQ(p.candidates[0].text, q.candidates[0].text);
	engine_result_finish(&p);
	engine_result_finish(&q);

	/* in the background the draft's cache takes the prompt as well */
	rb.deadline_ms = 0;
	REQUIRE(engine_prefill(spec, &rb, &q, &err) == 0);
	engine_result_finish(&q);
	rb.max_tokens = 40;
	rb.deadline_ms = engine_now_ms() + 600000;
	REQUIRE(run(plain, &rb, &p) == 0);
	REQUIRE(run(spec, &rb, &q) == 0);
	/* the job's own last token at most (without the background's part, the
	 * whole prompt: 200+ tokens); whether its steps then draft is the
	 * learned costs' choice, timed on a shared machine, so it is printed */
	CHECK(q.draft_prefilled_tokens <= 1);
	printf("after the background prefill: %d draft prefill tokens, %d drafted\n",
	       q.draft_prefilled_tokens, q.model_draft_tokens);
	CHECK_STR_EQ(p.candidates[0].text, q.candidates[0].text);
	engine_result_finish(&p);
	engine_result_finish(&q);
	twins_close(&w);
}

/* A job whose deadline left no time for the draft's prompt decodes without
 * the draft; its live candidate takes the draft as the suggestion grows
 * (the draft's prompt, then a catch-up on the tokens chosen so far), and
 * its text stays plain greedy's, token for token. */
TEST(a_live_candidate_takes_the_draft_its_job_could_not)
{
	struct twins w;
	if (!twins_open(test_failed_, &w, "target-near.gguf", NULL)) return;
	struct engine *plain = w.plain, *spec = w.spec;
	struct infill_error err;
	char text[4096];
	snprintf(text, sizeof text, "%s%s%s", PREFIXES[1], PREFIXES[0], PREFIXES[2]);
	struct engine_request rq = request(text, 1, 48);
	struct engine_result whole, part, more;
	REQUIRE(run(plain, &rq, &whole) == 0);

	struct engine_live *lv = NULL;
	rq.live = &lv;
	rq.deadline_ms = engine_now_ms() + 5; /* no time for the draft's prompt */
	REQUIRE(run(spec, &rq, &part) == 0);
	CHECK_INT_EQ(part.draft_prefilled_tokens, 0);
	CHECK_INT_EQ(part.model_draft_tokens, 0);
	REQUIRE(lv != NULL);
	int32_t before = part.candidates[0].n_tokens;
	engine_result_finish(&part);

	struct engine_request cq = request(text, 1, 48);
	int rc = engine_live_continue(spec, lv, &cq, &more, &err);
	CHECK_INT_EQ(rc, 0);
	CHECK(engine_live_done(lv));
	/* the draft's whole prompt (200+ tokens), computed as the suggestion grew */
	CHECK(more.draft_prefilled_tokens >= 64);
	printf("joined after %d tokens: %d draft prefill tokens, %d drafted, %d kept\n", before,
	       more.draft_prefilled_tokens, more.model_draft_tokens,
	       more.accepted_model_draft_tokens);
	CHECK_STR_EQ(whole.candidates[0].text, more.candidates[0].text);
	CHECK_INT_EQ(whole.candidates[0].n_tokens, more.candidates[0].n_tokens);
	engine_result_finish(&more);
	engine_result_finish(&whole);
	engine_live_free(lv);
	twins_close(&w);
}

/* Prompts too short to learn the draft's prefill rate from (a model of a
 * small context): the rule above still holds, at the target's rate times
 * the pair's weight bytes. With no rate, a cold job's first answer waited
 * for the draft's whole prompt (50-100 ms more on a replay). */
TEST(the_drafts_prefill_is_priced_before_its_rate_is_learned)
{
	struct engine_params ep = engine_params_default();
	ep.prefill_tokens_per_s = 1000; /* the target's rate, known */
	struct twins w;
	if (!twins_open(test_failed_, &w, "target-near.gguf", &ep)) return;
	struct engine *plain = w.plain, *spec = w.spec;
	struct engine_request rq = request(PREFIXES[0], 1, 8);
	rq.use_cache = true;
	rq.deadline_ms = engine_now_ms(); /* passed: no share of it is left */
	struct engine_result p, q;
	REQUIRE(run(plain, &rq, &p) == 0);
	REQUIRE(run(spec, &rq, &q) == 0);
	CHECK(q.prompt_tokens < 64);
	CHECK_INT_EQ(q.draft_prefilled_tokens, 0);
	CHECK_INT_EQ(q.model_draft_tokens, 0);
	CHECK_STR_EQ(p.candidates[0].text, q.candidates[0].text);
	engine_result_finish(&p);
	engine_result_finish(&q);
	twins_close(&w);
}

TEST(spec_take_draws_the_target_law)
{
	enum { V = 6, N = 400000 };
	/* the draft favours tokens the target does not, and misses one */
	static const float p[V] = { 0.05f, 0.4f, 0.25f, 0.1f, 0.2f, 0.0f };
	static const float q[V] = { 0.3f, 0.1f, 0.25f, 0.0f, 0.05f, 0.3f };
	struct sampler_params sp = { .temperature = 1, .top_p = 1, .repeat_penalty = 1, .seed = 7 };
	struct sampler *s = sampler_new(&sp, V);
	REQUIRE(s);
	float res[V];
	long count[V] = { 0 };
	for (int i = 0; i < N; i++) {
		int32_t d = sampler_pick(s, q);
		REQUIRE(d >= 0 && d < V);
		int32_t t = sampler_spec_take(s, p, q, d, res);
		REQUIRE(t >= 0 && t < V);
		count[t]++;
	}
	/* each frequency within 5 standard errors of p */
	for (int v = 0; v < V; v++) {
		double f = (double)count[v] / N, se = sqrt(p[v] * (1 - p[v]) / N);
		CHECK(fabs(f - p[v]) <= 5 * se + 1e-9);
	}
	sampler_free(s);
}

/* Texts of candidate 1 (sampled) over many seeds: a histogram. */
struct hist {
	char *key[2048];
	long n[2][2048];
	int k;
};

static void hist_add(struct hist *h, int side, const char *text)
{
	for (int i = 0; i < h->k; i++)
		if (!strcmp(h->key[i], text)) {
			h->n[side][i]++;
			return;
		}
	if (h->k < 2048) {
		h->key[h->k] = strdup(text);
		h->n[side][h->k++] = 1;
	}
}

/* Two-sample chi-square against its 0.1% critical value (Wilson-Hilferty);
 * cells with fewer than 10 in all are pooled. True: the samples differ. */
static bool differ(const struct hist *h, double *stat, int *df)
{
	long na = 0, nb = 0;
	for (int i = 0; i < h->k; i++) na += h->n[0][i], nb += h->n[1][i];
	double x = 0, pa = 0, pb = 0;
	int cells = 0;
	for (int i = 0; i <= h->k; i++) {
		double a = i < h->k ? h->n[0][i] : pa, b = i < h->k ? h->n[1][i] : pb;
		if (i < h->k && a + b < 10) {
			pa += a, pb += b;
			continue;
		}
		if (a + b <= 0) continue;
		double ka = sqrt((double)nb / na), kb = sqrt((double)na / nb);
		x += (ka * a - kb * b) * (ka * a - kb * b) / (a + b);
		cells++;
	}
	*stat = x, *df = cells - 1;
	double v = cells - 1, z = 3.09;
	double crit = v * pow(1 - 2 / (9 * v) + z * sqrt(2 / (9 * v)), 3);
	return x > crit;
}

enum { RUNS = 3000 };

static void sample_texts(int *test_failed_, struct engine *e, struct hist *h, int side, bool draft,
                         int64_t *refused)
{
	for (int s = 0; s < RUNS; s++) {
		/* 3 tokens of 3 each: the second and third are drafted */
		struct engine_request rq = request(PREFIXES[1], 2, 3);
		rq.temperature = 1.0f;
		rq.top_k = 3;
		rq.top_p = 1.0f;
		/* each side its own seeds: independent samples */
		rq.seed = (uint64_t)(s + side * RUNS) * 7919 + 3;
		rq.use_cache = true;
		rq.draft = draft;
		struct engine_result r;
		REQUIRE(run(e, &rq, &r) == 0);
		hist_add(h, side, r.candidates[1].text);
		*refused += r.model_draft_tokens - r.accepted_model_draft_tokens;
		engine_result_finish(&r);
	}
}

/* The sampled candidates of target (with the draft) against its plain
 * sampler's, by the chi-square test; with power, the test must also tell
 * the draft's own law from the target's. */
static void law_kept(int *test_failed_, const char *target, bool power)
{
	struct model *t = load_pair(target), *d = load_pair("draft.gguf");
	if (!t || !d) {
		model_free(t), model_free(d);
		return;
	}
	struct infill_error err;
	struct engine *e = engine_new(t, NULL, &err), *de = engine_new(d, NULL, &err);
	REQUIRE(e && de);
	REQUIRE(engine_set_draft(e, d, &err) == 0);
	struct hist h = { 0 }, own = { 0 };
	int64_t refused = 0, none = 0;
	sample_texts(test_failed_, e, &h, 0, false, &none);
	sample_texts(test_failed_, e, &h, 1, true, &refused);
	double x;
	int df;
	bool bad = differ(&h, &x, &df);
	printf("%s plain vs with draft: chi2 %.1f, df %d, %d texts\n", target, x, df, h.k);
	CHECK(!bad);
	CHECK(refused > 0); /* the residual's draws were taken */
	CHECK_INT_EQ(none, 0);
	if (power) {
		sample_texts(test_failed_, e, &own, 0, false, &none);
		sample_texts(test_failed_, de, &own, 1, false, &none);
		bool told = differ(&own, &x, &df);
		printf("target vs draft alone: chi2 %.1f, df %d\n", x, df);
		CHECK(told);
	}
	for (int i = 0; i < h.k; i++) free(h.key[i]);
	for (int i = 0; i < own.k; i++) free(own.key[i]);
	engine_free(e);
	engine_free(de);
	model_free(t);
	model_free(d);
}

TEST(sampled_candidates_keep_the_target_law)
{
	/* a pair whose laws overlap: some drafts kept, some refused */
	law_kept(test_failed_, "target-mid.gguf", true);
}

TEST(sampled_candidates_keep_the_law_of_a_model_with_padding)
{
	/* the draft's law is over the model's tokens, 0 on its padding */
	law_kept(test_failed_, "target-mid-padded.gguf", false);
}

/* ---- refused pairs ---- */

/* d refused as t's draft, its message naming completion.draftModel and
 * holding word; then t's job decodes without drafts. */
static void refused_then_plain(int *test_failed_, struct model *t, struct model *d,
                               const char *word)
{
	struct infill_error err;
	memset(&err, 0, sizeof err);
	struct engine *e = engine_new(t, NULL, &err);
	REQUIRE(e);
	CHECK_INT_EQ(engine_set_draft(e, d, &err), -EINVAL);
	CHECK_STR_EQ(err.key, "completion.draftModel");
	CHECK(strstr(err.message, word) != NULL);
	printf("refused: %s\n", err.message);
	struct engine_request rq = request(PREFIXES[0], 1, 8);
	struct engine_result r;
	CHECK(run(e, &rq, &r) == 0);
	CHECK_INT_EQ(r.model_draft_tokens, 0);
	CHECK(r.n_candidates == 1 && r.candidates[0].n_tokens > 0);
	engine_result_finish(&r);
	engine_free(e);
}

TEST(a_draft_of_another_vocabulary_is_refused_with_one_message)
{
	char tp[4096], dp[4096];
	snprintf(tp, sizeof tp, "%s/models/tiny-dsc-q8_0.gguf", testdata());
	snprintf(dp, sizeof dp, "%s/models/tiny-qwen2-q8_0.gguf", testdata());
	struct model *t = load_path(tp), *d = load_path(dp);
	if (t && d) refused_then_plain(test_failed_, t, d, "vocabulary");
	model_free(t);
	model_free(d);
}

TEST(a_draft_as_large_as_the_model_is_refused)
{
	/* the pair the other way round: the 6-layer model drafting for its own
	 * first 2 layers; and a model drafting for itself */
	struct model *small = load_pair("draft.gguf"), *big = load_pair("target-same.gguf");
	struct model *twin = load_pair("target-same.gguf");
	if (small && big && twin) {
		refused_then_plain(test_failed_, small, big, "not smaller");
		refused_then_plain(test_failed_, big, twin, "not smaller");
		/* a draft with tokens the model lacks could propose them */
		struct model *padded = load_pair("draft-padded.gguf");
		if (padded) refused_then_plain(test_failed_, big, padded, "vocabulary");
		model_free(padded);
		/* the right way round it is taken */
		struct infill_error err;
		struct engine *e = engine_new(big, NULL, &err);
		REQUIRE(e);
		CHECK_INT_EQ(engine_set_draft(e, small, &err), 0);
		engine_free(e);
	}
	model_free(small), model_free(big), model_free(twin);
}

/* ---- a draft that never agrees costs little ---- */

/* A plain step of one greedy candidate that may draft 8 tokens, with these
 * forward costs by rows. */
static struct draft_plan one_greedy_step(const double *cost)
{
	return (struct draft_plan){ .n = 1,
		                    .room = { 8 },
		                    .reach = { 1 },
		                    .budget = 7,
		                    .rows = 1,
		                    .tokens = 1,
		                    .cost = cost,
		                    .ms_per_row = 1 };
}

/* testdata's models/target and models/draft (*t, *dm: NULL where missing;
 * the caller frees both) and the draft over them (NULL where a model is
 * missing or the pair is refused). */
static struct draft *open_pair(const char *target, const char *draft, struct model **t,
                               struct model **dm)
{
	char tp[4096], dp[4096];
	snprintf(tp, sizeof tp, "%s/models/%s", testdata(), target);
	snprintf(dp, sizeof dp, "%s/models/%s", testdata(), draft);
	*t = load_path(tp), *dm = load_path(dp);
	struct infill_error err;
	return *t && *dm ? draft_new(*t, *dm, &err) : NULL;
}

/* The draft's weight bytes a step over the target's. */
static double bytes_ratio(const struct model *t, const struct model *dm)
{
	return (double)model_info(dm)->decode_read_bytes / (double)model_info(t)->decode_read_bytes;
}

TEST(a_prompt_that_does_not_fit_waits_for_the_answer_or_fills_a_share_a_slice)
{
	/* A draft prefill may take a quarter of the time left before the
	 * deadline. Where the prompt needs more, the job decodes without the
	 * draft. Before a job's first answer nothing is computed: a part would
	 * only make the answer later. A live candidate's slice (part) computes
	 * what fits and caches it: its next slice starts from there. No rate
	 * learned yet: the target's (1 ms a token) times the pair's weight
	 * bytes. */
	struct model *t, *dm;
	struct draft *d = open_pair("tiny-dsc-f32.gguf", "tiny-dsc-q8_0.gguf", &t, &dm);
	if (t && dm) REQUIRE(d);
	if (d) {
		double ratio = bytes_ratio(t, dm);
		enum { N = 63 };
		int32_t a[N], b[N], c[N];
		for (int i = 0; i < N; i++)
			a[i] = 100 + 7 * i, b[i] = 5000 + 11 * i, c[i] = 9000 + 13 * i;
		struct infill_error err;
		struct kv_seq *s = NULL;
		CHECK_INT_EQ(
		        draft_prefill(d, a, N, 1, 8, true, 20, true, 1.0, NULL, NULL, &s, &err),
		        -EAGAIN);
		CHECK(s == NULL);
		int32_t fit = (int32_t)(0.25 * 20 / ratio);
		REQUIRE(fit > 0 && fit < N);
		/* the next slice there computes only the rest */
		CHECK_INT_EQ(
		        draft_prefill(d, a, N, 1, 8, true, -1, true, 1.0, NULL, NULL, &s, &err),
		        N - fit);
		kv_seq_free(s);
		/* a job before its answer: nothing, and the whole is left to do */
		CHECK_INT_EQ(
		        draft_prefill(d, c, N, 1, 8, true, 20, false, 1.0, NULL, NULL, &s, &err),
		        -EAGAIN);
		CHECK_INT_EQ(
		        draft_prefill(d, c, N, 1, 8, true, -1, false, 1.0, NULL, NULL, &s, &err),
		        N);
		kv_seq_free(s);
		/* past the deadline nothing fits; without the cache nothing is kept */
		CHECK_INT_EQ(draft_prefill(d, b, N, 1, 8, true, 0, true, 1.0, NULL, NULL, &s, &err),
		             -EAGAIN);
		CHECK_INT_EQ(
		        draft_prefill(d, b, N, 1, 8, false, 20, true, 1.0, NULL, NULL, &s, &err),
		        -EAGAIN);
		CHECK_INT_EQ(
		        draft_prefill(d, b, N, 1, 8, true, -1, true, 1.0, NULL, NULL, &s, &err), N);
		kv_seq_free(s);
		draft_free(d);
	}
	model_free(t), model_free(dm);
}

TEST(probes_of_a_draft_that_never_agrees_back_off)
{
	/* Where drafting does not pay (here every draft misses), draft_choose
	 * drafts nothing but a one-token probe after 32 idle
	 * steps, to learn alpha again. Each probe costs the draft's catch-up
	 * over the steps since its last, so probes that miss double the wait
	 * (at most 256 steps): 2,000 steps of misses probe at most 12 times,
	 * not 62. A kept draft brings the probes back to every 32 steps. */
	struct model *t, *dm;
	struct draft *d = open_pair("tiny-dsc-f32.gguf", "tiny-dsc-q8_0.gguf", &t, &dm);
	if (t && dm) REQUIRE(d);
	if (d) {
		double cost[STEP_ROWS + 1] = { 0 };
		for (int r = 1; r <= STEP_ROWS; r++) cost[r] = 10 + 2.0 * (r - 1);
		struct draft_plan pl = one_greedy_step(cost);
		uint8_t conf[ENGINE_DRAFT_MAX] = { 0 };
		int probes = 0, last = -1, longest = 0;
		for (int step = 0; step < 2000; step++) {
			int32_t k = draft_choose(d, &pl);
			if (!k) continue;
			probes++;
			if (last >= 0 && step - last > longest) longest = step - last;
			last = step;
			draft_note(d, conf, 1, 0);
		}
		printf("probes in 2000 steps of misses: %d, the longest wait %d steps\n", probes,
		       longest);
		CHECK(probes >= 6 && probes <= 12);
		CHECK_INT_EQ(longest, 256);
		/* a kept draft: the next probe within 32 steps again */
		draft_note(d, conf, 1, 1);
		int wait = 0;
		while (wait < 300 && !draft_choose(d, &pl)) wait++;
		CHECK(wait < 32);
		draft_free(d);
	}
	model_free(t), model_free(dm);
}

TEST(a_step_that_looks_free_is_still_priced_a_row)
{
	/* A width's cost is learned only from steps of that width, so under a
	 * moving load the learned costs can say a wider step is cheaper than a
	 * plain one (here half). draft_choose still prices a wider step at
	 * least at the plain one: a draft kept 30% of the time is not drafted,
	 * one kept 90% is.
	 * The pair: a tiny model's f32 weights and its q8_0 ones, a quarter of
	 * the bytes. */
	struct model *t, *dm;
	struct draft *d = open_pair("tiny-dsc-f32.gguf", "tiny-dsc-q8_0.gguf", &t, &dm);
	if (t && dm) REQUIRE(d);
	if (d) {
		double ratio = bytes_ratio(t, dm);
		double cost[STEP_ROWS + 1] = { 0 };
		cost[1] = 10;
		for (int r = 2; r <= STEP_ROWS; r++) cost[r] = 5;
		struct draft_plan pl = one_greedy_step(cost);
		for (int i = 0; i < 200; i++) draft_note(d, NULL, 10, 3);
		double low = draft_alpha(d);
		int32_t k_low = draft_choose(d, &pl);
		for (int i = 0; i < 200; i++) draft_note(d, NULL, 10, 9);
		double high = draft_alpha(d);
		int32_t k_high = draft_choose(d, &pl);
		printf("weight ratio %.2f: alpha %.2f drafts %d, alpha %.2f drafts %d\n", ratio,
		       low, k_low, high, k_high);
		CHECK(ratio > 0.2 && ratio < 0.4);
		CHECK(low > 0.25 && low < 0.35 && high > 0.85);
		CHECK_INT_EQ(k_low, 0);
		CHECK(k_high >= 1);
		draft_free(d);
	}
	model_free(t), model_free(dm);
}

TEST(a_probe_drafts_its_token_where_a_row_looks_dear)
{
	/* The learned costs say a row of the target's step costs a whole
	 * step, so no draft pays and draft_run would cut each one; the probe
	 * after 32 idle steps still drafts its token: without it, costs
	 * learned too high would never be learned again. */
	struct model *t, *dm;
	struct draft *d = open_pair("tiny-dsc-f32.gguf", "tiny-dsc-q8_0.gguf", &t, &dm);
	if (t && dm) REQUIRE(d);
	if (d) {
		double cost[STEP_ROWS + 1] = { 0 };
		for (int r = 1; r <= STEP_ROWS; r++) cost[r] = 10.0 * r;
		struct draft_plan pl = one_greedy_step(cost);
		int32_t k = 0;
		int steps = 0;
		while (!k && steps < 300) k = draft_choose(d, &pl), steps++;
		CHECK_INT_EQ(k, 1);
		const int32_t prompt[8] = { 1, 100, 200, 300, 400, 500, 600, 700 };
		int32_t out[1] = { -1 };
		uint8_t conf[1];
		struct kv_seq *seq = kv_seq_new(model_kv_pool(dm));
		REQUIRE(seq);
		struct draft_job j = { .seq = seq,
			               .prompt = prompt,
			               .L = 8,
			               .k = 1,
			               .reach = 1,
			               .out = out,
			               .conf = conf };
		struct infill_error err;
		CHECK_INT_EQ(draft_run(d, &j, 1, &err), 0);
		printf("probe after %d steps drafted %d token(s)\n", steps, j.got);
		CHECK_INT_EQ(j.got, 1);
		CHECK(out[0] >= 0);
		kv_seq_free(seq);
		draft_free(d);
	}
	model_free(t), model_free(dm);
}

/* ---- mkmodel's pairs agree as dialled ---- */

/* Greedy agreement of d with t along t's own greedy text from a prompt. */
static double agreement(struct model *t, struct model *d)
{
	enum { N = 48 };
	int32_t nv = model_info(t)->n_vocab;
	float *lt = malloc((size_t)nv * sizeof *lt), *ld = malloc((size_t)nv * sizeof *ld);
	struct kv_seq *st = kv_seq_new(model_kv_pool(t)), *sd = kv_seq_new(model_kv_pool(d));
	struct infill_error err;
	int32_t prompt[8] = { 32013, 1000, 2000, 3000, 4000, 5000, 6000, 7000 };
	int agree = 0, n = 0;
	if (lt && ld && st && sd && !model_eval(t, st, prompt, 8, lt, &err) &&
	    !model_eval(d, sd, prompt, 8, ld, &err)) {
		for (int i = 0; i < N; i++) {
			int32_t a = sample_greedy(lt, nv), b = sample_greedy(ld, nv);
			agree += a == b, n++;
			if (model_eval(t, st, &a, 1, lt, &err) ||
			    model_eval(d, sd, &a, 1, ld, &err))
				break;
		}
	}
	kv_seq_free(st), kv_seq_free(sd);
	free(lt), free(ld);
	return n ? (double)agree / n : -1;
}

TEST(mkmodel_pairs_agree_as_dialled)
{
	struct model *d = load_pair("draft.gguf"), *t0 = load_pair("target-same.gguf"),
	             *tn = load_pair("target-near.gguf"), *tm = load_pair("target-mid.gguf"),
	             *tf = load_pair("target-far.gguf");
	if (d && t0 && tn && tm && tf) {
		double a0 = agreement(t0, d), an = agreement(tn, d), am = agreement(tm, d),
		       af = agreement(tf, d);
		printf("greedy agreement: perturb 0 %.2f, 0.05 %.2f, 0.2 %.2f, 3 %.2f\n", a0, an,
		       am, af);
		CHECK(a0 == 1.0);
		CHECK(an >= 0.75);
		CHECK(am < an && am >= 0.2);
		CHECK(af < am);
	}
	model_free(d), model_free(t0), model_free(tn), model_free(tm), model_free(tf);
}

TEST_MAIN()
