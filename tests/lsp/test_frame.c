/* test_frame.c - the Content-Length frame reader: splits, batches, headers,
 * garbage, oversized and truncated frames. */
#include "frame.h"

#include "harness.h"

struct got {
	char bodies[64][256];
	size_t nbodies;
	int errors[16]; /* count per enum rpc_frame_error */
	int stop_after; /* return false after this many frames (0: never) */
};

static bool on_frame(void *ud, const char *body, size_t len)
{
	struct got *g = ud;
	if (g->nbodies < 64) {
		size_t n = len < 255 ? len : 255;
		memcpy(g->bodies[g->nbodies], body, n);
		g->bodies[g->nbodies][n] = 0;
	}
	g->nbodies++;
	return !(g->stop_after && g->nbodies == (size_t)g->stop_after);
}

static void on_error(void *ud, enum rpc_frame_error err, const char *detail)
{
	struct got *g = ud;
	(void)detail;
	g->errors[err]++;
}

static struct rpc_frame_reader *reader(struct got *g, size_t max)
{
	memset(g, 0, sizeof *g);
	return rpc_frame_reader_new(max, on_frame, on_error, g);
}

static void feed(struct rpc_frame_reader *r, const char *s)
{
	rpc_frame_reader_feed(r, s, strlen(s));
}

#define F1 "Content-Length: 7\r\n\r\n{\"a\":1}"
#define F2 "Content-Length: 2\r\n\r\n[]"

TEST(one_frame)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	feed(r, F1);
	CHECK_INT_EQ(g.nbodies, 1);
	CHECK_STR_EQ(g.bodies[0], "{\"a\":1}");
	CHECK_INT_EQ(rpc_frame_reader_pending(r), 0);
	rpc_frame_reader_free(r);
}

TEST(split_at_every_byte)
{
	const char *s = F1 F2 F1;
	size_t n = strlen(s);
	for (size_t cut1 = 0; cut1 <= n; cut1++) {
		for (size_t cut2 = cut1; cut2 <= n; cut2 += 3) {
			struct got g;
			struct rpc_frame_reader *r = reader(&g, 1 << 20);
			rpc_frame_reader_feed(r, s, cut1);
			rpc_frame_reader_feed(r, s + cut1, cut2 - cut1);
			rpc_frame_reader_feed(r, s + cut2, n - cut2);
			CHECK_INT_EQ(g.nbodies, 3);
			CHECK_STR_EQ(g.bodies[1], "[]");
			CHECK_STR_EQ(g.bodies[2], "{\"a\":1}");
			CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_GARBAGE], 0);
			rpc_frame_reader_free(r);
		}
	}
}

TEST(byte_by_byte)
{
	const char *s = F1 F2;
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	for (size_t i = 0; s[i]; i++) rpc_frame_reader_feed(r, s + i, 1);
	CHECK_INT_EQ(g.nbodies, 2);
	rpc_frame_reader_free(r);
}

TEST(content_type_case_and_lf)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	feed(r, "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
	        "content-LENGTH:2\r\n\r\n{}");
	feed(r, "Content-Length: 2\n\n[]");            /* bare LF line ends */
	feed(r, "\r\nContent-Length:  2  \r\n\r\n{}"); /* blank line between frames */
	CHECK_INT_EQ(g.nbodies, 3);
	CHECK_STR_EQ(g.bodies[1], "[]");
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_GARBAGE], 0);
	rpc_frame_reader_free(r);
}

TEST(garbage_then_frame)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	feed(r, "hello\r\nworld\r\n{\"x\": 1}\r\n" F1);
	CHECK_INT_EQ(g.nbodies, 1);
	CHECK_STR_EQ(g.bodies[0], "{\"a\":1}");
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_GARBAGE], 1); /* once per run */
	rpc_frame_reader_free(r);
}

TEST(no_length_and_bad_length)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	feed(r, "X-Thing: 1\r\n\r\n" F1);
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_NO_LENGTH], 1);
	feed(r, "Content-Length: 12x\r\n\r\n{\"b\":2}\r\n" F2);
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_BAD_LENGTH], 1);
	CHECK_INT_EQ(g.nbodies, 2);
	CHECK_STR_EQ(g.bodies[1], "[]");
	rpc_frame_reader_free(r);
}

TEST(oversized_skipped)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 8);
	feed(r, "Content-Length: 20\r\n\r\n");
	feed(r, "0123456789");
	feed(r, "0123456789" F2);
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_OVERSIZED], 1);
	CHECK_INT_EQ(g.nbodies, 1);
	CHECK_STR_EQ(g.bodies[0], "[]");
	rpc_frame_reader_set_max(r, 100);
	feed(r, "Content-Length: 20\r\n\r\n01234567890123456789");
	CHECK_INT_EQ(g.nbodies, 2);
	rpc_frame_reader_free(r);
}

TEST(huge_length_then_frame)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	feed(r, "Content-Length: 999999999999999\r\n\r\n");
	feed(r, "Content-Len");
	feed(r, "gth: 7\r\n\r\n{\"a\":1}");
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_OVERSIZED], 1);
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_TRUNCATED], 1);
	CHECK_INT_EQ(g.nbodies, 1);
	CHECK_STR_EQ(g.bodies[0], "{\"a\":1}");
	rpc_frame_reader_free(r);
}

TEST(truncated_body_recovers)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	feed(r, "Content-Length: 300\r\n\r\n{\"jsonrpc\": \"2.0\", \"id");
	feed(r, F1);
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_TRUNCATED], 1);
	CHECK_INT_EQ(g.nbodies, 1);
	CHECK_STR_EQ(g.bodies[0], "{\"a\":1}");
	/* "Content-Length" inside a JSON string (escaped line break) is not a header */
	const char *tricky = "{\"s\":\"Content-Length: 5\\r\\n\\r\\nab\"}";
	char header[64];
	rpc_frame_reader_feed(r, header, rpc_frame_header(header, strlen(tricky)));
	feed(r, tricky);
	CHECK_INT_EQ(g.nbodies, 2);
	CHECK_STR_EQ(g.bodies[1], "{\"s\":\"Content-Length: 5\\r\\n\\r\\nab\"}");
	rpc_frame_reader_free(r);
}

TEST(stop_and_resume)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	g.stop_after = 1;
	feed(r, F1 F2 F1);
	CHECK_INT_EQ(g.nbodies, 1);
	CHECK(rpc_frame_reader_pending(r) > 0);
	g.stop_after = 0;
	rpc_frame_reader_resume(r);
	CHECK_INT_EQ(g.nbodies, 3);
	CHECK_INT_EQ(rpc_frame_reader_pending(r), 0);
	rpc_frame_reader_free(r);
}

TEST(large_body_in_pieces)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 24);
	size_t n = 3 << 20;
	char *body = malloc(n);
	memset(body, 'a', n);
	body[0] = '"';
	body[n - 1] = '"';
	char header[64];
	size_t h = rpc_frame_header(header, n);
	rpc_frame_reader_feed(r, header, h);
	for (size_t off = 0; off < n; off += 65536)
		rpc_frame_reader_feed(r, body + off, n - off < 65536 ? n - off : 65536);
	CHECK_INT_EQ(g.nbodies, 1);
	CHECK_INT_EQ(rpc_frame_reader_pending(r), 0);
	free(body);
	rpc_frame_reader_free(r);
}

TEST(header_writer)
{
	char buf[64];
	size_t n = rpc_frame_header(buf, 1234);
	CHECK_INT_EQ(n, strlen("Content-Length: 1234\r\n\r\n"));
	CHECK(!memcmp(buf, "Content-Length: 1234\r\n\r\n", n));
}

/* Resynchronising: a header that starts mid-line is found there. Each of
 * these left the old reader deaf to every later message. */
TEST(resync_stray_bytes_before_header)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	feed(r, "xyz" F1);
	feed(r, F2);
	CHECK_INT_EQ(g.nbodies, 2);
	CHECK_STR_EQ(g.bodies[0], "{\"a\":1}");
	CHECK_STR_EQ(g.bodies[1], "[]");
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_RESYNC], 1);
	rpc_frame_reader_free(r);
}

TEST(resync_length_one_short)
{
	/* a body of 8 bytes declared as 7 (characters counted, not bytes) */
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	feed(r, "Content-Length: 7\r\n\r\n{\"a\":12}" F2 F1);
	CHECK_INT_EQ(g.nbodies, 3); /* the first, cut a byte short, then both */
	CHECK_STR_EQ(g.bodies[1], "[]");
	CHECK_STR_EQ(g.bodies[2], "{\"a\":1}");
	CHECK_INT_EQ(g.errors[RPC_FRAME_ERROR_RESYNC], 1);
	rpc_frame_reader_free(r);
}

TEST(resync_after_bad_lengths)
{
	const char *bad[] = { "Content-Length: abc\r\n\r\n{\"x\":1}",
		              "Content-Length: 18446744073709551615\r\n\r\n{\"x\":1}",
		              "Content-Length: -5\r\n\r\n{\"x\":1}" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct got g;
		struct rpc_frame_reader *r = reader(&g, 1 << 20);
		feed(r, bad[i]);
		feed(r, F1);
		feed(r, F2);
		CHECK_INT_EQ(g.nbodies, 2);
		CHECK_STR_EQ(g.bodies[0], "{\"a\":1}");
		CHECK_STR_EQ(g.bodies[1], "[]");
		rpc_frame_reader_free(r);
	}
}

TEST(resync_after_long_garbage_without_newline)
{
	struct got g;
	struct rpc_frame_reader *r = reader(&g, 1 << 20);
	char junk[20000];
	memset(junk, 'q', sizeof junk);
	rpc_frame_reader_feed(r, junk, sizeof junk);
	feed(r, "Content-Len"); /* split inside the header */
	rpc_frame_reader_feed(r, junk, 100);
	feed(r, F1);
	CHECK_INT_EQ(g.nbodies, 1);
	CHECK_STR_EQ(g.bodies[0], "{\"a\":1}");
	CHECK(rpc_frame_reader_pending(r) == 0);
	rpc_frame_reader_free(r);
}

TEST_MAIN()
