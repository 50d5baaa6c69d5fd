/*
 * draft_loader.c - a draft model loaded on a thread of its own
 * (draft_loader.h): one thread a load, joined when the loader is finished.
 */
#include "draft_loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct draft_loader {
	pthread_t thread;
	struct complete_model_spec spec;
	void (*wake)(void *user);
	void *user;
	unsigned delay_ms;
	/* written by the thread before done is set, read after */
	struct model *model;
	struct infill_error warn;
	atomic_bool done;
};

static void *loader_main(void *arg)
{
	struct draft_loader *dl = arg;
	if (dl->delay_ms) {
		struct timespec ts = { dl->delay_ms / 1000,
			               (long)(dl->delay_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0) {
		}
	}
	dl->model = complete_draft_load(&dl->spec, &dl->warn);
	atomic_store(&dl->done, true);
	if (dl->wake) dl->wake(dl->user);
	return NULL;
}

struct draft_loader *draft_loader_start(const struct complete_model_spec *spec,
                                        void (*wake)(void *user), void *user, unsigned delay_ms)
{
	struct draft_loader *dl = calloc(1, sizeof *dl); /* freed by draft_loader_finish */
	if (!dl) return NULL;
	dl->spec = *spec;
	dl->wake = wake;
	dl->user = user;
	dl->delay_ms = delay_ms;
	atomic_init(&dl->done, false);
	if (pthread_create(&dl->thread, NULL, loader_main, dl)) {
		free(dl);
		return NULL;
	}
	return dl;
}

bool draft_loader_done(const struct draft_loader *dl)
{
	return atomic_load(&dl->done);
}

struct model *draft_loader_finish(struct draft_loader *dl, struct infill_error *warn)
{
	pthread_join(dl->thread, NULL);
	struct model *m = dl->model;
	*warn = dl->warn;
	free(dl);
	return m;
}
