/*
 * remote_text.c - bytes from a server made fit to show (remote.h): a
 * server's reply is not trusted to be UTF-8, to be the API's JSON, or to be
 * short. Before a choice's text reaches a candidate, bytes that are not
 * UTF-8 become U+FFFD (remote_api.c then cuts the choice there); before a
 * server's words reach a window/showMessage, an HTML page is reduced to its
 * title and any text to one short printable line. Pure: no I/O.
 */
#include "remote.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The length of the UTF-8 sequence at s (n bytes left), or 0 when it is not
 * one: a stray continuation byte, a cut sequence, an overlong form, a
 * surrogate, past U+10FFFF (RFC 3629's table). */
static size_t seq_len(const unsigned char *s, size_t n)
{
	unsigned char b = s[0];
	if (b < 0x80) return 1;
	size_t len;
	unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
	if (b >= 0xC2 && b <= 0xDF)
		len = 2;
	else if (b == 0xE0)
		len = 3, lo = 0xA0;
	else if (b == 0xED)
		len = 3, hi = 0x9F;
	else if (b >= 0xE1 && b <= 0xEF)
		len = 3;
	else if (b == 0xF0)
		len = 4, lo = 0x90;
	else if (b >= 0xF1 && b <= 0xF3)
		len = 4;
	else if (b == 0xF4)
		len = 4, hi = 0x8F;
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi) return 0;
	for (size_t i = 2; i < len; i++)
		if ((s[i] & 0xC0) != 0x80) return 0;
	return len;
}

size_t remote_text_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		size_t l = seq_len(u + i, n - i);
		if (!l) break;
		i += l;
	}
	return i;
}

char *remote_text_repair(const char *s, size_t n, size_t *out_len)
{
	/* each bad byte becomes 3: the bound is 3n */
	char *out = malloc(3 * n + 1), *o = out;
	if (!out) return NULL;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = seq_len(u + i, n - i);
		if (l) {
			memcpy(o, s + i, l);
			o += l, i += l;
		} else {
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3, i++;
		}
	}
	*o = 0;
	*out_len = (size_t)(o - out);
	return out;
}

void remote_text_clean(char *s)
{
	size_t n = strlen(s), o = 0;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = seq_len(u + i, n - i);
		if (!l) { /* the message is for a person: '?' says a byte was there */
			s[o++] = '?';
			i++;
		} else if (l == 1 && (u[i] < 0x20 || u[i] == 0x7f)) {
			if (o && s[o - 1] != ' ') s[o++] = ' ';
			i++;
		} else {
			memmove(s + o, s + i, l);
			o += l, i += l;
		}
	}
	s[o] = 0;
}

bool remote_text_is_html(const char *body, size_t len)
{
	size_t i = 0;
	while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
		i++;
	if (len - i >= 3 && !memcmp(body + i, "\xEF\xBB\xBF", 3)) i += 3; /* a BOM */
	static const char *const starts[] = { "<!doctype", "<html", "<head",  "<body",
		                              "<?xml",     "<!--",  "<title", "<h1" };
	for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
		size_t m = strlen(starts[k]);
		if (len - i >= m && !strncasecmp(body + i, starts[k], m)) return true;
	}
	return false;
}

/* Appends the text of [s, s+n) to out (cap bytes, o used): tags skipped,
 * a few entities decoded, runs of white space made one space. Returns the
 * new o. */
static size_t put_text(char *out, size_t cap, size_t o, const char *s, size_t n, bool html)
{
	static const struct {
		const char *name;
		char ch;
	} ents[] = { { "&amp;", '&' },  { "&lt;", '<' },   { "&gt;", '>' },
		     { "&quot;", '"' }, { "&#39;", '\'' }, { "&nbsp;", ' ' } };
	bool tag = false;
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		char ch = s[i];
		if (html && tag) {
			if (ch == '>') tag = false;
			continue;
		}
		if (html && ch == '<') {
			tag = true;
			ch = ' ';
		} else if (html && ch == '&') {
			for (size_t e = 0; e < sizeof ents / sizeof ents[0]; e++) {
				size_t m = strlen(ents[e].name);
				if (n - i >= m && !strncasecmp(s + i, ents[e].name, m)) {
					ch = ents[e].ch;
					i += m - 1;
					break;
				}
			}
		}
		if ((unsigned char)ch < 0x20 || ch == 0x7f) ch = ' ';
		if (ch == ' ' && (!o || out[o - 1] == ' ')) continue;
		out[o++] = ch;
	}
	return o;
}

/* [start, end) of the text inside <name ...>...</name> in s, or false. */
static bool element(const char *s, size_t n, const char *name, size_t *start, size_t *end)
{
	size_t m = strlen(name);
	for (size_t i = 0; i + m + 1 < n; i++) {
		if (s[i] != '<' || strncasecmp(s + i + 1, name, m)) continue;
		char after = s[i + 1 + m];
		if (after != '>' && after != ' ' && after != '\t' && after != '\n') continue;
		const char *gt = memchr(s + i, '>', n - i);
		if (!gt) return false;
		size_t a = (size_t)(gt - s) + 1;
		for (size_t j = a; j + 1 < n; j++) {
			if (s[j] == '<' && s[j + 1] == '/') {
				*start = a, *end = j;
				return true;
			}
		}
		return false;
	}
	return false;
}

void remote_text_excerpt(const char *body, size_t len, char *out, size_t cap)
{
	if (!cap) return;
	out[0] = 0;
	if (cap > REMOTE_EXCERPT_MAX + 1) cap = REMOTE_EXCERPT_MAX + 1;
	size_t o = 0;
	if (remote_text_is_html(body, len)) {
		/* a page's title says what it is (nginx: "502 Bad Gateway"); else
		 * its first heading; else its words */
		size_t a, b;
		if (element(body, len, "title", &a, &b) || element(body, len, "h1", &a, &b))
			o = put_text(out, cap, 0, body + a, b - a, true);
		if (!o) { /* the words after <body>, tags and all (put_text skips them) */
			size_t from = 0;
			if (element(body, len, "body", &a, &b)) from = a;
			o = put_text(out, cap, 0, body + from, len - from, true);
		}
	} else {
		size_t n = 0;
		while (n < len && body[n] != '\n') n++;
		o = put_text(out, cap, 0, body, n, false);
	}
	while (o && out[o - 1] == ' ') o--;
	/* cut back to whole characters, then make any bad byte a '?' */
	out[o] = 0;
	size_t ok = remote_text_valid(out, o);
	if (o - ok < 4 && o == cap - 1) out[ok] = 0; /* a sequence cut by the cap */
	remote_text_clean(out);
}
