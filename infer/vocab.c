/*
 * vocab.c - the tokenizer object: loading from GGUF metadata, special ids,
 * the split of raw text around added tokens, encode dispatch, decoding and
 * the streaming detokenizer. The BPE and SentencePiece algorithms are in
 * bpe.c and spm.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "unicode.h"

/* ======================================================================
 * Byte-level character map (GPT-2's bytes_to_unicode)
 * ====================================================================== */

/* Printable bytes stand for themselves; the others (controls, space, 0x7F..0xA0,
 * 0xAD) are moved to U+0100 upwards in byte order, so every byte has a visible
 * character and the vocabulary never holds a raw space. */
static uint32_t byte_to_cp(unsigned b)
{
	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
		return b;
	unsigned n = 0;
	for (unsigned x = 0; x < b; x++)
		if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) ||
		      (x >= 0xAE && x <= 0xFF)))
			n++;
	return 256 + n;
}

/* ======================================================================
 * Loading
 * ====================================================================== */

/* A tokenizer key at fault: the error names it, and the message starts with it. */
static int key_err(struct infill_error *err, int code, const char *key, const char *what)
{
	error_set(err, code, "%s: %s", key, what);
	error_key(err, key, strlen(key));
	return code;
}

static enum tokenizer_pre pre_from_name(const char *s, size_t n, bool *ignore_merges)
{
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(s, lit, n) == 0)
	*ignore_merges = false;
	if (IS("deepseek-coder")) return TOKENIZER_PRE_DEEPSEEK_CODER;
	if (IS("llama3") || IS("llama-v3") || IS("llama-bpe") || IS("falcon3")) {
		*ignore_merges = true;
		return TOKENIZER_PRE_LLAMA3;
	}
	if (IS("qwen2") || IS("stablelm2") || IS("deepseek-r1-qwen")) return TOKENIZER_PRE_QWEN2;
	if (IS("starcoder") || IS("refact") || IS("command-r") || IS("smollm") || IS("codeshell") ||
	    IS("exaone") || IS("minerva"))
		return TOKENIZER_PRE_STARCODER;
	/* gpt2 and the families that share its regex; also what unknown names get. */
	return TOKENIZER_PRE_GPT2;
#undef IS
}

static bool get_id(const struct gguf_file *f, const char *key, int32_t n_vocab, int32_t *out)
{
	uint32_t v;
	if (!gguf_get_u32(f, key, &v)) return false;
	if ((int64_t)v >= n_vocab)
		return false; /* ignore ids outside the vocabulary rather than trust them */
	*out = (int32_t)v;
	return true;
}

static int build_index(struct tokenizer *t)
{
	uint32_t size = 16;
	while (size < 2u * (uint32_t)t->n_vocab) size *= 2;
	t->index = malloc((size_t)size * sizeof *t->index);
	if (!t->index) return -ENOMEM;
	memset(t->index, 0xff, (size_t)size * sizeof *t->index);
	t->index_mask = size - 1;
	for (int32_t id = 0; id < t->n_vocab; id++) {
		const struct tok_entry *e = &t->tokens[id];
		uint32_t i = tok_hash(tok_text(t, id), e->text_len) & t->index_mask;
		for (;;) {
			int32_t o = t->index[i];
			if (o < 0) {
				t->index[i] = id;
				break;
			}
			const struct tok_entry *oe = &t->tokens[o];
			if (oe->text_len == e->text_len &&
			    memcmp(tok_text(t, o), tok_text(t, id), e->text_len) == 0) {
				t->index[i] =
				        id; /* duplicate text: the later id wins, as in llama.cpp */
				break;
			}
			i = (i + 1) & t->index_mask;
		}
	}
	return 0;
}

/* Decoded bytes of every token, computed once (see tokenizer_decode_token). */
static int build_pieces(struct tokenizer *t)
{
	size_t total = 0;
	for (int32_t id = 0; id < t->n_vocab; id++)
		total += t->tokens[id].text_len; /* decoding never grows a token */
	t->piece_pool = malloc(total + 1);
	if (!t->piece_pool) return -ENOMEM;
	uint8_t cp_to_byte[512];
	memset(cp_to_byte, 0, sizeof cp_to_byte);
	bool cp_is_byte[512] = { 0 };
	for (unsigned b = 0; b < 256; b++) {
		uint32_t cp = byte_to_cp(b);
		cp_to_byte[cp] = (uint8_t)b;
		cp_is_byte[cp] = true;
	}
	size_t pos = 0;
	t->max_piece = 0;
	for (int32_t id = 0; id < t->n_vocab; id++) {
		struct tok_entry *e = &t->tokens[id];
		const char *s = tok_text(t, id);
		size_t n = e->text_len;
		char *o = t->piece_pool + pos;
		size_t m = 0;
		bool raw = e->type == TOKENIZER_TOKEN_USER_DEFINED ||
		           e->type == TOKENIZER_TOKEN_CONTROL || e->type == TOKENIZER_TOKEN_UNKNOWN;
		if (raw) {
			memcpy(o, s, n);
			m = n;
		} else if (t->kind == TOKENIZER_KIND_BPE) {
			for (size_t i = 0; i < n;) {
				uint32_t cp;
				size_t l = unicode_utf8_decode((const unsigned char *)s + i, n - i,
				                               &cp);
				if (cp < 512 && cp_is_byte[cp] && l > 0 &&
				    cp != UNICODE_REPLACEMENT) {
					o[m++] = (char)cp_to_byte[cp];
				} else {
					memcpy(o + m, s + i,
					       l); /* not a byte-level character: keep it */
					m += l;
				}
				i += l;
			}
		} else if (e->type == TOKENIZER_TOKEN_BYTE && n == 6 && memcmp(s, "<0x", 3) == 0 &&
		           s[5] == '>') {
			unsigned v;
			char hex[3] = { s[3], s[4], 0 };
			if (sscanf(hex, "%2x", &v) == 1) {
				o[m++] = (char)v;
			}
		} else {
			/* SentencePiece: U+2581 (E2 96 81) stands for a space. */
			for (size_t i = 0; i < n;) {
				if (i + 3 <= n && (unsigned char)s[i] == 0xE2 &&
				    (unsigned char)s[i + 1] == 0x96 &&
				    (unsigned char)s[i + 2] == 0x81) {
					o[m++] = ' ';
					i += 3;
				} else {
					o[m++] = s[i++];
				}
			}
		}
		e->piece_off = (uint32_t)pos;
		e->piece_len = (uint32_t)m;
		pos += m;
		if (m > t->max_piece) t->max_piece = m;
	}
	return 0;
}

static int cmp_special(const void *a, const void *b, void *ctx)
{
	const struct tokenizer *t = ctx;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	uint32_t lx = t->tokens[x].text_len, ly = t->tokens[y].text_len;
	if (lx != ly) return lx > ly ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int build_specials(struct tokenizer *t)
{
	size_t n = 0;
	for (int32_t id = 0; id < t->n_vocab; id++) {
		uint8_t ty = t->tokens[id].type;
		if ((ty == TOKENIZER_TOKEN_CONTROL || ty == TOKENIZER_TOKEN_USER_DEFINED ||
		     ty == TOKENIZER_TOKEN_UNKNOWN) &&
		    t->tokens[id].text_len > 0)
			n++;
	}
	t->specials = malloc((n ? n : 1) * sizeof *t->specials);
	t->prefix_bits = calloc(65536 / 64, sizeof *t->prefix_bits);
	if (!t->specials || !t->prefix_bits) return -ENOMEM;
	n = 0;
	for (int32_t id = 0; id < t->n_vocab; id++) {
		uint8_t ty = t->tokens[id].type;
		const struct tok_entry *e = &t->tokens[id];
		if (!((ty == TOKENIZER_TOKEN_CONTROL || ty == TOKENIZER_TOKEN_USER_DEFINED ||
		       ty == TOKENIZER_TOKEN_UNKNOWN) &&
		      e->text_len > 0))
			continue;
		t->specials[n++] = id;
		const unsigned char *s = (const unsigned char *)tok_text(t, id);
		unsigned key = e->text_len >= 2 ? (unsigned)s[0] | (unsigned)s[1] << 8 : s[0];
		if (e->text_len == 1) t->has_one_byte_special = true;
		t->prefix_bits[key >> 6] |= 1ull << (key & 63);
	}
	t->n_specials = n;
	qsort_r(t->specials, n, sizeof *t->specials, cmp_special, t);
	return 0;
}

static int32_t find_first(const struct tokenizer *t, const char *const *texts)
{
	for (; *texts; texts++) {
		int32_t id = tok_lookup(t, *texts, strlen(*texts));
		if (id >= 0) return id;
	}
	return -1;
}

static void find_special_ids(struct tokenizer *t, const struct gguf_file *f)
{
	struct tokenizer_special *sp = &t->sp;
	int32_t n = t->n_vocab;
	bool spm = t->kind == TOKENIZER_KIND_SPM;
	*sp = (struct tokenizer_special){
		.bos = -1,
		.eos = -1,
		.unk = -1,
		.pad = -1,
		.eot = -1,
		.fim_prefix = -1,
		.fim_suffix = -1,
		.fim_middle = -1,
		.fim_pad = -1,
		.fim_repo = -1,
		.fim_sep = -1,
		.add_bos = spm,
		.add_eos = false,
		.add_space_prefix = spm,
	};
	if (spm) {
		/* SentencePiece's fixed layout, used when the keys are missing. */
		if (n > 0) sp->unk = 0;
		if (n > 2) sp->bos = 1, sp->eos = 2;
	}
	get_id(f, "tokenizer.ggml.bos_token_id", n, &sp->bos);
	get_id(f, "tokenizer.ggml.eos_token_id", n, &sp->eos);
	get_id(f, "tokenizer.ggml.unknown_token_id", n, &sp->unk);
	get_id(f, "tokenizer.ggml.padding_token_id", n, &sp->pad);
	gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &sp->add_bos);
	gguf_get_bool(f, "tokenizer.ggml.add_eos_token", &sp->add_eos);
	gguf_get_bool(f, "tokenizer.ggml.add_space_prefix", &sp->add_space_prefix);

	/* By text first, then the explicit keys win. */
	static const char *const eot_texts[] = { "<|eot_id|>",        "<|im_end|>",    "<|end|>",
		                                 "<end_of_turn>",     "<|EOT|>",       "<EOT>",
		                                 "\xE2\x96\x81<EOT>", "<|endoftext|>", NULL };
	static const char *const pre_texts[] = { "<\xEF\xBD\x9C"
		                                 "fim\xE2\x96\x81"
		                                 "begin\xEF\xBD\x9C>",
		                                 "<|fim_prefix|>",
		                                 "<fim_prefix>",
		                                 "<fim-prefix>",
		                                 "\xE2\x96\x81<PRE>",
		                                 "<PRE>",
		                                 NULL };
	static const char *const suf_texts[] = { "<\xEF\xBD\x9C"
		                                 "fim\xE2\x96\x81"
		                                 "hole\xEF\xBD\x9C>",
		                                 "<|fim_suffix|>",
		                                 "<fim_suffix>",
		                                 "<fim-suffix>",
		                                 "\xE2\x96\x81<SUF>",
		                                 "<SUF>",
		                                 NULL };
	static const char *const mid_texts[] = { "<\xEF\xBD\x9C"
		                                 "fim\xE2\x96\x81"
		                                 "end\xEF\xBD\x9C>",
		                                 "<|fim_middle|>",
		                                 "<fim_middle>",
		                                 "<fim-middle>",
		                                 "\xE2\x96\x81<MID>",
		                                 "<MID>",
		                                 NULL };
	static const char *const pad_texts[] = { "<|fim_pad|>", "<fim_pad>", "<fim-pad>", NULL };
	static const char *const rep_texts[] = { "<|repo_name|>", "<repo_name>", "<reponame>",
		                                 NULL };
	static const char *const sep_texts[] = { "<|file_sep|>", "<file_sep>", "<|file_separator|>",
		                                 NULL };
	sp->eot = find_first(t, eot_texts);
	sp->fim_prefix = find_first(t, pre_texts);
	sp->fim_suffix = find_first(t, suf_texts);
	sp->fim_middle = find_first(t, mid_texts);
	sp->fim_pad = find_first(t, pad_texts);
	sp->fim_repo = find_first(t, rep_texts);
	sp->fim_sep = find_first(t, sep_texts);
	get_id(f, "tokenizer.ggml.eot_token_id", n, &sp->eot);
	get_id(f, "tokenizer.ggml.prefix_token_id", n, &sp->fim_prefix);
	get_id(f, "tokenizer.ggml.suffix_token_id", n, &sp->fim_suffix);
	get_id(f, "tokenizer.ggml.middle_token_id", n, &sp->fim_middle);
	get_id(f, "tokenizer.ggml.fim_pre_token_id", n, &sp->fim_prefix);
	get_id(f, "tokenizer.ggml.fim_suf_token_id", n, &sp->fim_suffix);
	get_id(f, "tokenizer.ggml.fim_mid_token_id", n, &sp->fim_middle);
	get_id(f, "tokenizer.ggml.fim_pad_token_id", n, &sp->fim_pad);
	get_id(f, "tokenizer.ggml.fim_rep_token_id", n, &sp->fim_repo);
	get_id(f, "tokenizer.ggml.fim_sep_token_id", n, &sp->fim_sep);

	t->fim_style = TOKENIZER_FIM_NONE;
	if (sp->fim_prefix >= 0 && sp->fim_suffix >= 0 && sp->fim_middle >= 0) {
		size_t len;
		const char *s = tokenizer_token_text(t, sp->fim_prefix, &len);
		if (len >= 4 && memcmp(s, "<\xEF\xBD\x9C", 4) == 0)
			t->fim_style = TOKENIZER_FIM_DEEPSEEK;
		else if ((len == 8 && memcmp(s, "\xE2\x96\x81<PRE>", 8) == 0) ||
		         (len == 5 && memcmp(s, "<PRE>", 5) == 0))
			t->fim_style = TOKENIZER_FIM_CODELLAMA;
		else
			t->fim_style = TOKENIZER_FIM_QWEN_STARCODER;
	}

	int32_t eog[] = { sp->eos, sp->eot, sp->fim_pad, sp->fim_repo, sp->fim_sep };
	for (size_t i = 0; i < sizeof eog / sizeof eog[0]; i++)
		if (eog[i] >= 0) t->eog[eog[i]] = 1;
	for (const char *const *e = eot_texts; *e; e++) {
		int32_t id = tok_lookup(t, *e, strlen(*e));
		if (id >= 0) t->eog[id] = 1;
	}
	static const char *const more_eog[] = { "<|eom_id|>",
		                                "<\xEF\xBD\x9C"
		                                "end\xE2\x96\x81"
		                                "of\xE2\x96\x81"
		                                "sentence\xEF\xBD\x9C>",
		                                NULL };
	for (const char *const *e = more_eog; *e; e++) {
		int32_t id = tok_lookup(t, *e, strlen(*e));
		if (id >= 0) t->eog[id] = 1;
	}
}

static int load_tokens(struct tokenizer *t, const struct gguf_file *f, struct infill_error *err)
{
	const char *key = "tokenizer.ggml.tokens";
	enum gguf_type et;
	uint64_t n;
	if (!gguf_get_arr(f, key, &et, &n) || et != GGUF_TYPE_STRING || n == 0 ||
	    n > INT32_MAX / 4) {
		return key_err(err, -EINVAL, key, "missing, empty or not an array of strings");
	}
	t->n_vocab = (int32_t)n;
	t->tokens = calloc(n, sizeof *t->tokens);
	t->eog = calloc(n, 1);
	if (!t->tokens || !t->eog) return -ENOMEM;
	size_t total = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct gguf_str s = gguf_get_arr_str(f, key, i);
		if (!s.ptr && s.len) {
			return key_err(err, -EINVAL, key, "element unreadable");
		}
		if (s.len > UINT32_MAX / 2 || total + s.len > UINT32_MAX / 2) {
			return key_err(err, -EINVAL, key, "token text too long");
		}
		t->tokens[i].text_off = (uint32_t)total;
		t->tokens[i].text_len = (uint32_t)s.len;
		total += s.len;
	}
	t->text_pool = malloc(total + 1);
	if (!t->text_pool) return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		struct gguf_str s = gguf_get_arr_str(f, key, i);
		if (s.len) memcpy(t->text_pool + t->tokens[i].text_off, s.ptr, s.len);
		t->tokens[i].type = TOKENIZER_TOKEN_NORMAL;
	}

	uint64_t m;
	const char *tkey = "tokenizer.ggml.token_type";
	if (gguf_get_arr(f, tkey, &et, &m)) {
		const unsigned char *d = gguf_get_arr_data(f, tkey);
		if (m != n || !d || (et != GGUF_TYPE_INT32 && et != GGUF_TYPE_UINT32)) {
			return key_err(err, -EINVAL, tkey, "expected one int32 per token");
		}
		for (uint64_t i = 0; i < n; i++) {
			int32_t v;
			memcpy(&v, d + 4 * i, 4);
			t->tokens[i].type =
			        (v >= 0 && v <= 6) ? (uint8_t)v : TOKENIZER_TOKEN_NORMAL;
		}
	}
	const char *skey = "tokenizer.ggml.scores";
	if (gguf_get_arr(f, skey, &et, &m)) {
		const unsigned char *d = gguf_get_arr_data(f, skey);
		if (m != n || !d || et != GGUF_TYPE_FLOAT32) {
			return key_err(err, -EINVAL, skey, "expected one float32 per token");
		}
		for (uint64_t i = 0; i < n; i++) memcpy(&t->tokens[i].score, d + 4 * i, 4);
	} else if (t->kind == TOKENIZER_KIND_SPM) {
		return key_err(err, -EINVAL, skey,
		               "missing (a \"llama\" tokenizer merges by score)");
	}
	return 0;
}

/* True when no token that a merge may produce has a ▁ right after a
 * character that is not ▁ (see spm_encode_fragment). */
static bool spm_no_inner_space(const struct tokenizer *t)
{
	for (int32_t id = 0; id < t->n_vocab; id++) {
		uint8_t ty = t->tokens[id].type;
		if (ty == TOKENIZER_TOKEN_CONTROL || ty == TOKENIZER_TOKEN_UNKNOWN ||
		    ty == TOKENIZER_TOKEN_BYTE)
			continue;
		const unsigned char *s = (const unsigned char *)tok_text(t, id);
		size_t n = t->tokens[id].text_len;
		for (size_t i = 1; i + 3 <= n; i++) {
			if (s[i] == 0xE2 && s[i + 1] == 0x96 && s[i + 2] == 0x81 &&
			    !(i >= 3 && s[i - 3] == 0xE2 && s[i - 2] == 0x96 && s[i - 1] == 0x81))
				return false;
		}
	}
	return true;
}

struct tokenizer *tokenizer_load(const struct gguf_file *f, struct infill_error *err)
{
	struct gguf_str model;
	if (!gguf_get_str(f, "tokenizer.ggml.model", &model)) {
		key_err(err, -EINVAL, "tokenizer.ggml.model",
		        "missing (the file has no tokenizer)");
		return NULL;
	}
	struct tokenizer *t = calloc(1, sizeof *t);
	if (!t) {
		error_set(err, -ENOMEM, "out of memory loading the tokenizer");
		return NULL;
	}
	if (model.len == 4 && memcmp(model.ptr, "gpt2", 4) == 0) {
		t->kind = TOKENIZER_KIND_BPE;
	} else if (model.len == 5 && memcmp(model.ptr, "llama", 5) == 0) {
		t->kind = TOKENIZER_KIND_SPM;
	} else {
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)(model.len < 48 ? model.len : 48),
		         model.ptr);
		error_set(err, -ENOTSUP,
		                "tokenizer.ggml.model = \"%s\": unsupported (infill reads \"gpt2\" "
		                "and \"llama\")",
		                name);
		error_key(err, "tokenizer.ggml.model", strlen("tokenizer.ggml.model"));
		free(t);
		return NULL;
	}
	int rc = load_tokens(t, f, err);
	if (!rc) rc = build_index(t);
	if (!rc && t->kind == TOKENIZER_KIND_BPE) {
		struct gguf_str pre = { "gpt2", 4 };
		gguf_get_str(f, "tokenizer.ggml.pre", &pre);
		t->pre = pre_from_name(pre.ptr, pre.len, &t->ignore_merges);
		rc = bpe_load_merges(t, f, err);
	} else if (!rc) {
		t->pre = TOKENIZER_PRE_NONE;
	}
	if (!rc) {
		for (unsigned b = 0; b < 256; b++) {
			char buf[8];
			size_t l;
			if (t->kind == TOKENIZER_KIND_BPE) {
				l = unicode_utf8_encode(byte_to_cp(b), buf);
			} else {
				l = (size_t)snprintf(buf, sizeof buf, "<0x%02X>", b);
			}
			t->byte_token[b] = tok_lookup(t, buf, l);
			if (t->byte_token[b] >= 0) t->byte_fallback = true;
		}
	}
	if (!rc && t->kind == TOKENIZER_KIND_SPM) {
		t->spm_word_split = spm_no_inner_space(t);
		for (unsigned b = 0; b < 256; b++) {
			char c = (char)b;
			t->char_token[b] = tok_lookup(t, &c, 1);
		}
		rc = spm_build_pairs(t);
	}
	if (!rc) rc = build_pieces(t);
	if (!rc) rc = build_specials(t);
	if (rc) {
		if (rc == -ENOMEM) error_set(err, rc, "out of memory loading the tokenizer");
		tokenizer_free(t);
		return NULL;
	}
	find_special_ids(t, f);
	return t;
}

void tokenizer_free(struct tokenizer *t)
{
	if (!t) return;
	free(t->tokens);
	free(t->text_pool);
	free(t->piece_pool);
	free(t->index);
	free(t->merges);
	free(t->specials);
	free(t->prefix_bits);
	free(t->eog);
	free(t);
}

/* ======================================================================
 * Accessors
 * ====================================================================== */

int32_t tokenizer_vocab_size(const struct tokenizer *t)
{
	return t->n_vocab;
}

enum tokenizer_kind tokenizer_kind(const struct tokenizer *t)
{
	return t->kind;
}

enum tokenizer_pre tokenizer_pre(const struct tokenizer *t)
{
	return t->pre;
}

const struct tokenizer_special *tokenizer_special(const struct tokenizer *t)
{
	return &t->sp;
}

enum tokenizer_fim_style tokenizer_fim_style(const struct tokenizer *t)
{
	return t->fim_style;
}

bool tokenizer_is_eog(const struct tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab && t->eog[id];
}

const char *tokenizer_token_text(const struct tokenizer *t, int32_t id, size_t *len)
{
	if (id < 0 || id >= t->n_vocab) {
		if (len) *len = 0;
		return NULL;
	}
	if (len) *len = t->tokens[id].text_len;
	return tok_text(t, id);
}

enum tokenizer_token_type tokenizer_token_type(const struct tokenizer *t, int32_t id)
{
	if (id < 0 || id >= t->n_vocab) return TOKENIZER_TOKEN_UNDEFINED;
	return (enum tokenizer_token_type)t->tokens[id].type;
}

int32_t tokenizer_find(const struct tokenizer *t, const char *text, size_t len)
{
	return tok_lookup(t, text, len);
}

/* ======================================================================
 * Encoding: added tokens first, then BPE or SPM on the text between them
 * ====================================================================== */

/* A piece of the input: raw text (id < 0) or one added token. */
struct frag {
	size_t start, len;
	int32_t id;
};

struct frags {
	struct frag *v;
	size_t n, cap;
};

static int frags_push(struct frags *f, size_t start, size_t len, int32_t id)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct frag *v = realloc(f->v, cap * sizeof *v);
		if (!v) return -ENOMEM;
		f->v = v, f->cap = cap;
	}
	f->v[f->n++] = (struct frag){ start, len, id };
	return 0;
}

static bool special_active(const struct tokenizer *t, int32_t id, bool parse_special)
{
	return t->tokens[id].type == TOKENIZER_TOKEN_USER_DEFINED || parse_special;
}

/*
 * Splits text into fragments around the added tokens, as llama.cpp and Hugging
 * Face do: tokens are tried one after another, longest text first, and each
 * takes the leftmost non-overlapping occurrences inside the raw fragments
 * left by the ones before it. Only tokens that occur in the text are tried
 * (one scan with a two-byte prefix filter finds them).
 */
static int partition(const struct tokenizer *t, const char *text, size_t len, bool parse_special,
                     struct frags *out)
{
	out->n = 0;
	uint8_t *present = NULL;
	size_t n_present = 0;
	const unsigned char *u = (const unsigned char *)text;
	for (size_t i = 0; i < len; i++) {
		unsigned key1 = u[i];
		bool hit2 = false, hit1 = false;
		if (i + 1 < len) {
			unsigned key = u[i] | (unsigned)u[i + 1] << 8;
			hit2 = t->prefix_bits[key >> 6] >> (key & 63) & 1;
		}
		if (t->has_one_byte_special) hit1 = t->prefix_bits[key1 >> 6] >> (key1 & 63) & 1;
		if (!hit2 && !hit1) continue;
		if (!present) {
			present = calloc(t->n_specials, 1);
			if (!present) return -ENOMEM;
		}
		for (size_t k = 0; k < t->n_specials; k++) {
			int32_t id = t->specials[k];
			const struct tok_entry *e = &t->tokens[id];
			if (present[k] || e->text_len > len - i ||
			    !special_active(t, id, parse_special))
				continue;
			if (memcmp(tok_text(t, id), text + i, e->text_len) == 0) {
				present[k] = 1;
				n_present++;
			}
		}
	}
	int rc = frags_push(out, 0, len, -1);
	if (rc || !n_present) {
		free(present);
		return rc;
	}
	struct frags next = { 0 };
	for (size_t k = 0; k < t->n_specials && !rc; k++) {
		if (!present[k]) continue;
		int32_t id = t->specials[k];
		const char *tt = tok_text(t, id);
		size_t tl = t->tokens[id].text_len;
		next.n = 0;
		for (size_t j = 0; j < out->n && !rc; j++) {
			struct frag fr = out->v[j];
			if (fr.id >= 0) {
				rc = frags_push(&next, fr.start, fr.len, fr.id);
				continue;
			}
			size_t pos = fr.start, end = fr.start + fr.len;
			while (!rc && pos < end) {
				const char *m = memmem(text + pos, end - pos, tt, tl);
				if (!m) break;
				size_t at = (size_t)(m - text);
				if (at > pos) rc = frags_push(&next, pos, at - pos, -1);
				if (!rc) rc = frags_push(&next, at, tl, id);
				pos = at + tl;
			}
			if (!rc && pos < end) rc = frags_push(&next, pos, end - pos, -1);
		}
		struct frags tmp = *out;
		*out = next;
		next = tmp;
	}
	free(next.v);
	free(present);
	return rc;
}

int tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, bool parse_special,
                     int32_t *out, size_t cap)
{
	struct tok_out o = { .ids = out, .cap = out ? cap : 0 };
	if (len == 0) return 0;
	struct frags fr = { 0 };
	int rc = partition(t, text, len, parse_special, &fr);
	/* SPM dummy prefix: at the start of the text and after a control token
	 * (as llama.cpp does), not after a user-defined token, which SentencePiece
	 * treats as ordinary text. A text that starts with a user-defined token
	 * gets the prefix as a lone ▁, as SentencePiece gives it. */
	bool prefix_next = t->kind == TOKENIZER_KIND_SPM && t->sp.add_space_prefix;
	for (size_t i = 0; !rc && i < fr.n; i++) {
		const struct frag *f = &fr.v[i];
		if (f->id >= 0) {
			uint8_t ty = t->tokens[f->id].type;
			if (prefix_next && i == 0 && ty == TOKENIZER_TOKEN_USER_DEFINED)
				rc = spm_encode_fragment(t, "", 0, true, &o);
			tok_out_push(&o, f->id);
			prefix_next = t->kind == TOKENIZER_KIND_SPM && t->sp.add_space_prefix &&
			              ty != TOKENIZER_TOKEN_USER_DEFINED;
			continue;
		}
		if (t->kind == TOKENIZER_KIND_BPE)
			rc = bpe_encode_fragment(t, text + f->start, f->len, &o);
		else
			rc = spm_encode_fragment(t, text + f->start, f->len, prefix_next, &o);
		prefix_next = false;
	}
	free(fr.v);
	if (rc) return rc;
	return o.n > INT_MAX ? INT_MAX : (int)o.n;
}

/* ======================================================================
 * Decoding
 * ====================================================================== */

size_t tokenizer_max_piece(const struct tokenizer *t)
{
	return t->max_piece;
}

static bool piece_of(const struct tokenizer *t, int32_t id, bool special, const char **p, size_t *n)
{
	if (id < 0 || id >= t->n_vocab) return false;
	const struct tok_entry *e = &t->tokens[id];
	if (!special && (e->type == TOKENIZER_TOKEN_CONTROL || e->type == TOKENIZER_TOKEN_UNKNOWN))
		return false;
	*p = t->piece_pool + e->piece_off;
	*n = e->piece_len;
	return true;
}

size_t tokenizer_decode_token(const struct tokenizer *t, int32_t id, bool special, char *buf,
                              size_t cap)
{
	const char *p;
	size_t n;
	if (!piece_of(t, id, special, &p, &n)) return 0;
	if (buf) memcpy(buf, p, n < cap ? n : cap);
	return n;
}

void tokenizer_detok_init(struct tokenizer_detok *d, bool special)
{
	memset(d, 0, sizeof *d);
	d->special = special;
}

int tokenizer_detok_push(const struct tokenizer *t, struct tokenizer_detok *d, int32_t id,
                         char *out, size_t cap)
{
	const char *p;
	size_t n;
	if (!piece_of(t, id, d->special, &p, &n)) n = 0;
	size_t total = d->n_held + n;
	if (total > cap) return -ENOBUFS;
	memcpy(out, d->held, d->n_held);
	if (n) memcpy(out + d->n_held, p, n);
	size_t done = unicode_utf8_complete_prefix((const unsigned char *)out, total);
	d->n_held = total - done;
	memcpy(d->held, out + done, d->n_held);
	return (int)done;
}

size_t tokenizer_detok_flush(struct tokenizer_detok *d, char *out)
{
	size_t n = d->n_held;
	memcpy(out, d->held, n);
	d->n_held = 0;
	return n;
}
