/*
 * pcache.c - the prefix cache: a tree keyed by token ids whose edges own KV
 * pages, shared by every document's prompts (docs/architecture.md,
 * "Prefix cache").
 *
 * Every node starts at a page boundary (its absolute start position is a
 * multiple of the page size) and owns the pages of its tokens: one reference
 * each, released when the node goes. Only a leaf may end inside a page; that
 * partial page is shared with a sequence that re-uses it and copied by the
 * sequence before it writes there (kv_seq copy-on-write). So a match is a
 * walk down the tree concatenating whole nodes' pages, then the first pages of
 * the last, partly matched node.
 *
 * Because splits happen only at page boundaries, two children of a node may
 * begin with the same tokens (they diverge inside their first page); a
 * lookup takes the child with the longest common prefix. Pages of such a
 * shared first page are held twice, which the budget counts honestly.
 *
 * Eviction: least recently used leaves first, preferring leaves whose pages
 * only the cache holds (evicting a leaf a live sequence still uses frees
 * nothing now). Node counts stay in the hundreds, so the scans are linear.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

struct pnode {
	struct pnode *parent;
	struct pnode **kids;
	int32_t n_kids, cap_kids;
	int32_t start;  /* absolute position of tok[0]; a multiple of the page size */
	int32_t len;    /* tokens on this edge */
	int32_t *tok;   /* [len] */
	int32_t *pages; /* [ceil(len / page_size)], one reference each */
	uint64_t tick;  /* last use */
};

struct pcache {
	struct kv_pool *pool;
	int32_t ps; /* page size */
	int32_t max_pages;
	struct pnode root;
	uint64_t tick;
	int32_t n_nodes, n_pages;
	uint64_t evictions;
};

static int32_t npages(const struct pcache *c, int32_t len)
{
	return (len + c->ps - 1) / c->ps;
}

struct pcache *pcache_new(struct kv_pool *pool, int32_t max_pages)
{
	struct pcache *c = calloc(1, sizeof *c);
	if (!c) return NULL;
	c->pool = pool;
	c->ps = kv_pool_page_size(pool);
	c->max_pages = max_pages;
	return c;
}

static void node_free(struct pcache *c, struct pnode *n)
{
	for (int32_t i = 0; i < n->n_kids; i++) node_free(c, n->kids[i]);
	int32_t np = npages(c, n->len);
	for (int32_t i = 0; i < np; i++) kv_page_release(c->pool, n->pages[i]);
	c->n_pages -= np;
	c->n_nodes--;
	free(n->kids);
	free(n->tok);
	free(n->pages);
	free(n);
}

void pcache_clear(struct pcache *c)
{
	for (int32_t i = 0; i < c->root.n_kids; i++) node_free(c, c->root.kids[i]);
	free(c->root.kids);
	c->root.kids = NULL;
	c->root.n_kids = c->root.cap_kids = 0;
}

void pcache_free(struct pcache *c)
{
	if (!c) return;
	pcache_clear(c);
	free(c);
}

static int32_t lcp(const int32_t *a, const int32_t *b, int32_t n)
{
	int32_t i = 0;
	while (i < n && a[i] == b[i]) i++;
	return i;
}

/* The child of n sharing the longest prefix with tok[0..len); *m its length. */
static struct pnode *best_kid(const struct pnode *n, const int32_t *tok, int32_t len, int32_t *m)
{
	struct pnode *best = NULL;
	*m = 0;
	for (int32_t i = 0; i < n->n_kids; i++) {
		struct pnode *k = n->kids[i];
		int32_t l = lcp(k->tok, tok, k->len < len ? k->len : len);
		if (l > *m) *m = l, best = k;
	}
	return best;
}

int32_t pcache_match(struct pcache *c, const int32_t *tok, int32_t n, struct kv_seq *seq)
{
	if (kv_seq_len(seq) != 0 || n <= 0) return 0;
	int32_t cap = npages(c, n), np = 0, pos = 0;
	int32_t *pages = malloc((size_t)cap * sizeof *pages);
	if (!pages) return 0;
	uint64_t now = ++c->tick;
	struct pnode *node = &c->root;
	for (;;) {
		int32_t m;
		struct pnode *k = best_kid(node, tok + pos, n - pos, &m);
		if (!k) break;
		k->tick = now;
		int32_t take = npages(c, m);
		memcpy(pages + np, k->pages, (size_t)take * sizeof *pages);
		np += take;
		pos += m;
		if (m < k->len || k->len % c->ps) break;
		node = k;
	}
	for (struct pnode *p = node; p; p = p->parent) p->tick = now;
	if (pos > 0 && kv_seq_append_pages(seq, pages, np, pos) != 0) pos = 0;
	free(pages);
	return pos;
}

int32_t pcache_peek(const struct pcache *c, const int32_t *tok, int32_t n)
{
	int32_t pos = 0;
	const struct pnode *node = &c->root;
	while (n > 0) {
		int32_t m;
		const struct pnode *k = best_kid(node, tok + pos, n - pos, &m);
		if (!k) break;
		pos += m;
		if (m < k->len || k->len % c->ps) break;
		node = k;
	}
	return pos;
}

static int add_kid(struct pnode *parent, struct pnode *k)
{
	if (parent->n_kids == parent->cap_kids) {
		int32_t cap = parent->cap_kids ? parent->cap_kids * 2 : 4;
		struct pnode **v = realloc(parent->kids, (size_t)cap * sizeof *v);
		if (!v) return -ENOMEM;
		parent->kids = v, parent->cap_kids = cap;
	}
	parent->kids[parent->n_kids++] = k;
	k->parent = parent;
	return 0;
}

static void remove_kid(struct pnode *parent, struct pnode *k)
{
	for (int32_t i = 0; i < parent->n_kids; i++)
		if (parent->kids[i] == k) {
			parent->kids[i] = parent->kids[--parent->n_kids];
			return;
		}
}

/* A new leaf under parent for tok[from..n) (from a multiple of the page
 * size), with seq's pages retained. */
static int add_leaf(struct pcache *c, struct pnode *parent, const int32_t *tok, int32_t from,
                    int32_t n, const struct kv_seq *seq)
{
	int32_t n_seq_pages;
	const int32_t *sp = kv_seq_pages(seq, &n_seq_pages);
	int32_t first = from / c->ps, np = npages(c, n) - first;
	if (first + np > n_seq_pages) return -EINVAL;
	struct pnode *k = calloc(1, sizeof *k);
	if (!k) return -ENOMEM;
	k->start = from;
	k->len = n - from;
	k->tok = malloc((size_t)k->len * sizeof *k->tok);
	k->pages = malloc((size_t)np * sizeof *k->pages);
	if (!k->tok || !k->pages || add_kid(parent, k)) {
		free(k->tok), free(k->pages), free(k);
		return -ENOMEM;
	}
	memcpy(k->tok, tok + from, (size_t)k->len * sizeof *k->tok);
	for (int32_t i = 0; i < np; i++) {
		k->pages[i] = sp[first + i];
		kv_page_retain(c->pool, k->pages[i]);
	}
	k->tick = c->tick;
	c->n_nodes++;
	c->n_pages += np;
	return 0;
}

/* Splits k after its first `at` tokens (a positive multiple of the page
 * size, < k->len): k keeps the head, a new child takes the tail and k's kids. */
static int split(struct pcache *c, struct pnode *k, int32_t at)
{
	struct pnode *t = calloc(1, sizeof *t);
	if (!t) return -ENOMEM;
	int32_t hp = at / c->ps, np = npages(c, k->len);
	t->start = k->start + at;
	t->len = k->len - at;
	t->tok = malloc((size_t)t->len * sizeof *t->tok);
	t->pages = malloc((size_t)(np - hp) * sizeof *t->pages);
	struct pnode **kids = malloc(sizeof *kids * 4);
	if (!t->tok || !t->pages || !kids) {
		free(t->tok), free(t->pages), free(t), free(kids);
		return -ENOMEM;
	}
	memcpy(t->tok, k->tok + at, (size_t)t->len * sizeof *t->tok);
	memcpy(t->pages, k->pages + hp, (size_t)(np - hp) * sizeof *t->pages);
	t->kids = k->kids, t->n_kids = k->n_kids, t->cap_kids = k->cap_kids;
	for (int32_t i = 0; i < t->n_kids; i++) t->kids[i]->parent = t;
	t->tick = k->tick;
	t->parent = k;
	k->kids = kids, k->n_kids = 1, k->cap_kids = 4;
	kids[0] = t;
	k->len = at; /* tok and pages keep their (larger) allocations */
	c->n_nodes++;
	return 0;
}

int pcache_insert(struct pcache *c, const int32_t *tok, int32_t n, const struct kv_seq *seq)
{
	if (n <= 0 || kv_seq_len(seq) < n) return n <= 0 ? 0 : -EINVAL;
	uint64_t now = ++c->tick;
	struct pnode *node = &c->root;
	int32_t pos = 0;
	int rc = 0;
	for (;;) {
		node->tick = now;
		if (pos == n) break;
		int32_t m;
		struct pnode *k = best_kid(node, tok + pos, n - pos, &m);
		if (!k) {
			rc = add_leaf(c, node, tok, pos, n, seq);
			break;
		}
		k->tick = now;
		if (m == k->len && k->len % c->ps == 0) {
			node = k, pos += m;
			continue;
		}
		if (pos + m == n) /* tok ends inside k: already cached */
			break;
		int32_t at = m / c->ps * c->ps;
		/* k, a leaf, is wholly a prefix of what we add: the new leaf replaces it. */
		bool replace = m == k->len && k->n_kids == 0;
		if (at > 0 && !replace) {
			rc = split(c, k, at);
			if (rc) break;
			rc = add_leaf(c, k, tok, pos + at, n, seq);
			break;
		}
		if (replace) {
			remove_kid(node, k);
			node_free(c, k);
		}
		rc = add_leaf(c, node, tok, pos, n, seq);
		break;
	}
	if (c->n_pages > c->max_pages) pcache_evict(c, 0);
	return rc;
}

/* The least recently used leaf; with only_free, among leaves whose pages
 * nobody else holds. */
static void lru_leaf(struct pcache *c, struct pnode *n, bool only_free, struct pnode **best)
{
	for (int32_t i = 0; i < n->n_kids; i++) {
		struct pnode *k = n->kids[i];
		if (k->n_kids) {
			lru_leaf(c, k, only_free, best);
			continue;
		}
		if (only_free) {
			bool shared = false;
			for (int32_t p = 0; p < npages(c, k->len) && !shared; p++)
				shared = kv_page_refs(c->pool, k->pages[p]) > 1;
			if (shared) continue;
		}
		if (!*best || k->tick < (*best)->tick) *best = k;
	}
}

int32_t pcache_evict(struct pcache *c, int32_t want_free)
{
	int32_t evicted = 0;
	while (c->n_pages > c->max_pages || kv_pool_free_pages(c->pool) < want_free) {
		struct pnode *v = NULL;
		lru_leaf(c, &c->root, true, &v);
		if (!v && c->n_pages > c->max_pages) lru_leaf(c, &c->root, false, &v);
		if (!v) break;
		remove_kid(v->parent, v);
		node_free(c, v);
		c->evictions++;
		evicted++;
	}
	return evicted;
}

void pcache_set_max_pages(struct pcache *c, int32_t max_pages)
{
	c->max_pages = max_pages;
	pcache_evict(c, 0);
}

void pcache_get_stats(const struct pcache *c, struct pcache_stats *out)
{
	out->nodes = c->n_nodes;
	out->pages = c->n_pages;
	out->evictions = c->evictions;
}
