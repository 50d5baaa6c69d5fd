/*
 * test_nextedit_model.c - next edits the model writes
 * (pipeline/nextedit_model.c): the prompts of each format as exact strings,
 * the rewrite request, and a place found by the finder run through
 * complete_run (the path every completion takes) with a generator in the
 * engine's place that answers fixed texts, then with the tiny model: the
 * edit offered is the candidate's, and one that breaks the file's syntax is
 * never offered.
 */
#include "harness.h"

#include <errno.h>
#include <unistd.h>

#include "complete.h"
#include "config.h"
#include "nextedit_model.h"

/* Outside a TEST body (helpers): a setup that fails ends the run. */
#define MUST(cond)                                                                               \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: setup failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

/* ---- the prompts ---- */

/* The document after `def f(a):` became `def f(a, b):`. */
static const char PY[] = "def f(a, b):\n    return a\n\nf(1)\n";
#define PY_EDIT_START 7
#define PY_EDIT_END   10
#define PY_CALL_AT    30 /* after `1` in `f(1)` */

static void py_pair(struct nextedit_pair *p)
{
	MUST(nextedit_pair_make(PY, strlen(PY), PY_EDIT_START, PY_EDIT_END, "", 0, p) == 0);
}

TEST(pair_is_whole_lines_before_and_after)
{
	struct nextedit_pair p;
	py_pair(&p);
	CHECK_STR_EQ(p.before, "def f(a):");
	CHECK_STR_EQ(p.after, "def f(a, b):");
	CHECK_INT_EQ(p.line, 0);
	nextedit_pair_finish(&p);
	/* a change on the third line, one that removed a line's end */
	const char *t = "a = 1\nb = 2\nc = 3 + 4\n";
	REQUIRE(nextedit_pair_make(t, strlen(t), 18, 19, "x\ny", 3, &p) == 0);
	CHECK_STR_EQ(p.before, "c = 3 x\ny 4");
	CHECK_STR_EQ(p.after, "c = 3 + 4");
	CHECK_INT_EQ(p.line, 2);
	nextedit_pair_finish(&p);
	CHECK(nextedit_pair_make(t, strlen(t), 3, 99, "", 0, &p) == -EINVAL);
}

TEST(fim_edits_block_exact)
{
	struct nextedit_pair v[2];
	REQUIRE(nextedit_pair_make("x = 1\ny = 2\n", 12, 4, 5, "0", 1, &v[0]) == 0);
	py_pair(&v[1]);
	char *s = nextedit_prompt_fim_edits(v, 2, "#");
	CHECK_STR_EQ(s, "# Recent edits (- before, + after):\n"
	                "# @@ line 1\n"
	                "# -x = 0\n"
	                "# +x = 1\n"
	                "# @@ line 1\n"
	                "# -def f(a):\n"
	                "# +def f(a, b):\n");
	free(s);
	s = nextedit_prompt_fim_edits(v + 1, 1, "//");
	CHECK_STR_EQ(s, "// Recent edits (- before, + after):\n// @@ line 1\n// -def f(a):\n"
	                "// +def f(a, b):\n");
	free(s);
	s = nextedit_prompt_fim_edits(v, 0, "#");
	CHECK_STR_EQ(s, "");
	free(s);
	nextedit_pair_finish(&v[0]);
	nextedit_pair_finish(&v[1]);
	CHECK_STR_EQ(nextedit_comment_for("python"), "#");
	CHECK_STR_EQ(nextedit_comment_for("c"), "//");
	CHECK_STR_EQ(nextedit_comment_for("lua"), "--");
}

#define ZETA_HEAD \
	"```a.py\n<|start_of_file|>\ndef f(a, b):\n    return a\n\n<|editable_region_start|>\n"

static const char ZETA_PY[] =
        "### Instruction:\n"
        "You are a code completion assistant and your task is to analyze user edits and then "
        "rewrite an excerpt that the user provides, suggesting the appropriate edits within the "
        "excerpt, taking into account the cursor location.\n"
        "\n"
        "### User Edits:\n"
        "\n"
        "User edited \"a.py\":\n"
        "```diff\n"
        "@@ -1,1 +1,1 @@\n"
        "-def f(a):\n"
        "+def f(a, b):\n"
        "```\n"
        "\n"
        "### User Excerpt:\n"
        "\n" ZETA_HEAD "f(1<|user_cursor_is_here|>)\n"
        "<|editable_region_end|>\n"
        "```\n"
        "\n"
        "### Response:\n"
        "\n" ZETA_HEAD;

TEST(zeta_prompt_exact)
{
	struct nextedit_pair p;
	py_pair(&p);
	size_t n = 0;
	char *s = nextedit_prompt_zeta("a.py", PY, strlen(PY), 27, 31, PY_CALL_AT, &p, 1, &n);
	CHECK_STR_EQ(s, ZETA_PY);
	CHECK_INT_EQ(n, strlen(ZETA_PY));
	free(s);
	/* an empty region at a line start, context cut to ten lines each side */
	char big[2048] = "";
	for (int i = 0; i < 30; i++) sprintf(big + strlen(big), "l%02d\n", i);
	s = nextedit_prompt_zeta("b", big, strlen(big), 60, 60, 60, NULL, 0, NULL);
	CHECK(strstr(s, "### User Edits:\n\n\n\n### User Excerpt:") != NULL);
	CHECK(strstr(s, "```b\nl05\n") != NULL); /* ten lines before line 15 */
	CHECK(strstr(s, "<|start_of_file|>") == NULL);
	CHECK(strstr(s, "l14\n<|editable_region_start|>\n<|user_cursor_is_here|>"
	                "<|editable_region_end|>\nl15\n") != NULL);
	CHECK(strstr(s, "l24\n```\n\n### Response:") != NULL); /* ten lines after */
	free(s);
	nextedit_pair_finish(&p);
}

TEST(format_resolution)
{
	CHECK_INT_EQ(nextedit_format_resolve(CONFIG_NEXTEDIT_FIM, true), NEXTEDIT_FORMAT_FIM);
	CHECK_INT_EQ(nextedit_format_resolve(CONFIG_NEXTEDIT_ZETA, false), NEXTEDIT_FORMAT_ZETA);
	CHECK_INT_EQ(nextedit_format_resolve(CONFIG_NEXTEDIT_AUTO, true), NEXTEDIT_FORMAT_ZETA);
	CHECK_INT_EQ(nextedit_format_resolve(CONFIG_NEXTEDIT_AUTO, false), NEXTEDIT_FORMAT_FIM);
	CHECK_STR_EQ(nextedit_format_name(NEXTEDIT_FORMAT_ZETA), "zeta");
	CHECK(nextedit_zeta_named("/models/zed-industries_zeta-Q4_K_M.gguf"));
	CHECK(nextedit_zeta_named("Zeta.gguf"));
	CHECK(!nextedit_zeta_named("/models/qwen2.5-coder-1.5b.gguf"));
	CHECK(!nextedit_zeta_named("/home/zeta/models/qwen.gguf")); /* the file, not its folder */
}

/* ---- the request ---- */

static struct config *cfg;

static struct settings *settings_for(const char *lang)
{
	if (!cfg) cfg = config_new();
	MUST(cfg != NULL);
	static struct settings s;
	s = *config_get(cfg, lang);
	s.completion_deadline_ms = 0; /* reproducible */
	return &s;
}

static struct completion_request *request_for(enum nextedit_format fmt, const char *lang,
                                              const char *text, size_t at,
                                              const struct nextedit_pair *pairs, size_t np,
                                              struct nextedit_rewrite *rw)
{
	struct nextedit_rewrite_params rp = {
		.format = fmt,
		.text = text,
		.len = strlen(text),
		.at = at,
		.kind = NEXTEDIT_SIGNATURE,
		.pairs = pairs,
		.n_pairs = np,
		.uri = "file:///w/a.py",
		.language_id = lang,
		.path = "a.py",
		.seq = 7,
		.settings = settings_for(lang),
	};
	return nextedit_rewrite_request(&rp, rw);
}

TEST(fim_request_is_the_document_with_the_edits_first)
{
	struct nextedit_pair p;
	py_pair(&p);
	struct nextedit_rewrite rw;
	struct completion_request *req =
	        request_for(NEXTEDIT_FORMAT_FIM, "python", PY, PY_CALL_AT, &p, 1, &rw);
	REQUIRE(req != NULL);
	CHECK(req->rewrite);
	CHECK_STR_EQ(req->text, PY);
	CHECK_INT_EQ(req->cursor, PY_CALL_AT);
	CHECK(!rw.block);
	CHECK_INT_EQ(rw.start, PY_CALL_AT);
	CHECK_INT_EQ(req->settings.completion_multiline, CONFIG_MULTILINE_NEVER);
	CHECK(!req->settings.completion_from_document);
	REQUIRE(req->n_project == 1);
	CHECK_STR_EQ(req->project[0].text,
	             "# Recent edits (- before, + after):\n# @@ line 1\n# -def f(a):\n"
	             "# +def f(a, b):\n");
	completion_request_free(req);
	/* at a line start: a blank line opened there, a block written */
	req = request_for(NEXTEDIT_FORMAT_FIM, "python", PY, 27, &p, 1, &rw);
	REQUIRE(req != NULL);
	CHECK(rw.block);
	CHECK_STR_EQ(req->text, "def f(a, b):\n    return a\n\n\nf(1)\n");
	CHECK_INT_EQ(rw.indent_len, 0);
	CHECK_INT_EQ(req->settings.completion_multiline, CONFIG_MULTILINE_ALWAYS);
	completion_request_free(req);
	nextedit_pair_finish(&p);
}

TEST(zeta_request_is_raw_text_stopped_at_the_region_end)
{
	struct nextedit_pair p;
	py_pair(&p);
	struct nextedit_rewrite rw;
	struct completion_request *req =
	        request_for(NEXTEDIT_FORMAT_ZETA, "python", PY, PY_CALL_AT, &p, 1, &rw);
	REQUIRE(req != NULL);
	CHECK_STR_EQ(req->text, ZETA_PY);
	CHECK_INT_EQ(req->cursor, strlen(ZETA_PY));
	CHECK_INT_EQ(rw.start, 27);
	CHECK_INT_EQ(rw.end, 31);
	CHECK_STR_EQ(req->settings.fim_template, "{prefix}{suffix}");
	REQUIRE(req->settings.completion_stop && req->settings.completion_stop[0]);
	CHECK_STR_EQ(req->settings.completion_stop[0], "<|editable_region_end|>");
	CHECK(req->settings.completion_stop[1] == NULL);
	CHECK_STR_EQ(req->language_id, "plaintext");
	CHECK_INT_EQ(req->n_project, 0);
	completion_request_free(req);
	nextedit_pair_finish(&p);
}

/* ---- through complete_run ---- */

/* A generator in the engine's place: fixed texts, best first. */
struct fixed_gen {
	const char *const *texts;
	size_t n;
	char prompt_head[64]; /* the request's prefix's first bytes */
	char extra_head[64];  /* its first snippet's */
};

static int fixed_generate(void *ud, const struct engine_request *rq, struct engine_result *res,
                          struct infill_error *err)
{
	(void)err;
	struct fixed_gen *g = ud;
	memset(res, 0, sizeof *res);
	snprintf(g->prompt_head, sizeof g->prompt_head, "%.*s",
	         (int)(rq->prefix_len < 63 ? rq->prefix_len : 63), rq->prefix);
	g->extra_head[0] = 0;
	if (rq->n_extra)
		snprintf(g->extra_head, sizeof g->extra_head, "%.*s",
		         (int)(rq->extra[0].len < 63 ? rq->extra[0].len : 63), rq->extra[0].text);
	res->candidates = calloc(g->n, sizeof *res->candidates);
	if (!res->candidates) return -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		struct engine_candidate *c = &res->candidates[i];
		c->text = strdup(g->texts[i]);
		c->len = strlen(g->texts[i]);
		c->n_tokens = 4;
		c->mean_logprob = -0.1 - (double)i;
		c->sum_logprob = 4 * c->mean_logprob;
		c->stop = ENGINE_STOP_EOG;
		res->n_candidates++;
	}
	return 0;
}

/* What the engine thread hands the loop (result_take), for the test. */
struct taken {
	struct completion_candidate v[8];
	struct completion_result r;
};

static void take(const struct complete_result *cr, struct taken *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < cr->count && i < 8; i++)
		t->v[i] = (struct completion_candidate){ cr->items[i].text,  cr->items[i].len,
			                                 cr->items[i].start, cr->items[i].end,
			                                 cr->items[i].score, 1.0 };
	t->r.items = t->v;
	t->r.count = cr->count < 8 ? cr->count : 8;
}

/* Runs req as the engine thread runs a rewrite (run_job: complete_run,
 * the request's project chunks), with gen in the
 * engine's place when given, else on engine/tok. Then the edit it makes
 * in text: 1 with *ed, 0 without. */
static int run_rewrite(const struct completion_request *req, const struct nextedit_rewrite *rw,
                       struct fixed_gen *gen, struct engine *engine, const struct tokenizer *tok,
                       const char *lang, const char *text, struct nextedit_edit *ed, bool *invalid)
{
	struct complete_options opt = complete_options_default();
	opt.seed = req->seq;
	struct engine_snippet sn[1];
	if (req->n_project) {
		sn[0] = (struct engine_snippet){ req->project[0].text, req->project[0].len, NULL };
		opt.project = sn;
		opt.n_project = 1;
	}
	if (gen) {
		opt.generate = fixed_generate;
		opt.generate_ud = gen;
	}
	struct complete_result cr;
	int rc = complete_run(engine, tok, req->language_id, req->text, req->text_len, req->cursor,
	                      &req->settings, &opt, &cr, NULL);
	MUST(rc == 0);
	if (getenv("NE_DEBUG"))
		fprintf(stderr, "count %zu rejected %d generated %d shape %d max_lines %d\n",
		        cr.count, cr.rejected, cr.n_generated, cr.shape, cr.max_lines);
	if (getenv("NE_DEBUG"))
		for (size_t i = 0; i < cr.count; i++)
			fprintf(stderr, "item %zu: [%s] %zu-%zu %s\n", i, cr.items[i].text,
			        cr.items[i].start, cr.items[i].end,
			        ast_verdict_name(cr.items[i].verdict));
	struct taken t;
	take(&cr, &t);
	rc = nextedit_rewrite_edit(rw, &t.r, ast_lang_from_id(lang), text, strlen(text), ed,
	                           invalid);
	complete_result_finish(&cr);
	return rc;
}

/* The finder's place for an added parameter at the call, written by the
 * model: the syntax-breaking candidate ranked first is not offered, the
 * valid one is, at the place. */
TEST(model_writes_the_argument_a_signature_change_left)
{
	struct nextedit_track tr = { 0 };
	REQUIRE(nextedit_track_change(&tr, PY_EDIT_START, PY_EDIT_START, "", 3) == 0);
	struct nextedit_params np = {
		.lang = ast_lang_from_id("python"), .text = PY, .len = strlen(PY), .edit = &tr
	};
	struct nextedit_result fr;
	REQUIRE(nextedit_find(&np, &fr) == 0);
	REQUIRE(fr.n == 1);
	CHECK(fr.edits[0].text == NULL); /* found, not mechanical */
	CHECK_INT_EQ(fr.edits[0].kind, NEXTEDIT_SIGNATURE);
	CHECK_INT_EQ(fr.edits[0].start, PY_CALL_AT);
	struct nextedit_pair p;
	py_pair(&p);
	struct nextedit_rewrite rw;
	struct completion_request *req =
	        request_for(NEXTEDIT_FORMAT_FIM, "python", PY, fr.edits[0].start, &p, 1, &rw);
	REQUIRE(req != NULL);
	const char *texts[] = { ", 2 +", ", 2" };
	struct fixed_gen g = { texts, 2, "", "" };
	struct nextedit_edit ed;
	bool invalid;
	REQUIRE(run_rewrite(req, &rw, &g, NULL, NULL, "python", PY, &ed, &invalid) == 1);
	CHECK(strstr(g.extra_head, "# Recent edits") != NULL); /* the edits come first */
	CHECK_INT_EQ(ed.start, PY_CALL_AT);
	CHECK_INT_EQ(ed.end, PY_CALL_AT);
	CHECK_STR_EQ(ed.text, ", 2");
	CHECK_INT_EQ(ed.kind, NEXTEDIT_SIGNATURE);
	free(ed.text);
	/* only the breaking one: nothing */
	struct fixed_gen bad = { texts, 1, "", "" };
	CHECK(run_rewrite(req, &rw, &bad, NULL, NULL, "python", PY, &ed, &invalid) == 0);
	/* an answer that changes nothing is no edit */
	const char *same[] = { ")" };
	struct fixed_gen nop = { same, 1, "", "" };
	CHECK(run_rewrite(req, &rw, &nop, NULL, NULL, "python", PY, &ed, &invalid) == 0);
	completion_request_free(req);

	/* zeta: the line rewritten whole, the part that changed offered */
	req = request_for(NEXTEDIT_FORMAT_ZETA, "python", PY, PY_CALL_AT, &p, 1, &rw);
	const char *zt[] = { "f(1, 2)\n" };
	struct fixed_gen zg = { zt, 1, "", "" };
	REQUIRE(run_rewrite(req, &rw, &zg, NULL, NULL, "python", PY, &ed, &invalid) == 1);
	CHECK(!strncmp(zg.prompt_head, "### Instruction:\n", 17));
	CHECK_INT_EQ(ed.start, PY_CALL_AT);
	CHECK_INT_EQ(ed.end, PY_CALL_AT);
	CHECK_STR_EQ(ed.text, ", 2");
	free(ed.text);
	completion_request_free(req);
	nextedit_pair_finish(&p);
	nextedit_result_finish(&fr);
	nextedit_track_finish(&tr);
}

/* The last guard: whatever the engine path let through, an edit that adds
 * a syntax error to the file is not made (and is counted as invalid). */
TEST(edit_that_breaks_the_file_is_not_offered)
{
	struct nextedit_rewrite rw = { .format = NEXTEDIT_FORMAT_FIM,
		                       .kind = NEXTEDIT_SIGNATURE,
		                       .at = PY_CALL_AT,
		                       .start = PY_CALL_AT,
		                       .end = PY_CALL_AT,
		                       .cursor = PY_CALL_AT };
	struct completion_candidate c = { (char *)", (2", 4, PY_CALL_AT, PY_CALL_AT, 1, 1 };
	struct completion_result r = { &c, 1, COMPLETION_PATH_TYPED, false };
	struct nextedit_edit ed;
	bool invalid = false;
	CHECK(nextedit_rewrite_edit(&rw, &r, ast_lang_from_id("python"), PY, strlen(PY), &ed,
	                            &invalid) == 0);
	CHECK(invalid);
	c.text = (char *)", 2";
	c.text_len = 3;
	CHECK(nextedit_rewrite_edit(&rw, &r, ast_lang_from_id("python"), PY, strlen(PY), &ed,
	                            &invalid) == 1);
	CHECK(!invalid);
	free(ed.text);
	/* a Zeta marker in the text is never an edit */
	c.text = (char *)", <|editable_region_end|>";
	c.text_len = strlen(c.text);
	CHECK(nextedit_rewrite_edit(&rw, &r, NULL, PY, strlen(PY), &ed, &invalid) == 0);
}

/* A C switch missing the new variant's arm, its neighbours' bodies unlike:
 * the arm is a block the model writes at a line start. */
static const char C_SRC[] = "enum color { RED, GREEN, BLUE };\n"
                            "int f(enum color c)\n"
                            "{\n"
                            "\tswitch (c) {\n"
                            "\tcase RED: return 1;\n"
                            "\tcase GREEN: return 2;\n"
                            "\t}\n"
                            "\treturn 0;\n"
                            "}\n";

TEST(model_writes_the_arm_of_an_added_variant)
{
	size_t at = (size_t)(strstr(C_SRC, ", BLUE") - C_SRC);
	struct nextedit_track tr = { 0 };
	REQUIRE(nextedit_track_change(&tr, at, at, "", 6) == 0);
	struct nextedit_params np = {
		.lang = ast_lang_from_id("c"), .text = C_SRC, .len = strlen(C_SRC), .edit = &tr
	};
	struct nextedit_result fr;
	REQUIRE(nextedit_find(&np, &fr) == 0);
	REQUIRE(fr.n >= 1);
	CHECK(fr.edits[0].text == NULL);
	CHECK_INT_EQ(fr.edits[0].kind, NEXTEDIT_MEMBER);
	size_t place = fr.edits[0].start;
	CHECK(C_SRC[place - 1] == '\n');
	struct nextedit_rewrite rw;
	struct completion_request *req =
	        request_for(NEXTEDIT_FORMAT_FIM, "c", C_SRC, place, NULL, 0, &rw);
	REQUIRE(req != NULL);
	CHECK(rw.block);
	CHECK_INT_EQ(rw.indent_len, 1); /* the arms' tab, not the closing brace's */
	CHECK_INT_EQ(req->cursor, place + 1);
	const char *texts[] = { "case BLUE: return 3;" };
	struct fixed_gen g = { texts, 1, "", "" };
	struct nextedit_edit ed;
	bool invalid;
	REQUIRE(run_rewrite(req, &rw, &g, NULL, NULL, "c", C_SRC, &ed, &invalid) == 1);
	CHECK_INT_EQ(ed.start, place);
	CHECK_INT_EQ(ed.end, place);
	CHECK_STR_EQ(ed.text, "\tcase BLUE: return 3;\n");
	free(ed.text);
	/* validated like any candidate: a block whose second line breaks is
	 * cut back to the lines that stand */
	const char *more[] = { "case BLUE: return 3;\n\tcase (" };
	struct fixed_gen g2 = { more, 1, "", "" };
	REQUIRE(run_rewrite(req, &rw, &g2, NULL, NULL, "c", C_SRC, &ed, &invalid) == 1);
	CHECK_STR_EQ(ed.text, "\tcase BLUE: return 3;\n");
	free(ed.text);
	completion_request_free(req);
	nextedit_result_finish(&fr);
	nextedit_track_finish(&tr);
}

/* The tiny random-weight model on the real engine: whatever it writes, an
 * edit offered is at its place and leaves the file as valid as it was. */
TEST(tiny_model_edits_are_valid_whatever_it_writes)
{
	const char *path = TESTDATA "/models/tiny-dsc-f32.gguf";
	if (access(path, R_OK)) {
		printf("SKIP: %s is missing\n", path);
		return;
	}
	struct complete_model_spec spec = complete_model_spec_from(settings_for("python"));
	spec.threads = 1;
	spec.cache_memory_mb = 64;
	struct model *m;
	struct engine *e;
	struct infill_error err;
	REQUIRE(complete_model_open(path, &spec, NULL, NULL, &m, &e, &err) == 0);
	struct nextedit_pair p;
	py_pair(&p);
	int offered = 0;
	for (int fmt = 0; fmt < 2; fmt++) {
		for (size_t k = 0; k < 2; k++) {
			size_t at = k ? 27 : PY_CALL_AT; /* mid-line, then a line start */
			struct nextedit_rewrite rw;
			struct completion_request *req = request_for((enum nextedit_format)fmt,
			                                             "python", PY, at, &p, 1, &rw);
			REQUIRE(req != NULL);
			req->settings.completion_max_tokens = 12;
			req->settings.completion_min_confidence = 0;
			struct nextedit_edit ed;
			bool invalid;
			int rc = run_rewrite(req, &rw, NULL, e, model_tokenizer(m), "python", PY,
			                     &ed, &invalid);
			CHECK(rc == 0 || rc == 1);
			if (rc == 1) {
				offered++;
				CHECK(ed.start >= rw.start &&
				      ed.end <= (rw.end > at ? rw.end : at));
				struct ast_text t = { PY, strlen(PY) };
				struct ast_doc *d =
				        ast_doc_new(ast_lang_from_id("python"), ast_text_read, &t);
				bool ok = false;
				CHECK(d && ast_doc_parse(d) == 0);
				CHECK(ast_replace_check(d, PY, strlen(PY), ed.start, ed.end,
				                        ed.text, ed.text_len, &ok) == 0);
				CHECK(ok);
				ast_doc_delete(d);
				free(ed.text);
			}
			completion_request_free(req);
		}
	}
	printf("tiny model: %d of 4 rewrites offered\n", offered);
	nextedit_pair_finish(&p);
	engine_free(e);
	model_free(m);
}

TEST_MAIN()
