/*
 * log.c - leveled log lines to stderr or a file.
 *
 * Each line is formatted into one buffer and written with one fwrite under a
 * mutex, so lines from the loop and engine threads never interleave.
 */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct log {
	FILE *file; /* NULL: stderr */
	enum log_level level;
	pthread_mutex_t lock;
};

static const char *const level_names[] = {
#define X(name, str) str,
	LOG_LEVELS(X)
#undef X
};

struct log *log_new(void)
{
	struct log *log = calloc(1, sizeof *log);
	if (!log) return NULL;
	log->level = LOG_LEVEL_INFO;
	pthread_mutex_init(&log->lock, NULL);
	return log;
}

void log_free(struct log *log)
{
	if (!log) return;
	if (log->file) fclose(log->file);
	pthread_mutex_destroy(&log->lock);
	free(log);
}

int log_set_file(struct log *log, const char *path)
{
	FILE *f = fopen(path, "a");
	if (!f) return -errno;
	setvbuf(f, NULL, _IOLBF, 0);
	pthread_mutex_lock(&log->lock);
	if (log->file) fclose(log->file);
	log->file = f;
	pthread_mutex_unlock(&log->lock);
	return 0;
}

void log_set_level(struct log *log, enum log_level level)
{
	log->level = level;
}

enum log_level log_get_level(const struct log *log)
{
	return log->level;
}

bool log_enabled(const struct log *log, enum log_level level)
{
	return log && level <= log->level;
}

const char *log_level_name(enum log_level level)
{
	if ((unsigned)level >= sizeof level_names / sizeof level_names[0]) return "?";
	return level_names[level];
}

int log_level_from_name(const char *name, enum log_level *out)
{
	if (!name) return -EINVAL;
	for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
		if (!strcmp(name, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (!strcmp(name, "warning")) {
		*out = LOG_LEVEL_WARN;
		return 0;
	}
	return -EINVAL;
}

void log_writev(struct log *log, enum log_level level, const char *fmt, va_list ap)
{
	if (!log_enabled(log, level)) return;
	char line[2048];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %-5s ", tm.tm_hour, tm.tm_min,
	                 tm.tm_sec, ts.tv_nsec / 1000000, level_names[level]);
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof line - 2)
		len = sizeof line - 2; /* truncated: long lines are cut, not split */
	line[len++] = '\n';
	pthread_mutex_lock(&log->lock);
	FILE *f = log->file ? log->file : stderr;
	fwrite(line, 1, len, f);
	fflush(f);
	pthread_mutex_unlock(&log->lock);
}

void log_write(struct log *log, enum log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_writev(log, level, fmt, ap);
	va_end(ap);
}
