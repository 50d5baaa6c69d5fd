/* test_dispatch.c - the server without a process: bytes in through
 * server_feed, framed messages out through the write callback, checked as
 * JSON. Covers the lifecycle rules, error codes, cancellation and that
 * closing the server leaves no libuv handle behind. */
#include "frame.h"
#include "server.h"
#include "server_priv.h"

#include "harness.h"

struct out {
	json_t *msgs; /* array of everything the server sent */
	struct rpc_frame_reader *reader;
	int exit_status; /* -1 until the exit callback */
};

static bool out_frame(void *ud, const char *body, size_t len)
{
	struct out *o = ud;
	json_t *m = json_loadb(body, len, 0, NULL);
	if (m) json_array_append_new(o->msgs, m);
	return true;
}

static int io_write(void *ud, const char *data, size_t len)
{
	struct out *o = ud;
	return rpc_frame_reader_feed(o->reader, data, len);
}

static void io_exit(void *ud, int status)
{
	struct out *o = ud;
	o->exit_status = status;
}

struct fixture {
	uv_loop_t loop;
	struct log *log;
	struct out out;
	struct server *s;
};

static void fixture_init(struct fixture *f, const char *flags_json)
{
	uv_loop_init(&f->loop);
	f->log = log_new();
	log_set_level(f->log, LOG_LEVEL_ERROR);
	f->out.msgs = json_array();
	f->out.reader = rpc_frame_reader_new(1 << 26, out_frame, NULL, &f->out);
	f->out.exit_status = -1;
	json_t *flags = flags_json ? json_loads(flags_json, 0, NULL) : NULL;
	struct server_options opts = { .flags = flags, .user_config = "", .log_level_fixed = true };
	struct server_io io = { .write = io_write, .exit = io_exit, .ud = &f->out };
	f->s = server_new(&f->loop, f->log, &opts, &io);
	json_decref(flags);
}

static void closed(void *ud)
{
	*(int *)ud = 1;
}

/* Closes everything; returns uv_loop_close's result (0: no handle leaked). */
static int fixture_finish(struct fixture *f)
{
	int done = 0;
	server_close(f->s, closed, &done);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	server_free(f->s);
	int rc = uv_loop_close(&f->loop);
	rpc_frame_reader_free(f->out.reader);
	json_decref(f->out.msgs);
	log_free(f->log);
	return done && !rc ? 0 : -1;
}

static void send_json(struct fixture *f, const char *json)
{
	char header[64];
	size_t h = rpc_frame_header(header, strlen(json));
	server_feed(f->s, header, h);
	server_feed(f->s, json, strlen(json));
}

static void spin(struct fixture *f)
{
	for (int i = 0; i < 5; i++) uv_run(&f->loop, UV_RUN_NOWAIT);
}

/* The response to id, or NULL (borrowed from the output array). */
static json_t *response(struct fixture *f, json_int_t id)
{
	size_t i;
	json_t *m;
	json_array_foreach(f->out.msgs, i, m)
	{
		json_t *mid = json_object_get(m, "id");
		if (json_is_integer(mid) && json_integer_value(mid) == id &&
		    !json_object_get(m, "method"))
			return m;
	}
	return NULL;
}

static int count_responses(struct fixture *f, json_int_t id)
{
	int n = 0;
	size_t i;
	json_t *m;
	json_array_foreach(f->out.msgs, i, m)
	{
		json_t *mid = json_object_get(m, "id");
		n += json_is_integer(mid) && json_integer_value(mid) == id &&
		     !json_object_get(m, "method");
	}
	return n;
}

static json_int_t error_code(json_t *m)
{
	return json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

#define INIT                                                                                       \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"capabilities\":{}}" \
	"}"

TEST(lifecycle)
{
	struct fixture f;
	fixture_init(&f, NULL);
	REQUIRE(f.s != NULL);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"infill/stats\"}");
	CHECK_INT_EQ(error_code(response(&f, 9)), -32002);
	send_json(&f, INIT);
	json_t *caps = json_object_get(json_object_get(response(&f, 1), "result"), "capabilities");
	CHECK_STR_EQ(json_string_value(json_object_get(caps, "positionEncoding")), "utf-16");
	CHECK(json_object_get(caps, "inlineCompletionProvider") != NULL);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\",\"params\":{}}");
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"shutdown\"}");
	CHECK(json_is_null(json_object_get(response(&f, 2), "result")));
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"infill/stats\"}");
	CHECK_INT_EQ(error_code(response(&f, 3)), -32600);
	CHECK_INT_EQ(f.out.exit_status, -1);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
	CHECK_INT_EQ(f.out.exit_status, 0);
	CHECK(server_finished(f.s));
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"infill/stats\"}");
	CHECK(response(&f, 4) == NULL); /* nothing after exit */
	CHECK_INT_EQ(fixture_finish(&f), 0);
}

TEST(exit_status_without_shutdown)
{
	struct fixture f;
	fixture_init(&f, NULL);
	send_json(&f, INIT);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
	CHECK_INT_EQ(f.out.exit_status, 1);
	CHECK_INT_EQ(fixture_finish(&f), 0);

	fixture_init(&f, NULL);
	send_json(&f, INIT);
	server_input_closed(f.s, 0);
	CHECK_INT_EQ(f.out.exit_status, 1);
	CHECK_INT_EQ(fixture_finish(&f), 0);
}

TEST(error_codes)
{
	struct fixture f;
	fixture_init(&f, NULL);
	send_json(&f, INIT);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}");
	CHECK_INT_EQ(error_code(response(&f, 2)), -32601);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"textDocument/"
	              "completion\",\"params\":{}}");
	CHECK_INT_EQ(error_code(response(&f, 3)), -32602);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{}}");
	CHECK_INT_EQ(error_code(response(&f, 4)), -32600);
	send_json(&f, "{\"id\":5,\"method\":\"x\"}");
	CHECK_INT_EQ(error_code(response(&f, 5)), -32600);
	size_t before = json_array_size(f.out.msgs);
	send_json(&f, "{nope");
	CHECK_INT_EQ(json_array_size(f.out.msgs), before + 1);
	json_t *last = json_array_get(f.out.msgs, before);
	CHECK_INT_EQ(error_code(last), -32700);
	CHECK(json_is_null(json_object_get(last, "id")));
	CHECK_INT_EQ(fixture_finish(&f), 0);
}

#define OPEN                                                                                     \
	"{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":{\"textDocument\":" \
	"{\"uri\":\"file:///a.c\",\"languageId\":\"c\",\"version\":1,\"text\":\"int x;\\n\"}}}"

TEST(cancel_and_supersede)
{
	struct fixture f;
	fixture_init(&f, "{\"completion.debounceMs\": 10000}");
	send_json(&f, INIT);
	send_json(&f, OPEN);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"textDocument/inlineCompletion\","
	              "\"params\":{\"textDocument\":{\"uri\":\"file:///"
	              "a.c\"},\"position\":{\"line\":0,\"character\":3}}}");
	spin(&f);
	CHECK(response(&f, 10) == NULL); /* waiting out the debounce */
	send_json(&f,
	          "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":10}}");
	CHECK_INT_EQ(error_code(response(&f, 10)), -32800);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"textDocument/completion\","
	              "\"params\":{\"textDocument\":{\"uri\":\"file:///"
	              "a.c\"},\"position\":{\"line\":0,\"character\":3}}}");
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"textDocument/completion\","
	              "\"params\":{\"textDocument\":{\"uri\":\"file:///"
	              "a.c\"},\"position\":{\"line\":0,\"character\":4}}}");
	json_t *r = response(&f, 11);
	CHECK(r && json_array_size(json_object_get(json_object_get(r, "result"), "items")) == 0);
	CHECK(response(&f, 12) == NULL);
	send_json(&f,
	          "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":10}}");
	CHECK_INT_EQ(count_responses(&f, 10), 1);
	/* closing the server drops request 12 without an answer, and frees it */
	CHECK_INT_EQ(fixture_finish(&f), 0);
}

TEST(completion_answers_after_debounce)
{
	struct fixture f;
	fixture_init(&f, "{\"completion.debounceMs\": 0}");
	send_json(&f, INIT);
	send_json(&f, OPEN);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"textDocument/inlineCompletion\","
	              "\"params\":{\"textDocument\":{\"uri\":\"file:///"
	              "a.c\"},\"position\":{\"line\":0,\"character\":3}}}");
	for (int i = 0; i < 100 && !response(&f, 20); i++) uv_run(&f.loop, UV_RUN_ONCE);
	json_t *r = response(&f, 20);
	CHECK(r && json_is_array(json_object_get(json_object_get(r, "result"), "items")));
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"infill/stats\"}");
	json_t *st = json_object_get(response(&f, 21), "result");
	CHECK_INT_EQ(json_integer_value(json_object_get(st, "requests")), 1);
	CHECK_INT_EQ(
	        json_integer_value(json_object_get(json_object_get(st, "latencyMs"), "samples")),
	        1);
	CHECK_INT_EQ(fixture_finish(&f), 0);
}

TEST(completion_text_cut_inside_a_character_is_answered_up_to_it)
{
	struct fixture f;
	fixture_init(&f, "{\"completion.debounceMs\": 0}");
	send_json(&f, INIT);
	send_json(&f,
	          "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":{"
	          "\"textDocument\":{\"uri\":\"file:///b.c\",\"languageId\":\"c\",\"version\":1,"
	          "\"text\":\"// @answer-cut-utf8\\nint x\"}}}");
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":30,\"method\":\"textDocument/inlineCompletion\","
	              "\"params\":{\"textDocument\":{\"uri\":\"file:///"
	              "b.c\"},\"position\":{\"line\":1,\"character\":5}}}");
	for (int i = 0; i < 100 && !response(&f, 30); i++) uv_run(&f.loop, UV_RUN_ONCE);
	json_t *items = json_object_get(json_object_get(response(&f, 30), "result"), "items");
	/* the whole characters of the text, not no item at all */
	CHECK_INT_EQ(json_array_size(items), 1);
	CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(items, 0), "insertText")),
	             "ok ");
	CHECK_INT_EQ(fixture_finish(&f), 0);
}

TEST(did_change_in_order)
{
	struct fixture f;
	fixture_init(&f, NULL);
	send_json(&f, INIT);
	send_json(&f, OPEN);
	send_json(&f,
	          "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{"
	          "\"textDocument\":{\"uri\":\"file:///a.c\",\"version\":2},\"contentChanges\":["
	          "{\"range\":{\"start\":{\"line\":0,\"character\":4},\"end\":{\"line\":0,"
	          "\"character\":5}},\"text\":\"yy\"},"
	          "{\"range\":{\"start\":{\"line\":0,\"character\":0},\"end\":{\"line\":0,"
	          "\"character\":3}},\"text\":\"long\"},"
	          "{\"range\":{\"start\":{\"line\":1,\"character\":0},\"end\":{\"line\":1,"
	          "\"character\":0}},\"text\":\"// end\"}]}}");
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"infill/document\",\"params\":"
	              "{\"textDocument\":{\"uri\":\"file:///a.c\"}}}");
	json_t *d = json_object_get(response(&f, 5), "result");
	CHECK_STR_EQ(json_string_value(json_object_get(d, "text")), "long yy;\n// end");
	CHECK_INT_EQ(json_integer_value(json_object_get(d, "version")), 2);
	CHECK_INT_EQ(fixture_finish(&f), 0);
}

/* The index in the output of the first message with this method, or -1. */
static int find_method(struct fixture *f, const char *method, size_t from)
{
	for (size_t i = from; i < json_array_size(f->out.msgs); i++) {
		const char *m = json_string_value(
		        json_object_get(json_array_get(f->out.msgs, i), "method"));
		if (m && !strcmp(m, method)) return (int)i;
	}
	return -1;
}

TEST(progress_and_client_responses)
{
	struct fixture f;
	fixture_init(&f, NULL);
	/* no window.workDoneProgress: nothing is sent */
	send_json(&f, INIT);
	CHECK(server_progress_begin(f.s, "Loading", NULL) == NULL);
	CHECK_INT_EQ(fixture_finish(&f), 0);

	fixture_init(&f, NULL);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
	              "{\"capabilities\":{\"window\":{\"workDoneProgress\":true}}}}");
	char *token = server_progress_begin(f.s, "Loading model", "mapping");
	REQUIRE(token != NULL);
	int create = find_method(&f, "window/workDoneProgress/create", 0);
	int begin = find_method(&f, "$/progress", 0);
	CHECK(create >= 0 && begin > create); /* the token exists before it is used */
	json_t *req = json_array_get(f.out.msgs, (size_t)create);
	CHECK_STR_EQ(json_string_value(json_object_get(json_object_get(req, "params"), "token")),
	             token);
	/* the client's answer is matched by id; an unknown id is only logged */
	char answer[128];
	snprintf(answer, sizeof answer, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":null}",
	         (long long)json_integer_value(json_object_get(req, "id")));
	send_json(&f, answer);
	send_json(&f, "{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":null}");
	server_progress_report(f.s, token, "layer 3", 50);
	server_progress_end(f.s, token, "ready");
	int report = find_method(&f, "$/progress", (size_t)begin + 1);
	int end = report >= 0 ? find_method(&f, "$/progress", (size_t)report + 1) : -1;
	REQUIRE(report > 0 && end > report);
	json_t *v = json_object_get(
	        json_object_get(json_array_get(f.out.msgs, (size_t)report), "params"), "value");
	CHECK_STR_EQ(json_string_value(json_object_get(v, "kind")), "report");
	CHECK_INT_EQ(json_integer_value(json_object_get(v, "percentage")), 50);
	v = json_object_get(json_object_get(json_array_get(f.out.msgs, (size_t)end), "params"),
	                    "value");
	CHECK_STR_EQ(json_string_value(json_object_get(v, "kind")), "end");
	CHECK_INT_EQ(fixture_finish(&f), 0);
}

TEST_MAIN()
