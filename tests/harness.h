/*
 * harness.h - the smallest test harness that does the job.
 *
 * A test file defines cases with TEST(name) { ... } and ends with
 * TEST_MAIN(). Each CHECK that fails prints file:line and the expression and
 * marks the case failed; the case keeps running so one run shows every broken
 * assertion. The process exits non-zero when any case failed, which is what
 * meson test counts. Set TEST_FILTER=substr to run only matching cases.
 */
#ifndef INFILL_TESTS_HARNESS_H
#define INFILL_TESTS_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shared test data (../shared/testdata, or $INFILL_TESTDATA). */
static inline const char *testdata(void)
{
	const char *d = getenv("INFILL_TESTDATA");
	return d ? d : "../shared/testdata";
}

struct test_case {
	const char *name;
	void (*fn)(int *failed);
	struct test_case *next;
};

__attribute__((unused)) static struct test_case *test_cases_head;
__attribute__((unused)) static struct test_case **test_cases_tail = &test_cases_head;

#define TEST(name_)                                                              \
	static void test_##name_(int *test_failed_);                             \
	static struct test_case test_case_##name_ = { #name_, test_##name_, 0 }; \
	__attribute__((constructor)) static void test_register_##name_(void)     \
	{                                                                        \
		*test_cases_tail = &test_case_##name_;                           \
		test_cases_tail = &test_case_##name_.next;                       \
	}                                                                        \
	static void test_##name_(int *test_failed_)

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			*test_failed_ = 1;                                                       \
		}                                                                                \
	} while (0)

#define CHECK_INT_EQ(a, b)                                                                  \
	do {                                                                                \
		long long a_ = (long long)(a), b_ = (long long)(b);                         \
		if (a_ != b_) {                                                             \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, \
			        __LINE__, #a, #b, a_, b_);                                  \
			*test_failed_ = 1;                                                  \
		}                                                                           \
	} while (0)

#define CHECK_STR_EQ(a, b)                                                                         \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                           \
			fprintf(stderr, "%s:%d: %s == %s failed:\n  \"%s\"\n  \"%s\"\n", __FILE__, \
			        __LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");         \
			*test_failed_ = 1;                                                         \
		}                                                                                  \
	} while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
	do {                                                                                       \
		double a_ = (double)(a), b_ = (double)(b);                                         \
		if (!(fabs(a_ - b_) <= (tol))) {                                                   \
			fprintf(stderr, "%s:%d: |%s - %s| <= %g failed: %.9g vs %.9g\n", __FILE__, \
			        __LINE__, #a, #b, (double)(tol), a_, b_);                          \
			*test_failed_ = 1;                                                         \
		}                                                                                  \
	} while (0)

/* Stops the current case (use after a CHECK whose failure makes the rest moot). */
#define REQUIRE(cond)                      \
	do {                               \
		CHECK(cond);               \
		if (*test_failed_) return; \
	} while (0)

/* Runs every registered case (or those matching $TEST_FILTER), prints one
 * line per case and a summary; returns the exit status for main. Call it
 * from a main of your own when a test needs setup (or a skip) first. */
__attribute__((unused)) static int test_run_all(void)
{
	const char *filter = getenv("TEST_FILTER");
	int passed = 0, failed = 0;
	for (struct test_case *t = test_cases_head; t; t = t->next) {
		if (filter && !strstr(t->name, filter)) continue;
		int f = 0;
		t->fn(&f);
		printf("%s %s\n", f ? "FAIL" : "ok  ", t->name);
		fflush(stdout);
		f ? failed++ : passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* Reads a whole file into a new NUL-terminated buffer (the caller frees it)
 * and sets *len (may be NULL); NULL when it cannot be opened or read. */
__attribute__((unused)) static char *test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	char *buf = NULL;
	long n = -1;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
		buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = 0;
		if (len) *len = (size_t)n;
	}
	return buf;
}

/* Exit status meson counts as "skipped". */
#define TEST_SKIP_STATUS 77

#define TEST_MAIN()                    \
	int main(void)                 \
	{                              \
		return test_run_all(); \
	}

#endif
