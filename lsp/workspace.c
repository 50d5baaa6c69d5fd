/*
 * workspace.c - wiring the configuration layers (config.h) to where they
 * come from: the user file, .infill.json at the workspace root,
 * initializationOptions, and workspace/configuration (pulled after
 * initialized when the client supports it, and again after every
 * workspace/didChangeConfiguration). .infill.json is read again when it is
 * saved in the editor or the client reports it changed on disk
 * (workspace/didChangeWatchedFiles; project.c asks for the watcher). Warnings about bad values go to the
 * user with window/showMessage, naming the key.
 */
#include "server_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void warn_user(void *ud, const char *message)
{
	struct server *s = ud;
	log_warn(s->log, "%s", message);
	server_show_message(s, MESSAGE_WARNING, "%s", message);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

char *workspace_uri_to_path(const char *uri)
{
	if (!uri || strncasecmp(uri, "file://", 7)) return NULL;
	const char *p = uri + 7;
	if (*p != '/') { /* file://host/path: only the local host is ours */
		const char *slash = strchr(p, '/');
		if (!slash || (strncmp(p, "localhost/", 10) != 0)) return NULL;
		p = slash;
	}
	char *out = malloc(strlen(p) + 1), *o = out;
	if (!out) return NULL;
	for (; *p && *p != '?' && *p != '#'; p++) {
		int hi, lo;
		if (*p == '%' && (hi = hexval(p[1])) >= 0 && (lo = hexval(p[2])) >= 0) {
			*o++ = (char)(hi * 16 + lo);
			p += 2;
		} else {
			*o++ = *p;
		}
	}
	*o = 0;
	return out;
}

char *workspace_path_to_uri(const char *path)
{
	if (!path || path[0] != '/') return NULL;
	char *out = malloc(strlen(path) * 3 + 8), *o = out;
	if (!out) return NULL;
	o += sprintf(o, "file://");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		/* RFC 3986's unreserved characters and the separator stay */
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("/-._~", *p))
			*o++ = (char)*p;
		else
			o += sprintf(o, "%%%02X", *p);
	}
	*o = 0;
	return out;
}

static char *user_config_path(struct server *s)
{
	if (s->user_config_path) return s->user_config_path[0] ? strdup(s->user_config_path) : NULL;
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char buf[4096];
	if (xdg && xdg[0] == '/')
		snprintf(buf, sizeof buf, "%s/infill/config.json", xdg);
	else if (home && home[0])
		snprintf(buf, sizeof buf, "%s/.config/infill/config.json", home);
	else
		return NULL;
	return strdup(buf);
}

static char *find_root(json_t *params)
{
	char *root = workspace_uri_to_path(json_get_string(params, "rootUri"));
	if (root) return root;
	json_t *folders = json_object_get(params, "workspaceFolders");
	if (json_is_array(folders) && json_array_size(folders)) {
		root = workspace_uri_to_path(json_get_string(json_array_get(folders, 0), "uri"));
		if (root) return root;
	}
	const char *path = json_get_string(params, "rootPath");
	return path && path[0] ? strdup(path) : NULL;
}

static void load_project(struct server *s)
{
	if (!s->root_path) return;
	size_t n = strlen(s->root_path) + sizeof "/.infill.json";
	char *path = malloc(n);
	if (!path) return;
	snprintf(path, n, "%s/.infill.json", s->root_path);
	config_load_file(s->config, CONFIG_LAYER_PROJECT, path, warn_user, s);
	free(path);
}

void workspace_configure_initial(struct server *s, json_t *params)
{
	char *user = user_config_path(s);
	if (user) {
		log_debug(s->log, "user settings: %s", user);
		config_load_file(s->config, CONFIG_LAYER_USER, user, warn_user, s);
		free(user);
	}
	free(s->root_path);
	s->root_path = find_root(params);
	if (s->root_path) log_info(s->log, "workspace root: %s", s->root_path);
	load_project(s);
	json_t *init = json_object_get(params, "initializationOptions");
	if (init && !json_is_null(init))
		config_set_layer(s->config, CONFIG_LAYER_INIT, init, warn_user, s);
	workspace_apply(s);
}

void workspace_file_saved(struct server *s, const char *uri)
{
	char *path = workspace_uri_to_path(uri);
	if (!path || !s->root_path) {
		free(path);
		return;
	}
	size_t n = strlen(s->root_path);
	if (!strncmp(path, s->root_path, n) && !strcmp(path + n, "/.infill.json")) {
		log_info(s->log, "%s changed: reloading the project settings", path);
		load_project(s);
		workspace_apply(s);
	}
	free(path);
}

static void on_configuration(struct server *s, json_t *result, json_t *error, void *ud)
{
	(void)ud;
	if (error || s->finished) return;
	json_t *item = json_array_get(result, 0);
	if (!json_is_array(result)) {
		log_warn(s->log, "workspace/configuration answered with something not an array");
		return;
	}
	/* null: the client has no "infill" section, so nothing overrides */
	config_set_layer(s->config, CONFIG_LAYER_CLIENT, json_is_null(item) ? NULL : item,
	                 warn_user, s);
	workspace_apply(s);
}

void workspace_pull_configuration(struct server *s)
{
	if (!s->client_configuration) return;
	server_request(s, "workspace/configuration",
	               json_pack("{s:[{s:s}]}", "items", "section", "infill"), on_configuration,
	               NULL);
}

void workspace_did_change_configuration(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	if (s->client_configuration) {
		/* Pull mode: the notification's payload is often null; ask. */
		workspace_pull_configuration(s);
		return;
	}
	json_t *settings = json_object_get(params, "settings");
	json_t *ours = json_object_get(settings, "infill");
	if (!ours) return; /* nothing for us in it */
	config_set_layer(s->config, CONFIG_LAYER_CLIENT, json_is_null(ours) ? NULL : ours,
	                 warn_user, s);
	workspace_apply(s);
}

void workspace_apply(struct server *s)
{
	const struct settings *g = config_get(s->config, NULL);
	if (!s->log_level_fixed)
		log_set_level(s->log, (enum log_level)g->log_level); /* same order */
	s->log_text = g->log_message_text;
	s->max_message = (size_t)g->max_message_mb << 20;
	rpc_frame_reader_set_max(s->reader, s->max_message);
	if (s->pipeline) pipeline_configure(s->pipeline, g);
	metrics_apply(s->metrics, g->metrics_file);
}

/* ---- infill/settings -------------------------------------------------- */

static json_t *setting_json(const void *field, enum config_kind kind, const char *names)
{
	switch (kind) {
	case CONFIG_KIND_BOOL: return json_boolean(*(const bool *)field);
	case CONFIG_KIND_INT: return json_integer(*(const int *)field);
	case CONFIG_KIND_DOUBLE: {
		/* a negative value is names' -1 - index ("auto") */
		double d = *(const double *)field;
		if (d < 0 && names) {
			const char *p = names;
			for (int k = (int)(-1 - d); p && k > 0; k--) {
				p = strchr(p, '|');
				if (p) p++;
			}
			if (p) return json_stringn(p, strcspn(p, "|"));
		}
		return json_real(d);
	}
	case CONFIG_KIND_STRING: {
		const char *v;
		memcpy(&v, field, sizeof v);
		return v ? json_string(v) : json_null();
	}
	case CONFIG_KIND_ENUM: {
		int v; /* every settings enum is int-sized */
		memcpy(&v, field, sizeof v);
		for (const char *p = names; p; v--) {
			const char *bar = strchr(p, '|');
			if (v == 0) return json_stringn(p, bar ? (size_t)(bar - p) : strlen(p));
			p = bar ? bar + 1 : NULL;
		}
		return json_null();
	}
	case CONFIG_KIND_STRLIST: {
		char **list;
		memcpy(&list, field, sizeof list);
		json_t *a = json_array();
		for (size_t i = 0; list && list[i]; i++)
			json_array_append_new(a, json_string(list[i]));
		return a;
	}
	}
	return json_null();
}

/* infill/settings {languageId?}: the effective settings, keyed by their
 * dotted names, for tests and for "why is this setting not applied". */
void workspace_show_settings(struct server *s, json_t *id, json_t *params)
{
	const struct settings *st = config_get(s->config, json_get_string(params, "languageId"));
	json_t *out = json_object();
#define X(field, key, kind, ctype, dnum, dstr, lo, hi, names, scope, doc) \
	json_object_set_new(out, key, setting_json(&st->field, kind, names));
	CONFIG_SETTINGS(X)
#undef X
	server_reply(s, id, out);
}

_Static_assert((int)CONFIG_LOG_TRACE == (int)LOG_LEVEL_TRACE &&
                       (int)CONFIG_LOG_ERROR == (int)LOG_LEVEL_ERROR,
               "log.level values map one to one onto enum log_level");

/* workspace/didChangeWatchedFiles {changes: [{uri, type}]}: created,
 * changed and deleted files alike are read again (or dropped); the
 * project's .infill.json is read again as settings (deleted: its layer
 * goes). */
void workspace_did_change_watched_files(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	json_t *changes = json_object_get(params, "changes");
	size_t i;
	json_t *ch;
	json_array_foreach(changes, i, ch)
	{
		const char *uri = json_get_string(ch, "uri");
		if (!uri) continue;
		project_file_changed(s->project, uri);
		workspace_file_saved(s, uri);
	}
}
