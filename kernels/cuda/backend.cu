/*
 * backend.cu - the CUDA backend behind kernels/backend.h, built as the
 * shared module libinfill-cuda.so (backend.c dlopens it and calls
 * infill_backend_cuda_init).
 *
 * At create: every weight is uploaded once in its quantized blocks
 * (repacked, see cuda_ops.h; types without kernels converted, convert.h),
 * the KV page pool and all activation buffers are
 * allocated for the largest chunk, so a forward pass allocates nothing and a
 * device out-of-memory can only happen here, where it becomes an error
 * message and backend_create falls back to the CPU.
 *
 * A forward pass runs the batch in chunks of at most MAX_CHUNK entries and
 * MAX_SEQS distinct sequences. Per chunk the host writes token ids,
 * positions, sequence indices, output rows and page tables into one pinned
 * staging buffer, copies it to fixed device addresses, then runs the layers:
 *   QKV (RMSNorm fused) -> RoPE + K/V into pages -> paged attention ->
 *   Wo (+residual) -> gate/up with SwiGLU (RMSNorm fused) -> down (+residual)
 * (gemma: GeGLU and the embedding scale; starcoder2: LayerNorm applied apart,
 * biases added after each product, up -> GELU -> down without a gate)
 * then the head on the wanted rows and a device argmax. Up to GEMV_MAX rows
 * the matrix products are our GEMV kernels (each weight block read once per
 * 8 rows); beyond, cuBLAS tensor-core GEMMs over f16 tiles.
 *
 * Small chunks (decode: n <= GRAPH_MAX entries, n_out <= GRAPH_MAX rows) run
 * as a CUDA graph captured once per (n, n_out) and replayed: every kernel
 * reads its positions and page tables from the fixed device buffers, and
 * attention splits by a fixed count rather than by length, so the graph stays
 * valid as sequences grow and pages change.
 */
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.cuh"
#include "convert.h"

#define MAX_CHUNK 512    /* entries per chunk; activation buffers are sized for it */
#define MAX_SEQS  64     /* distinct sequences per chunk */
#define MAX_CTX   131072 /* positions a page table may cover */
#define GEMV_MAX  16     /* rows up to which matrix products use the GEMV kernels */
#define GRAPH_MAX 16     /* largest n and n_out captured as a graph */
#define HEAD_ROWS 64     /* logits rows computed per head pass */

struct cl_layer {
	cuq_weight wq, wk, wv, wo, gate, up, down;
	float *attn_norm, *ffn_norm, *bq, *bk, *bv;
	float *attn_norm_b, *ffn_norm_b, *bo, *b_up, *b_down; /* starcoder2; NULL when absent */
};

struct cuda_backend {
	struct backend_hparams hp;
	int device, n_sm;
	char gpu_name[256];
	uint32_t converted; /* bit t: weights of GGML type t were converted at upload */
	cudaStream_t stream;
	cublasHandle_t blas;
	void **allocs;
	int n_allocs, cap_allocs;

	cuq_weight tok, out;
	float *out_norm, *out_norm_b;
	float *xn; /* [MAX_CHUNK][n_embd]: the LayerNorm'd input (starcoder2 only) */
	struct cl_layer *layers;
	struct cuq_rope rope;
	struct cuq_kv kv;
	int n_pages, table_w;
	size_t page_bytes;

	/* activations, [MAX_CHUNK][width] f32 unless noted */
	float *x, *xb, *q, *k, *v, *hb, *hb2;
	float *xo, *logits; /* [HEAD_ROWS][n_embd], [HEAD_ROWS][n_vocab] */
	void *xh;           /* [MAX_CHUNK][max width] f32/f16/bf16 GEMM input */
	void *wscratch;     /* dequantized f16 weight for cuBLAS */
	/* cuBLAS reads alpha and beta here: [0] 0, [1] 1, [2] the 2^e an f16
	 * GEMM input was scaled down by (cuq_rmsnorm_half_launch), [3..] its
	 * scratch, 2 x MAX_CHUNK */
	float *gemm_k;
	float *part;    /* attention split scratch */
	int32_t *d_ids; /* [HEAD_ROWS] argmax out */

	/* staging: [tok T][pos T][seq T][rows T][tables MAX_SEQS x table_w] int32 */
	int32_t *h_ints, *d_ints;
	int32_t *h_ids;
	size_t ints_count;

	cudaGraphExec_t graph[GRAPH_MAX + 1][GRAPH_MAX + 1];
	signed char graph_state[GRAPH_MAX + 1][GRAPH_MAX + 1]; /* 0 untried, 1 ready, -1 failed */
	bool use_graphs; /* false with INFILL_CUDA_GRAPHS=0 (debugging, timing without graphs) */
};

#define OFF_TOK  0
#define OFF_POS  (MAX_CHUNK)
#define OFF_SEQ  (2 * MAX_CHUNK)
#define OFF_ROWS (3 * MAX_CHUNK)
#define OFF_TAB  (4 * MAX_CHUNK)

/* For a weight: the error names the tensor too. */
static int tensor_fail(struct infill_error *err, int code, const char *name, const char *what)
{
	error_set(err, code, "cuda: %s %s", what, name);
	error_tensor(err, name, SIZE_MAX);
	return code;
}

static int cuda_fail(struct infill_error *err, cudaError_t e, const char *what)
{
	return error_set(err, e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO, "cuda: %s: %s", what,
	                 cudaGetErrorString(e));
}

/* ---- device memory: every allocation is recorded and freed by destroy ---- */

static int dalloc(struct cuda_backend *c, void **p, size_t bytes, const char *what,
                  struct infill_error *err)
{
	*p = NULL;
	if (c->n_allocs == c->cap_allocs) {
		int cap = c->cap_allocs ? 2 * c->cap_allocs : 256;
		void **a = (void **)realloc(c->allocs, sizeof(void *) * (size_t)cap);
		if (!a) return error_set(err, -ENOMEM, "cuda: out of host memory");
		c->allocs = a;
		c->cap_allocs = cap;
	}
	cudaError_t e = cudaMalloc(p, bytes ? bytes : 256);
	if (e != cudaSuccess) {
		cudaGetLastError();
		size_t fr = 0, tot = 0;
		cudaMemGetInfo(&fr, &tot);
		return error_set(
		        err, -ENOMEM,
		        "cuda: out of device memory allocating %s (%.1f MiB; %.1f of %.1f MiB "
		        "free on %s); "
		        "use a smaller model or cache.memoryMB, or backend cpu",
		        what, bytes / 1048576.0, fr / 1048576.0, tot / 1048576.0, c->gpu_name);
	}
	c->allocs[c->n_allocs++] = *p;
	return 0;
}

static void cuda_destroy(void *ctx)
{
	struct cuda_backend *c = (struct cuda_backend *)ctx;
	if (!c) return;
	cudaSetDevice(c->device);
	if (c->stream) cudaStreamSynchronize(c->stream);
	for (int i = 0; i <= GRAPH_MAX; i++)
		for (int j = 0; j <= GRAPH_MAX; j++)
			if (c->graph_state[i][j] == 1) cudaGraphExecDestroy(c->graph[i][j]);
	for (int i = 0; i < c->n_allocs; i++) cudaFree(c->allocs[i]);
	free(c->allocs);
	if (c->h_ints) cudaFreeHost(c->h_ints);
	if (c->h_ids) cudaFreeHost(c->h_ids);
	if (c->blas) cublasDestroy(c->blas);
	if (c->stream) cudaStreamDestroy(c->stream);
	free(c->layers);
	free(c);
}

/* ---- weight upload ---- */

struct upload {
	void *host; /* repack buffer, grown as needed */
	size_t cap;
	void *conv; /* converted weight (convert.h), grown as needed */
	size_t conv_cap;
	float *row; /* a dequantized row, the conversion's scratch */
	size_t row_cap;
	uint64_t done, total;
	uint32_t converted; /* bit t: a weight of GGML type t was converted */
	const struct backend_config *cfg;
};

static int grow(void **p, size_t *cap, size_t need)
{
	if (need <= *cap) return 0;
	void *n = realloc(*p, need);
	if (!n) return -ENOMEM;
	*p = n;
	*cap = need;
	return 0;
}

/* A weight of a type without kernels, converted (convert.h) into u->conv;
 * *type and *src then describe the converted copy. */
static int convert_weight(struct upload *u, const struct backend_tensor *t, int *type,
                          const void **src, struct infill_error *err)
{
	const int64_t cols = t->ne[0], rows = t->ne[1];
	const int target = cuq_convert_target(t->type);
	const size_t bytes = cuq_file_size(target, rows, cols);
	if (!bytes)
		return error_set(
		        err, -EINVAL,
		        "cuda: tensor %s (type %u, [%lld, %lld]) is not supported: rows must "
		        "be a multiple of 32 values",
		        t->name, t->type, (long long)cols, (long long)rows);
	if (grow(&u->conv, &u->conv_cap, bytes) ||
	    grow((void **)&u->row, &u->row_cap, (size_t)cols * sizeof(float)))
		return tensor_fail(err, -ENOMEM, t->name, "out of host memory converting");
	if (cuq_convert(t->type, rows, cols, t->data, u->conv, u->row))
		return tensor_fail(
		        err, -EINVAL, t->name,
		        "a block the conversion for the GPU cannot read (corrupt file?):");
	u->converted |= 1u << (t->type & 31);
	*type = target;
	*src = u->conv;
	return 0;
}

static int upload_weight(struct cuda_backend *c, struct upload *u, const struct backend_tensor *t,
                         cuq_weight *w, struct infill_error *err)
{
	const int64_t cols = t->ne[0], rows = t->ne[1];
	int type = (int)t->type;
	const void *src = t->data;
	if (cuq_convert_target(t->type) != type) {
		int rc = convert_weight(u, t, &type, &src, err);
		if (rc) return rc;
	}
	const size_t rs = cuq_repacked_size(type, rows, cols);
	if (!rs)
		return error_set(
		        err, -EINVAL,
		        "cuda: tensor %s (type %u, [%lld, %lld]) is not supported: rows must "
		        "be a multiple "
		        "of 32 values (256 for k-quants)",
		        t->name, t->type, (long long)cols, (long long)rows);
	if (cols > INT32_MAX || rows > INT32_MAX)
		return tensor_fail(err, -EINVAL, t->name, "tensor too large:");
	if (grow(&u->host, &u->cap, rs))
		return tensor_fail(err, -ENOMEM, t->name, "out of host memory repacking");
	memset(u->host, 0, rs);
	cuq_repack(type, rows, cols, src, u->host);
	void *d;
	char what[160];
	snprintf(what, sizeof what, "weight %s", t->name);
	int rc = dalloc(c, &d, rs, what, err);
	if (rc) return rc;
	cudaError_t e = cudaMemcpy(d, u->host, rs, cudaMemcpyHostToDevice);
	if (e != cudaSuccess) return cuda_fail(err, e, "uploading a weight");
	cuq_weight_bind(w, type, rows, cols, d);
	u->done += t->nbytes;
	if (u->cfg->progress && u->total)
		u->cfg->progress(u->cfg->progress_user,
		                 (float)((double)u->done / (double)u->total));
	return 0;
}

/* F32 vectors (norm weights, biases); absent optional ones stay NULL. */
static int upload_f32(struct cuda_backend *c, const struct backend_tensor *t, float **out,
                      struct infill_error *err)
{
	*out = NULL;
	if (!t->data) return 0;
	const size_t bytes = (size_t)t->ne[0] * sizeof(float);
	void *d;
	int rc = dalloc(c, &d, bytes, t->name, err);
	if (rc) return rc;
	cudaError_t e = cudaMemcpy(d, t->data, bytes, cudaMemcpyHostToDevice);
	if (e != cudaSuccess) return cuda_fail(err, e, "uploading a vector");
	*out = (float *)d;
	return 0;
}

static bool needs_dequant(int type)
{
	return type != CUQ_F32 && type != CUQ_F16 && type != CUQ_BF16;
}

/* Every weight type the CPU backend runs reaches the GPU: natively, or
 * converted at upload (convert.h); anything else is refused before anything
 * is uploaded, and backend "auto" then runs the file on the CPU. */
static int check_type(const struct backend_tensor *t, struct infill_error *err)
{
	if (!t->data || cuq_convert_target(t->type) >= 0) return 0;
	int rc = error_set(
	        err, -ENOTSUP,
	        "cuda: tensor %s is of GGML type %u, which the CUDA backend does not run; "
	        "use backend \"cpu\" (or \"auto\") for this file",
	        t->name, t->type);
	if (err) snprintf(err->tensor, sizeof err->tensor, "%s", t->name);
	return rc;
}

static int check_types(const struct backend_weights *w, struct infill_error *err)
{
	int rc = check_type(&w->tok_embd, err);
	if (!rc) rc = check_type(&w->output, err);
	for (int l = 0; !rc && l < w->hp.n_layer; l++) {
		const struct backend_layer *L = &w->layers[l];
		const struct backend_tensor *m[] = { &L->wq,     &L->wk,   &L->wv,    &L->wo,
			                             &L->w_gate, &L->w_up, &L->w_down };
		for (size_t i = 0; !rc && i < sizeof m / sizeof m[0]; i++)
			rc = check_type(m[i], err);
	}
	return rc;
}

static int upload_all(struct cuda_backend *c, const struct backend_config *cfg,
                      const struct backend_weights *w, struct infill_error *err)
{
	const struct backend_hparams *hp = &w->hp;
	int trc = check_types(w, err);
	if (trc) return trc;
	struct upload u;
	memset(&u, 0, sizeof u);
	u.cfg = cfg;
	u.total = w->tok_embd.nbytes + (w->output.data != w->tok_embd.data ? w->output.nbytes : 0);
	for (int l = 0; l < hp->n_layer; l++) {
		const struct backend_layer *L = &w->layers[l];
		u.total += L->wq.nbytes + L->wk.nbytes + L->wv.nbytes + L->wo.nbytes +
		           L->w_gate.nbytes + L->w_up.nbytes + L->w_down.nbytes;
	}
	int rc = upload_weight(c, &u, &w->tok_embd, &c->tok, err);
	if (!rc) {
		if (w->output.data == w->tok_embd.data && w->output.type == w->tok_embd.type)
			c->out = c->tok; /* tied: one copy */
		else
			rc = upload_weight(c, &u, &w->output, &c->out, err);
	}
	if (!rc) rc = upload_f32(c, &w->output_norm, &c->out_norm, err);
	if (!rc) rc = upload_f32(c, &w->output_norm_b, &c->out_norm_b, err);
	for (int l = 0; !rc && l < hp->n_layer; l++) {
		const struct backend_layer *L = &w->layers[l];
		struct cl_layer *d = &c->layers[l];
		if ((rc = upload_f32(c, &L->attn_norm, &d->attn_norm, err)) ||
		    (rc = upload_f32(c, &L->ffn_norm, &d->ffn_norm, err)) ||
		    (rc = upload_f32(c, &L->bq, &d->bq, err)) ||
		    (rc = upload_f32(c, &L->bk, &d->bk, err)) ||
		    (rc = upload_f32(c, &L->bv, &d->bv, err)) ||
		    (rc = upload_f32(c, &L->attn_norm_b, &d->attn_norm_b, err)) ||
		    (rc = upload_f32(c, &L->ffn_norm_b, &d->ffn_norm_b, err)) ||
		    (rc = upload_f32(c, &L->bo, &d->bo, err)) ||
		    (rc = upload_f32(c, &L->b_up, &d->b_up, err)) ||
		    (rc = upload_f32(c, &L->b_down, &d->b_down, err)) ||
		    (rc = upload_weight(c, &u, &L->wq, &d->wq, err)) ||
		    (rc = upload_weight(c, &u, &L->wk, &d->wk, err)) ||
		    (rc = upload_weight(c, &u, &L->wv, &d->wv, err)) ||
		    (rc = upload_weight(c, &u, &L->wo, &d->wo, err)) ||
		    (L->w_gate.data && (rc = upload_weight(c, &u, &L->w_gate, &d->gate, err))) ||
		    (rc = upload_weight(c, &u, &L->w_up, &d->up, err)) ||
		    (rc = upload_weight(c, &u, &L->w_down, &d->down, err)))
			break;
	}
	c->converted = u.converted;
	free(u.host);
	free(u.conv);
	free(u.row);
	return rc;
}

/* ---- matrix products ---- */

static bool gated(int mode)
{
	return mode == CUQ_GEMV_SWIGLU || mode == CUQ_GEMV_GEGLU;
}

/* y = act(y) * hb2 after a gated pair computed apart; nothing otherwise. */
static int gate(struct cuda_backend *c, int mode, float *y, int n, int width)
{
	if (mode == CUQ_GEMV_SWIGLU) return cuq_swiglu_launch(y, c->hb2, n, width, y, c->stream);
	if (mode == CUQ_GEMV_GEGLU) return cuq_geglu_launch(y, c->hb2, n, width, y, c->stream);
	return 0;
}

/* y_i (op) W_i x' for nw weights sharing the input x [n][cols] (x' = rmsnorm(x)*norm_w
 * when norm_w). SWIGLU / GEGLU: nw == 2, y[0] = silu or gelu of (W0 x'), times
 * (W1 x'), hb2 used as scratch. */
static int matmul(struct cuda_backend *c, const cuq_weight *const *w, float *const *y, int nw,
                  int mode, const float *x, const float *norm_w, int n)
{
	const float eps = c->hp.rms_eps;
	const int cols = w[0]->cols;
	if (n <= GEMV_MAX) {
		bool same = true;
		for (int i = 1; i < nw; i++) same = same && w[i]->type == w[0]->type;
		if (same) {
			struct cuq_gemv g;
			memset(&g, 0, sizeof g);
			for (int i = 0; i < nw; i++) {
				g.w[i] = *w[i];
				g.y[i] = y[i];
			}
			g.nw = nw, g.mode = mode, g.x = x, g.n = n, g.norm_w = norm_w, g.eps = eps;
			return cuq_gemv_launch(&g, c->stream);
		}
		/* Mixed types (e.g. Q4_K_M's Q6_K wv): one launch per weight. */
		for (int i = 0; i < nw; i++) {
			struct cuq_gemv g;
			memset(&g, 0, sizeof g);
			g.w[0] = *w[i];
			g.y[0] = gated(mode) && i == 1 ? c->hb2 : y[i];
			g.nw = 1, g.mode = mode == CUQ_GEMV_ADD ? CUQ_GEMV_ADD : CUQ_GEMV_STORE;
			g.x = x, g.n = n, g.norm_w = norm_w, g.eps = eps;
			int rc = cuq_gemv_launch(&g, c->stream);
			if (rc) return rc;
		}
		return gate(c, mode, y[0], n, w[0]->rows);
	}

	/* cuBLAS: Y[n][rows] (row-major) = X[n][cols] W[rows][cols]^T, i.e. in
	 * column-major terms C(rows x n) = op(A)=W^T' (A is cols x rows, ld cols) * B (cols x n). */
	int prepared = -1; /* activation form now in xh: 0 f32, 1 f16, 2 bf16 */
	for (int i = 0; i < nw; i++) {
		const cuq_weight *wi = w[i];
		const int form = wi->type == CUQ_F32 ? 0 : wi->type == CUQ_BF16 ? 2 : 1;
		int rc = 0;
		if (form != prepared) {
			if (form == 0)
				rc = norm_w ? cuq_rmsnorm_launch(x, norm_w, n, cols, eps,
				                                 (float *)c->xh, c->stream)
				            : (cudaMemcpyAsync(c->xh, x,
				                               sizeof(float) * (size_t)n * cols,
				                               cudaMemcpyDeviceToDevice,
				                               c->stream) == cudaSuccess
				                       ? 0
				                       : -EIO);
			else
				rc = cuq_rmsnorm_half_launch(
				        x, norm_w, n, cols, eps, form == 2, c->xh,
				        form == 1 ? c->gemm_k + 2 : NULL, c->stream);
			if (rc) return rc;
			prepared = form;
		}
		const void *A = wi->q;
		cudaDataType_t at = form == 0 ? CUDA_R_32F : form == 2 ? CUDA_R_16BF : CUDA_R_16F;
		if (needs_dequant(wi->type)) {
			if ((rc = cuq_dequant_f16_launch(wi, c->wscratch, c->stream))) return rc;
			A = c->wscratch;
		}
		float *out = gated(mode) && i == 1 ? c->hb2 : y[i];
		const float *alpha = c->gemm_k + (form == 1 ? 2 : 1),
		            *beta = c->gemm_k + (mode == CUQ_GEMV_ADD ? 1 : 0);
		cublasStatus_t st =
		        cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, wi->rows, n, cols, alpha, A,
		                     at, cols, c->xh, at, cols, beta, out, CUDA_R_32F, wi->rows,
		                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
		if (st != CUBLAS_STATUS_SUCCESS) return -EIO;
	}
	return gate(c, mode, y[0], n, w[0]->rows);
}

static int matmul1(struct cuda_backend *c, const cuq_weight *w, float *y, int mode, const float *x,
                   const float *norm_w, int n)
{
	const cuq_weight *ws[1] = { w };
	float *ys[1] = { y };
	return matmul(c, ws, ys, 1, mode, x, norm_w, n);
}

/* ---- the forward pass of one staged chunk ---- */

/* Layers for n staged entries; leaves the residual stream in c->x. Enqueue only (graph-safe for n <= GEMV_MAX). */
static int enqueue_layers(struct cuda_backend *c, int n)
{
	const struct backend_hparams *hp = &c->hp;
	const int32_t *tok = c->d_ints + OFF_TOK, *pos = c->d_ints + OFF_POS,
	              *seq = c->d_ints + OFF_SEQ;
	const int splits = cuq_attn_splits(n, hp->n_head, c->n_sm);
	int rc = cuq_embed_launch(&c->tok, tok, n, c->x, c->stream);
	if (!rc && hp->embd_scale != 0 && hp->embd_scale != 1)
		rc = cuq_scale_launch(c->x, (size_t)n * hp->n_embd, hp->embd_scale, c->stream);
	const int ffn = hp->ffn == BACKEND_FFN_GEGLU ? CUQ_GEMV_GEGLU : CUQ_GEMV_SWIGLU;
	const int E = hp->n_embd;
	for (int l = 0; !rc && l < hp->n_layer; l++) {
		const struct cl_layer *L = &c->layers[l];
		const cuq_weight *qkv[3] = { &L->wq, &L->wk, &L->wv };
		float *qkv_out[3] = { c->q, c->k, c->v };
		/* RMSNorm is folded into the matrix products; LayerNorm (starcoder2)
		 * is applied apart, into xn */
		const float *in = c->x, *nw = L->attn_norm;
		if (c->xn) {
			rc = cuq_layernorm_launch(c->x, L->attn_norm, L->attn_norm_b, n, E,
			                          hp->rms_eps, c->xn, c->stream);
			in = c->xn, nw = NULL;
		}
		if (!rc) rc = matmul(c, qkv, qkv_out, 3, CUQ_GEMV_STORE, in, nw, n);
		if (!rc)
			rc = cuq_rope_kv_launch(c->q, c->k, c->v, L->bq, L->bk, L->bv, pos, seq, n,
			                        hp->n_head, &c->rope, &c->kv, l, c->stream);
		if (!rc)
			rc = cuq_attn_launch(c->q, pos, seq, n, hp->n_head, &c->kv, l, splits,
			                     c->part, c->xb, c->stream);
		if (!rc) rc = matmul1(c, &L->wo, c->x, CUQ_GEMV_ADD, c->xb, NULL, n);
		if (!rc && L->bo) rc = cuq_bias_launch(c->x, L->bo, n, E, c->stream);
		in = c->x, nw = L->ffn_norm;
		if (!rc && c->xn) {
			rc = cuq_layernorm_launch(c->x, L->ffn_norm, L->ffn_norm_b, n, E,
			                          hp->rms_eps, c->xn, c->stream);
			in = c->xn, nw = NULL;
		}
		if (rc) break;
		if (hp->ffn == BACKEND_FFN_GELU) { /* down(gelu(up x + b_up)) + b_down */
			rc = matmul1(c, &L->up, c->hb, CUQ_GEMV_STORE, in, nw, n);
			if (!rc && L->b_up)
				rc = cuq_bias_launch(c->hb, L->b_up, n, L->up.rows, c->stream);
			if (!rc) rc = cuq_gelu_launch(c->hb, (size_t)n * L->up.rows, c->stream);
		} else {
			const cuq_weight *gu[2] = { &L->gate, &L->up };
			float *gu_out[2] = { c->hb, c->hb2 };
			rc = matmul(c, gu, gu_out, 2, ffn, in, nw, n);
		}
		if (!rc) rc = matmul1(c, &L->down, c->x, CUQ_GEMV_ADD, c->hb, NULL, n);
		if (!rc && L->b_down) rc = cuq_bias_launch(c->x, L->b_down, n, E, c->stream);
	}
	return rc;
}

/* Head for `count` staged output rows starting at staged row index `first`:
 * logits into c->logits [count][n_vocab], argmax into c->d_ids. The head always
 * uses the GEMV kernels, so no [vocab][embd] dequantized copy is ever needed. */
static int enqueue_head(struct cuda_backend *c, int first, int count)
{
	const int32_t *rows = c->d_ints + OFF_ROWS + first;
	struct cuq_sample_params greedy;
	memset(&greedy, 0, sizeof greedy);
	int rc = cuq_gather_launch(c->x, rows, count, c->hp.n_embd, c->xo, c->stream);
	const bool ln = c->hp.norm == BACKEND_NORM_LAYER;
	if (!rc && ln)
		rc = cuq_layernorm_launch(c->xo, c->out_norm, c->out_norm_b, count, c->hp.n_embd,
		                          c->hp.rms_eps, c->xo, c->stream);
	if (!rc) {
		struct cuq_gemv g;
		memset(&g, 0, sizeof g);
		g.w[0] = c->out, g.y[0] = c->logits, g.nw = 1, g.mode = CUQ_GEMV_STORE;
		g.x = c->xo, g.n = count, g.norm_w = ln ? NULL : c->out_norm, g.eps = c->hp.rms_eps;
		rc = cuq_gemv_launch(&g, c->stream);
	}
	if (!rc)
		rc = cuq_sample_launch(c->logits, count, c->hp.n_vocab, &greedy, c->d_ids, NULL,
		                       c->stream);
	return rc;
}

/* Runs layers + the first head pass through a graph for small (n, n_out), else directly. */
static int run_staged(struct cuda_backend *c, int n, int n_out)
{
	const int head0 = n_out < HEAD_ROWS ? n_out : HEAD_ROWS;
	if (c->use_graphs && n <= GRAPH_MAX && n_out <= GRAPH_MAX &&
	    c->graph_state[n][n_out] >= 0) {
		if (c->graph_state[n][n_out] == 0) {
			cudaGraph_t g = NULL;
			c->graph_state[n][n_out] = -1;
			if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) ==
			    cudaSuccess) {
				int rc = enqueue_layers(c, n);
				if (!rc && n_out) rc = enqueue_head(c, 0, n_out);
				cudaError_t e = cudaStreamEndCapture(c->stream, &g);
				if (!rc && e == cudaSuccess && g &&
				    cudaGraphInstantiate(&c->graph[n][n_out], g, 0) == cudaSuccess)
					c->graph_state[n][n_out] = 1;
				if (g) cudaGraphDestroy(g);
			}
			cudaGetLastError(); /* a failed capture falls back to direct launches */
		}
		if (c->graph_state[n][n_out] == 1)
			return cudaGraphLaunch(c->graph[n][n_out], c->stream) == cudaSuccess ? 0
			                                                                     : -EIO;
	}
	int rc = enqueue_layers(c, n);
	if (!rc && head0) rc = enqueue_head(c, 0, head0);
	return rc;
}

/* ---- backend ops ---- */

static int stage_seq(int32_t *map, int *n_map, int32_t id)
{
	for (int i = 0; i < *n_map; i++)
		if (map[i] == id) return i;
	map[*n_map] = id;
	return (*n_map)++;
}

/* Page tables of one chunk: for each of its n_map sequences the pages up to
 * its furthest position, checked against the pool; *width: the widest. */
static int stage_tables(struct cuda_backend *c, const struct backend_batch *b,
                        const int32_t *seq_map, int n_map, const int *max_page, int *width,
                        struct infill_error *err)
{
	for (int i = 0; i < n_map; i++) {
		const struct backend_seq *sq = &b->seqs[seq_map[i]];
		for (int pg = 0; pg < max_page[i]; pg++) {
			if (sq->pages[pg] < 0 || sq->pages[pg] >= c->n_pages)
				return error_set(err, -EINVAL,
				                 "cuda: page %d of sequence %d is %d, "
				                 "outside the pool of %d",
				                 pg, seq_map[i], sq->pages[pg], c->n_pages);
			c->h_ints[OFF_TAB + (size_t)i * c->table_w + pg] = sq->pages[pg];
		}
		if (max_page[i] > *width) *width = max_page[i];
	}
	return 0;
}

/* Output rows inside the chunk [c0, c1), in the caller's order; out_j[k]:
 * the caller's index of the k-th. */
static int stage_out_rows(struct cuda_backend *c, const struct backend_batch *b, int c0, int c1,
                          int32_t *out_j, int *n_out, struct infill_error *err)
{
	for (int j = 0; j < b->n_out; j++)
		if (b->out_rows[j] >= c0 && b->out_rows[j] < c1) {
			if (*n_out == MAX_CHUNK)
				return error_set(err, -EINVAL,
				                 "cuda: more than %d output rows in one chunk",
				                 MAX_CHUNK);
			c->h_ints[OFF_ROWS + *n_out] = b->out_rows[j] - c0;
			out_j[(*n_out)++] = j;
		}
	return 0;
}

static int forward_chunks(void *ctx, const struct backend_batch *b, struct infill_error *err)
{
	struct cuda_backend *c = (struct cuda_backend *)ctx;
	const struct backend_hparams *hp = &c->hp;
	const int ps = c->kv.page_size;
	cudaSetDevice(c->device);
	if (b->n_tokens < 0 || b->n_out < 0 || (b->n_tokens == 0 && b->n_out > 0))
		return error_set(err, -EINVAL, "cuda: bad batch: %d entries, %d output rows",
		                 b->n_tokens, b->n_out);
	for (int j = 0; j < b->n_out; j++)
		if (b->out_rows[j] < 0 || b->out_rows[j] >= b->n_tokens)
			return error_set(err, -EINVAL,
			                 "cuda: output row %d is outside the batch of %d",
			                 b->out_rows[j], b->n_tokens);
	int c0 = 0;
	while (c0 < b->n_tokens) {
		/* Chunk: consecutive entries, at most MAX_CHUNK, at most MAX_SEQS sequences. */
		int32_t seq_map[MAX_SEQS];
		int n_map = 0, max_page[MAX_SEQS];
		int c1 = c0;
		while (c1 < b->n_tokens && c1 - c0 < MAX_CHUNK) {
			const int32_t s = b->seq_ids[c1], p = b->positions[c1], tk = b->tokens[c1];
			if (s < 0 || s >= b->n_seqs)
				return error_set(err, -EINVAL,
				                 "cuda: entry %d names sequence %d of %d", c1, s,
				                 b->n_seqs);
			if (tk < 0 || tk >= hp->n_vocab)
				return error_set(err, -EINVAL,
				                 "cuda: token id %d is outside the vocabulary (%d)",
				                 tk, hp->n_vocab);
			if (p < 0 || p / ps >= b->seqs[s].n_pages)
				return error_set(
				        err, -EINVAL,
				        "cuda: position %d of sequence %d is past its page "
				        "table (%d pages)",
				        p, s, b->seqs[s].n_pages);
			if (p / ps >= c->table_w)
				return error_set(
				        err, -EINVAL,
				        "cuda: position %d exceeds the %d positions a sequence "
				        "may hold",
				        p, c->table_w * ps);
			int found = -1;
			for (int i = 0; i < n_map; i++)
				if (seq_map[i] == s) found = i;
			if (found < 0 && n_map == MAX_SEQS) break;
			const int li = stage_seq(seq_map, &n_map, s);
			if (found < 0) max_page[li] = 0;
			if (p / ps + 1 > max_page[li]) max_page[li] = p / ps + 1;
			c->h_ints[OFF_TOK + (c1 - c0)] = tk;
			c->h_ints[OFF_POS + (c1 - c0)] = p;
			c->h_ints[OFF_SEQ + (c1 - c0)] = li;
			c1++;
		}
		const int n = c1 - c0;
		int width = 0, n_out = 0, rc;
		int32_t out_j[MAX_CHUNK];
		if ((rc = stage_tables(c, b, seq_map, n_map, max_page, &width, err)) ||
		    (rc = stage_out_rows(c, b, c0, c1, out_j, &n_out, err)))
			return rc;
		if (!b->logits && !b->argmax) n_out = 0;

		cudaError_t e = cudaMemcpyAsync(c->d_ints, c->h_ints, sizeof(int32_t) * OFF_TAB,
		                                cudaMemcpyHostToDevice, c->stream);
		if (e == cudaSuccess && n_map)
			e = cudaMemcpy2DAsync(c->d_ints + OFF_TAB, sizeof(int32_t) * c->table_w,
			                      c->h_ints + OFF_TAB, sizeof(int32_t) * c->table_w,
			                      sizeof(int32_t) * width, n_map,
			                      cudaMemcpyHostToDevice, c->stream);
		if (e != cudaSuccess) return cuda_fail(err, e, "copying the batch to the device");
		rc = run_staged(c, n, n_out);
		for (int g0 = 0; !rc && g0 < n_out; g0 += HEAD_ROWS) {
			const int cnt = n_out - g0 < HEAD_ROWS ? n_out - g0 : HEAD_ROWS;
			if (g0 > 0 && (rc = enqueue_head(c, g0, cnt))) break;
			for (int i = 0; b->logits && i < cnt; i++) {
				e = cudaMemcpyAsync(b->logits + (size_t)out_j[g0 + i] * hp->n_vocab,
				                    c->logits + (size_t)i * hp->n_vocab,
				                    sizeof(float) * hp->n_vocab,
				                    cudaMemcpyDeviceToHost, c->stream);
				if (e != cudaSuccess)
					return cuda_fail(err, e, "copying logits back");
			}
			if (b->argmax) {
				e = cudaMemcpyAsync(c->h_ids + g0, c->d_ids, sizeof(int32_t) * cnt,
				                    cudaMemcpyDeviceToHost, c->stream);
				if (e != cudaSuccess)
					return cuda_fail(err, e, "copying token ids back");
			}
		}
		if (rc) {
			cudaError_t le = cudaGetLastError();
			return error_set(err, -EIO, "cuda: launching the forward pass failed: %s",
			                 le != cudaSuccess ? cudaGetErrorString(le)
			                                   : "cuBLAS or argument error");
		}
		e = cudaStreamSynchronize(c->stream);
		if (e != cudaSuccess) return cuda_fail(err, e, "running the forward pass");
		if (b->argmax)
			for (int i = 0; i < n_out; i++) b->argmax[out_j[i]] = c->h_ids[i];
		c0 = c1;
	}
	return 0;
}

static int cuda_kv_copy_page(void *ctx, int32_t dst, int32_t src, struct infill_error *err)
{
	struct cuda_backend *c = (struct cuda_backend *)ctx;
	if (dst < 0 || src < 0 || dst >= c->n_pages || src >= c->n_pages)
		return error_set(err, -EINVAL, "cuda: page copy %d -> %d outside the pool of %d",
		                 src, dst, c->n_pages);
	if (dst == src) return 0;
	cudaSetDevice(c->device);
	char *pool = (char *)c->kv.pool;
	cudaError_t e = cudaMemcpyAsync(pool + (size_t)dst * c->page_bytes,
	                                pool + (size_t)src * c->page_bytes, c->page_bytes,
	                                cudaMemcpyDeviceToDevice, c->stream);
	return e == cudaSuccess ? 0 : cuda_fail(err, e, "copying a KV page");
}

static int slot_of(const struct cuda_backend *c, const struct backend_seq *s, int32_t p,
                   int32_t *page, int32_t *slot, struct infill_error *err)
{
	const int ps = c->kv.page_size;
	if (p < 0 || p / ps >= s->n_pages)
		return error_set(err, -EINVAL,
		                 "cuda: kv shift position %d is past the page table (%d pages)", p,
		                 s->n_pages);
	*page = s->pages[p / ps];
	*slot = p % ps;
	if (*page < 0 || *page >= c->n_pages)
		return error_set(err, -EINVAL, "cuda: kv shift page %d outside the pool of %d",
		                 *page, c->n_pages);
	return 0;
}

static int kv_shift_chunks(void *ctx, const struct backend_seq *src, int32_t src_start,
                           const struct backend_seq *dst, int32_t dst_start, int32_t n,
                           struct infill_error *err)
{
	struct cuda_backend *c = (struct cuda_backend *)ctx;
	cudaSetDevice(c->device);
	if (n < 0) return error_set(err, -EINVAL, "cuda: kv shift of %d tokens", n);
	/* Staging: [src_page T][src_slot T][dst_page T][dst_slot T] in the batch area. */
	for (int32_t i0 = 0; i0 < n; i0 += MAX_CHUNK) {
		const int m = n - i0 < MAX_CHUNK ? n - i0 : MAX_CHUNK;
		int32_t *h = c->h_ints;
		for (int i = 0; i < m; i++) {
			int rc = slot_of(c, src, src_start + i0 + i, &h[i], &h[MAX_CHUNK + i], err);
			if (!rc)
				rc = slot_of(c, dst, dst_start + i0 + i, &h[2 * MAX_CHUNK + i],
				             &h[3 * MAX_CHUNK + i], err);
			if (rc) return rc;
		}
		cudaError_t e = cudaMemcpyAsync(c->d_ints, h, sizeof(int32_t) * 4 * MAX_CHUNK,
		                                cudaMemcpyHostToDevice, c->stream);
		if (e != cudaSuccess) return cuda_fail(err, e, "copying a kv shift");
		const int32_t *d = c->d_ints;
		int rc = cuq_kv_shift_launch(&c->kv, d, d + MAX_CHUNK, d + 2 * MAX_CHUNK,
		                             d + 3 * MAX_CHUNK, m, dst_start - src_start, &c->rope,
		                             c->stream);
		if (rc) return error_set(err, rc, "cuda: kv shift launch failed");
		e = cudaStreamSynchronize(c->stream); /* the staging buffer is reused */
		if (e != cudaSuccess) return cuda_fail(err, e, "running a kv shift");
	}
	return 0;
}

/* A call that fails after queueing copies from the pinned staging buffer
 * waits for the stream before it returns: the next call rewrites that
 * buffer, and a copy still in flight would read the new tables. */
static int drained(struct cuda_backend *c, int rc)
{
	if (rc) cudaStreamSynchronize(c->stream);
	return rc;
}

static int cuda_forward(void *ctx, const struct backend_batch *b, struct infill_error *err)
{
	return drained((struct cuda_backend *)ctx, forward_chunks(ctx, b, err));
}

static int cuda_kv_shift(void *ctx, const struct backend_seq *src, int32_t src_start,
                         const struct backend_seq *dst, int32_t dst_start, int32_t n,
                         struct infill_error *err)
{
	return drained((struct cuda_backend *)ctx,
	               kv_shift_chunks(ctx, src, src_start, dst, dst_start, n, err));
}

static const struct backend_ops cuda_ops = {
	cuda_destroy,
	cuda_forward,
	cuda_kv_copy_page,
	cuda_kv_shift,
};

/* ---- creation ---- */

static size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* Selects cfg->device and refuses one the module has no machine code for. */
static int device_open(struct cuda_backend *c, const struct backend_config *cfg,
                       struct infill_error *err)
{
	int n_dev = 0;
	cudaError_t e = cudaGetDeviceCount(&n_dev);
	if (e != cudaSuccess || n_dev == 0) {
		cudaGetLastError();
		return error_set(err, -ENODEV, "cuda: no CUDA device (%s)",
		                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
	}
	if (cfg->device < 0 || cfg->device >= n_dev)
		return error_set(err, -ENODEV, "cuda: device %d does not exist (%d found)",
		                 cfg->device, n_dev);
	c->device = cfg->device;
	if ((e = cudaSetDevice(c->device)) != cudaSuccess)
		return cuda_fail(err, e, "selecting the device");
	cudaDeviceProp prop;
	if ((e = cudaGetDeviceProperties(&prop, c->device)) != cudaSuccess)
		return cuda_fail(err, e, "reading device properties");
	snprintf(c->gpu_name, sizeof c->gpu_name, "%s", prop.name);
	c->n_sm = prop.multiProcessorCount;
	if (prop.major < 8)
		return error_set(err, -ENODEV,
		                 "cuda: %s is compute capability %d.%d; the module is built "
		                 "for 8.0 and newer",
		                 prop.name, prop.major, prop.minor);
	return 0;
}

/* The shapes the kernels are written for, refused before anything is
 * allocated. */
static int shapes_check(const struct backend_hparams *hp, uint32_t kv_type,
                        struct infill_error *err)
{
	if (kv_type == CUQ_Q8_0 && (hp->head_dim % 32 || hp->head_dim > 256)) {
		error_set(err, -EINVAL,
		          "cuda: cache.kvType q8_0 needs a head size that is a multiple of 32 up "
		          "to 256 (this model's is %d); use f16",
		          hp->head_dim);
		error_key(err, "cache.kvType", strlen("cache.kvType"));
		return -EINVAL;
	}
	if (hp->head_dim % 4 || hp->head_dim > 256)
		return error_set(err, -EINVAL,
		                 "cuda: head size %d is not supported (a multiple of 4 up to 256)",
		                 hp->head_dim);
	if (hp->n_embd % 32 || hp->n_ff % 32 || (hp->n_head * hp->head_dim) % 32)
		return error_set(err, -EINVAL,
		                 "cuda: hidden %d / ffn %d sizes must be multiples of 32",
		                 hp->n_embd, hp->n_ff);
	return 0;
}

/* One non-blocking stream for everything, and cuBLAS on it. */
static int stream_open(struct cuda_backend *c, struct infill_error *err)
{
	cudaError_t e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess) return cuda_fail(err, e, "creating a stream");
	if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS) {
		c->blas = NULL;
		return error_set(err, -EIO, "cuda: cuBLAS failed to start");
	}
	cublasSetStream(c->blas, c->stream);
	/* alpha on the device: an f16 input's scale is known only there */
	cublasSetPointerMode(c->blas, CUBLAS_POINTER_MODE_DEVICE);
	return 0;
}

/* The RoPE frequencies, computed once on the host. */
static int rope_upload(struct cuda_backend *c, const struct backend_hparams *hp,
                       struct infill_error *err)
{
	float freq[256];
	const int n_rot = hp->n_rot > 512 ? 512 : hp->n_rot;
	cuq_rope_freqs(hp->rope_base, hp->rope_freq_scale, n_rot, freq);
	void *dfreq;
	int rc = dalloc(c, &dfreq, sizeof freq, "rope table", err);
	if (rc) return rc;
	cudaError_t e = cudaMemcpy(dfreq, freq, sizeof(float) * (size_t)(n_rot / 2),
	                           cudaMemcpyHostToDevice);
	if (e != cudaSuccess) return cuda_fail(err, e, "uploading the rope table");
	c->rope.n_rot = n_rot;
	c->rope.neox = hp->rope_neox;
	c->rope.freq = (const float *)dfreq;
	return 0;
}

/* KV pool: q8_0 blocks where kv_type asks for them (cache.kvType q8_0),
 * else f16 (an f32 ask too: the kernels read f16 or q8_0). A page table
 * covers at most MAX_CTX positions, and never more pages than exist. */
static int kv_pool_alloc(struct cuda_backend *c, const struct backend_config *cfg,
                         const struct backend_hparams *hp, struct infill_error *err)
{
	c->n_pages = cfg->kv_n_pages;
	c->kv.n_layers = hp->n_layer;
	c->kv.page_size = cfg->kv_page_size;
	c->kv.n_kv_heads = hp->n_head_kv;
	c->kv.head_dim = hp->head_dim;
	c->kv.q8 = cfg->kv_type == CUQ_Q8_0; /* GGML type ids, as backend.h */
	c->page_bytes = 2 * (size_t)hp->n_layer * cfg->kv_page_size * cuq_kv_row_bytes(&c->kv);
	c->table_w = (MAX_CTX + cfg->kv_page_size - 1) / cfg->kv_page_size;
	if (c->table_w > c->n_pages) c->table_w = c->n_pages;
	c->kv.max_pages = c->table_w;
	int rc =
	        dalloc(c, &c->kv.pool, c->page_bytes * (size_t)c->n_pages, "the KV page pool", err);
	if (rc) return rc;
	cudaMemsetAsync(c->kv.pool, 0, c->page_bytes * (size_t)c->n_pages, c->stream);
	return 0;
}

/* Bytes for the largest weight cuBLAS needs dequantized to f16. */
static size_t wscratch_bytes(const struct cuda_backend *c)
{
	size_t wscr = 256;
	for (int l = 0; l < c->hp.n_layer; l++) {
		const struct cl_layer *L = &c->layers[l];
		const cuq_weight *ws[7] = { &L->wq,   &L->wk, &L->wv,  &L->wo,
			                    &L->gate, &L->up, &L->down };
		for (int i = 0; i < 7; i++)
			if (needs_dequant(ws[i]->type))
				wscr = max_sz(wscr, (size_t)ws[i]->rows * ws[i]->cols * 2);
	}
	return wscr;
}

/* Bytes for attention's split scratch at the worst chunk length. */
static size_t attn_scratch_bytes(const struct cuda_backend *c)
{
	const struct backend_hparams *hp = &c->hp;
	size_t part = 256;
	for (int n = 1; n <= MAX_CHUNK; n++)
		part = max_sz(part, cuq_attn_scratch(n, hp->n_head, hp->head_dim,
		                                     cuq_attn_splits(n, hp->n_head, c->n_sm)));
	return part;
}

/* Activations for MAX_CHUNK entries, so that no forward pass allocates. */
static int activations_alloc(struct cuda_backend *c, const struct backend_hparams *hp,
                             struct infill_error *err)
{
	const size_t T = MAX_CHUNK, E = (size_t)hp->n_embd, qd = (size_t)hp->n_head * hp->head_dim,
	             kvd = (size_t)hp->n_head_kv * hp->head_dim, ff = (size_t)hp->n_ff,
	             V = (size_t)hp->n_vocab;
	const size_t wmax = max_sz(max_sz(E, qd), ff);
	const size_t wscr = wscratch_bytes(c), part = attn_scratch_bytes(c);
	int rc;
	if ((rc = dalloc(c, (void **)&c->x, T * E * 4, "activations", err)) ||
	    (rc = dalloc(c, (void **)&c->xb, T * qd * 4, "activations", err)) ||
	    (rc = dalloc(c, (void **)&c->q, T * qd * 4, "activations", err)) ||
	    (rc = dalloc(c, (void **)&c->k, T * kvd * 4, "activations", err)) ||
	    (rc = dalloc(c, (void **)&c->v, T * kvd * 4, "activations", err)) ||
	    (rc = dalloc(c, (void **)&c->hb, T * ff * 4, "activations", err)) ||
	    (rc = dalloc(c, (void **)&c->hb2, T * ff * 4, "activations", err)) ||
	    (rc = dalloc(c, (void **)&c->xo, HEAD_ROWS * E * 4, "activations", err)) ||
	    (rc = dalloc(c, (void **)&c->logits, HEAD_ROWS * V * 4, "logits", err)) ||
	    (rc = dalloc(c, &c->xh, T * wmax * 4, "GEMM input", err)) ||
	    (rc = dalloc(c, &c->wscratch, wscr, "dequantized weight scratch", err)) ||
	    (rc = dalloc(c, (void **)&c->gemm_k, (3 + 2 * T) * 4, "GEMM constants", err)) ||
	    (rc = dalloc(c, (void **)&c->part, part, "attention scratch", err)) ||
	    (rc = dalloc(c, (void **)&c->d_ids, HEAD_ROWS * 4, "token ids", err)) ||
	    (hp->norm == BACKEND_NORM_LAYER &&
	     (rc = dalloc(c, (void **)&c->xn, T * E * 4, "activations", err))))
		return rc;
	const float k[3] = { 0.f, 1.f, 1.f };
	cudaError_t e = cudaMemcpy(c->gemm_k, k, sizeof k, cudaMemcpyHostToDevice);
	return e == cudaSuccess ? 0 : cuda_fail(err, e, "uploading the GEMM constants");
}

/* The batch staging buffer, pinned on the host and at a fixed device
 * address: captured graphs read the current page tables from there. */
static int staging_alloc(struct cuda_backend *c, struct infill_error *err)
{
	c->ints_count = OFF_TAB + (size_t)MAX_SEQS * c->table_w;
	int rc = dalloc(c, (void **)&c->d_ints, c->ints_count * 4, "batch staging", err);
	if (rc) return rc;
	c->kv.tables = c->d_ints + OFF_TAB;
	cudaError_t e;
	if ((e = cudaMallocHost((void **)&c->h_ints, c->ints_count * 4)) != cudaSuccess ||
	    (e = cudaMallocHost((void **)&c->h_ids, MAX_CHUNK * 4)) != cudaSuccess)
		return cuda_fail(err, e, "allocating pinned host memory");
	return 0;
}

/* Every device allocation in one place, so that out-of-memory can happen
 * only here (and backend_create falls back to the CPU). On failure the
 * caller's cuda_destroy frees what was made. */
static int create(struct cuda_backend *c, const struct backend_config *cfg,
                  const struct backend_weights *w, struct infill_error *err)
{
	const struct backend_hparams *hp = &w->hp;
	int rc;
	if ((rc = device_open(c, cfg, err)) || (rc = shapes_check(hp, cfg->kv_type, err)) ||
	    (rc = stream_open(c, err)))
		return rc;
	c->layers = (struct cl_layer *)calloc((size_t)hp->n_layer, sizeof *c->layers);
	if (!c->layers) return error_set(err, -ENOMEM, "cuda: out of host memory");
	if ((rc = upload_all(c, cfg, w, err)) || (rc = rope_upload(c, hp, err)) ||
	    (rc = kv_pool_alloc(c, cfg, hp, err)) || (rc = activations_alloc(c, hp, err)) ||
	    (rc = staging_alloc(c, err)))
		return rc;
	/* the device, not the stream: the weights went up by cudaMemcpy from
	 * pageable memory on the legacy stream, whose DMA may still run when it
	 * returns, and the kernels' non-blocking stream does not wait for it */
	cudaError_t e = cudaDeviceSynchronize();
	if (e != cudaSuccess) return cuda_fail(err, e, "initializing");
	return 0;
}

extern "C" __attribute__((visibility("default"))) int
infill_backend_cuda_init(struct backend *out, const struct backend_config *cfg,
                         const struct backend_weights *w, struct infill_error *err)
{
	struct cuda_backend *c = (struct cuda_backend *)calloc(1, sizeof *c);
	if (!c) return error_set(err, -ENOMEM, "cuda: out of host memory");
	c->hp = w->hp;
	const char *g = getenv("INFILL_CUDA_GRAPHS");
	c->use_graphs = !(g && !strcmp(g, "0"));
	int rc = create(c, cfg, w, err);
	if (rc) {
		cuda_destroy(c);
		return rc;
	}
	out->ops = &cuda_ops;
	out->ctx = c;
	/* Converted weights say so in the name the logs and infill/stats show:
	 * they cost more memory than the file (convert.h). */
	char conv[64];
	cuq_convert_describe(c->converted, conv, sizeof conv);
	snprintf(out->name, sizeof out->name, "cuda (%.48s, kv %s%s)", c->gpu_name,
	         c->kv.q8 ? "q8_0" : "f16", conv);
	return 0;
}
