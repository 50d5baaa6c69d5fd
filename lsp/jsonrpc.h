/*
 * jsonrpc.h - JSON-RPC 2.0 messages as LSP uses them: parsing a body into a
 * classified message, and building responses, errors, notifications and
 * requests. Pure code over jansson; no I/O.
 */
#ifndef INFILL_LSP_JSONRPC_H
#define INFILL_LSP_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>

/* Error codes of JSON-RPC 2.0 and LSP, written once. */
#define RPC_ERRORS(X)                                               \
	X(PARSE_ERROR, -32700, "Parse error")                       \
	X(INVALID_REQUEST, -32600, "Invalid Request")               \
	X(METHOD_NOT_FOUND, -32601, "Method not found")             \
	X(INVALID_PARAMS, -32602, "Invalid params")                 \
	X(INTERNAL_ERROR, -32603, "Internal error")                 \
	X(SERVER_NOT_INITIALIZED, -32002, "Server not initialized") \
	X(UNKNOWN_ERROR_CODE, -32001, "Unknown error code")         \
	X(REQUEST_FAILED, -32803, "Request failed")                 \
	X(SERVER_CANCELLED, -32802, "Server cancelled")             \
	X(CONTENT_MODIFIED, -32801, "Content modified")             \
	X(REQUEST_CANCELLED, -32800, "Request cancelled")

enum rpc_error {
#define X(name, code, msg) RPC_ERROR_##name = code,
	RPC_ERRORS(X)
#undef X
};

/* The standard message of a code ("Parse error"), or "Error". */
const char *rpc_error_message(int code);

enum rpc_kind {
	RPC_KIND_REQUEST,      /* method + id */
	RPC_KIND_NOTIFICATION, /* method, no id */
	RPC_KIND_RESPONSE,     /* id + result or error, no method */
};

/* A parsed message. Every pointer is borrowed from root. */
struct rpc_message {
	json_t *root;
	enum rpc_kind kind;
	json_t *id;         /* integer or string; NULL for notifications */
	const char *method; /* requests and notifications */
	json_t *params;     /* object or array, or NULL when absent */
	json_t *result;     /* responses: one of result, error */
	json_t *error;
	int repaired; /* JSONFIX_* bits: what was repaired to parse it (0: none) */
};

/* Parses and classifies one body. Returns 0 and fills *msg (the caller
 * json_decref's msg->root), or a negative code:
 * RPC_ERROR_PARSE_ERROR when the body is not JSON (or not UTF-8);
 * RPC_ERROR_INVALID_REQUEST when it is JSON but not a JSON-RPC 2.0 message.
 * On error *why gets a message (static or in *jerr) and *bad_id gets a new
 * reference to the message's id when one could be read (else NULL) so the
 * error response can carry it. */
int rpc_message_parse(const char *body, size_t len, struct rpc_message *msg, json_t **bad_id,
                      char *why, size_t why_size);

/* {"jsonrpc":"2.0","id":id,"result":result}. id borrowed (NULL becomes
 * null), result stolen (NULL becomes null). New reference. */
json_t *rpc_response_new(json_t *id, json_t *result);

/* {"jsonrpc":"2.0","id":id,"error":{"code":code,"message":...}}. id
 * borrowed (NULL becomes null); message NULL uses the standard one. */
json_t *rpc_error_response_new(json_t *id, int code, const char *message);

/* {"jsonrpc":"2.0","method":method,"params":params}; params stolen (NULL: no
 * params member). */
json_t *rpc_notification_new(const char *method, json_t *params);

/* {"jsonrpc":"2.0","id":id,"method":method,"params":params}; params stolen. */
json_t *rpc_request_new(json_int_t id, const char *method, json_t *params);

/* Whether two ids are the same id (same type and value). */
bool rpc_id_equal(const json_t *a, const json_t *b);

#endif
