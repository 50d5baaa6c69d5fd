/*
 * test_recall.c - candidates from the document itself (pipeline/recall.c): the
 * rest of a line that starts like the cursor's, the line after a copy of the
 * previous line at the same indentation step, counts and order, the limits.
 */
#include <stdbool.h>
#include <string.h>

#include "harness.h"
#include "recall.h"

/* Runs recall on doc, the cursor at the '|' (removed). */
static int find(const char *doc_with_bar, struct recall_item *out, size_t cap, size_t window,
                char *buf)
{
	const char *bar = strchr(doc_with_bar, '|');
	size_t at = (size_t)(bar - doc_with_bar);
	memcpy(buf, doc_with_bar, at);
	strcpy(buf + at, bar + 1);
	struct recall_params p = {
		.text = buf, .len = strlen(buf), .cursor = at, .window = window
	};
	return recall_find(&p, out, cap);
}

static bool item_is(const struct recall_item *it, const char *s, int count)
{
	return it->len == strlen(s) && !memcmp(it->text, s, it->len) && it->count == count;
}

TEST(rest_of_line_most_frequent_first)
{
	char buf[1024];
	struct recall_item it[4];
	int n = find("    self.assertTrue(x)\n"
	             "    self.assertEqual(a, 1)   \n"
	             "def f():\n"
	             "\tself.assertEqual(a, 1)\n"
	             "    self.assert|\n"
	             "    self.assert\n",
	             it, 4, 0, buf);
	CHECK_INT_EQ(n, 2);
	CHECK(item_is(&it[0], "Equal(a, 1)", 2)); /* trailing blanks cut, any indentation */
	CHECK(item_is(&it[1], "True(x)", 1));     /* a line with nothing more offers nothing */
	CHECK(it[0].text > buf && it[0].text < buf + strlen(buf)); /* borrowed */
	/* the nearest copy's line, where validation looks at what it breaks */
	CHECK_INT_EQ(it[0].source, (size_t)(strstr(buf, "\tself.assertEqual") - buf));
	CHECK_INT_EQ(it[1].source, 0);
}

TEST(rest_of_line_must_end_with_the_text_after_the_cursor)
{
	char buf[1024];
	struct recall_item it[4];
	int n = find("run(load(cfg))\nrun(cfg\nrun(other)\nrun(|)\n", it, 4, 0, buf);
	CHECK_INT_EQ(n, 2); /* `run(cfg` lacks the `)` */
	CHECK(item_is(&it[0], "other", 1));
	CHECK(item_is(&it[1], "load(cfg)", 1));
}

TEST(ties_go_to_the_nearest)
{
	char buf[1024];
	struct recall_item it[4];
	int n = find("x = far()\n\n\n\n\n\nx = near()\nx = |\n", it, 4, 0, buf);
	CHECK_INT_EQ(n, 2);
	CHECK(item_is(&it[0], "near()", 1));
	CHECK(item_is(&it[1], "far()", 1));
}

TEST(blank_line_offers_what_followed_the_previous_line)
{
	char buf[1024];
	struct recall_item it[4];
	int n = find("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\nint f(void);\n\n"
	             "#ifdef __cplusplus\n\n|\n#endif\n",
	             it, 4, 0, buf);
	/* the previous line's own copy is not counted */
	CHECK_INT_EQ(n, 1);
	CHECK(item_is(&it[0], "extern \"C\" {", 1)); /* blank lines between are skipped */
	CHECK_INT_EQ(it[0].source, (size_t)(strstr(buf, "extern") - buf));
}

TEST(blank_line_keeps_the_indentation_step)
{
	char buf[1024];
	struct recall_item it[4];
	const char *body = "if ok:\n    return 1\nif ok:\nreturn_none()\n";
	char doc[256];
	snprintf(doc, sizeof doc, "%sif ok:\n    |\n", body);
	int n = find(doc, it, 4, 0, buf);
	CHECK_INT_EQ(n, 1);
	CHECK(item_is(&it[0], "return 1", 1));
	snprintf(doc, sizeof doc, "%sif ok:\n|\n", body);
	n = find(doc, it, 4, 0, buf);
	CHECK_INT_EQ(n, 1);
	CHECK(item_is(&it[0], "return_none()", 1));
}

TEST(limits)
{
	char buf[4096];
	struct recall_item it[4];
	/* nothing before the cursor on a non-blank line; nothing repeats */
	CHECK_INT_EQ(find("a = 1\n|  b = 2\n", it, 4, 0, buf), 0);
	CHECK_INT_EQ(find("a = 1\nb = |\n", it, 4, 0, buf), 0);
	/* the cursor's own line does not count; cap; the first line of the file */
	CHECK_INT_EQ(find("f(|1)\n", it, 4, 0, buf), 0);
	CHECK_INT_EQ(find("|\nx\n", it, 4, 0, buf), 0);
	CHECK_INT_EQ(find("p1\np2\np3\np|\n", it, 2, 0, buf), 2);
	CHECK_INT_EQ(find("p1\np2\np|\n", it, 0, 0, buf), 0);
	/* the window: a line 300 bytes away is not seen with a 100-byte window */
	char doc[1024];
	memset(doc, '#', 300);
	memcpy(doc, "key = value\n", 12);
	doc[299] = '\n';
	strcpy(doc + 300, "key|\n");
	CHECK_INT_EQ(find(doc, it, 4, 100, buf), 0);
	CHECK_INT_EQ(find(doc, it, 4, 0, buf), 1);
	CHECK(item_is(&it[0], " = value", 1));
	struct recall_params p = { .text = "abc", .len = 3, .cursor = 4 };
	CHECK_INT_EQ(recall_find(&p, it, 4), 0); /* cursor past the end */
}

TEST(other_files_lines_continue_the_cursor_line)
{
	char buf[256];
	const char *doc = "import json\n    resp = session.get(|\n";
	const char *bar = strchr(doc, '|');
	size_t at = (size_t)(bar - doc);
	memcpy(buf, doc, at);
	strcpy(buf + at, bar + 1);
	const char *other = "def x():\n"
	                    "    resp = session.get(url, timeout=5)\n"
	                    "    resp = session.get(url, timeout=5)\n"
	                    "    resp = session.post(url)\n"
	                    "    resp = session.get(base)\n";
	struct recall_params p = { buf, strlen(buf), at, 0, other, strlen(other) };
	struct recall_item it[4];
	int n = recall_find(&p, it, 4);
	CHECK_INT_EQ(n, 2);
	/* one file: a line counts once however often it writes it; ties go
	 * to the earliest (the files come most alike first) */
	CHECK(item_is(&it[0], "url, timeout=5)", 1));
	CHECK(item_is(&it[1], "base)", 1));
	/* the items point into the other text */
	CHECK(it[0].text > other && it[0].text < other + strlen(other));
	/* three files: the line two of them write beats the line one file
	 * repeats */
	const char *files = "    resp = session.get(url, timeout=5)\n"
	                    "    resp = session.get(url, timeout=5)\n"
	                    "    resp = session.get(url, timeout=5)\n" RECALL_FILE_SEP
	                    "    resp = session.get(base)\n" RECALL_FILE_SEP
	                    "def y():\n    resp = session.get(base)\n" RECALL_FILE_SEP;
	struct recall_params f = { buf, strlen(buf), at, 0, files, strlen(files) };
	n = recall_find(&f, it, 4);
	CHECK_INT_EQ(n, 2);
	CHECK(item_is(&it[0], "base)", 2));
	CHECK(item_is(&it[1], "url, timeout=5)", 1));
	/* nor is the line after a copy of the key taken from the next file */
	const char *doc3 = "    for k in keys:\n        \n";
	const char *sep = "    for k in keys:\n" RECALL_FILE_SEP "        total += k\n";
	struct recall_params g = { doc3, strlen(doc3), strlen("    for k in keys:\n        "),
		                   0,    sep,          strlen(sep) };
	CHECK_INT_EQ(recall_find(&g, it, 4), 0);
	/* the document's own lines are not scanned then */
	const char *none = "nothing alike\n";
	struct recall_params q = { buf, strlen(buf), at, 0, none, strlen(none) };
	CHECK_INT_EQ(recall_find(&q, it, 4), 0);
	/* a blank line: what followed the previous line's copies there */
	const char *doc2 = "    for k in keys:\n        \n";
	const char *other2 = "    for k in keys:\n        total += k\n";
	struct recall_params b = { doc2, strlen(doc2), strlen("    for k in keys:\n        "),
		                   0,    other2,       strlen(other2) };
	n = recall_find(&b, it, 4);
	CHECK_INT_EQ(n, 1);
	if (n == 1) CHECK(item_is(&it[0], "total += k", 1));
}

TEST_MAIN()
