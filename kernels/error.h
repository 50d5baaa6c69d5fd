/*
 * error.h - the one error struct of infill's engine side: kernels/ (CPU and
 * CUDA backends), infer/ and pipeline/ fill and pass the same struct, so a
 * failure keeps every field on its way up (the tensor a backend named, the
 * key a loader named) and a caller adds context with error_prefix.
 *
 * Every call that can fail returns 0 or a negative errno value (or NULL)
 * and, when given a struct infill_error, fills it: the same code, the key,
 * tensor or file offset the user must fix (as tree-sitter reports
 * error_offset and error_type beside its message), and a message that names
 * them. Callers branch on `code` and the fields; the message is for people.
 */
#ifndef INFILL_KERNELS_ERROR_H
#define INFILL_KERNELS_ERROR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct infill_error {
	/* The negative errno value the call returned: -EINVAL bad data or
	 * argument, -ENOTSUP valid but not supported here, -ENOENT/-EACCES/...
	 * from the file system, -ENOMEM, -ENOSPC KV pages exhausted, -ECANCELED. */
	int code;
	/* The GGUF metadata key or the setting at fault ("llama.block_count",
	 * "cache.memoryMB"); "" when none. Truncated past 95 bytes. */
	char key[96];
	/* The weight tensor at fault ("blk.3.attn_q.weight"); "" when none. */
	char tensor[96];
	/* Byte offset in the file where reading found the fault; -1 when none. */
	int64_t offset;
	/* For the user: names the file and the key or tensor, says what was expected. */
	char message[512];
};

/* Clears err (may be NULL) and fills code and message; returns code, so a
 * failing path reads `return error_set(err, -EINVAL, "...", ...)`. */
int error_set(struct infill_error *err, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Puts a printf-formatted prefix before the message (err may be NULL): a
 * caller passing on an error from below adds the file or stage it knows,
 * every other field kept. */
void error_prefix(struct infill_error *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* Name the key or tensor at fault (err may be NULL; at most n bytes of name
 * are copied, up to its NUL; truncated to fit). */
void error_key(struct infill_error *err, const char *name, size_t n);
void error_tensor(struct infill_error *err, const char *name, size_t n);

#ifdef __cplusplus
}
#endif

#endif
