/*
 * test_engine_pure.c - the engine's parts that need no model: rerank, stop rules,
 * FIM template names and text, template choice and prompt layout per
 * vocabulary (vocabulary files from testdata; skipped when missing).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine_internal.h"
#include "gguf.h"
#include "harness.h"
#include "infer.h"

/* ---- a forward's cost ---- */

TEST(forward_cost_is_learned_by_rows_not_a_rate)
{
	struct fwd_cost c = { 0 };
	/* nothing seen: one row's time, then the chunk rate per further row */
	CHECK_NEAR(fwd_cost_ms(&c, 1, 40, 15), 40, 1e-9);
	CHECK_NEAR(fwd_cost_ms(&c, 6, 40, 15), 40 + 5 * 15, 1e-9);
	CHECK_NEAR(fwd_cost_ms(&c, 0, 40, 15), 0, 1e-9);
	/* what ran is what counts: 3 rows cost 70, 6 rows 180 (30 per row) */
	fwd_cost_note(&c, 3, 70);
	fwd_cost_note(&c, 6, 180);
	CHECK_NEAR(fwd_cost_ms(&c, 3, 40, 15), 70, 1e-9);
	CHECK_NEAR(fwd_cost_ms(&c, 6, 40, 15), 180, 1e-9);
	/* unseen counts up to 8: on the line between the seen ones (1 row:
	 * the given 40), past the last seen the chunk rate per row */
	CHECK_NEAR(fwd_cost_ms(&c, 2, 40, 15), 55, 1e-9);
	CHECK_NEAR(fwd_cost_ms(&c, 4, 40, 15), 70 + 110.0 / 3, 1e-9);
	CHECK_NEAR(fwd_cost_ms(&c, 5, 40, 15), 70 + 220.0 / 3, 1e-9);
	CHECK_NEAR(fwd_cost_ms(&c, 8, 40, 15), 180 + 2 * 15, 1e-9);
	fwd_cost_note(&c, 8, 200); /* each count up to 8 its own */
	CHECK_NEAR(fwd_cost_ms(&c, 8, 40, 15), 200, 1e-9);
	CHECK_NEAR(fwd_cost_ms(&c, 7, 40, 15), 190, 1e-9);
	CHECK_NEAR(fwd_cost_ms(&c, 6, 40, 15), 180, 1e-9);
	/* 9..15 rows share a rate per row */
	fwd_cost_note(&c, 12, 240);
	CHECK_NEAR(fwd_cost_ms(&c, 10, 40, 15), 200, 1e-9);
	/* a moving average: a slower sample moves it part of the way */
	fwd_cost_note(&c, 3, 170);
	double three = fwd_cost_ms(&c, 3, 40, 15);
	CHECK(three > 70 && three < 170);
	/* chunks go by the rate, and are not learned here */
	fwd_cost_note(&c, 64, 10000);
	CHECK_NEAR(fwd_cost_ms(&c, 64, 40, 15), 40 + 63 * 15, 1e-9);
	/* the most rows that fit */
	CHECK_INT_EQ(fwd_cost_fit(&c, 39, 100, 40, 15), 0);
	CHECK_INT_EQ(fwd_cost_fit(&c, 75, 100, 40, 15), 2);     /* 1: 40, 2: 70, 3: 100 */
	CHECK_INT_EQ(fwd_cost_fit(&c, 1e6, 100, 40, 15), 100);  /* capped */
	CHECK_INT_EQ(fwd_cost_fit(&c, 5000, 400, 40, 15), 331); /* 40 + 330 * 15 = 4990 */
}

TEST(next_forward_is_the_last_one_scaled_by_its_rows)
{
	struct fwd_cost c = { 0 };
	fwd_cost_note(&c, 1, 40);
	fwd_cost_note(&c, 4, 60);
	/* the last 1-row step took 50 (a longer context, a busier machine):
	 * a 4-row step after it takes 50 * 60 / 40 */
	CHECK_NEAR(fwd_cost_next(&c, 50, 1, 4, 40, 15), 75, 1e-9);
	/* and back: a candidate stopped, the step is narrower */
	CHECK_NEAR(fwd_cost_next(&c, 75, 4, 1, 40, 15), 50, 1e-9);
	CHECK_NEAR(fwd_cost_next(&c, 50, 1, 1, 40, 15), 50, 1e-9);
	/* no step yet: the learned cost */
	CHECK_NEAR(fwd_cost_next(&c, 0, 0, 4, 40, 15), 60, 1e-9);
}

/* ---- prompt lookup's drafts ---- */

TEST(lookup_drafts_what_followed_the_latest_match)
{
	/* context 5 6 7 8 | 5 6 7 9 | 5 6 7: the last 3 tokens last occurred
	 * before 9, then 5 6 7 followed it */
	const int32_t prompt[] = { 5, 6, 7, 8, 5, 6, 7, 9 };
	const int32_t gen[] = { 5, 6, 7 };
	int32_t out[3], ngram;
	CHECK_INT_EQ(lookup_draft_find(prompt, 8, gen, 3, 3, out, &ngram), 3);
	CHECK_INT_EQ(ngram, 3);
	CHECK_INT_EQ(out[0], 9);
	CHECK_INT_EQ(out[1], 5);
	CHECK_INT_EQ(out[2], 6);
	/* only the last token matches: a match of length 1 */
	const int32_t gen2[] = { 1, 2, 8 };
	CHECK_INT_EQ(lookup_draft_find(prompt, 8, gen2, 3, 2, out, &ngram), 2);
	CHECK_INT_EQ(ngram, 1);
	CHECK_INT_EQ(out[0], 5);
	/* no occurrence: nothing */
	const int32_t gen3[] = { 42 };
	CHECK_INT_EQ(lookup_draft_find(prompt, 8, gen3, 1, 3, out, &ngram), 0);
	CHECK_INT_EQ(ngram, 0);
}

TEST(lookup_checks_drafts_only_where_they_pay)
{
	/* A forward of 1..4 rows: 40, 48, 56, 68 ms (weights streamed once). */
	const double cost[] = { 0, 40, 48, 56, 68 };
	/* drafts that are always right: all 3 (4 tokens for 68 ms) */
	CHECK_INT_EQ(lookup_choose(1.0, 3, 1, 1, cost), 3);
	/* rarely right: none (1.1 tokens for 48 ms is worse than 1 for 40) */
	CHECK_INT_EQ(lookup_choose(0.1, 3, 1, 1, cost), 0);
	/* at p = 0.5 one draft pays (1.5 / 48 > 1 / 40); a second gives what
	 * it costs (1.75 / 56 = 1.5 / 48): not worth the wider step */
	CHECK_INT_EQ(lookup_choose(0.5, 3, 1, 1, cost), 1);
	CHECK_INT_EQ(lookup_choose(0.6, 3, 1, 1, cost), 2); /* 1.96 / 56 > 1.6 / 48 */
	/* steps where a row costs as much as a step: never */
	const double flat[] = { 0, 40, 80, 120, 160 };
	CHECK_INT_EQ(lookup_choose(0.9, 3, 1, 1, flat), 0);
	/* no draft found */
	CHECK_INT_EQ(lookup_choose(1.0, 0, 1, 1, cost), 0);
	/* two candidates already in the step (2 rows, 2 tokens): room for 2 */
	CHECK_INT_EQ(lookup_choose(1.0, 2, 2, 2, cost), 2);
	/* a gain within the margin (5%) is not taken: 1.04 tokens for 40 ms */
	const double same[] = { 0, 40, 40, 40, 40 };
	CHECK_INT_EQ(lookup_choose(0.04, 3, 1, 1, same), 0);
	CHECK_INT_EQ(lookup_choose(0.2, 3, 1, 1, same), 1);
	/* widths learned under another load, so that a wider step looks
	 * cheaper than a plain one: each row is still priced at 4% of it */
	const double noisy[] = { 0, 40, 30, 30, 30 };
	CHECK_INT_EQ(lookup_choose(0.08, 3, 1, 1, noisy), 0);
	CHECK_INT_EQ(lookup_choose(0.9, 3, 1, 1, noisy), 3);
}

TEST(lookup_gate_backs_off_after_misses_and_opens_on_a_hit)
{
	struct lookup_gate g = { 0 };
	CHECK(lookup_gate_open(&g));
	lookup_gate_note(&g, true, false); /* checked, first token wrong: 1 step */
	CHECK(!lookup_gate_open(&g));
	CHECK(lookup_gate_open(&g));
	lookup_gate_note(&g, true, false); /* again: 2 steps */
	CHECK(!lookup_gate_open(&g));
	CHECK(!lookup_gate_open(&g));
	CHECK(lookup_gate_open(&g));
	lookup_gate_note(&g, false, false); /* a miss not checked changes nothing */
	CHECK(lookup_gate_open(&g));
	for (int i = 0; i < 10; i++) lookup_gate_note(&g, true, false);
	int closed = 0;
	while (!lookup_gate_open(&g)) closed++;
	CHECK_INT_EQ(closed, 16); /* at most */
	lookup_gate_note(&g, true, false);
	lookup_gate_note(&g, false, true); /* the text repeats again: open at once */
	CHECK(lookup_gate_open(&g));
	lookup_gate_note(&g, true, false); /* and the back-off starts over */
	CHECK(!lookup_gate_open(&g));
	CHECK(lookup_gate_open(&g));
}

/*
 * The decision a decode step makes for one candidate (engine.c dec_batch and
 * cand_take, in the same order): the gate, the learned chance, the choice,
 * then what the choice taught. Returns the steps that checked drafts.
 * `right` says whether the source's drafts are the model's choices (all of
 * them) or never (not even the first).
 */
static int simulate_lookup(const double *cost, int steps, bool right, int *drafted)
{
	struct lookup_stats st = { 0 };
	struct lookup_gate g = { 0 };
	bool after_hit = false;
	int checks = 0;
	*drafted = 0;
	for (int s = 0; s < steps; s++) {
		int32_t m = ENGINE_DRAFT_MAX, ngram = LOOKUP_NGRAM, k = 0;
		if (lookup_gate_open(&g))
			k = lookup_choose(lookup_p(&st, ngram, after_hit), m, 1, 1, cost);
		int32_t kept = right ? k : 0;
		lookup_note(&st, ngram, after_hit, k ? k : 1, k ? kept : right);
		lookup_gate_note(&g, k > 0, right);
		after_hit = right;
		checks += k > 0;
		*drafted += k;
	}
	return checks;
}

TEST(lookup_checks_few_drafts_from_a_source_never_kept)
{
	/* The worst case for the estimates: wide steps that look almost free
	 * (0.5 ms a row), and a draft of the longest match found every step. */
	const double cheap[] = { 0, 40, 40.5, 41, 41.5, 42, 42.5, 43, 43.5 };
	int drafted = 0;
	int checks = simulate_lookup(cheap, 400, false, &drafted);
	/* the prior (1/2) lets the first few through, then the misses (checked
	 * or seen for free) and the back-off stop them: a cost model that
	 * checked a draft every step would check 400 */
	CHECK(checks >= 1);
	CHECK(checks <= 6);
	/* a source that is always right is checked on nearly every step, 7 drafts */
	int right = simulate_lookup(cheap, 400, true, &drafted);
	CHECK(right >= 390);
	CHECK(drafted >= 7 * 390);
	/* with this CPU's real widths (1 + 3 rows 1.3x one row, 1 + 7 2x) too */
	const double real[] = { 0, 40, 44, 48, 52, 60, 66, 73, 80 };
	CHECK(simulate_lookup(real, 400, false, &drafted) <= 6);
	CHECK(simulate_lookup(real, 400, true, &drafted) >= 390);
}

TEST(lookup_learns_how_often_drafts_are_kept)
{
	struct lookup_stats st = { 0 };
	CHECK_NEAR(lookup_p(&st, 3, false), 0.5, 1e-12); /* the prior */
	/* matches of 1 token: their drafts miss at once */
	for (int i = 0; i < 20; i++) lookup_note(&st, 1, false, 3, 0);
	CHECK(lookup_p(&st, 1, false) < 0.1);
	/* matches of 3: kept whole */
	for (int i = 0; i < 20; i++) lookup_note(&st, 3, true, 3, 3);
	CHECK(lookup_p(&st, 3, true) > 0.95);
	/* the tokens after a miss are not counted against: 2 kept of 3 is a
	 * first token right (after a miss here), then 1 right and 1 wrong,
	 * both after a hit */
	struct lookup_stats one = { 0 };
	lookup_note(&one, 2, false, 3, 2);
	CHECK_NEAR(lookup_p(&one, 2, false), (1 + 1.0) / (1 + 2.0), 1e-12);
	CHECK_NEAR(lookup_p(&one, 2, true), (1 + 1.0) / (2 + 2.0), 1e-12);
	/* a draft not checked teaches as one token: its first, right or not */
	lookup_note(&one, 1, false, 1, 0);
	CHECK_NEAR(lookup_p(&one, 1, false), 1.0 / 3.0, 1e-12);
	CHECK_NEAR(lookup_p(&one, 1, true), 0.5, 1e-12);
	/* and it follows the document: misses after a run of hits bring it down */
	for (int i = 0; i < 60; i++) lookup_note(&st, 3, true, 3, 0);
	CHECK(lookup_p(&st, 3, true) < 0.2);
	/* what follows a miss is learned apart from what follows a hit */
	CHECK(lookup_p(&st, 1, true) > 0.45);
}

/* ---- rerank ---- */

TEST(blank_is_only_spaces_tabs_and_line_breaks)
{
	CHECK(rerank_is_blank("", 0));
	CHECK(rerank_is_blank(" \t\r\n  ", 6));
	CHECK(!rerank_is_blank("  x", 3));
	CHECK(rerank_is_blank("  x", 2)); /* only the first n bytes count */
	CHECK(!rerank_is_blank("\v", 1)); /* a form of space, but shows as something */
}

TEST(similarity_is_normalized_levenshtein)
{
	CHECK_NEAR(rerank_similarity("", 0, "", 0), 1.0, 1e-12);
	CHECK_NEAR(rerank_similarity("abc", 3, "abc", 3), 1.0, 1e-12);
	CHECK_NEAR(rerank_similarity("abc", 3, "", 0), 0.0, 1e-12);
	CHECK_NEAR(rerank_similarity("kitten", 6, "sitting", 7), 1.0 - 3.0 / 7.0, 1e-12);
	CHECK_NEAR(rerank_similarity("sitting", 7, "kitten", 6), 1.0 - 3.0 / 7.0, 1e-12);
	/* long strings take the heap path */
	char a[600], b[600];
	memset(a, 'x', sizeof a);
	memcpy(b, a, sizeof b);
	b[10] = 'y';
	CHECK_NEAR(rerank_similarity(a, 600, b, 600), 1.0 - 1.0 / 600.0, 1e-12);
	CHECK_NEAR(rerank_similarity(a, 600, b, 300), 0.5 - 1.0 / 600.0, 1e-12);
}

/* The bit-parallel distance equals the plain dynamic program on random
 * byte strings over small and large alphabets, at lengths that cross the
 * 64-row block edges (63, 64, 65, 128, 129) and beyond. */
TEST(levenshtein_bit_parallel_matches_the_reference)
{
	static const size_t lens[] = { 0, 1, 2, 7, 63, 64, 65, 100, 127, 128, 129, 200, 300 };
	uint64_t rng = 12345;
	char a[300], b[300];
	int checked = 0;
	static const int alphabets[] = { 2, 4, 26, 256 };
	for (size_t ab = 0; ab < 4; ab++) {
		int alpha = alphabets[ab];
		for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
			for (size_t j = 0; j < sizeof lens / sizeof lens[0]; j++) {
				for (size_t k = 0; k < lens[i]; k++) {
					rng = rng * 6364136223846793005ull + 1442695040888963407ull;
					a[k] = (char)((rng >> 33) % (uint64_t)alpha);
				}
				/* b: a copy of a's head with some bytes changed, or fresh */
				for (size_t k = 0; k < lens[j]; k++) {
					rng = rng * 6364136223846793005ull + 1442695040888963407ull;
					bool keep = k < lens[i] && (rng >> 60) != 0;
					b[k] = keep ? a[k] : (char)((rng >> 40) % (uint64_t)alpha);
				}
				size_t want = rerank_levenshtein_ref(a, lens[i], b, lens[j]);
				CHECK_INT_EQ(rerank_levenshtein(a, lens[i], b, lens[j]), want);
				CHECK_INT_EQ(rerank_levenshtein(b, lens[j], a, lens[i]), want);
				checked++;
			}
		}
	}
	CHECK_INT_EQ(checked, 4 * 13 * 13);
}

/* Megabyte candidates (a server that ignores max_tokens) are ranked in
 * bounded work: the heads are compared, the rest counted by length. */
TEST(rerank_of_megabyte_candidates_is_bounded)
{
	size_t n = 4u << 20;
	char *big = malloc(n), *big2 = malloc(n);
	CHECK(big && big2);
	for (size_t i = 0; i < n; i++) big[i] = big2[i] = (char)('a' + i % 23);
	big2[n / 2] = '#'; /* past the compared head: the same to rerank */
	struct rerank_item it[3] = {
		{ .text = big, .len = n, .mean_logprob = -0.5 },
		{ .text = big2, .len = n, .mean_logprob = -0.6 },
		{ .text = "x = 1", .len = 5, .mean_logprob = -0.4 },
	};
	struct rerank_params p = rerank_params_default();
	p.previous = big;
	p.previous_len = n / 2;
	p.suffix = big;
	p.suffix_len = n;
	size_t kept = rerank_run(&p, it, 3);
	CHECK_INT_EQ(kept, 2); /* the two megabyte ones merged */
	CHECK_NEAR(rerank_similarity(big, n, big2, n), 1.0, 1e-12);
	CHECK_NEAR(rerank_similarity(big, n, big, n / 2), 0.5, 1e-12);
	free(big);
	free(big2);
}

static struct rerank_item item(const char *t, double lp)
{
	return (struct rerank_item){ .text = t, .len = strlen(t), .mean_logprob = lp };
}

TEST(rerank_drops_blank_and_merges_duplicates)
{
	struct rerank_item it[5] = {
		item("return a + b", -0.5),  item("   \n\t", -0.1),
		item("return a + b ", -0.7), item("", -0.1),
		item("print(x)", -0.6),
	};
	struct rerank_params p = rerank_params_default();
	size_t n = rerank_run(&p, it, 5);
	CHECK_INT_EQ(n, 2);
	CHECK_STR_EQ(it[0].text, "return a + b");
	CHECK_INT_EQ(it[0].evidence, 2);
	CHECK_INT_EQ(it[0].index, 0);
	CHECK_STR_EQ(it[1].text, "print(x)");
	CHECK_INT_EQ(it[1].index, 4);
	CHECK(it[0].score > it[1].score);
	/* the better logprob of two duplicates is the one kept */
	struct rerank_item d[2] = { item("foo(a, b)", -1.0), item("foo(a, b);", -0.2) };
	n = rerank_run(&p, d, 2);
	CHECK_INT_EQ(n, 1);
	CHECK_STR_EQ(d[0].text, "foo(a, b);");
	CHECK_INT_EQ(d[0].evidence, 2);
}

TEST(rerank_demotes_repeating_the_suffix)
{
	struct rerank_item it[2] = {
		item("x = 1\n    return x", -0.2),
		item("x = 2", -0.4),
	};
	struct rerank_params p = rerank_params_default();
	p.suffix = "\n    return x\n";
	p.suffix_len = strlen(p.suffix);
	size_t n = rerank_run(&p, it, 2);
	CHECK_INT_EQ(n, 2);
	CHECK_STR_EQ(it[0].text, "x = 2");
	CHECK_STR_EQ(it[1].text, "x = 1\n    return x");
}

TEST(rerank_prefers_what_is_shown_and_thresholds)
{
	struct rerank_item it[2] = { item("total += value", -0.30), item("count = 0", -0.25) };
	struct rerank_params p = rerank_params_default();
	p.previous = "total += value";
	p.previous_len = strlen(p.previous);
	size_t n = rerank_run(&p, it, 2);
	CHECK_INT_EQ(n, 2);
	CHECK_STR_EQ(it[0].text, "total += value");
	/* without the previous suggestion the likelier one wins */
	struct rerank_item j[2] = { item("total += value", -0.30), item("count = 0", -0.25) };
	p.previous = NULL;
	n = rerank_run(&p, j, 2);
	CHECK_STR_EQ(j[0].text, "count = 0");
	/* min confidence drops everything below it */
	struct rerank_item k[2] = { item("a", -3.0), item("b", -0.1) };
	p.min_confidence = -1.0;
	n = rerank_run(&p, k, 2);
	CHECK_INT_EQ(n, 1);
	CHECK_STR_EQ(k[0].text, "b");
}

TEST(rerank_adds_the_prior_and_keeps_the_larger_on_merge)
{
	struct rerank_item it[3] = { item("loop_loop_loop", -0.5), item("total(items)", -3.0),
		                     item("total(items) ", -3.5) };
	it[1].prior = 1.0;
	it[2].prior = 4.0; /* merged into it[1]: its prior stays */
	struct rerank_params p = rerank_params_default();
	size_t n = rerank_run(&p, it, 3);
	CHECK_INT_EQ(n, 2);
	CHECK_STR_EQ(it[0].text, "total(items)");
	CHECK_INT_EQ(it[0].evidence, 2);
	CHECK_NEAR(it[0].score, -3.0 + 4.0 + p.w_evidence * log(2.0), 1e-12);
	CHECK_NEAR(it[1].score, -0.5, 1e-12);
}

/* ---- stop rules ---- */

TEST(stop_strings_anywhere_after_from)
{
	const char *stops[] = { "\n\n", "def ", "" };
	const char *t = "x = 1\n\ndef f";
	CHECK_INT_EQ(stop_find_string(t, strlen(t), 0, stops, 3), 5);
	/* an occurrence that ended before `from` was already seen */
	CHECK_INT_EQ(stop_find_string(t, 7, 7, stops, 3), -1);
	/* one that spans the boundary: "de" seen before, "f " new */
	CHECK_INT_EQ(stop_find_string(t, strlen(t), 9, stops + 1, 1), 7);
	/* ... and one that ended at `from` was seen by the previous call */
	CHECK_INT_EQ(stop_find_string(t, strlen(t), 11, stops + 1, 1), -1);
	const char *u = "y = 2 def z";
	CHECK_INT_EQ(stop_find_string(u, strlen(u), 7, stops, 3), 6);
	CHECK_INT_EQ(stop_find_string(u, strlen(u), 0, NULL, 0), -1);
}

TEST(stop_max_lines_ignores_leading_blank)
{
	const char *t = "\n    a = 1\n    b = 2\n";
	CHECK_INT_EQ(stop_find_max_lines(t, strlen(t), 1), 10);
	CHECK_INT_EQ(stop_find_max_lines(t, strlen(t), 2), 20);
	CHECK_INT_EQ(stop_find_max_lines(t, strlen(t), 3), -1);
	CHECK_INT_EQ(stop_find_max_lines(t, strlen(t), 0), -1);
	CHECK_INT_EQ(stop_find_max_lines("abc", 3, 1), -1);
	CHECK_INT_EQ(stop_last_line_start("a\nbc", 4), 2);
	CHECK_INT_EQ(stop_last_line_start("a\nbc\n", 5), 2);
	CHECK_INT_EQ(stop_last_line_start("abc", 3), 0);
}

/* ---- FIM templates ---- */

TEST(fim_template_names)
{
	enum fim_template t;
	CHECK(fim_template_parse(NULL, &t) == 0 && t == FIM_TEMPLATE_AUTO);
	CHECK(fim_template_parse("auto", &t) == 0 && t == FIM_TEMPLATE_AUTO);
	CHECK(fim_template_parse("deepseek", &t) == 0 && t == FIM_TEMPLATE_DEEPSEEK);
	CHECK(fim_template_parse("qwen", &t) == 0 && t == FIM_TEMPLATE_QWEN);
	CHECK(fim_template_parse("starcoder", &t) == 0 && t == FIM_TEMPLATE_STARCODER);
	CHECK(fim_template_parse("codellama", &t) == 0 && t == FIM_TEMPLATE_CODELLAMA);
	CHECK(fim_template_parse("<a>{prefix}<b>{suffix}<c>", &t) == 0 && t == FIM_TEMPLATE_CUSTOM);
	CHECK(fim_template_parse("llama", &t) < 0);
	CHECK(fim_template_parse("{prefix} only", &t) < 0);
	CHECK_STR_EQ(fim_template_name(FIM_TEMPLATE_CODELLAMA), "codellama");
	CHECK(fim_template_parse("codegemma", &t) == 0 && t == FIM_TEMPLATE_CODEGEMMA);
	CHECK_STR_EQ(fim_template_name(FIM_TEMPLATE_CODEGEMMA), "codegemma");
}

TEST(fim_context_text_per_family)
{
	const struct engine_snippet chunks[2] = { { "def a():\n    pass\n", 18, "pkg/a.py" },
		                                  { "X = 1", 5, "pkg/b.py" } };
	struct {
		enum fim_template t;
		const char *want;
	} cases[] = {
		{ FIM_TEMPLATE_QWEN, "<|repo_name|>proj\n<|file_sep|>pkg/a.py\ndef a():\n    pass\n"
		                     "<|file_sep|>pkg/b.py\nX = 1\n<|file_sep|>pkg/c.py\n" },
		{ FIM_TEMPLATE_STARCODER, "<repo_name>proj<file_sep>pkg/a.py\ndef a():\n    pass\n"
		                          "<file_sep>pkg/b.py\nX = 1\n<file_sep>pkg/c.py\n" },
		{ FIM_TEMPLATE_CODEGEMMA, "<|file_separator|>pkg/a.py\ndef a():\n    pass\n"
		                          "<|file_separator|>pkg/b.py\nX = 1\n"
		                          "<|file_separator|>pkg/c.py\n" },
		{ FIM_TEMPLATE_DEEPSEEK, "# pkg/a.py\ndef a():\n    pass\n# pkg/b.py\nX = 1\n" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = fim_context_text(cases[i].t, "proj", chunks, 2, "pkg/c.py", "#");
		CHECK_STR_EQ(s, cases[i].want);
		free(s);
	}
	char *s = fim_context_text(FIM_TEMPLATE_QWEN, NULL, NULL, 0, NULL, NULL);
	CHECK_STR_EQ(s, "");
	free(s);
}

TEST(fim_format_text_per_template)
{
	struct {
		enum fim_template t;
		const char *want;
	} cases[] = {
		{ FIM_TEMPLATE_DEEPSEEK, "<｜fim▁begin｜>def f(<｜fim▁hole｜>):\n<｜fim▁end｜>" },
		{ FIM_TEMPLATE_QWEN, "<|fim_prefix|>def f(<|fim_suffix|>):\n<|fim_middle|>" },
		{ FIM_TEMPLATE_STARCODER, "<fim_prefix>def f(<fim_suffix>):\n<fim_middle>" },
		{ FIM_TEMPLATE_CODELLAMA, "<PRE> def f( <SUF>):\n <MID>" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = fim_format_text(cases[i].t, NULL, "def f(", "):\n");
		CHECK_STR_EQ(s, cases[i].want);
		free(s);
	}
	char *s = fim_format_text(FIM_TEMPLATE_CUSTOM, "<S>{suffix}<P>{prefix}<M>", "a", "b");
	CHECK_STR_EQ(s, "<S>b<P>a<M>");
	free(s);
	CHECK(fim_format_text(FIM_TEMPLATE_AUTO, NULL, "a", "b") == NULL);
}

static struct tokenizer *vocab(const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/vocab/%s", testdata(), name);
	if (access(path, R_OK) != 0) return NULL;
	struct infill_error ge;
	struct gguf_file *f = gguf_open(path, &ge);
	if (!f) return NULL;
	struct tokenizer *t = tokenizer_load(f, &ge);
	gguf_close(f);
	return t;
}

static int count_id(const int32_t *v, int n, int32_t id)
{
	int c = 0;
	for (int i = 0; i < n; i++) c += v[i] == id;
	return c;
}

TEST(fim_prompt_deepseek_layout)
{
	struct tokenizer *t = vocab("ggml-vocab-deepseek-coder.gguf");
	if (!t) {
		printf("SKIP: no deepseek vocabulary in testdata\n");
		return;
	}
	CHECK(fim_template_for(t) == FIM_TEMPLATE_DEEPSEEK);
	struct engine_request rq = engine_request_default();
	rq.prefix = "import os\n\ndef main():\n    pri";
	rq.prefix_len = strlen(rq.prefix);
	rq.suffix = "\n    return 0\n";
	rq.suffix_len = strlen(rq.suffix);
	struct engine_snippet sn = { .text = "def helper(x): ...", .len = 18, .path = "util.py" };
	rq.extra = &sn;
	rq.n_extra = 1;
	rq.comment = "#";
	struct infill_error err;
	struct fim_prompt fp;
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	const struct tokenizer_special *sp = tokenizer_special(t);
	int k = sp->add_bos ? 1 : 0;
	if (k) CHECK_INT_EQ(fp.tok[0], sp->bos);
	CHECK_INT_EQ(fp.tok[k], 32016); /* <｜fim▁begin｜> */
	CHECK_INT_EQ(fp.tok[fp.tail_start], 32015);
	CHECK_INT_EQ(fp.tok[fp.n - 1], 32017);
	CHECK_INT_EQ(count_id(fp.tok, fp.n, 32015), 1);
	CHECK(fp.extra_tokens > 0);
	/* the last token ("pri" or " pri") is backed up over */
	CHECK(fp.heal_len >= 3 && fp.heal_len <= 4 && !memcmp(fp.heal + fp.heal_len - 3, "pri", 3));
	/* on a line of indentation only, the whole indentation is backed up over:
	 * the prompt then ends as the same prefix without it does */
	struct fim_prompt fi, fn, fw;
	rq.prefix = "import os\n\ndef main():\n\t \t  \t   ";
	rq.prefix_len = strlen(rq.prefix);
	REQUIRE(fim_prompt_build(t, &rq, &fi, &err) == 0);
	CHECK(fi.heal_len == 9 && !memcmp(fi.heal, "\t \t  \t   ", 9));
	rq.token_healing = false;
	REQUIRE(fim_prompt_build(t, &rq, &fw, &err) == 0);
	rq.prefix_len -= 9;
	REQUIRE(fim_prompt_build(t, &rq, &fn, &err) == 0);
	rq.token_healing = true;
	CHECK(fw.n >= fn.n + 2); /* the indentation is several tokens: more than one backed up */
	CHECK_INT_EQ(fi.n, fn.n);
	CHECK(fi.n == fn.n && !memcmp(fi.tok, fn.tok, (size_t)fi.n * sizeof *fi.tok));
	fim_prompt_finish(&fi);
	fim_prompt_finish(&fn);
	fim_prompt_finish(&fw);
	/* typing at the prefix's end keeps every token before its last one */
	struct fim_prompt fp2;
	rq.prefix = "import os\n\ndef main():\n    prin";
	rq.prefix_len = strlen(rq.prefix);
	REQUIRE(fim_prompt_build(t, &rq, &fp2, &err) == 0);
	int same = 0;
	while (same < fp.n && same < fp2.n && fp.tok[same] == fp2.tok[same]) same++;
	CHECK(same >= fp.tail_start - 1);
	/* budgets: a one-token suffix budget, a prefix cut at its front */
	rq.suffix_tokens = 1;
	rq.prefix_tokens = 4;
	rq.extra_tokens = 1; /* the snippet does not fit: left out whole */
	struct fim_prompt fp3;
	REQUIRE(fim_prompt_build(t, &rq, &fp3, &err) == 0);
	CHECK_INT_EQ(fp3.suffix_tokens, 1);
	CHECK_INT_EQ(fp3.extra_tokens, 0);
	CHECK(fp3.prefix_tokens <= 4);
	CHECK_INT_EQ(fp3.n, k + 1 + fp3.prefix_tokens + 1 + 1 + 1);
	fim_prompt_finish(&fp);
	fim_prompt_finish(&fp2);
	fim_prompt_finish(&fp3);
	tokenizer_free(t);
}

TEST(fim_prompt_starcoder_vocab)
{
	struct tokenizer *t = vocab("ggml-vocab-starcoder.gguf");
	if (!t) {
		printf("SKIP: no starcoder vocabulary in testdata\n");
		return;
	}
	CHECK(fim_template_for(t) == FIM_TEMPLATE_STARCODER);
	struct engine_request rq = engine_request_default();
	rq.prefix = "int x = ";
	rq.prefix_len = strlen(rq.prefix);
	rq.suffix = ";\n";
	rq.suffix_len = 2;
	struct infill_error err;
	struct fim_prompt fp;
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	int32_t pre = tokenizer_find(t, "<fim_prefix>", 12),
	        suf = tokenizer_find(t, "<fim_suffix>", 12),
	        mid = tokenizer_find(t, "<fim_middle>", 12);
	CHECK(pre >= 0 && suf >= 0 && mid >= 0);
	int k = tokenizer_special(t)->add_bos ? 1 : 0;
	/* StarCoder's own order is suffix first (SPMv2): <pre><suf>S<mid>P */
	CHECK_INT_EQ(fp.tok[k], pre);
	CHECK_INT_EQ(fp.tok[k + 1], suf);
	CHECK_INT_EQ(fp.tok[fp.n - 1 - fp.prefix_tokens], mid);
	CHECK_INT_EQ(fp.tail_start, fp.n); /* nothing after the prefix to shift */
	fim_prompt_finish(&fp);
	/* PSM when asked */
	rq.order = FIM_ORDER_PSM;
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	CHECK_INT_EQ(fp.tok[k], pre);
	CHECK_INT_EQ(fp.tok[fp.tail_start], suf);
	CHECK_INT_EQ(fp.tok[fp.n - 1], mid);
	fim_prompt_finish(&fp);
	rq.order = FIM_ORDER_AUTO;
	/* a template the vocabulary lacks is an error that says what to set */
	rq.fim = FIM_TEMPLATE_DEEPSEEK;
	CHECK(fim_prompt_build(t, &rq, &fp, &err) == -EINVAL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK_STR_EQ(err.key, "fim.template");
	/* a custom template: literal special tokens parsed */
	rq.fim = FIM_TEMPLATE_CUSTOM;
	rq.fim_custom = "<fim_suffix>{suffix}<fim_prefix>{prefix}<fim_middle>";
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	CHECK_INT_EQ(fp.tok[k], suf);
	CHECK_INT_EQ(fp.tok[fp.n - 1 - fp.prefix_tokens - 1], pre);
	CHECK_INT_EQ(fp.tok[fp.n - 1], mid);
	fim_prompt_finish(&fp);
	tokenizer_free(t);
}

TEST(fim_prompt_spm_vocab_without_fim_tokens)
{
	struct tokenizer *t = vocab("ggml-vocab-llama-spm.gguf");
	if (!t) {
		printf("SKIP: no llama-spm vocabulary in testdata\n");
		return;
	}
	/* plain Llama has no ▁<PRE>: auto finds nothing, and says so */
	CHECK(fim_template_for(t) == FIM_TEMPLATE_AUTO);
	struct engine_request rq = engine_request_default();
	rq.prefix = "x = ";
	rq.prefix_len = 4;
	struct infill_error err;
	struct fim_prompt fp;
	CHECK(fim_prompt_build(t, &rq, &fp, &err) == -EINVAL);
	/* a custom template works on any vocabulary; SPM text after a literal
	 * gets no dummy space, the literal itself no lone ▁ */
	rq.fim = FIM_TEMPLATE_CUSTOM;
	rq.fim_custom = "<s>{prefix}|{suffix}";
	rq.token_healing = false;
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	CHECK(fp.n >= 2);
	fim_prompt_finish(&fp);
	tokenizer_free(t);
}

/* The tiny CodeGemma-like vocabulary of tests/infer/model_data. */
static struct tokenizer *our_vocab(const char *name)
{
	const char *d = getenv("INFILL_MODELDATA");
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", d ? d : "tests/infer/model_data", name);
	struct infill_error ge;
	struct gguf_file *f = gguf_open(path, &ge);
	if (!f) return NULL;
	struct tokenizer *t = tokenizer_load(f, &ge);
	gguf_close(f);
	return t;
}

/* The prompt's front is fim_context_text's text, tokenized with its special
 * tokens, then the family's FIM markers; returns the index after it. */
static int check_repo_front(int *test_failed_, const struct tokenizer *t, enum fim_template tpl,
                            const struct fim_prompt *fp, const struct engine_request *rq)
{
	char *ctx = fim_context_text(tpl, rq->repo_name, rq->extra, rq->n_extra, rq->path, NULL);
	if (!ctx) {
		CHECK(0);
		return 0;
	}
	int32_t want[512];
	int n = tokenizer_encode(t, ctx, strlen(ctx), true, want, 512);
	free(ctx);
	int k = tokenizer_special(t)->add_bos ? 1 : 0;
	if (!(n > 0 && k + n <= fp->n)) {
		CHECK(0);
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (fp->tok[k + i] != want[i]) {
			fprintf(stderr, "token %d: %d, context text says %d\n", k + i,
			        fp->tok[k + i], want[i]);
			CHECK(0);
			break;
		}
	return k + n;
}

TEST(fim_qwen2_vocab_repository_and_stops)
{
	struct tokenizer *t = vocab("ggml-vocab-qwen2.gguf");
	REQUIRE(t);
	CHECK(fim_template_for(t) == FIM_TEMPLATE_QWEN);
	const struct tokenizer_special *sp = tokenizer_special(t);
	/* <|endoftext|> ends, and <|im_end|>, <|fim_pad|>, <|repo_name|>,
	 * <|file_sep|>; <|im_start|>, the FIM markers (as in llama.cpp) and
	 * text do not */
	static const int32_t eog[] = { 151643, 151645, 151662, 151663, 151664 };
	for (size_t i = 0; i < sizeof eog / sizeof eog[0]; i++) CHECK(tokenizer_is_eog(t, eog[i]));
	CHECK(!tokenizer_is_eog(t, 151644));
	CHECK(!tokenizer_is_eog(t, 151659));
	CHECK(!tokenizer_is_eog(t, 750));
	CHECK_INT_EQ(sp->fim_sep, 151664);
	CHECK_INT_EQ(sp->fim_repo, 151663);

	const struct engine_snippet chunks[2] = { { "def helper(x):\n    return x * 2\n", 32,
		                                    "src/util.py" },
		                                  { "LIMIT = 10", 10, "src/config.py" } };
	struct engine_request rq = engine_request_default();
	rq.prefix = "from util import helper\nprint(hel";
	rq.prefix_len = strlen(rq.prefix);
	rq.suffix = ")\n";
	rq.suffix_len = 2;
	rq.extra = chunks;
	rq.n_extra = 2;
	rq.repo_name = "demo";
	rq.path = "src/main.py";
	rq.token_healing = false;
	struct infill_error err;
	struct fim_prompt fp;
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	CHECK_INT_EQ(fp.tok[0], 151663); /* no BOS: <|repo_name|> first */
	int at = check_repo_front(test_failed_, t, FIM_TEMPLATE_QWEN, &fp, &rq);
	CHECK_INT_EQ(count_id(fp.tok, fp.n, 151664), 3); /* two files and the current one */
	CHECK(at < fp.n && fp.tok[at] == 151659);        /* then <|fim_prefix|> (PSM) */
	CHECK_INT_EQ(fp.tok[fp.tail_start], 151661);
	CHECK_INT_EQ(fp.tok[fp.n - 1], 151660);
	CHECK(fp.extra_tokens > 0);
	fim_prompt_finish(&fp);
	/* a budget that holds one chunk keeps the first, whole; the repository
	 * name and the current path stay */
	rq.extra_tokens = 20;
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	CHECK_INT_EQ(count_id(fp.tok, fp.n, 151664), 2);
	CHECK(fp.extra_tokens <= 20);
	fim_prompt_finish(&fp);
	tokenizer_free(t);
}

TEST(fim_starcoder2_vocab_repository_and_stops)
{
	struct tokenizer *t = vocab("ggml-vocab-starcoder.gguf");
	REQUIRE(t);
	CHECK(fim_template_for(t) == FIM_TEMPLATE_STARCODER);
	/* <|endoftext|> 0, <fim_pad> 4, <repo_name> 5, <file_sep> 6 end a
	 * generation; the markers 1..3 and <issue_start> 7 do not */
	for (int32_t id = 4; id <= 6; id++) CHECK(tokenizer_is_eog(t, id));
	CHECK(tokenizer_is_eog(t, 0) && !tokenizer_is_eog(t, 1) && !tokenizer_is_eog(t, 7));
	const struct engine_snippet chunk = { "int twice(int x) { return 2 * x; }\n", 35, "lib.c" };
	struct engine_request rq = engine_request_default();
	rq.prefix = "int main(void) { return tw";
	rq.prefix_len = strlen(rq.prefix);
	rq.suffix = "(1); }\n";
	rq.suffix_len = strlen(rq.suffix);
	rq.extra = &chunk;
	rq.n_extra = 1;
	rq.repo_name = "demo";
	rq.path = "main.c";
	rq.token_healing = false;
	struct infill_error err;
	struct fim_prompt fp;
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	CHECK_INT_EQ(fp.tok[0], 5);
	int at = check_repo_front(test_failed_, t, FIM_TEMPLATE_STARCODER, &fp, &rq);
	/* then StarCoder's suffix-first order: <fim_prefix><fim_suffix>S<fim_middle>P */
	CHECK(at + 1 < fp.n && fp.tok[at] == 1 && fp.tok[at + 1] == 3);
	CHECK_INT_EQ(fp.tok[fp.n - 1 - fp.prefix_tokens], 2);
	CHECK_INT_EQ(count_id(fp.tok, fp.n, 6), 2);
	fim_prompt_finish(&fp);
	tokenizer_free(t);
}

TEST(fim_codegemma_vocab_repository_and_stops)
{
	struct tokenizer *t = our_vocab("ggml-vocab-codegemma-tiny.gguf");
	REQUIRE(t);
	/* Qwen's markers, told apart by <|file_separator|> */
	CHECK(fim_template_for(t) == FIM_TEMPLATE_CODEGEMMA);
	const struct tokenizer_special *sp = tokenizer_special(t);
	int32_t fsep = tokenizer_find(t, "<|file_separator|>", 18),
	        eot = tokenizer_find(t, "<end_of_turn>", 13);
	REQUIRE(fsep >= 0 && eot >= 0);
	CHECK_INT_EQ(sp->fim_sep, fsep);
	CHECK(tokenizer_is_eog(t, fsep) && tokenizer_is_eog(t, eot) &&
	      tokenizer_is_eog(t, sp->eos));
	CHECK(!tokenizer_is_eog(t, sp->fim_prefix));
	CHECK(!tokenizer_is_eog(t, 300));
	const struct engine_snippet chunk = { "def twice(x):\n    return 2 * x\n", 31, "lib.py" };
	struct engine_request rq = engine_request_default();
	rq.prefix = "print(tw";
	rq.prefix_len = strlen(rq.prefix);
	rq.suffix = "(1))\n";
	rq.suffix_len = strlen(rq.suffix);
	rq.extra = &chunk;
	rq.n_extra = 1;
	rq.repo_name = "demo"; /* CodeGemma has no repository-name token: not written */
	rq.path = "main.py";
	rq.token_healing = false;
	struct infill_error err;
	struct fim_prompt fp;
	REQUIRE(fim_prompt_build(t, &rq, &fp, &err) == 0);
	CHECK(sp->add_bos && fp.tok[0] == sp->bos);
	CHECK_INT_EQ(fp.tok[1], fsep);
	int at = check_repo_front(test_failed_, t, FIM_TEMPLATE_CODEGEMMA, &fp, &rq);
	CHECK(at < fp.n && fp.tok[at] == sp->fim_prefix);
	CHECK_INT_EQ(fp.tok[fp.tail_start], sp->fim_suffix);
	CHECK_INT_EQ(fp.tok[fp.n - 1], sp->fim_middle);
	CHECK_INT_EQ(count_id(fp.tok, fp.n, fsep), 2);
	fim_prompt_finish(&fp);
	tokenizer_free(t);
}

TEST_MAIN()
