/*
 * kern_avx2_vnni.c - kern_avx2.c's kernels built again for hosts with
 * AVX-VNNI (vpdpbusd on ymm, no AVX-512): the set cpu_kernels_avx2_vnni.
 */
#define KERN_AVX2_VNNI
#include "kern_avx2.c"
