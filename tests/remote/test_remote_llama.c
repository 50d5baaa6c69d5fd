/* test_remote_llama.c - greedy output of a real llama-server equals the
 * in-process engine's on the same model and prompt.
 *
 * usage: test-remote-llama MODEL.gguf http://127.0.0.1:PORT
 *
 * For a few FIM prompts: the engine decodes greedily (token healing off, as
 * the remote backend sends it: only a local sampler can heal), and the same
 * prompt, built by fim_prompt_tokens as token ids, goes to the server's
 * /v1/completions through remote/'s client on a libuv loop, streamed, at
 * temperature 0. The texts must be equal up to the first near-tie: a step
 * whose two best tokens are within TIE in log-probability, where the two
 * programs' kernels (AVX2 or AVX-512, each with its own summation order) may
 * fairly pick either. Without a near-tie, the whole texts must be equal.
 * llama_test.py starts the server (and skips, 77, where tools/llamacpp could
 * not build it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "engine.h"
#include "harness.h"
#include "infer.h"
#include "remote.h"

static const char *model_path, *server_url;

struct wait {
	bool done;
	int status;
	char text[4096];
	char message[600];
	int n;
};

static void on_done(void *ud, int status, struct remote_reply *reply,
                    const struct remote_failure *f)
{
	struct wait *w = ud;
	w->done = true;
	w->status = status;
	if (status) {
		snprintf(w->message, sizeof w->message, "%s", f->message);
		return;
	}
	w->n = reply->n;
	if (reply->n) snprintf(w->text, sizeof w->text, "%s", reply->choices[0].text);
}

/* Two logits closer than this are a near-tie: llama.cpp's and our kernels
 * differ by ~1e-3 in logits on this model, so 0.1 leaves wide room while a
 * genuine difference in the math moves far more. */
#define TIE 0.1f

/* Decodes greedily from the prompt (as the engine does, one token a step)
 * and writes to sure[cap] the text of the steps before the first near-tie.
 * Returns the number of sure steps; *tie tells whether a near-tie ended them
 * (else max_tokens or an end-of-generation token did). */
static int greedy_sure_text(struct model *m, const int32_t *toks, int n, int max_tokens, char *sure,
                            size_t cap, bool *tie)
{
	const struct tokenizer *tk = model_tokenizer(m);
	int32_t nv = tokenizer_vocab_size(tk);
	float *logits = malloc((size_t)nv * sizeof *logits); /* owned here */
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	struct infill_error err;
	struct tokenizer_detok d;
	tokenizer_detok_init(&d, false);
	char piece[512];
	size_t len = 0;
	int steps = 0;
	*tie = false;
	sure[0] = 0;
	if (!logits || !s || model_eval(m, s, toks, n, logits, &err)) goto out;
	for (; steps < max_tokens; steps++) {
		int32_t best = sample_greedy(logits, nv);
		float second = -1e30f;
		for (int32_t i = 0; i < nv; i++)
			if (i != best && logits[i] > second) second = logits[i];
		if (logits[best] - second < TIE) {
			*tie = true;
			break;
		}
		if (tokenizer_is_eog(tk, best)) break;
		int k = tokenizer_detok_push(tk, &d, best, piece, sizeof piece);
		if (k < 0 || len + (size_t)k >= cap) break;
		memcpy(sure + len, piece, (size_t)k);
		sure[len += (size_t)k] = 0;
		if (model_eval(m, s, &best, 1, logits, &err)) break;
	}
out:
	kv_seq_free(s);
	free(logits);
	return steps;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void closed(void *ud)
{
	*(bool *)ud = true;
}

TEST(greedy_remote_equals_in_process)
{
	struct infill_error err;
	struct model_params mp = model_params_default();
	mp.path = model_path;
	mp.n_threads = 1;
	mp.kv_bytes = 64u << 20;
	mp.kv_f32 = false;
	struct model *m = model_load(&mp, &err);
	REQUIRE(m);
	struct engine_params ep = engine_params_default();
	struct engine *e = engine_new(m, &ep, &err);
	REQUIRE(e);
	uv_loop_t loop;
	REQUIRE(uv_loop_init(&loop) == 0);
	struct remote_client *c = remote_client_new(&loop, 2);
	REQUIRE(c);

	/* The C prompt's second token is a near-tie (`\t` against `return`,
	 * 0.04 apart in log-probability) on AVX2: llama_test.py runs the server
	 * with flash attention off, which is the engine's math; with it on (the
	 * CPU default) the server writes tabs only. */
	int sure_steps = 0;
	static const char *const prefixes[] = {
		"def add(a, b):\n    ",
		"import os\n\nfor name in os.listdir(path):\n    if ",
		"#include <stdio.h>\n\nint main(void)\n{\n\t",
	};
	static const char *const suffixes[] = { "\n    return total\n", "\n",
		                                "\n\treturn 0;\n}\n" };
	for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++) {
		struct engine_request rq = engine_request_default();
		rq.prefix = prefixes[k];
		rq.prefix_len = strlen(prefixes[k]);
		rq.suffix = suffixes[k];
		rq.suffix_len = strlen(suffixes[k]);
		rq.token_healing = false;
		rq.n_candidates = 1;
		rq.max_tokens = 24;
		rq.max_lines = 0;
		rq.use_cache = false;
		struct engine_result res;
		REQUIRE(engine_run(e, &rq, &res, &err) == 0);
		REQUIRE(res.n_candidates >= 1);

		int32_t *toks = NULL;
		int n = fim_prompt_tokens(model_tokenizer(m), &rq, &toks, NULL, &err);
		REQUIRE(n > 0);
		CHECK_INT_EQ(n, res.prompt_tokens);
		struct remote_endpoint rep = { .url = server_url,
			                       .api = REMOTE_API_OPENAI,
			                       .timeout_ms = 60000 };
		struct remote_query q = { .tokens = toks,
			                  .n_tokens = (size_t)n,
			                  .n = 1,
			                  .max_tokens = 24,
			                  .temperature = 0,
			                  .top_p = 1,
			                  .seed = 1,
			                  .logprobs = true };
		struct wait w = { 0 };
		struct remote_call *call;
		REQUIRE(remote_call_start(c, &rep, &q, on_done, &w, &call) == 0);
		while (!w.done) uv_run(&loop, UV_RUN_ONCE);
		if (w.status) fprintf(stderr, "remote: %s\n", w.message);
		REQUIRE(w.status == 0 && w.n == 1);
		fprintf(stderr, "prompt %zu: engine %s [%s]\n          server %s\n", k,
		        engine_stop_name(res.candidates[0].stop), res.candidates[0].text, w.text);
		fprintf(stderr, "          ids");
		for (int i = 0; i < n; i++) fprintf(stderr, " %d", toks[i]);
		fprintf(stderr, "\n");
		char sure[4096];
		bool tie;
		int k_sure = greedy_sure_text(m, toks, n, 24, sure, sizeof sure, &tie);
		fprintf(stderr, "          %d sure steps%s [%s]\n", k_sure,
		        tie ? " before a near-tie" : "", sure);
		sure_steps += k_sure;
		if (tie) {
			CHECK(starts_with(w.text, sure));
			CHECK(starts_with(res.candidates[0].text, sure));
		} else {
			CHECK_STR_EQ(w.text, res.candidates[0].text);
		}
		free(toks);
		engine_result_finish(&res);
	}
	/* Near-ties must stay rare, or this test would compare nothing. */
	CHECK(sure_steps >= 24);
	bool is_closed = false;
	remote_client_close(c, closed, &is_closed);
	while (!is_closed) uv_run(&loop, UV_RUN_ONCE);
	remote_client_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&loop) == 0);
	engine_free(e);
	model_free(m);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s MODEL URL\n", argv[0]);
		return 2;
	}
	model_path = argv[1];
	server_url = argv[2];
	return test_run_all();
}
