/*
 * cli_models.c - `infill models`: the model catalog (core/catalog.h) as a
 * table, with what this machine has (memory from /proc/meminfo, CPU flags),
 * whether each model fits it, which one to start with, and which are
 * already in the cache folder (`infill pull NAME` puts them there).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: infill models\n"
	           "  lists the models `infill pull NAME` knows: size, the memory each needs\n"
	           "  (the file, the 1 GiB KV cache and 256 MiB of working memory), whether it\n"
	           "  fits this machine, how a download is checked, and what is downloaded.\n");
}

/* "yes", "partial" (a .part to resume) or "". */
static const char *downloaded(const struct catalog_entry *e)
{
	char *path = catalog_cached_path(e);
	struct stat st;
	const char *r = "";
	if (path && !stat(path, &st)) {
		r = "yes";
	} else if (path) {
		size_t n = strlen(path) + 6;
		char *part = malloc(n);
		if (part) {
			snprintf(part, n, "%s.part", path);
			if (!stat(part, &st)) r = "partial";
			free(part);
		}
	}
	free(path);
	return r;
}

int cli_models(int argc, char **argv)
{
	if (argc > 1) {
		bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");
		usage(help ? stdout : stderr);
		return help ? 0 : 2;
	}
	char msg[512];
	struct catalog *cat = catalog_load(msg, sizeof msg);
	if (!cat) {
		fprintf(stderr, "infill models: %s\n", msg);
		return 1;
	}
	struct catalog_machine m;
	catalog_machine_read(&m);
	char *dir = catalog_cache_dir();
	printf("This machine: %.1f GB memory, %d CPUs, AVX2 %s, AVX-512 %s\n",
	       (double)m.mem_bytes / 1e9, m.cpus, m.avx2 ? "yes" : "no", m.avx512 ? "yes" : "no");
	const struct catalog_entry *rec = catalog_recommend(cat, &m);
	if (rec)
		printf("Suggested:    %s  (infill pull %s, then \"model\": \"%s\")\n", rec->model,
		       rec->model, rec->model);
	printf("Downloads go to %s\n\n",
	       dir ? dir : "(no cache folder: set XDG_CACHE_HOME or HOME)");
	free(dir);
	printf("%-28s %-10s %-7s %-9s %-8s %-4s %-7s %s\n", "NAME", "FAMILY", "QUANT", "SIZE",
	       "RAM", "FITS", "CHECK", "DOWNLOADED");
	for (size_t i = 0; i < catalog_count(cat); i++) {
		const struct catalog_entry *e = catalog_at(cat, i);
		uint64_t ram = catalog_ram_bytes(e);
		char ram_s[16] = "?";
		if (ram) snprintf(ram_s, sizeof ram_s, "%.1f GB", (double)ram / 1e9);
		const char *fits = !ram || !m.mem_bytes ? "?" : ram <= m.mem_bytes ? "yes" : "no";
		printf("%-28s %-10s %-7s %-9s %-8s %-4s %-7s %s\n",
		       e->is_default ? e->model : e->name, e->family, e->quant,
		       e->size ? e->size : "?", ram_s, fits, e->sha256 ? "sha256" : "gguf",
		       downloaded(e));
	}
	printf("\nNAME alone is its Q4_K_M file; NAME-q5_k_m or NAME-q8_0 picks another.\n"
	       "CHECK: sha256 as its publisher states it, or gguf: its header (architecture,\n"
	       "every block's tensors, the listed size) where no sha256 is published.\n");
	catalog_free(cat);
	return 0;
}
