/*
 * cli_tokenize.c - `infill tokenize --model M [--bos] [--no-special]`.
 *
 * Reads text from stdin and prints its token ids, space-separated, on one
 * line. The text is tokenized as it is: no BOS unless --bos; special tokens
 * written in the text (<｜fim▁begin｜>, <|endoftext|>, ...) are parsed as
 * single ids unless --no-special.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gguf.h"
#include "tokenizer.h"

static void usage(void)
{
	fprintf(stderr, "usage: infill tokenize --model FILE.gguf [--bos] [--no-special] < text\n");
}

static char *read_stdin(size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	if (!buf) return NULL;
	for (;;) {
		if (n == cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n, stdin);
		n += r;
		if (r == 0) break;
	}
	if (ferror(stdin)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

int cli_tokenize(int argc, char **argv)
{
	const char *model = NULL;
	bool bos = false, special = true;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
			model = argv[++i];
		} else if (strcmp(argv[i], "--bos") == 0) {
			bos = true;
		} else if (strcmp(argv[i], "--no-special") == 0) {
			special = false;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage();
			return 0;
		} else {
			fprintf(stderr, "infill tokenize: unknown argument '%s'\n", argv[i]);
			usage();
			return 2;
		}
	}
	if (!model) {
		usage();
		return 2;
	}
	struct infill_error err = { 0 };
	struct gguf_file *f = gguf_open(model, &err);
	if (!f) {
		fprintf(stderr, "infill tokenize: %s\n", err.message);
		return 1;
	}
	struct tokenizer *t = tokenizer_load(f, &err);
	gguf_close(f); /* the tokenizer keeps copies of what it needs */
	if (!t) {
		fprintf(stderr, "infill tokenize: %s: %s\n", model, err.message);
		return 1;
	}
	int status = 1;
	size_t len = 0;
	int32_t *ids = NULL;
	char *text = read_stdin(&len);
	if (!text) {
		fprintf(stderr, "infill tokenize: cannot read stdin: %s\n", strerror(errno));
		goto done;
	}
	int n = tokenizer_count(t, text, len, special);
	if (n < 0) {
		fprintf(stderr, "infill tokenize: out of memory\n");
		goto done;
	}
	ids = malloc(((size_t)n + 1) * sizeof *ids);
	if (!ids) {
		fprintf(stderr, "infill tokenize: out of memory\n");
		goto done;
	}
	n = tokenizer_encode(t, text, len, special, ids, (size_t)n);
	int32_t b = tokenizer_special(t)->bos;
	if (bos && b >= 0) printf("%d%s", b, n > 0 ? " " : "");
	for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
	printf("\n");
	status = fflush(stdout) == 0 ? 0 : 1;
done:
	free(ids);
	free(text);
	tokenizer_free(t);
	return status;
}
