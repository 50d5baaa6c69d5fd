/*
 * ops.c - the small per-row operations of the forward pass (plain C; they
 * cost little next to the matrix products).
 */
#include "cpu.h"

#include <math.h>

#include "quant.h"

void cpu_rmsnorm(const float *x, const float *w, float *y, int64_t n, float eps)
{
	/* Sum in double like ggml's rms_norm (ggml_float), so the scale matches;
	 * the float products are exact in double, so only the additions round,
	 * in the lane order cpu.h states. */
	double lane[8] = { 0 };
	for (int64_t i = 0; i < n; i++) lane[i % 8] += (double)x[i] * (double)x[i];
	double ss = 0;
	for (int l = 0; l < 8; l++) ss += lane[l];
	float scale = 1.0f / sqrtf((float)(ss / (double)n) + eps);
	for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale * w[i];
}

void cpu_layernorm(const float *x, const float *w, const float *b, float *y, int64_t n, float eps)
{
	/* As ggml_norm: the mean summed in double and rounded to float, the
	 * centred values in float, their squares summed in double. */
	double s = 0;
	for (int64_t i = 0; i < n; i++) s += x[i];
	float mean = (float)(s / (double)n);
	double ss = 0;
	for (int64_t i = 0; i < n; i++) {
		float d = x[i] - mean;
		ss += (double)d * d;
	}
	float scale = 1.0f / sqrtf((float)(ss / (double)n) + eps);
	for (int64_t i = 0; i < n; i++) {
		float v = (x[i] - mean) * scale * w[i];
		y[i] = b ? v + b[i] : v;
	}
}

void cpu_rope_angles(int n_rot, float pos, float base, float freq_scale, float *cs, float *sn)
{
	/* theta_i = pos * freq_scale * base^(-2i / n_rot), computed per pair as
	 * ggml does (a running product of theta_scale). */
	float theta_scale = powf(base, -2.0f / (float)n_rot);
	int half = n_rot / 2;
	float theta = pos * freq_scale;
	for (int i = 0; i < half && i < CPU_ROPE_MAX_PAIRS; i++) {
		cs[i] = cosf(theta);
		sn[i] = sinf(theta);
		theta *= theta_scale;
	}
}

void cpu_rope_apply(float *x, int n_heads, int head_dim, int n_rot, const float *cs,
                    const float *sn, bool neox)
{
	int half = n_rot / 2;
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

void cpu_rope(float *x, int n_heads, int head_dim, int n_rot, float pos, float base,
              float freq_scale, bool neox)
{
	float cs[CPU_ROPE_MAX_PAIRS], sn[CPU_ROPE_MAX_PAIRS];
	cpu_rope_angles(n_rot, pos, base, freq_scale, cs, sn);
	cpu_rope_apply(x, n_heads, head_dim, n_rot, cs, sn, neox);
}

void cpu_swiglu(float *g, const float *u, int64_t n)
{
	for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* ggml's GELU constants (tanh form). */
#define GELU_COEF_A    0.044715f
#define SQRT_2_OVER_PI 0.79788456080286535587989211986876f

float cpu_gelu_exact(float x)
{
	return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x)));
}

void cpu_gelu_table_fill(float *tab)
{
	/* Entry h: the half h widened, through the tanh form in float, rounded
	 * to half and widened again: ggml_table_gelu_f16 as floats. */
	for (uint32_t h = 0; h < 65536; h++)
		tab[h] = tensor_f16_to_f32(
		        tensor_f32_to_f16(cpu_gelu_exact(tensor_f16_to_f32((uint16_t)h))));
}

/* gelu(x) as ggml_vec_gelu_f32 with GGML_GELU_FP16: 0 at or below -10, x at
 * or above 10, else the table at x rounded to half. */
static inline float gelu_lookup(const float *tab, float x)
{
	if (x <= -10.0f) return 0.0f;
	if (x >= 10.0f) return x;
	return tab[tensor_f32_to_f16(x)];
}

void cpu_gelu(float *x, int64_t n, const float *tab)
{
	for (int64_t i = 0; i < n; i++) x[i] = gelu_lookup(tab, x[i]);
}

void cpu_geglu(float *g, const float *u, int64_t n, const float *tab)
{
	for (int64_t i = 0; i < n; i++) g[i] = gelu_lookup(tab, g[i]) * u[i];
}
