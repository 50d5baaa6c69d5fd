/*
 * pipeline_internal.h - what the two halves of the in-process pipeline share (private
 * to pipeline/): the job, the events the engine thread posts, the
 * pipeline's state, and the few functions each half calls in the other.
 * pipeline.c is the loop-thread half (the pipeline.h functions, jobs,
 * events, the fast path's memory); engine_thread.c is the engine thread (loads,
 * runs, keeps the live candidates decoding).
 *
 * Threads (docs/architecture.md, "Threads"):
 *   - loop thread: struct pipeline's loop fields, the live-job list, the
 *     per-document fast-path state (pipeline_fast.c), the host hooks. Every
 *     pipeline_* function and every callback runs here.
 *   - engine thread: the model and the engine (locals of worker_main). It
 *     sees jobs only through the queue.
 *   - between them: `mu` guards the job queue, the done list, the event list
 *     and the counters; `cv` wakes the engine thread; `async` wakes the loop.
 *     A job's cancel flag is an atomic the engine checks every decode step.
 */
#ifndef INFILL_PIPELINE_WORKER_H
#define INFILL_PIPELINE_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "complete.h"
#include "pipeline.h"
#include "pipeline_fast.h"
#include "remote.h"

/* The `model` value that means "no model": every answer is empty. Tests of
 * the server core use it so that they need no model file. */
#define PIPELINE_NO_MODEL "none"

/* ---- state ---------------------------------------------------------------- */

/* Ids of ended live candidates the loop can hand over at once. */
#define LIVE_DROP_MAX 8

/* Hints of pipeline_warm kept at most: the newest, one per document. */
#define WORKER_WARM_MAX 4

/* ---- small request queues (req_queue.c) ------------------------------------ */

#define REQ_QUEUE_CAP 4

/* One entry: a request (owned) and how to run it. */
struct req_queue_item {
	struct completion_request *req;
	bool keep_memory;    /* the document's sticky snippets apply (same place) */
	uint64_t not_before; /* uv_hrtime ns: not started before then */
	bool ahead;          /* decoded and answered (EVENT_AHEAD), not only prefilled */
};

/* At most cap (<= REQ_QUEUE_CAP; 0: REQ_QUEUE_CAP) entries, the front
 * first. Zero-initialize; release with req_queue_clear. */
struct req_queue {
	struct req_queue_item it[REQ_QUEUE_CAP];
	size_t n, cap;
};

/* Appends it (its request taken); a full queue frees it and returns false. */
bool req_queue_push_back(struct req_queue *q, struct req_queue_item it);
/* Puts it first (its request taken); a full queue frees its last entry. */
void req_queue_push_front(struct req_queue *q, struct req_queue_item it);
/* Removes entry i and returns it (the caller owns its request; zeroed when
 * there is no entry i). */
struct req_queue_item req_queue_take(struct req_queue *q, size_t i);
/* The first entry for uri, or q->n when none. */
size_t req_queue_find(const struct req_queue *q, const char *uri);
/* Frees every entry for uri; every entry. */
void req_queue_drop_uri(struct req_queue *q, const char *uri);
void req_queue_clear(struct req_queue *q);

struct pipeline_job {
	struct pipeline *p;
	struct completion_request *req;
	pipeline_done_fn done;
	void *ud;
	atomic_int cancel; /* set by pipeline_cancel/close; read by the engine */
	bool dropped;      /* loop: cancelled, no callback */
	int status;        /* engine -> loop: 0 or negative */
	struct completion_result result;
	/* the remote backend (loop thread): the HTTP calls in flight, and
	 * their round trip when answered */
	struct rcall *rcall;
	bool remote;
	double remote_ms;
	uint64_t submit_ns; /* when pipeline_submit took it (uv_hrtime) */
	char *previous;     /* the suggestion on screen for this document, or NULL */
	size_t previous_len;
	bool fast;               /* answered by the fast path */
	struct fast_origin from; /* fast: the memory it was answered from */
	/* engine -> loop: the job left a live candidate (its id, the request's
	 * seq), 0: none */
	uint64_t live_id;
	/* the snapshot's span the candidates' context was cut from (fast path:
	 * carried over from the memory answered from) */
	size_t ctx_start, ctx_end;
	bool cold;                        /* engine: prefilled whole, mostly uncached */
	struct complete_result figures;   /* counts and timings of the run (no items) */
	struct pipeline_job *qnext;       /* queue / done list (under mu) */
	struct pipeline_job *prev, *next; /* live list (loop) */
};

/* EVENT_WARNING: a message the user must see (window/showMessage, warning),
 * e.g. the model file changed on disk and is being reloaded. */
/* EVENT_INFO: the same as information (what was chosen for the user). */
/* EVENT_LOG: a line for the log alone (info), e.g. a draft model taken. */
enum event_kind {
	EVENT_LOAD_BEGIN,
	EVENT_PROGRESS,
	EVENT_LOAD_END,
	EVENT_EXTENDED,
	EVENT_WARNING,
	EVENT_AHEAD,
	EVENT_INFO,
	EVENT_LOG,
};

/* Longer candidates from a live candidate (EVENT_EXTENDED): its whole
 * texts from the cursor of the request that made it. All owned. */
struct extension {
	char *uri;
	uint64_t live_id; /* the seq of that request */
	bool done;        /* every candidate has ended: no more will come */
	bool line_end;    /* the top candidate finished a line since the last one */
	struct completion_result result;
};

/* An answer computed ahead (EVENT_AHEAD) for a text the document does not
 * hold yet: the request's as if the suggestion shown were accepted. All
 * owned. */
struct ahead {
	char *uri;
	char *text; /* the text as it would be, text_len bytes */
	size_t text_len, cursor;
	size_t ctx_start, ctx_end; /* the candidates' context in it */
	struct completion_result result;
};

struct event {
	enum event_kind kind;
	int percentage;
	bool ok;
	bool fallback; /* EVENT_LOAD_END: the embedded model stands in for the one asked */
	bool embedded; /* EVENT_LOAD_END: the embedded model is what loaded */
	char message[600];
	struct extension *ext; /* EVENT_EXTENDED only; owned */
	struct ahead *ahead;   /* EVENT_AHEAD only; owned */
	struct event *next;
};

/* The remote backend's latency figures (loop thread): the last
 * REMOTE_SAMPLES answers' HTTP round trips and the daemon's own time. */
#define REMOTE_SAMPLES 1024

struct remote_figures {
	double remote_ms[REMOTE_SAMPLES], daemon_ms[REMOTE_SAMPLES];
	size_t n, at;
	double remote_sum, daemon_sum; /* over every answer since the start */
};

/* What a load needs; compared to decide whether a configure means a reload
 * (model.reuse_shifted_suffix aside: the engine takes it without one, see
 * pipeline.reuse_shifted). */
struct load_spec {
	char *path;     /* resolved */
	char *fallback; /* the embedded model, loaded when path fails (modelFallback); or NULL */
	struct complete_model_spec model;
};

/* What the user sees of an answer the model computed while its live
 * candidate grows (loop): the top item's bytes 0.5 s and 1 s after the
 * answer and at the candidate's end, as counted into the stats. */
#define SHOWN_TRACK_MAX 4
enum { SHOWN_AT_500MS, SHOWN_AT_1S, SHOWN_AT_END, SHOWN_AT_N };

struct shown_track {
	uint64_t live_id; /* 0: a free slot */
	uint64_t t0;      /* uv_hrtime of the answer */
	size_t at[SHOWN_AT_N];
};

struct pipeline {
	uv_loop_t *loop;
	struct log *log;
	uv_async_t async; /* started lazily (see async_start) */
	bool async_started;
	struct pipeline_host host;                 /* copied at pipeline_new */
	bool loading;                              /* a progress report is open */
	struct pipeline_job *live;                 /* every job not yet freed (loop) */
	struct fast_doc *docs;                     /* the fast path's memory (loop) */
	struct shown_track shown[SHOWN_TRACK_MAX]; /* the newest live answers (loop) */
	struct load_spec loaded;                   /* the spec of the last load requested (loop) */
	bool configured;
	/* The embedded model answers (loop): said once per session, at the
	 * first answer, how to get a real one (pipeline_model.c). */
	bool on_embedded, told_embedded;
	char *told_model; /* the `model` name last warned about (owned), or NULL */
	/* A catalog model the settings name, not downloaded yet while the
	 * embedded model answers for it: its file in the cache (owned), loaded
	 * by the first request after it lands (pipeline_model_landed); or NULL */
	char *awaited_model;
	bool reuse_shifted; /* cache.reuseShiftedSuffix (loop copy) */
	bool closing;
	void (*close_done)(void *ud);
	void *close_ud;
	bool thread_started;
	pthread_t thread;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	struct pipeline_job *queue_head, *queue_tail;
	struct pipeline_job *done_head, *done_tail;
	struct event *events_head, *events_tail;
	struct load_spec pending_load;
	bool load_pending;
	bool params_pending; /* new engine params (shifted suffix) */
	/* a new completion.draftModel for the model loaded (none: "") */
	bool draft_pending;
	char draft_pending_path[sizeof((struct complete_model_spec *)0)->draft_model];
	bool recheck_pending; /* a request came while no model was ready: the engine
	                       * sees whether a model file that failed to load has
	                       * changed since (a download that completed) */
	bool reuse_shifted_pending;
	bool stop;
	bool thread_exited;
	atomic_bool ready; /* a model and an engine are loaded */
	atomic_bool zeta;  /* the model loaded is Zeta's (pipeline_model_is_zeta) */
	/* Stops a live candidate's slice and background prefill (warm): set with mu held whenever a job
	 * is queued, a load is asked for or the pipeline stops; cleared by the
	 * engine thread, also with mu held, only when none of these is pending. */
	atomic_int extend_cancel;
	struct stats stats;
	/* the remote backend (remote_bridge.c): calls the engine thread asked
	 * for, not yet started by the loop (under mu); the client, the failure
	 * last shown and the figures (loop) */
	struct rcall *rcalls_head, *rcalls_tail;
	struct remote_client *remote;
	uint32_t remote_shown; /* a bit per remote_fail_kind shown since the last answer */
	/* The server refused the sampling call's n > 1 (llama-server's
	 * /v1/completions takes n = 1 only): from then on the greedy call alone
	 * (loop sets it, engine thread reads: atomic) */
	atomic_bool remote_no_sampling;
	/* What the server said it serves, for fim.template auto without
	 * remote.tokenizer (engine thread only; remote_bridge.c): asked once per
	 * remote.url and remote.model (probe_key), the template chosen or the
	 * message of why none was. */
	char *probe_key;
	enum fim_template probe_fim;
	char *probe_error;
	uint64_t remote_unsent; /* requests failed before any call (settings) */
	uint64_t remote_cut; /* requests cut at completion.deadlineMs (remote_query.answer_by_ns) */
	void (*remote_closed)(struct pipeline *p); /* remote_bridge_close's done */
	struct remote_figures rfig;
	/* pipeline_warm's hints, newest first (under mu; owned; cap WORKER_WARM_MAX) */
	struct req_queue warm;
	/* live candidates the loop ended (a diverging edit, the document
	 * closed): their ids, for the engine thread to free (under mu) */
	uint64_t live_drop[LIVE_DROP_MAX];
	size_t n_live_drop;
	bool live_drop_all; /* more than LIVE_DROP_MAX came: drop every one */
};

/* The engine thread's body; arg is the struct pipeline (engine thread). */
void *worker_main(void *arg);

/* Frees what a load spec owns (either thread, on a spec it owns). */
void worker_spec_finish(struct load_spec *s);

/* Frees a result's items and texts (either thread). */
void worker_result_finish(struct completion_result *r);

/* Frees an event and what it owns (loop thread). */
void worker_event_free(struct event *ev);

/* Engine thread: queues a message for the user (EVENT_WARNING or EVENT_INFO). */
void worker_post_message(struct pipeline *p, enum event_kind kind, const char *msg);

/* ---- models by name (pipeline_model.c, loop thread) ----------------------- */

/* The file `model` means: a catalog name ("qwen2.5-coder:1.5b") is its file
 * in the cache folder; anything else is a path. A catalog model not yet
 * downloaded is said once (with the `infill pull` command to run) and, with
 * fallback, the embedded model answers meanwhile. New string, or NULL on
 * out of memory. */
char *pipeline_model_path(struct pipeline *p, const char *model, bool fallback);

/* The awaited model's file is there now (`infill pull` finished): loaded
 * as saving the settings again would, with a word to the user. Costs one
 * access() while it is awaited. */
void pipeline_model_landed(struct pipeline *p);

/* Asks the engine thread for a load of path (taken) with the settings
 * want; fallback (taken, or NULL): loaded when path fails (loop). */
void pipeline_load_ask(struct pipeline *p, char *path, const struct complete_model_spec *want,
                       char *fallback);

/* Says once per session that the embedded model is a small stand-in and
 * which catalog model suits this machine. */
void pipeline_model_tell_embedded(struct pipeline *p);

/* ---- the remote backend (remote_bridge.c) ---------------------------------- */

/* The `model` value that stands for the remote backend in a load spec:
 * "remote:" then the remote.tokenizer path (empty: none). */
#define PIPELINE_REMOTE_PREFIX "remote:"

/* What complete_options.generate gets on the engine thread. */
struct remote_gen {
	struct pipeline *p;
	struct pipeline_job *job;
	const struct tokenizer *tok; /* remote.tokenizer's; NULL: none */
};

/* complete_options.generate for the remote backend (engine thread): builds
 * the HTTP calls from rq, hands them to the loop, waits for their end (or
 * the job's cancel), and fills res. ud is a struct remote_gen. */
int remote_bridge_generate(void *ud, const struct engine_request *rq, struct engine_result *res,
                           struct infill_error *err);

/* Loop thread: starts the calls the engine thread asked for (on_async). */
void remote_bridge_start_pending(struct pipeline *p);

/* Loop thread: the job was cancelled: its calls end now (connections
 * closed), and the engine thread stops waiting. */
void remote_bridge_cancel_job(struct pipeline *p, struct pipeline_job *job);

/* Loop thread: records a delivered remote job's figures. */
void remote_bridge_record(struct pipeline *p, const struct pipeline_job *job);

/* Loop thread: fills out's remote figures. */
void remote_bridge_stats(const struct pipeline *p, struct stats *out);

/* Loop thread: closes the client (if any); done(p) runs when it is closed
 * (at once when there is none). */
void remote_bridge_close(struct pipeline *p, void (*done)(struct pipeline *p));

#endif
