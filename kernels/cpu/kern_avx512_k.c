/*
 * kern_avx512_k.c - the AVX-512 set's panel kernels for Q4_K, Q5_K and
 * IQ4_XS weights: kern_avx512.c built again as its part 2, so that two
 * cores compile the set at once (kern_avx512.c says what each part holds).
 */
#define KERN_AVX512_PART 2
#include "kern_avx512.c"
