/*
 * transport.h - the daemon's byte stream: reads stdin and writes stdout on a
 * libuv loop without ever blocking it.
 *
 * stdin and stdout may each be a pipe or socket (uv_pipe_t), a terminal
 * (uv_tty_t) or a regular file (uv_fs reads/writes on libuv's thread pool,
 * one at a time so order is kept); uv_guess_handle decides.
 *
 * Threads: the loop thread only. Lifetime: transport_new, transport_start,
 * ... transport_close (async: wait for its callback, keep running the loop),
 * then transport_free.
 */
#ifndef INFILL_LSP_TRANSPORT_H
#define INFILL_LSP_TRANSPORT_H

#include <stddef.h>
#include <uv.h>

#include "log.h"

struct transport;

/* Bytes read; data is borrowed for the call. */
typedef void (*transport_read_fn)(void *ud, const char *data, size_t len);
/* End of input: status 0 at end of file, else a negative libuv error. */
typedef void (*transport_eof_fn)(void *ud, int status);
typedef void (*transport_done_fn)(void *ud);

/* A transport over in_fd/out_fd (normally 0 and 1). loop and log are
 * borrowed and must outlive it. NULL when out of memory or a descriptor
 * cannot be used (logged). */
struct transport *transport_new(uv_loop_t *loop, int in_fd, int out_fd, struct log *log,
                                transport_read_fn on_read, transport_eof_fn on_eof, void *ud);

/* Starts reading; 0 or a negative libuv error. */
int transport_start(struct transport *t);

/* Stops reading (no more on_read/on_eof calls). */
void transport_stop(struct transport *t);

/* Queues len bytes (copied) for writing, in order. 0, -ENOMEM, or the
 * first write error seen (writes after an error are dropped). */
int transport_write(struct transport *t, const char *data, size_t len);

/* Queues header + body as one write (a frame is never interleaved). */
int transport_write2(struct transport *t, const char *a, size_t alen, const char *b, size_t blen);

/* Calls done(ud) once every queued write has completed (at once, from a
 * zero-delay path on the loop, when none is pending). */
void transport_flush(struct transport *t, transport_done_fn done, void *ud);

/* Closes the handles; done(ud) runs when all are closed. */
void transport_close(struct transport *t, transport_done_fn done, void *ud);

/* Frees a closed transport (or one never started); accepts NULL. */
void transport_free(struct transport *t);

#endif
