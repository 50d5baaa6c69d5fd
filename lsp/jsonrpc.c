/*
 * jsonrpc.c - parsing and building JSON-RPC 2.0 messages.
 *
 * Bodies are parsed with JSON_ALLOW_NUL (document text may hold U+0000) and
 * JSON_DECODE_ANY (so `42` is an invalid request, not a parse error, as the
 * JSON-RPC spec asks). A body jansson refuses for invalid UTF-8, a lone
 * surrogate or an integer past int64 is repaired (jsonfix.h) and parsed
 * again; msg->repaired says so.
 */
#include "jsonrpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfix.h"

const char *rpc_error_message(int code)
{
	switch (code) {
#define X(name, code_, msg) \
	case code_: return msg;
		RPC_ERRORS(X)
#undef X
	}
	return "Error";
}

static bool valid_id(const json_t *id)
{
	return json_is_integer(id) || json_is_string(id);
}

int rpc_message_parse(const char *body, size_t len, struct rpc_message *msg, json_t **bad_id,
                      char *why, size_t why_size)
{
	json_error_t jerr;
	memset(msg, 0, sizeof *msg);
	*bad_id = NULL;
	json_t *root = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!root) {
		/* One bad byte, lone surrogate or huge integer must not cost the
		 * whole message (a didOpen lost is a document never open): repair
		 * those and try again; the caller warns (msg->repaired). */
		char *fixed = NULL;
		size_t fixed_len = 0;
		int fixes = jsonfix_repair(body, len, &fixed, &fixed_len);
		if (fixes > 0) {
			json_error_t jerr2;
			root = json_loadb(fixed, fixed_len, JSON_DECODE_ANY | JSON_ALLOW_NUL,
			                  &jerr2);
			free(fixed);
			if (root) msg->repaired = fixes;
		}
	}
	if (!root) {
		snprintf(why, why_size, "%s at byte %d", jerr.text, jerr.position);
		return RPC_ERROR_PARSE_ERROR;
	}
	const char *reason = NULL;
	json_t *id = NULL, *method, *ver;
	if (!json_is_object(root)) {
		reason = json_is_array(root) ? "batches are not supported by LSP"
		                             : "a message must be a JSON object";
		goto invalid;
	}
	id = json_object_get(root, "id");
	if (id && valid_id(id)) *bad_id = json_incref(id);
	ver = json_object_get(root, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0")) {
		reason = "\"jsonrpc\" must be \"2.0\"";
		goto invalid;
	}
	method = json_object_get(root, "method");
	if (method) {
		if (!json_is_string(method)) {
			reason = "\"method\" must be a string";
			goto invalid;
		}
		if (id && !valid_id(id)) {
			reason = "\"id\" must be an integer or a string";
			goto invalid;
		}
		json_t *params = json_object_get(root, "params");
		/* eglot sends "params": null for shutdown: read it as absent. */
		if (json_is_null(params)) params = NULL;
		if (params && !json_is_object(params) && !json_is_array(params)) {
			reason = "\"params\" must be an object or an array";
			goto invalid;
		}
		msg->kind = id ? RPC_KIND_REQUEST : RPC_KIND_NOTIFICATION;
		msg->method = json_string_value(method);
		msg->params = params;
	} else {
		json_t *result = json_object_get(root, "result");
		json_t *error = json_object_get(root, "error");
		if (!id || (!valid_id(id) && !json_is_null(id))) {
			reason = "a message needs a \"method\" or an \"id\"";
			goto invalid;
		}
		if (!result == !error) {
			reason = "a response needs exactly one of \"result\" and \"error\"";
			goto invalid;
		}
		msg->kind = RPC_KIND_RESPONSE;
		msg->result = result;
		msg->error = error;
	}
	msg->root = root;
	msg->id = id;
	json_decref(*bad_id);
	*bad_id = NULL;
	return 0;
invalid:
	snprintf(why, why_size, "%s", reason);
	json_decref(root);
	return RPC_ERROR_INVALID_REQUEST;
}

json_t *rpc_response_new(json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
	                 result ? result : json_null());
}

json_t *rpc_error_response_new(json_t *id, int code, const char *message)
{
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
	                 "error", "code", code, "message",
	                 message ? message : rpc_error_message(code));
}

json_t *rpc_notification_new(const char *method, json_t *params)
{
	json_t *m = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
	if (m && params)
		json_object_set_new(m, "params", params);
	else if (params)
		json_decref(params);
	return m;
}

json_t *rpc_request_new(json_int_t id, const char *method, json_t *params)
{
	json_t *m = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
	if (m && params)
		json_object_set_new(m, "params", params);
	else if (params)
		json_decref(params);
	return m;
}

bool rpc_id_equal(const json_t *a, const json_t *b)
{
	if (!a || !b) return false;
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_string(a) && json_is_string(b))
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
	return false;
}
