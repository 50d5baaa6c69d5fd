/*
 * test_catalog.c - the model catalog (core/catalog.c): names and their
 * default quantization, near names, published sizes and their rounding,
 * the mirror rewrite, a replacement table from INFILL_CATALOG (and its
 * errors), the cache folder, what a name in a model setting means, and
 * that every built-in row is well formed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "harness.h"

static struct catalog *load(void)
{
	char msg[256];
	struct catalog *c = catalog_load(msg, sizeof msg);
	if (!c) fprintf(stderr, "catalog_load: %s\n", msg);
	return c;
}

TEST(builtin_rows_are_well_formed)
{
	unsetenv("INFILL_CATALOG");
	unsetenv("INFILL_MODEL_MIRROR");
	struct catalog *c = load();
	REQUIRE(c);
	CHECK(catalog_count(c) >= 20);
	for (size_t i = 0; i < catalog_count(c); i++) {
		const struct catalog_entry *e = catalog_at(c, i);
		CHECK(!strncmp(e->url, "https://", 8));
		CHECK(strstr(e->url, ".gguf") != NULL);
		CHECK(!e->sha256 ||
		      (strlen(e->sha256) == 64 && strspn(e->sha256, "0123456789abcdef") == 64));
		/* a pinned sha256 needs a pinned revision: no "resolve/main" */
		CHECK(!e->sha256 || !strstr(e->url, "/resolve/main/"));
		uint64_t b, t;
		CHECK(!e->size || catalog_size_bytes(e->size, &b, &t));
		/* each model has exactly one default row, and it is Q4_K_M */
		if (e->is_default) CHECK_STR_EQ(e->quant, "Q4_K_M");
		CHECK(catalog_find(c, e->name) == e);
		CHECK(catalog_find(c, e->model) && catalog_find(c, e->model)->is_default);
	}
	catalog_free(c);
}

TEST(names)
{
	unsetenv("INFILL_CATALOG");
	struct catalog *c = load();
	REQUIRE(c);
	const struct catalog_entry *e = catalog_find(c, "qwen2.5-coder:1.5b");
	REQUIRE(e);
	CHECK_STR_EQ(e->quant, "Q4_K_M");
	CHECK_STR_EQ(e->family, "qwen");
	CHECK_STR_EQ(e->arch, "qwen2");
	CHECK(catalog_find(c, "Qwen2.5-Coder:1.5B-Q8_0") != NULL); /* any case */
	CHECK_STR_EQ(catalog_find(c, "qwen2.5-coder:1.5b-q8_0")->quant, "Q8_0");
	CHECK(catalog_find(c, "qwen2.5-coder") == NULL);
	CHECK(catalog_find(c, "") == NULL);
	const char *near[3];
	size_t n = catalog_near(c, "qwen2.5-coder:1.5", near, 3);
	CHECK(n >= 1);
	CHECK_STR_EQ(near[0], "qwen2.5-coder:1.5b");
	n = catalog_near(c, "starcodr2:7b", near, 3);
	CHECK(n >= 1);
	CHECK_STR_EQ(near[0], "starcoder2:7b");
	CHECK_INT_EQ(catalog_near(c, "zzzzzzzzzzzzzzzzzzzzzzzz", near, 3), 0);
	catalog_free(c);
}

TEST(sizes)
{
	uint64_t b, t;
	CHECK(catalog_size_bytes("986 MB", &b, &t));
	CHECK(b == 986000000ull && t == 500000ull);
	CHECK(catalog_size_bytes("1.13 GB", &b, &t));
	CHECK(b == 1130000000ull && t == 5000000ull);
	CHECK(catalog_size_bytes("4.457 GB", &b, &t));
	CHECK(b == 4457000000ull && t == 500000ull);
	CHECK(catalog_size_bytes("4681600 bytes", &b, &t));
	CHECK(b == 4681600ull && t == 1);
	CHECK(!catalog_size_bytes(NULL, &b, &t));
	CHECK(!catalog_size_bytes("big", &b, &t));
	CHECK(!catalog_size_bytes("3 parsecs", &b, &t));
	struct catalog_entry e = { .size = "986 MB" };
	CHECK(catalog_ram_bytes(&e) == 986000000ull + 1280ull * 1024 * 1024);
	e.size = NULL;
	CHECK(catalog_ram_bytes(&e) == 0);
}

TEST(mirror_and_cache_folder)
{
	unsetenv("INFILL_CATALOG");
	setenv("INFILL_MODEL_MIRROR", "http://127.0.0.1:8080/", 1);
	struct catalog *c = load();
	REQUIRE(c);
	const struct catalog_entry *e = catalog_find(c, "starcoder2:3b");
	REQUIRE(e);
	CHECK_STR_EQ(e->url, "http://127.0.0.1:8080/QuantFactory/starcoder2-3b-GGUF/resolve/main/"
	                     "starcoder2-3b.Q4_K_M.gguf");
	setenv("XDG_CACHE_HOME", "/tmp/x-cache", 1);
	char *p = catalog_cached_path(e);
	CHECK_STR_EQ(p, "/tmp/x-cache/infill/models/starcoder2-3b-q4_k_m.gguf");
	free(p);
	setenv("XDG_CACHE_HOME", "relative", 1); /* not absolute: ignored, as the spec says */
	setenv("HOME", "/home/u", 1);
	p = catalog_cache_dir();
	CHECK_STR_EQ(p, "/home/u/.cache/infill/models");
	free(p);
	unsetenv("INFILL_MODEL_MIRROR");
	catalog_free(c);
}

static enum catalog_meaning resolve_(int *test_failed_, const struct catalog *c, const char *name,
                                     const char *path)
{
	char *got;
	const struct catalog_entry *e;
	enum catalog_meaning m = catalog_resolve(c, name, &got, &e);
	CHECK_STR_EQ(got, path);
	CHECK(!e == (m == CATALOG_FILE || m == CATALOG_UNKNOWN));
	free(got);
	return m;
}
#define resolve(c, name, path) resolve_(test_failed_, c, name, path)

TEST(what_a_model_setting_names)
{
	unsetenv("INFILL_CATALOG");
	char dir[] = "/tmp/test-catalog-home-XXXXXX";
	REQUIRE(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1);
	struct catalog *c = load();
	REQUIRE(c);
	char cached[256];
	snprintf(cached, sizeof cached, "%s/infill/models/starcoder2-3b-q4_k_m.gguf", dir);
	/* paths as written, whether or not the file is there */
	CHECK_INT_EQ(resolve(c, "models/x.gguf", "models/x.gguf"), CATALOG_FILE);
	CHECK_INT_EQ(resolve(c, "starcoder2:3b.gguf", "starcoder2:3b.gguf"), CATALOG_FILE);
	CHECK_INT_EQ(resolve(c, "no-such-model:9b", "no-such-model:9b"), CATALOG_UNKNOWN);
	CHECK_INT_EQ(resolve(NULL, "starcoder2:3b", "starcoder2:3b"), CATALOG_UNKNOWN);
	CHECK_INT_EQ(resolve(c, "starcoder2:3b", cached), CATALOG_NOT_DOWNLOADED);
	REQUIRE(catalog_cache_dir_make() == 0);
	FILE *f = fopen(cached, "w");
	REQUIRE(f);
	fclose(f);
	CHECK_INT_EQ(resolve(c, "STARCODER2:3B-q4_k_m", cached), CATALOG_DOWNLOADED);
	/* a file in the working folder wins over the catalog's name */
	char cwd[4096];
	REQUIRE(getcwd(cwd, sizeof cwd) && chdir(dir) == 0);
	f = fopen("starcoder2:3b", "w");
	REQUIRE(f);
	fclose(f);
	CHECK_INT_EQ(resolve(c, "starcoder2:3b", "starcoder2:3b"), CATALOG_FILE);
	unlink("starcoder2:3b");
	unlink(cached);
	char sub[300];
	snprintf(sub, sizeof sub, "%s/infill/models", dir);
	rmdir(sub);
	snprintf(sub, sizeof sub, "%s/infill", dir);
	rmdir(sub);
	REQUIRE(chdir(cwd) == 0);
	rmdir(dir);
	unsetenv("XDG_CACHE_HOME");
	catalog_free(c);
}

TEST(replacement_table)
{
	char path[] = "/tmp/test-catalog-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	const char *good =
	        "[{\"model\": \"a:1b\", \"quant\": \"Q8_0\", \"default\": true, "
	        "\"family\": \"qwen\", \"arch\": \"qwen2\", \"url\": \"http://h/a.gguf\", "
	        "\"size\": \"1 GB\"}]";
	REQUIRE(write(fd, good, strlen(good)) == (ssize_t)strlen(good));
	close(fd);
	setenv("INFILL_CATALOG", path, 1);
	struct catalog *c = load();
	REQUIRE(c);
	CHECK_INT_EQ(catalog_count(c), 1);
	CHECK_STR_EQ(catalog_find(c, "a:1b")->name, "a:1b-q8_0");
	CHECK(catalog_find(c, "qwen2.5-coder:1.5b") == NULL);
	catalog_free(c);
	FILE *f = fopen(path, "w");
	fputs("[{\"model\": \"a:1b\", \"quant\": \"Q8_0\"}]", f);
	fclose(f);
	char msg[256];
	CHECK(catalog_load(msg, sizeof msg) == NULL);
	CHECK(strstr(msg, "entry 0 needs model, quant, family, arch and url") != NULL);
	f = fopen(path, "w");
	fputs("{\"not\": \"an array\"}", f);
	fclose(f);
	CHECK(catalog_load(msg, sizeof msg) == NULL);
	CHECK(strstr(msg, "not a JSON array") != NULL);
	unlink(path);
	unsetenv("INFILL_CATALOG");
}

TEST(machine)
{
	struct catalog_machine m;
	catalog_machine_read(&m);
	CHECK(m.mem_bytes > 0);
	CHECK(m.cpus >= 1);
	unsetenv("INFILL_CATALOG");
	struct catalog *c = load();
	REQUIRE(c);
	struct catalog_machine small = { .mem_bytes = 3000000000ull, .avx2 = true, .cpus = 2 };
	CHECK_STR_EQ(catalog_recommend(c, &small)->model, "qwen2.5-coder:0.5b");
	struct catalog_machine laptop = { .mem_bytes = 16000000000ull, .avx2 = true, .cpus = 8 };
	CHECK_STR_EQ(catalog_recommend(c, &laptop)->model, "qwen2.5-coder:1.5b");
	struct catalog_machine old = { .mem_bytes = 16000000000ull, .avx2 = false, .cpus = 8 };
	CHECK_STR_EQ(catalog_recommend(c, &old)->model, "qwen2.5-coder:0.5b");
	struct catalog_machine big = { .mem_bytes = 64000000000ull, .avx2 = true, .cpus = 32 };
	CHECK_STR_EQ(catalog_recommend(c, &big)->model, "qwen2.5-coder:7b");
	catalog_free(c);
}

TEST_MAIN()
