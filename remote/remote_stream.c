/*
 * remote_stream.c - a streamed HTTP body cut into JSON payloads (remote.h):
 * Server-Sent Events as vLLM, TGI and llama-server send them (`data: {...}`
 * lines, `data: [DONE]` at the end) and newline-delimited JSON as Ollama
 * does. Pure: no I/O, no libcurl; remote_client.c feeds it what the write
 * callback gets, in pieces of any size, so a line may arrive split anywhere.
 */
#include "remote.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 256;
		while (c < *len + n + 1) c *= 2;
		char *b = realloc(*buf, c);
		if (!b) return -ENOMEM;
		*buf = b, *cap = c;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = 0;
	return 0;
}

/* One complete line (no line break): a payload or nothing. */
static int line(struct remote_stream *s, const char *l, size_t n, remote_payload_fn fn, void *ud)
{
	if (n && l[n - 1] == '\r') n--;
	while (n && (*l == ' ' || *l == '\t')) l++, n--;
	if (!n || *l == ':') return 0; /* blank (end of an event) or an SSE comment */
	s->sse_payload = n >= 5 && !memcmp(l, "data:", 5);
	if (s->sse_payload) {
		l += 5, n -= 5;
		if (n && *l == ' ') l++, n--;
		if (n == 6 && !memcmp(l, "[DONE]", 6)) {
			s->done_seen = true;
			return 0;
		}
	} else if (*l != '{' && *l != '[') {
		return 0; /* event:, id:, retry: or text that is no payload */
	}
	s->payloads++;
	return fn(ud, l, n);
}

int remote_stream_feed(struct remote_stream *s, const char *data, size_t len, remote_payload_fn fn,
                       void *ud)
{
	if (s->all_len < REMOTE_STREAM_KEEP) {
		size_t keep = len < REMOTE_STREAM_KEEP - s->all_len
		                      ? len
		                      : REMOTE_STREAM_KEEP - s->all_len;
		if (append(&s->all, &s->all_len, &s->all_cap, data, keep)) return -ENOMEM;
	}
	size_t from = 0;
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n') continue;
		int rc;
		if (s->len) { /* the line began in an earlier piece */
			if (append(&s->buf, &s->len, &s->cap, data + from, i - from))
				return -ENOMEM;
			rc = line(s, s->buf, s->len, fn, ud);
			s->len = 0;
		} else {
			rc = line(s, data + from, i - from, fn, ud);
		}
		from = i + 1;
		if (rc) return rc;
	}
	if (from < len && append(&s->buf, &s->len, &s->cap, data + from, len - from))
		return -ENOMEM;
	return 0;
}

const char *remote_stream_all(const struct remote_stream *s, size_t *len)
{
	*len = s->all_len;
	return s->all ? s->all : "";
}

void remote_stream_finish(struct remote_stream *s)
{
	free(s->buf);
	free(s->all);
	memset(s, 0, sizeof *s);
}
