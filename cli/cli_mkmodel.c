/*
 * cli_mkmodel.c - `infill mkmodel`: writes a model of a known family
 * (llama, qwen2, starcoder2, gemma) with random weights to a GGUF file, for
 * tests and benchmarks of a given shape and tensor type without
 * downloading anything. Each family gets the keys and tensors llama.cpp's
 * converter writes for it (biases, no gate, tied output, head size).
 *
 * Weights are seeded and reproducible: every tensor draws from its own
 * stream (seed and tensor index), so the bytes do not depend on the order of
 * writing. Matrices are approximately N(0, 0.02^2) (sum of four uniforms:
 * cheap, bounded at 3.5 sigma, which is all a random-weight benchmark
 * needs); norm weights 1 + 0.05 N(0, 1), biases 0.02 N(0, 1), stored F32. Tensors are produced
 * one at a time while the file is written, so memory stays at about one
 * tensor. A matrix whose rows do not divide into the type's blocks (the
 * K-quants and IQ4_XS need rows of 256; the 1.3B FFN is 5504 wide) falls
 * back as llama.cpp's quantizer does (tensor_type_fallback in its
 * llama-quant.cpp): Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K ->
 * Q4_0, IQ4_XS -> IQ4_NL, then F16 when even 32 does not divide; each
 * fallback is reported on stderr.
 *
 * A target/draft pair for speculative decoding (--pair-layers D --perturb S):
 * the model written is the target of a D-layer draft written by the same
 * command with --layers D (same seed): its first D layers, embedding, final
 * norm and output are the draft's tensors byte for byte, and its further
 * layers are random with their output projections (attn_output, ffn_down)
 * scaled by S, so they add to the residual stream a perturbation of scale
 * S. S = 0 gives a target whose greedy choices are the draft's; larger S
 * lowers their agreement (bench-draft measures it).
 *
 * A trained model at another model's cost (--from M): random weights write
 * text that repeats nothing, so prompt lookup and a draft's agreement are
 * not what they are on code. --from grows a Llama-architecture model M into
 * a wider, deeper one that computes M's function: M's matrices in the top
 * left corner of the larger ones and zeros elsewhere, so extra heads, FFN
 * rows and residual dims stay zero. The norms see a residual of D dims
 * whose last D - d are zero: their weights are scaled by sqrt(d / D) and
 * eps by d / D, which gives M's normalized values exactly. Layers past M's
 * are random with their output projections scaled by --perturb (default 0:
 * they add nothing) and writing only M's d dims, so M grown to a draft's
 * cost and M grown deeper with a perturbation make a pair of dialled
 * agreement that writes code.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gguf.h"
#include "llama_tensors.h"
#include "quant.h"
#include "tokenizer.h"

/* A model family as written here: the architecture name its keys go under
 * and what it has beyond the Llama block. */
struct family {
	const char *arch;
	bool qkv_bias, other_bias; /* LLAMA_TENSOR_BIAS / LLAMA_TENSOR_LN_BIAS written */
	bool gate;                 /* ffn_gate written */
	bool tied;                 /* no output.weight: the embedding is the output head */
	bool linear4;              /* DeepSeek-Coder's rope: linear scaling 4, dimension_count */
	const char *eps_key;       /* after "<arch>." */
};

static const struct family fam_llama = {
	"llama", false, false, true, false, true, "attention.layer_norm_rms_epsilon"
};
static const struct family fam_qwen2 = {
	"qwen2", true, false, true, true, false, "attention.layer_norm_rms_epsilon"
};
static const struct family fam_starcoder2 = {
	"starcoder2", true, true, false, true, false, "attention.layer_norm_epsilon"
};
static const struct family fam_gemma = {
	"gemma", false, false, true, true, false, "attention.layer_norm_rms_epsilon"
};

struct shape {
	const char *name;
	uint32_t n_layer, dim, n_head, n_head_kv, ffn, ctx;
	const struct family *fam;
	uint32_t head_dim; /* 0: dim / n_head; else written as attention.key_length */
	float rope_base, eps;
};

/* The options that override a shape's fields: X(option, field). */
#define SHAPE_OPTIONS(X)           \
	X("--layers", n_layer)     \
	X("--dim", dim)            \
	X("--heads", n_head)       \
	X("--kv-heads", n_head_kv) \
	X("--ffn", ffn)            \
	X("--ctx", ctx)

/* The published models' configurations (config.json of each). */
static const struct shape shapes[] = {
	{ "deepseek-coder-1.3b", 24, 2048, 16, 16, 5504, 16384, &fam_llama, 0, 100000.0f, 1e-6f },
	{ "deepseek-coder-6.7b", 32, 4096, 32, 32, 11008, 16384, &fam_llama, 0, 100000.0f, 1e-6f },
	{ "qwen2.5-coder-1.5b", 28, 1536, 12, 2, 8960, 32768, &fam_qwen2, 0, 1000000.0f, 1e-6f },
	{ "starcoder2-3b", 30, 3072, 24, 2, 12288, 16384, &fam_starcoder2, 0, 999999.4420358813f,
	  1e-5f },
	{ "codegemma-2b", 18, 2048, 8, 1, 16384, 8192, &fam_gemma, 256, 10000.0f, 1e-6f },
	{ "tiny", 2, 64, 4, 2, 160, 16384, &fam_llama, 0, 100000.0f, 1e-6f },
	/* gemma with a head size other than dim / heads, as CodeGemma 7B (tests/infer/model_data) */
	{ "tiny-gemma", 2, 64, 4, 1, 160, 8192, &fam_gemma, 32, 10000.0f, 1e-6f },
	{ "tiny-starcoder2", 2, 64, 4, 2, 256, 16384, &fam_starcoder2, 0, 100000.0f, 1e-5f },
	{ "tiny-qwen2", 2, 64, 4, 2, 160, 32768, &fam_qwen2, 0, 1000000.0f, 1e-6f },
};

static void usage(FILE *fp)
{
	fprintf(fp,
	        "usage: infill mkmodel --shape SHAPE --type TYPE --vocab V.gguf -o OUT.gguf "
	        "[options]\n"
	        "       infill mkmodel --from M.gguf --type TYPE -o OUT.gguf [options]\n"
	        "\n"
	        "Writes a model with random (seeded) weights; tokenizer.* keys are copied\n"
	        "from V.gguf and the vocabulary size is its token count.\n"
	        "With --from, writes the llama model M grown to the --dim, --ffn and --layers\n"
	        "given: it computes M's function (M's weights, zeros around them) at the\n"
	        "larger model's cost, for measuring on a trained model's text; layers past\n"
	        "M's are random, scaled by --perturb (default 0: they change nothing).\n"
	        "\n"
	        "  --shape S      deepseek-coder-1.3b | deepseek-coder-6.7b | tiny (llama),\n"
	        "                 qwen2.5-coder-1.5b | tiny-qwen2 (qwen2),\n"
	        "                 starcoder2-3b | tiny-starcoder2 (starcoder2),\n"
	        "                 codegemma-2b | tiny-gemma (gemma)\n"
	        "  --type T       f32 | f16 | bf16 | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 |\n"
	        "                 q2_k | q3_k | q4_k | q5_k | q6_k | iq4_nl | iq4_xs\n"
	        "                 (every 2-D weight; norms stay f32)\n"
	        "  --seed N       random seed (default 1)\n"
	        "  --pair-layers D --perturb S  the target of the D-layer draft that the same\n"
	        "                 command writes with --layers D: its layers past D scaled by S\n"
	        "  --pad-vocab N  N unused tokens after the vocabulary's, their embedding and\n"
	        "                 output rows zero (as a family's larger models pad theirs)\n"
	        "  --layers N, --dim N, --heads N, --kv-heads N, --ffn N, --ctx N\n"
	        "                 override the shape's fields\n");
}

/* ---- random numbers: splitmix64, one stream per tensor ---- */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Approximately N(0, 1): the sum of four 16-bit uniforms, centred and scaled
 * to unit variance (variance of one uniform on [0, 65536) is 65536^2 / 12). */
static float normal(uint64_t *s)
{
	uint64_t r = splitmix(s);
	int64_t sum = (int64_t)(r & 0xFFFF) + (int64_t)((r >> 16) & 0xFFFF) +
	              (int64_t)((r >> 32) & 0xFFFF) + (int64_t)(r >> 48);
	return (float)((double)(sum - 2 * 65535) * (1.7320508075688772 / 65536.0));
}

struct tensor_job {
	uint64_t seed;
	uint32_t type;
	int64_t ne0, ne1;
	bool is_norm, is_bias;
	float scale; /* of a matrix's values (a pair's perturbing layers) */
	/* --from: the source tensor (borrowed from the source file) whose values
	 * go to the top left corner, times src_scale; NULL for random values */
	const struct gguf_tensor_info *src;
	float src_scale;
	/* > 0: outputs past it are zeros (rows of a matrix, elements of a
	 * bias): what a grown model's further layers write to the residual */
	int64_t live;
};

/* A grown tensor's row r: the source's row r, dequantized and scaled, then
 * zeros; rows past the source's are all zeros. Returns 0 or a negative errno. */
static int source_row(const struct tensor_job *j, int64_t r, float *row)
{
	const struct gguf_tensor_info *t = j->src;
	int64_t n = r < t->ne[1] ? t->ne[0] : 0;
	if (n) {
		uint64_t bytes = tensor_type_row_size(t->type, t->ne[0]);
		int rc = tensor_row_dequantize(
		        t->type, (const uint8_t *)t->data + (uint64_t)r * bytes, row, n);
		if (rc) return rc;
	}
	for (int64_t i = 0; i < n; i++) row[i] *= j->src_scale;
	for (int64_t i = n; i < j->ne0; i++) row[i] = 0.0f;
	return 0;
}

/* gguf_tensor_fill_fn: generate and quantize one row at a time into buf. */
static int fill_tensor(void *ctx, void *buf, uint64_t nbytes)
{
	const struct tensor_job *j = ctx;
	uint64_t s = j->seed;
	float *row = malloc((size_t)j->ne0 * sizeof *row);
	if (!row) return -ENOMEM;
	uint64_t row_bytes = tensor_type_row_size(j->type, j->ne0);
	for (int64_t r = 0; r < j->ne1; r++) {
		int rc = j->src ? source_row(j, r, row) : 0;
		for (int64_t i = 0; !j->src && i < j->ne0; i++)
			row[i] = j->live > 0 && (j->is_norm ? i : r) >= j->live ? 0.0f
			         : j->is_norm && !j->is_bias ? 1.0f + 0.05f * normal(&s)
			                                     : 0.02f * j->scale * normal(&s);
		rc = rc ? rc
		        : tensor_row_quantize(j->type, row,
		                              (uint8_t *)buf + (uint64_t)r * row_bytes, j->ne0);
		if (rc) {
			free(row);
			return rc;
		}
	}
	free(row);
	return nbytes == row_bytes * (uint64_t)j->ne1 ? 0 : -EINVAL;
}

/* llama.cpp's general.file_type for a model whose matrices are of `type`. */
static uint32_t llama_file_type(uint32_t type)
{
	switch (type) {
	case TENSOR_TYPE_F32: return 0;
	case TENSOR_TYPE_F16: return 1;
	case TENSOR_TYPE_Q4_0: return 2;
	case TENSOR_TYPE_Q8_0: return 7;
	case TENSOR_TYPE_Q4_1: return 3;
	case TENSOR_TYPE_Q5_0: return 8;
	case TENSOR_TYPE_Q5_1: return 9;
	case TENSOR_TYPE_Q2_K: return 10;
	case TENSOR_TYPE_Q3_K: return 12; /* Q3_K_M */
	case TENSOR_TYPE_Q4_K: return 15; /* Q4_K_M */
	case TENSOR_TYPE_Q5_K: return 17; /* Q5_K_M */
	case TENSOR_TYPE_Q6_K: return 18;
	case TENSOR_TYPE_IQ4_NL: return 25;
	case TENSOR_TYPE_IQ4_XS: return 30;
	case TENSOR_TYPE_BF16: return 32;
	default: return 0;
	}
}

static bool parse_u32(const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v == 0 || v > 1000000) return false;
	*out = (uint32_t)v;
	return true;
}

/* What the command line asks for. */
struct args {
	const char *shape_name, *type_name, *vocab_path, *out; /* borrowed from argv */
	const char *from_path;                                 /* borrowed from argv */
	uint64_t seed;
	uint32_t pair_layers; /* > 0: the target of a draft of this many layers */
	uint32_t pad_vocab;   /* unused tokens after the vocabulary's, zero rows */
	float perturb;        /* the scale of the further layers' output projections */
	bool perturb_given;
	struct shape shape; /* the named shape with the overrides applied */
	enum tensor_type type;
	/* --from: the source (owned: gguf_close), its shape before the
	 * overrides, and the family its file has */
	struct gguf_file *from;
	struct shape from_shape;
	struct family from_fam;
};

/* An override given on the command line: 0 when absent. */
struct overrides {
#define FIELD(opt, field) uint32_t field;
	SHAPE_OPTIONS(FIELD)
#undef FIELD
};

/* One option and its value into *a; false when the option is unknown or
 * its value bad. */
static bool parse_option(const char *opt, const char *v, struct args *a, struct overrides *ov)
{
	const char **text = !strcmp(opt, "--shape")                          ? &a->shape_name
	                    : !strcmp(opt, "--type")                         ? &a->type_name
	                    : !strcmp(opt, "--vocab")                        ? &a->vocab_path
	                    : !strcmp(opt, "-o") || !strcmp(opt, "--output") ? &a->out
	                    : !strcmp(opt, "--from")                         ? &a->from_path
	                                                                     : NULL;
	if (text) {
		*text = v;
		return true;
	}
	if (!strcmp(opt, "--pair-layers")) return parse_u32(v, &a->pair_layers);
	if (!strcmp(opt, "--pad-vocab")) return parse_u32(v, &a->pad_vocab);
	if (!strcmp(opt, "--perturb")) {
		char *end;
		errno = 0;
		a->perturb = strtof(v, &end);
		a->perturb_given = true;
		return !errno && *end == 0 && end != v && a->perturb >= 0;
	}
	if (!strcmp(opt, "--seed")) {
		char *end;
		errno = 0;
		a->seed = strtoull(v, &end, 0);
		return !errno && *end == 0 && end != v;
	}
#define OVERRIDE(o, field) \
	if (!strcmp(opt, o)) return parse_u32(v, &ov->field);
	SHAPE_OPTIONS(OVERRIDE)
#undef OVERRIDE
	return false;
}

/* The shape --from grows: the source's hyperparameters and family. Returns 0
 * or 2 after a message (a file that is not a Llama model). */
static int source_shape(struct args *a)
{
	struct gguf_file *f = a->from;
	struct gguf_str arch;
	if (!gguf_get_str(f, "general.architecture", &arch) || !gguf_str_eq(arch, "llama")) {
		fprintf(stderr,
		        "infill mkmodel: --from %s: only a llama-architecture model can be grown\n",
		        a->from_path);
		return 2;
	}
	struct shape *sh = &a->from_shape;
	*sh = (struct shape){ .name = "from", .rope_base = 10000.0f, .fam = &a->from_fam };
	bool ok = gguf_get_u32(f, "llama.embedding_length", &sh->dim) &&
	          gguf_get_u32(f, "llama.block_count", &sh->n_layer) &&
	          gguf_get_u32(f, "llama.feed_forward_length", &sh->ffn) &&
	          gguf_get_u32(f, "llama.attention.head_count", &sh->n_head) &&
	          gguf_get_u32(f, "llama.context_length", &sh->ctx) &&
	          gguf_get_f32(f, "llama.attention.layer_norm_rms_epsilon", &sh->eps) && sh->dim &&
	          sh->n_head && sh->dim % sh->n_head == 0;
	if (!gguf_get_u32(f, "llama.attention.head_count_kv", &sh->n_head_kv))
		sh->n_head_kv = sh->n_head;
	gguf_get_u32(f, "llama.attention.key_length", &sh->head_dim);
	gguf_get_f32(f, "llama.rope.freq_base", &sh->rope_base);
	if (!ok || !sh->n_head_kv || sh->n_head % sh->n_head_kv ||
	    (sh->head_dim && sh->head_dim != sh->dim / sh->n_head)) {
		fprintf(stderr,
		        "infill mkmodel: --from %s: missing or unusual llama.* hyperparameters\n",
		        a->from_path);
		return 2;
	}
	sh->head_dim = 0;
	a->from_fam = (struct family){
		.arch = "llama",
		.qkv_bias = gguf_find_tensor(f, "blk.0.attn_q.bias") >= 0,
		.other_bias = gguf_find_tensor(f, "blk.0.attn_norm.bias") >= 0,
		.gate = true,
		.tied = gguf_find_tensor(f, "output.weight") < 0,
		.eps_key = "attention.layer_norm_rms_epsilon",
	};
	return 0;
}

/* The grown shape holds the source's: as wide or wider everywhere, heads of
 * the same size grouped the same way. Returns 0 or 2 after a message. */
static int check_grown(const struct args *a)
{
	const struct shape *sh = &a->shape, *src = &a->from_shape;
	uint32_t hd = src->dim / src->n_head, group = src->n_head / src->n_head_kv;
	if (sh->dim < src->dim || sh->ffn < src->ffn || sh->n_layer < src->n_layer ||
	    sh->n_head * hd != sh->dim || sh->n_head_kv * group != sh->n_head) {
		fprintf(stderr,
		        "infill mkmodel: --from %s (dim %u, ffn %u, %u layers, %u heads of %u, "
		        "%u per kv head): the model grown from it needs dim, ffn and layers at "
		        "least those, heads of %u and %u heads per kv head (asked: dim %u, ffn %u, "
		        "%u layers, %u/%u heads)\n",
		        a->from_path, src->dim, src->ffn, src->n_layer, src->n_head, hd, group, hd,
		        group, sh->dim, sh->ffn, sh->n_layer, sh->n_head, sh->n_head_kv);
		return 2;
	}
	return 0;
}

/*
 * The command line into *a: the options, the shape and type they name (for
 * --from: the source opened, its shape), the overrides applied and the
 * shape checked. Returns 0, 1 when --help was printed, or 2 (the command's
 * exit status) after a message on stderr; a->from may be open either way.
 */
static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){ .seed = 1, .perturb = 1.0f };
	struct overrides ov = { 0 };
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
			usage(stdout);
			return 1;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "infill mkmodel: %s needs a value (or is unknown)\n", opt);
			usage(stderr);
			return 2;
		}
		const char *v = argv[++i];
		if (!parse_option(opt, v, a, &ov)) {
			fprintf(stderr, "infill mkmodel: bad option or value: %s %s\n", opt, v);
			usage(stderr);
			return 2;
		}
	}
	if (a->from_path && (a->shape_name || a->vocab_path || a->pair_layers || a->pad_vocab)) {
		fprintf(stderr, "infill mkmodel: --from takes the shape and vocabulary of its "
		                "model: --shape, --vocab, --pair-layers and --pad-vocab do not go "
		                "with it\n");
		return 2;
	}
	if (!a->type_name || !a->out || (!a->from_path && (!a->shape_name || !a->vocab_path))) {
		fprintf(stderr, "infill mkmodel: --type, -o and either --shape and --vocab or "
		                "--from are required\n");
		usage(stderr);
		return 2;
	}
	if (a->from_path) {
		struct infill_error err;
		a->from = gguf_open(a->from_path, &err);
		if (!a->from) {
			fprintf(stderr, "infill mkmodel: %s\n", err.message);
			return 2;
		}
		int st = source_shape(a);
		if (st) return st;
		a->shape = a->from_shape;
		a->shape_name = "grown";
		if (!a->perturb_given) a->perturb = 0.0f;
		/* wider: as many more heads of the source's size, grouped as its */
		uint32_t hd = a->shape.dim / a->shape.n_head;
		uint32_t group = a->shape.n_head / a->shape.n_head_kv;
		if (ov.dim && !ov.n_head) ov.n_head = ov.dim / hd;
		if (ov.n_head && !ov.n_head_kv) ov.n_head_kv = ov.n_head / group;
	} else {
		for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
			if (!strcmp(shapes[k].name, a->shape_name)) a->shape = shapes[k];
	}
	if (!a->shape.name || !tensor_type_from_name(a->type_name, &a->type)) {
		fprintf(stderr, "infill mkmodel: unknown %s \"%s\"\n",
		        a->shape.name ? "type" : "shape",
		        a->shape.name ? a->type_name : a->shape_name);
		usage(stderr);
		return 2;
	}
	struct shape *sh = &a->shape;
#define APPLY(o, field) \
	if (ov.field) sh->field = ov.field;
	SHAPE_OPTIONS(APPLY)
#undef APPLY
	if (a->from) {
		sh->eps = a->from_shape.eps * (float)a->from_shape.dim / (float)sh->dim;
		int st = check_grown(a);
		if (st) return st;
	}
	if (a->pair_layers >= sh->n_layer) {
		fprintf(stderr, "infill mkmodel: --pair-layers %u must be below --layers %u\n",
		        a->pair_layers, sh->n_layer);
		return 2;
	}
	uint32_t hd = sh->head_dim ? sh->head_dim : sh->dim / sh->n_head;
	if ((!sh->head_dim && sh->dim % sh->n_head) || sh->n_head % sh->n_head_kv || hd % 2) {
		fprintf(stderr,
		        "infill mkmodel: dim %u must split into %u heads of even size, and heads "
		        "into %u kv heads\n",
		        sh->dim, sh->n_head, sh->n_head_kv);
		return 2;
	}
	return 0;
}

/* The vocabulary's size: its tokenizer.ggml.tokens count; 0 after a
 * message when it has none. */
static uint64_t vocab_size(struct gguf_file *vocab, const char *path)
{
	enum gguf_type et;
	uint64_t n;
	if (!gguf_get_arr(vocab, "tokenizer.ggml.tokens", &et, &n) || et != GGUF_TYPE_STRING ||
	    n == 0 || n > INT32_MAX) {
		fprintf(stderr, "infill mkmodel: %s: no tokenizer.ggml.tokens string array\n",
		        path);
		return 0;
	}
	return n;
}

/* The vocabulary's array key k (tokens, token types or scores) grown to
 * n_vocab entries: "[PADi]" tokens of the unused type, score 0, as
 * llama.cpp's converter pads a model whose embedding has more rows than its
 * tokenizer has tokens. Returns 0 or a negative errno. */
static int pad_key(struct gguf_writer *w, struct gguf_file *vocab, struct gguf_str k,
                   uint64_t n_vocab)
{
	char key[64];
	snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
	enum gguf_type et;
	uint64_t n;
	if (!gguf_get_arr(vocab, key, &et, &n) || n > n_vocab) return -EINVAL;
	int rc = 0;
	if (et == GGUF_TYPE_STRING) {
		char **strs = calloc(n_vocab, sizeof *strs);
		if (!strs) return -ENOMEM;
		for (uint64_t i = 0; i < n_vocab && !rc; i++) {
			struct gguf_str t = i < n ? gguf_get_arr_str(vocab, key, i)
			                          : (struct gguf_str){ NULL, 0 };
			strs[i] = malloc(t.len + 24);
			if (!strs[i])
				rc = -ENOMEM;
			else if (i < n)
				memcpy(strs[i], t.ptr, t.len), strs[i][t.len] = 0;
			else
				snprintf(strs[i], 24, "[PAD%llu]", (unsigned long long)i);
		}
		rc = rc ? rc : gguf_writer_set_arr_str(w, key, (const char *const *)strs, n_vocab);
		for (uint64_t i = 0; i < n_vocab; i++) free(strs[i]);
		free(strs);
		return rc;
	}
	if (et != GGUF_TYPE_INT32 && et != GGUF_TYPE_FLOAT32) return -EINVAL;
	uint8_t *data = calloc(n_vocab, 4);
	if (!data) return -ENOMEM;
	memcpy(data, gguf_get_arr_data(vocab, key), n * 4);
	for (uint64_t i = n; i < n_vocab && et == GGUF_TYPE_INT32; i++) {
		int32_t unused = TOKENIZER_TOKEN_UNUSED;
		memcpy(data + i * 4, &unused, 4);
	}
	rc = gguf_writer_set_arr(w, key, et, data, n_vocab);
	free(data);
	return rc;
}

/* The metadata: the Llama hyperparameters of the shape, then every
 * tokenizer.* key of the vocab as it is (padded with --pad-vocab). Returns 0
 * or a negative errno. */
static int plan_keys(struct gguf_writer *w, const struct args *a, struct gguf_file *vocab,
                     uint64_t n_vocab)
{
	const struct shape *sh = &a->shape;
	char name[160];
	if (a->from)
		snprintf(name, sizeof name, "infill grown from %s: dim %u, %u layers, %s",
		         a->from_path, sh->dim, sh->n_layer, tensor_type_name(a->type));
	else
		snprintf(name, sizeof name, "infill random %s %s", a->shape_name,
		         tensor_type_name(a->type));
	const struct family *f = sh->fam;
	char kb[128];
#define KEY(suffix) (snprintf(kb, sizeof kb, "%s.%s", f->arch, suffix), kb)
	int rc = gguf_writer_set_str(w, "general.architecture", f->arch);
	rc = rc ? rc : gguf_writer_set_str(w, "general.name", name);
	rc = rc ? rc : gguf_writer_set_u32(w, "general.file_type", llama_file_type(a->type));
	if (f->linear4) /* the keys DeepSeek-Coder's files have; the others' converters write none */
		rc = rc ? rc : gguf_writer_set_u32(w, KEY("vocab_size"), (uint32_t)n_vocab);
	rc = rc ? rc : gguf_writer_set_u32(w, KEY("context_length"), sh->ctx);
	rc = rc ? rc : gguf_writer_set_u32(w, KEY("embedding_length"), sh->dim);
	rc = rc ? rc : gguf_writer_set_u32(w, KEY("block_count"), sh->n_layer);
	rc = rc ? rc : gguf_writer_set_u32(w, KEY("feed_forward_length"), sh->ffn);
	if (f->linear4)
		rc = rc ? rc
		        : gguf_writer_set_u32(w, KEY("rope.dimension_count"), sh->dim / sh->n_head);
	rc = rc ? rc : gguf_writer_set_u32(w, KEY("attention.head_count"), sh->n_head);
	rc = rc ? rc : gguf_writer_set_u32(w, KEY("attention.head_count_kv"), sh->n_head_kv);
	if (sh->head_dim) {
		rc = rc ? rc : gguf_writer_set_u32(w, KEY("attention.key_length"), sh->head_dim);
		rc = rc ? rc : gguf_writer_set_u32(w, KEY("attention.value_length"), sh->head_dim);
	}
	rc = rc ? rc : gguf_writer_set_f32(w, KEY(f->eps_key), sh->eps);
	rc = rc ? rc : gguf_writer_set_f32(w, KEY("rope.freq_base"), sh->rope_base);
	if (f->linear4) {
		rc = rc ? rc : gguf_writer_set_str(w, KEY("rope.scaling.type"), "linear");
		rc = rc ? rc : gguf_writer_set_f32(w, KEY("rope.scaling.factor"), 4.0f);
	}
#undef KEY
	/* --from: every other key of the source as it is (rope, vocab size) */
	for (int64_t i = 0; !rc && i < gguf_key_count(vocab); i++) {
		struct gguf_str k = gguf_key_name(vocab, i);
		if (a->from && !gguf_str_eq(k, "general.alignment")) {
			rc = gguf_writer_copy_key(w, vocab, i);
			rc = rc == -EEXIST ? 0 : rc;
		} else if (a->pad_vocab && (gguf_str_eq(k, "tokenizer.ggml.tokens") ||
		                            gguf_str_eq(k, "tokenizer.ggml.token_type") ||
		                            gguf_str_eq(k, "tokenizer.ggml.scores"))) {
			rc = pad_key(w, vocab, k, n_vocab);
		} else if (k.len >= 10 && !memcmp(k.ptr, "tokenizer.", 10)) {
			rc = gguf_writer_copy_key(w, vocab, i);
		}
	}
	return rc;
}

struct plan {
	struct gguf_writer *w;
	struct tensor_job *jobs; /* one per tensor, owned; must outlive the write */
	size_t n_jobs;
	int n_fallback;
	int64_t stream_shift; /* added to a tensor's index for its stream (pairs) */
	float scale;          /* the next matrices' scale */
	/* the next tensor's source and its values' scale (--from), NULL for random */
	const struct gguf_tensor_info *src;
	float src_scale;
	int64_t live; /* the next tensor's outputs past it zeros; 0: none */
};

/* The type llama-quantize writes instead of `type` for rows its blocks do not divide. */
static uint32_t fallback_type(uint32_t type)
{
	switch (type) {
	case TENSOR_TYPE_Q4_K: return TENSOR_TYPE_Q5_0;
	case TENSOR_TYPE_Q5_K: return TENSOR_TYPE_Q5_1;
	case TENSOR_TYPE_Q6_K: return TENSOR_TYPE_Q8_0;
	case TENSOR_TYPE_IQ4_XS: return TENSOR_TYPE_IQ4_NL;
	default: return TENSOR_TYPE_Q4_0; /* Q2_K, Q3_K */
	}
}

static int add_weight(struct plan *p, const char *name, uint32_t type, int64_t ne0, int64_t ne1,
                      bool is_bias, uint64_t seed)
{
	struct tensor_job *j = &p->jobs[p->n_jobs];
	bool is_norm = ne1 == 0;
	j->is_norm = is_norm;
	j->is_bias = is_bias;
	j->scale = p->scale;
	j->src = p->src;
	j->src_scale = p->src_scale;
	j->live = p->live;
	j->ne0 = ne0;
	j->ne1 = is_norm ? 1 : ne1;
	j->type = is_norm ? TENSOR_TYPE_F32 : type;
	if (ne0 % tensor_type_block_size(j->type) != 0) {
		uint32_t fb = fallback_type(type);
		if (ne0 % tensor_type_block_size(fb) != 0) fb = TENSOR_TYPE_F16;
		if (p->n_fallback == 0)
			fprintf(stderr,
			        "mkmodel: %s has rows of %lld, not a multiple of %lld for %s: "
			        "writing it as %s\n",
			        name, (long long)ne0, (long long)tensor_type_block_size(j->type),
			        tensor_type_name(j->type), tensor_type_name(fb));
		j->type = fb;
		p->n_fallback++;
	}
	/* one stream per tensor: mix the tensor's index into the seed */
	uint64_t s = seed ^
	             (0xD1B54A32D192ED03ull * (uint64_t)((int64_t)p->n_jobs + 1 + p->stream_shift));
	j->seed = splitmix(&s);
	int64_t ne[2] = { ne0, j->ne1 };
	int rc = gguf_writer_add_tensor_fill(p->w, name, j->type, is_norm ? 1 : 2, ne, fill_tensor,
	                                     j);
	if (rc == 0) p->n_jobs++;
	return rc;
}

/* One of the tensors llama_tensors.h lists. */
struct part {
	const char *name;
	enum llama_tensor_kind kind;
	enum llama_dim ne0, ne1;
};

#define PART(name, field, kind, ne0, ne1) { name, kind, LLAMA_DIM_##ne0, LLAMA_DIM_##ne1 },
static const struct part first_parts[] = { LLAMA_TENSORS_FIRST(PART) };
static const struct part layer_parts[] = { LLAMA_TENSORS_LAYER(PART) };
static const struct part last_parts[] = { LLAMA_TENSORS_LAST(PART) };
#undef PART

static int64_t dim_size(enum llama_dim d, const struct shape *sh, uint64_t n_vocab)
{
	switch (d) {
	case LLAMA_DIM_NONE: return 0;
	case LLAMA_DIM_EMBD: return sh->dim;
	case LLAMA_DIM_Q:
		return (int64_t)(sh->head_dim ? sh->head_dim : sh->dim / sh->n_head) * sh->n_head;
	case LLAMA_DIM_KV:
		return (int64_t)(sh->head_dim ? sh->head_dim : sh->dim / sh->n_head) *
		       sh->n_head_kv;
	case LLAMA_DIM_FF: return sh->ffn;
	case LLAMA_DIM_VOCAB: return (int64_t)n_vocab;
	}
	return 0;
}

/* Whether the family's file holds a tensor of this kind. */
static bool family_has(const struct family *f, enum llama_tensor_kind kind)
{
	switch (kind) {
	case LLAMA_TENSOR_REQUIRED: return true;
	case LLAMA_TENSOR_BIAS: return f->qkv_bias;
	case LLAMA_TENSOR_LN_BIAS: return f->other_bias;
	case LLAMA_TENSOR_GATE: return f->gate;
	case LLAMA_TENSOR_TIED: return !f->tied;
	}
	return false;
}

/* --from: the source's tensor `name` as the next tensor's values (norm
 * weights scaled for the wider residual). Returns 0, or -EINVAL after a
 * message when the source has no such tensor of the expected size. */
static int take_source(struct plan *p, const struct args *a, const char *name, bool is_norm,
                       int64_t ne0, int64_t ne1)
{
	int64_t t = gguf_find_tensor(a->from, name);
	const struct gguf_tensor_info *ti = t >= 0 ? gguf_tensor(a->from, t) : NULL;
	if (!ti || ti->ne[0] > ne0 || (ne1 && ti->ne[1] > ne1)) {
		fprintf(stderr,
		        "infill mkmodel: --from %s: no tensor %s of the size its shape says\n",
		        a->from_path, name);
		return -EINVAL;
	}
	p->src = ti;
	p->src_scale = is_norm ? sqrtf((float)a->from_shape.dim / (float)a->shape.dim) : 1.0f;
	return 0;
}

/* The parts[n] tensors the family has, named prefix + name; from the source
 * where `sourced` (--from). Returns 0 or a negative errno. */
static int plan_parts(struct plan *p, const struct args *a, uint64_t n_vocab, const char *prefix,
                      const struct part *parts, size_t n, bool sourced)
{
	int rc = 0;
	for (size_t k = 0; !rc && k < n; k++) {
		if (!family_has(a->shape.fam, parts[k].kind)) continue;
		char name[96];
		snprintf(name, sizeof name, "%s%s", prefix, parts[k].name);
		bool proj = !strcmp(parts[k].name, "attn_output.weight") ||
		            !strcmp(parts[k].name, "ffn_down.weight");
		bool writes = proj || !strcmp(parts[k].name, "attn_output.bias") ||
		              !strcmp(parts[k].name, "ffn_down.bias");
		bool is_bias =
		        parts[k].kind == LLAMA_TENSOR_BIAS || parts[k].kind == LLAMA_TENSOR_LN_BIAS;
		int64_t ne0 = dim_size(parts[k].ne0, &a->shape, n_vocab);
		int64_t ne1 = dim_size(parts[k].ne1, &a->shape, n_vocab);
		/* a grown model's biases too: at --perturb 0 its further layers add nothing */
		p->scale = (proj || (is_bias && a->from)) && (p->stream_shift > 0 || a->from)
		                   ? a->perturb
		                   : 1.0f;
		p->src = NULL;
		/* a grown model's further layers write only the source's dims of
		 * the residual: the rest stays zero, and the final norm scales the
		 * logits as the source's (written there too, the perturbation
		 * inflated the norm and flattened the target's probabilities) */
		p->live = a->from && writes ? a->from_shape.dim : 0;
		/* the padding's embedding and output rows are zeros */
		if (a->pad_vocab && parts[k].ne1 == LLAMA_DIM_VOCAB)
			p->live = (int64_t)n_vocab - a->pad_vocab;
		if (sourced) rc = take_source(p, a, name, ne1 == 0 && !is_bias, ne0, ne1);
		rc = rc ? rc : add_weight(p, name, a->type, ne0, ne1, is_bias, a->seed);
	}
	return rc;
}

/* Every tensor, in llama_tensors.h's order (each tensor's random stream
 * follows from its place in it). Returns 0 or a negative errno. */
static int plan_tensors(struct plan *p, const struct args *a, uint64_t n_vocab)
{
#define COUNT(parts) (sizeof parts / sizeof parts[0])
	bool from = a->from != NULL;
	int rc = plan_parts(p, a, n_vocab, "", first_parts, COUNT(first_parts), from);
	size_t first = p->n_jobs, per_layer = 0;
	for (uint32_t l = 0; !rc && l < a->shape.n_layer; l++) {
		char prefix[32];
		snprintf(prefix, sizeof prefix, "blk.%u.", l);
		/* a pair's further layers draw from streams no draft uses */
		if (a->pair_layers && l == a->pair_layers) p->stream_shift = 1000003;
		rc = plan_parts(p, a, n_vocab, prefix, layer_parts, COUNT(layer_parts),
		                from && l < a->from_shape.n_layer);
		if (l == 0) per_layer = p->n_jobs - first;
	}
	/* a pair's output: the draft's, drawn from the streams of its place there */
	p->stream_shift =
	        a->pair_layers ? -(int64_t)((a->shape.n_layer - a->pair_layers) * per_layer) : 0;
	rc = rc ? rc : plan_parts(p, a, n_vocab, "", last_parts, COUNT(last_parts), from);
	/* a source tensor not taken (a bias the first block lacks) would be
	 * dropped, and the grown model would not compute the source's function */
	int64_t taken = 0;
	for (size_t i = 0; from && i < p->n_jobs; i++) taken += p->jobs[i].src != NULL;
	if (!rc && from && taken != gguf_tensor_count(a->from)) {
		fprintf(stderr,
		        "infill mkmodel: --from %s: %lld of its %lld tensors are ones a grown "
		        "model carries; it would not compute the same function\n",
		        a->from_path, (long long)taken, (long long)gguf_tensor_count(a->from));
		rc = -EINVAL;
	}
	return rc;
#undef COUNT
}

int cli_mkmodel(int argc, char **argv)
{
	struct args a;
	int status = parse_args(argc, argv, &a);
	if (status) {
		gguf_close(a.from);
		return status == 1 ? 0 : status;
	}

	struct infill_error err;
	struct gguf_file *vocab = a.from ? a.from : gguf_open(a.vocab_path, &err);
	if (!vocab) {
		fprintf(stderr, "infill mkmodel: %s\n", err.message);
		return 1;
	}
	struct plan p = { 0 };
	uint64_t n_vocab = vocab_size(vocab, a.from ? a.from_path : a.vocab_path);
	int rc = n_vocab ? 0 : -EINVAL;
	if (n_vocab) n_vocab += a.pad_vocab;
	if (rc) goto done;

	size_t n_tensors = sizeof first_parts / sizeof first_parts[0] +
	                   sizeof last_parts / sizeof last_parts[0] +
	                   a.shape.n_layer * (sizeof layer_parts / sizeof layer_parts[0]);
	p.w = gguf_writer_new();
	p.jobs = calloc(n_tensors, sizeof *p.jobs);
	rc = p.w && p.jobs ? 0 : -ENOMEM;
	rc = rc ? rc : plan_keys(p.w, &a, vocab, n_vocab);
	rc = rc ? rc : plan_tensors(&p, &a, n_vocab);
	if (rc) {
		fprintf(stderr, "infill mkmodel: building the model description failed: %s\n",
		        strerror(-rc));
		goto done;
	}
	rc = gguf_writer_write(p.w, a.out, &err);
	if (rc) {
		fprintf(stderr, "infill mkmodel: %s\n", err.message);
		goto done;
	}
	const struct shape *sh = &a.shape;
	fprintf(stderr,
	        "mkmodel: wrote %s (%s %s, %u layers, dim %u, %u/%u heads, ffn %u, vocab %llu, %s",
	        a.out, sh->fam->arch, a.shape_name, sh->n_layer, sh->dim, sh->n_head, sh->n_head_kv,
	        sh->ffn, (unsigned long long)n_vocab, tensor_type_name(a.type));
	if (p.n_fallback) fprintf(stderr, "; %d matrices in a fallback type", p.n_fallback);
	if (a.from)
		fprintf(stderr, "; grown from %s's %u layers, dim %u", a.from_path,
		        a.from_shape.n_layer, a.from_shape.dim);
	fprintf(stderr, ")\n");
done:
	gguf_writer_free(p.w);
	free(p.jobs);
	gguf_close(vocab);
	return rc ? 1 : 0;
}
