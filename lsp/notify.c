/*
 * notify.c - what the server tells the client on its own: window/showMessage
 * (things the user must see, such as a bad setting), window/logMessage
 * (the client's output panel), $/logTrace (when the client asked for a
 * trace) and work-done progress ($/progress, e.g. while a model loads).
 */
#include "server_priv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void send_message(struct server *s, const char *method, enum message_type type,
                         const char *fmt, va_list ap)
{
	char text[1024];
	vsnprintf(text, sizeof text, fmt, ap);
	server_notify(s, method, json_pack("{s:i, s:s}", "type", (int)type, "message", text));
}

void server_show_message(struct server *s, enum message_type type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	send_message(s, "window/showMessage", type, fmt, ap);
	va_end(ap);
}

void server_log_message(struct server *s, enum message_type type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	send_message(s, "window/logMessage", type, fmt, ap);
	va_end(ap);
}

void server_log_trace(struct server *s, const char *message, const char *verbose)
{
	if (s->trace == TRACE_OFF) return;
	json_t *params = json_pack("{s:s}", "message", message);
	if (params && verbose && s->trace == TRACE_VERBOSE)
		json_object_set_new(params, "verbose", json_string(verbose));
	server_notify(s, "$/logTrace", params);
}

char *server_progress_begin(struct server *s, const char *title, const char *message)
{
	if (!s->client_progress || s->state != SERVER_STATE_RUNNING) return NULL;
	char token[64];
	snprintf(token, sizeof token, "infill/progress/%llu",
	         (unsigned long long)++s->next_progress);
	char *copy = strdup(token);
	if (!copy) return NULL;
	/* The client processes messages in order, so the token exists by the
	 * time the begin notification below is read; the response itself
	 * carries nothing we need. */
	server_request(s, "window/workDoneProgress/create", json_pack("{s:s}", "token", token),
	               NULL, NULL);
	json_t *value =
	        json_pack("{s:s, s:s, s:b}", "kind", "begin", "title", title, "cancellable", 0);
	if (value && message) json_object_set_new(value, "message", json_string(message));
	server_notify(s, "$/progress", json_pack("{s:s, s:o}", "token", token, "value", value));
	return copy;
}

void server_progress_report(struct server *s, const char *token, const char *message,
                            int percentage)
{
	if (!token) return;
	json_t *value = json_pack("{s:s}", "kind", "report");
	if (value && message) json_object_set_new(value, "message", json_string(message));
	if (value && percentage >= 0)
		json_object_set_new(value, "percentage",
		                    json_integer(percentage > 100 ? 100 : percentage));
	server_notify(s, "$/progress", json_pack("{s:s, s:o}", "token", token, "value", value));
}

void server_progress_end(struct server *s, char *token, const char *message)
{
	if (!token) return;
	json_t *value = json_pack("{s:s}", "kind", "end");
	if (value && message) json_object_set_new(value, "message", json_string(message));
	server_notify(s, "$/progress", json_pack("{s:s, s:o}", "token", token, "value", value));
	free(token);
}
