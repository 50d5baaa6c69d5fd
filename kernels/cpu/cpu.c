/*
 * cpu.c - the CPU backend: the Llama forward pass over paged KV, run on the
 * worker pool with the kernel set cpuid picked (kern.c).
 *
 * It reads top to bottom in the order a token flows: embedding, per layer
 * (norm, Q/K/V, RoPE, K/V into their page slots, causal attention over
 * the sequence's pages, output projection, norm, FFN), final norm
 * and the output head for the requested rows only (cpu_forward, each step
 * with its shapes). The family's choices (backend.h) are few and local:
 * RMSNorm or LayerNorm with bias, SwiGLU, GELU or GeGLU, optional biases,
 * a scale on the embedding rows. Weights are the caller's (memory-mapped GGUF blocks);
 * scratch buffers, one per role (cpu_backend.h), grow to the largest batch
 * seen and are reused, so a decode step allocates nothing.
 *
 * KV page layout (F32 or F16, cache.kvType): page p holds, per layer l, K
 * then V, each [page_size slots][n_head_kv * head_dim].
 */
#include "cpu.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_backend.h"
#include "quant.h"

/* ---- helpers ---- */


/* The weight types packed at load into panels (repack.c), and how. */
struct packing {
	uint32_t type, packed; /* the file's type, the panels' */
	size_t (*bytes)(int64_t nr, int64_t n);
	void (*pack)(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
	             void *dst);
	void (*row)(const void *packed, int64_t n, int64_t r, float *y);
};

static const struct packing packings[] = {
	{ TENSOR_TYPE_Q4_0, CPU_TYPE_Q4_0_P8, cpu_q4_0_p8_bytes, cpu_q4_0_p8_pack,
	  cpu_q4_0_p8_row },
	{ TENSOR_TYPE_Q8_0, CPU_TYPE_Q8_0_P8, cpu_q8_0_p8_bytes, cpu_q8_0_p8_pack,
	  cpu_q8_0_p8_row },
	{ TENSOR_TYPE_Q4_K, CPU_TYPE_Q4_K_P8, cpu_q4_k_p8_bytes, cpu_q4_k_p8_pack,
	  cpu_q4_k_p8_row },
	{ TENSOR_TYPE_Q5_K, CPU_TYPE_Q5_K_P8, cpu_q5_k_p8_bytes, cpu_q5_k_p8_pack,
	  cpu_q5_k_p8_row },
	{ TENSOR_TYPE_Q6_K, CPU_TYPE_Q6_K_P8, cpu_q6_k_p8_bytes, cpu_q6_k_p8_pack,
	  cpu_q6_k_p8_row },
	{ TENSOR_TYPE_IQ4_XS, CPU_TYPE_IQ4_XS_P8, cpu_iq4_xs_p8_bytes, cpu_iq4_xs_p8_pack,
	  cpu_iq4_xs_p8_row },
	{ TENSOR_TYPE_Q5_0, CPU_TYPE_Q5_0_P8, cpu_q5_0_p8_bytes, cpu_q5_0_p8_pack,
	  cpu_q5_0_p8_row },
	{ TENSOR_TYPE_Q5_1, CPU_TYPE_Q5_1_P8, cpu_q5_1_p8_bytes, cpu_q5_1_p8_pack,
	  cpu_q5_1_p8_row },
};

/* The packing of a file type or of a panel type, or NULL. */
static const struct packing *packing_of(uint32_t type)
{
	for (size_t i = 0; i < sizeof packings / sizeof packings[0]; i++)
		if (packings[i].type == type || packings[i].packed == type) return &packings[i];
	return NULL;
}

/* A row's bytes in the file's type: panels keep the rows' bytes. */
static size_t row_bytes(const struct backend_tensor *t)
{
	const struct packing *pk = packing_of(t->type);
	return (size_t)tensor_type_row_size(pk ? pk->type : t->type, t->ne[0]);
}

static void scratch_free(struct cpu_backend *c)
{
	free(c->x), free(c->xb), free(c->q), free(c->kc), free(c->vc), free(c->att), free(c->dx);
	free(c->g), free(c->u), free(c->act), free(c->act_il), free(c->idx), free(c->rope_cs);
	free(c->rope_sn);
	c->x = c->xb = c->q = c->kc = c->vc = c->att = c->dx = c->g = c->u = NULL;
	c->rope_cs = c->rope_sn = NULL;
	c->act = c->act_il = NULL;
	c->idx = NULL;
}

/* Makes the scratch hold n tokens (it only grows): 0 or -ENOMEM. */
static int grow(struct cpu_backend *c, int32_t n)
{
	if (n <= c->cap) return 0;
	const struct backend_hparams *hp = &c->hp;
	int64_t qd = (int64_t)hp->n_head * hp->head_dim,
	        kvd = (int64_t)hp->n_head_kv * hp->head_dim;
	/* the widest matmul input: n_embd (xb), n_head * head_dim (att) or n_ff (g) */
	int64_t wide = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
	if (qd > wide) wide = qd;
	size_t arow = 0;
	for (int a = 0; a < CPU_ACT_COUNT; a++)
		if (cpu_act_row_bytes((enum cpu_act)a, wide) > arow)
			arow = cpu_act_row_bytes((enum cpu_act)a, wide);
	scratch_free(c);
	c->x = malloc((size_t)n * hp->n_embd * sizeof(float));
	c->xb = malloc((size_t)n * hp->n_embd * sizeof(float));
	c->q = malloc((size_t)n * qd * sizeof(float));
	c->kc = malloc((size_t)n * kvd * sizeof(float));
	c->vc = malloc((size_t)n * kvd * sizeof(float));
	c->att = malloc((size_t)n * qd * sizeof(float));
	c->dx = malloc((size_t)n * hp->n_embd * sizeof(float));
	c->g = malloc((size_t)n * hp->n_ff * sizeof(float));
	c->u = malloc((size_t)n * hp->n_ff * sizeof(float));
	c->act = aligned_alloc(64, (size_t)n * arow); /* arow is a multiple of 64 */
	bool il = c->il_weights;
	size_t il_bytes = ((size_t)(n / 8) * cpu_il_tile_bytes(wide) + 64) / 64 * 64;
	c->act_il = il ? aligned_alloc(64, il_bytes) : NULL; /* a multiple of 64, as it must be */
	c->idx = malloc(((size_t)n + 1) * sizeof(int32_t));
	c->rope_cs = malloc((size_t)n * CPU_ROPE_MAX_PAIRS * sizeof(float));
	c->rope_sn = malloc((size_t)n * CPU_ROPE_MAX_PAIRS * sizeof(float));
	c->act_row_cap = arow;
	if (!c->x || !c->xb || !c->q || !c->kc || !c->vc || !c->att || !c->dx || !c->g || !c->u ||
	    !c->act || (il && !c->act_il) || !c->idx || !c->rope_cs || !c->rope_sn) {
		c->cap = 0;
		return -ENOMEM;
	}
	c->cap = n;
	return 0;
}

/* ---- parallel matrix products ---- */

#define MM_MAX      3
#define MM_ROW_TILE 16
#define MM_TOK_TILE 64

/*
 * Up to MM_MAX products sharing one activation matrix: y_i = x . W_i^T.
 * The work is cut into items (a row chunk x a token tile of one product)
 * that the threads take in order from an atomic counter: a thread that
 * runs slower (another process on its core, a busier memory channel) takes
 * fewer items instead of making every other thread wait at the end.
 */
struct mm_task {
	const struct cpu_kernels *k;
	char *amx_scratch; /* per thread, or NULL */
	size_t amx_scratch_bytes;
	int n;
	const struct backend_tensor *w[MM_MAX];
	float *y[MM_MAX];
	const void *x;
	size_t x_stride;
	int64_t nt;
	/* x's tiles of 8 interleaved (cpu_il_pack), or NULL: the weights with
	 * a gemm_il take their full tiles and 16-row pairs from there */
	const void *il;
	size_t il_tile;
	/* items of product i: n_tok[i] token tiles x n_rows[i] row chunks, numbered from first[i] */
	int64_t row_chunk[MM_MAX], tok_tile[MM_MAX], n_rows[MM_MAX], first[MM_MAX + 1];
	/* decode: a claim takes at least min_items[i] items (~16 KB of weights) */
	int64_t min_items[MM_MAX];
	atomic_llong next;
};

/* Chooses the items of product i (see mm_task). */
static void mm_plan(struct mm_task *t, int i)
{
	const struct backend_tensor *w = t->w[i];
	int64_t nrows = w->ne[1], ws = (int64_t)row_bytes(w);
	int64_t tok_tile = MM_TOK_TILE, row_chunk = MM_ROW_TILE;
	if (t->nt <= CPU_DEC_MAX) {
		/* Decode: the rows stream through once, 16-row items claimed in
		 * shrinking runs (mm_run). */
		tok_tile = t->nt;
		row_chunk = 16;
		t->min_items[i] = (16384 / ws + 15) / 16;
		if (t->min_items[i] < 1) t->min_items[i] = 1;
	} else if (cpu_act_for(w->type) == CPU_ACT_Q8_0) {
		/* Prefill on Q8_0 activations: the kernels build weight panels per
		 * call, so a call takes as many tokens as fit in ~1 MB of L2 and
		 * 64 rows. */
		tok_tile = ((int64_t)1 << 20) / (int64_t)t->x_stride / 8 * 8;
		if (tok_tile < 16) tok_tile = 16;
		row_chunk = 64;
	}
	if (row_chunk < 16) row_chunk = 16;
	if (tok_tile < 1) tok_tile = 1;
	t->row_chunk[i] = row_chunk;
	t->tok_tile[i] = tok_tile;
	t->n_rows[i] = (nrows + row_chunk - 1) / row_chunk;
	t->first[i + 1] = t->first[i] + t->n_rows[i] * ((t->nt + tok_tile - 1) / tok_tile);
}

/* Decode claims a run of items sized remaining / (2 threads), at least
 * min_items and within one product ("guided" scheduling): the runs shrink
 * towards the end, so threads finish together with a few dozen claims per
 * product instead of one atomic per small chunk (each a cache-line transfer
 * between the cores). Prefill items are large: one at a time. */
static int64_t mm_claim(struct mm_task *t, int nth, int64_t *count)
{
	int64_t total = t->first[t->n];
	if (t->nt > CPU_DEC_MAX) {
		*count = 1;
		return atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
	}
	int64_t cur = atomic_load_explicit(&t->next, memory_order_relaxed);
	for (;;) {
		if (cur >= total) return cur;
		int i = 0;
		while (cur >= t->first[i + 1]) i++;
		int64_t size = (total - cur) / (2 * nth);
		if (size < t->min_items[i]) size = t->min_items[i];
		if (size > t->first[i + 1] - cur) size = t->first[i + 1] - cur;
		if (atomic_compare_exchange_weak_explicit(&t->next, &cur, cur + size,
		                                          memory_order_relaxed,
		                                          memory_order_relaxed)) {
			*count = size;
			return cur;
		}
	}
}

static void mm_run(void *arg, int ith, int nth)
{
	struct mm_task *t = arg;
	(void)ith;
	int i = 0;
	for (;;) {
		int64_t count = 1;
		int64_t it = mm_claim(t, nth, &count);
		if (it >= t->first[t->n]) return;
		while (it >= t->first[i + 1]) i++;
		const struct backend_tensor *w = t->w[i];
		int64_t local = it - t->first[i], nrows = w->ne[1];
		int64_t t0 = local / t->n_rows[i] * t->tok_tile[i];
		int64_t r0 = local % t->n_rows[i] * t->row_chunk[i];
		int64_t tn = t->nt - t0 < t->tok_tile[i] ? t->nt - t0 : t->tok_tile[i];
		/* a decode run of count items stays in one token tile (there is one) */
		int64_t rn =
		        nrows - r0 < count * t->row_chunk[i] ? nrows - r0 : count * t->row_chunk[i];
		size_t ws = row_bytes(w);
		const char *wr = (const char *)w->data + r0 * ws,
		           *xt = (const char *)t->x + t0 * t->x_stride;
		float *yt = t->y[i] + t0 * nrows + r0;
		cpu_gemm_fn f = cpu_kernels_gemm(t->k, w->type);
		cpu_gemm_il_fn fi = t->il ? cpu_kernels_gemm_il(t->k, w->type) : NULL;
		/* t0 is a multiple of 8 (tok_tile is), r0 of 16 (row_chunk) */
		int64_t ntl = fi ? tn / 8 : 0, rn16 = fi ? rn / 16 * 16 : 0;
		if (ntl && rn16) {
			fi(w->ne[0], wr, ws, rn16, (const char *)t->il + t0 / 8 * t->il_tile, ntl,
			   yt, nrows);
			if (rn16 < rn)
				f(w->ne[0], wr + rn16 * ws, ws, rn - rn16, xt, t->x_stride, tn,
				  yt + rn16, nrows);
			if (ntl * 8 < tn)
				f(w->ne[0], wr, ws, rn16, xt + ntl * 8 * t->x_stride, t->x_stride,
				  tn - ntl * 8, yt + ntl * 8 * nrows, nrows);
			continue;
		}
		f(w->ne[0], wr, ws, rn, xt, t->x_stride, tn, yt, nrows);
	}
}

/* Prefill on AMX tiles (opt-in, see backend_cpu_init): a static split of the
 * rows, whole 16-row/16-token tiles on the tiles, the edges on the VNNI kernels. */
static void mm_run_amx(void *arg, int ith, int nth)
{
	struct mm_task *t = arg;
	for (int i = 0; i < t->n; i++) {
		const struct backend_tensor *w = t->w[i];
		cpu_gemm_fn f = cpu_kernels_gemm(t->k, w->type);
		size_t ws = row_bytes(w);
		int64_t lo, hi, nrows = w->ne[1];
		cpu_split(nrows, MM_ROW_TILE, ith, nth, &lo, &hi);
		int64_t rows16 = (hi - lo) / 16 * 16;
		for (int64_t t0 = 0; t0 < t->nt; t0 += CPU_AMX_TOKENS) {
			int64_t tn = t->nt - t0 < CPU_AMX_TOKENS ? t->nt - t0 : CPU_AMX_TOKENS;
			int64_t tn16 = tn / 16 * 16;
			const char *xt = (const char *)t->x + t0 * t->x_stride;
			float *yt = t->y[i] + t0 * nrows;
			if (tn16 && rows16)
				cpu_amx_gemm(w->type, w->ne[0], (const char *)w->data + lo * ws, ws,
				             rows16, xt, t->x_stride, tn16, yt + lo, nrows,
				             t->amx_scratch + (size_t)ith * t->amx_scratch_bytes);
			if (hi - lo > rows16)
				f(w->ne[0], (const char *)w->data + (lo + rows16) * ws, ws,
				  hi - lo - rows16, xt, t->x_stride, tn, yt + lo + rows16, nrows);
			if (tn > tn16 && rows16)
				f(w->ne[0], (const char *)w->data + lo * ws, ws, rows16,
				  xt + tn16 * t->x_stride, t->x_stride, tn - tn16,
				  yt + tn16 * nrows + lo, nrows);
		}
	}
}

struct act_task {
	cpu_act_fn f;
	const float *x;
	int64_t n;
	void *dst;
	size_t dst_stride;
	int64_t nt;
};

static void act_run(void *arg, int ith, int nth)
{
	struct act_task *t = arg;
	int64_t lo, hi;
	cpu_split(t->nt, 1, ith, nth, &lo, &hi);
	for (int64_t i = lo; i < hi; i++)
		t->f(t->x + i * t->n, (char *)t->dst + i * t->dst_stride, t->n);
}

/* The function that converts w's inputs to its activation format, or NULL
 * where it reads floats (they go to the kernel as they are). */
static cpu_act_fn act_fn_for(const struct cpu_backend *c, const struct backend_tensor *w)
{
	enum cpu_act a = cpu_act_for(w->type);
	return a == CPU_ACT_F32 ? NULL : cpu_kernels_act(c->k, a);
}

struct il_task {
	const char *x;
	size_t x_stride;
	int64_t n, ntl;
	char *il;
};

static void il_run(void *arg, int ith, int nth)
{
	const struct il_task *t = arg;
	int64_t lo, hi;
	cpu_split(t->ntl, 1, ith, nth, &lo, &hi);
	for (int64_t i = lo; i < hi; i++)
		cpu_il_pack(t->x + 8 * i * t->x_stride, t->x_stride, t->n,
		            t->il + i * cpu_il_tile_bytes(t->n));
}

/* y_i[nt][rows_i] = x[nt][n] . W_i^T for the n_w weights (same input width
 * and activation format), x given in that format: nt rows of x_stride bytes
 * (c->act, or floats). */
static void matmul_act(struct cpu_backend *c, const void *x, size_t x_stride, int64_t nt, int n_w,
                       const struct backend_tensor *const *w, float *const *y)
{
	struct mm_task mt = { .k = c->k,
		              .n = n_w,
		              .nt = nt,
		              .x = x,
		              .x_stride = x_stride,
		              .amx_scratch = c->amx_scratch,
		              .amx_scratch_bytes = c->amx_scratch_bytes };
	for (int i = 0; i < n_w; i++) mt.w[i] = w[i], mt.y[i] = y[i];
	bool amx_type = true; /* the tiles take Q8_0 and Q4_0 weights only */
	for (int i = 0; i < n_w; i++)
		amx_type = amx_type &&
		           (w[i]->type == TENSOR_TYPE_Q8_0 || w[i]->type == TENSOR_TYPE_Q4_0);
	if (c->amx_scratch && nt >= 16 && amx_type) {
		cpu_pool_run(c->pool, mm_run_amx, &mt);
		return;
	}
	/* 8 tokens or more on panels with a gemm_il: their activations
	 * interleaved once here for every thread (cpu.h, cpu_il_pack) */
	bool il = false;
	for (int i = 0; i < n_w; i++) il = il || cpu_kernels_gemm_il(c->k, w[i]->type);
	if (il && nt >= 8 && x == c->act && c->act_il) {
		struct il_task it = { x, x_stride, w[0]->ne[0], nt / 8, c->act_il };
		if (nt <= CPU_DEC_MAX)
			il_run(&it, 0, 1);
		else
			cpu_pool_run(c->pool, il_run, &it);
		mt.il = c->act_il;
		mt.il_tile = cpu_il_tile_bytes(w[0]->ne[0]);
	}
	for (int i = 0; i < n_w; i++) mm_plan(&mt, i);
	atomic_init(&mt.next, 0);
	cpu_pool_run(c->pool, mm_run, &mt);
}

/* Bytes of one row of w's activation format (its input width). */
static size_t act_stride(const struct backend_tensor *w)
{
	return cpu_act_row_bytes(cpu_act_for(w->type), w->ne[0]);
}

/* The same from float rows x[nt][n], converted here into c->act first when
 * the weights take another format. */
static void matmul(struct cpu_backend *c, const float *x, int64_t nt, int n_w,
                   const struct backend_tensor *const *w, float *const *y)
{
	int64_t n = w[0]->ne[0];
	cpu_act_fn f = act_fn_for(c, w[0]);
	if (!f) {
		matmul_act(c, x, (size_t)n * sizeof(float), nt, n_w, w, y);
		return;
	}
	struct act_task at = { f, x, n, c->act, act_stride(w[0]), nt };
	/* A few rows (decode) cost less than waking the workers. */
	if (nt <= CPU_DEC_MAX)
		act_run(&at, 0, 1);
	else
		cpu_pool_run(c->pool, act_run, &at);
	matmul_act(c, c->act, at.dst_stride, nt, n_w, w, y);
}

static void matmul1(struct cpu_backend *c, const float *x, int64_t nt,
                    const struct backend_tensor *w, float *y)
{
	matmul(c, x, nt, 1, &w, &y);
}

static void add_bias(float *y, const struct backend_tensor *b, int64_t nt, int64_t n)
{
	if (!b->data) return;
	const float *bv = b->data;
	for (int64_t t = 0; t < nt; t++)
		for (int64_t i = 0; i < n; i++) y[t * n + i] += bv[i];
}

/* ---- KV slots ---- */

/* One K or V slot (kv_dim values) from float, narrowed to fp16 when the pool is. */
static void kv_slot_write(struct cpu_backend *c, void *dst, const float *src, int64_t n)
{
	if (!c->kv_f16) {
		memcpy(dst, src, (size_t)n * sizeof(float));
		return;
	}
	c->k->to_f16(src, dst, n);
}

static void kv_slot_read(struct cpu_backend *c, float *dst, const void *src, int64_t n)
{
	if (!c->kv_f16) {
		memcpy(dst, src, (size_t)n * sizeof(float));
		return;
	}
	c->k->from_f16(src, dst, n);
}

/* ---- per-token steps, split over the pool for a prompt ---- */

struct rows_task;
typedef void (*row_fn)(const struct rows_task *t, int64_t i);

struct rows_task {
	struct cpu_backend *c;
	const struct backend_batch *b;
	row_fn fn;       /* the step, for token i of the batch */
	int layer;       /* kv_store_row */
	const float *w;  /* the *norm_row steps: (n_embd,) norm weight */
	const float *nb; /* the *norm_row steps: (n_embd,) LayerNorm bias, or NULL */
	const float *y;  /* add*_row: (nt, n_embd) added to x */
	/* When set, each row the step wrote (out: (nt, out_n) floats) is then
	 * converted by act into c->act (rows of act_stride bytes) while it is
	 * still in the core's cache: the next matmul's input (matmul_act). */
	cpu_act_fn act;
	const float *out;
	int64_t out_n;
	size_t act_stride;
};

static void rows_run(void *arg, int ith, int nth)
{
	const struct rows_task *t = arg;
	int64_t lo, hi;
	cpu_split(t->b->n_tokens, 1, ith, nth, &lo, &hi);
	for (int64_t i = lo; i < hi; i++) {
		t->fn(t, i);
		if (t->act)
			t->act(t->out + i * t->out_n, (char *)t->c->act + i * t->act_stride,
			       t->out_n);
	}
}

/* Runs one step for every token of the batch: on the pool for a prompt, here
 * for a few decode tokens (waking the workers would cost more). */
static void rows(struct rows_task t)
{
	if (t.b->n_tokens >= 8)
		cpu_pool_run(t.c->pool, rows_run, &t);
	else
		rows_run(&t, 0, 1);
}

/* One row of the family's norm: rmsnorm(x) * w, or layernorm(x) * w + b. */
static void norm1(const struct cpu_backend *c, const float *x, const float *w, const float *b,
                  float *y)
{
	const struct backend_hparams *hp = &c->hp;
	if (hp->norm == BACKEND_NORM_LAYER)
		cpu_layernorm(x, w, b, y, hp->n_embd, hp->rms_eps);
	else
		c->k->rmsnorm(x, w, y, hp->n_embd, hp->rms_eps);
}

/* xb[i] = norm(x[i]) * w (+ b) */
static void norm_row(const struct rows_task *t, int64_t i)
{
	struct cpu_backend *c = t->c;
	int64_t E = c->hp.n_embd;
	norm1(c, c->x + i * E, t->w, t->nb, c->xb + i * E);
}

/* x[i] += y[i] */
static void add_row(const struct rows_task *t, int64_t i)
{
	struct cpu_backend *c = t->c;
	int64_t E = c->hp.n_embd;
	float *x = c->x + i * E;
	for (int64_t e = 0; e < E; e++) x[e] += t->y[i * E + e];
}

/* x[i] += y[i]; xb[i] = rmsnorm(x[i]) * w: the residual add fused with the next norm */
static void add_norm_row(const struct rows_task *t, int64_t i)
{
	add_row(t, i);
	norm_row(t, i);
}

/* rope_cs[i], rope_sn[i] (n_rot / 2,) = the angles of token i's position */
static void rope_angles_row(const struct rows_task *t, int64_t i)
{
	struct cpu_backend *c = t->c;
	const struct backend_hparams *hp = &c->hp;
	cpu_rope_angles(hp->n_rot, (float)t->b->positions[i], hp->rope_base, hp->rope_freq_scale,
	                c->rope_cs + i * CPU_ROPE_MAX_PAIRS, c->rope_sn + i * CPU_ROPE_MAX_PAIRS);
}

/* q[i] (n_head, head_dim) and kc[i] (n_head_kv, head_dim) rotated in place by
 * token i's position (the first n_rot dims of each head; NeoX or interleaved
 * pairs), then kc[i], vc[i] (kv_dim,) -> the K and V slots of (token i's
 * sequence, its position) in layer t->layer, in the pool's element type */
static void rope_store_row(const struct rows_task *t, int64_t i)
{
	struct cpu_backend *c = t->c;
	const struct backend_hparams *hp = &c->hp;
	const struct backend_batch *b = t->b;
	int64_t hd = hp->head_dim, qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
	const float *cs = c->rope_cs + i * CPU_ROPE_MAX_PAIRS,
	            *sn = c->rope_sn + i * CPU_ROPE_MAX_PAIRS;
	c->k->rope(c->q + i * qd, hp->n_head, (int)hd, hp->n_rot, cs, sn, hp->rope_neox);
	c->k->rope(c->kc + i * kvd, hp->n_head_kv, (int)hd, hp->n_rot, cs, sn, hp->rope_neox);
	const struct backend_seq *s = &b->seqs[b->seq_ids[i]];
	kv_slot_write(c, kv_slot(c, s, t->layer, b->positions[i], 0), c->kc + i * kvd, kvd);
	kv_slot_write(c, kv_slot(c, s, t->layer, b->positions[i], 1), c->vc + i * kvd, kvd);
}

/* g[i] = silu(g[i]) * u[i], gelu(g[i]) * u[i] or gelu(g[i]) (n_ff,) */
static void ffn_act_row(const struct rows_task *t, int64_t i)
{
	struct cpu_backend *c = t->c;
	int64_t F = c->hp.n_ff;
	switch (c->hp.ffn) {
	case BACKEND_FFN_SWIGLU: c->k->swiglu(c->g + i * F, c->u + i * F, F); break;
	case BACKEND_FFN_GEGLU: cpu_geglu(c->g + i * F, c->u + i * F, F, c->gelu_tab); break;
	case BACKEND_FFN_GELU: cpu_gelu(c->g + i * F, F, c->gelu_tab); break;
	}
}

/* The steps by name, over the whole batch. Those that make a matmul's
 * input take that matmul's weight `next` (NULL: none) and leave its rows in
 * its activation format in c->act as well (rows_task.act); they return
 * whether they did, i.e. whether the matmul is to read c->act. */
static bool fused(struct cpu_backend *c, struct rows_task *t, const struct backend_tensor *next,
                  const float *out, int64_t out_n)
{
	t->act = next ? act_fn_for(c, next) : NULL;
	if (!t->act) return false;
	t->out = out;
	t->out_n = out_n;
	t->act_stride = act_stride(next);
	return true;
}

static bool norm(struct cpu_backend *c, const struct backend_batch *b,
                 const struct backend_tensor *w, const struct backend_tensor *nb,
                 const struct backend_tensor *next)
{
	struct rows_task t = { .c = c, .b = b, .fn = norm_row, .w = w->data, .nb = nb->data };
	bool f = fused(c, &t, next, c->xb, c->hp.n_embd);
	rows(t);
	return f;
}

static bool add_norm(struct cpu_backend *c, const struct backend_batch *b, const float *y,
                     const struct backend_tensor *w, const struct backend_tensor *nb,
                     const struct backend_tensor *next)
{
	struct rows_task t = {
		.c = c, .b = b, .fn = add_norm_row, .y = y, .w = w->data, .nb = nb->data
	};
	bool f = fused(c, &t, next, c->xb, c->hp.n_embd);
	rows(t);
	return f;
}

static void add(struct cpu_backend *c, const struct backend_batch *b, const float *y)
{
	rows((struct rows_task){ .c = c, .b = b, .fn = add_row, .y = y });
}

static void rope_angles(struct cpu_backend *c, const struct backend_batch *b)
{
	rows((struct rows_task){ .c = c, .b = b, .fn = rope_angles_row });
}

static void rope_store(struct cpu_backend *c, const struct backend_batch *b, int layer)
{
	rows((struct rows_task){ .c = c, .b = b, .fn = rope_store_row, .layer = layer });
}

static bool ffn_act(struct cpu_backend *c, const struct backend_batch *b,
                    const struct backend_tensor *next)
{
	struct rows_task t = { .c = c, .b = b, .fn = ffn_act_row };
	bool f = fused(c, &t, next, c->g, c->hp.n_ff);
	rows(t);
	return f;
}

/* matmul of xb or g for which a fused step (above) may have made c->act already */
static void matmul_from(struct cpu_backend *c, bool in_act, const float *x, int64_t nt, int n_w,
                        const struct backend_tensor *const *w, float *const *y)
{
	if (in_act)
		matmul_act(c, c->act, act_stride(w[0]), nt, n_w, w, y);
	else
		matmul(c, x, nt, n_w, w, y);
}

/* ---- the forward pass ---- */

/* Q, K and V's weights when they take one activation format (one matmul
 * call, one conversion of xb for the three), else NULL. */
static const struct backend_tensor *qkv_next(const struct backend_layer *L)
{
	enum cpu_act a = cpu_act_for(L->wq.type);
	return a == cpu_act_for(L->wk.type) && a == cpu_act_for(L->wv.type) ? &L->wq : NULL;
}

static int check_batch(struct cpu_backend *c, const struct backend_batch *b,
                       struct infill_error *err)
{
	if (b->n_tokens <= 0)
		return error_set(err, -EINVAL, "forward: empty batch (%d tokens)",
		                         b->n_tokens);
	for (int32_t i = 0; i < b->n_seqs; i++)
		for (int32_t j = 0; j < b->seqs[i].n_pages; j++)
			if (b->seqs[i].pages[j] < 0 || b->seqs[i].pages[j] >= c->n_pages)
				return error_set(
				        err, -EINVAL,
				        "forward: page id %d out of range (pool of %d pages)",
				        b->seqs[i].pages[j], c->n_pages);
	for (int32_t i = 0; i < b->n_tokens; i++) {
		if (b->tokens[i] < 0 || b->tokens[i] >= c->hp.n_vocab)
			return error_set(
			        err, -EINVAL,
			        "forward: token id %d out of range (vocabulary of %d)",
			        b->tokens[i], c->hp.n_vocab);
		if (b->seq_ids[i] < 0 || b->seq_ids[i] >= b->n_seqs)
			return error_set(
			        err, -EINVAL,
			        "forward: sequence index %d out of range (%d sequences)",
			        b->seq_ids[i], b->n_seqs);
		int32_t pos = b->positions[i];
		if (pos < 0 || pos / c->page_size >= b->seqs[b->seq_ids[i]].n_pages)
			return error_set(
			        err, -EINVAL,
			        "forward: position %d is past the sequence's page table", pos);
	}
	for (int32_t i = 0; i < b->n_out; i++)
		if (b->out_rows[i] < 0 || b->out_rows[i] >= b->n_tokens)
			return error_set(err, -EINVAL,
			                         "forward: output row %d out of range (%d tokens)",
			                         b->out_rows[i], b->n_tokens);
	return 0;
}

static int cpu_forward(void *ctx, const struct backend_batch *b, struct infill_error *err)
{
	struct cpu_backend *c = ctx;
	const struct backend_hparams *hp = &c->hp;
	int rc = check_batch(c, b, err);
	if (rc) return rc;
	if (grow(c, b->n_tokens) != 0)
		return error_set(err, -ENOMEM,
		                         "forward: out of memory for a batch of %d tokens",
		                         b->n_tokens);
	/* Shapes: nt tokens in the batch, E = n_embd, F = n_ff, qd = n_head *
	 * head_dim, kvd = n_head_kv * head_dim, V = n_vocab. A weight W (d, n)
	 * has d rows of n inputs (GGUF ne = {n, d}); x @ W^T is matmul(). */
	int64_t nt = b->n_tokens, E = hp->n_embd;
	int64_t qd = (int64_t)hp->n_head * hp->head_dim;
	int64_t kvd = (int64_t)hp->n_head_kv * hp->head_dim;
	int64_t n_blk = cpu_attn_blocks(c, b); /* attention query blocks, in c->idx */

	/* token_embd (V,E) [tokens (nt,)] -> x (nt,E) */
	size_t ers = row_bytes(&c->tok_embd);
	const struct packing *embd_pk = packing_of(c->tok_embd.type);
	if (embd_pk && embd_pk->packed != c->tok_embd.type) embd_pk = NULL; /* file rows */
	for (int64_t i = 0; i < nt; i++)
		if (embd_pk) /* tied to a packed output */
			embd_pk->row(c->tok_embd.data, E, b->tokens[i], c->x + i * E);
		else
			tensor_row_dequantize(c->tok_embd.type,
			                      (const char *)c->tok_embd.data + b->tokens[i] * ers,
			                      c->x + i * E, E);
	/* x *= sqrt(E) (gemma; one float product per value, as ggml_scale) */
	if (hp->embd_scale != 0 && hp->embd_scale != 1)
		for (int64_t i = 0; i < nt * E; i++) c->x[i] *= hp->embd_scale;

	/* RoPE's cosines and sines of every token's position (nt, n_rot / 2),
	 * for every layer */
	rope_angles(c, b);
	/* norm(x (nt,E)) * attn_norm (E,) [+ attn_norm_b] -> xb (nt,E); later
	 * layers get theirs fused with the residual add that ends the layer
	 * before. Each such step also converts its rows for the matmul that
	 * reads them (qkv_in: xb is in c->act already) */
	bool qkv_in = false;
	if (hp->n_layer > 0)
		qkv_in = norm(c, b, &c->layers[0].attn_norm, &c->layers[0].attn_norm_b,
		              qkv_next(&c->layers[0]));
	for (int l = 0; l < hp->n_layer; l++) {
		if (b->stop && b->stop(b->stop_ud))
			return error_set(err, -ECANCELED, "forward: stopped at layer %d",
			                         l);
		const struct backend_layer *L = &c->layers[l];
		/* xb (nt,E) @ wq (qd,E)^T -> q (nt,qd); wk, wv (kvd,E) -> kc, vc (nt,kvd):
		 * one pass over xb when the three take the same activation format */
		const struct backend_tensor *qkv[3] = { &L->wq, &L->wk, &L->wv };
		float *qkv_out[3] = { c->q, c->kc, c->vc };
		if (qkv_next(L)) {
			matmul_from(c, qkv_in, c->xb, nt, 3, qkv, qkv_out);
		} else {
			for (int i = 0; i < 3; i++) matmul1(c, c->xb, nt, qkv[i], qkv_out[i]);
		}
		/* + bq (qd,), bk, bv (kvd,) where the model has them (qwen2) */
		add_bias(c->q, &L->bq, nt, qd);
		add_bias(c->kc, &L->bk, nt, kvd);
		add_bias(c->vc, &L->bv, nt, kvd);
		/* q (nt,n_head,head_dim), kc (nt,n_head_kv,head_dim) rotated by
		 * position; kc, vc (nt,kvd) -> the K/V page slots of (sequence,
		 * position), layer l */
		rope_store(c, b, l);
		/* softmax(q kᵀ / sqrt(head_dim)) v over each token's sequence up to its
		 * position, heads grouped over the KV heads -> att (nt,qd) */
		cpu_attention(c, b, l, n_blk, c->att);
		/* att (nt,qd) @ wo (E,qd)^T [+ bo (E,)] -> dx (nt,E) */
		matmul1(c, c->att, nt, &L->wo, c->dx);
		add_bias(c->dx, &L->bo, nt, E);
		/* x += dx; norm(x) * ffn_norm (E,) [+ ffn_norm_b] -> xb (nt,E) */
		bool gate_same = hp->ffn != BACKEND_FFN_GELU &&
		                 cpu_act_for(L->w_gate.type) == cpu_act_for(L->w_up.type);
		const struct backend_tensor *ffn_in = hp->ffn == BACKEND_FFN_GELU ? &L->w_up
		                                      : gate_same                 ? &L->w_gate
		                                                                  : NULL;
		bool in_act = add_norm(c, b, c->dx, &L->ffn_norm, &L->ffn_norm_b, ffn_in);
		if (hp->ffn == BACKEND_FFN_GELU) {
			/* xb (nt,E) @ w_up (F,E)^T [+ b_up (F,)] -> g (nt,F); no gate */
			const struct backend_tensor *up = &L->w_up;
			matmul_from(c, in_act, c->xb, nt, 1, &up, &c->g);
			add_bias(c->g, &L->b_up, nt, hp->n_ff);
		} else {
			/* xb (nt,E) @ w_gate, w_up (F,E)^T -> g, u (nt,F) */
			const struct backend_tensor *gu[2] = { &L->w_gate, &L->w_up };
			float *gu_out[2] = { c->g, c->u };
			if (gate_same) {
				matmul_from(c, in_act, c->xb, nt, 2, gu, gu_out);
			} else {
				matmul1(c, c->xb, nt, gu[0], gu_out[0]);
				matmul1(c, c->xb, nt, gu[1], gu_out[1]);
			}
			add_bias(c->u, &L->b_up, nt, hp->n_ff);
		}
		/* g = silu(g) * u, gelu(g) * u or gelu(g) (nt,F) */
		const struct backend_tensor *down = &L->w_down;
		in_act = ffn_act(c, b, down);
		/* g (nt,F) @ w_down (E,F)^T [+ b_down (E,)] -> dx (nt,E) */
		matmul_from(c, in_act, c->g, nt, 1, &down, &c->dx);
		add_bias(c->dx, &L->b_down, nt, E);
		/* x += dx, and norm(x) * the next layer's attn_norm -> xb (nt,E) */
		if (l + 1 < hp->n_layer)
			qkv_in = add_norm(c, b, c->dx, &c->layers[l + 1].attn_norm,
			                  &c->layers[l + 1].attn_norm_b,
			                  qkv_next(&c->layers[l + 1]));
		else
			add(c, b, c->dx);
	}

	if (b->n_out == 0 || (!b->logits && !b->argmax)) return 0;
	/* norm(x [out_rows] (n_out,E)) * output_norm (E,) [+ output_norm_b] ->
	 * xb (n_out,E): the requested rows only */
	for (int32_t i = 0; i < b->n_out; i++)
		norm1(c, c->x + (int64_t)b->out_rows[i] * E, c->output_norm.data,
		      c->output_norm_b.data, c->xb + i * E);
	float *logits = b->logits;
	float *tmp = NULL;
	if (!logits) {
		tmp = malloc((size_t)b->n_out * hp->n_vocab * sizeof(float));
		if (!tmp)
			return error_set(err, -ENOMEM,
			                         "forward: out of memory for logits (%d rows)",
			                         b->n_out);
		logits = tmp;
	}
	/* xb (n_out,E) @ output (V,E)^T -> logits (n_out,V) */
	matmul1(c, c->xb, b->n_out, &c->output, logits);
	if (b->argmax) {
		for (int32_t i = 0; i < b->n_out; i++) {
			const float *row = logits + (int64_t)i * hp->n_vocab;
			int32_t best = 0;
			for (int32_t v = 1; v < hp->n_vocab; v++)
				if (row[v] > row[best]) best = v;
			b->argmax[i] = best;
		}
	}
	free(tmp);
	return 0;
}

/* ---- KV page operations ---- */

static int cpu_kv_copy_page(void *ctx, int32_t dst, int32_t src, struct infill_error *err)
{
	struct cpu_backend *c = ctx;
	if (dst < 0 || src < 0 || dst >= c->n_pages || src >= c->n_pages)
		return error_set(err, -EINVAL,
		                         "kv_copy_page: page id %d out of range (pool of %d pages)",
		                         dst < 0 || dst >= c->n_pages ? dst : src, c->n_pages);
	if (dst != src)
		memcpy(c->kv + (size_t)dst * c->page_elems * c->kv_es,
		       c->kv + (size_t)src * c->page_elems * c->kv_es,
		       (size_t)c->page_elems * c->kv_es);
	return 0;
}

static int cpu_kv_shift(void *ctx, const struct backend_seq *src, int32_t src_start,
                        const struct backend_seq *dst, int32_t dst_start, int32_t n,
                        struct infill_error *err)
{
	struct cpu_backend *c = ctx;
	const struct backend_hparams *hp = &c->hp;
	if (n < 0 || src_start < 0 || dst_start < 0 ||
	    (n > 0 && ((src_start + n - 1) / c->page_size >= src->n_pages ||
	               (dst_start + n - 1) / c->page_size >= dst->n_pages)))
		return error_set(
		        err, -EINVAL,
		        "kv_shift: %d tokens from slot %d to slot %d run past a page table", n,
		        src_start, dst_start);
	int64_t kvd = (int64_t)hp->n_head_kv * hp->head_dim;
	float delta = (float)(dst_start - src_start);
	for (int32_t i = 0; i < n; i++)
		for (int l = 0; l < hp->n_layer; l++) {
			void *ks = kv_slot(c, src, l, src_start + i, 0),
			     *kd = kv_slot(c, dst, l, dst_start + i, 0);
			void *vs = kv_slot(c, src, l, src_start + i, 1),
			     *vd = kv_slot(c, dst, l, dst_start + i, 1);
			memmove(vd, vs, (size_t)kvd * c->kv_es);
			kv_slot_read(c, c->kv_tmp, ks, kvd);
			cpu_rope(c->kv_tmp, hp->n_head_kv, hp->head_dim, hp->n_rot, delta,
			         hp->rope_base, hp->rope_freq_scale, hp->rope_neox);
			kv_slot_write(c, kd, c->kv_tmp, kvd);
		}
	return 0;
}

/* ---- lifetime ---- */

static void cpu_destroy(void *ctx)
{
	struct cpu_backend *c = ctx;
	if (!c) return;
	cpu_pool_destroy(c->pool);
	free(c->layers);
	free(c->kv);
	free(c->kv_tmp);
	scratch_free(c);
	free(c->scores);
	free(c->dscores), free(c->dpart);
	free(c->amx_scratch);
	free(c->gelu_tab);
	if (c->packed) munmap(c->packed, c->packed_bytes);
	free(c);
}

static const struct backend_ops cpu_ops = {
	.destroy = cpu_destroy,
	.forward = cpu_forward,
	.kv_copy_page = cpu_kv_copy_page,
	.kv_shift = cpu_kv_shift,
};

/* ---- the packings' weights (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, Q5_0, Q5_1) repacked at load ---- */

struct pack_task {
	const struct packing *pk;
	const struct backend_tensor *src; /* rows of pk->type */
	void *dst;                        /* packed_bytes of it */
};

/* How weights of `type` are packed, or NULL (read as rows): the set must
 * have the panel kernel, and Q8_0 stays rows where the AMX tiles are asked
 * for (they read it). */
static const struct packing *packing_for(const struct cpu_backend *c, uint32_t type, bool amx)
{
	const struct packing *pk = packing_of(type);
	if (!pk || pk->type != type || !cpu_kernels_gemm(c->k, pk->packed)) return NULL;
	return type == TENSOR_TYPE_Q8_0 && amx ? NULL : pk;
}

static size_t packed_bytes(const struct packing *pk, const struct backend_tensor *t)
{
	return (pk->bytes(t->ne[1], t->ne[0]) + 63) / 64 * 64;
}

/* The whole pages inside [p, p + n) get `advice`; errors ignored (advice only). */
static void advise_pages(const void *p, size_t n, int advice)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + pg - 1) / pg * pg, hi = ((uintptr_t)p + n) / pg * pg;
	if (hi > lo) madvise((void *)lo, hi - lo, advice);
}

static void pack_run(void *arg, int ith, int nth)
{
	const struct pack_task *t = arg;
	int64_t lo, hi;
	cpu_split((t->src->ne[1] + 7) / 8, 1, ith, nth, &lo, &hi);
	if (hi <= lo) return;
	/* Each thread maps in its own part in bulk, both sides (one call each
	 * instead of a page fault per 4 KB page: most of the load's time). */
	size_t panel = 8 * row_bytes(t->src);
	advise_pages((const char *)t->src->data + lo * panel, (size_t)(hi - lo) * panel,
	             MADV_POPULATE_READ);
	advise_pages((char *)t->dst + lo * panel, (size_t)(hi - lo) * panel, MADV_POPULATE_WRITE);
	t->pk->pack(t->src->data, row_bytes(t->src), t->src->ne[1], t->src->ne[0], lo, hi, t->dst);
}

/*
 * Every matmul weight of a type the kernel set reads as panels (packings,
 * packing_for) is packed into c->packed and the tensor copies in c point
 * there, so decode and prefill both run the panel kernel. With a file mapping
 * behind the weights, the original pages of each packed tensor are dropped
 * as soon as it is packed: the resident size stays that of one copy. A
 * token embedding tied to a packed output reads its rows from the panels
 * (packing.row). Returns 0 or -ENOMEM (nothing packed then).
 */
static int repack_weights(struct cpu_backend *c, bool data_mapped, bool amx)
{
	enum { PER_LAYER = 7 };
	int64_t n_t = (int64_t)c->hp.n_layer * PER_LAYER + 1;
	struct backend_tensor **ts = malloc((size_t)n_t * sizeof *ts);
	if (!ts) return -ENOMEM;
	for (int l = 0; l < c->hp.n_layer; l++) {
		struct backend_layer *L = &c->layers[l];
		struct backend_tensor *m[PER_LAYER] = { &L->wq,     &L->wk,   &L->wv,    &L->wo,
			                                &L->w_gate, &L->w_up, &L->w_down };
		memcpy(ts + (int64_t)l * PER_LAYER, m, sizeof m);
	}
	ts[n_t - 1] = &c->output;
	size_t total = 0;
	for (int64_t i = 0; i < n_t; i++) {
		const struct packing *pk = ts[i]->data ? packing_for(c, ts[i]->type, amx) : NULL;
		if (pk) total += packed_bytes(pk, ts[i]);
	}
	if (total == 0) {
		free(ts);
		return 0;
	}
	void *buf = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		free(ts);
		return -ENOMEM;
	}
	/* No MADV_HUGEPAGE: on this host the kernel's compaction for it made
	 * the 1.3B model's load take 8 s longer. */
	c->packed = buf;
	c->packed_bytes = total;
	const void *tied = c->tok_embd.data == c->output.data ? c->output.data : NULL;
	char *dst = buf;
	for (int64_t i = 0; i < n_t; i++) {
		struct backend_tensor *t = ts[i];
		const struct packing *pk = t->data ? packing_for(c, t->type, amx) : NULL;
		if (!pk) continue;
		size_t bytes = packed_bytes(pk, t);
		struct pack_task pt = { pk, t, dst };
		cpu_pool_run(c->pool, pack_run, &pt);
		/* the file's pages of it are not read again (they would only
		 * come back from the file) */
		if (data_mapped) advise_pages(t->data, t->nbytes, MADV_DONTNEED);
		if (t->data == tied) {
			c->tok_embd.data = dst;
			c->tok_embd.type = pk->packed;
		}
		t->data = dst;
		t->type = pk->packed;
		c->il_weights = c->il_weights || cpu_kernels_gemm_il(c->k, t->type);
		dst += bytes;
	}
	/* Read-only from here on: a stray write faults instead of corrupting weights. */
	mprotect(buf, total, PROT_READ);
	free(ts);
	return 0;
}

static bool gemm_supported(const struct backend_tensor *t)
{
	return cpu_kernels_gemm(&cpu_kernels_ref, t->type) != NULL;
}

static int unsupported_type(const struct backend_tensor *t, struct infill_error *err)
{
	error_set(err, -ENOTSUP, "cpu backend: tensor %s has unsupported type %s", t->name,
	                  tensor_type_name(t->type));
	error_tensor(err, t->name, SIZE_MAX);
	return -ENOTSUP;
}

int backend_cpu_init(struct backend *out, const struct backend_config *cfg,
                     const struct backend_weights *w, struct infill_error *err)
{
	const struct backend_hparams *hp = &w->hp;
	if (cfg->kv_type != TENSOR_TYPE_F32 && cfg->kv_type != TENSOR_TYPE_F16)
		return error_set(
		        err, -ENOTSUP,
		        "cpu backend: KV cache type %s (%u) not supported; use f32 or f16",
		        tensor_type_name(cfg->kv_type) ? tensor_type_name(cfg->kv_type) : "?",
		        cfg->kv_type);
	for (int l = 0; l < hp->n_layer; l++) {
		const struct backend_tensor *mats[] = { &w->layers[l].wq,     &w->layers[l].wk,
			                                &w->layers[l].wv,     &w->layers[l].wo,
			                                &w->layers[l].w_gate, &w->layers[l].w_up,
			                                &w->layers[l].w_down };
		for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
			if (mats[i]->data && !gemm_supported(mats[i]))
				return unsupported_type(mats[i], err);
	}
	if (!gemm_supported(&w->output)) return unsupported_type(&w->output, err);
	struct cpu_backend *c = calloc(1, sizeof *c);
	if (!c) return error_set(err, -ENOMEM, "cpu backend: out of memory");
	c->hp = *hp;
	c->tok_embd = w->tok_embd;
	c->output_norm = w->output_norm;
	c->output_norm_b = w->output_norm_b;
	c->output = w->output;
	if (hp->ffn != BACKEND_FFN_SWIGLU) {
		c->gelu_tab = malloc(65536 * sizeof(float));
		if (!c->gelu_tab) {
			free(c);
			return error_set(err, -ENOMEM, "cpu backend: out of memory");
		}
		cpu_gelu_table_fill(c->gelu_tab);
	}
	c->layers = malloc((size_t)hp->n_layer * sizeof *c->layers);
	int n_threads = cfg->n_threads > 0 ? cfg->n_threads : backend_cpu_physical_cores();
	c->pool = cpu_pool_create(n_threads);
	c->k_full = cpu_kernels_complete(cpu_kernels_best());
	c->k = &c->k_full;
	c->n_pages = cfg->kv_n_pages;
	c->page_size = cfg->kv_page_size;
	c->page_elems = 2LL * hp->n_layer * c->page_size * hp->n_head_kv * hp->head_dim;
	c->kv_f16 = cfg->kv_type == TENSOR_TYPE_F16;
	c->kv_es = c->kv_f16 ? 2 : 4;
	c->kv = calloc((size_t)c->n_pages * c->page_elems, c->kv_es);
	c->kv_tmp = malloc((size_t)hp->n_head_kv * hp->head_dim * sizeof(float));
	c->scores = malloc((size_t)n_threads *
	                   attn_scratch_floats((int64_t)c->n_pages * c->page_size, hp->head_dim) *
	                   sizeof(float));
	{
		int64_t ld = (int64_t)c->n_pages * c->page_size;
		int64_t chunks = (ld + ATTN_DEC_CHUNK - 1) / ATTN_DEC_CHUNK;
		c->dscores = malloc((size_t)ATTN_DEC_MAX * hp->n_head * ld * sizeof(float));
		c->dpart = malloc((size_t)ATTN_DEC_MAX * chunks * hp->n_head * hp->head_dim *
		                  sizeof(float));
	}
	if (!c->layers || !c->pool || !c->kv || !c->scores || !c->kv_tmp || !c->dscores ||
	    !c->dpart) {
		cpu_destroy(c);
		return error_set(
		        err, -ENOMEM, "cpu backend: out of memory for %d KV pages (%zu MiB)",
		        cfg->kv_n_pages,
		        (size_t)cfg->kv_n_pages * (size_t)c->page_elems * c->kv_es >> 20);
	}
	memcpy(c->layers, w->layers, (size_t)hp->n_layer * sizeof *c->layers);
	/* AMX int8 tiles for prefill: opt-in (INFILL_CPU_AMX=1) until the kernel has
	 * been checked on an AMX machine (the development VM does not expose AMX). */
	const char *amx_env = getenv("INFILL_CPU_AMX");
	bool use_amx = amx_env && !strcmp(amx_env, "1") && c->k == &c->k_full &&
	               !strcmp(c->k->name, "avx512-vnni") && cpu_amx_available();
	if (repack_weights(c, w->data_mapped, use_amx) != 0) {
		cpu_destroy(c);
		return error_set(
		        err, -ENOMEM,
		        "cpu backend: out of memory repacking the weights into panels");
	}
	if (use_amx) {
		int64_t wide = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
		if ((int64_t)hp->n_head * hp->head_dim > wide)
			wide = (int64_t)hp->n_head * hp->head_dim;
		c->amx_scratch_bytes = (cpu_amx_scratch_bytes(wide) + 63) / 64 * 64;
		c->amx_scratch = aligned_alloc(64, (size_t)n_threads * c->amx_scratch_bytes);
	}
	out->ops = &cpu_ops;
	out->ctx = c;
	snprintf(out->name, sizeof out->name, "cpu (%s%s, %d threads)", c->k->name,
	         c->amx_scratch ? "+amx" : "", n_threads);
	if (cfg->progress) cfg->progress(cfg->progress_user, 1.0f);
	return 0;
}
