/*
 * document.c - the chunked text buffer behind struct doc.
 *
 * The text is an array of chunks, each its own malloc'd buffer of at most
 * CHUNK_MAX bytes (+1 for the CRLF rule below). Three Fenwick trees over the
 * chunk array hold, per chunk, its byte count, its line-break count (LSP
 * breaks: "\n", "\r\n", lone "\r") and its "\n" count (tree-sitter rows).
 *
 * Why this bound holds: a keystroke edits one chunk in place (a memmove
 * within <= CHUNK_MAX bytes, then a count of only the bytes it touched) and
 * updates O(log n) tree nodes; locating a chunk by offset or by line is a
 * Fenwick descent, O(log n), followed by a scan of part of that chunk eight
 * bytes at a time. Only when a chunk overflows, gets small or empties does
 * the array change shape, and then the trees are rebuilt in O(chunks) -
 * about once per CHUNK_MAX/2 typed bytes, so the amortized cost of a
 * keystroke stays O(log n + CHUNK_MAX/8). bench-doc measures about 2.5 us
 * per keystroke (position lookup + insert + position back) in a
 * 100,000-line document, within 1.3x of a 1,000-line one.
 *
 * Out of memory: every allocation an edit needs is made before the
 * document changes shape, so a failed doc_replace leaves it as it was.
 *
 * CRLF rule: a chunk never ends with '\r' while the next one starts with
 * '\n'. Then a chunk's break count is local: every '\r' is a break, and every
 * '\n' not preceded by '\r' in the same chunk is one.
 */
#include "document.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doc_internal.h"

enum { CHUNK_MAX = 4096, CHUNK_FILL = 2048, CHUNK_MIN = 512 };

struct chunk {
	char *buf; /* (cap) bytes, len used */
	uint32_t len;
	uint32_t cap;
	uint32_t breaks; /* LSP line breaks that start in this chunk */
	uint32_t lfs;    /* '\n' bytes */
};

/* Indices into the Fenwick tree array. */
enum { TREE_BYTES, TREE_BREAKS, TREE_LFS, TREE_COUNT };

struct doc {
	struct chunk *chunks; /* (n) chunks; n >= 1, only chunk 0 may be empty when n == 1 */
	size_t n;
	size_t cap;
	size_t *tree[TREE_COUNT]; /* (tree_cap + 1) 1-based Fenwick arrays */
	size_t tree_cap;
	size_t length;
	size_t breaks;
	size_t lfs;
};

/* ---- chunks ------------------------------------------------------------ */

/* High bit of each byte of v that equals the byte repeated in `ones_b`
 * (exact: no false positives, unlike the classic haszero test). */
static uint64_t byte_eq_mask(uint64_t v, uint64_t ones_b)
{
	const uint64_t low7 = 0x7F7F7F7F7F7F7F7Full;
	uint64_t x = v ^ ones_b;
	return ~(((x & low7) + low7) | x | low7);
}

/* Number of flags in a byte_eq_mask result: the bytes (each 0 or 1 after the
 * shift) summed by one multiply into the top byte. Avoids popcount, which
 * is a library call without -mpopcnt. */
static size_t count_flags(uint64_t mask)
{
	return (size_t)(((mask >> 7) * 0x0101010101010101ull) >> 56);
}

/*
 * Line breaks and '\n' bytes among buf[from, to), with buf[from - 1] as
 * context: every '\r' is a break, and every '\n' whose previous byte (within
 * the chunk) is not '\r'. Additive over adjacent ranges, which is what lets
 * an in-place edit recount only the bytes it touched. Eight bytes at a time
 * (SWAR) so that scanning a chunk costs well under a microsecond at any
 * optimization level.
 */
static void count_range(const char *buf, size_t from, size_t to, size_t *breaks, size_t *lfs)
{
	size_t b = 0, l = 0, i = from;
	/* prev_cr: the '\r' flag of the byte before i, in bit 7 (byte 0's flag). */
	uint64_t prev_cr = from > 0 && buf[from - 1] == '\r' ? 0x80 : 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull;
	for (; i + 8 <= to; i += 8) {
		uint64_t v;
		memcpy(&v, buf + i, 8);
		uint64_t cr = byte_eq_mask(v, ones * '\r');
		uint64_t lf = byte_eq_mask(v, ones * '\n');
		uint64_t after_cr = (cr << 8) | prev_cr;
		b += count_flags(cr) + count_flags(lf & ~after_cr);
		l += count_flags(lf);
		prev_cr = cr >> 56;
	}
#endif
	for (; i < to; i++) {
		char c = buf[i];
		b += (c == '\r') + (c == '\n' && !prev_cr);
		l += c == '\n';
		prev_cr = c == '\r' ? 0x80 : 0;
	}
	*breaks = b;
	*lfs = l;
}

static void chunk_count(struct chunk *c)
{
	size_t b, l;
	count_range(c->buf, 0, c->len, &b, &l);
	c->breaks = (uint32_t)b;
	c->lfs = (uint32_t)l;
}

static int chunk_init(struct chunk *c, const char *text, size_t len)
{
	size_t cap = len < CHUNK_FILL ? CHUNK_FILL : len + 1;
	c->buf = malloc(cap);
	if (!c->buf) return -ENOMEM;
	if (len) memcpy(c->buf, text, len);
	c->len = (uint32_t)len;
	c->cap = (uint32_t)cap;
	c->breaks = c->lfs = 0;
	if (len) chunk_count(c);
	return 0;
}

static int chunk_reserve(struct chunk *c, size_t need)
{
	if (need <= c->cap) return 0;
	size_t cap = need < CHUNK_MAX + 2 ? CHUNK_MAX + 2 : need;
	char *b = realloc(c->buf, cap);
	if (!b) return -ENOMEM;
	c->buf = b;
	c->cap = (uint32_t)cap;
	return 0;
}

/* ---- Fenwick trees ------------------------------------------------------ */

static size_t chunk_value(const struct chunk *c, int t)
{
	return t == TREE_BYTES ? c->len : t == TREE_BREAKS ? c->breaks : c->lfs;
}

static void tree_add(struct doc *d, int t, size_t i, ptrdiff_t delta)
{
	for (size_t k = i + 1; k <= d->n; k += k & (~k + 1))
		d->tree[t][k] = (size_t)((ptrdiff_t)d->tree[t][k] + delta);
}

/* Sum of chunk values [0, i). */
static size_t tree_prefix(const struct doc *d, int t, size_t i)
{
	size_t s = 0;
	for (size_t k = i; k > 0; k -= k & (~k + 1)) s += d->tree[t][k];
	return s;
}

/* The first chunk i whose inclusive prefix sum exceeds `target` (so the
 * target-th unit, 0-based, lies in chunk i); *before gets the sum of chunks
 * [0, i). Returns d->n when target >= total. */
static size_t tree_find(const struct doc *d, int t, size_t target, size_t *before)
{
	size_t pos = 0, step = 1, sum = 0;
	while (step * 2 <= d->n) step *= 2;
	for (; step; step /= 2) {
		size_t k = pos + step;
		if (k <= d->n && sum + d->tree[t][k] <= target) {
			pos = k;
			sum += d->tree[t][k];
		}
	}
	*before = sum;
	return pos;
}

/* Makes room in the trees for n chunks. Returns 0 or -ENOMEM (trees kept). */
static int tree_reserve(struct doc *d, size_t n)
{
	if (n <= d->tree_cap) return 0;
	size_t cap = n * 2;
	for (int t = 0; t < TREE_COUNT; t++) {
		size_t *p = realloc(d->tree[t], (cap + 1) * sizeof *p);
		if (!p) return -ENOMEM; /* the ones already grown just have room to spare */
		d->tree[t] = p;
	}
	d->tree_cap = cap;
	return 0;
}

static int tree_rebuild(struct doc *d)
{
	int rc = tree_reserve(d, d->n);
	if (rc) return rc;
	d->length = d->breaks = d->lfs = 0;
	for (int t = 0; t < TREE_COUNT; t++) {
		size_t *tr = d->tree[t];
		for (size_t k = 1; k <= d->n; k++) tr[k] = chunk_value(&d->chunks[k - 1], t);
		for (size_t k = 1; k <= d->n; k++) {
			size_t parent = k + (k & (~k + 1));
			if (parent <= d->n) tr[parent] += tr[k];
		}
	}
	for (size_t i = 0; i < d->n; i++) {
		d->length += d->chunks[i].len;
		d->breaks += d->chunks[i].breaks;
		d->lfs += d->chunks[i].lfs;
	}
	return 0;
}

/* Applies a chunk's new counts (after an in-place change) to the trees. */
static void chunk_recount(struct doc *d, size_t i, size_t old_len)
{
	struct chunk *c = &d->chunks[i];
	uint32_t ob = c->breaks, ol = c->lfs;
	chunk_count(c);
	tree_add(d, TREE_BYTES, i, (ptrdiff_t)c->len - (ptrdiff_t)old_len);
	tree_add(d, TREE_BREAKS, i, (ptrdiff_t)c->breaks - (ptrdiff_t)ob);
	tree_add(d, TREE_LFS, i, (ptrdiff_t)c->lfs - (ptrdiff_t)ol);
	d->length = d->length - old_len + c->len;
	d->breaks = d->breaks - ob + c->breaks;
	d->lfs = d->lfs - ol + c->lfs;
}

/* Applies known count changes of chunk i to the chunk, trees and totals. */
static void chunk_adjust(struct doc *d, size_t i, size_t old_len, ptrdiff_t dbreaks, ptrdiff_t dlfs)
{
	struct chunk *c = &d->chunks[i];
	c->breaks = (uint32_t)((ptrdiff_t)c->breaks + dbreaks);
	c->lfs = (uint32_t)((ptrdiff_t)c->lfs + dlfs);
	tree_add(d, TREE_BYTES, i, (ptrdiff_t)c->len - (ptrdiff_t)old_len);
	tree_add(d, TREE_BREAKS, i, dbreaks);
	tree_add(d, TREE_LFS, i, dlfs);
	d->length = d->length - old_len + c->len;
	d->breaks = (size_t)((ptrdiff_t)d->breaks + dbreaks);
	d->lfs = (size_t)((ptrdiff_t)d->lfs + dlfs);
}

/* ---- construction -------------------------------------------------------- */

/* Cuts text into chunks of about CHUNK_FILL bytes, never between \r and \n,
 * written to out (room for chunks_needed(len)). Returns the count, or 0 with
 * everything freed on OOM (len > 0). */
static size_t chunks_needed(size_t len)
{
	return len / CHUNK_FILL + 2;
}

static size_t chunks_build(struct chunk *out, const char *text, size_t len)
{
	size_t n = 0, at = 0;
	/* Even pieces, so that a merge of a small chunk with a neighbour does
	 * not leave another small chunk behind. */
	size_t pieces = (len + CHUNK_FILL - 1) / CHUNK_FILL;
	size_t piece = pieces ? (len + pieces - 1) / pieces : 0;
	while (at < len) {
		size_t take = len - at < piece ? len - at : piece;
		if (at + take < len && text[at + take - 1] == '\r' && text[at + take] == '\n')
			take++;
		if (chunk_init(&out[n], text + at, take) != 0) {
			while (n) free(out[--n].buf);
			return 0;
		}
		n++;
		at += take;
	}
	return n;
}

struct doc *doc_new(const char *text, size_t len)
{
	struct doc *d = calloc(1, sizeof *d);
	if (!d) return NULL;
	d->cap = chunks_needed(len) + 8;
	d->chunks = calloc(d->cap, sizeof *d->chunks);
	if (!d->chunks) goto fail;
	if (len) {
		d->n = chunks_build(d->chunks, text, len);
		if (!d->n) goto fail;
	} else {
		if (chunk_init(&d->chunks[0], NULL, 0) != 0) goto fail;
		d->n = 1;
	}
	if (tree_rebuild(d) != 0) goto fail;
	return d;
fail:
	doc_free(d);
	return NULL;
}

void doc_free(struct doc *d)
{
	if (!d) return;
	for (size_t i = 0; i < d->n; i++) free(d->chunks[i].buf);
	free(d->chunks);
	for (int t = 0; t < TREE_COUNT; t++) free(d->tree[t]);
	free(d);
}

/* ---- queries ------------------------------------------------------------- */

size_t doc_length(const struct doc *d)
{
	return d->length;
}

size_t doc_line_count(const struct doc *d)
{
	return d->breaks + 1;
}

/* Chunk holding byte `offset` (< length) and its start offset. */
static size_t find_byte(const struct doc *d, size_t offset, size_t *chunk_start)
{
	return tree_find(d, TREE_BYTES, offset, chunk_start);
}

/* Offset just past the k-th (0-based) unit of kind t (LSP break or '\n').
 * k must be < the total. */
static size_t after_mark(const struct doc *d, int t, size_t k)
{
	size_t before;
	size_t i = tree_find(d, t, k, &before);
	size_t start = tree_prefix(d, TREE_BYTES, i);
	const struct chunk *c = &d->chunks[i];
	size_t seen = before;
	size_t j = 0;
	/* Skip whole 64-byte blocks that end before the mark (vectorized
	 * counting), then look at bytes one by one. */
	while (j + 64 <= c->len) {
		size_t b, l;
		count_range(c->buf, j, j + 64, &b, &l);
		size_t n = t == TREE_LFS ? l : b;
		if (seen + n > k) break;
		seen += n;
		j += 64;
	}
	for (; j < c->len; j++) {
		char ch = c->buf[j];
		bool mark;
		if (t == TREE_LFS)
			mark = ch == '\n';
		else
			mark = ch == '\r' || (ch == '\n' && (j == 0 || c->buf[j - 1] != '\r'));
		if (!mark) continue;
		if (seen == k) {
			/* A break that starts with \r ends after its \n (same chunk). */
			if (ch == '\r' && j + 1 < c->len && c->buf[j + 1] == '\n') j++;
			return start + j + 1;
		}
		seen++;
	}
	return d->length; /* unreachable while the counts are right */
}

size_t doc_line_start(const struct doc *d, size_t line)
{
	if (line == 0) return 0;
	if (line > d->breaks) return d->length;
	return after_mark(d, TREE_BREAKS, line - 1);
}

size_t doc_line_end(const struct doc *d, size_t line)
{
	if (line >= d->breaks) return d->length;
	size_t next = after_mark(d, TREE_BREAKS, line);
	/* Step back over the terminator: "\n", "\r" or "\r\n". */
	char last[2];
	size_t got = doc_read(d, next >= 2 ? next - 2 : 0, next, last);
	if (got == 2 && last[0] == '\r' && last[1] == '\n') return next - 2;
	return next - 1;
}

/* Counts units of kind t that start in bytes [0, offset). */
static size_t marks_before(const struct doc *d, int t, size_t offset)
{
	if (offset >= d->length) return t == TREE_LFS ? d->lfs : d->breaks;
	size_t start;
	size_t i = find_byte(d, offset, &start);
	size_t b, l;
	count_range(d->chunks[i].buf, 0, offset - start, &b, &l);
	return tree_prefix(d, t, i) + (t == TREE_LFS ? l : b);
}

size_t doc_line_at(const struct doc *d, size_t offset)
{
	if (offset > d->length) offset = d->length;
	size_t lines = marks_before(d, TREE_BREAKS, offset);
	/* A break counted at its '\r' whose '\n' is at `offset` has not ended
	 * yet: offset is still inside that line's terminator. */
	if (offset > 0 && offset < d->length) {
		char two[2];
		if (doc_read(d, offset - 1, offset + 1, two) == 2 && two[0] == '\r' &&
		    two[1] == '\n')
			lines--;
	}
	return lines;
}

size_t doc_lf_before(const struct doc *d, size_t offset)
{
	return marks_before(d, TREE_LFS, offset);
}

size_t doc_after_lf(const struct doc *d, size_t k)
{
	if (k >= d->lfs) return d->length;
	return after_mark(d, TREE_LFS, k);
}

size_t doc_read(const struct doc *d, size_t start, size_t end, char *buf)
{
	if (end > d->length) end = d->length;
	if (start >= end) return 0;
	size_t cstart;
	size_t i = find_byte(d, start, &cstart);
	size_t at = start, out = 0;
	while (at < end) {
		const struct chunk *c = &d->chunks[i];
		size_t off = at - cstart;
		size_t take = c->len - off;
		if (take > end - at) take = end - at;
		memcpy(buf + out, c->buf + off, take);
		out += take;
		at += take;
		cstart += c->len;
		i++;
	}
	return out;
}

char *doc_text(const struct doc *d)
{
	char *s = malloc(d->length + 1);
	if (!s) return NULL;
	doc_read(d, 0, d->length, s);
	s[d->length] = '\0';
	return s;
}

const char *doc_chunk(const struct doc *d, size_t offset, size_t *len)
{
	if (offset >= d->length) {
		*len = 0;
		return "";
	}
	size_t start;
	size_t i = find_byte(d, offset, &start);
	*len = d->chunks[i].len - (offset - start);
	return d->chunks[i].buf + (offset - start);
}

/* ---- editing ------------------------------------------------------------- */

/* Enforces the CRLF rule at the boundary between chunks i and i + 1 by
 * moving the '\n' into chunk i. Returns 1 when chunk i + 1 became empty (the
 * caller removes it and rebuilds), 0 otherwise, or -ENOMEM. Trees are kept
 * up to date for the in-place case. */
static int fix_boundary(struct doc *d, size_t i)
{
	if (i + 1 >= d->n) return 0;
	struct chunk *a = &d->chunks[i], *b = &d->chunks[i + 1];
	if (a->len == 0 || b->len == 0 || a->buf[a->len - 1] != '\r' || b->buf[0] != '\n') return 0;
	/* Every chunk keeps room for one more byte (chunk_init, the fast
	 * path's reserve), so this does not allocate in practice. */
	if (chunk_reserve(a, (size_t)a->len + 1) != 0) return -ENOMEM;
	size_t alen = a->len, blen = b->len;
	a->buf[a->len++] = '\n';
	memmove(b->buf, b->buf + 1, --b->len);
	chunk_recount(d, i, alen);
	chunk_recount(d, i + 1, blen);
	return b->len == 0;
}

/* Removes empty chunks (keeping at least one) and rebuilds the trees. */
static int drop_empty(struct doc *d)
{
	size_t w = 0;
	for (size_t r = 0; r < d->n; r++) {
		if (d->chunks[r].len == 0 && d->n > 1 && !(w == 0 && r == d->n - 1)) {
			free(d->chunks[r].buf);
			continue;
		}
		d->chunks[w++] = d->chunks[r];
	}
	d->n = w;
	return tree_rebuild(d);
}

/* The slow path: replaces chunks [ci, cj] with fresh chunks holding
 * (head of ci) + text + (tail of cj). Cost O(edit + chunk + chunks). */
static int replace_span(struct doc *d, size_t ci, size_t ci_start, size_t cj, size_t cj_start,
                        size_t start, size_t end, const char *text, size_t len)
{
	size_t span_end = cj_start + d->chunks[cj].len;
	size_t head = start - ci_start;
	size_t tail = span_end - end;
	size_t total = head + len + tail;
	char *tmp = malloc(total ? total : 1);
	if (!tmp) return -ENOMEM;
	/* head and tail may each cover several chunks when a neighbour was
	 * pulled in. */
	doc_read(d, ci_start, start, tmp);
	if (len) memcpy(tmp + head, text, len);
	doc_read(d, end, span_end, tmp + head + len);

	size_t fresh_max = chunks_needed(total);
	struct chunk *fresh = calloc(fresh_max, sizeof *fresh);
	size_t m = 0;
	if (fresh && total) {
		m = chunks_build(fresh, tmp, total);
		if (!m) {
			free(fresh);
			fresh = NULL;
		}
	}
	free(tmp);
	if (!fresh) return -ENOMEM;

	size_t removed = cj - ci + 1;
	int rc = 0;
	if (m == 0 && removed == d->n) {
		/* Everything goes: keep one empty chunk (allocated now, while
		 * failing still leaves the document as it was). */
		rc = chunk_init(&fresh[0], NULL, 0);
		m = 1;
	}
	size_t new_n = d->n - removed + m;
	if (rc == 0 && new_n + 1 > d->cap) {
		size_t cap = (new_n + 1) * 2;
		struct chunk *p = realloc(d->chunks, cap * sizeof *p);
		if (p) {
			d->chunks = p;
			d->cap = cap;
		} else {
			rc = -ENOMEM;
		}
	}
	if (rc == 0) rc = tree_reserve(d, new_n);
	if (rc) {
		for (size_t k = 0; k < m; k++) free(fresh[k].buf);
		free(fresh);
		return -ENOMEM;
	}
	/* From here on nothing allocates except fix_boundary, which by the
	 * capacity rule (chunk_reserve) does not either. */
	for (size_t k = ci; k <= cj; k++) free(d->chunks[k].buf);
	memmove(d->chunks + ci + m, d->chunks + cj + 1, (d->n - cj - 1) * sizeof *d->chunks);
	memcpy(d->chunks + ci, fresh, m * sizeof *fresh);
	free(fresh);
	d->n = new_n;
	rc = tree_rebuild(d);
	if (rc) return rc;
	/* New content may meet a '\r' or '\n' across the outer boundaries. */
	bool empty = false;
	if (ci > 0) {
		rc = fix_boundary(d, ci - 1);
		if (rc < 0) return rc;
		empty |= rc == 1;
	}
	size_t last = ci + m; /* first chunk after the new ones, boundary last-1 */
	if (m && last < d->n) {
		rc = fix_boundary(d, last - 1);
		if (rc < 0) return rc;
		empty |= rc == 1;
	}
	return empty ? drop_empty(d) : 0;
}

int doc_replace(struct doc *d, size_t start, size_t end, const char *text, size_t len)
{
	if (start > end || end > d->length) return -EINVAL;
	if (start == end && len == 0) return 0;

	size_t ci_start, cj_start, ci, cj;
	if (start == d->length) {
		ci = d->n - 1;
		ci_start = d->length - d->chunks[ci].len;
	} else {
		ci = find_byte(d, start, &ci_start);
		/* Inserting at a chunk's first byte: append to the previous chunk
		 * instead, which keeps typing at a boundary on the fast path. */
		if (start == end && start == ci_start && ci > 0 &&
		    d->chunks[ci - 1].len + len <= CHUNK_MAX) {
			ci--;
			ci_start -= d->chunks[ci].len;
		}
	}
	if (end == start) {
		cj = ci;
		cj_start = ci_start;
	} else {
		cj = find_byte(d, end - 1, &cj_start);
	}

	struct chunk *c = &d->chunks[ci];
	size_t new_len = c->len - (end - start) + len;
	if (ci == cj && new_len <= CHUNK_MAX &&
	    (new_len >= CHUNK_MIN || new_len >= c->len || d->n == 1)) {
		/* Fast path: the edit stays inside one chunk. */
		/* +1: room for fix_boundary to pull a '\n' in without allocating. */
		if (chunk_reserve(c, new_len + 1) != 0) return -ENOMEM;
		size_t off = start - ci_start, old_len = c->len, del = end - start;
		/* Counts change only in [off, off + del + 1): the byte after the
		 * edit is included because whether a '\n' there is a break
		 * depends on the byte before it. */
		size_t b0, l0, b1, l1;
		count_range(c->buf, off, off + del + 1 < old_len ? off + del + 1 : old_len, &b0,
		            &l0);
		memmove(c->buf + off + len, c->buf + off + del, old_len - off - del);
		if (len) memcpy(c->buf + off, text, len);
		c->len = (uint32_t)new_len;
		count_range(c->buf, off, off + len + 1 < new_len ? off + len + 1 : new_len, &b1,
		            &l1);
		chunk_adjust(d, ci, old_len, (ptrdiff_t)b1 - (ptrdiff_t)b0,
		             (ptrdiff_t)l1 - (ptrdiff_t)l0);
		bool empty = false;
		int rc;
		if (ci > 0) {
			rc = fix_boundary(d, ci - 1);
			if (rc < 0) return rc;
			empty |= rc == 1;
		}
		rc = fix_boundary(d, ci);
		if (rc < 0) return rc;
		empty |= rc == 1;
		return empty ? drop_empty(d) : 0;
	}

	/* Slow path. Pull in a neighbour when the result would be small, so
	 * chunks don't shrink forever. */
	size_t span_len = cj_start + d->chunks[cj].len - ci_start - (end - start) + len;
	if (span_len < CHUNK_MIN && cj - ci + 1 < d->n) {
		if (cj + 1 < d->n) {
			cj++;
		} else {
			ci--;
			ci_start -= d->chunks[ci].len;
		}
		cj_start = tree_prefix(d, TREE_BYTES, cj);
	}
	return replace_span(d, ci, ci_start, cj, cj_start, start, end, text, len);
}
