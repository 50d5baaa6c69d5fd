/*
 * kern_avx2_q8.h - the AVX2 sets' q8_0-cache attention (kern_avx2_q8.c,
 * built twice: kern_avx2_vnni_q8.c), for kern_avx2.c's tables: cpu.h's
 * score_q8 and mix_q8 contracts, the reference's bits. Call the avx2 pair
 * only where cpu_has_avx2(), the avx2_vnni pair where cpu_has_avx2_vnni().
 */
#ifndef INFILL_KERN_AVX2_Q8_H
#define INFILL_KERN_AVX2_Q8_H

#include <stdint.h>

void cpu_avx2_score_q8(int64_t hd, int g, const void *q, int64_t qs, const void *r, int64_t stride,
                       int64_t n, float scale, float *s, int64_t ld);
void cpu_avx2_mix_q8(int64_t hd, int g, const float *p, int64_t ld, const void *r, int64_t stride,
                     int64_t n, float *o, int64_t os);
void cpu_avx2_vnni_score_q8(int64_t hd, int g, const void *q, int64_t qs, const void *r,
                            int64_t stride, int64_t n, float scale, float *s, int64_t ld);
void cpu_avx2_vnni_mix_q8(int64_t hd, int g, const float *p, int64_t ld, const void *r,
                          int64_t stride, int64_t n, float *o, int64_t os);

/* A prompt's attention with the queries in the lanes (cpu.h's score_t_q8 /
 * mix_t_q8): the same bits as the pairs above. */
struct cpu_q8_lanes;
void cpu_avx2_score_t_q8(int64_t hd, const struct cpu_q8_lanes *qt, const void *r, int64_t stride,
                         int64_t n, float scale, float *st);
void cpu_avx2_mix_t_q8(int64_t hd, const float *st, const void *r, int64_t stride, int64_t n,
                       float *ot);
void cpu_avx2_vnni_score_t_q8(int64_t hd, const struct cpu_q8_lanes *qt, const void *r,
                              int64_t stride, int64_t n, float scale, float *st);
void cpu_avx2_vnni_mix_t_q8(int64_t hd, const float *st, const void *r, int64_t stride, int64_t n,
                            float *ot);

#endif
