/*
 * test_closers.c - ast_closers_at(): what it offers to close, and where it
 * must stay quiet (the line has more than closers, a later line closes the
 * bracket, the string is closed on its own line).
 */
#include <string.h>

#include "ast.h"
#include "harness.h"

struct text {
	const char *p;
	size_t len;
};

static const char *text_read(void *ctx, size_t off, size_t *len)
{
	const struct text *t = ctx;
	*len = off < t->len ? t->len - off : 0;
	return *len ? t->p + off : NULL;
}

/* Closers at the `|` of doc_with_bar, in a language; joined by spaces into
 * got (must_mend ones marked with a trailing `!`). Returns how many. */
static size_t closers_at_bar(const char *lang_id, const char *doc_with_bar, bool with_tree,
                             char *got, size_t cap)
{
	char text[1024];
	const char *bar = strchr(doc_with_bar, '|');
	size_t cursor = (size_t)(bar - doc_with_bar), len = strlen(doc_with_bar) - 1;
	memcpy(text, doc_with_bar, cursor);
	memcpy(text + cursor, bar + 1, len - cursor + 1);
	const struct ast_lang *lang = ast_lang_from_id(lang_id);
	struct text t = { text, len };
	struct ast_doc *doc = with_tree ? ast_doc_new(lang, text_read, &t) : NULL;
	if (doc && ast_doc_parse(doc)) {
		ast_doc_delete(doc);
		return SIZE_MAX;
	}
	struct ast_closer c[8];
	size_t n = ast_closers_at(doc, lang, text, len, cursor, c, 8);
	got[0] = 0;
	for (size_t i = 0; i < n; i++)
		snprintf(got + strlen(got), cap - strlen(got), "%s%s%s", i ? " " : "", c[i].text,
		         c[i].must_mend ? "!" : "");
	ast_doc_delete(doc);
	return n;
}

TEST(closing_lines_finish_what_the_line_began)
{
	char got[256];
	CHECK_INT_EQ(closers_at_bar("c", "  #en|", false, got, sizeof got), 1);
	CHECK_STR_EQ(got, "dif!");
	CHECK_INT_EQ(closers_at_bar("c", "#end| x", false, got, sizeof got), 0);
	CHECK_INT_EQ(closers_at_bar("c", "#endif|", false, got, sizeof got), 0);
	CHECK_INT_EQ(closers_at_bar("python", "|", false, got, sizeof got), 0);
}

/* `}` closes the block of `it(...) {`; that line also opened the call's
 * `(`, which nothing closes: `)` and `);` are offered (the model says
 * whether the statement ends). */
TEST(brackets_the_closed_line_left_open)
{
	char got[256];
	CHECK_INT_EQ(closers_at_bar("javascript",
	                            "describe('x', () => {\n  it('y', () => {\n    f()\n  } |",
	                            true, got, sizeof got),
	             2);
	CHECK_STR_EQ(got, ") );");
	/* `})` closed both: nothing left of that line; the `}` of describe's
	 * block has its `)` to offer. */
	CHECK_INT_EQ(
	        closers_at_bar("javascript", "it('y', () => {\n  f()\n})|", true, got, sizeof got),
	        0);
	CHECK_INT_EQ(
	        closers_at_bar("javascript", "g(a, [\n  f(() => {\n  }|", true, got, sizeof got),
	        2);
	CHECK_STR_EQ(got, ") );");
	/* two left open on one line, innermost first */
	CHECK_INT_EQ(
	        closers_at_bar("javascript", "g([function () {\n  f()\n}|", true, got, sizeof got),
	        2);
	CHECK_STR_EQ(got, "]) ]);");
	/* clean code around it is skipped, not misread */
	CHECK_INT_EQ(closers_at_bar("javascript",
	                            "function a() { return [(1)] }\ng(function () {\n  f()\n}|\n\n"
	                            "function b() { return [(2)] }\n",
	                            true, got, sizeof got),
	             2);
	CHECK_STR_EQ(got, ") );");
	/* a later line closes it: nothing to offer */
	CHECK_INT_EQ(closers_at_bar("javascript", "g(function () {\n  f()\n}|\n, 100)\n", true, got,
	                            sizeof got),
	             0);
	/* a block whose line opened nothing else */
	CHECK_INT_EQ(closers_at_bar("javascript", "if (x) {\n  f()\n} |", true, got, sizeof got),
	             0);
	/* the line has more than closers, or text after the cursor */
	CHECK_INT_EQ(
	        closers_at_bar("javascript", "g(function () {\n  f()\n} x|", true, got, sizeof got),
	        0);
	CHECK_INT_EQ(
	        closers_at_bar("javascript", "g(function () {\n  f()\n}| x", true, got, sizeof got),
	        0);
	/* Python: the indentation is the block, the brackets are still ours */
	CHECK_INT_EQ(closers_at_bar("python", "x = f(a, [\n    1,\n]|", true, got, sizeof got), 1);
	CHECK_STR_EQ(got, ")");
	/* brackets in strings and comments are not brackets */
	CHECK_INT_EQ(closers_at_bar("javascript", "g('(', function () { // (\n  f()\n}|", true, got,
	                            sizeof got),
	             2);
	CHECK_STR_EQ(got, ") );");
	/* no tree, no guess */
	CHECK_INT_EQ(
	        closers_at_bar("javascript", "g(function () {\n  f()\n}|", false, got, sizeof got),
	        0);
}

/* In a docstring an earlier line opened, its delimiter, to be shown only
 * where it mends; not in a string that opened on the cursor's line, nor in
 * one that runs to the end of the file (a docstring being written there,
 * which the grammar leaves as an error, not a string). */
TEST(strings_an_earlier_line_left_open)
{
	char got[256];
	CHECK_INT_EQ(
	        closers_at_bar(
	                "python",
	                "def f():\n    \"\"\"Open a pty.\n    Use os.openpty() if possible|\n\n"
	                "    return 1\n\ndef g():\n    \"\"\"Another.\"\"\"\n",
	                true, got, sizeof got),
	        1);
	CHECK_STR_EQ(got, "\"\"\"!");
	CHECK_INT_EQ(closers_at_bar("python",
	                            "def f():\n    r'''Raw\n    text|\n\ndef g():\n    '''x'''\n",
	                            true, got, sizeof got),
	             1);
	CHECK_STR_EQ(got, "'''!");
	CHECK_INT_EQ(closers_at_bar("python", "def f():\n    \"\"\"Open|\n", true, got, sizeof got),
	             0);
	CHECK_INT_EQ(closers_at_bar("python", "def f():\n    \"\"\"Open\n    more|\n", true, got,
	                            sizeof got),
	             0);
	CHECK_INT_EQ(closers_at_bar("javascript", "const s = `a\n  b|\nconst t = `c`\n", true, got,
	                            sizeof got),
	             1);
	CHECK_STR_EQ(got, "`!");
	CHECK_INT_EQ(closers_at_bar("javascript", "const s = 'a|'\n", true, got, sizeof got), 0);
}

TEST_MAIN()
