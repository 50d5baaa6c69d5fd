/*
 * stats.h - the fields of the `infill/stats` answer, listed once
 * (STATS_FIELDS): the server fills a struct stats and sends it
 * (completion_rpc.c), `infill replay` reads one back from a child server
 * (cli/cli_replay.c), and `infill complete --json` and the replay's own
 * rows name their token counts with the same keys (stats_keys). The keys are
 * relied on by clients and scripts: add beside them, never rename.
 *
 * Threads: none of its own; pure functions of their arguments.
 */
#ifndef INFILL_LSP_STATS_H
#define INFILL_LSP_STATS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/*
 * X(field, key, kind), in the answer's order. kind is how the value is
 * held and sent: count (uint64_t, a JSON integer), name (a static or
 * borrowed string, "none" when NULL), latency (struct stats_latency, an
 * object), ratio (a double in [0, 1], a JSON real), object (a borrowed JSON
 * object, {} when NULL).
 *
 * feedback: what became of the suggestions shown, per language
 * and shape: {"python": {"single": {shown, accepted, partlyAccepted,
 * acceptedChars, dismissed, hidden, acceptedUnderFloor, minConfidence}, "block": {...}}}
 * (lsp/feedback.h).
 *
 * The remote backend's: remoteLatencyMs, the HTTP round trip of
 * each answered request (network + the server's own time); daemonLatencyMs,
 * the rest of the time from the job's start (after the debounce) to its
 * answer: slicing, prompt, validation, rerank, hand-offs; remoteShare, the
 * remote's part of the sum of both; remoteRequests/Failures/Retries, HTTP
 * calls made, failed, and connection attempts repeated; remoteDeadlineCuts,
 * requests whose streams completion.deadlineMs closed (answered with what
 * had come by then). All 0 in process.
 *
 * What the user sees of an answer the deadline cut (live candidates, which
 * decode on while the suggestion is read): firstAnswers, the answers the
 * model computed that showed an item, and firstAnswerChars, the bytes of
 * their top items as first shown (their ratio: the mean first answer);
 * liveAnswers, requests answered at once from a live candidate (typed
 * along, asked again at the same place, after an edit elsewhere), and
 * liveShare, their part of requests; liveTokens, tokens decoded after the
 * answers, liveThrownTokens, of those, the ones of candidates that an edit
 * or a new job there ended before their end, and thrownShare, that part of
 * generatedTokens; grewNotices, infill/suggestionGrew notifications sent.
 * pastAnswers, requests answered at once from a past answer at a place
 * returned to (backspace, undo); aheadAnswers, from an answer decoded ahead
 * as if the suggestion shown were accepted (the Tab after a Tab);
 * aheadTokens, the tokens decoded ahead, and aheadThrownTokens, of those,
 * the ones a job interrupted before they were an answer (counted in
 * thrownShare too). shownAnswers, the answers the model computed that
 * showed an item or had a live candidate to grow them, and
 * shownChars500ms/shownChars1s/shownCharsEnd, the bytes of their top items
 * as shown 0.5 s and 1 s after the answer and when their live candidates
 * ended (each over shownAnswers: the mean suggestion a user sees then).
 *
 * Next edits (lsp/nextedit_rpc.c): nextEditRequests, infill/nextEdit and
 * textDocument/copilotInlineEdit requests answered; nextEditOffered, edits
 * sent in their answers; nextEditShown, nextEditAccepted, nextEditRejected,
 * what the clients reported of them (an accept or reject of an edit never
 * reported shown counts it shown too); nextEditInvalid, computed edits
 * left out because they would break the file's syntax; nextEditLatencyMs,
 * the time to answer a request.
 *
 * draftModel: "on" while a completion.draftModel drafts beside the model,
 * "none" otherwise (not set, or refused: the warning said why).
 *
 * shownCharsAnswer: the bytes of the shownAnswers' top items as first
 * shown, counted where the other shownChars* are (firstAnswerChars counts
 * every answer computed, also one its request no longer waited for).
 */
#define STATS_FIELDS(X)                                                \
	X(requests, "requests", count)                                 \
	X(cancelled, "cancelled", count)                               \
	X(fast_path, "fastPath", count)                                \
	X(prompt_tokens, "promptTokens", count)                        \
	X(cached_prompt_tokens, "cachedPromptTokens", count)           \
	X(generated_tokens, "generatedTokens", count)                  \
	X(rejected_candidates, "rejectedCandidates", count)            \
	X(document_lines, "documentLines", count)                      \
	X(backend, "backend", name)                                    \
	X(latency_ms, "latencyMs", latency)                            \
	X(open_documents, "openDocuments", count)                      \
	X(extended, "extended", count)                                 \
	X(kv_type, "kvType", name)                                     \
	X(kv_pages, "kvPages", count)                                  \
	X(background_prefill_tokens, "backgroundPrefillTokens", count) \
	X(short_contexts, "shortContexts", count)                      \
	X(never_started, "neverStarted", count)                        \
	X(cold_requests, "coldRequests", count)                        \
	X(draft_tokens, "draftTokens", count)                          \
	X(accepted_draft_tokens, "acceptedDraftTokens", count)         \
	X(model_draft_tokens, "modelDraftTokens", count)               \
	X(model_drafts_kept, "acceptedModelDraftTokens", count)        \
	X(kv_touched_mb, "kvTouchedMB", count)                         \
	X(project_tokens, "projectTokens", count)                      \
	X(project_lines, "projectLines", count)                        \
	X(index_files, "indexFiles", count)                            \
	X(remote_latency_ms, "remoteLatencyMs", latency)               \
	X(daemon_latency_ms, "daemonLatencyMs", latency)               \
	X(remote_share, "remoteShare", ratio)                          \
	X(remote_requests, "remoteRequests", count)                    \
	X(remote_failures, "remoteFailures", count)                    \
	X(remote_retries, "remoteRetries", count)                      \
	X(feedback, "feedback", object)                                \
	X(remote_deadline_cuts, "remoteDeadlineCuts", count)           \
	X(pace_deadlines, "paceDeadlines", count)                      \
	X(first_answers, "firstAnswers", count)                        \
	X(first_answer_chars, "firstAnswerChars", count)               \
	X(live_answers, "liveAnswers", count)                          \
	X(live_share, "liveShare", ratio)                              \
	X(live_tokens, "liveTokens", count)                            \
	X(live_thrown_tokens, "liveThrownTokens", count)               \
	X(thrown_share, "thrownShare", ratio)                          \
	X(grew_notices, "grewNotices", count)                          \
	X(past_answers, "pastAnswers", count)                          \
	X(ahead_answers, "aheadAnswers", count)                        \
	X(ahead_tokens, "aheadTokens", count)                          \
	X(ahead_thrown_tokens, "aheadThrownTokens", count)             \
	X(shown_answers, "shownAnswers", count)                        \
	X(shown_chars_500ms, "shownChars500ms", count)                 \
	X(shown_chars_1s, "shownChars1s", count)                       \
	X(shown_chars_end, "shownCharsEnd", count)                     \
	X(next_edit_requests, "nextEditRequests", count)               \
	X(next_edit_offered, "nextEditOffered", count)                 \
	X(next_edit_shown, "nextEditShown", count)                     \
	X(next_edit_accepted, "nextEditAccepted", count)               \
	X(next_edit_rejected, "nextEditRejected", count)               \
	X(next_edit_invalid, "nextEditInvalid", count)                 \
	X(next_edit_latency_ms, "nextEditLatencyMs", latency)          \
	X(draft_model, "draftModel", name)                             \
	X(shown_chars_answer, "shownCharsAnswer", count)

/* Milliseconds from a completion request's arrival to its answer, over the
 * last samples answers: {p50, p90, p99, samples}. */
struct stats_latency {
	double p50, p90, p99;
	uint64_t samples;
};

/* How each kind is held. */
#define STATS_TYPE_count   uint64_t
#define STATS_TYPE_name    const char *
#define STATS_TYPE_latency struct stats_latency
#define STATS_TYPE_ratio   double
#define STATS_TYPE_object  json_t *

/* One answer's values. Names are borrowed (static strings on the server;
 * the parsed JSON's for stats_from_json). */
struct stats {
#define STATS_FIELD(field, key, kind) STATS_TYPE_##kind field;
	STATS_FIELDS(STATS_FIELD)
#undef STATS_FIELD
};

/* Each field's key: stats_keys.prompt_tokens is "promptTokens". */
struct stats_keys {
#define STATS_KEY(field, key, kind) const char *field;
	STATS_FIELDS(STATS_KEY)
#undef STATS_KEY
};
extern const struct stats_keys stats_keys;

/* The answer as JSON: a new reference, NULL on out of memory. */
json_t *stats_to_json(const struct stats *s);

/* Reads an answer back into *out (zeroed first): a field that is missing
 * or of another type stays 0 or NULL. Names are borrowed from o (valid
 * while o lives). o may be NULL (all zero). */
void stats_from_json(const json_t *o, struct stats *out);

/* Sorts v[0..n) ascending, for stats_percentile. */
void stats_sort(double *v, size_t n);

/* The nearest-rank percentile q (in (0, 1]) of sorted[0..n), ascending; 0
 * when n is 0. How latencyMs's p50, p90 and p99 are taken, so that
 * `infill replay` takes its own the same way. */
double stats_percentile(const double *sorted, size_t n, double q);

#endif
