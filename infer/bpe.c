/*
 * bpe.c - byte-level BPE: the pre-tokenizers and the merge loop.
 *
 * Pre-tokenizers. Each model family splits text into words with a regex
 * (or a chain of them) before BPE. The regexes are implemented here as
 * hand-written scanners over codepoints with the same leftmost-first
 * semantics; each regex of a chain is applied to every piece the previous one
 * produced, and the text between matches is kept as pieces of its own:
 *  - gpt2:      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *  - starcoder: \p{N} (every digit alone), then gpt2
 *  - llama3:    (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
 *               | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *  - qwen2:     as llama3 with \p{N} instead of \p{N}{1,3}
 *  - deepseek-coder: [\r\n], then \s?\p{L}+, then \s?\p{P}+,
 *               then [U+4E00-U+9FA5 U+0800-U+4E00 U+AC00-U+D7FF]+, then \p{N}
 * A regex sees only its piece: lookahead at a piece's end sees end of text.
 *
 * BPE. Every byte of a word starts as the token of its byte-level character
 * (GPT-2's bytes_to_unicode); the adjacent pair with the lowest merge rank is
 * merged, leftmost first among equals, until no pair has a merge.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "unicode.h"

/* ======================================================================
 * Pre-tokenizers
 * ====================================================================== */

#define F_L UNICODE_FLAG_LETTER
#define F_N UNICODE_FLAG_NUMBER
#define F_P UNICODE_FLAG_PUNCT
#define F_S UNICODE_FLAG_SPACE

struct pretok;
/* A stage splits piece [s, e) (codepoint indices) and hands every sub-piece, in order, to emit(). */
typedef int (*stage_fn)(struct pretok *p, int k, size_t s, size_t e);

struct pretok {
	uint32_t *cp;  /* [n] codepoints */
	uint8_t *fl;   /* [n] UNICODE_FLAG_* */
	uint32_t *off; /* [n + 1] byte offset of each codepoint in the text */
	size_t n;
	const stage_fn *stages;
	int n_stages;
	pretok_word_fn fn;
	void *ud;
};

static int emit(struct pretok *p, int k, size_t s, size_t e)
{
	if (s >= e) return 0;
	if (k + 1 == p->n_stages) return p->fn(p->ud, p->off[s], p->off[e]);
	return p->stages[k + 1](p, k + 1, s, e);
}

/* Matches are [a, b); the text between them is emitted as pieces too. */
#define EMIT_MATCH(a, b)                              \
	do {                                          \
		int rc_ = emit(p, k, prev, (a));      \
		if (!rc_) rc_ = emit(p, k, (a), (b)); \
		if (rc_) return rc_;                  \
		prev = (b);                           \
	} while (0)

static inline uint32_t ascii_lower(uint32_t c)
{
	return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

/* Length of a contraction ('s 't 'm 'd 're 've 'll) at pos, 0 if none. */
static size_t contraction(const struct pretok *p, size_t pos, size_t e, bool any_case)
{
	if (p->cp[pos] != '\'' || pos + 1 >= e) return 0;
	uint32_t a = p->cp[pos + 1];
	if (any_case) a = ascii_lower(a);
	if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
	if (pos + 2 >= e) return 0;
	uint32_t b = p->cp[pos + 2];
	if (any_case) b = ascii_lower(b);
	if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
	return 0;
}

/* The whitespace alternatives at pos (pos is whitespace or matches nothing):
 * \s*[\r\n]+ (when with_newline), then \s+(?!\S), then \s+; a lone
 * character that matches nothing is a piece by itself. */
static size_t space_run(const struct pretok *p, size_t pos, size_t e, bool with_newline)
{
	size_t n = 0, last_nl = 0;
	while (pos + n < e && (p->fl[pos + n] & F_S)) {
		if (with_newline && (p->cp[pos + n] == '\r' || p->cp[pos + n] == '\n'))
			last_nl = n + 1;
		n++;
	}
	if (last_nl) return last_nl;
	if (n > 1 && pos + n < e) return n - 1; /* leave the last space to prefix the next word */
	return n ? n : 1;
}

static int stage_gpt2(struct pretok *p, int k, size_t s, size_t e)
{
	size_t pos = s, prev = s;
	while (pos < e) {
		size_t start = pos;
		size_t c = contraction(p, pos, e, false);
		if (c) {
			pos += c;
			EMIT_MATCH(start, pos);
			continue;
		}
		bool sp = p->cp[pos] == ' ';
		uint8_t f2 = sp ? (pos + 1 < e ? p->fl[pos + 1] : 0) : p->fl[pos];
		uint8_t want = 0;
		if (f2 & F_L)
			want = F_L; /* ' ?\p{L}+' */
		else if (f2 & F_N)
			want = F_N; /* ' ?\p{N}+' */
		if (want) {
			pos += sp;
			while (pos < e && (p->fl[pos] & want)) pos++;
		} else if (f2 && !(f2 & (F_S | F_L | F_N))) {
			pos += sp; /* ' ?[^\s\p{L}\p{N}]+' */
			while (pos < e && !(p->fl[pos] & (F_S | F_L | F_N))) pos++;
		} else {
			pos += space_run(p, pos, e, false);
		}
		EMIT_MATCH(start, pos);
	}
	return emit(p, k, prev, e);
}

/* llama3 (max_digits 3) and qwen2 (max_digits 1). */
static int split_llama3(struct pretok *p, int k, size_t s, size_t e, size_t max_digits)
{
	size_t pos = s, prev = s;
	while (pos < e) {
		size_t start = pos;
		uint32_t c0 = p->cp[pos];
		uint8_t f0 = p->fl[pos];
		size_t c = contraction(p, pos, e, true);
		if (c) {
			pos += c;
		} else if ((f0 & F_L) || (!(c0 == '\r' || c0 == '\n' || (f0 & F_N)) &&
		                          pos + 1 < e && (p->fl[pos + 1] & F_L))) {
			/* [^\r\n\p{L}\p{N}]?\p{L}+ */
			pos++;
			while (pos < e && (p->fl[pos] & F_L)) pos++;
		} else if (f0 & F_N) {
			size_t n = 0;
			while (pos < e && n < max_digits && (p->fl[pos] & F_N)) pos++, n++;
		} else {
			bool sp = c0 == ' ';
			uint8_t f2 = sp ? (pos + 1 < e ? p->fl[pos + 1] : 0) : f0;
			if (f2 && !(f2 & (F_S | F_L | F_N))) {
				/* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
				pos += sp;
				while (pos < e && !(p->fl[pos] & (F_S | F_L | F_N))) pos++;
				while (pos < e && (p->cp[pos] == '\r' || p->cp[pos] == '\n')) pos++;
			} else {
				pos += space_run(p, pos, e, true);
			}
		}
		EMIT_MATCH(start, pos);
	}
	return emit(p, k, prev, e);
}

static int stage_llama3(struct pretok *p, int k, size_t s, size_t e)
{
	return split_llama3(p, k, s, e, 3);
}

static int stage_qwen2(struct pretok *p, int k, size_t s, size_t e)
{
	return split_llama3(p, k, s, e, 1);
}

/* [\r\n]: every line break alone. */
static int stage_newline(struct pretok *p, int k, size_t s, size_t e)
{
	size_t prev = s;
	for (size_t i = s; i < e; i++)
		if (p->cp[i] == '\r' || p->cp[i] == '\n') EMIT_MATCH(i, i + 1);
	return emit(p, k, prev, e);
}

/* \p{N}: every number character alone. */
static int stage_each_number(struct pretok *p, int k, size_t s, size_t e)
{
	size_t prev = s;
	for (size_t i = s; i < e; i++)
		if (p->fl[i] & F_N) EMIT_MATCH(i, i + 1);
	return emit(p, k, prev, e);
}

/* \s?<class>+ : a match starts at the first position that is in the class or
 * is a space followed by the class. */
static int split_space_class(struct pretok *p, int k, size_t s, size_t e, uint8_t cls)
{
	size_t prev = s, pos = s;
	while (pos < e) {
		size_t start = pos;
		if (p->fl[pos] & cls) {
			pos++;
		} else if ((p->fl[pos] & F_S) && pos + 1 < e && (p->fl[pos + 1] & cls)) {
			pos += 2;
		} else {
			pos++;
			continue;
		}
		while (pos < e && (p->fl[pos] & cls)) pos++;
		EMIT_MATCH(start, pos);
	}
	return emit(p, k, prev, e);
}

static int stage_space_letters(struct pretok *p, int k, size_t s, size_t e)
{
	return split_space_class(p, k, s, e, F_L);
}

static int stage_space_punct(struct pretok *p, int k, size_t s, size_t e)
{
	return split_space_class(p, k, s, e, F_P);
}

/* [一-龥ࠀ-一가-퟿]+ as DeepSeek wrote it. The engines it was run with map
 * non-ASCII spaces to \v before matching, so U+3000 and friends, though inside
 * the range, do not match. */
static inline bool deepseek_cjk(uint32_t c, uint8_t f)
{
	if (f & F_S) return false;
	return (c >= 0x0800 && c <= 0x9FA5) || (c >= 0xAC00 && c <= 0xD7FF);
}

static int stage_cjk(struct pretok *p, int k, size_t s, size_t e)
{
	size_t prev = s, pos = s;
	while (pos < e) {
		if (!deepseek_cjk(p->cp[pos], p->fl[pos])) {
			pos++;
			continue;
		}
		size_t start = pos;
		while (pos < e && deepseek_cjk(p->cp[pos], p->fl[pos])) pos++;
		EMIT_MATCH(start, pos);
	}
	return emit(p, k, prev, e);
}

static const stage_fn stages_gpt2[] = { stage_gpt2 };
static const stage_fn stages_starcoder[] = { stage_each_number, stage_gpt2 };
static const stage_fn stages_llama3[] = { stage_llama3 };
static const stage_fn stages_qwen2[] = { stage_qwen2 };
static const stage_fn stages_deepseek[] = { stage_newline, stage_space_letters, stage_space_punct,
	                                    stage_cjk, stage_each_number };

int pretok_split(enum tokenizer_pre pre, const char *text, size_t len, pretok_word_fn fn, void *ud)
{
	if (len == 0) return 0;
	if (len >= UINT32_MAX)
		return -ENOMEM; /* offsets are 32-bit: the caller splits texts this large */
	struct pretok p = { .fn = fn, .ud = ud };
	switch (pre) {
	case TOKENIZER_PRE_STARCODER: p.stages = stages_starcoder, p.n_stages = 2; break;
	case TOKENIZER_PRE_LLAMA3: p.stages = stages_llama3, p.n_stages = 1; break;
	case TOKENIZER_PRE_QWEN2: p.stages = stages_qwen2, p.n_stages = 1; break;
	case TOKENIZER_PRE_DEEPSEEK_CODER: p.stages = stages_deepseek, p.n_stages = 5; break;
	case TOKENIZER_PRE_NONE: return fn(ud, 0, len);
	default: p.stages = stages_gpt2, p.n_stages = 1; break;
	}
	/* One allocation for the three per-codepoint arrays (n <= len). */
	size_t bytes = len * (sizeof(uint32_t) * 2 + 1) + sizeof(uint32_t);
	char *mem = malloc(bytes);
	if (!mem) return -ENOMEM;
	p.cp = (uint32_t *)mem;
	p.off = p.cp + len;
	p.fl = (uint8_t *)(p.off + len + 1);
	const unsigned char *u = (const unsigned char *)text;
	size_t i = 0, n = 0;
	while (i < len) {
		uint32_t c;
		size_t l;
		if (u[i] < 0x80)
			c = u[i], l = 1;
		else
			l = unicode_utf8_decode(u + i, len - i, &c);
		p.cp[n] = c;
		p.fl[n] = unicode_flags(c);
		p.off[n] = (uint32_t)i;
		n++;
		i += l;
	}
	p.off[n] = (uint32_t)len;
	p.n = n;
	int rc = p.stages[0](&p, 0, 0, n);
	free(mem);
	return rc;
}

/* ======================================================================
 * Byte-level BPE
 * ====================================================================== */

/* A merge candidate: symbols `left` and its right neighbour, whose ids were
 * a and b when it was queued (stale entries are skipped when popped). */
struct cand {
	int32_t rank;
	int32_t left;
	int32_t a, b;
};

struct bpe_work {
	const struct tokenizer *t;
	const char *text;
	struct tok_out *out;
	size_t cap; /* symbols the arrays below hold */
	int32_t *id, *prev, *next;
	struct cand *heap;
	size_t n_heap;
};

static inline bool cand_less(const struct cand *x, const struct cand *y)
{
	return x->rank < y->rank || (x->rank == y->rank && x->left < y->left);
}

static void heap_push(struct bpe_work *w, struct cand c)
{
	size_t i = w->n_heap++;
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!cand_less(&c, &w->heap[up])) break;
		w->heap[i] = w->heap[up];
		i = up;
	}
	w->heap[i] = c;
}

static struct cand heap_pop(struct bpe_work *w)
{
	struct cand top = w->heap[0], last = w->heap[--w->n_heap];
	size_t i = 0, n = w->n_heap;
	for (;;) {
		size_t l = 2 * i + 1;
		if (l >= n) break;
		size_t m = (l + 1 < n && cand_less(&w->heap[l + 1], &w->heap[l])) ? l + 1 : l;
		if (!cand_less(&w->heap[m], &last)) break;
		w->heap[i] = w->heap[m];
		i = m;
	}
	if (n) w->heap[i] = last;
	return top;
}

const struct merge_slot *tok_merge_find(const struct tokenizer *t, int32_t a, int32_t b)
{
	if (!t->merges) return NULL;
	uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
	uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & t->merge_mask;
	for (;;) {
		const struct merge_slot *m = &t->merges[i];
		if (m->left < 0) return NULL;
		if (m->left == a && m->right == b) return m;
		i = (i + 1) & t->merge_mask;
	}
}

static void try_pair(struct bpe_work *w, int32_t left)
{
	if (left < 0) return;
	int32_t right = w->next[left];
	if (right < 0) return;
	int32_t a = w->id[left], b = w->id[right];
	if (a < 0 || b < 0) return;
	const struct merge_slot *m = tok_merge_find(w->t, a, b);
	if (m) heap_push(w, (struct cand){ m->rank, left, a, b });
}

static int work_reserve(struct bpe_work *w, size_t n)
{
	if (n <= w->cap) return 0;
	size_t cap = w->cap ? w->cap : 64;
	while (cap < n) cap *= 2;
	int32_t *id = realloc(w->id, cap * sizeof *id);
	if (!id) return -ENOMEM;
	w->id = id;
	int32_t *prev = realloc(w->prev, cap * sizeof *prev);
	if (!prev) return -ENOMEM;
	w->prev = prev;
	int32_t *next = realloc(w->next, cap * sizeof *next);
	if (!next) return -ENOMEM;
	w->next = next;
	/* At most one live candidate per pair, plus stale ones: each merge queues
	 * two, so n + 2n bounds the heap. */
	struct cand *heap = realloc(w->heap, 3 * cap * sizeof *heap);
	if (!heap) return -ENOMEM;
	w->heap = heap;
	w->cap = cap;
	return 0;
}

static int bpe_word(void *ud, size_t start, size_t end)
{
	struct bpe_work *w = ud;
	const struct tokenizer *t = w->t;
	const unsigned char *s = (const unsigned char *)w->text + start;
	size_t n = end - start;

	if (t->ignore_merges) {
		/* Byte-level text of the word; a word already in the vocabulary is one token. */
		char buf[256];
		size_t bl = 0, i = 0;
		for (; i < n; i++) {
			int32_t bt = t->byte_token[s[i]];
			if (bt < 0 || bl + t->tokens[bt].text_len > sizeof buf) break;
			memcpy(buf + bl, tok_text(t, bt), t->tokens[bt].text_len);
			bl += t->tokens[bt].text_len;
		}
		if (i == n) {
			int32_t id = tok_lookup(t, buf, bl);
			if (id >= 0) {
				tok_out_push(w->out, id);
				return 0;
			}
		}
	}

	if (work_reserve(w, n)) return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		w->id[i] = t->byte_token[s[i]];
		w->prev[i] = (int32_t)i - 1;
		w->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
	}
	w->n_heap = 0;
	for (size_t i = 0; i + 1 < n; i++) try_pair(w, (int32_t)i);
	while (w->n_heap) {
		struct cand c = heap_pop(w);
		int32_t l = c.left, r = w->next[l];
		/* Stale: the left symbol was merged away (id -2) or either side changed. */
		if (r < 0 || w->id[l] != c.a || w->id[r] != c.b) continue;
		const struct merge_slot *m = tok_merge_find(t, c.a, c.b);
		w->id[l] = m->result;
		w->id[r] = -2;
		w->next[l] = w->next[r];
		if (w->next[r] >= 0) w->prev[w->next[r]] = l;
		try_pair(w, w->prev[l]);
		try_pair(w, l);
	}
	for (int32_t i = 0; i >= 0; i = w->next[i]) {
		if (w->id[i] >= 0)
			tok_out_push(w->out, w->id[i]);
		else if (t->sp.unk >= 0)
			tok_out_push(
			        w->out,
			        t->sp.unk); /* a byte with no token: only in broken vocabularies */
	}
	return 0;
}

int bpe_encode_fragment(const struct tokenizer *t, const char *text, size_t len,
                        struct tok_out *out)
{
	struct bpe_work w = { .t = t, .text = text, .out = out };
	int rc = pretok_split(t->pre, text, len, bpe_word, &w);
	free(w.id);
	free(w.prev);
	free(w.next);
	free(w.heap);
	return rc;
}

void tok_merge_insert(struct tokenizer *t, int32_t a, int32_t b, int32_t result, int32_t rank)
{
	uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
	uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & t->merge_mask;
	for (;;) {
		struct merge_slot *m = &t->merges[i];
		if (m->left < 0) {
			*m = (struct merge_slot){ a, b, result, rank };
			return;
		}
		if (m->left == a && m->right == b)
			return; /* a repeated pair keeps its first (lowest) rank */
		i = (i + 1) & t->merge_mask;
	}
}

int tok_merge_alloc(struct tokenizer *t, uint64_t n)
{
	uint64_t size = 16;
	while (size < 2 * n + 16) size *= 2;
	if (size > UINT32_MAX) return -ENOMEM;
	t->merges = malloc((size_t)size * sizeof *t->merges);
	if (!t->merges) return -ENOMEM;
	for (uint64_t i = 0; i < size; i++) t->merges[i].left = -1;
	t->merge_mask = (uint32_t)(size - 1);
	return 0;
}

int bpe_load_merges(struct tokenizer *t, const struct gguf_file *f, struct infill_error *err)
{
	const char *key = "tokenizer.ggml.merges";
	enum gguf_type et;
	uint64_t n;
	if (!gguf_get_arr(f, key, &et, &n) || et != GGUF_TYPE_STRING) {
		error_set(err, -EINVAL,
		                "%s: missing or not an array of strings (a \"gpt2\" tokenizer "
		                "needs its merges)",
		                key);
		error_key(err, key, strlen(key));
		return -EINVAL;
	}
	if (tok_merge_alloc(t, n)) return -ENOMEM;
	char *buf = NULL;
	size_t buf_cap = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct gguf_str s = gguf_get_arr_str(f, key, i);
		if (!s.ptr || s.len < 3) continue;
		/* "left right": split at the first space after the first byte. */
		const char *sp = memchr(s.ptr + 1, ' ', s.len - 1);
		if (!sp) continue;
		size_t ll = (size_t)(sp - s.ptr), rl = s.len - ll - 1;
		int32_t a = tok_lookup(t, s.ptr, ll), b = tok_lookup(t, sp + 1, rl);
		if (a < 0 || b < 0) continue; /* can never apply: symbols are always tokens */
		if (ll + rl > buf_cap) {
			buf_cap = 2 * (ll + rl);
			char *nb = realloc(buf, buf_cap);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		memcpy(buf, s.ptr, ll);
		memcpy(buf + ll, sp + 1, rl);
		int32_t r = tok_lookup(t, buf, ll + rl);
		if (r < 0) continue; /* its result is not a token: the vocabulary cannot use it */
		tok_merge_insert(t, a, b, r, (int32_t)(i > INT32_MAX ? INT32_MAX : i));
	}
	free(buf);
	return 0;
}
