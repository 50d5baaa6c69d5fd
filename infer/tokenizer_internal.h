/*
 * tokenizer_internal.h - what vocab.c, bpe.c and spm.c share: the tokenizer
 * struct, the text -> id index, the output buffer, and the pre-tokenizer
 * entry point (exposed so tests can check the splits without a vocabulary).
 * Private to the tokenizer files.
 */
#ifndef INFILL_INFER_TOKENIZER_INTERNAL_H
#define INFILL_INFER_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tokenizer.h"

struct tok_entry {
	uint32_t text_off; /* stored text: text_pool[text_off .. +text_len) */
	uint32_t text_len;
	uint32_t piece_off; /* decoded bytes: piece_pool[piece_off .. +piece_len) */
	uint32_t piece_len;
	float score;  /* SPM merge priority (higher merges first) */
	uint8_t type; /* enum tokenizer_token_type */
};

/* One BPE merge: the pair (left, right) of token ids becomes `result`;
 * lower rank merges first. Slots with left == -1 are empty. */
struct merge_slot {
	int32_t left, right;
	int32_t result;
	int32_t rank;
};

struct tokenizer {
	enum tokenizer_kind kind;
	enum tokenizer_pre pre;
	enum tokenizer_fim_style fim_style;
	struct tokenizer_special sp;
	bool ignore_merges;  /* llama3: a word that is a token is not merged */
	bool byte_fallback;  /* SPM: unknown characters become <0xXX> tokens */
	bool spm_word_split; /* SPM: no piece has ▁ after another character (spm.c) */

	int32_t n_vocab;
	struct tok_entry *tokens; /* [n_vocab] */
	char *text_pool;
	char *piece_pool;
	size_t max_piece;

	/* text -> id: open addressing over ids, -1 empty; size index_mask + 1. */
	int32_t *index;
	uint32_t index_mask;

	/* BPE merges keyed by (left, right): open addressing, size merge_mask + 1. */
	struct merge_slot *merges;
	uint32_t merge_mask;

	/* BPE: token of each byte's byte-level character; SPM: the <0xXX> token. -1 if none. */
	int32_t byte_token[256];
	/* SPM: token whose text is the single byte b (ASCII characters), -1 if none. */
	int32_t char_token[256];

	/* Tokens matched in the raw text before the BPE (control, user-defined,
	 * unknown), in the order they are tried: longest text first, then lower id. */
	int32_t *specials;
	size_t n_specials;
	/* Bit k of prefix_bits set when some special token starts with the two
	 * bytes k = b0 | b1 << 8 (or with the single byte k when it is one byte long). */
	uint64_t *prefix_bits; /* [65536 / 64] */
	bool has_one_byte_special;

	uint8_t *eog; /* [n_vocab]: 1 when the id ends generation */
};

static inline uint32_t tok_hash(const char *s, size_t n)
{
	/* FNV-1a: token texts are short, this is fast enough and well spread. */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static inline const char *tok_text(const struct tokenizer *t, int32_t id)
{
	return t->text_pool + t->tokens[id].text_off;
}

/* Id whose stored text is s[0..n), or -1. */
static inline int32_t tok_lookup(const struct tokenizer *t, const char *s, size_t n)
{
	uint32_t i = tok_hash(s, n) & t->index_mask;
	for (;;) {
		int32_t id = t->index[i];
		if (id < 0) return -1;
		const struct tok_entry *e = &t->tokens[id];
		if (e->text_len == n && memcmp(t->text_pool + e->text_off, s, n) == 0) return id;
		i = (i + 1) & t->index_mask;
	}
}

/* Growable id list: counts every id pushed, stores those that fit in the
 * caller's buffer (encode reports the full count when it does not fit). */
struct tok_out {
	int32_t *ids;
	size_t cap;
	size_t n;
};

static inline void tok_out_push(struct tok_out *o, int32_t id)
{
	if (o->n < o->cap) o->ids[o->n] = id;
	o->n++;
}

/* ---- bpe.c ---- */

/* The (left, right) -> result table in t->merges, shared by BPE (rank = merge
 * order) and SPM (rank unused: the result's score orders merges). */
int tok_merge_alloc(struct tokenizer *t, uint64_t n_entries);
void tok_merge_insert(struct tokenizer *t, int32_t a, int32_t b, int32_t result, int32_t rank);
const struct merge_slot *tok_merge_find(const struct tokenizer *t, int32_t a, int32_t b);

/* Called for each pre-tokenized word, as byte offsets into the text given to pretok_split. */
typedef int (*pretok_word_fn)(void *ud, size_t start, size_t end);

/* Splits text[0..len) into words with the regex semantics of `pre`. Stops at
 * and returns the first non-zero value of fn; -ENOMEM; 0 when done. */
int pretok_split(enum tokenizer_pre pre, const char *text, size_t len, pretok_word_fn fn, void *ud);

/* Byte-level BPE of one raw-text fragment (pre-tokenized inside). 0 or -ENOMEM. */
int bpe_encode_fragment(const struct tokenizer *t, const char *text, size_t len,
                        struct tok_out *out);

/* Builds t->merges from tokenizer.ggml.merges. 0 or a negative errno with *err. */
int bpe_load_merges(struct tokenizer *t, const struct gguf_file *f, struct infill_error *err);

/* ---- spm.c ---- */

/* Builds t->merges for SPM: every way a mergeable piece splits into two
 * tokens, so the encoder merges by id pairs instead of looking up text. */
int spm_build_pairs(struct tokenizer *t);

/* SentencePiece BPE of one raw-text fragment; `dummy_prefix` prepends ▁. 0 or -ENOMEM. */
int spm_encode_fragment(const struct tokenizer *t, const char *text, size_t len, bool dummy_prefix,
                        struct tok_out *out);

#endif
