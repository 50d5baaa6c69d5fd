/*
 * test_rules.c - every row of ast/rules.c's table, each on a candidate that
 * breaks it (refused, and the row named in ast_validation.rule) and on one
 * beside it that does not (accepted). A row with no case here fails
 * every_rule_has_a_case, so a rule cannot be added untested.
 *
 * The documents mark the cursor with <|>.
 */
#include "ast.h"
#include "harness.h"

struct rcase {
	const char *rule; /* the row that must refuse it; NULL: it must pass; "": no
	                   * row may name it, whatever the verdict */
	const char *lang;
	const char *doc;
	const char *cand;
};

#define C_IF   "int f(struct r *r)\n{\n    if (r->len == 0)<|>\n    return 1;\n}\n"
#define C_ARR  "int f(struct r *r)\n{\n    if (r-><|>) {\n        return 1;\n    }\n}\n"
#define PY_DOC "def f():\n    \"\"\"Return the name <|>\n    \"\"\"\n    return 1\n"
#define PY_X   "def f():\n    x = <|>\n    return x\n"
#define C_X    "int f(void)\n{\n    double x = <|>\n    return x;\n}\n"
#define JS_X   "function f() {\n  let x = <|>\n  return x;\n}\n"
#define JV_X   "class A {\n  void f() {\n    String x = <|>\n    g(x);\n  }\n}\n"

static const struct rcase cases[] = {
	/* empty bodies */
	{ "empty-if-body", "c", C_IF, ";" },
	{ NULL, "c", C_IF, " return 0;" },
	{ "empty-if-body", "javascript", "function f(r) {\n  if (r.len === 0)<|>\n  g();\n}\n",
	  ";" },
	{ "empty-if-body", "java", "class A {\n  void f() {\n    if (x)<|>\n    g();\n  }\n}\n",
	  ";" },
	{ "empty-else-body", "c", "int f(void)\n{\n    if (x) g();\n    else<|>\n    g();\n}\n",
	  " ;" },
	{ NULL, "c", "int f(void)\n{\n    if (x) g();\n    else<|>\n    g();\n}\n", " h();" },
	{ "empty-else-body", "typescript", "function f() {\n  if (x) g();\n  else<|>\n  g();\n}\n",
	  " ;" },
	{ "java-empty-else-body", "java",
	  "class A {\n  void f() {\n    if (x) g();\n    else<|>\n    g();\n  }\n}\n", ";" },
	{ "empty-while-body", "c", "int f(void)\n{\n    while (x)<|>\n    g();\n}\n", ";" },
	{ "empty-while-body", "typescript", "function f() {\n  while (x)<|>\n  g();\n}\n", ";" },
	{ NULL, "c", "int f(void)\n{\n    while (x)<|>\n    g();\n}\n", " x--;" },
	{ "empty-for-body", "c", "int f(void)\n{\n    for (;;)<|>\n    g();\n}\n", ";" },
	{ "empty-for-body", "cpp", "int f() {\n    for (int i = 0; i < n; i++)<|>\n}\n", ";" },
	{ "cpp-empty-range-for-body", "cpp",
	  "int f() {\n    for (auto x : v)<|>\n    return 1;\n}\n", ";" },
	{ "js-empty-for-in-body", "javascript",
	  "function f() {\n  for (const k in o)<|>\n  g();\n}\n", ";" },
	{ "java-empty-for-each-body", "java",
	  "class A {\n  void f() {\n    for (int y : ys)<|>\n    g();\n  }\n}\n", ";" },
	/* the document's own empty body is not the candidate's doing */
	{ NULL, "c", "int f(void)\n{\n    while (busy());\n    <|>\n}\n", "return 1;" },

	/* keywords read as names */
	{ "c-keyword-as-name", "c", C_ARR, "\n\n    if (r->flags)" },
	{ NULL, "c", C_ARR, "flags" },
	{ NULL, "c", C_ARR, "new" }, /* a C field may be called `new` */
	{ "cpp-keyword-as-name", "cpp", C_ARR, "new" },
	/* a keyword the grammar reads as a name after a macro it does not know
	 * is its recovery, not the candidate's doing */
	{ "", "c", "#define NSS_EXTERN extern\n\nPR_BEGIN_EXTERN_C\n\n<|>\n\nstruct S;\n",
	  "typedef PRInt32 NSSError;" },
	{ "java-keyword-as-name", "java",
	  "class A {\n  void f() {\n    if (r.<|>) {\n      g();\n    }\n  }\n}\n",
	  "\n\n    if (r.flags)" },

	/* string escapes */
	{ "python-string-escape", "python", PY_DOC, "(\\unic" },
	{ NULL, "python", PY_DOC, "(\\u00e9)" },
	{ "python-string-escape", "python", PY_X, "\"a\\x4g\"" },
	{ "python-string-escape", "python", PY_X, "\"\\Nx\"" },
	{ "python-string-escape", "python", PY_X, "f\"{a}\\U0001f\"" },
	{ NULL, "python", PY_X, "\"\\N{EM DASH}\"" },
	{ NULL, "python", PY_X, "r\"a\\u12\"" },  /* raw: no escapes */
	{ NULL, "python", PY_X, "b\"a\\u12\"" },  /* bytes: \u is two characters */
	{ NULL, "python", PY_X, "\"a\\\\u12\"" }, /* an escaped backslash */
	{ "c-string-escape", "c", "int f(void)\n{\n    char *s = <|>\n}\n", "\"a\\xg\";" },
	{ NULL, "c", "int f(void)\n{\n    char *s = <|>\n}\n", "\"a\\x4g\";" },
	{ "c-string-escape", "cpp", "int f() {\n    char c = <|>\n}\n", "'\\u12';" },
	{ "js-string-escape", "javascript", JS_X, "\"a\\x4g\";" },
	{ NULL, "javascript", JS_X, "\"a\\u{41}\";" },
	{ "java-string-escape", "java", JV_X, "\"a\\xg\";" },
	{ NULL, "java", JV_X, "\"a\\u0041\\t\";" },

	/* numbers */
	{ "python-number", "python", PY_X, "1_" },
	{ NULL, "python", PY_X, "1_000" },
	{ "python-number", "python", PY_X, "012" }, /* leading zeros */
	{ NULL, "python", PY_X, "00" },
	{ NULL, "python", PY_X, "0_0" },
	{ NULL, "python", PY_X, "012.5" },
	{ NULL, "python", PY_X, "0x_1f" },
	{ "c-number", "c", C_X, "1e;" },
	{ "c-number", "c", C_X, "0x1p;" },
	{ NULL, "c", C_X, "0x1e;" }, /* e is a hex digit */
	{ NULL, "c", C_X, "1.5e-3f;" },
};

#define N_CASES (sizeof cases / sizeof cases[0])

/* Runs one case; returns the rule the candidate broke ("" for none) in
 * *rule and whether the verdict agrees with the case. */
static bool run_case(const struct rcase *c, const char **rule)
{
	const char *mark = strstr(c->doc, "<|>");
	size_t at = (size_t)(mark - c->doc);
	char doc[512];
	snprintf(doc, sizeof doc, "%.*s%s", (int)at, c->doc, mark + 3);
	struct ast_validate_params p = {
		.lang = ast_lang_from_id(c->lang),
		.text = doc,
		.len = strlen(doc),
		.cursor = at,
		.candidate = c->cand,
		.candidate_len = strlen(c->cand),
	};
	struct ast_validation v;
	if (ast_validate(&p, &v)) return false;
	*rule = v.rule ? v.rule : "";
	if (c->rule && !c->rule[0]) return !v.rule;
	if (c->rule) return v.verdict == AST_VERDICT_INVALID && !strcmp(*rule, c->rule);
	return (v.verdict == AST_VERDICT_VALID || v.verdict == AST_VERDICT_TRIMMED) && !v.rule &&
	       v.keep_len == strlen(c->cand);
}

TEST(each_case_breaks_its_rule_or_none)
{
	for (size_t i = 0; i < N_CASES; i++) {
		const char *rule = "";
		bool ok = run_case(&cases[i], &rule);
		if (!ok)
			fprintf(stderr, "  case %zu (%s, %s): expected %s, rule %s\n", i,
			        cases[i].lang, cases[i].cand,
			        !cases[i].rule     ? "a pass"
			        : cases[i].rule[0] ? cases[i].rule
			                           : "no rule",
			        rule[0] ? rule : "none");
		CHECK(ok);
	}
}

TEST(every_rule_has_a_case)
{
	CHECK(ast_rule_count() > 0);
	for (size_t r = 0; r < ast_rule_count(); r++) {
		const char *name = ast_rule_name(r);
		bool found = false;
		for (size_t i = 0; i < N_CASES && !found; i++)
			found = cases[i].rule && !strcmp(cases[i].rule, name);
		if (!found) fprintf(stderr, "  rule %s has no case\n", name);
		CHECK(found);
		/* its languages are ones the table knows */
		char langs[160];
		snprintf(langs, sizeof langs, "%s", ast_rule_langs(r));
		for (char *w = strtok(langs, " "); w; w = strtok(NULL, " ")) {
			const struct ast_lang *l = ast_lang_from_id(w);
			CHECK(l && !strcmp(ast_lang_name(l), w));
		}
	}
	CHECK(ast_rule_name(ast_rule_count()) == NULL);
}

/* The rules judge what a candidate wrote, not the language: every line of
 * real files, cut out whole and given back as the candidate, and the middle
 * third of each line the same way (the rest of the line kept), is never
 * refused by a rule. */
TEST(no_rule_refuses_the_lines_of_real_files)
{
	const char *files[] = { "inventory.py", "slice_snapshot.c", "sample.ts", "sample.go",
		                "sample.rs" };
	for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
		char path[512];
		snprintf(path, sizeof path, "%s/data/%s", AST_TEST_DIR, files[f]);
		size_t n = 0;
		char *t = test_read_file(path, &n);
		REQUIRE(t != NULL);
		char *doc = malloc(n + 1);
		REQUIRE(doc != NULL);
		const struct ast_lang *lang = ast_lang_from_path(path);
		size_t checks = 0, refused = 0;
		for (size_t s = 0; s < n;) {
			size_t e = s, a = s;
			while (e < n && t[e] != '\n') e++;
			while (a < e && (t[a] == ' ' || t[a] == '\t')) a++;
			for (int mode = 0; mode < 2 && e - a >= 2; mode++) {
				size_t c = mode ? a + (e - a) / 3 : a,
				       d = mode ? a + 2 * (e - a) / 3 : e;
				if (d <= c) continue;
				memcpy(doc, t, c);
				memcpy(doc + c, t + d, n - d);
				struct ast_validate_params p = { .lang = lang,
					                         .text = doc,
					                         .len = n - (d - c),
					                         .cursor = c,
					                         .candidate = t + c,
					                         .candidate_len = d - c };
				struct ast_validation v;
				CHECK(ast_validate(&p, &v) == 0);
				checks++;
				if (v.rule) {
					refused++;
					fprintf(stderr, "  %s: %s refuses %.*s\n", files[f], v.rule,
					        (int)(d - c), t + c);
				}
			}
			s = e + 1;
		}
		printf("  %s: %zu candidates, %zu refused by a rule\n", files[f], checks, refused);
		CHECK(checks > 50);
		CHECK_INT_EQ(refused, 0);
		free(doc);
		free(t);
	}
}

/* Stops and families live in the language table. */
TEST(languages_name_their_stops_and_kin)
{
	const struct ast_lang *py = ast_lang_from_id("python"), *c = ast_lang_from_id("c"),
	                      *cpp = ast_lang_from_id("cpp"), *js = ast_lang_from_id("javascript"),
	                      *ts = ast_lang_from_id("typescriptreact");
	CHECK(ast_lang_kin(c, cpp) && ast_lang_kin(cpp, c) && ast_lang_kin(c, c));
	CHECK(ast_lang_kin(js, ts) && ast_lang_kin(ts, js));
	CHECK(!ast_lang_kin(py, js) && !ast_lang_kin(js, py) && !ast_lang_kin(c, js));
	CHECK(ast_lang_kin(py, py) && !ast_lang_kin(py, NULL) && !ast_lang_kin(NULL, NULL));
	CHECK(ast_lang_kin(ast_lang_from_path("x.h"), ast_lang_from_path("y.cc")));
	bool def = false;
	for (const char *const *s = ast_lang_stops(py); *s; s++) def |= !strcmp(*s, "\ndef ");
	CHECK(def);
	for (size_t i = 0; i < ast_lang_count(); i++)
		for (const char *const *s = ast_lang_stops(ast_lang_at(i)); *s; s++)
			CHECK((*s)[0] == '\n' &&
			      strlen(*s) > 1); /* column 0, never the first line */
	CHECK(ast_lang_stops(NULL)[0] == NULL);
	CHECK(ast_lang_stops(ast_lang_from_id("json"))[0] == NULL);
}

TEST_MAIN()
