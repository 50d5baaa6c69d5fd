/*
 * ring.c - the ring of recently edited or viewed chunks (as llama.vim
 * keeps one): the lines around an edit or a completion request, copied as
 * they were, newest last; a newer chunk of the same lines replaces the
 * older. select.c offers them last, as the least trusted source.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "context_internal.h"

struct entry {
	char *path;
	char *text;
	size_t len;
	size_t first, last; /* line numbers it covers */
};

struct ctx_ring {
	struct entry *v; /* oldest first */
	size_t n, cap;
};

struct ctx_ring *ctx_ring_new(size_t cap)
{
	struct ctx_ring *r = calloc(1, sizeof *r);
	if (!r) return NULL;
	r->cap = cap ? cap : 16;
	r->v = calloc(r->cap, sizeof *r->v);
	if (!r->v) {
		free(r);
		return NULL;
	}
	return r;
}

static void entry_drop(struct ctx_ring *r, size_t i)
{
	free(r->v[i].path);
	free(r->v[i].text);
	memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof r->v[0]);
	r->n--;
}

void ctx_ring_free(struct ctx_ring *r)
{
	if (!r) return;
	while (r->n) entry_drop(r, r->n - 1);
	free(r->v);
	free(r);
}

int ctx_ring_add(struct ctx_ring *r, const char *path, const char *text, size_t len, size_t at)
{
	if (!path || at > len) return 0;
	size_t line = 0;
	for (size_t i = 0; i < at; i++) line += text[i] == '\n';
	size_t first = line > 8 ? line - 8 : 0, last = line + 8;
	/* bytes of lines [first, last] */
	size_t s = 0, l = 0;
	while (l < first && s < len) l += text[s++] == '\n';
	size_t e = s;
	while (l <= last && e < len) l += text[e++] == '\n';
	if (e == s) return 0;
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].path, path) && r->v[i].first <= last && first <= r->v[i].last) {
			entry_drop(r, i);
			break;
		}
	if (r->n == r->cap) entry_drop(r, 0);
	struct entry en = { strdup(path), malloc(e - s + 1), e - s, first, last };
	if (!en.path || !en.text) {
		free(en.path);
		free(en.text);
		return -ENOMEM;
	}
	memcpy(en.text, text + s, e - s);
	en.text[e - s] = 0;
	r->v[r->n++] = en;
	return 0;
}

void ctx_ring_forget(struct ctx_ring *r, const char *path)
{
	for (size_t i = r->n; i-- > 0;)
		if (!strcmp(r->v[i].path, path)) entry_drop(r, i);
}

size_t ctx_ring_count(const struct ctx_ring *r)
{
	return r ? r->n : 0;
}

void ctx_ring_at(const struct ctx_ring *r, size_t i, const char **path, const char **text,
                 size_t *len)
{
	const struct entry *en = &r->v[r->n - 1 - i];
	*path = en->path;
	*text = en->text;
	*len = en->len;
}
