/*
 * test_cli_mkmodel.c - `infill mkmodel` (cli_mkmodel linked in directly):
 * the file it writes opens, has the Llama keys and tensor table of the
 * shape, carries the vocab's tokenizer keys byte for byte, holds weights of
 * the stated distribution, and is reproducible from its seed.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "gguf.h"
#include "harness.h"
#include "infer.h"
#include "quant.h"

static char vocab[4096];

static int run_mkmodel(const char *type, const char *out, const char *seed, const char *extra1,
                       const char *extra2)
{
	char *argv[16] = { "mkmodel",    "--shape",      "tiny",         "--type",    (char *)type,
		           "--vocab",    vocab,          "-o",           (char *)out, "--seed",
		           (char *)seed, (char *)extra1, (char *)extra2, NULL };
	int argc = 11 + (extra1 ? 1 : 0) + (extra2 ? 1 : 0);
	return cli_mkmodel(argc, argv);
}

static void tmp(char *out, const char *tag)
{
	snprintf(out, 256, "/tmp/infill-test-mkmodel-%d-%s.gguf", (int)getpid(), tag);
}

static void check_model(int *test_failed_, const char *path, uint32_t mat_type, uint32_t dim,
                        uint32_t ffn)
{
	struct infill_error err;
	struct gguf_file *f = gguf_open(path, &err);
	if (!f) fprintf(stderr, "%s\n", err.message);
	REQUIRE(f);
	struct gguf_file *v = gguf_open(vocab, &err);
	REQUIRE(v);
	struct gguf_str s;
	uint32_t u;
	float x;
	CHECK(gguf_get_str(f, "general.architecture", &s) && gguf_str_eq(s, "llama"));
	CHECK(gguf_get_u32(f, "llama.block_count", &u) && u == 2);
	CHECK(gguf_get_u32(f, "llama.embedding_length", &u) && u == dim);
	CHECK(gguf_get_u32(f, "llama.attention.head_count", &u) && u == 4);
	CHECK(gguf_get_u32(f, "llama.attention.head_count_kv", &u) && u == 2);
	CHECK(gguf_get_u32(f, "llama.feed_forward_length", &u) && u == ffn);
	CHECK(gguf_get_u32(f, "llama.vocab_size", &u) && u == 32256);
	CHECK(gguf_get_u32(f, "llama.rope.dimension_count", &u) && u == dim / 4);
	CHECK(gguf_get_f32(f, "llama.rope.freq_base", &x) && x == 100000.0f);
	CHECK(gguf_get_f32(f, "llama.rope.scaling.factor", &x) && x == 4.0f);
	CHECK(gguf_get_str(f, "llama.rope.scaling.type", &s) && gguf_str_eq(s, "linear"));
	CHECK(gguf_get_f32(f, "llama.attention.layer_norm_rms_epsilon", &x) && x == 1e-6f);
	/* every tokenizer.* key of the vocab, byte for byte */
	int n_tok_keys = 0;
	for (int64_t i = 0; i < gguf_key_count(v); i++) {
		struct gguf_str k = gguf_key_name(v, i);
		if (k.len < 10 || memcmp(k.ptr, "tokenizer.", 10)) continue;
		char key[256];
		snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
		int64_t j = gguf_find_key(f, key);
		CHECK(j >= 0);
		const void *ra, *rb;
		uint64_t la, lb;
		CHECK(gguf_key_raw(v, i, &ra, &la) && gguf_key_raw(f, j, &rb, &lb));
		CHECK(la == lb && !memcmp(ra, rb, la));
		n_tok_keys++;
	}
	CHECK(n_tok_keys >= 8);
	CHECK_INT_EQ(gguf_tensor_count(f), 3 + 2 * 9);
	const struct gguf_tensor_info *t =
	        gguf_tensor(f, gguf_find_tensor(f, "blk.1.attn_k.weight"));
	REQUIRE(t);
	CHECK(t->ne[0] == dim && t->ne[1] == dim / 2 && t->type == mat_type);
	t = gguf_tensor(f, gguf_find_tensor(f, "blk.0.ffn_down.weight"));
	REQUIRE(t);
	CHECK(t->ne[0] == ffn && t->ne[1] == dim);
	t = gguf_tensor(f, gguf_find_tensor(f, "output_norm.weight"));
	REQUIRE(t);
	CHECK(t->n_dims == 1 && t->type == TENSOR_TYPE_F32);
	double mean = 0;
	for (uint32_t i = 0; i < dim; i++) mean += ((const float *)t->data)[i] / dim;
	CHECK_NEAR(mean, 1.0, 0.02);
	/* the embedding: mean 0, standard deviation 0.02 (within quantization noise) */
	t = gguf_tensor(f, gguf_find_tensor(f, "token_embd.weight"));
	REQUIRE(t && t->type == mat_type && t->ne[1] == 32256);
	float *row = malloc(dim * sizeof *row);
	double s1 = 0, s2 = 0;
	uint64_t rb = tensor_type_row_size(t->type, dim);
	for (int r = 0; r < 2000; r++) {
		CHECK_INT_EQ(
		        tensor_row_dequantize(t->type, (const uint8_t *)t->data + r * rb, row, dim),
		        0);
		for (uint32_t i = 0; i < dim; i++) {
			s1 += row[i];
			s2 += (double)row[i] * row[i];
		}
	}
	double n = 2000.0 * dim;
	CHECK_NEAR(s1 / n, 0.0, 0.001);
	CHECK_NEAR(sqrt(s2 / n), 0.02, 0.002);
	free(row);
	gguf_close(v);
	gguf_close(f);
}

TEST(tiny_types)
{
	char p[256];
	static const struct {
		const char *name;
		uint32_t type;
	} types[] = { { "f32", TENSOR_TYPE_F32 },      { "f16", TENSOR_TYPE_F16 },
		      { "bf16", TENSOR_TYPE_BF16 },    { "q8_0", TENSOR_TYPE_Q8_0 },
		      { "q4_0", TENSOR_TYPE_Q4_0 },    { "q4_1", TENSOR_TYPE_Q4_1 },
		      { "q5_0", TENSOR_TYPE_Q5_0 },    { "q5_1", TENSOR_TYPE_Q5_1 },
		      { "iq4_nl", TENSOR_TYPE_IQ4_NL } };
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		tmp(p, types[i].name);
		CHECK_INT_EQ(run_mkmodel(types[i].name, p, "7", NULL, NULL), 0);
		check_model(test_failed_, p, types[i].type, 64, 160);
		unlink(p);
	}
}

/* The model at path on the CPU, one thread, 4 MB of KV; NULL after a
 * message where it does not load. */
static struct model *load_cpu(const char *path)
{
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.backend = INFER_BACKEND_CPU;
	mp.n_threads = 1;
	mp.kv_bytes = 4u << 20;
	struct infill_error err;
	struct model *m = model_load(&mp, &err);
	if (!m) fprintf(stderr, "model_load %s: %s\n", path, err.message);
	return m;
}

/* The model loads and a forward pass gives finite logits (the type's kernels run). */
static void check_runs(int *test_failed_, const char *path)
{
	struct infill_error err;
	struct model *m = load_cpu(path);
	REQUIRE(m);
	int32_t nv = model_info(m)->n_vocab, ids[3] = { 32013, 1000, 2000 };
	float *logits = malloc((size_t)nv * sizeof *logits);
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	CHECK_INT_EQ(model_eval(m, s, ids, 3, logits, &err), 0);
	int finite = 0;
	for (int32_t i = 0; i < nv; i++) finite += isfinite(logits[i]) != 0;
	CHECK_INT_EQ(finite, nv);
	kv_seq_free(s);
	free(logits);
	model_free(m);
}

/* K-quants and IQ4_XS need rows of 256: a widened tiny shape uses them everywhere. */
TEST(tiny_k_quants)
{
	char p[256];
	tmp(p, "q4k");
	static const struct {
		const char *name;
		uint32_t type;
	} types[] = { { "q2_k", TENSOR_TYPE_Q2_K }, { "q3_k", TENSOR_TYPE_Q3_K },
		      { "q4_k", TENSOR_TYPE_Q4_K }, { "q5_k", TENSOR_TYPE_Q5_K },
		      { "q6_k", TENSOR_TYPE_Q6_K }, { "iq4_xs", TENSOR_TYPE_IQ4_XS } };
	char *argv[] = { "mkmodel", "--shape", "tiny",  "--type", "q4_k",  "--vocab", vocab,
		         "-o",      p,         "--dim", "256",    "--ffn", "512",     NULL };
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		argv[4] = (char *)types[i].name;
		CHECK_INT_EQ(cli_mkmodel(13, argv), 0);
		check_model(test_failed_, p, types[i].type, 256, 512);
		check_runs(test_failed_, p);
	}
	unlink(p);
}

/* Rows that 256 does not divide fall back as llama-quantize does (FFN 288: ffn_down). */
TEST(k_quant_fallbacks_as_llama_cpp)
{
	char p[256];
	tmp(p, "fb");
	static const struct {
		const char *name;
		uint32_t down;
	} cases[] = { { "q4_k", TENSOR_TYPE_Q5_0 },
		      { "q5_k", TENSOR_TYPE_Q5_1 },
		      { "q6_k", TENSOR_TYPE_Q8_0 },
		      { "q3_k", TENSOR_TYPE_Q4_0 },
		      { "iq4_xs", TENSOR_TYPE_IQ4_NL } };
	char *argv[] = { "mkmodel", "--shape", "tiny",  "--type", "q4_k",  "--vocab", vocab,
		         "-o",      p,         "--dim", "256",    "--ffn", "288",     NULL };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		argv[4] = (char *)cases[i].name;
		CHECK_INT_EQ(cli_mkmodel(13, argv), 0);
		struct infill_error err;
		struct gguf_file *f = gguf_open(p, &err);
		REQUIRE(f);
		const struct gguf_tensor_info *t =
		        gguf_tensor(f, gguf_find_tensor(f, "blk.0.ffn_down.weight"));
		REQUIRE(t);
		CHECK_INT_EQ(t->type, cases[i].down);
		t = gguf_tensor(f, gguf_find_tensor(f, "blk.0.ffn_up.weight"));
		REQUIRE(t);
		CHECK(t->type != cases[i].down); /* rows of 256: the type itself */
		gguf_close(f);
		check_runs(test_failed_, p);
	}
	unlink(p);
}

TEST(seeded)
{
	char a[256], b[256], c[256];
	tmp(a, "sa");
	tmp(b, "sb");
	tmp(c, "sc");
	CHECK_INT_EQ(run_mkmodel("q8_0", a, "42", NULL, NULL), 0);
	CHECK_INT_EQ(run_mkmodel("q8_0", b, "42", NULL, NULL), 0);
	CHECK_INT_EQ(run_mkmodel("q8_0", c, "43", NULL, NULL), 0);
	size_t na, nb, nc;
	char *pa = test_read_file(a, &na), *pb = test_read_file(b, &nb),
	     *pc = test_read_file(c, &nc);
	REQUIRE(pa && pb && pc);
	CHECK(na == nb && !memcmp(pa, pb, na));
	CHECK(na == nc && memcmp(pa, pc, na) != 0);
	free(pa);
	free(pb);
	free(pc);
	unlink(a);
	unlink(b);
	unlink(c);
}

TEST(usage_errors)
{
	char p[256];
	tmp(p, "usage");
	CHECK_INT_EQ(run_mkmodel("q8_k", p, "1", NULL, NULL), 2); /* activations only */
	CHECK_INT_EQ(run_mkmodel("f32", p, "x", NULL, NULL), 2);
	CHECK_INT_EQ(run_mkmodel("f32", p, "1", "--heads", "5"), 2); /* 64 does not split into 5 */
	CHECK_INT_EQ(run_mkmodel("f32", p, "1", "--bogus", "1"), 2);
	CHECK_INT_EQ(run_mkmodel("f32", p, "1", "--pad-vocab", "0"), 2);
	char *argv[] = { "mkmodel", "--shape", "tiny", NULL };
	CHECK_INT_EQ(cli_mkmodel(3, argv), 2);
	char *argv2[] = { "mkmodel", "--shape",           "tiny", "--type", "f32",
		          "--vocab", "/nonexistent.gguf", "-o",   p,        NULL };
	CHECK_INT_EQ(cli_mkmodel(9, argv2), 1);
	CHECK(access(p, F_OK) != 0);
}

/* Each family's shape: its keys and tensors as llama.cpp's converter writes
 * them (biases, no gate, tied output, head size), and infill loads and runs
 * the file. */
TEST(families)
{
	static const struct {
		const char *shape, *arch;
		bool qkv_bias, other_bias, gate;
		uint32_t head_dim, q_dim;
	} fams[] = {
		{ "tiny-qwen2", "qwen2", true, false, true, 16, 64 },
		{ "tiny-starcoder2", "starcoder2", true, true, false, 16, 64 },
		{ "tiny-gemma", "gemma", false, false, true, 32, 128 },
	};
	for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
		char p[256];
		tmp(p, fams[i].shape);
		char *argv[] = { "mkmodel", "--shape", (char *)fams[i].shape,
			         "--type",  "q8_0",    "--vocab",
			         vocab,     "-o",      p,
			         NULL };
		CHECK_INT_EQ(cli_mkmodel(9, argv), 0);
		struct infill_error err;
		struct gguf_file *f = gguf_open(p, &err);
		REQUIRE(f);
		struct gguf_str s;
		CHECK(gguf_get_str(f, "general.architecture", &s) && gguf_str_eq(s, fams[i].arch));
		char key[96];
		uint32_t u;
		snprintf(key, sizeof key, "%s.attention.key_length", fams[i].arch);
		CHECK(gguf_get_u32(f, key, &u) == !strcmp(fams[i].arch, "gemma"));
		CHECK(gguf_find_tensor(f, "output.weight") < 0); /* all three tie the output head */
		CHECK((gguf_find_tensor(f, "blk.1.attn_k.bias") >= 0) == fams[i].qkv_bias);
		CHECK((gguf_find_tensor(f, "blk.1.ffn_down.bias") >= 0) == fams[i].other_bias);
		CHECK((gguf_find_tensor(f, "output_norm.bias") >= 0) == fams[i].other_bias);
		CHECK((gguf_find_tensor(f, "blk.0.ffn_gate.weight") >= 0) == fams[i].gate);
		int64_t q = gguf_find_tensor(f, "blk.0.attn_q.weight");
		REQUIRE(q >= 0);
		CHECK_INT_EQ(gguf_tensor(f, q)->ne[1], fams[i].q_dim);
		gguf_close(f);

		struct model *m = load_cpu(p);
		REQUIRE(m);
		CHECK_STR_EQ(model_info(m)->arch, fams[i].arch);
		CHECK_INT_EQ(model_info(m)->head_dim, fams[i].head_dim);
		int32_t nv = model_info(m)->n_vocab;
		float *logits = malloc((size_t)nv * sizeof *logits);
		int32_t ids[3] = { 100, 200, 300 };
		struct kv_seq *sq = kv_seq_new(model_kv_pool(m));
		CHECK_INT_EQ(model_eval(m, sq, ids, 3, logits, &err), 0);
		bool finite = true;
		for (int32_t v = 0; v < nv; v++) finite = finite && isfinite(logits[v]);
		CHECK(finite);
		kv_seq_free(sq);
		free(logits);
		model_free(m);
		unlink(p);
	}
}

/* The logits after each of ids[0..i], i < n, into out[n][n_vocab] (one
 * token a forward). Returns the vocabulary size, or 0 when the model does
 * not load. */
static int32_t logits_along(const char *path, const int32_t *ids, int n, float **out)
{
	struct infill_error err;
	struct model *m = load_cpu(path);
	if (!m) return 0;
	int32_t nv = model_info(m)->n_vocab;
	*out = malloc((size_t)n * (size_t)nv * sizeof **out);
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	for (int i = 0; i < n && *out; i++)
		if (model_eval(m, s, ids + i, 1, *out + (size_t)i * (size_t)nv, &err)) nv = 0;
	kv_seq_free(s);
	model_free(m);
	return *out ? nv : 0;
}

static int run_grow(const char *from, const char *out, const char *perturb)
{
	char *argv[] = { "mkmodel",   "--from",    (char *)from,    "--type",   "q8_0", "--dim",
		         "128",       "--ffn",     "256",           "--layers", "4",    "-o",
		         (char *)out, "--perturb", (char *)perturb, NULL };
	return cli_mkmodel(15, argv);
}

/* --from: the model grown wider (twice the heads, residual and FFN) and
 * deeper computes its source's logits, up to float rounding, where its
 * further layers add nothing; with --perturb they move them. */
TEST(a_grown_model_computes_its_source)
{
	char src[256], grown[256], moved[256];
	tmp(src, "src");
	tmp(grown, "grown");
	tmp(moved, "moved");
	REQUIRE(run_mkmodel("q8_0", src, "3", NULL, NULL) == 0);
	REQUIRE(run_grow(src, grown, "0") == 0);
	REQUIRE(run_grow(src, moved, "0.5") == 0);

	struct infill_error err;
	struct gguf_file *f = gguf_open(grown, &err);
	REQUIRE(f);
	uint32_t u;
	float eps;
	CHECK(gguf_get_u32(f, "llama.embedding_length", &u) && u == 128);
	CHECK(gguf_get_u32(f, "llama.block_count", &u) && u == 4);
	CHECK(gguf_get_u32(f, "llama.attention.head_count", &u) && u == 8);
	CHECK(gguf_get_u32(f, "llama.attention.head_count_kv", &u) && u == 4);
	CHECK(gguf_get_u32(f, "llama.rope.dimension_count", &u) && u == 16); /* the source's */
	CHECK(gguf_get_f32(f, "llama.attention.layer_norm_rms_epsilon", &eps) && eps == 0.5e-6f);
	CHECK(gguf_find_key(f, "tokenizer.ggml.tokens") >= 0);
	gguf_close(f);
	/* the further layers write only the source's 64 dims of the residual,
	 * perturbed or not: the rest stays zero, as the final norm needs */
	f = gguf_open(moved, &err);
	REQUIRE(f);
	const char *writers[] = { "blk.3.attn_output.weight", "blk.2.ffn_down.weight" };
	for (int w = 0; w < 2; w++) {
		const struct gguf_tensor_info *t = gguf_tensor(f, gguf_find_tensor(f, writers[w]));
		REQUIRE(t && t->ne[1] == 128);
		float *row = malloc((size_t)t->ne[0] * sizeof *row);
		uint64_t rb = tensor_type_row_size(t->type, t->ne[0]);
		double live = 0, past = 0;
		for (int64_t r = 0; r < t->ne[1]; r++) {
			REQUIRE(tensor_row_dequantize(t->type, (const uint8_t *)t->data + r * rb,
			                              row, t->ne[0]) == 0);
			for (int64_t i = 0; i < t->ne[0]; i++)
				*(r < 64 ? &live : &past) += fabs(row[i]);
		}
		CHECK(live > 0);
		CHECK(past == 0);
		free(row);
	}
	gguf_close(f);

	enum { N = 6 };
	const int32_t ids[N] = { 32013, 1000, 2000, 77, 4242, 9 };
	float *a = NULL, *b = NULL, *c = NULL;
	int32_t nv = logits_along(src, ids, N, &a);
	REQUIRE(nv > 0 && logits_along(grown, ids, N, &b) == nv &&
	        logits_along(moved, ids, N, &c) == nv);
	double worst = 0, moved_by = 0;
	int same_top = 0;
	for (int i = 0; i < N; i++) {
		const float *la = a + (size_t)i * nv, *lb = b + (size_t)i * nv,
		            *lc = c + (size_t)i * nv;
		int32_t ta = 0, tb = 0;
		for (int32_t v = 0; v < nv; v++) {
			worst = fmax(worst, fabs(la[v] - lb[v]));
			moved_by = fmax(moved_by, fabs(la[v] - lc[v]));
			ta = la[v] > la[ta] ? v : ta;
			tb = lb[v] > lb[tb] ? v : tb;
		}
		same_top += ta == tb;
	}
	fprintf(stderr, "grown: logits within %.2g of the source's; perturbed: %.2g\n", worst,
	        moved_by);
	CHECK(worst < 1e-4);
	CHECK_INT_EQ(same_top, N);
	CHECK(moved_by > 100 * 1e-4);
	free(a);
	free(b);
	free(c);
	unlink(src);
	unlink(grown);
	unlink(moved);
}

/* What --from cannot grow gets one message and exit status 2, no file. */
/* --pad-vocab: N unused tokens after the vocabulary's, as a family's larger
 * models pad theirs. The model computes the unpadded one's logits, and 0
 * for each padding token (its output row is zero). */
TEST(a_padded_vocabulary_adds_unused_tokens_and_changes_nothing_else)
{
	char plain[256], padded[256];
	tmp(plain, "unpadded");
	tmp(padded, "padded");
	REQUIRE(run_mkmodel("q8_0", plain, "3", NULL, NULL) == 0);
	REQUIRE(run_mkmodel("q8_0", padded, "3", "--pad-vocab", "64") == 0);
	const int32_t ids[] = { 1, 50, 900, 7, 3000, 12 };
	enum { N = sizeof ids / sizeof ids[0] };
	float *a = NULL, *b = NULL;
	int32_t na = logits_along(plain, ids, N, &a), nb = logits_along(padded, ids, N, &b);
	CHECK_INT_EQ(nb, na + 64);
	double worst = 0, pad = 0;
	for (int i = 0; na && nb == na + 64 && i < N; i++) {
		for (int32_t v = 0; v < na; v++)
			worst = fmax(worst, fabs(a[(size_t)i * na + v] - b[(size_t)i * nb + v]));
		for (int32_t v = na; v < nb; v++) pad = fmax(pad, fabs(b[(size_t)i * nb + v]));
	}
	printf("padded by 64: largest logit change %g, largest padding logit %g\n", worst, pad);
	CHECK(worst == 0 && pad == 0);
	struct model *m = load_cpu(padded);
	REQUIRE(m);
	const struct tokenizer *t = model_tokenizer(m);
	size_t len = 0;
	const char *text = tokenizer_token_text(t, na + 5, &len);
	CHECK(len == strlen("[PAD32261]") && !memcmp(text, "[PAD32261]", len));
	CHECK_INT_EQ(tokenizer_token_type(t, na + 5), TOKENIZER_TOKEN_UNUSED);
	struct model *u = load_cpu(plain); /* the vocabulary's own tokens unchanged */
	REQUIRE(u);
	for (int32_t v = 0; v < na; v++) {
		size_t lu = 0;
		const char *tu = tokenizer_token_text(model_tokenizer(u), v, &lu);
		text = tokenizer_token_text(t, v, &len);
		if (len != lu || (len && memcmp(text, tu, len)) ||
		    tokenizer_token_type(t, v) != tokenizer_token_type(model_tokenizer(u), v)) {
			CHECK(!"a token of the vocabulary changed");
			break;
		}
	}
	model_free(u);
	model_free(m);
	free(a), free(b);
	unlink(plain), unlink(padded);
}

TEST(growing_refuses_what_it_cannot_grow)
{
	char src[256], q2[256], out[256];
	tmp(src, "gsrc");
	tmp(q2, "gq2");
	tmp(out, "gout");
	REQUIRE(run_mkmodel("q8_0", src, "3", NULL, NULL) == 0);
	char *narrower[] = { "mkmodel", "--from", src,  "--type", "q8_0",
		             "--dim",   "32",     "-o", out,      NULL };
	CHECK_INT_EQ(cli_mkmodel(9, narrower), 2);
	/* heads of 32 where the source's are of 16 */
	char *heads[] = { "mkmodel", "--from",  src, "--type", "q8_0", "--dim",
		          "128",     "--heads", "4", "-o",     out,    NULL };
	CHECK_INT_EQ(cli_mkmodel(11, heads), 2);
	char *shallower[] = { "mkmodel",  "--from", src,  "--type", "q8_0",
		              "--layers", "1",      "-o", out,      NULL };
	CHECK_INT_EQ(cli_mkmodel(9, shallower), 2);
	char *with_shape[] = { "mkmodel", "--from", src,  "--shape", "tiny",
		               "--type",  "q8_0",   "-o", out,       NULL };
	CHECK_INT_EQ(cli_mkmodel(9, with_shape), 2);
	char *with_pad[] = { "mkmodel", "--from", src,  "--pad-vocab", "64",
		             "--type",  "q8_0",   "-o", out,           NULL };
	CHECK_INT_EQ(cli_mkmodel(9, with_pad), 2);
	char *missing[] = { "mkmodel", "--from", "/nonexistent.gguf", "--type", "q8_0", "-o",
		            out,       NULL };
	CHECK_INT_EQ(cli_mkmodel(7, missing), 2);
	char *qwen[] = { "mkmodel", "--shape", "tiny-qwen2", "--type", "q8_0",
		         "--vocab", vocab,     "-o",         q2,       NULL };
	REQUIRE(cli_mkmodel(9, qwen) == 0);
	char *other_arch[] = { "mkmodel", "--from", q2, "--type", "q8_0", "-o", out, NULL };
	CHECK_INT_EQ(cli_mkmodel(7, other_arch), 2);
	CHECK(access(out, F_OK) != 0);

	/* a llama file with a tensor a grown model does not carry (an FFN
	 * bias the first block lacks): refused, not dropped */
	char extra[256];
	tmp(extra, "gextra");
	struct infill_error err;
	struct gguf_file *f = gguf_open(src, &err);
	struct gguf_writer *w = gguf_writer_new();
	REQUIRE(f && w);
	for (int64_t i = 0; i < gguf_key_count(f); i++)
		if (!gguf_str_eq(gguf_key_name(f, i), "general.alignment"))
			REQUIRE(gguf_writer_copy_key(w, f, i) == 0);
	for (int64_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor_info *t = gguf_tensor(f, i);
		char name[96];
		snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
		REQUIRE(gguf_writer_add_tensor_ref(w, name, t->type, t->n_dims, t->ne, t->data,
		                                   t->nbytes) == 0);
	}
	float bias[64] = { 0.5f };
	int64_t ne[1] = { 64 };
	REQUIRE(gguf_writer_add_tensor(w, "blk.1.ffn_down.bias", TENSOR_TYPE_F32, 1, ne, bias,
	                               sizeof bias) == 0);
	REQUIRE(gguf_writer_write(w, extra, &err) == 0);
	gguf_writer_free(w);
	gguf_close(f);
	char *dropped[] = { "mkmodel", "--from", extra, "--type", "q8_0", "-o", out, NULL };
	CHECK_INT_EQ(cli_mkmodel(7, dropped), 1);
	CHECK(access(out, F_OK) != 0);
	unlink(extra);
	unlink(src);
	unlink(q2);
}

int harness_main(void);
#define main harness_main
TEST_MAIN()
#undef main

int main(void)
{
	const char *td = getenv("INFILL_TESTDATA");
	snprintf(vocab, sizeof vocab, "%s/vocab/ggml-vocab-deepseek-coder.gguf", td ? td : "");
	if (!td || access(vocab, R_OK) != 0) {
		printf("SKIP: testdata not found (INFILL_TESTDATA=%s)\n", td ? td : "(unset)");
		return 77;
	}
	return harness_main();
}
