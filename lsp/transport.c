/*
 * transport.c - stdin/stdout on libuv for pipes, terminals and files.
 *
 * Streams (pipes, sockets, ttys) use uv_read_start/uv_write, which libuv
 * already keeps in order. Regular files cannot be polled, so they go through
 * uv_fs_read/uv_fs_write on the thread pool; only one file request is in
 * flight per direction, which keeps bytes in order and lets close wait for
 * it.
 */
#include "transport.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define READ_SIZE 65536

struct wreq {
	union {
		uv_write_t w;
		uv_fs_t fs;
	} req;
	struct transport *t;
	struct wreq *next;
	size_t len, off; /* bytes in data, bytes already written (files) */
	char data[];
};

struct transport {
	uv_loop_t *loop;
	struct log *log;
	int in_fd, out_fd;
	bool in_file, out_file;
	union {
		uv_pipe_t pipe;
		uv_tty_t tty;
		uv_tcp_t tcp;
	} in_h, out_h;
	bool in_open, out_open; /* stream handle initialised (needs uv_close) */
	transport_read_fn on_read;
	transport_eof_fn on_eof;
	void *ud;
	bool reading;
	/* file input */
	uv_fs_t read_req;
	bool read_inflight;
	/* file output queue: head is in flight when write_inflight */
	struct wreq *fq_head, *fq_tail;
	bool write_inflight;
	size_t pending; /* writes queued or in flight */
	int write_error;
	transport_done_fn flush_done;
	void *flush_ud;
	uv_timer_t flush_timer;
	bool timer_open;
	/* closing */
	bool closing;
	int open_handles;
	transport_done_fn close_done;
	void *close_ud;
	char rbuf[READ_SIZE];
};

static int init_stream(struct transport *t, int fd, bool readable, void *h, bool *is_file,
                       bool *open)
{
	uv_handle_type type = uv_guess_handle(fd);
	int r;
	*is_file = false;
	*open = false;
	switch (type) {
	case UV_TTY: r = uv_tty_init(t->loop, h, fd, readable); break;
	case UV_NAMED_PIPE:
		r = uv_pipe_init(t->loop, h, 0);
		if (!r) {
			*open = true;
			r = uv_pipe_open(h, fd);
		}
		return r;
	case UV_TCP:
		r = uv_tcp_init(t->loop, h);
		if (!r) {
			*open = true;
			r = uv_tcp_open(h, fd);
		}
		return r;
	case UV_FILE: *is_file = true; return 0;
	default:
		log_error(t->log, "fd %d: unsupported kind of stream (%d)", fd, (int)type);
		return UV_EINVAL;
	}
	if (!r) *open = true;
	return r;
}

struct transport *transport_new(uv_loop_t *loop, int in_fd, int out_fd, struct log *log,
                                transport_read_fn on_read, transport_eof_fn on_eof, void *ud)
{
	struct transport *t = calloc(1, sizeof *t);
	if (!t) return NULL;
	t->loop = loop;
	t->log = log;
	t->in_fd = in_fd;
	t->out_fd = out_fd;
	t->on_read = on_read;
	t->on_eof = on_eof;
	t->ud = ud;
	int r = init_stream(t, in_fd, true, &t->in_h, &t->in_file, &t->in_open);
	if (r) log_error(t->log, "cannot read fd %d: %s", in_fd, uv_strerror(r));
	int w = init_stream(t, out_fd, false, &t->out_h, &t->out_file, &t->out_open);
	if (w) log_error(t->log, "cannot write fd %d: %s", out_fd, uv_strerror(w));
	uv_timer_init(loop, &t->flush_timer);
	t->flush_timer.data = t;
	t->timer_open = true;
	if (r || w) {
		/* handles were initialised: they must be closed through the loop */
		t->write_error = r ? r : w;
	}
	return t;
}

/* ---- reading ---------------------------------------------------------- */

static void stream_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct transport *t = h->data;
	(void)suggested;
	*buf = uv_buf_init(t->rbuf, READ_SIZE);
}

static void stream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct transport *t = s->data;
	if (n > 0) {
		if (t->reading) t->on_read(t->ud, buf->base, (size_t)n);
		return;
	}
	if (n == 0) return; /* EAGAIN */
	uv_read_stop(s);
	if (t->reading) {
		t->reading = false;
		t->on_eof(t->ud, n == UV_EOF ? 0 : (int)n);
	}
}

static void maybe_closed(struct transport *t);
static void file_read_start(struct transport *t);

static void file_read_done(uv_fs_t *req)
{
	struct transport *t = req->data;
	ssize_t n = req->result;
	uv_fs_req_cleanup(req);
	t->read_inflight = false;
	if (t->closing) {
		maybe_closed(t);
		return;
	}
	if (!t->reading) return;
	if (n > 0) {
		t->on_read(t->ud, t->rbuf, (size_t)n);
		if (t->reading) file_read_start(t);
		return;
	}
	t->reading = false;
	t->on_eof(t->ud, n == 0 ? 0 : (int)n);
}

static void file_read_start(struct transport *t)
{
	uv_buf_t b = uv_buf_init(t->rbuf, READ_SIZE);
	t->read_req.data = t;
	int r = uv_fs_read(t->loop, &t->read_req, t->in_fd, &b, 1, -1, file_read_done);
	if (r) {
		t->reading = false;
		t->on_eof(t->ud, r);
		return;
	}
	t->read_inflight = true;
}

int transport_start(struct transport *t)
{
	if (t->write_error) return t->write_error;
	t->reading = true;
	if (t->in_file) {
		file_read_start(t);
		return 0;
	}
	uv_stream_t *s = (uv_stream_t *)&t->in_h;
	s->data = t;
	int r = uv_read_start(s, stream_alloc, stream_read);
	if (r) t->reading = false;
	return r;
}

void transport_stop(struct transport *t)
{
	if (!t->reading) return;
	t->reading = false;
	if (!t->in_file && t->in_open) uv_read_stop((uv_stream_t *)&t->in_h);
}

/* ---- writing ---------------------------------------------------------- */

static void flush_check(struct transport *t)
{
	if (t->pending || !t->flush_done) return;
	transport_done_fn done = t->flush_done;
	t->flush_done = NULL;
	done(t->flush_ud);
}

static void write_finished(struct transport *t, struct wreq *w, int status)
{
	if (status < 0 && !t->write_error) {
		t->write_error = status;
		log_error(t->log, "writing to the client failed: %s", uv_strerror(status));
	}
	free(w);
	t->pending--;
	flush_check(t);
	if (t->closing) maybe_closed(t);
}

static void stream_write_done(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	write_finished(w->t, w, status);
}

static void file_write_next(struct transport *t);

static void file_write_done(uv_fs_t *req)
{
	struct wreq *w = (struct wreq *)req;
	struct transport *t = w->t;
	ssize_t n = req->result;
	uv_fs_req_cleanup(req);
	t->write_inflight = false;
	if (n > 0 && w->off + (size_t)n < w->len) { /* short write: send the rest */
		w->off += (size_t)n;
		file_write_next(t);
		return;
	}
	t->fq_head = w->next;
	if (!t->fq_head) t->fq_tail = NULL;
	write_finished(t, w, n < 0 ? (int)n : 0);
	file_write_next(t);
}

static void file_write_next(struct transport *t)
{
	struct wreq *w = t->fq_head;
	if (!w || t->write_inflight) return;
	if (t->write_error) { /* drop the rest */
		t->fq_head = w->next;
		if (!t->fq_head) t->fq_tail = NULL;
		write_finished(t, w, 0);
		file_write_next(t);
		return;
	}
	uv_buf_t b = uv_buf_init(w->data + w->off, (unsigned)(w->len - w->off));
	int r = uv_fs_write(t->loop, &w->req.fs, t->out_fd, &b, 1, -1, file_write_done);
	if (r) {
		t->fq_head = w->next;
		if (!t->fq_head) t->fq_tail = NULL;
		write_finished(t, w, r);
		file_write_next(t);
		return;
	}
	t->write_inflight = true;
}

int transport_write2(struct transport *t, const char *a, size_t alen, const char *b, size_t blen)
{
	if (t->write_error) return t->write_error;
	if (t->closing) return UV_ECANCELED;
	struct wreq *w = malloc(sizeof *w + alen + blen);
	if (!w) return -ENOMEM;
	memset(w, 0, sizeof *w);
	w->t = t;
	w->len = alen + blen;
	if (alen) memcpy(w->data, a, alen);
	if (blen) memcpy(w->data + alen, b, blen);
	t->pending++;
	if (t->out_file) {
		if (t->fq_tail)
			t->fq_tail->next = w;
		else
			t->fq_head = w;
		t->fq_tail = w;
		file_write_next(t);
		return 0;
	}
	uv_buf_t buf = uv_buf_init(w->data, (unsigned)w->len);
	int r = uv_write(&w->req.w, (uv_stream_t *)&t->out_h, &buf, 1, stream_write_done);
	if (r) {
		t->pending--;
		free(w);
		if (!t->write_error) t->write_error = r;
		return r;
	}
	return 0;
}

int transport_write(struct transport *t, const char *data, size_t len)
{
	return transport_write2(t, data, len, NULL, 0);
}

static void flush_timer_cb(uv_timer_t *timer)
{
	flush_check(timer->data);
}

void transport_flush(struct transport *t, transport_done_fn done, void *ud)
{
	t->flush_done = done;
	t->flush_ud = ud;
	if (!t->pending) uv_timer_start(&t->flush_timer, flush_timer_cb, 0, 0);
}

/* ---- closing ---------------------------------------------------------- */

static void maybe_closed(struct transport *t)
{
	if (!t->closing || t->open_handles || t->read_inflight || t->write_inflight) return;
	if (!t->close_done) return;
	transport_done_fn done = t->close_done;
	t->close_done = NULL;
	done(t->close_ud);
}

static void handle_closed(uv_handle_t *h)
{
	struct transport *t = h->data;
	t->open_handles--;
	maybe_closed(t);
}

static void close_handle(struct transport *t, uv_handle_t *h)
{
	h->data = t;
	t->open_handles++;
	uv_close(h, handle_closed);
}

void transport_close(struct transport *t, transport_done_fn done, void *ud)
{
	transport_stop(t);
	t->closing = true;
	t->close_done = done;
	t->close_ud = ud;
	if (t->read_inflight)
		uv_cancel((uv_req_t *)&t->read_req); /* fails harmlessly once started */
	if (t->in_open) close_handle(t, (uv_handle_t *)&t->in_h);
	if (t->out_open) close_handle(t, (uv_handle_t *)&t->out_h);
	if (t->timer_open) close_handle(t, (uv_handle_t *)&t->flush_timer);
	t->in_open = t->out_open = t->timer_open = false;
	maybe_closed(t);
}

void transport_free(struct transport *t)
{
	if (!t) return;
	while (t->fq_head) {
		struct wreq *w = t->fq_head;
		t->fq_head = w->next;
		free(w);
	}
	free(t);
}
