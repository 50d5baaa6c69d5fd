/*
 * test_document_oom.c - every allocation in document.c failing in turn.
 *
 * malloc, calloc and realloc are wrapped at link time (-Wl,--wrap=...);
 * the wrapper fails the Nth call. For N = 1, 2, ... a fixed script of
 * edits (small in-chunk ones, chunk splits, a large paste, a delete of
 * everything) runs until it gets through without a failure. Whenever a
 * call fails, it must return NULL / -ENOMEM and leave the document exactly
 * as it was; the script then goes on with allocations allowed again, so a
 * document that survived one failure is checked to still work.
 */
#include <errno.h>

#include "harness.h"
#include "document.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

/* Test-only state: the wrappers have no other way to reach it. */
static long alloc_calls, alloc_fail_at = -1, alloc_failed;

static int should_fail(void)
{
	if (alloc_fail_at >= 0 && alloc_calls++ == alloc_fail_at) {
		alloc_failed++;
		return 1;
	}
	return 0;
}

void *__wrap_malloc(size_t n)
{
	return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return should_fail() ? NULL : __real_realloc(p, n);
}

struct step {
	size_t start, end; /* clamped to the shadow's length */
	const char *text;
	size_t repeat; /* text repeated this many times */
};

/* Shadow copy applied with plain string operations. */
static char shadow[1 << 20];
static size_t shadow_len;

static int same_as_shadow(struct doc *d)
{
	long saved = alloc_fail_at;
	alloc_fail_at = -1; /* the check's own allocation neither fails nor counts */
	char *t = doc_text(d);
	alloc_fail_at = saved;
	int ok = t && doc_length(d) == shadow_len && memcmp(t, shadow, shadow_len) == 0;
	size_t lines = 1;
	for (size_t i = 0; i < shadow_len; i++)
		lines += shadow[i] == '\n' ? !(i && shadow[i - 1] == '\r') : shadow[i] == '\r';
	ok = ok && doc_line_count(d) == lines;
	free(t);
	return ok;
}

TEST(every_allocation_failing_in_turn)
{
	static char big[300000];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = i % 40 == 39 ? '\n' : i % 40 == 38 ? '\r' : (char)('a' + i % 26);
	const struct step steps[] = {
		{ 5, 5, "x", 1 },
		{ 0, 3, "\r\n", 1 },
		{ 100, 100, "line\n", 900 },
		{ 10, 4000, "", 1 },
		{ 2000, 2000, "\n", 1 },
		{ 0, 0, "\xf0\x9f\x98\x80", 3000 },
		{ 50, 9000, "ab\r", 2 },
		{ 0, (size_t)-1, "", 1 },
		{ 0, 0, "z", 1 },
	};
	int bad = 0;
	long n;
	for (n = 0; n < 100000 && !bad; n++) {
		alloc_calls = 0;
		alloc_failed = 0;
		alloc_fail_at = n;
		memcpy(shadow, big, 20000);
		shadow_len = 20000;
		struct doc *d = doc_new(shadow, shadow_len);
		if (!d) {
			CHECK(alloc_failed);
			continue;
		}
		for (size_t s = 0; s < sizeof steps / sizeof steps[0] && !bad; s++) {
			const struct step *st = &steps[s];
			size_t tl = strlen(st->text), len = tl * st->repeat;
			char *text = __real_malloc(len + 1);
			for (size_t r = 0; r < st->repeat; r++) memcpy(text + r * tl, st->text, tl);
			size_t a = st->start < shadow_len ? st->start : shadow_len;
			size_t b = st->end < shadow_len ? st->end : shadow_len;
			long before = alloc_failed;
			int rc = doc_replace(d, a, b, text, len);
			if (rc == 0) {
				memmove(shadow + a + len, shadow + b, shadow_len - b);
				memcpy(shadow + a, text, len);
				shadow_len = shadow_len - (b - a) + len;
			} else if (rc != -ENOMEM || alloc_failed == before) {
				fprintf(stderr, "fail at %ld, step %zu: rc %d\n", n, s, rc);
				bad = 1;
			}
			free(text);
			if (!same_as_shadow(d)) {
				fprintf(stderr, "fail at %ld, step %zu: document differs (rc %d)\n",
				        n, s, rc);
				bad = 1;
			}
		}
		alloc_fail_at = -1;
		doc_free(d);
		if (!alloc_failed) break; /* the whole script ran without reaching call n */
	}
	CHECK(!bad);
	CHECK(n > 10);
	fprintf(stderr, "failed each of the first %ld allocations in turn\n", n);
}

TEST_MAIN()
