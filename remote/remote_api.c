/*
 * remote_api.c - the three APIs' request bodies and replies (remote.h),
 * pure functions over jansson:
 *
 *   openai        POST /v1/completions: {prompt, n, max_tokens, logprobs,
 *                 stream}; chunks {choices: [{index, text, logprobs,
 *                 finish_reason}]}. Log-probabilities come as the legacy
 *                 `logprobs.token_logprobs` (vLLM, OpenAI) or as
 *                 `logprobs.content[].logprob` (llama-server); both are read.
 *   llama-infill  POST /infill: {input_prefix, input_suffix, input_extra,
 *                 n, n_predict, n_probs, stream}; chunks {index, content,
 *                 stop, stop_type, completion_probabilities[].logprob}.
 *   ollama        POST /api/generate: {model, prompt, suffix, options};
 *                 NDJSON {response, done, done_reason}; no samples, no
 *                 log-probabilities.
 *
 * A payload that is valid JSON but carries {"error": ...} is recorded in
 * acc->error, not failed: the client decides what the whole reply meant.
 */
#include "remote.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

const char *remote_api_name(enum remote_api api)
{
	switch (api) {
	case REMOTE_API_OPENAI: return "openai";
	case REMOTE_API_LLAMA_INFILL: return "llama-infill";
	case REMOTE_API_OLLAMA: return "ollama";
	}
	return "?";
}

const char *remote_api_path(enum remote_api api)
{
	switch (api) {
	case REMOTE_API_OPENAI: return "/v1/completions";
	case REMOTE_API_LLAMA_INFILL: return "/infill";
	case REMOTE_API_OLLAMA: return "/api/generate";
	}
	return "/";
}

const char *remote_fail_name(enum remote_fail_kind k)
{
	switch (k) {
#define REMOTE_FAIL_CASE(name, text) \
	case REMOTE_FAIL_##name: return text;
		REMOTE_FAILURES(REMOTE_FAIL_CASE)
#undef REMOTE_FAIL_CASE
	}
	return "?";
}

/* ---- bodies ---------------------------------------------------------------- */

/* json_object_set_new that remembers a failure in *bad. */
static void put(json_t *o, const char *key, json_t *v, bool *bad)
{
	if (!v || json_object_set_new(o, key, v)) *bad = true;
}

static json_t *stop_array(const struct remote_query *q, bool *bad)
{
	json_t *a = json_array();
	if (!a) {
		*bad = true;
		return NULL;
	}
	for (size_t i = 0; i < q->n_stop && q->stop; i++)
		if (json_array_append_new(a, json_string(q->stop[i]))) *bad = true;
	return a;
}

char *remote_api_body(const struct remote_endpoint *ep, const struct remote_query *q)
{
	json_t *o = json_object();
	if (!o) return NULL;
	bool bad = false;
	int n = q->n > 0 ? q->n : 1;
	if (ep->model && ep->model[0]) put(o, "model", json_string(ep->model), &bad);
	switch (ep->api) {
	case REMOTE_API_OPENAI: {
		if (q->n_tokens) {
			json_t *a = json_array();
			for (size_t i = 0; a && i < q->n_tokens; i++)
				if (json_array_append_new(a, json_integer(q->tokens[i])))
					bad = true;
			put(o, "prompt", a, &bad);
		} else {
			put(o, "prompt", json_stringn(q->prompt ? q->prompt : "", q->prompt_len),
			    &bad);
		}
		put(o, "max_tokens", json_integer(q->max_tokens), &bad);
		put(o, "n", json_integer(n), &bad);
		if (q->logprobs) put(o, "logprobs", json_integer(1), &bad);
		break;
	}
	case REMOTE_API_LLAMA_INFILL: {
		put(o, "input_prefix", json_stringn(q->prefix ? q->prefix : "", q->prefix_len),
		    &bad);
		put(o, "input_suffix", json_stringn(q->suffix ? q->suffix : "", q->suffix_len),
		    &bad);
		json_t *ex = json_array();
		for (size_t i = 0; ex && i < q->n_extra; i++) {
			json_t *e = json_object();
			if (e) {
				put(e, "filename",
				    json_string(q->extra[i].name ? q->extra[i].name : ""), &bad);
				put(e, "text", json_stringn(q->extra[i].text, q->extra[i].len),
				    &bad);
			}
			if (!e || json_array_append_new(ex, e)) bad = true;
		}
		put(o, "input_extra", ex, &bad);
		put(o, "n_predict", json_integer(q->max_tokens), &bad);
		put(o, "n", json_integer(n), &bad);
		if (q->logprobs) put(o, "n_probs", json_integer(1), &bad);
		put(o, "cache_prompt", json_true(), &bad);
		break;
	}
	case REMOTE_API_OLLAMA: {
		put(o, "prompt", json_stringn(q->prefix ? q->prefix : "", q->prefix_len), &bad);
		put(o, "suffix", json_stringn(q->suffix ? q->suffix : "", q->suffix_len), &bad);
		json_t *opt = json_object();
		if (opt) {
			put(opt, "temperature", json_real(q->temperature), &bad);
			put(opt, "top_p", json_real(q->top_p), &bad);
			put(opt, "num_predict", json_integer(q->max_tokens), &bad);
			put(opt, "seed", json_integer((json_int_t)(q->seed & 0x7fffffff)), &bad);
			if (q->n_stop) put(opt, "stop", stop_array(q, &bad), &bad);
		}
		put(o, "options", opt, &bad);
		put(o, "stream", json_true(), &bad);
		char *s = bad ? NULL : json_dumps(o, JSON_COMPACT);
		json_decref(o);
		return s;
	}
	}
	put(o, "temperature", json_real(q->temperature), &bad);
	put(o, "top_p", json_real(q->top_p), &bad);
	put(o, "seed", json_integer((json_int_t)(q->seed & 0x7fffffff)), &bad);
	if (q->n_stop) put(o, "stop", stop_array(q, &bad), &bad);
	put(o, "stream", json_true(), &bad);
	char *s = bad ? NULL : json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* ---- replies ---------------------------------------------------------------- */

void remote_reply_finish(struct remote_reply *r)
{
	if (!r) return;
	for (int i = 0; i < r->n; i++) free(r->choices[i].text);
	free(r->choices);
	memset(r, 0, sizeof *r);
}

void remote_acc_finish(struct remote_acc *acc)
{
	for (int i = 0; i < acc->n; i++) free(acc->choices[i].text);
	free(acc->choices);
	memset(acc, 0, sizeof *acc);
}

void remote_acc_take(struct remote_acc *acc, struct remote_reply *reply)
{
	reply->choices = acc->choices;
	reply->n = acc->n;
	reply->server_ms = acc->server_ms;
	acc->choices = NULL;
	acc->n = acc->cap = 0;
}

/* A server numbers its choices 0..n-1; more than this is nonsense. */
#define MAX_CHOICES 64

/* The choice at index (grown as needed), 0 <= index < MAX_CHOICES. NULL
 * when out of memory. */
static struct remote_choice *choice_at(struct remote_acc *acc, json_int_t index)
{
	if (index >= acc->cap) {
		int cap = (int)index + 1 > 2 * acc->cap ? (int)index + 1 : 2 * acc->cap;
		struct remote_choice *c = realloc(acc->choices, (size_t)cap * sizeof *c);
		if (!c) return NULL;
		memset(c + acc->cap, 0, (size_t)(cap - acc->cap) * sizeof *c);
		acc->choices = c;
		acc->cap = cap;
	}
	if (index >= acc->n) acc->n = (int)index + 1;
	struct remote_choice *ch = &acc->choices[index];
	if (!ch->text && !(ch->text = calloc(1, 1))) return NULL;
	return ch;
}

/* Appends up to the accumulator's byte cap: past it the choice is full
 * (finished as by max_tokens) and the rest is dropped, whatever the server
 * goes on sending. A cut never splits a UTF-8 sequence. The text also ends
 * at a U+FFFD (bytes that were not text, from the server or from
 * remote_acc_feed's repair): what follows it is not code worth inserting. */
static int add_text(struct remote_acc *acc, struct remote_choice *ch, const char *s, size_t n)
{
	if (ch->full) return 0;
	size_t cap = acc->max_bytes ? acc->max_bytes : REMOTE_CHOICE_MAX_BYTES;
	for (size_t i = 0; i + 2 < n; i++) {
		if (memcmp(s + i, "\xEF\xBF\xBD", 3)) continue;
		n = i;
		ch->finish = REMOTE_FINISH_STOP;
		ch->full = true;
		break;
	}
	if (ch->len + n > cap) {
		n = ch->len < cap ? cap - ch->len : 0;
		while (n && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
		ch->finish = REMOTE_FINISH_LENGTH;
		ch->full = true;
	}
	if (!n) return 0;
	char *t = realloc(ch->text, ch->len + n + 1);
	if (!t) return -ENOMEM;
	memcpy(t + ch->len, s, n);
	ch->len += n;
	t[ch->len] = 0;
	ch->text = t;
	return 0;
}

static void add_logprob(struct remote_choice *ch, const json_t *v)
{
	if (!json_is_number(v)) return;
	double x = json_number_value(v);
	if (!isfinite(x)) return;
	if (x < -1e4) x = -1e4; /* llama-server writes log(0) as the lowest float */
	ch->sum_logprob += x;
	ch->n_logprobs++;
}

/* {token_logprobs: [..]} (legacy) or {content: [{logprob}]} (llama-server),
 * or an array of {logprob} (/infill's completion_probabilities). */
static void add_logprobs(struct remote_choice *ch, const json_t *lp)
{
	const json_t *a = json_is_array(lp) ? lp : NULL;
	size_t i;
	const json_t *v;
	if (json_is_object(lp)) {
		const json_t *tl = json_object_get(lp, "token_logprobs");
		if (json_is_array(tl)) {
			json_array_foreach(tl, i, v) add_logprob(ch, v);
			return;
		}
		a = json_object_get(lp, "content");
	}
	if (!json_is_array(a)) return;
	json_array_foreach(a, i, v) add_logprob(ch, json_object_get(v, "logprob"));
}

static void note_error(struct remote_acc *acc, const json_t *err)
{
	const char *msg = json_string_value(err);
	if (!msg) msg = json_string_value(json_object_get(err, "message"));
	snprintf(acc->error, sizeof acc->error, "%s", msg ? msg : "an error without a message");
}

static void note_timings(struct remote_acc *acc, const json_t *t)
{
	if (!json_is_object(t)) return;
	double ms = json_number_value(json_object_get(t, "prompt_ms")) +
	            json_number_value(json_object_get(t, "predicted_ms"));
	if (ms > acc->server_ms) acc->server_ms = ms; /* samples run side by side */
}

static int feed_openai(struct remote_acc *acc, const json_t *o)
{
	const json_t *choices = json_object_get(o, "choices");
	if (!json_is_array(choices)) return -EPROTO;
	size_t i;
	const json_t *c;
	json_array_foreach(choices, i, c)
	{
		const json_t *idx = json_object_get(c, "index");
		json_int_t at = json_is_integer(idx) ? json_integer_value(idx) : (json_int_t)i;
		if (at < 0 || at >= MAX_CHOICES) return -EPROTO;
		struct remote_choice *ch = choice_at(acc, at);
		if (!ch) return -ENOMEM;
		const json_t *text = json_object_get(c, "text");
		if (json_is_string(text)) {
			if (add_text(acc, ch, json_string_value(text), json_string_length(text)))
				return -ENOMEM;
			if (json_string_length(text)) ch->n_tokens++;
		}
		add_logprobs(ch, json_object_get(c, "logprobs"));
		const char *fr = json_string_value(json_object_get(c, "finish_reason"));
		if (fr)
			ch->finish =
			        !strcmp(fr, "length") ? REMOTE_FINISH_LENGTH : REMOTE_FINISH_STOP;
	}
	note_timings(acc, json_object_get(o, "timings"));
	return 0;
}

static int feed_infill(struct remote_acc *acc, const json_t *o)
{
	const json_t *content = json_object_get(o, "content");
	if (!json_is_string(content)) return -EPROTO;
	const json_t *idx = json_object_get(o, "index");
	json_int_t at = json_is_integer(idx) ? json_integer_value(idx) : 0;
	if (at < 0 || at >= MAX_CHOICES) return -EPROTO;
	struct remote_choice *ch = choice_at(acc, at);
	if (!ch) return -ENOMEM;
	if (add_text(acc, ch, json_string_value(content), json_string_length(content)))
		return -ENOMEM;
	add_logprobs(ch, json_object_get(o, "completion_probabilities"));
	if (json_is_true(json_object_get(o, "stop"))) {
		const char *st = json_string_value(json_object_get(o, "stop_type"));
		ch->finish = st && !strcmp(st, "limit") ? REMOTE_FINISH_LENGTH : REMOTE_FINISH_STOP;
		const json_t *tp = json_object_get(o, "tokens_predicted");
		if (json_is_integer(tp)) ch->n_tokens = (int32_t)json_integer_value(tp);
		note_timings(acc, json_object_get(o, "timings"));
	} else if (json_string_length(content)) {
		ch->n_tokens++;
	}
	return 0;
}

static int feed_ollama(struct remote_acc *acc, const json_t *o)
{
	const json_t *resp = json_object_get(o, "response");
	if (!json_is_string(resp)) return -EPROTO;
	struct remote_choice *ch = choice_at(acc, 0);
	if (!ch) return -ENOMEM;
	if (add_text(acc, ch, json_string_value(resp), json_string_length(resp))) return -ENOMEM;
	if (json_is_true(json_object_get(o, "done"))) {
		const char *r = json_string_value(json_object_get(o, "done_reason"));
		ch->finish = r && !strcmp(r, "length") ? REMOTE_FINISH_LENGTH : REMOTE_FINISH_STOP;
		const json_t *ec = json_object_get(o, "eval_count");
		if (json_is_integer(ec)) ch->n_tokens = (int32_t)json_integer_value(ec);
		acc->done = true;
	} else if (json_string_length(resp)) {
		ch->n_tokens++;
	}
	return 0;
}

int remote_acc_feed(struct remote_acc *acc, enum remote_api api, const char *json, size_t len)
{
	json_error_t e;
	char *fixed = NULL;
	if (remote_text_valid(json, len) < len) { /* jansson refuses such bytes */
		if (!(fixed = remote_text_repair(json, len, &len))) return -ENOMEM;
		json = fixed;
	}
	json_t *o = json_loadb(json, len, 0, &e);
	free(fixed);
	acc->cut_short = !o && json_error_code(&e) == json_error_premature_end_of_input;
	if (!o) {
		snprintf(acc->error, sizeof acc->error, "not JSON (%s at byte %d)", e.text,
		         e.position);
		return -EPROTO;
	}
	int rc;
	const json_t *err = json_is_object(o) ? json_object_get(o, "error") : NULL;
	if (!json_is_object(o)) {
		snprintf(acc->error, sizeof acc->error, "a JSON value that is not an object");
		rc = -EPROTO;
	} else if (err && !json_is_null(err)) {
		note_error(acc, err);
		rc = 0;
	} else {
		switch (api) {
		case REMOTE_API_OPENAI: rc = feed_openai(acc, o); break;
		case REMOTE_API_LLAMA_INFILL: rc = feed_infill(acc, o); break;
		case REMOTE_API_OLLAMA: rc = feed_ollama(acc, o); break;
		default: rc = -EPROTO;
		}
		if (rc == -EPROTO)
			snprintf(acc->error, sizeof acc->error,
			         "a JSON object without the %s fields", remote_api_name(api));
	}
	json_decref(o);
	return rc;
}

char *remote_url_redact(const char *url)
{
	const char *p = strstr(url, "://");
	p = p ? p + 3 : url;
	size_t host = strcspn(p, "/?#");
	const char *at = memchr(p, '@', host);
	if (!at) return strdup(url);
	/* "user:pass@" -> "user:***@"; "token@" -> "***@" */
	const char *colon = memchr(p, ':', (size_t)(at - p));
	size_t keep = (size_t)((colon ? colon + 1 : p) - url);
	size_t n = keep + 3 + strlen(at) + 1;
	char *s = malloc(n);
	if (s) snprintf(s, n, "%.*s***%s", (int)keep, url, at);
	return s;
}
