/*
 * completion_request.c - owning and copying the parts of a completion
 * request, shared by every pipeline implementation.
 *
 * Settings are deep-copied field by field from the settings table
 * (config.h's CONFIG_SETTINGS), so a setting added there is copied here
 * without an edit: a job outlives the config state it was resolved from.
 */
#include "pipeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int copy_string(void *field)
{
	char *s;
	memcpy(&s, field, sizeof s);
	if (!s) return 0;
	s = strdup(s);
	memcpy(field, &s, sizeof s);
	return s ? 0 : -ENOMEM;
}

static int copy_strlist(void *field)
{
	char **list;
	memcpy(&list, field, sizeof list);
	if (!list) return 0;
	size_t n = 0;
	while (list[n]) n++;
	char **copy = calloc(n + 1, sizeof *copy);
	int rc = copy ? 0 : -ENOMEM;
	for (size_t i = 0; copy && i < n; i++) {
		copy[i] = strdup(list[i]);
		if (!copy[i]) rc = -ENOMEM;
	}
	memcpy(field, &copy, sizeof copy);
	return rc;
}

static void free_field(void *field, enum config_kind kind)
{
	if (kind == CONFIG_KIND_STRING) {
		char *s;
		memcpy(&s, field, sizeof s);
		free(s);
	} else if (kind == CONFIG_KIND_STRLIST) {
		char **list;
		memcpy(&list, field, sizeof list);
		for (size_t i = 0; list && list[i]; i++) free(list[i]);
		free(list);
	}
}

void completion_settings_finish(struct settings *s)
{
#define X(field, key, kind, ctype, dnum, dstr, lo, hi, names, scope, doc) \
	free_field(&s->field, kind);                                      \
	memset(&s->field, 0, sizeof s->field);
	CONFIG_SETTINGS(X)
#undef X
}

int completion_settings_copy(struct settings *dst, const struct settings *src)
{
	int rc = 0;
	*dst = *src;
#define X(field, key, kind, ctype, dnum, dstr, lo, hi, names, scope, doc)         \
	if (kind == CONFIG_KIND_STRING && copy_string(&dst->field)) rc = -ENOMEM; \
	if (kind == CONFIG_KIND_STRLIST && copy_strlist(&dst->field)) rc = -ENOMEM;
	CONFIG_SETTINGS(X)
#undef X
	if (rc) completion_settings_finish(dst);
	return rc;
}

static char *dup_bytes(const char *s, size_t n)
{
	if (!s) return NULL;
	char *t = malloc(n + 1);
	if (t) {
		memcpy(t, s, n);
		t[n] = 0;
	}
	return t;
}

struct completion_request *completion_request_clone(const struct completion_request *req)
{
	struct completion_request *c = calloc(1, sizeof *c);
	if (!c) return NULL;
	*c = *req;
	c->uri = dup_bytes(req->uri, req->uri ? strlen(req->uri) : 0);
	c->language_id =
	        dup_bytes(req->language_id, req->language_id ? strlen(req->language_id) : 0);
	c->text = dup_bytes(req->text, req->text_len);
	c->trigger_character =
	        dup_bytes(req->trigger_character,
	                  req->trigger_character ? strlen(req->trigger_character) : 0);
	c->selected_text =
	        dup_bytes(req->selected_text, req->selected_text ? strlen(req->selected_text) : 0);
	bool settings_ok = !completion_settings_copy(&c->settings, &req->settings);
	if (!settings_ok) memset(&c->settings, 0, sizeof c->settings);
	if (!settings_ok || (req->uri && !c->uri) || (req->language_id && !c->language_id) ||
	    (req->text && !c->text) || (req->trigger_character && !c->trigger_character) ||
	    (req->selected_text && !c->selected_text)) {
		completion_request_free(c);
		return NULL;
	}
	return c;
}

void completion_request_free(struct completion_request *req)
{
	if (!req) return;
	free(req->uri);
	free(req->language_id);
	free(req->text);
	free(req->trigger_character);
	free(req->selected_text);
	completion_settings_finish(&req->settings);
	free(req);
}
