/*
 * frame.c - the Content-Length frame reader (see frame.h for its rules).
 *
 * Bytes live in one buffer; `pos` is where unconsumed data starts. The buffer
 * is compacted only when it must grow, so a large body arriving in many reads
 * is copied O(1) times per byte, and the truncation scan resumes where it
 * stopped, so each body byte is scanned once.
 */
#include "frame.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A header line longer than this is garbage (real ones are < 100 bytes). */
#define MAX_HEADER_LINE 8192

enum state { STATE_HEADERS, STATE_BODY, STATE_SKIP };

struct rpc_frame_reader {
	char *buf; /* [pos, len) unconsumed */
	size_t pos, len, cap;
	size_t max_body;
	enum state state;
	/* the header block being read */
	bool block_started, have_length, in_garbage;
	uint64_t length;
	uint64_t body_len; /* STATE_BODY: the body's declared length */
	/* STATE_BODY / STATE_SKIP: next offset (from pos) to scan for a header */
	size_t scan;
	uint64_t skip_left;
	rpc_frame_fn on_frame;
	rpc_frame_error_fn on_error;
	void *ud;
};

static const char *const error_messages[] = {
#define X(name, msg) msg,
	RPC_FRAME_ERRORS(X)
#undef X
};

const char *rpc_frame_error_message(enum rpc_frame_error err)
{
	if ((unsigned)err >= sizeof error_messages / sizeof error_messages[0]) return "?";
	return error_messages[err];
}

size_t rpc_frame_header(char *buf, size_t len)
{
	return (size_t)snprintf(buf, 64, "Content-Length: %zu\r\n\r\n", len);
}

struct rpc_frame_reader *rpc_frame_reader_new(size_t max_body, rpc_frame_fn on_frame,
                                              rpc_frame_error_fn on_error, void *ud)
{
	struct rpc_frame_reader *r = calloc(1, sizeof *r);
	if (!r) return NULL;
	r->max_body = max_body;
	r->on_frame = on_frame;
	r->on_error = on_error;
	r->ud = ud;
	return r;
}

void rpc_frame_reader_free(struct rpc_frame_reader *r)
{
	if (!r) return;
	free(r->buf);
	free(r);
}

void rpc_frame_reader_set_max(struct rpc_frame_reader *r, size_t max_body)
{
	r->max_body = max_body;
}

size_t rpc_frame_reader_pending(const struct rpc_frame_reader *r)
{
	return r->len - r->pos;
}

static void report(struct rpc_frame_reader *r, enum rpc_frame_error err, const char *detail)
{
	if (r->on_error) r->on_error(r->ud, err, detail);
}

static void block_reset(struct rpc_frame_reader *r)
{
	r->block_started = false;
	r->have_length = false;
	r->length = 0;
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 1: a "Content-Length: <digits>" line (through its \n) starts at p;
 * 0: it does not; -1: it might, more bytes are needed to tell. */
static int header_at(const char *p, size_t n)
{
	static const char name[] = "content-length";
	size_t i = 0;
	for (; i < sizeof name - 1; i++) {
		if (i == n) return -1;
		if (lower((unsigned char)p[i]) != name[i]) return 0;
	}
	size_t limit = i + 48; /* spaces + colon + up to 20 digits + CR LF */
	while (i < n && i < limit && (p[i] == ' ' || p[i] == '\t')) i++;
	if (i == n) return -1;
	if (p[i++] != ':') return 0;
	while (i < n && i < limit && (p[i] == ' ' || p[i] == '\t')) i++;
	size_t digits = 0;
	while (i < n && p[i] >= '0' && p[i] <= '9' && digits <= 20) i++, digits++;
	if (i == n) return -1;
	if (!digits || digits > 20) return 0;
	while (i < n && i < limit && (p[i] == ' ' || p[i] == '\t')) i++;
	if (i == n) return -1;
	if (p[i] == '\n') return 1;
	if (p[i] != '\r') return 0;
	if (i + 1 == n) return -1;
	return p[i + 1] == '\n';
}

/* Scans [from, to) of the unconsumed bytes for the start of a header line.
 * Returns its offset (from pos) and sets *found, or, when none, the offset
 * at which a later scan must resume (the first undecided start). */
static size_t scan_for_header(const struct rpc_frame_reader *r, size_t from, size_t to, bool *found)
{
	const char *base = r->buf + r->pos;
	size_t avail = r->len - r->pos;
	*found = false;
	for (size_t i = from; i < to; i++) {
		if (lower((unsigned char)base[i]) != 'c') continue;
		int m = header_at(base + i, avail - i);
		if (m == 1) {
			*found = true;
			return i;
		}
		if (m == -1) return i;
	}
	return to;
}

static bool is_token_char(unsigned char c)
{
	if (c <= 32 || c >= 127) return false;
	return !strchr("()<>@,;:\\\"/[]?={}", c);
}

/* Handles one header line [p, p+n) without its line break. */
static void header_line(struct rpc_frame_reader *r, const char *p, size_t n)
{
	char detail[96];
	if (n == 0) {
		if (!r->block_started) return; /* blank lines between frames are harmless */
		if (!r->have_length) {
			report(r, RPC_FRAME_ERROR_NO_LENGTH,
			       "header block ended without Content-Length");
			block_reset(r);
			return;
		}
		uint64_t length = r->length;
		block_reset(r);
		if (length > r->max_body) {
			snprintf(detail, sizeof detail, "Content-Length %" PRIu64 " > max %zu",
			         length, r->max_body);
			report(r, RPC_FRAME_ERROR_OVERSIZED, detail);
			r->state = STATE_SKIP;
			r->skip_left = length;
		} else {
			r->state = STATE_BODY;
			r->body_len = length;
		}
		r->scan = 0;
		return;
	}
	size_t colon = 0;
	while (colon < n && is_token_char((unsigned char)p[colon])) colon++;
	if (colon == 0 || colon == n || p[colon] != ':') {
		if (!r->in_garbage)
			report(r, RPC_FRAME_ERROR_GARBAGE, "a line that is not a header");
		r->in_garbage = true;
		block_reset(r);
		return;
	}
	r->in_garbage = false;
	r->block_started = true;
	const char *v = p + colon + 1, *end = p + n;
	while (v < end && (*v == ' ' || *v == '\t')) v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
	if (colon == 14 && !strncasecmp(p, "content-length", 14)) {
		uint64_t len = 0;
		bool ok = v < end && end - v <= 19;
		for (const char *q = v; ok && q < end; q++) {
			if (*q < '0' || *q > '9')
				ok = false;
			else
				len = len * 10 + (uint64_t)(*q - '0');
		}
		if (!ok) {
			report(r, RPC_FRAME_ERROR_BAD_LENGTH,
			       "Content-Length is not a decimal number");
			block_reset(r);
			r->in_garbage = true; /* its body follows: skip it as garbage */
			return;
		}
		r->length = len;
		r->have_length = true;
	}
	/* Content-Type and unknown headers are accepted and ignored: the only
	 * charset LSP defines is utf-8, which jansson checks for us. */
}

static void process(struct rpc_frame_reader *r, bool *stopped)
{
	*stopped = false;
	for (;;) {
		size_t avail = r->len - r->pos;
		char *base = r->buf + r->pos;
		if (r->state == STATE_HEADERS) {
			char *nl = avail ? memchr(base, '\n', avail) : NULL;
			size_t line = nl ? (size_t)(nl - base) : avail;
			/* A "Content-Length: N" line may start anywhere in this one:
			 * a body that ended without a newline (its length a byte short)
			 * or stray bytes run straight into the next header. Resume
			 * there, or the header is read as garbage and every later
			 * message is lost. */
			bool found;
			size_t at = scan_for_header(r, 1, line, &found);
			if (found) {
				char detail[96];
				snprintf(detail, sizeof detail,
				         "skipped %zu bytes before a Content-Length header", at);
				report(r, RPC_FRAME_ERROR_RESYNC, detail);
				r->pos += at;
				r->in_garbage = false;
				block_reset(r);
				continue;
			}
			if (!nl) {
				if (avail > MAX_HEADER_LINE) {
					if (!r->in_garbage)
						report(r, RPC_FRAME_ERROR_GARBAGE,
						       "an over-long header line");
					r->in_garbage = true;
					block_reset(r);
					/* keep the bytes that may begin a header */
					r->pos += at;
				}
				return;
			}
			size_t n = line;
			r->pos += n + 1;
			if (n && base[n - 1] == '\r') n--;
			header_line(r, base, n);
		} else if (r->state == STATE_BODY) {
			uint64_t need = r->body_len;
			size_t have = avail < need ? avail : (size_t)need;
			bool found;
			size_t at = scan_for_header(r, r->scan, have, &found);
			if (found) {
				char detail[96];
				snprintf(detail, sizeof detail, "%zu of %" PRIu64 " bytes", at,
				         need);
				report(r, RPC_FRAME_ERROR_TRUNCATED, detail);
				r->pos += at;
				r->state = STATE_HEADERS;
				continue;
			}
			if (have < need) {
				r->scan = at;
				return;
			}
			r->pos += (size_t)need;
			r->state = STATE_HEADERS;
			if (r->on_frame && !r->on_frame(r->ud, base, (size_t)need)) {
				*stopped = true;
				return;
			}
		} else { /* STATE_SKIP */
			size_t have = avail < r->skip_left ? avail : (size_t)r->skip_left;
			bool found;
			size_t at = scan_for_header(r, 0, have, &found);
			r->pos += at;
			r->skip_left -= at;
			if (found) {
				report(r, RPC_FRAME_ERROR_TRUNCATED,
				       "skipped body cut short by a header");
				r->state = STATE_HEADERS;
				continue;
			}
			if (r->skip_left == 0) {
				r->state = STATE_HEADERS;
				continue;
			}
			return; /* wait for more (maybe the rest of a partial match) */
		}
	}
}

static int reserve(struct rpc_frame_reader *r, size_t extra)
{
	if (r->cap - r->len >= extra) return 0;
	if (r->pos) { /* compact before growing */
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
		if (r->cap - r->len >= extra) return 0;
	}
	size_t want = r->len + extra;
	if (r->state == STATE_BODY && r->pos + r->body_len > want)
		want = r->pos + (size_t)r->body_len; /* the body's size is known: one allocation */
	size_t cap = r->cap ? r->cap : 4096;
	while (cap < want) cap *= 2;
	char *b = realloc(r->buf, cap);
	if (!b) return -ENOMEM;
	r->buf = b;
	r->cap = cap;
	return 0;
}

int rpc_frame_reader_feed(struct rpc_frame_reader *r, const char *data, size_t len)
{
	if (len == 0) return rpc_frame_reader_resume(r);
	if (reserve(r, len)) return -ENOMEM;
	memcpy(r->buf + r->len, data, len);
	r->len += len;
	return rpc_frame_reader_resume(r);
}

int rpc_frame_reader_resume(struct rpc_frame_reader *r)
{
	bool stopped;
	process(r, &stopped);
	if (r->pos == r->len) r->pos = r->len = 0;
	return 0;
}
