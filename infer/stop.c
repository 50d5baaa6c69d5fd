/*
 * stop.c - stop rules over a candidate's text as it grows: stop strings
 * (which may span token boundaries, so the search looks back over the
 * longest stop string's length) and the line limit.
 */
#include <string.h>

#include "engine_internal.h"

ssize_t stop_find_string(const char *text, size_t len, size_t from, const char *const *stop,
                         size_t n_stop)
{
	ssize_t best = -1;
	for (size_t i = 0; i < n_stop; i++) {
		size_t sl = stop[i] ? strlen(stop[i]) : 0;
		if (!sl || sl > len) continue;
		/* An occurrence must end after `from`: start at from - sl + 1. */
		size_t s = from + 1 > sl ? from + 1 - sl : 0;
		for (; s + sl <= len; s++)
			if (text[s] == stop[i][0] && !memcmp(text + s, stop[i], sl)) {
				if (best < 0 || (ssize_t)s < best) best = (ssize_t)s;
				break;
			}
	}
	return best;
}

ssize_t stop_find_max_lines(const char *text, size_t len, int32_t max_lines)
{
	if (max_lines <= 0) return -1;
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	int32_t lines = 1;
	for (; i < len; i++)
		if (text[i] == '\n' && ++lines > max_lines) return (ssize_t)i;
	return -1;
}

size_t stop_last_line_start(const char *text, size_t len)
{
	if (len && text[len - 1] == '\n') len--;
	while (len && text[len - 1] != '\n') len--;
	return len;
}
