/*
 * bench_lookup.c - decode speed with and without prompt-lookup decoding
 * (engine_request.prompt_lookup), on prompts whose completion repeats text
 * of the prompt and on prompts where it need not. Not a meson test: it
 * prints figures (minutes on a CPU with a 1.3B model).
 *
 *   bench-lookup MODEL.gguf [--source FILE] [--threads T] [--tokens N]
 *                [--candidates N] [--reps R] [--prefix-bytes B]
 *
 * Decode tokens/s is generated tokens / decode time of each job (the prompt
 * is in the prefix cache after the first run, and prefill is timed apart).
 * Runs alternate off/on so that the load of a shared machine hits both.
 *
 * Cases:
 *   plain   the first --prefix-bytes of --source (default: this file's own
 *           text when built in the tree, else a built-in snippet), the rest
 *           of its line as the suffix: whatever the model writes.
 *   repeat  the plain prefix followed by the model's own greedy answer G
 *           to it, 3 x --tokens long (decoded once, lookup off): the job
 *           continues G. A random-weight model's greedy text soon runs in
 *           a loop, so what it writes next repeats text of its prompt (a
 *           trained model repeats code the same way); the kept share
 *           printed says how much it did.
 *
 * Then the price of checking drafts: one forward pass of 1 token against
 * one of 1 + ENGINE_DRAFT_MAX tokens of the same sequence, at the end of the
 * plain prompt (ms per pass, median of --reps x 3).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "infer.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	fclose(f);
	if (s) s[n] = 0, *len = (size_t)n;
	return s;
}

static const char SNIPPET[] =
        "import json\nimport os\n\n\nclass Store:\n    def __init__(self, path):\n"
        "        self.path = path\n        self.items = {}\n\n    def load(self):\n"
        "        with open(self.path) as f:\n            self.items = json.load(f)\n\n"
        "    def save(self):\n        with open(self.path, 'w') as f:\n"
        "            json.dump(self.items, f)\n\n    def get(self, key):\n        return ";

struct figures {
	double tokens, decode_ms, steps, drafted, accepted;
	int runs;
};

static int job(struct engine *e, const struct engine_request *rq, struct figures *f,
               struct engine_result *keep)
{
	struct engine_result r;
	struct infer_error err;
	int rc = engine_run(e, rq, &r, &err);
	if (rc) {
		fprintf(stderr, "engine_run: %s\n", err.message);
		engine_result_finish(&r);
		return rc;
	}
	if (f) {
		f->tokens += r.generated_tokens;
		f->decode_ms += r.decode_ms;
		f->steps += r.decode_steps;
		f->drafted += r.draft_tokens;
		f->accepted += r.accepted_draft_tokens;
		f->runs++;
	}
	if (keep)
		*keep = r;
	else
		engine_result_finish(&r);
	return 0;
}

static void report(const char *name, const struct figures *off, const struct figures *on)
{
	double a = off->tokens / (off->decode_ms / 1e3), b = on->tokens / (on->decode_ms / 1e3);
	printf("%-7s off: %6.2f tok/s (%4.0f tokens, %4.0f steps)   on: %6.2f tok/s (%4.0f "
	       "steps, %4.0f drafted, %4.0f kept = %.0f%%)   speed-up %.2fx\n",
	       name, a, off->tokens / off->runs, off->steps / off->runs, b, on->steps / on->runs,
	       on->drafted / on->runs, on->accepted / on->runs,
	       on->drafted > 0 ? 100.0 * on->accepted / on->drafted : 0.0, b / a);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Forward passes of k tokens of one sequence after rq's prompt: median ms. */
static double pass_ms(struct model *m, struct kv_seq *prompt, int32_t L, const int32_t *tok,
                      int32_t k, int reps, float *logits)
{
	double t[64];
	int32_t pos[1 + ENGINE_DRAFT_MAX], rows[1 + ENGINE_DRAFT_MAX];
	struct kv_seq *seqs[1 + ENGINE_DRAFT_MAX];
	if (reps > 64) reps = 64;
	for (int r = 0; r < reps; r++) {
		struct kv_seq *s = kv_seq_fork(prompt);
		for (int32_t j = 0; j < k; j++) pos[j] = L + j, rows[j] = j, seqs[j] = s;
		struct model_batch b = { .n_tokens = k,
			                 .tokens = tok,
			                 .pos = pos,
			                 .seqs = seqs,
			                 .n_out = k,
			                 .out_rows = rows,
			                 .logits = logits };
		struct infer_error err;
		double t0 = engine_now_ms();
		int rc = model_forward(m, &b, &err);
		t[r] = engine_now_ms() - t0;
		kv_seq_free(s);
		if (rc) {
			fprintf(stderr, "forward: %s\n", err.message);
			return -1;
		}
	}
	qsort(t, (size_t)reps, sizeof t[0], cmp_d);
	return t[reps / 2];
}

static int verify_cost(struct model *m, struct engine *e, const struct engine_request *rq, int reps)
{
	struct infer_error err;
	int32_t n = engine_prompt_tokens(e, rq, NULL, 0, NULL, &err);
	int32_t *tok = n > 0 ? malloc((size_t)n * sizeof *tok) : NULL;
	float *logits =
	        malloc((size_t)(1 + ENGINE_DRAFT_MAX) * model_info(m)->n_vocab * sizeof *logits);
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	if (!tok || !logits || !s || engine_prompt_tokens(e, rq, tok, (size_t)n, NULL, &err) != n ||
	    model_eval(m, s, tok, n - 1, NULL, &err)) {
		fprintf(stderr, "verify cost: %s\n", err.message);
		return 1;
	}
	/* the prompt's last tokens stand in for the drafts: only the cost counts */
	const int32_t *in = tok + n - 1 - ENGINE_DRAFT_MAX;
	double one = 0, all = 0;
	for (int r = 0; r < 3; r++) { /* alternate, so a load change hits both */
		one += pass_ms(m, s, n - 1, in, 1, reps / 3 + 1, logits);
		all += pass_ms(m, s, n - 1, in, 1 + ENGINE_DRAFT_MAX, reps / 3 + 1, logits);
	}
	printf("verify  one token %.1f ms, 1 + %d drafted %.1f ms per forward pass at %d tokens of "
	       "context: %.2fx a plain step\n",
	       one / 3, ENGINE_DRAFT_MAX, all / 3, n - 1, all / one);
	kv_seq_free(s);
	free(tok);
	free(logits);
	return 0;
}

int main(int argc, char **argv)
{
	const char *model = NULL, *source = NULL;
	int threads = 2, tokens = 64, cand = 1, reps = 3, prefix_bytes = 1500;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a[0] != '-') {
			model = a;
			continue;
		}
		if (!v) {
			fprintf(stderr, "%s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--source"))
			source = v;
		else if (!strcmp(a, "--threads"))
			threads = atoi(v);
		else if (!strcmp(a, "--tokens"))
			tokens = atoi(v);
		else if (!strcmp(a, "--candidates"))
			cand = atoi(v);
		else if (!strcmp(a, "--reps"))
			reps = atoi(v);
		else if (!strcmp(a, "--prefix-bytes"))
			prefix_bytes = atoi(v);
		else {
			fprintf(stderr, "unknown option %s\n", a);
			return 2;
		}
	}
	if (!model || tokens < 1 || cand < 1 || cand > ENGINE_MAX_CANDIDATES || reps < 1 ||
	    prefix_bytes < 1) {
		fprintf(stderr, "usage: bench-lookup MODEL.gguf [--source FILE] [--threads T] "
		                "[--tokens N] [--candidates N] [--reps R] [--prefix-bytes B]\n");
		return 2;
	}
	size_t len = 0;
	char *text = source ? slurp(source, &len) : NULL;
	if (source && !text) {
		fprintf(stderr, "%s: %s\n", source, strerror(errno));
		return 1;
	}
	if (!text) {
		text = strdup(SNIPPET);
		len = strlen(SNIPPET);
	}
	size_t cut = (size_t)prefix_bytes < len ? (size_t)prefix_bytes : len;
	size_t eol = cut;
	while (eol < len && text[eol] != '\n') eol++;

	struct model_params mp = model_params_default();
	mp.path = model;
	mp.backend = INFER_BACKEND_CPU;
	mp.n_threads = threads;
	struct infer_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	struct engine *e = engine_new(m, NULL, &err);
	if (!e) {
		fprintf(stderr, "engine_new: %s\n", err.message);
		return 1;
	}
	printf("model %s, backend %s, %d candidate(s), %d tokens, %d reps\n", model,
	       model_info(m)->backend_name, cand, tokens, reps);

	struct engine_request rq = engine_request_default();
	rq.prefix = text;
	rq.prefix_len = cut;
	rq.suffix = text + cut;
	rq.suffix_len = eol - cut;
	rq.n_candidates = cand;
	rq.max_tokens = tokens;
	rq.max_lines = 0; /* random weights: lines are not what stops them */
	rq.prompt_lookup = false;

	/* The plain answer, three times as long, for the repeat case's prompt. */
	struct engine_result g;
	rq.max_tokens = 3 * tokens;
	rq.n_candidates = 1;
	if (job(e, &rq, NULL, &g)) return 1;
	rq.max_tokens = tokens;
	rq.n_candidates = cand;
	size_t glen = g.candidates[0].len;
	char *rep = malloc(cut + glen + 1);
	if (!rep) return 1;
	memcpy(rep, text, cut);
	memcpy(rep + cut, g.candidates[0].text, glen);
	size_t rep_len = cut + glen;
	engine_result_finish(&g);

	struct {
		const char *name;
		const char *prefix;
		size_t len;
	} cases[] = { { "plain", text, cut }, { "repeat", rep, rep_len } };
	for (size_t k = 0; k < 2; k++) {
		rq.prefix = cases[k].prefix;
		rq.prefix_len = cases[k].len;
		rq.prompt_lookup = false;
		if (job(e, &rq, NULL, NULL)) return 1; /* prompt into the cache */
		struct figures off = { 0 }, on = { 0 };
		for (int r = 0; r < reps; r++) {
			rq.prompt_lookup = false;
			if (job(e, &rq, &off, NULL)) return 1;
			rq.prompt_lookup = true;
			if (job(e, &rq, &on, NULL)) return 1;
		}
		report(cases[k].name, &off, &on);
	}
	rq.prefix = text;
	rq.prefix_len = cut;
	if (verify_cost(m, e, &rq, reps * 3)) return 1;
	free(rep);
	free(text);
	engine_free(e);
	model_free(m);
	return 0;
}
