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
 * KV page layout (F32, F16 or Q8_0, cache.kvType): page p holds, per layer
 * l, K then V, each [page_size slots][n_head_kv * head_dim] (Q8_0: each
 * head's head_dim / 32 blocks in turn).
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

static void add_bias(float *y, const struct backend_tensor *b, int64_t nt, int64_t n)
{
	if (!b->data) return;
	const float *bv = b->data;
	for (int64_t t = 0; t < nt; t++)
		for (int64_t i = 0; i < n; i++) y[t * n + i] += bv[i];
}

/* ---- KV slots ---- */

/* One K or V slot (kv_dim values) from float, narrowed to fp16 or q8_0 when the pool is. */
static void kv_slot_write(struct cpu_backend *c, void *dst, const float *src, int64_t n)
{
	if (c->kv_q8) {
		cpu_q8_0_quantize(src, dst, n);
		return;
	}
	if (!c->kv_f16) {
		memcpy(dst, src, (size_t)n * sizeof(float));
		return;
	}
	c->k->to_f16(src, dst, n);
}

static void kv_slot_read(struct cpu_backend *c, float *dst, const void *src, int64_t n)
{
	if (c->kv_q8) {
		tensor_row_dequantize(TENSOR_TYPE_Q8_0, src, dst, n);
		return;
	}
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
	t->act = next ? cpu_act_fn_for(c, next) : NULL;
	if (!t->act) return false;
	t->out = out;
	t->out_n = out_n;
	t->act_stride = cpu_act_stride(next);
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
		cpu_matmul_act(c, c->act, cpu_act_stride(w[0]), nt, n_w, w, y);
	else
		cpu_matmul(c, x, nt, n_w, w, y);
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
		return error_set(err, -EINVAL, "forward: empty batch (%d tokens)", b->n_tokens);
	for (int32_t i = 0; i < b->n_seqs; i++)
		for (int32_t j = 0; j < b->seqs[i].n_pages; j++)
			if (b->seqs[i].pages[j] < 0 || b->seqs[i].pages[j] >= c->n_pages)
				return error_set(
				        err, -EINVAL,
				        "forward: page id %d out of range (pool of %d pages)",
				        b->seqs[i].pages[j], c->n_pages);
	for (int32_t i = 0; i < b->n_tokens; i++) {
		if (b->tokens[i] < 0 || b->tokens[i] >= c->hp.n_vocab)
			return error_set(err, -EINVAL,
			                 "forward: token id %d out of range (vocabulary of %d)",
			                 b->tokens[i], c->hp.n_vocab);
		if (b->seq_ids[i] < 0 || b->seq_ids[i] >= b->n_seqs)
			return error_set(err, -EINVAL,
			                 "forward: sequence index %d out of range (%d sequences)",
			                 b->seq_ids[i], b->n_seqs);
		int32_t pos = b->positions[i];
		if (pos < 0 || pos / c->page_size >= b->seqs[b->seq_ids[i]].n_pages)
			return error_set(err, -EINVAL,
			                 "forward: position %d is past the sequence's page table",
			                 pos);
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
		return error_set(err, -ENOMEM, "forward: out of memory for a batch of %d tokens",
		                 b->n_tokens);
	/* Shapes: nt tokens in the batch, E = n_embd, F = n_ff, qd = n_head *
	 * head_dim, kvd = n_head_kv * head_dim, V = n_vocab. A weight W (d, n)
	 * has d rows of n inputs (GGUF ne = {n, d}); x @ W^T is cpu_matmul(). */
	int64_t nt = b->n_tokens, E = hp->n_embd;
	int64_t qd = (int64_t)hp->n_head * hp->head_dim;
	int64_t kvd = (int64_t)hp->n_head_kv * hp->head_dim;
	int64_t n_blk = cpu_attn_blocks(c, b); /* attention query blocks, in c->idx */

	/* token_embd (V,E) [tokens (nt,)] -> x (nt,E) */
	size_t ers = cpu_row_bytes(&c->tok_embd);
	const struct cpu_packing *embd_pk = cpu_packing_of(c->tok_embd.type);
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
			return error_set(err, -ECANCELED, "forward: stopped at layer %d", l);
		const struct backend_layer *L = &c->layers[l];
		/* xb (nt,E) @ wq (qd,E)^T -> q (nt,qd); wk, wv (kvd,E) -> kc, vc (nt,kvd):
		 * one pass over xb when the three take the same activation format */
		const struct backend_tensor *qkv[3] = { &L->wq, &L->wk, &L->wv };
		float *qkv_out[3] = { c->q, c->kc, c->vc };
		if (qkv_next(L)) {
			matmul_from(c, qkv_in, c->xb, nt, 3, qkv, qkv_out);
		} else {
			for (int i = 0; i < 3; i++) cpu_matmul1(c, c->xb, nt, qkv[i], qkv_out[i]);
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
		cpu_matmul1(c, c->att, nt, &L->wo, c->dx);
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
				cpu_matmul1(c, c->xb, nt, gu[0], gu_out[0]);
				cpu_matmul1(c, c->xb, nt, gu[1], gu_out[1]);
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
			                 "forward: out of memory for logits (%d rows)", b->n_out);
		logits = tmp;
	}
	/* xb (n_out,E) @ output (V,E)^T -> logits (n_out,V) */
	cpu_matmul1(c, c->xb, b->n_out, &c->output, logits);
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
		memcpy(c->kv + (size_t)dst * c->page_bytes, c->kv + (size_t)src * c->page_bytes,
		       c->page_bytes);
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
			memmove(vd, vs, c->kv_row_bytes);
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
	if (c->kv) munmap(c->kv, c->kv_bytes);
	free(c->kv_tmp);
	scratch_free(c);
	free(c->scores);
	free(c->dscores), free(c->dpart), free(c->dq8);
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
	if (cfg->kv_type != TENSOR_TYPE_F32 && cfg->kv_type != TENSOR_TYPE_F16 &&
	    cfg->kv_type != TENSOR_TYPE_Q8_0)
		return error_set(err, -ENOTSUP,
		                 "cpu backend: KV cache type %s (%u) not supported; use f32, f16 "
		                 "or q8_0",
		                 tensor_type_name(cfg->kv_type) ? tensor_type_name(cfg->kv_type)
		                                                : "?",
		                 cfg->kv_type);
	if (cfg->kv_type == TENSOR_TYPE_Q8_0 && hp->head_dim % QK8_0 != 0) {
		error_set(err, -ENOTSUP,
		          "cpu backend: cache.kvType q8_0 needs a head size that is a multiple of "
		          "32 (this model's is %d); use f16",
		          hp->head_dim);
		error_key(err, "cache.kvType", strlen("cache.kvType"));
		return -ENOTSUP;
	}
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
	/* a set asked for by name and not taken would make every figure taken
	 * with it about another set */
	const char *want = getenv("INFILL_CPU_KERNELS");
	if (want && *want && !cpu_kernels_named(want)) {
		char runs[160];
		cpu_kernels_runnable(runs, sizeof runs);
		return error_set(err, -EINVAL,
		                 "cpu backend: INFILL_CPU_KERNELS=%s names no kernel set this "
		                 "build has and this CPU runs (it runs: %s); unset it to take the "
		                 "widest",
		                 want, runs);
	}
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
	c->kv_f16 = cfg->kv_type == TENSOR_TYPE_F16;
	c->kv_q8 = cfg->kv_type == TENSOR_TYPE_Q8_0;
	c->kv_head_bytes = c->kv_q8    ? (size_t)hp->head_dim / QK8_0 * sizeof(struct block_q8_0)
	                   : c->kv_f16 ? (size_t)hp->head_dim * 2
	                               : (size_t)hp->head_dim * 4;
	c->kv_row_bytes = (size_t)hp->n_head_kv * c->kv_head_bytes;
	c->page_bytes = 2 * (size_t)hp->n_layer * (size_t)c->page_size * c->kv_row_bytes;
	/* Anonymous pages: zero, and resident only once a slot is written (a
	 * calloc would be memset whole where glibc perturbs, as under meson
	 * test, touching the whole pool at load). */
	c->kv_bytes = (size_t)c->n_pages * c->page_bytes;
	c->kv = mmap(NULL, c->kv_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->kv == MAP_FAILED) c->kv = NULL;
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
		if (c->kv_q8)
			c->dq8 = malloc((size_t)ATTN_DEC_MAX * hp->n_head * hp->head_dim / QK8_0 *
			                sizeof(struct block_q8_0));
	}
	if (!c->layers || !c->pool || !c->kv || !c->scores || !c->kv_tmp || !c->dscores ||
	    !c->dpart || (c->kv_q8 && !c->dq8)) {
		cpu_destroy(c);
		return error_set(err, -ENOMEM,
		                 "cpu backend: out of memory for %d KV pages (%zu MiB)",
		                 cfg->kv_n_pages, (size_t)cfg->kv_n_pages * c->page_bytes >> 20);
	}
	memcpy(c->layers, w->layers, (size_t)hp->n_layer * sizeof *c->layers);
	/* AMX int8 tiles for prefill: opt-in (INFILL_CPU_AMX=1) until the kernel has
	 * been checked on an AMX machine (the development VM does not expose AMX). */
	const char *amx_env = getenv("INFILL_CPU_AMX");
	bool use_amx = amx_env && !strcmp(amx_env, "1") && c->k == &c->k_full &&
	               !strcmp(c->k->name, "avx512-vnni") && cpu_amx_available();
	if (cpu_repack_weights(c, w->data_mapped, use_amx, cfg) != 0) {
		cpu_destroy(c);
		return error_set(err, -ENOMEM,
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
