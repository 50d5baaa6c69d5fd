/*
 * test_tokenizer_load.c - tokenizer_load on small GGUF files built in memory:
 * errors that name the bad key, FIM styles and special ids found by text or
 * by tokenizer.ggml.fim_* keys, and byte-exact round trips of random bytes
 * (invalid UTF-8 included) through encode and decode. Needs no testdata.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "harness.h"
#include "tokenizer.h"

/* ---- a metadata-only GGUF v3 writer, just enough for these tests ---- */

struct buf {
	unsigned char *p;
	size_t n, cap;
	uint64_t n_kv;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void put_u32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}
static void put_u64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void put_str(struct buf *b, const char *s)
{
	put_u64(b, strlen(s));
	put(b, s, strlen(s));
}

static void kv_str(struct buf *b, const char *k, const char *v)
{
	put_str(b, k), put_u32(b, GGUF_TYPE_STRING), put_str(b, v), b->n_kv++;
}

static void kv_u32(struct buf *b, const char *k, uint32_t v)
{
	put_str(b, k), put_u32(b, GGUF_TYPE_UINT32), put_u32(b, v), b->n_kv++;
}

static void kv_strs(struct buf *b, const char *k, const char *const *v, size_t n)
{
	put_str(b, k), put_u32(b, GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_STRING), put_u64(b, n);
	for (size_t i = 0; i < n; i++) put_str(b, v[i]);
	b->n_kv++;
}

static void kv_i32s(struct buf *b, const char *k, const int32_t *v, size_t n)
{
	put_str(b, k), put_u32(b, GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_INT32), put_u64(b, n);
	put(b, v, 4 * n);
	b->n_kv++;
}

static void kv_f32s(struct buf *b, const char *k, const float *v, size_t n)
{
	put_str(b, k), put_u32(b, GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_FLOAT32), put_u64(b, n);
	put(b, v, 4 * n);
	b->n_kv++;
}

/* Header + body, padded to 32 bytes. The caller frees *out. */
static size_t finish(struct buf *body, unsigned char **out)
{
	struct buf f = { 0 };
	put(&f, "GGUF", 4);
	put_u32(&f, 3);
	put_u64(&f, 0);
	put_u64(&f, body->n_kv);
	put(&f, body->p, body->n);
	static const unsigned char zeros[32];
	put(&f, zeros, (32 - f.n % 32) % 32);
	free(body->p);
	*out = f.p;
	return f.n;
}

static struct tokenizer *load_mem(struct buf *body, struct infill_error *err, unsigned char **mem,
                                  struct gguf_file **gf)
{
	size_t n = finish(body, mem);
	*gf = gguf_open_memory(*mem, n, err);
	if (!*gf) {
		fprintf(stderr, "gguf: %s\n", err->message);
		return NULL;
	}
	return tokenizer_load(*gf, err);
}

/* The 256 byte-level characters of GPT-2 as UTF-8 strings, in byte order. */
static void byte_level_tokens(char tok[256][4])
{
	unsigned n = 0;
	for (unsigned b = 0; b < 256; b++) {
		uint32_t cp;
		if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
		    (b >= 0xAE && b <= 0xFF))
			cp = b;
		else
			cp = 256 + n++;
		memset(tok[b], 0, 4);
		if (cp < 0x80) {
			tok[b][0] = (char)cp;
		} else {
			tok[b][0] = (char)(0xC0 | cp >> 6);
			tok[b][1] = (char)(0x80 | (cp & 63));
		}
	}
}

TEST(errors_name_the_key)
{
	struct infill_error err = { 0 };
	unsigned char *mem;
	struct gguf_file *gf;
	struct buf b = { 0 };
	kv_str(&b, "general.architecture", "llama");
	CHECK(load_mem(&b, &err, &mem, &gf) == NULL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK_STR_EQ(err.key, "tokenizer.ggml.model");
	gguf_close(gf);
	free(mem);

	b = (struct buf){ 0 };
	kv_str(&b, "tokenizer.ggml.model", "bert");
	CHECK(load_mem(&b, &err, &mem, &gf) == NULL);
	CHECK_INT_EQ(err.code, -ENOTSUP);
	CHECK_STR_EQ(err.key, "tokenizer.ggml.model");
	CHECK(strstr(err.message, "bert") != NULL); /* says which value it found */
	gguf_close(gf);
	free(mem);

	/* gpt2 without merges */
	static const char *const toks[] = { "a", "b", "ab" };
	b = (struct buf){ 0 };
	kv_str(&b, "tokenizer.ggml.model", "gpt2");
	kv_strs(&b, "tokenizer.ggml.tokens", toks, 3);
	CHECK(load_mem(&b, &err, &mem, &gf) == NULL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK_STR_EQ(err.key, "tokenizer.ggml.merges");
	gguf_close(gf);
	free(mem);

	/* token_type of the wrong length */
	static const int32_t types[] = { 1, 1 };
	static const float scores[] = { 0, 0, 0 };
	b = (struct buf){ 0 };
	kv_str(&b, "tokenizer.ggml.model", "llama");
	kv_strs(&b, "tokenizer.ggml.tokens", toks, 3);
	kv_f32s(&b, "tokenizer.ggml.scores", scores, 3);
	kv_i32s(&b, "tokenizer.ggml.token_type", types, 2);
	CHECK(load_mem(&b, &err, &mem, &gf) == NULL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK_STR_EQ(err.key, "tokenizer.ggml.token_type");
	gguf_close(gf);
	free(mem);

	/* SPM without scores */
	b = (struct buf){ 0 };
	kv_str(&b, "tokenizer.ggml.model", "llama");
	kv_strs(&b, "tokenizer.ggml.tokens", toks, 3);
	CHECK(load_mem(&b, &err, &mem, &gf) == NULL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK_STR_EQ(err.key, "tokenizer.ggml.scores");
	gguf_close(gf);
	free(mem);
}

/* A byte-level BPE vocabulary: the 256 byte tokens, one merge "a b", and
 * the extra tokens given (type 3 control). */
static struct tokenizer *tiny_bpe(const char *const *extra, size_t n_extra, const char *pre,
                                  unsigned char **mem, struct gguf_file **gf)
{
	static char bt[256][4];
	byte_level_tokens(bt);
	const char *toks[300];
	int32_t types[300];
	size_t n = 0;
	for (unsigned i = 0; i < 256; i++) toks[n] = bt[i], types[n++] = 1;
	toks[n] = "ab", types[n++] = 1;
	for (size_t i = 0; i < n_extra; i++)
		toks[n] = extra[i],
		types[n++] = strncmp(extra[i], "<", 1) && strncmp(extra[i], "\xE2", 1) ? 1 : 3;
	static const char *const merges[] = { "a b" };
	struct buf b = { 0 };
	kv_str(&b, "tokenizer.ggml.model", "gpt2");
	kv_str(&b, "tokenizer.ggml.pre", pre);
	kv_strs(&b, "tokenizer.ggml.tokens", toks, n);
	kv_i32s(&b, "tokenizer.ggml.token_type", types, n);
	kv_strs(&b, "tokenizer.ggml.merges", merges, 1);
	if (n_extra > 3)
		kv_u32(&b, "tokenizer.ggml.fim_pre_token_id", 257 + 3); /* override by key */
	struct infill_error err = { 0 };
	struct tokenizer *t = load_mem(&b, &err, mem, gf);
	if (!t) fprintf(stderr, "load: %s\n", err.message);
	return t;
}

TEST(fim_styles)
{
	unsigned char *mem;
	struct gguf_file *gf;
	static const char *const qwen[] = { "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
		                            "<|endoftext|>",  "<|file_sep|>",   "<|repo_name|>",
		                            "<|fim_pad|>" };
	struct tokenizer *t = tiny_bpe(qwen, 3, "qwen2", &mem, &gf);
	REQUIRE(t);
	CHECK_INT_EQ(tokenizer_pre(t), TOKENIZER_PRE_QWEN2);
	CHECK_INT_EQ(tokenizer_fim_style(t), TOKENIZER_FIM_QWEN_STARCODER);
	CHECK_INT_EQ(tokenizer_special(t)->fim_prefix, 257);
	CHECK_INT_EQ(tokenizer_special(t)->fim_suffix, 258);
	CHECK_INT_EQ(tokenizer_special(t)->fim_middle, 259);
	tokenizer_free(t);
	gguf_close(gf);
	free(mem);

	t = tiny_bpe(qwen, 7, "llama-bpe", &mem, &gf);
	REQUIRE(t);
	CHECK_INT_EQ(tokenizer_pre(t), TOKENIZER_PRE_LLAMA3);
	/* fim_pre_token_id names <|endoftext|>: the key wins over the text */
	CHECK_INT_EQ(tokenizer_special(t)->fim_prefix, 260);
	CHECK(tokenizer_is_eog(t, 260)); /* <|endoftext|> */
	CHECK(tokenizer_is_eog(t, 261)); /* <|file_sep|> */
	CHECK(tokenizer_is_eog(t, 262)); /* <|repo_name|> */
	CHECK(tokenizer_is_eog(t, 263)); /* <|fim_pad|> */
	CHECK(!tokenizer_is_eog(t, 258));
	tokenizer_free(t);
	gguf_close(gf);
	free(mem);

	static const char *const codellama[] = { "\xE2\x96\x81<PRE>", "\xE2\x96\x81<SUF>",
		                                 "\xE2\x96\x81<MID>", "\xE2\x96\x81<EOT>" };
	t = tiny_bpe(codellama, 4, "gpt2", &mem, &gf);
	REQUIRE(t);
	/* (the key sets fim_prefix to id 260, ▁<EOT>, which is not ▁<PRE>) */
	CHECK_INT_EQ(tokenizer_special(t)->eot, 260);
	CHECK(tokenizer_is_eog(t, 260));
	tokenizer_free(t);
	gguf_close(gf);
	free(mem);
	t = tiny_bpe(codellama, 3, "gpt2", &mem, &gf);
	REQUIRE(t);
	CHECK_INT_EQ(tokenizer_fim_style(t), TOKENIZER_FIM_CODELLAMA);
	CHECK_INT_EQ(tokenizer_special(t)->fim_middle, 259);
	tokenizer_free(t);
	gguf_close(gf);
	free(mem);

	t = tiny_bpe(NULL, 0, "gpt2", &mem, &gf);
	REQUIRE(t);
	CHECK_INT_EQ(tokenizer_fim_style(t), TOKENIZER_FIM_NONE);
	int32_t ids[8];
	CHECK_INT_EQ(tokenizer_encode(t, "ab", 2, false, ids, 8), 1);
	CHECK_INT_EQ(ids[0], 256);
	CHECK_INT_EQ(tokenizer_encode(t, "ba", 2, false, ids, 8), 2);
	tokenizer_free(t);
	gguf_close(gf);
	free(mem);
}

/* llama3 (ignore_merges): a word that is itself a token is not merged;
 * other pre-tokenizers build it from the merges. */
TEST(llama3_ignore_merges)
{
	unsigned char *mem;
	struct gguf_file *gf;
	static const char *const extra[] = { "ba" }; /* a normal token no merge produces */
	int32_t ids[8];
	struct tokenizer *t = tiny_bpe(extra, 1, "llama-bpe", &mem, &gf);
	REQUIRE(t);
	CHECK_INT_EQ(tokenizer_encode(t, "ba", 2, false, ids, 8), 1);
	CHECK_INT_EQ(ids[0], 257);
	tokenizer_free(t);
	gguf_close(gf);
	free(mem);
	t = tiny_bpe(extra, 1, "qwen2", &mem, &gf);
	REQUIRE(t);
	CHECK_INT_EQ(tokenizer_encode(t, "ba", 2, false, ids, 8), 2);
	CHECK_INT_EQ(ids[0], 'b'); /* token i is the byte-level character of byte i */
	CHECK_INT_EQ(ids[1], 'a');
	tokenizer_free(t);
	gguf_close(gf);
	free(mem);
}

/* Random bytes (invalid UTF-8 included) survive encode + decode unchanged
 * with every pre-tokenizer: byte-level BPE loses nothing. */
TEST(random_bytes_roundtrip)
{
	static const char *const pres[] = { "gpt2", "starcoder", "llama3", "qwen2",
		                            "deepseek-coder" };
	uint64_t seed = 0x9E3779B97F4A7C15ull;
	static char text[4096], dec[8192];
	static int32_t ids[8192];
	for (size_t k = 0; k < sizeof pres / sizeof pres[0]; k++) {
		unsigned char *mem;
		struct gguf_file *gf;
		static const char *const ctl[] = { "<|endoftext|>" };
		struct tokenizer *t = tiny_bpe(ctl, 1, pres[k], &mem, &gf);
		REQUIRE(t);
		for (int round = 0; round < 200; round++) {
			size_t n = (size_t)(round * 37 % 4000);
			for (size_t i = 0; i < n; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				unsigned r = (unsigned)(seed >> 33);
				/* mostly ASCII code-ish bytes, some UTF-8 and junk */
				text[i] = r % 4 ? " \n\tab1'(=_<|"[r % 12] : (char)(r >> 8);
			}
			int m = tokenizer_encode(t, text, n, true, ids, 8192);
			REQUIRE(m >= 0 && m <= 8192);
			size_t dl = 0;
			for (int i = 0; i < m; i++)
				dl += tokenizer_decode_token(t, ids[i], true, dec + dl,
				                             sizeof dec - dl);
			CHECK(dl == n && memcmp(dec, text, n) == 0);
		}
		tokenizer_free(t);
		gguf_close(gf);
		free(mem);
	}
}

TEST_MAIN()
