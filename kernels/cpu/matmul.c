/*
 * matmul.c - the CPU backend's matrix products y = x . W^T, split over the
 * worker pool: activation rows converted once into the weights' format,
 * interleaved for the panel kernels that take tiles of 8, and the work cut
 * into items the threads claim in order (struct mm_task).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "cpu_backend.h"
#include "quant.h"

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
	int64_t nrows = w->ne[1], ws = (int64_t)cpu_row_bytes(w);
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
		size_t ws = cpu_row_bytes(w);
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
		size_t ws = cpu_row_bytes(w);
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
cpu_act_fn cpu_act_fn_for(const struct cpu_backend *c, const struct backend_tensor *w)
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
void cpu_matmul_act(struct cpu_backend *c, const void *x, size_t x_stride, int64_t nt, int n_w,
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
size_t cpu_act_stride(const struct backend_tensor *w)
{
	return cpu_act_row_bytes(cpu_act_for(w->type), w->ne[0]);
}

/* The same from float rows x[nt][n], converted here into c->act first when
 * the weights take another format. */
void cpu_matmul(struct cpu_backend *c, const float *x, int64_t nt, int n_w,
                const struct backend_tensor *const *w, float *const *y)
{
	int64_t n = w[0]->ne[0];
	cpu_act_fn f = cpu_act_fn_for(c, w[0]);
	if (!f) {
		cpu_matmul_act(c, x, (size_t)n * sizeof(float), nt, n_w, w, y);
		return;
	}
	struct act_task at = { f, x, n, c->act, cpu_act_stride(w[0]), nt };
	/* A few rows (decode) cost less than waking the workers. */
	if (nt <= CPU_DEC_MAX)
		act_run(&at, 0, 1);
	else
		cpu_pool_run(c->pool, act_run, &at);
	cpu_matmul_act(c, c->act, at.dst_stride, nt, n_w, w, y);
}

void cpu_matmul1(struct cpu_backend *c, const float *x, int64_t nt, const struct backend_tensor *w,
                 float *y)
{
	cpu_matmul(c, x, nt, 1, &w, &y);
}
