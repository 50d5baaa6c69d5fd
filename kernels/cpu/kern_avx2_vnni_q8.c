/*
 * kern_avx2_vnni_q8.c - kern_avx2_q8.c for the AVX-VNNI set (the block dots
 * through vpdpbusd on ymm; the same integers, so the same bits).
 */
#define KERN_AVX2_VNNI
#include "kern_avx2_q8.c"
