/*
 * test_document.c - struct doc: construction, line index with all three
 * terminators, edits on both paths (in-chunk and across chunks), chunk
 * reads and the CRLF-across-chunks rule.
 */
#include <errno.h>

#include "harness.h"
#include "document.h"

static char *text_of(struct doc *d)
{
	return doc_text(d);
}

TEST(empty_document)
{
	struct doc *d = doc_new(NULL, 0);
	REQUIRE(d);
	CHECK_INT_EQ(doc_length(d), 0);
	CHECK_INT_EQ(doc_line_count(d), 1);
	CHECK_INT_EQ(doc_line_start(d, 0), 0);
	CHECK_INT_EQ(doc_line_start(d, 5), 0);
	CHECK_INT_EQ(doc_line_end(d, 0), 0);
	size_t len = 99;
	const char *c = doc_chunk(d, 0, &len);
	CHECK(c != NULL);
	CHECK_INT_EQ(len, 0);
	char *t = text_of(d);
	CHECK_STR_EQ(t, "");
	free(t);
	doc_free(d);
	doc_free(NULL);
}

TEST(three_terminators)
{
	const char *s = "a\nbb\r\nccc\rdddd";
	struct doc *d = doc_new(s, strlen(s));
	REQUIRE(d);
	CHECK_INT_EQ(doc_line_count(d), 4);
	CHECK_INT_EQ(doc_line_start(d, 0), 0);
	CHECK_INT_EQ(doc_line_start(d, 1), 2);
	CHECK_INT_EQ(doc_line_start(d, 2), 6);
	CHECK_INT_EQ(doc_line_start(d, 3), 10);
	CHECK_INT_EQ(doc_line_start(d, 4), 14);
	CHECK_INT_EQ(doc_line_end(d, 0), 1);
	CHECK_INT_EQ(doc_line_end(d, 1), 4);
	CHECK_INT_EQ(doc_line_end(d, 2), 9);
	CHECK_INT_EQ(doc_line_end(d, 3), 14);
	CHECK_INT_EQ(doc_line_at(d, 0), 0);
	CHECK_INT_EQ(doc_line_at(d, 1), 0);
	CHECK_INT_EQ(doc_line_at(d, 2), 1);
	CHECK_INT_EQ(doc_line_at(d, 4), 1); /* at \r */
	CHECK_INT_EQ(doc_line_at(d, 5), 1); /* between \r and \n */
	CHECK_INT_EQ(doc_line_at(d, 6), 2);
	CHECK_INT_EQ(doc_line_at(d, 9), 2);
	CHECK_INT_EQ(doc_line_at(d, 10), 3);
	CHECK_INT_EQ(doc_line_at(d, 100), 3);
	doc_free(d);
}

TEST(trailing_terminator_makes_empty_line)
{
	struct doc *d = doc_new("x\r\n", 3);
	REQUIRE(d);
	CHECK_INT_EQ(doc_line_count(d), 2);
	CHECK_INT_EQ(doc_line_start(d, 1), 3);
	CHECK_INT_EQ(doc_line_end(d, 1), 3);
	doc_free(d);
}

TEST(small_edits)
{
	struct doc *d = doc_new("hello world", 11);
	REQUIRE(d);
	CHECK_INT_EQ(doc_replace(d, 5, 5, ",", 1), 0);
	CHECK_INT_EQ(doc_replace(d, 0, 1, "H", 1), 0);
	CHECK_INT_EQ(doc_replace(d, 7, 12, "there\nfriend", 12), 0);
	char *t = text_of(d);
	CHECK_STR_EQ(t, "Hello, there\nfriend");
	free(t);
	CHECK_INT_EQ(doc_line_count(d), 2);
	CHECK_INT_EQ(doc_replace(d, 3, 2, "", 0), -EINVAL);
	CHECK_INT_EQ(doc_replace(d, 0, 100, "", 0), -EINVAL);
	CHECK_INT_EQ(doc_replace(d, 0, doc_length(d), NULL, 0), 0);
	CHECK_INT_EQ(doc_length(d), 0);
	CHECK_INT_EQ(doc_line_count(d), 1);
	doc_free(d);
}

TEST(crlf_joined_and_split_by_edits)
{
	struct doc *d = doc_new("a\rb", 3);
	REQUIRE(d);
	CHECK_INT_EQ(doc_line_count(d), 2);
	/* Deleting "b" then inserting "\n" after "\r" joins them into one break. */
	CHECK_INT_EQ(doc_replace(d, 2, 3, "\n", 1), 0);
	CHECK_INT_EQ(doc_line_count(d), 2);
	CHECK_INT_EQ(doc_line_start(d, 1), 3);
	CHECK_INT_EQ(doc_line_end(d, 0), 1);
	/* Inserting between \r and \n splits them into two breaks. */
	CHECK_INT_EQ(doc_replace(d, 2, 2, "x", 1), 0);
	CHECK_INT_EQ(doc_line_count(d), 3);
	CHECK_INT_EQ(doc_line_start(d, 1), 2);
	CHECK_INT_EQ(doc_line_start(d, 2), 4);
	doc_free(d);
}

/* A document of many lines spans many chunks; a CRLF placed exactly at a
 * chunk boundary must still count once. */
TEST(large_document_line_index)
{
	size_t lines = 20000;
	char *buf = malloc(lines * 8);
	size_t n = 0;
	for (size_t i = 0; i < lines; i++) {
		n += (size_t)sprintf(buf + n, "%05zu", i % 100000);
		const char *term = i % 3 == 0 ? "\r\n" : i % 3 == 1 ? "\n" : "\r";
		memcpy(buf + n, term, strlen(term));
		n += strlen(term);
	}
	struct doc *d = doc_new(buf, n);
	REQUIRE(d);
	CHECK_INT_EQ(doc_length(d), n);
	CHECK_INT_EQ(doc_line_count(d), lines + 1);
	int bad = 0;
	for (size_t i = 0; i < lines && bad < 5; i++) {
		size_t s = doc_line_start(d, i);
		char tmp[6] = { 0 };
		doc_read(d, s, s + 5, tmp);
		char want[6];
		snprintf(want, sizeof want, "%05zu", i % 100000);
		if (strcmp(tmp, want) != 0 || doc_line_at(d, s) != i ||
		    doc_line_end(d, i) != s + 5) {
			bad++;
			fprintf(stderr, "line %zu: '%s'\n", i, tmp);
		}
	}
	CHECK_INT_EQ(bad, 0);
	/* doc_chunk walks the whole text. */
	size_t at = 0;
	int same = 1;
	while (at < n) {
		size_t len;
		const char *c = doc_chunk(d, at, &len);
		if (len == 0 || memcmp(c, buf + at, len) != 0) {
			same = 0;
			break;
		}
		at += len;
	}
	CHECK(same);
	/* An edit in the middle shifts everything after it. */
	size_t mid = doc_line_start(d, 10000);
	CHECK_INT_EQ(doc_replace(d, mid, mid, "new\nline\n", 9), 0);
	CHECK_INT_EQ(doc_line_count(d), lines + 3);
	CHECK_INT_EQ(doc_line_start(d, 10002), mid + 9);
	free(buf);
	doc_free(d);
}

TEST(big_replace_across_chunks)
{
	size_t n = 100000;
	char *buf = malloc(n);
	for (size_t i = 0; i < n; i++) buf[i] = i % 50 == 49 ? '\n' : (char)('a' + i % 26);
	struct doc *d = doc_new(buf, n);
	REQUIRE(d);
	CHECK_INT_EQ(doc_replace(d, 1000, 90000, "Z\r", 2), 0);
	CHECK_INT_EQ(doc_length(d), n - 89000 + 2);
	char *t = text_of(d);
	CHECK(memcmp(t, buf, 1000) == 0);
	CHECK(memcmp(t + 1000, "Z\r", 2) == 0);
	CHECK(memcmp(t + 1002, buf + 90000, n - 90000) == 0);
	free(t);
	/* 90000 % 50 == 0 so buf[90000] is not \n: 2 lines + ... count breaks */
	size_t breaks = 0;
	for (size_t i = 0; i < 1000; i++) breaks += buf[i] == '\n';
	for (size_t i = 90000; i < n; i++) breaks += buf[i] == '\n';
	CHECK_INT_EQ(doc_line_count(d), breaks + 2);
	free(buf);
	doc_free(d);
}

TEST_MAIN()
