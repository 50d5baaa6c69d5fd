/* A tiny lexer's token kinds: a small file written for the next-edit eval's
 * enum-member cases (switches that list every kind). */
#include <ctype.h>
#include <stddef.h>

enum tok_kind {
	TOK_NUMBER,
	TOK_NAME,
	TOK_PLUS,
	TOK_MINUS,
};

const char *tok_kind_name(enum tok_kind k)
{
	switch (k) {
	case TOK_NUMBER: return "number";
	case TOK_NAME: return "name";
	case TOK_PLUS: return "plus";
	case TOK_MINUS: return "minus";
	}
	return "?";
}

int tok_is_operator(enum tok_kind k)
{
	switch (k) {
	case TOK_NUMBER:
	case TOK_NAME: return 0;
	case TOK_PLUS:
	case TOK_MINUS: return 1;
	default: return 0;
	}
}

int tok_precedence(enum tok_kind k)
{
	switch (k) {
	case TOK_PLUS: return 1;
	default: return 0;
	}
}

static int scan_sign(const char *s, size_t at, size_t len)
{
	return at < len && (s[at] == '+' || s[at] == '-');
}

enum tok_kind tok_classify(const char *s, size_t at, size_t len)
{
	if (scan_sign(s, at, len)) return s[at] == '+' ? TOK_PLUS : TOK_MINUS;
	return isdigit((unsigned char)s[at]) ? TOK_NUMBER : TOK_NAME;
}
