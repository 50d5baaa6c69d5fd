/* test_stats.c - the infill/stats answer (core/stats.c): its keys, in order,
 * are the ones clients and scripts rely on; what the server writes reads
 * back the same; a missing or mistyped field reads as 0 or NULL. */
#include "stats.h"

#include "harness.h"

/* The documented keys (docs/protocol.md, `infill/stats`), in the answer's order. */
static const char *const documented[] = {
	"requests",
	"cancelled",
	"fastPath",
	"promptTokens",
	"cachedPromptTokens",
	"generatedTokens",
	"rejectedCandidates",
	"documentLines",
	"backend",
	"latencyMs",
	"openDocuments",
	"extended",
	"kvType",
	"kvPages",
	"backgroundPrefillTokens",
	"shortContexts",
	"neverStarted",
	"coldRequests",
	"draftTokens",
	"acceptedDraftTokens",
	"modelDraftTokens",
	"acceptedModelDraftTokens",
	"kvTouchedMB",
	"projectTokens",
	"projectLines",
	"indexFiles",
	"remoteLatencyMs",
	"daemonLatencyMs",
	"remoteShare",
	"remoteRequests",
	"remoteFailures",
	"remoteRetries",
	"feedback",
	"remoteDeadlineCuts",
	"paceDeadlines",
	"firstAnswers",
	"firstAnswerChars",
	"liveAnswers",
	"liveShare",
	"liveTokens",
	"liveThrownTokens",
	"thrownShare",
	"grewNotices",
	"pastAnswers",
	"aheadAnswers",
	"aheadTokens",
	"aheadThrownTokens",
	"shownAnswers",
	"shownChars500ms",
	"shownChars1s",
	"shownCharsEnd",
	"nextEditRequests",
	"nextEditOffered",
	"nextEditShown",
	"nextEditAccepted",
	"nextEditRejected",
	"nextEditInvalid",
	"nextEditLatencyMs",
	"draftModel",
	"shownCharsAnswer",
};

static struct stats sample(void)
{
	return (struct stats){
		.requests = 1,
		.cancelled = 2,
		.fast_path = 3,
		.prompt_tokens = 4,
		.cached_prompt_tokens = 5,
		.generated_tokens = 6,
		.rejected_candidates = 7,
		.document_lines = 8,
		.backend = "cpu",
		.latency_ms = { .p50 = 10.5, .p90 = 20.25, .p99 = 30.125, .samples = 9 },
		.open_documents = 11,
		.extended = 12,
		.kv_type = "f16",
		.kv_pages = 13,
		.never_started = 14,
		.cold_requests = 15,
		.draft_tokens = 16,
		.accepted_draft_tokens = 17,
		.kv_touched_mb = 18,
		.remote_latency_ms = { .p50 = 40.5, .p90 = 41, .p99 = 42, .samples = 3 },
		.daemon_latency_ms = { .p50 = 1.5, .p90 = 2, .p99 = 3, .samples = 3 },
		.remote_share = 0.75,
		.remote_requests = 18,
		.remote_failures = 19,
		.remote_retries = 20,
		.remote_deadline_cuts = 21,
		.first_answers = 22,
		.first_answer_chars = 23,
		.live_answers = 24,
		.live_share = 0.25,
		.live_tokens = 25,
		.live_thrown_tokens = 26,
		.thrown_share = 0.125,
		.grew_notices = 27,
		.past_answers = 28,
		.ahead_answers = 29,
		.ahead_tokens = 30,
		.ahead_thrown_tokens = 31,
		.shown_answers = 32,
		.shown_chars_500ms = 33,
		.shown_chars_1s = 34,
		.shown_chars_end = 35,
		.shown_chars_answer = 36,
	};
}

TEST(keys_are_the_documented_ones_in_order)
{
	struct stats s = sample();
	json_t *o = stats_to_json(&s);
	REQUIRE(o);
	CHECK_INT_EQ(json_object_size(o), sizeof documented / sizeof documented[0]);
	size_t i = 0;
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		if (i < sizeof documented / sizeof documented[0]) CHECK_STR_EQ(key, documented[i]);
		i++;
	}
	CHECK_STR_EQ(stats_keys.prompt_tokens, "promptTokens");
	CHECK_STR_EQ(stats_keys.latency_ms, "latencyMs");
	json_decref(o);
}

TEST(values_as_the_server_sends_them)
{
	struct stats s = sample();
	s.kv_type = NULL; /* no model loaded */
	json_t *o = stats_to_json(&s);
	REQUIRE(o);
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "requests")), 1);
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "kvPages")), 13);
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "neverStarted")), 14);
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "coldRequests")), 15);
	CHECK_STR_EQ(json_string_value(json_object_get(o, "backend")), "cpu");
	CHECK_STR_EQ(json_string_value(json_object_get(o, "kvType")), "none");
	json_t *lat = json_object_get(o, "latencyMs");
	CHECK(json_is_real(json_object_get(lat, "p50")));
	CHECK_NEAR(json_real_value(json_object_get(lat, "p90")), 20.25, 0);
	CHECK_INT_EQ(json_integer_value(json_object_get(lat, "samples")), 9);
	CHECK(json_is_object(json_object_get(o, "feedback"))); /* none yet: {} */
	CHECK_INT_EQ(json_object_size(json_object_get(o, "feedback")), 0);
	json_decref(o);
}

TEST(feedback_object_reads_back)
{
	struct stats s = sample();
	s.feedback = json_pack("{s:{s:{s:i}}}", "python", "single", "shown", 3);
	REQUIRE(s.feedback);
	json_t *o = stats_to_json(&s);
	REQUIRE(o);
	struct stats back;
	stats_from_json(o, &back);
	CHECK_INT_EQ(json_integer_value(json_object_get(
	                     json_object_get(json_object_get(back.feedback, "python"), "single"),
	                     "shown")),
	             3);
	json_decref(o);
	json_decref(s.feedback);
}

TEST(round_trip)
{
	struct stats s = sample(), back;
	json_t *o = stats_to_json(&s);
	REQUIRE(o);
	/* through text, as `infill replay` gets it from a child server */
	char *text = json_dumps(o, 0);
	json_decref(o);
	REQUIRE(text);
	o = json_loads(text, 0, NULL);
	free(text);
	REQUIRE(o);
	stats_from_json(o, &back);
	CHECK_INT_EQ(back.requests, 1);
	CHECK_INT_EQ(back.cached_prompt_tokens, 5);
	CHECK_INT_EQ(back.document_lines, 8);
	CHECK_INT_EQ(back.open_documents, 11);
	CHECK_INT_EQ(back.kv_pages, 13);
	CHECK_INT_EQ(back.never_started, 14);
	CHECK_INT_EQ(back.cold_requests, 15);
	CHECK_INT_EQ(back.draft_tokens, 16);
	CHECK_INT_EQ(back.accepted_draft_tokens, 17);
	CHECK_STR_EQ(back.backend, "cpu");
	CHECK_STR_EQ(back.kv_type, "f16");
	CHECK_NEAR(back.latency_ms.p50, 10.5, 0);
	CHECK_NEAR(back.latency_ms.p99, 30.125, 0);
	CHECK_INT_EQ(back.latency_ms.samples, 9);
	CHECK_NEAR(back.remote_latency_ms.p50, 40.5, 0);
	CHECK_NEAR(back.daemon_latency_ms.p99, 3, 0);
	CHECK_NEAR(back.remote_share, 0.75, 0);
	CHECK_INT_EQ(back.remote_requests, 18);
	CHECK_INT_EQ(back.remote_failures, 19);
	CHECK_INT_EQ(back.remote_retries, 20);
	CHECK_INT_EQ(back.remote_deadline_cuts, 21);
	CHECK_INT_EQ(back.first_answers, 22);
	CHECK_INT_EQ(back.first_answer_chars, 23);
	CHECK_INT_EQ(back.live_answers, 24);
	CHECK_NEAR(back.live_share, 0.25, 0);
	CHECK_INT_EQ(back.live_tokens, 25);
	CHECK_INT_EQ(back.live_thrown_tokens, 26);
	CHECK_NEAR(back.thrown_share, 0.125, 0);
	CHECK_INT_EQ(back.grew_notices, 27);
	CHECK_INT_EQ(back.past_answers, 28);
	CHECK_INT_EQ(back.ahead_answers, 29);
	CHECK_INT_EQ(back.ahead_tokens, 30);
	CHECK_INT_EQ(back.ahead_thrown_tokens, 31);
	CHECK_INT_EQ(back.shown_answers, 32);
	CHECK_INT_EQ(back.shown_chars_500ms, 33);
	CHECK_INT_EQ(back.shown_chars_1s, 34);
	CHECK_INT_EQ(back.shown_chars_end, 35);
	CHECK_INT_EQ(back.shown_chars_answer, 36);
	json_decref(o);
}

TEST(missing_or_mistyped_fields_read_as_zero)
{
	json_t *o = json_pack("{s:s, s:I, s:i, s:[]}", "requests", "many", "fastPath",
	                      (json_int_t)-4, "backend", 7, "latencyMs");
	REQUIRE(o);
	struct stats back = sample();
	stats_from_json(o, &back);
	CHECK_INT_EQ(back.requests, 0);
	CHECK_INT_EQ(back.fast_path, 0);
	CHECK_INT_EQ(back.prompt_tokens, 0);
	CHECK(back.backend == NULL);
	CHECK_NEAR(back.latency_ms.p50, 0, 0);
	json_decref(o);
	stats_from_json(NULL, &back);
	CHECK_INT_EQ(back.kv_pages, 0);
}

/* Nearest rank: of 1..10 ms, p50 is 5, p90 9, p99 10; none: 0. */
TEST(percentiles_by_nearest_rank)
{
	double v[10] = { 7, 3, 10, 1, 9, 2, 8, 5, 4, 6 };
	stats_sort(v, 10);
	for (int i = 0; i < 10; i++) CHECK_NEAR(v[i], i + 1, 0);
	CHECK_NEAR(stats_percentile(v, 10, 0.50), 5, 0);
	CHECK_NEAR(stats_percentile(v, 10, 0.90), 9, 0);
	CHECK_NEAR(stats_percentile(v, 10, 0.99), 10, 0);
	CHECK_NEAR(stats_percentile(v, 1, 0.99), 1, 0);
	CHECK_NEAR(stats_percentile(v, 0, 0.5), 0, 0);
}

TEST_MAIN()
