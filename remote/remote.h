/*
 * remote.h - HTTP to an inference server that already scales (vLLM, TGI,
 * llama-server, Ollama): the remote backend's transport, its whole public
 * face. It knows the three APIs' request bodies and streamed replies, and
 * drives libcurl's multi-socket interface from a libuv loop (uv_poll per
 * socket, one uv_timer), so no call ever blocks the loop. It knows nothing of
 * LSP, documents or prompts: pipeline/remote_bridge.c builds the prompt
 * and turns replies into candidates.
 *
 *   remote_api.c     request bodies, streamed chunks -> choices (pure)
 *   remote_stream.c  SSE / NDJSON framing (pure)
 *   remote_text.c    a server's bytes made fit to show (pure)
 *   remote_client.c  curl multi on the loop: queue, retries, cancel, errors
 *   remote_pull.c    `infill pull`: a resumable, checked download (blocking)
 *   remote_probe.c   which model a server serves (blocking)
 *
 * Threads: a struct remote_client and its calls belong to the loop thread
 * that created it; every function here except the pure ones (remote_api_*,
 * remote_stream_*, remote_pull) runs there, and every callback is delivered
 * there. The pure ones touch nothing shared.
 */
#ifndef INFILL_REMOTE_H
#define INFILL_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* ---- what is asked ------------------------------------------------------- */

enum remote_api {
	REMOTE_API_OPENAI,       /* POST {url}/v1/completions, SSE */
	REMOTE_API_LLAMA_INFILL, /* POST {url}/infill (llama-server), SSE */
	REMOTE_API_OLLAMA,       /* POST {url}/api/generate with suffix, NDJSON */
};

/* "openai", "llama-infill", "ollama" (static). */
const char *remote_api_name(enum remote_api api);

/* Where and how to ask. Every string is borrowed for remote_call_start
 * (the call copies what it keeps). */
struct remote_endpoint {
	const char *url; /* base URL: http(s)://host:port[/prefix], no trailing path */
	enum remote_api api;
	const char *model;   /* "model" in the body; NULL: left out */
	const char *api_key; /* sent as "Authorization: Bearer"; NULL: none. Never logged */
	const char *key_env; /* the variable it came from, for messages; may be NULL */
	const char *ca_file; /* PEM CA bundle for TLS; NULL: the system's */
	int timeout_ms;      /* the whole call, retries included */
};

/* A snippet of context from elsewhere (llama-infill's input_extra). */
struct remote_extra {
	const char *name; /* file name; may be NULL */
	const char *text;
	size_t len;
};

/*
 * One call: n samples of one prompt. The prompt is token ids (tokens,
 * n_tokens > 0: the FIM prompt exactly as the in-process engine builds it,
 * for OPENAI), or text: for OPENAI `prompt` (the FIM template written out),
 * for LLAMA_INFILL `prefix`/`suffix`/`extra` (the server applies its model's
 * template), for OLLAMA `prefix`/`suffix`. All borrowed for
 * remote_call_start.
 */
struct remote_query {
	const int32_t *tokens;
	size_t n_tokens;
	const char *prompt;
	size_t prompt_len;
	const char *prefix, *suffix;
	size_t prefix_len, suffix_len;
	const struct remote_extra *extra;
	size_t n_extra;
	int n;              /* samples (OPENAI and LLAMA_INFILL send "n"; OLLAMA: 1) */
	int max_tokens;     /* per sample */
	double temperature; /* 0: greedy */
	double top_p;
	uint64_t seed;
	const char *const *stop; /* stop strings; may be NULL */
	size_t n_stop;
	bool logprobs; /* ask for the chosen tokens' log-probabilities */
	/*
	 * Answer-by time on uv_hrtime()'s clock (ns; 0: none): the editor's
	 * deadline (completion.deadlineMs). Past it the call ends there and
	 * then: its connection is closed (the server stops generating) and
	 * done gets status 0 with what had streamed by then (reply->cut; the
	 * choices unfinished, possibly none). remote.timeoutMs still fails a
	 * call that reaches it first.
	 */
	uint64_t answer_by_ns;
};

/* Why a choice ended. */
enum remote_finish {
	REMOTE_FINISH_NONE,   /* the stream ended without saying */
	REMOTE_FINISH_STOP,   /* end of text or a stop string */
	REMOTE_FINISH_LENGTH, /* max_tokens */
};

struct remote_choice {
	char *text; /* owned, NUL-terminated */
	size_t len;
	int32_t n_tokens;   /* chunks or tokens received */
	int32_t n_logprobs; /* tokens whose log-probability came back (0: none) */
	double sum_logprob; /* over those, natural log */
	enum remote_finish finish;
	bool full; /* cut at the byte cap (struct remote_acc): the rest was dropped */
};

/* What came back. Owned by the library; borrowed by remote_done_fn. */
struct remote_reply {
	struct remote_choice *choices; /* n entries, by the server's index */
	int n;
	double elapsed_ms; /* from the first byte sent (first attempt) to the last received */
	double server_ms;  /* the server's own timings where it sends them (llama-server); 0 */
	int retries;       /* connection attempts repeated */
	bool cut;          /* ended at query.answer_by_ns: what had streamed by then */
};

/* Kinds of failure, each one message the user can act on. */
#define REMOTE_FAILURES(X)                                                       \
	X(NONE, "none")                                                          \
	X(CONNECT, "cannot connect")        /* down, refused, unresolvable */    \
	X(TIMEOUT, "timed out")             /* past endpoint.timeout_ms */       \
	X(TLS, "TLS verification failed")   /* unknown CA, wrong host */         \
	X(AUTH, "key refused")              /* HTTP 401, 403 */                  \
	X(HTTP, "HTTP error")               /* any other status >= 400 */        \
	X(PROTOCOL, "reply not understood") /* invalid JSON, no choices */       \
	X(DISCONNECT, "closed mid-answer")  /* the stream broke off */           \
	X(INTERNAL, "internal error")       /* out of memory, curl setup */      \
	X(LATE, "nothing by the deadline")  /* answer_by_ns, nothing streamed */ \
	X(SETTINGS, "settings")             /* remote.url unset, no template */

enum remote_fail_kind {
#define REMOTE_FAIL_ENUM(name, text) REMOTE_FAIL_##name,
	REMOTE_FAILURES(REMOTE_FAIL_ENUM)
#undef REMOTE_FAIL_ENUM
};

const char *remote_fail_name(enum remote_fail_kind k); /* static: "cannot connect", ... */

struct remote_failure {
	enum remote_fail_kind kind;
	int http_status; /* 0 when none came */
	/* For a person: names the URL, what happened and what to do; never the
	 * key. */
	char message[600];
};

/* url with the password (or a lone token) before '@' replaced by "***",
 * for every message and log line that shows a URL: "http://u:***@host/".
 * New string (free it), NULL when out of memory. */
char *remote_url_redact(const char *url);

/* ---- the client (remote_client.c), loop thread --------------------------- */

struct remote_client;
struct remote_call;

/*
 * Delivered once per call that was not cancelled, on the loop thread, never
 * from inside remote_call_start. status 0: reply holds the choices (f is
 * NULL); else a negative errno (-ECONNREFUSED, -ETIMEDOUT, -EIO, -EPROTO,
 * -EACCES, -ENOMEM) with f saying why (reply NULL). Both borrowed for the
 * call, except that the callback may take reply->choices (then it sets
 * reply->choices to NULL and reply->n to 0, and frees them with
 * remote_reply_finish); the call is freed after it returns.
 */
typedef void (*remote_done_fn)(void *ud, int status, struct remote_reply *reply,
                               const struct remote_failure *f);

/* A new client on loop (borrowed; it must outlive the client) allowing
 * max_concurrent calls in flight (more wait their turn, FIFO). NULL when out
 * of memory or libcurl cannot start. */
struct remote_client *remote_client_new(uv_loop_t *loop, int max_concurrent);

/* Changes how many calls may be in flight (1..64); waiting ones start. */
void remote_client_set_max_concurrent(struct remote_client *c, int max_concurrent);

/* Cancels every call (no callbacks) and closes the client's handles;
 * done(ud) runs on the loop when they are closed, then remote_client_free. */
void remote_client_close(struct remote_client *c, void (*done)(void *ud), void *ud);

/* Frees a closed client (or one that never started a call); accepts NULL. */
void remote_client_free(struct remote_client *c);

/*
 * Starts a call; ep and q are borrowed for this call only. Returns 0 with
 * *out a handle valid until done runs or remote_call_cancel, or a negative
 * errno (-ENOMEM, -EINVAL for a URL that is not http(s)) and never calls
 * done.
 */
int remote_call_start(struct remote_client *c, const struct remote_endpoint *ep,
                      const struct remote_query *q, remote_done_fn done, void *ud,
                      struct remote_call **out);

/* Cancels a call: its callback will not run, and its connection is closed
 * now (the server sees the stream end and stops generating). call is
 * invalid afterwards. */
void remote_call_cancel(struct remote_client *c, struct remote_call *call);

/* Counters since the client started. */
struct remote_client_stats {
	uint64_t calls, failures, retries, cancelled;
	uint64_t cut; /* calls ended at their answer-by time */
	int in_flight, waiting;
};
void remote_client_get_stats(const struct remote_client *c, struct remote_client_stats *out);

/* ---- request bodies and replies (remote_api.c), pure --------------------- */

/* The request path for api ("/v1/completions", ...); static. */
const char *remote_api_path(enum remote_api api);

/* The JSON body of q for ep (model) as a new NUL-terminated string (caller
 * frees), streamed; NULL when out of memory. */
char *remote_api_body(const struct remote_endpoint *ep, const struct remote_query *q);

/* Choices being assembled from a stream (caller's memory; zero it, then
 * remote_acc_finish). */
/* The most bytes one choice keeps when the caller sets no cap: a server
 * that ignores max_tokens cannot grow a candidate past it. */
#define REMOTE_CHOICE_MAX_BYTES (64 * 1024)

struct remote_acc {
	/* Bytes a choice keeps (0: REMOTE_CHOICE_MAX_BYTES); set before feeding. */
	size_t max_bytes;
	struct remote_choice *choices;
	int n, cap;
	bool done;        /* the stream said it is complete ([DONE], done: true, ...) */
	double server_ms; /* timings, when sent */
	char error[300];  /* an error object in the stream ("" when none) */
	bool cut_short;   /* the last payload fed was JSON that ended before it was whole */
};

/* Feeds one JSON payload (an SSE data line, an NDJSON line or a whole
 * non-streamed reply) of api. Returns 0, -EPROTO when it is not JSON or not
 * a shape of that API (acc->error may say why), -ENOMEM. Bytes that are not
 * UTF-8 are read as U+FFFD, and a choice's text ends at its first U+FFFD
 * (the choice is then full): a candidate is always whole UTF-8 text. */
int remote_acc_feed(struct remote_acc *acc, enum remote_api api, const char *json, size_t len);

/* Moves the choices out into *reply (acc left empty). */
void remote_acc_take(struct remote_acc *acc, struct remote_reply *reply);

void remote_acc_finish(struct remote_acc *acc);
void remote_reply_finish(struct remote_reply *r);

/* ---- stream framing (remote_stream.c), pure ------------------------------ */

/*
 * Splits a byte stream into payloads: SSE `data:` lines (the `[DONE]`
 * sentinel ends it; comments and other fields are skipped) and bare JSON
 * lines (NDJSON). Bytes that never formed a line are kept for
 * remote_stream_rest (a reply that was not streamed: one JSON document,
 * possibly pretty-printed).
 */
struct remote_stream {
	char *buf; /* pending bytes (owned) */
	size_t len, cap;
	char *all; /* every byte so far, up to REMOTE_STREAM_KEEP (owned) */
	size_t all_len, all_cap;
	bool done_seen;   /* "data: [DONE]" */
	bool sse_payload; /* the payload being delivered came from a data: line */
	size_t payloads;
};

#define REMOTE_STREAM_KEEP ((size_t)1 << 20)

/* Called with each payload (borrowed for the call); non-zero stops the feed
 * and is returned from remote_stream_feed. */
typedef int (*remote_payload_fn)(void *ud, const char *payload, size_t len);

int remote_stream_feed(struct remote_stream *s, const char *data, size_t len, remote_payload_fn fn,
                       void *ud);
/* The whole body seen so far (borrowed; up to REMOTE_STREAM_KEEP bytes). */
const char *remote_stream_all(const struct remote_stream *s, size_t *len);
void remote_stream_finish(struct remote_stream *s);

/* ---- text from a server (remote_text.c), pure --------------------------- */

/* How many leading bytes of s (n bytes) are valid UTF-8 (RFC 3629: no
 * overlong forms, no surrogates). */
size_t remote_text_valid(const char *s, size_t n);

/* s with every byte that is not part of a valid UTF-8 sequence replaced by
 * U+FFFD: a new NUL-terminated string of *out_len bytes (caller frees),
 * NULL when out of memory. */
char *remote_text_repair(const char *s, size_t n, size_t *out_len);

/* Makes a NUL-terminated message fit to show, in place: bytes that are not
 * UTF-8 become '?', control characters one space. */
void remote_text_clean(char *s);

/* Whether a body is an HTML page (a proxy's error page, a web UI). */
bool remote_text_is_html(const char *body, size_t len);

/* The most bytes remote_text_excerpt writes, its NUL aside. */
#define REMOTE_EXCERPT_MAX 160

/* A server's words from a body that is not the API's JSON, for a message:
 * an HTML page's title (else its first heading, else its text without
 * tags), else the body's first line; one line of printable UTF-8, at most
 * REMOTE_EXCERPT_MAX bytes ("" when there is none). */
void remote_text_excerpt(const char *body, size_t len, char *out, size_t cap);

/* ---- SHA-256 (sha256.c), pure ------------------------------------------- */

struct remote_sha256 {
	uint32_t h[8];
	unsigned char buf[64];
	size_t n;
	uint64_t total;
};
void remote_sha256_init(struct remote_sha256 *s);
void remote_sha256_update(struct remote_sha256 *s, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL; s is spent. */
void remote_sha256_hex(struct remote_sha256 *s, char out[65]);

/* ---- downloads (remote_pull.c), blocking: the command line only ---------- */

struct remote_pull_options {
	const char *url;    /* http(s) */
	const char *out;    /* the file written; a partial download is OUT.part */
	const char *sha256; /* 64 hex digits to check, or NULL */
	const char *ca_file;
	bool progress; /* a progress line on stderr */
	/* Called on the whole OUT.part before it is renamed into place (after
	 * the sha256, when given); nonzero keeps nothing: the part is removed
	 * and remote_pull returns that code with verify's msg. May be NULL. */
	int (*verify)(const char *part, void *ud, char *msg, size_t msg_len);
	void *verify_ud;
};

/* Downloads url to out, resuming OUT.part with a Range request when it
 * exists, then checks the sha256 when given (a mismatch keeps nothing: the
 * file is removed) and renames into place. Returns 0 or a negative errno with
 * msg (msg_len bytes) saying why: -ENOSPC when the disk is full and -EFBIG
 * at a file-size limit (the part is kept for a resume once there is room). */
int remote_pull(const struct remote_pull_options *o, char *msg, size_t msg_len);

/* Asks the server at ep which model it serves: GET /props (llama-server's
 * model_path; enough when it answers), else GET /v1/models (the ids), then
 * Ollama's POST /api/show {"model": ep->model, else the first id} for its
 * family and architecture (OLLAMA: /api/show alone). Fills name (NUL-terminated; what was said,
 * space-separated: a path, ids, family and architecture) and *source (the
 * path asked, static). Blocking, at most 5 s per request (less when
 * ep->timeout_ms is): never call it on the loop thread. Returns 0, or a
 * negative errno with msg saying what the server did not tell. */
int remote_probe(const struct remote_endpoint *ep, char *name, size_t name_len, const char **source,
                 char *msg, size_t msg_len);

#endif
