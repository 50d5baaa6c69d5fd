/*
 * position.h - LSP positions (line, character in the negotiated encoding)
 * and tree-sitter points (row, byte column) to and from byte offsets.
 *
 * Rules, which follow the LSP specification where it has one:
 * - Lines end at "\n", "\r\n" or "\r" (as in document.h).
 * - `character` counts code units of the encoding: bytes (UTF-8), UTF-16
 *   units (a character above U+FFFF is a surrogate pair: 2 units) or code
 *   points (UTF-32).
 * - A character past the end of a line clamps to the end of the line's
 *   content (before its terminator); a line past the last one clamps to the
 *   end of the document.
 * - A position inside a multi-byte character or between the two halves of a
 *   surrogate pair snaps back to the start of that character.
 * - Invalid UTF-8 (a stray continuation byte, a truncated, overlong or
 *   surrogate-encoding sequence, a byte F5..FF) counts one unit per byte in
 *   every encoding, as if each byte were U+FFFD.
 *
 * All functions are pure readers of the document (same threading as it).
 */
#ifndef INFILL_LSP_POSITION_H
#define INFILL_LSP_POSITION_H

#include <stddef.h>
#include <stdint.h>

#include "document.h"

enum pos_encoding {
	POS_ENCODING_UTF8,
	POS_ENCODING_UTF16,
	POS_ENCODING_UTF32,
};

/* An LSP Position: 0-based line and character in some pos_encoding. */
struct doc_pos {
	uint32_t line;
	uint32_t character;
};

/* A tree-sitter point: 0-based row and byte column. Rows here count "\n"
 * only, because that is how tree-sitter counts them while parsing; a lone
 * "\r" does not start a row. */
struct doc_point {
	uint32_t row;
	uint32_t column;
};

/* The LSP name of an encoding ("utf-8", "utf-16", "utf-32"); static string. */
const char *pos_encoding_name(enum pos_encoding enc);

/* Parses an LSP encoding name; returns 0 and sets *out, or -EINVAL for a
 * name it does not know. */
int pos_encoding_from_name(const char *name, enum pos_encoding *out);

/* Length of the longest prefix of s[0..n) that is well-formed UTF-8 (what
 * JSON strings must be): it stops at the first invalid byte, and before a
 * sequence cut short at the end. */
size_t pos_utf8_valid_prefix(const char *s, size_t n);

/* Byte offset of an LSP position, clamped and snapped as described above. */
size_t doc_offset_at(const struct doc *d, struct doc_pos pos, enum pos_encoding enc);

/* The LSP position of a byte offset (clamped to doc_length). An offset inside
 * a multi-byte character snaps to its start; an offset inside a line
 * terminator maps to the end of that line's content. */
struct doc_pos doc_pos_at(const struct doc *d, size_t offset, enum pos_encoding enc);

/* The tree-sitter point of a byte offset (clamped to doc_length): rows count
 * "\n" only, column is the byte distance from the byte after the last "\n"
 * (no snapping). */
struct doc_point doc_point_at(const struct doc *d, size_t offset);

#endif
