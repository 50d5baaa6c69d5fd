/*
 * refgen.c - llama.cpp's logits for a model file, as the reference JSON
 * that tests/infer/test_reference.c reads (the format of
 * ../shared/testdata/models/tiny-*-reference.json, described in that
 * folder's README).
 *
 * A separate program linked against libllama of the llama.cpp tree that
 * tools/llamacpp builds: none of it enters infill. tools/refgen/make-gemma
 * builds and runs it.
 *
 * usage: refgen PROMPTS OUT.json MODEL:KV [MODEL:KV...]
 *   PROMPTS: "=== name" lines, each followed by its prompt text up to the
 *            next such line (the newline before "===" is not part of it)
 *   MODEL:KV: a model file and the K/V cache type, f32 or f16
 * The first run gets full last-position rows (last_logits); every run gets
 * last_logsumexp, last_top50, per_position, greedy16, greedy16_margin.
 * CPU only, 2 threads, flash attention off, special tokens parsed, BOS as
 * the vocabulary says (add_special = true). Floats are printed %.9g.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

/* which llama.cpp: tools/refgen/make-gemma passes the tree's commit */
#ifndef REFGEN_LLAMA_VERSION
#define REFGEN_LLAMA_VERSION "unknown"
#endif

#define MAX_PROMPTS 32
#define MAX_TOKENS  4096

struct prompt {
	char name[64];
	char *text;
};

static void die(const char *msg)
{
	fprintf(stderr, "refgen: %s\n", msg);
	exit(1);
}

/* Reads the prompts file; returns the count. */
static int read_prompts(const char *path, struct prompt *p)
{
	FILE *f = fopen(path, "rb");
	if (!f) die("cannot open the prompts file");
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	int count = 0;
	char *s = buf;
	while ((s = strstr(s, "=== ")) && count < MAX_PROMPTS) {
		char *eol = strchr(s, '\n');
		if (!eol) break;
		snprintf(p[count].name, sizeof p[count].name, "%.*s", (int)(eol - s - 4), s + 4);
		char *start = eol + 1, *next = strstr(start, "\n=== ");
		size_t len = next ? (size_t)(next - start) : strlen(start);
		if (!next && len && start[len - 1] == '\n') len--;
		p[count].text = malloc(len + 1);
		memcpy(p[count].text, start, len);
		p[count].text[len] = 0;
		count++;
		s = next ? next + 1 : start + len;
	}
	return count;
}

static void put_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", o);
		else if (c == '\t')
			fputs("\\t", o);
		else if (c < 0x20)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

static double logsumexp(const float *x, int n)
{
	double m = x[0];
	for (int i = 1; i < n; i++)
		if (x[i] > m) m = x[i];
	double s = 0;
	for (int i = 0; i < n; i++) s += exp((double)x[i] - m);
	return m + log(s);
}

static int argmax(const float *x, int n)
{
	int b = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[b]) b = i;
	return b;
}

/* Decodes tokens at positions pos.. of sequence 0, logits for all of them. */
static void decode(struct llama_context *ctx, const llama_token *tok, int n, int pos)
{
	struct llama_batch b = llama_batch_init(n, 0, 1);
	for (int i = 0; i < n; i++) {
		b.token[i] = tok[i];
		b.pos[i] = pos + i;
		b.n_seq_id[i] = 1;
		b.seq_id[i][0] = 0;
		b.logits[i] = 1;
	}
	b.n_tokens = n;
	if (llama_decode(ctx, b) != 0) die("llama_decode failed");
	llama_batch_free(b);
}

static void quiet(enum ggml_log_level level, const char *text, void *user)
{
	(void)user;
	if (level >= GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

int main(int argc, char **argv)
{
	if (argc < 4) die("usage: refgen PROMPTS OUT.json MODEL:KV [MODEL:KV...]");
	llama_log_set(quiet, NULL);
	llama_backend_init();
	static struct prompt prompts[MAX_PROMPTS];
	int np = read_prompts(argv[1], prompts);
	if (np == 0) die("no prompts");
	FILE *o = fopen(argv[2], "w");
	if (!o) die("cannot write the output");
	fprintf(o,
	        "{\"generator\": \"tools/refgen/refgen.c against libllama (%s), "
	        "CPU, 2 threads, flash attention off\",\n \"runs\": [\n",
	        REFGEN_LLAMA_VERSION);
	for (int r = 3; r < argc; r++) {
		char path[1024];
		snprintf(path, sizeof path, "%s", argv[r]);
		char *colon = strrchr(path, ':');
		if (!colon) die("MODEL:KV expected");
		*colon = 0;
		const char *kv = colon + 1;
		struct llama_model_params mp = llama_model_default_params();
		mp.n_gpu_layers = 0;
		struct llama_model *model = llama_model_load_from_file(path, mp);
		if (!model) die("cannot load the model");
		const struct llama_vocab *vocab = llama_model_get_vocab(model);
		int nv = llama_vocab_n_tokens(vocab);
		struct llama_context_params cp = llama_context_default_params();
		cp.n_ctx = 1024;
		cp.n_batch = 1024;
		cp.n_ubatch = 1024;
		cp.n_threads = 2;
		cp.n_threads_batch = 2;
		cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
		cp.type_k = cp.type_v = !strcmp(kv, "f16") ? GGML_TYPE_F16 : GGML_TYPE_F32;
		struct llama_context *ctx = llama_init_from_model(model, cp);
		if (!ctx) die("cannot create a context");
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		fprintf(o,
		        "  {\"model_file\": \"%s\", \"kv_cache_type\": \"%s\", \"n_vocab\": %d,\n"
		        "   \"prompts\": [\n",
		        base, kv, nv);
		for (int pi = 0; pi < np; pi++) {
			static llama_token tok[MAX_TOKENS];
			int n = llama_tokenize(vocab, prompts[pi].text,
			                       (int)strlen(prompts[pi].text), tok, MAX_TOKENS, true,
			                       true);
			if (n <= 0) die("tokenize failed");
			llama_memory_clear(llama_get_memory(ctx), true);
			decode(ctx, tok, n, 0);
			fprintf(o, "    {\"name\": \"%s\", \"prompt\": ", prompts[pi].name);
			put_str(o, prompts[pi].text);
			fprintf(o, ", \"n_tokens\": %d, \"token_ids\": [", n);
			for (int i = 0; i < n; i++) fprintf(o, "%s%d", i ? ", " : "", tok[i]);
			fprintf(o, "],\n     \"per_position\": [");
			for (int i = 0; i < n; i++) {
				const float *l = llama_get_logits_ith(ctx, i);
				int a = argmax(l, nv);
				fprintf(o,
				        "%s{\"argmax\": %d, \"max_logit\": %.9g, \"logsumexp\": "
				        "%.9g}",
				        i ? ", " : "", a, l[a], logsumexp(l, nv));
			}
			fprintf(o, "],\n");
			const float *last = llama_get_logits_ith(ctx, n - 1);
			float *row = malloc((size_t)nv * sizeof *row);
			memcpy(row, last, (size_t)nv * sizeof *row);
			if (r == 3) {
				fprintf(o, "     \"last_logits\": [");
				for (int i = 0; i < nv; i++)
					fprintf(o, "%s%.9g", i ? ", " : "", row[i]);
				fprintf(o, "],\n");
			}
			fprintf(o, "     \"last_logsumexp\": %.9g, \"last_top50\": [",
			        logsumexp(row, nv));
			/* top 50 by selection: best first, the lower id first on ties */
			char *taken = calloc((size_t)nv, 1);
			for (int k = 0; k < 50 && k < nv; k++) {
				int b = -1;
				for (int i = 0; i < nv; i++)
					if (!taken[i] && (b < 0 || row[i] > row[b])) b = i;
				taken[b] = 1;
				fprintf(o, "%s[%d, %.9g]", k ? ", " : "", b, row[b]);
			}
			free(taken);
			/* greedy16: the first from the prompt pass, then one decode each */
			int g[16];
			double margin[16];
			int pos = n;
			for (int s = 0; s < 16; s++) {
				const float *l = s == 0 ? row : llama_get_logits_ith(ctx, 0);
				int a = argmax(l, nv);
				float second = -INFINITY;
				for (int i = 0; i < nv; i++)
					if (i != a && l[i] > second) second = l[i];
				g[s] = a;
				margin[s] = (double)l[a] - second;
				if (s < 15) decode(ctx, &g[s], 1, pos++);
			}
			free(row);
			fprintf(o, "],\n     \"greedy16\": [");
			for (int s = 0; s < 16; s++) fprintf(o, "%s%d", s ? ", " : "", g[s]);
			fprintf(o, "], \"greedy16_margin\": [");
			for (int s = 0; s < 16; s++) fprintf(o, "%s%.9g", s ? ", " : "", margin[s]);
			fprintf(o, "]}%s\n", pi + 1 < np ? "," : "");
		}
		fprintf(o, "   ]}%s\n", r + 1 < argc ? "," : "");
		llama_free(ctx);
		llama_model_free(model);
	}
	fprintf(o, " ]\n}\n");
	fclose(o);
	llama_backend_free();
	return 0;
}
