/*
 * draft_loader.h - completion.draftModel loaded on a thread of its own.
 *
 * A draft is loaded while a model already answers: the setting changed, or
 * its file did (a new `infill pull`). Its load maps, checks and packs a few
 * hundred megabytes (about a second for a 1.3B draft), which on the engine
 * thread would hold every completion that long. The engine thread starts a
 * loader, goes on answering (with the draft it had, or none), and gives the
 * engine the loader's model between jobs.
 *
 *   struct draft_loader *dl = draft_loader_start(&spec, wake, p, 0);
 *   ...                                     // wake(p) once it is done
 *   if (draft_loader_done(dl)) dm = draft_loader_finish(dl, &warn);
 */
#ifndef INFILL_PIPELINE_DRAFT_LOADER_H
#define INFILL_PIPELINE_DRAFT_LOADER_H

#include <stdbool.h>

#include "complete.h"

struct draft_loader;

/*
 * Starts loading spec's draft (copied) as complete_draft_load does. wake
 * (may be NULL) is called with user on the loader's thread once the load
 * is done, after draft_loader_done turns true. delay_ms > 0 holds the load
 * back that long first: tests use it to act while a draft loads. Returns
 * the loader (release with draft_loader_finish), or NULL when no thread
 * could be started: the caller then loads it in place.
 */
struct draft_loader *draft_loader_start(const struct complete_model_spec *spec,
                                        void (*wake)(void *user), void *user, unsigned delay_ms);

/* Whether the load is done (any thread). */
bool draft_loader_done(const struct draft_loader *dl);

/*
 * Waits for the load (at once when done), frees dl and returns the model
 * (the caller owns it), or NULL with *warn saying why (its message "" when
 * no draft is set).
 */
struct model *draft_loader_finish(struct draft_loader *dl, struct infill_error *warn);

#endif
