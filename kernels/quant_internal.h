/*
 * quant_internal.h - private to kernels/: the per-type reference row
 * converters of quant_more.c that quant.c's tensor_row_(de)quantize
 * dispatch to. nb counts blocks; layouts are in quant.h.
 */
#ifndef INFILL_KERNELS_QUANT_INTERNAL_H
#define INFILL_KERNELS_QUANT_INTERNAL_H

#include <stdint.h>

void quant_dequant_q4_1(const void *src, float *y, int64_t nb);
void quant_dequant_q5_0(const void *src, float *y, int64_t nb);
void quant_dequant_q5_1(const void *src, float *y, int64_t nb);
void quant_dequant_q2_k(const void *src, float *y, int64_t nb);
void quant_dequant_q3_k(const void *src, float *y, int64_t nb);
void quant_dequant_q5_k(const void *src, float *y, int64_t nb);
void quant_dequant_iq4_nl(const void *src, float *y, int64_t nb);
void quant_dequant_iq4_xs(const void *src, float *y, int64_t nb);

void quant_quant_q4_1(const float *x, void *dst, int64_t nb);
void quant_quant_q5_0(const float *x, void *dst, int64_t nb);
void quant_quant_q5_1(const float *x, void *dst, int64_t nb);
void quant_quant_q2_k(const float *x, void *dst, int64_t nb);
void quant_quant_q3_k(const float *x, void *dst, int64_t nb);
void quant_quant_q5_k(const float *x, void *dst, int64_t nb);
void quant_quant_iq4_nl(const float *x, void *dst, int64_t nb);
void quant_quant_iq4_xs(const float *x, void *dst, int64_t nb);

/* Sub-block s (0..7) of an IQ4_XS block: its scale minus 32 (-32..31). */
int quant_iq4_xs_scale(const void *block, int s);

#endif
