/*
 * cpu_backend.h - private to kernels/cpu: the CPU backend's state, shared by
 * cpu.c (the forward pass, KV pages, lifetime) and attn.c (attention).
 */
#ifndef INFILL_KERNELS_CPU_BACKEND_H
#define INFILL_KERNELS_CPU_BACKEND_H

#include "backend.h"
#include "cpu.h"

struct cpu_backend {
	struct backend_hparams hp;
	struct backend_tensor tok_embd, output_norm, output_norm_b, output;
	/* [65536] ggml's GELU on the f16 grid (cpu_gelu_table_fill); NULL for SwiGLU models */
	float *gelu_tab;
	struct backend_layer *layers; /* [n_layer], copied; data borrowed, or in `packed` */
	/* The matmul weights of the types in packings.c's `packings` table repacked
	 * into 8-row panels (repack.c) when the kernel set reads
	 * panels: one anonymous mapping of packed_bytes owned here (cpu_destroy
	 * unmaps it); those tensors of layers[] and output point into it with
	 * the panel type (CPU_TYPE_*_P8). NULL when nothing is packed. */
	void *packed;
	size_t packed_bytes;
	struct cpu_pool *pool;
	struct cpu_kernels k_full; /* the chosen set, gaps filled from the reference */
	const struct cpu_kernels *k;

	char *kv; /* [n_pages][page_bytes] of F32, F16 or Q8_0 slots, mmap'd */
	size_t kv_bytes;
	bool kv_f16;
	bool kv_q8;           /* Q8_0 blocks (kv_f16 false): attention's q is q8_0 too */
	size_t kv_head_bytes; /* one head's head_dim values in a slot */
	size_t kv_row_bytes;  /* a slot: n_head_kv heads */
	size_t page_bytes;    /* 2 * n_layer * page_size * kv_row_bytes */
	float *kv_tmp;        /* [n_head_kv * head_dim]: one F16 slot widened (kv_shift) */
	/* Q8_0 cache, decode: [ATTN_DEC_MAX][n_head * head_dim / 32] blocks,
	 * the entries' queries quantized (attn_decode) */
	void *dq8;
	int32_t n_pages, page_size;

	/* Scratch for up to `cap` tokens, one buffer per role; the shapes are
	 * those of cpu_forward's step comments. */
	int32_t cap;
	/* (cap, n_embd) the residual stream */
	float *x;
	/* (cap, n_embd) rmsnorm(x): the input of Q/K/V, of the FFN and of the output head */
	float *xb;
	/* (cap, n_head * head_dim) queries */
	float *q;
	/* (cap, kv_dim) this batch's keys and values, before they go to their page slots */
	float *kc, *vc;
	/* (cap, n_head * head_dim) the attention's output, the input of wo */
	float *att;
	/* (cap, n_embd) what a block adds to the residual stream: wo's output, then w_down's */
	float *dx;
	/* (cap, n_ff) the FFN's gate, then silu(gate) * up in place: the input of w_down */
	float *g;
	/* (cap, n_ff) the FFN's up projection */
	float *u;
	void *act; /* [cap] activation rows of the widest format */
	/* [cap / 8] tiles of act interleaved (cpu_il_pack), where some weight
	 * has the set's gemm_il (il_weights, set at repacking); else NULL */
	void *act_il;
	bool il_weights;
	size_t act_row_cap;
	float *scores;     /* per thread attn_scratch_floats(): a prompt block's scores, q, out */
	float *dscores;    /* decode: [ATTN_DEC_MAX][n_head][n_pages * page_size] */
	float *dpart;      /* decode: [ATTN_DEC_MAX][chunks][n_head * head_dim] partial outputs */
	char *amx_scratch; /* [n_threads][amx_scratch_bytes], NULL when AMX is off */
	size_t amx_scratch_bytes;
	int32_t *idx; /* [cap + 1] attention query block starts */
	/* (cap, n_rot / 2) each: the RoPE cosines and sines of the batch's
	 * positions, computed once per forward for every layer */
	float *rope_cs, *rope_sn;
};

/* A decode step (its candidates, and their drafts under prompt lookup):
 * batches of up to this many rows stream the weights through once and take
 * attn_decode, each entry on its own, so a token gets the same bits in such
 * a step as alone. */
#define CPU_DEC_MAX    8
#define ATTN_DEC_MAX   CPU_DEC_MAX
#define ATTN_DEC_CHUNK 64 /* positions per decode attention job */

/* Slot `pos` of a sequence, K (which 0) or V (1), in the pool's element type. */
static inline void *kv_slot(const struct cpu_backend *c, const struct backend_seq *s, int layer,
                            int32_t pos, int which)
{
	int32_t page = s->pages[pos / c->page_size];
	return c->kv + (size_t)page * c->page_bytes +
	       (size_t)(((int64_t)layer * 2 + which) * c->page_size + pos % c->page_size) *
	               c->kv_row_bytes;
}

/* Floats of c->scores each thread has: CPU_ATTN_QT scores a slot, and the
 * lanes path's transposed queries and outputs (2 x CPU_ATTN_QT x head_dim). */
static inline int64_t attn_scratch_floats(int64_t ld, int64_t head_dim)
{
	return CPU_ATTN_QT * ld + 2 * CPU_ATTN_QT * head_dim;
}

/* Groups the batch into attention query blocks in c->idx; returns their count. */
int64_t cpu_attn_blocks(struct cpu_backend *c, const struct backend_batch *b);
/* Attention of layer `layer` for the batch: q (nt, n_head * head_dim) from
 * c->q over the K/V page slots (the batch's own already stored) -> out (nt,
 * n_head * head_dim). */
void cpu_attention(struct cpu_backend *c, const struct backend_batch *b, int layer, int64_t n_blk,
                   float *out);

/* ---- packings.c: the weight types packed at load into panels ---- */

/* One type packed at load (repack.c has the layouts): the file's type, the
 * panels', and the functions that size, pack and read back one row. */
struct cpu_packing {
	uint32_t type, packed; /* the file's type, the panels' */
	size_t (*bytes)(int64_t nr, int64_t n);
	void (*pack)(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
	             void *dst);
	void (*row)(const void *packed, int64_t n, int64_t r, float *y);
};

/* The packing of a file type or of a panel type, or NULL. */
const struct cpu_packing *cpu_packing_of(uint32_t type);
/* A row's bytes in the file's type: panels keep the rows' bytes. */
size_t cpu_row_bytes(const struct backend_tensor *t);
/* Packs every matmul weight of a type the kernel set reads as panels into
 * c->packed (see packings.c), telling cfg->progress after each tensor; 0 or
 * -ENOMEM (nothing packed then). */
int cpu_repack_weights(struct cpu_backend *c, bool data_mapped, bool amx,
                       const struct backend_config *cfg);

/* ---- matmul.c: the matrix products, split over the pool ---- */

/* Up to 3 products sharing the activation rows x (c->act, or floats): y_i = x . W_i^T. */
void cpu_matmul_act(struct cpu_backend *c, const void *x, size_t x_stride, int64_t nt, int n_w,
                    const struct backend_tensor *const *w, float *const *y);
/* The same from float rows x[nt][n], converted into c->act first when the
 * weights take another format. */
void cpu_matmul(struct cpu_backend *c, const float *x, int64_t nt, int n_w,
                const struct backend_tensor *const *w, float *const *y);
void cpu_matmul1(struct cpu_backend *c, const float *x, int64_t nt, const struct backend_tensor *w,
                 float *y);
/* Bytes of one row of w's activation format (its input width). */
size_t cpu_act_stride(const struct backend_tensor *w);
/* The conversion of float rows into w's activation format, or NULL (floats). */
cpu_act_fn cpu_act_fn_for(const struct cpu_backend *c, const struct backend_tensor *w);

#endif
