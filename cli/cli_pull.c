/*
 * cli_pull.c - `infill pull URL [-o FILE] [--sha256 HEX] [--ca-file PEM]
 * [--quiet]`: downloads a model file (remote_pull, remote/remote_pull.c)
 * with a progress line, resuming FILE.part, checking the sha256 when
 * given. FILE defaults to the URL's last path segment.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: infill pull URL [-o FILE] [--sha256 HEX] [--ca-file PEM] [--quiet]\n"
	        "  downloads URL to FILE (default: the URL's last path segment), resuming\n"
	        "  FILE.part when an earlier run stopped, and checks the sha256 when given\n"
	        "  (a mismatch removes the download). Exit status 0 when the file is in place.\n");
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

int cli_pull(int argc, char **argv)
{
	struct remote_pull_options o = { .progress = true };
	const char *out = NULL;
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
		} else if (a[0] != '-' && !o.url) {
			o.url = a;
		} else {
			fprintf(stderr, "infill pull: unknown or incomplete option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!o.url) {
		usage(stderr);
		return 2;
	}
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
