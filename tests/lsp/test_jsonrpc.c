/* test_jsonrpc.c - parsing and classifying JSON-RPC 2.0 messages. */
#include "jsonfix.h"
#include "jsonrpc.h"

#include "harness.h"

static int parse(const char *s, struct rpc_message *m, json_t **bad)
{
	char why[200];
	return rpc_message_parse(s, strlen(s), m, bad, why, sizeof why);
}

TEST(kinds)
{
	struct rpc_message m;
	json_t *bad;
	CHECK_INT_EQ(
	        parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":{}}", &m, &bad),
	        0);
	CHECK_INT_EQ(m.kind, RPC_KIND_REQUEST);
	CHECK_STR_EQ(m.method, "a");
	CHECK(json_is_object(m.params));
	json_decref(m.root);
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", &m, &bad), 0);
	CHECK_INT_EQ(m.kind, RPC_KIND_NOTIFICATION);
	CHECK(m.params == NULL);
	json_decref(m.root);
	/* eglot's shutdown: null params are absent params, not an invalid request */
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"shutdown\",\"params\":null}",
	                   &m, &bad),
	             0);
	CHECK_INT_EQ(m.kind, RPC_KIND_REQUEST);
	CHECK(m.params == NULL);
	json_decref(m.root);
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":null}", &m, &bad), 0);
	CHECK_INT_EQ(m.kind, RPC_KIND_RESPONSE);
	json_decref(m.root);
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":1}}", &m, &bad), 0);
	CHECK_INT_EQ(m.kind, RPC_KIND_RESPONSE);
	CHECK(m.error != NULL);
	json_decref(m.root);
}

TEST(errors)
{
	struct rpc_message m;
	json_t *bad;
	CHECK_INT_EQ(parse("{", &m, &bad), RPC_ERROR_PARSE_ERROR);
	CHECK(bad == NULL);
	/* invalid UTF-8 is repaired (one bad byte must not cost the message), so
	 * this is a message, and not a valid one */
	CHECK_INT_EQ(parse("{\"a\":\"\xff\"}", &m, &bad), RPC_ERROR_INVALID_REQUEST);
	CHECK_INT_EQ(parse("{\"a\":\"\xff\"", &m, &bad), RPC_ERROR_PARSE_ERROR);
	CHECK_INT_EQ(parse("[]", &m, &bad), RPC_ERROR_INVALID_REQUEST);
	CHECK_INT_EQ(parse("3", &m, &bad), RPC_ERROR_INVALID_REQUEST);
	CHECK_INT_EQ(parse("{\"id\":4,\"method\":\"a\"}", &m, &bad), RPC_ERROR_INVALID_REQUEST);
	CHECK(json_integer_value(bad) == 4); /* the id survives for the error */
	json_decref(bad);
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"a\"}", &m, &bad),
	             RPC_ERROR_INVALID_REQUEST);
	CHECK(bad == NULL);
	CHECK_INT_EQ(
	        parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":1}", &m, &bad),
	        RPC_ERROR_INVALID_REQUEST);
	json_decref(bad);
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}", &m, &bad),
	             RPC_ERROR_INVALID_REQUEST);
	json_decref(bad);
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"a\"}", &m, &bad),
	             RPC_ERROR_INVALID_REQUEST);
	json_decref(bad);
}

TEST(nul_in_strings)
{
	struct rpc_message m;
	json_t *bad;
	const char s[] = "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"t\":\"a\\u0000b\"}}";
	CHECK_INT_EQ(parse(s, &m, &bad), 0);
	CHECK_INT_EQ(json_string_length(json_object_get(m.params, "t")), 3);
	json_decref(m.root);
}

TEST(builders)
{
	json_t *id = json_integer(5);
	json_t *r = rpc_response_new(id, NULL);
	CHECK(json_is_null(json_object_get(r, "result")));
	CHECK(json_integer_value(json_object_get(r, "id")) == 5);
	json_decref(r);
	r = rpc_error_response_new(NULL, RPC_ERROR_REQUEST_CANCELLED, NULL);
	CHECK(json_is_null(json_object_get(r, "id")));
	CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
	             -32800);
	CHECK_STR_EQ(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
	             "Request cancelled");
	json_decref(r);
	json_t *s = json_string("5");
	CHECK(!rpc_id_equal(id, s));
	json_t *id2 = json_integer(5);
	CHECK(rpc_id_equal(id, id2));
	json_decref(s);
	json_decref(id);
	json_decref(id2);
	CHECK_STR_EQ(rpc_error_message(-32002), "Server not initialized");
}

/* One bad spot costs the spot, not the message. */
TEST(repairs)
{
	struct rpc_message m;
	json_t *bad;
	CHECK_INT_EQ(
	        parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"t\":\"a\xff\xc3\"}}", &m,
	              &bad),
	        0);
	CHECK_INT_EQ(m.repaired, JSONFIX_UTF8);
	CHECK_STR_EQ(json_string_value(json_object_get(m.params, "t")),
	             "a\xEF\xBF\xBD\xEF\xBF\xBD");
	json_decref(m.root);
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"t\":"
	                   "\"\\ud800x\\udc00\\ud83d\\ude00\\\\ud800\"}}",
	                   &m, &bad),
	             0);
	CHECK_INT_EQ(m.repaired, JSONFIX_SURROGATE);
	/* both lone halves replaced; the pair and the escaped backslash kept */
	CHECK_STR_EQ(json_string_value(json_object_get(m.params, "t")),
	             "\xEF\xBF\xBDx\xEF\xBF\xBD\xF0\x9F\x98\x80\\ud800");
	json_decref(m.root);
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m\",\"params\":{\"line\":"
	                   "9223372036854775808,\"b\":-9223372036854775808,\"s\":"
	                   "\"99999999999999999999\"}}",
	                   &m, &bad),
	             0);
	CHECK_INT_EQ(m.repaired, JSONFIX_BIGINT);
	CHECK(json_is_real(json_object_get(m.params, "line")));
	CHECK(json_is_integer(json_object_get(m.params, "b"))); /* INT64_MIN fits */
	CHECK_STR_EQ(json_string_value(json_object_get(m.params, "s")), "99999999999999999999");
	CHECK(json_integer_value(m.id) == 7);
	json_decref(m.root);
	/* a good message is not touched */
	CHECK_INT_EQ(parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"t\":\"\\u00e9\"}}",
	                   &m, &bad),
	             0);
	CHECK_INT_EQ(m.repaired, 0);
	json_decref(m.root);
	/* repairs never turn garbage into JSON */
	char *out;
	size_t n;
	CHECK_INT_EQ(jsonfix_repair("{\"a\": \xff", 7, &out, &n), JSONFIX_UTF8);
	CHECK_INT_EQ(n, 9);
	free(out);
	CHECK_INT_EQ(parse("{\"a\": \xff", &m, &bad), RPC_ERROR_PARSE_ERROR);
}

TEST_MAIN()
