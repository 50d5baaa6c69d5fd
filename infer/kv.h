/*
 * kv.h - private to infer/: creating the KV page pool over a backend and
 * reaching a sequence's pool. The public API is in infer.h.
 */
#ifndef INFILL_INFER_KV_H
#define INFILL_INFER_KV_H

#include "backend.h"
#include "infer.h"

/* New pool of n_pages pages over backend b (borrowed: b must outlive the pool). */
struct kv_pool *kv_pool_create(struct backend *b, int32_t n_pages, int32_t page_size);
/* Accepts NULL. */
void kv_pool_destroy(struct kv_pool *p);
struct kv_pool *kv_seq_pool(const struct kv_seq *s);
struct backend *kv_pool_backend(const struct kv_pool *p);
/* Sets the length (after a forward pass wrote slots up to n). n must be within reserved pages. */
void kv_seq_set_len(struct kv_seq *s, int32_t n);

/* kv_seq_reserve for slots [from, n): also copies shared pages below the length. */
int kv_seq_reserve_from(struct kv_seq *s, int32_t from, int32_t n, struct infill_error *err);

#endif
