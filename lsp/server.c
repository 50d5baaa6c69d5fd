/*
 * server.c - the server's spine: bytes to frames to messages, the method
 * table, the LSP lifecycle (initialize, initialized, shutdown, exit,
 * $/cancelRequest, $/setTrace), and sending messages and requests.
 *
 * Lifecycle rules (LSP 3.17, "Lifecycle Messages"): before initialize every
 * request but initialize gets -32002 and notifications are dropped, except
 * exit; a second initialize gets -32600; after shutdown requests get -32600;
 * exit ends the session with status 0 after shutdown, 1 without.
 */
#include "server_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infill_config.h"
#include "feedback.h"
#include "jsonfix.h"

#define DEFAULT_MAX_MESSAGE ((size_t)64 << 20)

enum method_kind { REQUEST, NOTIFICATION };

struct method {
	const char *name;
	enum method_kind kind;
	lsp_handler_fn fn;
};

static const struct method methods[LSP_METHOD_COUNT] = {
#define X(name, str, kind, fn) [LSP_METHOD_##name] = { str, kind, fn },
	LSP_METHODS(X)
#undef X
};

static const struct method *method_find(const char *name)
{
	for (size_t i = 0; i < LSP_METHOD_COUNT; i++)
		if (!strcmp(methods[i].name, name)) return &methods[i];
	return NULL;
}

/* ---- params helpers --------------------------------------------------- */

const char *json_get_string(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

bool json_get_position(json_t *obj, struct doc_pos *pos)
{
	json_t *line = json_object_get(obj, "line"), *ch = json_object_get(obj, "character");
	if (!json_is_integer(line) || !json_is_integer(ch)) return false;
	json_int_t l = json_integer_value(line), c = json_integer_value(ch);
	if (l < 0 || c < 0 || l > UINT32_MAX || c > UINT32_MAX) return false;
	pos->line = (uint32_t)l;
	pos->character = (uint32_t)c;
	return true;
}

/* ---- sending ---------------------------------------------------------- */

void server_send(struct server *s, json_t *msg)
{
	if (!msg) {
		log_error(s->log, "out of memory building a message");
		return;
	}
	char *body = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(msg);
	if (!body) {
		log_error(s->log, "out of memory encoding a message");
		return;
	}
	size_t len = strlen(body);
	char header[64];
	size_t hlen = rpc_frame_header(header, len);
	/* one buffer so that a frame is one write */
	char *frame = malloc(hlen + len);
	if (frame) {
		memcpy(frame, header, hlen);
		memcpy(frame + hlen, body, len);
		int rc = s->io.write(s->io.ud, frame, hlen + len);
		if (rc) log_debug(s->log, "dropping a message: the output is closed (%d)", rc);
	}
	free(frame);
	/* Bodies hold document text and completions of it: only with the user's
	 * log.messageText (the log holds no document text unless asked), never by log level alone. */
	if (log_enabled(s->log, LOG_LEVEL_TRACE)) {
		if (s->log_text)
			log_trace(s->log, "--> %.1000s", body);
		else
			log_trace(s->log, "--> %zu bytes", len);
	}
	free(body);
}

void server_reply(struct server *s, json_t *id, json_t *result)
{
	server_send(s, rpc_response_new(id, result));
}

void server_reply_error(struct server *s, json_t *id, int code, const char *message)
{
	server_send(s, rpc_error_response_new(id, code, message));
}

void server_notify(struct server *s, const char *method, json_t *params)
{
	server_send(s, rpc_notification_new(method, params));
}

json_int_t server_request(struct server *s, const char *method, json_t *params,
                          server_response_fn cb, void *ud)
{
	struct outgoing *o = calloc(1, sizeof *o);
	if (!o) {
		json_decref(params);
		return -ENOMEM;
	}
	o->id = ++s->next_id;
	o->cb = cb;
	o->ud = ud;
	o->next = s->outgoing;
	s->outgoing = o;
	server_send(s, rpc_request_new(o->id, method, params));
	return o->id;
}

static void handle_response(struct server *s, struct rpc_message *m)
{
	if (!json_is_integer(m->id)) {
		log_warn(s->log, "a response to a request we did not send (id not ours)");
		return;
	}
	json_int_t id = json_integer_value(m->id);
	for (struct outgoing **p = &s->outgoing; *p; p = &(*p)->next) {
		if ((*p)->id != id) continue;
		struct outgoing *o = *p;
		*p = o->next;
		if (m->error)
			log_warn(s->log, "the client answered request %lld with an error: %s",
			         (long long)id, json_get_string(m->error, "message") ?: "?");
		if (o->cb) o->cb(s, m->result, m->error, o->ud);
		free(o);
		return;
	}
	log_warn(s->log, "a response to unknown request id %lld", (long long)id);
}

/* ---- lifecycle handlers ----------------------------------------------- */

static enum pos_encoding choose_encoding(json_t *params)
{
	json_t *list =
	        json_object_get(json_object_get(json_object_get(params, "capabilities"), "general"),
	                        "positionEncodings");
	bool utf8 = false, utf32 = false;
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v)
	{
		const char *name = json_string_value(v);
		if (name && !strcmp(name, "utf-8"))
			utf8 = true;
		else if (name && !strcmp(name, "utf-32"))
			utf32 = true;
	}
	/* Our text is UTF-8: offsets in bytes need no conversion, code points
	 * need less than UTF-16. UTF-16 is the mandatory fallback. */
	if (utf8) return POS_ENCODING_UTF8;
	if (utf32) return POS_ENCODING_UTF32;
	return POS_ENCODING_UTF16;
}

static enum trace_value parse_trace(const char *v, enum trace_value dflt)
{
	if (!v) return dflt;
	if (!strcmp(v, "off")) return TRACE_OFF;
	if (!strcmp(v, "messages")) return TRACE_MESSAGES;
	if (!strcmp(v, "verbose")) return TRACE_VERBOSE;
	return dflt;
}

void lifecycle_initialize(struct server *s, json_t *id, json_t *params)
{
	if (!json_is_object(params)) {
		server_reply_error(s, id, RPC_ERROR_INVALID_PARAMS,
		                   "initialize needs InitializeParams");
		return;
	}
	json_t *caps = json_object_get(params, "capabilities");
	if (caps && !json_is_object(caps)) {
		server_reply_error(s, id, RPC_ERROR_INVALID_PARAMS,
		                   "\"capabilities\" must be an object");
		return;
	}
	s->encoding = choose_encoding(params);
	s->trace = parse_trace(json_get_string(params, "trace"), TRACE_OFF);
	s->client_configuration =
	        json_is_true(json_object_get(json_object_get(caps, "workspace"), "configuration"));
	s->client_progress =
	        json_is_true(json_object_get(json_object_get(caps, "window"), "workDoneProgress"));
	s->client_watch_files = json_is_true(json_object_get(
	        json_object_get(json_object_get(caps, "workspace"), "didChangeWatchedFiles"),
	        "dynamicRegistration"));
	json_t *info = json_object_get(params, "clientInfo");
	log_info(s->log, "initialize from %s %s; positions in %s",
	         json_get_string(info, "name") ?: "an unnamed client",
	         json_get_string(info, "version") ?: "", pos_encoding_name(s->encoding));

	workspace_configure_initial(s, params);

	json_t *result = json_pack(
	        "{s:{s:s, s:{s:b, s:i, s:{s:b}}, s:{s:b}, s:{}, s:{s:[s, s]}, s:{s:{s:[s, s]}}}, "
	        "s:{s:s, s:s}}",
	        "capabilities", "positionEncoding", pos_encoding_name(s->encoding),
	        "textDocumentSync", "openClose", 1, "change", 2 /* incremental */, "save",
	        "includeText", 0, "completionProvider", "resolveProvider", 0,
	        "inlineCompletionProvider",
	        /* an inline item's command, run by the client when it is accepted */
	        "executeCommandProvider", "commands", FEEDBACK_ACCEPT_COMMAND,
	        NEXTEDIT_ACCEPT_COMMAND,
	        /* next edits: the request under both names it answers */
	        "experimental", "nextEditProvider", "methods", "infill/nextEdit",
	        "textDocument/copilotInlineEdit", "serverInfo", "name", "infill", "version",
	        INFILL_VERSION);
	s->state = SERVER_STATE_RUNNING;
	server_reply(s, id, result);
}

void lifecycle_initialized(struct server *s, json_t *id, json_t *params)
{
	(void)id, (void)params;
	server_log_message(s, MESSAGE_INFO, "infill %s ready; positions in %s", INFILL_VERSION,
	                   pos_encoding_name(s->encoding));
	workspace_pull_configuration(s);
	project_start(s->project);
}

void lifecycle_shutdown(struct server *s, json_t *id, json_t *params)
{
	(void)params;
	s->state = SERVER_STATE_SHUTDOWN;
	log_info(s->log, "shutdown");
	server_reply(s, id, NULL);
}

static void finish(struct server *s, int status)
{
	if (s->finished) return;
	s->finished = true;
	s->exit_status = status;
	s->state = SERVER_STATE_EXITED;
	s->io.exit(s->io.ud, status);
}

void lifecycle_exit(struct server *s, json_t *id, json_t *params)
{
	(void)id, (void)params;
	int status = s->state == SERVER_STATE_SHUTDOWN ? 0 : 1;
	log_info(s->log, "exit (status %d)%s", status, status ? ": no shutdown came first" : "");
	finish(s, status);
}

void lifecycle_cancel_request(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	json_t *target = json_object_get(params, "id");
	if (!json_is_integer(target) && !json_is_string(target)) {
		log_warn(s->log, "$/cancelRequest without an integer or string id");
		return;
	}
	/* Only completion requests and next edits the model writes are
	 * answered later; every other request has been answered already, so
	 * there is nothing to cancel. */
	if (!completions_cancel(s->completions, target) && !nextedits_cancel(s, target))
		log_debug(s->log, "$/cancelRequest for a request already answered");
}

void lifecycle_set_trace(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	s->trace = parse_trace(json_get_string(params, "value"), s->trace);
}

/* ---- dispatch --------------------------------------------------------- */

static void trace_incoming(struct server *s, const struct rpc_message *m)
{
	if (s->trace == TRACE_OFF || s->state != SERVER_STATE_RUNNING) return;
	char line[300];
	if (m->kind == RPC_KIND_REQUEST) {
		char *id = json_dumps(m->id, JSON_ENCODE_ANY);
		snprintf(line, sizeof line, "Received request '%s - (%s)'.", m->method, id ?: "?");
		free(id);
	} else {
		snprintf(line, sizeof line, "Received notification '%s'.", m->method);
	}
	char *verbose = NULL;
	if (s->trace == TRACE_VERBOSE && m->params) verbose = json_dumps(m->params, JSON_COMPACT);
	server_log_trace(s, line, verbose);
	free(verbose);
}

static void dispatch(struct server *s, struct rpc_message *m)
{
	if (m->kind == RPC_KIND_RESPONSE) {
		handle_response(s, m);
		return;
	}
	const struct method *method = method_find(m->method);
	bool request = m->kind == RPC_KIND_REQUEST;
	if (method && (method->kind == REQUEST) != request) {
		/* e.g. "shutdown" sent as a notification: not the method we know */
		method = NULL;
	}
	if (!request) {
		if (method && method->fn == lifecycle_exit) {
			lifecycle_exit(s, NULL, m->params);
			return;
		}
		if (s->state != SERVER_STATE_RUNNING) {
			log_debug(s->log, "dropping notification %s: %s", m->method,
			          s->state == SERVER_STATE_UNINITIALIZED ? "not initialized"
			                                                 : "shut down");
			return;
		}
		trace_incoming(s, m);
		if (method)
			method->fn(s, NULL, m->params);
		else
			log_debug(s->log, "ignoring unknown notification %s", m->method);
		return;
	}
	switch (s->state) {
	case SERVER_STATE_UNINITIALIZED:
		if (method && method->fn == lifecycle_initialize)
			method->fn(s, m->id, m->params);
		else
			server_reply_error(s, m->id, RPC_ERROR_SERVER_NOT_INITIALIZED,
			                   "the server is not initialized: send initialize first");
		return;
	case SERVER_STATE_RUNNING:
		trace_incoming(s, m);
		if (!method) {
			char msg[200];
			snprintf(msg, sizeof msg, "unknown method %.150s", m->method);
			server_reply_error(s, m->id, RPC_ERROR_METHOD_NOT_FOUND, msg);
		} else if (method->fn == lifecycle_initialize) {
			server_reply_error(s, m->id, RPC_ERROR_INVALID_REQUEST,
			                   "initialize may only be sent once");
		} else {
			method->fn(s, m->id, m->params);
		}
		return;
	case SERVER_STATE_SHUTDOWN:
		server_reply_error(s, m->id, RPC_ERROR_INVALID_REQUEST,
		                   "the server is shut down: only exit is accepted");
		return;
	case SERVER_STATE_EXITED: return;
	}
}

void server_handle_body(struct server *s, const char *body, size_t len)
{
	if (s->finished) return;
	if (log_enabled(s->log, LOG_LEVEL_TRACE) && s->log_text)
		log_trace(s->log, "<-- %.*s", len > 1000 ? 1000 : (int)len, body);
	struct rpc_message m;
	json_t *bad_id;
	char why[200];
	int rc = rpc_message_parse(body, len, &m, &bad_id, why, sizeof why);
	if (rc) {
		log_warn(s->log, "%s: %s", rpc_error_message(rc), why);
		char msg[260];
		snprintf(msg, sizeof msg, "%s: %s", rpc_error_message(rc), why);
		server_reply_error(s, bad_id, rc, msg);
		json_decref(bad_id);
		return;
	}
	if (log_enabled(s->log, LOG_LEVEL_TRACE) && !s->log_text) {
		char *id = m.id ? json_dumps(m.id, JSON_ENCODE_ANY) : NULL;
		log_trace(s->log, "<-- %s%s%s, %zu bytes", m.method ? m.method : "response",
		          id ? " id " : "", id ? id : "", len);
		free(id);
	}
	if (m.repaired)
		log_warn(s->log, "%s%s: repaired to parse it:%s%s%s",
		         m.method ? m.method : "a message", m.id ? " (a request)" : "",
		         m.repaired & JSONFIX_UTF8 ? " invalid UTF-8 replaced by U+FFFD;" : "",
		         m.repaired & JSONFIX_SURROGATE ? " lone surrogates replaced by U+FFFD;"
		                                        : "",
		         m.repaired & JSONFIX_BIGINT ? " integers past 2^63 read as reals;" : "");
	dispatch(s, &m);
	json_decref(m.root);
}

static bool on_frame(void *ud, const char *body, size_t len)
{
	struct server *s = ud;
	server_handle_body(s, body, len);
	return !s->finished;
}

static void on_frame_error(void *ud, enum rpc_frame_error err, const char *detail)
{
	struct server *s = ud;
	log_error(s->log, "input stream: %s (%s)", rpc_frame_error_message(err), detail);
}

void server_feed(struct server *s, const char *data, size_t len)
{
	if (s->finished) return;
	if (rpc_frame_reader_feed(s->reader, data, len))
		log_error(s->log, "out of memory reading input: %zu bytes dropped", len);
}

void server_input_closed(struct server *s, int status)
{
	if (s->finished) return;
	if (rpc_frame_reader_pending(s->reader))
		log_warn(s->log, "input ended inside a frame (%zu bytes unread)",
		         rpc_frame_reader_pending(s->reader));
	if (status)
		log_error(s->log, "reading input failed: %s", uv_strerror(status));
	else
		log_info(s->log, "input closed without exit: ending with status 1");
	finish(s, 1);
}

void server_signalled(struct server *s, int signum)
{
	if (s->finished) return;
	int status = s->state == SERVER_STATE_SHUTDOWN ? 0 : 1;
	log_info(s->log, "%s: ending with status %d%s", strsignal(signum), status,
	         status ? " (no shutdown came first)" : "");
	finish(s, status);
}

bool server_finished(const struct server *s)
{
	return s->finished;
}

/* ---- what the pipeline tells the user -------------------------------- */

static void host_progress(void *ud, const char *title, const char *message, int percentage,
                          bool done)
{
	struct server *s = ud;
	if (message)
		log_info(s->log, "%s: %s%s", title, message, done ? " (done)" : "");
	else /* a report of the percentage alone */
		log_debug(s->log, "%s: %d%%", title, percentage);
	if (done) {
		server_progress_end(s, s->pipeline_progress, message);
		s->pipeline_progress = NULL;
		return;
	}
	if (!s->pipeline_progress)
		s->pipeline_progress = server_progress_begin(s, title, message);
	else
		server_progress_report(s, s->pipeline_progress, message, percentage);
}

static void host_message(void *ud, int type, const char *text)
{
	struct server *s = ud;
	log_write(s->log, type == MESSAGE_ERROR ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN, "%s", text);
	/* before initialize's answer only these notifications are allowed,
	 * and after exit nobody listens */
	if (s->state == SERVER_STATE_RUNNING || s->state == SERVER_STATE_UNINITIALIZED)
		server_show_message(s, (enum message_type)type, "%s", text);
}

static void host_grew(void *ud, const char *uri, bool line_end, bool done)
{
	struct server *s = ud;
	if (s->state == SERVER_STATE_RUNNING) completions_grew(s, uri, line_end, done);
}

/* ---- life of the server ----------------------------------------------- */

struct server *server_new(uv_loop_t *loop, struct log *log, const struct server_options *opts,
                          const struct server_io *io)
{
	struct server *s = calloc(1, sizeof *s);
	if (!s) return NULL;
	s->loop = loop;
	s->log = log;
	s->io = *io;
	s->encoding = POS_ENCODING_UTF16;
	s->max_message = DEFAULT_MAX_MESSAGE;
	s->log_level_fixed = opts && opts->log_level_fixed;
	s->reader = rpc_frame_reader_new(s->max_message, on_frame, on_frame_error, s);
	s->config = config_new();
	s->docs = docs_new();
	s->feedback = feedback_new();
	s->nextedits = nextedits_new();
	if (opts && opts->user_config) s->user_config_path = strdup(opts->user_config);
	if (!s->reader || !s->config || !s->docs || !s->feedback || !s->nextedits) goto fail;
	if (opts && opts->flags)
		config_set_layer(s->config, CONFIG_LAYER_FLAGS, opts->flags, NULL, NULL);
	workspace_apply(s);
	s->pipeline_host = (struct pipeline_host){
		.progress = host_progress, .message = host_message, .ud = s, .grew = host_grew
	};
	s->pipeline = pipeline_new(loop, log, config_get(s->config, NULL), &s->pipeline_host);
	if (!s->pipeline) goto fail;
	s->completions = completions_new(s);
	if (!s->completions) goto fail;
	s->project = project_new(s);
	if (!s->project) goto fail;
	/* last: from here on it may own a timer (metrics.file from the flags) */
	s->metrics = metrics_new(s);
	if (!s->metrics) goto fail;
	metrics_apply(s->metrics, config_get(s->config, NULL)->metrics_file);
	return s;
fail:
	/* nothing here owns a libuv handle yet, except a pipeline */
	if (s->pipeline) pipeline_free(s->pipeline);
	rpc_frame_reader_free(s->reader);
	config_free(s->config);
	docs_free(s->docs);
	feedback_free(s->feedback);
	nextedits_free(s->nextedits);
	free(s->user_config_path);
	free(s);
	return NULL;
}

static void part_closed(void *ud)
{
	struct server *s = ud;
	if (--s->closing_parts == 0 && s->close_done) {
		void (*done)(void *) = s->close_done;
		s->close_done = NULL;
		done(s->close_ud);
	}
}

void server_close(struct server *s, void (*done)(void *ud), void *ud)
{
	s->close_done = done;
	s->close_ud = ud;
	s->finished = true;
	s->closing_parts = 4;
	completions_close(s->completions, part_closed, s);
	metrics_close(s->metrics, part_closed, s);
	pipeline_close(s->pipeline, part_closed, s);
	project_close(s->project, part_closed, s);
}

void server_free(struct server *s)
{
	if (!s) return;
	completions_free(s->completions);
	metrics_free(s->metrics);
	project_free(s->project);
	feedback_free(s->feedback);
	nextedits_free(s->nextedits);
	pipeline_free(s->pipeline);
	while (s->outgoing) {
		struct outgoing *o = s->outgoing;
		s->outgoing = o->next;
		free(o);
	}
	rpc_frame_reader_free(s->reader);
	config_free(s->config);
	docs_free(s->docs);
	free(s->pipeline_progress);
	free(s->root_path);
	free(s->user_config_path);
	free(s);
}
