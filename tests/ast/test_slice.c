/*
 * test_slice.c - context slicing on real files (tests/ast/data: inventory.py
 * and a snapshot of our own ast/slice.c), against what a plain "lines before
 * the cursor" window of the same token budget would send, plus the
 * completion shape. Tokens are counted with ast_tokens_estimate().
 */
#include "ast.h"
#include "harness.h"

struct file {
	char *text;
	size_t len;
};

static struct file load(const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/data/%s", AST_TEST_DIR, name);
	struct file f = { 0 };
	FILE *fp = fopen(path, "rb");
	if (!fp) return f;
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	f.text = malloc((size_t)n + 1);
	if (fread(f.text, 1, (size_t)n, fp) != (size_t)n) n = 0;
	f.text[n] = 0;
	f.len = (size_t)n;
	fclose(fp);
	return f;
}

/* Byte offset of the first occurrence of `needle` plus `delta`. */
static size_t at(const struct file *f, const char *needle, size_t delta)
{
	const char *p = strstr(f->text, needle);
	return p ? (size_t)(p - f->text) + delta : (size_t)-1;
}

/* What a plain client sends: whole lines before the cursor, as many as fit. */
static size_t line_window_start(const char *text, size_t cursor, size_t budget)
{
	size_t start = cursor;
	while (start > 0) {
		size_t s = start - 1;
		while (s > 0 && text[s - 1] != '\n') s--;
		if (ast_tokens_estimate(NULL, text + s, cursor - s) > budget) break;
		start = s;
	}
	return start;
}

static bool contains(const char *hay, size_t n, const char *needle)
{
	size_t l = strlen(needle);
	for (size_t i = 0; i + l <= n; i++)
		if (!memcmp(hay + i, needle, l)) return true;
	return false;
}

static const struct ast_snippet *find_snippet(const struct ast_slice *s, const char *name)
{
	for (size_t i = 0; i < s->n_snippets; i++)
		if (!strcmp(s->snippets[i].name, name)) return &s->snippets[i];
	return NULL;
}

static bool is_boundary(const char *text, size_t pos)
{
	return pos == 0 || text[pos - 1] == '\n' || text[pos - 1] == ' ' || text[pos - 1] == '\t';
}

/* Python: in summarize(), far below the classes whose methods it calls. */
TEST(python_keeps_imports_and_signatures)
{
	struct file f = load("inventory.py");
	REQUIRE(f.text);
	size_t cursor = at(&f, "    slow = slow_movers(", 4);
	REQUIRE(cursor != (size_t)-1);
	struct ast_slice s;
	struct ast_slice_params p = { .lang = ast_lang_from_id("python"),
		                      .text = f.text,
		                      .len = f.len,
		                      .cursor = cursor,
		                      .prefix_tokens = 300,
		                      .suffix_tokens = 200,
		                      .extra_tokens = 300 };
	REQUIRE(ast_slice(&p, &s) == 0);
	CHECK(s.syntactic);
	CHECK(s.prefix_tokens_used <= 300);
	CHECK(s.suffix_tokens_used <= 200);
	CHECK(s.extra_tokens_used <= 300);
	/* The enclosing function is whole: its header in the prefix, its end in the suffix. */
	CHECK(contains(s.prefix, s.prefix_len, "def summarize("));
	CHECK(contains(s.suffix, s.suffix_len, "return \"\\n\".join(lines)"));
	/* ...and the suffix stops there: the next function is not sent. */
	CHECK(!contains(s.suffix, s.suffix_len, "def transfer("));
	CHECK(is_boundary(f.text, s.prefix_start));
	/* Imports and the signatures of what summarize() calls, defined far above. */
	REQUIRE(s.n_snippets >= 3);
	CHECK_INT_EQ(s.snippets[0].kind, AST_SNIPPET_IMPORTS);
	CHECK(contains(s.snippets[0].text, s.snippets[0].len, "from datetime import date"));
	const struct ast_snippet *adv = find_snippet(&s, "advice");
	const struct ast_snippet *lab = find_snippet(&s, "label");
	CHECK(adv && contains(adv->text, adv->len, "def advice(self, lead_days: int = 5)"));
	CHECK(adv && !contains(adv->text, adv->len, "result = []")); /* no body */
	CHECK(lab && contains(lab->text, lab->len, "def label(self) -> str"));
	/* A class named near the cursor: its constructor and the methods used. */
	const struct ast_snippet *wh = find_snippet(&s, "Warehouse");
	CHECK(wh && contains(wh->text, wh->len, "class Warehouse:"));
	CHECK(wh && contains(wh->text, wh->len, "    def __init__(self, name: str"));
	CHECK(wh && contains(wh->text, wh->len, "    def advice(self"));
	CHECK(wh && !contains(wh->text, wh->len, "def snapshot("));
	/* A plain window with the same total budget drops all of that. */
	size_t w = line_window_start(f.text, cursor, 300 + 300);
	CHECK(!contains(f.text + w, cursor - w, "import"));
	CHECK(!contains(f.text + w, cursor - w, "def advice("));
	CHECK(!contains(f.text + w, cursor - w, "def label("));
	ast_slice_finish(&s);
	free(f.text);
}

/* Python: a method of a class; the suffix ends with the method. */
TEST(python_suffix_ends_with_scope)
{
	struct file f = load("inventory.py");
	REQUIRE(f.text);
	size_t cursor = at(&f, "        rows = [\n            {\"date\"", 8);
	struct ast_slice s;
	struct ast_slice_params p = { .lang = ast_lang_from_id("python"),
		                      .text = f.text,
		                      .len = f.len,
		                      .cursor = cursor,
		                      .prefix_tokens = 1024,
		                      .suffix_tokens = 2000,
		                      .extra_tokens = 0 };
	REQUIRE(ast_slice(&p, &s) == 0);
	CHECK(contains(s.suffix, s.suffix_len, "self.path.write_text"));
	CHECK(!contains(s.suffix, s.suffix_len, "def load("));
	CHECK(contains(s.prefix, s.prefix_len, "class Ledger")); /* the budget allows more */
	CHECK_INT_EQ(s.n_snippets, 0);
	ast_slice_finish(&s);
	free(f.text);
}

/* Tiny budgets: the cuts still fall on boundaries, never mid-token. */
TEST(python_small_budget_cuts_on_boundaries)
{
	struct file f = load("inventory.py");
	REQUIRE(f.text);
	for (size_t budget = 4; budget <= 64; budget += 6) {
		size_t cursor = at(&f, "safety = SAFETY_FACTOR", 9);
		struct ast_slice s;
		struct ast_slice_params p = { .lang = ast_lang_from_id("python"),
			                      .text = f.text,
			                      .len = f.len,
			                      .cursor = cursor,
			                      .prefix_tokens = budget,
			                      .suffix_tokens = budget };
		REQUIRE(ast_slice(&p, &s) == 0);
		CHECK(s.prefix_tokens_used <= budget);
		CHECK(s.suffix_tokens_used <= budget);
		CHECK(is_boundary(f.text, s.prefix_start));
		size_t e = s.suffix_end;
		CHECK(e == f.len || e == cursor || f.text[e - 1] == '\n' ||
		      strchr(" \t)]}", f.text[e]) != NULL || strchr(")]}", f.text[e - 1]) != NULL);
		ast_slice_finish(&s);
	}
	free(f.text);
}

/* start_step: cursors a few lines apart share the window's start (so their
 * prompts share cached tokens), the start is still a boundary, and the
 * budget still holds. */
TEST(stepped_start_is_shared_by_nearby_cursors)
{
	static const char *const files[] = { "inventory.py", "slice_snapshot.c" };
	static const char *const langs[] = { "python", "c" };
	size_t total[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		struct file f = load(files[k]);
		REQUIRE(f.text);
		size_t changes[2] = { 0, 0 }, prev[2] = { SIZE_MAX, SIZE_MAX }, cursors = 0;
		for (size_t cursor = 0; cursor <= f.len; cursor++) {
			if (cursor > 0 && f.text[cursor - 1] != '\n') continue; /* line starts */
			cursors++;
			for (int stepped = 0; stepped < 2; stepped++) {
				struct ast_slice s;
				struct ast_slice_params p = { .lang = ast_lang_from_id(langs[k]),
					                      .text = f.text,
					                      .len = f.len,
					                      .cursor = cursor,
					                      .prefix_tokens = 300,
					                      .suffix_tokens = 64,
					                      .start_step = stepped ? 1024 : 0 };
				REQUIRE(ast_slice(&p, &s) == 0);
				CHECK(s.prefix_tokens_used <= 300);
				CHECK(is_boundary(f.text, s.prefix_start));
				if (s.prefix_start != prev[stepped]) changes[stepped]++;
				prev[stepped] = s.prefix_start;
				ast_slice_finish(&s);
			}
		}
		CHECK(changes[1] <= changes[0]);
		total[0] += changes[0];
		total[1] += changes[1];
		free(f.text);
	}
	/* measured: 161 start changes over both files' lines without steps,
	 * 123 with (the C file's statement starts move with every line) */
	CHECK(total[1] * 5 <= total[0] * 4);
}

/* Deep in a docstring longer than the budget the only syntactic start that
 * fits is the cursor's line: the prefix falls back to whole lines then,
 * rather than giving the model nothing. */
TEST(prefix_falls_back_to_lines_inside_a_long_literal)
{
	char text[8192];
	size_t n = (size_t)snprintf(text, sizeof text, "def f(x):\n    \"\"\"Doc.\n");
	for (int i = 0; i < 80; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "    line %d of the text\n", i);
	size_t cursor = n + 4;
	n += (size_t)snprintf(text + n, sizeof text - n, "    more\n    \"\"\"\n    return x\n");
	struct ast_slice s;
	struct ast_slice_params p = { .lang = ast_lang_from_id("python"),
		                      .text = text,
		                      .len = n,
		                      .cursor = cursor,
		                      .prefix_tokens = 96,
		                      .suffix_tokens = 16 };
	REQUIRE(ast_slice(&p, &s) == 0);
	CHECK(s.prefix_tokens_used >= 96 / 4);
	CHECK(s.prefix_tokens_used <= 96);
	CHECK(s.prefix_start == 0 || text[s.prefix_start - 1] == '\n');
	CHECK(contains(s.prefix, s.prefix_len, "of the text\n"));
	ast_slice_finish(&s);
}

/* C (our own ast/slice.c): deep in ast_slice(), whose helpers are above. */
TEST(c_keeps_includes_and_prototypes)
{
	struct file f = load("slice_snapshot.c");
	REQUIRE(f.text);
	size_t cursor = at(&f, "\tout->prefix_len = cursor - ps;", 1);
	size_t fn = at(&f, "int ast_slice(const struct ast_slice_params *p", 0);
	REQUIRE(cursor != (size_t)-1 && fn < cursor);
	/* Budget: exactly enough for the function from its header to the cursor. */
	size_t budget = ast_tokens_estimate(NULL, f.text + fn, cursor - fn) + 2;
	struct ast_slice s;
	struct ast_slice_params p = { .lang = ast_lang_from_id("c"),
		                      .text = f.text,
		                      .len = f.len,
		                      .cursor = cursor,
		                      .prefix_tokens = budget,
		                      .suffix_tokens = 400,
		                      .extra_tokens = 400 };
	REQUIRE(ast_slice(&p, &s) == 0);
	CHECK(contains(s.prefix, s.prefix_len, "int ast_slice(const struct ast_slice_params *p"));
	CHECK(s.prefix_start <= fn);
	CHECK(is_boundary(f.text, s.prefix_start));
	CHECK(s.suffix_end <= s.scope_end + 1);
	REQUIRE(s.n_snippets >= 2);
	CHECK_INT_EQ(s.snippets[0].kind, AST_SNIPPET_IMPORTS);
	CHECK(contains(s.snippets[0].text, s.snippets[0].len, "#include \"internal.h\""));
	const struct ast_snippet *fs = find_snippet(&s, "fit_start");
	const struct ast_snippet *dr = find_snippet(&s, "dup_range");
	CHECK(fs && contains(fs->text, fs->len, "static size_t fit_start(const struct counter *c"));
	CHECK(fs && fs->text[fs->len - 1] == ';' && !contains(fs->text, fs->len, "{"));
	CHECK(dr != NULL);
	/* The line window of the same total budget: no includes, no helper prototypes. */
	size_t w = line_window_start(f.text, cursor, budget + 400);
	CHECK(!contains(f.text + w, cursor - w, "#include"));
	CHECK(!contains(f.text + w, cursor - w, "static size_t fit_start("));
	ast_slice_finish(&s);
	free(f.text);
}

/* The same C file with no grammar: whole lines, nothing else. */
TEST(plaintext_line_based)
{
	struct file f = load("slice_snapshot.c");
	REQUIRE(f.text);
	size_t cursor = at(&f, "\tout->prefix_len = cursor - ps;", 1);
	struct ast_slice s;
	struct ast_slice_params p = { .text = f.text,
		                      .len = f.len,
		                      .cursor = cursor,
		                      .prefix_tokens = 100,
		                      .suffix_tokens = 50,
		                      .extra_tokens = 100 };
	REQUIRE(ast_slice(&p, &s) == 0);
	CHECK(!s.syntactic);
	CHECK_INT_EQ(s.n_snippets, 0);
	CHECK(s.prefix_start == 0 || f.text[s.prefix_start - 1] == '\n');
	CHECK(s.suffix_end == f.len || f.text[s.suffix_end - 1] == '\n');
	CHECK(s.prefix_tokens_used <= 100 && s.suffix_tokens_used <= 50);
	ast_slice_finish(&s);
	free(f.text);
}

/* Any cursor in any data file: slices and verdicts keep their invariants
 * (run under the sanitizers, this is also a small fuzz of both paths). */
TEST(every_cursor_invariants)
{
	static const char *const files[][2] = {
		{ "inventory.py", "python" }, { "slice_snapshot.c", "c" },   { "sample.go", "go" },
		{ "sample.rs", "rust" },      { "sample.ts", "typescript" }, { "sample.ts", NULL }
	};
	for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
		struct file f = load(files[fi][0]);
		REQUIRE(f.text);
		const struct ast_lang *lang = files[fi][1] ? ast_lang_from_id(files[fi][1]) : NULL;
		for (size_t cur = 0; cur <= f.len; cur += 211) {
			struct ast_slice s;
			struct ast_slice_params p = { .lang = lang,
				                      .text = f.text,
				                      .len = f.len,
				                      .cursor = cur,
				                      .prefix_tokens = 64,
				                      .suffix_tokens = 32,
				                      .extra_tokens = 64 };
			REQUIRE(ast_slice(&p, &s) == 0);
			CHECK(s.prefix_start <= cur && cur <= s.suffix_end &&
			      s.suffix_end <= f.len);
			CHECK(s.prefix_len == cur - s.prefix_start);
			CHECK(!memcmp(s.prefix, f.text + s.prefix_start, s.prefix_len));
			CHECK(s.prefix_tokens_used <= 64 && s.suffix_tokens_used <= 32);
			CHECK(s.extra_tokens_used <= 64);
			ast_slice_finish(&s);
			/* A candidate taken from elsewhere in the file. */
			size_t from = (cur * 7919) % f.len, n = 1 + cur % 90;
			if (from + n > f.len) n = f.len - from;
			struct ast_validation v;
			struct ast_validate_params vp = { .lang = lang,
				                          .text = f.text,
				                          .len = f.len,
				                          .cursor = cur,
				                          .candidate = f.text + from,
				                          .candidate_len = n };
			REQUIRE(ast_validate(&vp, &v) == 0);
			CHECK(v.keep_len <= n);
			CHECK(v.verdict != AST_VERDICT_INVALID || v.keep_len == 0);
			CHECK(lang || v.verdict != AST_VERDICT_VALID);
		}
		free(f.text);
	}
}

TEST(bad_cursor)
{
	struct ast_slice s;
	struct ast_slice_params p = { .text = "abc", .len = 3, .cursor = 4 };
	CHECK_INT_EQ(ast_slice(&p, &s), AST_EINVAL);
	ast_slice_finish(&s);
}

static struct ast_shape shape(const char *lang, const char *doc)
{
	const char *m = strstr(doc, "<|>");
	char buf[512];
	size_t c = (size_t)(m - doc);
	snprintf(buf, sizeof buf, "%.*s%s", (int)c, doc, m + 3);
	return ast_shape_at(ast_lang_from_id(lang), buf, strlen(buf), c);
}

TEST(shapes)
{
	struct ast_shape s;
	s = shape("python", "def f(x):\n    <|>\n\ndef g():\n    pass\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_BLOCK);
	CHECK_STR_EQ(s.indent, "    ");
	s = shape("python", "def f(x):<|>\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_BLOCK);
	CHECK_STR_EQ(s.indent, "    ");
	s = shape("python", "def f(x):\n    y = 1\n    <|>\n    return y\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_LINE);
	CHECK_STR_EQ(s.indent, "    ");
	s = shape("python", "def f(x):\n    return g(<|>)\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_REST_OF_LINE);
	s = shape("python", "def f(x):\n    y = <|>\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_LINE);
	s = shape("c", "int f(void)\n{\n\t<|>\n}\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_BLOCK);
	CHECK_STR_EQ(s.indent, "\t");
	s = shape("c", "int f(void) {<|>\n}\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_BLOCK);
	s = shape("c", "int f(void)\n{\n\tint x = 1;\n\t<|>\n\treturn x;\n}\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_LINE);
	CHECK_STR_EQ(s.indent, "\t");
	s = shape("go", "func f() {\n  if x {\n  <|>\n  }\n}\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_BLOCK);
	CHECK_STR_EQ(s.indent, "    ");
	s = shape("rust", "fn f() {\n    let v = vec![<|>];\n}\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_REST_OF_LINE);
	s = shape("lua", "local x = <|>\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_LINE);
	s = shape("nosuch", "hello <|>\n");
	CHECK_INT_EQ(s.kind, AST_SHAPE_LINE);
}

TEST_MAIN()
