/*
 * cli_replay.c - `infill replay`: the daemon's latency benchmark, as people
 * edit. It starts the real server (this binary) as a child over pipes and
 * replays a trace of editing events against it (replay_trace.c: open, jump,
 * cut, type at a typist's pace, accept, wait), then prints p50/p90/p99
 * latency, the first requests at a new place (cold) apart, the share
 * answered within completion.deadlineMs, the share with items, how often the
 * top item was what the file says next, and the prefix cache's share of the
 * prompt tokens (from infill/stats).
 *
 *   infill replay --trace FILE [options]        a trace (tools/make-trace builds them)
 *   infill replay FILE [--line N] [--chars K]   the single-line replay: one trace
 *
 * The single-line replay takes the K characters after the start of line N
 * out of FILE and types them back one at a time, each keystroke after the
 * answer to the one before (--pace ms later): every request is measured
 * whole and none is superseded. completion.debounceMs is 0 there unless
 * --debounce says otherwise: the figure is the pipeline's latency, not a
 * wait we chose. Traces keep the settings' debounce unless --debounce.
 */
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "replay_trace.h"

struct replay_cmd {
	const char *path;  /* the single-line replay's file */
	const char *trace; /* --trace */
	long line, chars, pace_ms;
	bool truncate, no_cache, both, as_json;
	struct replay_opts run;
};

static void replay_usage(FILE *f)
{
	fprintf(f, "usage: infill replay --trace TRACE.json [options]\n"
	           "       infill replay FILE [--line N] [--chars K] [--pace MS] [--truncate] "
	           "[options]\n"
	           "options: [--model M] [--settings JSON] [--debounce MS] [--no-cache] [--both]\n"
	           "         [--json] [--verbose] [--log FILE] [--server INFILL]\n"
	           "Starts the server as a child and replays editing against it over LSP, then\n"
	           "reports request-to-response latency (cold requests, the first at a new place,\n"
	           "apart), the share within completion.deadlineMs + 50 ms, the share with items,\n"
	           "the top item matching what the file says next, and prefix-cache reuse.\n"
	           "--trace: a JSON trace {\"settings\"?: {...}, \"events\": [...]}, paths "
	           "relative to\n"
	           "its folder; tools/make-trace builds one from source files. The events:\n");
#define X(e, key, help) fprintf(f, "  %s\n", help);
	REPLAY_EVENTS(X)
#undef X
	fprintf(f,
	        "FILE: opens FILE without the K characters (default 60) from the start of line\n"
	        "N (default: the middle line), asks once (cold), then retypes them one at a time,\n"
	        "each keystroke after the answer to the one before, plus --pace ms.\n"
	        "--both runs with the cache and then without; --no-cache runs without only.\n"
	        "--server runs another infill binary as the server (an older build, to "
	        "compare).\n"
	        "Feedback: the top item of each answer is reported shown\n"
	        "(textDocument/didShowCompletion) and, when it is what the file says next,\n"
	        "accepted (its command), as a user who takes every right suggestion and no other;\n"
	        "the report gives the server's counts: shown, accepted (and the rate), dismissed,\n"
	        "hidden by completion.minConfidence \"auto\" (compare --settings\n"
	        "'{\"completion.minConfidence\": \"auto\"}' with a run without it).\n");
}

/* 0, 1 (stop: --help), or 2 (usage error, said on stderr). */
static int parse_args(int argc, char **argv, struct replay_cmd *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			replay_usage(stdout);
			return 1;
		} else if (!strcmp(a, "--trace") && more) {
			o->trace = argv[++i];
		} else if (!strcmp(a, "--line") && more) {
			o->line = atol(argv[++i]);
		} else if (!strcmp(a, "--chars") && more) {
			o->chars = atol(argv[++i]);
		} else if (!strcmp(a, "--server") && more) {
			o->run.server = argv[++i];
		} else if (!strcmp(a, "--model") && more) {
			o->run.model = argv[++i];
		} else if (!strcmp(a, "--pace") && more) {
			o->pace_ms = atol(argv[++i]);
		} else if (!strcmp(a, "--debounce") && more) {
			o->run.debounce_ms = atol(argv[++i]);
			if (o->run.debounce_ms < 0) o->run.debounce_ms = LONG_MIN;
		} else if (!strcmp(a, "--settings") && more) {
			o->run.settings = argv[++i];
		} else if (!strcmp(a, "--log") && more) {
			o->run.log = argv[++i];
		} else if (!strcmp(a, "--no-cache")) {
			o->no_cache = true;
		} else if (!strcmp(a, "--both")) {
			o->both = true;
		} else if (!strcmp(a, "--truncate")) {
			o->truncate = true;
		} else if (!strcmp(a, "--json")) {
			o->as_json = true;
		} else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
			o->run.verbose = true;
		} else if (!o->path && a[0] != '-') {
			o->path = a;
		} else {
			fprintf(stderr, "infill replay: unknown argument %s (see --help)\n", a);
			return 2;
		}
	}
	if (!o->path == !o->trace || o->chars < 1 || o->line < 0 || o->pace_ms < 0 ||
	    o->run.debounce_ms == LONG_MIN) {
		replay_usage(stderr);
		return 2;
	}
	return 0;
}

/* The single-line replay as a trace (new reference), or NULL with a message
 * on stderr. */
static json_t *line_trace(struct replay_cmd *o)
{
	size_t len;
	char *text = cli_read_file(o->path, &len);
	if (!text) return NULL;
	size_t lines = 1;
	for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
	if (o->line == 0) o->line = (long)(lines / 2);
	size_t start = 0;
	for (long l = 1; l < o->line && start < len; l++) {
		const char *nl = memchr(text + start, '\n', len - start);
		start = nl ? (size_t)(nl - text) + 1 : len;
	}
	size_t typed = 0;
	for (long k = 0; k < o->chars && start + typed < len; k++) {
		unsigned char b = (unsigned char)text[start + typed];
		typed += b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
	}
	if (start + typed > len) typed = len - start;
	json_t *chars = typed ? json_stringn(text + start, typed) : NULL;
	free(text);
	if (!chars) {
		fprintf(stderr, "infill replay: %s has nothing to type at line %ld%s\n", o->path,
		        o->line, typed ? " (or it is not valid UTF-8)" : "");
		return NULL;
	}
	/* open at the line, take the characters out (the end of the file too
	 * with --truncate), ask once from cold, then type them back */
	json_t *cut = o->truncate ? json_string("end") : json_integer((json_int_t)o->chars);
	return json_pack("{s:s, s:[{s:s, s:I, s:i}, {s:o}, {s:b}, {s:o, s:I, s:b}]}", "name",
	                 "line", "events", "goto", o->path, "line", (json_int_t)o->line, "column",
	                 0, "cut", cut, "await", 1, "type", chars, "paceMs", (json_int_t)o->pace_ms,
	                 "afterAnswer", 1);
}

static json_t *trace_load(struct replay_cmd *o, char *dir, size_t dircap)
{
	json_error_t jerr;
	json_t *t = json_load_file(o->trace, 0, &jerr);
	if (!t) {
		fprintf(stderr, "infill replay: %s:%d:%d: %s\n", o->trace, jerr.line, jerr.column,
		        jerr.text);
		return NULL;
	}
	char err[512];
	if (replay_trace_check(t, err, sizeof err)) {
		fprintf(stderr, "infill replay: %s: %s\n", o->trace, err);
		json_decref(t);
		return NULL;
	}
	snprintf(dir, dircap, "%s", o->trace);
	o->run.base_dir = dirname(dir);
	return t;
}

static void report(const struct replay_cmd *o, const json_t *trace,
                   const struct replay_report *reps, int n)
{
	const char *model = o->run.model ? o->run.model : "(default)";
	if (o->as_json) {
		json_t *runs = json_array();
		for (int i = 0; i < n; i++)
			json_array_append_new(runs, replay_report_json(&reps[i]));
		json_t *out;
		if (o->trace)
			out = json_pack("{s:s, s:s, s:s, s:o}", "trace", o->trace, "name",
			                json_string_value(json_object_get(trace, "name")) ?: "",
			                "model", model, "runs", runs);
		else
			out = json_pack("{s:s, s:I, s:I, s:I, s:s, s:o}", "file", o->path, "line",
			                (json_int_t)o->line, "chars", (json_int_t)o->chars,
			                "paceMs", (json_int_t)o->pace_ms, "model", model, "runs",
			                runs);
		if (n == 2 && reps[0].latency.p50 > 0)
			json_object_set_new(out, "p50NoCacheOverCache",
			                    json_real(reps[1].latency.p50 / reps[0].latency.p50));
		json_dumpf(out, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(out);
		return;
	}
	if (o->trace)
		printf("replay %s, model %s\n", o->trace, model);
	else
		printf("replay %s from line %ld, %ld characters, pace %ld ms, model %s\n", o->path,
		       o->line, o->chars, o->pace_ms, model);
	for (int i = 0; i < n; i++) replay_report_print(&reps[i], stdout);
	if (n == 2 && reps[0].latency.p50 > 0)
		printf("p50 without the cache / with it: %.2fx\n",
		       reps[1].latency.p50 / reps[0].latency.p50);
}

int cli_replay(int argc, char **argv)
{
	struct replay_cmd o = { .chars = 60, .run = { .debounce_ms = -1 } };
	int rc = parse_args(argc, argv, &o);
	if (rc) return rc == 1 ? 0 : 2;
	/* the single-line replay measures the pipeline, not a debounce we chose */
	if (o.path && o.run.debounce_ms < 0) o.run.debounce_ms = 0;
	char dir[PATH_MAX];
	json_t *trace = o.trace ? trace_load(&o, dir, sizeof dir) : line_trace(&o);
	if (!trace) return 1;
	signal(SIGPIPE, SIG_IGN);
	struct replay_report reps[2];
	int n = 0, status = 0;
	bool modes[2] = { !o.no_cache || o.both, o.no_cache || o.both };
	for (int m = 0; m < 2 && !status; m++) {
		if (!modes[m]) continue;
		o.run.cache = m == 0;
		char err[1024];
		rc = replay_trace_run(trace, &o.run, &reps[n], err, sizeof err);
		if (rc < 0) {
			fprintf(stderr, "infill replay: %s\n", err);
			json_decref(trace);
			return 1;
		}
		if (rc) fprintf(stderr, "infill replay: some requests got no answer\n");
		status |= rc;
		n++;
	}
	report(&o, trace, reps, n);
	json_decref(trace);
	return status ? 1 : 0;
}
