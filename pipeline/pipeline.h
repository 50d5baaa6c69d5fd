/*
 * pipeline.h - the completion pipeline as the server sees it: its whole
 * face to the server (lsp/ includes nothing else from pipeline/). The
 * server hands over one request with a snapshot of the document and gets
 * candidates back on the loop thread. The in-process engine plugs in here
 * (pipeline.c, engine_thread.c), and so does the remote backend (`backend:
 * "remote"`, remote_bridge.c): the same slicing, validation and rerank, with
 * the forward passes on an inference server over HTTP.
 *
 * This file is the seam between the LSP side (debounce, supersede, cancel,
 * LSP items; completion_rpc.c) and the engine side (fast path, AST context,
 * prompt, model, validation, rerank: pipeline.c, engine_thread.c, pipeline_fast.c and
 * complete.c; tests/lsp/pipeline_null.c is a test double).
 *
 * Threads: every function here is called on the loop thread, and every
 * callback is delivered on the loop thread (the engine posts results back
 * with uv_async_send). The engine may read a request from its own thread
 * between submit and the callback/cancel: the request is immutable then.
 */
#ifndef INFILL_LSP_PIPELINE_H
#define INFILL_LSP_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "document.h"
#include "log.h"
#include "position.h"
#include "stats.h"

enum completion_kind {
	COMPLETION_KIND_INLINE, /* textDocument/inlineCompletion: ghost text */
	COMPLETION_KIND_LIST,   /* textDocument/completion: a menu item */
};

/* LSP trigger kinds, as the client sent them (inline: 1 invoked, 2
 * automatic; completion: 1 invoked, 2 trigger character, 3 incomplete). */
enum completion_trigger {
	COMPLETION_TRIGGER_INVOKED = 1,
	COMPLETION_TRIGGER_AUTOMATIC = 2, /* inline automatic / completion trigger character */
	COMPLETION_TRIGGER_INCOMPLETE = 3,
};

/* One request. Everything in it belongs to the request (see
 * completion_request_free); pipeline_submit takes it. */
/* A document larger than this is completed from a window of this many bytes
 * around the cursor, so that a completion's cost is bounded by the context
 * budgets, not the document's size (a huge document must not cost a huge
 * completion). Candidates' offsets are in the
 * window. */
#define COMPLETION_WINDOW_BYTES ((size_t)256 << 10)

struct completion_request {
	uint64_t seq;            /* unique, increasing per server */
	char *uri;               /* the document's URI */
	char *language_id;       /* as given in didOpen ("python", ...) */
	int64_t version;         /* the document version the snapshot is of */
	char *text;              /* snapshot of the document, NUL-terminated: all of it,
				  * or a window around the cursor past
				  * COMPLETION_WINDOW_BYTES */
	size_t text_len;         /* bytes in text (it may hold NUL bytes) */
	size_t text_offset;      /* where text starts in the document (0: at its start) */
	size_t cursor;           /* byte offset of the cursor in text */
	struct doc_pos position; /* the cursor as the client sent it */
	enum pos_encoding encoding;
	enum completion_trigger trigger;
	enum completion_kind kind;
	uint64_t arrival_ns;      /* when the request arrived (CLOCK_MONOTONIC, as uv_hrtime) */
	double pace_deadline_ms;  /* the sooner deadline the typing pace set (ms after
				   * arrival; lsp/pace.h), 0: none */
	char *trigger_character;  /* completion only; NULL when none */
	char *selected_text;      /* inline: selectedCompletionInfo.text; else NULL */
	struct settings settings; /* resolved for language_id; a deep copy
				   * (strings and lists owned by the request) */
	/* Context from the rest of the project (context/ chose it), in
	 * prompt order: n_project chunks, owned. None: the prompt as without
	 * a project. */
	struct completion_chunk *project;
	size_t n_project;
	char *project_lines; /* other files' text for line candidates; owned, may be NULL */
	size_t project_lines_len;
	/* the workspace's name and the document's path in it (owned, may be
	 * NULL): the repository format of the families that have one */
	char *project_repo, *project_path;
	/* A next edit the model writes (nextedit_model.h), not a completion at
	 * the cursor: it neither answers from nor feeds the fast path, keeps no
	 * live candidate and no sticky snippets. */
	bool rewrite;
};

/* One chunk of project context: text under a path line. */
struct completion_chunk {
	char *path; /* owned, may be NULL */
	char *text; /* owned */
	size_t len;
};

/* Frees a request and everything it owns; accepts NULL. */
void completion_request_free(struct completion_request *req);

/* A deep copy of req (new; free with completion_request_free), or NULL when
 * out of memory. */
struct completion_request *completion_request_clone(const struct completion_request *req);

/* Deep-copies settings (strings and string lists duplicated) into *dst.
 * Returns 0 or -ENOMEM (then *dst holds nothing to free). */
int completion_settings_copy(struct settings *dst, const struct settings *src);

/* Frees what completion_settings_copy allocated in *s. */
void completion_settings_finish(struct settings *s);

/* One candidate: replace bytes [start, end) of the request's snapshot with
 * text. start <= cursor <= end is expected (the server clamps). */
struct completion_candidate {
	char *text;
	size_t text_len;
	size_t start, end;
	double score; /* higher is better; candidates arrive best first */
	/* exp of the mean log-probability per token (what completion.minConfidence
	 * compares), or negative when unknown (the fast path's remainders) */
	double confidence;
};

/* How an answer was made, for the metrics' latency histograms: NONE without
 * a model run (no model yet, a failure), TYPED a model run that found at
 * least half of its prompt in the prefix cache (the usual keystroke, and
 * every remote run), COLD one that did not (a jump, a new file), FAST from
 * the previous result with no model run. */
enum completion_path {
	COMPLETION_PATH_NONE,
	COMPLETION_PATH_TYPED,
	COMPLETION_PATH_COLD,
	COMPLETION_PATH_FAST,
};

struct completion_result {
	struct completion_candidate *items; /* count entries */
	size_t count;
	enum completion_path path;
	bool deadline_cut; /* completion.deadlineMs stopped the candidates short */
};

/* Delivered once per submitted job that was not cancelled, on the loop
 * thread. status is 0 or a negative error (then result is empty). result is
 * borrowed for the call. */
typedef void (*pipeline_done_fn)(void *ud, int status, const struct completion_result *result);


struct pipeline;
struct pipeline_job;

/* What the pipeline may tell the user, through the server (loop thread
 * only). Either function pointer may be NULL. */
struct pipeline_host {
	/* Work-done progress for long work such as loading a model: one
	 * report at a time; percentage 0..100 or -1 when unknown; done ends
	 * it (message then is the final one). Shown with $/progress when the
	 * client supports it, logged otherwise. */
	void (*progress)(void *ud, const char *title, const char *message, int percentage,
	                 bool done);
	/* A message the user must see (window/showMessage): type 1 error,
	 * 2 warning, 3 info. text borrowed for the call. */
	void (*message)(void *ud, int type, const char *text);
	void *ud;
	/* The suggestion last answered for uri (borrowed for the call) grew: a
	 * live candidate decoded more of it (at most every ~150 ms, or at a
	 * line end: line_end; or it ended: done). A request at the same place
	 * is now answered at once with the longer text. May be NULL. */
	void (*grew)(void *ud, const char *uri, bool line_end, bool done);
};

/* A new pipeline on loop (borrowed, as are log and host, which outlive
 * it). settings are the global settings at start (borrowed for the call);
 * they hold only the command-line flags then. The first
 * pipeline_configure call comes during initialize, once the user file,
 * project file and initializationOptions are merged: the place to start
 * loading a model (the path may come from the client's settings). NULL when
 * out of memory. */
struct pipeline *pipeline_new(uv_loop_t *loop, struct log *log, const struct settings *settings,
                              const struct pipeline_host *host);

/* Cancels every job (no callbacks) and starts closing; done(ud) runs on the
 * loop when its handles are closed, after which pipeline_free may run. */
void pipeline_close(struct pipeline *p, void (*done)(void *ud), void *ud);

/* Frees a closed pipeline; accepts NULL. */
void pipeline_free(struct pipeline *p);

/* Global settings changed (borrowed for the call): a new model, backend or
 * thread count may mean a reload. Called during initialize and after every
 * configuration change (also when nothing the engine uses changed). */
void pipeline_configure(struct pipeline *p, const struct settings *settings);

/* Submits a job; takes req (also on error). On success returns 0, stores a
 * handle in *job (valid until the callback runs or pipeline_cancel), and
 * calls done later, never from inside this call. On error returns a
 * negative errno and never calls done. */
int pipeline_submit(struct pipeline *p, struct completion_request *req, pipeline_done_fn done,
                    void *ud, struct pipeline_job **job);

/* Whether req (borrowed) would be answered at once, without the model: it
 * types the beginning of a suggestion on screen (the fast path). The server
 * then skips the debounce: there is no model run to spare by waiting. */
bool pipeline_answers_at_once(struct pipeline *p, const struct completion_request *req);

/* Cancels a job: its callback will not run, and the engine stops it at its
 * next step. job is invalid afterwards. */
void pipeline_cancel(struct pipeline *p, struct pipeline_job *job);

/* Document events, so the engine can keep per-document state (syntax
 * trees, last suggestion). doc is borrowed for the call. An edit replaced
 * bytes [start, old_end) of the old text by [start, new_end) of the new. */
void pipeline_doc_open(struct pipeline *p, const char *uri, const char *language_id,
                       const struct doc *doc);
void pipeline_doc_edit(struct pipeline *p, const char *uri, const struct doc *doc, size_t start,
                       size_t old_end, size_t new_end);
void pipeline_doc_close(struct pipeline *p, const char *uri);

/*
 * A hint that a request like req will come (after didOpen: the file's head;
 * after didChange: the place of the edit): when the engine is idle it
 * prefills req's prompt into the prefix cache at low priority, in small
 * chunks, and any request that comes stops it within one chunk. Takes req.
 * Only the newest few hints are kept (one per document); a hint where the
 * suggestion shown answers (typed along it, or to its end) is dropped.
 */
void pipeline_warm(struct pipeline *p, struct completion_request *req);

/* Whether the model loaded was fine-tuned for Zed's Zeta edit-prediction
 * format: its vocabulary holds <|editable_region_start|>, or its file's
 * name says "zeta" (nextEdit.format auto). False with no model. */
bool pipeline_model_is_zeta(struct pipeline *p);

/* The engine's counters (a copy). */
/* Fills the infill/stats fields the pipeline keeps (the rest of *out
 * zeroed): every field of struct stats (core/stats.h, where each is
 * described) except those the server fills itself: requests, cancelled,
 * latencyMs, openDocuments, paceDeadlines, indexFiles, feedback, liveShare,
 * thrownShare, grewNotices; neverStarted the server adds its own to. */
void pipeline_get_stats(const struct pipeline *p, struct stats *out);

#endif
