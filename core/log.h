/*
 * log.h - the daemon's log: leveled lines to stderr or a file, never stdout
 * (stdout carries the LSP stream).
 *
 * Levels, most severe first, as one X-macro list so the enum and the names
 * cannot drift apart. A struct log belongs to the loop thread; log_write
 * takes a mutex so an engine thread may also write lines to it.
 */
#ifndef INFILL_LSP_LOG_H
#define INFILL_LSP_LOG_H

#include <stdarg.h>
#include <stdbool.h>

#define LOG_LEVELS(X)     \
	X(ERROR, "error") \
	X(WARN, "warn")   \
	X(INFO, "info")   \
	X(DEBUG, "debug") \
	X(TRACE, "trace")

enum log_level {
#define X(name, str) LOG_LEVEL_##name,
	LOG_LEVELS(X)
#undef X
};

struct log;

/* A new log writing to stderr at LOG_LEVEL_INFO; NULL when out of memory.
 * Free it with log_free. */
struct log *log_new(void);

/* Frees the log (closing its file, if any); accepts NULL. */
void log_free(struct log *log);

/* Sends lines to the file at path (appended; created if missing) instead of
 * stderr. Returns 0 or a negative errno; on error the log is unchanged. */
int log_set_file(struct log *log, const char *path);

void log_set_level(struct log *log, enum log_level level);
enum log_level log_get_level(const struct log *log);

/* Whether a line at `level` would be written (to skip costly formatting). */
bool log_enabled(const struct log *log, enum log_level level);

/* The name of a level ("error" ... "trace"); static string. */
const char *log_level_name(enum log_level level);

/* Parses a level name (also "warning"); 0 and *out set, or -EINVAL. */
int log_level_from_name(const char *name, enum log_level *out);

/* Writes one line "TIME LEVEL message" when level is enabled. log may be
 * NULL (then nothing is written). */
void log_write(struct log *log, enum log_level level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void log_writev(struct log *log, enum log_level level, const char *fmt, va_list ap);

#define log_error(l, ...) log_write((l), LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(l, ...)  log_write((l), LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(l, ...)  log_write((l), LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(l, ...) log_write((l), LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_trace(l, ...) log_write((l), LOG_LEVEL_TRACE, __VA_ARGS__)

#endif
