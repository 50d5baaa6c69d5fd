/*
 * kern.c - picks the kernel set for this CPU at run time (cpuid), and the
 * small helpers shared by every set.
 */
#include "cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

/* The SIMD sets this build compiled: all of them, or with meson's
 * -Dcpu_kernels=host only the one the build machine picks (kern_sets.h,
 * generated). A set left out is never chosen: a binary moved to a CPU that
 * lacks the compiled set's instructions falls back to the reference. */
#include "kern_sets.h"

/* widest first: cpu_kernels_best() takes the first usable */
static const struct {
	const char *name;
	const struct cpu_kernels *set; /* NULL: not compiled */
	bool (*runs)(void);
} sets[] = {
#if KERN_SET_AVX512
	{ "avx512-vnni", &cpu_kernels_avx512, cpu_has_avx512 },
#else
	{ "avx512-vnni", NULL, cpu_has_avx512 },
#endif
#if KERN_SET_AVX2_VNNI
	{ "avx2-vnni", &cpu_kernels_avx2_vnni, cpu_has_avx2_vnni },
#else
	{ "avx2-vnni", NULL, cpu_has_avx2_vnni },
#endif
#if KERN_SET_AVX2
	{ "avx2", &cpu_kernels_avx2, cpu_has_avx2 },
#else
	{ "avx2", NULL, cpu_has_avx2 },
#endif
};

bool cpu_kernels_built(const char *name)
{
	if (!strcmp(name, "ref")) return true;
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
		if (!strcmp(name, sets[i].name)) return sets[i].set != NULL;
	return false;
}

const struct cpu_kernels *cpu_kernels_named(const char *name)
{
	if (!strcmp(name, "ref")) return &cpu_kernels_ref;
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
		if (!strcmp(name, sets[i].name) && sets[i].set && sets[i].runs())
			return sets[i].set;
	return NULL;
}

void cpu_kernels_runnable(char *buf, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof sets / sizeof sets[0] && n < cap; i++)
		if (sets[i].set && sets[i].runs())
			n += (size_t)snprintf(buf + n, cap - n, "%s, ", sets[i].name);
	if (n < cap) snprintf(buf + n, cap - n, "ref");
}

const struct cpu_kernels *cpu_kernels_best(void)
{
	const char *want = getenv("INFILL_CPU_KERNELS");
	const struct cpu_kernels *k = want ? cpu_kernels_named(want) : NULL;
	if (k) return k;
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
		if (sets[i].set && sets[i].runs()) return sets[i].set;
	return &cpu_kernels_ref;
}

cpu_gemm_fn cpu_kernels_gemm(const struct cpu_kernels *k, uint32_t weight_type)
{
	cpu_gemm_fn f = NULL, r = NULL;
	switch (weight_type) {
	case TENSOR_TYPE_F32: f = k->gemm_f32, r = cpu_kernels_ref.gemm_f32; break;
	case TENSOR_TYPE_F16: f = k->gemm_f16, r = cpu_kernels_ref.gemm_f16; break;
	case TENSOR_TYPE_BF16: f = k->gemm_bf16, r = cpu_kernels_ref.gemm_bf16; break;
	case TENSOR_TYPE_Q8_0: f = k->gemm_q8_0, r = cpu_kernels_ref.gemm_q8_0; break;
	case TENSOR_TYPE_Q4_0: f = k->gemm_q4_0, r = cpu_kernels_ref.gemm_q4_0; break;
	case TENSOR_TYPE_Q4_K: f = k->gemm_q4_k, r = cpu_kernels_ref.gemm_q4_k; break;
	case TENSOR_TYPE_Q6_K: f = k->gemm_q6_k, r = cpu_kernels_ref.gemm_q6_k; break;
	case TENSOR_TYPE_Q4_1: f = k->gemm_q4_1, r = cpu_kernels_ref.gemm_q4_1; break;
	case TENSOR_TYPE_Q5_0: f = k->gemm_q5_0, r = cpu_kernels_ref.gemm_q5_0; break;
	case TENSOR_TYPE_Q5_1: f = k->gemm_q5_1, r = cpu_kernels_ref.gemm_q5_1; break;
	case TENSOR_TYPE_Q2_K: f = k->gemm_q2_k, r = cpu_kernels_ref.gemm_q2_k; break;
	case TENSOR_TYPE_Q3_K: f = k->gemm_q3_k, r = cpu_kernels_ref.gemm_q3_k; break;
	case TENSOR_TYPE_Q5_K: f = k->gemm_q5_k, r = cpu_kernels_ref.gemm_q5_k; break;
	case TENSOR_TYPE_IQ4_NL: f = k->gemm_iq4_nl, r = cpu_kernels_ref.gemm_iq4_nl; break;
	case TENSOR_TYPE_IQ4_XS: f = k->gemm_iq4_xs, r = cpu_kernels_ref.gemm_iq4_xs; break;
	case CPU_TYPE_Q4_0_P8:
		return k->gemm_q4_0_p8; /* no reference: packed only for sets with it */
	case CPU_TYPE_Q8_0_P8: return k->gemm_q8_0_p8;
	case CPU_TYPE_Q4_K_P8: return k->gemm_q4_k_p8;
	case CPU_TYPE_Q5_K_P8: return k->gemm_q5_k_p8;
	case CPU_TYPE_Q6_K_P8: return k->gemm_q6_k_p8;
	case CPU_TYPE_IQ4_XS_P8: return k->gemm_iq4_xs_p8;
	case CPU_TYPE_Q5_0_P8: return k->gemm_q5_0_p8;
	case CPU_TYPE_Q5_1_P8: return k->gemm_q5_1_p8;
	default: return NULL;
	}
	return f ? f : r;
}

cpu_act_fn cpu_kernels_act(const struct cpu_kernels *k, enum cpu_act a)
{
	return k->act[a] ? k->act[a] : cpu_kernels_ref.act[a];
}

cpu_gemm_il_fn cpu_kernels_gemm_il(const struct cpu_kernels *k, uint32_t weight_type)
{
	return weight_type == CPU_TYPE_Q4_0_P8   ? k->gemm_q4_0_p8il
	       : weight_type == CPU_TYPE_Q8_0_P8 ? k->gemm_q8_0_p8il
	                                         : NULL;
}

enum cpu_act cpu_act_for(uint32_t weight_type)
{
	switch (weight_type) {
	case TENSOR_TYPE_Q8_0:
	case TENSOR_TYPE_Q4_0:
	case CPU_TYPE_Q4_0_P8:
	case CPU_TYPE_Q8_0_P8:
	case TENSOR_TYPE_Q5_0:
	case CPU_TYPE_Q5_0_P8:
	case TENSOR_TYPE_IQ4_NL: return CPU_ACT_Q8_0;
	case TENSOR_TYPE_Q4_1:
	case TENSOR_TYPE_Q5_1:
	case CPU_TYPE_Q5_1_P8: return CPU_ACT_Q8_1;
	case TENSOR_TYPE_Q2_K:
	case TENSOR_TYPE_Q3_K:
	case TENSOR_TYPE_Q4_K:
	case CPU_TYPE_Q4_K_P8:
	case TENSOR_TYPE_Q5_K:
	case CPU_TYPE_Q5_K_P8:
	case TENSOR_TYPE_Q6_K:
	case CPU_TYPE_Q6_K_P8:
	case TENSOR_TYPE_IQ4_XS:
	case CPU_TYPE_IQ4_XS_P8: return CPU_ACT_Q8_K;
	default: return CPU_ACT_F32;
	}
}

size_t cpu_act_row_bytes(enum cpu_act a, int64_t n)
{
	switch (a) {
	case CPU_ACT_Q8_0: {
		size_t nb = (size_t)(n / QK8_0);
		return ((nb * sizeof(struct block_q8_0) + 63) / 64 * 64 + nb * 12 + 63) / 64 * 64;
	}
	case CPU_ACT_Q8_1: return ((size_t)(n / QK8_0) * sizeof(struct block_q8_1) + 63) / 64 * 64;
	case CPU_ACT_Q8_K: return ((size_t)(n / QK_K) * sizeof(struct block_q8_k) + 63) / 64 * 64;
	default: return ((size_t)n * 4 + 63) / 64 * 64;
	}
}

void cpu_q8_tail_fill(void *row, int64_t nb)
{
	const struct block_q8_0 *x = row;
	struct cpu_q8_tail t = cpu_q8_tail_of(row, nb);
	for (int64_t b = 0; b < nb; b++) {
		int32_t s = 0;
		for (int j = 0; j < QK8_0; j++) s += x[b].qs[j];
		float d = tensor_f16_to_f32(x[b].d);
		t.bias[b] = -128 * s;
		t.d[b] = d;
		t.dsum[b] = d * (float)s;
	}
}

struct cpu_kernels cpu_kernels_complete(const struct cpu_kernels *k)
{
	struct cpu_kernels c = *k;
	const struct cpu_kernels *r = &cpu_kernels_ref;
	for (int a = 0; a < CPU_ACT_COUNT; a++)
		if (!c.act[a]) c.act[a] = r->act[a];
#define FILL(f)                       \
	do {                          \
		if (!c.f) c.f = r->f; \
	} while (0)
	FILL(gemm_f32);
	FILL(gemm_f16);
	FILL(gemm_bf16);
	FILL(gemm_q8_0);
	FILL(gemm_q4_0);
	FILL(gemm_q4_k);
	FILL(gemm_q6_k);
	FILL(gemm_q4_1);
	FILL(gemm_q5_0);
	FILL(gemm_q5_1);
	FILL(gemm_q2_k);
	FILL(gemm_q3_k);
	FILL(gemm_q5_k);
	FILL(gemm_iq4_nl);
	FILL(gemm_iq4_xs);
	FILL(dot_f32);
	FILL(axpy_f32);
	FILL(dot_f16);
	FILL(axpy_f16);
	FILL(score_f32);
	FILL(mix_f32);
	FILL(score_f16);
	FILL(mix_f16);
	FILL(score_q8);
	FILL(mix_q8);
	FILL(softmax);
	FILL(rmsnorm);
	FILL(swiglu);
	FILL(to_f16);
	FILL(from_f16);
	FILL(rope);
	/* score_t_f16, softmax_t and mix_t_f16 stay NULL where the set has none:
	 * its prompts take its own score/mix, not the scalar reference's lanes */
	if (c.score_f32 == r->score_f32 || !c.attn_qb) c.attn_qb = r->attn_qb;
#undef FILL
	return c;
}
