/*
 * test_quant_ggml.c - infill's block types against llama.cpp's own code:
 * data/ggml-quant-ref.bin holds, for each of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS, rows quantized by ggml,
 * ggml's dequantization of them, and ggml's CPU vec_dot of each row with
 * activation rows that ggml quantized to the type's vec_dot_type (written
 * by tools/refgen/quant_ref.c; the llama.cpp version is in data/README.md).
 *
 *   - dequantization: every value equal to ggml's, bit for bit (both
 *     compute the same float products of the same integers);
 *   - dot products: our activation quantizer (cpu_act_for's format) and
 *     every kernel set's matmul against ggml's vec_dot, within 1e-5 of
 *     sum |w_i x_i| + 1e-6 (float summation order only). Activations
 *     quantized another way (Q8_0 for a K-quant, half away from zero at
 *     ties) move a dot by d_x * |w| ~ 1e-3 of it and fail this.
 */
#include "cpu/cpu.h"
#include "harness.h"
#include "quant.h"

enum { MAXN = 4096, MAXR = 16, MAXA = 8 };

static FILE *ref;
static uint32_t n_types, n, n_rows, n_act;
static float act[MAXA][MAXN];

static int read_u32(uint32_t *v)
{
	return fread(v, 4, 1, ref) == 1 ? 0 : -1;
}

static const struct cpu_kernels *sets[4];
static int n_sets;

TEST(every_type_matches_ggml)
{
	sets[n_sets++] = &cpu_kernels_ref;
	const char *names[] = { "avx2", "avx2-vnni", "avx512-vnni" }; /* where compiled and run */
	for (int i = 0; i < 3; i++)
		if (cpu_kernels_named(names[i])) sets[n_sets++] = cpu_kernels_named(names[i]);
	int checked = 0;
	for (uint32_t t = 0; t < n_types; t++) {
		uint32_t type, rb;
		REQUIRE(read_u32(&type) == 0 && read_u32(&rb) == 0);
		REQUIRE(tensor_type_valid(type));
		CHECK_INT_EQ(tensor_type_row_size(type, n), rb);
		unsigned char *q = malloc((size_t)rb * n_rows);
		static float deq[MAXR][MAXN], ours[MAXN], dots[MAXR][MAXA];
		REQUIRE(fread(q, rb, n_rows, ref) == n_rows);
		for (uint32_t r = 0; r < n_rows; r++)
			REQUIRE(fread(deq[r], sizeof(float), n, ref) == n);
		for (uint32_t r = 0; r < n_rows; r++)
			REQUIRE(fread(dots[r], sizeof(float), n_act, ref) == n_act);

		int bad = 0;
		for (uint32_t r = 0; r < n_rows; r++) {
			REQUIRE(tensor_row_dequantize(type, q + (size_t)r * rb, ours, n) == 0);
			for (uint32_t i = 0; i < n; i++)
				if (memcmp(&ours[i], &deq[r][i], 4) && bad++ < 3)
					fprintf(stderr, "  %s row %u [%u]: %.9g, ggml %.9g\n",
					        tensor_type_name(type), r, i, ours[i], deq[r][i]);
		}
		CHECK_INT_EQ(bad, 0);

		enum cpu_act a = cpu_act_for(type);
		size_t xs = cpu_act_row_bytes(a, n);
		unsigned char *x = malloc(xs * n_act);
		for (uint32_t k = 0; k < n_act; k++) cpu_kernels_ref.act[a](act[k], x + k * xs, n);
		double worst = 0;
		for (int s = 0; s < n_sets; s++) {
			float y[MAXA][MAXR];
			cpu_kernels_gemm(sets[s], type)(n, q, rb, n_rows, x, xs, n_act, &y[0][0],
			                                MAXR);
			for (uint32_t r = 0; r < n_rows; r++)
				for (uint32_t k = 0; k < n_act; k++) {
					double mag = 0;
					for (uint32_t i = 0; i < n; i++)
						mag += fabs(deq[r][i] * act[k][i]);
					double err = fabs(y[k][r] - dots[r][k]);
					worst = fmax(worst, err / (mag + 1e-30));
					if (err > 1e-5 * mag + 1e-6) {
						fprintf(stderr,
						        "  %s %s row %u act %u: %.9g, ggml %.9g\n",
						        sets[s]->name, tensor_type_name(type), r, k,
						        y[k][r], dots[r][k]);
						CHECK(0);
					}
				}
		}
		printf("  %-6s dequantized bit for bit; dots within %.2g of sum |w x| (%d sets)\n",
		       tensor_type_name(type), worst, n_sets);
		free(q);
		free(x);
		checked++;
	}
	CHECK_INT_EQ(checked, 12);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "tests/kernels/data/ggml-quant-ref.bin";
	ref = fopen(path, "rb");
	char magic[4];
	uint32_t version;
	if (!ref || fread(magic, 4, 1, ref) != 1 || memcmp(magic, "IQRF", 4) ||
	    read_u32(&version) || version != 1 || read_u32(&n_types) || read_u32(&n) ||
	    read_u32(&n_rows) || read_u32(&n_act) || n > MAXN || n_rows > MAXR || n_act > MAXA ||
	    0) {
		fprintf(stderr, "%s: missing or not a version-1 IQRF file\n", path);
		return 1;
	}
	for (uint32_t k = 0; k < n_act; k++)
		if (fread(act[k], sizeof(float), n, ref) != n) {
			fprintf(stderr, "%s: truncated\n", path);
			return 1;
		}
	int failed = 0;
	for (struct test_case *t = test_cases_head; t; t = t->next) {
		int fl = 0;
		t->fn(&fl);
		printf("%s %s\n", fl ? "FAIL" : "ok  ", t->name);
		failed += fl != 0;
	}
	fclose(ref);
	printf("%d passed, %d failed\n", 1 - failed, failed);
	return failed ? 1 : 0;
}
