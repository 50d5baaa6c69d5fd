/*
 * fuzz_document.c - libFuzzer target for incremental edits against a shadow
 * copy: the input is a list of edits, each applied to a struct doc (by LSP
 * positions in some encoding, as didChange does) and to a plain byte string;
 * after each the two must hold the same bytes, and the line table and the
 * position conversions must agree with a naive count over the shadow.
 *
 * Edit: 1 byte (encoding in bits 0-1, insert length in bits 2-7), 2 bytes
 * start line, character, 2 bytes end line, character, then the inserted
 * bytes. Positions are small numbers so that they land on real lines, inside
 * characters and past line ends alike.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "document.h"
#include "position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lines of s as the document counts them ("\n", "\r\n" or "\r" end one). */
static size_t naive_lines(const char *s, size_t n)
{
	size_t lines = 1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n') i++;
		if (s[i] == '\n' || s[i] == '\r') lines++;
	}
	return lines;
}

static void check_same(const struct doc *d, const char *s, size_t n)
{
	if (doc_length(d) != n) __builtin_trap();
	char *t = doc_text(d);
	if (!t) return; /* out of memory */
	if (memcmp(t, s, n)) __builtin_trap();
	free(t);
	if (doc_line_count(d) != naive_lines(s, n)) __builtin_trap();
	/* every line start is right after a terminator, and positions round-trip */
	size_t count = doc_line_count(d);
	for (size_t l = 0; l < count && l < 64; l++) {
		size_t a = doc_line_start(d, l);
		if (l && a && s[a - 1] != '\n' && s[a - 1] != '\r') __builtin_trap();
		if (doc_line_at(d, a) != l) __builtin_trap();
		for (int enc = 0; enc < 3; enc++) {
			struct doc_pos p = doc_pos_at(d, a, (enum pos_encoding)enc);
			if (p.line != l || p.character != 0) __builtin_trap();
			if (doc_offset_at(d, p, (enum pos_encoding)enc) != a) __builtin_trap();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct doc *d = doc_new("", 0);
	if (!d) return 0;
	size_t cap = 1 << 16, n = 0;
	char *s = malloc(cap);
	if (!s) {
		doc_free(d);
		return 0;
	}
	size_t i = 0;
	while (i + 5 <= size) {
		uint8_t op = data[i];
		enum pos_encoding enc = (enum pos_encoding)((op & 3) % 3);
		size_t ins = op >> 2;
		struct doc_pos a = { data[i + 1] & 15, data[i + 2] & 31 };
		struct doc_pos b = { data[i + 3] & 15, data[i + 4] & 31 };
		i += 5;
		if (ins > size - i) ins = size - i;
		const char *text = (const char *)data + i;
		i += ins;
		size_t start = doc_offset_at(d, a, enc), end = doc_offset_at(d, b, enc);
		if (start > n || end > n) __builtin_trap();
		if (end < start) continue; /* skipped, as didChange skips it */
		if (n - (end - start) + ins > cap) break;
		if (doc_replace(d, start, end, text, ins)) break; /* out of memory */
		memmove(s + start + ins, s + end, n - end);
		memcpy(s + start, text, ins);
		n = n - (end - start) + ins;
		check_same(d, s, n);
	}
	free(s);
	doc_free(d);
	return 0;
}
