/*
 * error.c - the setters of struct infill_error (error.h). Every failing
 * path goes through error_set, so an error never carries a stale key or
 * offset from an earlier one. Its own file because the CUDA module (a
 * shared module) links it too, without the rest of kernels/.
 */
#include "error.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

int error_set(struct infill_error *err, int code, const char *fmt, ...)
{
	if (!err) return code;
	err->code = code;
	err->key[0] = 0;
	err->tensor[0] = 0;
	err->offset = -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return code;
}

void error_prefix(struct infill_error *err, const char *fmt, ...)
{
	if (!err) return;
	char old[sizeof err->message];
	memcpy(old, err->message, sizeof old);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof err->message)
		snprintf(err->message + n, sizeof err->message - (size_t)n, "%s", old);
}

static void copy_name(char *dst, size_t cap, const char *name, size_t n)
{
	n = name ? strnlen(name, n) : 0;
	if (n >= cap) n = cap - 1;
	if (n) memcpy(dst, name, n);
	dst[n] = 0;
}

void error_key(struct infill_error *err, const char *name, size_t n)
{
	if (err) copy_name(err->key, sizeof err->key, name, n);
}

void error_tensor(struct infill_error *err, const char *name, size_t n)
{
	if (err) copy_name(err->tensor, sizeof err->tensor, name, n);
}
