/*
 * backend.c - backend_create and the wrappers over the vtable.
 *
 * backend_create checks the hyperparameters and every weight's shape once,
 * so backends can trust them, then starts the requested backend. The cuda
 * backend lives in a shared module loaded with dlopen, so `infill` starts on
 * machines without CUDA libraries; it is searched as $INFILL_CUDA_MODULE,
 * then next to the executable (kernels/cuda/libinfill-cuda.so and
 * libinfill-cuda.so), then by the dynamic linker's search path.
 */
#include "backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant.h"

static int tensor_fault(const struct backend_tensor *t, int64_t ne0, int64_t ne1, bool optional,
                        struct infill_error *err)
{
	const char *name = t->name ? t->name : "(unnamed)";
	if (!t->data) {
		if (optional) return 0;
		return error_set(err, -EINVAL, "missing tensor %s", name);
	}
	if (t->ne[0] != ne0 || t->ne[1] != ne1)
		return error_set(err, -EINVAL,
		                 "tensor %s has shape [%lld, %lld], expected [%lld, %lld]", name,
		                 (long long)t->ne[0], (long long)t->ne[1], (long long)ne0,
		                 (long long)ne1);
	if (!tensor_type_valid(t->type))
		return error_set(err, -EINVAL, "tensor %s has unsupported type %u", name, t->type);
	uint64_t rs = tensor_type_row_size(t->type, ne0);
	if (rs == 0 || t->nbytes < rs * (uint64_t)ne1)
		return error_set(err, -EINVAL, "tensor %s (%s) holds %llu bytes, expected %llu",
		                 name, tensor_type_name(t->type), (unsigned long long)t->nbytes,
		                 (unsigned long long)(rs * (uint64_t)ne1));
	return 0;
}

/* 0, or the error of the first fault found, naming the tensor. */
static int check_tensor(const struct backend_tensor *t, int64_t ne0, int64_t ne1, bool optional,
                        struct infill_error *err)
{
	int rc = tensor_fault(t, ne0, ne1, optional, err);
	if (rc) error_tensor(err, t->name, SIZE_MAX);
	return rc;
}

static int check_f32(const struct backend_tensor *t, int64_t n, bool optional,
                     struct infill_error *err)
{
	int rc = check_tensor(t, n, 1, optional, err);
	if (rc == 0 && t->data && t->type != TENSOR_TYPE_F32) {
		rc = error_set(err, -EINVAL, "tensor %s must be f32, is %s", t->name,
		               tensor_type_name(t->type));
		error_tensor(err, t->name, SIZE_MAX);
	}
	return rc;
}

static int check_weights(const struct backend_weights *w, struct infill_error *err)
{
	const struct backend_hparams *hp = &w->hp;
	if (hp->n_layer <= 0 || hp->n_embd <= 0 || hp->n_head <= 0 || hp->n_head_kv <= 0 ||
	    hp->n_ff <= 0 || hp->n_vocab <= 0 || hp->head_dim <= 0)
		return error_set(
		        err, -EINVAL,
		        "bad hyperparameters: layers %d, embd %d, heads %d/%d, ffn %d, vocab %d",
		        hp->n_layer, hp->n_embd, hp->n_head, hp->n_head_kv, hp->n_ff, hp->n_vocab);
	if (hp->head_dim > BACKEND_MAX_HEAD_DIM)
		return error_set(err, -EINVAL, "head size %d is larger than %d", hp->head_dim,
		                 BACKEND_MAX_HEAD_DIM);
	if (hp->n_head % hp->n_head_kv != 0)
		return error_set(err, -EINVAL,
		                 "head count %d is not a multiple of the KV head count %d",
		                 hp->n_head, hp->n_head_kv);
	if (hp->norm != BACKEND_NORM_RMS && hp->norm != BACKEND_NORM_LAYER)
		return error_set(err, -EINVAL, "unknown norm kind %d", (int)hp->norm);
	if (hp->ffn != BACKEND_FFN_SWIGLU && hp->ffn != BACKEND_FFN_GELU &&
	    hp->ffn != BACKEND_FFN_GEGLU)
		return error_set(err, -EINVAL, "unknown feed-forward kind %d", (int)hp->ffn);
	if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2 || hp->n_rot > 512)
		return error_set(err, -EINVAL, "rope dimension count %d does not fit head size %d",
		                 hp->n_rot, hp->head_dim);
	int64_t E = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim,
	        kvd = (int64_t)hp->n_head_kv * hp->head_dim;
	int rc;
	if ((rc = check_tensor(&w->tok_embd, E, hp->n_vocab, false, err)) ||
	    (rc = check_f32(&w->output_norm, E, false, err)) ||
	    (rc = check_f32(&w->output_norm_b, E, true, err)) ||
	    (rc = check_tensor(&w->output, E, hp->n_vocab, false, err)))
		return rc;
	for (int l = 0; l < hp->n_layer; l++) {
		const struct backend_layer *L = &w->layers[l];
		if ((rc = check_f32(&L->attn_norm, E, false, err)) ||
		    (rc = check_f32(&L->attn_norm_b, E, true, err)) ||
		    (rc = check_tensor(&L->wq, E, qd, false, err)) ||
		    (rc = check_tensor(&L->wk, E, kvd, false, err)) ||
		    (rc = check_tensor(&L->wv, E, kvd, false, err)) ||
		    (rc = check_f32(&L->bq, qd, true, err)) ||
		    (rc = check_f32(&L->bk, kvd, true, err)) ||
		    (rc = check_f32(&L->bv, kvd, true, err)) ||
		    (rc = check_tensor(&L->wo, qd, E, false, err)) ||
		    (rc = check_f32(&L->bo, E, true, err)) ||
		    (rc = check_f32(&L->ffn_norm, E, false, err)) ||
		    (rc = check_f32(&L->ffn_norm_b, E, true, err)) ||
		    (rc = check_tensor(&L->w_gate, E, hp->n_ff, hp->ffn == BACKEND_FFN_GELU,
		                       err)) ||
		    (rc = check_tensor(&L->w_up, E, hp->n_ff, false, err)) ||
		    (rc = check_f32(&L->b_up, hp->n_ff, true, err)) ||
		    (rc = check_tensor(&L->w_down, hp->n_ff, E, false, err)) ||
		    (rc = check_f32(&L->b_down, E, true, err)))
			return rc;
	}
	return 0;
}

static int cuda_init(struct backend *out, const struct backend_config *cfg,
                     const struct backend_weights *w, struct infill_error *err)
{
	char paths[4][PATH_MAX + 64];
	int np = 0;
	const char *env = getenv("INFILL_CUDA_MODULE");
	if (env && *env) {
		snprintf(paths[np++], sizeof paths[0], "%s", env);
	} else {
		/* The module links cuBLAS and the CUDA runtime (hundreds of MB):
		 * loading it on a machine without the driver cost seconds of cold
		 * start under memory pressure, only to fail. The driver's own small
		 * library says first whether there can be a GPU at all. */
		void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
		if (!drv)
			return error_set(err, -ENOENT,
			                 "cuda backend unavailable: no NVIDIA driver "
			                 "(libcuda.so.1 not found)");
		dlclose(drv);
	}
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(paths[np++], sizeof paths[0], "%s/kernels/cuda/libinfill-cuda.so",
			         exe);
			snprintf(paths[np++], sizeof paths[0], "%s/libinfill-cuda.so", exe);
		}
	}
	snprintf(paths[np++], sizeof paths[0], "libinfill-cuda.so");
	char why[256] = "not found";
	for (int i = 0; i < np; i++) {
		void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			const char *e = dlerror();
			if (i == 0 || strstr(e ? e : "", "No such file") == NULL)
				snprintf(why, sizeof why, "%s", e ? e : "dlopen failed");
			continue;
		}
		backend_init_fn init = (backend_init_fn)dlsym(h, BACKEND_CUDA_ENTRY);
		if (!init) {
			snprintf(why, sizeof why, "%.200s has no symbol %s", paths[i],
			         BACKEND_CUDA_ENTRY);
			dlclose(h);
			continue;
		}
		/* The module stays loaded for the life of the process: its code backs out->ops. */
		return init(out, cfg, w, err);
	}
	return error_set(err, -ENOENT, "cuda backend unavailable: %s", why);
}

struct backend *backend_create(const struct backend_config *cfg, const struct backend_weights *w,
                               struct infill_error *err)
{
	int rc = check_weights(w, err);
	if (rc) return NULL;
	if (cfg->kv_n_pages <= 0 || cfg->kv_page_size <= 0) {
		error_set(err, -EINVAL, "bad KV pool: %d pages of %d slots", cfg->kv_n_pages,
		          cfg->kv_page_size);
		return NULL;
	}
	struct backend *b = calloc(1, sizeof *b);
	if (!b) {
		error_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	b->hp = w->hp;
	b->kv_n_pages = cfg->kv_n_pages;
	b->kv_page_size = cfg->kv_page_size;
	b->kv_type = cfg->kv_type;
	struct infill_error cuda_err = { 0 };
	rc = -ENOENT;
	/* The CUDA module keeps a q8_0 cache as q8_0 blocks too (cuda_ops.h). */
	if (cfg->kind == BACKEND_KIND_CUDA || cfg->kind == BACKEND_KIND_AUTO) {
		rc = cuda_init(b, cfg, w, cfg->kind == BACKEND_KIND_CUDA ? err : &cuda_err);
		if (rc == 0)
			b->kind = BACKEND_KIND_CUDA;
		else if (cfg->kind == BACKEND_KIND_CUDA) {
			free(b);
			return NULL;
		}
	}
	if (rc != 0) {
		rc = backend_cpu_init(b, cfg, w, err);
		if (rc) {
			free(b);
			return NULL;
		}
		b->kind = BACKEND_KIND_CPU;
	}
	return b;
}

void backend_destroy(struct backend *b)
{
	if (!b) return;
	if (b->ops && b->ops->destroy) b->ops->destroy(b->ctx);
	free(b);
}

const char *backend_name(const struct backend *b)
{
	return b->name;
}

enum backend_kind backend_kind(const struct backend *b)
{
	return b->kind;
}

size_t backend_kv_bytes_per_page(const struct backend_hparams *hp, int32_t page_size,
                                 uint32_t kv_type)
{
	/* bytes per 32 values: q8_0's block is an fp16 scale and 32 int8 */
	size_t el32 = kv_type == TENSOR_TYPE_F32 ? 128 : kv_type == TENSOR_TYPE_Q8_0 ? 34 : 64;
	return 2 * (size_t)hp->n_layer * (size_t)page_size * (size_t)hp->n_head_kv *
	       (size_t)hp->head_dim * el32 / 32;
}

int backend_forward(struct backend *b, const struct backend_batch *batch, struct infill_error *err)
{
	return b->ops->forward(b->ctx, batch, err);
}

int backend_kv_copy_page(struct backend *b, int32_t dst, int32_t src, struct infill_error *err)
{
	return b->ops->kv_copy_page(b->ctx, dst, src, err);
}

/* Whether a slot the shift reads holds another token than the one it
 * writes there: the backends move the tokens in any order (CUDA's all at
 * once), so a shift that overlaps itself other than exactly in place would
 * read keys already overwritten. A page both ranges use is compared by the
 * token each puts at a slot; (n / page)^2 pairs at most, per shift. */
static bool shift_overlaps(const struct backend_seq *src, int32_t s0, const struct backend_seq *dst,
                           int32_t d0, int32_t n, int32_t ps)
{
	int32_t s_end = (s0 + n - 1) / ps, d_end = (d0 + n - 1) / ps;
	if (s0 < 0 || d0 < 0 || s_end >= src->n_pages || d_end >= dst->n_pages)
		return false; /* the backend refuses the range itself */
	for (int32_t i = s0 / ps; i <= s_end; i++)
		for (int32_t j = d0 / ps; j <= d_end; j++) {
			/* slot o of the page: token i*ps + o - s0 read, j*ps + o - d0 written */
			if (src->pages[i] != dst->pages[j] || i * ps - s0 == j * ps - d0) continue;
			int32_t lo = s0 - i * ps, hi = s0 + n - i * ps;
			if (d0 - j * ps > lo) lo = d0 - j * ps;
			if (d0 + n - j * ps < hi) hi = d0 + n - j * ps;
			if (lo < 0) lo = 0;
			if (hi > ps) hi = ps;
			if (lo < hi) return true;
		}
	return false;
}

int backend_kv_shift(struct backend *b, const struct backend_seq *src, int32_t src_start,
                     const struct backend_seq *dst, int32_t dst_start, int32_t n,
                     struct infill_error *err)
{
	if (n > 0 && shift_overlaps(src, src_start, dst, dst_start, n, b->kv_page_size))
		return error_set(err, -EINVAL,
		                 "kv shift: %d tokens from slot %d to slot %d overlap themselves "
		                 "(move them through another sequence)",
		                 n, src_start, dst_start);
	return b->ops->kv_shift(b->ctx, src, src_start, dst, dst_start, n, err);
}
