/*
 * pipeline_internal.h - what the two halves of the in-process pipeline share (private
 * to pipeline/): the job, the events the engine thread posts, the
 * pipeline's state, and the few functions each half calls in the other.
 * pipeline.c is the loop-thread half (the pipeline.h functions, jobs,
 * events, the fast path's memory); engine_thread.c is the engine thread (loads,
 * runs, extends).
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

/* Hints of pipeline_warm kept at most: the newest, one per document. */
#define WORKER_WARM_MAX 4

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
	bool fast;                        /* answered by the fast path */
	bool cold;                        /* engine: prefilled whole, mostly uncached */
	struct complete_result figures;   /* counts and timings of the run (no items) */
	struct pipeline_job *qnext;       /* queue / done list (under mu) */
	struct pipeline_job *prev, *next; /* live list (loop) */
};

/* EVENT_WARNING: a message the user must see (window/showMessage, warning),
 * e.g. the model file changed on disk and is being reloaded. */
enum event_kind { EVENT_LOAD_BEGIN, EVENT_PROGRESS, EVENT_LOAD_END, EVENT_EXTENDED, EVENT_WARNING };

/* Longer candidates for an answer the deadline cut short (EVENT_EXTENDED):
 * for the snapshot text[0, len) with the cursor at cursor. All owned. */
struct extension {
	char *uri;
	char *text;
	size_t len, cursor;
	struct completion_result result;
};

struct event {
	enum event_kind kind;
	int percentage;
	bool ok;
	bool fallback; /* EVENT_LOAD_END: the embedded model stands in for the one asked */
	char message[600];
	struct extension *ext; /* EVENT_EXTENDED only; owned */
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

struct pipeline {
	uv_loop_t *loop;
	struct log *log;
	uv_async_t async; /* started lazily (see async_start) */
	bool async_started;
	struct pipeline_host host; /* copied at pipeline_new */
	bool loading;              /* a progress report is open */
	struct pipeline_job *live; /* every job not yet freed (loop) */
	struct fast_doc *docs;     /* the fast path's memory (loop) */
	struct load_spec loaded;   /* the spec of the last load requested (loop) */
	bool configured;
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
	bool params_pending;  /* new engine params (shifted suffix) */
	bool recheck_pending; /* a request came while no model was ready: the engine
	                       * sees whether a model file that failed to load has
	                       * changed since (a download that completed) */
	bool reuse_shifted_pending;
	bool stop;
	bool thread_exited;
	atomic_bool ready; /* a model and an engine are loaded */
	/* Stops an extension run (see extend) and background prefill (warm): set with mu held whenever a job
	 * is queued, a load is asked for or the pipeline stops; cleared by the
	 * engine thread, also with mu held, only when none of these is pending. */
	atomic_int extend_cancel;
	struct pipeline_stats stats;
	/* the remote backend (remote_bridge.c): calls the engine thread asked
	 * for, not yet started by the loop (under mu); the client, the failure
	 * last shown and the figures (loop) */
	struct rcall *rcalls_head, *rcalls_tail;
	struct remote_client *remote;
	int remote_last_failure; /* kind * 1000 + HTTP status; 0: none shown */
	/* The server refused the sampling call's n > 1 (llama-server's
	 * /v1/completions takes n = 1 only): from then on the greedy call alone
	 * (loop sets it, engine thread reads: atomic) */
	atomic_bool remote_no_sampling;
	uint64_t remote_unsent; /* requests failed before any call (settings) */
	uint64_t remote_cut; /* requests cut at completion.deadlineMs (remote_query.answer_by_ns) */
	void (*remote_closed)(struct pipeline *p); /* remote_bridge_close's done */
	struct remote_figures rfig;
	/* pipeline_warm's hints, newest first (under mu; owned) */
	struct completion_request *warm[WORKER_WARM_MAX];
	size_t n_warm;
};

/* The engine thread's body; arg is the struct pipeline (engine thread). */
void *worker_main(void *arg);

/* Frees what a load spec owns (either thread, on a spec it owns). */
void worker_spec_finish(struct load_spec *s);

/* Frees a result's items and texts (either thread). */
void worker_result_finish(struct completion_result *r);

/* Frees an event and what it owns (loop thread). */
void worker_event_free(struct event *ev);

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
void remote_bridge_stats(const struct pipeline *p, struct pipeline_stats *out);

/* Loop thread: closes the client (if any); done(p) runs when it is closed
 * (at once when there is none). */
void remote_bridge_close(struct pipeline *p, void (*done)(struct pipeline *p));

#endif
