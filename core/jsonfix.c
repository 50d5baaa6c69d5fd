/*
 * jsonfix.c - the repairs of jsonfix.h, in one pass over the bytes.
 *
 * The scan knows only where strings start and end (a '"' outside a string
 * opens one; inside, a backslash escapes the next byte), which is all it
 * needs: surrogate escapes are looked at inside strings, number literals
 * outside, UTF-8 everywhere. The output is at most 3 bytes per input byte
 * (a bad byte becomes the 3 bytes of U+FFFD; ".0" grows a number of at
 * least 19 digits by far less).
 */
#include "jsonfix.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one
 * (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF). */
static size_t utf8_valid(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	if (c < 0x80) return 1;
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		need = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0) lo = 0xA0;
		if (c == 0xED) hi = 0x9F; /* U+D800..DFFF encoded */
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0) lo = 0x90;
		if (c == 0xF4) hi = 0x8F;
	} else
		return 0;
	if (n < need) return 0;
	if (p[1] < lo || p[1] > hi) return 0;
	for (size_t i = 2; i < need; i++)
		if ((p[i] & 0xC0) != 0x80) return 0;
	return need;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

/* The code unit of "\uXXXX" at p (p[0] is the backslash), or -1. */
static long escape_unit(const unsigned char *p, size_t n)
{
	if (n < 6 || p[0] != '\\' || p[1] != 'u') return -1;
	long v = 0;
	for (int i = 2; i < 6; i++) {
		int h = hexval(p[i]);
		if (h < 0) return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Whether the integer literal of digits [p, p+n) (no sign) exceeds what an
 * int64 holds with the given sign. */
static bool too_big(const unsigned char *p, size_t n, bool negative)
{
	const char *lim = negative ? "9223372036854775808" : "9223372036854775807";
	while (n > 1 && *p == '0') p++, n--;
	if (n != 19) return n > 19;
	return memcmp(p, lim, 19) > 0;
}

int jsonfix_repair(const char *in, size_t len, char **out, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)in;
	*out = NULL;
	*out_len = 0;
	if (len > (SIZE_MAX - 1) / 3) return -ENOMEM;
	unsigned char *o = malloc(len * 3 + 1);
	if (!o) return -ENOMEM;
	size_t k = 0;
	int fixes = 0;
	bool in_string = false;
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		if (c >= 0x80) {
			size_t v = utf8_valid(s + i, len - i);
			if (v) {
				memcpy(o + k, s + i, v);
				k += v;
				i += v;
			} else {
				memcpy(o + k, "\xEF\xBF\xBD", 3);
				k += 3;
				i++;
				fixes |= JSONFIX_UTF8;
			}
			continue;
		}
		if (in_string) {
			if (c == '"') {
				in_string = false;
			} else if (c == '\\' && i + 1 < len) {
				long u = escape_unit(s + i, len - i);
				if (u >= 0xD800 && u <= 0xDBFF) {
					long lo = escape_unit(s + i + 6, len - i - 6);
					if (lo >= 0xDC00 && lo <= 0xDFFF) { /* a good pair */
						memcpy(o + k, s + i, 12);
						k += 12;
						i += 12;
						continue;
					}
				}
				if (u >= 0xD800 && u <= 0xDFFF) {
					memcpy(o + k, "\\uFFFD", 6);
					k += 6;
					i += 6;
					fixes |= JSONFIX_SURROGATE;
					continue;
				}
				o[k++] = s[i++]; /* the backslash and the byte it escapes */
				c = s[i];
				if (c >= 0x80)
					continue; /* bad JSON anyway; checked as UTF-8 above */
			}
			o[k++] = c;
			i++;
			continue;
		}
		if (c == '"') {
			in_string = true;
			o[k++] = c;
			i++;
			continue;
		}
		bool neg = c == '-' && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9';
		if ((c >= '0' && c <= '9') || neg) {
			/* a number literal: copy it whole; an integer too big for
			 * int64 becomes a real */
			size_t j = i + (neg ? 1 : 0), d0 = j;
			while (j < len && s[j] >= '0' && s[j] <= '9') j++;
			size_t digits_end = j;
			bool integer = !(j < len && (s[j] == '.' || s[j] == 'e' || s[j] == 'E'));
			memcpy(o + k, s + i, digits_end - i);
			k += digits_end - i;
			if (integer && too_big(s + d0, digits_end - d0, neg)) {
				memcpy(o + k, ".0", 2);
				k += 2;
				fixes |= JSONFIX_BIGINT;
			}
			i = digits_end;
			continue;
		}
		o[k++] = c;
		i++;
	}
	if (!fixes) {
		free(o);
		return 0;
	}
	o[k] = 0;
	*out = (char *)o;
	*out_len = k;
	return fixes;
}
