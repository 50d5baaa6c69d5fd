/*
 * bench_document.c - the cost of one keystroke in a large document against a
 * small one.
 *
 * A keystroke here is what the server does for one didChange with one
 * character typed: convert the LSP position (UTF-16) to a byte offset and
 * insert one byte there, then convert the new cursor offset back to a
 * position (as a completion request would). Two patterns: typing at a
 * cursor that moves forward (realistic) and typing at random lines (no
 * locality). Prints microseconds per keystroke for 1,000 and 100,000 lines
 * and the ratio: mean CPU time (what the work costs, whatever else runs on
 * the machine) and wall-clock p50/p99. Usage: bench-doc [keystrokes]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "position.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static struct doc *make_doc(size_t lines)
{
	const char *line = "    result = compute(alpha, beta) + \xc3\xa9t\xc3\xa9; // line\n";
	size_t ll = strlen(line);
	char *buf = malloc(lines * ll);
	for (size_t i = 0; i < lines; i++) memcpy(buf + i * ll, line, ll);
	struct doc *d = doc_new(buf, lines * ll);
	free(buf);
	return d;
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct result {
	double cpu_us;   /* mean CPU time per keystroke (immune to other processes) */
	double p50, p99; /* wall-clock per keystroke */
};

static double cpu_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* `random_lines` picks a new line for every keystroke. */
static struct result run(size_t lines, size_t keystrokes, int random_lines)
{
	struct doc *d = make_doc(lines);
	double *wall = malloc(keystrokes * sizeof *wall);
	if (!d || !wall) {
		fprintf(stderr, "bench-doc: out of memory\n");
		exit(1);
	}
	struct doc_pos cur = { (uint32_t)(lines / 2), 4 };
	volatile uint32_t sink = 0;
	double c0 = cpu_now_us();
	for (size_t k = 0; k < keystrokes; k++) {
		if (random_lines) {
			cur.line = (uint32_t)(rng_next() % lines);
			cur.character = (uint32_t)(rng_next() % 40);
		} else if (k % 60 == 59) {
			/* the typist moves to the next line now and then */
			cur.line = (uint32_t)((cur.line + 1) % lines);
			cur.character = 4;
		}
		double a = now_us();
		size_t off = doc_offset_at(d, cur, POS_ENCODING_UTF16);
		doc_replace(d, off, off, "x", 1);
		struct doc_pos p = doc_pos_at(d, off + 1, POS_ENCODING_UTF16);
		wall[k] = now_us() - a;
		sink += p.character;
		cur.character++;
	}
	struct result r;
	r.cpu_us = (cpu_now_us() - c0) / (double)keystrokes;
	qsort(wall, keystrokes, sizeof *wall, cmp_double);
	r.p50 = wall[keystrokes / 2];
	r.p99 = wall[keystrokes * 99 / 100];
	(void)sink;
	free(wall);
	doc_free(d);
	return r;
}

int main(int argc, char **argv)
{
	size_t keystrokes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 200000;
	const char *names[2] = { "typing at a cursor", "typing at random lines" };
	printf("one keystroke = LSP position -> offset, insert 1 byte, offset -> position "
	       "(UTF-16)\n");
	for (int mode = 0; mode < 2; mode++) {
		struct result small = run(1000, keystrokes, mode);
		struct result big = run(100000, keystrokes, mode);
		printf("%s:\n", names[mode]);
		printf("  1,000 lines:   %.3f us CPU/keystroke, wall p50 %.3f us, p99 %.3f us\n",
		       small.cpu_us, small.p50, small.p99);
		printf("  100,000 lines: %.3f us CPU/keystroke, wall p50 %.3f us, p99 %.3f us\n",
		       big.cpu_us, big.p50, big.p99);
		printf("  ratio 100,000 / 1,000 lines: CPU %.2f, p50 %.2f\n",
		       big.cpu_us / small.cpu_us, big.p50 / small.p50);
	}
	/* One long line (minified code): conversions walk the line, 8 ASCII
	 * bytes at a time. */
	size_t long_len = 1 << 20;
	char *flat = malloc(long_len);
	for (size_t i = 0; i < long_len; i++) flat[i] = (char)('a' + i % 26);
	struct doc *d = doc_new(flat, long_len);
	free(flat);
	if (d) {
		size_t reps = 200;
		double c0 = cpu_now_us();
		volatile size_t sink = 0;
		for (size_t k = 0; k < reps; k++) {
			struct doc_pos p = { 0, (uint32_t)(long_len - 1 - k) };
			sink += doc_offset_at(d, p, POS_ENCODING_UTF16);
			sink += doc_pos_at(d, long_len - 1 - k, POS_ENCODING_UTF16).character;
		}
		(void)sink;
		printf("one 1 MiB line: position -> offset -> position at its end: %.1f us CPU\n",
		       (cpu_now_us() - c0) / (double)reps);
		doc_free(d);
	}
	return 0;
}
