/* test_pace.c - the typing pace and its deadline (lsp/pace.c): a burst's
 * keys are due before the next one, by the median gap; a pause, an explicit
 * ask, or a burst too fast to answer between keys sets no deadline. */
#include "pace.h"

#include "harness.h"

#define MS 1000000ull /* ns */

TEST(a_burst_is_due_before_its_next_key)
{
	struct pace p = { 0 };
	uint64_t t = 5000 * MS;
	CHECK_NEAR(pace_note(&p, t, true), 0, 0); /* the first key: nothing known */
	CHECK_NEAR(pace_note(&p, t += 150 * MS, true), 0, 0);
	CHECK_NEAR(pace_note(&p, t += 150 * MS, true), 0, 0); /* two gaps: too few */
	CHECK_NEAR(pace_note(&p, t += 150 * MS, true), PACE_SHARE * 150, 1e-9);
	/* one slow key does not move the median */
	CHECK_NEAR(pace_note(&p, t += 600 * MS, true), PACE_SHARE * 150, 1e-9);
	CHECK_NEAR(pace_note(&p, t += 140 * MS, true), PACE_SHARE * 150, 1e-9);
}

TEST(a_pause_or_an_ask_sets_no_deadline)
{
	struct pace p = { 0 };
	uint64_t t = 5000 * MS;
	for (int i = 0; i < 5; i++) pace_note(&p, t += 120 * MS, true);
	CHECK(pace_note(&p, t += 120 * MS, true) > 0);
	/* the user stopped: this request may be waited for */
	CHECK_NEAR(pace_note(&p, t += 1500 * MS, true), 0, 0);
	/* the burst goes on from there with the pace it had */
	CHECK_NEAR(pace_note(&p, t += 120 * MS, true), PACE_SHARE * 120, 1e-9);
	/* an explicit ask, and the key after it, keep the whole deadline */
	CHECK_NEAR(pace_note(&p, t += 100 * MS, false), 0, 0);
	CHECK_NEAR(pace_note(&p, t += 120 * MS, true), 0, 0);
	CHECK(pace_note(&p, t += 120 * MS, true) > 0);
	/* a clock that did not move (two requests at once) is no gap */
	CHECK_NEAR(pace_note(&p, t, true), 0, 0);
}

TEST(a_burst_too_fast_to_answer_between_keys_sets_none)
{
	struct pace p = { 0 };
	uint64_t t = 5000 * MS;
	for (int i = 0; i < 8; i++) pace_note(&p, t += 40 * MS, true);
	CHECK_NEAR(pace_note(&p, t += 40 * MS, true), 0, 0);
	/* and the pace follows the typist: the old gaps leave the median */
	double due = 0;
	for (int i = 0; i < PACE_SAMPLES; i++) due = pace_note(&p, t += 200 * MS, true);
	CHECK_NEAR(due, PACE_SHARE * 200, 1e-9);
}

TEST_MAIN()
