/*
 * gguf.h - reading and writing GGUF files (v2 and v3). Private to infer/.
 *
 * The reader memory-maps the file and checks every count, offset, size and
 * string length against the file before use, so a truncated or hostile file
 * yields an error naming the problem, never an out-of-bounds read. Strings
 * and tensor data point into the mapping: they are borrowed and stay valid
 * until gguf_close(). Objects are not thread-safe for mutation but a file
 * that is only read may be shared by threads.
 */
#ifndef INFILL_INFER_GGUF_H
#define INFILL_INFER_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h" /* struct infill_error: what every call below fills on failure */

/* Metadata value types, numbered as in the GGUF spec. */
enum gguf_type {
	GGUF_TYPE_UINT8 = 0,
	GGUF_TYPE_INT8 = 1,
	GGUF_TYPE_UINT16 = 2,
	GGUF_TYPE_INT16 = 3,
	GGUF_TYPE_UINT32 = 4,
	GGUF_TYPE_INT32 = 5,
	GGUF_TYPE_FLOAT32 = 6,
	GGUF_TYPE_BOOL = 7,
	GGUF_TYPE_STRING = 8,
	GGUF_TYPE_ARRAY = 9,
	GGUF_TYPE_UINT64 = 10,
	GGUF_TYPE_INT64 = 11,
	GGUF_TYPE_FLOAT64 = 12,
};

/* Bytes of one scalar of type t; 0 for STRING, ARRAY and unknown types. */
size_t gguf_scalar_size(uint32_t t);

struct gguf_str {
	const char *ptr; /* not NUL-terminated; borrowed from the mapping */
	uint64_t len;
};

struct gguf_tensor_info {
	struct gguf_str name;
	uint32_t n_dims;
	int64_t ne[4];    /* ne[0] is the innermost (contiguous) dimension; unused dims are 1 */
	uint32_t type;    /* enum tensor_type value (quant.h), as stored in the file */
	uint64_t offset;  /* from the start of the data section, as stored */
	const void *data; /* borrowed: points into the mapping, nbytes long */
	uint64_t nbytes;
};

struct gguf_file;

/* ---- reading ---- */

/* Opens and validates `path`. Returns a new file (free with gguf_close) or NULL with *err set. */
struct gguf_file *gguf_open(const char *path, struct infill_error *err);
/* Same over a caller-owned buffer (used by tests and fuzzers); the buffer must outlive the file. */
struct gguf_file *gguf_open_memory(const void *data, size_t size, struct infill_error *err);
/* Accepts NULL. */
void gguf_close(struct gguf_file *f);

/* Whether the file behind a mapped gguf_file changed since it was opened:
 * truncated or rewritten in place (size, mtime), replaced (another inode at
 * the path), or shrunk under a read (mapguard.h: its pages are now zeros).
 * Then what was read from it may be wrong and it should be opened again; why
 * gets a short reason. A deleted file is not a change (the mapping keeps its
 * contents). Always false for gguf_open_memory. A stat() per call: cheap
 * enough before each completion. */
bool gguf_file_changed(const struct gguf_file *f, char *why, size_t why_size);

/* True when f maps a file (gguf_open), false for gguf_open_memory's buffer. */
bool gguf_is_mapped(const struct gguf_file *f);

uint32_t gguf_version(const struct gguf_file *f);
/* general.alignment (default 32) and the file offset where the data section starts. */
uint64_t gguf_alignment(const struct gguf_file *f);
uint64_t gguf_data_offset(const struct gguf_file *f);
/* The whole file image (borrowed, valid until gguf_close); *size gets its length. */
const void *gguf_base(const struct gguf_file *f, size_t *size);
/* The path given to gguf_open ("<memory>" for gguf_open_memory), for messages. Borrowed. */
const char *gguf_name(const struct gguf_file *f);
/* True when s (a borrowed, non-terminated string) equals the C string c. */
bool gguf_str_eq(struct gguf_str s, const char *c);

/* Metadata: keys are indexed 0..n-1; gguf_find_key returns -1 when absent. */
int64_t gguf_key_count(const struct gguf_file *f);
int64_t gguf_find_key(const struct gguf_file *f, const char *key);
struct gguf_str gguf_key_name(const struct gguf_file *f, int64_t i);
/* (enum gguf_type)-1 when i is out of range. */
enum gguf_type gguf_key_type(const struct gguf_file *f, int64_t i);
/* The serialized value of key i as stored after its type field (for arrays:
 * element type, count, elements). Borrowed. False when i is out of range. */
bool gguf_key_raw(const struct gguf_file *f, int64_t i, const void **raw, uint64_t *len);

/* Scalar getters convert among the integer types when the value fits and
 * return false (leaving *out unchanged) when the key is missing, of a
 * non-convertible type or out of range. */
bool gguf_get_u32(const struct gguf_file *f, const char *key, uint32_t *out);
bool gguf_get_i64(const struct gguf_file *f, const char *key, int64_t *out);
bool gguf_get_f32(const struct gguf_file *f, const char *key, float *out);
bool gguf_get_bool(const struct gguf_file *f, const char *key, bool *out);
bool gguf_get_str(const struct gguf_file *f, const char *key, struct gguf_str *out);

/* Arrays: element type and count; element access by index (checked;
 * gguf_get_arr_str returns {NULL, 0} for a bad key or index). Nested arrays
 * are rejected when the file is opened. */
bool gguf_get_arr(const struct gguf_file *f, const char *key, enum gguf_type *elem_type,
                  uint64_t *n);
struct gguf_str gguf_get_arr_str(const struct gguf_file *f, const char *key, uint64_t i);
/* Raw pointer to a numeric array's elements (little-endian, packed, possibly
 * unaligned: read with memcpy), borrowed; NULL if not a numeric array. */
const void *gguf_get_arr_data(const struct gguf_file *f, const char *key);

/* Tensors. Opening checked each one: known type, ne[0] a multiple of the
 * block size, offset aligned, data inside the file, no two overlapping, no
 * duplicate names. gguf_tensor returns NULL for a bad index. */
int64_t gguf_tensor_count(const struct gguf_file *f);
int64_t gguf_find_tensor(const struct gguf_file *f, const char *name);
const struct gguf_tensor_info *gguf_tensor(const struct gguf_file *f, int64_t i);

/* ---- writing ---- */

struct gguf_writer;

/* New writer (free with gguf_writer_free, accepts NULL). Values and tensor
 * data are copied when added, except gguf_writer_add_tensor_ref, which
 * borrows until write. Setters return 0, -ENOMEM, or -EEXIST when the key
 * (or tensor name) is already present; setting general.alignment is
 * -EINVAL (the writer always writes 32). */
struct gguf_writer *gguf_writer_new(void);
void gguf_writer_free(struct gguf_writer *w);
int gguf_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_set_i32(struct gguf_writer *w, const char *key, int32_t v);
int gguf_writer_set_f32(struct gguf_writer *w, const char *key, float v);
int gguf_writer_set_bool(struct gguf_writer *w, const char *key, bool v);
int gguf_writer_set_str(struct gguf_writer *w, const char *key, const char *v);
/* Copies key i of `src` (any type, arrays included) into the writer. */
int gguf_writer_copy_key(struct gguf_writer *w, const struct gguf_file *src, int64_t i);
/* Numeric array (elem_type a scalar type; n elements packed little-endian, copied). */
int gguf_writer_set_arr(struct gguf_writer *w, const char *key, enum gguf_type elem_type,
                        const void *data, uint64_t n);
int gguf_writer_set_arr_str(struct gguf_writer *w, const char *key, const char *const *strs,
                            uint64_t n);
/* Tensors are written in the order added. nbytes must equal
 * tensor_type_row_size(type, ne[0]) * ne[1] * ... (else -EINVAL). */
int gguf_writer_add_tensor(struct gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                           const int64_t *ne, const void *data, uint64_t nbytes);
int gguf_writer_add_tensor_ref(struct gguf_writer *w, const char *name, uint32_t type,
                               uint32_t n_dims, const int64_t *ne, const void *data,
                               uint64_t nbytes);
/* A tensor whose bytes are produced at write time, one tensor at a time, so
 * a large model never sits in memory: fill(ctx, buf, nbytes) must fill buf
 * (nbytes, uninitialised) and return 0 or a negative errno. */
typedef int (*gguf_tensor_fill_fn)(void *ctx, void *buf, uint64_t nbytes);
int gguf_writer_add_tensor_fill(struct gguf_writer *w, const char *name, uint32_t type,
                                uint32_t n_dims, const int64_t *ne, gguf_tensor_fill_fn fill,
                                void *ctx);
/* Writes a v3 file with 32-byte alignment. Returns 0 or a negative errno with *err set. */
int gguf_writer_write(struct gguf_writer *w, const char *path, struct infill_error *err);

#endif
