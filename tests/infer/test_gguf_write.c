/*
 * test_gguf_write.c - writer -> reader round trips, truncation at every
 * byte, and hand-crafted hostile headers. Every rejected file must give a
 * message naming what is wrong; none may crash or read out of bounds (this
 * test runs under ASan in the sanitizer build, and each buffer is an exact-
 * size heap copy so an over-read is caught).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "gguf.h"
#include "harness.h"
#include "quant.h"

/* ---- a byte builder for hand-made files ---- */

struct bytes {
	uint8_t *p;
	size_t n, cap;
};

static void b_put(struct bytes *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
}

static void b_u32(struct bytes *b, uint32_t v)
{
	b_put(b, &v, 4);
}

static void b_u64(struct bytes *b, uint64_t v)
{
	b_put(b, &v, 8);
}

static void b_str(struct bytes *b, const char *s)
{
	b_u64(b, strlen(s));
	b_put(b, s, strlen(s));
}

static void b_pad(struct bytes *b, size_t align)
{
	static const uint8_t z[64];
	b_put(b, z, (align - b->n % align) % align);
}

static void b_header(struct bytes *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
	b_put(b, "GGUF", 4);
	b_u32(b, version);
	b_u64(b, n_tensors);
	b_u64(b, n_kv);
}

/* one tensor info: 1-D or 2-D */
static void b_tensor(struct bytes *b, const char *name, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                     uint32_t type, uint64_t offset)
{
	b_str(b, name);
	b_u32(b, n_dims);
	b_u64(b, ne0);
	if (n_dims > 1) b_u64(b, ne1);
	b_u32(b, type);
	b_u64(b, offset);
}

/* Opens an exact-size heap copy; returns whether it opened, the message in err. */
static bool try_open(const uint8_t *p, size_t n, struct infill_error *err)
{
	uint8_t *copy = malloc(n ? n : 1);
	memcpy(copy, p, n);
	err->message[0] = 0;
	struct gguf_file *f = gguf_open_memory(copy, n, err);
	bool ok = f != NULL;
	gguf_close(f);
	free(copy);
	return ok;
}

/* The reader refuses b with this code, naming this key and tensor ("" for
 * none) and the file offset of the item at fault; the message, which is what
 * a user reads, says what is wrong (needle). */
#define EXPECT_REJECT(b, want_code, want_key, want_tensor, want_offset, needle)                 \
	do {                                                                                    \
		struct infill_error e_;                                                          \
		CHECK(!try_open((b)->p, (b)->n, &e_));                                          \
		CHECK_INT_EQ(e_.code, want_code);                                               \
		CHECK_STR_EQ(e_.key, want_key);                                                 \
		CHECK_STR_EQ(e_.tensor, want_tensor);                                           \
		CHECK_INT_EQ(e_.offset, want_offset);                                           \
		if (!strstr(e_.message, needle)) {                                              \
			fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", e_.message, needle); \
			CHECK(!"message names the problem");                                    \
		}                                                                               \
		free((b)->p);                                                                   \
		*(b) = (struct bytes){ 0 };                                                     \
	} while (0)

/* ---- writer round trip ---- */

static int fill_ramp(void *ctx, void *buf, uint64_t nbytes)
{
	int *calls = ctx;
	(*calls)++;
	float *x = buf;
	for (uint64_t i = 0; i < nbytes / 4; i++) x[i] = (float)i * 0.5f;
	return 0;
}

static int fill_fail(void *ctx, void *buf, uint64_t nbytes)
{
	return -EIO;
}

static void tmp_path(char *out, size_t n, const char *tag)
{
	snprintf(out, n, "/tmp/infill-test-gguf-%d-%s.gguf", (int)getpid(), tag);
}

TEST(writer_round_trip)
{
	struct gguf_writer *w = gguf_writer_new();
	REQUIRE(w);
	CHECK_INT_EQ(gguf_writer_set_u32(w, "a.u32", 4000000000u), 0);
	CHECK_INT_EQ(gguf_writer_set_i32(w, "a.i32", -7), 0);
	CHECK_INT_EQ(gguf_writer_set_f32(w, "a.f32", 1e-6f), 0);
	CHECK_INT_EQ(gguf_writer_set_bool(w, "a.bool", true), 0);
	CHECK_INT_EQ(gguf_writer_set_str(w, "a.str", "héllo"), 0);
	CHECK_INT_EQ(gguf_writer_set_u32(w, "a.u32", 1), -EEXIST);
	CHECK_INT_EQ(gguf_writer_set_u32(w, "general.alignment", 64), -EINVAL);
	int32_t ints[5] = { 1, -2, 3, -4, 5 };
	CHECK_INT_EQ(gguf_writer_set_arr(w, "a.ints", GGUF_TYPE_INT32, ints, 5), 0);
	const char *strs[3] = { "x", "", "zzz" };
	CHECK_INT_EQ(gguf_writer_set_arr_str(w, "a.strs", strs, 3), 0);
	CHECK_INT_EQ(gguf_writer_set_arr_str(w, "a.empty", strs, 0), 0);

	float f[64 * 3];
	for (int i = 0; i < 64 * 3; i++) f[i] = (float)i / 100.0f - 0.5f;
	uint8_t q4[3 * 2 * 18];
	for (int r = 0; r < 3; r++)
		tensor_row_quantize(TENSOR_TYPE_Q4_0, f + 64 * r, q4 + r * 36, 64);
	int64_t ne2[2] = { 64, 3 }, ne1[1] = { 5 };
	CHECK_INT_EQ(gguf_writer_add_tensor(w, "t.q4", TENSOR_TYPE_Q4_0, 2, ne2, q4, sizeof q4), 0);
	CHECK_INT_EQ(gguf_writer_add_tensor(w, "t.q4", TENSOR_TYPE_Q4_0, 2, ne2, q4, sizeof q4),
	             -EEXIST);
	CHECK_INT_EQ(gguf_writer_add_tensor(w, "t.bad", TENSOR_TYPE_Q4_0, 2, ne2, q4, 10), -EINVAL);
	CHECK_INT_EQ(gguf_writer_add_tensor(w, "t.bad", 99, 2, ne2, q4, sizeof q4), -EINVAL);
	CHECK_INT_EQ(gguf_writer_add_tensor_ref(w, "t.f32", TENSOR_TYPE_F32, 1, ne1, f, 20), 0);
	int calls = 0;
	int64_t ne_fill[2] = { 8, 4 };
	CHECK_INT_EQ(gguf_writer_add_tensor_fill(w, "t.fill", TENSOR_TYPE_F32, 2, ne_fill,
	                                         fill_ramp, &calls),
	             0);

	char path[256];
	tmp_path(path, sizeof path, "rt");
	struct infill_error err = { 0 };
	REQUIRE(gguf_writer_write(w, path, &err) == 0);
	CHECK_INT_EQ(calls, 1);
	gguf_writer_free(w);

	struct gguf_file *g = gguf_open(path, &err);
	if (!g) fprintf(stderr, "%s\n", err.message);
	REQUIRE(g);
	CHECK_INT_EQ(gguf_version(g), 3);
	CHECK_INT_EQ(gguf_key_count(g), 9); /* 8 + general.alignment */
	uint32_t u;
	int64_t i64;
	float x;
	bool bl;
	struct gguf_str s;
	CHECK(gguf_get_u32(g, "general.alignment", &u) && u == 32);
	CHECK(gguf_get_u32(g, "a.u32", &u) && u == 4000000000u);
	CHECK(gguf_get_i64(g, "a.i32", &i64) && i64 == -7);
	CHECK(!gguf_get_u32(g, "a.i32", &u)); /* negative does not fit */
	CHECK(gguf_get_f32(g, "a.f32", &x) && x == 1e-6f);
	CHECK(gguf_get_bool(g, "a.bool", &bl) && bl);
	CHECK(gguf_get_str(g, "a.str", &s) && gguf_str_eq(s, "héllo"));
	enum gguf_type et;
	uint64_t n;
	CHECK(gguf_get_arr(g, "a.ints", &et, &n) && et == GGUF_TYPE_INT32 && n == 5);
	const void *ip = gguf_get_arr_data(g, "a.ints");
	CHECK(ip && !memcmp(ip, ints, sizeof ints));
	CHECK(gguf_get_arr(g, "a.strs", &et, &n) && et == GGUF_TYPE_STRING && n == 3);
	CHECK(gguf_str_eq(gguf_get_arr_str(g, "a.strs", 0), "x"));
	CHECK(gguf_str_eq(gguf_get_arr_str(g, "a.strs", 1), ""));
	CHECK(gguf_str_eq(gguf_get_arr_str(g, "a.strs", 2), "zzz"));
	CHECK(gguf_get_arr(g, "a.empty", &et, &n) && n == 0);
	CHECK_INT_EQ(gguf_tensor_count(g), 3);
	const struct gguf_tensor_info *t = gguf_tensor(g, gguf_find_tensor(g, "t.q4"));
	REQUIRE(t);
	CHECK(t->type == TENSOR_TYPE_Q4_0 && t->n_dims == 2 && t->ne[0] == 64 && t->ne[1] == 3);
	CHECK(t->nbytes == sizeof q4 && !memcmp(t->data, q4, sizeof q4));
	t = gguf_tensor(g, gguf_find_tensor(g, "t.f32"));
	REQUIRE(t);
	CHECK(t->nbytes == 20 && !memcmp(t->data, f, 20) && t->offset % 32 == 0);
	t = gguf_tensor(g, gguf_find_tensor(g, "t.fill"));
	REQUIRE(t);
	CHECK(t->nbytes == 128 && ((const float *)t->data)[31] == 15.5f);

	/* copy every key of the written file into a second file */
	w = gguf_writer_new();
	for (int64_t i = 0; i < gguf_key_count(g); i++) {
		if (gguf_str_eq(gguf_key_name(g, i), "general.alignment")) continue;
		CHECK_INT_EQ(gguf_writer_copy_key(w, g, i), 0);
	}
	char path2[256];
	tmp_path(path2, sizeof path2, "rt2");
	CHECK_INT_EQ(gguf_writer_write(w, path2, &err), 0);
	gguf_writer_free(w);
	struct gguf_file *h = gguf_open(path2, &err);
	REQUIRE(h);
	CHECK_INT_EQ(gguf_key_count(h), gguf_key_count(g));
	for (int64_t i = 0; i < gguf_key_count(g); i++) {
		const void *ra, *rb;
		uint64_t la, lb;
		CHECK(gguf_key_raw(g, i, &ra, &la) && gguf_key_raw(h, i, &rb, &lb));
		CHECK(la == lb && !memcmp(ra, rb, la));
	}
	gguf_close(h);
	gguf_close(g);
	unlink(path);
	unlink(path2);
}

TEST(writer_errors)
{
	struct gguf_writer *w = gguf_writer_new();
	int64_t ne[1] = { 4 };
	CHECK_INT_EQ(gguf_writer_add_tensor_fill(w, "t", TENSOR_TYPE_F32, 1, ne, fill_fail, NULL),
	             0);
	char path[256];
	tmp_path(path, sizeof path, "fail");
	struct infill_error err = { 0 };
	/* the fill callback's code comes back, naming the tensor it was producing */
	CHECK_INT_EQ(gguf_writer_write(w, path, &err), -EIO);
	CHECK_INT_EQ(err.code, -EIO);
	CHECK_STR_EQ(err.tensor, "t");
	CHECK(access(path, F_OK) != 0); /* a failed write leaves no file */
	CHECK_INT_EQ(gguf_writer_write(w, "/nonexistent-dir/x.gguf", &err), -ENOENT);
	CHECK_INT_EQ(err.code, -ENOENT);
	CHECK(strstr(err.message, "/nonexistent-dir/x.gguf") != NULL); /* names the path */
	gguf_writer_free(w);
	gguf_writer_free(NULL);
	gguf_close(NULL);
}

/* A small file with every value kind and two tensors, as bytes. */
static uint8_t *small_file(size_t *size, uint64_t *data_end)
{
	struct gguf_writer *w = gguf_writer_new();
	gguf_writer_set_u32(w, "k.u32", 5);
	gguf_writer_set_str(w, "k.str", "abc");
	float fl[3] = { 1, 2, 3 };
	gguf_writer_set_arr(w, "k.arr", GGUF_TYPE_FLOAT32, fl, 3);
	const char *strs[2] = { "one", "two" };
	gguf_writer_set_arr_str(w, "k.strs", strs, 2);
	float d[40];
	for (int i = 0; i < 40; i++) d[i] = (float)i;
	uint8_t q8[34];
	tensor_row_quantize(TENSOR_TYPE_Q8_0, d, q8, 32);
	int64_t ne_a[1] = { 8 }, ne_b[2] = { 32, 1 };
	gguf_writer_add_tensor(w, "a", TENSOR_TYPE_F32, 1, ne_a, d, 32);
	gguf_writer_add_tensor(w, "b", TENSOR_TYPE_Q8_0, 2, ne_b, q8, 34);
	char path[256];
	tmp_path(path, sizeof path, "small");
	struct infill_error err;
	gguf_writer_write(w, path, &err);
	gguf_writer_free(w);
	struct gguf_file *f = gguf_open(path, &err);
	size_t n;
	const void *base = gguf_base(f, &n);
	uint8_t *copy = malloc(n);
	memcpy(copy, base, n);
	const struct gguf_tensor_info *b = gguf_tensor(f, 1);
	*data_end = gguf_data_offset(f) + b->offset + b->nbytes;
	*size = n;
	gguf_close(f);
	unlink(path);
	return copy;
}

TEST(truncation_at_every_byte)
{
	size_t size;
	uint64_t data_end;
	uint8_t *p = small_file(&size, &data_end);
	REQUIRE(p);
	struct infill_error err;
	CHECK(try_open(p, size, &err));
	int bad = 0;
	for (size_t n = 0; n < size; n++) {
		bool ok = try_open(p, n, &err);
		if (n < data_end && (ok || !err.message[0])) bad++;
		if (n >= data_end && !ok) /* only trailing padding is missing: still a whole file */
			bad++;
	}
	CHECK_INT_EQ(bad, 0);
	/* and every single-byte corruption either opens or fails with a message */
	for (size_t i = 0; i < size; i++) {
		for (int v = 0; v < 256; v += 51) {
			uint8_t old = p[i];
			p[i] = (uint8_t)(old ^ (v | 1));
			if (!try_open(p, size, &err)) CHECK(err.message[0] != 0);
			p[i] = old;
		}
	}
	free(p);
}

TEST(hostile_headers)
{
	struct bytes b = { 0 };

	b_put(&b, "GGUX", 4);
	b_u32(&b, 3);
	EXPECT_REJECT(&b, -EINVAL, "", "", 0, "not a GGUF file");

	b_header(&b, 1, 0, 0);
	EXPECT_REJECT(&b, -ENOTSUP, "", "", 0, "version 1 is not supported");

	b_header(&b, 0x03000000, 0, 0);
	EXPECT_REJECT(&b, -ENOTSUP, "", "", 0, "big-endian");

	b_header(&b, 7, 0, 0);
	EXPECT_REJECT(&b, -ENOTSUP, "", "", 0, "unsupported GGUF version 7");

	b_put(&b, "GGUF", 4);
	b_u32(&b, 3);
	b_u32(&b, 0);
	EXPECT_REJECT(&b, -EINVAL, "", "", 8, "tensor count: needs 8 bytes");

	b_header(&b, 3, 0, UINT64_MAX);
	EXPECT_REJECT(&b, -EINVAL, "", "", 0, "metadata keys, more than");

	b_header(&b, 3, 1ull << 40, 0);
	EXPECT_REJECT(&b, -EINVAL, "", "", 0, "tensors, more than");

	/* counts that fit the file size but not the index limits */
	b_header(&b, 3, 0, 70000);
	for (int i = 0; i < 70000; i++) b_put(&b, "\0\0\0\0\0\0\0\0\0\0\0\0\0", 13);
	EXPECT_REJECT(&b, -EINVAL, "", "", 0, "at most 65536");

	b_header(&b, 3, 0, 1);
	b_u64(&b, UINT64_MAX); /* key length */
	b_put(&b, "xxxxxxxxxxxxxxxx", 16);
	EXPECT_REJECT(&b, -EINVAL, "", "", 32,
	              "metadata key #0 name: needs 18446744073709551615 bytes");

	b_header(&b, 3, 0, 1);
	b_str(&b, "k");
	b_u32(&b, 13);
	b_u32(&b, 0);
	EXPECT_REJECT(&b, -ENOTSUP, "k", "", 24, "key \"k\": unknown value type 13");

	b_header(&b, 3, 0, 1);
	b_str(&b, "k");
	b_u32(&b, GGUF_TYPE_STRING);
	b_u64(&b, 1000);
	b_put(&b, "abc", 3);
	EXPECT_REJECT(&b, -EINVAL, "k", "", 45, "key \"k\": needs 1000 bytes");

	b_header(&b, 3, 0, 1);
	b_str(&b, "arr");
	b_u32(&b, GGUF_TYPE_ARRAY);
	b_u32(&b, GGUF_TYPE_UINT64);
	b_u64(&b, 1ull << 61); /* 2^61 * 8 overflows 64 bits */
	b_u64(&b, 0);
	EXPECT_REJECT(&b, -EINVAL, "arr", "", 24,
	              "key \"arr\": array of 2305843009213693952 elements");

	b_header(&b, 3, 0, 1);
	b_str(&b, "arr");
	b_u32(&b, GGUF_TYPE_ARRAY);
	b_u32(&b, GGUF_TYPE_STRING);
	b_u64(&b, 1ull << 40);
	b_u64(&b, 0);
	EXPECT_REJECT(&b, -EINVAL, "arr", "", 24, "array of 1099511627776 strings cannot fit");

	b_header(&b, 3, 0, 1);
	b_str(&b, "arr");
	b_u32(&b, GGUF_TYPE_ARRAY);
	b_u32(&b, GGUF_TYPE_ARRAY);
	b_u64(&b, 1);
	b_u32(&b, GGUF_TYPE_UINT8);
	b_u64(&b, 0);
	EXPECT_REJECT(&b, -ENOTSUP, "arr", "", 24, "nested arrays are not supported");

	b_header(&b, 3, 0, 1);
	b_str(&b, "arr");
	b_u32(&b, GGUF_TYPE_ARRAY);
	b_u32(&b, 99);
	b_u64(&b, 0);
	EXPECT_REJECT(&b, -ENOTSUP, "arr", "", 24, "unknown array element type 99");

	b_header(&b, 3, 0, 2);
	b_str(&b, "dup");
	b_u32(&b, GGUF_TYPE_UINT8);
	b_put(&b, "\1", 1);
	b_str(&b, "dup");
	b_u32(&b, GGUF_TYPE_UINT8);
	b_put(&b, "\1", 1);
	EXPECT_REJECT(&b, -EINVAL, "dup", "", 40, "key \"dup\" appears twice");

	b_header(&b, 3, 0, 1);
	b_str(&b, "general.alignment");
	b_u32(&b, GGUF_TYPE_UINT32);
	b_u32(&b, 48);
	EXPECT_REJECT(&b, -EINVAL, "general.alignment", "", 24,
	              "\"general.alignment\" is 48, expected a power of two");

	b_header(&b, 3, 0, 1);
	b_str(&b, "general.alignment");
	b_u32(&b, GGUF_TYPE_UINT64);
	b_u64(&b, 32);
	EXPECT_REJECT(&b, -EINVAL, "general.alignment", "", 24, "must be a uint32");

	b_header(&b, 3, 1, 0);
	b_tensor(&b, "t", 5, 1, 1, 0, 0);
	b_put(&b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 32);
	EXPECT_REJECT(&b, -EINVAL, "", "t", 24, "tensor \"t\" has 5 dimensions");

	b_header(&b, 3, 1, 0);
	b_tensor(&b, "blk.0.w", 1, 32, 1, 77, 0);
	b_pad(&b, 32);
	b_put(&b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 32);
	EXPECT_REJECT(&b, -ENOTSUP, "", "blk.0.w", 24, "tensor \"blk.0.w\" has type id 77");

	b_header(&b, 3, 1, 0);
	b_tensor(&b, "q", 2, 33, 2, TENSOR_TYPE_Q4_0, 0);
	b_pad(&b, 32);
	EXPECT_REJECT(&b, -EINVAL, "", "q", 24,
	              "tensor \"q\": row length 33 is not a multiple of the q4_0 block size 32");

	b_header(&b, 3, 1, 0);
	b_tensor(&b, "big", 2, 1ull << 40, 1ull << 40, TENSOR_TYPE_F32, 0);
	b_pad(&b, 32);
	EXPECT_REJECT(&b, -EINVAL, "", "big", 24, "tensor \"big\" dimension 1");

	b_header(&b, 3, 1, 0);
	b_tensor(&b, "neg", 1, UINT64_MAX, 1, TENSOR_TYPE_F32, 0);
	b_pad(&b, 32);
	EXPECT_REJECT(&b, -EINVAL, "", "neg", 24, "tensor \"neg\" dimension 0");

	b_header(&b, 3, 1, 0);
	b_tensor(&b, "t", 1, 8, 1, TENSOR_TYPE_F32, 4);
	b_pad(&b, 32);
	EXPECT_REJECT(&b, -EINVAL, "", "t", 24,
	              "tensor \"t\" data offset 4 is not a multiple of the alignment 32");

	b_header(&b, 3, 1, 0);
	b_tensor(&b, "blk.3.ffn_up.weight", 2, 64, 64, TENSOR_TYPE_F32, 0);
	b_pad(&b, 32);
	b_put(&b, "0123456789", 10);
	EXPECT_REJECT(&b, -EINVAL, "", "blk.3.ffn_up.weight", 24,
	              "tensor \"blk.3.ffn_up.weight\" data [offset 0, 16384 bytes] runs past "
	              "the end of the file");

	b_header(&b, 3, 1, 0);
	b_tensor(&b, "t", 1, 8, 1, TENSOR_TYPE_F32, UINT64_MAX - 31);
	b_pad(&b, 32);
	EXPECT_REJECT(&b, -EINVAL, "", "t", 24, "runs past the end of the file");

	b_header(&b, 3, 2, 0);
	b_tensor(&b, "a", 1, 16, 1, TENSOR_TYPE_F32, 0);
	b_tensor(&b, "b", 1, 8, 1, TENSOR_TYPE_F32, 32);
	b_pad(&b, 32);
	for (int i = 0; i < 4; i++) b_put(&b, "0123456789abcdef0123456789abcdef", 32);
	EXPECT_REJECT(&b, -EINVAL, "", "a", 24,
	              "tensor \"a\" data [offset 0, 64 bytes] overlaps tensor \"b\"");

	b_header(&b, 3, 2, 0);
	b_tensor(&b, "a", 1, 8, 1, TENSOR_TYPE_F32, 0);
	b_tensor(&b, "a", 1, 8, 1, TENSOR_TYPE_F32, 32);
	b_pad(&b, 32);
	for (int i = 0; i < 2; i++) b_put(&b, "0123456789abcdef0123456789abcdef", 32);
	EXPECT_REJECT(&b, -EINVAL, "", "a", 57, "tensor \"a\" appears twice");

	/* a name with control bytes is escaped in the message */
	b_header(&b, 3, 1, 0);
	b_tensor(&b, "x\n\x1b[2J", 1, 8, 1, 200, 0);
	b_pad(&b, 32);
	EXPECT_REJECT(&b, -ENOTSUP, "", "x\n\x1b[2J", 24,
	              "tensor \"x\\x0a\\x1b[2J\" has type id 200");

	/* v2 files are read; an alignment of 64 moves the data section */
	b_header(&b, 2, 1, 1);
	b_str(&b, "general.alignment");
	b_u32(&b, GGUF_TYPE_UINT32);
	b_u32(&b, 64);
	b_tensor(&b, "t", 1, 4, 1, TENSOR_TYPE_F32, 0);
	b_pad(&b, 64);
	size_t data_at = b.n;
	float v[4] = { 1, 2, 3, 4 };
	b_put(&b, v, 16);
	struct infill_error err;
	struct gguf_file *f = gguf_open_memory(b.p, b.n, &err);
	REQUIRE(f);
	CHECK_INT_EQ(gguf_version(f), 2);
	CHECK_INT_EQ(gguf_alignment(f), 64);
	CHECK_INT_EQ(gguf_data_offset(f), data_at);
	CHECK(!memcmp(gguf_tensor(f, 0)->data, v, 16));
	gguf_close(f);
	free(b.p);
}

TEST_MAIN()
