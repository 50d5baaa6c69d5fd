/*
 * catalog.h - models by name: the table behind `infill pull NAME`,
 * `infill models` and a `model` setting such as "qwen2.5-coder:1.5b".
 *
 * Each entry is one published GGUF file: its name, family (the fim.template
 * it takes), the architecture its header must name, the quantization, the
 * URL, and the size and sha256 exactly as its publisher's file listing
 * states them, or NULL where the listing we read did not state them
 * (docs/models.md says where each came from). Nothing is estimated: an
 * entry without a sha256 is checked after download by its GGUF header
 * instead (gguf_summarize), and one without a size shows no RAM figure.
 *
 * Names: FAMILY:SIZE means the default quantization (Q4_K_M);
 * FAMILY:SIZE-QUANT picks one ("qwen2.5-coder:1.5b-q8_0").
 *
 * For tests and private mirrors two environment variables change where
 * files come from: INFILL_MODEL_MIRROR=http://host:port replaces the scheme
 * and host of every URL (the path stays), and INFILL_CATALOG=FILE.json
 * replaces the whole table (an array of objects with the fields of struct
 * catalog_entry). Neither is read from a settings file.
 *
 * Threads: entries are immutable once loaded; catalog_load is called once by
 * whoever needs the table and the result shared read-only.
 */
#ifndef INFILL_CORE_CATALOG_H
#define INFILL_CORE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct catalog_entry {
	const char *name;   /* "qwen2.5-coder:1.5b-q4_k_m" */
	const char *model;  /* "qwen2.5-coder:1.5b": the name without the quantization */
	const char *family; /* the fim.template it takes: "qwen" */
	const char *arch;   /* general.architecture its header must name: "qwen2" */
	const char *quant;  /* "Q4_K_M" */
	bool is_default;    /* the quantization `model` alone means */
	const char *url;
	const char *size;   /* as published: "986 MB", "1.13 GB"; NULL: not stated */
	const char *sha256; /* 64 hex digits as published; NULL: not stated */
};

struct catalog;

/* The table: INFILL_CATALOG's file when set, else the built-in one, with
 * INFILL_MODEL_MIRROR applied. Returns a new catalog (free with
 * catalog_free, accepts NULL), or NULL with msg saying why (a bad
 * INFILL_CATALOG file, out of memory). */
struct catalog *catalog_load(char *msg, size_t msg_len);
void catalog_free(struct catalog *c);

size_t catalog_count(const struct catalog *c);
const struct catalog_entry *catalog_at(const struct catalog *c, size_t i); /* borrowed */

/* The entry NAME means (exact name, or a model name meaning its default
 * quantization); case-insensitive. NULL when none. Borrowed. */
const struct catalog_entry *catalog_find(const struct catalog *c, const char *name);

/* Up to n names close to name (edit distance, shared prefix), best first,
 * into out (borrowed strings). Returns how many. */
size_t catalog_near(const struct catalog *c, const char *name, const char **out, size_t n);

/* A published size in bytes and the rounding it carries ("1.13 GB":
 * 1130000000 +- 5000000). false when size is NULL or unreadable. */
bool catalog_size_bytes(const char *size, uint64_t *bytes, uint64_t *tolerance);

/* What the model needs in memory: the file (mapped whole) plus the default
 * KV pool (cache.memoryMB, 1 GiB) plus 256 MiB of working memory. 0 when
 * the size is not stated. */
uint64_t catalog_ram_bytes(const struct catalog_entry *e);

/* Where downloads go: $XDG_CACHE_HOME/infill/models, else
 * ~/.cache/infill/models. New string (free), or NULL when neither is set. */
char *catalog_cache_dir(void);
/* The entry's file in the cache folder ("qwen2.5-coder-1.5b-q4_k_m.gguf");
 * new string, or NULL. */
char *catalog_cached_path(const struct catalog_entry *e);
/* What a setting that names a model ("model", "completion.draftModel",
 * `infill complete --model`) means. */
enum catalog_meaning {
	CATALOG_FILE,           /* a path: it has a '/', ends in .gguf or exists */
	CATALOG_DOWNLOADED,     /* a catalog model whose file is in the cache */
	CATALOG_NOT_DOWNLOADED, /* a catalog model not pulled yet */
	CATALOG_UNKNOWN,        /* neither */
};
/* Looks name up; c may be NULL (a catalog that failed to load: names are
 * then files or unknown). *path: a new string (free) or NULL when out of
 * memory: the file to open, where the download would go (the name itself
 * where there is no cache folder), or for CATALOG_UNKNOWN the name.
 * *entry: borrowed from c, or NULL where name is not a catalog model. Each
 * caller words its own message. */
enum catalog_meaning catalog_resolve(const struct catalog *c, const char *name, char **path,
                                     const struct catalog_entry **entry);
/* mkdir -p of the cache folder. 0 or a negative errno. */
int catalog_cache_dir_make(void);

/* This machine: memory (/proc/meminfo MemTotal, bytes; 0 if unknown) and
 * whether the CPU has AVX2 and AVX-512 (/proc/cpuinfo flags). */
struct catalog_machine {
	uint64_t mem_bytes;
	bool avx2, avx512;
	int cpus;
};
void catalog_machine_read(struct catalog_machine *m);

/* The entry to suggest for this machine (docs: README "Which model"),
 * or NULL when none fits. Borrowed. */
const struct catalog_entry *catalog_recommend(const struct catalog *c,
                                              const struct catalog_machine *m);

#endif
