/*
 * test_tokenizer_vectors.c - the tokenizer against reference ids.
 *
 * - ../shared/testdata/vocab/ggml-vocab-*.gguf with their .inp/.out vectors
 *   (Hugging Face ids, no BOS, special tokens not parsed): every test must match.
 * - the prompts of ../shared/testdata/models/tiny-dsc-reference.json
 *   (llama.cpp ids, BOS first, special tokens parsed).
 * - our own SentencePiece BPE vocabulary trained by python3-sentencepiece
 *   (tests/infer/tokenizer_data/, made by tools/gen_spm_vocab.py) with its ids.
 * Paths come from INFILL_TESTDATA and INFILL_TOKDATA; when the shared
 * testdata is missing the test prints SKIP and exits 77.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "harness.h"
#include "tokenizer.h"

/* 1 when s[0..n) is whole, valid UTF-8. */
static int unicode_check(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = u[i] < 0x80             ? 1
		           : (u[i] & 0xE0) == 0xC0 ? 2
		           : (u[i] & 0xF0) == 0xE0 ? 3
		           : (u[i] & 0xF8) == 0xF0 ? 4
		                                   : 0;
		if (!l || i + l > n) return 0;
		for (size_t k = 1; k < l; k++)
			if ((u[i + k] & 0xC0) != 0x80) return 0;
		i += l;
	}
	return 1;
}

static struct tokenizer *load(const char *path, struct gguf_file **gf)
{
	struct infill_error err = { 0 };
	*gf = gguf_open(path, &err);
	if (!*gf) {
		fprintf(stderr, "%s: %s\n", path, err.message);
		return NULL;
	}
	struct tokenizer *t = tokenizer_load(*gf, &err);
	if (!t) fprintf(stderr, "%s: %s\n", path, err.message);
	return t;
}

/* Runs one .gguf + .inp + .out set; returns the number of failing tests. */
static int run_vectors(const char *gguf_path, const char *inp_path, const char *out_path,
                       int *n_tests)
{
	struct gguf_file *gf;
	struct tokenizer *t = load(gguf_path, &gf);
	size_t inp_len, out_len;
	char *inp = test_read_file(inp_path, &inp_len);
	char *out = test_read_file(out_path, &out_len);
	int failed = 0;
	*n_tests = 0;
	if (!t || !inp || !out) {
		fprintf(stderr, "cannot read %s / %s / %s\n", gguf_path, inp_path, out_path);
		failed = 1000;
		goto done;
	}
	static const char sep[] = "\n__ggml_vocab_test__\n";
	const size_t sep_len = sizeof sep - 1;
	char *p = inp, *end = inp + inp_len;
	char *line = out;
	int32_t ids[4096];
	for (;;) {
		char *m = memmem(p, (size_t)(end - p), sep, sep_len);
		if (!m) break;
		size_t len = (size_t)(m - p);
		char *nl = strchr(line, '\n');
		if (!nl) {
			fprintf(stderr, "%s: fewer lines than tests\n", out_path);
			failed++;
			break;
		}
		*nl = 0;
		int32_t want[4096];
		int n_want = 0;
		for (char *q = line; *q;) {
			char *e;
			long v = strtol(q, &e, 10);
			if (e == q) break;
			want[n_want++] = (int32_t)v;
			q = e;
		}
		int n = tokenizer_encode(t, p, len, false, ids, 4096);
		bool ok = n == n_want && memcmp(ids, want, (size_t)n * sizeof *ids) == 0;
		if (!ok) {
			failed++;
			fprintf(stderr, "%s test %d (\"%.*s\"):\n  want", gguf_path, *n_tests,
			        (int)(len > 60 ? 60 : len), p);
			for (int i = 0; i < n_want; i++) fprintf(stderr, " %d", want[i]);
			fprintf(stderr, "\n  got ");
			for (int i = 0; i < n && i < 4096; i++) fprintf(stderr, " %d", ids[i]);
			fprintf(stderr, "\n");
		}
		/* Decoding the ids gives the text back (these vocabularies have no
		 * normalizer); SPM adds the dummy prefix space. */
		char dec[16384];
		size_t dl = 0;
		for (int i = 0; i < n && dl + 1024 < sizeof dec; i++)
			dl += tokenizer_decode_token(t, ids[i], false, dec + dl, sizeof dec - dl);
		size_t skip = (tokenizer_kind(t) == TOKENIZER_KIND_SPM &&
		               tokenizer_special(t)->add_space_prefix && dl > 0 && dec[0] == ' ')
		                      ? 1
		                      : 0;
		if (n > 0 && (dl - skip != len || memcmp(dec + skip, p, len) != 0)) {
			failed++;
			fprintf(stderr, "%s test %d: decode does not give the text back\n",
			        gguf_path, *n_tests);
		}
		(*n_tests)++;
		p = m + sep_len;
		line = nl + 1;
	}
done:
	tokenizer_free(t);
	gguf_close(gf);
	free(inp);
	free(out);
	return failed;
}

static void vocab_case(int *test_failed_, const char *name)
{
	char g[1024], i[1100], o[1100];
	snprintf(g, sizeof g, "%s/vocab/ggml-vocab-%s.gguf", testdata(), name);
	snprintf(i, sizeof i, "%s.inp", g);
	snprintf(o, sizeof o, "%s.out", g);
	int n_tests;
	int failed = run_vectors(g, i, o, &n_tests);
	CHECK_INT_EQ(failed, 0);
	CHECK_INT_EQ(n_tests, 46);
}

TEST(vocab_deepseek_coder)
{
	vocab_case(test_failed_, "deepseek-coder");
}

TEST(vocab_starcoder)
{
	vocab_case(test_failed_, "starcoder");
}

TEST(vocab_llama_spm)
{
	vocab_case(test_failed_, "llama-spm");
}

/* Our SentencePiece BPE vocabularies (tools/gen_spm_vocab.py), against the
 * ids python3-sentencepiece gave: with and without the dummy prefix. */
static void own_spm_case(int *test_failed_, const char *name)
{
	const char *dir = getenv("INFILL_TOKDATA");
	char g[1024], i[1100], o[1100];
	snprintf(g, sizeof g, "%s/ggml-vocab-%s.gguf", dir ? dir : "tests/infer/tokenizer_data",
	         name);
	snprintf(i, sizeof i, "%s.inp", g);
	snprintf(o, sizeof o, "%s.out", g);
	int n_tests;
	int failed = run_vectors(g, i, o, &n_tests);
	CHECK_INT_EQ(failed, 0);
	CHECK_INT_EQ(n_tests, 54);
}

TEST(vocab_own_spm_prefix)
{
	own_spm_case(test_failed_, "spm-code-prefix");
}

TEST(vocab_own_spm_noprefix)
{
	own_spm_case(test_failed_, "spm-code-noprefix");
}


/* Random bytes, invalid UTF-8 included, survive SPM encode + decode (byte fallback loses nothing). */
TEST(spm_random_bytes_roundtrip)
{
	const char *dir = getenv("INFILL_TOKDATA");
	char g[1024];
	snprintf(g, sizeof g, "%s/ggml-vocab-spm-code-noprefix.gguf",
	         dir ? dir : "tests/infer/tokenizer_data");
	struct gguf_file *gf;
	struct tokenizer *t = load(g, &gf);
	REQUIRE(t);
	uint64_t seed = 12345;
	static char text[2048], dec[8192];
	static int32_t ids[8192];
	for (int round = 0; round < 200; round++) {
		size_t n = (size_t)(round * 41 % 2000);
		for (size_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			unsigned r = (unsigned)(seed >> 33);
			text[i] = r % 4 ? " \n\tdef(x):_<|"[r % 13] : (char)(r >> 8);
		}
		int m = tokenizer_encode(t, text, n, false, ids, 8192);
		REQUIRE(m >= 0 && m <= 8192);
		size_t dl = 0;
		for (int i = 0; i < m; i++)
			dl += tokenizer_decode_token(t, ids[i], false, dec + dl, sizeof dec - dl);
		CHECK(dl == n && memcmp(dec, text, n) == 0);
	}
	tokenizer_free(t);
	gguf_close(gf);
}

/* ---- tiny-dsc-reference.json: a JSON string and an int array, found by key ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static size_t put_utf8(uint32_t c, char *o)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 63));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 63)),
		o[2] = (char)(0x80 | (c & 63));
		return 3;
	}
	o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 63));
	o[2] = (char)(0x80 | (c >> 6 & 63)), o[3] = (char)(0x80 | (c & 63));
	return 4;
}

/* Decodes the JSON string starting at *pp (just after the opening quote) into out. */
static size_t json_string(const char **pp, char *out, size_t cap)
{
	const char *p = *pp;
	size_t n = 0;
	while (*p && *p != '"' && n + 8 < cap) {
		if (*p != '\\') {
			out[n++] = *p++;
			continue;
		}
		p++;
		char c = *p++;
		switch (c) {
		case 'n': out[n++] = '\n'; break;
		case 't': out[n++] = '\t'; break;
		case 'r': out[n++] = '\r'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'u': {
			uint32_t u = 0;
			for (int k = 0; k < 4; k++) u = u * 16 + (uint32_t)hexval(*p++);
			if (u >= 0xD800 && u < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
				uint32_t lo = 0;
				for (int k = 0; k < 4; k++)
					lo = lo * 16 + (uint32_t)hexval(p[2 + k]);
				p += 6;
				u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
			}
			n += put_utf8(u, out + n);
			break;
		}
		default: out[n++] = c; break;
		}
	}
	*pp = p;
	return n;
}

TEST(tiny_dsc_prompts)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/models/tiny-dsc-reference.json", testdata());
	size_t len;
	char *json = test_read_file(path, &len);
	REQUIRE(json);
	char g[1024];
	snprintf(g, sizeof g, "%s/models/tiny-dsc-f32.gguf", testdata());
	struct gguf_file *gf;
	struct tokenizer *t = load(g, &gf);
	REQUIRE(t);
	const struct tokenizer_special *sp = tokenizer_special(t);
	CHECK(sp->add_bos);
	CHECK_INT_EQ(sp->bos, 32013);
	/* The 8 prompts of the first run (the other runs repeat them). */
	const char *p = json;
	int n_prompts = 0;
	static char text[1 << 16];
	static int32_t want[8192], got[8192];
	while (n_prompts < 8 && (p = strstr(p, "\"prompt\":\"")) != NULL) {
		p += strlen("\"prompt\":\"");
		size_t tl = json_string(&p, text, sizeof text);
		const char *q = strstr(p, "\"token_ids\":[");
		REQUIRE(q);
		q += strlen("\"token_ids\":[");
		int nw = 0;
		while (*q && *q != ']' && nw < 8192) {
			char *e;
			want[nw++] = (int32_t)strtol(q, &e, 10);
			q = e;
			while (*q == ',' || *q == ' ') q++;
		}
		got[0] = sp->bos;
		int n = tokenizer_encode(t, text, tl, true, got + 1, 8191);
		bool ok = n + 1 == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0;
		if (!ok) {
			fprintf(stderr, "prompt %d: got %d tokens, want %d\n", n_prompts, n + 1,
			        nw);
			for (int i = 0; i < nw && i < n + 1; i++)
				if (got[i] != want[i]) {
					fprintf(stderr, "  first difference at %d: %d vs %d\n", i,
					        got[i], want[i]);
					break;
				}
		}
		CHECK(ok);
		n_prompts++;
	}
	CHECK_INT_EQ(n_prompts, 8);
	tokenizer_free(t);
	gguf_close(gf);
	free(json);
}


static struct tokenizer *load_vocab(const char *name, struct gguf_file **gf)
{
	char g[1024];
	snprintf(g, sizeof g, "%s/vocab/ggml-vocab-%s.gguf", testdata(), name);
	return load(g, gf);
}

#define FIM_BEGIN         \
	"<\xEF\xBD\x9C"   \
	"fim\xE2\x96\x81" \
	"begin\xEF\xBD\x9C>"
#define FIM_HOLE          \
	"<\xEF\xBD\x9C"   \
	"fim\xE2\x96\x81" \
	"hole\xEF\xBD\x9C>"
#define FIM_END           \
	"<\xEF\xBD\x9C"   \
	"fim\xE2\x96\x81" \
	"end\xEF\xBD\x9C>"
#define DS_BOS              \
	"<\xEF\xBD\x9C"     \
	"begin\xE2\x96\x81" \
	"of\xE2\x96\x81"    \
	"sentence\xEF\xBD\x9C>"

TEST(special_ids_deepseek)
{
	struct gguf_file *gf;
	struct tokenizer *t = load_vocab("deepseek-coder", &gf);
	REQUIRE(t);
	const struct tokenizer_special *sp = tokenizer_special(t);
	CHECK_INT_EQ(tokenizer_vocab_size(t), 32256);
	CHECK_INT_EQ(tokenizer_kind(t), TOKENIZER_KIND_BPE);
	CHECK_INT_EQ(tokenizer_pre(t), TOKENIZER_PRE_DEEPSEEK_CODER);
	CHECK_INT_EQ(sp->bos, 32013);
	CHECK_INT_EQ(sp->eos, 32014);
	CHECK(sp->add_bos);
	CHECK(!sp->add_eos);
	CHECK_INT_EQ(sp->fim_prefix, 32016);
	CHECK_INT_EQ(sp->fim_suffix, 32015);
	CHECK_INT_EQ(sp->fim_middle, 32017);
	CHECK_INT_EQ(sp->eot, 32021); /* <|EOT|> */
	CHECK_INT_EQ(tokenizer_fim_style(t), TOKENIZER_FIM_DEEPSEEK);
	CHECK(tokenizer_is_eog(t, 32014));
	CHECK(tokenizer_is_eog(t, 32021));
	CHECK(!tokenizer_is_eog(t, 32013));
	CHECK(!tokenizer_is_eog(t, 32016));
	CHECK(!tokenizer_is_eog(t, 100));
	CHECK(!tokenizer_is_eog(t, -1));
	CHECK(!tokenizer_is_eog(t, 1 << 30));
	CHECK_INT_EQ(tokenizer_find(t, FIM_HOLE, strlen(FIM_HOLE)), 32015);
	size_t len;
	const char *txt = tokenizer_token_text(t, 32016, &len);
	CHECK(txt && len == strlen(FIM_BEGIN) && memcmp(txt, FIM_BEGIN, len) == 0);
	CHECK(tokenizer_token_text(t, 32256, &len) == NULL);
	CHECK_INT_EQ(tokenizer_token_type(t, 32013), TOKENIZER_TOKEN_CONTROL);
	CHECK_INT_EQ(tokenizer_token_type(t, 32016), TOKENIZER_TOKEN_USER_DEFINED);
	tokenizer_free(t);
	gguf_close(gf);
}

TEST(special_ids_starcoder_spm)
{
	struct gguf_file *gf;
	struct tokenizer *t = load_vocab("starcoder", &gf);
	REQUIRE(t);
	const struct tokenizer_special *sp = tokenizer_special(t);
	CHECK_INT_EQ(tokenizer_pre(t), TOKENIZER_PRE_STARCODER);
	CHECK_INT_EQ(sp->eos, 0);
	CHECK(!sp->add_bos); /* no add_bos_token key: BPE default */
	CHECK_INT_EQ(sp->fim_prefix, 1);
	CHECK_INT_EQ(sp->fim_middle, 2);
	CHECK_INT_EQ(sp->fim_suffix, 3);
	CHECK_INT_EQ(sp->fim_pad, 4);
	CHECK_INT_EQ(sp->fim_repo, 5);
	CHECK_INT_EQ(sp->fim_sep, 6);
	CHECK_INT_EQ(tokenizer_fim_style(t), TOKENIZER_FIM_QWEN_STARCODER);
	CHECK(tokenizer_is_eog(t, 0));
	CHECK(tokenizer_is_eog(t, 4));
	CHECK(tokenizer_is_eog(t, 6));
	CHECK(!tokenizer_is_eog(t, 1));
	tokenizer_free(t);
	gguf_close(gf);

	t = load_vocab("llama-spm", &gf);
	REQUIRE(t);
	sp = tokenizer_special(t);
	CHECK_INT_EQ(tokenizer_kind(t), TOKENIZER_KIND_SPM);
	CHECK_INT_EQ(sp->bos, 1);
	CHECK_INT_EQ(sp->eos, 2);
	CHECK_INT_EQ(sp->unk, 0);
	CHECK(sp->add_bos);
	CHECK(sp->add_space_prefix);
	CHECK_INT_EQ(tokenizer_fim_style(t), TOKENIZER_FIM_NONE);
	CHECK(tokenizer_is_eog(t, 2));
	tokenizer_free(t);
	gguf_close(gf);
}

TEST(parse_special)
{
	struct gguf_file *gf;
	struct tokenizer *t = load_vocab("deepseek-coder", &gf);
	REQUIRE(t);
	int32_t ids[64];
	const char *s = DS_BOS "x";
	/* control token: one id only with parse_special */
	CHECK_INT_EQ(tokenizer_encode(t, s, strlen(s), true, ids, 64), 2);
	CHECK_INT_EQ(ids[0], 32013);
	CHECK_INT_EQ(ids[1], 87);
	CHECK(tokenizer_encode(t, s, strlen(s), false, ids, 64) > 5);
	/* user-defined FIM tokens: always one id */
	const char *fim = FIM_BEGIN "a" FIM_HOLE "b" FIM_END;
	int n = tokenizer_encode(t, fim, strlen(fim), false, ids, 64);
	CHECK_INT_EQ(n, 5);
	CHECK_INT_EQ(ids[0], 32016);
	CHECK_INT_EQ(ids[2], 32015);
	CHECK_INT_EQ(ids[4], 32017);
	/* count without output, and a too-small buffer reports the full count */
	CHECK_INT_EQ(tokenizer_count(t, fim, strlen(fim), false), 5);
	CHECK_INT_EQ(tokenizer_encode(t, fim, strlen(fim), false, ids, 2), 5);
	CHECK_INT_EQ(ids[1], 64); /* "a" */
	tokenizer_free(t);
	gguf_close(gf);

	t = load_vocab("llama-spm", &gf);
	REQUIRE(t);
	/* SPM: a dummy-prefix space after a control token, as llama.cpp does */
	const char *sp_text = "<s>Hello";
	n = tokenizer_encode(t, sp_text, strlen(sp_text), true, ids, 64);
	int32_t want[8];
	int nw = tokenizer_encode(t, "Hello", 5, true, want, 8);
	CHECK_INT_EQ(n, nw + 1);
	CHECK_INT_EQ(ids[0], 1);
	CHECK(n == nw + 1 && memcmp(ids + 1, want, (size_t)nw * sizeof *ids) == 0);
	tokenizer_free(t);
	gguf_close(gf);
}

/* Feeds the ids of text one at a time to the detokenizer and checks every
 * chunk it gives is whole UTF-8 and that the chunks add up to the text. */
static void detok_roundtrip(int *test_failed_, struct tokenizer *t, const char *text)
{
	int32_t ids[512];
	int n = tokenizer_encode(t, text, strlen(text), false, ids, 512);
	REQUIRE(n > 0 && n <= 512);
	struct tokenizer_detok d;
	tokenizer_detok_init(&d, false);
	char out[4096], chunk[1024];
	size_t ol = 0;
	int split_chars = 0;
	for (int i = 0; i < n; i++) {
		size_t raw = tokenizer_decode_token(t, ids[i], false, NULL, 0);
		int w = tokenizer_detok_push(t, &d, ids[i], chunk, sizeof chunk);
		REQUIRE(w >= 0);
		if ((size_t)w != raw) split_chars++;
		CHECK_INT_EQ(unicode_check(chunk, (size_t)w), 1);
		memcpy(out + ol, chunk, (size_t)w);
		ol += (size_t)w;
	}
	ol += tokenizer_detok_flush(&d, out + ol);
	/* SPM: the dummy prefix decodes to a leading space */
	size_t skip =
	        tokenizer_special(t)->add_space_prefix && tokenizer_kind(t) == TOKENIZER_KIND_SPM;
	CHECK_INT_EQ(ol - skip, strlen(text));
	CHECK(memcmp(out + skip, text, ol - skip) == 0);
	CHECK(split_chars > 0); /* the text was chosen so that some character spans tokens */
	/* too small a buffer: refused, nothing changes */
	tokenizer_detok_init(&d, false);
	CHECK_INT_EQ(tokenizer_detok_push(t, &d, ids[0], chunk, 0),
	             tokenizer_decode_token(t, ids[0], false, NULL, 0) ? -ENOBUFS : 0);
}

TEST(detok_streaming)
{
	struct gguf_file *gf;
	struct tokenizer *t = load_vocab("deepseek-coder", &gf);
	REQUIRE(t);
	/* emoji and Khmer are byte tokens in this vocabulary: characters split across ids */
	detok_roundtrip(test_failed_, t,
	                "print('\xF0\x9F\xA6\x99 \xE1\x9E\x80\xE1\x9E\xB6') # \xF0\x9F\x98\x81 ok");
	/* control tokens render only when asked */
	char buf[64];
	CHECK_INT_EQ(tokenizer_decode_token(t, 32013, false, buf, sizeof buf), 0);
	CHECK_INT_EQ(tokenizer_decode_token(t, 32013, true, buf, sizeof buf), strlen(DS_BOS));
	CHECK_INT_EQ(tokenizer_decode_token(t, 32009, false, buf, sizeof buf), 2); /* "ü" */
	CHECK(memcmp(buf, "\xC3\xBC", 2) == 0);
	CHECK(tokenizer_max_piece(t) >= strlen(DS_BOS));
	tokenizer_free(t);
	gguf_close(gf);

	t = load_vocab("llama-spm", &gf);
	REQUIRE(t);
	detok_roundtrip(test_failed_, t,
	                "x = '\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99' and \xE1\x9E\x80\xE1\x9E\xB6");
	tokenizer_free(t);
	gguf_close(gf);
}

int main(void)
{
	char probe[1024];
	snprintf(probe, sizeof probe, "%s/vocab/ggml-vocab-deepseek-coder.gguf", testdata());
	FILE *f = fopen(probe, "rb");
	if (!f) {
		printf("SKIP: %s not found\n", probe);
		return 77;
	}
	fclose(f);
	const char *filter = getenv("TEST_FILTER");
	int passed = 0, failed = 0;
	for (struct test_case *tc = test_cases_head; tc; tc = tc->next) {
		if (filter && !strstr(tc->name, filter)) continue;
		int fl = 0;
		tc->fn(&fl);
		printf("%s %s\n", fl ? "FAIL" : "ok  ", tc->name);
		fflush(stdout);
		fl ? failed++ : passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
