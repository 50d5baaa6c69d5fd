/*
 * feedback_rpc.c - the clients' reports on suggestions (feedback.h), as LSP
 * messages, with Copilot's names and params:
 *   textDocument/didShowCompletion          {item}
 *   textDocument/didPartiallyAcceptCompletion {item, acceptedLength}
 *   workspace/executeCommand                {command: "infill.didAcceptCompletion",
 *                                            arguments: [id]}
 * An item is the InlineCompletionItem as answered: its command's arguments
 * hold the id (completion_rpc.c). A report on an unknown, stale or malformed
 * item is logged at debug level and otherwise ignored: the client did
 * nothing wrong that it could act on.
 */
#include "feedback.h"
#include "server_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The id in arguments[0] (an integer, or a string of digits); 0 if none. */
static uint64_t id_of_arguments(json_t *args)
{
	json_t *a = json_array_get(args, 0);
	if (json_is_integer(a) && json_integer_value(a) > 0) return (uint64_t)json_integer_value(a);
	const char *s = json_string_value(a);
	if (!s || !*s) return 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	return *end ? 0 : (uint64_t)v;
}

static uint64_t id_of_item(json_t *item)
{
	return id_of_arguments(json_object_get(json_object_get(item, "command"), "arguments"));
}

static void log_result(struct server *s, const char *what, uint64_t id, int rc)
{
	if (rc == -ENOENT)
		log_debug(s->log, "%s: item %llu unknown or stale: ignored", what,
		          (unsigned long long)id);
	else if (rc == -EALREADY)
		log_debug(s->log, "%s: item %llu already closed: ignored", what,
		          (unsigned long long)id);
}

void feedback_did_show(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	uint64_t item = id_of_item(json_object_get(params, "item"));
	log_result(s, "didShowCompletion", item, feedback_shown(s->feedback, item));
}

void feedback_did_partially_accept(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	uint64_t item = id_of_item(json_object_get(params, "item"));
	json_t *len = json_object_get(params, "acceptedLength");
	if (!json_is_integer(len) || json_integer_value(len) < 0) {
		log_debug(s->log, "didPartiallyAcceptCompletion without acceptedLength: ignored");
		return;
	}
	int rc = feedback_partly_accepted(s->feedback, item, (size_t)json_integer_value(len),
	                                  s->encoding);
	log_result(s, "didPartiallyAcceptCompletion", item, rc);
}

void feedback_execute_command(struct server *s, json_t *id, json_t *params)
{
	if (nextedits_accept_command(s, params)) {
		server_reply(s, id, json_null());
		return;
	}
	const char *command = json_get_string(params, "command");
	if (!command || strcmp(command, FEEDBACK_ACCEPT_COMMAND)) {
		server_reply_error(s, id, RPC_ERROR_INVALID_PARAMS,
		                   "unknown command (infill has " FEEDBACK_ACCEPT_COMMAND
		                   " and " NEXTEDIT_ACCEPT_COMMAND ")");
		return;
	}
	uint64_t item = id_of_arguments(json_object_get(params, "arguments"));
	log_result(s, "accepted", item, feedback_accepted(s->feedback, item));
	server_reply(s, id, json_null());
}
