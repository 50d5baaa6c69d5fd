/*
 * backend.h - the public face of kernels/: one compute backend interface.
 *
 * A backend runs the whole Llama forward pass with its own fused kernels
 * (docs/architecture.md, "Backends"): there is no graph library. Each
 * backend (cpu/, cuda/) fills a small vtable; infer/ talks to it only
 * through the backend_* wrappers below. What a backend is given:
 *
 *   - the model: hyperparameters + every weight tensor as stored in the GGUF
 *     file (quantized blocks kept, GGUF layout: ne[0] is the contiguous input
 *     dimension, ne[1] the rows), see struct backend_weights;
 *   - a KV page pool it allocates once in its own memory (host for cpu,
 *     device for cuda): n_pages pages of page_size token slots, each page
 *     holding K and V of every layer for those slots. Which page belongs to
 *     which sequence, reference counts and copy-on-write are infer/'s job
 *     (infer/kv.c); the backend only stores pages and copies/rotates them;
 *   - batches of (token, position, sequence) entries plus one page table per
 *     sequence. Slot == position: the K/V of the token at position p of a
 *     sequence lives in page pages[p / page_size], slot p % page_size.
 *
 * Threads: a backend object is used by one thread at a time (the engine
 * thread); it may run worker threads of its own inside a call, and the
 * calling thread joins in (the cpu backend's kernels use up to ~400 KB of
 * its stack: give the engine thread the default 8 MB).
 * Errors: calls return 0 or a negative errno value and fill *err (when not
 * NULL) with the same code, the tensor at fault when there is one, and a
 * message naming the tensor, page or value at fault.
 */
#ifndef INFILL_KERNELS_BACKEND_H
#define INFILL_KERNELS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* C linkage for the CUDA module (backend.cu is C++). */
#ifdef __cplusplus
extern "C" {
#endif


/* ---- the model, as infer/model.c hands it over ---- */

enum backend_kind {
	BACKEND_KIND_AUTO = 0, /* cuda when a GPU and the module load, else cpu */
	BACKEND_KIND_CPU = 1,
	BACKEND_KIND_CUDA = 2,
};

/* One weight tensor exactly as stored in the GGUF file. */
struct backend_tensor {
	const char *name; /* borrowed, NUL-terminated (for error messages) */
	/* enum tensor_type (quant.h): GGML numbering, F32=0, F16=1, Q4_0=2,
	 * Q8_0=8, Q4_K=12, Q6_K=14, BF16=30 */
	uint32_t type;
	/* ne[0]: contiguous (input) size, ne[1]: rows (output size); 1-D
	 * tensors have ne[1] = 1 */
	int64_t ne[2];
	const void *data; /* borrowed; NULL marks an absent optional tensor (biases) */
	uint64_t nbytes;
};

#define BACKEND_MAX_HEAD_DIM 1024

/* How a block normalizes its input (and the output head its last state). */
enum backend_norm {
	BACKEND_NORM_RMS = 0,   /* x / sqrt(mean(x^2) + eps) * w (llama, qwen2, gemma) */
	BACKEND_NORM_LAYER = 1, /* (x - mean) / sqrt(var + eps) * w + b (starcoder2) */
};

/* The feed-forward block's activation. GELU is ggml's CPU GELU: the tanh
 * form looked up in a table on the f16 grid (input and output rounded to
 * f16), which is what llama.cpp's logits were made with. */
enum backend_ffn {
	BACKEND_FFN_SWIGLU = 0, /* down(silu(gate(x)) * up(x)) (llama, qwen2) */
	BACKEND_FFN_GELU = 1,   /* down(gelu(up(x) + b_up)) + b_down, no gate (starcoder2) */
	BACKEND_FFN_GEGLU = 2,  /* down(gelu(gate(x)) * up(x)) (gemma) */
};

struct backend_hparams {
	int32_t n_layer;
	int32_t n_embd; /* hidden size */
	int32_t n_head; /* query heads */
	int32_t n_head_kv; /* key/value heads (GQA: query head h uses kv head h / (n_head / n_head_kv)) */
	int32_t head_dim; /* n_embd / n_head, at most BACKEND_MAX_HEAD_DIM */
	int32_t n_ff;     /* FFN inner size */
	int32_t n_vocab;
	int32_t n_rot;   /* rotated dims per head (rope.dimension_count), <= head_dim */
	float rope_base; /* rope.freq_base, e.g. 10000 or 100000 */
	float rope_freq_scale; /* 1 / linear scaling factor (0.25 for DeepSeek-Coder), 1 without scaling */
	bool rope_neox; /* false: adjacent pairs (x[2i], x[2i+1]) (llama); true: halves (x[i], x[i+n_rot/2]) (qwen2) */
	float rms_eps; /* the norm's epsilon: layer_norm_rms_epsilon, or layer_norm_epsilon for LayerNorm */
	enum backend_norm norm;
	enum backend_ffn ffn;
	/* the embedding rows are multiplied by this (gemma: sqrt(n_embd)); 0 or 1: not scaled */
	float embd_scale;
};

/* Per layer; shapes in GGUF order [ne0, ne1]. */
struct backend_layer {
	struct backend_tensor attn_norm; /* [n_embd] F32 */
	struct backend_tensor
	        attn_norm_b; /* [n_embd] F32 LayerNorm bias (starcoder2); data NULL when absent */
	struct backend_tensor wq;         /* [n_embd, n_head*head_dim] */
	struct backend_tensor wk;         /* [n_embd, n_head_kv*head_dim] */
	struct backend_tensor wv;         /* [n_embd, n_head_kv*head_dim] */
	struct backend_tensor bq, bk, bv; /* [rows] F32 biases (qwen2); data NULL when absent */
	struct backend_tensor wo;         /* [n_head*head_dim, n_embd] */
	struct backend_tensor bo;         /* [n_embd] F32 (starcoder2); data NULL when absent */
	struct backend_tensor ffn_norm;   /* [n_embd] F32 */
	struct backend_tensor ffn_norm_b; /* [n_embd] F32 LayerNorm bias; data NULL when absent */
	struct backend_tensor w_gate;     /* [n_embd, n_ff]; data NULL with BACKEND_FFN_GELU */
	struct backend_tensor w_up;       /* [n_embd, n_ff] */
	struct backend_tensor b_up;       /* [n_ff] F32 (starcoder2); data NULL when absent */
	struct backend_tensor w_down;     /* [n_ff, n_embd] */
	struct backend_tensor b_down;     /* [n_embd] F32 (starcoder2); data NULL when absent */
};

struct backend_weights {
	struct backend_hparams hp;
	struct backend_tensor tok_embd;    /* [n_embd, n_vocab] */
	struct backend_tensor output_norm; /* [n_embd] F32 */
	struct backend_tensor
	        output_norm_b; /* [n_embd] F32 LayerNorm bias; data NULL when absent */
	/* [n_embd, n_vocab]; equal to tok_embd when the model ties them */
	struct backend_tensor output;
	/* [n_layer], borrowed for the duration of backend_create */
	const struct backend_layer *layers;
	/* The tensors' data lie in a read-only private file mapping (gguf_open)
	 * that outlives the backend: a backend that keeps its own copy of a
	 * tensor may drop those pages from memory (madvise), since touching them
	 * again would only read them back from the file. False for a caller's
	 * buffer, whose pages must be left alone. */
	bool data_mapped;
};

/* ---- creation ---- */

struct backend_config {
	enum backend_kind kind;
	int32_t n_threads; /* cpu worker threads; <= 0: physical cores */
	int32_t device;    /* cuda device ordinal */
	/* KV pool: n_pages pages of page_size slots; kv_type F32 (0), F16 (1) or Q8_0 (8).
	 * backend_kv_bytes_per_page() tells how much one page costs. */
	int32_t kv_n_pages;
	int32_t kv_page_size;
	uint32_t kv_type;
	/* Called during backend_create with fractions in [0, 1] (weight upload);
	 * may be NULL. Runs on the calling thread. */
	void (*progress)(void *user, float fraction);
	void *progress_user;
};

/*
 * Creates a backend for `w`. Tensor data is borrowed: the cpu backend keeps
 * pointing into it (keep the file mapped until backend_destroy); the cuda
 * backend copies it to the device during the call. struct backend_weights and
 * its layer array need only live for the call. Returns a new backend (free
 * with backend_destroy) or NULL with *err set: an unsupported tensor type or
 * shape names the tensor; BACKEND_KIND_CUDA without a usable GPU or module
 * says why; BACKEND_KIND_AUTO falls back to cpu silently (backend_name tells).
 */
struct backend *backend_create(const struct backend_config *cfg, const struct backend_weights *w,
                               struct infill_error *err);
/* Accepts NULL. */
void backend_destroy(struct backend *b);

/* "cpu (avx512-vnni, 2 threads)", "cuda (NVIDIA H200)": borrowed, valid until destroy. */
const char *backend_name(const struct backend *b);
enum backend_kind backend_kind(const struct backend *b);

/* Bytes of one KV page for these hyperparameters: 2 (K,V) * n_layer * page_size * n_head_kv * head_dim * sizeof(kv_type). */
size_t backend_kv_bytes_per_page(const struct backend_hparams *hp, int32_t page_size,
                                 uint32_t kv_type);

/* ---- forward ---- */

/* One sequence's page table: pages[i] holds slots [i*page_size, (i+1)*page_size). */
struct backend_seq {
	const int32_t *pages; /* borrowed for the call */
	int32_t n_pages;
};

/*
 * A batch. Entry i is token tokens[i] at position positions[i] of sequence
 * seq_ids[i] (an index into seqs). For each layer the backend first writes
 * the K/V of every entry into its slot, then entry i attends to slots
 * 0..positions[i] of its sequence (causal), so a chunk of one sequence's
 * prompt and single decode tokens of many sequences are both one batch.
 * Every slot an entry attends to must hold K/V written earlier or in this
 * batch; every page written must not be shared with another live sequence
 * (infer/ copies shared pages first).
 */
struct backend_batch {
	int32_t n_tokens;
	const int32_t *tokens;    /* [n_tokens] */
	const int32_t *positions; /* [n_tokens] */
	const int32_t *seq_ids;   /* [n_tokens], each in [0, n_seqs) */
	int32_t n_seqs;
	const struct backend_seq *seqs; /* [n_seqs] */
	/* Rows whose logits are wanted (indices into the batch, any order). */
	int32_t n_out;
	const int32_t *out_rows; /* [n_out] */
	float *logits;           /* [n_out][n_vocab] host memory, or NULL */
	int32_t *argmax;         /* [n_out] greedy token of each row, or NULL */
	/* Asked between layers (NULL: never): true stops the pass with
	 * -ECANCELED, this batch's KV slots then partly written. The CPU backend
	 * asks; a pass on a GPU is short enough not to. */
	bool (*stop)(void *ud);
	void *stop_ud;
};

/* Runs the forward pass. Returns 0, or a negative code with *err set (bad
 * token id, position past the page table, page out of range). */
int backend_forward(struct backend *b, const struct backend_batch *batch, struct infill_error *err);

/* ---- KV pages ---- */

/* Copies every slot of page src to page dst (copy-on-write of a shared page). */
int backend_kv_copy_page(struct backend *b, int32_t dst, int32_t src, struct infill_error *err);

/*
 * Moves n cached tokens and rotates their keys to new positions: for i in
 * [0, n), the K/V of slot src_start+i of `src` go to slot dst_start+i of `dst`,
 * with K re-rotated by RoPE for the position delta dst_start - src_start
 * (RoPE composes, so this is exact up to rounding; V is copied). Source and
 * destination slots may coincide exactly (in place) but must not otherwise
 * overlap (-EINVAL). Used by the pipeline's shifted re-use of a suffix's KV.
 */
int backend_kv_shift(struct backend *b, const struct backend_seq *src, int32_t src_start,
                     const struct backend_seq *dst, int32_t dst_start, int32_t n,
                     struct infill_error *err);

/* ---- what a backend implements ---- */

struct backend_ops {
	void (*destroy)(void *ctx);
	int (*forward)(void *ctx, const struct backend_batch *batch, struct infill_error *err);
	int (*kv_copy_page)(void *ctx, int32_t dst, int32_t src, struct infill_error *err);
	int (*kv_shift)(void *ctx, const struct backend_seq *src, int32_t src_start,
	                const struct backend_seq *dst, int32_t dst_start, int32_t n,
	                struct infill_error *err);
};

/* The object behind the wrappers: a vtable plus the backend's context.
 * Backends fill it in their create functions; others use the wrappers. */
struct backend {
	const struct backend_ops *ops;
	void *ctx;
	enum backend_kind kind;
	char name[128];
	struct backend_hparams hp;
	int32_t kv_n_pages, kv_page_size;
	uint32_t kv_type;
};

/* Backend constructors, called by backend_create after it checked cfg and w.
 * Each fills *out (ops, ctx, name) or returns a negative code with *err set. */
int backend_cpu_init(struct backend *out, const struct backend_config *cfg,
                     const struct backend_weights *w, struct infill_error *err);

/* The cuda module (libinfill-cuda.so, dlopened) exports this symbol with
 * backend_cpu_init's signature. */
#define BACKEND_CUDA_ENTRY "infill_backend_cuda_init"
typedef int (*backend_init_fn)(struct backend *out, const struct backend_config *cfg,
                               const struct backend_weights *w, struct infill_error *err);

/* ---- cpu utilities used by benchmarks ---- */

/* Physical cores of this machine (>= 1). */
int backend_cpu_physical_cores(void);
/* Measures multi-threaded read bandwidth over a buffer of `bytes` (use >= 4x the
 * last-level cache) with n_threads threads; returns GB/s (1e9 bytes) by wall
 * time, or a negative value when the buffer cannot be allocated. If cpu_gbs is
 * not NULL it receives the same bytes over the CPU time the threads got
 * (divided by n_threads): what an unshared machine would give, for runs on
 * machines busy with other work. Takes about a second. */
double backend_cpu_read_gbs(int n_threads, size_t bytes, double *cpu_gbs);

#ifdef __cplusplus
}
#endif

#endif
