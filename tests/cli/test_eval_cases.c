/*
 * test_eval_cases.c - the quality harness's parts that need no model
 * (cli/eval_cases.c, cli/eval_metrics.c): cases are cut where and how the
 * header says, the same way for the same seed, and the metrics give the
 * values worked out by hand.
 */
#include "ast.h"
#include "harness.h"

#include <stdbool.h>

#include "eval_cases.h"
#include "infer.h"

static const char PY[] = "import os\n"
                         "\n"
                         "\n"
                         "def add(a, b):\n"
                         "    total = a + b\n"
                         "    return total\n"
                         "\n"
                         "\n"
                         "class Box:\n"
                         "    \"\"\"Holds things.\n"
                         "\n"
                         "    Args:\n"
                         "        size: how many\n"
                         "        name: what it is called\n"
                         "    \"\"\"\n"
                         "\n"
                         "    def __init__(self, size):\n"
                         "        self.size = size\n"
                         "        self.items = []\n"
                         "\n"
                         "        self.name = None\n"
                         "\n"
                         "    def put(self, x):\n"
                         "        self.items.append(x)\n"
                         "        return len(self.items)\n";

static const char C[] = "#include <stdio.h>\n"
                        "\n"
                        "static int sum(const int *v, int n)\n"
                        "{\n"
                        "\tint s = 0;\n"
                        "\tfor (int i = 0; i < n; i++)\n"
                        "\t\ts += v[i];\n"
                        "\treturn s;\n"
                        "}\n"
                        "\n"
                        "int main(void)\n"
                        "{\n"
                        "\tint v[] = {1, 2, 3};\r\n"
                        "\tif (sum(v, 3) > 5) {\n"
                        "\t\tprintf(\"big\\n\");\n"
                        "\t\treturn 1;\n"
                        "\t}\n"
                        "\treturn 0;\n"
                        "}\n";

/* The file with the expected text put back at the cursor, less the hole's
 * trailing blanks, is the original file. */
static bool restores(const char *orig, const struct eval_case *c)
{
	size_t n = strlen(orig);
	if (c->len + c->hole_len != n || c->cursor > c->len) return false;
	if (memcmp(orig, c->text, c->cursor) ||
	    memcmp(orig + c->cursor, c->expected, c->expected_len))
		return false;
	for (size_t i = c->expected_len; i < c->hole_len; i++) {
		char ch = orig[c->cursor + i];
		if (ch != ' ' && ch != '\t') return false;
	}
	return !memcmp(orig + c->cursor + c->hole_len, c->text + c->cursor, c->len - c->cursor);
}

static bool all_blank(const char *s, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
	return true;
}

static void check_kind(int *test_failed_, const char *src, enum eval_kind kind,
                       enum eval_blocks blocks)
{
	for (uint64_t seed = 1; seed <= 40; seed++) {
		uint64_t rng = seed;
		struct eval_case c;
		int rc = eval_case_cut(src, strlen(src), kind, blocks, &rng, &c);
		CHECK_INT_EQ(rc, 0);
		if (rc) continue;
		CHECK(c.kind == kind);
		CHECK(restores(src, &c));
		CHECK(c.expected_len > 0);
		CHECK(strlen(c.expected) == c.expected_len);
		/* the cursor is the end of its line in the cut text (blanks aside) */
		size_t le = ast_line_end(c.text, c.len, c.cursor);
		CHECK(all_blank(c.text, c.cursor, le));
		size_t ls = ast_line_start(c.text, c.cursor);
		size_t nl = 0;
		for (size_t i = 0; i < c.expected_len; i++) nl += c.expected[i] == '\n';
		if (kind == EVAL_KIND_LINE) {
			/* exactly that line's text: the line keeps its indentation only */
			CHECK(all_blank(c.text, ls, c.cursor));
			CHECK(nl == 0);
			size_t ols = ast_line_start(src, c.cursor);
			size_t ole = ast_line_end(src, strlen(src), c.cursor);
			size_t e = ole;
			while (e > ols &&
			       (src[e - 1] == ' ' || src[e - 1] == '\t' || src[e - 1] == '\r'))
				e--;
			CHECK(c.expected_len == e - c.cursor);
		} else if (kind == EVAL_KIND_REST) {
			/* some of the line's text stays before the cursor */
			CHECK(!all_blank(c.text, ls, c.cursor));
			CHECK(nl == 0);
			CHECK(c.expected_len >= 2);
		} else {
			/* a body: several lines, after a line ending in the opener */
			CHECK(nl >= 1);
			CHECK(all_blank(c.text, ls, c.cursor));
			size_t pe = ls - 1; /* the '\n' ending the previous line */
			while (pe > 0 && (c.text[pe - 1] == ' ' || c.text[pe - 1] == '\r')) pe--;
			CHECK(pe > 0 &&
			      c.text[pe - 1] == (blocks == EVAL_BLOCKS_INDENT ? ':' : '{'));
		}
		eval_case_finish(&c);
	}
}

TEST(cuts_rest_of_line)
{
	check_kind(test_failed_, PY, EVAL_KIND_REST, EVAL_BLOCKS_INDENT);
	check_kind(test_failed_, C, EVAL_KIND_REST, EVAL_BLOCKS_BRACE);
}

TEST(cuts_whole_lines)
{
	check_kind(test_failed_, PY, EVAL_KIND_LINE, EVAL_BLOCKS_INDENT);
	check_kind(test_failed_, C, EVAL_KIND_LINE, EVAL_BLOCKS_BRACE);
}

TEST(cuts_block_bodies)
{
	check_kind(test_failed_, PY, EVAL_KIND_BLOCK, EVAL_BLOCKS_INDENT);
	check_kind(test_failed_, C, EVAL_KIND_BLOCK, EVAL_BLOCKS_BRACE);
}

/* Every block of the samples is found, and only those: the docstring's
 * "Args:" heading is not a block, `for` with one body line is too small, a
 * class of 12 body lines too big. */
TEST(block_bodies_are_the_expected_ones)
{
	const char *py_bodies[] = {
		"total = a + b\n    return total",
		"self.size = size\n        self.items = []\n\n        self.name = None",
		"self.items.append(x)\n        return len(self.items)",
	};
	bool seen_py[3] = { 0 };
	bool seen_c[3] = { 0 };
	const char *c_bodies[] = {
		"int s = 0;\n\tfor (int i = 0; i < n; i++)\n\t\ts += v[i];\n\treturn s;",
		"printf(\"big\\n\");\n\t\treturn 1;",
		"int v[] = {1, 2, 3};\r\n\tif (sum(v, 3) > 5) {\n\t\tprintf(\"big\\n\");\n"
		"\t\treturn 1;\n\t}\n\treturn 0;",
	};
	for (uint64_t seed = 1; seed <= 200; seed++) {
		uint64_t rng = seed;
		struct eval_case c;
		REQUIRE(eval_case_cut(PY, strlen(PY), EVAL_KIND_BLOCK, EVAL_BLOCKS_INDENT, &rng,
		                      &c) == 0);
		bool known = false;
		for (int i = 0; i < 3; i++)
			if (!strcmp(c.expected, py_bodies[i])) seen_py[i] = known = true;
		if (!known) fprintf(stderr, "unexpected python block: [%s]\n", c.expected);
		CHECK(known);
		eval_case_finish(&c);
		REQUIRE(eval_case_cut(C, strlen(C), EVAL_KIND_BLOCK, EVAL_BLOCKS_BRACE, &rng, &c) ==
		        0);
		known = false;
		for (int i = 0; i < 3; i++)
			if (!strcmp(c.expected, c_bodies[i])) seen_c[i] = known = true;
		if (!known) fprintf(stderr, "unexpected C block: [%s]\n", c.expected);
		CHECK(known);
		eval_case_finish(&c);
	}
	CHECK(seen_py[0] && seen_py[1] && seen_py[2]);
	CHECK(seen_c[0] && seen_c[1] && seen_c[2]);
}

/* A block's cut keeps the first body line's indentation and the rest of
 * the file, so the cursor sits in an empty, indented body. */
TEST(block_cut_leaves_an_empty_body)
{
	const char src[] = "def f(x):\n    y = x * 2\n    return y\n\nprint(f(2))\n";
	uint64_t rng = 7;
	struct eval_case c;
	REQUIRE(eval_case_cut(src, strlen(src), EVAL_KIND_BLOCK, EVAL_BLOCKS_INDENT, &rng, &c) ==
	        0);
	CHECK_STR_EQ(c.text, "def f(x):\n    \n\nprint(f(2))\n");
	CHECK_INT_EQ(c.cursor, 14);
	CHECK_STR_EQ(c.expected, "y = x * 2\n    return y");
	CHECK_INT_EQ(c.line, 1);
	eval_case_finish(&c);
}

TEST(same_seed_same_case)
{
	for (int k = 0; k < EVAL_KIND_COUNT; k++) {
		uint64_t r1 = 99, r2 = 99;
		struct eval_case a, b;
		REQUIRE(eval_case_cut(C, strlen(C), (enum eval_kind)k, EVAL_BLOCKS_BRACE, &r1,
		                      &a) == 0);
		REQUIRE(eval_case_cut(C, strlen(C), (enum eval_kind)k, EVAL_BLOCKS_BRACE, &r2,
		                      &b) == 0);
		CHECK_INT_EQ(a.cursor, b.cursor);
		CHECK_STR_EQ(a.expected, b.expected);
		CHECK_STR_EQ(a.text, b.text);
		CHECK(r1 == r2);
		eval_case_finish(&a);
		eval_case_finish(&b);
	}
	/* and different seeds reach different places */
	size_t cursors[16];
	size_t distinct = 0;
	for (uint64_t s = 0; s < 16; s++) {
		uint64_t r = s * 1000 + 3;
		struct eval_case c;
		REQUIRE(eval_case_cut(PY, strlen(PY), EVAL_KIND_REST, EVAL_BLOCKS_INDENT, &r, &c) ==
		        0);
		bool seen = false;
		for (size_t i = 0; i < distinct; i++) seen |= cursors[i] == c.cursor;
		if (!seen) cursors[distinct++] = c.cursor;
		eval_case_finish(&c);
	}
	CHECK(distinct >= 8);
}

TEST(no_place_for_a_kind)
{
	uint64_t rng = 1;
	struct eval_case c;
	CHECK_INT_EQ(eval_case_cut("x\n}\n", 4, EVAL_KIND_LINE, EVAL_BLOCKS_BRACE, &rng, &c),
	             EVAL_ENONE);
	CHECK(c.text == NULL && c.expected == NULL);
	CHECK_INT_EQ(
	        eval_case_cut("a = 1\nb = 2\n", 12, EVAL_KIND_BLOCK, EVAL_BLOCKS_INDENT, &rng, &c),
	        EVAL_ENONE);
	/* a brace body whose indentation does not close at a `}` is not taken */
	const char odd[] =
	        "int f(void) {\n\tint a = 1;\n#ifdef X\n\ta++;\n#endif\n\treturn a;\n}\n";
	CHECK_INT_EQ(eval_case_cut(odd, strlen(odd), EVAL_KIND_BLOCK, EVAL_BLOCKS_BRACE, &rng, &c),
	             EVAL_ENONE);
	CHECK_INT_EQ(eval_case_cut("", 0, EVAL_KIND_REST, EVAL_BLOCKS_BRACE, &rng, &c), EVAL_ENONE);
}

/* The cursor never lands inside a UTF-8 sequence. */
TEST(rest_of_line_cuts_on_characters)
{
	const char src[] = "s = \"\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x82\xac\xe2\x82\xac\"\n";
	for (uint64_t seed = 0; seed < 64; seed++) {
		uint64_t rng = seed;
		struct eval_case c;
		REQUIRE(eval_case_cut(src, strlen(src), EVAL_KIND_REST, EVAL_BLOCKS_INDENT, &rng,
		                      &c) == 0);
		CHECK(((unsigned char)src[c.cursor] & 0xC0) != 0x80);
		eval_case_finish(&c);
	}
}

TEST(rng_is_splitmix64)
{
	/* reference values of splitmix64 seeded with 0 */
	uint64_t s = 0;
	CHECK(eval_rng_next(&s) == 0xe220a8397b1dcdafull);
	CHECK(eval_rng_next(&s) == 0x6e789e6aa1b965f4ull);
	CHECK(eval_rng_next(&s) == 0x06c45d188009454full);
	for (int i = 0; i < 1000; i++) CHECK(eval_rng_below(&s, 7) < 7);
}

/* ---- metrics ---- */

TEST(levenshtein_by_hand)
{
	CHECK_INT_EQ(rerank_levenshtein("kitten", 6, "sitting", 7), 3);
	CHECK_INT_EQ(rerank_levenshtein("sitting", 7, "kitten", 6), 3);
	CHECK_INT_EQ(rerank_levenshtein("", 0, "abc", 3), 3);
	CHECK_INT_EQ(rerank_levenshtein("abc", 3, "", 0), 3);
	CHECK_INT_EQ(rerank_levenshtein("flaw", 4, "lawn", 4), 2);
	CHECK_INT_EQ(rerank_levenshtein("same", 4, "same", 4), 0);
	CHECK_INT_EQ(rerank_levenshtein("abc", 3, "cab", 3), 2);
	/* bytes, not characters: é is two bytes */
	CHECK_INT_EQ(rerank_levenshtein("\xc3\xa9", 2, "e", 1), 2);
}

TEST(edit_similarity_by_hand)
{
	CHECK_NEAR(eval_edit_similarity("kitten", 6, "sitting", 7), 1.0 - 3.0 / 7.0, 1e-12);
	CHECK_NEAR(eval_edit_similarity("", 0, "", 0), 1.0, 0);
	CHECK_NEAR(eval_edit_similarity("", 0, "abcd", 4), 0.0, 0);
	CHECK_NEAR(eval_edit_similarity("return x", 8, "return y", 8), 7.0 / 8.0, 1e-12);
	/* trailing whitespace does not count */
	CHECK_NEAR(eval_edit_similarity("x = 1  \n\n", 9, "x = 1", 5), 1.0, 0);
	CHECK_NEAR(eval_edit_similarity("a \nb", 4, "a\nb\n", 4), 1.0, 0);
}

TEST(normalize_and_exact_match)
{
	char out[64];
	CHECK_INT_EQ(eval_normalize("a  \r\nb\t\n\n  ", 11, out), 3);
	CHECK_STR_EQ(out, "a\nb");
	CHECK_INT_EQ(eval_normalize("", 0, out), 0);
	CHECK_STR_EQ(out, "");
	CHECK(eval_exact_match("return s;\n", 10, "return s;", 9));
	CHECK(eval_exact_match("x = 1\r\n    y = 2  ", 18, "x = 1\n    y = 2", 15));
	/* leading and inner whitespace count */
	CHECK(!eval_exact_match(" return s;", 10, "return s;", 9));
	CHECK(!eval_exact_match("x = 1\n  y = 2", 13, "x = 1\n    y = 2", 15));
	CHECK(!eval_exact_match("return", 6, "return s;", 9));
	CHECK(eval_exact_match("", 0, "  \n", 3));
}

TEST(percentiles_nearest_rank)
{
	double v[] = { 50, 10, 40, 20, 30 };
	CHECK_NEAR(eval_percentile(v, 5, 0.5), 30, 0);
	CHECK_NEAR(eval_percentile(v, 5, 0.9), 50, 0);
	CHECK_NEAR(eval_percentile(v, 5, 0.2), 10, 0);
	CHECK_NEAR(eval_percentile(v, 5, 0), 10, 0);
	CHECK_NEAR(eval_percentile(v, 5, 1), 50, 0);
	CHECK_NEAR(eval_percentile(v, 0, 0.5), 0, 0);
	double w[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	CHECK_NEAR(eval_percentile(w, 10, 0.9), 9, 0);
	CHECK_NEAR(eval_percentile(w, 10, 0.5), 5, 0);
}

TEST(parse_check_counts_new_errors)
{
	const struct ast_lang *py = ast_lang_from_id("python");
	REQUIRE(py != NULL);
	const char *orig = "def f(x):\n    return x\n";
	size_t base = 99;
	CHECK_INT_EQ(eval_parse_errors(py, orig, strlen(orig), &base), 0);
	CHECK_INT_EQ(base, 0);
	const char *cut = "def f(x):\n    \n";
	bool ok = false;
	CHECK_INT_EQ(eval_parses_with(py, cut, strlen(cut), 14, 14, "return x", 8, base, &ok), 0);
	CHECK(ok);
	CHECK_INT_EQ(eval_parses_with(py, cut, strlen(cut), 14, 14, "return (x", 9, base, &ok), 0);
	CHECK(!ok);
	CHECK_INT_EQ(eval_parses_with(py, cut, strlen(cut), 14, 14, "x = ]", 5, base, &ok), 0);
	CHECK(!ok);
	/* against a baseline with errors, only new ones count */
	CHECK_INT_EQ(eval_parses_with(py, cut, strlen(cut), 14, 14, "x = ]", 5, 5, &ok), 0);
	CHECK(ok);
	CHECK(eval_parse_errors(NULL, orig, strlen(orig), &base) == AST_EINVAL);
	CHECK(eval_parses_with(py, cut, strlen(cut), 14, 99, "", 0, base, &ok) == AST_EINVAL);
}

TEST_MAIN()
