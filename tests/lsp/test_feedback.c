/* test_feedback.c - what became of the suggestions shown (lsp/feedback.c):
 * shown / accepted / partly accepted / dismissed per language and shape,
 * typing along, stale ids, and the learned floor of minConfidence "auto". */
#include "feedback.h"

#include <errno.h>
#include <string.h>

#include "harness.h"

#define URI "file:///t.py"

/* The count key of language lang, shape ("single"/"block"). */
static json_int_t count(const struct feedback *fb, const char *lang, const char *shape,
                        const char *key)
{
	json_t *o = feedback_to_json(fb);
	json_int_t v = json_integer_value(
	        json_object_get(json_object_get(json_object_get(o, lang), shape), key));
	json_decref(o);
	return v;
}

/* The user types s at offset at of d (one didChange). */
static void type(struct feedback *fb, struct doc *d, size_t at, const char *s)
{
	doc_replace(d, at, at, s, strlen(s));
	feedback_edit(fb, URI, d, at, at, strlen(s));
}

TEST(shown_then_accepted_counts_the_characters_not_typed)
{
	struct feedback *fb = feedback_new();
	REQUIRE(fb);
	/* "pri" typed at 0..3, the item replaces from 0: "print(x)" */
	uint64_t id = feedback_offer(fb, URI, "python", 0, 3, "print(x)", 8, 0.5);
	CHECK(id > 0);
	CHECK_INT_EQ(feedback_shown(fb, id), 0);
	CHECK_INT_EQ(feedback_shown(fb, id), 0); /* shown again: counted once */
	CHECK_INT_EQ(feedback_accepted(fb, id), 0);
	CHECK_INT_EQ(feedback_accepted(fb, id), -EALREADY);
	CHECK_INT_EQ(count(fb, "python", "single", "shown"), 1);
	CHECK_INT_EQ(count(fb, "python", "single", "accepted"), 1);
	CHECK_INT_EQ(count(fb, "python", "single", "acceptedChars"), 5);
	CHECK_INT_EQ(count(fb, "python", "single", "dismissed"), 0);
	CHECK_INT_EQ(feedback_shown(fb, 9999), -ENOENT);
	CHECK_INT_EQ(feedback_accepted(fb, 0), -ENOENT);
	feedback_free(fb);
}

TEST(typed_over_is_dismissed_typed_along_is_not)
{
	struct feedback *fb = feedback_new();
	struct doc *d = doc_new("x = ", 4);
	REQUIRE(fb && d);
	uint64_t a = feedback_offer(fb, URI, "python", 4, 4, "foo(1)\nbar()", 12, 0.5);
	feedback_shown(fb, a);
	type(fb, d, 4, "fo"); /* along */
	CHECK_INT_EQ(count(fb, "python", "block", "dismissed"), 0);
	type(fb, d, 6, "x"); /* over */
	CHECK_INT_EQ(count(fb, "python", "block", "shown"), 1);
	CHECK_INT_EQ(count(fb, "python", "block", "dismissed"), 1);
	CHECK_INT_EQ(feedback_accepted(fb, a), -EALREADY); /* closed */
	CHECK_INT_EQ(count(fb, "python", "block", "accepted"), 0);
	doc_free(d);
	feedback_free(fb);
}

TEST(typed_to_the_end_is_accepted_and_a_later_accept_is_not_counted_twice)
{
	struct feedback *fb = feedback_new();
	struct doc *d = doc_new("f(", 2);
	REQUIRE(fb && d);
	/* an auto-closed ")" after the cursor is not typed along */
	doc_replace(d, 2, 2, ")", 1);
	uint64_t a = feedback_offer(fb, URI, "c", 2, 2, "x)", 2, 0.7);
	feedback_shown(fb, a);
	type(fb, d, 2, "x"); /* "f(x)": the ")" was there already */
	CHECK_INT_EQ(count(fb, "c", "single", "accepted"), 0);
	/* a client's accept replaces the range with the whole text */
	doc_replace(d, 2, 4, "x)", 2);
	feedback_edit(fb, URI, d, 2, 4, 2);
	CHECK_INT_EQ(count(fb, "c", "single", "accepted"), 1);
	CHECK_INT_EQ(feedback_accepted(fb, a), -EALREADY);
	CHECK_INT_EQ(count(fb, "c", "single", "accepted"), 1);
	CHECK_INT_EQ(count(fb, "c", "single", "acceptedChars"), 2);
	doc_free(d);
	feedback_free(fb);
}

TEST(partly_accepted_in_utf16_units_then_closed_is_not_dismissed)
{
	struct feedback *fb = feedback_new();
	struct doc *d = doc_new("", 0);
	REQUIRE(fb && d);
	/* "é😀 rest": é is 1 UTF-16 unit, the emoji 2 */
	const char *t = "\xc3\xa9\xf0\x9f\x98\x80 rest";
	uint64_t a = feedback_offer(fb, URI, "python", 0, 0, t, strlen(t), 0.4);
	CHECK_INT_EQ(feedback_partly_accepted(fb, a, 3, POS_ENCODING_UTF16), 0);
	CHECK_INT_EQ(count(fb, "python", "single", "shown"), 1); /* implied */
	CHECK_INT_EQ(count(fb, "python", "single", "partlyAccepted"), 1);
	CHECK_INT_EQ(count(fb, "python", "single", "acceptedChars"), 2);
	CHECK_INT_EQ(feedback_partly_accepted(fb, a, 4, POS_ENCODING_UTF16), 0);
	CHECK_INT_EQ(count(fb, "python", "single", "partlyAccepted"), 1); /* once an item */
	CHECK_INT_EQ(count(fb, "python", "single", "acceptedChars"), 3);
	type(fb, d, 0, "zzz"); /* then typed over */
	CHECK_INT_EQ(count(fb, "python", "single", "dismissed"), 0);
	feedback_doc_closed(fb, URI);
	doc_free(d);
	feedback_free(fb);
}

TEST(a_continuation_of_a_typed_along_item_is_not_shown_twice)
{
	struct feedback *fb = feedback_new();
	struct doc *d = doc_new("", 0);
	REQUIRE(fb && d);
	uint64_t a = feedback_offer(fb, URI, "go", 0, 0, "return nil", 10, 0.6);
	feedback_shown(fb, a);
	type(fb, d, 0, "re");
	/* the fast path answers the rest; the client shows it */
	uint64_t b = feedback_offer(fb, URI, "go", 2, 2, "turn nil", 8, -1);
	feedback_shown(fb, b);
	CHECK_INT_EQ(count(fb, "go", "single", "shown"), 1);
	CHECK_INT_EQ(count(fb, "go", "single", "dismissed"), 0);
	CHECK_INT_EQ(feedback_accepted(fb, b), 0);
	CHECK_INT_EQ(count(fb, "go", "single", "accepted"), 1);
	CHECK_INT_EQ(count(fb, "go", "single", "acceptedChars"), 8);
	doc_free(d);
	feedback_free(fb);
}

TEST(another_item_shown_dismisses_the_one_before_and_close_dismisses)
{
	struct feedback *fb = feedback_new();
	REQUIRE(fb);
	uint64_t a = feedback_offer(fb, URI, "python", 0, 0, "a", 1, 0.5);
	uint64_t b = feedback_offer(fb, URI, "python", 0, 0, "b", 1, 0.5);
	feedback_shown(fb, a);
	feedback_shown(fb, b); /* cycled */
	CHECK_INT_EQ(count(fb, "python", "single", "shown"), 2);
	CHECK_INT_EQ(count(fb, "python", "single", "dismissed"), 1);
	feedback_doc_closed(fb, URI);
	CHECK_INT_EQ(count(fb, "python", "single", "dismissed"), 2);
	CHECK_INT_EQ(feedback_accepted(fb, b), -EALREADY);
	feedback_free(fb);
}

TEST(evicted_ids_are_stale)
{
	struct feedback *fb = feedback_new();
	REQUIRE(fb);
	uint64_t first = feedback_offer(fb, URI, "python", 0, 0, "a", 1, 0.5);
	for (int i = 0; i < FEEDBACK_ITEMS; i++)
		feedback_offer(fb, URI, "python", 0, 0, "b", 1, 0.5);
	CHECK_INT_EQ(feedback_shown(fb, first), -ENOENT);
	CHECK_INT_EQ(count(fb, "python", "single", "shown"), 0);
	feedback_free(fb);
}

/* n items of confidence conf shown, each accepted or dismissed. */
static void shown_n(struct feedback *fb, const char *lang, int n, double conf, bool accept)
{
	for (int i = 0; i < n; i++) {
		uint64_t id = feedback_offer(fb, URI, lang, 0, 0, "x", 1, conf);
		feedback_shown(fb, id);
		if (accept)
			feedback_accepted(fb, id);
		else
			feedback_doc_closed(fb, URI);
	}
}

TEST(the_floor_needs_samples_and_stops_at_them)
{
	struct feedback *fb = feedback_new();
	REQUIRE(fb);
	shown_n(fb, "python", FEEDBACK_MIN_SAMPLES - 1, 0.10, false);
	shown_n(fb, "python", 30, 0.80, true);
	CHECK_NEAR(feedback_threshold(fb, "python", FEEDBACK_SINGLE), 0, 0);
	CHECK(!feedback_gate(fb, "python", "x", 1, 0.05));
	shown_n(fb, "python", 1, 0.12, false);
	/* 30 below 0.15, none accepted; nothing between 0.15 and 0.8 */
	CHECK_NEAR(feedback_threshold(fb, "python", FEEDBACK_SINGLE), 0.15, 1e-9);
	CHECK_NEAR(feedback_threshold(fb, "python", FEEDBACK_BLOCK), 0, 0);
	CHECK_NEAR(feedback_threshold(fb, "c", FEEDBACK_SINGLE), 0, 0);
	/* one accepted in 31 below 0.15 is within 5% */
	shown_n(fb, "python", 1, 0.11, true);
	CHECK_NEAR(feedback_threshold(fb, "python", FEEDBACK_SINGLE), 0.15, 1e-9);
	/* two is not */
	shown_n(fb, "python", 1, 0.11, true);
	CHECK_NEAR(feedback_threshold(fb, "python", FEEDBACK_SINGLE), 0, 0);
	feedback_free(fb);
}

TEST(many_weak_rejected_do_not_carry_the_floor_over_strong_accepted)
{
	struct feedback *fb = feedback_new();
	REQUIRE(fb);
	shown_n(fb, "go", 100, 0.05, false);
	shown_n(fb, "go", 2, 0.6, true); /* 2 in 102 under 0.65: within 5% overall */
	shown_n(fb, "go", 3, 0.7, false);
	CHECK_NEAR(feedback_threshold(fb, "go", FEEDBACK_SINGLE), 0.1, 1e-9);
	CHECK(!feedback_gate(fb, "go", "x", 1, 0.6));
	feedback_free(fb);
}

TEST(the_gate_hides_under_the_floor_but_explores_one_in_ten)
{
	struct feedback *fb = feedback_new();
	REQUIRE(fb);
	shown_n(fb, "rust", 40, 0.05, false);
	shown_n(fb, "rust", 10, 0.6, true);
	CHECK_NEAR(feedback_threshold(fb, "rust", FEEDBACK_SINGLE), 0.1, 1e-9);
	int hidden = 0;
	for (int i = 0; i < 20; i++) hidden += feedback_gate(fb, "rust", "x", 1, 0.07);
	CHECK_INT_EQ(hidden, 18);
	CHECK_INT_EQ(count(fb, "rust", "single", "hidden"), 18);
	CHECK(!feedback_gate(fb, "rust", "x", 1, 0.5));
	/* one taken under the floor (an explored one, or "auto" off) */
	CHECK_INT_EQ(count(fb, "rust", "single", "acceptedUnderFloor"), 0);
	shown_n(fb, "rust", 1, 0.07, true);
	shown_n(fb, "rust", 1, 0.3, true);
	CHECK_INT_EQ(count(fb, "rust", "single", "acceptedUnderFloor"), 1);
	CHECK(!feedback_gate(fb, "rust", "x", 1, -1));      /* unknown */
	CHECK(!feedback_gate(fb, "rust", "x\ny", 3, 0.07)); /* a block: its own counts */
	json_t *o = feedback_to_json(fb);
	CHECK_NEAR(json_real_value(json_object_get(
	                   json_object_get(json_object_get(o, "rust"), "single"), "minConfidence")),
	           0.1, 1e-9);
	json_decref(o);
	feedback_free(fb);
}

TEST(shapes)
{
	CHECK_INT_EQ(feedback_shape_of("foo()", 5), FEEDBACK_SINGLE);
	CHECK_INT_EQ(feedback_shape_of("foo()\n", 6), FEEDBACK_SINGLE);
	CHECK_INT_EQ(feedback_shape_of("if x:\n    y", 11), FEEDBACK_BLOCK);
}

TEST_MAIN()
