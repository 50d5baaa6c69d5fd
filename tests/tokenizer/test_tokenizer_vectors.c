/*
 * test_tokenizer_vectors.c - the tokenizer against reference ids.
 *
 * - ../shared/testdata/vocab/ggml-vocab-*.gguf with their .inp/.out vectors
 *   (Hugging Face ids, no BOS, special tokens not parsed): every test must match.
 * - the prompts of ../shared/testdata/models/tiny-dsc-reference.json
 *   (llama.cpp ids, BOS first, special tokens parsed).
 * - our own SentencePiece BPE vocabulary trained by python3-sentencepiece
 *   (tests/tokenizer/data/, made by tools/gen_spm_vocab.py) with its ids.
 * Paths come from INFILL_TESTDATA and INFILL_TOKDATA; when the shared
 * testdata is missing the test prints SKIP and exits 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "harness.h"
#include "tokenizer.h"

static const char *testdata(void)
{
	const char *d = getenv("INFILL_TESTDATA");
	return d ? d : "../shared/testdata";
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = 0;
		*len = (size_t)n;
	}
	return buf;
}

static struct tokenizer *load(const char *path, struct gguf_file **gf)
{
	struct gguf_error err = {{0}};
	*gf = gguf_open(path, &err);
	if (!*gf) {
		fprintf(stderr, "%s: %s\n", path, err.message);
		return NULL;
	}
	struct tokenizer *t = tokenizer_load(*gf, &err);
	if (!t)
		fprintf(stderr, "%s: %s\n", path, err.message);
	return t;
}

/* Runs one .gguf + .inp + .out set; returns the number of failing tests. */
static int run_vectors(const char *gguf_path, const char *inp_path, const char *out_path, int *n_tests)
{
	struct gguf_file *gf;
	struct tokenizer *t = load(gguf_path, &gf);
	size_t inp_len, out_len;
	char *inp = read_file(inp_path, &inp_len);
	char *out = read_file(out_path, &out_len);
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
		if (!m)
			break;
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
			if (e == q)
				break;
			want[n_want++] = (int32_t)v;
			q = e;
		}
		int n = tokenizer_encode(t, p, len, false, ids, 4096);
		bool ok = n == n_want && memcmp(ids, want, (size_t)n * sizeof *ids) == 0;
		if (!ok) {
			failed++;
			fprintf(stderr, "%s test %d (\"%.*s\"):\n  want", gguf_path, *n_tests,
				(int)(len > 60 ? 60 : len), p);
			for (int i = 0; i < n_want; i++)
				fprintf(stderr, " %d", want[i]);
			fprintf(stderr, "\n  got ");
			for (int i = 0; i < n && i < 4096; i++)
				fprintf(stderr, " %d", ids[i]);
			fprintf(stderr, "\n");
		}
		/* Decoding the ids gives the text back (these vocabularies have no
		 * normalizer); SPM adds the dummy prefix space. */
		char dec[16384];
		size_t dl = 0;
		for (int i = 0; i < n && dl + 1024 < sizeof dec; i++)
			dl += tokenizer_decode_token(t, ids[i], false, dec + dl, sizeof dec - dl);
		size_t skip = (tokenizer_kind(t) == TOKENIZER_KIND_SPM && dl > 0 && dec[0] == ' ') ? 1 : 0;
		if (n > 0 && (dl - skip != len || memcmp(dec + skip, p, len) != 0)) {
			failed++;
			fprintf(stderr, "%s test %d: decode does not give the text back\n", gguf_path, *n_tests);
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

/* ---- tiny-dsc-reference.json: a JSON string and an int array, found by key ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
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
		o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 63)), o[2] = (char)(0x80 | (c & 63));
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
			for (int k = 0; k < 4; k++)
				u = u * 16 + (uint32_t)hexval(*p++);
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
	char *json = read_file(path, &len);
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
			while (*q == ',' || *q == ' ')
				q++;
		}
		got[0] = sp->bos;
		int n = tokenizer_encode(t, text, tl, true, got + 1, 8191);
		bool ok = n + 1 == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0;
		if (!ok) {
			fprintf(stderr, "prompt %d: got %d tokens, want %d\n", n_prompts, n + 1, nw);
			for (int i = 0; i < nw && i < n + 1; i++)
				if (got[i] != want[i]) {
					fprintf(stderr, "  first difference at %d: %d vs %d\n", i, got[i], want[i]);
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
		if (filter && !strstr(tc->name, filter))
			continue;
		int fl = 0;
		tc->fn(&fl);
		printf("%s %s\n", fl ? "FAIL" : "ok  ", tc->name);
		fflush(stdout);
		fl ? failed++ : passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
