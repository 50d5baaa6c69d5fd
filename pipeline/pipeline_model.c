/*
 * pipeline_model.c - models by name on the loop thread: what a `model`
 * setting that names a catalog entry (core/catalog.h) loads, the message
 * when that entry is not downloaded yet, and the one note per session that
 * the embedded model is a small stand-in. pipeline.c calls these from
 * pipeline_configure and deliver.
 */
#include "pipeline_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"

/* host.message types (window/showMessage's MessageType) */
#define TELL_WARNING 2
#define TELL_INFO    3

static void tell(struct pipeline *p, int type, const char *text)
{
	if (p->host.message)
		p->host.message(p->host.ud, type, text);
	else
		log_warn(p->log, "%s", text);
}

/* Whether this `model` was already warned about (then not again). */
static bool told(struct pipeline *p, const char *model)
{
	if (p->told_model && !strcmp(p->told_model, model)) return true;
	free(p->told_model);
	p->told_model = strdup(model);
	return false;
}

char *pipeline_model_path(struct pipeline *p, const char *model, bool fallback)
{
	char msg[900];
	struct catalog *cat = catalog_load(msg, sizeof msg);
	const struct catalog_entry *e;
	char *path;
	enum catalog_meaning m = catalog_resolve(cat, model, &path, &e);
	if (m == CATALOG_UNKNOWN && !told(p, model)) {
		/* the load then says it cannot open it, and falls back */
		const char *near[3];
		size_t n = catalog_near(cat, model, near, 3);
		int k = snprintf(msg, sizeof msg,
		                 "infill: \"model\": \"%s\" is neither a file nor a model of the "
		                 "catalog (`infill models` lists them)",
		                 model);
		for (size_t i = 0; i < n && k > 0 && (size_t)k < sizeof msg; i++)
			k += snprintf(msg + k, sizeof msg - (size_t)k, "%s%s",
			              i ? ", " : "; did you mean ", near[i]);
		tell(p, TELL_WARNING, msg);
	}
	if (m == CATALOG_NOT_DOWNLOADED) {
		if (!told(p, model)) {
			snprintf(msg, sizeof msg,
			         "infill: the model %s is not downloaded yet: run `infill pull %s` "
			         "(%s, into %s)%s",
			         e->name, model, e->size ? e->size : "size not listed",
			         path && strcmp(path, model) ? path : "the cache folder",
			         fallback ? "; the embedded model answers until then, and the "
			                    "first request after the download loads it"
			                  : "; the first request after the download loads it");
			tell(p, TELL_WARNING, msg);
		}
		if (fallback) {
			if (path && strcmp(path, model))
				p->awaited_model = path; /* pipeline_model_landed */
			else
				free(path);
			path = complete_default_model_path();
		}
	}
	catalog_free(cat);
	return path;
}

void pipeline_model_landed(struct pipeline *p)
{
	if (!p->awaited_model || access(p->awaited_model, R_OK)) return;
	char *path = p->awaited_model;
	p->awaited_model = NULL;
	char msg[600];
	snprintf(msg, sizeof msg, "infill: the model %.500s is downloaded now; loading it", path);
	tell(p, TELL_INFO, msg);
	struct complete_model_spec want = p->loaded.model;
	pipeline_load_ask(p, path, &want, complete_default_model_path());
}

void pipeline_model_tell_embedded(struct pipeline *p)
{
	if (p->told_embedded) return;
	p->told_embedded = true;
	char msg[600];
	struct catalog *cat = catalog_load(msg, sizeof msg);
	struct catalog_machine m;
	catalog_machine_read(&m);
	const struct catalog_entry *e = catalog_recommend(cat, &m);
	if (e)
		snprintf(msg, sizeof msg,
		         "infill: these suggestions come from the small embedded model. For real "
		         "ones "
		         "run `infill pull %s` (%s, suits this machine; `infill models` lists "
		         "others) "
		         "and set \"model\": \"%s\"",
		         e->model, e->size ? e->size : "size not listed", e->model);
	else
		snprintf(msg, sizeof msg,
		         "infill: these suggestions come from the small embedded model. For real "
		         "ones "
		         "see `infill models`, run `infill pull NAME` and set \"model\" to NAME");
	tell(p, TELL_INFO, msg);
	catalog_free(cat);
}
