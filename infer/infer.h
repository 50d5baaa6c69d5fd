/*
 * infer.h - the public face of infer/: load a model, run forward passes
 * over paged KV sequences, sample tokens. No libuv, no jansson.
 *
 * Threads: a struct model and everything made from it (its kv_pool,
 * kv_seqs, samplers) belong to one thread at a time, the engine thread; none
 * of these functions locks. The model may run worker threads of its own
 * inside model_forward. The tokenizer (model_tokenizer) is immutable and may
 * be used from any thread.
 *
 * Typical use (see cli/cli_model.c):
 *
 *   struct model_params mp = model_params_default();
 *   mp.path = "model.gguf";
 *   struct model *m = model_load(&mp, &err);
 *   struct kv_seq *s = kv_seq_new(model_kv_pool(m));
 *   float *logits = malloc(model_info(m)->n_vocab * sizeof(float));
 *   model_eval(m, s, ids, n_ids, logits, &err);          // prefill, last row's logits
 *   int32_t next = sample_greedy(logits, n_vocab);
 *   model_eval(m, s, &next, 1, logits, &err);            // one decode step
 *   kv_seq_free(s); model_free(m);
 *
 * Batched decode of N sequences (candidates): fork the prompt's sequence
 * with kv_seq_fork (pages shared, copy-on-write), then one model_forward
 * whose batch has one entry per sequence.
 */
#ifndef INFILL_INFER_INFER_H
#define INFILL_INFER_INFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"     /* struct infill_error: code, key/tensor/offset at fault, message */
#include "tokenizer.h" /* the tokenizer API is part of this public face */

/* ---- model ---- */

enum infer_backend {
	INFER_BACKEND_AUTO = 0, /* cuda when available, else cpu */
	INFER_BACKEND_CPU = 1,
	INFER_BACKEND_CUDA = 2,
};

struct model_params {
	const char *path; /* GGUF file; borrowed for the call */
	enum infer_backend backend;
	int32_t n_threads; /* cpu worker threads; <= 0: physical cores; never more than the online CPUs */
	size_t kv_bytes;      /* KV page pool budget (cache.memoryMB); 0: 256 MiB */
	int32_t kv_tokens;    /* > 0: size the pool for this many tokens instead of kv_bytes */
	int32_t kv_page_size; /* tokens per page; 0: 16 */
	/* store K/V as fp32: twice the memory and decode reads of the default
	 * fp16 (as llama.cpp and the CUDA backend), logits exact to ~1e-4 closer */
	bool kv_f32;
	/* store K/V as llama.cpp's q8_0 blocks (32 values, an fp16 scale):
	 * 34/64 of fp16's memory and decode reads; needs a head size that is a
	 * multiple of 32. Wins over kv_f32. */
	bool kv_q8_0;
	/* neither asked: q8_0 where the CPU backend runs the model and the
	 * head size allows (as fast as f16 at 512 tokens of context, faster
	 * at 2,048, twice the cached tokens: docs/benchmarks.md), f16 on CUDA
	 * (its q8_0 path is not yet measured on a GPU) and elsewhere */
	bool kv_auto;
	/* Load progress in [0, 1], called on the loading thread; may be NULL. */
	void (*progress)(void *user, float fraction);
	void *progress_user;
};

struct model_params model_params_default(void);

/* Hyperparameters and facts about the loaded model. */
struct model_info {
	char arch[32]; /* general.architecture: "llama", "qwen2" */
	int32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab;
	int32_t n_ctx_train;   /* context_length */
	uint32_t file_type;    /* enum tensor_type of the attention weights (quant.h) */
	uint64_t weight_bytes; /* bytes of all weight tensors */
	/* weight bytes one decode step reads (all but the embedding table) */
	uint64_t decode_read_bytes;
	int32_t kv_page_size, kv_n_pages; /* the KV pool: pages of kv_page_size tokens */
	const char *kv_type;              /* its precision: "f16", "f32" or "q8_0" */
	/* "cpu (avx512-vnni, 2 threads)"; borrowed, valid until model_free */
	const char *backend_name;
	enum infer_backend backend; /* the one running it: cpu or cuda, never auto */
};

struct model;

/*
 * Loads a model: maps the GGUF file, checks the architecture
 * (llama/qwen2-style), every tensor's presence, shape and type, builds the
 * tokenizer and starts the backend with a KV pool of params->kv_bytes.
 * Errors name the tensor or key ("blk.3.ffn_up.weight has shape [64, 100],
 * expected [64, 160]"). Returns a new model (free with model_free) or NULL
 * with *err set.
 */
struct model *model_load(const struct model_params *params, struct infill_error *err);
/* Accepts NULL. Every kv_seq of the model must be freed first. */
void model_free(struct model *m);

const struct model_info *model_info(const struct model *m);     /* borrowed */
const struct tokenizer *model_tokenizer(const struct model *m); /* borrowed */

/* Whether the model's file changed on disk since it was loaded (truncated,
 * rewritten, replaced, or shrunk under a read: see gguf_file_changed). Then
 * results computed from it may be garbage and it should be loaded again; why
 * gets a short reason. One stat() per call. */
bool model_file_changed(const struct model *m, char *why, size_t why_size);

/* What a GGUF file holds, read without loading it (gguf_summary.c). */
struct gguf_summary {
	char arch[32];       /* general.architecture */
	int64_t n_tensors;   /* tensors in the file */
	uint32_t n_blocks;   /* {arch}.block_count */
	uint64_t file_bytes; /* the file's size */
};

/* Opens path as GGUF (every tensor checked to lie inside the file) and
 * fills *s; fails unless it names an architecture, its block count, and
 * tensors for every block 0..n_blocks-1 and none past them, and a
 * token_embd.weight. Returns 0, or a negative code with *err saying which. */
int gguf_summarize(const char *path, struct gguf_summary *s, struct infill_error *err);

/* ---- KV pages and sequences (kv.c) ---- */

/* The model's page pool: pages of page_size token slots, reference-counted. */
struct kv_pool;

struct kv_pool *model_kv_pool(struct model *m); /* borrowed, lives as long as m */
int32_t kv_pool_page_size(const struct kv_pool *p);
int32_t kv_pool_n_pages(const struct kv_pool *p);
int32_t kv_pool_free_pages(const struct kv_pool *p);
/* Pages ever in use at once: the part of the pool that has been written,
 * which is what a CPU pool adds to the process's resident memory. */
int32_t kv_pool_touched_pages(const struct kv_pool *p);

/* A new page with reference count 1, or -1 when the pool is exhausted. */
int32_t kv_page_alloc(struct kv_pool *p);
void kv_page_retain(struct kv_pool *p, int32_t page);
/* Drops one reference; at zero the page returns to the free list. */
void kv_page_release(struct kv_pool *p, int32_t page);
int32_t kv_page_refs(const struct kv_pool *p, int32_t page);

/*
 * A sequence: a page table plus its length in tokens (slot == position).
 * It holds one reference on each of its pages.
 */
struct kv_seq;

struct kv_seq *kv_seq_new(struct kv_pool *p); /* new, empty; NULL on out of memory */
void kv_seq_free(struct kv_seq *s);           /* releases its pages; accepts NULL */
/* New sequence sharing all of s's pages (each retained): a candidate branch.
 * Writes into a shared page copy it first (copy-on-write). */
struct kv_seq *kv_seq_fork(const struct kv_seq *s);
int32_t kv_seq_len(const struct kv_seq *s);
/* Page table (borrowed until the next call that changes s). */
const int32_t *kv_seq_pages(const struct kv_seq *s, int32_t *n_pages);
/* Forgets tokens from position n on (n <= len); pages no longer needed are released. */
void kv_seq_truncate(struct kv_seq *s, int32_t n);
/*
 * Appends n_pages whole pages (retained) holding tokens already computed
 * (e.g. from the prefix cache); s's length must be a multiple of the page
 * size; the length becomes len + n_tokens (n_tokens <= n_pages * page_size).
 */
int kv_seq_append_pages(struct kv_seq *s, const int32_t *pages, int32_t n_pages, int32_t n_tokens);
/*
 * Makes slots [kv_seq_len(s), n) writable: allocates missing pages and copies
 * shared pages in that range (copy-on-write). Does not change the length.
 * Returns 0 or -ENOSPC when the pool is exhausted.
 */
int kv_seq_reserve(struct kv_seq *s, int32_t n, struct infill_error *err);

/* ---- forward ---- */

/* Entry i: token tokens[i] at position pos[i] of sequence seqs[i]. */
struct model_batch {
	int32_t n_tokens;
	const int32_t *tokens;
	const int32_t *pos;
	struct kv_seq *const *seqs;
	int32_t n_out;
	const int32_t *out_rows; /* rows whose logits are wanted */
	float *logits;           /* [n_out][n_vocab], caller-owned, or NULL */
	int32_t *argmax;         /* [n_out] or NULL */
	/* Asked between layers (may be NULL): true stops the pass with
	 * -ECANCELED, every sequence of the batch cut back to before it. A
	 * newer request then waits for one layer, not for a whole chunk. */
	bool (*stop)(void *ud);
	void *stop_ud;
};

/*
 * Runs one forward pass. For every sequence, slots up to its largest position
 * in the batch are reserved (copy-on-write of shared pages) and its length
 * becomes max(len, largest position + 1). Each entry attends to positions
 * 0..pos of its sequence, which must all be computed by now or in this batch.
 * Returns 0 or a negative code with *err set.
 */
int model_forward(struct model *m, const struct model_batch *batch, struct infill_error *err);

/*
 * Convenience: appends tokens[0..n) to s at positions len.. (in chunks of at
 * most 512) and writes the last token's logits to logits[n_vocab] (NULL: none).
 */
int model_eval(struct model *m, struct kv_seq *s, const int32_t *tokens, int32_t n, float *logits,
               struct infill_error *err);

/* Rotates cached keys: moves n tokens from positions [src_start, +n) of src to
 * [dst_start, +n) of dst (reserved as by kv_seq_reserve) re-rotating K by the
 * position delta (docs/architecture.md, "Prefix cache", the suffix). dst's
 * length grows to cover them. */
int model_kv_shift(struct model *m, struct kv_seq *src, int32_t src_start, struct kv_seq *dst,
                   int32_t dst_start, int32_t n, struct infill_error *err);

/* ---- sampling (sample.c) ---- */

/* Index of the largest logit (the first one on ties). */
int32_t sample_greedy(const float *logits, int32_t n_vocab);
/* log(sum(exp(logits))), computed stably. */
double sample_logsumexp(const float *logits, int32_t n_vocab);

struct sampler_params {
	float temperature; /* <= 0: greedy */
	int32_t top_k;     /* <= 0: off */
	float top_p;       /* >= 1: off */
	float repeat_penalty; /* 1: off; > 1 divides positive / multiplies negative logits of recent tokens */
	int32_t repeat_last_n; /* how many recent tokens the penalty looks at */
	uint64_t seed;
};

struct sampler;

/* New sampler for a vocabulary of n_vocab (free with sampler_free); NULL on out of memory. */
struct sampler *sampler_new(const struct sampler_params *p, int32_t n_vocab);
void sampler_free(struct sampler *s); /* accepts NULL */
/* Reseeds the random generator. */
void sampler_seed(struct sampler *s, uint64_t seed);
/*
 * Picks a token from logits[n_vocab] (not modified) given the history of
 * tokens already in the sequence (for the repetition penalty; may be NULL).
 * If logprob is not NULL it receives the log-probability of the pick under
 * the unmodified softmax(logits). Deterministic for a given seed and inputs;
 * allocates nothing.
 */
int32_t sampler_sample(struct sampler *s, const float *logits, const int32_t *history,
                       int32_t n_history, float *logprob);

/*
 * Speculative sampling. sampler_probs writes to probs[n_vocab] the law
 * sampler_sample draws from (temperature, top-k, top-p; no repetition
 * penalty): zero outside the kept tokens, summing to 1. sampler_uniform is
 * the next draw of s's generator in [0, 1). sampler_pick draws a token with
 * chance proportional to weights[n_vocab] (>= 0), -1 when all are 0.
 * sampler_spec_take decides a token d drafted from law q against the
 * target's law p: d with chance min(1, p[d]/q[d]), else a draw from
 * norm(max(0, p - q)) (residual[n_vocab] is scratch): the token it returns
 * has law p, whatever q is. All allocate nothing.
 */
void sampler_probs(struct sampler *s, const float *logits, float *probs);
float sampler_uniform(struct sampler *s);
int32_t sampler_pick(struct sampler *s, const float *weights);
int32_t sampler_spec_take(struct sampler *s, const float *p, const float *q, int32_t d,
                          float *residual);

/* ---- machine facts for benchmarks ---- */

int infer_physical_cores(void);
/* Read bandwidth in GB/s over a buffer of `bytes` with n_threads; *cpu_gbs
 * (may be NULL): the same per CPU-second the threads got (see backend.h). */
double infer_read_bandwidth_gbs(int n_threads, size_t bytes, double *cpu_gbs);
/* CPU seconds this process has used (all threads). */
double infer_process_cpu_seconds(void);

/* Completion jobs over the model (prefix cache, candidates, rerank) are the
 * last part of this public face. */
#include "engine.h"

#endif
