/*
 * cli_ast.c - `infill context` and `infill validate`: the ast/ layer from the
 * command line, for scripts, checks and debugging.
 *
 *   infill context FILE:LINE:COL [--budget N] [--suffix-budget N] [--extra-budget N] [--lang ID]
 *                  [--workspace DIR] [--no-project]
 *   infill validate FILE:LINE:COL --text CANDIDATE [--lang ID]
 *
 * LINE and COL are 1-based; COL counts characters (UTF-8 code points). Token
 * counts use ast_tokens_estimate() (bytes / 3.5): no model is loaded here.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ast.h"
#include "cli.h"
#include "eval_workspace.h"

struct loaded {
	char *text;
	size_t len;
	size_t cursor;
	const struct ast_lang *lang;
};

static int load(char *locarg, const char *lang_id, struct loaded *ld)
{
	long line, col;
	if (cli_parse_location(locarg, &line, &col)) {
		fprintf(stderr, "infill: expected FILE:LINE:COL (1-based), got %s\n", locarg);
		return 2;
	}
	ld->text = cli_read_file(locarg, &ld->len);
	if (!ld->text) return 1;
	long off = cli_location_offset(ld->text, ld->len, line, col);
	if (off < 0) {
		fprintf(stderr, "infill: %s has no line %ld\n", locarg, line);
		free(ld->text);
		return 1;
	}
	ld->cursor = (size_t)off;
	ld->lang = lang_id ? ast_lang_from_id(lang_id) : ast_lang_from_path(locarg);
	if (lang_id && !ld->lang)
		fprintf(stderr, "infill: no grammar for language %s: line-based context\n",
		        lang_id);
	return 0;
}

static int print_json(json_t *o)
{
	if (!o) {
		fprintf(stderr, "infill: out of memory\n");
		return 1;
	}
	int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII) ? 1 : 0;
	fputc('\n', stdout);
	json_decref(o);
	return rc;
}

static const char *snippet_kind_name(enum ast_snippet_kind k)
{
	return k == AST_SNIPPET_IMPORTS ? "imports" : "signature";
}

static json_t *strn(const char *s, size_t n)
{
	json_t *j = json_stringn(s, n);
	/* Invalid UTF-8 in the file: show it rather than fail. */
	return j ? j : json_string("<invalid UTF-8>");
}

/* The folder above path holding .git, or path's own folder (new string). */
static char *default_workspace(const char *path)
{
	char *abs = realpath(path, NULL);
	if (!abs) return NULL;
	char *slash = strrchr(abs, '/');
	if (slash && slash != abs) *slash = 0;
	char *dir = strdup(abs);
	for (; dir;) {
		char probe[PATH_MAX + 8];
		snprintf(probe, sizeof probe, "%s/.git", abs);
		if (!access(probe, F_OK)) {
			free(dir);
			return abs;
		}
		slash = strrchr(abs, '/');
		if (!slash || slash == abs) break;
		*slash = 0;
	}
	free(abs);
	return dir; /* no repository around it */
}

/* What the project adds for this cursor (context/), and why. */
static json_t *project_json(const char *loc, const char *workspace, const struct loaded *ld,
                            size_t budget)
{
	/* loc is the file's path by now (load cut :LINE:COL off) */
	char *ws = workspace ? strdup(workspace) : default_workspace(loc);
	char *abs = realpath(loc, NULL);
	struct ctx_index *ix = ws ? eval_workspace_open(ws, 5000, 64) : NULL;
	json_t *o = NULL;
	struct ctx_chunks ch;
	struct engine_snippet *snips = NULL;
	if (ix && abs &&
	    !eval_workspace_context(ix, NULL, abs, ast_lang_name(ld->lang), ld->text, ld->len,
	                            ld->cursor, budget, &ch, &snips)) {
		json_t *chunks = json_array();
		for (size_t i = 0; i < ch.n; i++) {
			const struct ctx_chunk *c = &ch.v[i];
			json_array_append_new(chunks,
			                      json_pack("{s:s, s:s, s:f, s:I, s:s, s:o}", "source",
			                                ctx_source_name(c->source), "path", c->path,
			                                "score", c->score, "tokens",
			                                (json_int_t)c->tokens, "why", c->why,
			                                "text", strn(c->text, c->len)));
		}
		o = json_pack("{s:s, s:I, s:o, s:{s:I, s:I, s:I}, s:I}", "workspace",
		              ctx_index_root(ix), "budget", (json_int_t)budget, "chunks", chunks,
		              "tokens", "definition", (json_int_t)ch.tokens[CTX_SOURCE_DEFINITION],
		              "similar", (json_int_t)ch.tokens[CTX_SOURCE_SIMILAR], "recent",
		              (json_int_t)ch.tokens[CTX_SOURCE_RECENT], "other_lines_bytes",
		              (json_int_t)ch.lines_len);
		free(snips);
		ctx_chunks_finish(&ch);
	}
	ctx_index_free(ix);
	free(ws);
	free(abs);
	return o ? o : json_null();
}

int cli_context(int argc, char **argv)
{
	char *loc = NULL;
	const char *lang_id = NULL, *workspace = NULL;
	bool project = true;
	long budget = 1024, suffix_budget = 192, extra_budget = 512;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: infill context FILE:LINE:COL [--budget N] [--suffix-budget "
			       "N]\n"
			       "                      [--extra-budget N] [--lang ID] [--workspace "
			       "DIR] "
			       "[--no-project]\n"
			       "Prints the AST context slice as JSON, and under \"project\" the "
			       "context\n"
			       "from the rest of the project (DIR: default the repository around "
			       "FILE, or\n"
			       "its folder) with each chunk's source, score, tokens and reason.\n"
			       "Tokens are estimated as bytes/3.5.\n");
			return 0;
		} else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
			budget = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--suffix-budget") && i + 1 < argc) {
			suffix_budget = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--extra-budget") && i + 1 < argc) {
			extra_budget = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--lang") && i + 1 < argc) {
			lang_id = argv[++i];
		} else if (!strcmp(argv[i], "--workspace") && i + 1 < argc) {
			workspace = argv[++i];
		} else if (!strcmp(argv[i], "--no-project")) {
			project = false;
		} else if (!loc && argv[i][0] != '-') {
			loc = argv[i];
		} else {
			fprintf(stderr, "infill context: unknown argument %s (see --help)\n",
			        argv[i]);
			return 2;
		}
	}
	if (!loc || budget < 0 || suffix_budget < 0 || extra_budget < 0) {
		fprintf(stderr, "usage: infill context FILE:LINE:COL [--budget N]\n");
		return 2;
	}
	struct loaded ld;
	int rc = load(loc, lang_id, &ld);
	if (rc) return rc;
	struct ast_slice_params p = {
		.lang = ld.lang,
		.text = ld.text,
		.len = ld.len,
		.cursor = ld.cursor,
		.prefix_tokens = (size_t)budget,
		.suffix_tokens = (size_t)suffix_budget,
		.extra_tokens = (size_t)extra_budget,
	};
	struct ast_slice s;
	rc = ast_slice(&p, &s);
	if (rc) {
		fprintf(stderr, "infill context: slicing failed (%d)\n", rc);
		ast_slice_finish(&s);
		free(ld.text);
		return 1;
	}
	json_t *snips = json_array();
	for (size_t i = 0; i < s.n_snippets; i++) {
		const struct ast_snippet *sn = &s.snippets[i];
		json_array_append_new(snips,
		                      json_pack("{s:s, s:s, s:o, s:I, s:f, s:I}", "kind",
		                                snippet_kind_name(sn->kind), "name", sn->name,
		                                "text", strn(sn->text, sn->len), "start_byte",
		                                (json_int_t)sn->start_byte, "score", sn->score,
		                                "tokens", (json_int_t)sn->tokens));
	}
	json_t *o = json_pack(
	        "{s:s, s:b, s:s, s:o, s:o, s:I, s:I, s:I, s:I, s:o, s:{s:s, s:s}, "
	        "s:{s:I, s:I, s:I, s:s}}",
	        "lang", ast_lang_name(ld.lang), "syntactic", s.syntactic, "token_count", "estimate",
	        "prefix", strn(s.prefix, s.prefix_len), "suffix", strn(s.suffix, s.suffix_len),
	        "cursor", (json_int_t)ld.cursor, "prefix_start", (json_int_t)s.prefix_start,
	        "suffix_end", (json_int_t)s.suffix_end, "scope_end", (json_int_t)s.scope_end,
	        "snippets", snips, "shape", "kind", ast_shape_name(s.shape.kind), "indent",
	        s.shape.indent, "tokens", "prefix", (json_int_t)s.prefix_tokens_used, "suffix",
	        (json_int_t)s.suffix_tokens_used, "extra", (json_int_t)s.extra_tokens_used,
	        "counter", "bytes/3.5");
	size_t left = (size_t)extra_budget > s.extra_tokens_used
	                      ? (size_t)extra_budget - s.extra_tokens_used
	                      : 0;
	if (o && project)
		json_object_set_new(o, "project", project_json(loc, workspace, &ld, left));
	ast_slice_finish(&s);
	free(ld.text);
	return print_json(o);
}

int cli_validate(int argc, char **argv)
{
	char *loc = NULL;
	const char *lang_id = NULL, *cand = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: infill validate FILE:LINE:COL --text CANDIDATE [--lang ID]\n"
			       "Prints {valid, trimmed, verdict, text, ...} as JSON: text is the "
			       "part of\n"
			       "the candidate that may be shown.\n");
			return 0;
		} else if (!strcmp(argv[i], "--text") && i + 1 < argc) {
			cand = argv[++i];
		} else if (!strcmp(argv[i], "--lang") && i + 1 < argc) {
			lang_id = argv[++i];
		} else if (!loc && argv[i][0] != '-') {
			loc = argv[i];
		} else {
			fprintf(stderr, "infill validate: unknown argument %s (see --help)\n",
			        argv[i]);
			return 2;
		}
	}
	if (!loc || !cand) {
		fprintf(stderr, "usage: infill validate FILE:LINE:COL --text CANDIDATE\n");
		return 2;
	}
	struct loaded ld;
	int rc = load(loc, lang_id, &ld);
	if (rc) return rc;
	struct ast_validate_params p = {
		.lang = ld.lang,
		.text = ld.text,
		.len = ld.len,
		.cursor = ld.cursor,
		.candidate = cand,
		.candidate_len = strlen(cand),
	};
	struct ast_validation v;
	rc = ast_validate(&p, &v);
	free(ld.text);
	if (rc) {
		fprintf(stderr, "infill validate: failed (%d)\n", rc);
		return 1;
	}
	bool shown = v.verdict != AST_VERDICT_INVALID && v.keep_len > 0;
	return print_json(json_pack(
	        "{s:b, s:b, s:s, s:o, s:s, s:I, s:I, s:b, s:b, s:I, s:o}", "valid", shown,
	        "trimmed", v.verdict == AST_VERDICT_TRIMMED, "verdict", ast_verdict_name(v.verdict),
	        "text", strn(cand, v.keep_len), "lang", ast_lang_name(ld.lang), "errors_before",
	        (json_int_t)v.errors_before, "errors_after", (json_int_t)v.errors_after,
	        "scope_cut", v.scope_cut, "closers_dropped", v.closers_dropped, "parses",
	        (json_int_t)v.parses, "rule", v.rule ? json_string(v.rule) : json_null()));
}
