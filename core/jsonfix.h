/*
 * jsonfix.h - repairs a message body that jansson refused, so that the one
 * bad spot does not cost the whole message.
 *
 * Three repairs, each local and each reported:
 * - bytes that are not UTF-8 (a stray Latin-1 byte, a cut sequence, an
 *   encoded surrogate, an overlong form) become U+FFFD, one per bad byte;
 * - a lone surrogate escape (\uD800 with no low half, or a low half alone)
 *   inside a string becomes \uFFFD;
 * - an integer literal outside int64 (jansson refuses "too big integer")
 *   gets ".0" appended, so it parses as a real: a position or an id that
 *   must be an integer is then refused with a proper error (-32602, -32600)
 *   instead of the message being unparseable and unanswered.
 * Everything else is copied unchanged, so a body that is not JSON stays not
 * JSON. Pure code, no allocation but the output.
 */
#ifndef INFILL_LSP_JSONFIX_H
#define INFILL_LSP_JSONFIX_H

#include <stddef.h>

enum {
	JSONFIX_UTF8 = 1,      /* invalid UTF-8 replaced */
	JSONFIX_SURROGATE = 2, /* lone surrogate escapes replaced */
	JSONFIX_BIGINT = 4,    /* out-of-range integers made reals */
};

/* Writes the repaired copy of [in, in+len) to *out (malloc'd, NUL-terminated,
 * the caller frees) and its length to *out_len. Returns the JSONFIX_* bits of
 * what was repaired (0: nothing; *out is then NULL), or -ENOMEM. */
int jsonfix_repair(const char *in, size_t len, char **out, size_t *out_len);

#endif
