/*
 * pipeline_null.c - a test double of the pipeline: every job is
 * answered with no candidates on the next loop iteration, except in a
 * document that holds "@answer-cut-utf8": one candidate that ends inside a
 * character, as a model's text cut at a deadline can.
 *
 * It keeps the contract the real engine must keep (callback later, never
 * inside submit; no callback after cancel), so the server and its tests
 * exercise the same paths they will with a model.
 */
#include "pipeline.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct pipeline_job {
	uv_timer_t timer; /* fires at 0 ms: "later, on the loop thread" */
	struct pipeline *p;
	struct completion_request *req;
	pipeline_done_fn done;
	void *ud;
	struct pipeline_job *prev, *next;
};

struct pipeline {
	uv_loop_t *loop;
	struct log *log;
	struct pipeline_job *jobs; /* live jobs, whose timers are open */
	size_t closing_jobs;       /* timers being closed */
	bool closing;
	void (*close_done)(void *ud);
	void *close_ud;
};

struct pipeline *pipeline_new(uv_loop_t *loop, struct log *log, const struct settings *settings,
                              const struct pipeline_host *host)
{
	(void)settings, (void)host;
	struct pipeline *p = calloc(1, sizeof *p);
	if (!p) return NULL;
	p->loop = loop;
	p->log = log;
	log_info(log, "completion engine: none built in yet; completions will be empty");
	return p;
}

static void maybe_closed(struct pipeline *p)
{
	if (p->closing && !p->jobs && !p->closing_jobs && p->close_done) {
		void (*done)(void *) = p->close_done;
		p->close_done = NULL;
		done(p->close_ud);
	}
}

static void job_closed(uv_handle_t *h)
{
	struct pipeline_job *job = h->data;
	struct pipeline *p = job->p;
	completion_request_free(job->req);
	free(job);
	p->closing_jobs--;
	maybe_closed(p);
}

static void job_retire(struct pipeline_job *job)
{
	struct pipeline *p = job->p;
	if (job->prev)
		job->prev->next = job->next;
	else
		p->jobs = job->next;
	if (job->next) job->next->prev = job->prev;
	p->closing_jobs++;
	uv_close((uv_handle_t *)&job->timer, job_closed);
}

static void job_fire(uv_timer_t *timer)
{
	struct pipeline_job *job = timer->data;
	struct completion_result res = { NULL, 0, COMPLETION_PATH_NONE, false };
	struct completion_candidate cut = { .text = (char *)"ok \xe5\x86", /* U+5185, cut */
		                            .text_len = 5,
		                            .start = job->req->cursor,
		                            .end = job->req->cursor,
		                            .confidence = -1 };
	if (job->req->text && strstr(job->req->text, "@answer-cut-utf8")) {
		res.items = &cut;
		res.count = 1;
	}
	pipeline_done_fn done = job->done;
	void *ud = job->ud;
	job_retire(job);
	done(ud, 0, &res);
}

int pipeline_submit(struct pipeline *p, struct completion_request *req, pipeline_done_fn done,
                    void *ud, struct pipeline_job **out)
{
	if (p->closing) {
		completion_request_free(req);
		return -ECANCELED;
	}
	struct pipeline_job *job = calloc(1, sizeof *job);
	if (!job) {
		completion_request_free(req);
		return -ENOMEM;
	}
	job->p = p;
	job->req = req;
	job->done = done;
	job->ud = ud;
	uv_timer_init(p->loop, &job->timer);
	job->timer.data = job;
	job->next = p->jobs;
	if (p->jobs) p->jobs->prev = job;
	p->jobs = job;
	uv_timer_start(&job->timer, job_fire, 0, 0);
	*out = job;
	return 0;
}

bool pipeline_answers_at_once(struct pipeline *p, const struct completion_request *req)
{
	(void)p, (void)req;
	return false; /* no fast path here: every request waits its debounce */
}

void pipeline_cancel(struct pipeline *p, struct pipeline_job *job)
{
	(void)p;
	if (job) job_retire(job);
}

void pipeline_close(struct pipeline *p, void (*done)(void *ud), void *ud)
{
	p->closing = true;
	p->close_done = done;
	p->close_ud = ud;
	while (p->jobs) job_retire(p->jobs);
	maybe_closed(p);
}

void pipeline_free(struct pipeline *p)
{
	free(p);
}

void pipeline_configure(struct pipeline *p, const struct settings *settings)
{
	(void)p;
	(void)settings;
}

void pipeline_doc_open(struct pipeline *p, const char *uri, const char *language_id,
                       const struct doc *doc)
{
	(void)p, (void)uri, (void)language_id, (void)doc;
}

void pipeline_doc_edit(struct pipeline *p, const char *uri, const struct doc *doc, size_t start,
                       size_t old_end, size_t new_end)
{
	(void)p, (void)uri, (void)doc, (void)start, (void)old_end, (void)new_end;
}

void pipeline_doc_close(struct pipeline *p, const char *uri)
{
	(void)p, (void)uri;
}

void pipeline_warm(struct pipeline *p, struct completion_request *req)
{
	(void)p;
	completion_request_free(req);
}

void pipeline_get_stats(const struct pipeline *p, struct stats *out)
{
	(void)p;
	*out = (struct stats){ .backend = "none" };
}

bool pipeline_model_is_zeta(struct pipeline *p)
{
	(void)p;
	return false; /* no model */
}
