/*
 * test_gguf_read.c - the reader against the shared testdata: the three tiny
 * models (keys, tensor shapes, offsets) and the vocab-only files (arrays).
 * The dequantized F16 and Q8_0 tensors are compared with the F32 file.
 * Testdata comes from $INFILL_TESTDATA; without it the test is skipped.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "gguf.h"
#include "harness.h"
#include "quant.h"

static char path_buf[4096];

static const char *data_path(const char *rel)
{
	snprintf(path_buf, sizeof path_buf, "%s/%s", getenv("INFILL_TESTDATA"), rel);
	return path_buf;
}

static struct gguf_file *open_data(const char *rel)
{
	struct infill_error err = { 0 };
	struct gguf_file *f = gguf_open(data_path(rel), &err);
	if (!f) fprintf(stderr, "open failed: %s\n", err.message);
	return f;
}

static bool str_is(struct gguf_str s, const char *c)
{
	return gguf_str_eq(s, c);
}

static void check_model_keys(int *test_failed_, struct gguf_file *f, uint32_t file_type)
{
	uint32_t u;
	float x;
	struct gguf_str s;
	CHECK_INT_EQ(gguf_version(f), 3);
	CHECK_INT_EQ(gguf_alignment(f), 32);
	CHECK(gguf_get_str(f, "general.architecture", &s) && str_is(s, "llama"));
	CHECK(gguf_get_u32(f, "llama.block_count", &u) && u == 2);
	CHECK(gguf_get_u32(f, "llama.embedding_length", &u) && u == 64);
	CHECK(gguf_get_u32(f, "llama.attention.head_count", &u) && u == 4);
	CHECK(gguf_get_u32(f, "llama.attention.head_count_kv", &u) && u == 2);
	CHECK(gguf_get_u32(f, "llama.feed_forward_length", &u) && u == 160);
	CHECK(gguf_get_u32(f, "llama.vocab_size", &u) && u == 32256);
	CHECK(gguf_get_u32(f, "llama.context_length", &u) && u == 16384);
	CHECK(gguf_get_u32(f, "llama.rope.dimension_count", &u) && u == 16);
	CHECK(gguf_get_f32(f, "llama.rope.freq_base", &x) && x == 100000.0f);
	CHECK(gguf_get_str(f, "llama.rope.scaling.type", &s) && str_is(s, "linear"));
	CHECK(gguf_get_f32(f, "llama.rope.scaling.factor", &x) && x == 4.0f);
	CHECK(gguf_get_f32(f, "llama.attention.layer_norm_rms_epsilon", &x) && x == 1e-6f);
	CHECK(gguf_get_u32(f, "general.file_type", &u) && u == file_type);
	CHECK(gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &u) && u == 32013);
	CHECK(gguf_get_u32(f, "tokenizer.ggml.eos_token_id", &u) && u == 32014);
	bool b;
	CHECK(gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &b) && b);
	CHECK(gguf_get_str(f, "tokenizer.ggml.pre", &s) && str_is(s, "deepseek-coder"));
	enum gguf_type et;
	uint64_t n;
	CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", &et, &n) && et == GGUF_TYPE_STRING &&
	      n == 32256);
	CHECK(str_is(gguf_get_arr_str(f, "tokenizer.ggml.tokens", 32016), "<｜fim▁begin｜>"));
	CHECK(gguf_get_arr_str(f, "tokenizer.ggml.tokens", 32256).ptr == NULL);
	CHECK(!gguf_get_u32(f, "no.such.key", &u));
	CHECK(!gguf_get_u32(f, "general.architecture", &u)); /* a string is not a u32 */
}

static void check_model_tensors(int *test_failed_, struct gguf_file *f, uint32_t mat_type)
{
	/* 3 global + 9 per block */
	CHECK_INT_EQ(gguf_tensor_count(f), 3 + 2 * 9);
	static const struct {
		const char *name;
		int64_t ne0, ne1;
	} want[] = {
		{ "token_embd.weight", 64, 32256 }, { "output_norm.weight", 64, 1 },
		{ "output.weight", 64, 32256 },     { "blk.0.attn_norm.weight", 64, 1 },
		{ "blk.1.attn_q.weight", 64, 64 },  { "blk.1.attn_k.weight", 64, 32 },
		{ "blk.0.attn_v.weight", 64, 32 },  { "blk.0.attn_output.weight", 64, 64 },
		{ "blk.1.ffn_norm.weight", 64, 1 }, { "blk.0.ffn_gate.weight", 64, 160 },
		{ "blk.1.ffn_up.weight", 64, 160 }, { "blk.1.ffn_down.weight", 160, 64 },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int64_t ti = gguf_find_tensor(f, want[i].name);
		CHECK(ti >= 0);
		if (ti < 0) continue;
		const struct gguf_tensor_info *t = gguf_tensor(f, ti);
		CHECK(str_is(t->name, want[i].name));
		CHECK_INT_EQ(t->ne[0], want[i].ne0);
		CHECK_INT_EQ(t->ne[1], want[i].ne1);
		CHECK_INT_EQ(t->n_dims, want[i].ne1 == 1 ? 1 : 2);
		uint32_t type = t->n_dims == 1 ? TENSOR_TYPE_F32 : mat_type;
		CHECK_INT_EQ(t->type, type);
		CHECK_INT_EQ(t->nbytes, tensor_type_row_size(type, t->ne[0]) * (uint64_t)t->ne[1]);
		CHECK_INT_EQ(t->offset % 32, 0);
		size_t size;
		const uint8_t *base = gguf_base(f, &size);
		CHECK((const uint8_t *)t->data == base + gguf_data_offset(f) + t->offset);
		CHECK(t->offset + gguf_data_offset(f) + t->nbytes <= size);
	}
	CHECK(gguf_find_tensor(f, "blk.2.attn_q.weight") == -1);
	CHECK(gguf_tensor(f, -1) == NULL);
	CHECK(gguf_tensor(f, gguf_tensor_count(f)) == NULL);
}

TEST(models_open)
{
	struct gguf_file *f32 = open_data("models/tiny-dsc-f32.gguf");
	struct gguf_file *f16 = open_data("models/tiny-dsc-f16.gguf");
	struct gguf_file *q8 = open_data("models/tiny-dsc-q8_0.gguf");
	REQUIRE(f32 && f16 && q8);
	check_model_keys(test_failed_, f32, 0);
	check_model_keys(test_failed_, f16, 1);
	check_model_keys(test_failed_, q8, 7);
	check_model_tensors(test_failed_, f32, TENSOR_TYPE_F32);
	check_model_tensors(test_failed_, f16, TENSOR_TYPE_F16);
	check_model_tensors(test_failed_, q8, TENSOR_TYPE_Q8_0);
	/* the last tensor ends at the end of the file (after padding) */
	gguf_close(f32);
	gguf_close(f16);
	gguf_close(q8);
}

/*
 * F16 file = F32 weights rounded to half: our f32->f16 must give the stored
 * bits exactly and f16->f32 must be within half an ulp of half (2^-11
 * relative). Q8_0 file = gguf-py's Q8_0 of the F32 weights, which is
 * ggml's reference quantizer: ours must reproduce the blocks bit for bit,
 * and the dequantized values lie within d/2 of the F32 values.
 */
TEST(models_dequantize_match_f32)
{
	struct gguf_file *f32 = open_data("models/tiny-dsc-f32.gguf");
	struct gguf_file *f16 = open_data("models/tiny-dsc-f16.gguf");
	struct gguf_file *q8 = open_data("models/tiny-dsc-q8_0.gguf");
	REQUIRE(f32 && f16 && q8);
	long long f16_bits_differ = 0, q8_bytes_differ = 0, n_checked = 0;
	double max_rel16 = 0, max_q8_err_over_d = 0;
	for (int64_t i = 0; i < gguf_tensor_count(f32); i++) {
		const struct gguf_tensor_info *a = gguf_tensor(f32, i);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)a->name.len, a->name.ptr);
		const struct gguf_tensor_info *b = gguf_tensor(f16, gguf_find_tensor(f16, name));
		const struct gguf_tensor_info *c = gguf_tensor(q8, gguf_find_tensor(q8, name));
		REQUIRE(b && c);
		if (a->n_dims != 2) continue;
		int64_t n = a->ne[0];
		float *ref = malloc((size_t)n * sizeof *ref),
		      *got = malloc((size_t)n * sizeof *got);
		uint8_t *q = malloc(tensor_type_row_size(TENSOR_TYPE_Q8_0, n));
		uint64_t r16 = tensor_type_row_size(TENSOR_TYPE_F16, n),
		         r8 = tensor_type_row_size(TENSOR_TYPE_Q8_0, n);
		for (int64_t r = 0; r < a->ne[1]; r++) {
			memcpy(ref, (const float *)a->data + r * n, (size_t)n * sizeof *ref);
			CHECK_INT_EQ(tensor_row_dequantize(TENSOR_TYPE_F16,
			                                   (const uint8_t *)b->data + r * r16, got,
			                                   n),
			             0);
			for (int64_t j = 0; j < n; j++) {
				double rel = fabs(got[j] - ref[j]) / fmax(fabs(ref[j]), 6.1e-5);
				if (rel > max_rel16) max_rel16 = rel;
				uint16_t stored;
				memcpy(&stored, (const uint8_t *)b->data + r * r16 + 2 * j, 2);
				f16_bits_differ += stored != tensor_f32_to_f16(ref[j]);
			}
			const uint8_t *qrow = (const uint8_t *)c->data + r * r8;
			CHECK_INT_EQ(tensor_row_dequantize(TENSOR_TYPE_Q8_0, qrow, got, n), 0);
			for (int64_t j = 0; j < n; j++) {
				uint16_t dh;
				memcpy(&dh, qrow + (j / 32) * 34, 2);
				double d = tensor_f16_to_f32(dh);
				double e = d > 0 ? fabs(got[j] - ref[j]) / d : 0;
				if (e > max_q8_err_over_d) max_q8_err_over_d = e;
			}
			tensor_row_quantize(TENSOR_TYPE_Q8_0, ref, q, n);
			for (uint64_t k = 0; k < r8; k++) q8_bytes_differ += q[k] != qrow[k];
			n_checked += n;
		}
		free(ref);
		free(got);
		free(q);
	}
	printf("checked %lld values: f16 max rel err %.3g, f16 bit mismatches %lld; "
	       "q8_0 max |err|/d %.3g, q8_0 byte mismatches %lld\n",
	       n_checked, max_rel16, f16_bits_differ, max_q8_err_over_d, q8_bytes_differ);
	CHECK(n_checked > 4000000);
	CHECK(max_rel16 <= 1.01 / 2048); /* half an ulp of half, plus subnormal floor */
	CHECK_INT_EQ(f16_bits_differ, 0);
	/* |x - q*d| <= d/2 plus the fp16 rounding of d times |q| <= 127 */
	CHECK(max_q8_err_over_d <= 0.5 + 127.0 / 2048);
	CHECK_INT_EQ(q8_bytes_differ, 0);
	gguf_close(f32);
	gguf_close(f16);
	gguf_close(q8);
}

TEST(vocab_files)
{
	struct gguf_file *f = open_data("vocab/ggml-vocab-deepseek-coder.gguf");
	REQUIRE(f);
	CHECK_INT_EQ(gguf_tensor_count(f), 0);
	enum gguf_type et;
	uint64_t n;
	CHECK(gguf_get_arr(f, "tokenizer.ggml.merges", &et, &n) && et == GGUF_TYPE_STRING &&
	      n == 31757);
	CHECK(gguf_get_arr(f, "tokenizer.ggml.token_type", &et, &n) && et == GGUF_TYPE_INT32 &&
	      n == 32256);
	const uint8_t *tt = gguf_get_arr_data(f, "tokenizer.ggml.token_type");
	REQUIRE(tt);
	int32_t type;
	memcpy(&type, tt + 4 * 32013, 4);
	CHECK_INT_EQ(type, 3); /* BOS is a control token */
	memcpy(&type, tt + 4 * 32016, 4);
	CHECK_INT_EQ(type, 4); /* fim_begin is user-defined */
	CHECK(str_is(gguf_get_arr_str(f, "tokenizer.ggml.tokens", 32009), "ü"));
	CHECK(gguf_get_arr_data(f, "tokenizer.ggml.tokens") == NULL);
	bool b;
	CHECK(gguf_get_bool(f, "tokenizer.ggml.add_eos_token", &b) && !b);
	gguf_close(f);

	f = open_data("vocab/ggml-vocab-llama-spm.gguf");
	REQUIRE(f);
	struct gguf_str s;
	CHECK(gguf_get_str(f, "tokenizer.ggml.model", &s) && str_is(s, "llama"));
	CHECK(gguf_get_arr(f, "tokenizer.ggml.scores", &et, &n) && et == GGUF_TYPE_FLOAT32 &&
	      n == 32000);
	CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", &et, &n) && n == 32000);
	uint32_t u;
	CHECK(gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &u) && u == 1);
	gguf_close(f);

	f = open_data("vocab/ggml-vocab-starcoder.gguf");
	REQUIRE(f);
	CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", &et, &n) && n == 49152);
	gguf_close(f);
}

TEST(open_errors_name_the_file)
{
	struct infill_error err = { 0 };
	CHECK(gguf_open("/nonexistent/x.gguf", &err) == NULL);
	CHECK_INT_EQ(err.code, -ENOENT); /* the file system's own code comes back */
	CHECK(strstr(err.message, "/nonexistent/x.gguf") != NULL);
	CHECK(gguf_open(data_path("models/README.md"), &err) == NULL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK_INT_EQ(err.offset, 0);
	CHECK(strstr(err.message, data_path("models/README.md")) != NULL);
	CHECK(strstr(err.message, "not a GGUF file") != NULL);
}

/* The harness's main runs after the testdata check below. */
int harness_main(void);
#define main harness_main
TEST_MAIN()
#undef main

int main(void)
{
	const char *td = getenv("INFILL_TESTDATA");
	char probe[4096];
	snprintf(probe, sizeof probe, "%s/models/tiny-dsc-f32.gguf", td ? td : "");
	if (!td || access(probe, R_OK) != 0) {
		printf("SKIP: testdata not found (INFILL_TESTDATA=%s)\n", td ? td : "(unset)");
		return 77;
	}
	return harness_main();
}
