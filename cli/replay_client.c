/*
 * replay_client.c - the LSP client of `infill replay` (replay_client.h):
 * the server as a child over pipes, Content-Length frames, responses matched
 * by id. Server requests get a plain answer; $/progress and showMessage
 * errors tell whether the model loaded.
 */
#include "replay_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct replay_client {
	pid_t pid;
	int to, from; /* our ends of the child's stdin and stdout */
	char *buf;    /* bytes read, not yet parsed */
	size_t len, cap;
	json_int_t next_id;
	bool eof;
	bool load_done, load_failed;
	char error[1024]; /* the last showMessage error */
	replay_response_fn on_response;
	void *ud;
};

double replay_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double replay_client_cpu_ms(const struct replay_client *c)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)c->pid);
	FILE *f = fopen(path, "r");
	if (!f) return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p) return -1;
	unsigned long long ut = 0, st = 0;
	/* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

int replay_client_start(struct replay_client **out, const char *program, char *const argv[],
                        const char *log_path)
{
	*out = NULL;
	struct replay_client *c = calloc(1, sizeof *c);
	if (!c) return -ENOMEM;
	int in[2], outp[2];
	if (pipe(in)) {
		free(c);
		return -errno;
	}
	if (pipe(outp)) {
		int e = errno;
		close(in[0]), close(in[1]);
		free(c);
		return -e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(in[0]), close(in[1]), close(outp[0]), close(outp[1]);
		free(c);
		return -e;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		int fd = open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND,
		              0644);
		if (fd >= 0) dup2(fd, 2);
		close(in[0]), close(in[1]), close(outp[0]), close(outp[1]);
		execv(program ? program : "/proc/self/exe", argv);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	c->pid = pid;
	c->to = in[1];
	c->from = outp[0];
	*out = c;
	return 0;
}

void replay_client_on_response(struct replay_client *c, replay_response_fn fn, void *ud)
{
	c->on_response = fn;
	c->ud = ud;
}

static int send_msg(struct replay_client *c, json_t *msg)
{
	json_object_set_new(msg, "jsonrpc", json_string("2.0"));
	char *body = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!body) return -ENOMEM;
	size_t blen = strlen(body);
	char head[64];
	int hn = snprintf(head, sizeof head, "Content-Length: %zu\r\n\r\n", blen);
	int rc = 0;
	if (write(c->to, head, (size_t)hn) != hn || write(c->to, body, blen) != (ssize_t)blen)
		rc = -EPIPE;
	free(body);
	return rc;
}

void replay_client_notify(struct replay_client *c, const char *method, json_t *params)
{
	send_msg(c, json_pack("{s:s, s:o}", "method", method, "params", params));
}

json_int_t replay_client_send_request(struct replay_client *c, const char *method, json_t *params)
{
	json_int_t id = ++c->next_id;
	if (send_msg(c, json_pack("{s:I, s:s, s:o}", "id", id, "method", method, "params",
	                          params ? params : json_object())))
		return -EPIPE;
	return id;
}

/* One message parsed from what was read, or NULL when it is not whole yet. */
static json_t *take_message(struct replay_client *c)
{
	if (!c->buf) return NULL; /* nothing read yet */
	char *sep = memmem(c->buf, c->len, "\r\n\r\n", 4);
	if (!sep) return NULL;
	size_t hlen = (size_t)(sep - c->buf) + 4;
	size_t clen = 0;
	for (char *p = c->buf; p < sep; p++) {
		if (!strncasecmp(p, "Content-Length:", 15)) {
			clen = strtoul(p + 15, NULL, 10);
			break;
		}
	}
	if (c->len < hlen + clen) return NULL;
	json_t *m = json_loadb(c->buf + hlen, clen, 0, NULL);
	memmove(c->buf, c->buf + hlen + clen, c->len - hlen - clen);
	c->len -= hlen + clen;
	return m ? m : json_object();
}

/* The next message, waiting at most timeout_ms; NULL on timeout or EOF. */
static json_t *read_msg(struct replay_client *c, int timeout_ms)
{
	double deadline = replay_now_ms() + timeout_ms;
	for (;;) {
		json_t *m = take_message(c);
		if (m || c->eof) return m;
		int left = (int)(deadline - replay_now_ms());
		if (left < 0) return NULL;
		struct pollfd pfd = { c->from, POLLIN, 0 };
		if (poll(&pfd, 1, left) <= 0) {
			if (left == 0) return NULL;
			continue;
		}
		if (c->cap - c->len < 65536) {
			size_t cap = c->cap ? c->cap * 2 : 1 << 17;
			char *b = realloc(c->buf, cap);
			if (!b) return NULL;
			c->buf = b;
			c->cap = cap;
		}
		ssize_t n = read(c->from, c->buf + c->len, c->cap - c->len);
		if (n <= 0) {
			c->eof = true;
			return NULL;
		}
		c->len += (size_t)n;
	}
}

/* Server requests get a plain answer; the load's notifications update its
 * state; responses and other notifications go to the callback. */
static void handle(struct replay_client *c, json_t *m)
{
	const char *method = json_string_value(json_object_get(m, "method"));
	json_t *id = json_object_get(m, "id");
	if (!method) {
		if (id && c->on_response) c->on_response(c->ud, m);
		return;
	}
	if (id) {
		json_t *result =
		        !strcmp(method, "workspace/configuration") ? json_pack("[n]") : json_null();
		send_msg(c, json_pack("{s:O, s:o}", "id", id, "result", result));
		return;
	}
	json_t *params = json_object_get(m, "params");
	if (!strcmp(method, "$/progress")) {
		json_t *v = json_object_get(params, "value");
		const char *kind = json_string_value(json_object_get(v, "kind"));
		if (kind && !strcmp(kind, "end")) {
			c->load_done = true;
			const char *msg = json_string_value(json_object_get(v, "message"));
			if (msg && !strcmp(msg, "failed")) c->load_failed = true;
		}
	} else if (!strcmp(method, "window/showMessage")) {
		if (json_integer_value(json_object_get(params, "type")) == 1) {
			snprintf(c->error, sizeof c->error, "%s",
			         json_string_value(json_object_get(params, "message")) ?: "");
			c->load_failed = true;
		}
	} else if (c->on_response) {
		c->on_response(c->ud, m);
	}
}

bool replay_client_pump(struct replay_client *c, int timeout_ms)
{
	json_t *m = read_msg(c, timeout_ms);
	while (m) {
		handle(c, m);
		json_decref(m);
		m = read_msg(c, 0);
	}
	return !c->eof;
}

json_t *replay_client_request(struct replay_client *c, const char *method, json_t *params,
                              int timeout_ms)
{
	json_int_t id = replay_client_send_request(c, method, params);
	if (id < 0) return NULL;
	double deadline = replay_now_ms() + timeout_ms;
	for (;;) {
		int left = (int)(deadline - replay_now_ms());
		json_t *m = left > 0 ? read_msg(c, left) : NULL;
		if (!m) return NULL;
		json_t *mid = json_object_get(m, "id");
		if (mid && !json_object_get(m, "method") && json_integer_value(mid) == id) return m;
		handle(c, m);
		json_decref(m);
	}
}

int replay_client_wait_loaded(struct replay_client *c, int timeout_ms, char *msg, size_t msglen)
{
	double t0 = replay_now_ms();
	while (!c->load_done && !c->load_failed && !c->eof && replay_now_ms() - t0 < timeout_ms)
		replay_client_pump(c, 1000);
	if (c->load_done && !c->load_failed) return 0;
	/* the error message follows the progress end */
	for (int i = 0; i < 10 && !c->error[0] && !c->eof; i++) replay_client_pump(c, 100);
	snprintf(msg, msglen, "%s",
	         c->error[0]              ? c->error
	         : c->load_done || c->eof ? "no progress report"
	                                  : "timed out");
	return c->load_done || c->load_failed || c->eof ? -EIO : -ETIMEDOUT;
}

int replay_client_finish(struct replay_client *c)
{
	if (!c) return -1;
	json_t *r = c->eof ? NULL : replay_client_request(c, "shutdown", json_null(), 10000);
	json_decref(r);
	if (!c->eof) replay_client_notify(c, "exit", json_null());
	close(c->to);
	int status = 0;
	bool reaped = false;
	for (int i = 0; i < 100 && !reaped; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid)
			reaped = true;
		else
			usleep(50000);
	}
	if (!reaped) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &status, 0);
	}
	close(c->from);
	free(c->buf);
	free(c);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
