/*
 * quant_ref.c - writes tests/kernels/data/ggml-quant-ref.bin: what llama.cpp's
 * ggml does with each weight type infill reads, for tests/kernels/
 * test_quant_ggml.c to hold infill's reference code to.
 *
 * Not part of infill's build: it links llama.cpp's libggml-base and
 * libggml-cpu (built by tools/llamacpp) and calls their public API only:
 * ggml_quantize_chunk (the quantizer llama-quantize uses, no imatrix), the
 * type's to_float (dequantization), the CPU backend's from_float of the
 * type's vec_dot_type (how activations are quantized before a matmul) and
 * its vec_dot. Build and run with tools/refgen/quant_ref.sh.
 *
 * File format (little-endian): "IQRF", u32 version 1, u32 n_types, u32 n
 * (values per row), u32 n_rows, u32 n_act; then n_act * n floats: the
 * activation rows; then per type: u32 ggml type id, u32 row bytes, its
 * n_rows quantized rows (of random values), n_rows * n floats
 * dequantized by ggml, n_rows * n_act floats: vec_dot(weight row r,
 * activation row a) at [r * n_act + a].
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

enum { N = 512, ROWS = 4, ACT = 4 };

static uint64_t rng = 0x2545F4914F6CDD1Dull;

/* Roughly normal (a sum of uniforms), with a few outliers per row. */
static float draw(int i)
{
	float s = 0;
	for (int k = 0; k < 4; k++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		s += (float)((rng >> 40) / 16777216.0) - 0.5f;
	}
	return s * (i % 61 == 0 ? 8.0f : 1.0f);
}

static void put_u32(FILE *f, uint32_t v)
{
	fwrite(&v, 4, 1, f);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: quant_ref OUT.bin\n");
		return 2;
	}
	ggml_cpu_init();
	static const enum ggml_type types[] = {
		GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,   GGML_TYPE_Q5_1,
		GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,
		GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS,
	};
	int n_types = (int)(sizeof types / sizeof types[0]);
	FILE *f = fopen(argv[1], "wb");
	if (!f) return 1;
	fwrite("IQRF", 1, 4, f);
	put_u32(f, 1), put_u32(f, (uint32_t)n_types), put_u32(f, N), put_u32(f, ROWS),
	        put_u32(f, ACT);
	static float act[ACT][N];
	for (int a = 0; a < ACT; a++)
		for (int i = 0; i < N; i++) act[a][i] = draw(i + a) * (a == 3 ? 0.001f : 1.0f);
	/* row 2: exact halves at scale 1 for Q8_0 / Q8_1 (amax 127), ties for Q8_K */
	for (int i = 0; i < N; i++) act[2][i] = (float)((i * 7) % 255 - 127) * 0.5f;
	act[2][0] = 127.0f, act[2][256] = -127.0f;
	fwrite(act, sizeof act, 1, f);
	for (int t = 0; t < n_types; t++) {
		enum ggml_type type = types[t];
		size_t rb = ggml_row_size(type, N);
		static float src[ROWS][N], deq[ROWS][N];
		for (int r = 0; r < ROWS; r++)
			for (int i = 0; i < N; i++) src[r][i] = draw(i + r) * 0.02f;
		unsigned char *q = malloc(rb * ROWS);
		ggml_quantize_chunk(type, &src[0][0], q, 0, ROWS, N, NULL);
		const struct ggml_type_traits *tt = ggml_get_type_traits(type);
		for (int r = 0; r < ROWS; r++) tt->to_float(q + r * rb, deq[r], N);
		const struct ggml_type_traits_cpu *ct = ggml_get_type_traits_cpu(type);
		enum ggml_type vt = ct->vec_dot_type;
		size_t ab = ggml_row_size(vt, N);
		unsigned char *aq = malloc(ab * ACT);
		for (int a = 0; a < ACT; a++)
			ggml_get_type_traits_cpu(vt)->from_float(act[a], aq + a * ab, N);
		float dots[ROWS][ACT];
		for (int r = 0; r < ROWS; r++)
			for (int a = 0; a < ACT; a++)
				ct->vec_dot(N, &dots[r][a], 0, q + r * rb, 0, aq + a * ab, 0, 1);
		put_u32(f, (uint32_t)type), put_u32(f, (uint32_t)rb);
		fwrite(q, rb, ROWS, f);
		fwrite(deq, sizeof deq, 1, f);
		fwrite(dots, sizeof dots, 1, f);
		fprintf(stderr, "%-7s row %zu bytes, activations %s\n", ggml_type_name(type), rb,
		        ggml_type_name(vt));
		free(q);
		free(aq);
	}
	return fclose(f) ? 1 : 0;
}
