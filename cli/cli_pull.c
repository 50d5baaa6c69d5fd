/*
 * cli_pull.c - `infill pull NAME|URL [-o FILE] [--sha256 HEX] [--ca-file PEM]
 * [--quiet]`: downloads a model file (remote_pull, remote/remote_pull.c)
 * with a progress line, resuming FILE.part. NAME is a catalog entry
 * (core/catalog.h): the file goes to the cache folder and is checked by the
 * sha256 its publisher states, or, where none is stated, by its GGUF header
 * (infer's gguf_summarize: architecture, every block's tensors, size as
 * listed). A URL's file goes to -o FILE or its last path segment, checked
 * against --sha256 when given.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "catalog.h"
#include "infer.h"
#include "remote.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: infill pull NAME|URL [-o FILE] [--sha256 HEX] [--ca-file PEM] [--quiet]\n"
	        "  NAME: a model of the catalog (`infill models` lists them), e.g.\n"
	        "  qwen2.5-coder:1.5b or qwen2.5-coder:1.5b-q8_0; it goes to the cache folder\n"
	        "  ($XDG_CACHE_HOME/infill/models) and is checked by the publisher's sha256, or\n"
	        "  by its GGUF header where none is published. Then set \"model\" to NAME.\n"
	        "  URL: downloads to FILE (default: the URL's last path segment), checking the\n"
	        "  sha256 when given. Either resumes FILE.part when an earlier run stopped; a\n"
	        "  file that fails its check is removed. Exit status 0 when the file is in "
	        "place.\n");
}

/* The URL's last path segment, without query or fragment (new), or NULL. */
static char *name_of(const char *url)
{
	size_t end = strcspn(url, "?#");
	size_t start = end;
	while (start > 0 && url[start - 1] != '/') start--;
	const char *scheme = strstr(url, "://");
	if (end == start || (scheme && url + start <= scheme + 3)) return NULL;
	return strndup(url + start, end - start);
}

/* ---- the check of an entry without a published sha256 -------------------- */

struct gguf_check {
	const struct catalog_entry *e;
	char said[256]; /* what was checked, for the last line */
};

static int check_gguf(const char *part, void *ud, char *msg, size_t msg_len)
{
	struct gguf_check *c = ud;
	struct gguf_summary s;
	struct infill_error err;
	if (gguf_summarize(part, &s, &err)) {
		snprintf(msg, msg_len,
		         "the download is not a whole GGUF model (%s); it was removed",
		         err.message);
		return -EBADMSG;
	}
	if (strcmp(s.arch, c->e->arch)) {
		snprintf(msg, msg_len,
		         "the download is a %s model, %s must be %s; it was removed (the mirror "
		         "or URL serves another file)",
		         s.arch, c->e->name, c->e->arch);
		return -EBADMSG;
	}
	uint64_t want, tol;
	bool sized = catalog_size_bytes(c->e->size, &want, &tol);
	if (sized && (s.file_bytes + tol < want || s.file_bytes > want + tol)) {
		snprintf(msg, msg_len,
		         "the download is %llu bytes, the publisher lists %s; it was removed",
		         (unsigned long long)s.file_bytes, c->e->size);
		return -EBADMSG;
	}
	snprintf(
	        c->said, sizeof c->said,
	        "checked by its GGUF header: architecture %s, %lld tensors covering %u blocks%s%s; "
	        "the publisher states no sha256",
	        s.arch, (long long)s.n_tensors, s.n_blocks, sized ? ", size as listed: " : "",
	        sized ? c->e->size : "");
	return 0;
}

/* ---- NAME ------------------------------------------------------------------ */

static int unknown_name(const struct catalog *cat, const char *name)
{
	const char *near[4];
	size_t n = catalog_near(cat, name, near, 4);
	fprintf(stderr, "infill pull: %s is not in the model catalog", name);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? ", " : "; did you mean ", near[i]);
	fprintf(stderr,
	        "%s\n  `infill models` lists the catalog; `infill pull URL -o FILE` takes any "
	        "GGUF file\n",
	        n ? "?" : "");
	return 2;
}

/* Fails early when the folder cannot hold what remains to download. */
static int space_check(const char *out, const struct catalog_entry *e)
{
	uint64_t want, tol;
	struct statvfs v;
	if (!catalog_size_bytes(e->size, &want, &tol)) return 0;
	char *dir = strdup(out), *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash) *slash = 0;
	int bad = !dir || statvfs(slash ? (dir[0] ? dir : "/") : ".", &v);
	free(dir);
	if (bad) return 0; /* unknown: the download itself will say */
	char part[4096];
	snprintf(part, sizeof part, "%s.part", out);
	FILE *f = fopen(part, "rb");
	uint64_t have = 0;
	if (f) {
		if (!fseek(f, 0, SEEK_END)) have = (uint64_t)ftell(f);
		fclose(f);
	}
	uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
	uint64_t need = want > have ? want - have : 0;
	if (need <= free_bytes) return 0;
	fprintf(stderr,
	        "infill pull: no space left: %s needs %.2f GB more, the disk holding %s has %.2f "
	        "GB free\n",
	        e->name, (double)need / 1e9, out, (double)free_bytes / 1e9);
	return 1;
}

static int pull_name(struct remote_pull_options *o, const char *name, const char *out)
{
	char msg[1024];
	struct catalog *cat = catalog_load(msg, sizeof msg);
	if (!cat) {
		fprintf(stderr, "infill pull: %s\n", msg);
		return 1;
	}
	const struct catalog_entry *e = catalog_find(cat, name);
	if (!e) {
		int rc = unknown_name(cat, name);
		catalog_free(cat);
		return rc;
	}
	char *cached = out ? NULL : catalog_cached_path(e);
	if (!out && (!cached || catalog_cache_dir_make())) {
		fprintf(stderr,
		        "infill pull: cannot make the cache folder (set XDG_CACHE_HOME or HOME)%s",
		        cached ? "" : "\n");
		if (cached) fprintf(stderr, " for %s\n", cached);
		free(cached);
		catalog_free(cat);
		return 1;
	}
	o->out = out ? out : cached;
	o->url = e->url;
	o->sha256 = e->sha256;
	struct gguf_check gc = { .e = e };
	if (!e->sha256) {
		o->verify = check_gguf;
		o->verify_ud = &gc;
	}
	int rc = 0;
	if (!access(o->out, F_OK)) {
		if (o->progress)
			fprintf(stderr, "infill pull: %s is already at %s\n", e->name, o->out);
	} else if (space_check(o->out, e)) {
		rc = 1;
	} else {
		if (o->progress)
			fprintf(stderr, "infill pull: %s (%s, %s) from %s\n", e->name, e->quant,
			        e->size ? e->size : "size not listed", e->url);
		rc = remote_pull(o, msg, sizeof msg) ? 1 : 0;
		if (rc)
			fprintf(stderr, "infill pull: %s\n", msg);
		else if (o->progress)
			fprintf(stderr,
			        "infill pull: %s -> %s (%s)\n  set \"model\": \"%s\" to use it\n",
			        e->name, o->out,
			        e->sha256 ? "sha256 checked against the publisher's" : gc.said,
			        e->is_default ? e->model : e->name);
	}
	free(cached);
	catalog_free(cat);
	return rc;
}

int cli_pull(int argc, char **argv)
{
	struct remote_pull_options o = { .progress = true };
	const char *out = NULL, *what = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(a, "--sha256") && i + 1 < argc) {
			o.sha256 = argv[++i];
		} else if (!strcmp(a, "--ca-file") && i + 1 < argc) {
			o.ca_file = argv[++i];
		} else if (!strcmp(a, "--quiet")) {
			o.progress = false;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (a[0] != '-' && !what) {
			what = a;
		} else {
			fprintf(stderr, "infill pull: unknown or incomplete option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!what) {
		usage(stderr);
		return 2;
	}
	/* a file-size limit must end in a message, not in SIGXFSZ's kill */
	signal(SIGXFSZ, SIG_IGN);
	if (!strstr(what, "://")) {
		if (o.sha256) {
			fprintf(stderr, "infill pull: --sha256 is for a URL; a catalog name brings "
			                "its own\n");
			return 2;
		}
		return pull_name(&o, what, out);
	}
	o.url = what;
	char *name = out ? NULL : name_of(o.url);
	if (!out && !name) {
		fprintf(stderr, "infill pull: the URL names no file; give one with -o FILE\n");
		return 2;
	}
	o.out = out ? out : name;
	char msg[1024];
	int rc = remote_pull(&o, msg, sizeof msg);
	if (rc)
		fprintf(stderr, "infill pull: %s\n", msg);
	else if (o.progress)
		fprintf(stderr, "infill pull: %s%s\n", o.out, o.sha256 ? " (sha256 checked)" : "");
	free(name);
	return rc ? 1 : 0;
}
