/*
 * bench_draft.c - decode speed of a target with and without its draft model
 * (engine_set_draft), beside the pair's measured greedy agreement. Not a
 * meson test: it prints figures (minutes on a CPU with a 1.3B-shape pair).
 *
 *   bench-draft TARGET.gguf DRAFT.gguf [--threads T] [--tokens N] [--reps R]
 *               [--lookup] [--backend cpu|cuda]
 *
 * A pair made by `infill mkmodel ... --pair-layers D --perturb S` dials the
 * agreement (docs/benchmarks.md has the commands). Each of a few prompts
 * (code of several kinds) is decoded greedily, one candidate, N tokens
 * (max_lines off), by the target alone and with the draft, alternating so
 * that a shared machine's load hits both; the prompt is in each engine's
 * prefix cache after the first run, and decode tok/s is generated tokens
 * over decode time. The outputs must be equal (greedy is exact); a
 * difference is reported. Agreement is the share of the target's greedy
 * tokens that the draft's argmax matches given the same context (teacher
 * forcing along the target's own text), over all prompts. --lookup turns
 * prompt lookup on in both runs (then it drafts first, the draft fills).
 * The LIVE line: a cold job whose deadline left no time for the draft,
 * then its suggestion grown to its end (the user reading it), plain against
 * the draft joining as it grows (its prompt's cost counted).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "infer.h"

static const char *const PROMPTS[] = {
	"import json\nimport os\n\n\nclass Store:\n    def __init__(self, path):\n"
	"        self.path = path\n        self.items = {}\n\n    def load(self):\n"
	"        with open(self.path) as f:\n            self.items = json.load(f)\n\n"
	"    def save(self):\n        with open(self.path, 'w') as f:\n            ",
	"#include <stdio.h>\n#include <stdlib.h>\n\nstruct node {\n\tint key;\n\tstruct node "
	"*next;\n};"
	"\n\nstatic struct node *push(struct node *head, int key)\n{\n\tstruct node *n = ",
	"function debounce(fn, ms) {\n  let timer = null;\n  return function (...args) {\n    ",
	"def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\n"
	"def fact(n):\n    ",
};

static struct model *load(const char *path, int threads, enum infer_backend backend)
{
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.n_threads = threads;
	mp.backend = backend;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) fprintf(stderr, "bench-draft: %s\n", err.message);
	return m;
}

/* Agreement by the draft's margin (its first logit less its second), in
 * half-logit classes: how well the margin tells a draft that will be kept. */
enum { MCLS = 12 };
static long margin_agree[MCLS], margin_total[MCLS];

/* Agreement by what is known before drafting a token, for free: the
 * target's probability of the token before it (tenths), and whether the
 * draft agreed on that one (a pair agrees in runs). */
enum { TCLS = 10 };
static long tconf_agree[TCLS], tconf_total[TCLS], after_agree[2], after_total[2];

static uint8_t prob_class(const float *lg, int32_t n, int32_t tok)
{
	double sum = 0;
	for (int32_t i = 0; i < n; i++) sum += exp((double)lg[i] - lg[tok]);
	int c = (int)(TCLS / sum);
	return (uint8_t)(c < TCLS ? c : TCLS - 1);
}

static int margin_class(const float *lg, int32_t n)
{
	float a = -1e30f, b = -1e30f;
	for (int32_t i = 0; i < n; i++) {
		if (lg[i] > a)
			b = a, a = lg[i];
		else if (lg[i] > b)
			b = lg[i];
	}
	int c = (int)((a - b) * 40);
	return c < MCLS ? c : MCLS - 1;
}

/* The draft's argmax against the target's tokens out[0..n) after prompt. */
static void agree_count(struct model *d, struct engine *e, const struct engine_request *rq,
                        const int32_t *out, const uint8_t *tcls, int32_t n, long *agree,
                        long *total)
{
	int32_t prompt[4096];
	struct infill_error err;
	int32_t L = engine_prompt_tokens(e, rq, prompt, 4096, NULL, &err);
	if (L <= 0 || L > 4096) return;
	int32_t nv = model_info(d)->n_vocab;
	float *lg = malloc((size_t)nv * sizeof *lg);
	struct kv_seq *s = kv_seq_new(model_kv_pool(d));
	if (lg && s && !model_eval(d, s, prompt, L, lg, &err)) {
		bool prev = false;
		for (int32_t i = 0; i < n; i++) {
			bool same = sample_greedy(lg, nv) == out[i];
			int c = margin_class(lg, nv);
			*agree += same, margin_agree[c] += same;
			if (i > 0) {
				tconf_agree[tcls[i - 1]] += same, tconf_total[tcls[i - 1]]++;
				after_agree[prev] += same, after_total[prev]++;
			}
			prev = same;
			(*total)++, margin_total[c]++;
			if (model_eval(d, s, &out[i], 1, lg, &err)) break;
		}
	}
	kv_seq_free(s);
	free(lg);
}

/* The target's greedy token ids of a text decoded from prompt (re-run
 * token by token: the engine returns text). */
static int32_t greedy_ids(struct model *t, struct engine *e, const struct engine_request *rq,
                          int32_t n, int32_t *out, uint8_t *tcls)
{
	int32_t prompt[4096];
	struct infill_error err;
	int32_t L = engine_prompt_tokens(e, rq, prompt, 4096, NULL, &err);
	if (L <= 0 || L > 4096) return 0;
	int32_t nv = model_info(t)->n_vocab, k = 0;
	float *lg = malloc((size_t)nv * sizeof *lg);
	struct kv_seq *s = kv_seq_new(model_kv_pool(t));
	if (lg && s && !model_eval(t, s, prompt, L, lg, &err)) {
		for (; k < n; k++) {
			out[k] = sample_greedy(lg, nv);
			tcls[k] = prob_class(lg, nv, out[k]);
			if (model_eval(t, s, &out[k], 1, lg, &err)) break;
		}
	}
	kv_seq_free(s);
	free(lg);
	return k;
}

/* A cold job whose deadline came before its first steps (no time for the
 * draft's prompt: it decodes without the draft), then its live candidate
 * grown to its end as the user reads: the growth's ms, caches cleared
 * first. With e's draft, the candidate takes it as it grows (the draft's
 * prompt, then the catch-up); *dpre: the draft's prompt tokens computed. */
static double live_growth_ms(struct engine *e, struct engine_request rq, int32_t *tokens,
                             int32_t *dpre)
{
	struct infill_error err;
	struct engine_result r;
	struct engine_live *lv = NULL;
	engine_cache_clear(e);
	rq.live = &lv;
	rq.deadline_ms = engine_now_ms() + 1;
	if (engine_run(e, &rq, &r, &err)) return -1;
	engine_result_finish(&r);
	*tokens = 0, *dpre = 0;
	if (!lv) return 0;
	rq.live = NULL;
	rq.deadline_ms = 0;
	double t0 = engine_now_ms();
	int rc = engine_live_continue(e, lv, &rq, &r, &err);
	double ms = engine_now_ms() - t0;
	*tokens = r.generated_tokens;
	*dpre = r.draft_prefilled_tokens;
	engine_result_finish(&r);
	engine_live_free(lv);
	return rc ? -1 : ms;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
		        "usage: bench-draft TARGET.gguf DRAFT.gguf [--threads T] [--tokens N] "
		        "[--reps R] [--lookup] [--backend cpu|cuda]\n");
		return 2;
	}
	int threads = 2, tokens = 64, reps = 2;
	bool lookup = false;
	enum infer_backend backend = INFER_BACKEND_CPU;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--lookup"))
			lookup = true;
		else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
			threads = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--tokens"))
			tokens = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
			reps = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--backend")) {
			i++;
			if (strcmp(argv[i], "cpu") && strcmp(argv[i], "cuda")) {
				fprintf(stderr, "bench-draft: --backend is cpu or cuda, not %s\n",
				        argv[i]);
				return 2;
			}
			backend = strcmp(argv[i], "cuda") ? INFER_BACKEND_CPU : INFER_BACKEND_CUDA;
		}
	}
	struct model *t = load(argv[1], threads, backend), *d = load(argv[2], threads, backend);
	if (!t || !d) return 1;
	struct infill_error err;
	struct engine *plain = engine_new(t, NULL, &err), *spec = engine_new(t, NULL, &err);
	if (!plain || !spec || engine_set_draft(spec, d, &err)) {
		fprintf(stderr, "bench-draft: %s\n", err.message);
		return 1;
	}
	const struct model_info *ti = model_info(t), *di = model_info(d);
	printf("target %s: %d layers, %.0f MB a step; draft %s: %d layers, %.0f MB (x%.2f); %s\n",
	       argv[1], ti->n_layer, ti->decode_read_bytes / 1e6, argv[2], di->n_layer,
	       di->decode_read_bytes / 1e6, (double)ti->decode_read_bytes / di->decode_read_bytes,
	       ti->backend_name);
	long agree = 0, total = 0;
	double tok_plain = 0, ms_plain = 0, tok_spec = 0, ms_spec = 0;
	long drafted = 0, kept = 0, differ = 0;
	/* the growth of live candidates whose jobs decoded without the draft */
	double live_tok = 0, live_plain = 0, live_spec = 0, live_dpre = 0;
	/* where the time goes: steps, and the drafting's share of decode_ms */
	double steps_plain = 0, steps_spec = 0, steps_drafting = 0, ms_drafting = 0;
	int n_prompts = sizeof PROMPTS / sizeof PROMPTS[0];
	for (int p = 0; p < n_prompts; p++) {
		struct engine_request rq = engine_request_default();
		rq.prefix = PROMPTS[p];
		rq.prefix_len = strlen(PROMPTS[p]);
		rq.suffix = "\n";
		rq.suffix_len = 1;
		rq.n_candidates = 1;
		rq.max_tokens = tokens;
		rq.max_lines = 0;
		rq.prompt_lookup = lookup;
		int32_t ids[1024];
		uint8_t tcls[1024];
		/* both from empty caches: a prompt's split between cached and
		 * computed rows moves its logits' last bits (the prefill's
		 * kernels are not the decode step's), and the engines' caches
		 * differ after the LIVE runs, so that plain greedy would differ
		 * between them with no draft at all */
		engine_cache_clear(plain);
		engine_cache_clear(spec);
		int32_t n = greedy_ids(t, plain, &rq, tokens < 1024 ? tokens : 1024, ids, tcls);
		long a0 = agree, t0 = total;
		int32_t shown = n;
		double pt = 0, pm = 0, st = 0, sm = 0;
		/* one warm-up each (prefix caches, cost models), then reps alternating */
		for (int r = -1; r < reps; r++) {
			struct engine_result a, b;
			rq.draft = false;
			if (engine_run(plain, &rq, &a, &err)) return 1;
			rq.draft = true;
			if (engine_run(spec, &rq, &b, &err)) return 1;
			if (strcmp(a.candidates[0].text, b.candidates[0].text)) differ++;
			if (a.generated_tokens < shown) shown = a.generated_tokens;
			if (r >= 0) {
				pt += a.generated_tokens, pm += a.decode_ms;
				st += b.generated_tokens, sm += b.decode_ms;
				drafted += b.model_draft_tokens,
				        kept += b.accepted_model_draft_tokens;
				steps_plain += a.decode_steps, steps_spec += b.decode_steps;
				steps_drafting += b.model_draft_steps, ms_drafting += b.draft_ms;
			}
			engine_result_finish(&a);
			engine_result_finish(&b);
		}
		/* over the tokens decoding gives: a trained model ends its text,
		 * and what greedy_ids goes on with after that is never drafted */
		agree_count(d, plain, &rq, ids, tcls, shown, &agree, &total);
		printf("prompt %d: %d tokens, agreement %.2f, plain %.1f tok/s, with draft %.1f "
		       "tok/s, x%.2f\n",
		       p, shown, total > t0 ? (double)(agree - a0) / (total - t0) : 0,
		       pt * 1e3 / pm, st * 1e3 / sm, (st / sm) / (pt / pm));
		tok_plain += pt, ms_plain += pm, tok_spec += st, ms_spec += sm;
		for (int r = 0; r < reps; r++) {
			int32_t n0, n1, dp0, dp1;
			rq.draft = true;
			double m0 = live_growth_ms(plain, rq, &n0, &dp0);
			double m1 = live_growth_ms(spec, rq, &n1, &dp1);
			if (m0 < 0 || m1 < 0) return 1;
			live_tok += n0, live_plain += m0, live_spec += m1, live_dpre += dp1;
		}
	}
	printf("MARGIN (the draft's first logit less its second: agreement, share of tokens):");
	for (int c = 0; c < MCLS; c++)
		if (margin_total[c])
			printf(" %s%.3f: %.2f %.0f%%", c == MCLS - 1 ? ">=" : "", c * 0.025,
			       (double)margin_agree[c] / margin_total[c],
			       100.0 * margin_total[c] / (total ? total : 1));
	printf("\nBEFORE (agreement by the target's probability of the token before, tenths, "
	       "and after a miss / an agreed token):");
	for (int c = 0; c < TCLS; c++)
		if (tconf_total[c])
			printf(" %.1f: %.2f %ld", c / 10.0, (double)tconf_agree[c] / tconf_total[c],
			       tconf_total[c]);
	for (int a = 0; a < 2; a++)
		printf(" | after %s: %.2f %ld", a ? "agreed" : "miss",
		       after_total[a] ? (double)after_agree[a] / after_total[a] : 0,
		       after_total[a]);
	printf("\n");
	double rp = tok_plain * 1e3 / ms_plain, rs = tok_spec * 1e3 / ms_spec;
	printf("ALL: greedy agreement %.2f | plain %.1f tok/s | with draft %.1f tok/s | x%.2f | "
	       "drafts kept %ld/%ld | outputs differing %ld%s\n",
	       total ? (double)agree / total : 0, rp, rs, rs / rp, kept, drafted, differ,
	       lookup ? " | lookup on in both" : "");
	printf("LIVE (a cold job without the draft, its suggestion then grown to its end, "
	       "caches cleared): %.0f tokens, plain %.1f tok/s, the draft joining %.1f tok/s "
	       "(its prompt: %.0f tokens a growth), x%.2f\n",
	       live_tok / reps, live_tok * 1e3 / live_plain, live_tok * 1e3 / live_spec,
	       live_dpre / reps / n_prompts, live_plain / live_spec);
	/* A plain step's ms against the target's verify step (decode time less
	 * the drafting, per step) and the drafting per step and per drafted
	 * token, each as a share of a plain step. */
	double plain_step = steps_plain ? ms_plain / steps_plain : 0;
	double verify_step = steps_spec ? (ms_spec - ms_drafting) / steps_spec : 0;
	printf("PROFILE: plain %.1f ms a step, %.2f tok/step | with draft: %.2f tok/step, "
	       "verify %.1f ms a step (x%.2f plain), %.0f%% of steps drafted, %.2f drafts a "
	       "drafting step, drafting %.1f ms a drafting step (%.2f ms a drafted token: "
	       "x%.3f a plain step), %.0f%% of decode time\n",
	       plain_step, steps_plain ? tok_plain / steps_plain : 0,
	       steps_spec ? tok_spec / steps_spec : 0, verify_step,
	       plain_step ? verify_step / plain_step : 0,
	       steps_spec ? 100.0 * steps_drafting / steps_spec : 0,
	       steps_drafting ? drafted / steps_drafting : 0,
	       steps_drafting ? ms_drafting / steps_drafting : 0,
	       drafted ? ms_drafting / drafted : 0,
	       drafted && plain_step ? ms_drafting / drafted / plain_step : 0,
	       ms_spec ? 100.0 * ms_drafting / ms_spec : 0);
	engine_free(plain);
	engine_free(spec);
	model_free(t);
	model_free(d);
	return differ ? 1 : 0;
}
