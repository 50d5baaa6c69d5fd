/*
 * eval_files.c - which files `infill eval` cuts its cases from
 * (eval_cases.h): the default list models/eval-files.txt, lists and single
 * files from the command line, and the check that none of them was trained
 * on (models/train-files.txt), by path and by real path.
 */
#include "eval_cases.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infill_config.h"

static int strs_push(struct eval_files *s, const char *p, size_t n)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		char **v = realloc(s->v, cap * sizeof *v);
		if (!v) return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	char *c = strndup(p, n);
	if (!c) return -ENOMEM;
	s->v[s->n++] = c;
	return 0;
}

void eval_files_finish(struct eval_files *s)
{
	for (size_t i = 0; i < s->n; i++) free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof *s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool strs_has(const struct eval_files *sorted, const char *p)
{
	return sorted->n && bsearch(&p, sorted->v, sorted->n, sizeof *sorted->v, cmp_str);
}

char *eval_file_read(const char *path, size_t *len, size_t limit)
{
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			char *b = realloc(buf, cap + 1);
			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n > limit) {
			free(buf);
			fclose(f);
			errno = EFBIG;
			return NULL;
		}
		if (r == 0) break;
	}
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* Appends the paths of a list file: "path" or "language<TAB>path" lines. */
static int list_read(const char *path, struct eval_files *out)
{
	size_t len;
	char *t = eval_file_read(path, &len, 64u << 20);
	if (!t) return -errno;
	int rc = 0;
	for (char *line = t; *line && !rc;) {
		char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char *tab = memchr(line, '\t', n);
		char *p = tab ? tab + 1 : line;
		size_t pn = n - (size_t)(p - line);
		while (pn && (p[pn - 1] == '\r' || p[pn - 1] == ' ')) pn--;
		if (pn && p[0] != '#') rc = strs_push(out, p, pn);
		line = nl ? nl + 1 : line + n;
	}
	free(t);
	return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

int eval_files_collect(const char *const *args, size_t n_args, bool allow_train,
                       struct eval_files *out)
{
	int rc = 0;
	if (!n_args) {
		const char *list = INFILL_SOURCE_ROOT "/models/eval-files.txt";
		rc = list_read(list, out);
		if (rc) {
			fprintf(stderr, "infill eval: cannot read %s: %s (pass --files)\n", list,
			        strerror(-rc));
			return rc;
		}
	}
	for (size_t i = 0; i < n_args && !rc; i++) {
		if (ends_with(args[i], ".txt")) {
			rc = list_read(args[i], out);
			if (rc)
				fprintf(stderr, "infill eval: cannot read the list %s: %s\n",
				        args[i], strerror(-rc));
		} else {
			rc = strs_push(out, args[i], strlen(args[i]));
		}
	}
	if (rc) return rc;

	struct eval_files train = { 0 };
	const char *tl = INFILL_SOURCE_ROOT "/models/train-files.txt";
	if (list_read(tl, &train))
		fprintf(stderr,
		        "infill eval: warning: %s is unreadable: cannot check that the files "
		        "are held out from training\n",
		        tl);
	qsort(train.v, train.n, sizeof *train.v, cmp_str);
	size_t bad = 0;
	for (size_t i = 0; i < out->n; i++) {
		char real[PATH_MAX];
		bool in = strs_has(&train, out->v[i]) ||
		          (realpath(out->v[i], real) && strs_has(&train, real));
		if (in) {
			fprintf(stderr, "infill eval: %s: %s is in the training data (%s)\n",
			        allow_train ? "WARNING" : "error", out->v[i], tl);
			bad++;
		}
	}
	eval_files_finish(&train);
	if (bad && !allow_train) {
		fprintf(stderr,
		        "infill eval: refusing to measure on %zu training file(s): the figures "
		        "would flatter the model (--allow-train overrides)\n",
		        bad);
		return -EINVAL;
	}
	if (bad)
		fprintf(stderr,
		        "infill eval: WARNING: %zu of %zu files were trained on; exact match "
		        "will be inflated\n",
		        bad, out->n);
	return 0;
}
