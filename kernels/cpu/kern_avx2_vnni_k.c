/*
 * kern_avx2_vnni_k.c - kern_avx2_k.c for the AVX-VNNI set: the second half
 * of cpu_kernels_avx2_vnni (kern_avx2_vnni.c has the first).
 */
#define KERN_AVX2_VNNI
#define KERN_AVX2_PART 2
#include "kern_avx2.c"
