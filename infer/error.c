/*
 * error.c - the setters of struct infer_error (error.h). Each failing path
 * of infer/ goes through infer_error_set, so an error never carries a stale
 * key or offset from an earlier one.
 */
#include "error.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

int infer_error_set(struct infer_error *err, int code, const char *fmt, ...)
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

void infer_error_prefix(struct infer_error *err, const char *fmt, ...)
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
	if (!name) n = 0;
	if (n >= cap) n = cap - 1;
	if (n) memcpy(dst, name, n);
	dst[n] = 0;
}

void infer_error_key(struct infer_error *err, const char *name, size_t n)
{
	if (err) copy_name(err->key, sizeof err->key, name, n);
}

void infer_error_tensor(struct infer_error *err, const char *name, size_t n)
{
	if (err) copy_name(err->tensor, sizeof err->tensor, name, n);
}
