/*
 * fuzz_config.c - libFuzzer target for the settings layers: the input is up
 * to five JSON texts separated by NUL bytes, set as the user, project,
 * initializationOptions, client and flags layers in turn. Nothing may crash
 * or leak; every effective value must lie in its table's range; and when
 * only the project layer is set, what a project file may not do
 * (config_project_rule) must not have happened.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_warning(void *ud, const char *message)
{
	(void)message;
	++*(int *)ud;
}

static void check_ranges(const struct settings *s)
{
	if (s->threads < 0 || s->threads > 1024) __builtin_trap();
	if (s->cache_memory_mb < 16 || s->cache_memory_mb > 1048576) __builtin_trap();
	if (s->completion_candidates < 1 || s->completion_candidates > 16) __builtin_trap();
	if (s->max_message_mb < 1 || s->max_message_mb > 4096) __builtin_trap();
	if (s->log_level < CONFIG_LOG_ERROR || s->log_level > CONFIG_LOG_TRACE) __builtin_trap();
	if (!s->completion_stop) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg = config_new();
	if (!cfg) return 0;
	int warnings = 0;
	size_t at = 0, layers = 0;
	for (int layer = 0; layer < CONFIG_LAYER_COUNT && at <= size; layer++) {
		const uint8_t *end = memchr(data + at, 0, size - at);
		size_t len = end ? (size_t)(end - (data + at)) : size - at;
		json_error_t jerr;
		json_t *obj = json_loadb((const char *)data + at, len, 0, &jerr);
		if (obj) {
			config_set_layer(cfg, (enum config_layer)layer, obj, count_warning,
			                 &warnings);
			json_decref(obj);
			layers |= 1u << layer;
		}
		at += len + 1;
	}
	check_ranges(config_get(cfg, NULL));
	static const char *const langs[] = { "python", "c", "rust", "x" };
	for (size_t i = 0; i < 4; i++) check_ranges(config_get(cfg, langs[i]));
	if (layers == 1u << CONFIG_LAYER_PROJECT) {
		const struct settings *s = config_get(cfg, NULL);
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		if (s->threads > (cpus < 1 ? 1 : cpus)) __builtin_trap();
		if (s->cache_memory_mb > 1024 || s->max_message_mb > 64) __builtin_trap();
		if (s->log_level > CONFIG_LOG_INFO || s->log_message_text) __builtin_trap();
		if (s->model) __builtin_trap();
		for (size_t i = 0; i < 4; i++) {
			const struct settings *l = config_get(cfg, langs[i]);
			if (l->completion_candidates > 8 || l->completion_max_tokens > 256)
				__builtin_trap();
		}
	}
	config_free(cfg);
	return 0;
}
