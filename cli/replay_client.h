/*
 * replay_client.h - a minimal LSP client for `infill replay` (private to
 * cli/): the real server (this binary, /proc/self/exe) started as a
 * child over pipes, frames written and read, requests answered by id. The
 * trace runner (replay_trace.c) keeps several requests in flight, so
 * responses nobody is waiting for go to a callback.
 *
 * Threads: one; nothing here is shared.
 */
#ifndef INFILL_CLI_REPLAY_CLIENT_H
#define INFILL_CLI_REPLAY_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct replay_client;

/* Called with each response (a message with an id and no method) that no
 * replay_client_request is waiting for, and with each notification other
 * than $/progress and window/showMessage (infill/suggestionGrew); msg is
 * borrowed for the call. */
typedef void (*replay_response_fn)(void *ud, json_t *msg);

/* Starts the server program (NULL: this binary) with argv (argv[0] is the
 * program name, NULL-terminated; borrowed), its stderr appended to log_path
 * (NULL: /dev/null). Returns 0 and a new client in *out (free with
 * replay_client_finish), or a negative errno; a program that cannot be run
 * shows as a server that closed its output. */
int replay_client_start(struct replay_client **out, const char *program, char *const argv[],
                        const char *log_path);

/* Where responses nobody waits for go (NULL: dropped). */
void replay_client_on_response(struct replay_client *c, replay_response_fn fn, void *ud);

/* Sends a notification; takes params. */
void replay_client_notify(struct replay_client *c, const char *method, json_t *params);

/* Sends a request without waiting; takes params. Returns its id (> 0), or
 * -EPIPE when the server is gone. */
json_int_t replay_client_send_request(struct replay_client *c, const char *method, json_t *params);

/* Sends a request and waits at most timeout_ms for its response, handling
 * whatever else arrives meanwhile. Takes params (NULL: {}). Returns the
 * response (new reference) or NULL on timeout or when the server is gone. */
json_t *replay_client_request(struct replay_client *c, const char *method, json_t *params,
                              int timeout_ms);

/* Waits up to timeout_ms (0: not at all) for a message, then handles it and
 * whatever else has arrived; returns as soon as something was handled.
 * Returns false when the server closed its output. */
bool replay_client_pump(struct replay_client *c, int timeout_ms);

/* Waits (at most timeout_ms) for the model load's $/progress end. Returns 0,
 * or -EIO with the server's error message in msg when it failed, -ETIMEDOUT. */
int replay_client_wait_loaded(struct replay_client *c, int timeout_ms, char *msg, size_t msglen);

/* CPU time the server has used so far, in ms (user + system, from
 * /proc/PID/stat); -1 when unknown. On a machine shared with other work the
 * wall-clock latency depends on what else runs; the CPU time does not. */
double replay_client_cpu_ms(const struct replay_client *c);

/* shutdown, exit, wait (then kill after 5 s); frees c. Returns the server's
 * exit status, or -1. Accepts NULL. */
int replay_client_finish(struct replay_client *c);

/* Milliseconds on the monotonic clock. */
double replay_now_ms(void);

#endif
