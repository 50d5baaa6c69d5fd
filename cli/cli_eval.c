/*
 * cli_eval.c - `infill eval`: the quality harness. It cuts fill-in-the-middle
 * cases out of source files the model never trained on (eval_cases.c), runs
 * each one through complete_run - the very function the server calls - in
 * four configurations, and reports per configuration and per kind of cut:
 *
 *   exact     top completion == the text cut out (modulo trailing blanks)
 *   edit sim  1 - Levenshtein / max(len), top completion (0 when none);
 *             "answered": the mean over the cases with an answer only
 *   parses    share of all returned completions that, put into the file,
 *             leave no more syntax errors than the original file had (the
 *             file is whole again; languages with a grammar)
 *   no new err share of them that leave no more errors than the file with
 *             the hole had (what validation promises: the completion breaks
 *             nothing, though it may not finish what the cut removed, such
 *             as a closing `#endif` or `)`)
 *   no answer share of cases where nothing was returned
 *   p50/p90   wall time of complete_run, ms; cpu p50: the process's CPU
 *             time for it (all threads), steadier than wall time on a
 *             shared machine
 *
 * The configurations (the ablation):
 *   line  plain line-window context, greedy, 1 candidate, no validation, no
 *         rerank, no confidence floor: the model alone;
 *   ast   the AST slice as context, otherwise as line;
 *   checked  the server's pipeline without lines from the document:
 *         slicing, completion.candidates candidates, scope stop, validation
 *         and trimming, rerank and the confidence floor;
 *   full  the server's pipeline as configured by default: checked, plus
 *         the ways the line continues elsewhere in the document
 *         (completion.fromDocument, pipeline/recall.h), scored by the model.
 *   cross full plus context from the rest of the project (--workspace DIR,
 *         the files of DIR as the workspace, context/): definitions of
 *         the names near the cursor from the files it imports, the most
 *         similar chunks of those files (standing for open tabs), and
 *         their lines as candidates. No recent ring: a case has no history.
 * The prefix cache is off in every configuration, so each request is cold
 * and no configuration profits from the one before it.
 *
 * Context budgets: a model trained on short sequences (the embedded one:
 * 512 tokens) produces noise past them, and the default budgets (1024 +
 * 192 + 512 prompt tokens, 64 generated) do not fit. Unless
 * --no-fit-context, the three budgets are scaled down together so that
 * prompt and completion fit the model's context_length; the budgets used
 * are printed and go into the JSON.
 *
 *   infill eval [--model M] [--files LIST|FILE...] [--max-files F] [--cases N]
 *               [--seed S] [--modes line,ast,checked,full] [--threads T]
 *               [--max-seconds S] [--settings JSON] [--no-fit-context]
 *               [--short-context] [--json] [--verbose] [--allow-train]
 *
 * Files: by default a seeded sample of models/eval-files.txt (held out from
 * training by the script that wrote models/train-files.txt). An argument
 * ending in .txt is a list (one path a line, or language<TAB>path). A file
 * listed in models/train-files.txt is refused unless --allow-train.
 *
 * Output: the Markdown table on stdout; with --json, one JSON object on
 * stdout (for tools/plot_eval.py) and the table on stderr.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "complete.h"
#include "config.h"
#include "eval_cases.h"
#include "eval_workspace.h"
#include "infill_config.h"

#define MAX_FILE_BYTES (1u << 20) /* larger files are generated data, not code */

enum mode { MODE_LINE, MODE_AST, MODE_CHECKED, MODE_FULL, MODE_CROSS, MODE_COUNT };
static const char *const mode_names[MODE_COUNT] = { "line", "ast", "checked", "full", "cross" };

struct opts {
	const char *model;
	const char **files; /* as given (borrowed from argv) */
	size_t n_files;
	size_t max_files, n_cases;
	uint64_t seed;
	bool modes[MODE_COUNT];
	int threads;
	double max_seconds;
	const char *settings;  /* JSON object as in .infill.json; may be NULL */
	const char *workspace; /* --workspace: the project the files are cut from */
	bool modes_given;
	bool json, verbose, allow_train, no_fit;
	bool short_context; /* every case from the prefill budget's short context */
};

/* ---- cases ---------------------------------------------------------------------- */

struct ecase {
	struct eval_case c;
	const char *path;            /* borrowed from the file list */
	const struct ast_lang *lang; /* NULL: no grammar */
	const char *language_id;     /* static */
	size_t base_errors;          /* of the original file */
	size_t cut_errors;           /* of the file with the hole */
	bool has_base;
};

static enum eval_blocks blocks_of(const struct ast_lang *lang)
{
	return lang && !strcmp(ast_lang_name(lang), "python") ? EVAL_BLOCKS_INDENT
	                                                      : EVAL_BLOCKS_BRACE;
}

/*
 * Cuts n cases: kinds in turn (rest, line, block, rest, ...), languages in
 * turn within each kind's round, a random file of that language each time
 * (another one when it has no place for the kind). Deterministic in seed.
 */
static int cases_cut(const struct eval_files *files, const struct opts *o, struct ecase **out,
                     size_t *n_out)
{
	uint64_t rng = o->seed;
	/* languages present, and a seeded sample of at most max_files files */
	size_t nf = files->n;
	size_t *order = malloc((nf + 1) * sizeof *order);
	if (!order) return -ENOMEM;
	for (size_t i = 0; i < nf; i++) order[i] = i;
	for (size_t i = nf; i > 1; i--) {
		size_t j = eval_rng_below(&rng, i);
		size_t t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
	if (o->max_files && nf > o->max_files && !o->n_files) nf = o->max_files;
	const char *langs[32];
	size_t n_langs = 0;
	for (size_t i = 0; i < nf; i++) {
		const char *name = ast_lang_id_from_path(files->v[order[i]]);
		size_t k = 0;
		while (k < n_langs && strcmp(langs[k], name)) k++;
		if (k == n_langs && n_langs < 32) langs[n_langs++] = name;
	}
	struct ecase *cs = calloc(o->n_cases + 1, sizeof *cs);
	if (!cs) {
		free(order);
		return -ENOMEM;
	}
	size_t n = 0;
	int rc = 0;
	for (size_t i = 0; i < o->n_cases && !rc && n_langs; i++) {
		enum eval_kind kind = (enum eval_kind)(i % EVAL_KIND_COUNT);
		const char *want = langs[(i / EVAL_KIND_COUNT) % n_langs];
		/* the sample's files of that language, first in `order` */
		size_t n_want = 0;
		for (size_t j = 0; j < nf; j++) {
			if (!strcmp(ast_lang_id_from_path(files->v[order[j]]), want)) {
				size_t t = order[n_want];
				order[n_want++] = order[j];
				order[j] = t;
			}
		}
		/* up to 20 tries at files of that language */
		for (int attempt = 0; attempt < 20; attempt++) {
			size_t f = order[eval_rng_below(&rng, n_want)];
			const struct ast_lang *lang = ast_lang_from_path(files->v[f]);
			size_t len;
			char *text = eval_file_read(files->v[f], &len, MAX_FILE_BYTES);
			if (!text) {
				fprintf(stderr, "infill eval: skipping %s: %s\n", files->v[f],
				        strerror(errno));
				continue;
			}
			struct ecase *e = &cs[n];
			int r = eval_case_cut(text, len, kind, blocks_of(lang), &rng, &e->c);
			if (r == 0) {
				e->path = files->v[f];
				e->lang = lang;
				e->language_id = ast_lang_name(lang);
				e->has_base =
				        lang &&
				        !eval_parse_errors(lang, text, len, &e->base_errors) &&
				        !eval_parse_errors(lang, e->c.text, e->c.len,
				                           &e->cut_errors);
				n++;
			} else if (r != EVAL_ENONE) {
				rc = r;
			}
			free(text);
			if (r != EVAL_ENONE) break;
		}
	}
	free(order);
	*out = cs;
	*n_out = n;
	return rc;
}

/* ---- running ---------------------------------------------------------------------- */

struct outcome {
	bool answered, exact, error;
	double sim, ms;
	/* completions; of them checkable (a grammar); of those parsing as well
	 * as the original, and adding no error to the file with the hole */
	int32_t returned, checked, parsed, no_new;
	int32_t with_newline; /* completions returned that hold a line break */
	double cpu_ms;
	char *top; /* owned */
	/* cross: tokens of project context kept in the prompt, per source
	 * (as chosen; complete_run may keep fewer) and as kept; texts of other
	 * files scored; whether the top item was one of them */
	int32_t ctx_tokens[CTX_SOURCE_COUNT], ctx_kept_tokens, project_given;
	bool top_from_project;
	double select_cpu_ms; /* of cpu_ms, choosing the project context */
};

struct ctx {
	struct engine *engine;
	const struct tokenizer *tok;
	struct config *cfg;
	int32_t n_ctx; /* the model's trained context; 0: do not fit the budgets */
	bool short_context;
	struct ctx_index *index; /* --workspace; NULL otherwise */
};

static double clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

static void mode_setup(enum mode m, const struct settings *base, struct settings *st,
                       struct complete_options *opt)
{
	*st = *base;
	*opt = complete_options_default();
	opt->use_cache = false;
	if (m == MODE_FULL || m == MODE_CROSS) return;
	st->completion_from_document = false;
	if (m == MODE_CHECKED) return;
	opt->ast_slice = m == MODE_AST;
	opt->validate = false;
	opt->rerank = false;
	st->completion_candidates = 1;
	st->completion_min_confidence = 0;
}

static int run_one(struct ctx *cx, const struct ecase *e, enum mode m, uint64_t seed,
                   struct outcome *out)
{
	memset(out, 0, sizeof *out);
	struct settings st;
	struct complete_options opt;
	mode_setup(m, config_get(cx->cfg, e->language_id), &st, &opt);
	opt.n_ctx = cx->n_ctx;
	opt.seed = seed;
	opt.short_only = cx->short_context;
	struct complete_result r;
	struct infill_error err;
	struct ctx_chunks chunks = { 0 };
	struct engine_snippet *snips = NULL;
	double t0 = now_ms(), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
	if (m == MODE_CROSS && cx->index) { /* the selection's time counts */
		struct settings fitted = st;
		complete_fit_context(&fitted, cx->n_ctx);
		int crc = eval_workspace_context(
		        cx->index, cx->tok, e->path, e->language_id, e->c.text, e->c.len,
		        e->c.cursor,
		        (size_t)(fitted.context_extra_tokens > 0 ? fitted.context_extra_tokens : 0),
		        &chunks, &snips);
		if (crc) return crc;
		out->select_cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
		opt.project = snips;
		opt.n_project = chunks.n;
		opt.project_lines = chunks.lines;
		opt.project_lines_len = chunks.lines_len;
		const char *root = ctx_index_root(cx->index), *base = strrchr(root, '/');
		size_t rl = strlen(root);
		opt.repo_name = base && base[1] ? base + 1 : root;
		opt.path =
		        !strncmp(e->path, root, rl) && e->path[rl] == '/' ? e->path + rl + 1 : NULL;
		for (int s = 0; s < CTX_SOURCE_COUNT; s++)
			out->ctx_tokens[s] = (int32_t)chunks.tokens[s];
	}
	int rc = complete_run(cx->engine, cx->tok, e->language_id, e->c.text, e->c.len, e->c.cursor,
	                      &st, &opt, &r, &err);
	out->ms = now_ms() - t0;
	out->cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
	out->ctx_kept_tokens = r.project_tokens;
	out->project_given = r.project_given;
	if (r.count && r.items[0].stop == ENGINE_STOP_GIVEN && chunks.lines &&
	    r.items[0].text) { /* a text of another file's lines? */
		const char *t = r.items[0].text;
		size_t tl = r.items[0].len;
		out->top_from_project = tl && memmem(chunks.lines, chunks.lines_len, t, tl) &&
		                        !memmem(e->c.text, e->c.len, t, tl);
	}
	free(snips);
	ctx_chunks_finish(&chunks);
	if (rc) {
		fprintf(stderr, "infill eval: %s:%u (%s, %s): %s\n", e->path, e->c.line + 1,
		        eval_kind_name(e->c.kind), mode_names[m], err.message);
		complete_result_finish(&r);
		out->error = true;
		return rc == -ENOMEM ? rc : 0;
	}
	out->returned = (int32_t)r.count;
	for (size_t i = 0; i < r.count; i++) {
		const struct complete_item *it = &r.items[i];
		out->with_newline += memchr(it->text, '\n', it->len) != NULL;
		bool ok = false, no_new = false;
		if (e->has_base &&
		    !eval_parses_with(e->lang, e->c.text, e->c.len, it->start, it->end, it->text,
		                      it->len, e->base_errors, &ok) &&
		    !eval_parses_with(e->lang, e->c.text, e->c.len, it->start, it->end, it->text,
		                      it->len, e->cut_errors, &no_new)) {
			out->checked++;
			out->parsed += ok;
			out->no_new += no_new;
		}
	}
	if (r.count) {
		const struct complete_item *top = &r.items[0];
		/* text the top item leaves in place of [start, end): compare what the
		 * line ends up as, so a re-typed `)` is not counted twice */
		out->answered = true;
		out->top = strndup(top->text, top->len);
		out->exact =
		        eval_exact_match(top->text, top->len, e->c.expected, e->c.expected_len);
		out->sim =
		        eval_edit_similarity(top->text, top->len, e->c.expected, e->c.expected_len);
		if (out->sim < 0 || !out->top) {
			complete_result_finish(&r);
			return -ENOMEM;
		}
	}
	complete_result_finish(&r);
	return 0;
}

/* ---- figures ---------------------------------------------------------------------- */

struct row {
	size_t n, exact, answered, errors;
	double sim_sum;
	int64_t returned, checked, parsed, no_new, with_newline;
	double p50, p90, cpu50;
};

/* kind == EVAL_KIND_COUNT: all kinds. */
static int row_compute(const struct ecase *cs, struct outcome *const *res, size_t n, enum mode m,
                       enum eval_kind kind, struct row *r)
{
	memset(r, 0, sizeof *r);
	double *ms = malloc((2 * n + 1) * sizeof *ms), *cpu = ms + n;
	if (!ms) return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (kind != EVAL_KIND_COUNT && cs[i].c.kind != kind) continue;
		const struct outcome *o = &res[i][m];
		cpu[r->n] = o->cpu_ms;
		ms[r->n++] = o->ms;
		r->exact += o->exact;
		r->answered += o->answered;
		r->errors += o->error;
		r->sim_sum += o->sim;
		r->returned += o->returned;
		r->parsed += o->parsed;
		r->checked += o->checked;
		r->no_new += o->no_new;
		r->with_newline += o->with_newline;
	}
	r->p50 = eval_percentile(ms, r->n, 0.5);
	r->p90 = eval_percentile(ms, r->n, 0.9);
	r->cpu50 = eval_percentile(cpu, r->n, 0.5);
	free(ms);
	return 0;
}

static double pct(double a, double b)
{
	return b > 0 ? 100.0 * a / b : 0;
}

static void table_print(FILE *f, const struct ecase *cs, struct outcome *const *res, size_t n,
                        const bool *modes)
{
	fprintf(f, "| mode | kind | cases | exact | edit sim | answered | parses | no new err "
	           "| no answer | p50 ms | p90 ms | cpu p50 ms |\n"
	           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int m = 0; m < MODE_COUNT; m++) {
		if (!modes[m]) continue;
		for (int j = 0; j <= EVAL_KIND_COUNT; j++) {
			int k = (j + EVAL_KIND_COUNT) %
			        (EVAL_KIND_COUNT + 1); /* all, then each kind */
			struct row r;
			if (row_compute(cs, res, n, (enum mode)m, (enum eval_kind)k, &r) || !r.n)
				continue;
			char parses[64] = "-", no_new[64] = "-";
			if (r.checked) {
				snprintf(parses, sizeof parses, "%.0f%% (%lld/%lld)",
				         pct((double)r.parsed, (double)r.checked),
				         (long long)r.parsed, (long long)r.checked);
				snprintf(no_new, sizeof no_new, "%.0f%%",
				         pct((double)r.no_new, (double)r.checked));
			}
			fprintf(f,
			        "| %s | %s | %zu | %.1f%% | %.3f | %.3f | %s | %s | %.1f%% | %.0f "
			        "| %.0f "
			        "| %.0f |\n",
			        mode_names[m], k == EVAL_KIND_COUNT ? "**all**" : eval_kind_name(k),
			        r.n, pct((double)r.exact, (double)r.n), r.sim_sum / (double)r.n,
			        r.answered ? r.sim_sum / (double)r.answered : 0, parses, no_new,
			        pct((double)(r.n - r.answered), (double)r.n), r.p50, r.p90,
			        r.cpu50);
		}
	}
	/* under the table, so that its columns stay those tools/plot_eval.py reads */
	for (int m = 0; m < MODE_COUNT; m++) {
		struct row a, b;
		if (!modes[m] || row_compute(cs, res, n, (enum mode)m, EVAL_KIND_REST, &a) ||
		    row_compute(cs, res, n, (enum mode)m, EVAL_KIND_LINE, &b) || !(a.n + b.n))
			continue;
		fprintf(f,
		        "%s: %lld of %lld completions on rest_of_line and line cases hold a line "
		        "break\n",
		        mode_names[m], (long long)(a.with_newline + b.with_newline),
		        (long long)(a.returned + b.returned));
	}
}

/* A JSON string of text that may not be valid UTF-8 (a model can stop in
 * the middle of a character, a source file can be Latin-1): each byte that
 * does not start a well-formed sequence becomes U+FFFD. New reference. */
static json_t *json_text(const char *s)
{
	if (!s) return json_null();
	size_t n = strlen(s);
	char *buf = calloc(3 * n + 1, 1);
	if (!buf) return NULL;
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80         ? 1
		           : (c >> 5) == 6  ? 2
		           : (c >> 4) == 14 ? 3
		           : (c >> 3) == 30 ? 4
		                            : 0;
		bool ok = k && i + k <= n && !(k == 2 && c < 0xC2);
		for (size_t j = 1; ok && j < k; j++) ok = ((unsigned char)s[i + j] & 0xC0) == 0x80;
		if (ok) {
			memcpy(buf + w, s + i, k);
			w += k;
			i += k;
		} else {
			memcpy(buf + w, "\xef\xbf\xbd", 3);
			w += 3;
			i++;
		}
	}
	json_t *j = json_stringn(buf, w);
	if (!j) { /* what the check above lets through (surrogates, overlongs): ASCII only */
		w = 0;
		for (size_t i = 0; i < n; i++) buf[w++] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
		j = json_stringn(buf, w);
	}
	free(buf);
	return j;
}

static json_t *json_report(const struct opts *o, const char *model_path, const struct ecase *cs,
                           struct outcome *const *res, size_t n, double seconds,
                           const struct settings *budgets, int32_t n_ctx,
                           const struct engine_params *ep)
{
	json_t *rows = json_array(), *cases = json_array(), *modes = json_array();
	for (int m = 0; m < MODE_COUNT; m++) {
		if (!o->modes[m]) continue;
		json_array_append_new(modes, json_string(mode_names[m]));
		for (int j = 0; j <= EVAL_KIND_COUNT; j++) {
			int k = (j + EVAL_KIND_COUNT) %
			        (EVAL_KIND_COUNT + 1); /* all, then each kind */
			struct row r;
			if (row_compute(cs, res, n, (enum mode)m, (enum eval_kind)k, &r) || !r.n)
				continue;
			json_t *row = json_pack(
			        "{s:s, s:s, s:I, s:f, s:f, s:f, s:o, s:o, s:I, s:I, s:f, "
			        "s:f, s:f, s:f, s:I}",
			        "mode", mode_names[m], "kind",
			        k == EVAL_KIND_COUNT ? "all" : eval_kind_name(k), "cases",
			        (json_int_t)r.n, "exact", (double)r.exact / (double)r.n, "edit_sim",
			        r.sim_sum / (double)r.n, "edit_sim_answered",
			        r.answered ? r.sim_sum / (double)r.answered : 0.0, "parse",
			        r.checked ? json_real((double)r.parsed / (double)r.checked)
			                  : json_null(),
			        "no_new_errors",
			        r.checked ? json_real((double)r.no_new / (double)r.checked)
			                  : json_null(),
			        "parse_checked", (json_int_t)r.checked, "returned",
			        (json_int_t)r.returned, "no_answer",
			        (double)(r.n - r.answered) / (double)r.n, "p50_ms", r.p50, "p90_ms",
			        r.p90, "cpu_p50_ms", r.cpu50, "errors", (json_int_t)r.errors);
			/* beside the others: a one-line kind answered on several lines
			 * breaks the line it was asked to finish */
			if (row)
				json_object_set_new(row, "returned_with_newline",
				                    json_integer(r.with_newline));
			json_array_append_new(rows, row);
		}
	}
	for (size_t i = 0; i < n; i++) {
		json_t *per = json_object();
		for (int m = 0; m < MODE_COUNT; m++) {
			if (!o->modes[m]) continue;
			const struct outcome *x = &res[i][m];
			json_t *xo =
			        json_pack("{s:o, s:b, s:f, s:I, s:I, s:I, s:I, s:f, s:f}", "top",
			                  json_text(x->top), "exact", x->exact, "edit_sim", x->sim,
			                  "returned", (json_int_t)x->returned, "parsed",
			                  (json_int_t)x->parsed, "no_new_errors",
			                  (json_int_t)x->no_new, "checked", (json_int_t)x->checked,
			                  "ms", x->ms, "cpu_ms", x->cpu_ms);
			if (xo)
				json_object_set_new(xo, "with_newline",
				                    json_integer(x->with_newline));
			if (m == MODE_CROSS && xo)
				json_object_set_new(
				        xo, "context",
				        json_pack("{s:i, s:i, s:i, s:i, s:i, s:b}", "definition",
				                  x->ctx_tokens[CTX_SOURCE_DEFINITION], "similar",
				                  x->ctx_tokens[CTX_SOURCE_SIMILAR], "recent",
				                  x->ctx_tokens[CTX_SOURCE_RECENT], "kept",
				                  x->ctx_kept_tokens, "other_lines_scored",
				                  x->project_given, "top_from_other_file",
				                  x->top_from_project));
			json_object_set_new(per, mode_names[m], xo);
		}
		json_array_append_new(
		        cases,
		        json_pack("{s:o, s:I, s:s, s:s, s:o, s:o}", "path", json_text(cs[i].path),
		                  "line", (json_int_t)cs[i].c.line + 1, "kind",
		                  eval_kind_name(cs[i].c.kind), "language", cs[i].language_id,
		                  "expected", json_text(cs[i].c.expected), "results", per));
	}
	/* reuse_shifted_suffix: what the engine ran with, read back from it */
	json_t *b = json_pack(
	        "{s:i, s:i, s:i, s:i, s:i, s:i, s:b}", "prefix_tokens",
	        budgets->context_prefix_tokens, "suffix_tokens", budgets->context_suffix_tokens,
	        "extra_tokens", budgets->context_extra_tokens, "max_tokens",
	        budgets->completion_max_tokens, "candidates", budgets->completion_candidates,
	        "model_context", n_ctx, "reuse_shifted_suffix", ep->reuse_shifted_suffix);
	return json_pack("{s:o, s:o, s:I, s:I, s:f, s:o, s:o, s:o}", "model", json_text(model_path),
	                 "settings", b, "seed", (json_int_t)o->seed, "cases", (json_int_t)n,
	                 "seconds", seconds, "modes", modes, "rows", rows, "per_case", cases);
}

/* ---- the command --------------------------------------------------------------------- */

static void warn_setting(void *ud, const char *message)
{
	(void)ud;
	fprintf(stderr, "%s\n", message);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: infill eval [--model M] [--files LIST|FILE...] [--max-files F] [--cases "
	        "N]\n"
	        "                   [--seed S] [--modes line,ast,checked,full] [--threads T]\n"
	        "                   [--max-seconds S] [--settings JSON] [--no-fit-context]\n"
	        "                   [--workspace DIR] [--json] [--verbose] [--allow-train]\n"
	        "Cuts fill-in-the-middle cases (rest of line, whole line, block body) from source\n"
	        "files held out from training, completes each with the plain line window (line),\n"
	        "the AST slice (ast), the pipeline on the model's own candidates (checked) and\n"
	        "the whole pipeline (full), and prints exact match, edit\n"
	        "similarity, the share of completions that parse, no-answer share and latency.\n"
	        "  --files     source files or .txt lists (default: a sample of\n"
	        "              models/eval-files.txt); training files are refused\n"
	        "  --max-files sample size from the default list (default 40)\n"
	        "  --cases     number of cases, kinds and languages in turn (default 60)\n"
	        "  --max-seconds  start no new case after this long (default: no limit)\n"
	        "  --settings  a JSON object of settings as in .infill.json\n"
	        "  --workspace DIR  cut cases from the files of the project DIR and add mode\n"
	        "              cross (full + context from the rest of the project); modes\n"
	        "              default to full,cross\n"
	        "  --no-fit-context  keep context budgets past the model's context_length\n"
	        "  --short-context  answer every case from the short context the prefill\n"
	        "              budget falls back to (the nearest lines, no snippets)\n"
	        "  --json      one JSON object on stdout (tools/plot_eval.py); table on stderr\n");
}

static int parse_modes(const char *s, bool *modes)
{
	memset(modes, 0, MODE_COUNT * sizeof *modes);
	while (*s) {
		size_t n = strcspn(s, ",");
		int m = 0;
		while (m < MODE_COUNT &&
		       (strlen(mode_names[m]) != n || strncmp(s, mode_names[m], n)))
			m++;
		if (m == MODE_COUNT) return -1;
		modes[m] = true;
		s += n + (s[n] == ',');
	}
	return 0;
}

static bool is_value_option(const char *a)
{
	static const char *const names[] = { "--model",    "--modes",   "--max-seconds",
		                             "--settings", "--cases",   "--max-files",
		                             "--seed",     "--threads", "--workspace",
		                             NULL };
	for (size_t i = 0; names[i]; i++)
		if (!strcmp(a, names[i])) return true;
	return false;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){
		.max_files = 40, .n_cases = 60, .seed = 1, .modes = { true, true, true, true }
	};
	o->files = calloc((size_t)argc + 1, sizeof *o->files);
	if (!o->files) return 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return -1;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--verbose")) {
			o->verbose = true;
		} else if (!strcmp(a, "--allow-train")) {
			o->allow_train = true;
		} else if (!strcmp(a, "--no-fit-context")) {
			o->no_fit = true;
		} else if (!strcmp(a, "--short-context")) {
			o->short_context = true;
		} else if (!strcmp(a, "--files")) {
			while (i + 1 < argc && strncmp(argv[i + 1], "--", 2))
				o->files[o->n_files++] = argv[++i];
		} else if (!is_value_option(a)) {
			fprintf(stderr, "infill eval: unknown option %s\n", a);
			usage(stderr);
			return 2;
		} else if (!v) {
			fprintf(stderr, "infill eval: %s needs a value\n", a);
			return 2;
		} else if (!strcmp(a, "--model")) {
			o->model = v, i++;
		} else if (!strcmp(a, "--settings")) {
			o->settings = v, i++;
		} else if (!strcmp(a, "--workspace")) {
			o->workspace = v, i++;
		} else if (!strcmp(a, "--modes")) {
			if (parse_modes(v, o->modes)) {
				fprintf(stderr,
				        "infill eval: --modes takes line,ast,checked,full,cross\n");
				return 2;
			}
			o->modes_given = true;
			i++;
		} else if (!strcmp(a, "--max-seconds")) {
			o->max_seconds = strtod(v, &end), i++;
		} else {
			unsigned long long x = strtoull(v, &end, 10);
			if (!strcmp(a, "--cases"))
				o->n_cases = (size_t)x;
			else if (!strcmp(a, "--max-files"))
				o->max_files = (size_t)x;
			else if (!strcmp(a, "--seed"))
				o->seed = x;
			else if (!strcmp(a, "--threads"))
				o->threads = (int)x;
			else {
				fprintf(stderr, "infill eval: unknown option %s\n", a);
				usage(stderr);
				return 2;
			}
			i++;
		}
		if (end && *end) {
			fprintf(stderr, "infill eval: %s: not a number: %s\n", a, v);
			return 2;
		}
	}
	if (!o->modes_given) { /* cross only with a workspace; then beside full */
		for (int m = 0; m < MODE_COUNT; m++)
			o->modes[m] = o->workspace ? m >= MODE_FULL : m != MODE_CROSS;
	} else if (o->modes[MODE_CROSS] && !o->workspace) {
		fprintf(stderr, "infill eval: mode cross needs --workspace DIR\n");
		return 2;
	}
	return 0;
}

/* Project context per case in mode cross: what each source gave, what the
 * prompt kept, and how often the answer was another file's line. */
static void context_print(FILE *f, const struct outcome *const *res, size_t n)
{
	double tok[CTX_SOURCE_COUNT] = { 0 }, kept = 0, given = 0, top = 0, with = 0;
	double *sel = malloc((n + 1) * sizeof *sel);
	for (size_t i = 0; i < n; i++) {
		const struct outcome *o = &res[i][MODE_CROSS];
		if (sel) sel[i] = o->select_cpu_ms;
		int32_t sum = 0;
		for (int s = 0; s < CTX_SOURCE_COUNT; s++) {
			tok[s] += o->ctx_tokens[s];
			sum += o->ctx_tokens[s];
		}
		with += sum > 0;
		kept += o->ctx_kept_tokens;
		given += o->project_given;
		top += o->top_from_project;
	}
	double sel50 = sel ? eval_percentile(sel, n, 0.5) : 0;
	free(sel);
	if (!n) return;
	fprintf(f,
	        "\ncross: project context per case (mean tokens): definition %.1f, similar %.1f, "
	        "recent %.1f; kept in the prompt %.1f; cases with any %.0f of %zu; other files' "
	        "lines scored %.2f per case, top answer %.0f times\n",
	        tok[CTX_SOURCE_DEFINITION] / (double)n, tok[CTX_SOURCE_SIMILAR] / (double)n,
	        tok[CTX_SOURCE_RECENT] / (double)n, kept / (double)n, with, n, given / (double)n,
	        top);
	fprintf(f, "cross: choosing the project context took %.1f ms of CPU (p50)\n", sel50);
}

/* ---- the run, step by step ------------------------------------------------------ */

/* Everything one `infill eval` holds; run_finish frees it whatever step
 * failed, so each step may simply return. */
struct run {
	struct opts o;
	struct ctx cx;
	char **ws_paths; /* the workspace's files (owned) */
	int n_ws;
	struct eval_files files;
	struct ecase *cs;
	size_t n;
	struct outcome **res; /* [n][MODE_COUNT]; rows past the last case run stay NULL */
	struct model *model;
	char *model_path;
};

static void run_finish(struct run *r)
{
	for (size_t i = 0; r->res && i < r->n; i++) {
		for (int m = 0; r->res[i] && m < MODE_COUNT; m++) free(r->res[i][m].top);
		free(r->res[i]);
	}
	free(r->res);
	for (size_t i = 0; r->cs && i < r->n; i++) eval_case_finish(&r->cs[i].c);
	free(r->cs);
	engine_free(r->cx.engine);
	model_free(r->model);
	free(r->model_path);
	config_free(r->cx.cfg);
	eval_files_finish(&r->files);
	free(r->o.files);
	for (int i = 0; i < r->n_ws; i++) free(r->ws_paths[i]);
	free(r->ws_paths);
	ctx_index_free(r->cx.index);
}

/* --settings as the flags layer; returns 2 (a usage error) when it is not a
 * JSON object. */
static int run_apply_settings(struct run *r)
{
	json_error_t jerr;
	json_t *obj = json_loads(r->o.settings, 0, &jerr);
	if (!obj || !json_is_object(obj)) {
		fprintf(stderr, "infill eval: --settings is not a JSON object: %s\n",
		        obj ? "" : jerr.text);
		json_decref(obj);
		return 2;
	}
	config_set_layer(r->cx.cfg, CONFIG_LAYER_FLAGS, obj, warn_setting, NULL);
	json_decref(obj);
	return 0;
}

/* --workspace: the workspace's own files are the ones cut, so its index
 * replaces the file list (o.files then borrows from ws_paths). */
static int run_open_workspace(struct run *r)
{
	const struct settings *gs = config_get(r->cx.cfg, NULL);
	r->cx.index = eval_workspace_open(r->o.workspace, gs->context_index_max_files,
	                                  gs->context_index_max_mb);
	if (!r->cx.index) return -1;
	r->n_ws = ctx_index_paths(r->cx.index, &r->ws_paths);
	if (r->n_ws < 0) {
		r->n_ws = 0;
		return -1;
	}
	free(r->o.files);
	r->o.files = calloc((size_t)r->n_ws + 1, sizeof *r->o.files);
	if (!r->o.files) return -1;
	for (int i = 0; i < r->n_ws; i++) r->o.files[i] = r->ws_paths[i];
	r->o.n_files = (size_t)r->n_ws;
	return 0;
}

/* The files, then the cases cut from them; says why when there are none. */
static int run_cut_cases(struct run *r)
{
	int rc = eval_files_collect(r->o.files, r->o.n_files, r->o.allow_train, &r->files);
	if (r->o.workspace) r->o.n_files = 0; /* --max-files samples the workspace */
	if (rc) return -1;
	if (!r->files.n) {
		fprintf(stderr, "infill eval: no files\n");
		return -1;
	}
	if (cases_cut(&r->files, &r->o, &r->cs, &r->n)) {
		fprintf(stderr, "infill eval: out of memory\n");
		return -1;
	}
	if (!r->n) {
		fprintf(stderr, "infill eval: no case could be cut from the files\n");
		return -1;
	}
	return 0;
}

/* The model and its engine, as the server would open them, and the context
 * budgets fitted to its trained context (*fitted; printed, since every
 * figure depends on them). */
static int run_open_model(struct run *r, struct settings *fitted)
{
	const struct settings *g = config_get(r->cx.cfg, NULL);
	r->model_path = r->o.model ? strdup(r->o.model)
	                : g->model ? strdup(g->model)
	                           : complete_default_model_path();
	if (!r->model_path) return -1;
	struct complete_model_spec spec = complete_model_spec_from(g);
	if (r->o.threads) spec.threads = r->o.threads;
	struct infill_error err;
	if (complete_model_open(r->model_path, &spec, NULL, NULL, &r->model, &r->cx.engine, &err)) {
		fprintf(stderr, "infill eval: %s\n", err.message);
		return -1;
	}
	if (err.message[0]) fprintf(stderr, "infill eval: %s\n", err.message); /* the draft */
	r->cx.tok = model_tokenizer(r->model);
	r->cx.n_ctx = r->o.no_fit ? 0 : model_info(r->model)->n_ctx_train;
	r->cx.short_context = r->o.short_context;
	*fitted = *config_get(r->cx.cfg, NULL);
	complete_fit_context(fitted, r->cx.n_ctx);
	fprintf(stderr,
	        "infill eval: context budgets prefix %d, suffix %d, extra %d tokens, "
	        "%d generated (model context %d)\n",
	        fitted->context_prefix_tokens, fitted->context_suffix_tokens,
	        fitted->context_extra_tokens, fitted->completion_max_tokens,
	        model_info(r->model)->n_ctx_train);
	if (r->o.verbose)
		fprintf(stderr, "infill eval: %s, %zu cases from %zu files\n", r->model_path, r->n,
		        r->files.n);
	return 0;
}

/* --verbose: one line per case, each configuration's verdict. */
static void case_print(const struct run *r, size_t i)
{
	const struct ecase *e = &r->cs[i];
	fprintf(stderr, "[%zu/%zu] %s:%u %s", i + 1, r->n, e->path, e->c.line + 1,
	        eval_kind_name(e->c.kind));
	for (int m = 0; m < MODE_COUNT; m++)
		if (r->o.modes[m])
			fprintf(stderr, "  %s %s %.2f %.0fms", mode_names[m],
			        r->res[i][m].exact ? "EM" : "--", r->res[i][m].sim,
			        r->res[i][m].ms);
	fprintf(stderr, "\n");
}

/* Runs the cases in order, each in every configuration asked for, until
 * --max-seconds after t0; *done: how many ran (the report covers those). */
static int run_cases(struct run *r, double t0, size_t *done)
{
	r->res = calloc(r->n, sizeof *r->res);
	if (!r->res) return -1;
	for (*done = 0; *done < r->n; (*done)++) {
		size_t i = *done;
		if (r->o.max_seconds > 0 && now_ms() - t0 > r->o.max_seconds * 1e3) {
			fprintf(stderr,
			        "infill eval: --max-seconds reached after %zu of %zu cases\n", i,
			        r->n);
			break;
		}
		r->res[i] = calloc(MODE_COUNT, sizeof **r->res);
		if (!r->res[i]) return -1;
		for (int m = 0; m < MODE_COUNT; m++) {
			if (!r->o.modes[m]) continue;
			if (run_one(&r->cx, &r->cs[i], (enum mode)m, r->o.seed + i, &r->res[i][m]))
				return -1;
		}
		if (r->o.verbose) case_print(r, i);
	}
	return 0;
}

/* The table (stderr when the JSON takes stdout), the cross summary, and
 * with --json the report object. */
static int run_report(const struct run *r, size_t done, double seconds,
                      const struct settings *fitted)
{
	FILE *table = r->o.json ? stderr : stdout;
	table_print(table, r->cs, r->res, done, r->o.modes);
	if (r->o.modes[MODE_CROSS])
		context_print(table, (const struct outcome *const *)r->res, done);
	if (!r->o.json) return 0;
	struct engine_params ep = engine_get_params(r->cx.engine);
	json_t *j = json_report(&r->o, r->model_path, r->cs, r->res, done, seconds, fitted,
	                        model_info(r->model)->n_ctx_train, &ep);
	if (!j || json_dumpf(j, stdout, JSON_INDENT(1)) < 0) {
		json_decref(j);
		return -1;
	}
	fputc('\n', stdout);
	json_decref(j);
	return 0;
}

/* The steps in order; returns the exit status (1 on any failure, whose
 * message the step printed, 2 for bad --settings). */
static int run_all(struct run *r)
{
	r->cx.cfg = config_new();
	if (!r->cx.cfg) return 1;
	if (r->o.settings) {
		int rc = run_apply_settings(r);
		if (rc) return rc;
	}
	if (r->o.workspace && run_open_workspace(r)) return 1;
	if (run_cut_cases(r)) return 1;
	struct settings fitted;
	if (run_open_model(r, &fitted)) return 1;
	double t0 = now_ms();
	size_t done = 0;
	if (run_cases(r, t0, &done)) return 1;
	double seconds = (now_ms() - t0) / 1e3;
	return run_report(r, done, seconds, &fitted) ? 1 : 0;
}

int cli_eval(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--next-edit")) return cli_eval_next_edit(argc, argv);
	struct run r = { 0 };
	int prc = parse_args(argc, argv, &r.o);
	if (prc) {
		free(r.o.files);
		return prc < 0 ? 0 : prc;
	}
	int status = run_all(&r);
	run_finish(&r);
	return status;
}
