/*
 * fim.c - fill-in-the-middle prompts: which template a vocabulary calls for,
 * and the prompt's token ids laid out for the prefix cache.
 *
 * Layout (docs/architecture.md, "Prefix cache"): what changes least comes
 * first. [BOS] <begin> extra-snippets prefix <hole> suffix <end> for the PSM
 * templates (DeepSeek, Qwen/StarCoder, CodeLlama); the families with a
 * repository format (Qwen2.5-Coder's <|file_sep|>, StarCoder2's <file_sep>,
 * CodeGemma's <|file_separator|>) get the snippets as file blocks before
 * the FIM markers instead, with the repository name and the current file's
 * path (fim_context_text). Each
 * segment is encoded on its own and the ids concatenated, so typing at the
 * end of the prefix changes only the prefix's last token(s) and everything
 * before stays a cache hit.
 *
 * Token healing: the prefix's last token is removed from the prompt and its
 * bytes returned in fim_prompt.heal; the engine constrains the first
 * generated tokens to spell them out, so a completion of "pri" can start
 * with the token "print" rather than being forced to continue after "pri".
 * On a line that holds only indentation before the cursor, the whole
 * indentation is backed up over instead: FIM models see whole-line middles
 * that start at the line start, and given a prefix that ends in indentation
 * they indent a second time (45% of the whole-line answers of `infill eval`
 * began with whitespace before this).
 *
 * Budgets keep the prefix's end and the suffix's start. The prefix's front
 * is cut in steps of FRONT_STEP tokens so that a growing prefix keeps the
 * same first token across many keystrokes (a moving start would miss the
 * cache on every key).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "tokenizer_internal.h"

#define FRONT_STEP FIM_FRONT_STEP

int fim_template_parse(const char *s, enum fim_template *out)
{
	static const struct {
		const char *name;
		enum fim_template t;
	} names[] = {
		{ "auto", FIM_TEMPLATE_AUTO },           { "deepseek", FIM_TEMPLATE_DEEPSEEK },
		{ "qwen", FIM_TEMPLATE_QWEN },           { "starcoder", FIM_TEMPLATE_STARCODER },
		{ "codellama", FIM_TEMPLATE_CODELLAMA }, { "codegemma", FIM_TEMPLATE_CODEGEMMA },
	};
	if (!s || !*s) {
		*out = FIM_TEMPLATE_AUTO;
		return 0;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i].name)) {
			*out = names[i].t;
			return 0;
		}
	if (strstr(s, "{prefix}") && strstr(s, "{suffix}")) {
		*out = FIM_TEMPLATE_CUSTOM;
		return 0;
	}
	return -EINVAL;
}

const char *fim_template_name(enum fim_template t)
{
	switch (t) {
	case FIM_TEMPLATE_AUTO: return "auto";
	case FIM_TEMPLATE_DEEPSEEK: return "deepseek";
	case FIM_TEMPLATE_QWEN: return "qwen";
	case FIM_TEMPLATE_STARCODER: return "starcoder";
	case FIM_TEMPLATE_CODELLAMA: return "codellama";
	case FIM_TEMPLATE_CUSTOM: return "custom";
	case FIM_TEMPLATE_CODEGEMMA: return "codegemma";
	}
	return "?";
}

int fim_order_parse(const char *s, enum fim_order *out)
{
	if (!s || !*s || !strcmp(s, "auto"))
		*out = FIM_ORDER_AUTO;
	else if (!strcmp(s, "psm"))
		*out = FIM_ORDER_PSM;
	else if (!strcmp(s, "spm"))
		*out = FIM_ORDER_SPM;
	else
		return -1;
	return 0;
}

const char *fim_order_name(enum fim_order o)
{
	switch (o) {
	case FIM_ORDER_AUTO: return "auto";
	case FIM_ORDER_PSM: return "psm";
	case FIM_ORDER_SPM: return "spm";
	}
	return "?";
}

enum fim_order fim_order_for(enum fim_template t)
{
	/* StarCoder (1 and 2) trained on PSM and "SPMv2" halves, CodeLlama on
	 * PSM and SPM halves (its paper; Meta's infilling_prompt_tokens has
	 * suffix_first); DeepSeek-Coder and Qwen2.5-Coder document PSM only. */
	return t == FIM_TEMPLATE_STARCODER || t == FIM_TEMPLATE_CODELLAMA ? FIM_ORDER_SPM
	                                                                  : FIM_ORDER_PSM;
}

enum fim_template fim_template_for(const struct tokenizer *t)
{
	const struct tokenizer_special *sp = tokenizer_special(t);
	switch (tokenizer_fim_style(t)) {
	case TOKENIZER_FIM_DEEPSEEK: return FIM_TEMPLATE_DEEPSEEK;
	case TOKENIZER_FIM_CODELLAMA: return FIM_TEMPLATE_CODELLAMA;
	case TOKENIZER_FIM_QWEN_STARCODER: {
		size_t len = 0;
		const char *txt = tokenizer_token_text(t, sp->fim_prefix, &len);
		if (!txt || len < 2 || txt[1] != '|') return FIM_TEMPLATE_STARCODER;
		/* CodeGemma shares Qwen's markers; its file separator tells them apart */
		static const char gemma_sep[] = "<|file_separator|>";
		if (tokenizer_find(t, gemma_sep, sizeof gemma_sep - 1) >= 0)
			return FIM_TEMPLATE_CODEGEMMA;
		return FIM_TEMPLATE_QWEN;
	}
	case TOKENIZER_FIM_NONE: break;
	}
	return FIM_TEMPLATE_AUTO;
}

/* The three markers of a built-in template as text (as fim_format_text
 * writes them) and as the vocabulary stores the tokens. */
static void markers(enum fim_template t, const char **pre, const char **suf, const char **mid)
{
	switch (t) {
	case FIM_TEMPLATE_DEEPSEEK:
		*pre = "<｜fim▁begin｜>", *suf = "<｜fim▁hole｜>", *mid = "<｜fim▁end｜>";
		return;
	case FIM_TEMPLATE_QWEN:
	case FIM_TEMPLATE_CODEGEMMA:
		*pre = "<|fim_prefix|>", *suf = "<|fim_suffix|>", *mid = "<|fim_middle|>";
		return;
	case FIM_TEMPLATE_STARCODER:
		*pre = "<fim_prefix>", *suf = "<fim_suffix>", *mid = "<fim_middle>";
		return;
	case FIM_TEMPLATE_CODELLAMA:
		/* "<PRE> {prefix} <SUF>{suffix} <MID>": the spaces before the
		 * markers belong to the ▁-tokens, the one after <PRE> is the
		 * prefix's SentencePiece dummy space. */
		*pre = "<PRE> ", *suf = " <SUF>", *mid = " <MID>";
		return;
	default: *pre = *suf = *mid = NULL;
	}
}

/* The repository tokens of a family that was trained on repositories, as
 * the vocabulary stores them: the file separator and the repository name
 * (NULL where the family has none); repo_nl: a newline after the name. */
static void repo_tokens(enum fim_template t, const char **sep, const char **repo, bool *repo_nl)
{
	*sep = *repo = NULL;
	*repo_nl = false;
	switch (t) {
	case FIM_TEMPLATE_QWEN:
		*sep = "<|file_sep|>", *repo = "<|repo_name|>", *repo_nl = true;
		break;
	case FIM_TEMPLATE_STARCODER: *sep = "<file_sep>", *repo = "<repo_name>"; break;
	case FIM_TEMPLATE_CODEGEMMA: *sep = "<|file_separator|>"; break;
	default: break;
	}
}

/* The file separator's id when the vocabulary has the family's, else -1. */
static int32_t file_sep_id(const struct tokenizer *t, enum fim_template tpl)
{
	const char *sep, *repo;
	bool nl;
	repo_tokens(tpl, &sep, &repo, &nl);
	return sep ? tokenizer_find(t, sep, strlen(sep)) : -1;
}

/* The marker tokens' ids: the vocabulary's own when the template is the one
 * it calls for, else looked up by their stored text. -1 when missing. */
static void marker_ids(const struct tokenizer *t, enum fim_template tpl, int32_t id[3])
{
	const struct tokenizer_special *sp = tokenizer_special(t);
	if (tpl == fim_template_for(t)) {
		id[0] = sp->fim_prefix, id[1] = sp->fim_suffix, id[2] = sp->fim_middle;
		return;
	}
	static const char *const cl[3] = { "\xe2\x96\x81<PRE>", "\xe2\x96\x81<SUF>",
		                           "\xe2\x96\x81<MID>" };
	const char *m[3];
	markers(tpl, &m[0], &m[1], &m[2]);
	for (int i = 0; i < 3; i++) {
		const char *s = tpl == FIM_TEMPLATE_CODELLAMA ? cl[i] : m[i];
		id[i] = s ? tokenizer_find(t, s, strlen(s)) : -1;
	}
}

static char *str_cat(const char *parts[], size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++) len += strlen(parts[i]);
	char *s = malloc(len), *p = s;
	if (!s) return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(parts[i]);
		memcpy(p, parts[i], l);
		p += l;
	}
	*p = 0;
	return s;
}

char *fim_format_text(enum fim_template t, const char *custom, const char *prefix,
                      const char *suffix)
{
	if (t == FIM_TEMPLATE_CUSTOM) {
		if (!custom) return NULL;
		const char *pp = strstr(custom, "{prefix}"), *sp = strstr(custom, "{suffix}");
		if (!pp || !sp) return NULL;
		size_t len = strlen(custom) + strlen(prefix) + strlen(suffix) + 1;
		char *s = malloc(len), *o = s;
		if (!s) return NULL;
		for (const char *c = custom; *c;) {
			if (c == pp) {
				o = stpcpy(o, prefix), c += 8;
			} else if (c == sp) {
				o = stpcpy(o, suffix), c += 8;
			} else {
				*o++ = *c++;
			}
		}
		*o = 0;
		return s;
	}
	const char *pre, *suf, *mid;
	markers(t, &pre, &suf, &mid);
	if (!pre) return NULL;
	const char *parts[] = { pre, prefix, suf, suffix, mid };
	return str_cat(parts, 5);
}

/* Appends s to the growing string *buf (of *len bytes); false when out of memory. */
static bool sb_add(char **buf, size_t *len, const char *s, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);
	if (!b) return false;
	memcpy(b + *len, s, n);
	*len += n;
	b[*len] = 0;
	*buf = b;
	return true;
}

char *fim_context_text(enum fim_template t, const char *repo, const struct engine_snippet *chunks,
                       size_t n, const char *path, const char *comment)
{
	const char *sep, *rtok;
	bool nl;
	repo_tokens(t, &sep, &rtok, &nl);
	const char *cm = comment ? comment : "//";
	char *buf = NULL;
	size_t len = 0;
	bool ok = sb_add(&buf, &len, "", 0);
	if (sep && rtok && repo) {
		ok = ok && sb_add(&buf, &len, rtok, strlen(rtok)) &&
		     sb_add(&buf, &len, repo, strlen(repo)) && (!nl || sb_add(&buf, &len, "\n", 1));
	}
	for (size_t i = 0; ok && i < n; i++) {
		const struct engine_snippet *c = &chunks[i];
		if (sep) {
			const char *p = c->path ? c->path : "";
			ok = sb_add(&buf, &len, sep, strlen(sep)) &&
			     sb_add(&buf, &len, p, strlen(p)) && sb_add(&buf, &len, "\n", 1);
		} else if (c->path) {
			ok = sb_add(&buf, &len, cm, strlen(cm)) && sb_add(&buf, &len, " ", 1) &&
			     sb_add(&buf, &len, c->path, strlen(c->path)) &&
			     sb_add(&buf, &len, "\n", 1);
		}
		ok = ok && sb_add(&buf, &len, c->text, c->len);
		if (ok && (len == 0 || buf[len - 1] != '\n')) ok = sb_add(&buf, &len, "\n", 1);
	}
	if (ok && sep && path)
		ok = sb_add(&buf, &len, sep, strlen(sep)) &&
		     sb_add(&buf, &len, path, strlen(path)) && sb_add(&buf, &len, "\n", 1);
	if (!ok) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---- token vectors ---- */

struct ids {
	int32_t *v;
	int32_t n, cap;
};

static int ids_push(struct ids *a, int32_t id)
{
	if (a->n == a->cap) {
		int32_t cap = a->cap ? a->cap * 2 : 256;
		int32_t *v = realloc(a->v, (size_t)cap * sizeof *v);
		if (!v) return -ENOMEM;
		a->v = v, a->cap = cap;
	}
	a->v[a->n++] = id;
	return 0;
}

static int ids_append(struct ids *a, const int32_t *v, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		if (ids_push(a, v[i])) return -ENOMEM;
	return 0;
}

/*
 * Encodes user text as one segment: no special tokens parsed from it, and for
 * SentencePiece the dummy space only when `dummy` (the first text after a
 * control token, as the model saw in training); else none, because the
 * segment continues text that came before it.
 */
static int encode_seg(const struct tokenizer *t, const char *text, size_t len, bool dummy,
                      struct ids *out)
{
	if (!len) return 0;
	int32_t *buf = NULL;
	size_t cap = len + 2;
	buf = malloc(cap * sizeof *buf);
	if (!buf) return -ENOMEM;
	int n;
	if (tokenizer_kind(t) == TOKENIZER_KIND_SPM) {
		struct tok_out o = { .ids = buf, .cap = cap };
		n = spm_encode_fragment(t, text, len,
		                        dummy && tokenizer_special(t)->add_space_prefix, &o);
		if (!n) n = o.n > cap ? -ENOMEM : (int)o.n;
	} else {
		n = tokenizer_encode(t, text, len, false, buf, cap);
		if (n > (int)cap) n = -ENOMEM;
	}
	int rc = n < 0 ? n : ids_append(out, buf, n);
	free(buf);
	return rc;
}

int fim_encode_continuation(const struct tokenizer *t, const char *text, size_t len, int32_t *out,
                            size_t cap)
{
	struct ids a = { 0 };
	int rc = encode_seg(t, text, len, false, &a);
	if (!rc) {
		rc = a.n;
		if (a.n && cap)
			memcpy(out, a.v,
			       (size_t)(a.n < (int32_t)cap ? a.n : (int32_t)cap) * sizeof *out);
	}
	free(a.v);
	return rc;
}

/* Encodes a template's literal text, special tokens parsed. */
static int encode_literal(const struct tokenizer *t, const char *text, struct ids *out)
{
	size_t len = strlen(text);
	if (!len) return 0;
	int32_t buf[256];
	int n = tokenizer_encode(t, text, len, true, buf, 256);
	if (n < 0) return n;
	if (n > 256) return -E2BIG;
	/* SPM adds a dummy space at the start of the text: a literal that is
	 * only markers must not gain one, which shows as a lone ▁ token first. */
	int skip = 0;
	if (tokenizer_kind(t) == TOKENIZER_KIND_SPM && n > 1) {
		size_t l;
		const char *s = tokenizer_token_text(t, buf[0], &l);
		if (s && l == 3 && !memcmp(s, "\xe2\x96\x81", 3) && text[0] != ' ') skip = 1;
	}
	return ids_append(out, buf + skip, n - skip);
}

/* The whole UTF-8 check the healed bytes need: complete characters only. */
static bool utf8_complete(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80         ? 1
		           : (c >> 5) == 6  ? 2
		           : (c >> 4) == 14 ? 3
		           : (c >> 3) == 30 ? 4
		                            : 0;
		if (!k || i + k > len) return false;
		for (size_t j = 1; j < k; j++)
			if (((unsigned char)s[i + j] >> 6) != 2) return false;
		i += k;
	}
	return true;
}

static int32_t budget(int32_t v, int32_t def)
{
	return v > 0 ? v : def;
}

/* The snippets that fit the extra budget, in order, as text segments; as
 * file blocks after the separator token file_sep when it is >= 0, else
 * under a comment line with their path. */
static int add_extra(const struct tokenizer *t, const struct engine_request *req, int32_t file_sep,
                     bool first_dummy, struct ids *out, int32_t *used)
{
	int32_t left = budget(req->extra_tokens, 512);
	bool file_blocks = file_sep >= 0;
	const char *cm = req->comment ? req->comment : "//";
	*used = 0;
	for (size_t i = 0; i < req->n_extra; i++) {
		const struct engine_snippet *s = &req->extra[i];
		size_t hl = (s->path ? strlen(s->path) : 0) + strlen(cm) + 4;
		char *txt = malloc(hl + s->len + 2);
		if (!txt) return -ENOMEM;
		size_t n = 0;
		if (file_blocks)
			n = (size_t)sprintf(txt, "%s\n", s->path ? s->path : "");
		else if (s->path)
			n = (size_t)sprintf(txt, "%s %s\n", cm, s->path);
		memcpy(txt + n, s->text, s->len);
		n += s->len;
		if (!n || txt[n - 1] != '\n') txt[n++] = '\n';
		struct ids seg = { 0 };
		if (file_blocks && ids_push(&seg, file_sep)) {
			free(txt);
			return -ENOMEM;
		}
		int rc = encode_seg(t, txt, n, first_dummy && *used == 0 && !file_blocks, &seg);
		free(txt);
		if (rc) {
			free(seg.v);
			return rc;
		}
		if (seg.n <= left) {
			rc = ids_append(out, seg.v, seg.n);
			left -= seg.n;
			*used += seg.n;
		}
		free(seg.v);
		if (rc) return rc;
	}
	return 0;
}

/* The repository context of a family with a file separator (sep, its id):
 * [repo token, name] file blocks [sep, the current file's path, "\n"], as
 * fim_context_text writes it; the blocks within the extra budget. */
static int add_repo(const struct tokenizer *t, const struct engine_request *req,
                    enum fim_template tpl, int32_t sep, struct ids *out, int32_t *used)
{
	const char *sep_text, *rtok;
	bool nl;
	repo_tokens(tpl, &sep_text, &rtok, &nl);
	int32_t rid = rtok ? tokenizer_find(t, rtok, strlen(rtok)) : -1;
	int rc = 0;
	if (rid >= 0 && req->repo_name) {
		rc = ids_push(out, rid);
		if (!rc) rc = encode_seg(t, req->repo_name, strlen(req->repo_name), false, out);
		if (!rc && nl) rc = encode_seg(t, "\n", 1, false, out);
	}
	if (!rc) rc = add_extra(t, req, sep, false, out, used);
	if (!rc && req->path) {
		rc = ids_push(out, sep);
		size_t pl = strlen(req->path);
		char *line = malloc(pl + 2);
		if (!line) return rc ? rc : -ENOMEM;
		memcpy(line, req->path, pl);
		line[pl] = '\n';
		if (!rc) rc = encode_seg(t, line, pl + 1, false, out);
		free(line);
	}
	return rc;
}

/* Bytes of indentation that are all of the prefix's last line, when they
 * follow a newline and fit the heal buffer; else 0. */
static size_t blank_line_indent(const char *prefix, size_t len, size_t cap)
{
	size_t i = len;
	while (i > 0 && (prefix[i - 1] == ' ' || prefix[i - 1] == '\t')) i--;
	if (i == len || i == 0 || prefix[i - 1] != '\n' || len - i > cap) return 0;
	return len - i;
}

/* Appends the prefix within its budget (keeping its end), backing up over
 * its last token, or a blank line's whole indentation, for healing. */
static int add_prefix(const struct tokenizer *t, const struct engine_request *req, bool dummy,
                      struct ids *out, struct fim_prompt *p)
{
	struct ids seg = { 0 };
	size_t indent = req->token_healing
	                        ? blank_line_indent(req->prefix, req->prefix_len, sizeof p->heal)
	                        : 0;
	int rc = encode_seg(t, req->prefix, req->prefix_len - indent, dummy, &seg);
	if (rc) {
		free(seg.v);
		return rc;
	}
	int32_t b = budget(req->prefix_tokens, 1024), drop = 0;
	if (seg.n > b) drop = (seg.n - b + FRONT_STEP - 1) / FRONT_STEP * FRONT_STEP;
	if (drop > seg.n) drop = seg.n;
	int32_t n = seg.n;
	if (indent) {
		memcpy(p->heal, req->prefix + req->prefix_len - indent, indent);
		p->heal_len = indent;
	} else if (req->token_healing && n - drop > 0) {
		int32_t last = seg.v[n - 1];
		char buf[64];
		size_t l = 0;
		if (tokenizer_token_type(t, last) == TOKENIZER_TOKEN_NORMAL)
			l = tokenizer_decode_token(t, last, false, buf, sizeof buf);
		if (l > 0 && l <= sizeof buf && utf8_complete(buf, l)) {
			memcpy(p->heal, buf, l);
			p->heal_len = l;
			n--;
		}
	}
	rc = ids_append(out, seg.v + drop, n - drop);
	p->prefix_tokens = n - drop;
	free(seg.v);
	return rc;
}

static int add_suffix(const struct tokenizer *t, const struct engine_request *req, struct ids *out,
                      struct fim_prompt *p)
{
	int32_t *used = &p->suffix_tokens;
	p->suffix_at = out->n;
	struct ids seg = { 0 };
	int rc = encode_seg(t, req->suffix, req->suffix_len, false, &seg);
	int32_t b = budget(req->suffix_tokens, 192);
	int32_t n = seg.n < b ? seg.n : b;
	if (!rc) rc = ids_append(out, seg.v, n);
	*used = n;
	free(seg.v);
	return rc;
}

static int build_custom(const struct tokenizer *t, const struct engine_request *req, struct ids *a,
                        struct fim_prompt *p)
{
	const char *tpl = req->fim_custom;
	const char *pp = tpl ? strstr(tpl, "{prefix}") : NULL,
	           *sp = tpl ? strstr(tpl, "{suffix}") : NULL;
	if (!pp || !sp) return -EINVAL;
	const char *c = tpl;
	int rc = 0;
	bool suffix_first = sp < pp;
	while (!rc && *c) {
		const char *next = pp >= c && (sp < c || pp < sp) ? pp : sp >= c ? sp : NULL;
		size_t lit = next ? (size_t)(next - c) : strlen(c);
		char *s = strndup(c, lit);
		if (!s) return -ENOMEM;
		rc = encode_literal(t, s, a);
		free(s);
		if (rc || !next) break;
		if (next == pp) {
			rc = add_extra(t, req, -1, false, a, &p->extra_tokens);
			if (!rc) rc = add_prefix(t, req, false, a, p);
			if (!suffix_first) p->tail_start = a->n;
		} else {
			rc = add_suffix(t, req, a, p);
		}
		c = next + 8;
	}
	if (suffix_first) p->tail_start = -1;
	return rc;
}

/*
 * Suffix first: <pre> <suf> suffix <mid> [snippets] prefix. The prefix ends
 * the prompt, so a keystroke changes only its last tokens and the suffix
 * before it stays cached. CodeLlama's prefix keeps its SentencePiece dummy
 * space here (Meta's suffix_first encodes it as a text of its own). The
 * part after the prefix is empty: nothing shifts (tail_start = n).
 */
static int build_spm(const struct tokenizer *t, const struct engine_request *req,
                     enum fim_template tpl, const int32_t mk[3], bool blocks, struct ids *a,
                     struct fim_prompt *p)
{
	int rc = ids_push(a, mk[0]);
	if (!rc) rc = ids_push(a, mk[1]);
	if (!rc) rc = add_suffix(t, req, a, p);
	if (!rc) rc = ids_push(a, mk[2]);
	if (!rc && !blocks)
		rc = add_extra(t, req, -1, tpl == FIM_TEMPLATE_CODELLAMA, a, &p->extra_tokens);
	if (!rc)
		rc = add_prefix(t, req, tpl == FIM_TEMPLATE_CODELLAMA && p->extra_tokens == 0, a,
		                p);
	p->tail_start = -1;
	return rc;
}

int fim_prompt_build(const struct tokenizer *t, const struct engine_request *req,
                     struct fim_prompt *p, struct infill_error *err)
{
	memset(p, 0, sizeof *p);
	enum fim_template tpl = req->fim == FIM_TEMPLATE_AUTO ? fim_template_for(t) : req->fim;
	const struct tokenizer_special *sp = tokenizer_special(t);
	struct ids a = { 0 };
	int rc = 0;
	if (sp->add_bos && sp->bos >= 0) rc = ids_push(&a, sp->bos);
	if (!rc && tpl == FIM_TEMPLATE_CUSTOM) {
		rc = build_custom(t, req, &a, p);
	} else if (!rc) {
		int32_t mk[3];
		marker_ids(t, tpl, mk);
		if (mk[0] < 0 || mk[1] < 0 || mk[2] < 0) {
			error_set(
			        err, -EINVAL,
			        "the model's vocabulary has no %s fill-in-the-middle tokens: "
			        "set fim.template to deepseek, qwen, starcoder, codellama or "
			        "a string with {prefix} and {suffix}",
			        tpl == FIM_TEMPLATE_AUTO ? "" : fim_template_name(tpl));
			error_key(err, "fim.template", strlen("fim.template"));
			free(a.v);
			return -EINVAL;
		}
		/* the repository format where the family has one */
		int32_t sep = file_sep_id(t, tpl);
		bool blocks = sep >= 0 && (req->n_extra > 0 || req->path || req->repo_name);
		enum fim_order order =
		        req->order == FIM_ORDER_AUTO ? fim_order_for(tpl) : req->order;
		if (blocks) rc = add_repo(t, req, tpl, sep, &a, &p->extra_tokens);
		if (!rc && order == FIM_ORDER_SPM) {
			rc = build_spm(t, req, tpl, mk, blocks, &a, p);
			goto built;
		}
		if (!rc) rc = ids_push(&a, mk[0]);
		if (!rc && !blocks)
			rc = add_extra(t, req, -1, tpl == FIM_TEMPLATE_CODELLAMA, &a,
			               &p->extra_tokens);
		/* CodeLlama: the prefix's SentencePiece dummy space is the " " of
		 * "<PRE> {prefix}", unless snippets came before it. */
		if (!rc)
			rc = add_prefix(t, req,
			                tpl == FIM_TEMPLATE_CODELLAMA && p->extra_tokens == 0, &a,
			                p);
		p->tail_start = a.n;
		if (!rc) rc = ids_push(&a, mk[1]);
		if (!rc) rc = add_suffix(t, req, &a, p);
		if (!rc) rc = ids_push(&a, mk[2]);
	}
built:
	if (rc) {
		free(a.v);
		error_set(err, rc, "building the FIM prompt: %s",
		                rc == -EINVAL ? "fim.template needs {prefix} and {suffix}"
		                              : strerror(-rc));
		if (rc == -EINVAL) error_key(err, "fim.template", strlen("fim.template"));
		memset(p, 0, sizeof *p);
		return rc;
	}
	p->tok = a.v;
	p->n = a.n;
	if (p->tail_start < 0) p->tail_start = a.n;
	return 0;
}

void fim_prompt_finish(struct fim_prompt *p)
{
	free(p->tok);
	memset(p, 0, sizeof *p);
}
