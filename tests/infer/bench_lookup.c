/*
 * bench_lookup.c - decode speed with and without prompt-lookup decoding
 * (engine_request.prompt_lookup), on prompts whose completion repeats text
 * of the prompt and on prompts where it need not. Not a meson test: it
 * prints figures (minutes on a CPU with a 1.3B model).
 *
 *   bench-lookup MODEL.gguf [--source FILE] [--threads T] [--tokens N]
 *                [--candidates N] [--reps R] [--prefix-bytes B] [--prompts P]
 *
 * Decode tokens/s is generated tokens / decode time of each job (the prompt
 * is in the prefix cache after the first run, and prefill is timed apart).
 * Runs alternate off/on so that the load of a shared machine hits both.
 *
 * Prompts: P cuts of --source (default: this file's own text when built in
 * the tree, else a built-in snippet), the first at --prefix-bytes and the
 * rest spread over the file, each with the rest of its line as the suffix;
 * and each cut again followed by the model's own greedy answer to it, 3 x
 * --tokens long (a random-weight model's greedy text soon runs in a loop,
 * so what it writes next repeats its prompt, as a trained model repeats
 * code). How much a prompt's answer repeats is read off the answer without
 * lookup, not off how the prompt was made: the share of its bytes that are
 * the byte that followed the latest earlier occurrence of the 4 bytes
 * before it (in the prompt and the answer so far). The figures are summed
 * per class, "repeats" (a share of at least 80%), "partly" (40-80%) and
 * "else"; a line per prompt says its share and speed-up (an answer its
 * first token ends is shown, not counted).
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
	/* the fastest run's tokens and ms (a prompt's runs are the same
	 * tokens): a shared machine's load only ever slows a run down, so the
	 * best of the reps is the figure least of the load; summed over prompts */
	double best_tokens, best_ms;
	int runs;
};

static int job(struct engine *e, const struct engine_request *rq, struct figures *f,
               struct engine_result *keep)
{
	struct engine_result r;
	struct infill_error err;
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
		if (!f->runs || r.decode_ms < f->best_ms)
			f->best_ms = r.decode_ms, f->best_tokens = r.generated_tokens;
		f->runs++;
	}
	if (keep)
		*keep = r;
	else
		engine_result_finish(&r);
	return 0;
}

static void add(struct figures *to, const struct figures *f)
{
	to->tokens += f->tokens, to->decode_ms += f->decode_ms, to->steps += f->steps;
	to->drafted += f->drafted, to->accepted += f->accepted, to->runs += f->runs;
	to->best_tokens += f->best_tokens, to->best_ms += f->best_ms;
}

static void report(const char *name, const struct figures *off, const struct figures *on)
{
	double a = off->tokens / (off->decode_ms / 1e3), b = on->tokens / (on->decode_ms / 1e3);
	printf("%-12s off: %6.2f tok/s (%4.0f tokens, %4.0f steps)   on: %6.2f tok/s (%4.0f "
	       "steps, %4.0f drafted, %4.0f kept = %.0f%%)   speed-up %.2fx, best of the reps "
	       "%.2fx\n",
	       name, a, off->tokens / off->runs, off->steps / off->runs, b, on->steps / on->runs,
	       on->drafted / on->runs, on->accepted / on->runs,
	       on->drafted > 0 ? 100.0 * on->accepted / on->drafted : 0.0, b / a,
	       off->best_ms > 0 && on->best_ms > 0 && off->best_tokens > 0
	               ? (on->best_tokens / on->best_ms) / (off->best_tokens / off->best_ms)
	               : 0.0);
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
		struct infill_error err;
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
	struct infill_error err;
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
	enum { K = 1 + ENGINE_DRAFT_MAX };
	double ms[K + 1] = { 0 };
	for (int r = 0; r < 3; r++) /* alternate, so a load change hits every width */
		for (int32_t k = 1; k <= K; k++)
			ms[k] += pass_ms(m, s, n - 1, in, k, reps / 3 + 1, logits) / 3;
	printf("verify  a forward pass of 1 token and 1 + k drafted at %d tokens of context, ms "
	       "(x a plain step):",
	       n - 1);
	for (int32_t k = 1; k <= K; k++) printf(" %.1f (%.2fx)", ms[k], ms[k] / ms[1]);
	printf("\n");
	kv_seq_free(s);
	free(tok);
	free(logits);
	return 0;
}

/* Share of ans's bytes that the latest earlier occurrence of the 4 bytes
 * before them (in ctx then ans) predicts: how much the answer repeats. */
static double repeat_share(const char *ctx, size_t cl, const char *ans, size_t al)
{
	char *t = malloc(cl + al + 1);
	if (!t || !al) {
		free(t);
		return 0;
	}
	memcpy(t, ctx, cl);
	memcpy(t + cl, ans, al);
	size_t hit = 0;
	for (size_t i = cl; i < cl + al; i++) {
		if (i < 5) continue;
		for (size_t j = i - 1; j >= 4; j--)
			if (!memcmp(t + j - 4, t + i - 4, 4)) {
				hit += t[j] == t[i];
				break;
			}
	}
	free(t);
	return (double)hit / (double)al;
}

int main(int argc, char **argv)
{
	const char *model = NULL, *source = NULL;
	int threads = 2, tokens = 64, cand = 1, reps = 3, prefix_bytes = 1500, prompts = 4;
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
		else if (!strcmp(a, "--prompts"))
			prompts = atoi(v);
		else {
			fprintf(stderr, "unknown option %s\n", a);
			return 2;
		}
	}
	if (!model || tokens < 1 || cand < 1 || cand > ENGINE_MAX_CANDIDATES || reps < 1 ||
	    prefix_bytes < 1 || prompts < 1) {
		fprintf(stderr, "usage: bench-lookup MODEL.gguf [--source FILE] [--threads T] "
		                "[--tokens N] [--candidates N] [--reps R] [--prefix-bytes B] "
		                "[--prompts P]\n");
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

	struct model_params mp = model_params_default();
	mp.path = model;
	mp.backend = INFER_BACKEND_CPU;
	mp.n_threads = threads;
	mp.kv_bytes = (size_t)1 << 30; /* every cut's prompts stay cached */
	struct infill_error err;
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
	printf("model %s, backend %s, %d candidate(s), %d tokens, %d reps, %d cuts\n", model,
	       model_info(m)->backend_name, cand, tokens, reps, prompts);

	struct engine_request rq = engine_request_default();
	rq.n_candidates = cand;
	rq.max_tokens = tokens;
	rq.max_lines = 0; /* random weights: lines are not what stops them */
	/* by how much the answer repeats: [0] under 40% of its bytes, [1] up
	 * to 80%, [2] at least 80% */
	static const char *const class_name[3] = { "else", "partly", "repeats" };
	struct figures off[3] = { 0 }, on[3] = { 0 };
	int count[3] = { 0 };
	size_t span = len > (size_t)prefix_bytes ? len - (size_t)prefix_bytes : 0;
	for (int p = 0; p < prompts; p++) {
		size_t cut = (size_t)prefix_bytes + span * (size_t)p / (size_t)prompts;
		if (cut > len) cut = len;
		size_t eol = cut;
		while (eol < len && text[eol] != '\n') eol++;
		rq.suffix = text + cut;
		rq.suffix_len = eol - cut;
		/* the plain answer, three times as long, for the second prompt */
		struct engine_result g;
		rq.prefix = text;
		rq.prefix_len = cut;
		rq.prompt_lookup = false;
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
		engine_result_finish(&g);
		for (int k = 0; k < 2; k++) {
			rq.prefix = k ? rep : text;
			rq.prefix_len = k ? cut + glen : cut;
			rq.prompt_lookup = false;
			struct engine_result a;
			if (job(e, &rq, NULL, &a)) return 1; /* the prompt into the cache */
			double share = repeat_share(rq.prefix, rq.prefix_len, a.candidates[0].text,
			                            a.candidates[0].len);
			engine_result_finish(&a);
			struct figures f_off = { 0 }, f_on = { 0 };
			for (int r = 0; r < reps; r++) {
				rq.prompt_lookup = false;
				if (job(e, &rq, &f_off, NULL)) return 1;
				rq.prompt_lookup = true;
				if (job(e, &rq, &f_on, NULL)) return 1;
			}
			char name[32];
			snprintf(name, sizeof name, "%s%d %2.0f%%", k ? "cont" : "cut", p,
			         100 * share);
			report(name, &f_off, &f_on);
			/* an answer the first token ends has no decode step to time
			 * (its ratio is the noise of a 0.1 ms job) */
			if (f_off.steps < reps) {
				printf("%-12s not counted: the answer ends at its first token\n",
				       name);
				continue;
			}
			int c = share >= 0.8 ? 2 : share >= 0.4;
			count[c]++;
			add(&off[c], &f_off);
			add(&on[c], &f_on);
		}
		free(rep);
	}
	for (int c = 2; c >= 0; c--) {
		char name[32];
		snprintf(name, sizeof name, "%s (%d)", class_name[c], count[c]);
		if (count[c]) report(name, &off[c], &on[c]);
	}
	size_t cut = (size_t)prefix_bytes < len ? (size_t)prefix_bytes : len;
	rq.prefix = text;
	rq.prefix_len = cut;
	rq.suffix = text + cut;
	rq.suffix_len = 0;
	if (verify_cost(m, e, &rq, reps * 3)) return 1;
	free(text);
	engine_free(e);
	model_free(m);
	return 0;
}
