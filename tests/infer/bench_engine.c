/*
 * bench_engine.c - a simulated typing session against a model file: one
 * completion job per keystroke, as an editor asks while the user retypes a
 * line of a real source file. Prints p50/p90/p99 job latency and the share
 * of prompt tokens served from the prefix cache, with the cache on, off, and
 * with shifted suffix reuse. Not a meson test (it takes minutes on a CPU).
 *
 *   bench-engine MODEL.gguf [--source FILE] [--line N] [--keys K]
 *                [--keys-off K] [--candidates N] [--tokens T]
 *                [--prefix-lines L] [--suffix-tokens S] [--threads T]
 *                [--backend cpu|cuda|auto] [--modes on,off,shift]
 *
 * The document is the source file; the cursor starts at the beginning of
 * line N and moves one byte per keystroke through that line's text (and the
 * following lines), so the prefix grows at its end and the suffix (the rest
 * of the file after the typed line) stays the same, as in an editor where
 * the user retypes a line in the middle of a file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "infer.h"

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *v, int n, double p)
{
	if (!n) return 0;
	int i = (int)(p / 100.0 * (n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	fclose(f);
	if (s) s[n] = 0, *len = (size_t)n;
	return s;
}

/* Byte offset of the start of line `line` (1-based). */
static size_t line_start(const char *s, size_t len, int line)
{
	size_t i = 0;
	for (int l = 1; l < line && i < len; i++)
		if (s[i] == '\n') l++;
	return i;
}

struct opts {
	const char *model, *source, *backend, *modes;
	int line, keys, keys_off, candidates, tokens, prefix_lines, suffix_tokens, threads, verbose;
	int kv_mb;
};

/*
 * Types `keys` keystrokes from byte offset *typed of the line on, one job
 * each, in the given mode; key 0 of the first session is the cold start
 * (the file just opened). Sessions share the engine, so a later session
 * starts with the cache as the previous one left it, as in an editor where
 * the setting changes while the user keeps typing.
 */
static void session(struct engine *e, const struct opts *o, const char *text, size_t len,
                    const char *mode, int *typed)
{
	bool cache = strcmp(mode, "off") != 0, shift = !strcmp(mode, "shift");
	int keys = cache ? o->keys : o->keys_off;
	struct engine_params ep = engine_params_default();
	ep.reuse_shifted_suffix = shift;
	engine_configure(e, &ep);
	struct infill_error err;
	size_t start = line_start(text, len, o->line);
	size_t pstart =
	        line_start(text, len, o->line > o->prefix_lines ? o->line - o->prefix_lines : 1);
	size_t eol = start;
	while (eol < len && text[eol] != '\n') eol++;
	double *lat = calloc((size_t)keys + 1, sizeof *lat);
	long prompt = 0, cached = 0, shifted = 0, gen = 0;
	double prefill = 0, decode = 0;
	/* Key 0 is the cold start (the file just opened); keys 1..K are typed. */
	int first = *typed == 0 ? 0 : 1;
	for (int k = first; k <= keys; k++) {
		size_t cur = start + (size_t)(*typed + k);
		if (cur > len) break;
		/* the suffix: the rest of the file after the line being typed */
		size_t sfx = cur < eol ? eol : cur;
		struct engine_request rq = engine_request_default();
		rq.prefix = text + pstart;
		rq.prefix_len = cur - pstart;
		rq.suffix = text + sfx;
		rq.suffix_len = len - sfx;
		rq.suffix_tokens = o->suffix_tokens;
		rq.prefix_tokens = 2048;
		rq.n_candidates = o->candidates;
		rq.max_tokens = o->tokens;
		rq.max_lines = 0;
		rq.use_cache = cache;
		rq.comment = "#";
		struct engine_result r;
		int rc = engine_run(e, &rq, &r, &err);
		if (rc) {
			fprintf(stderr, "key %d: %s\n", k, err.message);
			engine_result_finish(&r);
			break;
		}
		if (k == 0) {
			printf("  [%s] cold: %d prompt tokens, %.0f ms (prefill %.0f, decode "
			       "%.0f)\n",
			       mode, r.prompt_tokens, r.total_ms, r.prefill_ms, r.decode_ms);
		} else {
			lat[k - 1] = r.total_ms;
			prompt += r.prompt_tokens;
			cached += r.cached_tokens;
			shifted += r.shifted_tokens;
			gen += r.generated_tokens;
			prefill += r.prefill_ms;
			decode += r.decode_ms;
			if (k <= 3 || k == keys || o->verbose)
				printf("  [%s] key %d: %d prompt (%d cached, %d shifted), %.0f ms, "
				       "cand0 \"%.*s\"\n",
				       mode, k, r.prompt_tokens, r.cached_tokens, r.shifted_tokens,
				       r.total_ms,
				       (int)(r.candidates[0].len > 40 ? 40 : r.candidates[0].len),
				       r.candidates[0].text);
		}
		fflush(stdout);
		engine_result_finish(&r);
	}
	*typed += keys;
	qsort(lat, (size_t)keys, sizeof *lat, cmp_d);
	printf("%-6s keys %3d  p50 %7.0f ms  p90 %7.0f ms  p99 %7.0f ms  cached %5.1f%%  shifted "
	       "%5.1f%%  "
	       "prefill %6.0f ms/key  decode %6.0f ms/key  gen %ld\n",
	       mode, keys, pct(lat, keys, 50), pct(lat, keys, 90), pct(lat, keys, 99),
	       prompt ? 100.0 * (double)cached / (double)prompt : 0,
	       prompt ? 100.0 * (double)shifted / (double)prompt : 0, keys ? prefill / keys : 0,
	       keys ? decode / keys : 0, gen);
	fflush(stdout);
	free(lat);
}

int main(int argc, char **argv)
{
	struct opts o = { .source = "/usr/lib/python3.11/json/decoder.py",
		          .backend = "cpu",
		          .modes = "on,off,shift",
		          .line = 0,
		          .keys = 20,
		          .keys_off = 5,
		          .candidates = 3,
		          .tokens = 16,
		          .prefix_lines = 60,
		          .suffix_tokens = 64,
		          .threads = 0,
		          .kv_mb = 1024 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a[0] != '-') {
			o.model = a;
			continue;
		}
		if (!v) {
			fprintf(stderr, "%s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--source"))
			o.source = v;
		else if (!strcmp(a, "--line"))
			o.line = atoi(v);
		else if (!strcmp(a, "--keys"))
			o.keys = atoi(v);
		else if (!strcmp(a, "--keys-off"))
			o.keys_off = atoi(v);
		else if (!strcmp(a, "--candidates"))
			o.candidates = atoi(v);
		else if (!strcmp(a, "--tokens"))
			o.tokens = atoi(v);
		else if (!strcmp(a, "--prefix-lines"))
			o.prefix_lines = atoi(v);
		else if (!strcmp(a, "--suffix-tokens"))
			o.suffix_tokens = atoi(v);
		else if (!strcmp(a, "--threads"))
			o.threads = atoi(v);
		else if (!strcmp(a, "--backend"))
			o.backend = v;
		else if (!strcmp(a, "--modes"))
			o.modes = v;
		else if (!strcmp(a, "--kv-mb"))
			o.kv_mb = atoi(v);
		else if (!strcmp(a, "--verbose"))
			o.verbose = atoi(v);
		else {
			fprintf(stderr, "unknown option %s\n", a);
			return 2;
		}
	}
	if (!o.model) {
		fprintf(stderr, "usage: bench-engine MODEL.gguf [--source FILE] [--line N] [--keys "
		                "K] ...\n");
		return 2;
	}
	size_t len;
	char *text = slurp(o.source, &len);
	if (!text) {
		fprintf(stderr, "%s: %s\n", o.source, strerror(errno));
		return 1;
	}
	if (o.line <= 0) { /* a line with some text, 60% into the file */
		int lines = 0;
		for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
		o.line = lines * 6 / 10;
		for (;;) {
			size_t s = line_start(text, len, o.line);
			size_t e = s;
			while (e < len && text[e] != '\n') e++;
			if (e - s >= 30 || o.line >= lines) break;
			o.line++;
		}
	}
	struct model_params mp = model_params_default();
	mp.path = o.model;
	mp.backend = !strcmp(o.backend, "cuda")   ? INFER_BACKEND_CUDA
	             : !strcmp(o.backend, "auto") ? INFER_BACKEND_AUTO
	                                          : INFER_BACKEND_CPU;
	mp.n_threads = o.threads;
	mp.kv_bytes = (size_t)o.kv_mb << 20;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	printf("model %s, backend %s\nsource %s line %d, prefix %d lines, suffix <= %d tokens, "
	       "%d candidates x %d tokens\n",
	       o.model, model_info(m)->backend_name, o.source, o.line, o.prefix_lines,
	       o.suffix_tokens, o.candidates, o.tokens);
	struct engine *e = engine_new(m, NULL, &err);
	if (!e) {
		fprintf(stderr, "engine_new: %s\n", err.message);
		return 1;
	}
	char modes[64];
	int typed = 0;
	snprintf(modes, sizeof modes, "%s", o.modes);
	for (char *save = NULL, *t = strtok_r(modes, ",", &save); t; t = strtok_r(NULL, ",", &save))
		session(e, &o, text, len, t, &typed);
	struct engine_stats st;
	engine_get_stats(e, &st);
	printf("engine: %llu jobs, cache lookups %llu hits %llu (%.0f%%), prompt tokens %llu, "
	       "cached %llu "
	       "(%.1f%%), shifted %llu, cache %d nodes / %d pages, %llu evictions\n",
	       (unsigned long long)st.jobs, (unsigned long long)st.cache_lookups,
	       (unsigned long long)st.cache_hits,
	       st.cache_lookups ? 100.0 * (double)st.cache_hits / (double)st.cache_lookups : 0,
	       (unsigned long long)st.prompt_tokens, (unsigned long long)st.cached_tokens,
	       st.prompt_tokens ? 100.0 * (double)st.cached_tokens / (double)st.prompt_tokens : 0,
	       (unsigned long long)st.shifted_tokens, st.cache_nodes, st.cache_pages,
	       (unsigned long long)st.cache_evictions);
	engine_free(e);
	model_free(m);
	free(text);
	return 0;
}
