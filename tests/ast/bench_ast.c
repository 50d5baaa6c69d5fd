/*
 * bench_ast.c - what the tree-sitter layer costs per keystroke and per
 * candidate, on 5,000-line Python and C files built from tests/ast/data.
 * Not a test: run build/tests/ast/bench-ast [ITERATIONS] and read the figures.
 *
 *   parse     a full parse of the file (the first didOpen)
 *   keystroke ast_doc_edit() + incremental ast_doc_parse() for one typed or
 *             deleted character in a function body
 *   validate  ast_validate() of one candidate at a cursor in the middle,
 *             reusing the document's tree, and (for comparison) without it
 *   slice     ast_slice() with the default budgets
 *   closers   ast_closers_at() on a line that is only `}` in the middle of
 *             a broken file: the bracket walk it takes there
 */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "ast.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

struct buf {
	char *p;
	size_t len, cap;
};

static const char *buf_read(void *ctx, size_t off, size_t *len)
{
	struct buf *b = ctx;
	if (off >= b->len) {
		*len = 0;
		return NULL;
	}
	*len = b->len - off;
	return b->p + off;
}

static char *slurp(const char *name, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/data/%s", AST_TEST_DIR, name);
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
	b[n] = 0;
	*len = (size_t)n;
	fclose(f);
	return b;
}

/* The file repeated until it has at least `lines` lines. */
static struct buf repeat_to(const char *name, size_t lines)
{
	struct buf b = { 0 };
	size_t n;
	char *one = slurp(name, &n);
	if (!one) return b;
	size_t per = 0;
	for (size_t i = 0; i < n; i++) per += one[i] == '\n';
	size_t copies = (lines + per - 1) / per;
	b.cap = n * copies + 64;
	b.p = malloc(b.cap);
	for (size_t c = 0; c < copies; c++) {
		memcpy(b.p + b.len, one, n);
		b.len += n;
	}
	b.p[b.len] = 0;
	free(one);
	return b;
}

static struct ast_point point_at(const char *t, size_t off)
{
	struct ast_point p = { 0, 0 };
	for (size_t i = 0; i < off; i++) {
		if (t[i] == '\n') {
			p.row++;
			p.column = 0;
		} else {
			p.column++;
		}
	}
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	double sum = 0;
	for (int i = 0; i < n; i++) sum += v[i];
	printf("  %-34s mean %9.1f us  p50 %9.1f  p90 %9.1f  max %9.1f  (n=%d)\n", what, sum / n,
	       v[n / 2], v[n * 9 / 10], v[n - 1], n);
}

static void bench(const char *file, const char *lang_id, const char *anchor,
                  const char *const *cands, int iters)
{
	struct buf b = repeat_to(file, 5000);
	if (!b.p) {
		printf("SKIP: no %s\n", file);
		return;
	}
	const struct ast_lang *lang = ast_lang_from_id(lang_id);
	size_t lines = 0;
	for (size_t i = 0; i < b.len; i++) lines += b.p[i] == '\n';
	printf("%s x%zu lines (%zu bytes), %s:\n", file, lines, b.len, lang_id);

	double *t = malloc(sizeof(double) * (size_t)(iters > 20 ? iters : 20) * 2);
	int n = 0;
	for (int i = 0; i < 5; i++) {
		struct ast_doc *d = ast_doc_new(lang, buf_read, &b);
		double t0 = now_us();
		ast_doc_parse(d);
		t[n++] = now_us() - t0;
		ast_doc_delete(d);
	}
	report("full parse", t, n);

	/* Keystrokes: type a character into the middle copy's anchor, then
	 * delete it, alternately, at the same place an editor would. */
	struct ast_doc *doc = ast_doc_new(lang, buf_read, &b);
	ast_doc_parse(doc);
	const char *mid = strstr(b.p + b.len / 2, anchor);
	size_t pos = (size_t)(mid - b.p) + strlen(anchor);
	n = 0;
	for (int i = 0; i < iters; i++) {
		double t0 = now_us();
		struct ast_point sp = point_at(b.p, pos);
		double tp = now_us() - t0; /* positions come from the daemon's line index */
		if (i % 2 == 0) {
			memmove(b.p + pos + 1, b.p + pos, b.len - pos + 1);
			b.p[pos] = 'x';
			b.len++;
			t0 = now_us();
			ast_doc_edit(doc, pos, pos, pos + 1, sp, sp,
			             (struct ast_point){ sp.row, sp.column + 1 });
		} else {
			memmove(b.p + pos, b.p + pos + 1, b.len - pos);
			b.len--;
			t0 = now_us();
			ast_doc_edit(doc, pos, pos + 1, pos, sp,
			             (struct ast_point){ sp.row, sp.column + 1 }, sp);
		}
		ast_doc_parse(doc);
		t[n++] = now_us() - t0;
		(void)tp;
	}
	report("keystroke (edit + re-parse)", t, n);

	/* Candidates at the anchor (the document as it is, tree reused). */
	for (const char *const *c = cands; *c; c++) {
		struct ast_validation v;
		struct ast_validate_params vp = { .lang = lang,
			                          .text = b.p,
			                          .len = b.len,
			                          .cursor = pos,
			                          .candidate = *c,
			                          .candidate_len = strlen(*c),
			                          .doc = doc };
		n = 0;
		for (int i = 0; i < iters; i++) {
			double t0 = now_us();
			ast_validate(&vp, &v);
			t[n++] = now_us() - t0;
		}
		char label[96];
		snprintf(label, sizeof label, "validate %-9s (%u parses)",
		         ast_verdict_name(v.verdict), v.parses);
		report(label, t, n);
	}
	{
		struct ast_validation v;
		struct ast_validate_params vp = { .lang = lang,
			                          .text = b.p,
			                          .len = b.len,
			                          .cursor = pos,
			                          .candidate = cands[0],
			                          .candidate_len = strlen(cands[0]) };
		n = 0;
		for (int i = 0; i < (iters < 20 ? iters : 20); i++) {
			double t0 = now_us();
			ast_validate(&vp, &v);
			t[n++] = now_us() - t0;
		}
		report("validate, no doc tree (full parse)", t, n);
	}
	{
		n = 0;
		for (int i = 0; i < iters; i++) {
			struct ast_slice s;
			struct ast_slice_params sp = { .lang = lang,
				                       .text = b.p,
				                       .len = b.len,
				                       .cursor = pos,
				                       .prefix_tokens = 1024,
				                       .suffix_tokens = 192,
				                       .extra_tokens = 512,
				                       .doc = doc };
			double t0 = now_us();
			ast_slice(&sp, &s);
			t[n++] = now_us() - t0;
			ast_slice_finish(&s);
		}
		report("slice (1024/192/512, tree reused)", t, n);
	}
	/* Closers: on a `}` line in the middle of the file broken at its end.
	 * The walk skips what parsed cleanly; where one error spans the file
	 * it walks every token (6 ms here, measured before the skipping). */
	const char *closing = strstr(b.p + b.len / 2, "\n}\n");
	if (closing) {
		static const char tail[] = "\nint tail(void) {\n\tf(\n";
		struct buf broken = { malloc(b.len + sizeof tail), b.len + sizeof tail - 1, 0 };
		memcpy(broken.p, b.p, b.len);
		memcpy(broken.p + b.len, tail, sizeof tail);
		struct ast_doc *bd = ast_doc_new(lang, buf_read, &broken);
		ast_doc_parse(bd);
		size_t at = (size_t)(closing - b.p) + 2;
		struct ast_closer out[4];
		n = 0;
		for (int i = 0; i < iters; i++) {
			double t0 = now_us();
			ast_closers_at(bd, lang, broken.p, broken.len, at, out, 4);
			t[n++] = now_us() - t0;
		}
		report("closers, `}` line, broken at end", t, n);
		ast_doc_delete(bd);
		free(broken.p);
	}
	ast_doc_delete(doc);
	free(t);
	free(b.p);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	if (iters < 2) iters = 2;
	/* The cursor sits at the end of a line in a function body in the middle
	 * of the file; candidates are what a model writes there. */
	static const char *const py[] = {
		"\n        demand = daily_demand(line.history)",
		"\n        for code in sorted(self.lines):\n            log.info(\"%s\", code)",
		"\n        total = 0\n        for x in items\n            total += x",
		"\n        return self.lines[code].on_hand +",
		NULL,
	};
	static const char *const c[] = {
		"\n\tsize_t n = 0;",
		"\n\tfor (size_t i = 0; i < n; i++)\n\t\tsum += v[i];",
		"\n\tint y = 1;\n\ty += 2;\n\treturn y +;",
		"\n\treturn f(x;",
		NULL,
	};
	bench("inventory.py", "python", "        line = self.line(code)", py, iters);
	bench("slice_snapshot.c", "c", "\tout->prefix_len = cursor - ps;", c, iters);
	return 0;
}
