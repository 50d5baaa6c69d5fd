/*
 * eval_metrics.c - how the quality harness scores one completion against
 * the text that was cut out (eval_cases.h): exact match and edit similarity
 * over a whitespace-normalized form, whether the completion parses in the
 * file, and percentiles for latency.
 *
 * Why normalize trailing whitespace only: a completion that differs in
 * trailing blanks or a final newline shows the same code to the user, but
 * indentation inside a block is meaning (Python) or style the user would
 * have to fix, so it counts.
 */
#include "eval_cases.h"
#include "infer.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t eval_normalize(const char *s, size_t n, char *out)
{
	size_t w = 0, line_start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '\n') {
			size_t e = i;
			while (e > line_start &&
			       (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r'))
				e--;
			memcpy(out + w, s + line_start, e - line_start);
			w += e - line_start;
			if (i < n) out[w++] = '\n';
			line_start = i + 1;
		}
	}
	while (w && out[w - 1] == '\n') w--;
	out[w] = 0;
	return w;
}

/* Both texts normalized into one new buffer: *a at its start, *b after. */
static char *normalize_pair(const char *a, size_t na, const char *b, size_t nb, size_t *la,
                            size_t *lb, char **pb)
{
	char *buf = malloc(na + nb + 2);
	if (!buf) return NULL;
	*la = eval_normalize(a, na, buf);
	*pb = buf + na + 1;
	*lb = eval_normalize(b, nb, *pb);
	return buf;
}

bool eval_exact_match(const char *got, size_t got_len, const char *want, size_t want_len)
{
	size_t la, lb;
	char *pb;
	char *buf = normalize_pair(got, got_len, want, want_len, &la, &lb, &pb);
	if (!buf) return false;
	bool eq = la == lb && !memcmp(buf, pb, la);
	free(buf);
	return eq;
}

double eval_edit_similarity(const char *got, size_t got_len, const char *want, size_t want_len)
{
	size_t la, lb;
	char *pb;
	char *buf = normalize_pair(got, got_len, want, want_len, &la, &lb, &pb);
	if (!buf) return -1;
	size_t m = la > lb ? la : lb;
	double sim = 1;
	if (m) {
		size_t d = rerank_levenshtein(buf, la, pb, lb);
		sim = d == SIZE_MAX ? -1 : 1.0 - (double)d / (double)m;
	}
	free(buf);
	return sim;
}

/* ---- parsing ------------------------------------------------------------------ */

int eval_parse_errors(const struct ast_lang *lang, const char *text, size_t len, size_t *errors)
{
	if (!lang) return AST_EINVAL;
	struct ast_text t = { text, len };
	struct ast_doc *doc = ast_doc_new(lang, ast_text_read, &t);
	if (!doc) return AST_ENOMEM;
	int rc = ast_doc_parse(doc);
	if (!rc) *errors = ast_doc_error_count(doc);
	ast_doc_delete(doc);
	return rc;
}

int eval_parses_with(const struct ast_lang *lang, const char *text, size_t len, size_t start,
                     size_t end, const char *repl, size_t repl_len, size_t baseline, bool *ok)
{
	if (start > end || end > len) return AST_EINVAL;
	size_t n = len - (end - start) + repl_len;
	char *buf = malloc(n + 1);
	if (!buf) return -ENOMEM;
	memcpy(buf, text, start);
	memcpy(buf + start, repl, repl_len);
	memcpy(buf + start + repl_len, text + end, len - end);
	buf[n] = 0;
	size_t errors = 0;
	int rc = eval_parse_errors(lang, buf, n, &errors);
	free(buf);
	if (!rc) *ok = errors <= baseline;
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double eval_percentile(double *v, size_t n, double p)
{
	if (!n) return 0;
	qsort(v, n, sizeof *v, cmp_double);
	if (p <= 0) return v[0];
	/* nearest rank: the smallest value with at least p of the values at or below it */
	size_t rank = (size_t)ceil(p * (double)n);
	if (rank < 1) rank = 1;
	if (rank > n) rank = n;
	return v[rank - 1];
}
