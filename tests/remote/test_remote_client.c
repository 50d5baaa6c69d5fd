/* test_remote_client.c - remote/'s client on a libuv loop against a bare
 * socket this test serves itself (127.0.0.1), for the two things only the
 * socket can show (what the remote backend promises):
 *   - remote_call_cancel closes the connection before it returns: the
 *     server reads the end of the stream with the loop not run again (a
 *     superseded request's stream is closed within the loop turn that
 *     superseded it);
 *   - a call past its answer-by time (completion.deadlineMs) ends with what
 *     had streamed, its connection closed, while the server still holds the
 *     stream open.
 * The rest of the client (faults, retries, TLS) is tested end to end in
 * remote_test.py. */
#include "remote.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

struct server {
	int lfd, fd;
	char url[64];
};

static int server_open(struct server *s)
{
	s->fd = -1;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (s->lfd < 0) return -errno;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) || listen(s->lfd, 4) ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &al))
		return -errno;
	fcntl(s->lfd, F_SETFL, O_NONBLOCK);
	snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", ntohs(a.sin_port));
	return 0;
}

static void server_close(struct server *s)
{
	if (s->fd >= 0) close(s->fd);
	close(s->lfd);
}

/* Runs the loop until the server has accepted the call's connection and
 * read its whole request (the JSON body ends in '}'), then answers with
 * the headers and one streamed chunk of text "tot", and runs the loop a
 * little more so that the client reads it. 0, or -1 after 10 s. */
static int serve_one_chunk(uv_loop_t *loop, struct server *s)
{
	char req[8192];
	size_t got = 0;
	for (int spins = 0; spins < 10000; spins++) {
		uv_run(loop, UV_RUN_NOWAIT);
		if (s->fd < 0) s->fd = accept(s->lfd, NULL, NULL);
		if (s->fd >= 0) {
			struct pollfd pf = { s->fd, POLLIN, 0 };
			if (poll(&pf, 1, 0) == 1) {
				ssize_t n = recv(s->fd, req + got, sizeof req - 1 - got, 0);
				if (n > 0) got += (size_t)n;
				req[got] = 0;
				char *body = strstr(req, "\r\n\r\n");
				if (body && got && req[got - 1] == '}') break;
			}
		}
		usleep(1000);
	}
	if (s->fd < 0 || !got) return -1;
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	                             "Transfer-Encoding: chunked\r\n\r\n";
	static const char chunk[] =
	        "data: {\"choices\":[{\"index\":0,\"text\":\"tot\",\"finish_reason\":null}]}\n\n";
	char buf[512];
	int n = snprintf(buf, sizeof buf, "%s%zx\r\n%s\r\n", answer, strlen(chunk), chunk);
	if (send(s->fd, buf, (size_t)n, MSG_NOSIGNAL) != n) return -1;
	for (int i = 0; i < 50; i++) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
	return 0;
}

/* Whether the server's side reads the end of the stream within ms (the
 * loop is not run meanwhile). */
static bool server_sees_close(struct server *s, int ms)
{
	struct pollfd pf = { s->fd, POLLIN, 0 };
	if (poll(&pf, 1, ms) != 1) return false;
	char b[256];
	ssize_t n;
	while ((n = recv(s->fd, b, sizeof b, MSG_DONTWAIT)) > 0) {
	}
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

struct outcome {
	bool done;
	int status;
	bool cut;
	char text[64];
	double elapsed_ms;
};

static void on_done(void *ud, int status, struct remote_reply *reply,
                    const struct remote_failure *f)
{
	(void)f;
	struct outcome *o = ud;
	o->done = true;
	o->status = status;
	if (status) return;
	o->cut = reply->cut;
	o->elapsed_ms = reply->elapsed_ms;
	if (reply->n) snprintf(o->text, sizeof o->text, "%s", reply->choices[0].text);
}

static void closed(void *ud)
{
	*(bool *)ud = true;
}

static void client_finish(uv_loop_t *loop, struct remote_client *c)
{
	bool is_closed = false;
	remote_client_close(c, closed, &is_closed);
	while (!is_closed) uv_run(loop, UV_RUN_ONCE);
	remote_client_free(c);
	uv_run(loop, UV_RUN_DEFAULT);
}

static const struct remote_query query = {
	.prompt = "<fim>", .prompt_len = 5, .n = 1, .max_tokens = 8, .top_p = 1
};

TEST(cancel_closes_the_connection_before_it_returns)
{
	uv_loop_t loop;
	REQUIRE(uv_loop_init(&loop) == 0);
	struct server s;
	REQUIRE(server_open(&s) == 0);
	struct remote_client *c = remote_client_new(&loop, 2);
	REQUIRE(c);
	struct remote_endpoint ep = { .url = s.url, .api = REMOTE_API_OPENAI, .timeout_ms = 20000 };
	struct outcome o = { 0 };
	struct remote_call *call;
	REQUIRE(remote_call_start(c, &ep, &query, on_done, &o, &call) == 0);
	REQUIRE(serve_one_chunk(&loop, &s) == 0);
	CHECK(!o.done);                     /* streaming: no end yet */
	CHECK(!server_sees_close(&s, 0));   /* the connection is open */
	remote_call_cancel(c, call);        /* and no loop turn after it: */
	CHECK(server_sees_close(&s, 1000)); /* closed by the cancel itself */
	uv_run(&loop, UV_RUN_NOWAIT);
	CHECK(!o.done); /* a cancelled call's callback never runs */
	struct remote_client_stats st;
	remote_client_get_stats(c, &st);
	CHECK_INT_EQ(st.cancelled, 1);
	client_finish(&loop, c);
	server_close(&s);
	CHECK(uv_loop_close(&loop) == 0);
}

TEST(answer_by_time_ends_the_call_with_what_streamed)
{
	uv_loop_t loop;
	REQUIRE(uv_loop_init(&loop) == 0);
	struct server s;
	REQUIRE(server_open(&s) == 0);
	struct remote_client *c = remote_client_new(&loop, 2);
	REQUIRE(c);
	struct remote_endpoint ep = { .url = s.url, .api = REMOTE_API_OPENAI, .timeout_ms = 20000 };
	struct remote_query q = query;
	/* late enough for the chunk to arrive even on a loaded machine */
	q.answer_by_ns = uv_hrtime() + 1500u * 1000000u;
	struct outcome o = { 0 };
	struct remote_call *call;
	REQUIRE(remote_call_start(c, &ep, &q, on_done, &o, &call) == 0);
	REQUIRE(serve_one_chunk(&loop, &s) == 0);
	CHECK(!o.done);
	/* the server holds the stream open (no end marker, no close): the
	 * answer-by time ends it, well before remote.timeoutMs (20 s) */
	uint64_t t0 = uv_hrtime();
	while (!o.done && uv_hrtime() - t0 < 10000000000ull) uv_run(&loop, UV_RUN_ONCE);
	REQUIRE(o.done);
	CHECK_INT_EQ(o.status, 0);
	CHECK(o.cut);
	CHECK_STR_EQ(o.text, "tot");
	CHECK(o.elapsed_ms >= 1400 && o.elapsed_ms < 8000);
	CHECK(server_sees_close(&s, 1000));
	struct remote_client_stats st;
	remote_client_get_stats(c, &st);
	CHECK_INT_EQ(st.cut, 1);
	CHECK_INT_EQ(st.failures, 0);
	client_finish(&loop, c);
	server_close(&s);
	CHECK(uv_loop_close(&loop) == 0);
}

int main(void)
{
	return test_run_all();
}
