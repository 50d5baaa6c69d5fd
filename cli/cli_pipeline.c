/*
 * cli_pipeline.c - `infill complete`: the whole completion pipeline once,
 * from the command line, through the same complete_run the server's engine
 * thread calls (complete.c), so what it prints is what an editor would
 * be shown.
 *
 *   infill complete FILE:LINE:COL [--model M] [--candidates N] [--json]
 *                   [--lang ID] [--settings JSON] [--no-slice] [--no-validate]
 *                   [--no-rerank] [--no-cache] [--seed S]
 *
 * LINE and COL are 1-based; COL counts characters (code points). Settings
 * are the defaults, then --settings (an object as in .infill.json), then the
 * flags. (`infill replay` is in cli_replay.c; `infill eval` belongs to the
 * quality harness.)
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ast.h"
#include "cli.h"
#include "catalog.h"
#include "complete.h"
#include "config.h"
#include "stats.h"

static void warn_setting(void *ud, const char *message)
{
	(void)ud;
	fprintf(stderr, "%s\n", message);
}

static json_t *strn(const char *s, size_t n)
{
	json_t *j = json_stringn(s, n);
	return j ? j : json_string("<invalid UTF-8>");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: infill complete FILE:LINE:COL [--model M] [--candidates N] [--json]\n"
	           "                       [--lang ID] [--settings JSON] [--max-tokens N]\n"
	           "                       [--no-slice] [--no-validate] [--no-rerank] [--no-cache] "
	           "[--seed S]\n"
	           "Runs the completion pipeline once (AST context, FIM prompt, N candidates,\n"
	           "validation, rerank) and prints the ranked candidates that would be shown.\n"
	           "--settings takes a JSON object of settings as in .infill.json.\n");
}

static void print_text(const struct complete_result *r, const char *lang)
{
	printf("# %s, shape %s, max %d lines; prompt %d tokens (%d cached), %d generated; "
	       "%d of %d candidates rejected, %d merged; %.1f ms (slice %.1f, engine %.1f = "
	       "prefill %.1f + decode %.1f, post %.1f)\n",
	       lang, ast_shape_name(r->shape), r->max_lines, r->prompt_tokens, r->cached_tokens,
	       r->generated_tokens, r->rejected, r->n_generated, r->merged, r->total_ms,
	       r->slice_ms, r->engine_ms, r->prefill_ms, r->decode_ms, r->post_ms);
	for (size_t i = 0; i < r->count; i++) {
		const struct complete_item *it = &r->items[i];
		printf("--- #%zu score %.3f mean logprob %.3f %s stop %s replaces [%zu,%zu)\n",
		       i + 1, it->score, it->mean_logprob, ast_verdict_name(it->verdict),
		       engine_stop_name(it->stop), it->start, it->end);
		fwrite(it->text, 1, it->len, stdout);
		putchar('\n');
	}
	if (!r->count) printf("(no candidate to show)\n");
}

static int print_json(const struct complete_result *r, const char *lang, size_t cursor,
                      const char *model_path)
{
	json_t *items = json_array();
	for (size_t i = 0; i < r->count; i++) {
		const struct complete_item *it = &r->items[i];
		json_array_append_new(
		        items,
		        json_pack("{s:o, s:I, s:I, s:f, s:f, s:s, s:s, s:i}", "text",
		                  strn(it->text, it->len), "start", (json_int_t)it->start, "end",
		                  (json_int_t)it->end, "score", it->score, "meanLogprob",
		                  it->mean_logprob, "verdict", ast_verdict_name(it->verdict),
		                  "stop", engine_stop_name(it->stop), "index", (int)it->index));
	}
	json_t *o = json_pack(
	        "{s:s, s:I, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, "
	        "s:{s:f, s:f, s:f, s:f, s:f, s:f}, s:o}",
	        "lang", lang, "cursor", (json_int_t)cursor, "shape", ast_shape_name(r->shape),
	        "maxLines", r->max_lines, stats_keys.prompt_tokens, r->prompt_tokens,
	        stats_keys.cached_prompt_tokens, r->cached_tokens, stats_keys.generated_tokens,
	        r->generated_tokens, "generated", r->n_generated, "rejected", r->rejected, "merged",
	        r->merged, "ms", "slice", r->slice_ms, "engine", r->engine_ms, "prefill",
	        r->prefill_ms, "decode", r->decode_ms, "post", r->post_ms, "total", r->total_ms,
	        "candidates", items);
	/* which file answered: the embedded model is looked for in several
	 * places (complete_default_model_path) */
	if (o && model_path) json_object_set_new(o, "model", json_string(model_path));
	if (!o) {
		fprintf(stderr, "infill: out of memory\n");
		return 1;
	}
	int rc = json_dumpf(o, stdout, JSON_INDENT(2)) ? 1 : 0;
	fputc('\n', stdout);
	json_decref(o);
	return rc;
}

/* What the command line asked for. */
struct args {
	char *loc;      /* FILE:LINE:COL, cut to FILE in place (argv) */
	long line, col; /* 1-based */
	const char *model, *lang_id, *settings_json;
	long candidates, max_tokens; /* <= 0: as the settings say */
	bool as_json;
	struct complete_options opt;
};

/* Returns 0 to go on, -1 when --help was answered, 2 on a usage error (said
 * on stderr). */
static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){ .candidates = -1, .max_tokens = -1 };
	a->opt = complete_options_default();
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		bool more = i + 1 < argc;
		if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
			usage(stdout);
			return -1;
		} else if (!strcmp(s, "--model") && more) {
			a->model = argv[++i];
		} else if (!strcmp(s, "--candidates") && more) {
			a->candidates = atol(argv[++i]);
		} else if (!strcmp(s, "--max-tokens") && more) {
			a->max_tokens = atol(argv[++i]);
		} else if (!strcmp(s, "--lang") && more) {
			a->lang_id = argv[++i];
		} else if (!strcmp(s, "--settings") && more) {
			a->settings_json = argv[++i];
		} else if (!strcmp(s, "--seed") && more) {
			a->opt.seed = strtoull(argv[++i], NULL, 10);
		} else if (!strcmp(s, "--json")) {
			a->as_json = true;
		} else if (!strcmp(s, "--no-slice")) {
			a->opt.ast_slice = false;
		} else if (!strcmp(s, "--no-validate")) {
			a->opt.validate = false;
		} else if (!strcmp(s, "--no-rerank")) {
			a->opt.rerank = false;
		} else if (!strcmp(s, "--no-cache")) {
			a->opt.use_cache = false;
		} else if (!a->loc && s[0] != '-') {
			a->loc = argv[i];
		} else {
			fprintf(stderr, "infill complete: unknown argument %s (see --help)\n", s);
			return 2;
		}
	}
	if (!a->loc) {
		usage(stderr);
		return 2;
	}
	if (cli_parse_location(a->loc, &a->line, &a->col)) {
		fprintf(stderr, "infill complete: expected FILE:LINE:COL (1-based), got %s\n",
		        a->loc);
		return 2;
	}
	return 0;
}

/* Settings: defaults, --settings, then the flags (in *flags, which the
 * caller frees). Returns 2 when --settings is not JSON. */
static int settings_layer(struct config *cfg, json_t *flags, const struct args *a)
{
	if (a->settings_json) {
		json_error_t jerr;
		json_t *o = json_loads(a->settings_json, 0, &jerr);
		if (!o) {
			fprintf(stderr, "infill complete: --settings is not JSON: %s (column %d)\n",
			        jerr.text, jerr.column);
			return 2;
		}
		config_set_layer(cfg, CONFIG_LAYER_INIT, o, warn_setting, NULL);
		json_decref(o);
	}
	if (a->model) json_object_set_new(flags, "model", json_string(a->model));
	if (a->candidates > 0)
		json_object_set_new(flags, "completion.candidates", json_integer(a->candidates));
	if (a->max_tokens > 0)
		json_object_set_new(flags, "completion.maxTokens", json_integer(a->max_tokens));
	config_set_layer(cfg, CONFIG_LAYER_FLAGS, flags, warn_setting, NULL);
	return 0;
}

/* The file `model` names: a catalog name ("qwen2.5-coder:1.5b") is its
 * file in the cache folder when downloaded; anything else as it is (new). */
static char *model_file(const char *model)
{
	char msg[256];
	struct catalog *cat = catalog_load(msg, sizeof msg);
	const struct catalog_entry *e;
	char *path;
	if (catalog_resolve(cat, model, &path, &e) == CATALOG_NOT_DOWNLOADED)
		fprintf(stderr, "infill complete: %s is not downloaded yet: run `infill pull %s`\n",
		        e->name, model);
	catalog_free(cat);
	return path;
}

/* Opens the model the settings name, runs the pipeline once at byte `off`
 * of text and prints the result; returns the exit status. */
static int complete_print(struct args *a, const struct settings *st, const char *lname,
                          const char *text, size_t len, size_t off)
{
	char *model_path = st->model ? model_file(st->model) : complete_default_model_path();
	if (!model_path) {
		fprintf(stderr, "infill: out of memory\n");
		return 1;
	}
	int status = 1;
	struct model *m = NULL;
	struct engine *e = NULL;
	struct complete_model_spec spec = complete_model_spec_from(st);
	struct infill_error err;
	if (complete_model_open(model_path, &spec, NULL, NULL, &m, &e, &err)) {
		fprintf(stderr, "infill complete: %s\n", err.message);
		goto out;
	}
	if (err.message[0]) fprintf(stderr, "infill complete: %s\n", err.message); /* the draft */
	struct complete_result res;
	a->opt.n_ctx = model_info(m)->n_ctx_train;
	int rc =
	        complete_run(e, model_tokenizer(m), lname, text, len, off, st, &a->opt, &res, &err);
	if (rc) {
		fprintf(stderr, "infill complete: %s\n",
		        err.message[0] ? err.message : strerror(-rc));
		complete_result_finish(&res);
		goto out;
	}
	status = a->as_json ? print_json(&res, lname, off, model_path)
	                    : (print_text(&res, lname), 0);
	complete_result_finish(&res);
out:
	engine_free(e);
	model_free(m);
	free(model_path);
	return status;
}

/* Reads the file, finds the cursor and the language, then completes there. */
static int complete_at_location(struct args *a, const struct config *cfg)
{
	size_t len;
	char *text = cli_read_file(a->loc, &len);
	if (!text) return 1;
	int status = 1;
	long off = cli_location_offset(text, len, a->line, a->col);
	if (off < 0) {
		fprintf(stderr, "infill complete: %s has no line %ld\n", a->loc, a->line);
		goto out;
	}
	const struct ast_lang *lang =
	        a->lang_id ? ast_lang_from_id(a->lang_id) : ast_lang_from_path(a->loc);
	const char *lname = a->lang_id ? a->lang_id : ast_lang_name(lang);
	const struct settings *st = config_get(cfg, lname);
	if (!st->cache_enabled) a->opt.use_cache = false;
	status = complete_print(a, st, lname, text, len, (size_t)off);
out:
	free(text);
	return status;
}

int cli_complete(int argc, char **argv)
{
	struct args a;
	int prc = parse_args(argc, argv, &a);
	if (prc) return prc < 0 ? 0 : prc;
	struct config *cfg = config_new();
	json_t *flags = json_object();
	int status;
	if (!cfg || !flags) {
		fprintf(stderr, "infill: out of memory\n");
		status = 1;
	} else {
		status = settings_layer(cfg, flags, &a);
		if (!status) status = complete_at_location(&a, cfg);
	}
	json_decref(flags);
	config_free(cfg);
	return status;
}
