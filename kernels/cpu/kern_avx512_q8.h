/*
 * kern_avx512_q8.h - the AVX-512 set's q8_0-cache attention
 * (kern_avx512_q8.c), for kern_avx512.c's table: cpu.h's score_q8 and
 * mix_q8 contracts, the reference's bits. Call only where cpu_has_avx512().
 */
#ifndef INFILL_KERN_AVX512_Q8_H
#define INFILL_KERN_AVX512_Q8_H

#include <stdint.h>

void cpu_avx512_score_q8(int64_t hd, int g, const void *q, int64_t qs, const void *r,
                         int64_t stride, int64_t n, float scale, float *s, int64_t ld);
void cpu_avx512_mix_q8(int64_t hd, int g, const float *p, int64_t ld, const void *r, int64_t stride,
                       int64_t n, float *o, int64_t os);

struct cpu_q8_lanes;
void cpu_avx512_score_t_q8(int64_t hd, const struct cpu_q8_lanes *qt, const void *r, int64_t stride,
                           int64_t n, float scale, float *st);
void cpu_avx512_mix_t_q8(int64_t hd, const float *st, const void *r, int64_t stride, int64_t n,
                         float *ot);

#endif
