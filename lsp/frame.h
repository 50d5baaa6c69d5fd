/*
 * frame.h - the LSP base protocol's framing: "Content-Length: N\r\n"
 * (optionally "Content-Type: ...\r\n") then "\r\n" then N bytes of body.
 *
 * The reader takes bytes as they arrive (any split: a frame across many
 * reads, many frames in one read) and hands out whole bodies. It never gives
 * up on a stream:
 * - a header line that is not "Token: value" is garbage: reported once per
 *   run, skipped line by line until a header block parses;
 * - a "Content-Length: N" line that starts inside another line (after stray
 *   bytes, or after a body whose length was short by a few bytes and which
 *   ended without a newline) is found there: the bytes before it are
 *   skipped and reported, and reading resumes at it;
 * - a header block without Content-Length is reported and dropped;
 * - a body longer than the maximum is reported and skipped without being
 *   buffered;
 * - a truncated body (a writer that died mid-frame, or a wrong length) is cut
 *   where the next frame's "Content-Length: N" line shows up inside it. That
 *   line can never be part of a valid JSON body (outside a string the word is
 *   not JSON; inside one the raw line break is not allowed), so cutting there
 *   never splits a good message.
 *
 * Pure code, no I/O: the transport and the fuzzer drive it the same way.
 * A reader belongs to one thread.
 */
#ifndef INFILL_LSP_FRAME_H
#define INFILL_LSP_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#define RPC_FRAME_ERRORS(X)                                                         \
	X(GARBAGE, "bytes that are not a header line were skipped")                 \
	X(NO_LENGTH, "a header block without Content-Length was dropped")           \
	X(BAD_LENGTH, "a Content-Length that is not a number was dropped")          \
	X(OVERSIZED, "a body over the maximum message size is being skipped")       \
	X(TRUNCATED, "a body was cut short by the next frame's header and dropped") \
	X(RESYNC, "resynchronised on a Content-Length header found mid-line")

enum rpc_frame_error {
#define X(name, msg) RPC_FRAME_ERROR_##name,
	RPC_FRAME_ERRORS(X)
#undef X
};

/* Called with each whole body; body is borrowed for the call only. Return
 * false to stop: rpc_frame_reader_feed returns at once and keeps the rest
 * buffered for the next feed. */
typedef bool (*rpc_frame_fn)(void *ud, const char *body, size_t len);

/* Called for each problem in the stream; detail is borrowed for the call
 * (e.g. "Content-Length 99999999999 > max 67108864"). */
typedef void (*rpc_frame_error_fn)(void *ud, enum rpc_frame_error err, const char *detail);

struct rpc_frame_reader;

/* A new reader that accepts bodies up to max_body bytes; NULL when out of
 * memory. The callbacks and ud are kept (borrowed) for its life. */
struct rpc_frame_reader *rpc_frame_reader_new(size_t max_body, rpc_frame_fn on_frame,
                                              rpc_frame_error_fn on_error, void *ud);

/* Frees the reader; accepts NULL. */
void rpc_frame_reader_free(struct rpc_frame_reader *r);

void rpc_frame_reader_set_max(struct rpc_frame_reader *r, size_t max_body);

/* Takes len bytes (copied) and calls back for every frame they complete.
 * Returns 0, or -ENOMEM (the bytes were not taken; the stream is intact).
 * The callbacks must not free the reader. */
int rpc_frame_reader_feed(struct rpc_frame_reader *r, const char *data, size_t len);

/* Processes what is still buffered after a callback returned false. */
int rpc_frame_reader_resume(struct rpc_frame_reader *r);

/* Bytes buffered that do not yet form a frame (non-zero at end of input
 * means the last frame was truncated). */
size_t rpc_frame_reader_pending(const struct rpc_frame_reader *r);

/* A short description of an error code; static string. */
const char *rpc_frame_error_message(enum rpc_frame_error err);

/* Writes the header for a body of len bytes into buf (at least 64 bytes)
 * and returns its length. */
size_t rpc_frame_header(char *buf, size_t len);

#endif
