/*
 * req_queue.c - the small queues of owned completion requests the engine
 * thread works through when no job waits (pipeline_internal.h): its own
 * background work (the full context of a shortened answer, the prompt as if
 * accepted) and the loop's hints (pipeline_warm). A handful of entries at
 * most, so a plain array whose removals shift the rest; the shifting lives
 * here and nowhere else.
 */
#include "pipeline_internal.h"

#include <stdlib.h>
#include <string.h>

static size_t cap_of(const struct req_queue *q)
{
	return q->cap && q->cap < REQ_QUEUE_CAP ? q->cap : REQ_QUEUE_CAP;
}

bool req_queue_push_back(struct req_queue *q, struct req_queue_item it)
{
	if (!it.req) return false;
	if (q->n >= cap_of(q)) {
		completion_request_free(it.req);
		return false;
	}
	q->it[q->n++] = it;
	return true;
}

void req_queue_push_front(struct req_queue *q, struct req_queue_item it)
{
	if (!it.req) return;
	if (q->n >= cap_of(q)) completion_request_free(req_queue_take(q, q->n - 1).req);
	memmove(&q->it[1], &q->it[0], q->n * sizeof q->it[0]);
	q->it[0] = it;
	q->n++;
}

struct req_queue_item req_queue_take(struct req_queue *q, size_t i)
{
	struct req_queue_item it = { 0 };
	if (i >= q->n) return it;
	it = q->it[i];
	q->n--;
	memmove(&q->it[i], &q->it[i + 1], (q->n - i) * sizeof q->it[0]);
	return it;
}

size_t req_queue_find(const struct req_queue *q, const char *uri)
{
	size_t i = 0;
	while (i < q->n && strcmp(q->it[i].req->uri, uri)) i++;
	return i;
}

void req_queue_drop_uri(struct req_queue *q, const char *uri)
{
	size_t i;
	while ((i = req_queue_find(q, uri)) < q->n)
		completion_request_free(req_queue_take(q, i).req);
}

void req_queue_clear(struct req_queue *q)
{
	for (size_t i = 0; i < q->n; i++) completion_request_free(q->it[i].req);
	q->n = 0;
}
