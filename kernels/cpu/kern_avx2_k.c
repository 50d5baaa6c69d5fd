/*
 * kern_avx2_k.c - the AVX2 set's panel kernels for K-quant, IQ4_XS and
 * Q5_0 / Q5_1 weights: kern_avx2.c built again as its part 2, so that two
 * cores compile the set at once (kern_avx2.c says what each part holds).
 */
#define KERN_AVX2_PART 2
#include "kern_avx2.c"
