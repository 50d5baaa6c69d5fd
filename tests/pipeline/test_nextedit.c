/*
 * test_nextedit.c - pipeline/nextedit.c: the settled edit's merging, and
 * each kind of next edit on small files (rename in scope, a signature's
 * call sites, a repeated change), with the syntax check dropping an edit
 * that would break the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nextedit.h"

/* Applies [start, end) -> repl to *text (realloc'd) and records it. */
static void change(char **text, struct nextedit_track *t, size_t start, size_t end,
                   const char *repl)
{
	size_t len = strlen(*text), rl = strlen(repl);
	if (nextedit_track_change(t, start, end, *text + start, rl)) abort(); /* out of memory */
	char *n = malloc(len - (end - start) + rl + 1);
	memcpy(n, *text, start);
	memcpy(n + start, repl, rl);
	strcpy(n + start + rl, *text + end);
	free(*text);
	*text = n;
}

/* The edits with text applied to text (they do not overlap): a new string. */
static char *apply_all(const char *text, const struct nextedit_result *r)
{
	size_t len = strlen(text);
	char *out = malloc(len * 4 + 4096), *o = out;
	size_t at = 0;
	bool *used = calloc(r->n + 1, 1);
	for (;;) {
		size_t best = r->n;
		for (size_t i = 0; i < r->n; i++)
			if (!used[i] && r->edits[i].text && r->edits[i].start >= at &&
			    (best == r->n || r->edits[i].start < r->edits[best].start))
				best = i;
		if (best == r->n) break;
		const struct nextedit_edit *e = &r->edits[best];
		used[best] = true;
		memcpy(o, text + at, e->start - at);
		o += e->start - at;
		memcpy(o, e->text, e->text_len);
		o += e->text_len;
		at = e->end;
	}
	strcpy(o, text + at);
	free(used);
	return out;
}

static int find(const char *lang, const char *text, const struct nextedit_track *t,
                struct nextedit_result *r)
{
	struct nextedit_params p = { .lang = lang ? ast_lang_from_id(lang) : NULL,
		                     .text = text,
		                     .len = strlen(text),
		                     .edit = t };
	return nextedit_find(&p, r);
}

TEST(track_merges_keystrokes)
{
	char *text = strdup("x = count + 1\n");
	struct nextedit_track t = { 0 };
	/* "count" -> "total", typed as delete then letters */
	change(&text, &t, 4, 9, "");
	change(&text, &t, 4, 4, "t");
	change(&text, &t, 5, 5, "o");
	change(&text, &t, 6, 6, "tal");
	CHECK(t.valid);
	CHECK_INT_EQ(t.start, 4);
	CHECK_INT_EQ(t.end, 9);
	CHECK_STR_EQ(t.old, "count");
	/* a backspace inside and a retype stays one edit */
	change(&text, &t, 8, 9, "");
	change(&text, &t, 8, 8, "L");
	CHECK_STR_EQ(t.old, "count");
	CHECK_STR_EQ(text, "x = totaL + 1\n");
	/* an edit elsewhere starts a new one */
	change(&text, &t, 12, 13, "2");
	CHECK_INT_EQ(t.start, 12);
	CHECK_STR_EQ(t.old, "1");
	nextedit_track_finish(&t);
	free(text);
}

static const char *PY_RENAME = "def area(w, h):\n"
                               "    size = w * h\n"
                               "    print('size', size)\n"
                               "    return size\n"
                               "\n"
                               "def other():\n"
                               "    size = 3\n"
                               "    return size\n";

TEST(rename_in_scope_only)
{
	char *text = strdup(PY_RENAME);
	struct nextedit_track t = { 0 };
	size_t at = strstr(text, "size =") - text;
	change(&text, &t, at, at + 4, "");
	change(&text, &t, at, at, "area_");
	change(&text, &t, at + 5, at + 5, "m2");
	struct nextedit_result r;
	CHECK(find("python", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 2); /* the string 'size' and other()'s local stay */
	for (size_t i = 0; i < r.n; i++) {
		CHECK_INT_EQ(r.edits[i].kind, NEXTEDIT_RENAME);
		CHECK_STR_EQ(r.edits[i].text, "area_m2");
	}
	CHECK(r.edits[0].start < r.edits[1].start); /* nearest after the edit first */
	char *out = apply_all(text, &r);
	CHECK(strstr(out, "print('size', area_m2)\n    return area_m2\n"));
	CHECK(strstr(out, "def other():\n    size = 3\n    return size\n"));
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(rename_c_parameter_reaches_body)
{
	char *text = strdup("int f(int n)\n{\n\tint s = n * 2;\n\treturn s + n;\n}\n"
	                    "int g(int n) { return n; }\n");
	struct nextedit_track t = { 0 };
	size_t at = strstr(text, "n)") - text;
	change(&text, &t, at, at + 1, "count");
	struct nextedit_result r;
	CHECK(find("c", text, &t, &r) == 0);
	char *out = apply_all(text, &r);
	CHECK_STR_EQ(out, "int f(int count)\n{\n\tint s = count * 2;\n\treturn s + count;\n}\n"
	                  "int g(int n) { return n; }\n");
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(signature_removed_parameter_at_call_sites)
{
	char *text = strdup("def scale(p, k, verbose):\n"
	                    "    return p * k\n"
	                    "\n"
	                    "a = scale(1, 2, True)\n"
	                    "b = scale(3, 4, verbose=False)\n"
	                    "c = scale(5, 6)\n");
	struct nextedit_track t = { 0 };
	size_t at = strstr(text, ", verbose)") - text;
	change(&text, &t, at, at + 9, "");
	struct nextedit_result r;
	CHECK(find("python", text, &t, &r) == 0);
	char *out = apply_all(text, &r);
	CHECK_STR_EQ(out, "def scale(p, k):\n"
	                  "    return p * k\n"
	                  "\n"
	                  "a = scale(1, 2)\n"
	                  "b = scale(3, 4)\n"
	                  "c = scale(5, 6)\n");
	for (size_t i = 0; i < r.n; i++) CHECK_INT_EQ(r.edits[i].kind, NEXTEDIT_SIGNATURE);
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(signature_added_parameter_is_a_place_without_text)
{
	char *text = strdup("function add(a, b) { return a + b; }\n"
	                    "const x = add(1, 2);\n"
	                    "const y = obj.add(3, 4);\n");
	struct nextedit_track t = { 0 };
	size_t at = strstr(text, "b)") - text + 1;
	change(&text, &t, at, at, ", c");
	struct nextedit_result r;
	CHECK(find("javascript", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 2);
	for (size_t i = 0; i < r.n; i++) {
		CHECK(r.edits[i].text == NULL);
		CHECK_INT_EQ(r.edits[i].start, r.edits[i].end);
		CHECK(text[r.edits[i].start] == ')'); /* after the last argument */
	}
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(repeat_same_change_on_alike_lines)
{
	char *text = strdup("if a == None:\n    pass\nif b == None:\n    pass\n"
	                    "if c == 0:\n    pass\nif d is None:\n    pass\n");
	struct nextedit_track t = { 0 };
	size_t at = strstr(text, "==") - text;
	change(&text, &t, at, at + 2, "is");
	struct nextedit_result r;
	CHECK(find("python", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1); /* `== 0` differs; `is None` is done already */
	CHECK_INT_EQ(r.edits[0].kind, NEXTEDIT_REPEAT);
	char *out = apply_all(text, &r);
	CHECK(strstr(out, "if b is None:"));
	CHECK(strstr(out, "if c == 0:"));
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(repeat_insertion_after_anchor_skips_lines_done)
{
	char *text = strdup("log(x, 1);\nlog(y, 2);\nlog(ctx, z, 3);\nblog(w, 4);\n");
	struct nextedit_track t = { 0 };
	change(&text, &t, 4, 4, "ctx, ");
	struct nextedit_result r;
	CHECK(find("c", text, &t, &r) == 0);
	char *out = apply_all(text, &r);
	CHECK_STR_EQ(out, "log(ctx, x, 1);\nlog(ctx, y, 2);\nlog(ctx, z, 3);\nblog(w, 4);\n");
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(edit_breaking_syntax_is_dropped)
{
	/* `bar` -> `bar()` repeated would call a lambda's parameter */
	char *text = strdup("g = lambda bar: 0\nx = obj.bar\ny = obj.bar\n");
	struct nextedit_track t = { 0 };
	change(&text, &t, 29, 29, "()");
	struct nextedit_result r;
	CHECK(find("python", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1);
	CHECK_INT_EQ(r.dropped_invalid, 1);
	char *out = apply_all(text, &r);
	CHECK_STR_EQ(out, "g = lambda bar: 0\nx = obj.bar()\ny = obj.bar()\n");
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(no_edit_no_places)
{
	struct nextedit_track t = { 0 };
	struct nextedit_result r;
	CHECK(find("python", "x = 1\n", &t, &r) == 0);
	CHECK_INT_EQ(r.n, 0);
	/* an edit past the text is refused, not read */
	t.valid = true;
	t.start = 3;
	t.end = 40;
	CHECK(find("python", "x = 1\n", &t, &r) == -EINVAL);
}

/* ---- member: an enum variant or a struct field added ---- */

/* text with `ins` put after the first `after`, recorded as one change */
static char *insert_after(const char *src, const char *after, const char *ins,
                          struct nextedit_track *t)
{
	char *text = strdup(src);
	size_t at = strstr(text, after) - text + strlen(after);
	change(&text, t, at, at, ins);
	return text;
}

TEST(member_enum_variant_adds_arm_in_shape)
{
	struct nextedit_track t = { 0 };
	char *text = insert_after(
	        "enum kind { K_RED, K_GREEN };\n"
	        "const char *name(enum kind k)\n{\n"
	        "\tswitch (k) {\n"
	        "\tcase K_RED:\n\t\treturn \"red\";\n"
	        "\tcase K_GREEN:\n\t\treturn \"green\";\n"
	        "\tdefault:\n\t\treturn \"?\";\n"
	        "\t}\n}\n"
	        "int warm(enum kind k)\n{\n"
	        "\tswitch (k) {\n\tcase K_RED: return 1;\n\tdefault: return 0;\n\t}\n}\n",
	        "K_GREEN", ", K_BLUE", &t);
	struct nextedit_result r;
	CHECK(find("c", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1); /* warm() lists one colour only: no arm implied */
	CHECK_INT_EQ(r.edits[0].kind, NEXTEDIT_MEMBER);
	char *out = apply_all(text, &r);
	CHECK(strstr(out, "\tcase K_GREEN:\n\t\treturn \"green\";\n"
	                  "\tcase K_BLUE:\n\t\treturn \"blue\";\n"
	                  "\tdefault:\n"));
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(member_arms_that_differ_give_a_place_without_text)
{
	struct nextedit_track t = { 0 };
	char *text = insert_after("enum Op { Add, Sub }\n"
	                          "fn eval(op: Op, a: i32, b: i32) -> i32 {\n"
	                          "    match op {\n"
	                          "        Op::Add => a + b,\n"
	                          "        Op::Sub => a - b,\n"
	                          "    }\n}\n",
	                          "Sub", ", Mul", &t);
	struct nextedit_result r;
	CHECK(find("rust", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1);
	CHECK_INT_EQ(r.edits[0].kind, NEXTEDIT_MEMBER);
	CHECK(r.edits[0].text == NULL);
	/* after the last arm, before the match's closing brace */
	CHECK(!strncmp(text + r.edits[0].start, "    }\n}", 7));
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(member_python_enum_match_and_ts_switch)
{
	struct nextedit_track t = { 0 };
	char *text = insert_after("from enum import Enum\n"
	                          "class Color(Enum):\n    RED = 1\n    GREEN = 2\n"
	                          "def paint(c):\n"
	                          "    match c:\n"
	                          "        case Color.RED:\n            draw(Color.RED)\n"
	                          "        case Color.GREEN:\n            draw(Color.GREEN)\n",
	                          "GREEN = 2\n", "    BLUE = 3\n", &t);
	struct nextedit_result r;
	CHECK(find("python", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1);
	char *out = apply_all(text, &r);
	CHECK(strstr(out, "            draw(Color.GREEN)\n"
	                  "        case Color.BLUE:\n            draw(Color.BLUE)\n"));
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	text = insert_after("enum Dir { Up, Down }\n"
	                    "function flip(d: Dir): number {\n"
	                    "  switch (d) { case Dir.Up: return 1; case Dir.Down: return 1; }\n"
	                    "}\n",
	                    "Down", ", Left", &t);
	CHECK(find("typescript", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1);
	out = apply_all(text, &r);
	CHECK(strstr(out, "case Dir.Down: return 1; case Dir.Left: return 1; }"));
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(member_struct_field_places_at_initialisers)
{
	struct nextedit_track t = { 0 };
	char *text = insert_after("struct pt { int x; int y; };\n"
	                          "struct pt a = { .x = 1, .y = 2 };\n"
	                          "struct pt b = { 3, 4 };\n"
	                          "struct pt c = { 0 };\n"
	                          "struct other d = { 5, 6 };\n",
	                          "int y;", " int z;", &t);
	struct nextedit_result r;
	CHECK(find("c", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 2); /* `{ 0 }` zeroes z too; `struct other` is another type */
	CHECK(r.edits[0].text == NULL && r.edits[1].text == NULL);
	CHECK(!strncmp(text + r.edits[0].start, " };\nstruct pt b", 15));
	CHECK(!strncmp(text + r.edits[1].start, " };\nstruct pt c", 15));
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	text = insert_after("class P:\n    x: int\n    y: int\n"
	                    "a = P(x=1, y=2)\nb = P(1, 2)\nc = P(x=1, size=2)\n",
	                    "y: int\n", "    z: int\n", &t);
	CHECK(find("python", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 2); /* c's `size` is no field: another signature */
	CHECK(!strncmp(text + r.edits[0].start, ")\nb = ", 6));
	CHECK(!strncmp(text + r.edits[1].start, ")\nc = ", 6));
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

/* ---- definition: a call's arguments changed ---- */

TEST(definition_gets_the_argument_added_at_a_call)
{
	struct nextedit_track t = { 0 };
	char *text = insert_after("def area(w, h):\n    return w * h\n\n"
	                          "class S:\n    def grow(self, k):\n        return k\n\n"
	                          "x = area(2, 3)\n"
	                          "y = s.grow(4)\n",
	                          "area(2, 3", ", scale", &t);
	struct nextedit_result r;
	CHECK(find("python", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1);
	CHECK_INT_EQ(r.edits[0].kind, NEXTEDIT_DEFINITION);
	char *out = apply_all(text, &r);
	CHECK(strstr(out, "def area(w, h, scale):\n"));
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* a method: the receiver is skipped; put first, it goes before k */
	text = insert_after("class S:\n    def grow(self, k):\n        return k\n\n"
	                    "y = s.grow(4)\n",
	                    "s.grow(", "by, ", &t);
	CHECK(find("python", text, &t, &r) == 0);
	out = apply_all(text, &r);
	CHECK(strstr(out, "def grow(self, by, k):\n"));
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(definition_loses_the_argument_removed_at_a_call)
{
	struct nextedit_track t = { 0 };
	char *text =
	        strdup("static int clamp(int v, int lo, int hi)\n{\n\treturn v < lo ? lo : v;\n}\n"
	               "int g(void) { return clamp(5, 0, 9); }\n");
	size_t at = strstr(text, ", 9)") - text;
	change(&text, &t, at, at + 3, "");
	struct nextedit_result r;
	CHECK(find("c", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1);
	char *out = apply_all(text, &r);
	CHECK(strstr(out, "static int clamp(int v, int lo)\n"));
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* C needs the new parameter's type: a place, no text */
	text = insert_after("int add(int a, int b) { return a + b; }\n"
	                    "int main(void) { return add(1, 2); }\n",
	                    "add(1, 2", ", 3", &t);
	CHECK(find("c", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1);
	CHECK(r.edits[0].text == NULL);
	CHECK(!strncmp(text + r.edits[0].start, ") { return a", 12));
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* a definition with a default takes calls of either length: nothing */
	text = insert_after("function f(a, b = 1) { return a + b; }\nf(1, 2);\n", "f(1, 2", ", 3",
	                    &t);
	CHECK(find("javascript", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 0);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

/* ---- import: left unused, or wanting ---- */

static bool defined_in_fake(void *ud, const char *name, char *buf, size_t cap)
{
	(void)ud;
	const char *rel = !strcmp(name, "slugify")  ? "text/slug.py"
	                  : !strcmp(name, "median") ? "stats.py"
	                  : !strcmp(name, "clamp")  ? "lib/num.ts"
	                                            : NULL;
	if (!rel) return false;
	snprintf(buf, cap, "%s", rel);
	return true;
}

static int find_project(const char *lang, const char *text, const struct nextedit_track *t,
                        struct nextedit_result *r)
{
	struct nextedit_params p = { .lang = ast_lang_from_id(lang),
		                     .text = text,
		                     .len = strlen(text),
		                     .edit = t,
		                     .defined_in = defined_in_fake };
	return nextedit_find(&p, r);
}

TEST(import_left_unused_is_removed)
{
	struct nextedit_track t = { 0 };
	char *text = strdup("import os\nfrom json import dumps, loads\n\n"
	                    "def f(p):\n    return dumps(os.stat(p))\n\n"
	                    "def g(s):\n    return loads(s)\n");
	size_t at = strstr(text, "dumps(os") - text;
	/* dumps(os.stat(p)) -> str(p): the last uses of dumps and os go */
	change(&text, &t, at, at + strlen("dumps(os.stat(p))"), "str(p)");
	struct nextedit_result r;
	CHECK(find("python", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 2);
	for (size_t i = 0; i < r.n; i++) CHECK_INT_EQ(r.edits[i].kind, NEXTEDIT_IMPORT);
	char *out = apply_all(text, &r);
	CHECK_STR_EQ(out, "from json import loads\n\n"
	                  "def f(p):\n    return str(p)\n\n"
	                  "def g(s):\n    return loads(s)\n");
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* JavaScript: a name out of its braces */
	text = strdup("import { a, b } from './m';\nf(a);\ng(b);\n");
	at = strstr(text, "f(a)") - text;
	change(&text, &t, at + 2, at + 3, "1");
	CHECK(find("javascript", text, &t, &r) == 0);
	out = apply_all(text, &r);
	CHECK_STR_EQ(out, "import { b } from './m';\nf(1);\ng(b);\n");
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* a name still used elsewhere stays */
	text = strdup("from m import a, b\nf(a)\ng(a, b)\n");
	at = strstr(text, "f(a)") - text;
	change(&text, &t, at + 2, at + 3, "1");
	CHECK(find("python", text, &t, &r) == 0);
	for (size_t i = 0; i < r.n; i++) CHECK(r.edits[i].kind != NEXTEDIT_IMPORT);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(import_wanting_is_added_from_the_project)
{
	struct nextedit_track t = { 0 };
	char *text = insert_after("\"\"\"Tools.\"\"\"\nimport os\nfrom stats import mean\n\n"
	                          "def f(xs):\n    return mean(xs)\n",
	                          "return mean(xs)", " + median(xs) + len(slugify(os.sep))", &t);
	struct nextedit_result r;
	CHECK(find_project("python", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 2); /* len is nobody's: a builtin */
	char *out = apply_all(text, &r);
	CHECK_STR_EQ(out, "\"\"\"Tools.\"\"\"\nimport os\nfrom stats import mean, median\n"
	                  "from text.slug import slugify\n\n"
	                  "def f(xs):\n    return mean(xs) + median(xs) + len(slugify(os.sep))\n");
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* an import a function makes for itself is not where the file's go */
	text = insert_after("import os\n\ndef f(xs):\n    return xs\n\n"
	                    "def g():\n    import sys\n    return sys.argv\n",
	                    "return xs", " + median(xs)", &t);
	CHECK(find_project("python", text, &t, &r) == 0);
	out = apply_all(text, &r);
	CHECK_STR_EQ(out, "import os\nfrom stats import median\n\ndef f(xs):\n"
	                  "    return xs + median(xs)\n\n"
	                  "def g():\n    import sys\n    return sys.argv\n");
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* without a project nothing is guessed */
	text = insert_after("const x = 1;\n", "1", " + clamp(2)", &t);
	CHECK(find("typescript", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 0);
	nextedit_result_finish(&r);
	CHECK(find_project("typescript", text, &t, &r) == 0);
	CHECK_INT_EQ(r.n, 1);
	out = apply_all(text, &r);
	CHECK_STR_EQ(out, "import { clamp } from \"./lib/num\";\nconst x = 1 + clamp(2);\n");
	free(out);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

/* ---- renames across files (nextedit_files.c) ---- */

/* Renames the first `from` in text to `to` as typed (a delete, then the
 * letters) and runs the finder. */
static char *rename_first(const char *lang, const char *src, const char *from, const char *to,
                          struct nextedit_track *t, struct nextedit_result *r)
{
	char *text = strdup(src);
	size_t at = (size_t)(strstr(text, from) - text);
	change(&text, t, at, at + strlen(from), "");
	change(&text, t, at, at, to);
	if (find(lang, text, t, r)) abort();
	return text;
}

/* The other file with the rename's places in it applied. */
static char *importer_at(const char *lang, const char *defining, const char *path, const char *text,
                         const struct nextedit_result *def, size_t *n)
{
	struct nextedit_importer p = { .lang = ast_lang_from_id(lang),
		                       .path = path,
		                       .text = text,
		                       .len = strlen(text),
		                       .defining_path = defining,
		                       .old_name = def->renamed_from,
		                       .new_name = def->renamed_to };
	struct nextedit_result r;
	if (nextedit_find_importer(&p, &r)) abort();
	*n = r.n;
	for (size_t i = 0; i < r.n; i++)
		if (r.edits[i].kind != NEXTEDIT_RENAME) *n = 999;
	char *out = apply_all(text, &r);
	nextedit_result_finish(&r);
	return out;
}

static char *importer_after(const char *lang, const char *defining, const char *text,
                            const struct nextedit_result *def, size_t *n)
{
	return importer_at(lang, defining, NULL, text, def, n);
}

#define PY_SHAPES                               \
	"def area(w, h):\n    return w * h\n\n" \
	"def twice(x):\n    size = area(x, x)\n    return size * 2\n"

TEST(rename_top_level_reaches_importers_python)
{
	struct nextedit_track t = { 0 };
	struct nextedit_result r;
	char *text = rename_first("python", PY_SHAPES, "area", "surface", &t, &r);
	CHECK_STR_EQ(r.renamed_from, "area");
	CHECK_STR_EQ(r.renamed_to, "surface");
	CHECK_INT_EQ(r.n, 1); /* twice()'s call, in this file */
	size_t n;
	/* from-import, module import and its alias; an attribute of something
	 * else, a string and a comment stay */
	char *b = importer_after("python", "/p/pkg/shapes.py",
	                         "from pkg.shapes import area, twice\n"
	                         "import shapes\nimport shapes as sh\n\n"
	                         "print(area(1, 2), shapes.area(3, 4), sh.area(5, 6))\n"
	                         "room.area = 'area'  # area\n",
	                         &r, &n);
	CHECK_INT_EQ(n, 4);
	CHECK_STR_EQ(b, "from pkg.shapes import surface, twice\n"
	                "import shapes\nimport shapes as sh\n\n"
	                "print(surface(1, 2), shapes.surface(3, 4), sh.surface(5, 6))\n"
	                "room.area = 'area'  # area\n");
	free(b);
	/* aliased: the entry only, the file goes on with its alias */
	b = importer_after("python", "shapes.py",
	                   "from .shapes import area as ar\n\nprint(ar(1, 2))\n", &r, &n);
	CHECK_STR_EQ(b, "from .shapes import surface as ar\n\nprint(ar(1, 2))\n");
	free(b);
	/* a name of the same spelling from another module is another name */
	b = importer_after("python", "shapes.py",
	                   "from geometry import area\nimport shapes\n\nprint(area(1, 2))\n", &r,
	                   &n);
	CHECK_INT_EQ(n, 0);
	free(b);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* a local renamed is no other file's business */
	text = rename_first("python", PY_SHAPES, "size", "total", &t, &r);
	CHECK_INT_EQ(r.n, 1);
	CHECK_STR_EQ(r.renamed_from, "");
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST(rename_top_level_reaches_importers_js_and_c)
{
	struct nextedit_track t = { 0 };
	struct nextedit_result r;
	char *text = rename_first("javascript",
	                          "export function clamp(x, lo, hi) {\n"
	                          "  return Math.min(Math.max(x, lo), hi);\n}\n",
	                          "clamp", "bound", &t, &r);
	CHECK_STR_EQ(r.renamed_from, "clamp");
	size_t n;
	char *b = importer_after("javascript", "lib/num.js",
	                         "import { clamp, lerp } from './lib/num.js';\n"
	                         "const y = clamp(lerp(1, 2, 0.5), 0, 1);\nobj.clamp(3);\n",
	                         &r, &n);
	CHECK_STR_EQ(b, "import { bound, lerp } from './lib/num.js';\n"
	                "const y = bound(lerp(1, 2, 0.5), 0, 1);\nobj.clamp(3);\n");
	free(b);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* C: a prototype renamed in its header; a file that includes the
	 * header follows, one that does not (or defines its own) does not */
	text = rename_first("c",
	                    "#ifndef LIST_H\n#define LIST_H\nstruct list;\n"
	                    "int list_len(const struct list *l);\n#endif\n",
	                    "list_len", "list_count", &t, &r);
	CHECK_STR_EQ(r.renamed_from, "list_len");
	CHECK_STR_EQ(r.renamed_to, "list_count");
	b = importer_after("c", "include/list.h",
	                   "#include \"list.h\"\n\nint twice(const struct list *l)\n"
	                   "{\n\treturn list_len(l) + s.list_len;\n}\n",
	                   &r, &n);
	CHECK_INT_EQ(n, 1);
	CHECK_STR_EQ(b, "#include \"list.h\"\n\nint twice(const struct list *l)\n"
	                "{\n\treturn list_count(l) + s.list_len;\n}\n");
	free(b);
	b = importer_after("c", "list.h",
	                   "#include \"other.h\"\n\nint f(void)\n{\n\treturn list_len(0);\n}\n", &r,
	                   &n);
	CHECK_INT_EQ(n, 0);
	free(b);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);

	/* renamed where it is defined (list.c): its own header's prototype
	 * follows, another header does not */
	text = rename_first("c",
	                    "#include \"list.h\"\n\nint list_len(const struct list *l)\n"
	                    "{\n\treturn l->n;\n}\n",
	                    "list_len", "list_count", &t, &r);
	CHECK_STR_EQ(r.renamed_from, "list_len");
	const char *h = "struct list;\nint list_len(const struct list *l);\n";
	b = importer_at("c", "src/list.c", "src/list.h", h, &r, &n);
	CHECK_STR_EQ(b, "struct list;\nint list_count(const struct list *l);\n");
	free(b);
	b = importer_at("c", "src/list.c", "src/vec.h", h, &r, &n);
	CHECK_INT_EQ(n, 0);
	free(b);
	nextedit_result_finish(&r);
	nextedit_track_finish(&t);
	free(text);
}

TEST_MAIN()
