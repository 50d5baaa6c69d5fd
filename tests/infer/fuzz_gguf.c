/*
 * fuzz_gguf.c - libFuzzer target for the GGUF reader: any byte string must
 * either open (and then every accessor must stay inside the buffer) or
 * fail with a message; never crash, leak or read out of bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct infill_error err;
	struct gguf_file *f = gguf_open_memory(data, size, &err);
	if (!f) {
		if (!err.message[0]) __builtin_trap(); /* every failure must explain itself */
		return 0;
	}
	/* touch everything the reader claims is valid */
	volatile uint64_t sink = 0;
	for (int64_t i = 0; i < gguf_key_count(f); i++) {
		struct gguf_str k = gguf_key_name(f, i);
		char key[128];
		if (k.len >= sizeof key || memchr(k.ptr, 0, k.len)) continue;
		memcpy(key, k.ptr, k.len);
		key[k.len] = 0;
		uint32_t u;
		int64_t i64;
		float x;
		bool b;
		struct gguf_str s;
		enum gguf_type et;
		uint64_t n;
		sink += gguf_get_u32(f, key, &u) + gguf_get_i64(f, key, &i64) +
		        gguf_get_f32(f, key, &x) + gguf_get_bool(f, key, &b);
		if (gguf_get_str(f, key, &s) && s.len) sink += (uint8_t)s.ptr[s.len - 1];
		if (gguf_get_arr(f, key, &et, &n)) {
			for (uint64_t j = 0; j < n && j < 64; j++) {
				struct gguf_str e = gguf_get_arr_str(f, key, j);
				if (e.ptr && e.len) sink += (uint8_t)e.ptr[e.len - 1];
			}
			const uint8_t *d = gguf_get_arr_data(f, key);
			if (d && n) sink += d[0];
		}
	}
	for (int64_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor_info *t = gguf_tensor(f, i);
		if (t->nbytes) {
			const uint8_t *p = t->data;
			sink += p[0] + p[t->nbytes - 1];
		}
		/* dequantize the first row when it is small */
		if (t->ne[0] > 0 && t->ne[0] <= 4096 &&
		    t->nbytes >= tensor_type_row_size(t->type, t->ne[0])) {
			float row[4096];
			tensor_row_dequantize(t->type, t->data, row, t->ne[0]);
		}
	}
	(void)sink;
	gguf_close(f);
	return 0;
}
