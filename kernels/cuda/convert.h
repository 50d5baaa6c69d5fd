/*
 * convert.h - GGUF weight types the CUDA kernels have no kernels for, turned
 * at upload into types they have. Host code, plain C (no CUDA), so that the
 * conversion is tested on any machine. Private to kernels/cuda/.
 *
 * Why convert rather than refuse: llama-quantize's mixtures (Q4_K_M holds
 * Q5_0 tensors wherever a row is not a multiple of 256; Q5_K_M is mostly
 * Q5_K) would otherwise leave a GPU idle and the model on the CPU. Q5_0 and
 * IQ4_NL become Q8_0 exactly (their values are an f16 block scale times a
 * small integer, which Q8_0 holds with the same scale); the others become
 * F16, every value rounded once to f16 (relative error <= 2^-11, far below
 * the activation quantization the CPU backend applies to them), at 16 bits
 * a weight instead of 2.6-6: a memory cost, stated in the backend's name.
 */
#ifndef INFILL_KERNELS_CUDA_CONVERT_H
#define INFILL_KERNELS_CUDA_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The GGML type a weight of GGML type `type` runs as on the GPU: itself when
 * the kernels read it, F16 or Q8_0 when it is converted; -1 when neither. */
int cuq_convert_target(uint32_t type);

/* Converts [rows][cols] of `type` (GGUF bytes, borrowed) into `dst`, laid out
 * as GGUF stores cuq_convert_target(type), using `row` ([cols] floats,
 * caller-owned) as scratch. 0, or -EINVAL when the type has no target, cols
 * does not divide into its blocks, or a Q8_0 target cannot hold a value
 * exactly (a corrupt block scale). */
int cuq_convert(uint32_t type, int64_t rows, int64_t cols, const void *src, void *dst, float *row);

/* "; q5_k as f16, q5_0 as q8_0" for the types whose bit is set in `mask`
 * (bit t: GGML type t was converted), "" when none, into buf[n]. */
void cuq_convert_describe(uint32_t mask, char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
