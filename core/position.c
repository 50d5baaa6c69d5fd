/*
 * position.c - LSP positions and tree-sitter points to and from byte
 * offsets (rules in position.h).
 *
 * Conversions walk one line from its start, so they cost O(log n) to find
 * the line plus the bytes of that line before the position. Walking goes
 * chunk by chunk through doc_chunk; a character that straddles two chunks is
 * decoded from a 4-byte copy.
 */
#include "position.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "doc_internal.h"

const char *pos_encoding_name(enum pos_encoding enc)
{
	switch (enc) {
	case POS_ENCODING_UTF8: return "utf-8";
	case POS_ENCODING_UTF16: return "utf-16";
	case POS_ENCODING_UTF32: return "utf-32";
	}
	return "utf-16";
}

int pos_encoding_from_name(const char *name, enum pos_encoding *out)
{
	static const enum pos_encoding all[] = { POS_ENCODING_UTF8, POS_ENCODING_UTF16,
		                                 POS_ENCODING_UTF32 };
	if (!name) return -EINVAL;
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		if (strcmp(name, pos_encoding_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	}
	return -EINVAL;
}

/* Length of the well-formed UTF-8 sequence at s[0..avail), or 1 when the
 * bytes there are not one (each invalid byte stands alone). */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
	unsigned char b = s[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
	if (b < 0x80) return 1;
	if (b >= 0xC2 && b <= 0xDF) {
		n = 2;
	} else if (b >= 0xE0 && b <= 0xEF) {
		n = 3;
		if (b == 0xE0)
			lo = 0xA0; /* no overlongs */
		else if (b == 0xED)
			hi = 0x9F; /* no UTF-16 surrogates */
	} else if (b >= 0xF0 && b <= 0xF4) {
		n = 4;
		if (b == 0xF0)
			lo = 0x90;
		else if (b == 0xF4)
			hi = 0x8F; /* nothing above U+10FFFF */
	} else {
		return 1;
	}
	if (avail < n || s[1] < lo || s[1] > hi) return 1;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xC0) != 0x80) return 1;
	return n;
}

size_t pos_utf8_valid_prefix(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		size_t k = u[i] < 0x80 ? 1 : utf8_seq_len(u + i, n - i);
		if (k == 1 && u[i] >= 0x80) break;
		i += k;
	}
	return i;
}

static uint32_t units_of(size_t seq_len, enum pos_encoding enc)
{
	switch (enc) {
	case POS_ENCODING_UTF8: return (uint32_t)seq_len;
	case POS_ENCODING_UTF16: return seq_len == 4 ? 2 : 1;
	case POS_ENCODING_UTF32: return 1;
	}
	return 1;
}

/* True when p[0..8) are ASCII and none is '\r' or '\n'. */
static bool ascii8(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	if (v & high) return false;
	/* A byte is zero after the xor only where it equalled the terminator;
	 * with no high bits set, (x - ones) & high flags exactly those. */
	uint64_t cr = v ^ (ones * '\r'), lf = v ^ (ones * '\n');
	return !(((cr - ones) | (lf - ones)) & high);
}

/*
 * Walks characters from `from` (a line start or a character start within a
 * line) and stops at whichever comes first: `stop`, the line's terminator
 * ('\r' or '\n': no UTF-8 sequence contains those bytes, so a character never
 * swallows one), the first character that would take the unit count past
 * `max_units`, or the first character that would cross `stop`. Returns the
 * byte offset reached and stores the units walked in *units. Guarantees: the
 * result is a character start, from <= result <= stop, and it never passes
 * the end of the line's content. Cost: the bytes walked, plus one doc_chunk
 * lookup per chunk crossed.
 */
static size_t walk(const struct doc *d, size_t from, size_t stop, uint64_t max_units,
                   enum pos_encoding enc, uint64_t *units)
{
	size_t at = from, length = doc_length(d);
	uint64_t u = 0;
	while (at < stop && u < max_units) {
		size_t run_len;
		const unsigned char *run = (const unsigned char *)doc_chunk(d, at, &run_len);
		size_t i = 0;
		while (i < run_len && at + i < stop && u < max_units) {
			/* Eight ASCII bytes that hold no terminator are eight units
			 * in every encoding: skip them at once (long minified lines). */
			while (i + 8 <= run_len && at + i + 8 <= stop && u + 8 <= max_units &&
			       ascii8(run + i)) {
				i += 8;
				u += 8;
			}
			if (i >= run_len || at + i >= stop || u >= max_units) break;
			size_t n;
			unsigned char b = run[i];
			if (b == '\r' || b == '\n') {
				*units = u;
				return at + i;
			}
			if (b < 0x80) {
				n = 1;
			} else if (run_len - i >= 4 || at + run_len == length) {
				n = utf8_seq_len(run + i, run_len - i);
			} else {
				/* The sequence may continue in the next chunk. */
				unsigned char tmp[4];
				size_t got = doc_read(d, at + i, at + i + 4, (char *)tmp);
				n = utf8_seq_len(tmp, got);
			}
			uint32_t cu = units_of(n, enc);
			if (u + cu > max_units || at + i + n > stop) {
				*units = u;
				return at + i;
			}
			u += cu;
			i += n; /* may pass run_len: the character ended in the next chunk */
		}
		at += i;
	}
	*units = u;
	return at;
}

size_t doc_offset_at(const struct doc *d, struct doc_pos pos, enum pos_encoding enc)
{
	if (pos.line >= doc_line_count(d)) return doc_length(d);
	uint64_t units;
	return walk(d, doc_line_start(d, pos.line), doc_length(d), pos.character, enc, &units);
}

struct doc_pos doc_pos_at(const struct doc *d, size_t offset, enum pos_encoding enc)
{
	if (offset > doc_length(d)) offset = doc_length(d);
	size_t line = doc_line_at(d, offset);
	uint64_t units;
	/* An offset inside the terminator stops the walk at the content end. */
	walk(d, doc_line_start(d, line), offset, UINT64_MAX, enc, &units);
	struct doc_pos p = { (uint32_t)line, units > UINT32_MAX ? UINT32_MAX : (uint32_t)units };
	return p;
}

struct doc_point doc_point_at(const struct doc *d, size_t offset)
{
	if (offset > doc_length(d)) offset = doc_length(d);
	size_t row = doc_lf_before(d, offset);
	size_t row_start = row ? doc_after_lf(d, row - 1) : 0;
	struct doc_point p = { (uint32_t)row, (uint32_t)(offset - row_start) };
	return p;
}
