/*
 * fuzz_tokenizer.c - libFuzzer target for the tokenizer on arbitrary bytes
 * (the embedded model's byte-level BPE). Every input must encode to ids
 * inside the vocabulary, count the same as it encodes, and (without special
 * tokens parsed) decode back to exactly its bytes, malformed UTF-8 included
 * (for SentencePiece, U+2581 comes back as the space it stands for).
 * The first byte picks parse_special and a small output cap (truncation).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Says which property broke, then crashes (the fuzzer keeps the input). */
#define FAIL(what)                                             \
	do {                                                   \
		fprintf(stderr, "fuzz-tokenizer: %s\n", what); \
		__builtin_trap();                              \
	} while (0)

/* Loaded once for the process (the fuzzer calls us millions of times) and
 * freed at exit: a static the program only wrote was a store the compiler
 * may drop, and LeakSanitizer then saw the file as leaked. */
static struct gguf_file *file;
static struct tokenizer *tok;

static void unload(void)
{
	tokenizer_free(tok);
	gguf_close(file);
}

static void load_once(void)
{
	if (tok) return;
	atexit(unload);
	struct infill_error err;
	struct gguf_file *f = file = gguf_open(INFILL_FUZZ_MODEL, &err);
	if (!f) {
		fprintf(stderr, "fuzz-tokenizer: %s\n", err.message);
		abort();
	}
	tok = tokenizer_load(f, &err);
	if (!tok) {
		fprintf(stderr, "fuzz-tokenizer: %s\n", err.message);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	load_once();
	if (size == 0) return 0;
	bool special = data[0] & 1;
	size_t cap = (data[0] >> 1) & 7; /* 0..7: a cap smaller than the count truncates */
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	int n = tokenizer_count(tok, text, len, special);
	if (n < 0) return 0; /* out of memory */
	int32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
	if (!ids) return 0;
	if (tokenizer_encode(tok, text, len, special, ids, (size_t)n) != n) FAIL("encode != count");
	int32_t few[8];
	if (tokenizer_encode(tok, text, len, special, few, cap) != n)
		FAIL("capped encode != count");
	for (size_t i = 0; i < cap && i < (size_t)n; i++)
		if (few[i] != ids[i]) FAIL("capped ids differ");
	int32_t nv = tokenizer_vocab_size(tok);
	for (int i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= nv) FAIL("id outside the vocabulary");
	if (!special) {
		/* the bytes come back, each token's piece in turn */
		char *back = malloc(2 * len + 2 * tokenizer_max_piece(tok) + 1);
		size_t k = 0;
		for (int i = 0; back && i < n; i++) {
			size_t piece = tokenizer_decode_token(tok, ids[i], false, back + k,
			                                      tokenizer_max_piece(tok));
			k += piece;
			if (k > 2 * len + tokenizer_max_piece(tok))
				FAIL("decoded far longer than the input");
		}
		/* SentencePiece writes a space as U+2581, so a U+2581 in the text
		 * comes back as a space: the one change allowed */
		char *want = malloc(len + 1);
		size_t w = 0;
		for (size_t i = 0; want && i < len; i++) {
			if (tokenizer_kind(tok) == TOKENIZER_KIND_SPM && i + 2 < len &&
			    !memcmp(text + i, "\xE2\x96\x81", 3)) {
				want[w++] = ' ';
				i += 2;
			} else {
				want[w++] = text[i];
			}
		}
		if (back && want && (k != w || memcmp(back, want, w)))
			FAIL("decode(encode(x)) != x");
		free(want);
		free(back);
	}
	free(ids);
	return 0;
}
