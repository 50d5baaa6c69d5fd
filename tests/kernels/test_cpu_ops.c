/*
 * test_cpu_ops.c - the small per-row ops of the families beyond Llama
 * (kernels/cpu/ops.c): LayerNorm with bias (starcoder2) and ggml's GELU on
 * the f16 grid (starcoder2's MLP, gemma's GeGLU), each against a plain
 * float64 or formula reference.
 */
#include <math.h>

#include "cpu/cpu.h"
#include "harness.h"
#include "quant.h"

TEST(layernorm_matches_float64)
{
	enum { N = 96 };
	float x[N], w[N], b[N], y[N], y0[N];
	for (int i = 0; i < N; i++) {
		x[i] = 0.3f + 0.01f * (float)((i * 37) % 29) - 0.002f * (float)i;
		w[i] = 1.0f + 0.01f * (float)(i % 7);
		b[i] = 0.02f * (float)(i % 5) - 0.04f;
	}
	cpu_layernorm(x, w, b, y, N, 1e-5f);
	cpu_layernorm(x, w, NULL, y0, N, 1e-5f);
	double mean = 0, var = 0;
	for (int i = 0; i < N; i++) mean += x[i];
	mean /= N;
	for (int i = 0; i < N; i++) var += (x[i] - mean) * (x[i] - mean);
	var /= N;
	double worst = 0;
	for (int i = 0; i < N; i++) {
		double ref = (x[i] - mean) / sqrt(var + 1e-5) * w[i];
		worst = fmax(worst, fabs(y0[i] - ref));
		worst = fmax(worst, fabs(y[i] - (ref + b[i])));
	}
	/* float rounding of a unit-variance row: ~1e-6; a missing bias or mean is 1e-2 and up */
	CHECK(worst < 1e-5);
	/* mean 0 and variance 1 before the weight, whatever the offset of x */
	float ones[N], shifted[N], z[N];
	for (int i = 0; i < N; i++) ones[i] = 1.0f, shifted[i] = x[i] + 5.0f;
	cpu_layernorm(shifted, ones, NULL, z, N, 0.0f);
	double m = 0, v = 0;
	for (int i = 0; i < N; i++) m += z[i];
	m /= N;
	for (int i = 0; i < N; i++) v += (z[i] - m) * (z[i] - m);
	CHECK_NEAR(m, 0.0, 1e-5);
	CHECK_NEAR(v / N, 1.0, 1e-3);
}

TEST(gelu_table_is_ggml_f16_grid)
{
	static float tab[65536];
	cpu_gelu_table_fill(tab);
	/* every entry is the formula at the half, rounded to half */
	for (uint32_t h = 0; h < 65536; h += 7) {
		float x = tensor_f16_to_f32((uint16_t)h);
		if (!isfinite(x)) continue;
		float want = tensor_f16_to_f32(tensor_f32_to_f16(cpu_gelu_exact(x)));
		if (!(tab[h] == want || (isnan(tab[h]) && isnan(want)))) {
			fprintf(stderr, "entry %u (%g): %g vs %g\n", h, x, tab[h], want);
			CHECK(0);
			break;
		}
	}
	/* the formula itself: tanh GELU, with its known values */
	CHECK_NEAR(cpu_gelu_exact(1.0f), 0.8411920f, 1e-6);
	CHECK_NEAR(cpu_gelu_exact(-1.0f), -0.1588080f, 1e-6);
	CHECK(cpu_gelu_exact(0.0f) == 0.0f);

	/* the lookup: input rounded to half first, output on the half grid;
	 * 0 at or below -10 and x at or above 10, as ggml_vec_gelu_f32 */
	float v[6] = { 0.1234567f, -0.5f, -10.0f, -12.0f, 10.0f, 37.5f };
	float u[6] = { 2, 2, 2, 2, 2, 2 };
	float g[6];
	memcpy(g, v, sizeof g);
	cpu_gelu(v, 6, tab);
	CHECK(v[0] == tab[tensor_f32_to_f16(0.1234567f)]);
	CHECK(v[0] != cpu_gelu_exact(0.1234567f)); /* the grid shows */
	CHECK_NEAR(v[0], cpu_gelu_exact(0.1234567f), 1e-3);
	CHECK(v[2] == 0.0f && v[3] == 0.0f);
	CHECK(v[4] == 10.0f && v[5] == 37.5f);
	cpu_geglu(g, u, 6, tab);
	for (int i = 0; i < 6; i++) CHECK(g[i] == v[i] * 2);
}

TEST_MAIN()
