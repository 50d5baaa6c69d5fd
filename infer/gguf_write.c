/*
 * gguf_write.c - the GGUF writer: collects keys and tensor descriptions,
 * then writes a v3 file with 32-byte alignment in one pass.
 *
 * Metadata values are kept serialized (exactly the bytes that follow the
 * type field in the file), which makes copying a key from another file a
 * plain byte copy. Tensor bytes are copied, borrowed, or produced by a
 * callback at write time (one tensor in memory at a time), so `infill
 * mkmodel` can write a multi-gigabyte model in bounded memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "quant.h"

#define WRITER_ALIGNMENT 32

struct wkv {
	char *key;
	uint32_t type;
	uint8_t *val; /* serialized value */
	size_t len;
};

struct wtensor {
	char *name;
	uint32_t type;
	uint32_t n_dims;
	int64_t ne[4];
	uint64_t nbytes;
	const void *data; /* copied (== owned) or borrowed; NULL when fill is set */
	void *owned;
	gguf_tensor_fill_fn fill;
	void *ctx;
};

struct gguf_writer {
	struct wkv *kvs;
	size_t n_kv, cap_kv;
	struct wtensor *tensors;
	size_t n_tensors, cap_tensors;
};

struct gguf_writer *gguf_writer_new(void)
{
	return calloc(1, sizeof(struct gguf_writer));
}

void gguf_writer_free(struct gguf_writer *w)
{
	if (!w) return;
	for (size_t i = 0; i < w->n_kv; i++) {
		free(w->kvs[i].key);
		free(w->kvs[i].val);
	}
	for (size_t i = 0; i < w->n_tensors; i++) {
		free(w->tensors[i].name);
		free(w->tensors[i].owned);
	}
	free(w->kvs);
	free(w->tensors);
	free(w);
}

/* ---- metadata ---- */

static bool has_key(const struct gguf_writer *w, const char *key, size_t len)
{
	for (size_t i = 0; i < w->n_kv; i++)
		if (strlen(w->kvs[i].key) == len && !memcmp(w->kvs[i].key, key, len)) return true;
	return false;
}

/* Adds key (len bytes) with a serialized value made of two parts (either may be empty). */
static int add_kv(struct gguf_writer *w, const char *key, size_t key_len, uint32_t type,
                  const void *a, size_t a_len, const void *b, size_t b_len)
{
	if (has_key(w, key, key_len)) return -EEXIST;
	if (key_len == 17 && !memcmp(key, "general.alignment", 17)) return -EINVAL;
	if (w->n_kv == w->cap_kv) {
		size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
		struct wkv *n = realloc(w->kvs, cap * sizeof *n);
		if (!n) return -ENOMEM;
		w->kvs = n;
		w->cap_kv = cap;
	}
	struct wkv *kv = &w->kvs[w->n_kv];
	kv->key = malloc(key_len + 1);
	kv->val = malloc(a_len + b_len ? a_len + b_len : 1);
	if (!kv->key || !kv->val) {
		free(kv->key);
		free(kv->val);
		return -ENOMEM;
	}
	memcpy(kv->key, key, key_len);
	kv->key[key_len] = 0;
	if (a_len) memcpy(kv->val, a, a_len);
	if (b_len) memcpy(kv->val + a_len, b, b_len);
	kv->len = a_len + b_len;
	kv->type = type;
	w->n_kv++;
	return 0;
}

int gguf_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t v)
{
	return add_kv(w, key, strlen(key), GGUF_TYPE_UINT32, &v, 4, NULL, 0);
}

int gguf_writer_set_i32(struct gguf_writer *w, const char *key, int32_t v)
{
	return add_kv(w, key, strlen(key), GGUF_TYPE_INT32, &v, 4, NULL, 0);
}

int gguf_writer_set_f32(struct gguf_writer *w, const char *key, float v)
{
	return add_kv(w, key, strlen(key), GGUF_TYPE_FLOAT32, &v, 4, NULL, 0);
}

int gguf_writer_set_bool(struct gguf_writer *w, const char *key, bool v)
{
	uint8_t b = v ? 1 : 0;
	return add_kv(w, key, strlen(key), GGUF_TYPE_BOOL, &b, 1, NULL, 0);
}

int gguf_writer_set_str(struct gguf_writer *w, const char *key, const char *v)
{
	uint64_t len = strlen(v);
	return add_kv(w, key, strlen(key), GGUF_TYPE_STRING, &len, 8, v, len);
}

int gguf_writer_set_arr(struct gguf_writer *w, const char *key, enum gguf_type elem_type,
                        const void *data, uint64_t n)
{
	size_t es = gguf_scalar_size(elem_type);
	if (es == 0 || n > SIZE_MAX / es / 2) return -EINVAL;
	uint8_t head[12];
	uint32_t et = (uint32_t)elem_type;
	memcpy(head, &et, 4);
	memcpy(head + 4, &n, 8);
	return add_kv(w, key, strlen(key), GGUF_TYPE_ARRAY, head, 12, data, (size_t)n * es);
}

int gguf_writer_set_arr_str(struct gguf_writer *w, const char *key, const char *const *strs,
                            uint64_t n)
{
	size_t total = 12;
	for (uint64_t i = 0; i < n; i++) total += 8 + strlen(strs[i]);
	uint8_t *buf = malloc(total);
	if (!buf) return -ENOMEM;
	uint32_t et = GGUF_TYPE_STRING;
	memcpy(buf, &et, 4);
	memcpy(buf + 4, &n, 8);
	size_t o = 12;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t len = strlen(strs[i]);
		memcpy(buf + o, &len, 8);
		memcpy(buf + o + 8, strs[i], len);
		o += 8 + len;
	}
	int rc = add_kv(w, key, strlen(key), GGUF_TYPE_ARRAY, buf, total, NULL, 0);
	free(buf);
	return rc;
}

int gguf_writer_copy_key(struct gguf_writer *w, const struct gguf_file *src, int64_t i)
{
	const void *raw;
	uint64_t len;
	if (!gguf_key_raw(src, i, &raw, &len)) return -EINVAL;
	struct gguf_str key = gguf_key_name(src, i);
	if (memchr(key.ptr, 0, key.len)) return -EINVAL;
	return add_kv(w, key.ptr, key.len, gguf_key_type(src, i), raw, len, NULL, 0);
}

/* ---- tensors ---- */

static int add_tensor(struct gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                      const int64_t *ne, struct wtensor **out)
{
	if (n_dims < 1 || n_dims > 4 || !tensor_type_valid(type)) return -EINVAL;
	for (size_t i = 0; i < w->n_tensors; i++)
		if (!strcmp(w->tensors[i].name, name)) return -EEXIST;
	uint64_t rows = 1;
	for (uint32_t d = 1; d < n_dims; d++) {
		if (ne[d] < 0 || (ne[d] && rows > UINT64_MAX / (uint64_t)ne[d])) return -EINVAL;
		rows *= (uint64_t)ne[d];
	}
	uint64_t row = tensor_type_row_size(type, ne[0]);
	if ((row == 0 && ne[0] != 0) || (rows && row > UINT64_MAX / rows)) return -EINVAL;
	if (w->n_tensors == w->cap_tensors) {
		size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
		struct wtensor *n = realloc(w->tensors, cap * sizeof *n);
		if (!n) return -ENOMEM;
		w->tensors = n;
		w->cap_tensors = cap;
	}
	struct wtensor *t = &w->tensors[w->n_tensors];
	memset(t, 0, sizeof *t);
	t->name = strdup(name);
	if (!t->name) return -ENOMEM;
	t->type = type;
	t->n_dims = n_dims;
	for (int d = 0; d < 4; d++) t->ne[d] = (uint32_t)d < n_dims ? ne[d] : 1;
	t->nbytes = row * rows;
	w->n_tensors++;
	*out = t;
	return 0;
}

static int add_tensor_data(struct gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                           const int64_t *ne, const void *data, uint64_t nbytes, bool copy)
{
	struct wtensor *t;
	int rc = add_tensor(w, name, type, n_dims, ne, &t);
	if (rc) return rc;
	if (t->nbytes != nbytes) {
		free(t->name);
		w->n_tensors--;
		return -EINVAL;
	}
	if (copy) {
		t->owned = malloc(nbytes ? nbytes : 1);
		if (!t->owned) {
			free(t->name);
			w->n_tensors--;
			return -ENOMEM;
		}
		if (nbytes) memcpy(t->owned, data, nbytes);
		t->data = t->owned;
	} else {
		t->data = data;
	}
	return 0;
}

int gguf_writer_add_tensor(struct gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                           const int64_t *ne, const void *data, uint64_t nbytes)
{
	return add_tensor_data(w, name, type, n_dims, ne, data, nbytes, true);
}

int gguf_writer_add_tensor_ref(struct gguf_writer *w, const char *name, uint32_t type,
                               uint32_t n_dims, const int64_t *ne, const void *data,
                               uint64_t nbytes)
{
	return add_tensor_data(w, name, type, n_dims, ne, data, nbytes, false);
}

int gguf_writer_add_tensor_fill(struct gguf_writer *w, const char *name, uint32_t type,
                                uint32_t n_dims, const int64_t *ne, gguf_tensor_fill_fn fill,
                                void *ctx)
{
	struct wtensor *t;
	int rc = add_tensor(w, name, type, n_dims, ne, &t);
	if (rc) return rc;
	t->fill = fill;
	t->ctx = ctx;
	return 0;
}

/* ---- writing ---- */

static uint64_t align_up(uint64_t x)
{
	return (x + WRITER_ALIGNMENT - 1) / WRITER_ALIGNMENT * WRITER_ALIGNMENT;
}

static bool put(FILE *fp, const void *p, size_t n)
{
	return n == 0 || fwrite(p, 1, n, fp) == n;
}

static bool put_u32(FILE *fp, uint32_t v)
{
	return put(fp, &v, 4);
}

static bool put_u64(FILE *fp, uint64_t v)
{
	return put(fp, &v, 8);
}

static bool put_str(FILE *fp, const char *s)
{
	uint64_t n = strlen(s);
	return put_u64(fp, n) && put(fp, s, n);
}

static bool put_pad(FILE *fp, uint64_t pos)
{
	static const uint8_t zeros[WRITER_ALIGNMENT];
	return put(fp, zeros, align_up(pos) - pos);
}

/* The stream's errno (ENOSPC, EDQUOT, EIO, ...) is what the user acts on. */
static int io_error(const char *path, struct infill_error *err)
{
	int e = errno ? errno : EIO;
	return error_set(err, -e, "%s: write failed: %s", path, strerror(e));
}

static int write_all(struct gguf_writer *w, FILE *fp, const char *path, struct infill_error *err)
{
	/* header and metadata */
	bool ok = put(fp, "GGUF", 4) && put_u32(fp, 3) && put_u64(fp, w->n_tensors) &&
	          put_u64(fp, w->n_kv + 1);
	uint64_t pos = 24;
	ok = ok && put_str(fp, "general.alignment") && put_u32(fp, GGUF_TYPE_UINT32) &&
	     put_u32(fp, WRITER_ALIGNMENT);
	pos += 8 + 17 + 4 + 4;
	for (size_t i = 0; ok && i < w->n_kv; i++) {
		ok = put_str(fp, w->kvs[i].key) && put_u32(fp, w->kvs[i].type) &&
		     put(fp, w->kvs[i].val, w->kvs[i].len);
		pos += 8 + strlen(w->kvs[i].key) + 4 + w->kvs[i].len;
	}
	/* tensor table: offsets relative to the data section, each aligned */
	uint64_t off = 0;
	for (size_t i = 0; ok && i < w->n_tensors; i++) {
		const struct wtensor *t = &w->tensors[i];
		ok = put_str(fp, t->name) && put_u32(fp, t->n_dims);
		for (uint32_t d = 0; ok && d < t->n_dims; d++) ok = put_u64(fp, (uint64_t)t->ne[d]);
		ok = ok && put_u32(fp, t->type) && put_u64(fp, off);
		pos += 8 + strlen(t->name) + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
		off = align_up(off + t->nbytes);
	}
	ok = ok && put_pad(fp, pos);
	if (!ok) return io_error(path, err);
	/* data */
	for (size_t i = 0; i < w->n_tensors; i++) {
		const struct wtensor *t = &w->tensors[i];
		if (t->fill) {
			void *buf = malloc(t->nbytes ? t->nbytes : 1);
			if (!buf) {
				error_set(err, -ENOMEM,
				                "%s: out of memory for tensor \"%s\" (%llu bytes)",
				                path, t->name, (unsigned long long)t->nbytes);
				error_tensor(err, t->name, strlen(t->name));
				return -ENOMEM;
			}
			int rc = t->fill(t->ctx, buf, t->nbytes);
			if (rc) {
				free(buf);
				error_set(err, rc, "%s: producing tensor \"%s\" failed: %s",
				                path, t->name, strerror(-rc));
				error_tensor(err, t->name, strlen(t->name));
				return rc;
			}
			ok = put(fp, buf, t->nbytes);
			free(buf);
		} else {
			ok = put(fp, t->data, t->nbytes);
		}
		if (!ok || !put_pad(fp, t->nbytes)) return io_error(path, err);
	}
	return 0;
}

int gguf_writer_write(struct gguf_writer *w, const char *path, struct infill_error *err)
{
	FILE *fp = fopen(path, "wb");
	if (!fp) {
		int e = errno;
		return error_set(err, -e, "%s: cannot create: %s", path, strerror(e));
	}
	setvbuf(fp, NULL, _IOFBF, 1 << 20);
	int rc = write_all(w, fp, path, err);
	if (fclose(fp) != 0 && rc == 0) {
		rc = io_error(path, err);
	}
	if (rc) unlink(path);
	return rc;
}
