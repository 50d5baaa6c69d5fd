/*
 * cli_util.c - what the subcommands that take a FILE:LINE:COL share:
 * reading the file whole and turning the location into a byte offset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

char *cli_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "infill: cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap) break;
		cap *= 2;
		char *b = realloc(buf, cap + 1);
		if (!b) free(buf);
		buf = b;
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "infill: out of memory reading %s\n", path);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

/* FILE:LINE:COL -> path (in place) and 1-based line and column. */
int cli_parse_location(char *arg, long *line, long *col)
{
	char *c2 = strrchr(arg, ':');
	if (!c2) return -EINVAL;
	*c2 = 0;
	char *c1 = strrchr(arg, ':');
	if (!c1) return -EINVAL;
	*c1 = 0;
	char *end;
	*line = strtol(c1 + 1, &end, 10);
	if (*end || *line < 1) return -EINVAL;
	*col = strtol(c2 + 1, &end, 10);
	if (*end || *col < 1) return -EINVAL;
	return 0;
}

/* Byte offset of 1-based line and 1-based character column; clamps the
 * column to the line's end. -1 when the file has fewer lines. */
long cli_location_offset(const char *text, size_t len, long line, long col)
{
	size_t pos = 0;
	for (long l = 1; l < line; l++) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		if (!nl) return -1;
		pos = (size_t)(nl - text) + 1;
	}
	for (long c = 1; c < col && pos < len && text[pos] != '\n'; c++) {
		pos++;
		while (pos < len && ((unsigned char)text[pos] & 0xC0) == 0x80) pos++;
	}
	return (long)pos;
}
