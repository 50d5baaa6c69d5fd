/*
 * docs.c - the open-document table: a chained hash table keyed by URI that
 * doubles when its load passes 1, so lookups stay O(1) however many files
 * an editor opens.
 */
#include "docs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct docs {
	struct docs_entry **buckets;
	size_t nbuckets, count;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

struct docs *docs_new(void)
{
	struct docs *d = calloc(1, sizeof *d);
	if (!d) return NULL;
	d->nbuckets = 16;
	d->buckets = calloc(d->nbuckets, sizeof *d->buckets);
	if (!d->buckets) {
		free(d);
		return NULL;
	}
	return d;
}

static void entry_free(struct docs_entry *e)
{
	doc_free(e->doc);
	free(e->uri);
	free(e->language_id);
	free(e);
}

void docs_free(struct docs *d)
{
	if (!d) return;
	for (size_t i = 0; i < d->nbuckets; i++) {
		struct docs_entry *e = d->buckets[i];
		while (e) {
			struct docs_entry *next = e->next;
			entry_free(e);
			e = next;
		}
	}
	free(d->buckets);
	free(d);
}

static struct docs_entry **slot(struct docs *d, const char *uri)
{
	struct docs_entry **p = &d->buckets[hash(uri) & (d->nbuckets - 1)];
	while (*p && strcmp((*p)->uri, uri)) p = &(*p)->next;
	return p;
}

struct docs_entry *docs_find(struct docs *d, const char *uri)
{
	return *slot(d, uri);
}

static void grow(struct docs *d)
{
	size_t n = d->nbuckets * 2;
	struct docs_entry **b = calloc(n, sizeof *b);
	if (!b) return; /* stays correct, only slower */
	for (size_t i = 0; i < d->nbuckets; i++) {
		struct docs_entry *e = d->buckets[i];
		while (e) {
			struct docs_entry *next = e->next;
			size_t k = hash(e->uri) & (n - 1);
			e->next = b[k];
			b[k] = e;
			e = next;
		}
	}
	free(d->buckets);
	d->buckets = b;
	d->nbuckets = n;
}

struct docs_entry *docs_open(struct docs *d, const char *uri, const char *language_id,
                             int64_t version, const char *text, size_t len)
{
	struct docs_entry *e = calloc(1, sizeof *e);
	if (!e) return NULL;
	e->uri = strdup(uri);
	e->language_id = strdup(language_id ? language_id : "");
	e->doc = doc_new(text, len);
	e->version = version;
	if (!e->uri || !e->language_id || !e->doc) {
		entry_free(e);
		return NULL;
	}
	struct docs_entry **p = slot(d, uri);
	if (*p) { /* reopen: replace in place */
		e->generation = (*p)->generation + 1;
		e->next = (*p)->next;
		entry_free(*p);
		*p = e;
		return e;
	}
	*p = e;
	d->count++;
	if (d->count > d->nbuckets) grow(d);
	return e;
}

int docs_close(struct docs *d, const char *uri)
{
	struct docs_entry **p = slot(d, uri);
	if (!*p) return -ENOENT;
	struct docs_entry *e = *p;
	*p = e->next;
	entry_free(e);
	d->count--;
	return 0;
}

size_t docs_count(const struct docs *d)
{
	return d->count;
}

void docs_each(struct docs *d, void (*fn)(struct docs_entry *e, void *ud), void *ud)
{
	for (size_t b = 0; b < d->nbuckets; b++)
		for (struct docs_entry *e = d->buckets[b]; e; e = e->next) fn(e, ud);
}
