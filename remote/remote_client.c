/*
 * remote_client.c - HTTP calls to an inference server on the libuv loop
 * (remote.h): libcurl's multi-socket interface, with a uv_poll per socket
 * curl opens and one uv_timer for curl's timeouts, so the loop never waits
 * on the network. Around it: a FIFO that keeps at most max_concurrent calls
 * in flight, retries with backoff on connection errors only (nothing was
 * sent or received: a retry cannot double a generation), TLS always
 * verified, and one failure message per call that says what to fix.
 *
 * Cancelling removes the easy handle and cleans it up at once: a transfer
 * that had not finished is not returned to the connection cache, its socket
 * is closed, and the server sees the stream end and stops generating
 * (llama-server logs the task cancelled). Nothing here is called from inside
 * a curl callback except the write and socket callbacks below, which never
 * call back into user code; so remote_call_cancel and remote_call_start are
 * safe from any done callback.
 */
#include "remote.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Connection errors are retried this many times, after 100 ms, then 200. */
#define RETRY_MAX      2
#define RETRY_FIRST_MS 100

struct sock {
	uv_poll_t poll; /* first: the handle's address is the struct's */
	curl_socket_t fd;
	struct remote_client *c;
	struct sock *prev, *next; /* the client's open polls */
};

struct remote_call {
	struct remote_client *c;
	CURL *easy;
	struct curl_slist *headers;
	char *url;   /* the full URL (owned) */
	char *shown; /* the base URL for messages, without user:password@ (owned) */
	char *body;  /* (owned) */
	char *key_env, *ca_file;
	bool has_key;
	enum remote_api api;
	int timeout_ms;
	uint64_t answer_by; /* uv_hrtime ns; 0: none (remote_query.answer_by_ns) */
	/* uv_hrtime ns; 0: none. The stream said it is whole: past this the
	 * body's end (a Content-Length or chunk that promised more) is not
	 * awaited. */
	uint64_t settle_by;
	uint64_t start_ns; /* first attempt */
	uint64_t retry_at; /* ns; when waiting for a retry */
	int attempt;
	remote_done_fn done;
	void *ud;
	struct remote_stream stream;
	struct remote_acc acc;
	long status; /* HTTP status of this attempt; 0 before the headers */
	size_t bytes;
	int feed_error;
	/* Reading stopped on our side: every choice full (full), the body
	 * past REMOTE_BODY_MAX (too_big), or an error status's body past
	 * ERROR_BODY_MAX (its start says all a message needs). */
	bool full, too_big, error_read;
	size_t max_bytes; /* a choice's cap, from max_tokens (struct remote_acc) */
	bool active;      /* in the multi handle */
	bool queued;      /* waiting for a slot or a retry */
	char errbuf[CURL_ERROR_SIZE];
	struct remote_call *prev, *next; /* every live call */
	struct remote_call *qnext;       /* the wait queue */
};

struct remote_client {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer;       /* curl's timeouts */
	uv_timer_t retry_timer; /* the earliest retry */
	uv_timer_t cut_timer;   /* the earliest answer-by time */
	int max_concurrent, in_flight;
	struct remote_call *calls;
	struct remote_call *wait_head, *wait_tail;
	struct remote_client_stats stats;
	int open_handles;   /* uv handles not yet closed (timers, polls) */
	struct sock *socks; /* polls open (not yet closing) */
	bool closing;
	void (*close_done)(void *ud);
	void *close_ud;
};

static bool curl_ready;

/* ---- handles ---------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
	struct remote_client *c = h->data;
	if (h->type == UV_POLL) free(h); /* a struct sock: the poll is its first member */
	if (--c->open_handles == 0 && c->closing && c->close_done) {
		void (*done)(void *) = c->close_done;
		c->close_done = NULL;
		done(c->close_ud);
	}
}

static void check_done(struct remote_client *c);

static void sock_close(struct remote_client *c, struct sock *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		c->socks = s->next;
	if (s->next) s->next->prev = s->prev;
	uv_poll_stop(&s->poll);
	uv_close((uv_handle_t *)&s->poll, handle_closed);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct sock *s = (struct sock *)h;
	int flags = 0;
	if (status < 0) flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
	int running;
	struct remote_client *c = s->c;
	curl_multi_socket_action(c->multi, s->fd, flags, &running);
	check_done(c);
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	(void)easy;
	struct remote_client *c = userp;
	struct sock *s = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			curl_multi_assign(c->multi, fd, NULL);
			sock_close(c, s);
		}
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s) return -1;
		if (uv_poll_init_socket(c->loop, &s->poll, fd)) {
			free(s);
			return -1;
		}
		s->poll.data = c;
		s->fd = fd;
		s->c = c;
		s->next = c->socks;
		if (c->socks) c->socks->prev = s;
		c->socks = s;
		c->open_handles++;
		curl_multi_assign(c->multi, fd, s);
	}
	int ev = (what & CURL_POLL_IN ? UV_READABLE : 0) | (what & CURL_POLL_OUT ? UV_WRITABLE : 0);
	uv_poll_start(&s->poll, ev, on_poll);
	return 0;
}

static void on_timer(uv_timer_t *t)
{
	struct remote_client *c = t->data;
	int running;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(c);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	struct remote_client *c = userp;
	if (timeout_ms < 0)
		uv_timer_stop(&c->timer);
	else /* 0: as soon as possible, but not from inside this callback */
		uv_timer_start(&c->timer, on_timer, (uint64_t)timeout_ms, 0);
	return 0;
}

/* ---- the client ---------------------------------------------------------------- */

struct remote_client *remote_client_new(uv_loop_t *loop, int max_concurrent)
{
	if (!curl_ready) { /* not thread-safe, and needed once: the loop thread's first call */
		if (curl_global_init(CURL_GLOBAL_DEFAULT)) return NULL;
		curl_ready = true;
	}
	struct remote_client *c = calloc(1, sizeof *c);
	if (!c) return NULL;
	c->loop = loop;
	c->max_concurrent = max_concurrent < 1 ? 1 : max_concurrent;
	c->multi = curl_multi_init();
	if (!c->multi) {
		free(c);
		return NULL;
	}
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	uv_timer_init(loop, &c->timer);
	uv_timer_init(loop, &c->retry_timer);
	uv_timer_init(loop, &c->cut_timer);
	c->timer.data = c->retry_timer.data = c->cut_timer.data = c;
	c->open_handles = 3;
	return c;
}

void remote_client_get_stats(const struct remote_client *c, struct remote_client_stats *out)
{
	*out = c->stats;
	out->in_flight = c->in_flight;
	int w = 0;
	for (const struct remote_call *q = c->wait_head; q; q = q->qnext) w++;
	out->waiting = w;
}

/* ---- calls ---------------------------------------------------------------- */

/* Takes call out of the wait queue, keeping wait_tail right. */
static void queue_unlink(struct remote_client *c, struct remote_call *call)
{
	struct remote_call **pp = &c->wait_head, *last = NULL;
	while (*pp && *pp != call) last = *pp, pp = &(*pp)->qnext;
	if (!*pp) return;
	*pp = call->qnext;
	if (c->wait_tail == call) c->wait_tail = last;
	call->qnext = NULL;
	call->queued = false;
}

/* Takes call off the multi handle (its connection closes) and out of the
 * queue: what call_free and cut_call both do first. */
static void call_detach(struct remote_call *call)
{
	struct remote_client *c = call->c;
	if (call->active) {
		curl_multi_remove_handle(c->multi, call->easy);
		c->in_flight--;
		call->active = false;
	}
	if (call->queued) queue_unlink(c, call);
}

static void call_free(struct remote_call *call)
{
	struct remote_client *c = call->c;
	call_detach(call);
	if (call->prev)
		call->prev->next = call->next;
	else
		c->calls = call->next;
	if (call->next) call->next->prev = call->prev;
	if (call->easy) curl_easy_cleanup(call->easy); /* an unfinished transfer's socket closes */
	curl_slist_free_all(call->headers);
	free(call->url);
	free(call->shown);
	free(call->body);
	free(call->key_env);
	free(call->ca_file);
	remote_stream_finish(&call->stream);
	remote_acc_finish(&call->acc);
	free(call);
}

static int on_payload(void *ud, const char *payload, size_t len)
{
	struct remote_call *call = ud;
	int rc = remote_acc_feed(&call->acc, call->api, payload, len);
	if (rc == -EPROTO && !call->stream.sse_payload) {
		/* a bare line of a reply that was not streamed (pretty-printed
		 * JSON): the whole body is read at the end instead */
		call->acc.error[0] = 0;
		return 0;
	}
	if (rc) call->feed_error = rc;
	return rc;
}

static int ignore_payload(void *ud, const char *payload, size_t len)
{
	(void)ud, (void)payload, (void)len;
	return 0;
}

/* Whether every choice that came is full (cut at the byte cap). */
static bool choices_full(const struct remote_call *call)
{
	if (!call->acc.n) return false;
	for (int i = 0; i < call->acc.n; i++)
		if (!call->acc.choices[i].full) return false;
	return true;
}

/* Past this many bytes of one reply, reading stops: what has come is used
 * if it holds choices, else the call fails. A server cannot make the
 * daemon buffer or parse an unbounded body. */
#define REMOTE_BODY_MAX (8u << 20)

/* The most of an error reply's body that is read (for its message). */
#define ERROR_BODY_MAX (16u << 10)

/* How long the end of a body is awaited once its stream said it is whole
 * (a server's last bytes follow its end marker at once). */
#define SETTLE_MS 200

static void arm_cut_timer(struct remote_client *c);

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
	struct remote_call *call = ud;
	size_t n = size * nmemb;
	if (!call->status) curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &call->status);
	call->bytes += n;
	if (call->status >= 400 && call->bytes > ERROR_BODY_MAX) {
		call->error_read = true;
		return 0;
	}
	if (call->bytes > REMOTE_BODY_MAX) {
		call->too_big = true;
		return 0;
	}
	/* an error reply is only kept (for its message), not parsed as choices */
	int rc = remote_stream_feed(&call->stream, data, n,
	                            call->status >= 400 ? ignore_payload : on_payload, call);
	if (!rc && call->status < 400 && choices_full(call)) {
		call->full = true; /* nothing more of it would be kept: stop reading */
		return 0;
	}
	/* only the stream's own end marker: a choice that finished says
	 * nothing of choices still to come (a server may send them one
	 * after the other) */
	if (!rc && !call->settle_by && call->status < 400 &&
	    (call->stream.done_seen || call->acc.done)) {
		call->settle_by = uv_hrtime() + (uint64_t)SETTLE_MS * 1000000u;
		arm_cut_timer(call->c); /* only a timer: safe inside curl's callback */
	}
	return rc ? 0 : n; /* 0: CURLE_WRITE_ERROR ends the transfer */
}

static uint64_t now_ns(void)
{
	return uv_hrtime();
}

static int remaining_ms(const struct remote_call *call)
{
	uint64_t spent = (now_ns() - call->start_ns) / 1000000u;
	long left = (long)call->timeout_ms - (long)spent;
	return left < 1 ? 1 : (int)left;
}

/* One attempt: a fresh easy handle into the multi handle. 0 or -ENOMEM. */
static int attempt_start(struct remote_call *call)
{
	struct remote_client *c = call->c;
	if (call->easy) curl_easy_cleanup(call->easy);
	remote_stream_finish(&call->stream);
	remote_acc_finish(&call->acc);
	call->acc.max_bytes = call->max_bytes;
	call->status = 0;
	call->bytes = 0;
	call->feed_error = 0;
	call->full = call->too_big = call->error_read = false;
	call->settle_by = 0;
	call->errbuf[0] = 0;
	CURL *e = call->easy = curl_easy_init();
	if (!e) return -ENOMEM;
	curl_easy_setopt(e, CURLOPT_URL, call->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(call->body));
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, call->headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
	curl_easy_setopt(e, CURLOPT_PRIVATE, call);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->errbuf);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)remaining_ms(call));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)remaining_ms(call));
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L); /* the defaults, said out loud */
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (call->ca_file) curl_easy_setopt(e, CURLOPT_CAINFO, call->ca_file);
	if (curl_multi_add_handle(c->multi, e) != CURLM_OK) return -ENOMEM;
	call->active = true;
	c->in_flight++;
	return 0;
}

static void fail_call(struct remote_call *call, int status, enum remote_fail_kind kind,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Replaces each copy of secret (slen bytes) in msg by "***". */
static void hide(char *msg, const char *secret, size_t slen)
{
	if (slen < 3) return; /* too short to be a secret worth hiding, and to find */
	char *at;
	while ((at = memmem(msg, strlen(msg), secret, slen))) {
		memcpy(at, "***", 3);
		memmove(at + 3, at + slen, strlen(at + slen) + 1);
	}
}

/* A failure message made fit to show: whole UTF-8 with no control bytes
 * (a server's words and a cut at the buffer's end can break both), and
 * without the key or the URL's password, which a server may echo ("the
 * credentials ... were refused"). */
static void message_scrub(const struct remote_call *call, char *msg, size_t cap)
{
	static const char bearer[] = "Authorization: Bearer ";
	for (const struct curl_slist *h = call->headers; h; h = h->next)
		if (!strncmp(h->data, bearer, sizeof bearer - 1))
			hide(msg, h->data + sizeof bearer - 1, strlen(h->data + sizeof bearer - 1));
	const char *p = strstr(call->url, "://");
	p = p ? p + 3 : call->url;
	size_t host = strcspn(p, "/?#");
	const char *at = memchr(p, '@', host);
	if (at) { /* "user:pass@" or "token@" */
		const char *colon = memchr(p, ':', (size_t)(at - p));
		const char *pw = colon ? colon + 1 : p;
		hide(msg, pw, (size_t)(at - pw));
	}
	size_t n = strlen(msg), ok = remote_text_valid(msg, n);
	if (n + 1 == cap && n - ok < 4) msg[ok] = 0; /* a character cut by the buffer's end */
	remote_text_clean(msg);
}

/* Delivers a failure and frees the call. */
static void fail_call(struct remote_call *call, int status, enum remote_fail_kind kind,
                      const char *fmt, ...)
{
	struct remote_failure f = { .kind = kind, .http_status = (int)call->status };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f.message, sizeof f.message, fmt, ap);
	va_end(ap);
	message_scrub(call, f.message, sizeof f.message);
	call->c->stats.failures++;
	remote_done_fn done = call->done;
	void *ud = call->ud;
	struct remote_client *c = call->c;
	if (call->active) { /* its slot is free for the next before the callback runs */
		curl_multi_remove_handle(c->multi, call->easy);
		c->in_flight--;
		call->active = false;
	}
	done(ud, status, NULL, &f);
	call_free(call);
}

static void pump(struct remote_client *c);

static void on_retry_timer(uv_timer_t *t)
{
	pump(t->data);
}

/* Starts waiting calls while there is room and their time has come; sets
 * the retry timer for the earliest that must wait. */
static void pump(struct remote_client *c)
{
	/* One at a time, from the head: a failure's callback may queue or
	 * cancel calls, so nothing is held across it. */
	while (!c->closing && c->in_flight < c->max_concurrent) {
		uint64_t now = now_ns();
		struct remote_call *call = c->wait_head;
		while (call && call->retry_at > now) call = call->qnext;
		if (!call) break;
		queue_unlink(c, call);
		if (attempt_start(call))
			fail_call(call, -ENOMEM, REMOTE_FAIL_INTERNAL,
			          "cannot start a request to %s (out of memory)", call->shown);
	}
	uint64_t now = now_ns(), next = 0;
	for (struct remote_call *q = c->wait_head; q; q = q->qnext)
		if (q->retry_at > now && (!next || q->retry_at < next)) next = q->retry_at;
	if (next && !c->closing)
		uv_timer_start(&c->retry_timer, on_retry_timer, (next - now) / 1000000u + 1, 0);
}

static void enqueue(struct remote_call *call)
{
	struct remote_client *c = call->c;
	call->queued = true;
	call->qnext = NULL;
	if (c->wait_tail)
		c->wait_tail->qnext = call;
	else
		c->wait_head = call;
	c->wait_tail = call;
}

/* The server's own words from an error body: error.message of a JSON body
 * (only when it parsed: a parser's complaint is not the server's words),
 * else an HTML page's title or the body's first line (remote_text_excerpt),
 * never the page itself. */
static void error_excerpt(const struct remote_call *call, char *out, size_t cap)
{
	size_t len;
	const char *all = remote_stream_all(&call->stream, &len);
	out[0] = 0;
	struct remote_acc acc = { 0 };
	const char *j = all;
	size_t jl = len;
	if (jl > 6 && !memcmp(j, "data: ", 6)) j += 6, jl -= 6;
	if (!remote_acc_feed(&acc, call->api, j, jl) && acc.error[0]) {
		snprintf(out, cap, "%.*s", (int)(cap - 1), acc.error);
		if (strlen(out) > REMOTE_EXCERPT_MAX) { /* one line, whole characters */
			out[REMOTE_EXCERPT_MAX] = 0;
			out[remote_text_valid(out, REMOTE_EXCERPT_MAX)] = 0;
		}
	} else {
		remote_text_excerpt(all, len, out, cap);
	}
	remote_acc_finish(&acc);
}

static bool is_connect_error(CURLcode r, size_t bytes)
{
	switch (r) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY: return true;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING: return bytes == 0; /* nothing came: nothing was generated */
	default: return false;
	}
}

static bool is_tls_error(CURLcode r)
{
	return r == CURLE_PEER_FAILED_VERIFICATION || r == CURLE_SSL_CONNECT_ERROR ||
	       r == CURLE_SSL_CACERT_BADFILE || r == CURLE_SSL_CERTPROBLEM ||
	       r == CURLE_SSL_ISSUER_ERROR;
}

/* Whether every choice says it is finished (or the stream said so). */
static bool stream_complete(const struct remote_call *call)
{
	if (call->stream.done_seen || call->acc.done) return true;
	if (!call->acc.n) return false;
	for (int i = 0; i < call->acc.n; i++)
		if (call->acc.choices[i].finish == REMOTE_FINISH_NONE) return false;
	return true;
}

/* An HTTP error status: one message the user can act on (a key refused
 * or missing, else the server's own words). */
static void fail_http_status(struct remote_call *call)
{
	char ex[256];
	error_excerpt(call, ex, sizeof ex);
	if (call->status == 401 || call->status == 403) {
		if (call->has_key)
			fail_call(call, -EACCES, REMOTE_FAIL_AUTH,
			          "%s refused the key (HTTP %ld: %s): check the environment "
			          "variable %s (remote.apiKeyEnv)",
			          call->shown, call->status, ex,
			          call->key_env ? call->key_env : "?");
		else
			fail_call(call, -EACCES, REMOTE_FAIL_AUTH,
			          "%s wants a key (HTTP %ld: %s): set remote.apiKeyEnv to "
			          "the "
			          "name of an environment variable that holds it",
			          call->shown, call->status, ex);
	} else if (call->status >= 502 && call->status <= 504) {
		fail_call(call, -EIO, REMOTE_FAIL_HTTP,
		          "%s answered HTTP %ld: %s; a gateway or proxy there could not reach "
		          "the inference server behind it: is that server running?",
		          call->shown, call->status, ex[0] ? ex : "(no message)");
	} else {
		fail_call(call, -EIO, REMOTE_FAIL_HTTP, "%s answered HTTP %ld: %s", call->shown,
		          call->status, ex[0] ? ex : "(no message)");
	}
}

/* Whether what came is a whole answer although the transfer failed after
 * it (a Content-Length or a chunk size that promised more, a connection
 * held open past the end marker): a non-streamed reply is parsed here if
 * it is one. */
static bool answer_whole(struct remote_call *call)
{
	if (call->status >= 400 || call->feed_error || call->acc.error[0]) return false;
	if (!call->acc.n && !call->stream.payloads) {
		size_t len;
		const char *all = remote_stream_all(&call->stream, &len);
		if (!len || len >= REMOTE_STREAM_KEEP ||
		    remote_acc_feed(&call->acc, call->api, all, len)) {
			remote_acc_finish(&call->acc); /* not one: as if never tried */
			call->acc.max_bytes = call->max_bytes;
			return false;
		}
	}
	if (call->acc.error[0]) return false;
	return call->acc.n && stream_complete(call);
}

/* Why a body that ended cleanly could not be read as the API's reply: the
 * connection closed inside an event or a JSON document (a disconnect), an
 * HTML page (a wrong URL), or something else (a wrong remote.api). */
static void fail_unreadable(struct remote_call *call, int rc)
{
	size_t len;
	const char *all = remote_stream_all(&call->stream, &len);
	size_t i = 0;
	while (i < len && (all[i] == ' ' || all[i] == '\r' || all[i] == '\n')) i++;
	bool sse = len - i >= 5 &&
	           (!memcmp(all + i, "data:", 5) || !memcmp(all + i, "event", 5) || all[i] == ':');
	if (rc == -ENOMEM) {
		fail_call(call, -ENOMEM, REMOTE_FAIL_INTERNAL, "out of memory reading %s",
		          call->shown);
	} else if (call->acc.cut_short || sse) {
		fail_call(call, -EIO, REMOTE_FAIL_DISCONNECT,
		          "%s closed the connection in the middle of an answer (the reply ends "
		          "inside %s)",
		          call->shown, sse ? "an event" : "its JSON");
	} else if (remote_text_is_html(all, len)) {
		char ex[REMOTE_EXCERPT_MAX + 1];
		remote_text_excerpt(all, len, ex, sizeof ex);
		fail_call(call, -EPROTO, REMOTE_FAIL_PROTOCOL,
		          "%s sent an HTML page (\"%s\") where the %s API's reply was expected: "
		          "check remote.url (the server's base URL) and remote.api",
		          call->shown, ex[0] ? ex : "untitled", remote_api_name(call->api));
	} else {
		fail_call(call, -EPROTO, REMOTE_FAIL_PROTOCOL,
		          "%s sent a reply that is not the %s API's: %s; check remote.api",
		          call->shown, remote_api_name(call->api),
		          len ? call->acc.error : "an empty body");
	}
}

/* Delivers call's choices as its answer and frees it. */
static void deliver(struct remote_call *call)
{
	struct remote_reply reply = { 0 };
	remote_acc_take(&call->acc, &reply);
	reply.elapsed_ms = (double)(now_ns() - call->start_ns) / 1e6;
	reply.retries = call->attempt;
	remote_done_fn done = call->done;
	void *ud = call->ud;
	done(ud, 0, &reply, NULL);
	remote_reply_finish(&reply);
	call_free(call);
}

static void attempt_done(struct remote_call *call, CURLcode r)
{
	struct remote_client *c = call->c;
	/* an error status with no body never reached on_write */
	if (!call->status) curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &call->status);
	curl_multi_remove_handle(c->multi, call->easy);
	c->in_flight--;
	call->active = false;
	if (call->full || (call->too_big && call->acc.n && call->status < 400))
		r = CURLE_OK; /* we stopped reading: the choices are what came */
	if (call->status >= 400 && !is_tls_error(r)) {
		/* the status is the failure, however its body ended (cut at
		 * ERROR_BODY_MAX, never ending, cut off) */
		fail_http_status(call);
		return;
	}
	if (r != CURLE_OK && call->bytes && !is_tls_error(r) && answer_whole(call))
		r = CURLE_OK; /* the transfer broke after a whole answer */
	if (call->too_big && r != CURLE_OK) {
		fail_call(call, -EMSGSIZE, REMOTE_FAIL_PROTOCOL,
		          "%s sent more than %u MiB without a usable answer; check remote.api "
		          "and remote.url",
		          call->shown, REMOTE_BODY_MAX >> 20);
		return;
	}
	const char *why = call->errbuf[0] ? call->errbuf : curl_easy_strerror(r);

	if (is_connect_error(r, call->bytes) && !call->status) { /* no status line came */
		int backoff = RETRY_FIRST_MS << call->attempt;
		uint64_t spent = (now_ns() - call->start_ns) / 1000000u;
		if (call->attempt < RETRY_MAX && (long)spent + backoff < call->timeout_ms) {
			call->attempt++;
			c->stats.retries++;
			call->retry_at = now_ns() + (uint64_t)backoff * 1000000u;
			enqueue(call);
			pump(c);
			return;
		}
		fail_call(call, -ECONNREFUSED, REMOTE_FAIL_CONNECT,
		          "cannot connect to %s (%s; %d attempts): is the server running there?",
		          call->shown, why, call->attempt + 1);
		return;
	}
	if (r == CURLE_OPERATION_TIMEDOUT) {
		fail_call(call, -ETIMEDOUT, REMOTE_FAIL_TIMEOUT,
		          "%s did not answer within remote.timeoutMs (%d ms)%s", call->shown,
		          call->timeout_ms,
		          call->bytes ? ": it was still sending" : ": nothing came back");
		return;
	}
	if (is_tls_error(r)) {
		fail_call(
		        call, -EACCES, REMOTE_FAIL_TLS,
		        "TLS verification of %s failed (%s): set remote.caFile to the PEM file of "
		        "the CA that signed the server's certificate",
		        call->shown, why);
		return;
	}
	if (call->feed_error == -ENOMEM || r == CURLE_OUT_OF_MEMORY) {
		fail_call(call, -ENOMEM, REMOTE_FAIL_INTERNAL, "out of memory reading %s",
		          call->shown);
		return;
	}
	if (call->feed_error) {
		fail_call(call, -EPROTO, REMOTE_FAIL_PROTOCOL,
		          "%s sent a reply that is not the %s API's: %s; check remote.api",
		          call->shown, remote_api_name(call->api), call->acc.error);
		return;
	}
	if (r == CURLE_WEIRD_SERVER_REPLY || r == CURLE_UNSUPPORTED_PROTOCOL) {
		fail_call(call, -EPROTO, REMOTE_FAIL_PROTOCOL,
		          "%s did not answer in HTTP (%s): check the host and port in remote.url",
		          call->shown, why);
		return;
	}
	if (r != CURLE_OK) {
		fail_call(call, -EIO, REMOTE_FAIL_DISCONNECT,
		          "%s closed the connection in the middle of an answer (%s)", call->shown,
		          why);
		return;
	}
	if (call->status >= 300 && call->status < 400) { /* redirects are not followed */
		char *to = NULL, *shown_to = NULL;
		curl_easy_getinfo(call->easy, CURLINFO_REDIRECT_URL, &to);
		if (to) shown_to = remote_url_redact(to);
		fail_call(call, -EIO, REMOTE_FAIL_HTTP,
		          "%s answered HTTP %ld, a redirect%s%.300s: set remote.url to the "
		          "server's base URL there (redirects are not followed)",
		          call->shown, call->status, shown_to ? " to " : "",
		          shown_to ? shown_to : "");
		free(shown_to);
		return;
	}
	/* A reply that was not streamed: one JSON document. */
	if (!call->acc.n && !call->acc.error[0]) {
		size_t len;
		const char *all = remote_stream_all(&call->stream, &len);
		int rc = remote_acc_feed(&call->acc, call->api, all, len);
		if (rc) {
			fail_unreadable(call, rc);
			return;
		}
		call->acc.done = true;
	}
	if (call->acc.error[0]) {
		fail_call(call, -EIO, REMOTE_FAIL_HTTP, "%s reported an error: %s", call->shown,
		          call->acc.error);
		return;
	}
	if (!stream_complete(call)) {
		fail_call(call, -EIO, REMOTE_FAIL_DISCONNECT,
		          "%s closed the connection in the middle of an answer (the stream ended "
		          "before its end marker)",
		          call->shown);
		return;
	}
	deliver(call);
}

static void check_done(struct remote_client *c)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(c->multi, &left))) {
		if (m->msg != CURLMSG_DONE) continue;
		struct remote_call *call = NULL;
		CURLcode r = m->data.result;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&call);
		if (call) attempt_done(call, r);
	}
	pump(c);
}

/* ---- answer-by times ------------------------------------------------------- */

/* When call is due on the cut timer (its answer-by or settle time, the
 * earlier); 0: never. */
static uint64_t due_ns(const struct remote_call *call)
{
	uint64_t a = call->answer_by, b = call->settle_by;
	return !a ? b : !b ? a : a < b ? a : b;
}

/* Ends a call whose stream said it is whole but whose body has not ended
 * (its connection is closed, never reused): the answer, not a cut. */
static void settle_call(struct remote_call *call)
{
	call_detach(call);
	curl_easy_cleanup(call->easy);
	call->easy = NULL;
	deliver(call);
}

/* Ends call at its answer-by time: the connection closes (an unfinished
 * transfer is never reused), and done gets what had streamed by then. */
static void cut_call(struct remote_call *call)
{
	struct remote_client *c = call->c;
	if (!call->status) curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &call->status);
	call_detach(call);
	if (call->status >= 400) { /* an error page still coming: the status says it */
		fail_http_status(call);
		return;
	}
	c->stats.cut++;
	struct remote_reply reply = { 0 };
	/* an error reply's body is not choices: nothing streamed */
	if (call->status < 400 && !call->feed_error) remote_acc_take(&call->acc, &reply);
	reply.elapsed_ms = (double)(now_ns() - call->start_ns) / 1e6;
	reply.retries = call->attempt;
	reply.cut = true;
	remote_done_fn done = call->done;
	void *ud = call->ud;
	curl_easy_cleanup(call->easy); /* closed now, before anything else runs */
	call->easy = NULL;
	done(ud, 0, &reply, NULL);
	remote_reply_finish(&reply);
	call_free(call);
}

static void on_cut_timer(uv_timer_t *t)
{
	struct remote_client *c = t->data;
	/* From the head again after each cut: its callback may start or
	 * cancel other calls. A call due within half a millisecond is cut now
	 * rather than a timer turn later. */
	for (;;) {
		uint64_t now = now_ns() + 500000u;
		struct remote_call *call = c->calls;
		while (call && !(due_ns(call) && due_ns(call) <= now)) call = call->next;
		if (!call) break;
		if (call->settle_by && call->settle_by <= now && stream_complete(call) &&
		    call->status < 400 && !call->feed_error && !call->acc.error[0])
			settle_call(call);
		else
			cut_call(call);
	}
	pump(c);
	arm_cut_timer(c);
}

/* Sets the cut timer for the earliest answer-by time of a live call. */
static void arm_cut_timer(struct remote_client *c)
{
	if (c->closing) return;
	uint64_t next = 0;
	for (const struct remote_call *q = c->calls; q; q = q->next)
		if (due_ns(q) && (!next || due_ns(q) < next)) next = due_ns(q);
	if (!next) {
		uv_timer_stop(&c->cut_timer);
		return;
	}
	uint64_t now = now_ns();
	uint64_t ms = next > now ? (next - now + 999999u) / 1000000u : 0;
	uv_timer_start(&c->cut_timer, on_cut_timer, ms, 0);
}

int remote_call_start(struct remote_client *c, const struct remote_endpoint *ep,
                      const struct remote_query *q, remote_done_fn done, void *ud,
                      struct remote_call **out)
{
	if (c->closing) return -ECANCELED;
	if (!ep->url || (strncmp(ep->url, "http://", 7) && strncmp(ep->url, "https://", 8)))
		return -EINVAL;
	struct remote_call *call = calloc(1, sizeof *call);
	if (!call) return -ENOMEM;
	call->c = c;
	call->api = ep->api;
	call->done = done;
	call->ud = ud;
	call->timeout_ms = ep->timeout_ms > 0 ? ep->timeout_ms : 5000;
	call->start_ns = now_ns();
	call->answer_by = q->answer_by_ns;
	/* A token is rarely over 16 bytes; a server that ignores max_tokens is
	 * cut there (the hard cap bounds a huge max_tokens too). */
	call->max_bytes = q->max_tokens > 0 && (size_t)q->max_tokens < REMOTE_CHOICE_MAX_BYTES / 16
	                          ? (size_t)q->max_tokens * 16
	                          : REMOTE_CHOICE_MAX_BYTES;
	call->acc.max_bytes = call->max_bytes;
	size_t ul = strlen(ep->url);
	while (ul && ep->url[ul - 1] == '/') ul--;
	const char *path = remote_api_path(ep->api);
	call->url = malloc(ul + strlen(path) + 1);
	call->shown = remote_url_redact(ep->url);
	call->body = remote_api_body(ep, q);
	call->key_env = ep->key_env ? strdup(ep->key_env) : NULL;
	call->ca_file = ep->ca_file && ep->ca_file[0] ? strdup(ep->ca_file) : NULL;
	bool bad = !call->url || !call->shown || !call->body || (ep->key_env && !call->key_env) ||
	           (ep->ca_file && ep->ca_file[0] && !call->ca_file);
	if (call->url) {
		memcpy(call->url, ep->url, ul);
		strcpy(call->url + ul, path);
	}
	const char *hdr[] = { "Content-Type: application/json",
		              "Accept: text/event-stream, application/x-ndjson, application/json",
		              "Expect:" /* no 100-continue round trip */ };
	for (size_t i = 0; !bad && i < sizeof hdr / sizeof hdr[0]; i++) {
		struct curl_slist *l = curl_slist_append(call->headers, hdr[i]);
		if (!l)
			bad = true;
		else
			call->headers = l;
	}
	if (ep->api_key && strpbrk(ep->api_key, "\r\n")) { /* no header injection */
		free(call->url), free(call->shown), free(call->body), free(call->key_env),
		        free(call->ca_file);
		curl_slist_free_all(call->headers);
		free(call);
		return -EINVAL;
	}
	if (!bad && ep->api_key && ep->api_key[0]) {
		size_t n = strlen(ep->api_key) + 32;
		char *h = malloc(n);
		struct curl_slist *l = NULL;
		if (h) {
			snprintf(h, n, "Authorization: Bearer %s", ep->api_key);
			l = curl_slist_append(call->headers, h);
			memset(h, 0, n); /* the key lives on in the header list only */
			free(h);
		}
		if (!l)
			bad = true;
		else
			call->headers = l;
		call->has_key = true;
	}
	call->next = c->calls;
	if (c->calls) c->calls->prev = call;
	c->calls = call;
	if (bad) {
		call_free(call);
		return -ENOMEM;
	}
	c->stats.calls++;
	enqueue(call);
	/* started from a timer, not here: the callback must never run inside
	 * this call, and starting it now could fail it synchronously */
	uv_timer_start(&c->retry_timer, on_retry_timer, 0, 0);
	if (call->answer_by) arm_cut_timer(c);
	*out = call;
	return 0;
}

void remote_call_cancel(struct remote_client *c, struct remote_call *call)
{
	if (!call) return;
	c->stats.cancelled++;
	call_free(call); /* removes the handle, closes its connection */
	pump(c);
}

void remote_client_set_max_concurrent(struct remote_client *c, int max_concurrent)
{
	if (max_concurrent < 1) max_concurrent = 1;
	if (max_concurrent > 64) max_concurrent = 64;
	c->max_concurrent = max_concurrent;
	pump(c);
}

void remote_client_close(struct remote_client *c, void (*done)(void *ud), void *ud)
{
	c->closing = true;
	c->close_done = done;
	c->close_ud = ud;
	while (c->calls) {
		c->stats.cancelled++;
		call_free(c->calls);
	}
	curl_multi_cleanup(c->multi); /* closes its sockets: their polls close (on_socket) */
	c->multi = NULL;
	while (c->socks) sock_close(c, c->socks); /* any curl did not report */
	uv_close((uv_handle_t *)&c->timer, handle_closed);
	uv_close((uv_handle_t *)&c->retry_timer, handle_closed);
	uv_close((uv_handle_t *)&c->cut_timer, handle_closed);
}

void remote_client_free(struct remote_client *c)
{
	if (!c) return;
	if (c->multi) { /* never closed: no handle was ever run by the loop */
		while (c->calls) call_free(c->calls);
		curl_multi_cleanup(c->multi);
	}
	free(c);
}
