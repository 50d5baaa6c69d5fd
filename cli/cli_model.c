/*
 * cli_model.c - `infill logits`, `infill generate`, `infill bench`: the
 * engine from the command line (infer.h), for checks against llama.cpp and
 * for speed figures.
 *
 *   infill logits   --model M --prompt-file F [--top K] [-t N] [--backend B] [--kv-type T]
 *   infill generate --model M --prompt-file F -n N [-t N] [--backend B] [--kv-type T]
 *   infill bench    --model M [-p 512] [-n 64] [-t N] [--backend B] [--kv-type T] [--json]
 *
 * logits/generate tokenize the file with special tokens parsed and add BOS
 * when the vocabulary says so (as llama.cpp does). bench measures the read
 * bandwidth first (a multi-threaded read of a buffer of 4x the last-level
 * cache, at least 1 GiB), then prompt and decode speed, and reports decode
 * against the bound: decode_tps x weight bytes read per token / bandwidth.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "infer.h"

struct opts {
	const char *model, *prompt_file, *backend;
	bool kv_f32;  /* --kv-type f32 */
	bool kv_q8_0; /* --kv-type q8_0 */
	int top, n, p, threads;
	bool json;
};

static int usage(const char *cmd)
{
	if (!strcmp(cmd, "logits"))
		fprintf(stderr, "usage: infill logits --model M --prompt-file F [--top K] [-t "
		                "THREADS] [--backend cpu|cuda|auto] [--kv-type f16|f32|q8_0]\n");
	else if (!strcmp(cmd, "generate"))
		fprintf(stderr, "usage: infill generate --model M --prompt-file F -n N [-t "
		                "THREADS] [--backend cpu|cuda|auto] [--kv-type f16|f32|q8_0]\n");
	else
		fprintf(stderr, "usage: infill bench --model M [-p 512] [-n 64] [-t THREADS] "
		                "[--backend cpu|cuda|auto] [--kv-type f16|f32|q8_0] [--json]\n");
	return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return 1;
		else if (!strcmp(a, "--json"))
			o->json = true;
		else if (!strcmp(a, "--model") && has)
			o->model = argv[++i];
		else if (!strcmp(a, "--prompt-file") && has)
			o->prompt_file = argv[++i];
		else if (!strcmp(a, "--backend") && has)
			o->backend = argv[++i];
		else if (!strcmp(a, "--kv-type") && has) {
			const char *kv = argv[++i];
			if (strcmp(kv, "f16") && strcmp(kv, "f32") && strcmp(kv, "q8_0")) {
				fprintf(stderr,
				        "infill %s: unknown KV cache type %s (f16, f32, q8_0)\n",
				        argv[0], kv);
				return -1;
			}
			o->kv_f32 = !strcmp(kv, "f32");
			o->kv_q8_0 = !strcmp(kv, "q8_0");
		} else if (!strcmp(a, "--top") && has)
			o->top = atoi(argv[++i]);
		else if (!strcmp(a, "-n") && has)
			o->n = atoi(argv[++i]);
		else if (!strcmp(a, "-p") && has)
			o->p = atoi(argv[++i]);
		else if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && has)
			o->threads = atoi(argv[++i]);
		else {
			fprintf(stderr, "infill %s: unknown or incomplete option %s\n", argv[0], a);
			return -1;
		}
	}
	return 0;
}

static int parse_backend(const char *s, enum infer_backend *out)
{
	if (!s || !strcmp(s, "auto"))
		*out = INFER_BACKEND_AUTO;
	else if (!strcmp(s, "cpu"))
		*out = INFER_BACKEND_CPU;
	else if (!strcmp(s, "cuda"))
		*out = INFER_BACKEND_CUDA;
	else
		return -1;
	return 0;
}

static struct model *open_model(const struct opts *o, const char *cmd, int32_t kv_tokens)
{
	struct model_params mp = model_params_default();
	mp.path = o->model;
	mp.n_threads = o->threads;
	mp.kv_tokens = kv_tokens;
	if (parse_backend(o->backend, &mp.backend)) {
		fprintf(stderr, "infill %s: unknown backend %s (cpu, cuda, auto)\n", cmd,
		        o->backend);
		return NULL;
	}
	mp.kv_f32 = o->kv_f32;
	mp.kv_q8_0 = o->kv_q8_0;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) fprintf(stderr, "infill %s: %s\n", cmd, err.message);
	return m;
}

/* Reads the prompt file, tokenizes it (special tokens parsed, BOS as the vocabulary says). */
static int32_t *tokenize_file(struct model *m, const char *path, int *n_out, const char *cmd)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "infill %s: cannot open %s: %s\n", cmd, path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap);
	size_t r;
	while (text && (r = fread(text + len, 1, cap - len, f)) > 0) {
		len += r;
		if (len == cap) {
			char *t = realloc(text, cap * 2);
			if (!t) {
				free(text);
				text = NULL;
				break;
			}
			text = t;
			cap *= 2;
		}
	}
	fclose(f);
	if (!text) {
		fprintf(stderr, "infill %s: out of memory\n", cmd);
		return NULL;
	}
	const struct tokenizer *tok = model_tokenizer(m);
	const struct tokenizer_special *sp = tokenizer_special(tok);
	bool bos = sp->add_bos && sp->bos >= 0;
	int n = tokenizer_encode(tok, text, len, true, NULL, 0);
	int32_t *ids = n >= 0 ? malloc(((size_t)n + 2) * sizeof *ids) : NULL;
	if (!ids) {
		free(text);
		fprintf(stderr, "infill %s: tokenizing failed\n", cmd);
		return NULL;
	}
	if (bos) ids[0] = sp->bos;
	tokenizer_encode(tok, text, len, true, ids + (bos ? 1 : 0), (size_t)n);
	free(text);
	*n_out = n + (bos ? 1 : 0);
	if (*n_out == 0) {
		fprintf(stderr, "infill %s: the prompt is empty\n", cmd);
		free(ids);
		return NULL;
	}
	return ids;
}

static void print_ids(const int32_t *ids, int n)
{
	putchar('[');
	for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", ids[i]);
	putchar(']');
}

static void print_json_string(const char *s, size_t len)
{
	putchar('"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			printf("\\n");
		else if (c == '\t')
			printf("\\t");
		else if (c == '\r')
			printf("\\r");
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

int cli_logits(int argc, char **argv)
{
	struct opts o = { .top = 10 };
	int pr = parse(argc, argv, &o);
	if (pr == 1) return usage("logits"), 0;
	if (pr || !o.model || !o.prompt_file || o.top < 0) return usage("logits");
	struct model *m = open_model(&o, "logits", 0);
	if (!m) return 1;
	int n;
	int32_t *ids = tokenize_file(m, o.prompt_file, &n, "logits");
	if (!ids) {
		model_free(m);
		return 1;
	}
	int32_t nv = model_info(m)->n_vocab;
	float *logits = malloc((size_t)nv * sizeof *logits);
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	struct infill_error err;
	int rc = logits && s ? model_eval(m, s, ids, n, logits, &err) : -ENOMEM;
	if (rc) {
		fprintf(stderr, "infill logits: %s\n",
		        rc == -ENOMEM ? "out of memory" : err.message);
	} else {
		int k = o.top < nv ? o.top : nv;
		double lse = sample_logsumexp(logits, nv);
		printf("{\"token_ids\":");
		print_ids(ids, n);
		printf(",\"top\":[");
		/* Top-K by repeated selection, masking each pick (K is small). */
		for (int i = 0; i < k; i++) {
			int32_t best = sample_greedy(logits, nv);
			printf("%s[%d,%.9g]", i ? "," : "", best, logits[best]);
			logits[best] = -INFINITY;
		}
		printf("],\"logsumexp\":%.9g,\"n_tokens\":%d}\n", lse, n);
	}
	kv_seq_free(s);
	free(logits);
	free(ids);
	model_free(m);
	return rc ? 1 : 0;
}

int cli_generate(int argc, char **argv)
{
	struct opts o = { .n = 16 };
	int pr = parse(argc, argv, &o);
	if (pr == 1) return usage("generate"), 0;
	if (pr || !o.model || !o.prompt_file || o.n < 0) return usage("generate");
	struct model *m = open_model(&o, "generate", 0);
	if (!m) return 1;
	int n;
	int32_t *ids = tokenize_file(m, o.prompt_file, &n, "generate");
	if (!ids) {
		model_free(m);
		return 1;
	}
	int32_t nv = model_info(m)->n_vocab;
	float *logits = malloc((size_t)nv * sizeof *logits);
	int32_t *out = malloc(((size_t)o.n + 1) * sizeof *out);
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	struct infill_error err;
	int rc = logits && out && s ? model_eval(m, s, ids, n, logits, &err) : -ENOMEM;
	int produced = 0;
	while (rc == 0 && produced < o.n) {
		int32_t t = sample_greedy(logits, nv);
		out[produced++] = t;
		if (produced < o.n) rc = model_eval(m, s, &t, 1, logits, &err);
	}
	if (rc) {
		fprintf(stderr, "infill generate: %s\n",
		        rc == -ENOMEM ? "out of memory" : err.message);
	} else {
		const struct tokenizer *tok = model_tokenizer(m);
		size_t cap = tokenizer_max_piece(tok) + 8, tlen = 0;
		char *text = malloc(cap * ((size_t)produced + 1) + 8), *piece = malloc(cap);
		struct tokenizer_detok d;
		tokenizer_detok_init(&d, false);
		for (int i = 0; text && piece && i < produced; i++) {
			int w = tokenizer_detok_push(tok, &d, out[i], piece, cap);
			if (w > 0) {
				memcpy(text + tlen, piece, (size_t)w);
				tlen += (size_t)w;
			}
		}
		if (text) tlen += tokenizer_detok_flush(&d, text + tlen);
		printf("{\"prompt_ids\":");
		print_ids(ids, n);
		printf(",\"ids\":");
		print_ids(out, produced);
		printf(",\"text\":");
		print_json_string(text ? text : "", text ? tlen : 0);
		printf("}\n");
		free(text);
		free(piece);
	}
	kv_seq_free(s);
	free(out);
	free(logits);
	free(ids);
	model_free(m);
	return rc ? 1 : 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cli_bench(int argc, char **argv)
{
	struct opts o = { .p = 512, .n = 64 };
	int pr = parse(argc, argv, &o);
	if (pr == 1) return usage("bench"), 0;
	if (pr || !o.model || o.p < 1 || o.n < 1) return usage("bench");
	int threads = o.threads > 0 ? o.threads : infer_physical_cores();

	/* Bandwidth first, so its buffer is gone before the model is mapped. */
	long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
	size_t bw_bytes = llc > 0 ? (size_t)llc * 4 : 0;
	if (bw_bytes < ((size_t)1 << 30)) bw_bytes = (size_t)1 << 30;
	double gbs_cpu = 0, gbs = infer_read_bandwidth_gbs(threads, bw_bytes, &gbs_cpu);
	if (gbs <= 0) {
		fprintf(stderr, "infill bench: cannot allocate %zu bytes for the bandwidth test\n",
		        bw_bytes);
		return 1;
	}
	o.threads = threads;
	struct model *m = open_model(&o, "bench", o.p + o.n + 8);
	if (!m) return 1;
	const struct model_info *mi = model_info(m);
	int32_t nv = mi->n_vocab;
	int32_t *ids = malloc((size_t)o.p * sizeof *ids);
	float *logits = malloc((size_t)nv * sizeof *logits);
	struct infill_error err;
	int rc = ids && logits ? 0 : -ENOMEM;
	uint64_t x = 12345;
	for (int i = 0; ids && i < o.p; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		ids[i] = (int32_t)((x >> 33) % (uint64_t)(nv > 32000 ? 32000 : nv));
	}
	/* Warm-up, as llama-bench does its own: the whole prompt once, so every
	 * weight page is mapped and the KV pages and a prompt's buffers have
	 * been touched before timing (a server's steady state; their first
	 * touch cost a 512-token prompt ~4%). */
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	if (!rc) rc = model_eval(m, s, ids, o.p, logits, &err);
	kv_seq_free(s);
	s = kv_seq_new(model_kv_pool(m));
	double t0 = now_s(), c0 = infer_process_cpu_seconds(), t_prompt = 0, t_decode = 0;
	if (!rc) rc = model_eval(m, s, ids, o.p, logits, &err);
	t_prompt = now_s() - t0;
	double c_prompt = infer_process_cpu_seconds() - c0;
	t0 = now_s();
	c0 = infer_process_cpu_seconds();
	for (int i = 0; !rc && i < o.n; i++) {
		int32_t t = sample_greedy(logits, nv);
		rc = model_eval(m, s, &t, 1, logits, &err);
	}
	t_decode = now_s() - t0;
	double c_decode = infer_process_cpu_seconds() - c0;
	kv_seq_free(s);
	if (rc) {
		fprintf(stderr, "infill bench: %s\n",
		        rc == -ENOMEM ? "out of memory" : err.message);
	} else {
		double ptps = o.p / t_prompt, dtps = o.n / t_decode;
		/* The bound counts what a step must read: every weight but the embedding
		 * table, and the keys and values of the context (the mean context of
		 * the decode steps; ~15% of a Q4_0 1.3B step after a 512-token prompt). */
		double kv_es = o.kv_q8_0 ? 34.0 / 32 : o.kv_f32 ? 4 : 2;
		double kv_bytes = 2.0 * mi->n_layer * mi->n_head_kv * mi->head_dim * kv_es *
		                  (o.p + (o.n + 1) / 2.0);
		double step_bytes = (double)mi->decode_read_bytes + kv_bytes;
		double frac = dtps * step_bytes / (gbs * 1e9);
		/* The same per CPU-second the threads got (a busy shared machine's
		 * wall-clock figures mostly measure the other work). */
		double ptps_c = o.p / (c_prompt / threads), dtps_c = o.n / (c_decode / threads);
		double frac_c = gbs_cpu > 0 ? dtps_c * step_bytes / (gbs_cpu * 1e9) : 0;
		if (o.json) {
			printf("{\"model\":");
			print_json_string(o.model, strlen(o.model));
			printf(",\"backend\":");
			print_json_string(mi->backend_name, strlen(mi->backend_name));
			printf(",\"kv_type\":\"%s\"", o.kv_q8_0  ? "q8_0"
			                              : o.kv_f32 ? "f32"
			                                         : "f16");
			printf(",\"threads\":%d,\"n_prompt\":%d,\"n_decode\":%d,\"prompt_tps\":%."
			       "2f,"
			       "\"decode_tps\":%.2f,\"read_gbs\":%.2f,\"decode_bytes_per_token\":%"
			       ".0f,\"decode_weight_bytes\":%llu,"
			       "\"decode_bound_fraction\":%.3f,\"cpu_time\":{\"prompt_tps\":%.2f,"
			       "\"decode_tps\":%.2f,\"read_gbs\":%.2f,\"decode_bound_fraction\":%."
			       "3f}}\n",
			       threads, o.p, o.n, ptps, dtps, gbs, step_bytes,
			       (unsigned long long)mi->decode_read_bytes, frac, ptps_c, dtps_c,
			       gbs_cpu, frac_c);
		} else {
			printf("model      %s\nbackend    %s, KV cache %s\n", o.model,
			       mi->backend_name,
			       o.kv_q8_0  ? "q8_0"
			       : o.kv_f32 ? "f32"
			                  : "f16");
			printf("prompt     %d tokens in %.3f s: %.2f tok/s\n", o.p, t_prompt, ptps);
			printf("decode     %d tokens in %.3f s: %.2f tok/s\n", o.n, t_decode, dtps);
			printf("bandwidth  %.2f GB/s read (%d threads, %zu MiB buffer)\n", gbs,
			       threads, bw_bytes >> 20);
			printf("bound      %.2f GB of weights + %.2f GB of keys and values per "
			       "token "
			       "-> %.2f tok/s at that bandwidth; decode reached %.0f%%\n",
			       mi->decode_read_bytes / 1e9, kv_bytes / 1e9, gbs * 1e9 / step_bytes,
			       frac * 100);
			printf("per CPU-second the threads got (for a busy machine): prompt %.2f "
			       "tok/s, decode %.2f tok/s,\n"
			       "           read %.2f GB/s, decode reached %.0f%% of that bound\n",
			       ptps_c, dtps_c, gbs_cpu, frac_c * 100);
		}
	}
	free(ids);
	free(logits);
	model_free(m);
	return rc ? 1 : 0;
}
