/*
 * kern_avx512_q56.c - the AVX-512 set's panel kernels for Q6_K, Q5_0 and
 * Q5_1 weights: kern_avx512.c built again as its part 3 (kern_avx512.c says
 * what each part holds).
 */
#define KERN_AVX512_PART 3
#include "kern_avx512.c"
