/*
 * catalog.c - the model catalog (catalog.h): the built-in table of
 * published GGUF files, its replacement by INFILL_CATALOG and mirror
 * rewriting by INFILL_MODEL_MIRROR, name lookup with near names, the cache
 * folder, and what this machine has (memory, CPU flags).
 *
 * Where each row comes from: the publisher's file listing on the model hub
 * (repository, file name, size as listed; the sha256 where the hub page of
 * that file states it, and then the URL names the commit it was stated at,
 * so the bytes cannot change under it). Rows whose listing we could not read
 * are left out rather than guessed (docs/models.md lists them).
 */
#include "catalog.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define HUB "https://huggingface.co/"

/* X(model, quant, default?, family, arch, repository/resolve/revision/file, size, sha256) */
#define CATALOG_BUILTIN(X)                                                                         \
	X("qwen2.5-coder:0.5b", "Q4_K_M", 1, "qwen", "qwen2",                                      \
	  "itlwas/Qwen2.5-Coder-0.5B-Q4_K_M-GGUF/resolve/"                                         \
	  "b63d6a5417edf4f574624b050a5c5642b052dcfb/"                                              \
	  "qwen2.5-coder-0.5b-q4_k_m.gguf",                                                        \
	  "398 MB", "72918254a3fa9f4c5193d127cabb4090a3dc0ebc2ba613333e41046c31dd0d34")            \
	X("qwen2.5-coder:0.5b", "Q5_K_M", 0, "qwen", "qwen2",                                      \
	  "tensorblock/Qwen2.5-Coder-0.5B-GGUF/resolve/main/Qwen2.5-Coder-0.5B-Q5_K_M.gguf",       \
	  "420 MB", NULL)                                                                          \
	X("qwen2.5-coder:0.5b", "Q8_0", 0, "qwen", "qwen2",                                        \
	  "lmstudio-community/Qwen2.5-Coder-0.5B-GGUF/resolve/main/Qwen2.5-Coder-0.5B-Q8_0.gguf",  \
	  "531 MB", NULL)                                                                          \
	X("qwen2.5-coder:1.5b", "Q4_K_M", 1, "qwen", "qwen2",                                      \
	  "DevQuasar/Qwen.Qwen2.5-Coder-1.5B-GGUF/resolve/"                                        \
	  "26a8acae8f9a76fe7170950eab4d2c5569776bc8/"                                              \
	  "Qwen.Qwen2.5-Coder-1.5B.Q4_K_M.gguf",                                                   \
	  "986 MB", "2055c5fa1c19e54fde4df3d2789caa8d8d164db13f1cb487d67098db64085df9")            \
	X("qwen2.5-coder:1.5b", "Q5_K_M", 0, "qwen", "qwen2",                                      \
	  "DevQuasar/Qwen.Qwen2.5-Coder-1.5B-GGUF/resolve/"                                        \
	  "18f0347109237d6f55873d4304a6480e9b3fdf51/"                                              \
	  "Qwen.Qwen2.5-Coder-1.5B.Q5_K_M.gguf",                                                   \
	  "1.13 GB", "d30c1358cffdce917c6de9d68fd79ff2c53c42e47304c36bed2327ecf8512596")           \
	X("qwen2.5-coder:1.5b", "Q8_0", 0, "qwen", "qwen2",                                        \
	  "mradermacher/Qwen2.5-Coder-1.5B-GGUF/resolve/main/Qwen2.5-Coder-1.5B.Q8_0.gguf",        \
	  "1.65 GB", NULL)                                                                         \
	X("qwen2.5-coder:3b", "Q4_K_M", 1, "qwen", "qwen2",                                        \
	  "itlwas/Qwen2.5-Coder-3B-Q4_K_M-GGUF/resolve/main/qwen2.5-coder-3b-q4_k_m.gguf",         \
	  "1.93 GB", NULL)                                                                         \
	X("qwen2.5-coder:3b", "Q5_K_M", 0, "qwen", "qwen2",                                        \
	  "Triangle104/Qwen2.5-Coder-3B-Q5_K_M-GGUF/resolve/main/qwen2.5-coder-3b-q5_k_m.gguf",    \
	  "2.22 GB", NULL)                                                                         \
	X("qwen2.5-coder:3b", "Q8_0", 0, "qwen", "qwen2",                                          \
	  "ggml-org/Qwen2.5-Coder-3B-Q8_0-GGUF/resolve/main/qwen2.5-coder-3b-q8_0.gguf",           \
	  "3.29 GB", NULL)                                                                         \
	X("qwen2.5-coder:7b", "Q4_K_M", 1, "qwen", "qwen2",                                        \
	  "mav23/Qwen2.5-Coder-7B-GGUF/resolve/main/qwen2.5-coder-7b.Q4_K_M.gguf", "4.68 GB",      \
	  NULL)                                                                                    \
	X("qwen2.5-coder:7b", "Q5_K_M", 0, "qwen", "qwen2",                                        \
	  "Triangle104/Qwen2.5-Coder-7B-Q5_K_M-GGUF/resolve/main/qwen2.5-coder-7b-q5_k_m.gguf",    \
	  "5.44 GB", NULL)                                                                         \
	X("qwen2.5-coder:7b", "Q8_0", 0, "qwen", "qwen2",                                          \
	  "Triangle104/Qwen2.5-Coder-7B-Q8_0-GGUF/resolve/main/qwen2.5-coder-7b-q8_0.gguf",        \
	  "8.1 GB", NULL)                                                                          \
	X("deepseek-coder:1.3b", "Q4_K_M", 1, "deepseek", "llama",                                 \
	  "TheBloke/deepseek-coder-1.3b-base-GGUF/resolve/main/"                                   \
	  "deepseek-coder-1.3b-base.Q4_K_M.gguf",                                                  \
	  "874 MB", NULL)                                                                          \
	X("deepseek-coder:1.3b", "Q5_K_M", 0, "deepseek", "llama",                                 \
	  "TheBloke/deepseek-coder-1.3b-base-GGUF/resolve/main/"                                   \
	  "deepseek-coder-1.3b-base.Q5_K_M.gguf",                                                  \
	  NULL, NULL)                                                                              \
	X("deepseek-coder:6.7b", "Q4_K_M", 1, "deepseek", "llama",                                 \
	  "TheBloke/deepseek-coder-6.7B-base-GGUF/resolve/main/"                                   \
	  "deepseek-coder-6.7b-base.Q4_K_M.gguf",                                                  \
	  "4.08 GB", NULL)                                                                         \
	X("deepseek-coder:6.7b", "Q5_K_M", 0, "deepseek", "llama",                                 \
	  "tensorblock/deepseek-coder-6.7b-base-GGUF/resolve/main/"                                \
	  "deepseek-coder-6.7b-base-Q5_K_M.gguf",                                                  \
	  "4.457 GB", NULL)                                                                        \
	X("deepseek-coder:6.7b", "Q8_0", 0, "deepseek", "llama",                                   \
	  "mradermacher/deepseek-coder-6.7b-base-GGUF/resolve/main/"                               \
	  "deepseek-coder-6.7b-base.Q8_0.gguf",                                                    \
	  "7.16 GB", NULL)                                                                         \
	X("starcoder2:3b", "Q4_K_M", 1, "starcoder", "starcoder2",                                 \
	  "QuantFactory/starcoder2-3b-GGUF/resolve/main/starcoder2-3b.Q4_K_M.gguf", "1.89 GB",     \
	  NULL)                                                                                    \
	X("starcoder2:3b", "Q5_K_M", 0, "starcoder", "starcoder2",                                 \
	  "QuantFactory/starcoder2-3b-GGUF/resolve/main/starcoder2-3b.Q5_K_M.gguf", "2.18 GB",     \
	  NULL)                                                                                    \
	X("starcoder2:3b", "Q8_0", 0, "starcoder", "starcoder2",                                   \
	  "QuantFactory/starcoder2-3b-GGUF/resolve/main/starcoder2-3b.Q8_0.gguf", "3.22 GB", NULL) \
	X("starcoder2:7b", "Q4_K_M", 1, "starcoder", "starcoder2",                                 \
	  "QuantFactory/starcoder2-7b-GGUF/resolve/main/starcoder2-7b.Q4_K_M.gguf", "4.46 GB",     \
	  NULL)                                                                                    \
	X("starcoder2:7b", "Q5_K_M", 0, "starcoder", "starcoder2",                                 \
	  "QuantFactory/starcoder2-7b-GGUF/resolve/main/starcoder2-7b.Q5_K_M.gguf", "5.15 GB",     \
	  NULL)                                                                                    \
	X("starcoder2:7b", "Q8_0", 0, "starcoder", "starcoder2",                                   \
	  "QuantFactory/starcoder2-7b-GGUF/resolve/main/starcoder2-7b.Q8_0.gguf", "7.63 GB", NULL) \
	X("codegemma:2b", "Q4_K_M", 1, "codegemma", "gemma",                                       \
	  "itlwas/codegemma-2b-Q4_K_M-GGUF/resolve/a30dd517956c3aab56c90bee0a24434cf9791bde/"      \
	  "codegemma-2b.Q4_K_M.gguf",                                                              \
	  "1.63 GB", "47b667892f623f1f734be65dba72fdce2de4f2b610a3330e0f3c88c082ec35e2")           \
	X("codegemma:2b", "Q5_K_M", 0, "codegemma", "gemma",                                       \
	  "tensorblock/codegemma-2b-GGUF/resolve/main/codegemma-2b-Q5_K_M.gguf", "1.840 GB", NULL) \
	X("codegemma:2b", "Q8_0", 0, "codegemma", "gemma",                                         \
	  "PrunaAI/codegemma-2b-GGUF-smashed/resolve/36bdf664cc6b368a968159423b8ee5756bb7fec2/"    \
	  "codegemma-2b.Q8_0.gguf",                                                                \
	  "2.67 GB", "a48c87a41c53f0c03e4e8911dbfe2b71c61c920ccc4177c672f7e6258d3c4646")           \
	X("codellama:7b", "Q4_K_M", 1, "codellama", "llama",                                       \
	  "TheBloke/CodeLlama-7B-GGUF/resolve/main/codellama-7b.Q4_K_M.gguf", "4.08 GB", NULL)     \
	X("codellama:7b", "Q5_K_M", 0, "codellama", "llama",                                       \
	  "TheBloke/CodeLlama-7B-GGUF/resolve/main/codellama-7b.Q5_K_M.gguf", NULL, NULL)          \
	X("codellama:7b", "Q8_0", 0, "codellama", "llama",                                         \
	  "TheBloke/CodeLlama-7B-GGUF/resolve/main/codellama-7b.Q8_0.gguf", NULL, NULL)

struct builtin {
	const char *model, *quant;
	bool is_default;
	const char *family, *arch, *path, *size, *sha256;
};

static const struct builtin builtins[] = {
#define X(model, quant, def, family, arch, path, size, sha) \
	{ model, quant, def, family, arch, path, size, sha },
	CATALOG_BUILTIN(X)
#undef X
};

/* Every string an entry points to is owned by the catalog (strings[]). */
struct catalog {
	struct catalog_entry *e;
	size_t n;
	char **strings;
	size_t n_strings, cap_strings;
};

static const char *keep(struct catalog *c, char *s)
{
	if (!s) return NULL;
	if (c->n_strings == c->cap_strings) {
		size_t cap = c->cap_strings ? 2 * c->cap_strings : 64;
		char **grown = realloc(c->strings, cap * sizeof *grown);
		if (!grown) {
			free(s);
			return NULL;
		}
		c->strings = grown;
		c->cap_strings = cap;
	}
	c->strings[c->n_strings++] = s;
	return s;
}

static char *lower_dup(const char *s)
{
	char *d = strdup(s);
	if (d)
		for (char *p = d; *p; p++) *p = (char)tolower((unsigned char)*p);
	return d;
}

/* "scheme://host/path" with the scheme and host replaced by mirror. */
static char *mirrored(const char *url, const char *mirror)
{
	if (!mirror || !mirror[0]) return strdup(url);
	const char *host = strstr(url, "://");
	const char *path = host ? strchr(host + 3, '/') : NULL;
	if (!path) return strdup(url);
	size_t ml = strlen(mirror);
	while (ml > 0 && mirror[ml - 1] == '/') ml--;
	char *out = malloc(ml + strlen(path) + 1);
	if (out) {
		memcpy(out, mirror, ml);
		strcpy(out + ml, path);
	}
	return out;
}

/* Fills e from the model name, quant and the rest; false on out of memory. */
static bool entry_fill(struct catalog *c, struct catalog_entry *e, const char *model,
                       const char *quant, bool def, const char *family, const char *arch,
                       const char *url, const char *size, const char *sha, const char *mirror)
{
	char *q = lower_dup(quant);
	size_t nl = strlen(model) + 1 + (q ? strlen(q) : 0) + 1;
	char *name = malloc(nl);
	if (name && q) snprintf(name, nl, "%s-%s", model, q);
	free(q);
	e->name = keep(c, name && q ? name : (free(name), NULL));
	e->model = keep(c, lower_dup(model));
	e->family = keep(c, strdup(family));
	e->arch = keep(c, strdup(arch));
	e->quant = keep(c, strdup(quant));
	e->is_default = def;
	e->url = keep(c, mirrored(url, mirror));
	e->size = size ? keep(c, strdup(size)) : NULL;
	e->sha256 = sha ? keep(c, strdup(sha)) : NULL;
	return e->name && e->model && e->family && e->arch && e->quant && e->url &&
	       (!size || e->size) && (!sha || e->sha256);
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static struct catalog *load_file(const char *path, const char *mirror, char *msg, size_t msg_len)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	if (!root || !json_is_array(root)) {
		snprintf(msg, msg_len, "INFILL_CATALOG %s: %s", path,
		         root ? "not a JSON array" : je.text);
		json_decref(root);
		return NULL;
	}
	struct catalog *c = calloc(1, sizeof *c);
	size_t n = json_array_size(root);
	if (c) c->e = calloc(n ? n : 1, sizeof *c->e);
	if (!c || !c->e) {
		catalog_free(c);
		json_decref(root);
		snprintf(msg, msg_len, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(root, i);
		const char *model = jstr(o, "model"), *quant = jstr(o, "quant");
		const char *family = jstr(o, "family"), *arch = jstr(o, "arch"),
		           *url = jstr(o, "url");
		const char *sha = jstr(o, "sha256");
		if (!model || !quant || !family || !arch || !url || (sha && strlen(sha) != 64)) {
			snprintf(msg, msg_len,
			         "INFILL_CATALOG %s: entry %zu needs model, quant, family, arch "
			         "and url "
			         "(strings; sha256 64 hex digits)",
			         path, i);
			catalog_free(c);
			json_decref(root);
			return NULL;
		}
		if (!entry_fill(c, &c->e[c->n++], model, quant,
		                json_is_true(json_object_get(o, "default")), family, arch, url,
		                jstr(o, "size"), sha, mirror)) {
			snprintf(msg, msg_len, "out of memory");
			catalog_free(c);
			json_decref(root);
			return NULL;
		}
	}
	json_decref(root);
	return c;
}

struct catalog *catalog_load(char *msg, size_t msg_len)
{
	msg[0] = 0;
	const char *mirror = getenv("INFILL_MODEL_MIRROR");
	const char *file = getenv("INFILL_CATALOG");
	if (file && file[0]) return load_file(file, mirror, msg, msg_len);
	size_t n = sizeof builtins / sizeof builtins[0];
	struct catalog *c = calloc(1, sizeof *c);
	if (c) c->e = calloc(n, sizeof *c->e);
	if (!c || !c->e) {
		catalog_free(c);
		snprintf(msg, msg_len, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct builtin *b = &builtins[i];
		char url[512];
		snprintf(url, sizeof url, HUB "%s", b->path);
		if (!entry_fill(c, &c->e[c->n++], b->model, b->quant, b->is_default, b->family,
		                b->arch, url, b->size, b->sha256, mirror)) {
			catalog_free(c);
			snprintf(msg, msg_len, "out of memory");
			return NULL;
		}
	}
	return c;
}

void catalog_free(struct catalog *c)
{
	if (!c) return;
	for (size_t i = 0; i < c->n_strings; i++) free(c->strings[i]);
	free(c->strings);
	free(c->e);
	free(c);
}

size_t catalog_count(const struct catalog *c)
{
	return c ? c->n : 0;
}

const struct catalog_entry *catalog_at(const struct catalog *c, size_t i)
{
	return c && i < c->n ? &c->e[i] : NULL;
}

const struct catalog_entry *catalog_find(const struct catalog *c, const char *name)
{
	if (!c || !name) return NULL;
	for (size_t i = 0; i < c->n; i++)
		if (!strcasecmp(c->e[i].name, name)) return &c->e[i];
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].is_default && !strcasecmp(c->e[i].model, name)) return &c->e[i];
	return NULL;
}

/* Levenshtein distance, case-insensitive, capped at 99 (names are short). */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64) return 99;
	int row[65];
	for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int cost = tolower((unsigned char)a[i - 1]) !=
			           tolower((unsigned char)b[j - 1]);
			int best = diag + cost;
			if (row[j] + 1 < best) best = row[j] + 1;
			if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* How far name is from entry e: the closer of its two names; a name that
 * shares the family (the part before ':') counts as near. */
static int score(const struct catalog_entry *e, const char *name)
{
	int d = distance(name, e->model), d2 = distance(name, e->name);
	if (d2 < d) d = d2;
	const char *colon = strchr(e->model, ':');
	size_t fl = colon ? (size_t)(colon - e->model) : strlen(e->model);
	if (!strncasecmp(name, e->model, fl) && d > 4) d = 4;
	return d;
}

size_t catalog_near(const struct catalog *c, const char *name, const char **out, size_t n)
{
	size_t k = 0;
	if (!c || !name) return 0;
	for (int want = 0; want <= 5 && k < n; want++)
		for (size_t i = 0; i < c->n && k < n; i++) {
			const struct catalog_entry *e = &c->e[i];
			if (score(e, name) != want) continue;
			/* a model name stands for its default quantization */
			const char *show = e->is_default ? e->model : e->name;
			bool dup = false;
			for (size_t j = 0; j < k; j++) dup |= !strcmp(out[j], show);
			if (!dup) out[k++] = show;
		}
	return k;
}

bool catalog_size_bytes(const char *size, uint64_t *bytes, uint64_t *tolerance)
{
	if (!size) return false;
	char *end;
	double v = strtod(size, &end);
	if (end == size || v <= 0) return false;
	const char *dot = memchr(size, '.', (size_t)(end - size));
	int decimals = dot ? (int)(end - dot - 1) : 0;
	while (*end == ' ') end++;
	double unit = !strcasecmp(end, "kB")      ? 1e3
	              : !strcasecmp(end, "MB")    ? 1e6
	              : !strcasecmp(end, "GB")    ? 1e9
	              : !strcasecmp(end, "bytes") ? 1
	                                          : 0;
	if (unit == 0) return false;
	double half = 0.5 * unit;
	for (int i = 0; i < decimals; i++) half /= 10;
	*bytes = (uint64_t)(v * unit + 0.5);
	*tolerance = (uint64_t)(half + 0.5);
	return true;
}

uint64_t catalog_ram_bytes(const struct catalog_entry *e)
{
	uint64_t b, tol;
	if (!e || !catalog_size_bytes(e->size, &b, &tol)) return 0;
	return b + (1024ull + 256ull) * 1024 * 1024;
}

char *catalog_cache_dir(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	const char *base = x && x[0] == '/' ? x : NULL;
	const char *mid = "";
	if (!base) {
		if (!home || !home[0]) return NULL;
		base = home;
		mid = "/.cache";
	}
	size_t n = strlen(base) + strlen(mid) + sizeof "/infill/models";
	char *d = malloc(n);
	if (d) snprintf(d, n, "%s%s/infill/models", base, mid);
	return d;
}

char *catalog_cached_path(const struct catalog_entry *e)
{
	char *dir = catalog_cache_dir();
	if (!dir || !e) {
		free(dir);
		return NULL;
	}
	size_t n = strlen(dir) + strlen(e->name) + 8;
	char *p = malloc(n);
	if (p) {
		snprintf(p, n, "%s/%s.gguf", dir, e->name);
		for (char *q = p + strlen(dir) + 1; *q; q++)
			if (*q == ':' || *q == '/') *q = '-';
	}
	free(dir);
	return p;
}

enum catalog_meaning catalog_resolve(const struct catalog *c, const char *name, char **path,
                                     const struct catalog_entry **entry)
{
	size_t n = strlen(name);
	*entry = NULL;
	if (strchr(name, '/') || (n > 5 && !strcmp(name + n - 5, ".gguf")) || !access(name, F_OK)) {
		*path = strdup(name);
		return CATALOG_FILE;
	}
	*entry = catalog_find(c, name);
	if (!*entry) {
		*path = strdup(name);
		return CATALOG_UNKNOWN;
	}
	*path = catalog_cached_path(*entry);
	if (*path) return access(*path, R_OK) ? CATALOG_NOT_DOWNLOADED : CATALOG_DOWNLOADED;
	*path = strdup(name); /* no cache folder: neither XDG_CACHE_HOME nor HOME */
	return CATALOG_NOT_DOWNLOADED;
}

int catalog_cache_dir_make(void)
{
	char *dir = catalog_cache_dir();
	if (!dir) return -ENOENT;
	int rc = 0;
	for (char *s = dir + 1;; s++) {
		bool end = *s == 0;
		if (*s == '/' || end) {
			*s = 0;
			if (mkdir(dir, 0755) && errno != EEXIST) {
				rc = -errno;
				break;
			}
			if (end) break;
			*s = '/';
		}
	}
	free(dir);
	return rc;
}

void catalog_machine_read(struct catalog_machine *m)
{
	memset(m, 0, sizeof *m);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	m->cpus = n > 0 ? (int)n : 1;
	FILE *f = fopen("/proc/meminfo", "r");
	char line[4096];
	if (f) {
		unsigned long long kb;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
				m->mem_bytes = kb * 1024ull;
		fclose(f);
	}
	f = fopen("/proc/cpuinfo", "r");
	if (!f) return;
	/* one "flags" line is enough: the cores of one machine share them */
	char *big = malloc(1 << 16);
	while (big && fgets(big, 1 << 16, f)) {
		if (strncmp(big, "flags", 5)) continue;
		m->avx2 = strstr(big, " avx2") != NULL;
		m->avx512 = strstr(big, " avx512f") != NULL;
		break;
	}
	free(big);
	fclose(f);
}

/* CPU decode reads the whole file per token: without AVX2, or with less
 * than 4 GB, the 0.5B model keeps answers inside the typing deadline; 16
 * CPUs and 16 GB carry a 7B one. README's table says the same. */
const struct catalog_entry *catalog_recommend(const struct catalog *c,
                                              const struct catalog_machine *m)
{
	const char *want[3];
	int n = 0;
	double gb = (double)m->mem_bytes / 1e9;
	if (m->avx2 && gb >= 16 && m->cpus >= 16) want[n++] = "qwen2.5-coder:7b";
	if (m->avx2 && gb >= 4) want[n++] = "qwen2.5-coder:1.5b";
	want[n++] = "qwen2.5-coder:0.5b";
	for (int i = 0; i < n; i++) {
		const struct catalog_entry *e = catalog_find(c, want[i]);
		uint64_t ram = catalog_ram_bytes(e);
		if (e && (!m->mem_bytes || !ram || ram <= m->mem_bytes)) return e;
	}
	return NULL;
}
