/*
 * ops.c - the small per-row operations of the forward pass (plain C; they
 * cost little next to the matrix products).
 */
#include "cpu.h"

#include <math.h>

void cpu_rmsnorm(const float *x, const float *w, float *y, int64_t n, float eps)
{
	/* Sum in double like ggml's rms_norm (ggml_float), so the scale matches. */
	double ss = 0;
	for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
	float scale = 1.0f / sqrtf((float)(ss / (double)n) + eps);
	for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale * w[i];
}

void cpu_rope(float *x, int n_heads, int head_dim, int n_rot, float pos, float base,
              float freq_scale, bool neox)
{
	/* theta_i = pos * freq_scale * base^(-2i / n_rot), computed per pair as
	 * ggml does (a running product of theta_scale). */
	float theta_scale = powf(base, -2.0f / (float)n_rot);
	float cs[256], sn[256];
	int half = n_rot / 2;
	float theta = pos * freq_scale;
	for (int i = 0; i < half && i < 256; i++) {
		cs[i] = cosf(theta);
		sn[i] = sinf(theta);
		theta *= theta_scale;
	}
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (int64_t)h * head_dim;
		for (int i = 0; i < half; i++) {
			int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
			float x0 = v[a], x1 = v[b];
			v[a] = x0 * cs[i] - x1 * sn[i];
			v[b] = x0 * sn[i] + x1 * cs[i];
		}
	}
}

void cpu_swiglu(float *g, const float *u, int64_t n)
{
	for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}
