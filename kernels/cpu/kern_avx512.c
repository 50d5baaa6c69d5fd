/*
 * kern_avx512.c - AVX-512 F/BW/VL + VNNI kernels (target attributes; chosen
 * at run time by kern.c).
 */
#include "cpu.h"

const struct cpu_kernels cpu_kernels_avx512 = {
	.name = "avx512-vnni",
};
