/*
 * fuzz_server.c - libFuzzer target for the frame reader plus dispatcher.
 *
 * Each input is fed to a fresh server (already initialized, debounce 0, so
 * completion requests reach the pipeline) in chunks whose size comes from
 * the first byte, so frame splits are fuzzed too; then the loop runs until
 * idle and the server is closed, which must leave no handle and no leak.
 *
 * Built two ways: with -Dfuzz=true and clang as the libFuzzer binary
 * (fuzz-lsp), and always as replay-lsp, a plain main() that runs every file
 * of the committed corpus through the same function (a regression test in
 * every build, sanitized or not).
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

#ifndef INFILL_LIBFUZZER
/* Replays files (or every file in directories) given as arguments. */
#include <dirent.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
	fclose(f);
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			printf("SKIP: %s is missing\n", argv[i]);
			return 77;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad += replay_file(argv[i]);
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.') continue;
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
			bad += replay_file(path);
			files++;
		}
		if (d) closedir(d);
	}
	printf("%d inputs replayed\n", files);
	return bad ? 1 : 0;
}
#endif
