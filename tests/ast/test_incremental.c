/*
 * test_incremental.c - a tree kept in step by ast_doc_edit() + incremental
 * re-parse must equal a fresh parse of the same text (same S-expression),
 * after many random edits on real files, including edits that break the
 * syntax and edits that are undone. Seeded: a failure names its seed.
 */
#include "ast.h"
#include "harness.h"

struct buf {
	char *p;
	size_t len, cap;
	size_t chunk; /* serve the text in chunks this big, like a piece table */
};

static const char *buf_read(void *ctx, size_t off, size_t *len)
{
	struct buf *b = ctx;
	if (off >= b->len) {
		*len = 0;
		return NULL;
	}
	size_t n = b->len - off;
	*len = n < b->chunk ? n : b->chunk;
	return b->p + off;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
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

/* Replaces b[start, start+del) with ins[0..n), telling the doc. */
static void edit(struct buf *b, struct ast_doc *doc, size_t start, size_t del, const char *ins,
                 size_t n)
{
	struct ast_point sp = point_at(b->p, start), oep = point_at(b->p, start + del);
	if (b->len - del + n + 1 > b->cap) {
		b->cap = (b->len - del + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memmove(b->p + start + n, b->p + start + del, b->len - start - del + 1);
	memcpy(b->p + start, ins, n);
	b->len = b->len - del + n;
	struct ast_point nep = point_at(b->p, start + n);
	ast_doc_edit(doc, start, start + del, start + n, sp, oep, nep);
}

static int compare(const struct ast_lang *lang, struct buf *b, struct ast_doc *doc)
{
	if (ast_doc_parse(doc) != 0) return -1;
	struct ast_doc *fresh = ast_doc_new(lang, buf_read, b);
	ast_doc_parse(fresh);
	char *x = ast_doc_sexp(doc), *y = ast_doc_sexp(fresh);
	int same = x && y && !strcmp(x, y);
	free(x);
	free(y);
	ast_doc_delete(fresh);
	return same ? 0 : 1;
}

static void run(int *test_failed_, const char *file, const char *lang_id, uint64_t seed, int steps,
                int undo_pct)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/data/%s", AST_TEST_DIR, file);
	struct buf b = { 0 };
	b.p = test_read_file(path, &b.len);
	REQUIRE(b.p && b.len > 0);
	b.cap = b.len + 1;
	b.chunk = 4096;
	const struct ast_lang *lang = ast_lang_from_id(lang_id);
	struct ast_doc *doc = ast_doc_new(lang, buf_read, &b);
	REQUIRE(doc && ast_doc_parse(doc) == 0);
	uint64_t s = seed;
	int mismatches = 0, with_errors = 0;
	char ins[64], saved[64];
	for (int step = 0; step < steps; step++) {
		size_t start = rng_next(&s) % (b.len + 1);
		size_t del = rng_next(&s) % 16;
		if (start + del > b.len) del = b.len - start;
		/* Insert a piece of the file itself: realistic tokens. */
		size_t n = rng_next(&s) % 24, from = rng_next(&s) % (b.len + 1);
		if (from + n > b.len) n = b.len - from;
		memcpy(ins, b.p + from, n);
		memcpy(saved, b.p + start, del);
		edit(&b, doc, start, del, ins, n);
		/* Sometimes parse between edits, sometimes batch them. */
		if (rng_next(&s) % 3 == 0) ast_doc_parse(doc);
		if ((int)(rng_next(&s) % 100) < undo_pct) /* undo, as an editor does */
			edit(&b, doc, start, n, saved, del);
		if (step % 5 == 4 || step == steps - 1) {
			int rc = compare(lang, &b, doc);
			with_errors += ast_doc_error_count(doc) > 0;
			if (rc) {
				fprintf(stderr, "%s: seed %llu step %d: incremental != fresh\n",
				        file, (unsigned long long)seed, step);
				mismatches++;
				/* Re-sync so later steps test again. */
				ast_doc_reset(doc);
				ast_doc_parse(doc);
			}
		}
	}
	printf("  %s: %d steps, %d checks with syntax errors, %d mismatches\n", file, steps,
	       with_errors, mismatches);
	CHECK_INT_EQ(mismatches, 0);
	ast_doc_delete(doc);
	free(b.p);
}

/* Mostly kept edits: the file breaks and stays broken (error recovery). */
TEST(python_random_edits)
{
	run(test_failed_, "inventory.py", "python", 1, 200, 25);
}
TEST(c_random_edits)
{
	run(test_failed_, "slice_snapshot.c", "c", 2, 200, 25);
}
TEST(go_random_edits)
{
	run(test_failed_, "sample.go", "go", 3, 150, 25);
}
TEST(rust_random_edits)
{
	run(test_failed_, "sample.rs", "rust", 4, 150, 25);
}
TEST(typescript_random_edits)
{
	run(test_failed_, "sample.ts", "typescript", 5, 150, 25);
}
/* Every edit undone: the tree goes back to clean each time. */
TEST(python_edit_undo)
{
	run(test_failed_, "inventory.py", "python", 6, 150, 100);
}
TEST(c_edit_undo)
{
	run(test_failed_, "slice_snapshot.c", "c", 7, 150, 100);
}

/* Edits before the first parse and a NULL language are harmless. */
TEST(edge_cases)
{
	struct buf b = { strdup("x = 1\n"), 6, 7, 4096 };
	struct ast_doc *doc = ast_doc_new(ast_lang_from_id("python"), buf_read, &b);
	edit(&b, doc, 0, 1, "yy", 2);
	CHECK_INT_EQ(ast_doc_parse(doc), 0);
	char *sx = ast_doc_sexp(doc);
	CHECK(sx && strstr(sx, "assignment"));
	free(sx);
	CHECK_INT_EQ(ast_doc_error_count(doc), 0);
	ast_doc_delete(doc);
	struct ast_doc *plain = ast_doc_new(NULL, buf_read, &b);
	CHECK(plain != NULL);
	edit(&b, plain, 0, 0, "z", 1);
	CHECK_INT_EQ(ast_doc_parse(plain), 0);
	CHECK(!ast_doc_has_tree(plain));
	CHECK(ast_doc_sexp(plain) == NULL);
	ast_doc_delete(plain);
	ast_doc_delete(NULL);
	free(b.p);
}

/* A text held in one piece reads as one chunk, and parses like any other. */
TEST(text_in_one_piece)
{
	static const char src[] = "def f(x):\n    return x\n";
	struct ast_text t = { src, sizeof src - 1 };
	size_t n = 99;
	CHECK(ast_text_read(&t, 0, &n) == src);
	CHECK_INT_EQ(n, sizeof src - 1);
	CHECK(ast_text_read(&t, 4, &n) == src + 4);
	CHECK_INT_EQ(n, sizeof src - 5);
	CHECK(ast_text_read(&t, sizeof src - 1, &n) == NULL);
	CHECK_INT_EQ(n, 0);
	CHECK(ast_text_read(&t, 1000, &n) == NULL);
	struct ast_doc *doc = ast_doc_new(ast_lang_from_id("python"), ast_text_read, &t);
	REQUIRE(doc);
	CHECK_INT_EQ(ast_doc_parse(doc), 0);
	CHECK_INT_EQ(ast_doc_error_count(doc), 0);
	ast_doc_delete(doc);
}

TEST_MAIN()
