/*
 * fuzz_validate.c - libFuzzer target for ast validation (and slicing) on
 * arbitrary documents: byte 0 picks the language, bytes 1-2 the cursor
 * (modulo the document's length), the rest is the document, then a NUL,
 * then the candidate. Validation runs with the document parsed here and with
 * a tree lent; the verdict and kept length must be sane;
 * slicing must stay inside its budgets' text.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct flat {
	const char *text;
	size_t len;
};

static const char *flat_read(void *ctx, size_t offset, size_t *len)
{
	const struct flat *f = ctx;
	if (offset >= f->len) {
		*len = 0;
		return NULL;
	}
	*len = f->len - offset;
	return f->text + offset;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3 || ast_lang_count() == 0) return 0;
	const struct ast_lang *lang = ast_lang_at(data[0] % ast_lang_count());
	const char *text = (const char *)data + 3;
	size_t rest = size - 3;
	const char *nul = memchr(text, 0, rest);
	size_t len = nul ? (size_t)(nul - text) : rest;
	const char *cand = nul ? nul + 1 : "";
	size_t cand_len = nul ? rest - len - 1 : 0;
	size_t cursor = len ? ((size_t)data[1] << 8 | data[2]) % (len + 1) : 0;

	struct ast_validate_params vp = { .lang = lang,
		                          .text = text,
		                          .len = len,
		                          .cursor = cursor,
		                          .candidate = cand,
		                          .candidate_len = cand_len };
	struct ast_validation v1, v2;
	memset(&v1, 0, sizeof v1);
	int rc1 = ast_validate(&vp, &v1);
	if (!rc1 && v1.keep_len > cand_len) __builtin_trap();
	if (!rc1 && (unsigned)v1.verdict > AST_VERDICT_UNCHECKED) __builtin_trap();

	struct flat f = { text, len };
	struct ast_doc *doc = ast_doc_new(lang, flat_read, &f);
	if (doc && ast_doc_parse(doc) == 0) {
		vp.doc = doc;
		/* (a lent tree is edited and parsed incrementally, whose error
		 * recovery may differ from a fresh parse: only sanity here) */
		if (!ast_validate(&vp, &v2) && v2.keep_len > cand_len) __builtin_trap();
	}
	struct ast_slice_params sp = { .lang = lang,
		                       .text = text,
		                       .len = len,
		                       .cursor = cursor,
		                       .prefix_tokens = 64,
		                       .suffix_tokens = 16,
		                       .extra_tokens = 32,
		                       .count = ast_tokens_estimate,
		                       .doc = doc };
	struct ast_slice s;
	if (ast_slice(&sp, &s) == 0) {
		if (s.prefix_len > cursor || s.suffix_len > len - cursor) __builtin_trap();
		if (s.prefix_len && memcmp(s.prefix, text + cursor - s.prefix_len, s.prefix_len))
			__builtin_trap();
	}
	ast_slice_finish(&s);
	ast_doc_delete(doc);
	return 0;
}
