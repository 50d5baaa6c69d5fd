/*
 * test_cpu_kernels.c - every SIMD kernel of the CPU backend against the plain
 * C reference beside it, plus the worker pool.
 *
 * Tolerances: the integer block sums of Q8_0/Q4_0 are exact in both, so the
 * only difference is the order of the float accumulation of per-block
 * results; F32/F16 differ only in float summation order. Both are bounded by
 * n * eps * sum(|w_i x_i|); we allow 1e-5 * sum(|w_i x_i|) + 1e-6 (for n <=
 * 2048, n * 2^-24 = 1.2e-4 is the worst case, the observed error is far
 * below). The K-quants, Q4_1/Q5_1 and IQ4 types sum exactly per block too
 * (per super-block for Q8_K activations), so the same bound holds. The
 * activation quantizers must match the reference bit for bit, rounding ties
 * included.
 */
#include "cpu/cpu.h"
#include "harness.h"
#include "quant.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t rng_next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static float frand(void)
{
	rng_next();
	return (float)((rng >> 40) / 16777216.0) * 2.0f - 1.0f;
}

static const struct cpu_kernels *sets[3];
static int n_sets;

static void init_sets(void)
{
	if (n_sets) return;
	/* every set this build compiled that the CPU runs (tools/test builds them all) */
	const char *names[] = { "avx2", "avx2-vnni", "avx512-vnni" };
	for (int i = 0; i < 3; i++)
		if (cpu_kernels_named(names[i])) sets[n_sets++] = cpu_kernels_named(names[i]);
	if (!n_sets) printf("  (no SIMD set compiled for this CPU: only the reference runs)\n");
}

TEST(act_q8_0_matches_reference_bit_for_bit)
{
	init_sets();
	enum { N = 4096 };
	static float x[N];
	for (int i = 0; i < N; i++) x[i] = frand() * (i % 97 == 0 ? 10.0f : 1.0f);
	/* A block of exact ties: amax 127 gives scale 1, so k + 0.5 must round to
	 * even, as ggml's x86 quantize_row_q8_0 does (its generic reference
	 * rounds away from zero). */
	for (int i = 0; i < 32; i++)
		x[i] = (i == 0) ? 127.0f : (float)((i % 20) - 10) + (i % 2 ? 0.5f : -0.5f);
	/* An all-zero block. */
	for (int i = 32; i < 64; i++) x[i] = 0.0f;
	size_t bytes = cpu_act_row_bytes(CPU_ACT_Q8_0, N);
	unsigned char *ref = malloc(bytes), *got = malloc(bytes);
	cpu_kernels_ref.act[CPU_ACT_Q8_0](x, ref, N);
	const struct block_q8_0 *b0 = (const struct block_q8_0 *)ref;
	for (int i = 1; i < 32; i++) {
		float v = x[i];
		int want = (int)nearbyintf(v); /* half to even */
		CHECK_INT_EQ(b0->qs[i], want);
	}
	for (int s = 0; s < n_sets; s++) {
		memset(got, 0xAA, bytes);
		sets[s]->act[CPU_ACT_Q8_0](x, got, N);
		if (memcmp(ref, got, bytes) != 0)
			fprintf(stderr, "act_q8_0 of %s differs from the reference\n",
			        sets[s]->name);
		CHECK(memcmp(ref, got, bytes) == 0);
	}
	free(ref);
	free(got);
}

static void check_gemm(int *test_failed_, uint32_t type, int64_t n)
{
	enum { NR = 37, NT = 19 }; /* 2 full 16-row panels + 5 rows; 8-token tiles + tails */
	float *wf = malloc((size_t)NR * n * sizeof(float)),
	      *xf = malloc((size_t)NT * n * sizeof(float));
	for (int64_t i = 0; i < NR * n; i++) wf[i] = frand() * 0.05f;
	for (int64_t i = 0; i < NT * n; i++) xf[i] = frand() * 2.0f;
	size_t ws = tensor_type_row_size(type, n);
	unsigned char *w = malloc(ws * NR);
	for (int r = 0; r < NR; r++)
		REQUIRE(tensor_row_quantize(type, wf + r * n, w + r * ws, n) == 0);
	enum cpu_act a = cpu_act_for(type);
	size_t xs = cpu_act_row_bytes(a, n);
	unsigned char *x = malloc(xs * NT);
	for (int t = 0; t < NT; t++)
		cpu_kernels_act(&cpu_kernels_ref, a)(xf + t * n, x + t * xs, n);
	/* Magnitudes for the tolerance: sum |w_i x_i| with dequantized weights. */
	float *wd = malloc((size_t)n * sizeof(float));
	float ref[NT][NR], got[NT][NR], mag[NT][NR];
	for (int r = 0; r < NR; r++) {
		tensor_row_dequantize(type, w + r * ws, wd, n);
		for (int t = 0; t < NT; t++) {
			double m = 0;
			for (int64_t i = 0; i < n; i++) m += fabs(wd[i] * xf[t * n + i]);
			mag[t][r] = (float)m;
		}
	}
	cpu_kernels_gemm(&cpu_kernels_ref, type)(n, w, ws, NR, x, xs, NT, &ref[0][0], NR);
	for (int s = 0; s < n_sets; s++) {
		cpu_gemm_fn f = cpu_kernels_gemm(sets[s], type);
		/* Every token count 1..19: the decode groups, the 8-token tiles and their tails. */
		for (int nt = 1; nt <= NT; nt++) {
			memset(got, 0, sizeof got);
			f(n, w, ws, NR, x, xs, nt, &got[0][0], NR);
			for (int t = 0; t < nt; t++)
				for (int r = 0; r < NR; r++) {
					double tol = 1e-5 * mag[t][r] + 1e-6;
					if (fabs(got[t][r] - ref[t][r]) > tol) {
						fprintf(stderr,
						        "%s %s n=%lld nt=%d [%d][%d]: %.9g vs "
						        "%.9g\n",
						        sets[s]->name, tensor_type_name(type),
						        (long long)n, nt, t, r, got[t][r],
						        ref[t][r]);
						CHECK(0);
						goto next;
					}
				}
		}
	next:;
	}
	free(wf), free(xf), free(w), free(x), free(wd);
}

TEST(gemm_q8_0)
{
	init_sets();
	check_gemm(test_failed_, TENSOR_TYPE_Q8_0, 64);
	check_gemm(test_failed_, TENSOR_TYPE_Q8_0, 352); /* 11 blocks: 4-block scale groups + 3 */
	check_gemm(test_failed_, TENSOR_TYPE_Q8_0, 2048);
}

TEST(gemm_q4_0)
{
	init_sets();
	check_gemm(test_failed_, TENSOR_TYPE_Q4_0, 64);
	check_gemm(test_failed_, TENSOR_TYPE_Q4_0,
	           352); /* 11 blocks: one 8-block scale group + 3 */
	check_gemm(test_failed_, TENSOR_TYPE_Q4_0, 2048);
}

/* Prompt-lookup decoding checks drafts in a batch and holds the result to
 * what decoding one token at a time gives (tests/infer/test_engine_lookup.c
 * on the Q8_0 embedded model): a token's row of Q8_0 results must not
 * depend on how many tokens share the call, bit for bit. The AVX2 set
 * keeps that (kern_avx2.c); the AVX-512 set's prefill panels sum in another
 * order than its decode rows and are not held to it. */
TEST(gemm_q8_0_same_bits_in_any_batch)
{
	init_sets();
	enum { NR = 24, NT = 19, N = 2048 };
	float *wf = malloc((size_t)N * sizeof(float)), *xf = malloc((size_t)N * sizeof(float));
	size_t ws = tensor_type_row_size(TENSOR_TYPE_Q8_0, N);
	size_t xs = cpu_act_row_bytes(CPU_ACT_Q8_0, N);
	unsigned char *w = malloc(ws * NR), *x = malloc(xs * NT);
	for (int r = 0; r < NR; r++) {
		for (int i = 0; i < N; i++) wf[i] = frand() * 0.05f;
		REQUIRE(tensor_row_quantize(TENSOR_TYPE_Q8_0, wf, w + r * ws, N) == 0);
	}
	for (int t = 0; t < NT; t++) {
		for (int i = 0; i < N; i++) xf[i] = frand() * 2.0f;
		cpu_kernels_act(&cpu_kernels_ref, CPU_ACT_Q8_0)(xf, x + t * xs, N);
	}
	float all[NT][NR], one[NR];
	for (int s = 0; s < n_sets; s++) {
		if (strcmp(sets[s]->name, "avx2") && strcmp(sets[s]->name, "avx2-vnni")) continue;
		cpu_gemm_fn f = cpu_kernels_gemm(sets[s], TENSOR_TYPE_Q8_0);
		f(N, w, ws, NR, x, xs, NT, &all[0][0], NR);
		for (int t = 0; t < NT; t++) {
			f(N, w, ws, NR, x + t * xs, xs, 1, one, NR);
			CHECK(memcmp(one, all[t], sizeof one) == 0);
		}
	}
	free(wf), free(xf), free(w), free(x);
}

/* ---- Q4_0, Q8_0, Q5_0 and Q5_1 packed at load into 8-row panels (repack.c, gemm_*_p8) ---- */

/* A weight type the CPU backend packs: its packer and the sets' kernel;
 * exact: its results are the reference's bits (Q4_0's and Q8_0's float
 * step is an FMA: within check_gemm's tolerance of it). */
struct packed_kind {
	uint32_t type;
	const char *name;
	enum cpu_act act;
	bool exact;
	size_t (*bytes)(int64_t nr, int64_t n);
	void (*pack)(const void *w, size_t w_stride, int64_t nr, int64_t n, int64_t p0, int64_t p1,
	             void *dst);
	void (*row)(const void *packed, int64_t n, int64_t r, float *y);
	size_t kernel; /* offset of the set's cpu_gemm_fn */
};

static const struct packed_kind packed_kinds[] = {
	{ TENSOR_TYPE_Q4_0, "q4_0", CPU_ACT_Q8_0, false, cpu_q4_0_p8_bytes, cpu_q4_0_p8_pack,
	  cpu_q4_0_p8_row, offsetof(struct cpu_kernels, gemm_q4_0_p8) },
	{ TENSOR_TYPE_Q8_0, "q8_0", CPU_ACT_Q8_0, false, cpu_q8_0_p8_bytes, cpu_q8_0_p8_pack,
	  cpu_q8_0_p8_row, offsetof(struct cpu_kernels, gemm_q8_0_p8) },
	{ TENSOR_TYPE_Q5_0, "q5_0", CPU_ACT_Q8_0, true, cpu_q5_0_p8_bytes, cpu_q5_0_p8_pack,
	  cpu_q5_0_p8_row, offsetof(struct cpu_kernels, gemm_q5_0_p8) },
	{ TENSOR_TYPE_Q5_1, "q5_1", CPU_ACT_Q8_1, true, cpu_q5_1_p8_bytes, cpu_q5_1_p8_pack,
	  cpu_q5_1_p8_row, offsetof(struct cpu_kernels, gemm_q5_1_p8) },
};
#define N_PACKED_KINDS (sizeof packed_kinds / sizeof packed_kinds[0])

static cpu_gemm_fn packed_gemm(const struct cpu_kernels *k, const struct packed_kind *pk)
{
	return *(const cpu_gemm_fn *)((const char *)k + pk->kernel);
}

/* nr random rows of n values at *w (stride *ws) and the same packed at *pw. */
/* With same_signs, the generators below make every value positive: a block's
 * integer sum then reaches ~2^15 and its float step rounds (with random
 * signs it stays near 2^11, and most orders of the step give the same
 * bits, so a test of bit-identity could not see them). */
static bool same_signs;

static float frand_signed(void)
{
	float v = frand();
	return same_signs ? fabsf(v) : v;
}

static void rows_and_panels(const struct packed_kind *pk, int64_t nr, int64_t n, unsigned char **w,
                            size_t *ws, void **pw)
{
	float *wf = malloc((size_t)n * sizeof(float));
	*ws = tensor_type_row_size(pk->type, n);
	*w = malloc(*ws * nr);
	for (int64_t r = 0; r < nr; r++) {
		for (int64_t i = 0; i < n; i++) wf[i] = frand_signed() * 0.05f;
		tensor_row_quantize(pk->type, wf, *w + r * *ws, n);
	}
	*pw = malloc(pk->bytes(nr, n));
	/* two ranges, as two pool threads would pack them */
	int64_t np = (nr + 7) / 8;
	pk->pack(*w, *ws, nr, n, 0, np / 2, *pw);
	pk->pack(*w, *ws, nr, n, np / 2, np, *pw);
	free(wf);
}

/* nt random activation rows of n values in format a (row stride *xs); caller frees. */
static unsigned char *random_acts(enum cpu_act a, int nt, int64_t n, size_t *xs)
{
	*xs = cpu_act_row_bytes(a, n);
	unsigned char *x = malloc(*xs * nt);
	float *xf = malloc((size_t)n * sizeof(float));
	for (int t = 0; t < nt; t++) {
		for (int64_t i = 0; i < n; i++) xf[i] = frand_signed() * 2.0f;
		cpu_kernels_ref.act[a](xf, x + t * *xs, n);
	}
	free(xf);
	return x;
}


/* The panel kernel against the reference's row kernel on the unpacked rows:
 * every token count 1..17 (one or two full tiles of 4 or 8 tokens, every
 * tail after them), row counts that fill the last panel or not (and pairs
 * of full panels, the zmm tiles: 24 = 16 + 8, 45 = 16 + 16 + 8 + 5), widths
 * of 1, 3, 11 and 64 blocks. The tolerance is check_gemm's (float
 * accumulation order only), none for the exact kinds; rows past nr and
 * columns past nt must stay untouched. */
TEST(gemm_packed_matches_reference)
{
	init_sets();
	const int64_t widths[] = { 32, 96, 352, 2048 };
	const int64_t rows[] = { 5, 8, 13, 24, 37, 45 };
	enum { NT = 17, LDY = 48 };
	for (int s = 0; s < n_sets * (int)N_PACKED_KINDS; s++) {
		const struct packed_kind *pk = &packed_kinds[s % N_PACKED_KINDS];
		cpu_gemm_fn f = packed_gemm(sets[s / N_PACKED_KINDS], pk);
		if (!f) continue;
		for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
			for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
				int64_t n = widths[wi], nr = rows[ri];
				unsigned char *w;
				size_t ws;
				void *pw;
				rows_and_panels(pk, nr, n, &w, &ws, &pw);
				size_t xs = cpu_act_row_bytes(pk->act, n);
				unsigned char *x = malloc(xs * NT);
				float *xf = malloc((size_t)NT * n * sizeof(float));
				for (int64_t i = 0; i < NT * n; i++) xf[i] = frand() * 2.0f;
				for (int t = 0; t < NT; t++)
					cpu_kernels_ref.act[pk->act](xf + t * n, x + t * xs, n);
				float ref[NT][LDY], got[NT + 1][LDY], mag[NT][LDY];
				float *wd = malloc((size_t)n * sizeof(float));
				for (int64_t r = 0; r < nr; r++) {
					tensor_row_dequantize(pk->type, w + r * ws, wd, n);
					for (int t = 0; t < NT; t++) {
						double m = 0;
						for (int64_t i = 0; i < n; i++)
							m += fabs(wd[i] * xf[t * n + i]);
						mag[t][r] = (float)m;
					}
				}
				cpu_kernels_gemm(&cpu_kernels_ref, pk->type)(n, w, ws, nr, x, xs,
				                                             NT, &ref[0][0], LDY);
				for (int nt = 1; nt <= NT; nt++) {
					for (int t = 0; t <= NT; t++)
						for (int r = 0; r < LDY; r++) got[t][r] = -1234.5f;
					f(n, pw, ws, nr, x, xs, nt, &got[0][0], LDY);
					for (int t = 0; t <= NT; t++)
						for (int r = 0; r < LDY; r++) {
							bool set = t < nt && r < nr;
							double tol =
							        set && !pk->exact
							                ? 1e-5 * mag[t][r] + 1e-6
							                : 0;
							double want = set ? ref[t][r] : -1234.5;
							if (fabs(got[t][r] - want) > tol) {
								fprintf(stderr,
								        "%s packed %s n=%lld "
								        "nr=%lld "
								        "nt=%d [%d][%d]: %.9g vs "
								        "%.9g\n",
								        sets[s / N_PACKED_KINDS]
								                ->name,
								        pk->name, (long long)n,
								        (long long)nr, nt, t, r,
								        got[t][r], want);
								CHECK(0);
								goto next;
							}
						}
				}
			next:
				free(w), free(pw), free(x), free(xf), free(wd);
			}
	}
}

/* Prompts read their activations interleaved (cpu_il_pack) where the set
 * has a gemm_il: the same bits as its panel kernel on the rows, which the
 * test above holds to the reference (widths of 1, 11 and 64 blocks; 1 and
 * 3 tiles; 16 and 48 rows; random signs, and all positive for sums large
 * enough that the float step's order shows). */
TEST(gemm_il_same_bits_as_panels)
{
	init_sets();
	const int64_t widths[] = { 32, 352, 2048 };
	enum { NR = 48, NT = 24 };
	int checked = 0;
	for (int sign = 0; sign < 2; sign++)
		for (int s = 0; s < n_sets; s++)
			for (size_t k = 0; k < 2; k++) { /* Q4_0, Q8_0 */
				same_signs = sign;
				const struct packed_kind *pk = &packed_kinds[k];
				cpu_gemm_il_fn fi = cpu_kernels_gemm_il(
				        sets[s], k ? CPU_TYPE_Q8_0_P8 : CPU_TYPE_Q4_0_P8);
				cpu_gemm_fn f = packed_gemm(sets[s], pk);
				if (!fi) continue;
				REQUIRE(f != NULL);
				for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
					int64_t n = widths[wi];
					unsigned char *w;
					size_t ws, xs;
					void *pw;
					rows_and_panels(pk, NR, n, &w, &ws, &pw);
					unsigned char *x = random_acts(pk->act, NT, n, &xs);
					size_t tile = cpu_il_tile_bytes(n);
					char *il = malloc(tile * (NT / 8));
					for (int t = 0; t < NT / 8; t++)
						cpu_il_pack(x + 8 * t * xs, xs, n, il + t * tile);
					static float want[NT][NR], got[NT][NR];
					f(n, pw, ws, NR, x, xs, NT, &want[0][0], NR);
					for (int nr = 16; nr <= NR; nr += 32)
						for (int ntl = 1; ntl <= NT / 8; ntl += 2) {
							memset(got, 0, sizeof got);
							fi(n, pw, ws, nr, il, ntl, &got[0][0], NR);
							int bad = 0;
							for (int t = 0; t < 8 * ntl; t++)
								for (int r = 0; r < nr; r++)
									if (memcmp(&got[t][r],
									           &want[t][r],
									           4) &&
									    bad++ < 3)
										fprintf(stderr,
										        "%s %s il "
										        "n=%lld "
										        "nr=%d "
										        "[%d][%d]: "
										        "%.9g vs "
										        "%.9g\n",
										        sets[s]->name,
										        pk->name,
										        (long long)
										                n,
										        nr, t, r,
										        got[t][r],
										        want[t][r]);
							CHECK(bad == 0);
							checked++;
						}
					free(w), free(pw), free(x), free(il);
				}
			}
	same_signs = false;
	if (!checked) printf("  (no set with a gemm_il on this CPU)\n");
}

/* Prompt lookup checks drafts in a batch and holds the result to decoding
 * one token at a time; the prefix cache's exact-logits tests too: a token's
 * results from the panel kernel must be the same bits alone (nt = 1) and at
 * each place of an 11-token batch (full tiles of 4 or 8 tokens and a tail). */
TEST(gemm_packed_same_bits_in_any_batch)
{
	init_sets();
	enum { NR = 24, NT = 11, N = 2048 };
	for (size_t k = 0; k < N_PACKED_KINDS; k++) {
		const struct packed_kind *pk = &packed_kinds[k];
		unsigned char *w;
		size_t ws;
		void *pw;
		rows_and_panels(pk, NR, N, &w, &ws, &pw);
		size_t xs;
		unsigned char *x = random_acts(pk->act, NT, N, &xs);
		float all[NT][NR], one[NR];
		for (int s = 0; s < n_sets; s++) {
			cpu_gemm_fn f = packed_gemm(sets[s], pk);
			if (!f) continue;
			f(N, pw, ws, NR, x, xs, NT, &all[0][0], NR);
			for (int t = 0; t < NT; t++) {
				f(N, pw, ws, NR, x + t * xs, xs, 1, one, NR);
				if (memcmp(one, all[t], sizeof one) != 0)
					fprintf(stderr,
					        "%s %s: token %d alone differs from in a batch of "
					        "%d\n",
					        sets[s]->name, pk->name, t, NT);
				CHECK(memcmp(one, all[t], sizeof one) == 0);
			}
			/* and inside 2- and 3-token calls, at each place */
			for (int g = 2; g <= 3; g++) {
				f(N, pw, ws, NR, x, xs, g, &all[0][0], NR);
				for (int t = 0; t < g; t++) {
					f(N, pw, ws, NR, x + t * xs, xs, 1, one, NR);
					CHECK(memcmp(one, all[t], sizeof one) == 0);
				}
			}
		}
		free(w), free(pw), free(x);
	}
}

/* The same model gives the same answer on an AVX2 and an AVX-512 host: the
 * sets' panel kernels differ in their integer steps only (exact), so every
 * result must be the same bits, at every batch size. */
TEST(gemm_packed_same_bits_in_every_set)
{
	init_sets();
	enum { NR = 21, NT = 11, N = 1024 };
	for (size_t k = 0; k < N_PACKED_KINDS; k++) {
		const struct packed_kind *pk = &packed_kinds[k];
		unsigned char *w;
		size_t ws;
		void *pw;
		rows_and_panels(pk, NR, N, &w, &ws, &pw);
		size_t xs;
		unsigned char *x = random_acts(pk->act, NT, N, &xs);
		float first[NT][NR], got[NT][NR];
		const char *first_name = NULL;
		for (int nt = 1; nt <= NT; nt++) {
			first_name = NULL;
			for (int s = 0; s < n_sets; s++) {
				cpu_gemm_fn f = packed_gemm(sets[s], pk);
				if (!f) continue;
				f(N, pw, ws, NR, x, xs, nt, first_name ? &got[0][0] : &first[0][0],
				  NR);
				if (!first_name) {
					first_name = sets[s]->name;
					continue;
				}
				bool same = memcmp(first, got, (size_t)nt * sizeof first[0]) == 0;
				if (!same)
					fprintf(stderr, "%s %s and %s differ at nt=%d\n", pk->name,
					        first_name, sets[s]->name, nt);
				CHECK(same);
			}
		}
		free(w), free(pw), free(x);
	}
}

/* A tied embedding reads its rows from the panels: the same floats as the file's rows. */
TEST(packed_row_dequantizes_like_the_file)
{
	enum { NR = 13, N = 352 };
	for (size_t k = 0; k < N_PACKED_KINDS; k++) {
		unsigned char *w;
		size_t ws;
		void *pw;
		rows_and_panels(&packed_kinds[k], NR, N, &w, &ws, &pw);
		float want[N], got[N];
		for (int r = 0; r < NR; r++) {
			tensor_row_dequantize(packed_kinds[k].type, w + r * ws, want, N);
			packed_kinds[k].row(pw, N, r, got);
			CHECK(memcmp(want, got, sizeof got) == 0);
		}
		free(w), free(pw);
	}
}

/* ---- Q4_K packed at load into 8-row panels (repack.c, gemm_q4_k_p8) ---- */

/* nr Q4_K rows of n values of random bytes (every scale, min and nibble
 * pattern, the 6-bit scales' top bits included) with small random d and
 * dmin at *w, and the same packed at *pw; the first block of row 0 has
 * every nibble and scale at its maximum (the kernels' int16 and int32
 * bounds). */
static void q4_k_rows_and_panels(int64_t nr, int64_t n, unsigned char **w, size_t *ws, void **pw)
{
	*ws = tensor_type_row_size(TENSOR_TYPE_Q4_K, n);
	*w = malloc(*ws * nr);
	for (int64_t r = 0; r < nr; r++)
		for (int64_t b = 0; b < n / QK_K; b++) {
			struct block_q4_k *k = (struct block_q4_k *)(*w + r * *ws) + b;
			unsigned char *raw = (unsigned char *)k;
			for (size_t i = 0; i < sizeof *k; i++)
				raw[i] = (unsigned char)(rng_next() >> 32);
			k->d = tensor_f32_to_f16(frand() * 1e-3f);
			k->dmin = tensor_f32_to_f16(frand() * 1e-3f);
			if (r == 0 && b == 0) {
				memset(k->scales, 0xFF, sizeof k->scales);
				memset(k->qs, 0xFF, sizeof k->qs);
			}
		}
	*pw = malloc(cpu_q4_k_p8_bytes(nr, n));
	int64_t np = (nr + 7) / 8;
	cpu_q4_k_p8_pack(*w, *ws, nr, n, 0, np / 2, *pw);
	cpu_q4_k_p8_pack(*w, *ws, nr, n, np / 2, np, *pw);
}

/* The K-quant panels of each type (Q5_K's and Q6_K's defined below). */
static void q5_k_rows_and_panels(int64_t nr, int64_t n, unsigned char **w, size_t *ws, void **pw);
static void q6_k_rows_and_panels(int64_t nr, int64_t n, unsigned char **w, size_t *ws, void **pw);
static void iq4_xs_rows_and_panels(int64_t nr, int64_t n, unsigned char **w, size_t *ws, void **pw);

static void kq_rows_and_panels(uint32_t type, int64_t nr, int64_t n, unsigned char **w, size_t *ws,
                               void **pw)
{
	(type == TENSOR_TYPE_Q4_K   ? q4_k_rows_and_panels
	 : type == TENSOR_TYPE_Q5_K ? q5_k_rows_and_panels
	 : type == TENSOR_TYPE_Q6_K ? q6_k_rows_and_panels
	                            : iq4_xs_rows_and_panels)(nr, n, w, ws, pw);
}

static cpu_gemm_fn kq_packed_gemm(const struct cpu_kernels *k, uint32_t type)
{
	return type == TENSOR_TYPE_Q4_K   ? k->gemm_q4_k_p8
	       : type == TENSOR_TYPE_Q5_K ? k->gemm_q5_k_p8
	       : type == TENSOR_TYPE_Q6_K ? k->gemm_q6_k_p8
	                                  : k->gemm_iq4_xs_p8;
}

static void kq_packed_row(uint32_t type, const void *pw, int64_t n, int64_t r, float *y)
{
	(type == TENSOR_TYPE_Q4_K   ? cpu_q4_k_p8_row
	 : type == TENSOR_TYPE_Q5_K ? cpu_q5_k_p8_row
	 : type == TENSOR_TYPE_Q6_K ? cpu_q6_k_p8_row
	                            : cpu_iq4_xs_p8_row)(pw, n, r, y);
}

/* nt Q8_K activation rows of n values; token 0 all +127, token 1 all -127
 * (with the maximal block above: the largest sums), the rest random. */
static unsigned char *q8_k_tokens(int nt, int64_t n, size_t *xs)
{
	*xs = cpu_act_row_bytes(CPU_ACT_Q8_K, n);
	unsigned char *x = malloc(*xs * nt);
	float *xf = malloc((size_t)n * sizeof(float));
	for (int t = 0; t < nt; t++) {
		for (int64_t i = 0; i < n; i++)
			xf[i] = t == 0 ? 0.5f : t == 1 ? -0.5f : frand() * 2.0f;
		cpu_kernels_ref.act[CPU_ACT_Q8_K](xf, x + t * *xs, n);
	}
	free(xf);
	return x;
}

/* The panel kernels do the reference's exact integer sums and then its
 * float steps in its order, so every result must be the reference's bits
 * (and with it the same at any batch size, place in the batch and set):
 * token counts 1..17 (one or two full tiles of 4 or 8 tokens, every tail
 * after them), row counts that fill the last panel or not, with and without
 * pairs of panels (AVX-512's 16-row tiles: 24 = 16 + 8, 45 = 16 + 16 + 8 +
 * 5), widths of 1, 3 and 11 super-blocks. Rows past nr and columns past nt
 * stay untouched. */
static void check_kq_packed_bit_for_bit(int *test_failed_, uint32_t type)
{
	init_sets();
	const int64_t widths[] = { 256, 768, 2816 };
	const int64_t rows[] = { 5, 8, 13, 24, 37, 45 };
	enum { NT = 17, LDY = 48 };
	for (int s = 0; s < n_sets; s++) {
		cpu_gemm_fn f = kq_packed_gemm(sets[s], type);
		if (!f) continue;
		for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
			for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
				int64_t n = widths[wi], nr = rows[ri];
				unsigned char *w;
				size_t ws, xs;
				void *pw;
				kq_rows_and_panels(type, nr, n, &w, &ws, &pw);
				unsigned char *x = q8_k_tokens(NT, n, &xs);
				float ref[NT][LDY], got[NT + 1][LDY];
				cpu_kernels_gemm(&cpu_kernels_ref, type)(n, w, ws, nr, x, xs, NT,
				                                         &ref[0][0], LDY);
				for (int nt = 1; nt <= NT; nt++) {
					for (int t = 0; t <= NT; t++)
						for (int r = 0; r < LDY; r++) got[t][r] = -1234.5f;
					f(n, pw, ws, nr, x, xs, nt, &got[0][0], LDY);
					for (int t = 0; t <= NT; t++)
						for (int r = 0; r < LDY; r++) {
							bool set = t < nt && r < nr;
							float want = set ? ref[t][r] : -1234.5f;
							if (memcmp(&got[t][r], &want,
							           sizeof want)) {
								fprintf(stderr,
								        "%s packed %s n=%lld "
								        "nr=%lld nt=%d [%d][%d]: "
								        "%.9g vs %.9g\n",
								        sets[s]->name,
								        tensor_type_name(type),
								        (long long)n, (long long)nr,
								        nt, t, r, got[t][r], want);
								CHECK(0);
								goto next;
							}
						}
				}
			next:
				free(w), free(pw), free(x);
			}
	}
}

TEST(gemm_q4_k_packed_matches_reference_bit_for_bit)
{
	check_kq_packed_bit_for_bit(test_failed_, TENSOR_TYPE_Q4_K);
}

/* Prompt lookup and the prefix cache hold a token's results in a batch to
 * those of decoding it alone: at each place of a 19-token batch (tiles of 8, 8, 3). */
static void check_kq_packed_any_batch(int *test_failed_, uint32_t type)
{
	init_sets();
	enum { NR = 24, NT = 19, N = 2048 };
	unsigned char *w;
	size_t ws, xs;
	void *pw;
	kq_rows_and_panels(type, NR, N, &w, &ws, &pw);
	unsigned char *x = q8_k_tokens(NT, N, &xs);
	float all[NT][NR], one[NR];
	for (int s = 0; s < n_sets; s++) {
		cpu_gemm_fn f = kq_packed_gemm(sets[s], type);
		if (!f) continue;
		f(N, pw, ws, NR, x, xs, NT, &all[0][0], NR);
		for (int t = 0; t < NT; t++) {
			f(N, pw, ws, NR, x + t * xs, xs, 1, one, NR);
			CHECK(memcmp(one, all[t], sizeof one) == 0);
		}
	}
	free(w), free(pw), free(x);
}

TEST(gemm_q4_k_packed_same_bits_in_any_batch)
{
	check_kq_packed_any_batch(test_failed_, TENSOR_TYPE_Q4_K);
}

/* A tied embedding reads its rows from the panels: the same floats as the file's rows. */
static void check_kq_packed_rows(int *test_failed_, uint32_t type)
{
	enum { NR = 13, N = 768 };
	unsigned char *w;
	size_t ws;
	void *pw;
	kq_rows_and_panels(type, NR, N, &w, &ws, &pw);
	float want[N], got[N];
	for (int r = 0; r < NR; r++) {
		tensor_row_dequantize(type, w + r * ws, want, N);
		kq_packed_row(type, pw, N, r, got);
		CHECK(memcmp(want, got, sizeof got) == 0);
	}
	free(w), free(pw);
}

TEST(q4_k_packed_row_dequantizes_like_the_file)
{
	check_kq_packed_rows(test_failed_, TENSOR_TYPE_Q4_K);
}

/* ---- Q5_K packed at load into 8-row panels (repack.c, gemm_q5_k_p8) ---- */

/* As q4_k_rows_and_panels, qh random too; row 0's first block has every
 * level at 31 and every scale and min at 63 (the AVX2 set's int16 sums of
 * 4 products, its int32 bounds). */
static void q5_k_rows_and_panels(int64_t nr, int64_t n, unsigned char **w, size_t *ws, void **pw)
{
	*ws = tensor_type_row_size(TENSOR_TYPE_Q5_K, n);
	*w = malloc(*ws * nr);
	for (int64_t r = 0; r < nr; r++)
		for (int64_t b = 0; b < n / QK_K; b++) {
			struct block_q5_k *k = (struct block_q5_k *)(*w + r * *ws) + b;
			unsigned char *raw = (unsigned char *)k;
			for (size_t i = 0; i < sizeof *k; i++)
				raw[i] = (unsigned char)(rng_next() >> 32);
			k->d = tensor_f32_to_f16(frand() * 1e-3f);
			k->dmin = tensor_f32_to_f16(frand() * 1e-3f);
			if (r == 0 && b == 0) {
				memset(k->scales, 0xFF, sizeof k->scales);
				memset(k->qh, 0xFF, sizeof k->qh);
				memset(k->qs, 0xFF, sizeof k->qs);
			}
		}
	*pw = malloc(cpu_q5_k_p8_bytes(nr, n));
	int64_t np = (nr + 7) / 8;
	cpu_q5_k_p8_pack(*w, *ws, nr, n, 0, np / 2, *pw);
	cpu_q5_k_p8_pack(*w, *ws, nr, n, np / 2, np, *pw);
}

TEST(gemm_q5_k_packed_matches_reference_bit_for_bit)
{
	check_kq_packed_bit_for_bit(test_failed_, TENSOR_TYPE_Q5_K);
}

TEST(gemm_q5_k_packed_same_bits_in_any_batch)
{
	check_kq_packed_any_batch(test_failed_, TENSOR_TYPE_Q5_K);
}

TEST(q5_k_packed_row_dequantizes_like_the_file)
{
	check_kq_packed_rows(test_failed_, TENSOR_TYPE_Q5_K);
}

/* ---- Q6_K packed at load into 8-row panels (repack.c, gemm_q6_k_p8) ---- */

/* As q4_k_rows_and_panels: random bytes (every level and int8 scale,
 * -128 included), small random d; row 0's first block at the extremes
 * (every level 63, every scale -128). */
static void q6_k_rows_and_panels(int64_t nr, int64_t n, unsigned char **w, size_t *ws, void **pw)
{
	*ws = tensor_type_row_size(TENSOR_TYPE_Q6_K, n);
	*w = malloc(*ws * nr);
	for (int64_t r = 0; r < nr; r++)
		for (int64_t b = 0; b < n / QK_K; b++) {
			struct block_q6_k *k = (struct block_q6_k *)(*w + r * *ws) + b;
			unsigned char *raw = (unsigned char *)k;
			for (size_t i = 0; i < sizeof *k; i++)
				raw[i] = (unsigned char)(rng_next() >> 32);
			k->d = tensor_f32_to_f16(frand() * 1e-3f);
			if (r == 0 && b == 0) {
				memset(k->scales, 0x80, sizeof k->scales);
				memset(k->ql, 0xFF, sizeof k->ql);
				memset(k->qh, 0xFF, sizeof k->qh);
			}
		}
	*pw = malloc(cpu_q6_k_p8_bytes(nr, n));
	int64_t np = (nr + 7) / 8;
	cpu_q6_k_p8_pack(*w, *ws, nr, n, 0, np / 2, *pw);
	cpu_q6_k_p8_pack(*w, *ws, nr, n, np / 2, np, *pw);
}

TEST(gemm_q6_k_packed_matches_reference_bit_for_bit)
{
	check_kq_packed_bit_for_bit(test_failed_, TENSOR_TYPE_Q6_K);
}

TEST(q6_k_packed_row_dequantizes_like_the_file)
{
	check_kq_packed_rows(test_failed_, TENSOR_TYPE_Q6_K);
}

/* ---- IQ4_XS packed at load into 8-row panels (repack.c, gemm_iq4_xs_p8) ---- */

/* As q4_k_rows_and_panels: random bytes (every nibble and 6-bit scale),
 * small random d; row 0's first block has every level at 113 and every
 * scale at 31, row 1's every level at -127 and every scale at -32 (the
 * largest sums of either sign, and against tokens 0 and 1 the largest
 * level + 128 sums). */
static void iq4_xs_rows_and_panels(int64_t nr, int64_t n, unsigned char **w, size_t *ws, void **pw)
{
	*ws = tensor_type_row_size(TENSOR_TYPE_IQ4_XS, n);
	*w = malloc(*ws * nr);
	for (int64_t r = 0; r < nr; r++)
		for (int64_t b = 0; b < n / QK_K; b++) {
			struct block_iq4_xs *k = (struct block_iq4_xs *)(*w + r * *ws) + b;
			unsigned char *raw = (unsigned char *)k;
			for (size_t i = 0; i < sizeof *k; i++)
				raw[i] = (unsigned char)(rng_next() >> 32);
			k->d = tensor_f32_to_f16(frand() * 1e-3f);
			if (r < 2 && b == 0) {
				/* scale 31: 63 in 6 bits; -32: 0 */
				k->scales_h = r == 0 ? 0xFFFF : 0;
				memset(k->scales_l, r == 0 ? 0xFF : 0, sizeof k->scales_l);
				memset(k->qs, r == 0 ? 0xFF : 0, sizeof k->qs);
			}
		}
	*pw = malloc(cpu_iq4_xs_p8_bytes(nr, n));
	int64_t np = (nr + 7) / 8;
	cpu_iq4_xs_p8_pack(*w, *ws, nr, n, 0, np / 2, *pw);
	cpu_iq4_xs_p8_pack(*w, *ws, nr, n, np / 2, np, *pw);
}

TEST(gemm_iq4_xs_packed_matches_reference_bit_for_bit)
{
	check_kq_packed_bit_for_bit(test_failed_, TENSOR_TYPE_IQ4_XS);
}

TEST(gemm_iq4_xs_packed_same_bits_in_any_batch)
{
	check_kq_packed_any_batch(test_failed_, TENSOR_TYPE_IQ4_XS);
}

TEST(iq4_xs_packed_row_dequantizes_like_the_file)
{
	check_kq_packed_rows(test_failed_, TENSOR_TYPE_IQ4_XS);
}

TEST(gemm_f16)
{
	init_sets();
	check_gemm(test_failed_, TENSOR_TYPE_F16, 64);
	check_gemm(test_failed_, TENSOR_TYPE_F16, 1000); /* not a multiple of 8: the scalar tail */
}

TEST(gemm_f32)
{
	init_sets();
	check_gemm(test_failed_, TENSOR_TYPE_F32, 64);
	check_gemm(test_failed_, TENSOR_TYPE_F32, 1003);
}

TEST(gemm_bf16)
{
	init_sets();
	check_gemm(test_failed_, TENSOR_TYPE_BF16, 64);
	check_gemm(test_failed_, TENSOR_TYPE_BF16, 1000); /* the scalar tail */
}

TEST(gemm_q4_k)
{
	init_sets();
	check_gemm(test_failed_, TENSOR_TYPE_Q4_K, 256);
	check_gemm(test_failed_, TENSOR_TYPE_Q4_K, 2048);
}

TEST(gemm_q6_k)
{
	init_sets();
	check_gemm(test_failed_, TENSOR_TYPE_Q6_K, 256);
	check_gemm(test_failed_, TENSOR_TYPE_Q6_K, 2048);
}

TEST(gemm_new_types)
{
	init_sets();
	static const uint32_t t32[] = { TENSOR_TYPE_Q4_1, TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_1,
		                        TENSOR_TYPE_IQ4_NL };
	static const uint32_t t256[] = { TENSOR_TYPE_Q2_K, TENSOR_TYPE_Q3_K, TENSOR_TYPE_Q5_K,
		                         TENSOR_TYPE_IQ4_XS };
	for (size_t i = 0; i < sizeof t32 / sizeof t32[0]; i++) {
		check_gemm(test_failed_, t32[i], 64);
		check_gemm(test_failed_, t32[i], 352);
		check_gemm(test_failed_, t32[i], 2048);
	}
	for (size_t i = 0; i < sizeof t256 / sizeof t256[0]; i++) {
		check_gemm(test_failed_, t256[i], 256);
		check_gemm(test_failed_, t256[i], 2048);
	}
}

/* A row of random values with a few large ones, exact ties, a zero block and a
 * block whose largest magnitude is negative. */
static void act_input(float *x, int n)
{
	for (int i = 0; i < n; i++) x[i] = frand() * (i % 97 == 0 ? 10.0f : 1.0f);
	for (int i = 0; i < 32; i++)
		x[i] = (i == 0) ? 127.0f : (float)((i % 20) - 10) + (i % 2 ? 0.5f : -0.5f);
	for (int i = 256; i < 512; i++) x[i] = 0.0f;
	for (int i = 512; i < 768; i++) x[i] = (float)((i % 40) - 20) * 0.5f;
	x[600] = -127.0f; /* iscale = 1: the halves are exact ties */
}

TEST(act_q8_k_and_q8_1_match_reference_bit_for_bit)
{
	init_sets();
	enum { N = 4096 };
	static float x[N];
	act_input(x, N);
	for (int a = CPU_ACT_Q8_1; a <= CPU_ACT_Q8_K; a++) {
		size_t bytes = cpu_act_row_bytes((enum cpu_act)a, N);
		unsigned char *ref = calloc(1, bytes), *got = malloc(bytes);
		cpu_kernels_ref.act[a](x, ref, N);
		for (int s = 0; s < n_sets; s++) {
			memset(got, 0, bytes);
			sets[s]->act[a](x, got, N);
			size_t used = a == CPU_ACT_Q8_K ? N / QK_K * sizeof(struct block_q8_k)
			                                : N / 32 * sizeof(struct block_q8_1);
			if (memcmp(ref, got, used) != 0)
				fprintf(stderr, "act %d of %s differs from the reference\n", a,
				        sets[s]->name);
			CHECK(memcmp(ref, got, used) == 0);
		}
		free(ref);
		free(got);
	}
}

TEST(act_q8_k_follows_ggml_recipe)
{
	enum { N = 1024 };
	static float x[N];
	act_input(x, N);
	struct block_q8_k y[N / QK_K];
	cpu_kernels_ref.act[CPU_ACT_Q8_K](x, y, N);
	/* block 2: max = -127 (x[600]), iscale = 1, so q = round-half-even(x) and d = 1 */
	CHECK(y[2].d == 1.0f);
	for (int i = 512; i < 768; i++) CHECK_INT_EQ(y[2].qs[i - 512], (int)nearbyintf(x[i]));
	/* block 1: zeros */
	CHECK(y[1].d == 0.0f);
	for (int g = 0; g < 16; g++) CHECK_INT_EQ(y[1].bsums[g], 0);
	/* block 0: largest |x| is 127 at index 0 (positive), so iscale = -1, d = -1 */
	CHECK(y[0].d == -1.0f);
	CHECK_INT_EQ(y[0].qs[0], -127);
	for (int b = 0; b < N / QK_K; b++)
		for (int g = 0; g < 16; g++) {
			int s = 0;
			for (int l = 0; l < 16; l++) s += y[b].qs[16 * g + l];
			CHECK_INT_EQ(y[b].bsums[g], s);
		}
}

/* Activations as floats: what the quantized row stands for. */
static void act_dequantize(enum cpu_act a, const void *row, float *out, int64_t n)
{
	if (a == CPU_ACT_Q8_0) {
		tensor_row_dequantize(TENSOR_TYPE_Q8_0, row, out, n);
	} else if (a == CPU_ACT_Q8_1) {
		const struct block_q8_1 *b = row;
		for (int64_t i = 0; i < n; i++)
			out[i] = tensor_f16_to_f32(b[i / 32].d) * (float)b[i / 32].qs[i % 32];
	} else {
		const struct block_q8_k *b = row;
		for (int64_t i = 0; i < n; i++)
			out[i] = b[i / QK_K].d * (float)b[i / QK_K].qs[i % QK_K];
	}
}

TEST(gemm_reference_matches_dequantized_dot)
{
	/* Each quantized type's reference kernel (integer sums per block, in
	 * the activation format of cpu_act_for) against a double dot of the
	 * dequantized weights and activations. Q8_1's s is d * sum(q)
	 * rounded to fp16, so Q4_1/Q5_1 get that rounding's share in the
	 * tolerance: |m| * |s| * 2^-11 per block. */
	static const uint32_t types[] = {
		TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q4_1, TENSOR_TYPE_Q5_0,   TENSOR_TYPE_Q5_1,
		TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q2_K, TENSOR_TYPE_Q3_K,   TENSOR_TYPE_Q4_K,
		TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q6_K, TENSOR_TYPE_IQ4_NL, TENSOR_TYPE_IQ4_XS
	};
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		uint32_t type = types[k];
		enum { N = 512 };
		float wf[N], xf[N], wd[N], xd[N], y;
		for (int i = 0; i < N; i++) wf[i] = frand(), xf[i] = frand();
		unsigned char w[N * 2];
		REQUIRE(tensor_type_row_size(type, N) <= sizeof w);
		REQUIRE(tensor_row_quantize(type, wf, w, N) == 0);
		REQUIRE(tensor_row_dequantize(type, w, wd, N) == 0);
		enum cpu_act a = cpu_act_for(type);
		size_t xs = cpu_act_row_bytes(a, N);
		unsigned char *x = malloc(xs);
		cpu_kernels_ref.act[a](xf, x, N);
		act_dequantize(a, x, xd, N);
		double want = 0, mag = 0, stol = 0;
		for (int i = 0; i < N; i++)
			want += (double)wd[i] * xd[i], mag += fabs(wd[i] * xd[i]);
		if (a == CPU_ACT_Q8_1)
			for (int b = 0; b < N / 32; b++) {
				const struct block_q8_1 *xb = (const struct block_q8_1 *)x + b;
				uint16_t
				        m; /* the weight block's min: bytes 2..3 of Q4_1 and Q5_1 */
				memcpy(&m, w + b * tensor_type_block_bytes(type) + 2, 2);
				stol += fabs(tensor_f16_to_f32(m)) *
				        fabs(tensor_f16_to_f32(xb->s)) / 2048;
			}
		cpu_kernels_gemm(&cpu_kernels_ref, type)(N, w, 0, 1, x, 0, 1, &y, 1);
		if (fabs(y - want) > 1e-5 * mag + 1e-6 + stol)
			fprintf(stderr, "%s: %.9g vs %.9g\n", tensor_type_name(type), y, want);
		CHECK(fabs(y - want) <= 1e-5 * mag + 1e-6 + stol);
		free(x);
	}
}

TEST(attention_dot_and_axpy)
{
	init_sets();
	float a[131], b[131], y0[131], y1[131];
	for (int i = 0; i < 131; i++) a[i] = frand(), b[i] = frand(), y0[i] = y1[i] = frand();
	for (int s = 0; s < n_sets; s++) {
		for (int n = 1; n <= 131; n += 13) {
			double mag = 0;
			for (int i = 0; i < n; i++) mag += fabs(a[i] * b[i]);
			CHECK_NEAR(sets[s]->dot_f32(n, a, b), cpu_kernels_ref.dot_f32(n, a, b),
			           1e-6 * mag + 1e-7);
		}
		uint16_t h[131];
		for (int i = 0; i < 131; i++) h[i] = tensor_f32_to_f16(b[i]);
		for (int n = 1; n <= 131; n += 13)
			CHECK_NEAR(sets[s]->dot_f16(n, a, h), cpu_kernels_ref.dot_f16(n, a, h),
			           1e-5);
		float r16[131], y16[131];
		memcpy(r16, y0, sizeof y0);
		memcpy(y16, y0, sizeof y0);
		sets[s]->axpy_f16(131, -0.61f, h, y16);
		cpu_kernels_ref.axpy_f16(131, -0.61f, h, r16);
		for (int i = 0; i < 131; i++) CHECK_NEAR(y16[i], r16[i], 1e-6);
		memcpy(y1, y0, sizeof y0);
		float r[131];
		memcpy(r, y0, sizeof y0);
		sets[s]->axpy_f32(131, 0.37f, a, y1);
		cpu_kernels_ref.axpy_f32(131, 0.37f, a, r);
		for (int i = 0; i < 131; i++) CHECK_NEAR(y1[i], r[i], 1e-6);
	}
}

TEST(attention_score_and_mix_over_rows)
{
	/* Rows of a cache page (stride > hd), 1..attn_qb queries, head sizes with and
	 * without a scalar tail and whole strips, odd and even row counts. */
	init_sets();
	enum { MAXN = 19, STRIDE = 300, QB = CPU_ATTN_QB, LD = 24 };
	static float r32[MAXN * STRIDE], q[QB * STRIDE], p[QB * LD];
	static uint16_t r16[MAXN * STRIDE];
	for (int i = 0; i < MAXN * STRIDE; i++)
		r32[i] = frand(), r16[i] = tensor_f32_to_f16(frand());
	for (int i = 0; i < QB * STRIDE; i++) q[i] = frand();
	for (int i = 0; i < QB * LD; i++) p[i] = (frand() + 1.0f) / MAXN;
	int hds[] = { 8, 64, 100, 128, 200 };
	for (int s = 0; s < n_sets; s++)
		for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
			for (int g = 1; g <= sets[s]->attn_qb; g++)
				for (int n = 1; n <= MAXN; n += 3) {
					int hd = hds[hi];
					static float a[QB * LD], b[QB * LD], oa[QB * STRIDE],
					        ob[QB * STRIDE];
					sets[s]->score_f32(hd, g, q, STRIDE, r32, STRIDE, n, 0.125f,
					                   a, LD);
					cpu_kernels_ref.score_f32(hd, g, q, STRIDE, r32, STRIDE, n,
					                          0.125f, b, LD);
					for (int j = 0; j < g; j++)
						for (int i = 0; i < n; i++)
							CHECK_NEAR(a[j * LD + i], b[j * LD + i],
							           1e-5);
					sets[s]->score_f16(hd, g, q, STRIDE, r16, STRIDE, n, 0.125f,
					                   a, LD);
					cpu_kernels_ref.score_f16(hd, g, q, STRIDE, r16, STRIDE, n,
					                          0.125f, b, LD);
					for (int j = 0; j < g; j++)
						for (int i = 0; i < n; i++)
							CHECK_NEAR(a[j * LD + i], b[j * LD + i],
							           1e-5);
					memcpy(oa, q, sizeof oa);
					memcpy(ob, q, sizeof ob);
					sets[s]->mix_f32(hd, g, p, LD, r32, STRIDE, n, oa, STRIDE);
					cpu_kernels_ref.mix_f32(hd, g, p, LD, r32, STRIDE, n, ob,
					                        STRIDE);
					for (int j = 0; j < g * STRIDE; j++)
						CHECK_NEAR(oa[j], ob[j], 1e-6);
					sets[s]->mix_f16(hd, g, p, LD, r16, STRIDE, n, oa, STRIDE);
					cpu_kernels_ref.mix_f16(hd, g, p, LD, r16, STRIDE, n, ob,
					                        STRIDE);
					for (int j = 0; j < g * STRIDE; j++)
						CHECK_NEAR(oa[j], ob[j], 1e-6);
				}
}

TEST(attention_bits_do_not_depend_on_the_batch)
{
	/* What prompt lookup's exactness rests on (cpu.h): a (query, row) score
	 * is the same bits whether the query comes alone (decode) or among
	 * attn_qb (prefill) and wherever the row sits in the run, and a mix is
	 * the set's own axpy per row, in row order. */
	init_sets();
	enum { N = 13, HD = 136, STRIDE = 160, QB = CPU_ATTN_QB, LD = 16 };
	static float q[QB * HD], p[QB * LD], all[QB * LD], one[LD], oa[QB * HD], ob[QB * HD];
	static uint16_t r16[N * STRIDE];
	for (int i = 0; i < N * STRIDE; i++) r16[i] = tensor_f32_to_f16(frand());
	for (int i = 0; i < QB * HD; i++) q[i] = frand();
	for (int i = 0; i < QB * LD; i++) p[i] = (frand() + 1.0f) / N;
	for (int s = 0; s < n_sets; s++) {
		int g = sets[s]->attn_qb;
		sets[s]->score_f16(HD, g, q, HD, r16, STRIDE, N, 0.125f, all, LD);
		for (int j = 0; j < g; j++)
			for (int i = 0; i < N; i++) {
				sets[s]->score_f16(HD, 1, q + j * HD, HD, r16 + i * STRIDE, STRIDE,
				                   1, 0.125f, one, LD);
				CHECK(memcmp(&one[0], &all[j * LD + i], sizeof one[0]) == 0);
			}
		memcpy(oa, q, sizeof oa);
		memcpy(ob, q, sizeof ob);
		sets[s]->mix_f16(HD, g, p, LD, r16, STRIDE, N, oa, HD);
		for (int j = 0; j < g; j++)
			for (int i = 0; i < N; i++)
				sets[s]->axpy_f16(HD, p[j * LD + i], r16 + i * STRIDE, ob + j * HD);
		CHECK(memcmp(oa, ob, (size_t)g * HD * sizeof oa[0]) == 0);
	}
}

/* A q8_0 cache's rows as the pool lays them out: row i of head 1 of 3 at
 * r + i * stride bytes, values from a spread of magnitudes (each block its
 * own d), quantized by cpu_q8_0_quantize as the backend stores them. */
static void q8_rows(void *r, int64_t n, int64_t hd, int64_t stride)
{
	float x[1024]; /* up to BACKEND_MAX_HEAD_DIM */
	for (int64_t i = 0; i < n; i++) {
		for (int64_t e = 0; e < hd; e++) x[e] = frand() * (e % 37 == 0 ? 4.0f : 1.0f);
		cpu_q8_0_quantize(x, (char *)r + i * stride, hd);
	}
}

/* |terms| of the reference's score (the bound of any summation order). */
static float q8_score_bound(int64_t hd, const void *q, const void *r)
{
	const struct block_q8_0 *qb = q, *rb = r;
	float t = 0;
	for (int64_t b = 0; b < hd / 32; b++) {
		int32_t sum = 0;
		for (int e = 0; e < 32; e++) sum += abs(qb[b].qs[e] * rb[b].qs[e]);
		t += (float)sum * tensor_f16_to_f32(qb[b].d) * tensor_f16_to_f32(rb[b].d);
	}
	return t;
}

TEST(attention_q8_0_score_and_mix_match_reference)
{
	/* cpu.h's score_q8 / mix_q8 in every set against the reference: head
	 * sizes of 1..8 blocks, 1..attn_qb queries, runs of 1..19 rows a page
	 * apart. Scores: the blocks' integer dots are exact everywhere, only the
	 * order of the float terms differs: within 2e-6 * sum|terms| + 1e-7.
	 * Mix: the same bits. Nothing past the g queries' and n rows' outputs
	 * is written. */
	init_sets();
	enum { MAXN = 19, QB = CPU_ATTN_QB, LD = 24, OS = 272, HB = 256 / 32 * 34 };
	enum { STRIDE = 3 * HB }; /* three KV heads a slot; these rows are head 1 */
	static char r[MAXN * STRIDE], q[QB * HB];
	static float p[QB * LD];
	q8_rows(r + HB, MAXN, 256, STRIDE);
	q8_rows(q, QB, 256, HB);
	for (int i = 0; i < QB * LD; i++) p[i] = (frand() + 1.0f) / MAXN;
	int hds[] = { 32, 64, 96, 128, 256 };
	int checked = 0;
	for (int s = 0; s < n_sets; s++) {
		CHECK(sets[s]->score_q8 != NULL && sets[s]->mix_q8 != NULL);
		for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
			for (int g = 1; g <= sets[s]->attn_qb; g++)
				for (int n = 1; n <= MAXN; n += 3) {
					int hd = hds[hi];
					static float a[QB * LD], b[QB * LD], oa[QB * OS],
					        ob[QB * OS];
					for (int i = 0; i < QB * LD; i++) a[i] = b[i] = -7.0f;
					sets[s]->score_q8(hd, g, q, HB, r + HB, STRIDE, n, 0.125f,
					                  a, LD);
					cpu_kernels_ref.score_q8(hd, g, q, HB, r + HB, STRIDE, n,
					                         0.125f, b, LD);
					for (int j = 0; j < QB; j++)
						for (int i = 0; i < LD; i++) {
							if (j >= g || i >= n) {
								CHECK(a[j * LD + i] == -7.0f);
								continue;
							}
							float tol =
							        2e-6f * 0.125f *
							                q8_score_bound(
							                        hd, q + j * HB,
							                        r + HB +
							                                i * STRIDE) +
							        1e-7f;
							CHECK_NEAR(a[j * LD + i], b[j * LD + i],
							           tol);
							checked++;
						}
					for (int i = 0; i < QB * OS; i++) oa[i] = ob[i] = frand();
					sets[s]->mix_q8(hd, g, p, LD, r + HB, STRIDE, n, oa, OS);
					cpu_kernels_ref.mix_q8(hd, g, p, LD, r + HB, STRIDE, n, ob,
					                       OS);
					CHECK(memcmp(oa, ob, sizeof oa) == 0);
				}
	}
	if (n_sets) CHECK(checked > 1000);
}

TEST(attention_q8_0_reference_is_the_dequantized_attention)
{
	/* The reference itself against the plain meaning: a score is scale *
	 * q'.k' and a mix adds p * v' with q', k', v' the dequantized blocks
	 * (in double here). */
	enum { HD = 96, N = 5, HB = HD / 32 * 34 };
	static char r[N * HB], q[HB];
	float s[N], p[N], o[HD] = { 0 }, rf[N][HD], qf[HD];
	q8_rows(r, N, HD, HB);
	q8_rows(q, 1, HD, HB);
	for (int i = 0; i < N; i++) {
		p[i] = (frand() + 1.0f) / N;
		REQUIRE(tensor_row_dequantize(TENSOR_TYPE_Q8_0, r + i * HB, rf[i], HD) == 0);
	}
	REQUIRE(tensor_row_dequantize(TENSOR_TYPE_Q8_0, q, qf, HD) == 0);
	cpu_kernels_ref.score_q8(HD, 1, q, HB, r, HB, N, 0.5f, s, N);
	cpu_kernels_ref.mix_q8(HD, 1, p, N, r, HB, N, o, HD);
	for (int i = 0; i < N; i++) {
		double want = 0, mag = 0;
		for (int e = 0; e < HD; e++) {
			want += (double)qf[e] * rf[i][e];
			mag += fabs((double)qf[e] * rf[i][e]);
		}
		CHECK_NEAR(s[i], 0.5 * want, 1e-6 * mag + 1e-7);
	}
	for (int e = 0; e < HD; e++) {
		double want = 0, mag = 0;
		for (int i = 0; i < N; i++) {
			want += (double)p[i] * rf[i][e];
			mag += fabs((double)p[i] * rf[i][e]);
		}
		CHECK_NEAR(o[e], want, 1e-6 * mag + 1e-7);
	}
}

/* A set's score_q8 / mix_q8 against the reference, tolerance 0: head sizes
 * of 1..32 blocks, whole and partial groups of 4 blocks; runs across 4- and
 * 8-row groups and 16-row tables; the cache's rows a slot of several heads
 * apart; nothing written past the g queries' and n rows' outputs. */
static void q8_same_bits_as_reference(int *test_failed_, const struct cpu_kernels *z)
{
	enum { MAXN = 41, QB = CPU_ATTN_QB, LD = 48, HB = 1024 / 32 * 34, OS = 1040 };
	enum { STRIDE = 2 * HB + 6 }; /* this head and another a slot, rows not 64-aligned */
	static char r[MAXN * STRIDE], q[QB * HB];
	static float p[QB * LD], a[QB * LD], b[QB * LD], oa[QB * OS], ob[QB * OS];
	q8_rows(r + HB, MAXN, 1024, STRIDE);
	q8_rows(q, QB, 1024, HB);
	/* a block of zeros (d = 0) and one of the extremes */
	memset(r + HB + 3 * STRIDE + 34, 0, 34);
	for (int e = 0; e < 32; e++) r[HB + 5 * STRIDE + 2 + e] = (char)(e % 2 ? 127 : -127);
	for (int i = 0; i < QB * LD; i++) p[i] = (frand() + 1.0f) / MAXN;
	const struct cpu_kernels *ref = &cpu_kernels_ref;
	int hds[] = { 32, 64, 96, 128, 160, 256, 224, 1024 },
	    ns[] = { 1, 3, 4, 5, 15, 16, 17, 33, MAXN };
	int checked = 0;
	for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
		for (int g = 1; g <= z->attn_qb; g++)
			for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
				int hd = hds[hi], n = ns[ni];
				for (int i = 0; i < QB * LD; i++) a[i] = b[i] = -7.0f;
				z->score_q8(hd, g, q, HB, r + HB, STRIDE, n, 0.125f, a, LD);
				ref->score_q8(hd, g, q, HB, r + HB, STRIDE, n, 0.125f, b, LD);
				CHECK(memcmp(a, b, sizeof a) == 0);
				for (int i = 0; i < QB * OS; i++) oa[i] = ob[i] = frand();
				z->mix_q8(hd, g, p, LD, r + HB, STRIDE, n, oa, OS);
				ref->mix_q8(hd, g, p, LD, r + HB, STRIDE, n, ob, OS);
				CHECK(memcmp(oa, ob, sizeof oa) == 0);
				checked++;
			}
	CHECK(checked == 8 * z->attn_qb * 9);
}

TEST(attention_q8_0_zmm_same_bits_as_reference)
{
	/* The AVX-512 set's score_q8 / mix_q8 (kern_avx512_q8.c: four rows at a
	 * time, blocks two to a zmm, scales gathered, weights tabled per 16
	 * rows) add the same float terms in the reference's order, so both are
	 * its bits. */
	if (!cpu_has_avx512()) {
		printf("  (no AVX-512 on this CPU: skipped)\n");
		return;
	}
	q8_same_bits_as_reference(test_failed_, &cpu_kernels_avx512);
}

/* A set's score_t_q8 / mix_t_q8 (a prompt over a q8_0 cache, the queries
 * in the lanes) against the reference's row-major score_q8 / mix_q8,
 * tolerance 0: head sizes 32..256, 1..32 queries (lanes left unused), runs
 * of 1..41 rows a slot of several heads apart; nothing written past the n
 * rows' scores or the hd values' outputs. */
static void q8_lanes_same_bits_as_reference(int *test_failed_, const struct cpu_kernels *z)
{
	const struct cpu_kernels *ref = &cpu_kernels_ref;
	enum { MAXN = 41, QT = CPU_ATTN_QT, HD = 256, HB = HD / 32 * 34, STRIDE = 2 * HB + 6 };
	static char r[MAXN * STRIDE], q[QT * HB];
	static struct cpu_q8_lanes ql[HD / 32];
	static float st[(MAXN + 1) * QT], row[MAXN], pt[MAXN * QT], p[QT * MAXN], o0[(HD + 8) * QT],
	        oa[(HD + 8) * QT], ob[QT * HD];
	q8_rows(r + HB, MAXN, HD, STRIDE);
	q8_rows(q, QT, HD, HB);
	memset(r + HB + 3 * STRIDE + 34, 0, 34); /* a block of zeros (d = 0) */
	for (int e = 0; e < 32; e++) r[HB + 5 * STRIDE + 2 + e] = (char)(e % 2 ? 127 : -127);
	for (int i = 0; i < MAXN * QT; i++) pt[i] = (frand() + 1.0f) / MAXN;
	for (int i = 0; i < (HD + 8) * QT; i++) o0[i] = frand();
	int gs[] = { 1, 2, 7, 16, 17, 31, 32 }, checked = 0;
	for (int hd = 32; hd <= HD; hd += 32)
		for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++)
			for (int n = 1; n <= MAXN; n += n < 6 ? 1 : 5) {
				int g = gs[gi];
				cpu_q8_lanes_pack(q, HB, g, hd, ql);
				for (int i = 0; i < (MAXN + 1) * QT; i++) st[i] = -7.0f;
				z->score_t_q8(hd, ql, r + HB, STRIDE, n, 0.125f, st);
				for (int j = 0; j < QT; j++) {
					if (j < g)
						ref->score_q8(hd, 1, q + j * HB, HB, r + HB, STRIDE,
						              n, 0.125f, row, MAXN);
					for (int i = 0; i < n; i++)
						CHECK(memcmp(&st[i * QT + j],
						             j < g ? &row[i] : &(float){ 0 },
						             sizeof(float)) == 0);
				}
				for (int j = 0; j < QT; j++) CHECK(st[n * QT + j] == -7.0f);
				/* mix: lanes past g with weights too (the kernel does not
				 * know g), each lane against the reference's query */
				memcpy(oa, o0, sizeof oa);
				z->mix_t_q8(hd, pt, r + HB, STRIDE, n, oa);
				for (int j = 0; j < QT; j++) {
					for (int i = 0; i < n; i++)
						p[j * MAXN + i] = pt[i * QT + j];
					for (int c = 0; c < hd; c++)
						ob[j * HD + c] = o0[c * QT + j];
				}
				ref->mix_q8(hd, QT, p, MAXN, r + HB, STRIDE, n, ob, HD);
				for (int j = 0; j < QT; j++)
					for (int c = 0; c < hd; c++)
						CHECK(memcmp(&oa[c * QT + j], &ob[j * HD + c],
						             sizeof(float)) == 0);
				for (int i = hd * QT; i < (HD + 8) * QT; i++) CHECK(oa[i] == o0[i]);
				checked++;
			}
	CHECK(checked == 8 * 7 * 13);
}

TEST(attention_q8_0_queries_in_lanes_same_bits_as_reference)
{
	/* Every set this CPU runs that has them: the AVX-512 set's
	 * (kern_avx512_q8.c) and the AVX2 sets' (kern_avx2_q8.c: sign and
	 * vpmaddubsw, or vpdpbusd with AVX-VNNI), an AVX-512 CPU running all. */
	init_sets();
	int ran = 0;
	for (int s = 0; s < n_sets; s++) {
		if (!sets[s]->score_t_q8) continue;
		printf("  %s\n", sets[s]->name);
		q8_lanes_same_bits_as_reference(test_failed_, sets[s]);
		ran++;
	}
	if (!ran) printf("  (no set with score_t_q8 runs on this CPU: skipped)\n");
}

TEST(attention_q8_0_lanes_softmax_same_bits_as_rows)
{
	/* The rest of a q8_0 prompt's lanes path: softmax_t without fp16
	 * rounding gives each lane the bits the set's row softmax gives that
	 * query (its causal range; 0 past it), so with score_t_q8 / mix_t_q8
	 * the reference's bits (above) a prompt's attention output is the same
	 * bits through the lanes as through the rows (attn.c). */
	init_sets();
	enum { MAXN = 70, QT = CPU_ATTN_QT };
	static float s0[MAXN * QT], st[MAXN * QT], row[MAXN];
	for (int i = 0; i < MAXN * QT; i++) s0[i] = frand() * 30.0f;
	int ran = 0;
	for (int s = 0; s < n_sets; s++) {
		if (!sets[s]->softmax_t) continue;
		for (int n = 1; n <= MAXN; n += n < 20 ? 1 : 7) {
			int32_t last[QT];
			for (int j = 0; j < QT; j++) last[j] = j < 23 ? (j * 7) % (n + 2) - 1 : -1;
			memcpy(st, s0, sizeof st);
			sets[s]->softmax_t(st, n, last, false);
			for (int j = 0; j < QT; j++) {
				int m = last[j] + 1 < n ? last[j] + 1 : n;
				for (int i = 0; i < m; i++) row[i] = s0[i * QT + j];
				if (m > 0) sets[s]->softmax(row, m, false);
				for (int i = 0; i < n; i++)
					CHECK(memcmp(&st[i * QT + j],
					             i < m ? &row[i] : &(float){ 0 },
					             sizeof(float)) == 0);
			}
			ran++;
		}
	}
	CHECK(ran > 0);
}

TEST(attention_q8_0_ymm_same_bits_as_reference)
{
	/* The AVX2 sets' score_q8 / mix_q8 (kern_avx2_q8.c: eight rows a pass,
	 * a row a lane, the block dots folded by a hadd tree; weights tabled
	 * per 8 rows), run here on any CPU that has the instructions (an
	 * AVX-512 one too): the reference's bits. */
	/* by name: a -Dcpu_kernels=host build has no table for the sets it skipped */
	const struct cpu_kernels *ymm[2] = { cpu_kernels_named("avx2"),
		                             cpu_kernels_named("avx2-vnni") };
	int ran = 0;
	for (int i = 0; i < 2; i++) {
		if (!ymm[i] || !ymm[i]->score_q8) continue; /* not on this CPU, or not compiled */
		printf("  %s\n", ymm[i]->name);
		q8_same_bits_as_reference(test_failed_, ymm[i]);
		ran++;
	}
	if (!ran) printf("  (no AVX2 set compiled for this CPU: skipped)\n");
}

TEST(attention_q8_0_bits_do_not_depend_on_the_batch)
{
	/* As attention_bits_do_not_depend_on_the_batch, for score_q8: a query
	 * alone (decode) and among attn_qb (a prompt block, several entries on
	 * shared pages) gets the same bits for each row wherever the run starts. */
	init_sets();
	enum { N = 13, HD = 128, HB = HD / 32 * 34, QB = CPU_ATTN_QB, LD = 16 };
	static char r[N * HB], q[QB * HB];
	static float all[QB * LD], one[LD];
	q8_rows(r, N, HD, HB);
	q8_rows(q, QB, HD, HB);
	for (int s = 0; s < n_sets; s++) {
		int g = sets[s]->attn_qb;
		sets[s]->score_q8(HD, g, q, HB, r, HB, N, 0.125f, all, LD);
		for (int j = 0; j < g; j++)
			for (int i = 0; i < N; i++) {
				sets[s]->score_q8(HD, 1, q + j * HB, HB, r + i * HB, HB, 1, 0.125f,
				                  one, LD);
				CHECK(memcmp(&one[0], &all[j * LD + i], sizeof one[0]) == 0);
			}
	}
}

TEST(attention_queries_in_lanes_match_reference)
{
	/* A prompt's path (cpu.h score_t_f16, softmax_t, mix_t_f16): each set
	 * that has it against the reference's, and the reference's against
	 * its row-major score and softmax on the same queries, so the two
	 * layouts mean the same. Row counts across the sets' 8- and 16-row
	 * tiles, head sizes with a partial vector, lanes left unused. */
	init_sets();
	enum { MAXN = 37, STRIDE = 300, QT = CPU_ATTN_QT };
	static uint16_t r16[MAXN * STRIDE];
	static float qt[STRIDE * QT], q[QT * STRIDE], s0[MAXN * QT], st[MAXN * QT], sr[MAXN * QT],
	        row[MAXN], o0[STRIDE * QT], oa[STRIDE * QT], ob[STRIDE * QT];
	for (int i = 0; i < MAXN * STRIDE; i++) r16[i] = tensor_f32_to_f16(frand());
	for (int i = 0; i < STRIDE * QT; i++) o0[i] = frand();
	const struct cpu_kernels *r = &cpu_kernels_ref;
	int hds[] = { 8, 64, 100, 128, 200 }, ns[] = { 1, 7, 8, 9, 16, 17, 33, MAXN };
	for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
		for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
			int hd = hds[hi], n = ns[ni], g = ni % 2 ? QT : 13;
			int32_t last[QT];
			for (int j = 0; j < QT; j++) {
				last[j] = j < g ? (j * 5) % (n + 3) - 1 : -1; /* -1 .. n + 1 */
				for (int k = 0; k < hd; k++)
					q[j * STRIDE + k] = qt[k * QT + j] =
					        j < g ? frand() * 4 : 0;
			}
			/* the reference's lanes against its rows */
			r->score_t_f16(hd, qt, r16, STRIDE, n, 0.125f, s0);
			for (int j = 0; j < QT; j++) {
				r->score_f16(hd, 1, q + j * STRIDE, STRIDE, r16, STRIDE, n, 0.125f,
				             row, MAXN);
				for (int i = 0; i < n; i++)
					CHECK_NEAR(s0[i * QT + j], row[i], 1e-6);
			}
			memcpy(sr, s0, sizeof sr);
			r->softmax_t(sr, n, last, true);
			for (int j = 0; j < QT; j++) {
				int m = last[j] + 1 < n ? last[j] + 1 : n;
				for (int i = 0; i < m; i++) row[i] = s0[i * QT + j];
				if (m > 0) r->softmax(row, m, true);
				for (int i = 0; i < n; i++)
					CHECK_NEAR(sr[i * QT + j], i < m ? row[i] : 0.0f, 0);
			}
			memcpy(ob, o0, sizeof ob);
			r->mix_t_f16(hd, sr, r16, STRIDE, n, ob);
			for (int s = 0; s < n_sets; s++) {
				if (!sets[s]->score_t_f16) continue;
				sets[s]->score_t_f16(hd, qt, r16, STRIDE, n, 0.125f, st);
				for (int i = 0; i < n * QT; i++) CHECK_NEAR(st[i], s0[i], 1e-5);
				/* the reference's scores in, so only the softmax differs */
				memcpy(st, s0, sizeof st);
				sets[s]->softmax_t(st, n, last, true);
				for (int i = 0; i < n * QT; i++)
					CHECK_NEAR(st[i], sr[i], sr[i] / 1024 + 1e-30);
				memcpy(oa, o0, sizeof oa);
				sets[s]->mix_t_f16(hd, sr, r16, STRIDE, n, oa);
				for (int i = 0; i < hd * QT; i++) CHECK_NEAR(oa[i], ob[i], 1e-5);
				for (int i = hd * QT; i < STRIDE * QT; i++) CHECK(oa[i] == o0[i]);
			}
		}
}

TEST(softmax_matches_reference)
{
	/* Scores as attention makes them (a spread of tens of nats, so some
	 * terms underflow), lengths with and without a vector tail. A SIMD exp
	 * within 2 ulp of expf moves a probability by a few 1e-7 relative; with
	 * fp16 rounding it may land one fp16 step (2^-11 relative) the other way. */
	init_sets();
	enum { N = 600 };
	static float x[N], a[N], b[N];
	for (int i = 0; i < N; i++) x[i] = frand() * 40.0f;
	x[N / 2] = -200.0f;
	for (int s = 0; s < n_sets; s++)
		for (int f16 = 0; f16 < 2; f16++)
			for (int n = 1; n <= N; n += n < 20 ? 1 : 97) {
				memcpy(a, x, sizeof a);
				memcpy(b, x, sizeof b);
				sets[s]->softmax(a, n, f16);
				cpu_kernels_ref.softmax(b, n, f16);
				double total = 0;
				for (int i = 0; i < n; i++) {
					CHECK_NEAR(a[i], b[i],
					           b[i] * (f16 ? 1.0 / 1024 : 1e-6) + 1e-30);
					total += a[i];
				}
				CHECK_NEAR(total, 1.0, f16 ? 1e-3 : 1e-5);
			}
}

TEST(rmsnorm_same_bits_as_reference)
{
	/* The lane order is part of cpu_rmsnorm's contract, so the SIMD sets give
	 * its bits: widths with and without a vector tail, values over a wide
	 * range (squares from 1e-6 to 1e4, where a different order of the double
	 * sum would show in the float scale now and then). */
	init_sets();
	enum { N = 2051 };
	static float x[N], w[N], a[N], b[N];
	for (int i = 0; i < N; i++) {
		x[i] = frand() * (i % 5 == 0 ? 100.0f : i % 3 ? 1.0f : 1e-3f);
		w[i] = 1.0f + 0.3f * frand();
	}
	for (int s = 0; s < n_sets; s++)
		for (int n = 1; n <= N; n += n < 40 ? 1 : 203) {
			sets[s]->rmsnorm(x, w, a, n, 1e-6f);
			cpu_rmsnorm(x, w, b, n, 1e-6f);
			if (memcmp(a, b, (size_t)n * sizeof *a) != 0) {
				fprintf(stderr, "%s rmsnorm n=%d differs\n", sets[s]->name, n);
				CHECK(0);
				break;
			}
		}
	/* and it is the norm: a row of 3s and unit weights comes out all ones */
	for (int i = 0; i < 64; i++) x[i] = 3.0f, w[i] = 1.0f;
	cpu_rmsnorm(x, w, b, 64, 0.0f);
	for (int i = 0; i < 64; i++) CHECK_NEAR(b[i], 1.0, 1e-7);
}

TEST(swiglu_matches_reference)
{
	/* silu(g) * u against libm's expf: the SIMD exp is within 2 ulp of expf,
	 * a division and a product add an ulp each, so 4e-7 relative (a wrong
	 * coefficient of the polynomial is 1e-4 and up). Gates from -100 to 100
	 * (exp overflowing and underflowing inside), tails of every width, and
	 * the same bits in every set (one ymm body serves both). */
	init_sets();
	enum { N = 1000 };
	static float g[N], u[N], a[N], b[N], first[N];
	for (int i = 0; i < N; i++) {
		g[i] = frand() * (i % 7 == 0 ? 100.0f : 8.0f);
		u[i] = frand() * 2.0f;
	}
	g[1] = 0.0f, g[2] = -89.0f, g[3] = 89.0f, g[4] = -1e-30f;
	for (int s = 0; s < n_sets; s++)
		for (int n = 1; n <= N; n += n < 20 ? 1 : 141) {
			memcpy(a, g, sizeof a);
			memcpy(b, g, sizeof b);
			sets[s]->swiglu(a, u, n);
			cpu_kernels_ref.swiglu(b, u, n);
			for (int i = 0; i < n; i++)
				CHECK_NEAR(a[i], b[i], fabsf(b[i]) * 4e-7f + 1e-30f);
			for (int i = n; i < N; i++) CHECK(a[i] == g[i]); /* nothing past n */
			if (n == N && s == 0) memcpy(first, a, sizeof a);
			if (n == N && s > 0) CHECK(memcmp(first, a, sizeof a) == 0);
		}
	/* silu(1) = 1 / (1 + e^-1) = 0.7310586 */
	float one = 1.0f, two = 2.0f;
	for (int s = 0; s < n_sets; s++) {
		one = 1.0f;
		sets[s]->swiglu(&one, &two, 1);
		CHECK_NEAR(one, 2 * 0.7310585786f, 1e-6);
	}
}

TEST(rope_same_bits_as_reference)
{
	/* Both pairings, head sizes whose rotated part has a vector tail, fewer
	 * rotated dims than the head (the rest untouched), angles of a far
	 * position; against cpu_rope_apply bit for bit, and the rotation itself:
	 * a pair's length is kept. */
	init_sets();
	enum { HEADS = 3, HD = 200 };
	static float x[HEADS * HD], a[HEADS * HD], b[HEADS * HD];
	float cs[CPU_ROPE_MAX_PAIRS], sn[CPU_ROPE_MAX_PAIRS];
	for (int i = 0; i < HEADS * HD; i++) x[i] = frand() * 3.0f;
	int shapes[][2] = { { 128, 128 }, { 200, 200 }, { 200, 96 }, { 72, 72 }, { 8, 4 } };
	for (int s = 0; s < n_sets; s++)
		for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
			for (int neox = 0; neox < 2; neox++) {
				int hd = shapes[k][0], n_rot = shapes[k][1];
				cpu_rope_angles(n_rot, 4093.0f, 10000.0f, 0.25f, cs, sn);
				memcpy(a, x, sizeof a);
				memcpy(b, x, sizeof b);
				sets[s]->rope(a, HEADS, hd, n_rot, cs, sn, neox);
				cpu_rope_apply(b, HEADS, hd, n_rot, cs, sn, neox);
				CHECK(memcmp(a, b, sizeof a) == 0);
				int pa = 0, pb = neox ? n_rot / 2 : 1;
				CHECK_NEAR(hypotf(a[pa], a[pb]), hypotf(x[pa], x[pb]), 1e-5);
				if (n_rot < hd) CHECK(a[hd - 1] == x[hd - 1]);
			}
}

TEST(f16_conversions_same_bits_as_scalar)
{
	/* Every half widened, and floats around every rounding boundary of the
	 * half grid narrowed (ties to even, subnormal halves, overflow to inf),
	 * against tensor_f16_to_f32 / tensor_f32_to_f16; NaNs of quiet payload 0
	 * only (F16C keeps other payloads, cpu.h). */
	init_sets();
	static uint16_t h[65536];
	static float f[65536];
	for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
	for (int s = 0; s < n_sets; s++) {
		sets[s]->from_f16(h, f, 65536);
		int bad = 0;
		for (uint32_t i = 0; i < 65536; i++) {
			float want = tensor_f16_to_f32((uint16_t)i);
			if (isnan(want) ? !isnan(f[i]) : memcmp(&f[i], &want, 4) != 0) bad++;
		}
		CHECK(bad == 0);
		/* floats: each half's value, the midpoints to its neighbour and one
		 * float ulp either side of them */
		static float x[65536 * 4];
		static uint16_t got[65536 * 4];
		int64_t n = 0;
		for (uint32_t i = 0; i < 65536; i++) {
			float v = tensor_f16_to_f32((uint16_t)i);
			if (!isfinite(v)) continue;
			float nx = tensor_f16_to_f32((uint16_t)(i + 1));
			float mid = isfinite(nx) && (i & 0x7FFF) != 0x7BFF ? (v + nx) / 2
			                                                   : v * 1.0009765625f;
			x[n++] = v;
			x[n++] = mid;
			x[n++] = nextafterf(mid, INFINITY);
			x[n++] = nextafterf(mid, -INFINITY);
		}
		x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 1e6f;
		sets[s]->to_f16(x, got, n);
		bad = 0;
		for (int64_t i = 0; i < n; i++)
			if (got[i] != tensor_f32_to_f16(x[i])) {
				if (bad++ < 5)
					fprintf(stderr, "%s to_f16(%a) = %04x, want %04x\n",
					        sets[s]->name, x[i], got[i],
					        tensor_f32_to_f16(x[i]));
			}
		CHECK(bad == 0);
	}
}

TEST(amx_gemm_matches_reference)
{
	if (!cpu_amx_available()) {
		printf("  (no AMX-INT8 granted on this CPU: AMX kernel not checked)\n");
		return;
	}
	for (int k = 0; k < 2; k++) {
		uint32_t type = k ? TENSOR_TYPE_Q4_0 : TENSOR_TYPE_Q8_0;
		enum { NR = 48, NT = 32 };
		int64_t n = 256;
		float *wf = malloc((size_t)NR * n * sizeof(float)),
		      *xf = malloc((size_t)NT * n * sizeof(float));
		for (int64_t i = 0; i < NR * n; i++) wf[i] = frand() * 0.05f;
		for (int64_t i = 0; i < NT * n; i++) xf[i] = frand();
		size_t ws = tensor_type_row_size(type, n), xs = cpu_act_row_bytes(CPU_ACT_Q8_0, n);
		unsigned char *w = malloc(ws * NR), *x = malloc(xs * NT);
		for (int r = 0; r < NR; r++) tensor_row_quantize(type, wf + r * n, w + r * ws, n);
		for (int t = 0; t < NT; t++)
			cpu_kernels_ref.act[CPU_ACT_Q8_0](xf + t * n, x + t * xs, n);
		static float ref[NT][NR], got[NT][NR];
		cpu_kernels_gemm(&cpu_kernels_ref, type)(n, w, ws, NR, x, xs, NT, &ref[0][0], NR);
		void *scratch = aligned_alloc(64, (cpu_amx_scratch_bytes(n) + 63) / 64 * 64);
		cpu_amx_gemm(type, n, w, ws, NR, x, xs, NT, &got[0][0], NR, scratch);
		for (int t = 0; t < NT; t++)
			for (int r = 0; r < NR; r++)
				CHECK_NEAR(got[t][r], ref[t][r], 1e-5 * (fabs(ref[t][r]) + 1));
		free(scratch), free(wf), free(xf), free(w), free(x);
	}
}

struct pool_arg {
	int hits[8];
	int64_t covered[1000];
};

static void pool_task(void *arg, int ith, int nth)
{
	struct pool_arg *a = arg;
	a->hits[ith]++;
	int64_t lo, hi;
	cpu_split(1000, 16, ith, nth, &lo, &hi);
	for (int64_t i = lo; i < hi; i++) a->covered[i]++;
}

/* The set the backend takes: the widest the CPU has, or the one
 * $INFILL_CPU_KERNELS names where the CPU has it (else the widest). */
TEST(kernel_set_chosen_by_cpu_and_env)
{
	/* widest first: a set counts where it was compiled and the CPU runs it */
	const struct {
		const char *name;
		bool has;
	} isa[] = {
		{ "avx512-vnni", cpu_has_avx512() },
		{ "avx2-vnni", cpu_has_avx2_vnni() },
		{ "avx2", cpu_has_avx2() },
	};
	const struct cpu_kernels *widest = &cpu_kernels_ref, *avx2 = NULL, *avx2_vnni = NULL;
	for (int i = 2; i >= 0; i--) {
		const struct cpu_kernels *k = cpu_kernels_named(isa[i].name);
		/* a set is there exactly where built and run; -Dcpu_kernels=all builds all */
		CHECK((k != NULL) == (isa[i].has && cpu_kernels_built(isa[i].name)));
#ifdef TEST_CPU_KERNELS_ALL
		CHECK(cpu_kernels_built(isa[i].name));
#else
		/* -Dcpu_kernels=host keeps the widest set the build machine runs,
		 * alone (meson test runs where it built) */
		bool wider = false;
		for (int j = 0; j < i; j++) wider |= isa[j].has;
		CHECK(cpu_kernels_built(isa[i].name) == (isa[i].has && !wider));
#endif
		if (k) {
			CHECK(strcmp(k->name, isa[i].name) == 0);
			widest = k;
		}
		if (i == 2) avx2 = k;
		if (i == 1) avx2_vnni = k;
	}
	CHECK(cpu_kernels_built("ref") && cpu_kernels_named("ref") == &cpu_kernels_ref);
	CHECK(!cpu_kernels_built("no-such-set") && !cpu_kernels_named("no-such-set"));
	CHECK(!cpu_has_avx2_vnni() || cpu_has_avx2());
	unsetenv("INFILL_CPU_KERNELS");
	CHECK(cpu_kernels_best() == widest);
	const struct {
		const char *name;
		const struct cpu_kernels *set;
		bool has;
	} want[] = {
		{ "ref", &cpu_kernels_ref, true },
		{ "avx2", avx2, avx2 != NULL },
		{ "avx2-vnni", avx2_vnni, avx2_vnni != NULL },
		{ "no-such-set", NULL, false },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		setenv("INFILL_CPU_KERNELS", want[i].name, 1);
		const struct cpu_kernels *got = cpu_kernels_best();
		CHECK(got == (want[i].has ? want[i].set : widest));
		if (want[i].has) CHECK(strcmp(got->name, want[i].name) == 0);
	}
	unsetenv("INFILL_CPU_KERNELS");
}

TEST(pool_runs_every_thread_and_split_covers_once)
{
	for (int n = 1; n <= 4; n++) {
		struct cpu_pool *p = cpu_pool_create(n);
		REQUIRE(p != NULL);
		struct pool_arg a;
		memset(&a, 0, sizeof a);
		for (int rep = 0; rep < 100; rep++) cpu_pool_run(p, pool_task, &a);
		for (int i = 0; i < n; i++) CHECK_INT_EQ(a.hits[i], 100);
		for (int i = 0; i < 1000; i++) CHECK_INT_EQ(a.covered[i], 100);
		cpu_pool_destroy(p);
	}
}

TEST_MAIN()
