/*
 * backend_error.c - filling a struct backend_error (backend.h), the one way
 * every backend reports a failure. Its own file because the CUDA module
 * (cuda/, a shared module) links it too, and must not pull in backend.c's
 * backend_create, which would drag the CPU backend and dlopen along.
 */
#include <stdarg.h>
#include <stdio.h>

#include "backend.h"

int backend_error_set(struct backend_error *err, int code, const char *fmt, ...)
{
	if (err) {
		err->code = code;
		err->tensor[0] = 0;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return code;
}

void backend_error_tensor(struct backend_error *err, const char *name)
{
	if (err && name) snprintf(err->tensor, sizeof err->tensor, "%s", name);
}
