/* test_remote.c - remote/'s pure parts: the stream framing (SSE and NDJSON,
 * cut at every byte), the three APIs' request bodies and replies (both
 * log-probability shapes, errors, a reply that was not streamed), and
 * SHA-256 against the FIPS 180-4 examples. The client itself is tested over
 * the network in remote_test.py and llama_test.py. */
#include "remote.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

struct collected {
	char text[4096];
	int n;
};

static int collect(void *ud, const char *p, size_t len)
{
	struct collected *c = ud;
	size_t have = strlen(c->text);
	snprintf(c->text + have, sizeof c->text - have, "[%.*s]", (int)len, p);
	c->n++;
	return 0;
}

static const char SSE[] = ": keep-alive comment\r\n"
                          "event: message\n"
                          "data: {\"a\":1}\r\n\r\n"
                          "data:{\"b\":2}\n\n"
                          "\n"
                          "data: [DONE]\n\n";

TEST(credentials_in_urls_are_redacted)
{
	static const char *const cases[][2] = {
		{ "http://user:s3cret@host:8080/v1", "http://user:***@host:8080/v1" },
		{ "https://tok3n@host/", "https://***@host/" },
		{ "http://host:8080/path?a=b@c",
		  "http://host:8080/path?a=b@c" }, /* '@' past the host */
		{ "http://127.0.0.1:1", "http://127.0.0.1:1" },
		{ "http://u:p:q@h", "http://u:***@h" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = remote_url_redact(cases[i][0]);
		CHECK(got != NULL);
		if (got) CHECK_STR_EQ(got, cases[i][1]);
		free(got);
	}
}

TEST(sse_payloads_whatever_the_cuts)
{
	size_t n = strlen(SSE);
	for (size_t cut = 1; cut <= n; cut++) {
		struct remote_stream s = { 0 };
		struct collected c = { 0 };
		for (size_t at = 0; at < n; at += cut)
			REQUIRE(remote_stream_feed(&s, SSE + at, at + cut > n ? n - at : cut,
			                           collect, &c) == 0);
		CHECK_STR_EQ(c.text, "[{\"a\":1}][{\"b\":2}]");
		CHECK(s.done_seen);
		size_t all_len;
		remote_stream_all(&s, &all_len);
		CHECK_INT_EQ(all_len, n);
		remote_stream_finish(&s);
	}
}

TEST(ndjson_lines_are_payloads)
{
	const char *nd = "{\"response\":\"x\",\"done\":false}\n{\"response\":\"\",\"done\":true}\n";
	struct remote_stream s = { 0 };
	struct collected c = { 0 };
	REQUIRE(remote_stream_feed(&s, nd, strlen(nd), collect, &c) == 0);
	CHECK_INT_EQ(c.n, 2);
	CHECK(!s.sse_payload);
	remote_stream_finish(&s);
}

static json_t *body_of(const struct remote_endpoint *ep, const struct remote_query *q)
{
	char *b = remote_api_body(ep, q);
	if (!b) return NULL;
	json_t *o = json_loads(b, 0, NULL);
	free(b);
	return o;
}

TEST(openai_body_tokens_or_text)
{
	int32_t toks[] = { 1, 3, 500, 4, 5 };
	const char *stop[] = { "\n\n" };
	struct remote_endpoint ep = { .url = "http://x", .api = REMOTE_API_OPENAI, .model = "m" };
	struct remote_query q = { .tokens = toks,
		                  .n_tokens = 5,
		                  .n = 3,
		                  .max_tokens = 16,
		                  .temperature = 0.5,
		                  .top_p = 0.9,
		                  .seed = 7,
		                  .stop = stop,
		                  .n_stop = 1,
		                  .logprobs = true };
	json_t *o = body_of(&ep, &q);
	REQUIRE(o);
	CHECK_INT_EQ(json_array_size(json_object_get(o, "prompt")), 5);
	CHECK_INT_EQ(json_integer_value(json_array_get(json_object_get(o, "prompt"), 2)), 500);
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "n")), 3);
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "max_tokens")), 16);
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "logprobs")), 1);
	CHECK_STR_EQ(json_string_value(json_object_get(o, "model")), "m");
	CHECK_STR_EQ(json_string_value(json_array_get(json_object_get(o, "stop"), 0)), "\n\n");
	CHECK(json_is_true(json_object_get(o, "stream")));
	json_decref(o);
	q.tokens = NULL, q.n_tokens = 0, q.prompt = "<pre>x", q.prompt_len = 6;
	o = body_of(&ep, &q);
	REQUIRE(o);
	CHECK_STR_EQ(json_string_value(json_object_get(o, "prompt")), "<pre>x");
	json_decref(o);
}

TEST(infill_and_ollama_bodies)
{
	struct remote_extra ex = { "b.py", "def f(): pass", 13 };
	struct remote_endpoint ep = { .url = "http://x", .api = REMOTE_API_LLAMA_INFILL };
	struct remote_query q = { .prefix = "ab",
		                  .prefix_len = 2,
		                  .suffix = "cd",
		                  .suffix_len = 2,
		                  .extra = &ex,
		                  .n_extra = 1,
		                  .n = 2,
		                  .max_tokens = 8,
		                  .logprobs = true };
	json_t *o = body_of(&ep, &q);
	REQUIRE(o);
	CHECK_STR_EQ(json_string_value(json_object_get(o, "input_prefix")), "ab");
	CHECK_STR_EQ(json_string_value(json_object_get(o, "input_suffix")), "cd");
	json_t *e0 = json_array_get(json_object_get(o, "input_extra"), 0);
	CHECK_STR_EQ(json_string_value(json_object_get(e0, "filename")), "b.py");
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "n_predict")), 8);
	CHECK_INT_EQ(json_integer_value(json_object_get(o, "n_probs")), 1);
	CHECK(json_object_get(o, "model") == NULL);
	json_decref(o);
	ep.api = REMOTE_API_OLLAMA;
	ep.model = "qwen2.5-coder:1.5b";
	o = body_of(&ep, &q);
	REQUIRE(o);
	CHECK_STR_EQ(json_string_value(json_object_get(o, "prompt")), "ab");
	CHECK_STR_EQ(json_string_value(json_object_get(o, "suffix")), "cd");
	CHECK_INT_EQ(
	        json_integer_value(json_object_get(json_object_get(o, "options"), "num_predict")),
	        8);
	json_decref(o);
}

static int feed(struct remote_acc *acc, enum remote_api api, const char *s)
{
	return remote_acc_feed(acc, api, s, strlen(s));
}

TEST(openai_chunks_both_logprob_shapes)
{
	struct remote_acc acc = { 0 };
	/* vLLM / OpenAI legacy shape, two choices interleaved */
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI,
	                  "{\"choices\":[{\"index\":1,\"text\":\"b\",\"logprobs\":{"
	                  "\"token_logprobs\":[-1.0]},\"finish_reason\":null}]}"),
	             0);
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI,
	                  "{\"choices\":[{\"index\":0,\"text\":\"a\",\"logprobs\":{"
	                  "\"token_logprobs\":[-0.5]},\"finish_reason\":null}]}"),
	             0);
	/* llama-server's shape */
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI,
	                  "{\"choices\":[{\"index\":0,\"text\":\"c\",\"logprobs\":{\"content\":[{"
	                  "\"token\":\"c\",\"logprob\":-1.5}]},\"finish_reason\":\"length\"}]}"),
	             0);
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI,
	                  "{\"choices\":[{\"index\":1,\"text\":\"\",\"finish_reason\":\"stop\"}],"
	                  "\"timings\":{\"prompt_ms\":2.5,\"predicted_ms\":10}}"),
	             0);
	struct remote_reply r = { 0 };
	remote_acc_take(&acc, &r);
	REQUIRE(r.n == 2);
	CHECK_STR_EQ(r.choices[0].text, "ac");
	CHECK_INT_EQ(r.choices[0].n_logprobs, 2);
	CHECK_NEAR(r.choices[0].sum_logprob, -2.0, 1e-12);
	CHECK_INT_EQ(r.choices[0].finish, REMOTE_FINISH_LENGTH);
	CHECK_STR_EQ(r.choices[1].text, "b");
	CHECK_INT_EQ(r.choices[1].finish, REMOTE_FINISH_STOP);
	CHECK_NEAR(r.server_ms, 12.5, 1e-12);
	remote_reply_finish(&r);
	remote_acc_finish(&acc);
}

TEST(infill_and_ollama_chunks)
{
	struct remote_acc acc = { 0 };
	CHECK_INT_EQ(feed(&acc, REMOTE_API_LLAMA_INFILL,
	                  "{\"index\":0,\"content\":\"x = \",\"stop\":false,"
	                  "\"completion_probabilities\":[{\"logprob\":-0.25}]}"),
	             0);
	CHECK_INT_EQ(feed(&acc, REMOTE_API_LLAMA_INFILL,
	                  "{\"index\":0,\"content\":\"\",\"stop\":true,\"stop_type\":\"limit\","
	                  "\"tokens_predicted\":5}"),
	             0);
	CHECK_INT_EQ(acc.n, 1);
	CHECK_STR_EQ(acc.choices[0].text, "x = ");
	CHECK_INT_EQ(acc.choices[0].finish, REMOTE_FINISH_LENGTH);
	CHECK_INT_EQ(acc.choices[0].n_tokens, 5);
	remote_acc_finish(&acc);
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OLLAMA, "{\"response\":\"y\",\"done\":false}"), 0);
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OLLAMA,
	                  "{\"response\":\"\",\"done\":true,\"done_reason\":\"stop\"}"),
	             0);
	CHECK(acc.done);
	CHECK_STR_EQ(acc.choices[0].text, "y");
	CHECK_INT_EQ(acc.choices[0].n_logprobs, 0);
	remote_acc_finish(&acc);
}

TEST(bad_payloads_are_named)
{
	struct remote_acc acc = { 0 };
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI, "{\"choices\": [{\"text\": \"tot"), -EPROTO);
	CHECK(strstr(acc.error, "not JSON") != NULL);
	remote_acc_finish(&acc);
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI, "{\"content\":\"x\"}"), -EPROTO);
	CHECK(strstr(acc.error, "openai") != NULL);
	remote_acc_finish(&acc);
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI, "[1,2]"), -EPROTO);
	remote_acc_finish(&acc);
	/* an error object is recorded, not a protocol failure */
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI, "{\"error\":{\"message\":\"slot busy\"}}"), 0);
	CHECK_STR_EQ(acc.error, "slot busy");
	remote_acc_finish(&acc);
	/* an index out of any sense is refused, not allocated */
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI,
	                  "{\"choices\":[{\"index\":100000000,\"text\":\"a\"}]}"),
	             -EPROTO);
	remote_acc_finish(&acc);
}

TEST(bytes_that_are_not_utf8_end_a_choice)
{
	/* a stray byte, in a stream event: the text is cut before it, and the
	 * choice takes nothing more */
	struct remote_acc acc = { 0 };
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI,
	                  "{\"choices\":[{\"index\":0,\"text\":\"total\xff = a\"}]}"),
	             0);
	CHECK_INT_EQ(acc.n, 1);
	CHECK_STR_EQ(acc.choices[0].text, "total");
	CHECK(acc.choices[0].full);
	CHECK_INT_EQ(
	        feed(&acc, REMOTE_API_OPENAI, "{\"choices\":[{\"index\":0,\"text\":\"+ b\"}]}"), 0);
	CHECK_STR_EQ(acc.choices[0].text, "total");
	remote_acc_finish(&acc);
	/* a cut sequence, an overlong form, an encoded surrogate: each */
	static const char *const bad[] = { "ab\xe2\x82", "ab\xc0\xaf",
		                           "ab\xed\xa0\x80"
		                           "cd",
		                           "ab\xf4\x90\x80\x80" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char js[128];
		snprintf(js, sizeof js, "{\"content\":\"%s\",\"stop\":false}", bad[i]);
		CHECK_INT_EQ(feed(&acc, REMOTE_API_LLAMA_INFILL, js), 0);
		CHECK_STR_EQ(acc.choices[0].text, "ab");
		remote_acc_finish(&acc);
	}
	/* good multi-byte text passes untouched */
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OLLAMA,
	                  "{\"response\":\"s = \\\"\xc3\xa9\xe2\x82\xac\\\"\"}"),
	             0);
	CHECK_STR_EQ(acc.choices[0].text, "s = \"\xc3\xa9\xe2\x82\xac\"");
	CHECK(!acc.choices[0].full);
	remote_acc_finish(&acc);
	CHECK_INT_EQ(remote_text_valid("a\xe2\x82\xac\xe2\x82", 6), 4);
}

TEST(json_cut_short_is_told_apart)
{
	struct remote_acc acc = { 0 };
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI, "{\"choices\": [{\"text\": \"tot"), -EPROTO);
	CHECK(acc.cut_short);
	remote_acc_finish(&acc);
	CHECK_INT_EQ(feed(&acc, REMOTE_API_OPENAI, "<html><body>x</body></html>"), -EPROTO);
	CHECK(!acc.cut_short);
	remote_acc_finish(&acc);
}

TEST(error_pages_are_reduced_to_words)
{
	char out[REMOTE_EXCERPT_MAX + 1];
	static const char nginx[] = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n"
	                            "<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n"
	                            "</body>\r\n</html>\r\n";
	CHECK(remote_text_is_html(nginx, strlen(nginx)));
	remote_text_excerpt(nginx, strlen(nginx), out, sizeof out);
	CHECK_STR_EQ(out, "502 Bad Gateway");
	static const char h1[] = "\n<!DOCTYPE html><html><body><h1>Service &amp; API\n down</h1>"
	                         "<p>later</p></body></html>";
	remote_text_excerpt(h1, strlen(h1), out, sizeof out);
	CHECK_STR_EQ(out, "Service & API down");
	static const char bare[] = "<html><body><p>no <b>title</b> here</p></body></html>";
	remote_text_excerpt(bare, strlen(bare), out, sizeof out);
	CHECK_STR_EQ(out, "no title here");
	/* text: its first line, control and broken bytes made printable */
	static const char text[] = "upstream\x01 timed\xff out\nsecond line";
	CHECK(!remote_text_is_html(text, strlen(text)));
	remote_text_excerpt(text, strlen(text), out, sizeof out);
	CHECK_STR_EQ(out, "upstream timed? out");
	/* long: cut at the cap on a character's boundary */
	char big[600];
	for (size_t i = 0; i + 2 < sizeof big; i += 2) memcpy(big + i, "\xc3\xa9", 2);
	big[sizeof big - 2] = 0;
	remote_text_excerpt(big, strlen(big), out, sizeof out);
	CHECK(strlen(out) <= REMOTE_EXCERPT_MAX && strlen(out) >= REMOTE_EXCERPT_MAX - 1);
	CHECK_INT_EQ(remote_text_valid(out, strlen(out)), strlen(out));
}

static void sha_hex(const char *msg, size_t len, char out[65])
{
	struct remote_sha256 s;
	remote_sha256_init(&s);
	remote_sha256_update(&s, msg, len);
	remote_sha256_hex(&s, out);
}

TEST(sha256_fips_examples)
{
	char hex[65];
	sha_hex("abc", 3, hex);
	CHECK_STR_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha_hex("", 0, hex);
	CHECK_STR_EQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha_hex(two, strlen(two), hex);
	CHECK_STR_EQ(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* a million 'a', fed in odd pieces */
	struct remote_sha256 s;
	remote_sha256_init(&s);
	char a[997];
	memset(a, 'a', sizeof a);
	size_t left = 1000000;
	while (left) {
		size_t n = left < sizeof a ? left : sizeof a;
		remote_sha256_update(&s, a, n);
		left -= n;
	}
	remote_sha256_hex(&s, hex);
	CHECK_STR_EQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_MAIN()
