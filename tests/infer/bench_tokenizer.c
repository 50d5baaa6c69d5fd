/*
 * bench_tokenizer.c - tokenizer throughput on real source code (not a test).
 *
 *   bench-tokenizer [--model V.gguf] [--reps N] [FILE...]
 *
 * Reads the files (default: every .py file in /usr/lib/python3.11), then
 * tokenizes the whole text N times on one thread, one tokenizer_encode call
 * per file as the pipeline would call it, and prints MB/s per core and
 * tokens per byte. Default vocabulary: the DeepSeek-Coder test vocabulary.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf.h"
#include "infill_config.h"
#include "tokenizer.h"

struct doc {
	char *text;
	size_t len;
};

static int add_file(struct doc **docs, size_t *n, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) return -1;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)len + 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	struct doc *d = realloc(*docs, (*n + 1) * sizeof *d);
	if (!d) {
		free(buf);
		return -1;
	}
	*docs = d;
	d[(*n)++] = (struct doc){ buf, (size_t)len };
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *model =
	        INFILL_SOURCE_ROOT "/../shared/testdata/vocab/ggml-vocab-deepseek-coder.gguf";
	int reps = 3;
	struct doc *docs = NULL;
	size_t n_docs = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--model") && i + 1 < argc)
			model = argv[++i];
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (add_file(&docs, &n_docs, argv[i]))
			fprintf(stderr, "bench-tokenizer: cannot read %s\n", argv[i]);
	}
	if (!n_docs) {
		const char *dir = "/usr/lib/python3.11";
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			size_t l = strlen(e->d_name);
			if (l > 3 && !strcmp(e->d_name + l - 3, ".py")) {
				char path[4096];
				snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
				add_file(&docs, &n_docs, path);
			}
		}
		if (d) closedir(d);
	}
	if (!n_docs) {
		fprintf(stderr, "bench-tokenizer: no input files\n");
		return 1;
	}
	struct infill_error err = { 0 };
	struct gguf_file *f = gguf_open(model, &err);
	struct tokenizer *t = f ? tokenizer_load(f, &err) : NULL;
	if (!t) {
		fprintf(stderr, "bench-tokenizer: %s: %s\n", model, err.message);
		return 1;
	}
	gguf_close(f);
	size_t bytes = 0;
	for (size_t i = 0; i < n_docs; i++) bytes += docs[i].len;
	size_t cap = bytes + 16;
	int32_t *ids = malloc(cap * sizeof *ids);
	double best = 1e30;
	long long tokens = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		tokens = 0;
		for (size_t i = 0; i < n_docs; i++) {
			int n = tokenizer_encode(t, docs[i].text, docs[i].len, false, ids, cap);
			if (n < 0) {
				fprintf(stderr, "bench-tokenizer: encode failed (%d)\n", n);
				return 1;
			}
			tokens += n;
		}
		double dt = now() - t0;
		if (dt < best) best = dt;
	}
	printf("files %zu, bytes %zu, tokens %lld (%.3f tokens/byte)\n", n_docs, bytes, tokens,
	       (double)tokens / (double)bytes);
	printf("encode: %.3f s best of %d, %.2f MB/s per core, %.0f tokens/s\n", best, reps,
	       (double)bytes / best / 1e6, (double)tokens / best);
	free(ids);
	for (size_t i = 0; i < n_docs; i++) free(docs[i].text);
	free(docs);
	tokenizer_free(t);
	return 0;
}
