/*
 * request.c - owning and copying the parts of a completion
 * request, shared by every pipeline implementation.
 *
 * Settings are deep-copied field by field from the settings table
 * (config.h's CONFIG_SETTINGS), so a setting added there is copied here
 * without an edit: a job outlives the config state it was resolved from.
 */
#include "pipeline.h"

#include <errno.h>
#include <stdbool.h>
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

/* A copy of the NUL-terminated string s, or of NULL; *failed set when out of memory. */
static char *dup_opt(const char *s, bool *failed)
{
	char *t = s ? strdup(s) : NULL;
	if (s && !t) *failed = true;
	return t;
}

struct completion_request *completion_request_clone(const struct completion_request *req)
{
	struct completion_request *c = calloc(1, sizeof *c);
	if (!c) return NULL;
	*c = *req;
	bool failed = false;
	c->uri = dup_opt(req->uri, &failed);
	c->language_id = dup_opt(req->language_id, &failed);
	c->trigger_character = dup_opt(req->trigger_character, &failed);
	c->selected_text = dup_opt(req->selected_text, &failed);
	c->text = NULL;
	if (req->text) { /* may hold NUL bytes: copied by length */
		c->text = malloc(req->text_len + 1);
		if (c->text) {
			memcpy(c->text, req->text, req->text_len);
			c->text[req->text_len] = 0;
		} else {
			failed = true;
		}
	}
	c->project_repo = dup_opt(req->project_repo, &failed);
	c->project_path = dup_opt(req->project_path, &failed);
	c->project = NULL;
	c->n_project = 0;
	c->project_lines = NULL;
	if (req->n_project) {
		c->project = calloc(req->n_project, sizeof *c->project);
		failed |= !c->project;
		for (size_t i = 0; c->project && i < req->n_project; i++) {
			struct completion_chunk *d = &c->project[i];
			const struct completion_chunk *o = &req->project[i];
			d->path = dup_opt(o->path, &failed);
			d->text = malloc(o->len + 1);
			if (d->text) {
				memcpy(d->text, o->text, o->len);
				d->text[o->len] = 0;
				d->len = o->len;
			} else {
				failed = true;
			}
			c->n_project = i + 1;
		}
	}
	if (req->project_lines) {
		c->project_lines = malloc(req->project_lines_len + 1);
		if (c->project_lines) {
			memcpy(c->project_lines, req->project_lines, req->project_lines_len);
			c->project_lines[req->project_lines_len] = 0;
		} else {
			failed = true;
		}
	}
	if (completion_settings_copy(&c->settings, &req->settings)) {
		memset(&c->settings, 0, sizeof c->settings);
		failed = true;
	}
	if (failed) {
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
	for (size_t i = 0; i < req->n_project; i++) {
		free(req->project[i].path);
		free(req->project[i].text);
	}
	free(req->project);
	free(req->project_lines);
	free(req->project_repo);
	free(req->project_path);
	completion_settings_finish(&req->settings);
	free(req);
}
