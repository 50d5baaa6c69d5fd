/*
 * replay_trace.h - a trace of editing events replayed against the real
 * server (private to cli/; `infill replay` is its command line in
 * cli_replay.c, the client under it is replay_client.c).
 *
 * A trace is a JSON object {"name"?, "settings"?, "events": [...]}; each
 * event is an object with one of the keys of REPLAY_EVENTS below. Files are
 * named by path, relative to the trace file's folder unless absolute; the
 * cursor is in the file of the last goto. Every edit is sent as didChange,
 * and edits that ask send an inlineCompletion request at the new cursor, as
 * an editor does after a keystroke. Counts of characters are code points;
 * line numbers start at 1, columns (bytes) at 0.
 *
 * A client of infill/suggestionGrew: where it names the cursor's place and
 * the document's version, the replay asks again there, as the editors do.
 *
 * Timing: each keystroke of a "type" event is sent paceMs after the one
 * before, whether its answer came or not (an editor does not wait), so fast
 * typing supersedes requests as it does in an editor; with afterAnswer the
 * next keystroke waits for the answer first (the old single-line replay).
 *
 * Threads: one.
 */
#ifndef INFILL_CLI_REPLAY_TRACE_H
#define INFILL_CLI_REPLAY_TRACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The events: X(ENUM, key, help). One table for the parser, the runner and
 * `infill replay --help`. */
#define REPLAY_EVENTS(X)                                                                       \
	X(OPEN, "open", "{\"open\": PATH, \"language\"?: ID}  didOpen with the file's text")   \
	X(CLOSE, "close", "{\"close\": PATH}  didClose")                                       \
	X(GOTO, "goto",                                                                        \
	  "{\"goto\": PATH, \"line\": N, \"column\"?: BYTES}  move there (opens it if need "   \
	  "be); the next request is a cold one")                                               \
	X(DELETE, "delete", "{\"delete\": N, \"ask\"?: true}  backspace N characters")         \
	X(CUT, "cut",                                                                          \
	  "{\"cut\": N | \"line\" | \"end\", \"ask\"?: true}  remove what follows the cursor " \
	  "(N characters, the rest of the line, the rest of the file)")                        \
	X(TYPE, "type",                                                                        \
	  "{\"type\": TEXT, \"paceMs\"?: 150, \"afterAnswer\"?: false}  one keystroke per "    \
	  "character, each asking")                                                            \
	X(TYPE_SHOWN, "typeShown",                                                             \
	  "{\"typeShown\": N, \"paceMs\"?: 150}  type up to N characters of the suggestion "   \
	  "shown, one keystroke each asking, as it grows; stops where none shows")             \
	X(ACCEPT, "accept", "{\"accept\": true}  insert the suggestion shown (top item), ask") \
	X(ASK, "ask", "{\"ask\": true}  an inlineCompletion request at the cursor")            \
	X(WAIT, "wait", "{\"wait\": MS}  let time pass (answers arrive meanwhile)")            \
	X(AWAIT, "await", "{\"await\": true}  wait until every request was answered")

enum replay_event_kind {
#define X(e, key, help) REPLAY_EVENT_##e,
	REPLAY_EVENTS(X)
#undef X
	        REPLAY_EVENT_COUNT
};

/* How to run a trace. Everything borrowed. */
struct replay_opts {
	const char *server;   /* the server's binary; NULL: this one */
	const char *model;    /* NULL: the server's default */
	const char *settings; /* a JSON object merged over the trace's settings, or NULL */
	const char *log;      /* the server's stderr goes here (NULL: /dev/null) */
	const char *base_dir; /* relative paths of the trace start here ("." when NULL) */
	long debounce_ms;     /* completion.debounceMs; < 0: as the settings say */
	bool cache;           /* cache.enabled */
	bool verbose;         /* each request's latency on stderr */
};

struct replay_latency {
	size_t n;
	double p50, p90, p99, max, mean;
};

/* What a run measured. Requests are inlineCompletion requests; "answered"
 * ones got their response before a newer request for the same document was
 * sent (the others were superseded: the server answers them empty at once,
 * and no editor shows them). */
struct replay_report {
	bool cache;
	char backend[32];
	double load_ms;
	long deadline_ms;           /* completion.deadlineMs in effect */
	size_t requests, responses; /* sent, and responses received */
	size_t answered, superseded;
	size_t superseded_late;     /* superseded after waiting past deadline + 50 ms */
	size_t keystrokes;          /* requests made by "type" events */
	size_t keystrokes_answered; /* of those, answered */
	size_t with_items;          /* answered with at least one item */
	size_t keystrokes_with_items;
	size_t within_deadline; /* answered within deadline + 50 ms */
	/* the same for requests that were not the first at a new place (a cold
	 * jump is judged by its own latency): answered, superseded late,
	 * within deadline + 50 ms */
	size_t warm_answered, warm_late, warm_within;
	size_t accepted, accept_missed; /* accept events with / without a suggestion shown */
	size_t correct, correct_chars;  /* keystrokes whose top item is what follows */
	/* feedback: suggestions the simulated user took (each top
	 * item shown that is what the file says next), and the server's counts
	 * over the run (infill/stats feedback, all languages and shapes;
	 * accepted includes partly accepted) */
	size_t taken, fb_shown, fb_accepted, fb_dismissed, fb_hidden, fb_under_floor;
	struct replay_latency latency;    /* answered requests, cold ones apart */
	struct replay_latency cold;       /* answered first requests at a new place */
	double first_cold_ms;             /* the first cold request (0: none answered) */
	struct replay_latency server_cpu; /* server CPU ms of requests answered alone */
	double server_cpu_total_ms;
	/* from infill/stats, over the run (-1 where the server has no such key) */
	long long prompt, cached, generated, fast_path, rejected, never_started, cold_requests;
	/* what the user sees (infill/stats, docs/protocol.md): answers the
	 * model computed and the bytes of their top items at the answer, 0.5 s
	 * and 1 s after it and at their live candidates' ends; requests answered
	 * from a live candidate, a past answer, an answer decoded ahead; tokens
	 * decoded after the answers and ahead, and of those the thrown ones */
	long long shown_answers, chars_answer, chars_500ms, chars_1s, chars_end;
	long long live_answers, past_answers, ahead_answers;
	long long live_tokens, ahead_tokens, thrown_tokens;
	/* drafted tokens checked, and kept: prompt lookup's, the draft model's */
	long long look_drafted, look_kept, model_drafted, model_kept;
	/* typing along what is shown ("typeShown" keystrokes) and asking again
	 * where infill/suggestionGrew says the suggestion grew: requests,
	 * answered, and answered within FAST_MS with text that agrees with
	 * what was shown */
	size_t along_keys, along_answered, along_fast;
	size_t grew_asks, grew_answered, grew_fast;
};

/* Checks a trace's shape; 0, or -EINVAL with the event and key to fix in
 * err. trace borrowed. */
int replay_trace_check(const json_t *trace, char *err, size_t errlen);

/* Runs a checked trace against a new server and fills *rep. Returns 0 when
 * every request got its response, 1 when some did not, or a negative errno
 * with a message in err when the run could not be made (server, model,
 * file). trace borrowed. */
int replay_trace_run(const json_t *trace, const struct replay_opts *o, struct replay_report *rep,
                     char *err, size_t errlen);

/* The report as JSON (new reference); the keys of the old single-line
 * replay are kept (keystrokes, answered, nonEmpty, latencyMs, coldMs, ...). */
json_t *replay_report_json(const struct replay_report *r);

/* The report as text on f. */
void replay_report_print(const struct replay_report *r, FILE *f);

#endif
