/*
 * server_priv.h - struct server and the functions the server's files share
 * (server.c: dispatch and lifecycle; textsync.c: documents; workspace.c:
 * configuration; completion_rpc.c: completion requests; notify.c: messages to
 * the client). Private to lsp/.
 */
#ifndef INFILL_LSP_SERVER_PRIV_H
#define INFILL_LSP_SERVER_PRIV_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "docs.h"
#include "frame.h"
#include "jsonrpc.h"
#include "log.h"
#include "pipeline.h"
#include "position.h"
#include "server.h"

/* Every method the server knows, written once: the enum, the names and the
 * dispatch come from here. Columns: enum name, LSP method, request or
 * notification, handler. Unknown notifications are ignored; unknown
 * requests get -32601. */
#define LSP_METHODS(X)                                                                            \
	X(INITIALIZE, "initialize", REQUEST, lifecycle_initialize)                                \
	X(INITIALIZED, "initialized", NOTIFICATION, lifecycle_initialized)                        \
	X(SHUTDOWN, "shutdown", REQUEST, lifecycle_shutdown)                                      \
	X(EXIT, "exit", NOTIFICATION, lifecycle_exit)                                             \
	X(CANCEL_REQUEST, "$/cancelRequest", NOTIFICATION, lifecycle_cancel_request)              \
	X(SET_TRACE, "$/setTrace", NOTIFICATION, lifecycle_set_trace)                             \
	X(DID_OPEN, "textDocument/didOpen", NOTIFICATION, textsync_did_open)                      \
	X(DID_CHANGE, "textDocument/didChange", NOTIFICATION, textsync_did_change)                \
	X(DID_CLOSE, "textDocument/didClose", NOTIFICATION, textsync_did_close)                   \
	X(DID_SAVE, "textDocument/didSave", NOTIFICATION, textsync_did_save)                      \
	X(COMPLETION, "textDocument/completion", REQUEST, completion_on_completion)               \
	X(INLINE_COMPLETION, "textDocument/inlineCompletion", REQUEST, completion_on_inline)      \
	X(DID_CHANGE_CONFIGURATION, "workspace/didChangeConfiguration", NOTIFICATION,             \
	  workspace_did_change_configuration)                                                     \
	X(DID_CHANGE_WATCHED_FILES, "workspace/didChangeWatchedFiles", NOTIFICATION,              \
	  workspace_did_change_watched_files)                                                     \
	X(STATS, "infill/stats", REQUEST, completion_on_stats)                                    \
	X(DOCUMENT, "infill/document", REQUEST, textsync_show_document)                           \
	X(SETTINGS, "infill/settings", REQUEST, workspace_show_settings)                          \
	X(DID_SHOW_COMPLETION, "textDocument/didShowCompletion", NOTIFICATION, feedback_did_show) \
	X(DID_PARTIALLY_ACCEPT, "textDocument/didPartiallyAcceptCompletion", NOTIFICATION,        \
	  feedback_did_partially_accept)                                                          \
	X(EXECUTE_COMMAND, "workspace/executeCommand", REQUEST, feedback_execute_command)         \
	X(NEXT_EDIT, "infill/nextEdit", REQUEST, nextedit_on_request)                             \
	X(COPILOT_INLINE_EDIT, "textDocument/copilotInlineEdit", REQUEST, nextedit_on_request)    \
	X(SHOW_INLINE_EDIT, "textDocument/didShowInlineEdit", NOTIFICATION, nextedit_did_show)    \
	X(REJECT_NEXT_EDIT, "infill/didRejectNextEdit", NOTIFICATION, nextedit_did_reject)

enum lsp_method {
#define X(name, str, kind, fn) LSP_METHOD_##name,
	LSP_METHODS(X)
#undef X
	        LSP_METHOD_COUNT
};

/* A handler. For requests id is the request's id (borrowed: incref to keep
 * it) and the handler must answer exactly once, now or later
 * (server_reply*); for notifications id is NULL. params may be NULL. */
typedef void (*lsp_handler_fn)(struct server *s, json_t *id, json_t *params);

#define X(name, str, kind, fn) void fn(struct server *s, json_t *id, json_t *params);
LSP_METHODS(X)
#undef X

enum server_state {
	SERVER_STATE_UNINITIALIZED, /* before initialize */
	SERVER_STATE_RUNNING,
	SERVER_STATE_SHUTDOWN, /* after shutdown: only exit is accepted */
	SERVER_STATE_EXITED,
};

enum trace_value { TRACE_OFF, TRACE_MESSAGES, TRACE_VERBOSE };

/* A request we sent to the client, waiting for its response. */
typedef void (*server_response_fn)(struct server *s, json_t *result, json_t *error, void *ud);
struct outgoing {
	json_int_t id;
	server_response_fn cb;
	void *ud;
	struct outgoing *next;
};

struct completions;
struct project;
struct feedback;
struct nextedits;
struct metrics;
struct stats;

struct server {
	uv_loop_t *loop;
	struct log *log;
	struct server_io io;
	struct rpc_frame_reader *reader;
	enum server_state state;
	int exit_status;
	bool finished;

	/* negotiated at initialize */
	enum pos_encoding encoding;
	enum trace_value trace;
	bool client_configuration; /* workspace.configuration */
	bool client_progress;      /* window.workDoneProgress */
	bool client_watch_files;   /* workspace.didChangeWatchedFiles.dynamicRegistration */
	bool client_show_message;  /* always assumed; here for clarity */
	char *root_path;           /* workspace root (filesystem path) or NULL */

	/* configuration */
	struct config *config;
	char *user_config_path;
	bool log_level_fixed;
	bool log_text; /* log.messageText: trace lines may carry message bodies */
	size_t max_message;

	struct docs *docs;
	struct pipeline *pipeline;
	struct pipeline_host pipeline_host;
	char *pipeline_progress; /* the pipeline's progress token, or NULL */
	struct completions *completions;
	struct project *project;   /* the workspace index, the recent ring (project.c) */
	struct feedback *feedback; /* the fate of suggestions shown (feedback.c) */
	struct metrics *metrics;   /* metrics.file (metrics.c) */
	/* settled edits and next edits offered (nextedit_rpc.c) */
	struct nextedits *nextedits;

	json_int_t next_id; /* ids of our requests to the client */
	struct outgoing *outgoing;
	uint64_t next_progress;

	/* closing */
	int closing_parts;
	void (*close_done)(void *ud);
	void *close_ud;
};

/* ---- sending (server.c) ---- */

/* Sends a message (stolen). */
void server_send(struct server *s, json_t *msg);
/* Answers request id (borrowed) with result (stolen). */
void server_reply(struct server *s, json_t *id, json_t *result);
/* Answers request id with an error; message NULL: the standard one. */
void server_reply_error(struct server *s, json_t *id, int code, const char *message);
/* Sends a notification; params stolen. */
void server_notify(struct server *s, const char *method, json_t *params);
/* Sends a request to the client; params stolen. cb runs with the result or
 * the error (borrowed) when the response arrives; never if the server is
 * closed first. Returns the request id (> 0), or -ENOMEM when it could not
 * be sent. */
json_int_t server_request(struct server *s, const char *method, json_t *params,
                          server_response_fn cb, void *ud);

/* ---- notify.c: window messages, $/progress, $/logTrace ---- */

enum message_type { MESSAGE_ERROR = 1, MESSAGE_WARNING = 2, MESSAGE_INFO = 3, MESSAGE_LOG = 4 };
void server_show_message(struct server *s, enum message_type type, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void server_log_message(struct server *s, enum message_type type, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void server_log_trace(struct server *s, const char *message, const char *verbose);

/* Work-done progress: begin creates the token with the client (when it
 * supports window.workDoneProgress) and returns it (a new string to pass to
 * report/end, which frees it), or NULL when the client cannot show
 * progress (then report/end accept NULL and do nothing). */
char *server_progress_begin(struct server *s, const char *title, const char *message);
void server_progress_report(struct server *s, const char *token, const char *message,
                            int percentage);
void server_progress_end(struct server *s, char *token, const char *message);

/* ---- workspace.c: configuration ---- */

/* Loads user, project and init layers (during initialize). */
void workspace_configure_initial(struct server *s, json_t *init_params);
/* After initialized: pulls workspace/configuration when supported. */
void workspace_pull_configuration(struct server *s);
/* A file was saved or changed on disk (didSave, didChangeWatchedFiles):
 * reloads .infill.json when it is the project's. */
void workspace_file_saved(struct server *s, const char *uri);
/* Re-applies global settings (log level, message size, engine). */
void workspace_apply(struct server *s);
/* Path of a file:// URI (new string), or NULL for other schemes. */
char *workspace_uri_to_path(const char *uri);
/* The file:// URI of an absolute path (new string), percent-encoded as
 * editors write it; NULL for a relative path or on out of memory. */
char *workspace_path_to_uri(const char *path);

/* ---- completion_rpc.c ---- */

struct completions *completions_new(struct server *s);
/* Answers pending requests for uri with empty results (document closed). */
void completions_doc_closed(struct completions *c, const char *uri);
/* Hints the engine that a completion at byte offset cursor of the open
 * document e will likely come (pipeline_warm): after didOpen, the file's
 * head; after didChange, the end of the edit. Nothing when completions are
 * off for its language or the cache is disabled. */
void completions_warm(struct server *s, struct docs_entry *e, size_t cursor);
/* The pipeline's host.grew (see pipeline.h): sends infill/suggestionGrew
 * {uri, version, position, lineEnd, done} for the answer last shown there
 * when the document has not changed since. */
void completions_grew(struct server *s, const char *uri, bool line_end, bool done);
/* Answers request id with -32800 if it is pending; true when it was. */
bool completions_cancel(struct completions *c, json_t *id);
/* Drops every pending request without answering; done when all timers are
 * closed. */
void completions_close(struct completions *c, void (*done)(void *ud), void *ud);
void completions_free(struct completions *c);
/* The infill/stats answer's values now. out->feedback is a new reference
 * (the caller decrefs it; NULL on out of memory); names are static. */
void completions_stats(struct server *s, struct stats *out);

/* ---- metrics.c: metrics.file, Prometheus text format ---- */

/* A new metrics writer, off until metrics_apply names a file; NULL on out of
 * memory. s is borrowed and outlives it. */
struct metrics *metrics_new(struct server *s);
/* Starts, moves or stops the file (path borrowed; NULL or "": off). Writes
 * at once when it starts, then every few seconds. m may be NULL. */
void metrics_apply(struct metrics *m, const char *path);
/* Counts one answered request: its path, top suggestion and deadline cut
 * from res (borrowed; NULL when no job ran), ms from arrival to answer. m
 * may be NULL. */
void metrics_record(struct metrics *m, const struct completion_result *res, double ms);
/* Writes the file a last time and closes the timer; done runs after (from
 * the loop, or at once when there was no timer). */
void metrics_close(struct metrics *m, void (*done)(void *ud), void *ud);
/* After metrics_close's done (or when no timer was started); NULL is fine. */
void metrics_free(struct metrics *m);

/* ---- helpers for params (server.c) ---- */

/* A string member of obj, or NULL. */
const char *json_get_string(json_t *obj, const char *key);
/* Reads {"line": n, "character": n}; false when malformed. */
bool json_get_position(json_t *obj, struct doc_pos *pos);

/* ---- project.c: context from the rest of the project (context/) ---- */

/* New, or NULL when out of memory. Free with project_free (accepts NULL). */
struct project *project_new(struct server *s);
void project_free(struct project *p);
/* Starts the workspace index of s->root_path (a scan off the loop), once;
 * nothing without a root or with context.index.maxFiles 0. */
void project_start(struct project *p);
/* A file saved or changed on disk (uri): read again off the loop. */
void project_file_changed(struct project *p, const char *uri);
/* The document was edited at byte at: its lines there join the recent ring. */
void project_did_edit(struct project *p, const struct docs_entry *e, size_t at);
void project_doc_closed(struct project *p, const char *uri);
/* Where name is defined in the project, for an import the document at uri
 * lacks: the one other indexed file of its language's family that defines
 * it, relative to the document's folder, into buf[0..cap); false when none,
 * several, or no index. */
bool project_defined_in(struct project *p, const char *uri, const char *language_id,
                        const char *name, char *buf, size_t cap);
/* The indexed files whose imports name the file of uri (ctx_index_importers),
 * at most cap absolute paths (new strings, the caller frees each and the
 * array) into *out. Returns how many, 0 without an index. */
int project_importers(struct project *p, const char *uri, char ***out, size_t cap);
/* The text the index kept of the file at path (absolute): a new string
 * into *out, its length into *len; false when none (not indexed, too big). */
bool project_file_text(struct project *p, const char *path, char **out, size_t *len);
/* Puts the project context for a completion at cursor (a byte offset in
 * e's document) into req (req->project, req->project_lines; owned by req),
 * as context.project and context.extraTokens say. 0 or -ENOMEM. */
int project_fill(struct project *p, const struct docs_entry *e, size_t cursor,
                 struct completion_request *req);
/* Files in the workspace index (0 without one). */
uint64_t project_index_files(struct project *p);
/* Calls done once no work of the index runs any more (at once when none). */
void project_close(struct project *p, void (*done)(void *ud), void *ud);

/* ---- nextedit_rpc.c: next edits ---- */

/* New, empty (NULL on out of memory); freed with nextedits_free (accepts
 * NULL). */
struct nextedits *nextedits_new(void);
void nextedits_free(struct nextedits *n);
/* e's document is about to have [start, end) replaced by text[0..len):
 * call before the change is applied (the removed bytes are read here). */
void nextedits_change(struct server *s, struct docs_entry *e, size_t start, size_t end,
                      const char *text, size_t len);
/* uri was closed or reopened: its settled edit and offers are forgotten. */
void nextedits_doc_closed(struct nextedits *n, const char *uri);
/* workspace/executeCommand: true when params name the next-edit accept
 * command (then it is counted; the caller replies). */
bool nextedits_accept_command(struct server *s, json_t *params);
/* $/cancelRequest for a next-edit request waiting for the model: answered
 * now with the edits ready. False when id is none of them. */
bool nextedits_cancel(struct server *s, json_t *id);
/* The next-edit fields of infill/stats into *st. */
void nextedits_stats(struct nextedits *n, struct stats *st);

#endif
