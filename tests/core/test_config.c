/*
 * test_config.c - settings layers: defaults, the three spellings of a layer
 * (nested, dotted, wrapped in "infill"), merge order, per-language
 * overrides, warnings for unknown keys, wrong types and out-of-range values
 * (the previous value is kept), and files (missing, bad JSON, good).
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "config.h"

struct warnings {
	int count;
	char last[1024];
	char all[8192];
};

static void collect(void *ud, const char *message)
{
	struct warnings *w = ud;
	w->count++;
	snprintf(w->last, sizeof w->last, "%s", message);
	size_t n = strlen(w->all);
	snprintf(w->all + n, sizeof w->all - n, "%s\n", message);
}

static int set_json(struct config *cfg, enum config_layer layer, const char *text,
                    struct warnings *w)
{
	json_error_t err;
	json_t *obj = json_loads(text, 0, &err);
	if (!obj) {
		fprintf(stderr, "bad test JSON: %s\n", err.text);
		return -1;
	}
	int rc = config_set_layer(cfg, layer, obj, collect, w);
	json_decref(obj);
	return rc;
}

TEST(defaults)
{
	struct config *cfg = config_new();
	REQUIRE(cfg);
	const struct settings *s = config_get(cfg, NULL);
	CHECK(s->enabled);
	CHECK(s->model == NULL);
	CHECK_INT_EQ(s->backend, CONFIG_BACKEND_AUTO);
	CHECK_INT_EQ(s->threads, 0);
	CHECK_INT_EQ(s->cache_memory_mb, 1024);
	CHECK(s->cache_reuse_shifted_suffix);
	CHECK_INT_EQ(s->completion_debounce_ms, 30);
	CHECK_INT_EQ(s->completion_candidates, 3);
	CHECK_INT_EQ(s->completion_max_tokens, 64);
	CHECK_INT_EQ(s->completion_max_lines, 12);
	CHECK_INT_EQ(s->completion_multiline, CONFIG_MULTILINE_AUTO);
	CHECK_NEAR(s->completion_temperature, 0.2, 1e-12);
	CHECK_NEAR(s->completion_top_p, 0.95, 1e-12);
	REQUIRE(s->completion_stop);
	CHECK(s->completion_stop[0] == NULL);
	CHECK_INT_EQ(s->context_prefix_tokens, 1024);
	CHECK_INT_EQ(s->context_suffix_tokens, 192);
	CHECK_INT_EQ(s->context_extra_tokens, 512);
	CHECK_STR_EQ(s->fim_template, "auto");
	CHECK_INT_EQ(s->log_level, CONFIG_LOG_INFO);
	CHECK_INT_EQ(s->max_message_mb, 64);
	CHECK(config_get(cfg, "python") == s);
	config_free(cfg);
	config_free(NULL);
}

TEST(nested_dotted_and_wrapped)
{
	struct warnings w = { 0 };
	struct config *cfg = config_new();
	REQUIRE(cfg);
	CHECK_INT_EQ(
	        set_json(
	                cfg, CONFIG_LAYER_USER,
	                "{\"completion\": {\"debounceMs\": 50, \"stop\": [\"\\n\\n\", \"END\"]},"
	                " \"cache.memoryMB\": 2048, \"backend\": \"cuda\", \"model\": \"/m.gguf\"}",
	                &w),
	        0);
	CHECK_INT_EQ(w.count, 0);
	const struct settings *s = config_get(cfg, NULL);
	CHECK_INT_EQ(s->completion_debounce_ms, 50);
	CHECK_INT_EQ(s->cache_memory_mb, 2048);
	CHECK_INT_EQ(s->backend, CONFIG_BACKEND_CUDA);
	CHECK_STR_EQ(s->model, "/m.gguf");
	REQUIRE(s->completion_stop);
	CHECK_STR_EQ(s->completion_stop[0], "\n\n");
	CHECK_STR_EQ(s->completion_stop[1], "END");
	CHECK(s->completion_stop[2] == NULL);

	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_INIT,
	                      "{\"infill\": {\"completion.multiline\": \"never\", \"log\": "
	                      "{\"level\": \"debug\"}}}",
	                      &w),
	             0);
	CHECK_INT_EQ(w.count, 0);
	s = config_get(cfg, NULL);
	CHECK_INT_EQ(s->completion_multiline, CONFIG_MULTILINE_NEVER);
	CHECK_INT_EQ(s->log_level, CONFIG_LOG_DEBUG);
	CHECK_INT_EQ(s->completion_debounce_ms, 50); /* from the user layer, still */
	config_free(cfg);
}

TEST(merge_order)
{
	struct warnings w = { 0 };
	struct config *cfg = config_new();
	REQUIRE(cfg);
	/* Set layers out of order: the layer, not the call order, decides. */
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_FLAGS, "{\"threads\": 9}", &w), 0);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_USER,
	                      "{\"threads\": 1, \"completion.candidates\": 1}", &w),
	             0);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_CLIENT,
	                      "{\"threads\": 8, \"completion.candidates\": 8}", &w),
	             0);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_PROJECT,
	                      "{\"threads\": 2, \"completion.candidates\": 2}", &w),
	             0);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_INIT,
	                      "{\"threads\": 4, \"completion.candidates\": 4}", &w),
	             0);
	CHECK_INT_EQ(w.count, 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->threads, 9);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 8);
	CHECK_INT_EQ(config_set_layer(cfg, CONFIG_LAYER_FLAGS, NULL, collect, &w), 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->threads, 8);
	CHECK_INT_EQ(config_set_layer(cfg, CONFIG_LAYER_CLIENT, NULL, collect, &w), 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->threads, 4);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 4);
	CHECK_INT_EQ(config_set_layer(cfg, CONFIG_LAYER_INIT, NULL, collect, &w), 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 2);
	CHECK_INT_EQ(config_set_layer(cfg, CONFIG_LAYER_PROJECT, NULL, collect, &w), 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 1);
	CHECK_INT_EQ(config_set_layer(cfg, CONFIG_LAYER_USER, NULL, collect, &w), 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 3);
	/* null in a layer means "not set here". */
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_USER, "{\"completion.candidates\": 5}", &w), 0);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_CLIENT, "{\"completion.candidates\": null}", &w),
	             0);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 5);
	CHECK_INT_EQ(w.count, 0);
	config_free(cfg);
}

TEST(per_language_overrides)
{
	struct warnings w = { 0 };
	struct config *cfg = config_new();
	REQUIRE(cfg);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_USER,
	                      "{\"languages\": {\"python\": {\"completion\": {\"candidates\": 2},"
	                      " \"enabled\": false}, \"go\": {\"context.prefixTokens\": 300}}}",
	                      &w),
	             0);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_CLIENT,
	                      "{\"completion.candidates\": 5, \"context.suffixTokens\": 99,"
	                      " \"languages\": {\"go\": {\"completion.maxLines\": 3}}}",
	                      &w),
	             0);
	CHECK_INT_EQ(w.count, 0);
	const struct settings *g = config_get(cfg, NULL);
	const struct settings *py = config_get(cfg, "python");
	const struct settings *go = config_get(cfg, "go");
	const struct settings *rs = config_get(cfg, "rust");
	CHECK_INT_EQ(g->completion_candidates, 5);
	CHECK(g->enabled);
	/* A language override beats a global value from a later layer. */
	CHECK_INT_EQ(py->completion_candidates, 2);
	CHECK(!py->enabled);
	CHECK_INT_EQ(py->context_suffix_tokens, 99); /* global values still flow in */
	CHECK_INT_EQ(go->context_prefix_tokens, 300);
	CHECK_INT_EQ(go->completion_max_lines, 3);
	CHECK_INT_EQ(go->completion_candidates, 5);
	CHECK(rs == g);
	/* Global-only keys are refused per language. */
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_PROJECT,
	                      "{\"languages\": {\"c\": {\"model\": \"x.gguf\"}}}", &w),
	             0);
	CHECK_INT_EQ(w.count, 1);
	CHECK(strstr(w.last, "\"languages.c.model\"") != NULL);
	CHECK(config_get(cfg, "c")->model == NULL);
	config_free(cfg);
}

/* completion.minConfidence takes a number or "auto" (held as -1),
 * per language too; another string is refused naming both. */
TEST(min_confidence_auto)
{
	struct warnings w = { 0 };
	struct config *cfg = config_new();
	REQUIRE(cfg);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_INIT,
	                      "{\"completion.minConfidence\": 0.25, \"languages\": {\"python\": "
	                      "{\"completion.minConfidence\": \"auto\"}}}",
	                      &w),
	             0);
	CHECK_INT_EQ(w.count, 0);
	CHECK_NEAR(config_get(cfg, NULL)->completion_min_confidence, 0.25, 0);
	CHECK_NEAR(config_get(cfg, "python")->completion_min_confidence, -1, 0);
	CHECK_INT_EQ(
	        set_json(cfg, CONFIG_LAYER_CLIENT, "{\"completion.minConfidence\": \"high\"}", &w),
	        0);
	CHECK_INT_EQ(w.count, 1);
	CHECK(strstr(w.last, "a number 0..1 or \"auto\"; keeping 0.25") != NULL);
	CHECK_INT_EQ(
	        set_json(cfg, CONFIG_LAYER_CLIENT, "{\"completion.minConfidence\": \"auto\"}", &w),
	        0);
	CHECK_NEAR(config_get(cfg, NULL)->completion_min_confidence, -1, 0);
	char *md = config_settings_markdown();
	REQUIRE(md);
	CHECK(strstr(md, "| `completion.minConfidence` | a number 0..1 or \"auto\" | `0` |") !=
	      NULL);
	free(md);
	config_free(cfg);
}

TEST(warnings_keep_previous_values)
{
	struct warnings w = { 0 };
	struct config *cfg = config_new();
	REQUIRE(cfg);
	CHECK_INT_EQ(
	        set_json(cfg, CONFIG_LAYER_INIT, "{\"completion\": {\"candidates\": 1000}}", &w),
	        0);
	CHECK_INT_EQ(w.count, 1);
	CHECK_STR_EQ(w.last, "infill: setting \"completion.candidates\" must be an integer 1..16; "
	                     "keeping 3 (initializationOptions)");
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 3);

	w.count = 0;
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_CLIENT,
	                      "{\"completion.candidates\": 6, \"completion.temperature\": 0.5}",
	                      &w),
	             0);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 6);
	/* Re-sending the layer with bad values keeps this layer's old ones. */
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_CLIENT,
	                      "{\"completion.candidates\": 0, \"completion.temperature\": \"hot\","
	                      " \"backend\": \"tpu\", \"enabled\": 1, \"threads\": 2.5,"
	                      " \"completion.stop\": [1], \"frobnicate\": true,"
	                      " \"completion\": {\"bogus\": 1}, \"log\": 3}",
	                      &w),
	             0);
	CHECK_INT_EQ(w.count, 9);
	const struct settings *s = config_get(cfg, NULL);
	CHECK_INT_EQ(s->completion_candidates, 6);
	CHECK_NEAR(s->completion_temperature, 0.5, 1e-12);
	CHECK_INT_EQ(s->backend, CONFIG_BACKEND_AUTO);
	CHECK(s->enabled);
	CHECK_INT_EQ(s->threads, 0);
	CHECK(strstr(w.all, "\"completion.candidates\" must be an integer 1..16; keeping 6") !=
	      NULL);
	CHECK(strstr(w.all, "\"completion.temperature\" must be a number 0..2; keeping 0.5") !=
	      NULL);
	CHECK(strstr(w.all, "\"backend\" must be one of auto, cpu, cuda, remote; keeping auto") !=
	      NULL);
	CHECK(strstr(w.all, "\"enabled\" must be true or false") != NULL);
	CHECK(strstr(w.all, "\"threads\" must be an integer") != NULL);
	CHECK(strstr(w.all, "\"completion.stop\" must be an array") != NULL);
	CHECK(strstr(w.all, "unknown setting \"frobnicate\"") != NULL);
	CHECK(strstr(w.all, "unknown setting \"completion.bogus\"") != NULL);
	CHECK(strstr(w.all, "unknown setting \"log\"") != NULL);

	/* An integral real is an integer; a per-language warning names the
	 * full key and the language's current value. */
	w.count = 0;
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_USER,
	                      "{\"completion.maxLines\": 20.0, \"languages\": {\"rust\":"
	                      " {\"completion\": {\"maxLines\": 4, \"debounceMs\": -5}}}}",
	                      &w),
	             0);
	CHECK_INT_EQ(w.count, 1);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_max_lines, 20);
	CHECK_INT_EQ(config_get(cfg, "rust")->completion_max_lines, 4);
	CHECK_INT_EQ(config_get(cfg, "rust")->completion_debounce_ms, 30);
	CHECK(strstr(w.last, "\"languages.rust.completion.debounceMs\" must be an integer 0..10000;"
	                     " keeping 30") != NULL);

	/* A layer that is not an object is refused and the layer kept. */
	w.count = 0;
	json_t *arr = json_array();
	CHECK_INT_EQ(config_set_layer(cfg, CONFIG_LAYER_CLIENT, arr, collect, &w), -EINVAL);
	json_decref(arr);
	CHECK_INT_EQ(w.count, 1);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_candidates, 6);
	config_free(cfg);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	if (!f) return -1;
	fputs(text, f);
	return fclose(f);
}

TEST(files)
{
	char dir[] = "/tmp/infill-config-test-XXXXXX";
	REQUIRE(mkdtemp(dir));
	char good[256], bad[256], missing[256], empty[256];
	snprintf(good, sizeof good, "%s/good.json", dir);
	snprintf(bad, sizeof bad, "%s/bad.json", dir);
	snprintf(missing, sizeof missing, "%s/missing.json", dir);
	snprintf(empty, sizeof empty, "%s/empty.json", dir);
	REQUIRE(write_file(good, "{\n  \"completion\": {\"maxTokens\": 128}\n}\n") == 0);
	REQUIRE(write_file(bad, "{\n  \"completion\": {\"maxTokens\": 12,}\n}\n") == 0);
	REQUIRE(write_file(empty, "  \n") == 0);

	struct warnings w = { 0 };
	struct config *cfg = config_new();
	REQUIRE(cfg);
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, missing, collect, &w), 0);
	CHECK_INT_EQ(w.count, 0);
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, good, collect, &w), 0);
	CHECK_INT_EQ(w.count, 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_max_tokens, 128);
	/* Bad JSON: warns with file, line and column; keeps the previous layer. */
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, bad, collect, &w), -EINVAL);
	CHECK_INT_EQ(w.count, 1);
	CHECK(strstr(w.last, bad) != NULL);
	CHECK(strstr(w.last, ":2:") != NULL);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_max_tokens, 128);
	/* A file that disappears empties its layer. */
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, missing, collect, &w), 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->completion_max_tokens, 64);
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, empty, collect, &w), 0);
	CHECK_INT_EQ(w.count, 1);
	/* Warnings from a file name the file. */
	REQUIRE(write_file(good, "{\"completion.maxTokens\": -1}") == 0);
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, good, collect, &w), 0);
	CHECK_INT_EQ(w.count, 2);
	CHECK(strstr(w.last, "\"completion.maxTokens\"") != NULL);
	CHECK(strstr(w.last, good) != NULL);
	/* A path that cannot be read as a file warns and keeps the layer. */
	w.count = 0;
	CHECK(config_load_file(cfg, CONFIG_LAYER_PROJECT, dir, collect, &w) < 0);
	CHECK_INT_EQ(w.count, 1);
	CHECK(strstr(w.last, dir) != NULL);
	CHECK(strstr(w.last, "keeping") != NULL);
	config_free(cfg);
	unlink(good);
	unlink(bad);
	unlink(empty);
	rmdir(dir);
}

/* A cloned repository is not trusted: a project file may not raise what costs resources or exposes
 * text; the user's own layers may. */
TEST(project_file_limits)
{
	struct warnings w = { 0 };
	struct config *cfg = config_new();
	REQUIRE(cfg);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_PROJECT,
	                      "{\"threads\": 1024, \"log.level\": \"trace\", \"cache.memoryMB\": "
	                      "1048576, \"maxMessageMB\": 4096, \"model\": \"/dev/zero\", "
	                      "\"log.messageText\": true, \"completion.candidates\": 4, "
	                      "\"languages\": {\"c\": {\"completion.maxTokens\": 4096}}}",
	                      &w),
	             0);
	const struct settings *s = config_get(cfg, NULL);
	CHECK_INT_EQ(s->threads, cpus);
	CHECK_INT_EQ(s->log_level, CONFIG_LOG_INFO);
	CHECK_INT_EQ(s->cache_memory_mb, 1024);
	CHECK_INT_EQ(s->max_message_mb, 64);
	CHECK(s->model == NULL);
	CHECK(!s->log_message_text);
	CHECK_INT_EQ(s->completion_candidates, 4); /* within its limit: applies */
	CHECK_INT_EQ(config_get(cfg, "c")->completion_max_tokens, 256);
	CHECK_INT_EQ(w.count, 7);
	CHECK(strstr(w.all, "\"threads\" is at most") != NULL);
	CHECK(strstr(w.all, "\"model\" is ignored in a project file") != NULL);
	CHECK(strstr(w.all, "\"log.level\" above \"info\"") != NULL);
	CHECK(strstr(w.all, "languages.c.completion.maxTokens") != NULL);
	/* a lower log level is fine from a project */
	w.count = 0;
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_PROJECT, "{\"log.level\": \"warn\"}", &w), 0);
	CHECK_INT_EQ(config_get(cfg, NULL)->log_level, CONFIG_LOG_WARN);
	CHECK_INT_EQ(w.count, 0);
	/* the same from the user's file: as asked */
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_USER,
	                      "{\"threads\": 1024, \"log.level\": \"trace\", \"model\": \"/m\"}",
	                      &w),
	             0);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_PROJECT, "{}", &w), 0);
	s = config_get(cfg, NULL);
	CHECK_INT_EQ(s->threads, 1024);
	CHECK_INT_EQ(s->log_level, CONFIG_LOG_TRACE);
	CHECK_STR_EQ(s->model, "/m");
	CHECK_INT_EQ(w.count, 0);
	int max;
	CHECK(config_project_rule("threads", &max) != NULL && max == cpus);
	CHECK(config_project_rule("model", &max) != NULL && max == -1);
	CHECK(config_project_rule("completion.debounceMs", NULL) == NULL);
	/* nor does a project choose a file infill writes */
	CHECK(config_project_rule("metrics.file", &max) != NULL && max == -1);
	w.count = 0;
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_PROJECT,
	                      "{\"metrics\": {\"file\": \"/tmp/x.prom\"}}", &w),
	             0);
	CHECK(config_get(cfg, NULL)->metrics_file == NULL);
	CHECK_INT_EQ(w.count, 1);
	CHECK(strstr(w.all, "\"metrics.file\" is ignored in a project file") != NULL);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_USER, "{\"metrics.file\": \"/tmp/x.prom\"}", &w),
	             0);
	CHECK_STR_EQ(config_get(cfg, NULL)->metrics_file, "/tmp/x.prom");
	/* nor the file loaded as the draft model, in any spelling */
	w.count = 0;
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_PROJECT,
	                      "{\"completion\": {\"draftModel\": \"/dev/zero\"}, \"languages\": "
	                      "{\"c\": {\"completion.draftModel\": \"/dev/zero\"}}}",
	                      &w),
	             0);
	CHECK(config_get(cfg, NULL)->completion_draft_model == NULL);
	CHECK(config_get(cfg, "c")->completion_draft_model == NULL);
	CHECK_INT_EQ(w.count, 2);
	CHECK(strstr(w.all, "\"completion.draftModel\" is ignored in a project file") != NULL);
	CHECK_INT_EQ(set_json(cfg, CONFIG_LAYER_USER, "{\"completion.draftModel\": \"/d\"}", &w),
	             0);
	CHECK_STR_EQ(config_get(cfg, NULL)->completion_draft_model, "/d");
	config_free(cfg);
}

/* Never hung: a settings file that is a FIFO, a link to the client's stdin or
 * too large is refused at once, with a warning; nothing waits. */
TEST(special_settings_files)
{
	char dir[] = "/tmp/infill-config-test-XXXXXX";
	REQUIRE(mkdtemp(dir));
	char fifo[256], link[256], big[256];
	snprintf(fifo, sizeof fifo, "%s/fifo.json", dir);
	snprintf(link, sizeof link, "%s/stdin.json", dir);
	snprintf(big, sizeof big, "%s/big.json", dir);
	REQUIRE(mkfifo(fifo, 0600) == 0);
	REQUIRE(symlink("/proc/self/fd/0", link) == 0);
	FILE *f = fopen(big, "w");
	REQUIRE(f);
	fputc('{', f);
	for (int i = 0; i < (1 << 20); i++) fputc(' ', f);
	fputc('}', f);
	fclose(f);
	int fds[2];
	REQUIRE(pipe(fds) == 0);
	int saved = dup(0);
	REQUIRE(dup2(fds[0], 0) == 0); /* stdin is a pipe nobody writes */
	struct warnings w = { 0 };
	struct config *cfg = config_new();
	REQUIRE(cfg);
	alarm(10); /* the old reader blocked in open() or read() forever */
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, fifo, collect, &w), -EINVAL);
	CHECK(strstr(w.last, "not a regular file") != NULL && strstr(w.last, fifo) != NULL);
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, link, collect, &w), -EINVAL);
	CHECK(strstr(w.last, "not a regular file") != NULL);
	CHECK_INT_EQ(config_load_file(cfg, CONFIG_LAYER_PROJECT, big, collect, &w), -EINVAL);
	CHECK(strstr(w.last, "larger than 1 MiB") != NULL);
	alarm(0);
	CHECK_INT_EQ(w.count, 3);
	dup2(saved, 0);
	close(saved);
	close(fds[0]);
	close(fds[1]);
	config_free(cfg);
	unlink(fifo);
	unlink(link);
	unlink(big);
	rmdir(dir);
}

TEST(markdown_table)
{
	char *md = config_settings_markdown();
	REQUIRE(md);
	CHECK(strncmp(md, "| key |", 7) == 0);
	CHECK(strstr(md, "| `completion.candidates` | an integer 1..16 | `3` | yes |") != NULL);
	CHECK(strstr(md, "| `backend` | one of auto, cpu, cuda, remote | `auto` | no |") != NULL);
	CHECK(strstr(md, "`maxMessageMB`") != NULL);
	free(md);
}

TEST_MAIN()
