/*
 * config.h - infill's settings: one table, several layers, per-language
 * overrides.
 *
 * Every setting lives under the section "infill" and is declared once in
 * CONFIG_SETTINGS below; that list generates struct settings, the defaults,
 * the parser/validator and the Markdown table of docs/settings.md.
 *
 * Layers, later ones winning: built-in defaults -> CONFIG_LAYER_USER (user
 * file) -> CONFIG_LAYER_PROJECT (.infill.json) -> CONFIG_LAYER_INIT
 * (initializationOptions) -> CONFIG_LAYER_CLIENT (workspace/configuration) ->
 * CONFIG_LAYER_FLAGS (command-line flags). Each layer is a JSON object using
 * nested objects ({"completion": {"debounceMs": 30}}), dotted keys
 * ({"completion.debounceMs": 30}) or both, optionally wrapped in
 * {"infill": {...}}. Per-language overrides sit under
 * "languages": {"<languageId>": {...}} and may set any completion.* or
 * context.* key and "enabled". A language override from any layer beats a
 * global value from any layer (as VS Code does for language-specific
 * settings); among overrides for the same language, later layers win.
 *
 * Unknown keys, wrong types and out-of-range values produce a warning naming
 * the key (through the caller's config_warn_fn) and keep the previous value;
 * nothing in a layer is ever fatal.
 *
 * CONFIG_LAYER_PROJECT comes with a cloned repository, so it is not trusted
 * with what costs resources or exposes text (config_project_rule): `model`
 * and `log.messageText` are ignored there, `log.level` above info is ignored,
 * and `threads`, `cache.memoryMB`, `maxMessageMB`, `completion.candidates`
 * and `completion.maxTokens` are clamped, each with a warning. Nor does it
 * choose where the code goes: `backend` "remote", `remote.url`,
 * `remote.apiKeyEnv`, `remote.caFile` and `remote.tokenizer` are ignored
 * there (a cloned repository must not send your code, or your key, to its
 * own server). Nor does it choose a file infill writes: `metrics.file` is
 * ignored there too.
 *
 * Threads: a struct config belongs to the thread that created it.
 */
#ifndef INFILL_LSP_CONFIG_H
#define INFILL_LSP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

enum config_backend {
	CONFIG_BACKEND_AUTO,
	CONFIG_BACKEND_CPU,
	CONFIG_BACKEND_CUDA,
	CONFIG_BACKEND_REMOTE, /* an inference server over HTTP (remote.*) */
};

/* The HTTP API a remote backend speaks (remote.api). */
enum config_remote_api {
	CONFIG_REMOTE_OPENAI,       /* POST /v1/completions (vLLM, TGI, llama-server, Ollama) */
	CONFIG_REMOTE_LLAMA_INFILL, /* POST /infill (llama-server) */
	CONFIG_REMOTE_OLLAMA,       /* POST /api/generate with suffix (Ollama) */
};

enum config_kv_type {
	CONFIG_KV_F16,
	CONFIG_KV_F32,
	CONFIG_KV_Q8_0, /* llama.cpp's q8_0 blocks: about half the memory of f16 */
	CONFIG_KV_AUTO, /* q8_0 on the CPU where the head size allows, else f16 */
};

enum config_multiline {
	CONFIG_MULTILINE_AUTO,
	CONFIG_MULTILINE_ALWAYS,
	CONFIG_MULTILINE_NEVER,
};

/* The prompt a model-written next edit is asked with (nextEdit.format). */
enum config_nextedit_format {
	CONFIG_NEXTEDIT_FIM,  /* the model's own FIM template: works with any FIM model */
	CONFIG_NEXTEDIT_ZETA, /* Zed's Zeta (an edit-prediction fine-tune) */
	CONFIG_NEXTEDIT_AUTO, /* zeta when the model says so (pipeline_model_is_zeta), else fim */
};

enum config_log_level {
	CONFIG_LOG_ERROR,
	CONFIG_LOG_WARN,
	CONFIG_LOG_INFO,
	CONFIG_LOG_DEBUG,
	CONFIG_LOG_TRACE,
};

/* Kinds of values a setting can hold (the C type of its field). */
enum config_kind {
	CONFIG_KIND_BOOL,    /* bool */
	CONFIG_KIND_INT,     /* int, with an inclusive range */
	CONFIG_KIND_DOUBLE,  /* double, with an inclusive range */
	CONFIG_KIND_STRING,  /* char * (NULL when unset) */
	CONFIG_KIND_ENUM,    /* an enum above, named by a string */
	CONFIG_KIND_STRLIST, /* char ** ending with NULL (never NULL itself) */
};

/* Where a setting may appear: everywhere, or only globally (not under
 * languages.<id>). */
#define CONFIG_SCOPE_GLOBAL   0
#define CONFIG_SCOPE_LANGUAGE 1

/*
 * The settings table. Columns:
 *   X(field, "key", kind, C type, default number, default string,
 *     min, max, enum names, scope, "meaning")
 * Numbers use the number column (bool: 0/1; enum: its value), strings the
 * string column. enum names is a "|"-separated list in enum order; a double
 * with names also takes those strings, stored as -1 - their index
 * (completion.minConfidence "auto" is -1).
 * threads = 0 means one per physical core; model = NULL means the embedded
 * model.
 */
#define CONFIG_SETTINGS(X)                                                                         \
	X(enabled, "enabled", CONFIG_KIND_BOOL, bool, 1, NULL, 0, 1, NULL, CONFIG_SCOPE_LANGUAGE,  \
	  "offer completions at all")                                                              \
	X(model, "model", CONFIG_KIND_STRING, char *, 0, NULL, 0, 0, NULL, CONFIG_SCOPE_GLOBAL,    \
	  "path of a GGUF file, or a catalog name such as qwen2.5-coder:1.5b (`infill models`; "   \
	  "downloaded by `infill pull NAME`) (unset: the embedded model)")                         \
	X(model_fallback, "modelFallback", CONFIG_KIND_BOOL, bool, 1, NULL, 0, 1, NULL,            \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "when model cannot be loaded, load the embedded model instead, with a warning")          \
	X(backend, "backend", CONFIG_KIND_ENUM, enum config_backend, CONFIG_BACKEND_AUTO, NULL, 0, \
	  3, "auto|cpu|cuda|remote", CONFIG_SCOPE_GLOBAL,                                          \
	  "where the model runs (remote: an inference server at remote.url)")                      \
	X(remote_url, "remote.url", CONFIG_KIND_STRING, char *, 0, NULL, 0, 0, NULL,               \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "base URL of the inference server for backend remote (http://host:8080); not from a "    \
	  "project file")                                                                          \
	X(remote_api, "remote.api", CONFIG_KIND_ENUM, enum config_remote_api,                      \
	  CONFIG_REMOTE_OPENAI, NULL, 0, 2, "openai|llama-infill|ollama", CONFIG_SCOPE_GLOBAL,     \
	  "the server's API: /v1/completions, llama-server's /infill, or Ollama's /api/generate")  \
	X(remote_model, "remote.model", CONFIG_KIND_STRING, char *, 0, NULL, 0, 0, NULL,           \
	  CONFIG_SCOPE_GLOBAL, "model name sent to the server (vLLM and Ollama need it)")          \
	X(remote_api_key_env, "remote.apiKeyEnv", CONFIG_KIND_STRING, char *, 0, NULL, 0, 0, NULL, \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "name of the environment variable holding the API key (sent as a Bearer token, never "   \
	  "logged); not from a project file")                                                      \
	X(remote_timeout_ms, "remote.timeoutMs", CONFIG_KIND_INT, int, 5000, NULL, 100, 600000,    \
	  NULL, CONFIG_SCOPE_GLOBAL, "a remote request not answered within this many ms fails")    \
	X(remote_max_concurrent, "remote.maxConcurrent", CONFIG_KIND_INT, int, 4, NULL, 1, 64,     \
	  NULL, CONFIG_SCOPE_GLOBAL, "HTTP requests in flight at most (more wait their turn)")     \
	X(remote_tokenizer, "remote.tokenizer", CONFIG_KIND_STRING, char *, 0, NULL, 0, 0, NULL,   \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "a GGUF file whose vocabulary counts the prompt's tokens and builds it as token ids "    \
	  "(unset: 3 bytes per token, text prompt)")                                               \
	X(remote_ca_file, "remote.caFile", CONFIG_KIND_STRING, char *, 0, NULL, 0, 0, NULL,        \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "PEM file of the CA that signed the server's certificate (TLS is always verified); not " \
	  "from a project file")                                                                   \
	X(threads, "threads", CONFIG_KIND_INT, int, 0, NULL, 0, 1024, NULL, CONFIG_SCOPE_GLOBAL,   \
	  "CPU worker threads (0: one per physical core)")                                         \
	X(cache_memory_mb, "cache.memoryMB", CONFIG_KIND_INT, int, 1024, NULL, 16, 1048576, NULL,  \
	  CONFIG_SCOPE_GLOBAL, "KV page pool in MiB (prefix cache + live sequences)")              \
	X(cache_kv_type, "cache.kvType", CONFIG_KIND_ENUM, enum config_kv_type, CONFIG_KV_AUTO,    \
	  NULL, 0, 3, "f16|f32|q8_0|auto", CONFIG_SCOPE_GLOBAL,                                    \
	  "precision of cached keys and values (auto: q8_0 on the CPU, f16 on a GPU; f32: twice "  \
	  "the memory, slower decode; q8_0: half the memory, faster long-context decode)")         \
	X(cache_reuse_shifted_suffix, "cache.reuseShiftedSuffix", CONFIG_KIND_BOOL, bool, 1, NULL, \
	  0, 1, NULL, CONFIG_SCOPE_GLOBAL,                                                         \
	  "re-use the suffix's KV pages by RoPE shift (approximate)")                              \
	X(cache_enabled, "cache.enabled", CONFIG_KIND_BOOL, bool, 1, NULL, 0, 1, NULL,             \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "use the prefix cache (false: every prompt is prefilled whole, for measurements)")       \
	X(completion_debounce_ms, "completion.debounceMs", CONFIG_KIND_INT, int, 30, NULL, 0,      \
	  10000, NULL, CONFIG_SCOPE_LANGUAGE, "wait after a keystroke before starting a job (ms)") \
	X(completion_deadline_ms, "completion.deadlineMs", CONFIG_KIND_INT, int, 200, NULL, 0,     \
	  60000, NULL, CONFIG_SCOPE_LANGUAGE,                                                      \
	  "answer within this many ms of the request, with shorter candidates if need be (0: "     \
	  "off)")                                                                                  \
	X(completion_prefill_budget, "completion.prefillBudget", CONFIG_KIND_BOOL, bool, 1, NULL,  \
	  0, 1, NULL, CONFIG_SCOPE_LANGUAGE,                                                       \
	  "when the prompt cannot be prefilled before completion.deadlineMs, answer from a "       \
	  "shorter context and prefill the full one in the background")                            \
	X(completion_deadline_follows_typing, "completion.deadlineFollowsTyping",                  \
	  CONFIG_KIND_BOOL, bool, 1, NULL, 0, 1, NULL, CONFIG_SCOPE_LANGUAGE,                      \
	  "while keys come in a burst, answer before the next one is due (a shorter answer, "      \
	  "lengthened once typing stops) instead of after it, when it would be superseded")        \
	X(completion_candidates, "completion.candidates", CONFIG_KIND_INT, int, 3, NULL, 1, 16,    \
	  NULL, CONFIG_SCOPE_LANGUAGE, "candidates decoded per request")                           \
	X(completion_max_tokens, "completion.maxTokens", CONFIG_KIND_INT, int, 64, NULL, 1, 4096,  \
	  NULL, CONFIG_SCOPE_LANGUAGE, "tokens per candidate")                                     \
	X(completion_max_lines, "completion.maxLines", CONFIG_KIND_INT, int, 12, NULL, 1, 1000,    \
	  NULL, CONFIG_SCOPE_LANGUAGE, "lines per candidate (multiline never makes it 1)")         \
	X(completion_multiline, "completion.multiline", CONFIG_KIND_ENUM, enum config_multiline,   \
	  CONFIG_MULTILINE_AUTO, NULL, 0, 2, "auto|always|never", CONFIG_SCOPE_LANGUAGE,           \
	  "whether candidates may span lines")                                                     \
	X(completion_temperature, "completion.temperature", CONFIG_KIND_DOUBLE, double, 0.2, NULL, \
	  0, 2, NULL, CONFIG_SCOPE_LANGUAGE, "sampling temperature for the sampled candidates")    \
	X(completion_top_p, "completion.topP", CONFIG_KIND_DOUBLE, double, 0.95, NULL, 0, 1, NULL, \
	  CONFIG_SCOPE_LANGUAGE, "nucleus sampling threshold for the sampled candidates")          \
	X(completion_min_confidence, "completion.minConfidence", CONFIG_KIND_DOUBLE, double, 0.0,  \
	  NULL, 0, 1, "auto", CONFIG_SCOPE_LANGUAGE,                                               \
	  "below this confidence nothing is shown; auto: learned per language and shape from "     \
	  "what was accepted")                                                                     \
	X(completion_from_document, "completion.fromDocument", CONFIG_KIND_BOOL, bool, 1, NULL, 0, \
	  1, NULL, CONFIG_SCOPE_LANGUAGE,                                                          \
	  "also offer how the line continues elsewhere in the document, scored by the model")      \
	X(completion_prompt_lookup, "completion.promptLookup", CONFIG_KIND_BOOL, bool, 1, NULL, 0, \
	  1, NULL, CONFIG_SCOPE_LANGUAGE,                                                          \
	  "draft tokens by finding the last ones earlier in the prompt, checked in one forward "   \
	  "pass (same output, fewer decode steps)")                                                \
	X(completion_draft_model, "completion.draftModel", CONFIG_KIND_STRING, char *, 0, NULL, 0, \
	  0, NULL, CONFIG_SCOPE_GLOBAL,                                                            \
	  "a small model of the same vocabulary (a GGUF path, or a name of `infill models` once "  \
	  "pulled) that drafts tokens the model checks in one forward pass (greedy output "        \
	  "unchanged, sampled ones keep their law)")                                               \
	X(completion_stop, "completion.stop", CONFIG_KIND_STRLIST, char **, 0, NULL, 0, 64, NULL,  \
	  CONFIG_SCOPE_LANGUAGE, "extra stop strings (added to the language's own)")               \
	X(context_prefix_tokens, "context.prefixTokens", CONFIG_KIND_INT, int, 1024, NULL, 0,      \
	  65536, NULL, CONFIG_SCOPE_LANGUAGE, "token budget for text before the cursor")           \
	X(context_suffix_tokens, "context.suffixTokens", CONFIG_KIND_INT, int, 192, NULL, 0,       \
	  65536, NULL, CONFIG_SCOPE_LANGUAGE, "token budget for text after the cursor")            \
	X(context_extra_tokens, "context.extraTokens", CONFIG_KIND_INT, int, 512, NULL, 0, 65536,  \
	  NULL, CONFIG_SCOPE_LANGUAGE,                                                             \
	  "token budget for context from elsewhere (definitions, other files)")                    \
	X(context_project, "context.project", CONFIG_KIND_BOOL, bool, 1, NULL, 0, 1, NULL,         \
	  CONFIG_SCOPE_LANGUAGE,                                                                   \
	  "add context from the rest of the project within context.extraTokens: definitions "      \
	  "from imported files, similar chunks of open documents, recent edits")                   \
	X(context_index_max_files, "context.index.maxFiles", CONFIG_KIND_INT, int, 5000, NULL, 0,  \
	  1000000, NULL, CONFIG_SCOPE_GLOBAL,                                                      \
	  "files the workspace index reads at most (0: no index)")                                 \
	X(context_index_max_mb, "context.index.maxMB", CONFIG_KIND_INT, int, 64, NULL, 1, 4096,    \
	  NULL, CONFIG_SCOPE_GLOBAL, "memory the workspace index keeps at most (MiB)")             \
	X(fim_template, "fim.template", CONFIG_KIND_STRING, char *, 0, "auto", 0, 0, NULL,         \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "auto, deepseek, qwen, starcoder, codellama, codegemma, or a custom string with "        \
	  "{prefix} {suffix}")                                                                     \
	X(next_edit_format, "nextEdit.format", CONFIG_KIND_ENUM, enum config_nextedit_format,      \
	  CONFIG_NEXTEDIT_FIM, NULL, 0, 2, "fim|zeta|auto", CONFIG_SCOPE_GLOBAL,                   \
	  "the prompt of a next edit the model writes: fim (any FIM model), zeta (Zed's Zeta), "   \
	  "auto (zeta when the model's vocabulary or file name says so, else fim)")                \
	X(log_level, "log.level", CONFIG_KIND_ENUM, enum config_log_level, CONFIG_LOG_INFO, NULL,  \
	  0, 4, "error|warn|info|debug|trace", CONFIG_SCOPE_GLOBAL, "log verbosity")               \
	X(log_message_text, "log.messageText", CONFIG_KIND_BOOL, bool, 0, NULL, 0, 1, NULL,        \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "at trace level, log message bodies (document text) too; off: only method, id, size")    \
	X(max_message_mb, "maxMessageMB", CONFIG_KIND_INT, int, 64, NULL, 1, 4096, NULL,           \
	  CONFIG_SCOPE_GLOBAL, "largest LSP message accepted (MiB); larger ones are skipped")      \
	X(metrics_file, "metrics.file", CONFIG_KIND_STRING, char *, 0, NULL, 0, 0, NULL,           \
	  CONFIG_SCOPE_GLOBAL,                                                                     \
	  "write Prometheus text-format metrics to this file every 5 s, atomically (for "          \
	  "node_exporter's textfile collector); unset: off; not from a project file")

/* Effective values. Strings and lists belong to the struct config that
 * returned them (borrowed). */
struct settings {
#define CONFIG_FIELD_(field, key, kind, ctype, dnum, dstr, lo, hi, names, scope, doc) ctype field;
	CONFIG_SETTINGS(CONFIG_FIELD_)
#undef CONFIG_FIELD_
};

enum config_layer {
	CONFIG_LAYER_USER,    /* $XDG_CONFIG_HOME/infill/config.json */
	CONFIG_LAYER_PROJECT, /* .infill.json at the workspace root */
	CONFIG_LAYER_INIT,    /* initializationOptions */
	CONFIG_LAYER_CLIENT,  /* workspace/configuration, section "infill" */
	CONFIG_LAYER_FLAGS,   /* command-line flags */
	CONFIG_LAYER_COUNT,
};

/* Receives one human-readable warning (no trailing newline), e.g.
 * `infill: setting "completion.candidates" must be an integer 1..16; keeping 3`.
 * message is borrowed for the duration of the call. */
typedef void (*config_warn_fn)(void *ud, const char *message);

struct config;

/* A new configuration holding the defaults, or NULL when out of memory.
 * Free with config_free. */
struct config *config_new(void);

/* Frees the configuration; accepts NULL. */
void config_free(struct config *cfg);

/* Replaces one layer with the settings in obj (borrowed: the config copies
 * what it keeps; NULL clears the layer). Bad entries are reported through
 * warn (may be NULL) and skipped; the rest take effect. Returns 0, -EINVAL
 * when obj is neither an object nor NULL (the layer is kept, warn says so),
 * or -ENOMEM (the layer is kept). */
int config_set_layer(struct config *cfg, enum config_layer layer, json_t *obj, config_warn_fn warn,
                     void *ud);

/* Loads a layer from a JSON file. A missing file is not an error: the layer
 * becomes empty and 0 is returned. An unreadable file or bad JSON warns with
 * the file name, line and column, keeps the previous layer and returns
 * -EINVAL (or the negative errno of the failed read). */
int config_load_file(struct config *cfg, enum config_layer layer, const char *path,
                     config_warn_fn warn, void *ud);

/* The effective settings for a language (NULL: the global ones). Borrowed:
 * valid until the next config_set_layer, config_load_file or config_free. */
const struct settings *config_get(const struct config *cfg, const char *language_id);

/* The settings table as a Markdown table (key | default | meaning), for
 * docs/settings.md. Allocated with malloc; the caller frees it. NULL when out of
 * memory. */
char *config_settings_markdown(void);

/* Name of a layer for messages ("user file", "initializationOptions", ...). */
const char *config_layer_name(enum config_layer layer);

/* Whether a project file (.infill.json) is limited in setting key: NULL when
 * not, else why (static text), with *max (may be NULL) the most it may set
 * (an int, or the enum index for log.level) or -1 when it may not set the
 * key at all. */
const char *config_project_rule(const char *key, int *max);

#endif
