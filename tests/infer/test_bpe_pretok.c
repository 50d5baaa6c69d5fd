/*
 * test_bpe_pretok.c - pre-tokenizer splits and UTF-8 helpers; needs no vocabulary.
 *
 * data/pretok_cases.txt holds, for gpt2, starcoder, llama3, qwen2 and
 * deepseek-coder, the splits that the families' real regexes give (made with
 * the `regex` module by tools/gen_pretok_cases.py) for the 46 vocab test
 * strings and some code; the scanners in bpe.c must give the same pieces.
 * A few splits are also written out by hand below, reasoned from the regexes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tokenizer_internal.h"
#include "unicode.h"

struct pieces {
	const char *text;
	char out[8192]; /* pieces joined by '|' */
	size_t n;
	int count;
};

static int collect(void *ud, size_t s, size_t e)
{
	struct pieces *p = ud;
	if (p->count++ && p->n < sizeof p->out - 1) p->out[p->n++] = '|';
	for (size_t i = s; i < e && p->n < sizeof p->out - 1; i++) p->out[p->n++] = p->text[i];
	p->out[p->n] = 0;
	return 0;
}

static const char *split(enum tokenizer_pre pre, const char *text, struct pieces *p)
{
	memset(p, 0, sizeof *p);
	p->text = text;
	pretok_split(pre, text, strlen(text), collect, p);
	return p->out;
}

TEST(hand_checked_llama3)
{
	struct pieces p;
	/* \p{N}{1,3}: digits in threes; contractions in any case. */
	CHECK_STR_EQ(split(TOKENIZER_PRE_LLAMA3, "x = 1234567", &p), "x| =| |123|456|7");
	CHECK_STR_EQ(split(TOKENIZER_PRE_LLAMA3, "WE'LL don'T", &p), "WE|'LL| don|'T");
	/* [^\r\n\p{L}\p{N}]?\p{L}+ takes one leading non-letter: "(x" and "\tif". */
	CHECK_STR_EQ(split(TOKENIZER_PRE_LLAMA3, "f(x)\tif", &p), "f|(x|)|\tif");
	/* \s*[\r\n]+ ends at the last newline of a space run; \s+(?!\S) leaves one space. */
	CHECK_STR_EQ(split(TOKENIZER_PRE_LLAMA3, "a \n\n  b", &p), "a| \n\n| | b");
	/* ' ?[^\s\p{L}\p{N}]+[\r\n]*' keeps the newlines after punctuation. */
	CHECK_STR_EQ(split(TOKENIZER_PRE_LLAMA3, "end;\n\nx", &p), "end|;\n\n|x");
}

TEST(hand_checked_qwen2)
{
	struct pieces p;
	CHECK_STR_EQ(split(TOKENIZER_PRE_QWEN2, "x = 1234", &p), "x| =| |1|2|3|4");
	CHECK_STR_EQ(split(TOKENIZER_PRE_QWEN2, "I'M here", &p), "I|'M| here");
}

TEST(hand_checked_gpt2_starcoder_deepseek)
{
	struct pieces p;
	/* gpt2: contractions are lower-case only; ' ?\p{N}+' keeps numbers whole. */
	CHECK_STR_EQ(split(TOKENIZER_PRE_GPT2, "it's IT'S 2024", &p), "it|'s| IT|'|S| 2024");
	/* starcoder: every digit alone first, so the space before a number stands alone. */
	CHECK_STR_EQ(split(TOKENIZER_PRE_STARCODER, "x 42", &p), "x| |4|2");
	/* deepseek-coder: newlines alone, \s?\p{L}+, \s?\p{P}+, digits alone, the rest between. */
	CHECK_STR_EQ(split(TOKENIZER_PRE_DEEPSEEK_CODER, "    if x:\n\treturn 10", &p),
	             "   | if| x|:|\n|\treturn| |1|0");
	CHECK_STR_EQ(split(TOKENIZER_PRE_DEEPSEEK_CODER, "a == b", &p), "a| ==| b");
}

static int hexval(int c)
{
	return c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
}

static size_t unhex(const char *s, size_t n, char *out)
{
	for (size_t i = 0; i + 1 < n + 1 && i < n; i += 2)
		out[i / 2] = (char)(hexval(s[i]) * 16 + hexval(s[i + 1]));
	return n / 2;
}

static enum tokenizer_pre pre_named(const char *s)
{
	if (!strcmp(s, "gpt2")) return TOKENIZER_PRE_GPT2;
	if (!strcmp(s, "starcoder")) return TOKENIZER_PRE_STARCODER;
	if (!strcmp(s, "llama3")) return TOKENIZER_PRE_LLAMA3;
	if (!strcmp(s, "qwen2")) return TOKENIZER_PRE_QWEN2;
	return TOKENIZER_PRE_DEEPSEEK_CODER;
}

struct hexpieces {
	const char *text;
	char out[65536]; /* hex of each piece, comma-separated */
	size_t n;
	int count;
};

static int collect_hex(void *ud, size_t s, size_t e)
{
	struct hexpieces *p = ud;
	if (p->count++ && p->n < sizeof p->out - 1) p->out[p->n++] = ',';
	for (size_t i = s; i < e && p->n + 2 < sizeof p->out - 1; i++) {
		static const char hx[] = "0123456789abcdef";
		unsigned char c = (unsigned char)p->text[i];
		p->out[p->n++] = hx[c >> 4];
		p->out[p->n++] = hx[c & 15];
	}
	p->out[p->n] = 0;
	return 0;
}

TEST(regex_reference_cases)
{
	const char *dir = getenv("INFILL_TOKDATA");
	char path[1024];
	snprintf(path, sizeof path, "%s/pretok_cases.txt",
	         dir ? dir : "tests/infer/tokenizer_data");
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	static char line[1 << 17], text[1 << 16];
	static struct hexpieces got;
	int n_cases = 0, n_bad = 0;
	while (fgets(line, sizeof line, f)) {
		char *t1 = strchr(line, '\t');
		char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		REQUIRE(t1 && t2);
		*t1 = 0, *t2 = 0;
		char *want = t2 + 1;
		want[strcspn(want, "\n")] = 0;
		size_t tl = unhex(t1 + 1, (size_t)(t2 - t1 - 1), text);
		memset(&got, 0, sizeof got);
		got.text = text;
		CHECK_INT_EQ(pretok_split(pre_named(line), text, tl, collect_hex, &got), 0);
		if (strcmp(got.out, want) != 0) {
			if (n_bad++ < 5)
				fprintf(stderr, "%s \"%.*s\":\n  want %s\n  got  %s\n", line,
				        (int)tl, text, want, got.out);
		}
		n_cases++;
	}
	fclose(f);
	CHECK_INT_EQ(n_bad, 0);
	CHECK(n_cases >= 250);
}

TEST(utf8_decode)
{
	uint32_t cp;
	CHECK_INT_EQ(unicode_utf8_decode((const unsigned char *)"\xC3\xBC", 2, &cp), 2);
	CHECK_INT_EQ(cp, 0xFC);
	CHECK_INT_EQ(unicode_utf8_decode((const unsigned char *)"\xF0\x9F\xA6\x99", 4, &cp), 4);
	CHECK_INT_EQ(cp, 0x1F999);
	/* truncated, stray continuation, overlong, surrogate: one byte, U+FFFD */
	CHECK_INT_EQ(unicode_utf8_decode((const unsigned char *)"\xF0\x9F\xA6", 3, &cp), 1);
	CHECK_INT_EQ(cp, UNICODE_REPLACEMENT);
	CHECK_INT_EQ(unicode_utf8_decode((const unsigned char *)"\x80", 1, &cp), 1);
	CHECK_INT_EQ(unicode_utf8_decode((const unsigned char *)"\xC0\xAF", 2, &cp), 1);
	CHECK_INT_EQ(unicode_utf8_decode((const unsigned char *)"\xED\xA0\x80", 3, &cp), 1);
	char buf[4];
	CHECK_INT_EQ(unicode_utf8_encode(0x1F999, buf), 4);
	CHECK(memcmp(buf, "\xF0\x9F\xA6\x99", 4) == 0);
}

TEST(utf8_complete_prefix)
{
	const unsigned char *s = (const unsigned char *)"a\xF0\x9F\xA6\x99";
	CHECK_INT_EQ(unicode_utf8_complete_prefix(s, 5), 5);
	CHECK_INT_EQ(unicode_utf8_complete_prefix(s, 4), 1);
	CHECK_INT_EQ(unicode_utf8_complete_prefix(s, 3), 1);
	CHECK_INT_EQ(unicode_utf8_complete_prefix(s, 2), 1);
	CHECK_INT_EQ(unicode_utf8_complete_prefix(s, 1), 1);
	/* a lone continuation byte can never complete: pass it through */
	CHECK_INT_EQ(unicode_utf8_complete_prefix((const unsigned char *)"a\x80", 2), 2);
}

TEST(unicode_classes)
{
	CHECK(unicode_flags('a') & UNICODE_FLAG_LETTER);
	CHECK(unicode_flags(0x4E00) & UNICODE_FLAG_LETTER);
	CHECK(unicode_flags('7') & UNICODE_FLAG_NUMBER);
	CHECK(unicode_flags(0xBD) & UNICODE_FLAG_NUMBER); /* ½ is No */
	CHECK(unicode_flags('_') & UNICODE_FLAG_PUNCT);
	CHECK(!(unicode_flags('=') & UNICODE_FLAG_PUNCT)); /* Sm */
	CHECK(unicode_flags(0x3000) & UNICODE_FLAG_SPACE);
	CHECK(unicode_flags(0x85) & UNICODE_FLAG_SPACE);
	CHECK(!(unicode_flags(0x1C) & UNICODE_FLAG_SPACE)); /* not White_Space */
	CHECK(unicode_flags(0x1F999) & UNICODE_FLAG_SYMBOL);
	CHECK(unicode_flags(0x301) & UNICODE_FLAG_MARK);
}

TEST_MAIN()
