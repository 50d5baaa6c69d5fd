/*
 * test_cuda_kernels.c - every CUDA kernel against its plain C reference
 * (kernels/cuda/ref.c), per weight type, batch size and mode.
 *
 * Tolerances, and why:
 *   - dequantization (embedding): 1e-6 relative. Both sides form d*q (or
 *     d*sc*q - dmin*m) in f32; only the association of the products differs.
 *   - f16 dequantization: one f16 rounding step (2^-11 relative).
 *   - GEMV: 2e-5 * sum_k |w_k x_k| + 1e-6. The reference sums in double; the
 *     kernel in f32 over lanes then a warp tree, so its error grows like
 *     eps_f32 * sqrt(cols) * the sum of magnitudes; 2e-5 is ~10x that at
 *     cols = 512 and far below any indexing mistake (which moves results by
 *     O(sum |w x|)).
 *   - RoPE/KV write: the stored f16 keys within one f16 step (the angle is
 *     formed in f32 on the device, in double in the reference).
 *   - attention: 1e-4 absolute on outputs of magnitude ~1 (f32 online softmax
 *     vs a double two-pass one, same f16 K/V read back from the device).
 *   - sampling: identical token ids; log-probabilities within 1e-4.
 *   - q8_0 KV pool (cache.kvType q8_0): V blocks bit for bit (the same f32
 *     operations quantize on both sides); K blocks, whose RoPE angle differs
 *     in its last bits, within one fp16 step of d and one level of q, and
 *     at least 99% of K's levels identical (a wrong rounding rule moves
 *     about half). Attention: 1e-4 absolute as above, both sides given the
 *     device's rotated queries so that their q8_0 rounding of the query is
 *     the same.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cuda_ops.h"
#include "cuda_ref.h"
#include "gpu_test.h"
#include "quant.h"

static const int all_types[] = {
	CUQ_F32, CUQ_F16, CUQ_BF16, CUQ_Q8_0, CUQ_Q4_0, CUQ_Q4_K, CUQ_Q6_K
};
#define N_TYPES (int)(sizeof all_types / sizeof all_types[0])

/* A random weight: GGUF bytes on the host, the repacked copy on the device. */
struct tw {
	struct cuq_weight w;
	void *gguf;
	void *dev;
};

static int tw_make(struct tw *t, int type, int rows, int cols, uint64_t seed)
{
	memset(t, 0, sizeof *t);
	float *src = malloc(sizeof(float) * (size_t)rows * cols);
	size_t fs = cuq_file_size(type, rows, cols), rs = cuq_repacked_size(type, rows, cols);
	t->gguf = malloc(fs);
	void *rp = malloc(rs);
	int rc = -1;
	if (!src || !t->gguf || !rp || !fs) goto out;
	rng_fill(&seed, src, (size_t)rows * cols, 1.f);
	const uint64_t row_bytes = tensor_type_row_size((uint32_t)type, cols);
	for (int r = 0; r < rows; r++)
		if (tensor_row_quantize((uint32_t)type, src + (size_t)r * cols,
		                        (uint8_t *)t->gguf + row_bytes * r, cols))
			goto out;
	memset(rp, 0, rs);
	if (cuq_repack(type, rows, cols, t->gguf, rp)) goto out;
	t->dev = dev_from(rp, rs);
	if (!t->dev) goto out;
	cuq_weight_bind(&t->w, type, rows, cols, t->dev);
	rc = 0;
out:
	free(src);
	free(rp);
	return rc;
}

static void tw_free(struct tw *t)
{
	free(t->gguf);
	cudaFree(t->dev);
}

/* sum_k |w_rk x_tk| for the GEMV tolerance. */
static void abs_gemv(int type, const void *w, int rows, int cols, const float *x, int n, float *out)
{
	float *row = malloc(sizeof(float) * (size_t)cols);
	const uint64_t rb = tensor_type_row_size((uint32_t)type, cols);
	for (int r = 0; r < rows; r++) {
		tensor_row_dequantize((uint32_t)type, (const uint8_t *)w + rb * r, row, cols);
		for (int t = 0; t < n; t++) {
			double s = 0;
			for (int k = 0; k < cols; k++)
				s += fabs((double)row[k] * x[(size_t)t * cols + k]);
			out[(size_t)t * rows + r] = (float)s;
		}
	}
	free(row);
}

static const char *tname(int type)
{
	return tensor_type_name((uint32_t)type);
}

/* One GEMV configuration: returns the number of mismatches printed. */
static int check_gemv(int type, int rows, int cols, int n, int mode, int with_norm)
{
	uint64_t seed = 1234 + (uint64_t)type * 77 + (uint64_t)n * 13 + (uint64_t)mode * 5 +
	                (uint64_t)with_norm;
	struct tw a, b;
	int bad = 0;
	if (tw_make(&a, type, rows, cols, seed) || tw_make(&b, type, rows, cols, seed + 1)) {
		fprintf(stderr, "setup failed for %s\n", tname(type));
		return 1;
	}
	float *x = malloc(sizeof(float) * (size_t)n * cols),
	      *nw = malloc(sizeof(float) * (size_t)cols);
	float *y = malloc(sizeof(float) * (size_t)n * rows),
	      *ref = malloc(sizeof(float) * (size_t)n * rows);
	float *mag = malloc(sizeof(float) * (size_t)n * rows),
	      *mag2 = malloc(sizeof(float) * (size_t)n * rows);
	rng_fill(&seed, x, (size_t)n * cols, 2.f);
	for (int k = 0; k < cols; k++) nw[k] = 1.f + 0.1f * rng_f(&seed);
	rng_fill(&seed, ref, (size_t)n * rows, 1.f); /* the residual for ADD */
	float *dx = dev_from(x, sizeof(float) * (size_t)n * cols);
	float *dnw = dev_from(nw, sizeof(float) * (size_t)cols);
	float *dy = dev_from(ref, sizeof(float) * (size_t)n * rows);
	struct cuq_gemv g;
	memset(&g, 0, sizeof g);
	g.w[0] = a.w;
	g.w[1] = b.w;
	g.y[0] = dy;
	g.nw = mode == CUQ_GEMV_SWIGLU || mode == CUQ_GEMV_GEGLU ? 2 : 1;
	g.mode = mode;
	g.x = dx;
	g.n = n;
	g.norm_w = with_norm ? dnw : NULL;
	g.eps = 1e-6f;
	int rc = cuq_gemv_launch(&g, NULL);
	if (rc || dev_to(y, dy, sizeof(float) * (size_t)n * rows)) {
		fprintf(stderr, "gemv %s launch failed (%d)\n", tname(type), rc);
		bad = 1;
		goto out;
	}
	cuq_ref_gemv(type, a.gguf, b.gguf, rows, cols, x, n, with_norm ? nw : NULL, 1e-6f, mode,
	             ref);
	/* Magnitudes for the tolerance: on the normalized input when the norm is fused. */
	{
		float *xn = malloc(sizeof(float) * (size_t)n * cols);
		if (with_norm)
			cuq_ref_rmsnorm(x, nw, n, cols, 1e-6f, xn);
		else
			memcpy(xn, x, sizeof(float) * (size_t)n * cols);
		abs_gemv(type, a.gguf, rows, cols, xn, n, mag);
		abs_gemv(type, b.gguf, rows, cols, xn, n, mag2);
		free(xn);
	}
	for (size_t i = 0; i < (size_t)n * rows && bad < 5; i++) {
		double tol = 2e-5 * mag[i] + 1e-6;
		if (mode == CUQ_GEMV_SWIGLU)
			tol = 5e-5 * (mag[i] * mag2[i] + mag2[i] + mag[i]) + 1e-6;
		/* gelu's input and output are rounded to f16: a sum that lands on
		 * the other side of a rounding step moves the result by one f16
		 * step (2^-10 relative) of gelu, times the up projection */
		if (mode == CUQ_GEMV_GEGLU)
			tol = 2e-3 * (mag[i] + 1) * mag2[i] + 5e-5 * (mag[i] * mag2[i] + mag2[i]) +
			      1e-6;
		if (!(fabs(y[i] - ref[i]) <= tol)) {
			fprintf(stderr,
			        "gemv %s n=%d mode=%d norm=%d [%zu]: %.9g vs %.9g (tol %.3g)\n",
			        tname(type), n, mode, with_norm, i, y[i], ref[i], tol);
			bad++;
		}
	}
out:
	cudaFree(dx);
	cudaFree(dnw);
	cudaFree(dy);
	free(x);
	free(nw);
	free(y);
	free(ref);
	free(mag);
	free(mag2);
	tw_free(&a);
	tw_free(&b);
	return bad;
}

TEST(gemv_every_type_batch_and_mode)
{
	static const int ns[] = { 1, 2, 3, 5, 8, 11 };
	for (int ti = 0; ti < N_TYPES; ti++)
		for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
			CHECK(check_gemv(all_types[ti], 67, 512, ns[ni], CUQ_GEMV_STORE, 0) == 0);
			CHECK(check_gemv(all_types[ti], 67, 512, ns[ni], CUQ_GEMV_STORE, 1) == 0);
			CHECK(check_gemv(all_types[ti], 67, 512, ns[ni], CUQ_GEMV_ADD, 0) == 0);
			CHECK(check_gemv(all_types[ti], 67, 512, ns[ni], CUQ_GEMV_SWIGLU, 1) == 0);
			CHECK(check_gemv(all_types[ti], 67, 512, ns[ni], CUQ_GEMV_GEGLU, 1) == 0);
		}
}

TEST(gemv_three_weights_one_launch)
{
	/* Q, K, V shapes: rows 64, 32, 32 over cols 256; each output its own stride. */
	const int cols = 256, n = 3, rows[3] = { 64, 32, 32 };
	uint64_t seed = 99;
	struct tw w[3];
	float *x = malloc(sizeof(float) * n * cols), *nw = malloc(sizeof(float) * cols);
	rng_fill(&seed, x, (size_t)n * cols, 1.f);
	for (int k = 0; k < cols; k++) nw[k] = 1.f + 0.05f * rng_f(&seed);
	float *dx = dev_from(x, sizeof(float) * n * cols),
	      *dnw = dev_from(nw, sizeof(float) * cols);
	struct cuq_gemv g;
	memset(&g, 0, sizeof g);
	for (int i = 0; i < 3; i++) {
		REQUIRE(tw_make(&w[i], CUQ_Q4_K, rows[i], cols, seed + (uint64_t)i) == 0);
		g.w[i] = w[i].w;
		g.y[i] = dev_from(NULL, sizeof(float) * n * rows[i]);
	}
	g.nw = 3, g.mode = CUQ_GEMV_STORE, g.x = dx, g.n = n, g.norm_w = dnw, g.eps = 1e-6f;
	REQUIRE(cuq_gemv_launch(&g, NULL) == 0);
	for (int i = 0; i < 3; i++) {
		float y[3 * 64], ref[3 * 64];
		REQUIRE(dev_to(y, g.y[i], sizeof(float) * n * rows[i]) == 0);
		cuq_ref_gemv(CUQ_Q4_K, w[i].gguf, NULL, rows[i], cols, x, n, nw, 1e-6f,
		             CUQ_GEMV_STORE, ref);
		for (int j = 0; j < n * rows[i]; j++)
			CHECK_NEAR(y[j], ref[j], 1e-4 * (1 + fabs(ref[j])));
		cudaFree(g.y[i]);
		tw_free(&w[i]);
	}
	cudaFree(dx);
	cudaFree(dnw);
	free(x);
	free(nw);
}

TEST(embed_and_dequant_f16_every_type)
{
	const int rows = 40, cols = 512, n = 6;
	const int32_t ids[6] = { 0, 39, 7, 7, 22, 1 };
	for (int ti = 0; ti < N_TYPES; ti++) {
		const int type = all_types[ti];
		struct tw t;
		REQUIRE(tw_make(&t, type, rows, cols, 5 + (uint64_t)ti) == 0);
		float *x = malloc(sizeof(float) * n * cols),
		      *ref = malloc(sizeof(float) * rows * cols);
		int32_t *dids = dev_from(ids, sizeof ids);
		float *dx = dev_from(NULL, sizeof(float) * n * cols);
		REQUIRE(cuq_embed_launch(&t.w, dids, n, dx, NULL) == 0);
		REQUIRE(dev_to(x, dx, sizeof(float) * n * cols) == 0);
		cuq_ref_embed(type, t.gguf, rows, cols, ids, n, ref);
		int bad = 0;
		for (int i = 0; i < n * cols; i++)
			if (!(fabs(x[i] - ref[i]) <= 1e-6 * fabs(ref[i]) + 1e-7) && bad++ < 3)
				fprintf(stderr, "embed %s [%d]: %.9g vs %.9g\n", tname(type), i,
				        x[i], ref[i]);
		CHECK(bad == 0);

		/* Whole matrix to f16. */
		uint16_t *h = malloc(sizeof(uint16_t) * rows * cols);
		void *dh = dev_from(NULL, sizeof(uint16_t) * rows * cols);
		REQUIRE(cuq_dequant_f16_launch(&t.w, dh, NULL) == 0);
		REQUIRE(dev_to(h, dh, sizeof(uint16_t) * rows * cols) == 0);
		const uint64_t rb = tensor_type_row_size((uint32_t)type, cols);
		for (int r = 0; r < rows; r++)
			tensor_row_dequantize((uint32_t)type, (const uint8_t *)t.gguf + rb * r,
			                      ref + (size_t)r * cols, cols);
		bad = 0;
		for (int i = 0; i < rows * cols; i++) {
			const float v = tensor_f16_to_f32(h[i]);
			if (!(fabs(v - ref[i]) <= fabs(ref[i]) * (1.0 / 2048) + 6e-8) && bad++ < 3)
				fprintf(stderr, "dequant_f16 %s [%d]: %.9g vs %.9g\n", tname(type),
				        i, v, ref[i]);
		}
		CHECK(bad == 0);
		free(h);
		cudaFree(dh);
		free(x);
		free(ref);
		cudaFree(dids);
		cudaFree(dx);
		tw_free(&t);
	}
}

TEST(norms_activations_add_gather)
{
	const int n = 5, dim = 2048 + 96;
	uint64_t seed = 7;
	float *x = malloc(sizeof(float) * n * dim), *w = malloc(sizeof(float) * dim);
	float *y = malloc(sizeof(float) * n * dim), *ref = malloc(sizeof(float) * n * dim);
	rng_fill(&seed, x, (size_t)n * dim, 3.f);
	rng_fill(&seed, w, dim, 1.f);
	float *dx = dev_from(x, sizeof(float) * n * dim), *dw = dev_from(w, sizeof(float) * dim);
	float *dy = dev_from(NULL, sizeof(float) * n * dim);
	REQUIRE(cuq_rmsnorm_launch(dx, dw, n, dim, 1e-5f, dy, NULL) == 0);
	REQUIRE(dev_to(y, dy, sizeof(float) * n * dim) == 0);
	cuq_ref_rmsnorm(x, w, n, dim, 1e-5f, ref);
	for (int i = 0; i < n * dim; i++)
		if (!(fabs(y[i] - ref[i]) <= 1e-5 * (1 + fabs(ref[i])))) {
			CHECK_NEAR(y[i], ref[i], 1e-5 * (1 + fabs(ref[i])));
			break;
		}
	/* f16 output: one rounding step. */
	uint16_t *h = malloc(sizeof(uint16_t) * n * dim);
	void *dh = dev_from(NULL, sizeof(uint16_t) * n * dim);
	REQUIRE(cuq_rmsnorm_half_launch(dx, dw, n, dim, 1e-5f, 0, dh, NULL, NULL) == 0);
	REQUIRE(dev_to(h, dh, sizeof(uint16_t) * n * dim) == 0);
	for (int i = 0; i < n * dim; i++)
		if (!(fabs(tensor_f16_to_f32(h[i]) - ref[i]) <= fabs(ref[i]) / 1024 + 1e-5)) {
			CHECK_NEAR(tensor_f16_to_f32(h[i]), ref[i], fabs(ref[i]) / 1024 + 1e-5);
			break;
		}
	/* The same with a scale to fill: values this small need none, so alpha
	 * is 1 and the bits are the unscaled kernel's. */
	uint16_t *h2 = malloc(sizeof(uint16_t) * n * dim);
	float *dscale = dev_from(NULL, sizeof(float) * (1 + 2 * n)), alpha = 0;
	REQUIRE(cuq_rmsnorm_half_launch(dx, dw, n, dim, 1e-5f, 0, dh, dscale, NULL) == 0);
	REQUIRE(dev_to(h2, dh, sizeof(uint16_t) * n * dim) == 0);
	REQUIRE(dev_to(&alpha, dscale, sizeof alpha) == 0);
	CHECK(alpha == 1.f);
	CHECK(memcmp(h, h2, sizeof(uint16_t) * n * dim) == 0);
	free(h2);
	cudaFree(dscale);
	/* bf16 without a norm weight: a plain conversion. */
	REQUIRE(cuq_rmsnorm_half_launch(dx, NULL, n, dim, 1e-5f, 1, dh, NULL, NULL) == 0);
	REQUIRE(dev_to(h, dh, sizeof(uint16_t) * n * dim) == 0);
	for (int i = 0; i < n * dim; i++)
		if (h[i] != tensor_f32_to_bf16(x[i])) {
			CHECK_INT_EQ(h[i], tensor_f32_to_bf16(x[i]));
			break;
		}
	/* SwiGLU of x with itself shifted, then add. */
	REQUIRE(cuq_swiglu_launch(dx, dx + dim, n - 1, dim, dy, NULL) == 0);
	REQUIRE(dev_to(y, dy, sizeof(float) * (n - 1) * dim) == 0);
	cuq_ref_swiglu(x, x + dim, (size_t)(n - 1) * dim, ref);
	for (int i = 0; i < (n - 1) * dim; i++)
		if (!(fabs(y[i] - ref[i]) <= 1e-5 * (1 + fabs(ref[i])))) {
			CHECK_NEAR(y[i], ref[i], 1e-5 * (1 + fabs(ref[i])));
			break;
		}
	/* GeGLU likewise: gelu on the f16 grid, so the kernel and the
	 * reference agree to one f16 step of gelu times u. */
	REQUIRE(cuq_geglu_launch(dx, dx + dim, n - 1, dim, dy, NULL) == 0);
	REQUIRE(dev_to(y, dy, sizeof(float) * (n - 1) * dim) == 0);
	cuq_ref_geglu(x, x + dim, (size_t)(n - 1) * dim, ref);
	for (int i = 0; i < (n - 1) * dim; i++) {
		const double tol = (fabs(x[i]) / 1024 + 1e-6) * fabs(x[dim + i]) + 1e-6;
		if (!(fabs(y[i] - ref[i]) <= tol)) {
			CHECK_NEAR(y[i], ref[i], tol);
			break;
		}
	}
	CHECK(cuq_ref_gelu(-11.f) == 0.f && cuq_ref_gelu(12.5f) == 12.5f);
	CHECK_NEAR(cuq_ref_gelu(1.f), 0.8413, 1e-3); /* tanh form: 0.84119 */
	/* LayerNorm with and without a bias, in place too */
	{
		float *b = malloc(sizeof(float) * dim);
		rng_fill(&seed, b, dim, 0.5f);
		float *db = dev_from(b, sizeof(float) * dim);
		float *dl = dev_from(x, sizeof(float) * n * dim);
		for (int with_b = 0; with_b < 2; with_b++) {
			REQUIRE(cuq_layernorm_launch(dx, dw, with_b ? db : NULL, n, dim, 1e-5f, dy,
			                             NULL) == 0);
			REQUIRE(dev_to(y, dy, sizeof(float) * n * dim) == 0);
			cuq_ref_layernorm(x, w, with_b ? b : NULL, n, dim, 1e-5f, ref);
			for (int i = 0; i < n * dim; i++)
				if (!(fabs(y[i] - ref[i]) <= 1e-5 * (1 + fabs(ref[i])))) {
					CHECK_NEAR(y[i], ref[i], 1e-5 * (1 + fabs(ref[i])));
					break;
				}
		}
		REQUIRE(cuq_layernorm_launch(dl, dw, db, n, dim, 1e-5f, dl, NULL) == 0);
		REQUIRE(dev_to(y, dl, sizeof(float) * n * dim) == 0);
		for (int i = 0; i < n * dim; i++)
			if (!(fabs(y[i] - ref[i]) <= 1e-5 * (1 + fabs(ref[i])))) {
				CHECK_NEAR(y[i], ref[i], 1e-5 * (1 + fabs(ref[i])));
				break;
			}
		/* bias rows: x[t][i] + b[i], exactly */
		float *dbx = dev_from(x, sizeof(float) * n * dim);
		REQUIRE(cuq_bias_launch(dbx, db, n, dim, NULL) == 0);
		REQUIRE(dev_to(y, dbx, sizeof(float) * n * dim) == 0);
		for (int i = 0; i < n * dim; i++)
			if (y[i] != x[i] + b[i % dim]) {
				CHECK_NEAR(y[i], x[i] + b[i % dim], 0);
				break;
			}
		/* ungated gelu: the reference's value, on the same f16 grid */
		REQUIRE(cuq_gelu_launch(dbx, (size_t)n * dim, NULL) == 0);
		float *yg = malloc(sizeof(float) * n * dim);
		REQUIRE(dev_to(yg, dbx, sizeof(float) * n * dim) == 0);
		for (int i = 0; i < n * dim; i++) {
			const double want = cuq_ref_gelu(y[i]), tol = fabs(want) / 1024 + 1e-6;
			if (!(fabs(yg[i] - want) <= tol)) {
				CHECK_NEAR(yg[i], want, tol);
				break;
			}
		}
		free(yg);
		free(b);
		cudaFree(db);
		cudaFree(dl);
		cudaFree(dbx);
	}
	/* the embedding scale: x * s, one f32 rounding */
	float *dsc = dev_from(x, sizeof(float) * n * dim);
	REQUIRE(cuq_scale_launch(dsc, (size_t)n * dim, 45.25f, NULL) == 0);
	REQUIRE(dev_to(ref, dsc, sizeof(float) * n * dim) == 0);
	for (int i = 0; i < n * dim; i++)
		if (ref[i] != x[i] * 45.25f) {
			CHECK_NEAR(ref[i], x[i] * 45.25f, 0);
			break;
		}
	cudaFree(dsc);
	REQUIRE(cuq_swiglu_launch(dx, dx + dim, n - 1, dim, dy, NULL) == 0);
	REQUIRE(dev_to(y, dy, sizeof(float) * (n - 1) * dim) == 0);
	/* y (the device's SwiGLU) += x: exactly the f32 sums. */
	REQUIRE(cuq_add_launch(dy, dx, (size_t)(n - 1) * dim, NULL) == 0);
	memcpy(ref, y, sizeof(float) * (n - 1) * dim);
	REQUIRE(dev_to(y, dy, sizeof(float) * (n - 1) * dim) == 0);
	for (int i = 0; i < (n - 1) * dim; i++)
		if (y[i] != ref[i] + x[i]) {
			CHECK_NEAR(y[i], ref[i] + x[i], 0);
			break;
		}
	const int32_t rows[3] = { 4, 0, 2 };
	int32_t *drows = dev_from(rows, sizeof rows);
	REQUIRE(cuq_gather_launch(dx, drows, 3, dim, dy, NULL) == 0);
	REQUIRE(dev_to(y, dy, sizeof(float) * 3 * dim) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(memcmp(y + (size_t)i * dim, x + (size_t)rows[i] * dim, sizeof(float) * dim) ==
		      0);
	cudaFree(drows);
	cudaFree(dx);
	cudaFree(dw);
	cudaFree(dy);
	cudaFree(dh);
	free(h);
	free(x);
	free(w);
	free(y);
	free(ref);
}

/* ---- RoPE, KV pages, attention ---- */

struct kv_setup {
	struct cuq_kv kv;  /* device pool and tables */
	struct cuq_kv hkv; /* same shape, host pool and tables */
	size_t pool_bytes;
	int32_t tables[2 * 16];
};

/* Two sequences over scattered pages of a 40-page pool; page size 16, 2 layers;
 * f16 or (q8) q8_0 slots. */
static int kv_setup(struct kv_setup *s, int n_kv_heads, int head_dim, int q8)
{
	memset(s, 0, sizeof *s);
	s->kv.n_layers = 2, s->kv.page_size = 16, s->kv.n_kv_heads = n_kv_heads,
	s->kv.head_dim = head_dim, s->kv.q8 = q8;
	s->kv.max_pages = 16;
	for (int i = 0; i < 16; i++) {
		s->tables[i] = (i * 7 + 3) % 40;          /* seq 0: 3, 10, 17, ... */
		s->tables[16 + i] = (i * 7 + 3) % 40 + 1; /* seq 1: the page after each */
	}
	/* The two lists must not share pages for the test: (7i+3)%40 + 1 == (7j+3)%40 has no
	 * solution with i, j < 16 except where checked below. */
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++)
			if (s->tables[i] == s->tables[16 + j])
				s->tables[16 + j] = 40 + j % 2; /* spare pages 40, 41 */
	const int n_pages = 48;
	s->pool_bytes = (size_t)n_pages * 2 * 2 * 16 * cuq_kv_row_bytes(&s->kv);
	s->kv.pool = dev_from(NULL, s->pool_bytes);
	s->kv.tables = dev_from(s->tables, sizeof s->tables);
	s->hkv = s->kv;
	s->hkv.pool = calloc(1, s->pool_bytes);
	s->hkv.tables = s->tables;
	return s->kv.pool && s->kv.tables && s->hkv.pool ? 0 : -1;
}

static void kv_free(struct kv_setup *s)
{
	cudaFree(s->kv.pool);
	cudaFree((void *)s->kv.tables);
	free(s->hkv.pool);
}

/* The device's pool against the reference's: f16 values within one f16
 * step; q8_0 as the header says. Returns the number of mismatches. */
static int pool_compare(const struct cuq_kv *kv, const void *dev, const void *ref, size_t bytes,
                        const char *what)
{
	int bad = 0;
	if (!kv->q8) {
		const uint16_t *a16 = dev, *b16 = ref;
		for (size_t i = 0; i < bytes / 2; i++) {
			const float a = tensor_f16_to_f32(a16[i]), b = tensor_f16_to_f32(b16[i]);
			if (!(fabs(a - b) <= fabs(b) / 1024 + 1e-6) && bad++ < 6)
				fprintf(stderr, "%s [%zu]: %.6g vs %.6g\n", what, i, a, b);
		}
		return bad;
	}
	const size_t rb = cuq_kv_row_bytes(kv);
	size_t levels = 0, same = 0;
	for (size_t row = 0; row < bytes / rb; row++) {
		const int is_v = (int)(row / (size_t)kv->page_size % 2);
		const unsigned char *a = (const unsigned char *)dev + row * rb,
		                    *b = (const unsigned char *)ref + row * rb;
		if (is_v) {
			if (memcmp(a, b, rb) != 0 && bad++ < 6)
				fprintf(stderr, "%s: V row %zu differs from the reference's bits\n",
				        what, row);
			continue;
		}
		for (size_t o = 0; o < rb; o += CUQ_Q8_BLOCK) {
			struct block_q8_0 x, y;
			memcpy(&x, a + o, sizeof x);
			memcpy(&y, b + o, sizeof y);
			const float dx = tensor_f16_to_f32(x.d), dy = tensor_f16_to_f32(y.d);
			if (!(fabs(dx - dy) <= dy / 1024 + 1e-7) && bad++ < 6)
				fprintf(stderr, "%s: K row %zu block %zu d %.6g vs %.6g\n", what,
				        row, o / CUQ_Q8_BLOCK, dx, dy);
			for (int j = 0; j < 32; j++) {
				/* slots never written (zeros) do not dilute the count */
				levels += y.d != 0;
				same += y.d != 0 && x.qs[j] == y.qs[j];
				if (!(fabs(dx * x.qs[j] - dy * y.qs[j]) <= 1.01 * dy + 1e-7) &&
				    bad++ < 6)
					fprintf(stderr, "%s: K row %zu value %zu: %d vs %d\n", what,
					        row, o / CUQ_Q8_BLOCK * 32 + j, x.qs[j], y.qs[j]);
			}
		}
	}
	if (same < levels * 0.99) {
		fprintf(stderr, "%s: only %zu of %zu K levels as the reference's\n", what, same,
		        levels);
		bad++;
	}
	return bad;
}

static void check_attention(int *test_failed_, int n_heads, int n_kv_heads, int head_dim, int neox,
                            int q8)
{
	struct kv_setup s;
	REQUIRE(kv_setup(&s, n_kv_heads, head_dim, q8) == 0);
	const int qd = n_heads * head_dim, kvd = n_kv_heads * head_dim, layer = 1;
	/* Fill positions 0..199 of seq 0 and 0..120 of seq 1 in one batch. */
	const int n = 200 + 121;
	int32_t *pos = malloc(sizeof(int32_t) * n), *seq = malloc(sizeof(int32_t) * n);
	for (int i = 0; i < n; i++) {
		seq[i] = i < 200 ? 0 : 1;
		pos[i] = i < 200 ? i : i - 200;
	}
	uint64_t rs = 42;
	float *q = malloc(sizeof(float) * n * qd), *k = malloc(sizeof(float) * n * kvd);
	float *v = malloc(sizeof(float) * n * kvd), *bq = malloc(sizeof(float) * qd);
	rng_fill(&rs, q, (size_t)n * qd, 1.f);
	rng_fill(&rs, k, (size_t)n * kvd, 1.f);
	rng_fill(&rs, v, (size_t)n * kvd, 1.f);
	rng_fill(&rs, bq, qd, 0.1f);
	float freq[128];
	struct cuq_rope rope = { head_dim - (head_dim >= 64 ? 16 : 0), neox, NULL };
	cuq_rope_freqs(100000.f, 0.25f, rope.n_rot, freq);
	float *dq = dev_from(q, sizeof(float) * n * qd), *dk = dev_from(k, sizeof(float) * n * kvd);
	float *dv = dev_from(v, sizeof(float) * n * kvd), *dbq = dev_from(bq, sizeof(float) * qd);
	float *dfreq = dev_from(freq, sizeof freq);
	int32_t *dpos = dev_from(pos, sizeof(int32_t) * n),
	        *dseq = dev_from(seq, sizeof(int32_t) * n);
	struct cuq_rope drope = rope;
	drope.freq = dfreq;
	rope.freq = freq;
	REQUIRE(cuq_rope_kv_launch(dq, dk, dv, dbq, NULL, NULL, dpos, dseq, n, n_heads, &drope,
	                           &s.kv, layer, NULL) == 0);
	cuq_ref_rope_kv(q, k, v, bq, NULL, NULL, pos, seq, n, n_heads, &rope, &s.hkv, layer);
	float *qd_out = malloc(sizeof(float) * n * qd);
	uint16_t *pool = malloc(s.pool_bytes);
	REQUIRE(dev_to(qd_out, dq, sizeof(float) * n * qd) == 0);
	REQUIRE(dev_to(pool, s.kv.pool, s.pool_bytes) == 0);
	int bad = 0;
	for (int i = 0; i < n * qd; i++)
		if (!(fabs(qd_out[i] - q[i]) <= 2e-5) && bad++ < 3)
			fprintf(stderr, "rope q [%d]: %.9g vs %.9g\n", i, qd_out[i], q[i]);
	bad += pool_compare(&s.kv, pool, s.hkv.pool, s.pool_bytes, "kv pool");
	CHECK(bad == 0);

	/* Attention for a few entries, against the pool the device wrote. */
	memcpy(s.hkv.pool, pool, s.pool_bytes);
	const int nq = 5;
	const int32_t qpos[5] = { 0, 37, 199, 120, 15 }, qseq[5] = { 0, 0, 0, 1, 1 };
	int32_t *dqpos = dev_from(qpos, sizeof qpos), *dqseq = dev_from(qseq, sizeof qseq);
	float *ref = malloc(sizeof(float) * nq * qd), *out = malloc(sizeof(float) * nq * qd);
	/* q8_0: the device's rotated queries on both sides (see the header) */
	cuq_ref_attn(q8 ? qd_out : q, qpos, qseq, nq, n_heads, &s.hkv, layer, ref);
	float *dout = dev_from(NULL, sizeof(float) * nq * qd);
	static const int splits[] = { 1, 3, 32 };
	for (int si = 0; si < 3; si++) {
		float *part = dev_from(NULL, cuq_attn_scratch(nq, n_heads, head_dim, splits[si]));
		REQUIRE(cuq_attn_launch(dq, dqpos, dqseq, nq, n_heads, &s.kv, layer, splits[si],
		                        part, dout, NULL) == 0);
		REQUIRE(dev_to(out, dout, sizeof(float) * nq * qd) == 0);
		bad = 0;
		for (int i = 0; i < nq * qd; i++)
			if (!(fabs(out[i] - ref[i]) <= 1e-4) && bad++ < 3)
				fprintf(stderr, "attn D=%d%s splits=%d [%d]: %.9g vs %.9g\n",
				        head_dim, q8 ? " q8_0" : "", splits[si], i, out[i], ref[i]);
		CHECK(bad == 0);
		cudaFree(part);
	}

	/* KV shift: 20 tokens of seq 0 from position 3 to seq 1 at position 130, every layer. */
	const int m = 20, delta = 127;
	int32_t sp[20], ss[20], dp[20], ds[20];
	for (int i = 0; i < m; i++) {
		sp[i] = s.tables[(3 + i) / 16], ss[i] = (3 + i) % 16;
		dp[i] = s.tables[16 + (130 + i) / 16], ds[i] = (130 + i) % 16;
	}
	int32_t *dsp = dev_from(sp, sizeof sp), *dss = dev_from(ss, sizeof ss);
	int32_t *ddp = dev_from(dp, sizeof dp), *dds = dev_from(ds, sizeof ds);
	REQUIRE(cuq_kv_shift_launch(&s.kv, dsp, dss, ddp, dds, m, delta, &drope, NULL) == 0);
	cuq_ref_kv_shift(&s.hkv, sp, ss, dp, ds, m, delta, &rope);
	REQUIRE(dev_to(pool, s.kv.pool, s.pool_bytes) == 0);
	CHECK(pool_compare(&s.kv, pool, s.hkv.pool, s.pool_bytes, "kv shift pool") == 0);

	cudaFree(dsp), cudaFree(dss), cudaFree(ddp), cudaFree(dds);
	cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dbq), cudaFree(dfreq), cudaFree(dpos),
	        cudaFree(dseq);
	cudaFree(dqpos), cudaFree(dqseq), cudaFree(dout);
	free(pos), free(seq), free(q), free(k), free(v), free(bq), free(qd_out), free(pool),
	        free(ref), free(out);
	kv_free(&s);
}

TEST(rope_kv_attention_shift_d16_gqa)
{
	check_attention(test_failed_, 4, 2, 16, 0, 0);
}

TEST(rope_kv_attention_shift_d64_neox_partial_rot)
{
	check_attention(test_failed_, 8, 8, 64, 1, 0);
}

TEST(rope_kv_attention_shift_d128)
{
	check_attention(test_failed_, 16, 4, 128, 0, 0);
}

/* cache.kvType q8_0: the same writes, reads and shifts over q8_0 blocks */
TEST(q8_0_kv_rope_attention_shift_d32_gqa)
{
	check_attention(test_failed_, 4, 2, 32, 0, 1);
}

TEST(q8_0_kv_rope_attention_shift_d64_neox_partial_rot)
{
	check_attention(test_failed_, 8, 8, 64, 1, 1);
}

TEST(q8_0_kv_rope_attention_shift_d128_gqa)
{
	check_attention(test_failed_, 16, 4, 128, 0, 1);
}

/*
 * An f16 GEMM input past f16's range (65504): some models' FFN hidden states
 * reach it. The chunk is written scaled down by a power of two, every value
 * finite, and alpha (the GEMM's factor) is that power: value * alpha gives
 * the input back to f16's rounding, and the least such power is chosen (the
 * largest |value| lands in [2^14, 2^15)).
 */
TEST(f16_gemm_input_past_its_range_is_scaled)
{
	const int n = 4, dim = 256;
	uint64_t seed = 5;
	float *x = malloc(sizeof(float) * n * dim);
	rng_fill(&seed, x, (size_t)n * dim, 3.f);
	x[2 * dim + 17] = -3.0e6f; /* one row's outlier sets the chunk's scale */
	x[2 * dim + 40] = 9.0e4f;
	uint16_t *h = malloc(sizeof(uint16_t) * n * dim);
	float *dx = dev_from(x, sizeof(float) * n * dim);
	void *dh = dev_from(NULL, sizeof(uint16_t) * n * dim);
	float *dscale = dev_from(NULL, sizeof(float) * (1 + 2 * n)), alpha = 0;
	REQUIRE(cuq_rmsnorm_half_launch(dx, NULL, n, dim, 1e-5f, 0, dh, dscale, NULL) == 0);
	REQUIRE(dev_to(h, dh, sizeof(uint16_t) * n * dim) == 0);
	REQUIRE(dev_to(&alpha, dscale, sizeof alpha) == 0);
	int e = 0;
	CHECK(frexpf(alpha, &e) == 0.5f);       /* a power of two */
	CHECK_NEAR(3.0e6 / alpha, 24000, 8200); /* in [2^14, 2^15) */
	double big = 0;
	for (int i = 0; i < n * dim; i++) {
		const double v = tensor_f16_to_f32(h[i]);
		big = fmax(big, fabs(v));
		/* f16's rounding, relative, or its subnormal step, absolute */
		if (!(isfinite(v) && fabs(v * alpha - x[i]) <= fabs(x[i]) / 1024 + alpha * 6e-8)) {
			CHECK_NEAR(v * alpha, x[i], fabs(x[i]) / 1024 + alpha * 6e-8);
			break;
		}
	}
	CHECK(big >= 16384 && big < 32768);
	/* unscaled, the outlier is lost to inf: what the scale is for */
	REQUIRE(cuq_rmsnorm_half_launch(dx, NULL, n, dim, 1e-5f, 0, dh, NULL, NULL) == 0);
	REQUIRE(dev_to(h, dh, sizeof(uint16_t) * n * dim) == 0);
	CHECK(isinf(tensor_f16_to_f32(h[2 * dim + 17])));
	cudaFree(dx), cudaFree(dh), cudaFree(dscale);
	free(x);
	free(h);
}

/* ---- sampling ---- */

TEST(sample_greedy_topk_topp)
{
	const int n = 5, vocab = 32256;
	uint64_t seed = 11;
	float *logits = malloc(sizeof(float) * n * vocab);
	rng_fill(&seed, logits, (size_t)n * vocab, 8.f);
	logits[3 * vocab + 100] = logits[3 * vocab + 50] = 20.f; /* a tie: the lower id wins */
	const float temp[5] = { 0.f, 0.8f, 1.5f, 0.7f, 1.0f };
	const int32_t top_k[5] = { 1, 40, 64, 3, 1 };
	const float top_p[5] = { 1.f, 0.9f, 1.f, 0.5f, 1.f };
	const float u[5] = { 0.5f, 0.37f, 0.99f, 0.2f, 0.7f };
	int32_t ids[5], ref_ids[5];
	float lp[5], ref_lp[5];
	float *dl = dev_from(logits, sizeof(float) * n * vocab);
	struct cuq_sample_params p = { dev_from(temp, sizeof temp), dev_from(top_k, sizeof top_k),
		                       dev_from(top_p, sizeof top_p), dev_from(u, sizeof u) };
	int32_t *dids = dev_from(NULL, sizeof ids);
	float *dlp = dev_from(NULL, sizeof lp);
	REQUIRE(cuq_sample_launch(dl, n, vocab, &p, dids, dlp, NULL) == 0);
	REQUIRE(dev_to(ids, dids, sizeof ids) == 0);
	REQUIRE(dev_to(lp, dlp, sizeof lp) == 0);
	cuq_ref_sample(logits, n, vocab, temp, top_k, top_p, u, ref_ids, ref_lp);
	for (int r = 0; r < n; r++) {
		CHECK_INT_EQ(ids[r], ref_ids[r]);
		CHECK_NEAR(lp[r], ref_lp[r], 1e-4);
	}
	/* Greedy with no parameter arrays at all. */
	struct cuq_sample_params none = { NULL, NULL, NULL, NULL };
	REQUIRE(cuq_sample_launch(dl, n, vocab, &none, dids, NULL, NULL) == 0);
	REQUIRE(dev_to(ids, dids, sizeof ids) == 0);
	cuq_ref_sample(logits, n, vocab, NULL, NULL, NULL, NULL, ref_ids, NULL);
	for (int r = 0; r < n; r++) CHECK_INT_EQ(ids[r], ref_ids[r]);
	CHECK_INT_EQ(ids[3], 50);
	cudaFree(dl), cudaFree((void *)p.temp), cudaFree((void *)p.top_k),
	        cudaFree((void *)p.top_p);
	cudaFree((void *)p.u), cudaFree(dids), cudaFree(dlp);
	free(logits);
}

TEST(bad_arguments_are_errors_not_crashes)
{
	struct cuq_gemv g;
	memset(&g, 0, sizeof g);
	CHECK(cuq_gemv_launch(&g, NULL) < 0);
	CHECK(cuq_gemv_launch(NULL, NULL) < 0);
	struct cuq_weight w = { 77, 4, 32, (void *)16, NULL, NULL, NULL };
	CHECK(cuq_dequant_f16_launch(&w, (void *)16, NULL) < 0);
	CHECK(cuq_file_size(CUQ_Q4_K, 4, 128) == 0); /* K types need 256-value rows */
	CHECK(cuq_repacked_size(99, 4, 32) == 0);
	CHECK(cuq_attn_launch(NULL, NULL, NULL, 1, 1, NULL, 0, 1, NULL, NULL, NULL) < 0);
	/* a q8_0 pool needs heads of whole blocks */
	struct cuq_kv kv = { (void *)16, 1, 16, 1, 48, 1, (const int32_t *)16, 1 };
	float x;
	int32_t i0 = 0;
	CHECK(cuq_attn_launch(&x, &i0, &i0, 1, 1, &kv, 0, 1, NULL, &x, NULL) == -EINVAL);
}

GPU_TEST_MAIN()
