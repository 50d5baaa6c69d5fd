/*
 * test_complete.c - complete_run (pipeline/complete.c) with the tiny
 * random-weight model: what must hold whatever the model writes.
 */
#include "harness.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <unistd.h>

#include "complete.h"
#include "config.h"
#include "gguf.h"

static const char PY[] = "import os\n\n\ndef add(a, b):\n    total = a + b\n    return total\n\n\n"
                         "def main():\n    x = add(1, 2)\n    print(x)\n    \n\n\n"
                         "if __name__ == \"__main__\":\n    main()\n# notes: \n";

static struct model *model;
static struct engine *engine;
static struct config *cfg;

static bool setup(void)
{
	if (model) return true;
	const char *path = TESTDATA "/models/tiny-dsc-f32.gguf";
	if (access(path, R_OK)) {
		printf("SKIP: %s is missing\n", path);
		exit(77);
	}
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.n_threads = 1;
	mp.kv_bytes = 64u << 20;
	struct infill_error err = { 0 };
	model = model_load(&mp, &err);
	if (!model) {
		fprintf(stderr, "load: %s\n", err.message);
		return false;
	}
	struct engine_params ep = engine_params_default();
	engine = engine_new(model, &ep, &err);
	cfg = config_new();
	return engine && cfg;
}

static struct settings settings_for(const char *lang)
{
	struct settings s = *config_get(cfg, lang);
	s.completion_max_tokens = 16;
	return s;
}

TEST(max_lines_follow_shape_and_setting)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	s.completion_max_lines = 7;
	s.completion_multiline = CONFIG_MULTILINE_AUTO;
	CHECK_INT_EQ(complete_max_lines(AST_SHAPE_BLOCK, &s), 7);
	CHECK_INT_EQ(complete_max_lines(AST_SHAPE_LINE, &s), 1);
	CHECK_INT_EQ(complete_max_lines(AST_SHAPE_REST_OF_LINE, &s), 1);
	s.completion_multiline = CONFIG_MULTILINE_NEVER;
	CHECK_INT_EQ(complete_max_lines(AST_SHAPE_BLOCK, &s), 1);
	s.completion_multiline = CONFIG_MULTILINE_ALWAYS;
	CHECK_INT_EQ(complete_max_lines(AST_SHAPE_LINE, &s), 7);
}

/* The default budgets (1024 + 192 + 512 + 64 generated) overflow a 512-token
 * model; fitted, they fit and keep their proportions. */
TEST(budgets_fit_the_model_context)
{
	CHECK(setup());
	struct settings s = *config_get(cfg, NULL);
	struct settings big = s;
	complete_fit_context(&big, 16384);
	CHECK_INT_EQ(big.context_prefix_tokens, s.context_prefix_tokens);
	CHECK_INT_EQ(big.context_extra_tokens, s.context_extra_tokens);
	complete_fit_context(&big, 0);
	CHECK_INT_EQ(big.context_suffix_tokens, s.context_suffix_tokens);

	struct settings small = s;
	complete_fit_context(&small, 512);
	long used = (long)small.context_prefix_tokens + small.context_suffix_tokens +
	            small.context_extra_tokens + small.completion_max_tokens;
	CHECK(used <= 512);
	CHECK(used >= 400); /* shrunk only as much as needed */
	CHECK_INT_EQ(small.completion_max_tokens, s.completion_max_tokens);
	CHECK(small.context_prefix_tokens > small.context_extra_tokens);
	CHECK(small.context_extra_tokens > small.context_suffix_tokens);

	struct settings tiny = s;
	complete_fit_context(&tiny, 100); /* too small: the completion gets half */
	CHECK_INT_EQ(tiny.completion_max_tokens, 50);
	CHECK(tiny.context_prefix_tokens + tiny.context_suffix_tokens + tiny.context_extra_tokens <=
	      50);
}

/* Every item shown passes validation whole, starts at the cursor, is not
 * blank, and the items come best first. */
TEST(shown_candidates_are_valid)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	s.completion_candidates = 6;
	s.completion_temperature = 1.0;
	s.completion_multiline = CONFIG_MULTILINE_ALWAYS;
	size_t cursors[] = { sizeof PY - 2, 0, 40, 60, 95, 120 }; /* the first: in the comment */
	size_t len = sizeof PY - 1;
	int shown = 0, rejected = 0;
	for (size_t k = 0; k < sizeof cursors / sizeof cursors[0]; k++) {
		size_t cur = cursors[k] > len ? len : cursors[k];
		struct complete_options opt = complete_options_default();
		opt.seed = k + 1;
		struct complete_result r;
		struct infill_error err;
		int rc = complete_run(engine, model_tokenizer(model), "python", PY, len, cur, &s,
		                      &opt, &r, &err);
		CHECK_INT_EQ(rc, 0);
		CHECK(r.prompt_tokens > 0);
		CHECK_INT_EQ(r.n_generated, 6);
		rejected += r.rejected;
		for (size_t i = 0; i < r.count; i++) {
			const struct complete_item *it = &r.items[i];
			CHECK(it->start == cur && it->end >= cur);
			CHECK(it->len > 0 && strlen(it->text) == it->len);
			if (i) CHECK(r.items[i - 1].score >= it->score);
			/* the document with [start, end) taken out, the item inserted */
			char *doc = malloc(len + 1);
			memcpy(doc, PY, cur);
			memcpy(doc + cur, PY + it->end, len - it->end);
			size_t dlen = len - (it->end - cur);
			struct ast_validate_params vp = {
				.lang = ast_lang_from_id("python"),
				.text = doc,
				.len = dlen,
				.cursor = cur,
				.candidate = it->text,
				.candidate_len = it->len,
			};
			struct ast_validation v;
			CHECK_INT_EQ(ast_validate(&vp, &v), 0);
			CHECK(v.verdict == AST_VERDICT_VALID && v.keep_len == it->len);
			free(doc);
			shown++;
		}
		complete_result_finish(&r);
	}
	printf("shown %d, rejected %d\n", shown, rejected);
	CHECK(shown > 0); /* random text fits in a comment at least */
}

TEST(greedy_is_deterministic)
{
	CHECK(setup());
	struct settings s = settings_for("plaintext");
	s.completion_candidates = 1;
	s.completion_temperature = 0;
	struct complete_options opt = complete_options_default();
	struct complete_result a, b, c;
	struct infill_error err;
	size_t len = sizeof PY - 1;
	CHECK_INT_EQ(complete_run(engine, model_tokenizer(model), "plaintext", PY, len, 95, &s,
	                          &opt, &a, &err),
	             0);
	CHECK_INT_EQ(complete_run(engine, model_tokenizer(model), "plaintext", PY, len, 95, &s,
	                          &opt, &b, &err),
	             0);
	CHECK(b.cached_tokens > 0); /* the second run found the prompt in the cache */
	CHECK_INT_EQ(err.code, 0);  /* zeroed by a run that succeeds */
	CHECK(!err.message[0]);
	opt.use_cache = false;
	CHECK_INT_EQ(complete_run(engine, model_tokenizer(model), "plaintext", PY, len, 95, &s,
	                          &opt, &c, &err),
	             0);
	CHECK_INT_EQ(c.cached_tokens, 0);
	CHECK(a.count == b.count && a.count == c.count);
	for (size_t i = 0; i < a.count && i < b.count && i < c.count; i++) {
		CHECK(!strcmp(a.items[i].text, b.items[i].text));
		CHECK(!strcmp(a.items[i].text, c.items[i].text));
	}
	complete_result_finish(&a);
	complete_result_finish(&b);
	complete_result_finish(&c);
}

TEST(ablations_run)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	size_t len = sizeof PY - 1;
	for (int mask = 0; mask < 8; mask++) {
		struct complete_options opt = complete_options_default();
		opt.ast_slice = mask & 1;
		opt.validate = mask & 2;
		opt.rerank = mask & 4;
		struct complete_result r;
		struct infill_error err;
		CHECK_INT_EQ(complete_run(engine, model_tokenizer(model), "python", PY, len, 95, &s,
		                          &opt, &r, &err),
		             0);
		CHECK(r.prompt_tokens > 0);
		if (!opt.validate)
			for (size_t i = 0; i < r.count; i++)
				CHECK(r.items[i].verdict == AST_VERDICT_UNCHECKED);
		complete_result_finish(&r);
	}
}

TEST(cancelled_before_start)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	atomic_int cancel;
	atomic_init(&cancel, 1);
	struct complete_options opt = complete_options_default();
	opt.cancel = &cancel;
	struct complete_result r;
	struct infill_error err;
	int rc = complete_run(engine, model_tokenizer(model), "python", PY, sizeof PY - 1, 95, &s,
	                      &opt, &r, &err);
	CHECK_INT_EQ(rc, ENGINE_ECANCELED);
	CHECK_INT_EQ(err.code, ENGINE_ECANCELED);
	CHECK_INT_EQ(r.count, 0);
	complete_result_finish(&r);
}

TEST(cursor_past_end_is_an_error)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	struct complete_options opt = complete_options_default();
	struct complete_result r;
	struct infill_error err;
	CHECK(complete_run(engine, model_tokenizer(model), "python", PY, 4, 5, &s, &opt, &r, &err) <
	      0);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK(strstr(err.message, "cursor"));
	complete_result_finish(&r);
	/* no error struct: the code alone */
	CHECK_INT_EQ(complete_run(engine, model_tokenizer(model), "python", PY, 4, 5, &s, &opt, &r,
	                          NULL),
	             -EINVAL);
	complete_result_finish(&r);
}

TEST(replace_end_covers_retyped_closers)
{
	const char *t = "print(|)  \nnext";
	size_t len = strlen(t), cur = 7; /* after the '|' stand-in */
	CHECK_INT_EQ(complete_replace_end(t, len, cur, "x)", 2), cur + 1);
	CHECK_INT_EQ(complete_replace_end(t, len, cur, "x", 1), cur);
	CHECK_INT_EQ(complete_replace_end(t, len, cur, "x)\ny", 4), cur);
	CHECK_INT_EQ(complete_replace_end(t, len, cur, ")", 1), cur + 1);
	CHECK_INT_EQ(complete_replace_end(t, len, len, "abc", 3), len);
	const char *u = "f(a, |b)";
	CHECK_INT_EQ(complete_replace_end(u, strlen(u), 6, "c)", 2), 6); /* "b)" is not its tail */
	/* the candidate's `)` closes its own call: the line's `)` stays
	 * (replacing only up to it once left `print(area_of_circle(2.0)`) */
	const char *v = "print(are|)\n";
	CHECK_INT_EQ(complete_replace_end(v, strlen(v), 10, "a_of_circle(2.0)", 16), 10);
	CHECK_INT_EQ(complete_replace_end(v, strlen(v), 10, "a)", 2), 11);
	CHECK_INT_EQ(complete_replace_end(v, strlen(v), 10, "a(\")\")", 6), 10);
	CHECK_INT_EQ(complete_replace_end(v, strlen(v), 10, "a(\"(\"))", 7), 11);
	CHECK_INT_EQ(complete_replace_end(v, strlen(v), 10, "a(1)[2])", 8), 11);
}

static int complete_at_bar_in(const char *lang, const char *doc_with_bar, const struct settings *s,
                              struct complete_result *r)
{
	static char doc[1024];
	const char *bar = strchr(doc_with_bar, '|');
	size_t at = (size_t)(bar - doc_with_bar);
	memcpy(doc, doc_with_bar, at);
	strcpy(doc + at, bar + 1);
	struct complete_options opt = complete_options_default();
	struct infill_error err;
	return complete_run(engine, model_tokenizer(model), lang, doc, strlen(doc), at, s, &opt, r,
	                    &err);
}

static int complete_at_bar(const char *doc_with_bar, const struct settings *s,
                           struct complete_result *r)
{
	return complete_at_bar_in("python", doc_with_bar, s, r);
}

static const struct complete_item *find_text(const struct complete_result *r, const char *t)
{
	for (size_t i = 0; i < r->count; i++)
		if (!strcmp(r->items[i].text, t)) return &r->items[i];
	return NULL;
}

/* Lines that continue the same way elsewhere in the document are scored and
 * ranked with the decoded candidates, and validated like them. */
TEST(document_lines_are_offered_and_validated)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	const char *doc = "def f(items):\n    total = compute_total(items)\n"
	                  "    total = compute_total(items)\n    total = compute_total(items, 2)\n"
	                  "    total = comp|\n    return total\n";
	struct complete_result r;
	REQUIRE(complete_at_bar(doc, &s, &r) == 0);
	REQUIRE(r.count >= 2);
	/* random weights give any text about -10 nats a token, so the prior decides */
	CHECK_STR_EQ(r.items[0].text, "ute_total(items)");
	CHECK(r.items[0].stop == ENGINE_STOP_GIVEN);
	CHECK_NEAR(r.items[0].prior, 3.0 + 2.0 * log(2.0), 1e-9);
	const struct complete_item *other = find_text(&r, "ute_total(items, 2)");
	CHECK(other && other->stop == ENGINE_STOP_GIVEN);
	CHECK_INT_EQ(r.n_generated, s.completion_candidates + 2);
	CHECK_INT_EQ(r.given_shown, 2); /* what infill/stats counts as documentLines */
	complete_result_finish(&r);

	s.completion_from_document = false;
	REQUIRE(complete_at_bar(doc, &s, &r) == 0);
	CHECK_INT_EQ(r.n_generated, s.completion_candidates);
	CHECK_INT_EQ(r.given_shown, 0);
	for (size_t i = 0; i < r.count; i++) CHECK(r.items[i].stop != ENGINE_STOP_GIVEN);
	complete_result_finish(&r);

	/* a copy that would leave the cursor's line broken is dropped */
	s.completion_from_document = true;
	REQUIRE(complete_at_bar("def f():\n    y = foo(1))\n    y = foo(1))\n    y = f|\n", &s,
	                        &r) == 0);
	CHECK_INT_EQ(r.n_generated, s.completion_candidates + 1);
	CHECK(find_text(&r, "oo(1))") == NULL);
	CHECK(r.rejected >= 1);
	complete_result_finish(&r);
}

/* Where the document is broken at the cursor and a candidate mends it, only
 * candidates that mend it are shown. */
TEST(only_mending_candidates_when_one_mends)
{
	CHECK(setup());
	struct settings s = settings_for("javascript");
	/* an unclosed string: random text inside it breaks nothing more, and
	 * validation passes it (measured: 3 of them without this rule) */
	const char *doc = "const a = [\n  'alpha',\n  'ga|\n  'delta',\n];\n"
	                  "const b = [\n  'gamma',\n  'gamma'\n];\n";
	struct complete_result r;
	REQUIRE(complete_at_bar_in("javascript", doc, &s, &r) == 0);
	CHECK(find_text(&r, "mma',") != NULL);
	CHECK(r.rejected >= 3);
	const char *bar = strchr(doc, '|');
	size_t at = (size_t)(bar - doc);
	char text[512];
	memcpy(text, doc, at);
	strcpy(text + at, bar + 1);
	for (size_t i = 0; i < r.count; i++) {
		struct ast_validate_params vp = {
			.lang = ast_lang_from_id("javascript"),
			.text = text,
			.len = strlen(text),
			.cursor = at,
			.candidate = r.items[i].text,
			.candidate_len = r.items[i].len,
		};
		struct ast_validation v;
		REQUIRE(ast_validate(&vp, &v) == 0);
		CHECK(v.errors_after < v.errors_before);
	}
	complete_result_finish(&r);
}

/* `#endif` is offered where the file leaves an `#if` open, and only there:
 * tree-sitter's C grammar takes a stray `#endif` as a directive like any
 * other, so validation alone would let it through everywhere. */
TEST(closing_lines_are_offered_where_they_close)
{
	CHECK(setup());
	struct settings s = settings_for("c");
	const char *open_doc = "#ifndef X_H\n#define X_H\n\nint f(void);\n\n#|";
	struct complete_result r;
	REQUIRE(complete_at_bar_in("c", open_doc, &s, &r) == 0);
	REQUIRE(r.count >= 1);
	/* it mends the file, so nothing that leaves the guard open is shown */
	CHECK_STR_EQ(r.items[0].text, "endif");
	CHECK_INT_EQ(r.count, 1);
	complete_result_finish(&r);

	REQUIRE(complete_at_bar_in("c", "#ifndef X_H\n#define X_H\n\nint f(void);\n|\n#endif\n", &s,
	                           &r) == 0);
	CHECK(find_text(&r, "#endif") == NULL);
	complete_result_finish(&r);

	/* Here the split `extern "C" {` block makes tree-sitter swallow the
	 * file into one error: the `#endif` that heals it is judged by the file
	 * (it mends), not by the line alone (where it would mend nothing). */
	const char *swallowed = "#ifndef X_H\n#define X_H\n\n#ifdef __cplusplus\nextern \"C\" {\n"
	                        "#endif\n\n/*\n * Kinds.\n */\n#define X_UNKNOWN 0\n\n"
	                        "#ifdef __cplusplus\n}\n#endif\n\n#end\n";
	struct ast_validate_params vp = {
		.lang = ast_lang_from_id("c"),
		.text = swallowed,
		.len = strlen(swallowed),
		.cursor = strlen(swallowed) - 1,
		.candidate = "if",
		.candidate_len = 2,
	};
	struct ast_validation v;
	REQUIRE(ast_validate(&vp, &v) == 0);
	CHECK(v.verdict == AST_VERDICT_VALID);
	CHECK(v.errors_after < v.errors_before);
	vp.candidate = "e_type_t";
	vp.candidate_len = 8;
	REQUIRE(ast_validate(&vp, &v) == 0);
	CHECK(v.errors_after == v.errors_before);
}

/* What closes a block's line (`} );` under `}( function( d ) {`) and a
 * docstring left open: offered beside the model's candidates, and where
 * they mend the file, the only ones shown (the model's go on as if the
 * file did not end there). */
TEST(brackets_and_strings_left_open_are_closed)
{
	CHECK(setup());
	struct settings s = settings_for("javascript");
	struct complete_result r;
	REQUIRE(complete_at_bar_in(
	                "javascript",
	                "( function( factory ) {\n\tfactory( 1 );\n} )( function( d ) {\n"
	                "\td.x = 1;\n\treturn d;\n\n} |",
	                &s, &r) == 0);
	REQUIRE(r.count >= 1);
	for (size_t i = 0; i < r.count; i++)
		CHECK(!strcmp(r.items[i].text, ")") || !strcmp(r.items[i].text, ");"));
	complete_result_finish(&r);

	s = settings_for("python");
	REQUIRE(complete_at_bar_in(
	                "python",
	                "def f():\n    \"\"\"Open a pty.\n    Use os.openpty() if possible|\n\n"
	                "    return 1\n\n\ndef g():\n    \"\"\"Another.\"\"\"\n",
	                &s, &r) == 0);
	REQUIRE(r.count == 1);
	CHECK_STR_EQ(r.items[0].text, "\"\"\"");
	complete_result_finish(&r);
}

/* A line copied from elsewhere in the document may break what follows it
 * as much as the line it copies does there: the grammar does not know the
 * project's macros. Any other line is judged against the file without its
 * text, which here has no error. */
TEST(copied_lines_may_break_what_their_source_breaks)
{
	CHECK(setup());
	const char *doc =
	        "int ok;\nAPI_DEPRECATED\nvoid f(int a);\nAPI_DEPRECATED\nvoid g(int a);\n"
	        "API_|\nvoid k(int a);\n";
	const char *bar = strchr(doc, '|');
	size_t at = (size_t)(bar - doc);
	char text[512];
	memcpy(text, doc, at);
	strcpy(text + at, bar + 1);
	struct ast_validate_params vp = {
		.lang = ast_lang_from_id("c"),
		.text = text,
		.len = strlen(text),
		.cursor = at,
		.candidate = "DEPRECATED",
		.candidate_len = 10,
	};
	struct ast_validation v;
	REQUIRE(ast_validate(&vp, &v) == 0);
	CHECK(v.verdict == AST_VERDICT_INVALID);
	vp.copied = true;
	vp.copy_at = (size_t)(strstr(text, "API_DEPRECATED\nvoid g") - text);
	REQUIRE(ast_validate(&vp, &v) == 0);
	CHECK(v.verdict == AST_VERDICT_VALID);
	vp.copy_at = 0; /* `int ok;` breaks nothing */
	REQUIRE(ast_validate(&vp, &v) == 0);
	CHECK(v.verdict == AST_VERDICT_INVALID);

	struct settings s = settings_for("c");
	struct complete_result r;
	REQUIRE(complete_at_bar_in("c", doc, &s, &r) == 0);
	const struct complete_item *it = find_text(&r, "DEPRECATED");
	CHECK(it && it->stop == ENGINE_STOP_GIVEN);
	complete_result_finish(&r);
}

/* A generator in the engine's place that answers fixed texts (decoded
 * ones, stop MAX_LINES as a line cut would leave them) and records the
 * request's stop strings. */
struct fixed_gen {
	const char *const *texts;
	size_t n;
	char stops[512]; /* the request's stop strings, joined by '|' */
	int32_t max_lines;
};

static int fixed_generate(void *ud, const struct engine_request *rq, struct engine_result *res,
                          struct infill_error *err)
{
	(void)err;
	struct fixed_gen *g = ud;
	memset(res, 0, sizeof *res);
	g->stops[0] = 0;
	for (size_t i = 0; i < rq->n_stop; i++) {
		strncat(g->stops, rq->stop[i], sizeof g->stops - strlen(g->stops) - 2);
		strcat(g->stops, "|");
	}
	g->max_lines = rq->max_lines;
	res->candidates = calloc(g->n, sizeof *res->candidates);
	if (!res->candidates) return -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		struct engine_candidate *c = &res->candidates[i];
		c->text = strdup(g->texts[i]);
		c->len = strlen(g->texts[i]);
		c->n_tokens = 4;
		c->mean_logprob = -1.0 - (double)i;
		c->sum_logprob = 4 * c->mean_logprob;
		c->stop = ENGINE_STOP_EOG;
		res->n_candidates++;
	}
	return 0;
}

static int complete_fixed(const char *lang, const char *doc_with_bar, struct fixed_gen *g,
                          struct settings *s, struct complete_result *r)
{
	static char doc[1024];
	const char *bar = strchr(doc_with_bar, '|');
	size_t at = (size_t)(bar - doc_with_bar);
	memcpy(doc, doc_with_bar, at);
	strcpy(doc + at, bar + 1);
	struct complete_options opt = complete_options_default();
	opt.generate = fixed_generate;
	opt.generate_ud = g;
	return complete_run(NULL, model_tokenizer(model), lang, doc, strlen(doc), at, s, &opt, r,
	                    NULL);
}

/* The shape decided at the cursor binds every candidate: mid-line (and on a
 * line shape) nothing with a line break is shown, not even after leading
 * blank lines, which the engine's line count skips; a candidate is cut at
 * its first newline and judged as cut. */
TEST(shape_binds_every_candidate)
{
	CHECK(setup());
	struct settings s = settings_for("c");
	const char *texts[] = { "\n\n    if (r->flags)", "flags\n        && r->len", "len" };
	struct fixed_gen g = { texts, 3, "", 0 };
	struct complete_result r;
	const char *doc = "int f(struct r *r)\n{\n    if (r->|) {\n        return 1;\n    }\n}\n";
	REQUIRE(complete_fixed("c", doc, &g, &s, &r) == 0);
	CHECK_INT_EQ(r.shape, AST_SHAPE_REST_OF_LINE);
	CHECK_INT_EQ(r.max_lines, 1);
	for (size_t i = 0; i < r.count; i++) CHECK(!strchr(r.items[i].text, '\n'));
	CHECK(find_text(&r, "flags") != NULL); /* cut at its newline, then valid */
	CHECK(find_text(&r, "len") != NULL);
	CHECK_INT_EQ(r.count, 2);
	complete_result_finish(&r);

	/* multi-line asked for: still one line where the line's text follows */
	s.completion_multiline = CONFIG_MULTILINE_ALWAYS;
	REQUIRE(complete_fixed("c", doc, &g, &s, &r) == 0);
	CHECK_INT_EQ(r.max_lines, 1);
	CHECK_INT_EQ(g.max_lines, 1);
	for (size_t i = 0; i < r.count; i++) CHECK(!strchr(r.items[i].text, '\n'));
	complete_result_finish(&r);

	/* a line shape (a blank line in a body) binds the same way */
	s.completion_multiline = CONFIG_MULTILINE_AUTO;
	const char *py_texts[] = { "\n    total -= 1", "total += 1\n    total *= 2" };
	struct fixed_gen pg = { py_texts, 2, "", 0 };
	struct settings ps = settings_for("python");
	REQUIRE(complete_fixed("python", "def f(total):\n    total = 2\n    |\n    return total\n",
	                       &pg, &ps, &r) == 0);
	CHECK_INT_EQ(r.shape, AST_SHAPE_LINE);
	CHECK_INT_EQ(r.count, 1);
	CHECK(find_text(&r, "total += 1") != NULL);
	complete_result_finish(&r);
	CHECK_INT_EQ(complete_shape_bind("a\r\nb", 4, 1), 1);
	CHECK_INT_EQ(complete_shape_bind("a\nb", 3, 2), 3);

	/* a block keeps its lines */
	const char *b_texts[] = { "x = 1\n    return x" };
	struct fixed_gen bg = { b_texts, 1, "", 0 };
	REQUIRE(complete_fixed("python", "def f():\n    |", &bg, &ps, &r) == 0);
	CHECK_INT_EQ(r.shape, AST_SHAPE_BLOCK);
	CHECK(find_text(&r, "x = 1\n    return x") != NULL);
	complete_result_finish(&r);
}

/* A candidate's final line break at the end of a line (what servers send)
 * would only add an empty line: it is not shown; where text follows the
 * cursor on its line, a line break before it is the candidate's to keep. */
TEST(trailing_line_breaks_at_a_line_end_are_not_shown)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	const char *texts[] = { "total = a + b\n", "total = a - b\n  \n" };
	struct fixed_gen g = { texts, 2, "", 0 };
	struct complete_result r;
	REQUIRE(complete_fixed("python", "def f(a, b):\n    |", &g, &s, &r) == 0);
	CHECK_INT_EQ(r.shape, AST_SHAPE_BLOCK); /* several lines allowed */
	REQUIRE(r.count >= 1);
	for (size_t i = 0; i < r.count; i++) CHECK(!strchr(r.items[i].text, '\n'));
	CHECK(find_text(&r, "total = a + b") != NULL);
	complete_result_finish(&r);
	CHECK_INT_EQ(complete_trim_trailing_lines("x(|)", 4, 2, "a\n", 2), 2); /* text follows */
	CHECK_INT_EQ(complete_trim_trailing_lines("x\n", 2, 1, "a\n\n", 3), 1);
	CHECK_INT_EQ(complete_trim_trailing_lines("x", 1, 1, "a  ", 3), 3); /* no line break */
}

/* The language's own stop strings reach the engine, and completion.stop
 * adds to them. */
TEST(language_stops_and_the_setting_reach_the_engine)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	const char *texts[] = { "pass" };
	struct fixed_gen g = { texts, 1, "", 0 };
	struct complete_result r;
	REQUIRE(complete_fixed("python", "def f():\n    |", &g, &s, &r) == 0);
	CHECK(strstr(g.stops, "\ndef |") != NULL);
	CHECK(strstr(g.stops, "\nclass |") != NULL);
	complete_result_finish(&r);
	char *extra[] = { "# end", NULL };
	s.completion_stop = extra;
	REQUIRE(complete_fixed("python", "def f():\n    |", &g, &s, &r) == 0);
	CHECK(strstr(g.stops, "\ndef |") != NULL && strstr(g.stops, "# end|") != NULL);
	complete_result_finish(&r);
	/* JavaScript has its own; a language without a grammar only the setting's */
	REQUIRE(complete_fixed("javascript", "function f() {\n  |\n}\n", &g, &s, &r) == 0);
	CHECK(strstr(g.stops, "\nfunction |") != NULL && !strstr(g.stops, "\ndef "));
	complete_result_finish(&r);
	REQUIRE(complete_fixed("plaintext", "some |", &g, &s, &r) == 0);
	CHECK_STR_EQ(g.stops, "# end|");
	complete_result_finish(&r);
}

TEST(runaway_loops_are_recognised)
{
	const char *loops[] = {
		"Object *, int *widthPtr, int *widthPtr, int *widthPtr, int *widthPtr,",
		"ct _LINUX_RPATH_PEND_MAX_MAX_MAX_MAX_MAX_MAX", "00000000000000000000"
	};
	for (size_t i = 0; i < 3; i++) {
		CHECK(complete_is_runaway(loops[i], strlen(loops[i]), ENGINE_STOP_MAX_TOKENS));
		/* a line that ended, however it looks, is the model's choice */
		CHECK(!complete_is_runaway(loops[i], strlen(loops[i]), ENGINE_STOP_MAX_LINES));
	}
	const char *fine[] = { "total = compute_total(items, weights) + offset * scale",
		               "_MAX_MAX_MAX", /* too short to call */
		               "a = [\n0, 0, 0, 0, 0, 0, 0, 0, 0, 0" };
	for (size_t i = 0; i < 3; i++)
		CHECK(!complete_is_runaway(fine[i], strlen(fine[i]), ENGINE_STOP_MAX_TOKENS));
}

/* ---- context from the rest of the project ---- */

/* No project context (nothing given, or empty lists) is the prompt and the
 * answer of before: same prompt tokens, same items. */
TEST(no_project_context_behaves_as_without)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	s.completion_temperature = 0;
	struct complete_options a = complete_options_default(), b = a;
	a.use_cache = b.use_cache = false;
	struct engine_snippet none[1] = { { "unused", 6, "x.py" } };
	b.project = none;
	b.n_project = 0;
	b.project_lines = "";
	b.project_lines_len = 0;
	struct complete_result ra, rb;
	size_t len = sizeof PY - 1, at = 104;
	REQUIRE(complete_run(engine, model_tokenizer(model), "python", PY, len, at, &s, &a, &ra,
	                     NULL) == 0);
	REQUIRE(complete_run(engine, model_tokenizer(model), "python", PY, len, at, &s, &b, &rb,
	                     NULL) == 0);
	CHECK_INT_EQ(ra.prompt_tokens, rb.prompt_tokens);
	CHECK_INT_EQ(ra.count, rb.count);
	for (size_t i = 0; i < ra.count && i < rb.count; i++)
		CHECK_STR_EQ(ra.items[i].text, rb.items[i].text);
	CHECK_INT_EQ(rb.n_project_kept, 0);
	CHECK_INT_EQ(rb.project_given, 0);
	complete_result_finish(&ra);
	complete_result_finish(&rb);
}

/* Chunks go into the prompt within what the document's own snippets left
 * of context.extraTokens, whole; other files' lines are scored as
 * candidates like the document's. */
TEST(project_chunks_and_other_files_lines)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	const char *doc = "def f(url):\n    resp = session.get(";
	const char *other = "def g():\n    resp = session.get(url, timeout=TIMEOUT)\n";
	struct engine_snippet chunk = { "def helper(url, timeout): ...", 29, "lib/net.py" };
	struct complete_options o = complete_options_default();
	o.use_cache = false;
	struct complete_result r0, r1;
	REQUIRE(complete_run(engine, model_tokenizer(model), "python", doc, strlen(doc),
	                     strlen(doc), &s, &o, &r0, NULL) == 0);
	o.project = &chunk;
	o.n_project = 1;
	o.project_lines = other;
	o.project_lines_len = strlen(other);
	REQUIRE(complete_run(engine, model_tokenizer(model), "python", doc, strlen(doc),
	                     strlen(doc), &s, &o, &r1, NULL) == 0);
	CHECK_INT_EQ(r1.n_project_kept, 1);
	CHECK(r1.project_tokens > 0);
	/* counted as path + text + 2; the header is "# path" here: within 4 */
	CHECK(abs(r1.prompt_tokens - (r0.prompt_tokens + r1.project_tokens)) <= 4);
	CHECK(r1.prompt_tokens > r0.prompt_tokens + 8);
	CHECK_INT_EQ(r1.project_given, 1);
	const struct complete_item *it = find_text(&r1, "url, timeout=TIMEOUT)");
	CHECK(it && it->stop == ENGINE_STOP_GIVEN);
	CHECK(find_text(&r0, "url, timeout=TIMEOUT)") == NULL);
	complete_result_finish(&r1);
	/* a budget too small for the chunk leaves it out whole */
	s.context_extra_tokens = 4;
	REQUIRE(complete_run(engine, model_tokenizer(model), "python", doc, strlen(doc),
	                     strlen(doc), &s, &o, &r1, NULL) == 0);
	CHECK_INT_EQ(r1.n_project_kept, 0);
	CHECK_INT_EQ(r1.prompt_tokens, r0.prompt_tokens);
	complete_result_finish(&r0);
	complete_result_finish(&r1);
}

/* Another file's line comes without its trailing comment (it speaks of
 * that file: a header's guard after `#endif`), unless the marker may sit
 * in a string. */
TEST(other_files_lines_lose_their_trailing_comments)
{
	CHECK(setup());
	struct settings s = settings_for("python");
	const char *doc = "def f(url):\n    resp = session.get(";
	const char *other = "def g():\n    resp = session.get(url, timeout=T)  # their retries\n"
	                    "def h():\n    resp = session.get(\"a #b\")\n";
	struct complete_options o = complete_options_default();
	o.use_cache = false;
	o.project_lines = other;
	o.project_lines_len = strlen(other);
	struct complete_result r;
	REQUIRE(complete_run(engine, model_tokenizer(model), "python", doc, strlen(doc),
	                     strlen(doc), &s, &o, &r, NULL) == 0);
	CHECK_INT_EQ(r.project_given, 2);
	const struct complete_item *it = find_text(&r, "url, timeout=T)");
	CHECK(it && it->stop == ENGINE_STOP_GIVEN);
	CHECK(find_text(&r, "url, timeout=T)  # their retries") == NULL);
	it = find_text(&r, "\"a #b\")"); /* after an open quote: kept whole */
	CHECK(it && it->stop == ENGINE_STOP_GIVEN);
	complete_result_finish(&r);

	s = settings_for("c");
	doc = "#ifndef A_H_\n#define A_H_\nint a(void);\n#end";
	other = "#ifndef B_H_\n#define B_H_\nint b(void);\n#endif  // B_H_\n"
	        "#ifndef C_H_\n#define C_H_\n#endif /* C_H_ */\n";
	o.project_lines = other;
	o.project_lines_len = strlen(other);
	REQUIRE(complete_run(engine, model_tokenizer(model), "c", doc, strlen(doc), strlen(doc), &s,
	                     &o, &r, NULL) == 0);
	for (size_t i = 0; i < r.count; i++) {
		CHECK(!strstr(r.items[i].text, "B_H_"));
		CHECK(!strstr(r.items[i].text, "C_H_"));
	}
	CHECK(find_text(&r, "if") != NULL);
	complete_result_finish(&r);
}

/* Another C file's line from a macro body comes without its `\` where the
 * cursor's line continues no macro, and with it where it does. */
TEST(other_files_macro_lines_lose_their_continuation)
{
	CHECK(setup());
	struct settings s = settings_for("c");
	const char *other = "#define LOOP(n) \\\n"
	                    "    for (uint32_t i = 0; i < n; i++) {     \\\n"
	                    "        body(i);                          \\\n"
	                    "    }\n";
	struct complete_options o = complete_options_default();
	o.use_cache = false;
	o.project_lines = other;
	o.project_lines_len = strlen(other);
	struct complete_result r;
	const char *doc = "void f(uint32_t n) {\n    for (uint32_t i = 0; i <\n"
	                  "        body(i);\n    }\n}\n";
	size_t at = strstr(doc, "i <\n") - doc + 3;
	REQUIRE(complete_run(engine, model_tokenizer(model), "c", doc, strlen(doc), at, &s, &o, &r,
	                     NULL) == 0);
	CHECK_INT_EQ(r.project_given, 1);
	const struct complete_item *it = find_text(&r, " n; i++) {");
	CHECK(it && it->stop == ENGINE_STOP_GIVEN);
	for (size_t i = 0; i < r.count; i++) CHECK(!strchr(r.items[i].text, '\\'));
	complete_result_finish(&r);
	/* inside a macro of its own: the continuation is kept */
	doc = "#define G(n) \\\n    for (uint32_t i = 0; i <\n"
	      "        body(i);                          \\\n    }\n";
	at = strstr(doc, "i <\n") - doc + 3;
	REQUIRE(complete_run(engine, model_tokenizer(model), "c", doc, strlen(doc), at, &s, &o, &r,
	                     NULL) == 0);
	CHECK_INT_EQ(r.project_given, 1);
	it = find_text(&r, " n; i++) {     \\");
	CHECK(it && it->stop == ENGINE_STOP_GIVEN);
	complete_result_finish(&r);
}

/* Typing along one line with project context: the chunks chosen for the
 * line stay (the document's memory), so the prompt's head is cached and
 * the share of it found in the cache does not drop against typing without
 * a project. */
static double typing_cache_share(const struct engine_snippet *chunks, size_t n)
{
	struct settings s = settings_for("python");
	s.completion_max_tokens = 2;
	s.completion_candidates = 1;
	char doc[512] = "import os\n\ndef main(path):\n    data = load_config(path)\n    ";
	const char *typed = "result = data.get(";
	struct complete_memory mem = { 0 };
	long prompt = 0, cached = 0;
	for (size_t k = 0; typed[k]; k++) {
		size_t len = strlen(doc);
		doc[len] = typed[k];
		doc[len + 1] = 0;
		struct complete_options o = complete_options_default();
		o.memory = &mem;
		o.project = chunks;
		o.n_project = n;
		struct complete_result r;
		if (complete_run(engine, model_tokenizer(model), "python", doc, len + 1, len + 1,
		                 &s, &o, &r, NULL))
			return -1;
		if (k > 0) { /* the first keystroke is cold */
			prompt += r.prompt_tokens;
			cached += r.cached_tokens;
		}
		complete_result_finish(&r);
	}
	complete_memory_finish(&mem);
	return prompt ? (double)cached / (double)prompt : 0;
}

TEST(typing_keeps_the_prompt_head_with_project_context)
{
	CHECK(setup());
	struct engine_snippet chunks[2] = {
		{ "def load_config(path: str) -> dict: ...", 39, "config.py" },
		{ "    result = data.get(key, default)\n", 36, "other.py" },
	};
	double without = typing_cache_share(NULL, 0), with = typing_cache_share(chunks, 2);
	printf("cache share while typing one line: %.3f without project context, %.3f with\n",
	       without, with);
	CHECK(without > 0.5);
	CHECK(with >= without - 1e-9);
}

/* Typing three lines of ~70 bytes each after twenty lines of code, answered
 * from the short context (as the prefill budget answers after a jump): the
 * fewest keystrokes whose short prompt was mostly cached, with the
 * document's memory or without it. */
static int short_typing_worst(bool with_memory, double *worst)
{
	struct settings s = settings_for("python");
	s.completion_max_tokens = 1;
	s.completion_candidates = 1;
	s.completion_from_document = false;
	char doc[4096] = "";
	for (int i = 0; i < 20; i++)
		snprintf(doc + strlen(doc), sizeof doc - strlen(doc),
		         "value_%02d = compute(first_%02d, second_%02d)\n", i, i, i);
	const char *typed = "    total = value_01 + value_02 + value_03 + value_04 + value_05\n"
	                    "    other = value_06 * value_07 * value_08 * value_09 * value_10\n"
	                    "    third = value_11 - value_12 - value_13 - value_14 - value_15";
	struct complete_memory mem = { 0 };
	*worst = 1;
	for (size_t k = 0; typed[k]; k++) {
		size_t len = strlen(doc);
		doc[len] = typed[k];
		doc[len + 1] = 0;
		struct complete_options o = complete_options_default();
		o.memory = with_memory ? &mem : NULL;
		o.short_only = true;
		struct complete_result r;
		if (complete_run(engine, model_tokenizer(model), "python", doc, len + 1, len + 1,
		                 &s, &o, &r, NULL))
			return -1;
		double share = r.prompt_tokens ? (double)r.cached_tokens / r.prompt_tokens : 0;
		if (k > 0 && share < *worst) *worst = share;
		complete_result_finish(&r);
	}
	complete_memory_finish(&mem);
	return 0;
}

TEST(typing_keeps_the_short_context_cached)
{
	CHECK(setup());
	double with = 0, without = 0;
	REQUIRE(short_typing_worst(true, &with) == 0);
	REQUIRE(short_typing_worst(false, &without) == 0);
	printf("short context while typing: worst cache share %.2f with the document's memory, "
	       "%.2f without\n",
	       with, without);
	CHECK(with >= 0.8);   /* every key: the start kept, only the new tokens computed */
	CHECK(without < 0.5); /* the grid alone moves the start within 200 bytes */
}

TEST(teardown)
{
	engine_free(engine);
	model_free(model);
	config_free(cfg);
	engine = NULL;
	model = NULL;
	cfg = NULL;
}

/* The one way a model is opened (server, complete, eval) takes what the
 * settings say: the KV pool's size and precision, and the engine's shifted
 * suffix re-use; a file that is not there leaves nothing open. */
static bool open_tiny(const struct complete_model_spec *spec,
                      void (*progress)(void *user, float fraction), void *user, struct model **m,
                      struct engine **e)
{
	struct infill_error err;
	if (!complete_model_open(TESTDATA "/models/tiny-dsc-f32.gguf", spec, progress, user, m, e,
	                         &err))
		return true;
	fprintf(stderr, "open: %s\n", err.message);
	return false;
}

static int32_t pages_with(const struct complete_model_spec *spec, bool *shifted)
{
	struct model *m;
	struct engine *e;
	if (!open_tiny(spec, NULL, NULL, &m, &e)) return -1;
	int32_t pages = model_info(m)->kv_n_pages;
	*shifted = engine_get_params(e).reuse_shifted_suffix;
	engine_free(e);
	model_free(m);
	return pages;
}

TEST(model_open_follows_the_settings)
{
	CHECK(setup());
	struct settings s = *config_get(cfg, NULL);
	s.threads = 1;
	s.cache_memory_mb = 4;
	s.cache_kv_type = CONFIG_KV_F16;
	s.cache_reuse_shifted_suffix = true;
	struct complete_model_spec spec = complete_model_spec_from(&s);
	CHECK(spec.reuse_shifted_suffix && spec.threads == 1 && spec.cache_memory_mb == 4);
	bool shifted = false;
	int32_t f16_4 = pages_with(&spec, &shifted);
	CHECK(f16_4 > 4);
	CHECK(shifted);
	spec.cache_memory_mb = 8;
	spec.reuse_shifted_suffix = false;
	int32_t f16_8 = pages_with(&spec, &shifted);
	CHECK(!shifted);
	CHECK_NEAR((double)f16_8 / f16_4, 2.0, 0.05); /* cache.memoryMB sizes the pool */
	spec.kv_type = CONFIG_KV_F32;
	int32_t f32_8 = pages_with(&spec, &shifted);
	CHECK_NEAR((double)f16_8 / f32_8, 2.0, 0.05); /* f32 pages are twice as large */

	struct model *m = (struct model *)1;
	struct engine *e = (struct engine *)1;
	struct infill_error err;
	int rc = complete_model_open("/nonexistent/none.gguf", &spec, NULL, NULL, &m, &e, &err);
	CHECK_INT_EQ(rc, -ENOENT); /* the file system's code, kept through model_load */
	CHECK_INT_EQ(err.code, rc);
	CHECK(strstr(err.message, "cannot load the model /nonexistent/none.gguf: "));
	CHECK(m == NULL && e == NULL);
}

struct reports {
	float f[1024];
	int n;
};

static void report(void *user, float fraction)
{
	struct reports *r = user;
	if (r->n < 1024) r->f[r->n++] = fraction;
}

/* The reports of opening the tiny model (with its q8_0 twin as the draft
 * when draft); whether a draft drafts after. */
static bool open_reporting(struct complete_model_spec *spec, bool draft, struct reports *r)
{
	snprintf(spec->draft_model, sizeof spec->draft_model, "%s",
	         draft ? TESTDATA "/models/tiny-dsc-q8_0.gguf" : "");
	r->n = 0;
	struct model *m;
	struct engine *e;
	if (!open_tiny(spec, report, r, &m, &e)) return false;
	bool drafts = engine_draft_model(e) != NULL;
	engine_free(e);
	model_free(m);
	return drafts;
}

/* One progress over the model's load and its draft's: it rises to 1 once,
 * at the end, and the draft's load reports too (the bar does not sit at
 * 100% while the draft loads). */
TEST(model_open_progress_covers_the_draft)
{
	CHECK(setup());
	struct settings s = *config_get(cfg, NULL);
	s.threads = 1;
	s.cache_memory_mb = 4;
	struct complete_model_spec spec = complete_model_spec_from(&s);
	struct reports alone, both;
	CHECK(!open_reporting(&spec, false, &alone));
	CHECK(open_reporting(&spec, true, &both));
	REQUIRE(alone.n > 0 && both.n > alone.n);
	CHECK_NEAR(alone.f[alone.n - 1], 1.0, 1e-6);
	CHECK_NEAR(both.f[both.n - 1], 1.0, 1e-6);
	for (int i = 1; i < both.n; i++) CHECK(both.f[i] >= both.f[i - 1]);
	/* the model's part ends at its share of the bytes (18.0 MB of 23.7) */
	CHECK(both.f[alone.n - 1] > 0.5f && both.f[alone.n - 1] < 0.95f);
}

/* A copy of the tiny model with blk.0.attn_k.weight one row short. */
static int write_short_attn_k(const char *out)
{
	struct infill_error ge;
	struct gguf_file *f = gguf_open(TESTDATA "/models/tiny-dsc-f32.gguf", &ge);
	if (!f) return -1;
	struct gguf_writer *w = gguf_writer_new();
	for (int64_t i = 0; i < gguf_key_count(f); i++) gguf_writer_copy_key(w, f, i);
	for (int64_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor_info *t = gguf_tensor(f, i);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
		int64_t ne[4] = { t->ne[0], t->ne[1], t->ne[2], t->ne[3] };
		uint64_t nbytes = t->nbytes;
		if (!strcmp(name, "blk.0.attn_k.weight")) {
			ne[1] -= 1;
			nbytes -= (uint64_t)ne[0] * 4;
		}
		gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne, t->data, nbytes);
	}
	int rc = gguf_writer_write(w, out, &ge);
	gguf_writer_free(w);
	gguf_close(f);
	return rc;
}

/* The one error struct crosses the layers whole: the tensor a loader or a
 * backend names reaches the caller of complete_model_open, beside a message
 * that names the file once. */
TEST(model_open_errors_keep_the_tensor_at_fault)
{
	char path[] = "/tmp/infill-test-shortk-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);
	REQUIRE(write_short_attn_k(path) == 0);
	CHECK(setup());
	struct settings st = *config_get(cfg, NULL);
	st.threads = 1;
	struct complete_model_spec spec = complete_model_spec_from(&st);
	struct model *m = NULL;
	struct engine *e = NULL;
	struct infill_error err = { 0 };
	int rc = complete_model_open(path, &spec, NULL, NULL, &m, &e, &err);
	CHECK_INT_EQ(rc, -EINVAL);
	CHECK_INT_EQ(err.code, rc);
	CHECK_STR_EQ(err.tensor, "blk.0.attn_k.weight");
	CHECK(strstr(err.message, "cannot load the model ") == err.message);
	const char *second = strstr(err.message + 1, path);
	CHECK(second && !strstr(second + 1, path)); /* the path once */
	CHECK(m == NULL && e == NULL);
	remove(path);
}

TEST_MAIN()
