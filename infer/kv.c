/*
 * kv.c - the KV page pool and per-sequence page tables.
 *
 * The pool only does bookkeeping: the page storage lives in the backend
 * (host or device memory). Pages carry reference counts because sharing is
 * the design: candidates forked from one prompt share its pages, and the
 * prefix cache's radix tree holds pages that sequences also use. A page is
 * written only when its count is 1; kv_seq_reserve copies a shared page
 * before a sequence writes into it (copy-on-write).
 */
#include "kv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kv_pool {
	struct backend *b;
	int32_t n_pages, page_size;
	int32_t *refs;      /* [n_pages] */
	int32_t *free_list; /* stack of free page ids */
	int32_t n_free;
	/* the fewest free ever: pages are taken from the stack's top and given
	 * back onto it, so the never-used ones stay at its bottom and
	 * n_pages - min_free have ever been written (are in RSS) */
	int32_t min_free;
};

struct kv_seq {
	struct kv_pool *p;
	int32_t *pages; /* [cap] */
	int32_t n_pages, cap;
	int32_t len; /* tokens computed */
};

struct kv_pool *kv_pool_create(struct backend *b, int32_t n_pages, int32_t page_size)
{
	struct kv_pool *p = calloc(1, sizeof *p);
	if (!p) return NULL;
	p->b = b;
	p->n_pages = n_pages;
	p->page_size = page_size;
	p->refs = calloc((size_t)n_pages, sizeof *p->refs);
	p->free_list = malloc((size_t)n_pages * sizeof *p->free_list);
	if (!p->refs || !p->free_list) {
		kv_pool_destroy(p);
		return NULL;
	}
	/* Lowest ids on top of the stack. */
	for (int32_t i = 0; i < n_pages; i++) p->free_list[i] = n_pages - 1 - i;
	p->n_free = n_pages;
	p->min_free = n_pages;
	return p;
}

void kv_pool_destroy(struct kv_pool *p)
{
	if (!p) return;
	free(p->refs);
	free(p->free_list);
	free(p);
}

struct backend *kv_pool_backend(const struct kv_pool *p)
{
	return p->b;
}

int32_t kv_pool_page_size(const struct kv_pool *p)
{
	return p->page_size;
}

int32_t kv_pool_n_pages(const struct kv_pool *p)
{
	return p->n_pages;
}

int32_t kv_pool_free_pages(const struct kv_pool *p)
{
	return p->n_free;
}

int32_t kv_pool_touched_pages(const struct kv_pool *p)
{
	return p->n_pages - p->min_free;
}

int32_t kv_page_alloc(struct kv_pool *p)
{
	if (p->n_free == 0) return -1;
	int32_t id = p->free_list[--p->n_free];
	if (p->n_free < p->min_free) p->min_free = p->n_free;
	p->refs[id] = 1;
	return id;
}

void kv_page_retain(struct kv_pool *p, int32_t page)
{
	if (page >= 0 && page < p->n_pages && p->refs[page] > 0) p->refs[page]++;
}

void kv_page_release(struct kv_pool *p, int32_t page)
{
	if (page < 0 || page >= p->n_pages || p->refs[page] <= 0) return;
	if (--p->refs[page] == 0) p->free_list[p->n_free++] = page;
}

int32_t kv_page_refs(const struct kv_pool *p, int32_t page)
{
	return page >= 0 && page < p->n_pages ? p->refs[page] : 0;
}

/* ---- sequences ---- */

struct kv_seq *kv_seq_new(struct kv_pool *p)
{
	struct kv_seq *s = calloc(1, sizeof *s);
	if (s) s->p = p;
	return s;
}

void kv_seq_free(struct kv_seq *s)
{
	if (!s) return;
	for (int32_t i = 0; i < s->n_pages; i++) kv_page_release(s->p, s->pages[i]);
	free(s->pages);
	free(s);
}

static int reserve_table(struct kv_seq *s, int32_t n_pages)
{
	if (n_pages <= s->cap) return 0;
	int32_t cap = s->cap ? s->cap : 8;
	while (cap < n_pages) cap *= 2;
	int32_t *np = realloc(s->pages, (size_t)cap * sizeof *np);
	if (!np) return -ENOMEM;
	s->pages = np;
	s->cap = cap;
	return 0;
}

struct kv_seq *kv_seq_fork(const struct kv_seq *s)
{
	struct kv_seq *f = kv_seq_new(s->p);
	if (!f || reserve_table(f, s->n_pages) != 0) {
		kv_seq_free(f);
		return NULL;
	}
	for (int32_t i = 0; i < s->n_pages; i++) {
		kv_page_retain(s->p, s->pages[i]);
		f->pages[i] = s->pages[i];
	}
	f->n_pages = s->n_pages;
	f->len = s->len;
	return f;
}

struct kv_pool *kv_seq_pool(const struct kv_seq *s)
{
	return s->p;
}

int32_t kv_seq_len(const struct kv_seq *s)
{
	return s->len;
}

const int32_t *kv_seq_pages(const struct kv_seq *s, int32_t *n_pages)
{
	if (n_pages) *n_pages = s->n_pages;
	return s->pages;
}

void kv_seq_set_len(struct kv_seq *s, int32_t n)
{
	s->len = n;
}

void kv_seq_truncate(struct kv_seq *s, int32_t n)
{
	if (n < 0) n = 0;
	if (n >= s->len) return;
	s->len = n;
	int32_t keep = (n + s->p->page_size - 1) / s->p->page_size;
	while (s->n_pages > keep) kv_page_release(s->p, s->pages[--s->n_pages]);
}

int kv_seq_append_pages(struct kv_seq *s, const int32_t *pages, int32_t n_pages, int32_t n_tokens)
{
	int32_t ps = s->p->page_size;
	if (s->len % ps != 0 || s->n_pages != s->len / ps || n_tokens > n_pages * ps ||
	    n_tokens <= (n_pages - 1) * ps)
		return -EINVAL;
	if (reserve_table(s, s->n_pages + n_pages) != 0) return -ENOMEM;
	for (int32_t i = 0; i < n_pages; i++) {
		kv_page_retain(s->p, pages[i]);
		s->pages[s->n_pages++] = pages[i];
	}
	s->len += n_tokens;
	return 0;
}

int kv_seq_reserve(struct kv_seq *s, int32_t n, struct infill_error *err)
{
	return kv_seq_reserve_from(s, s->len, n, err);
}

int kv_seq_reserve_from(struct kv_seq *s, int32_t from, int32_t n, struct infill_error *err)
{
	struct kv_pool *p = s->p;
	if (from < 0) from = 0;
	if (n <= from) return 0;
	int32_t need = (n + p->page_size - 1) / p->page_size;
	if (reserve_table(s, need) != 0)
		return error_set(err, -ENOMEM, "kv: out of memory for a page table");
	/* Copy-on-write: pages in [len, n) that exist but are shared. */
	for (int32_t i = from / p->page_size; i < s->n_pages && i < need; i++) {
		if (p->refs[s->pages[i]] <= 1) continue;
		int32_t np = kv_page_alloc(p);
		if (np < 0) goto full;
		struct infill_error be;
		if (backend_kv_copy_page(p->b, np, s->pages[i], &be) != 0) {
			kv_page_release(p, np);
			return error_set(err, be.code < 0 ? be.code : -EIO, "kv: %.500s",
			                       be.message);
		}
		kv_page_release(p, s->pages[i]);
		s->pages[i] = np;
	}
	while (s->n_pages < need) {
		int32_t np = kv_page_alloc(p);
		if (np < 0) goto full;
		s->pages[s->n_pages++] = np;
	}
	return 0;
full:
	error_set(err, -ENOSPC,
	                "kv: page pool exhausted (%d pages of %d tokens); raise cache.memoryMB",
	                p->n_pages, p->page_size);
	error_key(err, "cache.memoryMB", strlen("cache.memoryMB"));
	return -ENOSPC;
}
