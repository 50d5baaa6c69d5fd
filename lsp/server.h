/*
 * server.h - the language server: LSP state and message handling, with the
 * byte stream kept outside (the transport in cli_serve.c, a buffer in tests
 * and in the fuzzer).
 *
 * Bytes go in with server_feed; whole messages come out through the write
 * callback, already framed. When the session ends (exit notification, or
 * end of input) the exit callback runs once with the process exit status.
 *
 * Threads: the loop thread owns the server and everything it holds.
 */
#ifndef INFILL_LSP_SERVER_H
#define INFILL_LSP_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "log.h"

struct server_io {
	/* Writes one framed message (data borrowed for the call); 0 or a
	 * negative error. */
	int (*write)(void *ud, const char *data, size_t len);
	/* The session is over: exit with `status` (0 after shutdown + exit,
	 * 1 otherwise) once pending writes are flushed. */
	void (*exit)(void *ud, int status);
	void *ud;
};

struct server_options {
	/* The command-line layer of the configuration ({"model": ..., ...}),
	 * borrowed for server_new; NULL when no flag was given. */
	json_t *flags;
	/* The user configuration file; NULL: $XDG_CONFIG_HOME/infill/config.json
	 * (or ~/.config/infill/config.json). "" disables it. */
	const char *user_config;
	/* Log level given on the command line wins over log.level. */
	bool log_level_fixed;
};

struct server;

/* A new server on loop (borrowed, as are log and the contents of io, which
 * must outlive the server). NULL when out of memory. */
struct server *server_new(uv_loop_t *loop, struct log *log, const struct server_options *opts,
                          const struct server_io *io);

/* Feeds bytes read from the client. */
void server_feed(struct server *s, const char *data, size_t len);

/* Handles one message body (what the frame reader hands out). */
void server_handle_body(struct server *s, const char *body, size_t len);

/* The input ended (status 0) or failed: the session ends with status 1
 * unless exit came first. */
void server_input_closed(struct server *s, int status);

/* The process was asked to end (SIGTERM, SIGINT): the session ends as on
 * `exit`, with status 0 after `shutdown`, else 1. */
void server_signalled(struct server *s, int signum);

/* Whether the session is over (exit received or input closed). */
bool server_finished(const struct server *s);

/* Cancels pending work without answering it and closes the server's
 * handles; done(ud) runs on the loop when they are closed. */
void server_close(struct server *s, void (*done)(void *ud), void *ud);

/* Frees a closed server; accepts NULL. */
void server_free(struct server *s);

#endif
