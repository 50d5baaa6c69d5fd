/*
 * model.c - loading a Llama-family model from GGUF and running it.
 *
 * The families it knows are one table (arches below): what each normalizes
 * with, its FFN, its RoPE pairs, the biases it must have and whether its
 * embedding rows are scaled; everything else is the Llama block.
 * model_load reads the hyperparameters from metadata, finds every tensor by
 * its GGUF name (the lists in llama_tensors.h), checks shapes and types
 * (errors name the tensor), builds the tokenizer and hands the weights to a
 * backend (kernels/backend.h), which keeps pointing into the memory-mapped
 * file (cpu) or uploads them (cuda).
 * model_forward turns a batch of (token, position, kv_seq) entries into the
 * backend's batch of page tables, doing copy-on-write of shared pages first.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "backend.h"
#include "gguf.h"
#include "infer.h"
#include "kv.h"
#include "llama_tensors.h"
#include "quant.h"

#define NAME_LEN 48

struct model {
	struct gguf_file *gguf;
	struct tokenizer *tok;
	struct backend *backend;
	struct kv_pool *pool;
	struct model_info info;
	/* scratch for model_forward, grown to the largest batch */
	int32_t cap_tokens, cap_seqs;
	int32_t *seq_ids;
	struct kv_seq **seq_list;
	int32_t *seq_maxpos, *seq_minpos;
	struct backend_seq *bseqs;
	int32_t *eval_pos, *eval_rows;
	struct kv_seq **eval_seqs;
};

/* The error names the tensor at fault as well as saying what is wrong with it. */
struct model_params model_params_default(void)
{
	struct model_params p = { 0 };
	p.backend = INFER_BACKEND_AUTO;
	p.kv_bytes = 256u << 20;
	p.kv_page_size = 16;
	return p;
}

/* ---- loading ---- */

/*
 * The families: general.architecture -> the choices of kernels/backend.h.
 * Facts from llama.cpp's graphs (src/models/<family>.cpp) and converter
 * (convert_hf_to_gguf.py, conversion/gemma.py): qwen2, starcoder2 and gemma
 * rotate NeoX halves; starcoder2 is LayerNorm with a bias on every norm and
 * projection, a GELU MLP without gate, its epsilon under
 * attention.layer_norm_epsilon; gemma is GeGLU with its embedding rows
 * times sqrt(n_embd), and its RMSNorm weights were stored as 1 + w by the
 * converter, so the plain RMSNorm applies.
 */
struct arch {
	const char *name;
	enum backend_norm norm;
	enum backend_ffn ffn;
	bool rope_neox;
	bool qkv_bias;       /* LLAMA_TENSOR_BIAS tensors required (else optional) */
	bool ln_bias;        /* LLAMA_TENSOR_LN_BIAS tensors required (else optional) */
	bool embd_scale;     /* embedding rows times sqrt(n_embd) */
	const char *eps_key; /* after "<arch>." */
};

static const struct arch arches[] = {
	{ "llama", BACKEND_NORM_RMS, BACKEND_FFN_SWIGLU, false, false, false, false,
	  "attention.layer_norm_rms_epsilon" },
	{ "qwen2", BACKEND_NORM_RMS, BACKEND_FFN_SWIGLU, true, false, false, false,
	  "attention.layer_norm_rms_epsilon" },
	{ "starcoder2", BACKEND_NORM_LAYER, BACKEND_FFN_GELU, true, true, true, false,
	  "attention.layer_norm_epsilon" },
	{ "gemma", BACKEND_NORM_RMS, BACKEND_FFN_GEGLU, true, false, false, true,
	  "attention.layer_norm_rms_epsilon" },
};

struct loader {
	const char *path;
	struct gguf_file *f;
	char arch[32];
	const struct arch *a;    /* the family's entry in arches */
	char (*names)[NAME_LEN]; /* storage for tensor names handed to the backend */
	int n_names, cap_names;
	struct infill_error *err;
};

static int tensor_fail(struct loader *ld, int code, const char *name, const char *what)
{
	error_set(ld->err, code, "%s: tensor %s %s", ld->path, name, what);
	error_tensor(ld->err, name, strlen(name));
	return code;
}

/* Likewise for a metadata key (its full name, "llama.block_count"). */
static int key_fail(struct loader *ld, int code, const char *key, const char *what)
{
	error_set(ld->err, code, "%s: %s %s", ld->path, key, what);
	error_key(ld->err, key, strlen(key));
	return code;
}

static bool get_u32(struct loader *ld, const char *suffix, uint32_t *out)
{
	char key[128];
	snprintf(key, sizeof key, "%s.%s", ld->arch, suffix);
	return gguf_get_u32(ld->f, key, out);
}

static bool get_f32(struct loader *ld, const char *suffix, float *out)
{
	char key[128];
	snprintf(key, sizeof key, "%s.%s", ld->arch, suffix);
	return gguf_get_f32(ld->f, key, out);
}

/* Fills *t from the GGUF tensor `name`; absent tensors leave data NULL. */
static int find_tensor(struct loader *ld, const char *name, struct backend_tensor *t)
{
	memset(t, 0, sizeof *t);
	if (ld->n_names >= ld->cap_names)
		return error_set(ld->err, -EINVAL, "%s: too many tensors", ld->path);
	char *slot = ld->names[ld->n_names++];
	snprintf(slot, NAME_LEN, "%s", name);
	t->name = slot;
	int64_t i = gguf_find_tensor(ld->f, name);
	if (i < 0) return 0;
	const struct gguf_tensor_info *ti = gguf_tensor(ld->f, i);
	if (ti->n_dims > 2) {
		char what[64];
		snprintf(what, sizeof what, "has %u dimensions, expected 1 or 2", ti->n_dims);
		return tensor_fail(ld, -EINVAL, name, what);
	}
	t->type = ti->type;
	t->ne[0] = ti->ne[0];
	t->ne[1] = ti->n_dims >= 2 ? ti->ne[1] : 1;
	t->data = ti->data;
	t->nbytes = ti->nbytes;
	return 0;
}

static int require(struct loader *ld, const struct backend_tensor *t)
{
	if (!t->data) return tensor_fail(ld, -EINVAL, t->name, "is missing");
	return 0;
}

/* Whether this family's file must hold a tensor of this kind. */
static bool kind_required(const struct arch *a, enum llama_tensor_kind kind)
{
	switch (kind) {
	case LLAMA_TENSOR_REQUIRED: return true;
	case LLAMA_TENSOR_BIAS: return a->qkv_bias;
	case LLAMA_TENSOR_LN_BIAS: return a->ln_bias;
	case LLAMA_TENSOR_GATE: return a->ffn != BACKEND_FFN_GELU;
	case LLAMA_TENSOR_TIED: return false;
	}
	return false;
}

static int load_hparams(struct loader *ld, struct backend_hparams *hp, struct model_info *info)
{
	struct gguf_str a;
	if (!gguf_get_str(ld->f, "general.architecture", &a))
		return key_fail(ld, -EINVAL, "general.architecture",
		                "is missing (the file says which model it holds there)");
	snprintf(ld->arch, sizeof ld->arch, "%.*s", (int)(a.len < 31 ? a.len : 31), a.ptr);
	ld->a = NULL;
	for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
		if (!strcmp(ld->arch, arches[i].name)) ld->a = &arches[i];
	if (!ld->a) {
		char what[128];
		snprintf(what, sizeof what,
		         "is \"%s\", which is not supported (llama, qwen2, starcoder2 and gemma "
		         "are)",
		         ld->arch);
		return key_fail(ld, -ENOTSUP, "general.architecture", what);
	}
	uint32_t v;
	memset(hp, 0, sizeof *hp);
#define REQ(field, key)                                                               \
	do {                                                                          \
		if (!get_u32(ld, key, &v) || v == 0 || v > (1u << 24)) {              \
			char full[128];                                               \
			snprintf(full, sizeof full, "%s.%s", ld->arch, key);          \
			return key_fail(ld, -EINVAL, full,                            \
			                "is missing or not a uint32 in 1..16777216"); \
		}                                                                     \
		hp->field = (int32_t)v;                                               \
	} while (0)
	REQ(n_layer, "block_count");
	REQ(n_embd, "embedding_length");
	REQ(n_head, "attention.head_count");
	REQ(n_ff, "feed_forward_length");
#undef REQ
	hp->n_head_kv = get_u32(ld, "attention.head_count_kv", &v) ? (int32_t)v : hp->n_head;
	/* attention.key_length: a head size other than n_embd / n_head (gemma 7B:
	 * 16 heads of 256 over 3072); value_length must be the same. */
	uint32_t kl = 0, vl = 0;
	bool has_kl = get_u32(ld, "attention.key_length", &kl);
	if (has_kl && (kl == 0 || kl > BACKEND_MAX_HEAD_DIM ||
	               (get_u32(ld, "attention.value_length", &vl) && vl != kl))) {
		char full[128], what[128];
		snprintf(full, sizeof full, "%s.attention.key_length", ld->arch);
		snprintf(what, sizeof what,
		         "is %u (value_length %u): supported are equal sizes in 1..%d", kl, vl,
		         BACKEND_MAX_HEAD_DIM);
		return key_fail(ld, -ENOTSUP, full, what);
	}
	if (hp->n_head_kv <= 0 || (!has_kl && hp->n_embd % hp->n_head != 0)) {
		char full[128], what[96];
		snprintf(full, sizeof full, "%s.embedding_length", ld->arch);
		snprintf(what, sizeof what, "(%d) is not a multiple of the head count %d",
		         hp->n_embd, hp->n_head);
		return key_fail(ld, -EINVAL, full, what);
	}
	hp->head_dim = has_kl ? (int32_t)kl : hp->n_embd / hp->n_head;
	hp->n_rot = get_u32(ld, "rope.dimension_count", &v) ? (int32_t)v : hp->head_dim;
	if (!get_f32(ld, "rope.freq_base", &hp->rope_base)) hp->rope_base = 10000.0f;
	hp->rope_freq_scale = 1.0f;
	char key[128];
	struct gguf_str st;
	float factor = 0;
	snprintf(key, sizeof key, "%s.rope.scaling.type", ld->arch);
	bool has_type = gguf_get_str(ld->f, key, &st);
	if (has_type && !(st.len == 6 && !memcmp(st.ptr, "linear", 6)) &&
	    !(st.len == 4 && !memcmp(st.ptr, "none", 4))) {
		char what[128];
		snprintf(what, sizeof what, "is \"%.*s\", which is not supported (linear is)",
		         (int)(st.len < 64 ? st.len : 64), st.ptr);
		return key_fail(ld, -ENOTSUP, key, what);
	}
	if ((!has_type || st.len == 6) &&
	    (get_f32(ld, "rope.scaling.factor", &factor) ||
	     get_f32(ld, "rope.scale_linear", &factor)) &&
	    factor > 0)
		hp->rope_freq_scale = 1.0f / factor;
	if (!get_f32(ld, ld->a->eps_key, &hp->rms_eps)) hp->rms_eps = 1e-5f;
	hp->rope_neox = ld->a->rope_neox;
	hp->norm = ld->a->norm;
	hp->ffn = ld->a->ffn;
	hp->embd_scale = ld->a->embd_scale ? sqrtf((float)hp->n_embd) : 0.0f;
	info->n_ctx_train = 4096;
	if (get_u32(ld, "context_length", &v)) {
		/* 0 would leave no room for a prompt; past 2^24 is no model we
		 * could hold, and int32 positions would overflow. */
		if (v == 0 || v > (1u << 24)) {
			char full[96], what[64];
			snprintf(full, sizeof full, "%s.context_length", ld->arch);
			snprintf(what, sizeof what, "is %u, outside 1..16777216", v);
			return key_fail(ld, -EINVAL, full, what);
		}
		info->n_ctx_train = (int32_t)v;
	}
	snprintf(info->arch, sizeof info->arch, "%s", ld->arch);
	return 0;
}

static void model_scratch_free(struct model *m)
{
	free(m->seq_ids), free(m->seq_list), free(m->seq_maxpos), free(m->seq_minpos),
	        free(m->bseqs);
	free(m->eval_pos), free(m->eval_rows), free(m->eval_seqs);
}

void model_free(struct model *m)
{
	if (!m) return;
	kv_pool_destroy(m->pool);
	backend_destroy(m->backend);
	tokenizer_free(m->tok);
	gguf_close(m->gguf);
	model_scratch_free(m);
	free(m);
}

/* Never more worker threads than the CPUs we may run on: more only time-slice
 * against each other at every barrier of every layer (1,025
 * threads from a project file once made one completion take 6.5 s). 0 stays 0
 * (the backend's choice: one per physical core). */
static int model_threads(int asked)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1) cpus = 1;
	return asked > cpus ? (int)cpus : asked;
}

bool model_file_changed(const struct model *m, char *why, size_t why_size)
{
	return m && m->gguf && gguf_file_changed(m->gguf, why, why_size);
}

/* kv_bytes 0 and a page size <= 0 mean "the default", so that callers may
 * fill only what they care about. */
static struct model_params params_with_defaults(const struct model_params *params)
{
	struct model_params p = *params;
	struct model_params d = model_params_default();
	if (p.kv_bytes == 0) p.kv_bytes = d.kv_bytes;
	if (p.kv_page_size <= 0) p.kv_page_size = d.kv_page_size;
	return p;
}

/* Finds one tensor and fails when this family needs it and the file lacks it. */
static int find_kind(struct loader *ld, const char *name, struct backend_tensor *t,
                     enum llama_tensor_kind kind)
{
	if (find_tensor(ld, name, t)) return -1;
	if (kind_required(ld->a, kind) && require(ld, t)) return -1;
	return 0;
}

/* The tensors outside the blocks: embedding, final norm, output. An absent
 * output shares the embedding (tied), which fixes n_vocab as its rows. */
static int find_whole_tensors(struct loader *ld, struct backend_weights *w)
{
	struct {
		const char *name;
		struct backend_tensor *t;
		enum llama_tensor_kind kind;
	} whole[] = {
#define WHOLE(name, field, kind, ne0, ne1) { name, &w->field, kind },
		LLAMA_TENSORS_FIRST(WHOLE) LLAMA_TENSORS_LAST(WHOLE)
#undef WHOLE
	};
	for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
		if (find_kind(ld, whole[i].name, whole[i].t, whole[i].kind)) return -1;
	if (!w->output.data) /* tied embeddings */
		w->output = w->tok_embd;
	w->hp.n_vocab = (int32_t)w->tok_embd.ne[1];
	return 0;
}

/* A vocab_size key that disagrees with the embedding's rows means a file
 * put together from two models: refuse it rather than index past a table. */
static int check_vocab_size(struct loader *ld, const struct backend_weights *w)
{
	uint32_t vs;
	char key[96];
	snprintf(key, sizeof key, "%s.vocab_size", ld->arch);
	if (gguf_get_u32(ld->f, key, &vs) && (int64_t)vs != w->tok_embd.ne[1]) {
		char what[96];
		snprintf(what, sizeof what, "is %u but token_embd.weight has %lld rows", vs,
		         (long long)w->tok_embd.ne[1]);
		return key_fail(ld, -EINVAL, key, what);
	}
	return 0;
}

/* Every block's tensors, "blk.<l>.<suffix>", into layers[0..n_layer). */
static int find_layer_tensors(struct loader *ld, struct backend_layer *layers, int n_layer)
{
	for (int l = 0; l < n_layer; l++) {
		struct backend_layer *L = &layers[l];
		struct {
			const char *suffix;
			struct backend_tensor *t;
			enum llama_tensor_kind kind;
		} list[] = {
#define LAYER(name, field, kind, ne0, ne1) { name, &L->field, kind },
			LLAMA_TENSORS_LAYER(LAYER)
#undef LAYER
		};
		for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
			char name[NAME_LEN];
			snprintf(name, sizeof name, "blk.%d.%s", l, list[i].suffix);
			if (find_kind(ld, name, list[i].t, list[i].kind)) return -1;
		}
	}
	return 0;
}

/* Reads the hyperparameters and finds every weight. ld->names and *layers
 * are allocated here and stay the caller's to free, on failure too: the
 * weights point into them until the backend has been created. */
static int load_weights(struct loader *ld, struct model *m, struct backend_weights *w,
                        struct backend_layer **layers)
{
	memset(w, 0, sizeof *w);
	if (load_hparams(ld, &w->hp, &m->info) != 0) return -1;
	ld->cap_names = 4 + 18 * w->hp.n_layer;
	ld->names = calloc((size_t)ld->cap_names, NAME_LEN);
	*layers = calloc((size_t)w->hp.n_layer, sizeof **layers);
	if (!ld->names || !*layers) return error_set(ld->err, -ENOMEM, "out of memory");
	if (find_whole_tensors(ld, w) || check_vocab_size(ld, w) ||
	    find_layer_tensors(ld, *layers, w->hp.n_layer))
		return -1;
	w->layers = *layers;
	w->data_mapped = gguf_is_mapped(m->gguf);
	return 0;
}

/* Facts for benchmarks: bytes read per decode step = every weight but the
 * embedding table (which a step reads one row of), unless it is also the
 * output. */
static void info_fill_shapes(struct model_info *info, const struct gguf_file *f,
                             const struct backend_weights *w)
{
	const struct backend_hparams *hp = &w->hp;
	info->n_layer = hp->n_layer, info->n_embd = hp->n_embd, info->n_head = hp->n_head;
	info->n_head_kv = hp->n_head_kv, info->head_dim = hp->head_dim, info->n_ff = hp->n_ff;
	info->n_vocab = hp->n_vocab;
	info->file_type = w->layers[0].wq.type;
	for (int64_t i = 0; i < gguf_tensor_count(f); i++)
		info->weight_bytes += gguf_tensor(f, i)->nbytes;
	info->decode_read_bytes = info->weight_bytes - w->tok_embd.nbytes;
	if (w->output.data == w->tok_embd.data) info->decode_read_bytes += w->tok_embd.nbytes;
}

/* The tokenizer, checked against the weights: BOS and EOS are used in every
 * prompt and every stop, so an id past the vocabulary is a broken file, not
 * something to guess around; a token without an embedding row likewise. */
static int load_tokenizer(struct model *m, const char *path, int32_t n_vocab,
                          struct infill_error *err)
{
	m->tok = tokenizer_load(m->gguf, err);
	if (!m->tok) {
		error_prefix(err, "%s: tokenizer: ", path);
		return -1;
	}
	static const char *const special_keys[] = { "tokenizer.ggml.bos_token_id",
		                                    "tokenizer.ggml.eos_token_id" };
	for (size_t i = 0; i < sizeof special_keys / sizeof special_keys[0]; i++) {
		uint32_t id;
		if (gguf_get_u32(m->gguf, special_keys[i], &id) &&
		    (int64_t)id >= tokenizer_vocab_size(m->tok)) {
			error_set(err, -EINVAL, "%s: %s is %u, past the vocabulary of %d tokens",
			          path, special_keys[i], id, tokenizer_vocab_size(m->tok));
			error_key(err, special_keys[i], strlen(special_keys[i]));
			return -1;
		}
	}
	if (tokenizer_vocab_size(m->tok) > n_vocab) {
		error_set(err, -EINVAL,
		          "%s: the tokenizer has %d tokens but token_embd.weight only %d rows",
		          path, tokenizer_vocab_size(m->tok), n_vocab);
		return -1;
	}
	return 0;
}

/* The KV pool's size in pages: kv_tokens when asked for, else as many pages
 * as kv_bytes holds, kept within 4..2^24. */
static int32_t kv_pages_for(const struct model_params *p, const struct backend_hparams *hp,
                            uint32_t kv_type)
{
	size_t page_bytes = backend_kv_bytes_per_page(hp, p->kv_page_size, kv_type);
	size_t n_pages = p->kv_tokens > 0 ? ((size_t)p->kv_tokens + (size_t)p->kv_page_size - 1) /
	                                            (size_t)p->kv_page_size
	                                  : p->kv_bytes / page_bytes;
	if (n_pages < 4) n_pages = 4;
	if (n_pages > (1u << 24)) n_pages = 1u << 24;
	return (int32_t)n_pages;
}

/* Hands the weights to a backend and sizes the KV pool over it. The
 * backend's error keeps the tensor it names. */
static int start_backend(struct model *m, const struct model_params *p,
                         const struct backend_weights *w, struct infill_error *err)
{
	struct backend_config cfg = {
		.kind = p->backend == INFER_BACKEND_CPU    ? BACKEND_KIND_CPU
		        : p->backend == INFER_BACKEND_CUDA ? BACKEND_KIND_CUDA
		                                           : BACKEND_KIND_AUTO,
		.n_threads = model_threads(p->n_threads),
		.kv_page_size = p->kv_page_size,
		.kv_type = p->kv_q8_0  ? TENSOR_TYPE_Q8_0
		           : p->kv_f32 ? TENSOR_TYPE_F32
		                       : TENSOR_TYPE_F16,
		.progress = p->progress,
		.progress_user = p->progress_user,
	};
	struct infill_error be = { 0 };
	bool auto_q8 = p->kv_auto && !p->kv_q8_0 && !p->kv_f32 && w->hp.head_dim % 32 == 0;
	if (auto_q8 && cfg.kind == BACKEND_KIND_AUTO) {
		/* a GPU keeps f16; only where there is none does the choice fall
		 * to the CPU, and with it to q8_0 */
		cfg.kind = BACKEND_KIND_CUDA;
		cfg.kv_n_pages = kv_pages_for(p, &w->hp, cfg.kv_type);
		m->backend = backend_create(&cfg, w, &be);
		cfg.kind = BACKEND_KIND_CPU;
	}
	if (!m->backend) {
		if (auto_q8 && cfg.kind == BACKEND_KIND_CPU) cfg.kv_type = TENSOR_TYPE_Q8_0;
		cfg.kv_n_pages = kv_pages_for(p, &w->hp, cfg.kv_type);
		memset(&be, 0, sizeof be);
		m->backend = backend_create(&cfg, w, &be);
	}
	if (!m->backend) {
		if (err) {
			*err = be; /* the backend's tensor and code kept */
			error_prefix(err, "%s: ", p->path);
		}
		return -1;
	}
	m->pool = kv_pool_create(m->backend, cfg.kv_n_pages, cfg.kv_page_size);
	if (!m->pool) {
		error_set(err, -ENOMEM, "out of memory for the KV pool");
		return -1;
	}
	m->info.kv_page_size = cfg.kv_page_size;
	m->info.kv_n_pages = cfg.kv_n_pages;
	m->info.kv_type = cfg.kv_type == TENSOR_TYPE_Q8_0  ? "q8_0"
	                  : cfg.kv_type == TENSOR_TYPE_F32 ? "f32"
	                                                   : "f16";
	m->info.backend_name = backend_name(m->backend);
	m->info.backend = backend_kind(m->backend) == BACKEND_KIND_CUDA ? INFER_BACKEND_CUDA
	                                                                : INFER_BACKEND_CPU;
	return 0;
}

struct model *model_load(const struct model_params *params, struct infill_error *err)
{
	struct model_params p = params_with_defaults(params);
	struct model *m = calloc(1, sizeof *m);
	if (!m) {
		error_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	m->gguf = gguf_open(p.path, err); /* its error names the file, offset, key or tensor */
	if (!m->gguf) {
		model_free(m);
		return NULL;
	}
	struct loader ld = { .path = p.path, .f = m->gguf, .err = err };
	struct backend_weights w;
	struct backend_layer *layers = NULL;
	int rc = load_weights(&ld, m, &w, &layers);
	if (!rc) info_fill_shapes(&m->info, m->gguf, &w);
	if (!rc) rc = load_tokenizer(m, p.path, w.hp.n_vocab, err);
	if (!rc) rc = start_backend(m, &p, &w, err);
	/* The cpu backend keeps the names it was given only for init-time errors. */
	free(ld.names);
	free(layers);
	if (rc) {
		model_free(m);
		return NULL;
	}
	return m;
}

const struct model_info *model_info(const struct model *m)
{
	return &m->info;
}

const struct tokenizer *model_tokenizer(const struct model *m)
{
	return m->tok;
}

struct kv_pool *model_kv_pool(struct model *m)
{
	return m->pool;
}

/* ---- forward ---- */

static int grow_scratch(struct model *m, int32_t n_tokens)
{
	if (n_tokens <= m->cap_tokens) return 0;
	model_scratch_free(m);
	m->seq_ids = malloc((size_t)n_tokens * sizeof *m->seq_ids);
	m->seq_list = malloc((size_t)n_tokens * sizeof *m->seq_list);
	m->seq_maxpos = malloc((size_t)n_tokens * sizeof *m->seq_maxpos);
	m->seq_minpos = malloc((size_t)n_tokens * sizeof *m->seq_minpos);
	m->bseqs = malloc((size_t)n_tokens * sizeof *m->bseqs);
	m->eval_pos = malloc((size_t)n_tokens * sizeof *m->eval_pos);
	m->eval_rows = malloc((size_t)n_tokens * sizeof *m->eval_rows);
	m->eval_seqs = malloc((size_t)n_tokens * sizeof *m->eval_seqs);
	if (!m->eval_seqs || !m->seq_ids || !m->seq_list || !m->seq_maxpos || !m->seq_minpos ||
	    !m->bseqs || !m->eval_pos || !m->eval_rows) {
		model_scratch_free(m);
		m->seq_ids = NULL, m->seq_list = NULL, m->seq_maxpos = NULL, m->seq_minpos = NULL;
		m->bseqs = NULL, m->eval_pos = NULL, m->eval_rows = NULL, m->eval_seqs = NULL;
		m->cap_tokens = 0;
		return -ENOMEM;
	}
	m->cap_tokens = n_tokens;
	return 0;
}

int model_forward(struct model *m, const struct model_batch *b, struct infill_error *err)
{
	if (b->n_tokens <= 0) return error_set(err, -EINVAL, "forward: empty batch");
	if (grow_scratch(m, b->n_tokens) != 0)
		return error_set(err, -ENOMEM, "forward: out of memory");
	/* Distinct sequences, in order of first appearance. */
	int32_t n_seqs = 0, last = -1;
	for (int32_t i = 0; i < b->n_tokens; i++) {
		struct kv_seq *s = b->seqs[i];
		if (!s || kv_seq_pool(s) != m->pool)
			return error_set(err, -EINVAL,
			                 "forward: entry %d has no sequence of this model", i);
		if (b->pos[i] < 0)
			return error_set(err, -EINVAL, "forward: entry %d has negative position %d",
			                 i, b->pos[i]);
		int32_t k = last >= 0 && m->seq_list[last] == s ? last : -1;
		for (int32_t j = 0; k < 0 && j < n_seqs; j++)
			if (m->seq_list[j] == s) k = j;
		if (k < 0) {
			k = n_seqs++;
			m->seq_list[k] = s;
			m->seq_maxpos[k] = b->pos[i];
			m->seq_minpos[k] = b->pos[i];
		}
		if (b->pos[i] > m->seq_maxpos[k]) m->seq_maxpos[k] = b->pos[i];
		if (b->pos[i] < m->seq_minpos[k]) m->seq_minpos[k] = b->pos[i];
		m->seq_ids[i] = k;
		last = k;
	}
	for (int32_t k = 0; k < n_seqs; k++) {
		struct kv_seq *s = m->seq_list[k];
		int32_t from = m->seq_minpos[k] < kv_seq_len(s) ? m->seq_minpos[k] : kv_seq_len(s);
		int rc = kv_seq_reserve_from(s, from, m->seq_maxpos[k] + 1, err);
		if (rc) return rc;
	}
	for (int32_t k = 0; k < n_seqs; k++)
		m->bseqs[k].pages = kv_seq_pages(m->seq_list[k], &m->bseqs[k].n_pages);
	struct backend_batch bb = {
		.n_tokens = b->n_tokens,
		.tokens = b->tokens,
		.positions = b->pos,
		.seq_ids = m->seq_ids,
		.n_seqs = n_seqs,
		.seqs = m->bseqs,
		.n_out = b->n_out,
		.out_rows = b->out_rows,
		.logits = b->logits,
		.argmax = b->argmax,
		.stop = b->stop,
		.stop_ud = b->stop_ud,
	};
	struct infill_error be = { 0 };
	int rc = backend_forward(m->backend, &bb, &be);
	if (rc == -ECANCELED) /* slots from the batch's first position on are partly written */
		for (int32_t k = 0; k < n_seqs; k++)
			if (kv_seq_len(m->seq_list[k]) > m->seq_minpos[k])
				kv_seq_truncate(m->seq_list[k], m->seq_minpos[k]);
	if (rc) {
		if (err) *err = be;
		return rc;
	}
	for (int32_t k = 0; k < n_seqs; k++)
		if (m->seq_maxpos[k] + 1 > kv_seq_len(m->seq_list[k]))
			kv_seq_set_len(m->seq_list[k], m->seq_maxpos[k] + 1);
	return 0;
}

#define EVAL_CHUNK 512

int model_eval(struct model *m, struct kv_seq *s, const int32_t *tokens, int32_t n, float *logits,
               struct infill_error *err)
{
	if (n <= 0) return error_set(err, -EINVAL, "eval: no tokens");
	if (grow_scratch(m, n < EVAL_CHUNK ? n : EVAL_CHUNK) != 0)
		return error_set(err, -ENOMEM, "eval: out of memory");
	/* One sequence pointer repeated: model_forward wants one per entry. */
	struct kv_seq **seqs = m->eval_seqs;
	int rc = 0;
	for (int32_t done = 0; done < n && rc == 0;) {
		int32_t c = n - done < EVAL_CHUNK ? n - done : EVAL_CHUNK;
		int32_t base = kv_seq_len(s);
		for (int32_t i = 0; i < c; i++) {
			m->eval_pos[i] = base + i;
			seqs[i] = s;
		}
		bool lastc = done + c == n;
		int32_t row = c - 1;
		struct model_batch mb = {
			.n_tokens = c,
			.tokens = tokens + done,
			.pos = m->eval_pos,
			.seqs = seqs,
			.n_out = lastc && logits ? 1 : 0,
			.out_rows = &row,
			.logits = lastc ? logits : NULL,
		};
		rc = model_forward(m, &mb, err);
		done += c;
	}
	return rc;
}

int model_kv_shift(struct model *m, struct kv_seq *src, int32_t src_start, struct kv_seq *dst,
                   int32_t dst_start, int32_t n, struct infill_error *err)
{
	if (n <= 0) return 0;
	if (src_start < 0 || src_start + n > kv_seq_len(src))
		return error_set(err, -EINVAL,
		                 "kv shift: source range [%d, %d) is not cached (length %d)",
		                 src_start, src_start + n, kv_seq_len(src));
	int rc = kv_seq_reserve_from(dst, dst_start, dst_start + n, err);
	if (rc) return rc;
	struct backend_seq bs, bd;
	bs.pages = kv_seq_pages(src, &bs.n_pages);
	bd.pages = kv_seq_pages(dst, &bd.n_pages);
	struct infill_error be = { 0 };
	rc = backend_kv_shift(m->backend, &bs, src_start, &bd, dst_start, n, &be);
	if (rc) {
		if (err) *err = be;
		return rc;
	}
	if (dst_start + n > kv_seq_len(dst)) kv_seq_set_len(dst, dst_start + n);
	return 0;
}

/* ---- machine facts ---- */

int infer_physical_cores(void)
{
	return backend_cpu_physical_cores();
}

double infer_read_bandwidth_gbs(int n_threads, size_t bytes, double *cpu_gbs)
{
	return backend_cpu_read_gbs(n_threads, bytes, cpu_gbs);
}

double infer_process_cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
