/*
 * unicode.c - UTF-8 decoding and encoding for the tokenizer. The class
 * tables live in the generated unicode_tables.c.
 */
#include "unicode.h"

size_t unicode_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char b = s[0];
	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	size_t len;
	uint32_t c, min;
	if ((b & 0xE0) == 0xC0) {
		len = 2, c = b & 0x1F, min = 0x80;
	} else if ((b & 0xF0) == 0xE0) {
		len = 3, c = b & 0x0F, min = 0x800;
	} else if ((b & 0xF8) == 0xF0) {
		len = 4, c = b & 0x07, min = 0x10000;
	} else {
		goto bad;
	}
	if (len > n) goto bad;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80) goto bad;
		c = (c << 6) | (s[i] & 0x3F);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
	if (c < min || c > UNICODE_MAX || (c >= 0xD800 && c <= 0xDFFF)) goto bad;
	*cp = c;
	return len;
bad:
	*cp = UNICODE_REPLACEMENT;
	return 1;
}

size_t unicode_utf8_encode(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xC0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
		o[0] = (unsigned char)(0xE0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	if (cp <= UNICODE_MAX) {
		o[0] = (unsigned char)(0xF0 | (cp >> 18));
		o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
		o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		o[3] = (unsigned char)(0x80 | (cp & 0x3F));
		return 4;
	}
	return 0;
}

size_t unicode_utf8_complete_prefix(const unsigned char *s, size_t n)
{
	/* Look back at most 3 bytes for the lead byte of a sequence that has not
	 * received all its continuation bytes yet. */
	size_t back = n < 3 ? n : 3;
	for (size_t k = 1; k <= back; k++) {
		unsigned char b = s[n - k];
		if ((b & 0xC0) == 0x80) continue; /* continuation byte: keep looking for the lead */
		size_t need = 0;
		if ((b & 0xE0) == 0xC0)
			need = 2;
		else if ((b & 0xF0) == 0xE0)
			need = 3;
		else if ((b & 0xF8) == 0xF0)
			need = 4;
		if (need > k) return n - k; /* lead byte whose sequence is still open */
		return n;
	}
	return n;
}
