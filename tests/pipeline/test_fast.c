/*
 * test_fast.c - the fast path's memory (pipeline/pipeline_fast.c) and the
 * rules a live candidate survives or ends by, without a model: typed along
 * (the rest at once), asked again at the same place (only behind a live
 * candidate), an edit outside the candidates' context (answered), one
 * inside it or a key that is not the suggestion's (not answered, and
 * fast_edit ends the live candidate), growth past what was typed
 * (fast_grow), an empty first answer adopting its first growth; the past
 * answers (a result cache by context): backspace, undo and a return to a
 * place answered at once, answers computed ahead as if accepted
 * (fast_ahead), at most FAST_PAST_MAX kept; the places the memory covers
 * (fast_covers: no hint is needed there).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pipeline_fast.h"

/* A request for uri over text with the cursor at the '|' (removed). */
static struct completion_request *req_at(const char *text_with_bar)
{
	struct completion_request *r = calloc(1, sizeof *r);
	const char *bar = strchr(text_with_bar, '|');
	size_t at = (size_t)(bar - text_with_bar), n = strlen(text_with_bar) - 1;
	r->uri = strdup("file:///a.py");
	r->text = malloc(n + 1);
	memcpy(r->text, text_with_bar, at);
	strcpy(r->text + at, bar + 1);
	r->text_len = n;
	r->cursor = at;
	return r;
}

static void req_free(struct completion_request *r)
{
	free(r->uri);
	free(r->text);
	free(r);
}

/* Remembers "total = a + b" shown at the '|' of text, its context the
 * bytes [ctx_start, ctx_end) (0, 0: all), behind live candidate live_id. */
static void record(struct fast_doc **docs, const char *text, const char *cand, uint64_t live_id,
                   size_t ctx_start, size_t ctx_end)
{
	struct completion_request *r = req_at(text);
	struct completion_candidate c = {
		.text = (char *)cand, .text_len = strlen(cand), .start = r->cursor, .end = r->cursor
	};
	struct completion_result res = { .items = &c, .count = 1 };
	struct fast_origin o = { .live_id = live_id,
		                 .live_running = live_id != 0,
		                 .ctx_start = ctx_start,
		                 .ctx_end = ctx_end };
	fast_record(docs, r, &res, &o);
	req_free(r);
}

/* The fast answer's top text at the '|' of text, or NULL (caller frees). */
static char *answer(struct fast_doc **docs, const char *text, struct fast_origin *from)
{
	struct completion_request *r = req_at(text);
	struct completion_result out = { 0 };
	struct fast_origin f;
	char *t = NULL;
	if (fast_answer(docs, r, &out, &f)) {
		t = strdup(out.count ? out.items[0].text : ""); /* "": answered, nothing yet */
		for (size_t i = 0; i < out.count; i++) free(out.items[i].text);
		free(out.items);
		if (from) *from = f;
	}
	req_free(r);
	return t;
}

#define HEAD "import os\n\n\ndef add(a, b):\n    "
#define TAIL "\n    return total\n"

/* An editor's auto-closed ")" after the cursor changes what the
 * remembered candidates were closed against: typing along then is not
 * answered from them (the old "f(x))" would write one paren too many),
 * whatever context the prompt took, at the end of the text too. */
TEST(a_change_after_the_cursor_on_its_line_is_not_typed_along)
{
	struct fast_doc *docs = NULL;
	/* the context: only the prefix (ctx_end at the cursor) */
	record(&docs, "x = 1\nprint(|", "area(1.0))", 7, 0, 13);
	char *t = answer(&docs, "x = 1\nprint(a|)", NULL);
	CHECK(t == NULL);
	free(t);
	t = answer(&docs, "x = 1\nprint(a|", NULL); /* nothing after: still typed along */
	CHECK(t && !strcmp(t, "rea(1.0))"));
	free(t);
	record(&docs, "x = 1\nprint(|\ny = 2\n", "area(1.0))", 7, 0, 13);
	t = answer(&docs, "x = 1\nprint(ar|)\ny = 2\n", NULL);
	CHECK(t == NULL);
	free(t);
	fast_doc_free_all(&docs);
}

TEST(typed_along_answers_the_rest)
{
	struct fast_doc *docs = NULL;
	record(&docs, HEAD "|" TAIL, "total = a + b", 0, 0, 0);
	char *t = answer(&docs, HEAD "tot|" TAIL, NULL);
	CHECK_STR_EQ(t, "al = a + b");
	free(t);
	/* a key that is not the suggestion's: no answer */
	CHECK(answer(&docs, HEAD "tox|" TAIL, NULL) == NULL);
	fast_doc_free_all(&docs);
}

TEST(reask_at_the_same_place_only_behind_a_live_candidate)
{
	struct fast_doc *docs = NULL;
	record(&docs, HEAD "|" TAIL, "total = a + b", 0, 0, 0);
	CHECK(answer(&docs, HEAD "|" TAIL, NULL) == NULL); /* the model asks anew */
	record(&docs, HEAD "|" TAIL, "total = a + b", 7, 0, 0);
	struct fast_origin f;
	char *t = answer(&docs, HEAD "|" TAIL, &f);
	CHECK_STR_EQ(t, "total = a + b");
	CHECK_INT_EQ(f.live_id, 7);
	free(t);
	fast_doc_free_all(&docs);
}

TEST(an_edit_outside_the_context_is_answered_inside_not)
{
	struct fast_doc *docs = NULL;
	const char *text = HEAD "|" TAIL;
	size_t cursor = strlen(HEAD);
	/* the context: from "def add" to the end */
	size_t ctx_start = (size_t)(strstr(text, "def add") - text);
	record(&docs, text, "total = a + b", 3, ctx_start, strlen(text) - 1);
	struct fast_origin f;
	char *t = answer(&docs, "import sys, os\n\n\ndef add(a, b):\n    to|" TAIL, &f);
	CHECK_STR_EQ(t, "tal = a + b");
	CHECK_INT_EQ(f.live_typed, 2);
	CHECK_INT_EQ(f.ctx_start, ctx_start + 5); /* moved with the edit above */
	free(t);
	/* an edit inside it (the parameters) */
	CHECK(answer(&docs, "import os\n\n\ndef add(a, c):\n    to|" TAIL, NULL) == NULL);
	(void)cursor;
	fast_doc_free_all(&docs);
}

TEST(fast_edit_ends_a_live_candidate_only_when_contradicted)
{
	struct fast_doc *docs = NULL;
	const char *text = HEAD "|" TAIL;
	size_t cursor = strlen(HEAD);
	size_t ctx_start = (size_t)(strstr(text, "def add") - text);
	record(&docs, text, "total = a + b", 5, ctx_start, strlen(text) - 1);
	/* typed along: survives */
	const char *typed = HEAD "t" TAIL;
	CHECK_INT_EQ(
	        fast_edit(&docs, "file:///a.py", typed, strlen(typed), cursor, cursor, cursor + 1),
	        0);
	CHECK(fast_live_running(&docs, "file:///a.py"));
	/* then an edit far above: survives (the cursor moved with it) */
	const char *above = "import sys, os\n\n\ndef add(a, b):\n    t" TAIL;
	CHECK_INT_EQ(fast_edit(&docs, "file:///a.py", above, strlen(above), 7, 7, 12), 0);
	CHECK(fast_live_running(&docs, "file:///a.py"));
	/* a key that is not the suggestion's next: ends it, its id returned */
	const char *wrong = "import sys, os\n\n\ndef add(a, b):\n    tx" TAIL;
	CHECK_INT_EQ(fast_edit(&docs, "file:///a.py", wrong, strlen(wrong), cursor + 6, cursor + 6,
	                       cursor + 7),
	             5);
	CHECK(!fast_live_running(&docs, "file:///a.py"));
	fast_doc_free_all(&docs);
}

TEST(typed_to_the_end_of_a_live_candidate_waits_for_it)
{
	struct fast_doc *docs = NULL;
	record(&docs, HEAD "|" TAIL, "total", 9, 0, 0);
	size_t cursor = strlen(HEAD);
	/* the last key of what it has decoded so far: it goes on decoding */
	const char *all = HEAD "total" TAIL;
	CHECK_INT_EQ(fast_edit(&docs, "file:///a.py", all, strlen(all), cursor + 4, cursor + 4,
	                       cursor + 5),
	             0);
	CHECK(fast_live_running(&docs, "file:///a.py"));
	/* asked there: answered at once, with nothing to show yet (the model
	 * starting over would throw the candidate away), and remembered so, as
	 * pipeline.c does with every answer */
	struct completion_request *r = req_at(HEAD "total|" TAIL);
	struct completion_result out = { 0 };
	struct fast_origin f;
	CHECK(fast_answer(&docs, r, &out, &f));
	CHECK_INT_EQ(out.count, 0);
	CHECK_INT_EQ(f.live_id, 9);
	CHECK_INT_EQ(f.live_typed, 5);
	fast_record(&docs, r, &out, &f);
	req_free(r);
	/* it grew: the rest is there at once (its text is from its own cursor) */
	struct completion_candidate g = {
		.text = "total = a + b", .text_len = 13, .start = cursor, .end = cursor
	};
	struct completion_result ext = { .items = &g, .count = 1 };
	bool first;
	CHECK_INT_EQ(fast_grow(&docs, "file:///a.py", 9, &ext, true, &first), 1);
	char *t = answer(&docs, HEAD "total|" TAIL, NULL);
	CHECK_STR_EQ(t, " = a + b");
	free(t);
	/* ended: typed to its end, the model is asked (no memory answers) */
	CHECK(answer(&docs, HEAD "total = a + b|" TAIL, NULL) == NULL);
	fast_doc_free_all(&docs);
}

/* A fast answer is recorded when it is delivered, after the loop's other
 * events: the live candidate it came from may have grown to its end in
 * between. The memory keeps the grown text (recorded as answered, the
 * older text stood for good: nothing grows it after the end). */
TEST(an_answer_recorded_after_its_candidate_grew_keeps_the_growth)
{
	const char *asked[] = { HEAD "|" TAIL, HEAD "to|" TAIL };
	const char *first_text[] = { "total", "tal" },
	           *grown[] = { "total = a + b", "tal = a + b" };
	for (int i = 0; i < 2; i++) {
		struct fast_doc *docs = NULL;
		record(&docs, HEAD "|" TAIL, "total", 9, 0, 0);
		struct completion_request *r = req_at(asked[i]);
		struct completion_result out = { 0 };
		struct fast_origin f;
		REQUIRE(fast_answer(&docs, r, &out, &f));
		REQUIRE(out.count == 1);
		CHECK_STR_EQ(out.items[0].text, first_text[i]);
		struct completion_candidate g = { .text = "total = a + b", .text_len = 13 };
		struct completion_result ext = { .items = &g, .count = 1 };
		bool first;
		CHECK_INT_EQ(fast_grow(&docs, "file:///a.py", 9, &ext, true, &first), 1);
		fast_record(&docs, r, &out, &f);
		free(out.items[0].text);
		free(out.items);
		req_free(r);
		char *t = answer(&docs, asked[i], NULL);
		CHECK_STR_EQ(t, grown[i]);
		free(t);
		CHECK(!fast_live_running(&docs, "file:///a.py"));
		fast_doc_free_all(&docs);
	}
}

TEST(growth_past_what_was_typed)
{
	struct fast_doc *docs = NULL;
	record(&docs, HEAD "|" TAIL, "total", 9, 0, 0);
	struct fast_origin f;
	char *t = answer(&docs, HEAD "to|" TAIL, &f); /* typed along: "tal" */
	CHECK_STR_EQ(t, "tal");
	free(t);
	/* remembered as answered at the new cursor, from the same live candidate */
	struct completion_request *r = req_at(HEAD "to|" TAIL);
	struct completion_candidate c = {
		.text = "tal", .text_len = 3, .start = r->cursor, .end = r->cursor
	};
	struct completion_result res = { .items = &c, .count = 1 };
	fast_record(&docs, r, &res, &f);
	req_free(r);
	/* the live candidate's texts are from its own cursor */
	struct completion_candidate g = { .text = "total = a + b", .text_len = 13 };
	struct completion_result ext = { .items = &g, .count = 1 };
	bool first;
	CHECK_INT_EQ(fast_grow(&docs, "file:///a.py", 8, &ext, false, &first), 0); /* another */
	CHECK_INT_EQ(fast_grow(&docs, "file:///a.py", 9, &ext, false, &first), 1);
	CHECK(first);
	t = answer(&docs, HEAD "to|" TAIL, NULL); /* asked again there */
	CHECK_STR_EQ(t, "tal = a + b");
	free(t);
	CHECK_INT_EQ(fast_grow(&docs, "file:///a.py", 9, &ext, true, &first), 0); /* no longer */
	CHECK(!first);
	CHECK(!fast_live_running(&docs, "file:///a.py"));
	fast_doc_free_all(&docs);
}

TEST(an_empty_first_answer_adopts_its_first_growth)
{
	struct fast_doc *docs = NULL;
	struct completion_request *r = req_at(HEAD "|" TAIL);
	size_t cursor = r->cursor;
	struct completion_result none = { .items = NULL };
	struct fast_origin o = { .live_id = 4, .live_running = true };
	fast_record(&docs, r, &none, &o);
	req_free(r);
	CHECK(answer(&docs, HEAD "|" TAIL, NULL) == NULL); /* nothing yet */
	struct completion_candidate g = {
		.text = "total", .text_len = 5, .start = cursor, .end = cursor
	};
	struct completion_result ext = { .items = &g, .count = 1 };
	bool first;
	CHECK_INT_EQ(fast_grow(&docs, "file:///a.py", 4, &ext, false, &first), 1);
	char *t = answer(&docs, HEAD "|" TAIL, NULL);
	CHECK_STR_EQ(t, "total");
	free(t);
	CHECK_INT_EQ(fast_doc_remove(&docs, "file:///a.py"), 4); /* still going: its id */
	fast_doc_free_all(&docs);
}

/* Remembers the fast answer at the '|' of text as the editor shows it
 * (what pipeline.c does with every answer delivered). */
static void record_answer(struct fast_doc **docs, const char *text)
{
	struct completion_request *r = req_at(text);
	struct completion_result out = { 0 };
	struct fast_origin f;
	if (fast_answer(docs, r, &out, &f)) {
		fast_record(docs, r, &out, &f);
		for (size_t i = 0; i < out.count; i++) free(out.items[i].text);
		free(out.items);
	}
	req_free(r);
}

TEST(backspace_returns_to_a_past_answer)
{
	struct fast_doc *docs = NULL;
	record(&docs, HEAD "|" TAIL, "total = a + b", 0, 0, 0);
	record_answer(&docs, HEAD "t|" TAIL);
	record_answer(&docs, HEAD "to|" TAIL);
	/* two backspaces: the answer at the first place, with nothing typed */
	struct fast_origin f;
	char *t = answer(&docs, HEAD "|" TAIL, &f);
	CHECK_STR_EQ(t, "total = a + b");
	CHECK_INT_EQ(f.source, FAST_SOURCE_PAST);
	CHECK_INT_EQ(f.live_id, 0);
	free(t);
	t = answer(&docs, HEAD "t|" TAIL, &f); /* one: the last answer's place */
	CHECK_STR_EQ(t, "otal = a + b");
	free(t);
	/* typed along the last answer: from it, not from the past */
	t = answer(&docs, HEAD "tot|" TAIL, &f);
	CHECK_STR_EQ(t, "al = a + b");
	CHECK_INT_EQ(f.source, FAST_SOURCE_LAST);
	free(t);
	/* the place with other text around: no answer */
	CHECK(answer(&docs,
	             HEAD "|"
	                  "\n    return 0\n",
	             NULL) == NULL);
	fast_doc_free_all(&docs);
}

TEST(undo_after_an_accept_is_answered_from_the_past)
{
	struct fast_doc *docs = NULL;
	record(&docs, HEAD "|" TAIL, "total = a + b", 0, 0, 0);
	/* accepted, and the model answered after it */
	record(&docs, HEAD "total = a + b|" TAIL, "\n    print(total)", 0, 0, 0);
	char *t = answer(&docs, HEAD "|" TAIL, NULL); /* undo */
	CHECK_STR_EQ(t, "total = a + b");
	free(t);
	/* a past answer's context must hold: an edit inside it is not answered */
	CHECK(answer(&docs, "import os\n\n\ndef add(a, c):\n    |" TAIL, NULL) == NULL);
	fast_doc_free_all(&docs);
}

TEST(an_answer_computed_ahead_answers_after_the_accept)
{
	struct fast_doc *docs = NULL;
	record(&docs, HEAD "|" TAIL, "total = a + b", 0, 0, 0);
	const char *acc = HEAD "total = a + b" TAIL;
	size_t cursor = strlen(HEAD "total = a + b");
	struct completion_candidate c = {
		.text = "\n    print(total)", .text_len = 17, .start = cursor, .end = cursor
	};
	struct completion_result res = { .items = &c, .count = 1 };
	size_t ctx_start = (size_t)(strstr(acc, "def add") - acc);
	CHECK(fast_ahead(&docs, "file:///a.py", acc, strlen(acc), cursor, ctx_start, 0, &res));
	/* the Tab: the suggestion is in the text, the cursor after it */
	struct fast_origin f;
	char *t = answer(&docs, "import sys\n\n\ndef add(a, b):\n    total = a + b|" TAIL, &f);
	CHECK_STR_EQ(t, "\n    print(total)"); /* an edit above its context: still good */
	CHECK_INT_EQ(f.source, FAST_SOURCE_AHEAD);
	free(t);
	t = answer(&docs, HEAD "total = a + b\n    pr|" TAIL, &f); /* typed along it too */
	CHECK_STR_EQ(t, "int(total)");
	free(t);
	/* accepted in part ("total"): the rest, from the last answer */
	t = answer(&docs, HEAD "total|" TAIL, &f);
	CHECK_STR_EQ(t, " = a + b");
	CHECK_INT_EQ(f.source, FAST_SOURCE_LAST);
	free(t);
	fast_doc_free_all(&docs);
}

/* Whether fast_covers holds at the '|' of text. */
static bool covers(struct fast_doc **docs, const char *text)
{
	struct completion_request *r = req_at(text);
	bool yes = fast_covers(docs, r);
	req_free(r);
	return yes;
}

TEST(the_memory_covers_typing_along_to_the_end_not_elsewhere)
{
	struct fast_doc *docs = NULL;
	record(&docs, HEAD "|" TAIL, "total", 0, 0, 0); /* ended: no live candidate */
	CHECK(covers(&docs, HEAD "to|" TAIL));          /* typed along: answered */
	CHECK(covers(&docs, HEAD "total|" TAIL));       /* to its end: as if accepted */
	CHECK(!covers(&docs, HEAD "tx|" TAIL));         /* another key */
	CHECK(!covers(&docs, HEAD "total2|" TAIL));     /* past its end */
	CHECK(!covers(&docs, "import sys\n\n\ndef add(a, b):\n    to|" TAIL)); /* context changed */
	struct completion_request *r = req_at(HEAD "total|" TAIL);
	r->uri[8] = 'b'; /* another document */
	CHECK(!fast_covers(&docs, r));
	req_free(r);
	fast_doc_free_all(&docs);
}

TEST(past_answers_are_few_and_one_per_place)
{
	struct fast_doc *docs = NULL;
	char text[128], cand[32];
	/* FAST_PAST_MAX + 2 places, each answered twice */
	for (int i = 0; i < FAST_PAST_MAX + 3; i++)
		for (int twice = 0; twice < 2; twice++) {
			snprintf(text, sizeof text, "x%d = |\n", i);
			snprintf(cand, sizeof cand, "value%d", i);
			record(&docs, text, cand, 0, 0, 0);
		}
	/* the last is the last answer; the FAST_PAST_MAX before it are kept
	 * (a place answered twice kept once), older ones not */
	for (int i = 0; i < FAST_PAST_MAX + 2; i++) {
		snprintf(text, sizeof text, "x%d = |\n", i);
		snprintf(cand, sizeof cand, "value%d", i);
		char *t = answer(&docs, text, NULL);
		if (i < 2)
			CHECK(t == NULL);
		else
			CHECK_STR_EQ(t, cand);
		free(t);
	}
	fast_doc_free_all(&docs);
}

TEST_MAIN()
