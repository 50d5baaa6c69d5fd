/*
 * config.c - settings layers merged into struct settings, driven by the
 * CONFIG_SETTINGS table in config.h.
 *
 * Each layer is stored as validated, flattened JSON: a "global" object of
 * dotted keys ({"completion.debounceMs": 30}) and a "languages" object of
 * such objects per language id. Validation happens when a layer is set, so
 * merging never fails: defaults, then each layer's global keys in order,
 * then (per language) each layer's keys for that language in order. Strings
 * in the effective settings point into the stored layer JSON; stop lists are
 * arrays this file allocates. Both live until the next recompute.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the table ------------------------------------------------------------ */

struct desc {
	const char *key;
	enum config_kind kind;
	size_t offset; /* of the field in struct settings */
	double dnum;
	const char *dstr;
	double lo, hi;
	const char *names; /* "a|b|c" for enums */
	int scope;
	const char *doc;
};

/* A settings file larger than this is not one (real ones are < 4 KiB). */
#define CONFIG_FILE_MAX (1 << 20)

static const struct desc descs[] = {
#define CONFIG_DESC_(field, key, kind, ctype, dnum, dstr, lo, hi, names, scope, doc) \
	{ key, kind, offsetof(struct settings, field), dnum, dstr, lo, hi, names, scope, doc },
	CONFIG_SETTINGS(CONFIG_DESC_)
#undef CONFIG_DESC_
};

enum { NDESCS = sizeof descs / sizeof descs[0] };

/* Enum fields are written through int: every enum in config.h fits. */
_Static_assert(sizeof(enum config_backend) == sizeof(int), "enum size");
_Static_assert(sizeof(enum config_kv_type) == sizeof(int), "enum size");
_Static_assert(sizeof(enum config_multiline) == sizeof(int), "enum size");
_Static_assert(sizeof(enum config_log_level) == sizeof(int), "enum size");
_Static_assert(sizeof(enum config_nextedit_format) == sizeof(int), "enum size");

static const struct desc *desc_find(const char *key)
{
	for (size_t i = 0; i < NDESCS; i++)
		if (strcmp(descs[i].key, key) == 0) return &descs[i];
	return NULL;
}

/* True when some key starts with "prefix." (so prefix names a group). */
static int desc_is_group(const char *prefix)
{
	size_t n = strlen(prefix);
	for (size_t i = 0; i < NDESCS; i++)
		if (strncmp(descs[i].key, prefix, n) == 0 && descs[i].key[n] == '.') return 1;
	return 0;
}

/* The enum value of `name` in "a|b|c", or -1. */
static int enum_index(const char *names, const char *name)
{
	size_t n = strlen(name);
	int idx = 0;
	for (const char *p = names; *p; idx++) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0) return idx;
		if (!bar) break;
		p = bar + 1;
	}
	return -1;
}

/* Writes the idx-th name of "a|b|c" into out. */
static void enum_name(const char *names, int idx, char *out, size_t cap)
{
	const char *p = names;
	for (int i = 0; i < idx && p; i++) {
		p = strchr(p, '|');
		if (p) p++;
	}
	if (!p) {
		snprintf(out, cap, "?");
		return;
	}
	const char *bar = strchr(p, '|');
	int len = bar ? (int)(bar - p) : (int)strlen(p);
	snprintf(out, cap, "%.*s", len, p);
}

/* "an integer 1..16" and the like: what a value must be. */
static void desc_expect(const struct desc *d, char *out, size_t cap)
{
	switch (d->kind) {
	case CONFIG_KIND_BOOL: snprintf(out, cap, "true or false"); break;
	case CONFIG_KIND_INT: snprintf(out, cap, "an integer %.0f..%.0f", d->lo, d->hi); break;
	case CONFIG_KIND_DOUBLE:
		if (d->names)
			snprintf(out, cap, "a number %g..%g or \"%s\"", d->lo, d->hi, d->names);
		else
			snprintf(out, cap, "a number %g..%g", d->lo, d->hi);
		break;
	case CONFIG_KIND_STRING: snprintf(out, cap, "a string"); break;
	case CONFIG_KIND_ENUM: {
		/* "a|b|c" -> "one of a, b, c" */
		size_t n = (size_t)snprintf(out, cap, "one of ");
		for (const char *p = d->names; *p && n + 3 < cap; p++) {
			if (*p == '|') {
				out[n++] = ',';
				out[n++] = ' ';
			} else {
				out[n++] = *p;
			}
		}
		out[n < cap ? n : cap - 1] = '\0';
		break;
	}
	case CONFIG_KIND_STRLIST:
		snprintf(out, cap, "an array of at most %.0f strings", d->hi);
		break;
	}
}

/* ---- values ------------------------------------------------------------- */

static void *field_at(struct settings *s, const struct desc *d)
{
	return (char *)s + d->offset;
}

static const void *field_at_const(const struct settings *s, const struct desc *d)
{
	return (const char *)s + d->offset;
}

/* A field's value as text, for "keeping X" and the Markdown defaults. */
static void value_text(const struct settings *s, const struct desc *d, char *out, size_t cap)
{
	const void *f = field_at_const(s, d);
	switch (d->kind) {
	case CONFIG_KIND_BOOL: snprintf(out, cap, "%s", *(const bool *)f ? "true" : "false"); break;
	case CONFIG_KIND_INT: snprintf(out, cap, "%d", *(const int *)f); break;
	case CONFIG_KIND_DOUBLE:
		if (d->names && *(const double *)f < 0)
			enum_name(d->names, (int)(-1 - *(const double *)f), out, cap);
		else
			snprintf(out, cap, "%g", *(const double *)f);
		break;
	case CONFIG_KIND_STRING: {
		const char *v = *(char *const *)f;
		if (v)
			snprintf(out, cap, "\"%s\"", v);
		else
			snprintf(out, cap, "unset");
		break;
	}
	case CONFIG_KIND_ENUM: enum_name(d->names, *(const int *)f, out, cap); break;
	case CONFIG_KIND_STRLIST: {
		char *const *v = *(char **const *)f;
		size_t n = (size_t)snprintf(out, cap, "[");
		for (size_t i = 0; v && v[i] && n + 4 < cap; i++)
			n += (size_t)snprintf(out + n, cap - n, "%s\"%s\"", i ? ", " : "", v[i]);
		if (n + 2 < cap) snprintf(out + n, cap - n, "]");
		break;
	}
	}
}

/* Whether a JSON value is acceptable for a setting. */
static int value_ok(const struct desc *d, json_t *v)
{
	switch (d->kind) {
	case CONFIG_KIND_BOOL: return json_is_boolean(v);
	case CONFIG_KIND_INT: {
		/* 30.0 is accepted as 30; the range check comes before the cast
		 * so the cast is always defined. */
		if (!json_is_number(v)) return 0;
		double x = json_number_value(v);
		if (!(x >= d->lo && x <= d->hi)) return 0;
		return json_is_integer(v) || x == (double)(long long)x;
	}
	case CONFIG_KIND_DOUBLE: {
		/* a double with names also takes those (stored as -1 - index) */
		if (d->names && json_is_string(v))
			return enum_index(d->names, json_string_value(v)) >= 0;
		if (!json_is_number(v)) return 0;
		double x = json_number_value(v);
		return x >= d->lo && x <= d->hi;
	}
	case CONFIG_KIND_STRING: return json_is_string(v);
	case CONFIG_KIND_ENUM:
		return json_is_string(v) && enum_index(d->names, json_string_value(v)) >= 0;
	case CONFIG_KIND_STRLIST: {
		if (!json_is_array(v) || (double)json_array_size(v) > d->hi) return 0;
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
		{
			if (!json_is_string(e)) return 0;
		}
		return 1;
	}
	}
	return 0;
}

static char **strlist_new(json_t *arr)
{
	size_t n = arr ? json_array_size(arr) : 0;
	char **l = calloc(n + 1, sizeof *l);
	if (!l) return NULL;
	for (size_t i = 0; i < n; i++) l[i] = (char *)json_string_value(json_array_get(arr, i));
	return l;
}

static char **strlist_dup(char **src)
{
	size_t n = 0;
	while (src && src[n]) n++;
	char **l = calloc(n + 1, sizeof *l);
	if (l && n) memcpy(l, src, n * sizeof *l);
	return l;
}

/* Stores an already validated value. Returns 0 or -ENOMEM. */
static int value_store(struct settings *s, const struct desc *d, json_t *v)
{
	void *f = field_at(s, d);
	switch (d->kind) {
	case CONFIG_KIND_BOOL: *(bool *)f = json_is_true(v); break;
	case CONFIG_KIND_INT: *(int *)f = (int)json_number_value(v); break;
	case CONFIG_KIND_DOUBLE:
		if (json_is_string(v))
			*(double *)f = -1.0 - enum_index(d->names, json_string_value(v));
		else
			*(double *)f = json_number_value(v);
		break;
	case CONFIG_KIND_STRING:
		/* Borrowed from the layer JSON; callers must not write through it. */
		*(char **)f = (char *)json_string_value(v);
		break;
	case CONFIG_KIND_ENUM: *(int *)f = enum_index(d->names, json_string_value(v)); break;
	case CONFIG_KIND_STRLIST: {
		char **l = strlist_new(v);
		if (!l) return -ENOMEM;
		free(*(char ***)f);
		*(char ***)f = l;
		break;
	}
	}
	return 0;
}

static int settings_defaults(struct settings *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < NDESCS; i++) {
		const struct desc *d = &descs[i];
		void *f = field_at(s, d);
		switch (d->kind) {
		case CONFIG_KIND_BOOL: *(bool *)f = d->dnum != 0; break;
		case CONFIG_KIND_INT:
		case CONFIG_KIND_ENUM: *(int *)f = (int)d->dnum; break;
		case CONFIG_KIND_DOUBLE: *(double *)f = d->dnum; break;
		case CONFIG_KIND_STRING:
			*(char **)f = (char *)d->dstr; /* static; never written through */
			break;
		case CONFIG_KIND_STRLIST:
			if (!(*(char ***)f = strlist_new(NULL))) return -ENOMEM;
			break;
		}
	}
	return 0;
}

/* Frees what a settings struct owns (its lists). */
static void settings_finish(struct settings *s)
{
	for (size_t i = 0; i < NDESCS; i++)
		if (descs[i].kind == CONFIG_KIND_STRLIST) {
			free(*(char ***)field_at(s, &descs[i]));
			*(char ***)field_at(s, &descs[i]) = NULL;
		}
}

static int settings_copy(struct settings *dst, const struct settings *src)
{
	*dst = *src;
	for (size_t i = 0; i < NDESCS; i++)
		if (descs[i].kind == CONFIG_KIND_STRLIST) {
			char ***f = field_at(dst, &descs[i]);
			*f = strlist_dup(*f);
			if (!*f) {
				settings_finish(dst);
				return -ENOMEM;
			}
		}
	return 0;
}

/* Applies a flat, validated object of dotted keys. */
static int settings_apply(struct settings *s, json_t *flat)
{
	const char *key;
	json_t *v;
	json_object_foreach(flat, key, v)
	{
		const struct desc *d = desc_find(key);
		if (d && value_store(s, d, v) != 0) return -ENOMEM;
	}
	return 0;
}

/* ---- the configuration ---------------------------------------------------- */

struct lang_settings {
	char *id;
	struct settings s;
};

struct layer {
	json_t *global;    /* {"dotted.key": value}, validated; NULL when empty */
	json_t *languages; /* {"id": {"dotted.key": value}}; NULL when empty */
};

struct config {
	struct layer layers[CONFIG_LAYER_COUNT];
	struct settings global;
	struct lang_settings *langs;
	size_t nlangs;
};

const char *config_layer_name(enum config_layer layer)
{
	switch (layer) {
	case CONFIG_LAYER_USER: return "user settings file";
	case CONFIG_LAYER_PROJECT: return ".infill.json";
	case CONFIG_LAYER_INIT: return "initializationOptions";
	case CONFIG_LAYER_CLIENT: return "workspace/configuration";
	case CONFIG_LAYER_FLAGS: return "command-line flags";
	case CONFIG_LAYER_COUNT: break;
	}
	return "settings";
}

static void computed_clear(struct config *cfg)
{
	settings_finish(&cfg->global);
	for (size_t i = 0; i < cfg->nlangs; i++) {
		free(cfg->langs[i].id);
		settings_finish(&cfg->langs[i].s);
	}
	free(cfg->langs);
	cfg->langs = NULL;
	cfg->nlangs = 0;
}

/* Rebuilds the effective settings from the layers into `out` fields of a
 * scratch config, so a failure leaves cfg's current view intact. */
static int computed_build(const struct config *cfg, struct settings *global,
                          struct lang_settings **langs_out, size_t *nlangs_out)
{
	struct lang_settings *langs = NULL;
	size_t nlangs = 0, cap = 0;
	if (settings_defaults(global) != 0) goto oom;
	for (int l = 0; l < CONFIG_LAYER_COUNT; l++)
		if (cfg->layers[l].global && settings_apply(global, cfg->layers[l].global) != 0)
			goto oom;
	for (int l = 0; l < CONFIG_LAYER_COUNT; l++) {
		const char *id;
		json_t *flat;
		if (!cfg->layers[l].languages) continue;
		json_object_foreach(cfg->layers[l].languages, id, flat)
		{
			size_t i;
			for (i = 0; i < nlangs; i++)
				if (strcmp(langs[i].id, id) == 0) break;
			if (i == nlangs) {
				if (nlangs == cap) {
					cap = cap ? cap * 2 : 8;
					struct lang_settings *p = realloc(langs, cap * sizeof *p);
					if (!p) goto oom;
					langs = p;
				}
				langs[i].id = strdup(id);
				if (!langs[i].id) goto oom;
				if (settings_copy(&langs[i].s, global) != 0) {
					free(langs[i].id);
					goto oom;
				}
				nlangs++;
			}
			if (settings_apply(&langs[i].s, flat) != 0) goto oom;
		}
	}
	*langs_out = langs;
	*nlangs_out = nlangs;
	return 0;
oom:
	settings_finish(global);
	for (size_t i = 0; i < nlangs; i++) {
		free(langs[i].id);
		settings_finish(&langs[i].s);
	}
	free(langs);
	return -ENOMEM;
}

static int recompute(struct config *cfg)
{
	struct settings g;
	struct lang_settings *langs;
	size_t n;
	int rc = computed_build(cfg, &g, &langs, &n);
	if (rc) return rc;
	computed_clear(cfg);
	cfg->global = g;
	cfg->langs = langs;
	cfg->nlangs = n;
	return 0;
}

struct config *config_new(void)
{
	struct config *cfg = calloc(1, sizeof *cfg);
	if (!cfg) return NULL;
	if (recompute(cfg) != 0) {
		free(cfg);
		return NULL;
	}
	return cfg;
}

void config_free(struct config *cfg)
{
	if (!cfg) return;
	computed_clear(cfg);
	for (int l = 0; l < CONFIG_LAYER_COUNT; l++) {
		json_decref(cfg->layers[l].global);
		json_decref(cfg->layers[l].languages);
	}
	free(cfg);
}

const struct settings *config_get(const struct config *cfg, const char *language_id)
{
	if (language_id)
		for (size_t i = 0; i < cfg->nlangs; i++)
			if (strcmp(cfg->langs[i].id, language_id) == 0) return &cfg->langs[i].s;
	return &cfg->global;
}

/* ---- parsing a layer -------------------------------------------------------- */

struct parse {
	const struct config *cfg;
	enum config_layer layer;
	const struct layer *old; /* the layer being replaced: bad values keep its value */
	const char *source;      /* for messages */
	config_warn_fn warn;
	void *ud;
	int oom;
};

static void warnf(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warnf(struct parse *p, const char *fmt, ...)
{
	if (!p->warn) return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	p->warn(p->ud, msg);
}

/* ---- what a project file may not do ---------------------------------------- */

/*
 * .infill.json comes with the repository, not from the user: a clone must
 * not be able to make the daemon load an arbitrary file as a model, write
 * document text to the log, or spend more threads or memory than the user
 * would (`threads: 1024` once ran 1,025 threads). max: the largest value
 * a project file may set (for log.level, the enum index), PROJECT_IGNORED:
 * not at all, PROJECT_CPUS: the online CPUs. The user's own layers (user
 * file, client settings, flags) are not limited.
 */
#define PROJECT_IGNORED (-1)
#define PROJECT_CPUS    (-2)

static const struct project_rule {
	const char *key;
	int max;
	const char *why;
} project_rules[] = {
	{ "model", PROJECT_IGNORED, "a repository does not choose the file loaded as a model" },
	{ "completion.draftModel", PROJECT_IGNORED,
	  "a repository does not choose the file loaded as a model" },
	{ "log.messageText", PROJECT_IGNORED, "only you decide whether document text is logged" },
	{ "log.level", CONFIG_LOG_INFO, "a more detailed log is your choice" },
	{ "threads", PROJECT_CPUS, "never more threads than CPUs" },
	{ "cache.memoryMB", 1024, "more memory is your choice" },
	{ "maxMessageMB", 64, "larger messages are your choice" },
	{ "completion.candidates", 8, "more work per keystroke is your choice" },
	{ "completion.maxTokens", 256, "more work per keystroke is your choice" },
	/* a cloned repository must not send the code (or the key) elsewhere */
	{ "backend", CONFIG_BACKEND_CUDA, "only you decide whether code is sent to a server" },
	{ "remote.url", PROJECT_IGNORED, "only you decide where code is sent" },
	{ "remote.apiKeyEnv", PROJECT_IGNORED, "only you decide which key is sent" },
	{ "remote.caFile", PROJECT_IGNORED, "only you decide which servers are trusted" },
	{ "remote.tokenizer", PROJECT_IGNORED, "a repository does not choose the files loaded" },
	{ "metrics.file", PROJECT_IGNORED, "a repository does not choose the files written" },
};

const char *config_project_rule(const char *key, int *max)
{
	for (size_t i = 0; i < sizeof project_rules / sizeof project_rules[0]; i++) {
		if (strcmp(project_rules[i].key, key)) continue;
		int m = project_rules[i].max;
		if (m == PROJECT_CPUS) {
			long cpus = sysconf(_SC_NPROCESSORS_ONLN);
			m = cpus < 1 ? 1 : (int)cpus;
		}
		if (max) *max = m;
		return project_rules[i].why;
	}
	return NULL;
}

/* The value a project file may set for d (a new reference), or NULL when it
 * may not set d at all; warns when it changed or dropped v. */
static json_t *project_filter(struct parse *p, const struct desc *d, json_t *v, const char *shown)
{
	int max;
	const char *why = config_project_rule(d->key, &max);
	if (!why) return json_incref(v);
	if (max == PROJECT_IGNORED) {
		warnf(p,
		      "infill: setting \"%s\" is ignored in a project file (%s): %s; set it in "
		      "your user settings",
		      shown, p->source, why);
		return NULL;
	}
	if (d->kind == CONFIG_KIND_ENUM) {
		int idx = enum_index(d->names, json_string_value(v));
		if (idx <= max) return json_incref(v);
		char most[32];
		enum_name(d->names, max, most, sizeof most);
		warnf(p,
		      "infill: setting \"%s\" above \"%s\" is ignored in a project file (%s): %s; "
		      "set it in your user settings",
		      shown, most, p->source, why);
		return NULL;
	}
	double x = json_number_value(v);
	if (x <= max) return json_incref(v);
	warnf(p, "infill: setting \"%s\" is at most %d in a project file (%s): %s; using %d", shown,
	      max, p->source, why, max);
	return json_integer(max);
}

/* Validates obj's members into flat (dotted keys). lang is the language id
 * when parsing languages.<id>, else NULL; prefix the group so far. */
static void parse_object(struct parse *p, json_t *obj, const char *prefix, const char *lang,
                         json_t *flat, json_t *languages)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		char full[256];
		if (prefix)
			snprintf(full, sizeof full, "%s.%s", prefix, key);
		else
			snprintf(full, sizeof full, "%s", key);
		char shown[320]; /* the key as the user wrote it, for messages */
		if (lang)
			snprintf(shown, sizeof shown, "languages.%s.%s", lang, full);
		else
			snprintf(shown, sizeof shown, "%s", full);

		if (!prefix && !lang && strcmp(full, "languages") == 0) {
			if (!json_is_object(v)) {
				warnf(p,
				      "infill: setting \"languages\" must be an object of language "
				      "ids (%s)",
				      p->source);
				continue;
			}
			const char *id;
			json_t *lobj;
			json_object_foreach(v, id, lobj)
			{
				if (!json_is_object(lobj)) {
					warnf(p,
					      "infill: setting \"languages.%s\" must be an object "
					      "(%s)",
					      id, p->source);
					continue;
				}
				json_t *lflat = json_object_get(languages, id);
				if (!lflat) {
					lflat = json_object();
					if (!lflat ||
					    json_object_set_new(languages, id, lflat) != 0) {
						p->oom = 1;
						return;
					}
				}
				parse_object(p, lobj, NULL, id, lflat, NULL);
			}
			continue;
		}
		if (!prefix && !lang && strcmp(full, "infill") == 0 && json_is_object(v)) {
			parse_object(p, v, NULL, NULL, flat, languages);
			continue;
		}
		const struct desc *d = desc_find(full);
		if (!d) {
			if (json_is_object(v) && desc_is_group(full))
				parse_object(p, v, full, lang, flat, languages);
			else
				warnf(p, "infill: unknown setting \"%s\" (%s); ignored", shown,
				      p->source);
			continue;
		}
		if (lang && d->scope != CONFIG_SCOPE_LANGUAGE) {
			warnf(p, "infill: setting \"%s\" cannot be set per language (%s); ignored",
			      shown, p->source);
			continue;
		}
		if (json_is_null(v)) continue; /* null: not set in this layer */
		json_t *keep = v;
		if (!value_ok(d, v)) {
			char expect[128], now[256];
			desc_expect(d, expect, sizeof expect);
			value_text(config_get(p->cfg, lang), d, now, sizeof now);
			warnf(p, "infill: setting \"%s\" must be %s; keeping %s (%s)", shown,
			      expect, now, p->source);
			/* Keep this layer's previous value for the key, if it had one. */
			json_t *old_flat = NULL;
			if (lang && p->old->languages)
				old_flat = json_object_get(p->old->languages, lang);
			else if (!lang)
				old_flat = p->old->global;
			keep = old_flat ? json_object_get(old_flat, full) : NULL;
			if (!keep) continue;
		}
		if (keep == v && p->layer == CONFIG_LAYER_PROJECT) {
			json_t *allowed = project_filter(p, d, v, shown);
			if (!allowed) continue;
			if (json_object_set_new(flat, full, allowed) != 0) p->oom = 1;
			continue;
		}
		if (json_object_set(flat, full, keep) != 0) p->oom = 1;
	}
}

static int set_layer(struct config *cfg, enum config_layer layer, json_t *obj, const char *source,
                     config_warn_fn warn, void *ud)
{
	if ((int)layer < 0 || layer >= CONFIG_LAYER_COUNT) return -EINVAL;
	struct layer *old = &cfg->layers[layer];
	if (obj && !json_is_object(obj)) {
		if (warn) {
			char msg[256];
			snprintf(msg, sizeof msg,
			         "infill: settings from %s must be a JSON object; ignored", source);
			warn(ud, msg);
		}
		return -EINVAL;
	}
	struct layer fresh = { NULL, NULL };
	if (obj) {
		fresh.global = json_object();
		fresh.languages = json_object();
		if (!fresh.global || !fresh.languages) goto oom;
		struct parse p = { cfg, layer, old, source, warn, ud, 0 };
		parse_object(&p, obj, NULL, NULL, fresh.global, fresh.languages);
		if (p.oom) goto oom;
	}
	struct layer prev = *old;
	*old = fresh;
	if (recompute(cfg) != 0) {
		*old = prev;
		goto oom;
	}
	json_decref(prev.global);
	json_decref(prev.languages);
	return 0;
oom:
	json_decref(fresh.global);
	json_decref(fresh.languages);
	return -ENOMEM;
}

int config_set_layer(struct config *cfg, enum config_layer layer, json_t *obj, config_warn_fn warn,
                     void *ud)
{
	return set_layer(cfg, layer, obj, config_layer_name(layer), warn, ud);
}

int config_load_file(struct config *cfg, enum config_layer layer, const char *path,
                     config_warn_fn warn, void *ud)
{
	char msg[1024];
	/* A settings file comes with a cloned repository: it may be a FIFO
	 * (open() would wait for a writer forever, and `initialize` with it) or
	 * a link to /proc/self/fd/0 (the client's own messages). O_NONBLOCK
	 * makes the open return at once; only a regular file of sane size is
	 * read, judged on the descriptor that was opened. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	const char *bad = NULL;
	if (fd >= 0 && fstat(fd, &st) != 0)
		bad = strerror(errno);
	else if (fd >= 0 && !S_ISREG(st.st_mode))
		bad = S_ISFIFO(st.st_mode)  ? "not a regular file (a FIFO or pipe)"
		      : S_ISDIR(st.st_mode) ? "not a regular file (a directory)"
		                            : "not a regular file (a device or socket)";
	else if (fd >= 0 && st.st_size > CONFIG_FILE_MAX)
		bad = "larger than 1 MiB, not a settings file";
	if (bad) {
		close(fd);
		if (warn) {
			snprintf(msg, sizeof msg,
			         "infill: %s is %s; not read, keeping its previous settings", path,
			         bad);
			warn(ud, msg);
		}
		return -EINVAL;
	}
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (!f) {
		int err = errno;
		if (fd >= 0) close(fd);
		if (err == ENOENT) return set_layer(cfg, layer, NULL, path, warn, ud);
		if (warn) {
			snprintf(msg, sizeof msg,
			         "infill: cannot read %s: %s; keeping its previous settings", path,
			         strerror(err));
			warn(ud, msg);
		}
		return -err;
	}
	json_error_t jerr;
	json_t *obj = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	int read_err = ferror(f);
	/* An empty (or all-whitespace) file is an empty layer, not an error. */
	int empty = 0;
	if (!obj && !read_err) {
		rewind(f);
		int c;
		empty = 1;
		while ((c = fgetc(f)) != EOF)
			if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
				empty = 0;
				break;
			}
	}
	fclose(f);
	if (empty) return set_layer(cfg, layer, NULL, path, warn, ud);
	if (!obj) {
		if (warn) {
			if (read_err)
				snprintf(msg, sizeof msg,
				         "infill: cannot read %s; keeping its previous settings",
				         path);
			else
				snprintf(msg, sizeof msg,
				         "infill: %s:%d:%d: bad JSON: %s; keeping its previous "
				         "settings",
				         path, jerr.line, jerr.column, jerr.text);
			warn(ud, msg);
		}
		return read_err ? -EIO : -EINVAL;
	}
	int rc = set_layer(cfg, layer, obj, path, warn, ud);
	json_decref(obj);
	return rc;
}

/* ---- documentation --------------------------------------------------------- */

char *config_settings_markdown(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) return NULL;
	struct settings defs;
	if (settings_defaults(&defs) != 0) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fprintf(f, "| key | value | default | per language | meaning |\n");
	fprintf(f, "|---|---|---|---|---|\n");
	for (size_t i = 0; i < NDESCS; i++) {
		const struct desc *d = &descs[i];
		char expect[128], def[256];
		desc_expect(d, expect, sizeof expect);
		value_text(&defs, d, def, sizeof def);
		fprintf(f, "| `%s` | %s | `%s` | %s | %s |\n", d->key, expect, def,
		        d->scope == CONFIG_SCOPE_LANGUAGE ? "yes" : "no", d->doc);
	}
	settings_finish(&defs);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
