/*
 * pace.h - the user's typing pace, read off the times completion requests
 * arrive, and the deadline it sets.
 *
 * While keys come in a burst, each request is superseded by the next key's:
 * an answer that comes after that key is never shown, so it was time spent
 * for nothing, however good. A deadline shorter than the gap between keys
 * shows a shorter answer in time instead (the pipeline lengthens it once
 * the user stops). The gap is the median of the latest gaps within bursts,
 * so one slow or fast key does not move it.
 *
 * Threads: the loop's only; no allocation.
 */
#ifndef INFILL_PACE_H
#define INFILL_PACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A gap longer than this is a pause, not typing (ms). */
#define PACE_BURST_MS    1000.0
/* Gaps remembered; and how many make a pace. */
#define PACE_SAMPLES     8
#define PACE_MIN_SAMPLES 3
/* The answer is due this share of the gap after its request: the rest is
 * for the transport and the editor. */
#define PACE_SHARE       0.85
/* Below this (ms) no answer could come between keys: such a burst is left
 * to the debounce, and its last key gets the whole deadline. */
#define PACE_FLOOR_MS    60.0

/* Zero-initialized is empty. */
struct pace {
	uint64_t last_ns; /* the last request's arrival; 0: none yet */
	double gap_ms[PACE_SAMPLES];
	size_t n, next;
};

/*
 * Notes a request that arrived at now_ns (a monotonic clock); typing is
 * false for a request the user asked for or that follows a jump, which
 * neither starts nor ends a gap. Returns the deadline the pace sets for
 * this request, in ms after its arrival, or 0 when it sets none: the
 * request follows a pause (the user may be waiting for it), the pace is
 * not known yet, or it is too fast to answer between keys.
 */
double pace_note(struct pace *p, uint64_t now_ns, bool typing);

#endif
