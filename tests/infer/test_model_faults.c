/*
 * test_model_faults.c - a model file that lies or changes under us:
 * metadata out of range is refused with a message naming the key; a mapped
 * file truncated under a read reads zeros instead of killing the process
 * (mapguard.h), and gguf_file_changed / model_file_changed notice every kind
 * of change (truncated, rewritten, replaced), not a deletion.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf.h"
#include "harness.h"
#include "infer.h"
#include "mapguard.h"

/* A copy of the tiny F32 model with key `key` (u32) set to value. */
static int write_with_u32(const char *out, const char *key, uint32_t value)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/models/tiny-dsc-f32.gguf", testdata());
	struct infill_error ge;
	struct gguf_file *f = gguf_open(path, &ge);
	if (!f) return -1;
	struct gguf_writer *w = gguf_writer_new();
	size_t klen = strlen(key);
	for (int64_t i = 0; i < gguf_key_count(f); i++) {
		struct gguf_str k = gguf_key_name(f, i);
		if (k.len == klen && !memcmp(k.ptr, key, klen)) continue;
		gguf_writer_copy_key(w, f, i);
	}
	gguf_writer_set_u32(w, key, value);
	for (int64_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor_info *t = gguf_tensor(f, i);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
		int64_t ne[4] = { t->ne[0], t->ne[1], t->ne[2], t->ne[3] };
		gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne, t->data, t->nbytes);
	}
	int rc = gguf_writer_write(w, out, &ge);
	gguf_writer_free(w);
	gguf_close(f);
	return rc;
}

static struct model *load_path(const char *path, struct infill_error *err)
{
	struct model_params mp = model_params_default();
	mp.path = path;
	mp.backend = INFER_BACKEND_CPU;
	mp.n_threads = 1;
	mp.kv_bytes = 4u << 20;
	memset(err, 0, sizeof *err);
	return model_load(&mp, err);
}

static void expect_refused(int *test_failed_, const char *key, uint32_t value, const char *needle)
{
	char tmpl[] = "/tmp/infill-faults-XXXXXX";
	REQUIRE(mkdtemp(tmpl) != NULL);
	char p[256];
	snprintf(p, sizeof p, "%s/bad.gguf", tmpl);
	REQUIRE(write_with_u32(p, key, value) == 0);
	struct infill_error err;
	struct model *m = load_path(p, &err);
	CHECK(m == NULL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK_STR_EQ(err.key, key); /* the key the user must fix, by name */
	if (!strstr(err.message, needle))
		fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err.message, needle);
	CHECK(strstr(err.message, needle) != NULL);
	model_free(m);
	remove(p);
	rmdir(tmpl);
}

TEST(metadata_out_of_range_is_refused)
{
	expect_refused(test_failed_, "tokenizer.ggml.bos_token_id", 40000,
	               "tokenizer.ggml.bos_token_id is 40000, past the vocabulary");
	expect_refused(test_failed_, "tokenizer.ggml.eos_token_id", 4000000000u,
	               "tokenizer.ggml.eos_token_id is 4000000000, past the vocabulary");
	expect_refused(test_failed_, "llama.context_length", 0,
	               "llama.context_length is 0, outside 1..16777216");
	expect_refused(test_failed_, "llama.context_length", 0x80000000u, "outside 1..16777216");
}

/* Copies src to dst; 0 or -1. */
static int copy_file(const char *src, const char *dst)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	int rc = in && out ? 0 : -1;
	char buf[65536];
	size_t n;
	while (!rc && (n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, out) != n) rc = -1;
	if (in) fclose(in);
	if (out && fclose(out)) rc = -1;
	return rc;
}

TEST(sigbus_on_a_truncated_mapping_reads_zeros)
{
	char path[] = "/tmp/infill-mapguard-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	size_t size = 1 << 20;
	char *page = malloc(size);
	memset(page, 0x5a, size);
	REQUIRE(write(fd, page, size) == (ssize_t)size);
	const volatile unsigned char *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	REQUIRE(p != MAP_FAILED);
	int slot = mapguard_add((const void *)p, size);
	CHECK(slot >= 0);
	CHECK(!mapguard_hit(slot));
	CHECK_INT_EQ(p[size - 1], 0x5a);
	REQUIRE(ftruncate(fd, 4096) == 0);
	/* past the new end: SIGBUS without the guard */
	unsigned sum = 0;
	for (size_t i = 8192; i < size; i += 4096) sum += p[i];
	CHECK_INT_EQ(sum, 0);
	CHECK(mapguard_hit(slot));
	CHECK_INT_EQ(p[0], 0); /* the whole mapping is zeros now */
	mapguard_remove(slot);
	munmap((void *)p, size);
	close(fd);
	unlink(path);
	free(page);
}

TEST(guard_slots_run_out_cleanly)
{
	int slots[MAPGUARD_SLOTS + 1];
	static char bufs[MAPGUARD_SLOTS + 1][64];
	int n = 0;
	for (int i = 0; i <= MAPGUARD_SLOTS; i++) {
		slots[i] = mapguard_add(bufs[i], sizeof bufs[i]);
		if (slots[i] >= 0) n++;
	}
	CHECK(n <= MAPGUARD_SLOTS);
	CHECK_INT_EQ(slots[MAPGUARD_SLOTS], -ENOSPC);
	for (int i = 0; i <= MAPGUARD_SLOTS; i++) mapguard_remove(slots[i]);
	int again = mapguard_add(bufs[0], 64);
	CHECK(again >= 0);
	mapguard_remove(again);
}

TEST(model_notices_its_file_changing)
{
	char src[1024];
	snprintf(src, sizeof src, "%s/models/tiny-dsc-f32.gguf", testdata());
	char tmpl[] = "/tmp/infill-faults-XXXXXX";
	REQUIRE(mkdtemp(tmpl) != NULL);
	char p[256], q[300], why[128];
	snprintf(p, sizeof p, "%s/m.gguf", tmpl);
	snprintf(q, sizeof q, "%s/other.gguf", tmpl);
	struct infill_error err;

	/* truncated in place, then used: no crash, and noticed */
	REQUIRE(copy_file(src, p) == 0);
	struct model *m = load_path(p, &err);
	REQUIRE(m != NULL);
	CHECK(!model_file_changed(m, why, sizeof why));
	REQUIRE(truncate(p, 1000) == 0);
	CHECK(model_file_changed(m, why, sizeof why));
	CHECK(strstr(why, "truncated") != NULL);
	int32_t ids[3] = { 32013, 100, 200 };
	int nv = model_info(m)->n_vocab;
	float *lg = malloc((size_t)nv * sizeof *lg);
	struct kv_seq *s = kv_seq_new(model_kv_pool(m));
	model_eval(m, s, ids, 3, lg, &err); /* reads zeros past the end; survives */
	kv_seq_free(s);
	CHECK(model_file_changed(m, why, sizeof why));
	model_free(m);

	/* replaced by another file (a download renamed into place) */
	REQUIRE(copy_file(src, p) == 0);
	m = load_path(p, &err);
	REQUIRE(m != NULL);
	REQUIRE(copy_file(src, q) == 0);
	REQUIRE(rename(q, p) == 0);
	CHECK(model_file_changed(m, why, sizeof why));
	CHECK(strstr(why, "another file") != NULL);
	model_free(m);

	/* deleted: the mapping keeps the contents; not a change */
	m = load_path(p, &err);
	REQUIRE(m != NULL);
	REQUIRE(unlink(p) == 0);
	CHECK(!model_file_changed(m, why, sizeof why));
	model_free(m);
	free(lg);
	rmdir(tmpl);
}

TEST(a_fifo_is_refused_without_blocking)
{
	char tmpl[] = "/tmp/infill-faults-XXXXXX";
	REQUIRE(mkdtemp(tmpl) != NULL);
	char p[256];
	snprintf(p, sizeof p, "%s/fifo.gguf", tmpl);
	REQUIRE(mkfifo(p, 0600) == 0);
	alarm(10); /* the old open() waited for a writer forever */
	struct infill_error ge;
	struct gguf_file *f = gguf_open(p, &ge);
	alarm(0);
	CHECK(f == NULL);
	CHECK(strstr(ge.message, "not a regular file (a FIFO)") != NULL);
	unlink(p);
	rmdir(tmpl);
}

TEST(a_kernel_set_named_but_not_run_is_refused)
{
	/* $INFILL_CPU_KERNELS names the set benchmarks and tests compare: a
	 * misspelt or absent one must not quietly run another set */
	char path[4096];
	snprintf(path, sizeof path, "%s/models/tiny-dsc-f32.gguf", testdata());
	if (access(path, R_OK) != 0) {
		printf("SKIP: %s missing\n", path);
		return;
	}
	struct infill_error err;
	setenv("INFILL_CPU_KERNELS", "avx2_vnni", 1);
	struct model *m = load_path(path, &err);
	CHECK(m == NULL);
	CHECK_INT_EQ(err.code, -EINVAL);
	CHECK(strstr(err.message, "INFILL_CPU_KERNELS=avx2_vnni") != NULL);
	CHECK(strstr(err.message, "ref") != NULL); /* the sets it may name */
	printf("refused: %s\n", err.message);
	model_free(m);
	setenv("INFILL_CPU_KERNELS", "ref", 1);
	m = load_path(path, &err);
	CHECK(m != NULL);
	model_free(m);
	unsetenv("INFILL_CPU_KERNELS");
}

TEST_MAIN()
