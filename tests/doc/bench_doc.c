/*
 * bench_doc.c - the cost of one keystroke in a large document against a
 * small one.
 *
 * A keystroke here is what the server does for one didChange with one
 * character typed: convert the LSP position (UTF-16) to a byte offset and
 * insert one byte there, then convert the new cursor offset back to a
 * position (as a completion request would). Two patterns: typing at a
 * cursor that moves forward (realistic) and typing at random lines (no
 * locality). Prints microseconds per keystroke for 1,000 and 100,000 lines
 * and the ratio. Usage: bench-doc [keystrokes]
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
	for (size_t i = 0; i < lines; i++)
		memcpy(buf + i * ll, line, ll);
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

/* Returns microseconds per keystroke; `random_lines` picks a new line for
 * every keystroke. */
static double run(size_t lines, size_t keystrokes, int random_lines, double *worst)
{
	struct doc *d = make_doc(lines);
	if (!d) {
		fprintf(stderr, "bench-doc: out of memory\n");
		exit(1);
	}
	struct doc_pos cur = {(uint32_t)(lines / 2), 4};
	volatile uint32_t sink = 0;
	*worst = 0;
	double t0 = now_us();
	for (size_t k = 0; k < keystrokes; k++) {
		if (random_lines) {
			cur.line = (uint32_t)(rng_next() % lines);
			cur.character = (uint32_t)(rng_next() % 40);
		} else if (k % 60 == 59) {
			cur.line++; /* the typist moves to the next line now and then */
			cur.character = 4;
		}
		double a = now_us();
		size_t off = doc_offset_at(d, cur, POS_ENCODING_UTF16);
		doc_replace(d, off, off, "x", 1);
		struct doc_pos p = doc_pos_at(d, off + 1, POS_ENCODING_UTF16);
		double b = now_us();
		if (b - a > *worst)
			*worst = b - a;
		sink += p.character;
		cur.character++;
	}
	double t1 = now_us();
	(void)sink;
	doc_free(d);
	return (t1 - t0) / (double)keystrokes;
}

int main(int argc, char **argv)
{
	size_t keystrokes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 200000;
	const char *names[2] = {"typing at a cursor", "typing at random lines"};
	for (int mode = 0; mode < 2; mode++) {
		double w_small, w_big;
		double small = run(1000, keystrokes, mode, &w_small);
		double big = run(100000, keystrokes, mode, &w_big);
		printf("%s: 1,000 lines %.3f us/keystroke (worst %.1f us), 100,000 lines %.3f us/keystroke "
		       "(worst %.1f us), ratio %.2f\n",
		       names[mode], small, w_small, big, w_big, big / small);
	}
	return 0;
}
