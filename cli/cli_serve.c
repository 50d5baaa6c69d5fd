/*
 * cli_serve.c - `infill [serve] [FLAGS]`: the language server on stdio.
 *
 * Wires the pieces together: the log, a libuv loop, the transport on fds 0/1
 * and the server. Flags become the highest configuration layer, so they win
 * over every settings file and client setting. Shutdown order: flush what
 * is queued for the client, close the server (cancelling jobs), close the
 * transport, let the loop run dry, free.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "cli.h"
#include "infill_config.h"
#include "log.h"
#include "server.h"
#include "transport.h"

struct serve {
	uv_loop_t loop;
	struct log *log;
	struct transport *transport;
	struct server *server;
	/* SIGTERM and SIGINT end the session as `exit` does (the log flushed,
	 * pending work cancelled), not by the signals' default death. */
	uv_signal_t sigterm, sigint;
	bool signals_on;
	int status;
	bool exiting;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: infill [serve] [OPTIONS]\n"
	           "\n"
	           "Serves the Language Server Protocol on stdin/stdout.\n"
	           "\n"
	           "options (each overrides the setting of the same name):\n"
	           "  --model PATH          GGUF model file (setting \"model\")\n"
	           "  --backend NAME        auto, cpu or cuda (setting \"backend\")\n"
	           "  --threads N           CPU worker threads (setting \"threads\")\n"
	           "  --max-message-mb N    largest message accepted, MiB (setting "
	           "\"maxMessageMB\"; 64)\n"
	           "  --log-file PATH       append the log here instead of stderr\n"
	           "  --log-level LEVEL     error, warn, info, debug or trace (setting "
	           "\"log.level\")\n"
	           "  --user-config PATH    user settings file (default\n"
	           "                        $XDG_CONFIG_HOME/infill/config.json); \"\" for none\n"
	           "  --stdio               accepted and ignored (clients pass it)\n"
	           "  --version, --help\n"
	           "\n"
	           "The log never goes to stdout: stdout carries the protocol.\n");
}

/* ---- wiring ----------------------------------------------------------- */

static int io_write(void *ud, const char *data, size_t len)
{
	struct serve *sv = ud;
	return transport_write(sv->transport, data, len);
}

static void transport_closed(void *ud)
{
	(void)ud; /* the loop runs dry now */
}

static void server_closed(void *ud)
{
	struct serve *sv = ud;
	if (sv->signals_on) { /* the loop must run dry: the signal handles go too */
		uv_close((uv_handle_t *)&sv->sigterm, NULL);
		uv_close((uv_handle_t *)&sv->sigint, NULL);
		sv->signals_on = false;
	}
	transport_close(sv->transport, transport_closed, sv);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct serve *sv = h->data;
	server_signalled(sv->server, signum);
}

static void signals_start(struct serve *sv)
{
	sv->sigterm.data = sv->sigint.data = sv;
	if (uv_signal_init(&sv->loop, &sv->sigterm) || uv_signal_init(&sv->loop, &sv->sigint))
		return; /* cannot fail on Linux; then the default actions stay */
	sv->signals_on = true;
	uv_signal_start(&sv->sigterm, on_signal, SIGTERM);
	uv_signal_start(&sv->sigint, on_signal, SIGINT);
}

static void flushed(void *ud)
{
	struct serve *sv = ud;
	server_close(sv->server, server_closed, sv);
}

/* `exit` must end the process (never hung) even when an orderly close cannot
 * finish: the engine thread stuck in a system call (a model on a dead network
 * mount), or a client that stops reading so the last writes never flush.
 * After EXIT_GRACE_S seconds a detached thread ends the process with the
 * status exit asked for. */
#define EXIT_GRACE_S 5

static void *exit_watchdog(void *arg)
{
	int status = (int)(intptr_t)arg;
	sleep(EXIT_GRACE_S);
	static const char msg[] = "infill: the orderly exit did not finish in time; exiting now\n";
	ssize_t w = write(2, msg, sizeof msg - 1);
	(void)w;
	_exit(status);
	return NULL;
}

static void exit_watchdog_start(int status)
{
	pthread_t t;
	pthread_attr_t a;
	if (pthread_attr_init(&a)) return;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, exit_watchdog, (void *)(intptr_t)status))
		fprintf(stderr, "infill: cannot start the exit watchdog\n");
	pthread_attr_destroy(&a);
}

static void io_exit(void *ud, int status)
{
	struct serve *sv = ud;
	if (sv->exiting) return;
	sv->exiting = true;
	sv->status = status;
	exit_watchdog_start(status);
	transport_stop(sv->transport);
	transport_flush(sv->transport, flushed, sv);
}

static void on_read(void *ud, const char *data, size_t len)
{
	struct serve *sv = ud;
	server_feed(sv->server, data, len);
}

static void on_eof(void *ud, int status)
{
	struct serve *sv = ud;
	server_input_closed(sv->server, status);
}

/* ---- flags ------------------------------------------------------------ */

/* Matches --name VALUE or --name=VALUE at argv[*i]; advances *i. */
static bool flag_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n)) return false;
	if (a[n] == '=') {
		*value = a + n + 1;
		return true;
	}
	if (a[n] || *i + 1 >= argc) return false;
	*value = argv[++*i];
	return true;
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) return false;
	*out = v;
	return true;
}

/* What the flags asked for; flags (new reference) holds the ones that
 * become the highest configuration layer. */
struct serve_flags {
	const char *log_file, *log_level, *user_config;
	json_t *flags;
};

/* One flag at argv[*i] that takes a value; false when it is not one of them.
 * On a bad value *rc is set to 2 after saying why on stderr. */
static bool flag_parse_value(int argc, char **argv, int *i, struct serve_flags *f, int *rc)
{
	const char *v;
	long n;
	if (flag_value(argc, argv, i, "--log-file", &v)) {
		f->log_file = v;
	} else if (flag_value(argc, argv, i, "--log-level", &v)) {
		enum log_level l;
		if (log_level_from_name(v, &l)) {
			fprintf(stderr,
			        "infill: --log-level %s: use error, warn, info, debug or trace\n",
			        v);
			*rc = 2;
			return true;
		}
		f->log_level = v;
		json_object_set_new(f->flags, "log.level", json_string(v));
	} else if (flag_value(argc, argv, i, "--model", &v)) {
		json_object_set_new(f->flags, "model", json_string(v));
	} else if (flag_value(argc, argv, i, "--backend", &v)) {
		if (strcmp(v, "auto") && strcmp(v, "cpu") && strcmp(v, "cuda")) {
			fprintf(stderr, "infill: --backend %s: use auto, cpu or cuda\n", v);
			*rc = 2;
			return true;
		}
		json_object_set_new(f->flags, "backend", json_string(v));
	} else if (flag_value(argc, argv, i, "--threads", &v)) {
		if (!parse_int(v, 0, 1024, &n)) {
			fprintf(stderr, "infill: --threads %s: expected a number 0..1024\n", v);
			*rc = 2;
			return true;
		}
		json_object_set_new(f->flags, "threads", json_integer(n));
	} else if (flag_value(argc, argv, i, "--max-message-mb", &v)) {
		if (!parse_int(v, 1, 4096, &n)) {
			fprintf(stderr, "infill: --max-message-mb %s: expected a number 1..4096\n",
			        v);
			*rc = 2;
			return true;
		}
		json_object_set_new(f->flags, "maxMessageMB", json_integer(n));
	} else if (flag_value(argc, argv, i, "--user-config", &v)) {
		f->user_config = v;
	} else {
		return false;
	}
	return true;
}

/* Returns 0 to serve, -1 when --help or --version was answered, 2 on a
 * usage error (said on stderr). */
static int flags_parse(int argc, char **argv, struct serve_flags *f)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int rc = 0;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return -1;
		} else if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
			printf("infill %s\n", INFILL_VERSION);
			return -1;
		} else if (!strcmp(a, "--stdio")) {
			continue;
		} else if (!flag_parse_value(argc, argv, &i, f, &rc)) {
			fprintf(stderr, "infill: unknown option %s (see infill serve --help)\n", a);
			return 2;
		}
		if (rc) return rc;
	}
	return 0;
}

/* The log, writing where --log-file says at --log-level; NULL when it cannot
 * be opened (said on stderr). */
static struct log *serve_log_open(const struct serve_flags *f)
{
	struct log *log = log_new();
	if (!log) return NULL;
	if (f->log_file) {
		int e = log_set_file(log, f->log_file);
		if (e) {
			fprintf(stderr, "infill: cannot open log file %s: %s\n", f->log_file,
			        strerror(-e));
			log_free(log);
			return NULL;
		}
	}
	if (f->log_level) {
		enum log_level l;
		log_level_from_name(f->log_level, &l);
		log_set_level(log, l);
	}
	return log;
}

/* Starts the transport and the server on sv's loop and runs the loop until
 * both have closed; returns the exit status. Whatever started is closed
 * here; the caller frees. */
static int serve_run(struct serve *sv, const struct serve_flags *f)
{
	int rc = 1;
	struct server_options opts = {
		.flags = json_object_size(f->flags) ? f->flags : NULL,
		.user_config = f->user_config,
		.log_level_fixed = f->log_level != NULL,
	};
	struct server_io io = { .write = io_write, .exit = io_exit, .ud = sv };
	sv->transport = transport_new(&sv->loop, 0, 1, sv->log, on_read, on_eof, sv);
	sv->server = sv->transport ? server_new(&sv->loop, sv->log, &opts, &io) : NULL;
	if (!sv->server) {
		log_error(sv->log, "out of memory starting the server");
	} else {
		log_info(sv->log, "infill %s serving LSP on stdio (pid %d)", INFILL_VERSION,
		         (int)getpid());
		signals_start(sv);
		int e = transport_start(sv->transport);
		if (e) {
			log_error(sv->log, "cannot use stdin/stdout: %s", uv_strerror(e));
			server_close(sv->server, server_closed, sv);
		}
		uv_run(&sv->loop, UV_RUN_DEFAULT);
		rc = e ? 1 : sv->status;
	}
	if (!sv->server && sv->transport) {
		transport_close(sv->transport, transport_closed, sv);
		uv_run(&sv->loop, UV_RUN_DEFAULT);
	}
	return rc;
}

/* The log and the loop around serve_run, freed in the shutdown order the
 * top of this file gives. */
static int serve(const struct serve_flags *f)
{
	/* A client that goes away must not kill us mid-write: EPIPE is an
	 * error we handle, SIGPIPE would be death. */
	signal(SIGPIPE, SIG_IGN);

	struct serve sv = { 0 };
	sv.log = serve_log_open(f);
	if (!sv.log) return 1;
	if (uv_loop_init(&sv.loop)) {
		log_free(sv.log);
		return 1;
	}
	int rc = serve_run(&sv, f);
	server_free(sv.server);
	transport_free(sv.transport);
	if (uv_loop_close(&sv.loop)) log_warn(sv.log, "the loop still had handles at exit");
	log_info(sv.log, "exiting with status %d", rc);
	log_free(sv.log);
	return rc;
}

int cli_serve(int argc, char **argv)
{
	struct serve_flags f = { .flags = json_object() };
	int rc = flags_parse(argc, argv, &f);
	if (rc == 0)
		rc = serve(&f);
	else if (rc < 0) /* --help or --version answered */
		rc = 0;
	json_decref(f.flags);
	return rc;
}
