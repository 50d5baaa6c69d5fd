/*
 * spm.c - SentencePiece-style BPE ("llama" tokenizers: Llama 2, CodeLlama,
 * and vocabularies trained with sentencepiece's BPE model).
 *
 * Spaces become U+2581 (▁), optionally with one ▁ in front (the dummy
 * prefix). The text starts as one symbol per UTF-8 character; the adjacent
 * pair whose concatenation is a vocabulary piece with the highest score is
 * merged (leftmost first among equal scores) until no pair forms a piece. This
 * is sentencepiece's BPE encoding. A final symbol that is not a usable
 * piece is split back along its merges (an "unused" piece) or, for a
 * single character outside the vocabulary, written as its UTF-8 bytes with
 * the <0xXX> tokens (byte fallback), else as the unknown token.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "unicode.h"

struct spm_sym {
	uint32_t start, len; /* bytes of the escaped text; len 0 once merged away */
	int32_t prev, next;
	int32_t node; /* merge tree node this symbol is */
	int32_t id;   /* token whose text the symbol is, -1 if none */
};

/* Merge tree: leaves are the initial characters (left == -1). */
struct spm_node {
	int32_t left, right;
	uint32_t start, len;
	int32_t id;
};

struct spm_cand {
	float score;
	int32_t left, right;
	int32_t a, b; /* the symbols' ids when queued, to detect stale entries */
	int32_t result;
};

struct spm_work {
	const struct tokenizer *t;
	char *buf; /* escaped text */
	struct spm_sym *sym;
	struct spm_node *node;
	int32_t n_node;
	struct spm_cand *heap;
	size_t n_heap;
	struct tok_out *out;
};

static inline bool cand_before(const struct spm_cand *x, const struct spm_cand *y)
{
	return x->score > y->score || (x->score == y->score && x->left < y->left);
}

static void heap_push(struct spm_work *w, struct spm_cand c)
{
	size_t i = w->n_heap++;
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!cand_before(&c, &w->heap[up])) break;
		w->heap[i] = w->heap[up];
		i = up;
	}
	w->heap[i] = c;
}

static struct spm_cand heap_pop(struct spm_work *w)
{
	struct spm_cand top = w->heap[0], last = w->heap[--w->n_heap];
	size_t i = 0, n = w->n_heap;
	for (;;) {
		size_t l = 2 * i + 1;
		if (l >= n) break;
		size_t m = (l + 1 < n && cand_before(&w->heap[l + 1], &w->heap[l])) ? l + 1 : l;
		if (!cand_before(&w->heap[m], &last)) break;
		w->heap[i] = w->heap[m];
		i = m;
	}
	if (n) w->heap[i] = last;
	return top;
}

/* Pieces a merge may produce: sentencepiece's normal, user-defined and unused
 * pieces; never control, unknown or byte tokens. */
static inline bool mergeable(uint8_t type)
{
	return type == TOKENIZER_TOKEN_NORMAL || type == TOKENIZER_TOKEN_USER_DEFINED ||
	       type == TOKENIZER_TOKEN_UNUSED || type == TOKENIZER_TOKEN_UNDEFINED;
}

static void try_pair(struct spm_work *w, int32_t left, int32_t right)
{
	if (left < 0 || right < 0) return;
	int32_t a = w->sym[left].id, b = w->sym[right].id;
	if (a < 0 || b < 0) return;
	const struct merge_slot *m = tok_merge_find(w->t, a, b);
	if (!m) return;
	heap_push(w,
	          (struct spm_cand){ w->t->tokens[m->result].score, left, right, a, b, m->result });
}

static void emit_bytes(struct spm_work *w, uint32_t start, uint32_t len)
{
	const struct tokenizer *t = w->t;
	for (uint32_t i = 0; i < len; i++) {
		int32_t b = t->byte_token[(unsigned char)w->buf[start + i]];
		if (b >= 0) {
			tok_out_push(w->out, b);
		} else if (t->sp.unk >= 0) {
			tok_out_push(w->out, t->sp.unk);
			/* without byte fallback a whole character is one unknown */
			i += (uint32_t)unicode_utf8_len((unsigned char)w->buf[start + i]) - 1;
		}
	}
}

/* Writes the tokens of merge-tree node k. Depth is bounded by the number of
 * characters in the fragment; recursion only happens through unused pieces. */
static void resegment(struct spm_work *w, int32_t k)
{
	const struct spm_node *nd = &w->node[k];
	int32_t id = nd->id;
	if (id >= 0 && mergeable(w->t->tokens[id].type) &&
	    (w->t->tokens[id].type != TOKENIZER_TOKEN_UNUSED || nd->left < 0)) {
		tok_out_push(w->out, id);
		return;
	}
	if (nd->left >= 0) {
		resegment(w, nd->left);
		resegment(w, nd->right);
		return;
	}
	emit_bytes(w, nd->start, nd->len);
}

/* Encodes text[0..len) (no ▁ escaping done yet) with the buffers of w,
 * which are large enough for it. */
static void encode_chunk(struct spm_work *w, const char *text, size_t len, bool dummy_prefix)
{
	size_t blen = 0;
	if (dummy_prefix) {
		memcpy(w->buf, "\xE2\x96\x81", 3);
		blen = 3;
	}
	for (size_t i = 0; i < len; i++) {
		if (text[i] == ' ') {
			memcpy(w->buf + blen, "\xE2\x96\x81", 3);
			blen += 3;
		} else {
			w->buf[blen++] = text[i];
		}
	}
	/* One symbol per UTF-8 character; a byte that does not start a valid
	 * sequence is a symbol alone, so it cannot swallow the ▁ of a space. */
	int32_t n = 0;
	for (size_t i = 0; i < blen;) {
		uint32_t cp;
		size_t l = unicode_utf8_decode((const unsigned char *)w->buf + i, blen - i, &cp);
		int32_t id = l == 1 ? w->t->char_token[(unsigned char)w->buf[i]]
		                    : tok_lookup(w->t, w->buf + i, l);
		w->sym[n] = (struct spm_sym){ (uint32_t)i, (uint32_t)l, n - 1, -1, n, id };
		w->node[n] = (struct spm_node){ -1, -1, (uint32_t)i, (uint32_t)l, id };
		if (n > 0) w->sym[n - 1].next = n;
		n++;
		i += l;
	}
	w->n_node = n;
	w->n_heap = 0;
	for (int32_t i = 0; i + 1 < n; i++) try_pair(w, i, i + 1);
	while (w->n_heap) {
		struct spm_cand c = heap_pop(w);
		struct spm_sym *l = &w->sym[c.left], *r = &w->sym[c.right];
		if (l->len == 0 || r->len == 0 || l->next != c.right || l->id != c.a ||
		    r->id != c.b)
			continue;
		uint32_t size = l->len + r->len;
		w->node[w->n_node] =
		        (struct spm_node){ l->node, r->node, l->start, size, c.result };
		l->node = w->n_node++;
		l->len = size;
		l->id = c.result;
		r->len = 0;
		r->id = -1;
		l->next = r->next;
		if (r->next >= 0) w->sym[r->next].prev = c.left;
		try_pair(w, l->prev, c.left);
		try_pair(w, c.left, l->next);
	}
	for (int32_t i = 0; i >= 0 && n > 0; i = w->sym[i].next) resegment(w, w->sym[i].node);
}

/*
 * When no piece of the vocabulary has a ▁ after another character
 * (t->spm_word_split, true for vocabularies trained with sentencepiece's
 * default split_by_whitespace), no merge can join the text before a space
 * with the space: each word, with the spaces in front of it, is encoded on
 * its own, which gives the same tokens and keeps the work per word small.
 */
int spm_encode_fragment(const struct tokenizer *t, const char *text, size_t len, bool dummy_prefix,
                        struct tok_out *out)
{
	size_t cap = len + (dummy_prefix ? 1 : 0);
	if (cap == 0) return 0;
	size_t max_chunk = len, start = 0;
	if (t->spm_word_split) {
		max_chunk = 0;
		for (size_t i = 1; i <= len; i++) {
			if (i == len || (text[i] == ' ' && text[i - 1] != ' ')) {
				if (i - start > max_chunk) max_chunk = i - start;
				start = i;
			}
		}
	}
	/* A chunk of c bytes escapes to at most 3c + 3 bytes, one symbol each. */
	size_t blen = 3 * max_chunk + 3;
	if (blen > UINT32_MAX / 4) return -ENOMEM;
	struct spm_work w = { .t = t, .out = out };
	w.buf = malloc(blen);
	w.sym = malloc(blen * sizeof *w.sym);
	w.node = malloc(2 * blen * sizeof *w.node);
	w.heap = malloc(3 * blen * sizeof *w.heap);
	int rc = 0;
	if (!w.buf || !w.sym || !w.node || !w.heap) {
		rc = -ENOMEM;
		goto done;
	}
	if (!t->spm_word_split) {
		encode_chunk(&w, text, len, dummy_prefix);
		goto done;
	}
	start = 0;
	for (size_t i = 1; i <= len; i++) {
		if (i == len || (text[i] == ' ' && text[i - 1] != ' ')) {
			encode_chunk(&w, text + start, i - start, dummy_prefix && start == 0);
			start = i;
		}
	}
	if (len == 0) encode_chunk(&w, text, 0, dummy_prefix);
done:
	free(w.buf);
	free(w.sym);
	free(w.node);
	free(w.heap);
	return rc;
}

int spm_build_pairs(struct tokenizer *t)
{
	/* Two passes: count the entries, then insert them. */
	uint64_t count = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && tok_merge_alloc(t, count)) return -ENOMEM;
		for (int32_t id = 0; id < t->n_vocab; id++) {
			const struct tok_entry *e = &t->tokens[id];
			if (!mergeable(e->type) || e->text_len < 2) continue;
			const char *s = tok_text(t, id);
			if (tok_lookup(t, s, e->text_len) != id)
				continue; /* a duplicate text: encoding finds the other id */
			for (size_t k = unicode_utf8_len((unsigned char)s[0]); k < e->text_len;
			     k += unicode_utf8_len((unsigned char)s[k])) {
				int32_t a = tok_lookup(t, s, k),
				        b = tok_lookup(t, s + k, e->text_len - k);
				if (a < 0 || b < 0) continue;
				if (pass == 0)
					count++;
				else
					tok_merge_insert(t, a, b, id, 0);
			}
		}
	}
	return 0;
}
