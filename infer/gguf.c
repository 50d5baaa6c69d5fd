/*
 * gguf.c - the GGUF reader: maps a file and validates all of it up front.
 *
 * Layout (v2/v3, little-endian): "GGUF", u32 version, u64 n_tensors, u64
 * n_kv, then n_kv (string key, u32 type, value), then n_tensors (string
 * name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset), padding to the
 * alignment, then the data section. A string is a u64 length + bytes; an
 * array is u32 element type + u64 count + elements.
 *
 * gguf_open* parses everything once and checks every length against the
 * bytes that remain before reading or allocating, so later accessors never
 * need to: they read from ranges already proven to lie inside the file.
 * Values are not copied; the index keeps pointers into the mapping.
 */
#include "gguf.h"

#include "mapguard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant.h"

#define GGUF_MAX_DIMS          4
#define GGUF_DEFAULT_ALIGNMENT 32
/* Far above any real model (hundreds of keys, a few thousand tensors), low
 * enough that a hostile header cannot make the index allocate gigabytes. */
#define GGUF_MAX_KV            65536
#define GGUF_MAX_TENSORS       (1 << 20)

struct kv {
	struct gguf_str key;
	enum gguf_type type;
	const uint8_t *raw; /* the serialized value (after the type field) */
	uint64_t raw_len;
	enum gguf_type arr_type; /* arrays only */
	uint64_t arr_n;
	const uint8_t *arr_data; /* arrays only: first element */
	uint64_t *str_off;       /* string arrays: offset of each element from arr_data */
};

struct gguf_file {
	const uint8_t *base; /* the mapping or the caller's buffer */
	size_t size;
	bool mapped;
	int guard;      /* mapguard slot of the mapping, or negative */
	struct stat st; /* the file as mapped (gguf_file_changed compares) */
	char *name;     /* for messages */
	uint32_t version;
	uint64_t alignment;
	uint64_t data_offset; /* start of the data section in the file */
	int64_t n_kv;
	struct kv *kvs;
	int64_t n_tensors;
	struct gguf_tensor_info *tensors;
};

/* ---- errors ---- */

/* Writes at most 64 characters of s into out, escaping anything unprintable,
 * so a hostile name cannot garble the message. */
static const char *show(char out[300], struct gguf_str s)
{
	size_t o = 0;
	for (uint64_t i = 0; i < s.len && i < 64; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
	}
	if (s.len > 64) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = 0;
	return out;
}

static void vfail(struct infill_error *err, int code, const char *file, const char *fmt, va_list ap)
{
	if (!err) return;
	error_set(err, code, "%s: ", file);
	size_t n = strlen(err->message);
	vsnprintf(err->message + n, sizeof err->message - n, fmt, ap);
}

/* A failure before or after parsing (open, map, allocate): no offset. */
static void fail(struct infill_error *err, int code, const char *file, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void fail(struct infill_error *err, int code, const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(err, code, file, fmt, ap);
	va_end(ap);
}

/* ---- the cursor: every read is bounds-checked ---- */

struct reader {
	const uint8_t *p;
	size_t size;
	size_t pos;
	const char *file;
	struct infill_error *err;
	char what[400]; /* what is being read, for the message */
	/* Where the item being read (header, key, tensor info) starts, and its
	 * key or tensor name once read: what a failure reports beside the message. */
	size_t at;
	struct gguf_str key, tensor;
};

/* Points the next failure at the key (or tensor) whose name is `name`, a
 * string inside the file: its offset is that of its 8-byte length. */
static void point_at(struct reader *r, struct gguf_str name, bool is_key)
{
	r->at = (size_t)((const uint8_t *)name.ptr - r->p) - 8;
	r->key = is_key ? name : (struct gguf_str){ 0 };
	r->tensor = is_key ? (struct gguf_str){ 0 } : name;
}

/* A failure while parsing: the error names the offset and the key or tensor. */
static void rfail(struct reader *r, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void rfail(struct reader *r, int code, const char *fmt, ...)
{
	if (!r->err) return;
	va_list ap;
	va_start(ap, fmt);
	vfail(r->err, code, r->file, fmt, ap);
	va_end(ap);
	r->err->offset = (int64_t)r->at;
	error_key(r->err, r->key.ptr, r->key.ptr ? (size_t)r->key.len : 0);
	error_tensor(r->err, r->tensor.ptr, r->tensor.ptr ? (size_t)r->tensor.len : 0);
}

static bool need(struct reader *r, uint64_t n)
{
	if (n <= r->size - r->pos) return true;
	r->at = r->pos;
	rfail(r, -EINVAL,
	      "%s: needs %llu bytes at offset %zu but the file ends at %zu (truncated?)", r->what,
	      (unsigned long long)n, r->pos, r->size);
	return false;
}

static bool rd_u32(struct reader *r, uint32_t *v)
{
	if (!need(r, 4)) return false;
	memcpy(v, r->p + r->pos, 4);
	r->pos += 4;
	return true;
}

static bool rd_u64(struct reader *r, uint64_t *v)
{
	if (!need(r, 8)) return false;
	memcpy(v, r->p + r->pos, 8);
	r->pos += 8;
	return true;
}

static bool rd_str(struct reader *r, struct gguf_str *s)
{
	uint64_t len;
	if (!rd_u64(r, &len) || !need(r, len)) return false;
	s->ptr = (const char *)r->p + r->pos;
	s->len = len;
	r->pos += (size_t)len;
	return true;
}

size_t gguf_scalar_size(uint32_t t)
{
	switch (t) {
	case GGUF_TYPE_UINT8:
	case GGUF_TYPE_INT8:
	case GGUF_TYPE_BOOL: return 1;
	case GGUF_TYPE_UINT16:
	case GGUF_TYPE_INT16: return 2;
	case GGUF_TYPE_UINT32:
	case GGUF_TYPE_INT32:
	case GGUF_TYPE_FLOAT32: return 4;
	case GGUF_TYPE_UINT64:
	case GGUF_TYPE_INT64:
	case GGUF_TYPE_FLOAT64: return 8;
	default: return 0;
	}
}

/* Reads one value of type t into kv (whose key is set). Nested arrays are
 * rejected: the spec allows them but no model uses them and nothing here
 * could consume them. */
static bool rd_value(struct reader *r, struct kv *kv, uint32_t t)
{
	size_t start = r->pos;
	if (t == GGUF_TYPE_STRING) {
		struct gguf_str s;
		if (!rd_str(r, &s)) return false;
	} else if (t == GGUF_TYPE_ARRAY) {
		uint32_t et;
		uint64_t n;
		if (!rd_u32(r, &et) || !rd_u64(r, &n)) return false;
		kv->arr_type = (enum gguf_type)et;
		kv->arr_n = n;
		kv->arr_data = r->p + r->pos;
		if (et == GGUF_TYPE_STRING) {
			/* each element is at least its 8-byte length: bound n before allocating */
			if (n > (r->size - r->pos) / 8) {
				rfail(r, -EINVAL,
				      "%s: array of %llu strings cannot fit in the %zu bytes left "
				      "in the file",
				      r->what, (unsigned long long)n, r->size - r->pos);
				return false;
			}
			kv->str_off = malloc((n ? n : 1) * sizeof *kv->str_off);
			if (!kv->str_off) {
				rfail(r, -ENOMEM, "%s: out of memory for %llu strings", r->what,
				      (unsigned long long)n);
				return false;
			}
			size_t base = r->pos;
			for (uint64_t i = 0; i < n; i++) {
				kv->str_off[i] = r->pos - base;
				struct gguf_str s;
				if (!rd_str(r, &s)) return false;
			}
		} else if (et == GGUF_TYPE_ARRAY) {
			rfail(r, -ENOTSUP, "%s: nested arrays are not supported", r->what);
			return false;
		} else {
			size_t es = gguf_scalar_size(et);
			if (es == 0) {
				rfail(r, -ENOTSUP, "%s: unknown array element type %u", r->what,
				      et);
				return false;
			}
			if (n > (r->size - r->pos) / es) {
				rfail(r, -EINVAL,
				      "%s: array of %llu elements of %zu bytes runs past the end "
				      "of "
				      "the file (%zu bytes left)",
				      r->what, (unsigned long long)n, es, r->size - r->pos);
				return false;
			}
			r->pos += (size_t)(n * es);
		}
	} else {
		size_t sz = gguf_scalar_size(t);
		if (sz == 0) {
			rfail(r, -ENOTSUP, "%s: unknown value type %u", r->what, t);
			return false;
		}
		if (!need(r, sz)) return false;
		r->pos += sz;
	}
	kv->type = (enum gguf_type)t;
	kv->raw = r->p + start;
	kv->raw_len = r->pos - start;
	return true;
}

/* ---- parsing ---- */

static bool str_eq(struct gguf_str s, const char *c)
{
	size_t n = strlen(c);
	return s.len == n && memcmp(s.ptr, c, n) == 0;
}

static int str_cmp(struct gguf_str a, struct gguf_str b)
{
	size_t n = a.len < b.len ? (size_t)a.len : (size_t)b.len;
	int c = memcmp(a.ptr, b.ptr, n);
	return c ? c : (a.len > b.len) - (a.len < b.len);
}

static int cmp_str_ptr(const void *a, const void *b)
{
	return str_cmp(**(const struct gguf_str *const *)a, **(const struct gguf_str *const *)b);
}

/* Finds a duplicate among n names (strided structs); returns it or NULL. */
static const struct gguf_str *find_duplicate(const void *first, size_t stride, int64_t n, bool *oom)
{
	*oom = false;
	if (n < 2) return NULL;
	const struct gguf_str **v = malloc((size_t)n * sizeof *v);
	if (!v) {
		*oom = true;
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		v[i] = (const struct gguf_str *)((const char *)first + (size_t)i * stride);
	qsort(v, (size_t)n, sizeof *v, cmp_str_ptr);
	const struct gguf_str *dup = NULL;
	for (int64_t i = 1; i < n && !dup; i++)
		if (!str_cmp(*v[i - 1], *v[i])) /* the later copy in the file: the one to remove */
			dup = v[i - 1]->ptr > v[i]->ptr ? v[i - 1] : v[i];
	free(v);
	return dup;
}

static int cmp_tensor_offset(const void *a, const void *b)
{
	const struct gguf_tensor_info *x = *(const struct gguf_tensor_info *const *)a;
	const struct gguf_tensor_info *y = *(const struct gguf_tensor_info *const *)b;
	return (x->offset > y->offset) - (x->offset < y->offset);
}

static bool parse_header(struct gguf_file *f, struct reader *r)
{
	uint32_t magic, version;
	snprintf(r->what, sizeof r->what, "header");
	if (!rd_u32(r, &magic)) return false;
	if (memcmp(&magic, "GGUF", 4) != 0) {
		rfail(r, -EINVAL, "not a GGUF file (the first 4 bytes are not \"GGUF\")");
		return false;
	}
	if (!rd_u32(r, &version)) return false;
	if (version == 1) {
		rfail(r, -ENOTSUP,
		      "GGUF version 1 is not supported (only 2 and 3): convert the model again "
		      "with "
		      "a current converter");
		return false;
	}
	if (version != 2 && version != 3) {
		if ((version & 0xFFFF) == 0)
			rfail(r, -ENOTSUP, "big-endian GGUF files are not supported");
		else
			rfail(r, -ENOTSUP, "unsupported GGUF version %u (expected 2 or 3)",
			      version);
		return false;
	}
	f->version = version;
	uint64_t nt, nkv;
	snprintf(r->what, sizeof r->what, "tensor count");
	if (!rd_u64(r, &nt)) return false;
	snprintf(r->what, sizeof r->what, "metadata count");
	if (!rd_u64(r, &nkv)) return false;
	/* each key-value takes at least 13 bytes (key length, type, 1-byte value),
	 * each tensor info at least 32 (name length, n_dims, one ne, type, offset) */
	if (nkv > (r->size - r->pos) / 13) {
		rfail(r, -EINVAL,
		      "header claims %llu metadata keys, more than a %zu-byte file can hold",
		      (unsigned long long)nkv, r->size);
		return false;
	}
	if (nt > (r->size - r->pos) / 32) {
		rfail(r, -EINVAL, "header claims %llu tensors, more than a %zu-byte file can hold",
		      (unsigned long long)nt, r->size);
		return false;
	}
	if (nkv > GGUF_MAX_KV || nt > GGUF_MAX_TENSORS) {
		rfail(r, -EINVAL,
		      "header claims %llu metadata keys and %llu tensors; at most %d and %d are "
		      "accepted",
		      (unsigned long long)nkv, (unsigned long long)nt, GGUF_MAX_KV,
		      GGUF_MAX_TENSORS);
		return false;
	}
	f->n_kv = (int64_t)nkv;
	f->n_tensors = (int64_t)nt;
	return true;
}

static bool parse_kvs(struct gguf_file *f, struct reader *r)
{
	f->kvs = calloc((size_t)f->n_kv + 1, sizeof *f->kvs);
	if (!f->kvs) {
		rfail(r, -ENOMEM, "out of memory for %lld keys", (long long)f->n_kv);
		return false;
	}
	char buf[300];
	for (int64_t i = 0; i < f->n_kv; i++) {
		struct kv *kv = &f->kvs[i];
		uint32_t t;
		snprintf(r->what, sizeof r->what, "metadata key #%lld name", (long long)i);
		r->at = r->pos;
		if (!rd_str(r, &kv->key)) return false;
		r->key = kv->key;
		snprintf(r->what, sizeof r->what, "key \"%s\"", show(buf, kv->key));
		if (!rd_u32(r, &t) || !rd_value(r, kv, t)) return false;
	}
	bool oom;
	const struct gguf_str *dup = find_duplicate(&f->kvs[0].key, sizeof *f->kvs, f->n_kv, &oom);
	r->key = (struct gguf_str){ 0 };
	if (oom || dup) {
		if (oom) {
			rfail(r, -ENOMEM, "out of memory");
		} else {
			point_at(r, *dup, true);
			rfail(r, -EINVAL, "key \"%s\" appears twice", show(buf, *dup));
		}
		return false;
	}
	int64_t ai = gguf_find_key(f, "general.alignment");
	f->alignment = GGUF_DEFAULT_ALIGNMENT;
	if (ai >= 0) {
		uint32_t a;
		point_at(r, f->kvs[ai].key, true);
		if (f->kvs[ai].type != GGUF_TYPE_UINT32) {
			rfail(r, -EINVAL,
			      "key \"general.alignment\" must be a uint32 (found type %u)",
			      (unsigned)f->kvs[ai].type);
			return false;
		}
		memcpy(&a, f->kvs[ai].raw, 4);
		if (a == 0 || (a & (a - 1)) != 0) {
			rfail(r, -EINVAL,
			      "key \"general.alignment\" is %u, expected a power of two", a);
			return false;
		}
		f->alignment = a;
	}
	return true;
}

static bool parse_tensor_info(struct gguf_file *f, struct reader *r, int64_t i)
{
	struct gguf_tensor_info *t = &f->tensors[i];
	char buf[300];
	snprintf(r->what, sizeof r->what, "tensor #%lld name", (long long)i);
	r->at = r->pos;
	r->key = (struct gguf_str){ 0 };
	if (!rd_str(r, &t->name)) return false;
	r->tensor = t->name;
	const char *nm = show(buf, t->name);
	snprintf(r->what, sizeof r->what, "tensor \"%s\" info", nm);
	if (!rd_u32(r, &t->n_dims)) return false;
	if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
		rfail(r, -EINVAL, "tensor \"%s\" has %u dimensions, expected 1 to %d", nm,
		      t->n_dims, GGUF_MAX_DIMS);
		return false;
	}
	for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
	uint64_t n_elems = 1;
	for (uint32_t d = 0; d < t->n_dims; d++) {
		uint64_t ne;
		if (!rd_u64(r, &ne)) return false;
		if (ne > INT64_MAX || (ne != 0 && n_elems > (uint64_t)INT64_MAX / ne)) {
			rfail(r, -EINVAL, "tensor \"%s\" dimension %u (%llu) makes it too large",
			      nm, d, (unsigned long long)ne);
			return false;
		}
		t->ne[d] = (int64_t)ne;
		n_elems *= ne;
	}
	if (!rd_u32(r, &t->type) || !rd_u64(r, &t->offset)) return false;
	if (!tensor_type_valid(t->type)) {
		rfail(r, -ENOTSUP,
		      "tensor \"%s\" has type id %u, which is not supported (supported: f32, f16, "
		      "bf16, q8_0, q4_0, q4_k, q6_k)",
		      nm, t->type);
		return false;
	}
	int64_t bs = tensor_type_block_size(t->type);
	if (t->ne[0] % bs != 0) {
		rfail(r, -EINVAL,
		      "tensor \"%s\": row length %lld is not a multiple of the %s block size %lld",
		      nm, (long long)t->ne[0], tensor_type_name(t->type), (long long)bs);
		return false;
	}
	uint64_t row = tensor_type_row_size(t->type, t->ne[0]);
	uint64_t rows = n_elems / (t->ne[0] ? (uint64_t)t->ne[0] : 1);
	if (t->ne[0] == 0) rows = 0;
	if (rows != 0 && row > UINT64_MAX / rows) {
		rfail(r, -EINVAL, "tensor \"%s\" is too large", nm);
		return false;
	}
	t->nbytes = row * rows;
	if (t->offset % f->alignment != 0) {
		rfail(r, -EINVAL,
		      "tensor \"%s\" data offset %llu is not a multiple of the alignment %llu", nm,
		      (unsigned long long)t->offset, (unsigned long long)f->alignment);
		return false;
	}
	return true;
}

/* After the tensor table: place the data section and check each tensor's range. */
static bool place_tensors(struct gguf_file *f, struct reader *r)
{
	char buf[300];
	uint64_t pad = (f->alignment - r->pos % f->alignment) % f->alignment;
	f->data_offset = r->pos + pad;
	for (int64_t i = 0; i < f->n_tensors; i++) {
		struct gguf_tensor_info *t = &f->tensors[i];
		uint64_t avail = f->data_offset <= r->size ? r->size - f->data_offset : 0;
		if (t->offset > avail || t->nbytes > avail - t->offset) {
			point_at(r, t->name, false);
			rfail(r, -EINVAL,
			      "tensor \"%s\" data [offset %llu, %llu bytes] runs past the end of "
			      "the file (data section starts at %llu, file size %zu)",
			      show(buf, t->name), (unsigned long long)t->offset,
			      (unsigned long long)t->nbytes, (unsigned long long)f->data_offset,
			      r->size);
			return false;
		}
		t->data = r->p + f->data_offset + t->offset;
	}
	bool oom;
	const struct gguf_str *dup =
	        find_duplicate(&f->tensors[0].name, sizeof *f->tensors, f->n_tensors, &oom);
	if (oom || dup) {
		if (oom) {
			rfail(r, -ENOMEM, "out of memory");
		} else {
			point_at(r, *dup, false);
			rfail(r, -EINVAL, "tensor \"%s\" appears twice", show(buf, *dup));
		}
		return false;
	}
	if (f->n_tensors < 2) return true;
	const struct gguf_tensor_info **v = malloc((size_t)f->n_tensors * sizeof *v);
	if (!v) {
		rfail(r, -ENOMEM, "out of memory");
		return false;
	}
	for (int64_t i = 0; i < f->n_tensors; i++) v[i] = &f->tensors[i];
	qsort(v, (size_t)f->n_tensors, sizeof *v, cmp_tensor_offset);
	bool ok = true;
	for (int64_t i = 1; i < f->n_tensors && ok; i++) {
		if (v[i - 1]->offset + v[i - 1]->nbytes > v[i]->offset) {
			char buf2[300];
			point_at(r, v[i - 1]->name, false);
			rfail(r, -EINVAL,
			      "tensor \"%s\" data [offset %llu, %llu bytes] overlaps tensor \"%s\" "
			      "at offset %llu",
			      show(buf, v[i - 1]->name), (unsigned long long)v[i - 1]->offset,
			      (unsigned long long)v[i - 1]->nbytes, show(buf2, v[i]->name),
			      (unsigned long long)v[i]->offset);
			ok = false;
		}
	}
	free(v);
	return ok;
}

static bool parse(struct gguf_file *f, struct infill_error *err)
{
	struct reader r = { .p = f->base, .size = f->size, .file = f->name, .err = err };
	if (!parse_header(f, &r) || !parse_kvs(f, &r)) return false;
	f->tensors = calloc((size_t)f->n_tensors + 1, sizeof *f->tensors);
	if (!f->tensors) {
		fail(err, -ENOMEM, f->name, "out of memory for %lld tensors",
		     (long long)f->n_tensors);
		return false;
	}
	for (int64_t i = 0; i < f->n_tensors; i++)
		if (!parse_tensor_info(f, &r, i)) return false;
	return place_tensors(f, &r);
}

/* ---- opening and closing ---- */

static struct gguf_file *file_new(const char *name)
{
	struct gguf_file *f = calloc(1, sizeof *f);
	if (f) f->guard = -1;
	if (f) f->name = strdup(name);
	if (!f || !f->name) {
		free(f);
		return NULL;
	}
	return f;
}

struct gguf_file *gguf_open_memory(const void *data, size_t size, struct infill_error *err)
{
	struct gguf_file *f = file_new("<memory>");
	if (!f) {
		fail(err, -ENOMEM, "<memory>", "out of memory");
		return NULL;
	}
	f->base = data;
	f->size = size;
	if (!parse(f, err)) {
		gguf_close(f);
		return NULL;
	}
	return f;
}

struct gguf_file *gguf_open(const char *path, struct infill_error *err)
{
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	 * writer, forever, with the engine thread stuck in open(). The type is
	 * checked on the descriptor, so a path swapped after a stat cannot
	 * fool it. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		fail(err, -e, path, "cannot open: %s", strerror(e));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		fail(err, -e, path, "cannot stat: %s", strerror(e));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		fail(err, -EINVAL, path,
		     "not a regular file (%s): a model must be a GGUF file on disk",
		     S_ISFIFO(st.st_mode)   ? "a FIFO"
		     : S_ISDIR(st.st_mode)  ? "a directory"
		     : S_ISCHR(st.st_mode)  ? "a character device"
		     : S_ISBLK(st.st_mode)  ? "a block device"
		     : S_ISSOCK(st.st_mode) ? "a socket"
		                            : "a special file");
		close(fd);
		return NULL;
	}
	if (st.st_size == 0) {
		fail(err, -EINVAL, path, "the file is empty");
		close(fd);
		return NULL;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED) {
		fail(err, -e, path, "cannot map %lld bytes: %s", (long long)st.st_size,
		     strerror(e));
		return NULL;
	}
	struct gguf_file *f = file_new(path);
	if (!f) {
		munmap(p, (size_t)st.st_size);
		fail(err, -ENOMEM, path, "out of memory");
		return NULL;
	}
	f->base = p;
	f->size = (size_t)st.st_size;
	f->mapped = true;
	f->st = st;
	/* Unguarded (all slots taken) still works; it only loses the SIGBUS
	 * protection, as before the guard existed. */
	f->guard = mapguard_add(p, f->size);
	if (!parse(f, err)) {
		gguf_close(f);
		return NULL;
	}
	return f;
}

void gguf_close(struct gguf_file *f)
{
	if (!f) return;
	if (f->kvs)
		for (int64_t i = 0; i < f->n_kv; i++) free(f->kvs[i].str_off);
	free(f->kvs);
	free(f->tensors);
	if (f->mapped) {
		mapguard_remove(f->guard); /* before the pages go */
		munmap((void *)f->base, f->size);
	}
	free(f->name);
	free(f);
}

bool gguf_is_mapped(const struct gguf_file *f)
{
	return f->mapped;
}

bool gguf_file_changed(const struct gguf_file *f, char *why, size_t why_size)
{
	if (!f->mapped) return false; /* a caller's buffer: theirs to keep */
	const char *reason = NULL;
	struct stat now;
	if (mapguard_hit(f->guard))
		reason = "it shrank while being read (its pages now read as zeros)";
	else if (stat(f->name, &now) != 0)
		reason = NULL; /* deleted: the mapping keeps the old contents, safe to use */
	else if (now.st_dev != f->st.st_dev || now.st_ino != f->st.st_ino)
		reason = "another file was put in its place";
	else if (now.st_size != f->st.st_size)
		reason = now.st_size < f->st.st_size ? "it was truncated" : "it grew";
	else if (now.st_mtim.tv_sec != f->st.st_mtim.tv_sec ||
	         now.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec)
		reason = "it was rewritten";
	if (reason && why && why_size) snprintf(why, why_size, "%s", reason);
	return reason != NULL;
}

/* ---- accessors ---- */

uint32_t gguf_version(const struct gguf_file *f)
{
	return f->version;
}

uint64_t gguf_alignment(const struct gguf_file *f)
{
	return f->alignment;
}

uint64_t gguf_data_offset(const struct gguf_file *f)
{
	return f->data_offset;
}

const void *gguf_base(const struct gguf_file *f, size_t *size)
{
	if (size) *size = f->size;
	return f->base;
}

const char *gguf_name(const struct gguf_file *f)
{
	return f->name;
}

bool gguf_str_eq(struct gguf_str s, const char *c)
{
	return s.ptr && str_eq(s, c);
}

int64_t gguf_key_count(const struct gguf_file *f)
{
	return f->n_kv;
}

int64_t gguf_find_key(const struct gguf_file *f, const char *key)
{
	for (int64_t i = 0; i < f->n_kv; i++)
		if (str_eq(f->kvs[i].key, key)) return i;
	return -1;
}

struct gguf_str gguf_key_name(const struct gguf_file *f, int64_t i)
{
	struct gguf_str none = { NULL, 0 };
	return i >= 0 && i < f->n_kv ? f->kvs[i].key : none;
}

enum gguf_type gguf_key_type(const struct gguf_file *f, int64_t i)
{
	return i >= 0 && i < f->n_kv ? f->kvs[i].type : (enum gguf_type) - 1;
}

bool gguf_key_raw(const struct gguf_file *f, int64_t i, const void **raw, uint64_t *len)
{
	if (i < 0 || i >= f->n_kv) return false;
	*raw = f->kvs[i].raw;
	*len = f->kvs[i].raw_len;
	return true;
}

static const struct kv *kv_get(const struct gguf_file *f, const char *key)
{
	int64_t i = gguf_find_key(f, key);
	return i >= 0 ? &f->kvs[i] : NULL;
}

/* Reads an integer-typed value as (is_signed, magnitude-bearing) 64-bit parts. */
static bool kv_int(const struct kv *kv, int64_t *s, uint64_t *u, bool *is_unsigned)
{
	const uint8_t *p = kv->raw;
	*is_unsigned = false;
	switch (kv->type) {
	case GGUF_TYPE_UINT8:
		*u = p[0];
		*is_unsigned = true;
		return true;
	case GGUF_TYPE_INT8: *s = (int8_t)p[0]; return true;
	case GGUF_TYPE_UINT16: {
		uint16_t v;
		memcpy(&v, p, 2);
		*u = v;
		*is_unsigned = true;
		return true;
	}
	case GGUF_TYPE_INT16: {
		int16_t v;
		memcpy(&v, p, 2);
		*s = v;
		return true;
	}
	case GGUF_TYPE_UINT32: {
		uint32_t v;
		memcpy(&v, p, 4);
		*u = v;
		*is_unsigned = true;
		return true;
	}
	case GGUF_TYPE_INT32: {
		int32_t v;
		memcpy(&v, p, 4);
		*s = v;
		return true;
	}
	case GGUF_TYPE_UINT64:
		memcpy(u, p, 8);
		*is_unsigned = true;
		return true;
	case GGUF_TYPE_INT64: memcpy(s, p, 8); return true;
	default: return false;
	}
}

bool gguf_get_i64(const struct gguf_file *f, const char *key, int64_t *out)
{
	const struct kv *kv = kv_get(f, key);
	int64_t s;
	uint64_t u;
	bool uns;
	if (!kv || !kv_int(kv, &s, &u, &uns)) return false;
	if (uns) {
		if (u > INT64_MAX) return false;
		s = (int64_t)u;
	}
	*out = s;
	return true;
}

bool gguf_get_u32(const struct gguf_file *f, const char *key, uint32_t *out)
{
	const struct kv *kv = kv_get(f, key);
	int64_t s;
	uint64_t u;
	bool uns;
	if (!kv || !kv_int(kv, &s, &u, &uns)) return false;
	if (!uns) {
		if (s < 0) return false;
		u = (uint64_t)s;
	}
	if (u > UINT32_MAX) return false;
	*out = (uint32_t)u;
	return true;
}

bool gguf_get_f32(const struct gguf_file *f, const char *key, float *out)
{
	const struct kv *kv = kv_get(f, key);
	if (!kv) return false;
	if (kv->type == GGUF_TYPE_FLOAT32) {
		memcpy(out, kv->raw, 4);
		return true;
	}
	if (kv->type == GGUF_TYPE_FLOAT64) {
		double d;
		memcpy(&d, kv->raw, 8);
		*out = (float)d;
		return true;
	}
	int64_t s;
	uint64_t u;
	bool uns;
	if (!kv_int(kv, &s, &u, &uns)) return false;
	*out = uns ? (float)u : (float)s;
	return true;
}

bool gguf_get_bool(const struct gguf_file *f, const char *key, bool *out)
{
	const struct kv *kv = kv_get(f, key);
	if (!kv || kv->type != GGUF_TYPE_BOOL) return false;
	*out = kv->raw[0] != 0;
	return true;
}

bool gguf_get_str(const struct gguf_file *f, const char *key, struct gguf_str *out)
{
	const struct kv *kv = kv_get(f, key);
	if (!kv || kv->type != GGUF_TYPE_STRING) return false;
	uint64_t len;
	memcpy(&len, kv->raw, 8);
	out->ptr = (const char *)kv->raw + 8;
	out->len = len;
	return true;
}

bool gguf_get_arr(const struct gguf_file *f, const char *key, enum gguf_type *elem_type,
                  uint64_t *n)
{
	const struct kv *kv = kv_get(f, key);
	if (!kv || kv->type != GGUF_TYPE_ARRAY) return false;
	*elem_type = kv->arr_type;
	*n = kv->arr_n;
	return true;
}

struct gguf_str gguf_get_arr_str(const struct gguf_file *f, const char *key, uint64_t i)
{
	struct gguf_str s = { NULL, 0 };
	const struct kv *kv = kv_get(f, key);
	if (!kv || kv->type != GGUF_TYPE_ARRAY || kv->arr_type != GGUF_TYPE_STRING ||
	    i >= kv->arr_n)
		return s;
	const uint8_t *p = kv->arr_data + kv->str_off[i];
	memcpy(&s.len, p, 8);
	s.ptr = (const char *)p + 8;
	return s;
}

const void *gguf_get_arr_data(const struct gguf_file *f, const char *key)
{
	const struct kv *kv = kv_get(f, key);
	if (!kv || kv->type != GGUF_TYPE_ARRAY || kv->arr_type == GGUF_TYPE_STRING) return NULL;
	return kv->arr_data;
}

int64_t gguf_tensor_count(const struct gguf_file *f)
{
	return f->n_tensors;
}

int64_t gguf_find_tensor(const struct gguf_file *f, const char *name)
{
	for (int64_t i = 0; i < f->n_tensors; i++)
		if (str_eq(f->tensors[i].name, name)) return i;
	return -1;
}

const struct gguf_tensor_info *gguf_tensor(const struct gguf_file *f, int64_t i)
{
	return i >= 0 && i < f->n_tensors ? &f->tensors[i] : NULL;
}
