/*
 * tokenizer.h - text <-> token ids for the models infill runs. Part of infer/'s
 * public face (infer.h includes it).
 *
 * A tokenizer is built from a GGUF file's tokenizer.ggml.* metadata:
 *  - "gpt2": byte-level BPE (tokens + merges) with the pre-tokenizer named by
 *    tokenizer.ggml.pre: deepseek-coder, qwen2, llama3 (llama-bpe), starcoder,
 *    gpt2 (the default for unknown names).
 *  - "llama": SentencePiece-style BPE (tokens + scores, byte fallback
 *    <0xXX>, spaces as U+2581, optional dummy-prefix space).
 * Added tokens are matched in the raw text before the BPE: user-defined ones
 * (token type 4) always, control ones (type 3) only when parse_special is on.
 * SPM's dummy-prefix space goes at the start of the text and after a control
 * token (as llama.cpp does), not after a user-defined token (as sentencepiece
 * does); a text that starts with a user-defined token gets a lone ▁ first.
 *
 * Malformed UTF-8 is kept byte for byte (each bad byte is a character of its
 * own for the pre-tokenizer), so decode(encode(x)) == x for any bytes x
 * (plus SPM's leading dummy-prefix space). llama.cpp instead replaces such
 * bytes with U+FFFD; valid UTF-8 tokenizes identically.
 *
 * Ownership: tokenizer_load copies everything it needs; the gguf_file may be
 * closed right after. A loaded tokenizer is immutable: any number of threads
 * may call the const functions at once. tokenizer_encode allocates its own
 * scratch memory per call (nothing global, nothing cached).
 */
#ifndef INFILL_INFER_TOKENIZER_H
#define INFILL_INFER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

struct tokenizer;

/* Token types as stored in tokenizer.ggml.token_type. */
enum tokenizer_token_type {
	TOKENIZER_TOKEN_UNDEFINED = 0,
	TOKENIZER_TOKEN_NORMAL = 1,
	TOKENIZER_TOKEN_UNKNOWN = 2,
	TOKENIZER_TOKEN_CONTROL = 3,
	TOKENIZER_TOKEN_USER_DEFINED = 4,
	TOKENIZER_TOKEN_UNUSED = 5,
	TOKENIZER_TOKEN_BYTE = 6,
};

enum tokenizer_kind {
	TOKENIZER_KIND_BPE, /* "gpt2": byte-level BPE */
	TOKENIZER_KIND_SPM, /* "llama": SentencePiece BPE */
};

/* Pre-tokenizers (regex splits before byte-level BPE). */
enum tokenizer_pre {
	TOKENIZER_PRE_NONE, /* SPM: no pre-tokenizer */
	TOKENIZER_PRE_GPT2,
	TOKENIZER_PRE_STARCODER,
	TOKENIZER_PRE_DEEPSEEK_CODER,
	TOKENIZER_PRE_QWEN2,
	TOKENIZER_PRE_LLAMA3,
};

/* Which fill-in-the-middle template the vocabulary's tokens call for. */
enum tokenizer_fim_style {
	TOKENIZER_FIM_NONE,
	TOKENIZER_FIM_DEEPSEEK,       /* <｜fim▁begin｜>P<｜fim▁hole｜>S<｜fim▁end｜> */
	TOKENIZER_FIM_QWEN_STARCODER, /* <|fim_prefix|>P<|fim_suffix|>S<|fim_middle|> */
	TOKENIZER_FIM_CODELLAMA,      /* ▁<PRE> P ▁<SUF>S ▁<MID> */
};

/* Special ids; -1 where the vocabulary has none. */
struct tokenizer_special {
	int32_t bos, eos, unk, pad;
	int32_t eot; /* end of turn/text when distinct from eos (<|EOT|>, <|endoftext|>, ▁<EOT>) */
	int32_t fim_prefix;                 /* <｜fim▁begin｜>, <|fim_prefix|>, ▁<PRE> */
	int32_t fim_suffix;                 /* <｜fim▁hole｜>, <|fim_suffix|>, ▁<SUF> */
	int32_t fim_middle;                 /* <｜fim▁end｜>, <|fim_middle|>, ▁<MID> */
	int32_t fim_pad, fim_repo, fim_sep; /* <|fim_pad|>, <|repo_name|>, <|file_sep|> */
	bool add_bos; /* tokenizer.ggml.add_bos_token (default: true for SPM, false for BPE) */
	bool add_eos;
	bool add_space_prefix; /* SPM dummy prefix (tokenizer.ggml.add_space_prefix, default true) */
};

/* ---- loading ---- */

/* Builds the tokenizer of `f`. Returns a new tokenizer (free with
 * tokenizer_free) or NULL with *err naming the missing or malformed key. */
struct tokenizer *tokenizer_load(const struct gguf_file *f, struct infill_error *err);
/* Accepts NULL. */
void tokenizer_free(struct tokenizer *t);

int32_t tokenizer_vocab_size(const struct tokenizer *t);
enum tokenizer_kind tokenizer_kind(const struct tokenizer *t);
enum tokenizer_pre tokenizer_pre(const struct tokenizer *t);
/* Borrowed; valid as long as t. */
const struct tokenizer_special *tokenizer_special(const struct tokenizer *t);
enum tokenizer_fim_style tokenizer_fim_style(const struct tokenizer *t);
/* True for ids that end a generation: eos, eot, fim_pad/repo/sep and the
 * end-of-text tokens found by their text. */
bool tokenizer_is_eog(const struct tokenizer *t, int32_t id);

/* ---- tokens ---- */

/* The token's stored text (byte-level encoded for BPE, ▁ for spaces in SPM),
 * not NUL-terminated; *len set. Borrowed, valid as long as t. NULL for a bad id. */
const char *tokenizer_token_text(const struct tokenizer *t, int32_t id, size_t *len);
enum tokenizer_token_type tokenizer_token_type(const struct tokenizer *t, int32_t id);
/* Id of the token whose stored text is exactly text[0..len), or -1. */
int32_t tokenizer_find(const struct tokenizer *t, const char *text, size_t len);

/* ---- encoding ---- */

/*
 * Tokenizes text[0..len) (UTF-8; malformed bytes are kept and encoded as
 * bytes). No BOS is added: callers that want it check
 * tokenizer_special()->add_bos. parse_special: control tokens written in the
 * text (<｜begin▁of▁sentence｜>, <|endoftext|>, ...) become their ids;
 * user-defined tokens (DeepSeek's FIM tokens among them) always do.
 * Writes at most cap ids to out (out may be NULL when cap is 0). Returns the
 * number of tokens of the text — more than cap means out holds only the
 * first cap — or -ENOMEM.
 */
int tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, bool parse_special,
                     int32_t *out, size_t cap);

/* Number of tokens of text[0..len) (for context budgets); negative on error. */
static inline int tokenizer_count(const struct tokenizer *t, const char *text, size_t len,
                                  bool parse_special)
{
	return tokenizer_encode(t, text, len, parse_special, NULL, 0);
}

/* ---- decoding ---- */

/* Longest piece any token decodes to, in bytes (size buffers with it). */
size_t tokenizer_max_piece(const struct tokenizer *t);

/*
 * The bytes token `id` stands for: byte-level BPE text mapped back to bytes,
 * SPM ▁ -> space and <0xXX> -> that byte, user-defined tokens as their text,
 * control tokens as their text when `special`, else nothing. May be a partial
 * UTF-8 sequence. Writes min(n, cap) bytes to buf and returns n, the piece's
 * length.
 */
size_t tokenizer_decode_token(const struct tokenizer *t, int32_t id, bool special, char *buf,
                              size_t cap);

/*
 * Streaming detokenizer: turns ids into text that is always whole UTF-8
 * characters, holding back the start of a character whose remaining bytes come
 * with the next token(s). Caller-owned; no allocation.
 */
struct tokenizer_detok {
	bool special;          /* render control tokens as their text */
	size_t n_held;         /* bytes in held */
	unsigned char held[4]; /* start of an unfinished UTF-8 character */
};

void tokenizer_detok_init(struct tokenizer_detok *d, bool special);
/*
 * Appends the piece of `id` and writes what is complete to out (cap must be at
 * least tokenizer_max_piece(t) + 4). Returns the bytes written, or -ENOBUFS
 * (and writes nothing, changes nothing) if cap is too small.
 */
int tokenizer_detok_push(const struct tokenizer *t, struct tokenizer_detok *d, int32_t id,
                         char *out, size_t cap);
/* Writes whatever is held (an unfinished character at the end of the stream,
 * as its raw bytes; out needs 4 bytes) and resets d. Returns the bytes written. */
size_t tokenizer_detok_flush(struct tokenizer_detok *d, char *out);

#endif
