/*
 * fuzz_server.c - libFuzzer target for the frame reader plus dispatcher.
 *
 * Each input is fed to a fresh server (already initialized, debounce 0, so
 * completion requests reach the pipeline) in chunks whose size comes from
 * the first byte, so frame splits are fuzzed too; then the loop runs until
 * idle and the server is closed, which must leave no handle and no leak.
 *
 * Built two ways: with -Dfuzz=true and clang as the libFuzzer binary
 * (fuzz-lsp), and always as replay-lsp, with tests/fuzz_replay.c's main()
 * running every file of the committed corpus through the same function (a
 * regression test in every build, sanitized or not).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int discard(void *ud, const char *data, size_t len)
{
	(void)ud, (void)data, (void)len;
	return 0;
}

static void on_exit_cb(void *ud, int status)
{
	(void)ud, (void)status;
}

static void closed(void *ud)
{
	(void)ud;
}

static void feed_frame(struct server *s, const char *json)
{
	char header[64];
	server_feed(s, header, rpc_frame_header(header, strlen(json)));
	server_feed(s, json, strlen(json));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uv_loop_t loop;
	if (uv_loop_init(&loop)) return 0;
	struct log *log = log_new();
	log_set_level(log, LOG_LEVEL_ERROR);
	log_set_file(log, "/dev/null");
	json_t *flags = json_pack("{s:i, s:i}", "completion.debounceMs", 0, "maxMessageMB", 1);
	struct server_options opts = { .flags = flags, .user_config = "", .log_level_fixed = true };
	struct server_io io = { .write = discard, .exit = on_exit_cb, .ud = NULL };
	struct server *s = server_new(&loop, log, &opts, &io);
	json_decref(flags);
	if (s) {
		feed_frame(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
		              "\"params\":{\"capabilities\":{\"general\":{\"positionEncodings\":["
		              "\"utf-16\"]}}}}");
		size_t chunk = size ? (size_t)data[0] + 1 : 1;
		for (size_t off = size ? 1 : 0; off < size; off += chunk) {
			size_t n = size - off < chunk ? size - off : chunk;
			server_feed(s, (const char *)data + off, n);
			uv_run(&loop, UV_RUN_NOWAIT);
		}
		uv_run(&loop, UV_RUN_NOWAIT);
		server_input_closed(s, 0);
		server_close(s, closed, NULL);
		uv_run(&loop, UV_RUN_DEFAULT);
		server_free(s);
	}
	if (uv_loop_close(&loop)) abort(); /* a handle leaked */
	log_free(log);
	return 0;
}
