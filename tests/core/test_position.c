/*
 * test_position.c - LSP positions <-> byte offsets in the three encodings:
 * multi-byte UTF-8, surrogate pairs, CRLF and lone CR, clamping past the end
 * of a line and of the document, snapping inside a character, invalid UTF-8
 * (one unit per byte), and tree-sitter points.
 */
#include <errno.h>

#include "harness.h"
#include "position.h"

static size_t off(struct doc *d, uint32_t line, uint32_t ch, enum pos_encoding e)
{
	struct doc_pos p = { line, ch };
	return doc_offset_at(d, p, e);
}

#define CHECK_POS(d, offset, enc, l, c)                         \
	do {                                                    \
		struct doc_pos p_ = doc_pos_at(d, offset, enc); \
		CHECK_INT_EQ(p_.line, l);                       \
		CHECK_INT_EQ(p_.character, c);                  \
	} while (0)

TEST(encoding_names)
{
	enum pos_encoding e;
	CHECK_INT_EQ(pos_encoding_from_name("utf-8", &e), 0);
	CHECK_INT_EQ(e, POS_ENCODING_UTF8);
	CHECK_INT_EQ(pos_encoding_from_name("utf-32", &e), 0);
	CHECK_INT_EQ(e, POS_ENCODING_UTF32);
	CHECK_INT_EQ(pos_encoding_from_name("utf-16", &e), 0);
	CHECK_INT_EQ(e, POS_ENCODING_UTF16);
	CHECK_INT_EQ(pos_encoding_from_name("latin1", &e), -EINVAL);
	CHECK_STR_EQ(pos_encoding_name(POS_ENCODING_UTF16), "utf-16");
}

/* "aé€😀b": a (1 byte), é (2), € (3), 😀 (4, a surrogate pair), b. */
TEST(multibyte_and_surrogates)
{
	const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
	                "b";
	struct doc *d = doc_new(s, strlen(s));
	REQUIRE(d);
	/* byte offsets of each char: a0 é1 €3 😀6 b10 end11 */
	CHECK_INT_EQ(off(d, 0, 0, POS_ENCODING_UTF16), 0);
	CHECK_INT_EQ(off(d, 0, 1, POS_ENCODING_UTF16), 1);
	CHECK_INT_EQ(off(d, 0, 2, POS_ENCODING_UTF16), 3);
	CHECK_INT_EQ(off(d, 0, 3, POS_ENCODING_UTF16), 6);
	CHECK_INT_EQ(off(d, 0, 4, POS_ENCODING_UTF16), 6); /* inside the pair: snaps */
	CHECK_INT_EQ(off(d, 0, 5, POS_ENCODING_UTF16), 10);
	CHECK_INT_EQ(off(d, 0, 6, POS_ENCODING_UTF16), 11);
	CHECK_INT_EQ(off(d, 0, 60, POS_ENCODING_UTF16), 11);
	CHECK_INT_EQ(off(d, 0, 3, POS_ENCODING_UTF32), 6);
	CHECK_INT_EQ(off(d, 0, 4, POS_ENCODING_UTF32), 10);
	CHECK_INT_EQ(off(d, 0, 5, POS_ENCODING_UTF32), 11);
	CHECK_INT_EQ(off(d, 0, 2, POS_ENCODING_UTF8), 1); /* inside é: snaps */
	CHECK_INT_EQ(off(d, 0, 3, POS_ENCODING_UTF8), 3);
	CHECK_INT_EQ(off(d, 0, 8, POS_ENCODING_UTF8), 6);
	CHECK_INT_EQ(off(d, 0, 10, POS_ENCODING_UTF8), 10);
	CHECK_POS(d, 6, POS_ENCODING_UTF16, 0, 3);
	CHECK_POS(d, 10, POS_ENCODING_UTF16, 0, 5);
	CHECK_POS(d, 11, POS_ENCODING_UTF16, 0, 6);
	CHECK_POS(d, 8, POS_ENCODING_UTF16, 0, 3); /* inside 😀: snaps */
	CHECK_POS(d, 10, POS_ENCODING_UTF32, 0, 4);
	CHECK_POS(d, 10, POS_ENCODING_UTF8, 0, 10);
	CHECK_POS(d, 2, POS_ENCODING_UTF8, 0, 1);
	doc_free(d);
}

TEST(crlf_and_lone_cr)
{
	const char *s = "ab\r\ncd\ref\ng";
	struct doc *d = doc_new(s, strlen(s));
	REQUIRE(d);
	CHECK_INT_EQ(off(d, 0, 2, POS_ENCODING_UTF16), 2);
	CHECK_INT_EQ(off(d, 0, 3, POS_ENCODING_UTF16), 2); /* past content: before \r\n */
	CHECK_INT_EQ(off(d, 0, 99, POS_ENCODING_UTF16), 2);
	CHECK_INT_EQ(off(d, 1, 0, POS_ENCODING_UTF16), 4);
	CHECK_INT_EQ(off(d, 1, 9, POS_ENCODING_UTF16), 6);
	CHECK_INT_EQ(off(d, 2, 0, POS_ENCODING_UTF16), 7);
	CHECK_INT_EQ(off(d, 2, 5, POS_ENCODING_UTF16), 9);
	CHECK_INT_EQ(off(d, 3, 1, POS_ENCODING_UTF16), 11);
	CHECK_INT_EQ(off(d, 4, 0, POS_ENCODING_UTF16), 11); /* line past the end */
	CHECK_INT_EQ(off(d, 1000, 7, POS_ENCODING_UTF8), 11);
	CHECK_POS(d, 3, POS_ENCODING_UTF16, 0, 2); /* between \r and \n */
	CHECK_POS(d, 2, POS_ENCODING_UTF16, 0, 2);
	CHECK_POS(d, 4, POS_ENCODING_UTF16, 1, 0);
	CHECK_POS(d, 6, POS_ENCODING_UTF16, 1, 2);
	CHECK_POS(d, 7, POS_ENCODING_UTF16, 2, 0);
	CHECK_POS(d, 11, POS_ENCODING_UTF16, 3, 1);
	CHECK_POS(d, 500, POS_ENCODING_UTF16, 3, 1);
	doc_free(d);
}

/* Invalid bytes count one unit each, in every encoding. */
TEST(invalid_utf8)
{
	/* x, stray continuation 80, truncated E2 82 followed by 'y', overlong C0 AF,
	 * encoded surrogate ED A0 80, F5, then z. */
	const char s[] = "x\x80\xe2\x82y\xc0\xaf\xed\xa0\x80\xf5z";
	size_t n = sizeof s - 1;
	struct doc *d = doc_new(s, n);
	REQUIRE(d);
	for (int e = 0; e < 3; e++) {
		for (uint32_t i = 0; i <= n; i++)
			CHECK_INT_EQ(off(d, 0, i, (enum pos_encoding)e), i);
		for (uint32_t i = 0; i <= n; i++) CHECK_POS(d, i, (enum pos_encoding)e, 0, i);
	}
	doc_free(d);
}

TEST(truncated_sequence_at_line_end)
{
	/* E2 82 then \n: the sequence cannot take the newline. */
	const char s[] = "\xe2\x82\nq";
	struct doc *d = doc_new(s, sizeof s - 1);
	REQUIRE(d);
	CHECK_INT_EQ(off(d, 0, 1, POS_ENCODING_UTF16), 1);
	CHECK_INT_EQ(off(d, 0, 2, POS_ENCODING_UTF16), 2);
	CHECK_INT_EQ(off(d, 0, 3, POS_ENCODING_UTF16), 2);
	CHECK_INT_EQ(off(d, 1, 1, POS_ENCODING_UTF16), 4);
	doc_free(d);
}

/* Characters that straddle chunk boundaries are decoded whole. */
TEST(long_line_of_emoji)
{
	size_t count = 5000;
	char *buf = malloc(count * 4 + 1);
	for (size_t i = 0; i < count; i++) memcpy(buf + i * 4, "\xf0\x9f\x98\x80", 4);
	buf[count * 4] = 'e';
	struct doc *d = doc_new(buf, count * 4 + 1);
	REQUIRE(d);
	/* Shift the chunking so characters do straddle boundaries. */
	CHECK_INT_EQ(doc_replace(d, 0, 0, "ab", 2), 0);
	CHECK_INT_EQ(off(d, 0, 2 + 2 * 4000, POS_ENCODING_UTF16), 2 + 4 * 4000);
	CHECK_INT_EQ(off(d, 0, 2 + 2 * 4000 + 1, POS_ENCODING_UTF16), 2 + 4 * 4000);
	CHECK_INT_EQ(off(d, 0, 2 + 4000, POS_ENCODING_UTF32), 2 + 4 * 4000);
	CHECK_INT_EQ(off(d, 0, 2 + (uint32_t)count, POS_ENCODING_UTF32), 2 + 4 * count);
	CHECK_POS(d, 2 + 4 * 4000 + 3, POS_ENCODING_UTF16, 0, 2 + 2 * 4000);
	CHECK_POS(d, 3 + 4 * count, POS_ENCODING_UTF16, 0, 3 + 2 * count);
	int bad = 0;
	for (size_t i = 0; i < count; i += 7) {
		struct doc_pos p = doc_pos_at(d, 2 + 4 * i, POS_ENCODING_UTF16);
		if (p.character != 2 + 2 * i) bad++;
	}
	CHECK_INT_EQ(bad, 0);
	free(buf);
	doc_free(d);
}

/* The 8-bytes-at-a-time ASCII skip must stop exactly at non-ASCII bytes,
 * terminators, the requested unit count and the requested offset. */
TEST(long_ascii_line_with_one_accent)
{
	size_t n = 10000;
	char *buf = malloc(n + 3);
	for (size_t i = 0; i < n; i++) buf[i] = (char)('a' + i % 26);
	memcpy(buf + 5003, "\xc3\xa9", 2); /* e-acute replaces bytes 5003, 5004 */
	buf[n] = '\r';
	buf[n + 1] = 'q';
	struct doc *d = doc_new(buf, n + 2);
	REQUIRE(d);
	for (uint32_t c = 4990; c < 5010; c++) {
		size_t want = c <= 5003 ? c : (size_t)c + 1;
		CHECK_INT_EQ(off(d, 0, c, POS_ENCODING_UTF16), want);
		CHECK_INT_EQ(off(d, 0, c, POS_ENCODING_UTF8), c == 5004 ? 5003 : c);
	}
	CHECK_INT_EQ(off(d, 0, 20000, POS_ENCODING_UTF16), n);
	CHECK_POS(d, 5004, POS_ENCODING_UTF16, 0, 5003);
	CHECK_POS(d, 5005, POS_ENCODING_UTF16, 0, 5004);
	CHECK_POS(d, n, POS_ENCODING_UTF16, 0, n - 1);
	CHECK_POS(d, n + 1, POS_ENCODING_UTF16, 1, 0);
	for (size_t o = 0; o < 64; o++) CHECK_POS(d, o, POS_ENCODING_UTF32, 0, o);
	free(buf);
	doc_free(d);
}

TEST(tree_sitter_points)
{
	const char *s = "ab\r\ncd\ref\ng";
	struct doc *d = doc_new(s, strlen(s));
	REQUIRE(d);
	struct doc_point p = doc_point_at(d, 0);
	CHECK_INT_EQ(p.row, 0);
	CHECK_INT_EQ(p.column, 0);
	p = doc_point_at(d, 3); /* the \n itself is still on row 0 */
	CHECK_INT_EQ(p.row, 0);
	CHECK_INT_EQ(p.column, 3);
	p = doc_point_at(d, 4);
	CHECK_INT_EQ(p.row, 1);
	CHECK_INT_EQ(p.column, 0);
	p = doc_point_at(d, 8); /* lone \r does not start a row */
	CHECK_INT_EQ(p.row, 1);
	CHECK_INT_EQ(p.column, 4);
	p = doc_point_at(d, 11);
	CHECK_INT_EQ(p.row, 2);
	CHECK_INT_EQ(p.column, 1);
	p = doc_point_at(d, 99);
	CHECK_INT_EQ(p.row, 2);
	CHECK_INT_EQ(p.column, 1);
	doc_free(d);
}

TEST(valid_utf8_prefixes)
{
	CHECK_INT_EQ(pos_utf8_valid_prefix("abc", 3), 3);
	CHECK_INT_EQ(pos_utf8_valid_prefix("", 0), 0);
	CHECK_INT_EQ(pos_utf8_valid_prefix("a\xc3\xa9"
	                                   "b",
	                                   4),
	             4);                                                 /* é */
	CHECK_INT_EQ(pos_utf8_valid_prefix("ab\xe5\x86", 4), 2);         /* 内, cut short */
	CHECK_INT_EQ(pos_utf8_valid_prefix("ab\xf0\x9f\x98\x80", 6), 6); /* an emoji */
	CHECK_INT_EQ(pos_utf8_valid_prefix("ab\xf0\x9f\x98", 5), 2);
	CHECK_INT_EQ(pos_utf8_valid_prefix("a\x80"
	                                   "b",
	                                   3),
	             1); /* stray continuation */
	CHECK_INT_EQ(pos_utf8_valid_prefix("a\xc0\xaf"
	                                   "b",
	                                   4),
	             1);                                                /* overlong */
	CHECK_INT_EQ(pos_utf8_valid_prefix("a\xed\xa0\x80", 4), 1);     /* a surrogate */
	CHECK_INT_EQ(pos_utf8_valid_prefix("a\xf5\x80\x80\x80", 5), 1); /* past U+10FFFF */
}

TEST_MAIN()
