/*
 * remote_probe.c - what model an inference server serves (remote.h,
 * remote_probe): llama-server's GET /props (model_path), the OpenAI-style
 * GET /v1/models (data[].id), Ollama's POST /api/show (details.family,
 * general.architecture, general.basename). The pipeline picks the family's
 * FIM template from it when fim.template and remote.tokenizer are unset.
 * Blocking (libcurl's easy interface): it runs on the engine thread, never
 * on the loop.
 */
#include "remote.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_MAX_BODY (1 << 20) /* a /props with a long chat template fits */

struct body {
	char *data;
	size_t len;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;
	size_t n = size * nmemb;
	if (b->len + n > PROBE_MAX_BODY) return 0;
	char *grown = realloc(b->data, b->len + n + 1);
	if (!grown) return 0;
	memcpy(grown + b->len, data, n);
	b->data = grown;
	b->len += n;
	b->data[b->len] = 0;
	return n;
}

/* GET (post == NULL) or POST a JSON body to ep->url + path; the parsed
 * reply (new reference) or NULL when it failed or is no JSON object. */
static json_t *fetch(const struct remote_endpoint *ep, const char *path, const char *post,
                     long *status)
{
	CURL *e = curl_easy_init();
	if (!e) return NULL;
	size_t ul = strlen(ep->url);
	while (ul > 0 && ep->url[ul - 1] == '/') ul--;
	char url[2048];
	snprintf(url, sizeof url, "%.*s%s", (int)ul, ep->url, path);
	struct body b = { 0 };
	struct curl_slist *h = NULL;
	char auth[1024] = "";
	if (ep->api_key && ep->api_key[0]) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", ep->api_key);
		h = curl_slist_append(h, auth);
	}
	if (post) h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	long t = ep->timeout_ms > 0 && ep->timeout_ms < 5000 ? ep->timeout_ms : 5000;
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, t);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	if (h) curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	if (post) curl_easy_setopt(e, CURLOPT_POSTFIELDS, post);
	if (ep->ca_file) curl_easy_setopt(e, CURLOPT_CAINFO, ep->ca_file);
	CURLcode r = curl_easy_perform(e);
	*status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	if (auth[0]) memset(auth, 0, sizeof auth); /* the key does not outlive the call */
	json_t *j = r == CURLE_OK && *status == 200 && b.data ? json_loads(b.data, 0, NULL) : NULL;
	free(b.data);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

static void add(char *out, size_t out_len, const char *s)
{
	if (!s || !s[0]) return;
	size_t n = strlen(out);
	snprintf(out + n, out_len - n, "%s%s", n ? " " : "", s);
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int remote_probe(const struct remote_endpoint *ep, char *name, size_t name_len, const char **source,
                 char *msg, size_t msg_len)
{
	name[0] = 0;
	*source = NULL;
	long status = 0;
	json_t *j;
	if (ep->api != REMOTE_API_OLLAMA) {
		j = fetch(ep, "/props", NULL, &status); /* llama-server */
		if (j) {
			add(name, name_len, jstr(j, "model_path"));
			add(name, name_len, jstr(j, "model_alias"));
			if (name[0]) *source = "/props";
		}
		json_decref(j);
		if (name[0]) return 0;
		j = fetch(ep, "/v1/models", NULL, &status); /* vLLM, TGI, Ollama, ... */
		json_t *data = json_object_get(j, "data");
		for (size_t i = 0; i < json_array_size(data) && i < 4; i++)
			add(name, name_len, jstr(json_array_get(data, i), "id"));
		if (name[0]) *source = "/v1/models";
		json_decref(j);
	}
	/* Ollama's /api/show has the family and architecture an id may lack
	 * (a model pulled under a name of the user's own) */
	const char *model = ep->model && ep->model[0] ? ep->model : NULL;
	char first[256] = "";
	if (!model && name[0]) {
		snprintf(first, sizeof first, "%.*s", (int)strcspn(name, " "), name);
		model = first;
	}
	if (model) {
		json_t *q = json_pack("{s:s}", "model", model);
		char *body = q ? json_dumps(q, JSON_COMPACT) : NULL;
		json_decref(q);
		long st2 = 0;
		j = body ? fetch(ep, "/api/show", body, &st2) : NULL;
		free(body);
		if (j) {
			if (!name[0]) add(name, name_len, model);
			add(name, name_len, jstr(json_object_get(j, "details"), "family"));
			json_t *mi = json_object_get(j, "model_info");
			add(name, name_len, jstr(mi, "general.basename"));
			add(name, name_len, jstr(mi, "general.architecture"));
			*source = *source ? "/v1/models and /api/show" : "/api/show";
		}
		json_decref(j);
		if (st2) status = st2;
	}
	if (!name[0]) {
		snprintf(msg, msg_len, "the server did not say which model it serves (%s%s)",
		         ep->api == REMOTE_API_OLLAMA ? "/api/show"
		                                      : "/props, /v1/models, /api/show",
		         status ? "" : ", no answer");
		return -ENOENT;
	}
	return 0;
}
