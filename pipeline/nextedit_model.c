/*
 * nextedit_model.c - next edits the model writes (nextedit_model.h states
 * the formats): the recent edits as before/after pairs, the prompt of each
 * format, the completion request for a place, and the edit its best
 * candidate makes. The request runs where every completion runs
 * (pipeline_submit -> the engine thread -> complete_run); this file only
 * builds it and reads its answer, on the caller's thread.
 */
#include "nextedit_model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Lines of context around Zeta's editable region, each side. */
#define ZETA_CONTEXT_LINES 10
/* Zeta's prompt carries its whole excerpt and edits: a prefix budget large
 * enough for them (complete_fit_context still fits it to the model). */
#define ZETA_PREFIX_TOKENS 4096

/* The instruction Zeta was fine-tuned under (its training prompt's first
 * section, as the model expects it word for word). */
#define ZETA_INSTRUCTION                                                                          \
	"You are a code completion assistant and your task is to analyze user edits and then "    \
	"rewrite an excerpt that the user provides, suggesting the appropriate edits within the " \
	"excerpt, taking into account the cursor location."

const char *nextedit_format_name(enum nextedit_format f)
{
	return f == NEXTEDIT_FORMAT_ZETA ? "zeta" : "fim";
}

enum nextedit_format nextedit_format_resolve(enum config_nextedit_format setting, bool is_zeta)
{
	if (setting == CONFIG_NEXTEDIT_ZETA || (setting == CONFIG_NEXTEDIT_AUTO && is_zeta))
		return NEXTEDIT_FORMAT_ZETA;
	return NEXTEDIT_FORMAT_FIM;
}

bool nextedit_zeta_named(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (const char *c = base; *c; c++)
		if (!strncasecmp(c, "zeta", 4)) return true;
	return false;
}

const char *nextedit_comment_for(const char *language_id)
{
	static const char *const hash[] = { "python", "shellscript", "ruby",     "perl",  "r",
		                            "yaml",   "toml",        "makefile", "cmake", NULL };
	const char *id = language_id ? language_id : "";
	for (size_t i = 0; hash[i]; i++)
		if (!strcmp(id, hash[i])) return "#";
	if (!strcmp(id, "lua") || !strcmp(id, "sql") || !strcmp(id, "haskell")) return "--";
	return "//";
}

/* ---- a growing string ---- */

struct buf {
	char *s;
	size_t n, cap;
	bool failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->failed) return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1) cap *= 2;
		char *v = realloc(b->s, cap);
		if (!v) {
			b->failed = true;
			return;
		}
		b->s = v;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n > 0) put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* The string built (new; *len its length), or NULL when out of memory. */
static char *done(struct buf *b, size_t *len)
{
	if (!b->failed && !b->s) put(b, "", 0);
	if (b->failed) {
		free(b->s);
		return NULL;
	}
	if (len) *len = b->n;
	return b->s;
}

/* ---- lines ---- */

static size_t count_lines(const char *t, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) k += t[i] == '\n';
	return k;
}

/* ---- the recent edits ---- */

void nextedit_pair_finish(struct nextedit_pair *p)
{
	free(p->before);
	free(p->after);
	memset(p, 0, sizeof *p);
}

int nextedit_pair_make(const char *text, size_t len, size_t start, size_t end, const char *old,
                       size_t old_len, struct nextedit_pair *out)
{
	memset(out, 0, sizeof *out);
	if (start > end || end > len) return -EINVAL;
	size_t ls = ast_line_start(text, start), le = ast_line_end(text, len, end);
	/* a change that ends with its line's newline keeps to its own lines */
	if (end > start && text[end - 1] == '\n' && le == end && end > ls) le = end - 1;
	size_t head = start - ls, tail = le > end ? le - end : 0;
	out->before = malloc(head + old_len + tail + 1);
	out->after = malloc(le - ls + 1);
	if (!out->before || !out->after) {
		nextedit_pair_finish(out);
		return -ENOMEM;
	}
	memcpy(out->before, text + ls, head);
	memcpy(out->before + head, old, old_len);
	memcpy(out->before + head + old_len, text + end, tail);
	out->before_len = head + old_len + tail;
	out->before[out->before_len] = 0;
	memcpy(out->after, text + ls, le - ls);
	out->after_len = le - ls;
	out->after[out->after_len] = 0;
	out->line = count_lines(text, ls);
	return 0;
}

/* Each line of s[0..n) as "<lead><line>\n". */
static void put_lines(struct buf *b, const char *lead, const char *s, size_t n)
{
	size_t i = 0;
	do {
		size_t e = i;
		while (e < n && s[e] != '\n') e++;
		puts_(b, lead);
		put(b, s + i, e - i);
		put(b, "\n", 1);
		i = e + 1;
	} while (i <= n);
}

char *nextedit_prompt_fim_edits(const struct nextedit_pair *v, size_t n, const char *comment)
{
	struct buf b = { 0 };
	if (n) {
		char minus[16], plus[16];
		snprintf(minus, sizeof minus, "%s -", comment);
		snprintf(plus, sizeof plus, "%s +", comment);
		puts_(&b, comment);
		puts_(&b, " Recent edits (- before, + after):\n");
		for (size_t i = 0; i < n; i++) {
			puts_(&b, comment);
			putf(&b, " @@ line %zu\n", v[i].line + 1);
			put_lines(&b, minus, v[i].before, v[i].before_len);
			put_lines(&b, plus, v[i].after, v[i].after_len);
		}
	}
	return done(&b, NULL);
}

/* ---- Zeta's prompt ---- */

/* One event of Zeta's "User Edits" section, as a unified-diff hunk. */
static void put_zeta_event(struct buf *b, const char *path, const struct nextedit_pair *p)
{
	size_t nb = count_lines(p->before, p->before_len) + 1;
	size_t na = count_lines(p->after, p->after_len) + 1;
	puts_(b, "User edited \"");
	puts_(b, path);
	puts_(b, "\":\n```diff\n");
	putf(b, "@@ -%zu,%zu +%zu,%zu @@\n", p->line + 1, nb, p->line + 1, na);
	put_lines(b, "-", p->before, p->before_len);
	put_lines(b, "+", p->after, p->after_len);
	puts_(b, "```");
}

/* The excerpt's head, up to and including the region's start marker: what
 * the prompt shows and what Zeta's answer repeats. */
static void put_zeta_head(struct buf *b, const char *path, const char *text, size_t bs, size_t rs)
{
	puts_(b, "```");
	puts_(b, path);
	puts_(b, "\n");
	if (bs == 0) puts_(b, NEXTEDIT_ZETA_FILE_START "\n");
	put(b, text + bs, rs - bs);
	puts_(b, NEXTEDIT_ZETA_REGION_START "\n");
}

char *nextedit_prompt_zeta(const char *path, const char *text, size_t len, size_t start, size_t end,
                           size_t at, const struct nextedit_pair *pairs, size_t n, size_t *out_len)
{
	/* up to ZETA_CONTEXT_LINES whole lines before the region's line, and
	 * after the line it ends on */
	size_t bs = start;
	for (int k = 0; k < ZETA_CONTEXT_LINES && bs > 0; k++) bs = ast_line_start(text, bs - 1);
	size_t after = end < len && text[end] == '\n' ? end + 1 : end;
	size_t ae = after;
	for (int k = 0; k < ZETA_CONTEXT_LINES && ae < len; k++) {
		ae = ast_line_end(text, len, ae);
		if (ae < len) ae++;
	}
	struct buf b = { 0 };
	puts_(&b, "### Instruction:\n" ZETA_INSTRUCTION "\n\n### User Edits:\n\n");
	for (size_t i = 0; i < n; i++) {
		if (i) puts_(&b, "\n\n");
		put_zeta_event(&b, path, &pairs[i]);
	}
	puts_(&b, "\n\n### User Excerpt:\n\n");
	put_zeta_head(&b, path, text, bs, start);
	put(&b, text + start, at - start);
	puts_(&b, NEXTEDIT_ZETA_CURSOR);
	put(&b, text + at, end - at);
	if (end > start) puts_(&b, "\n");
	puts_(&b, NEXTEDIT_ZETA_REGION_END "\n");
	put(&b, text + after, ae - after);
	if (ae > after && text[ae - 1] != '\n') puts_(&b, "\n");
	puts_(&b, "```\n\n### Response:\n\n");
	put_zeta_head(&b, path, text, bs, start);
	return done(&b, out_len);
}

/* ---- one rewrite ---- */

static int set_string(char **field, const char *v)
{
	char *s = strdup(v);
	if (!s) return -ENOMEM;
	free(*field);
	*field = s;
	return 0;
}

/* What a rewrite asks of the settings the user gave. */
static int rewrite_settings(struct settings *st, const struct nextedit_rewrite *rw)
{
	st->completion_from_document = false; /* another line is not this place's text */
	st->completion_multiline = rw->block || rw->format == NEXTEDIT_FORMAT_ZETA
	                                   ? CONFIG_MULTILINE_ALWAYS
	                                   : CONFIG_MULTILINE_NEVER;
	if (rw->format != NEXTEDIT_FORMAT_ZETA) return 0;
	if (st->context_prefix_tokens < ZETA_PREFIX_TOKENS)
		st->context_prefix_tokens = ZETA_PREFIX_TOKENS;
	if (set_string(&st->fim_template, "{prefix}{suffix}")) return -ENOMEM;
	char **stop = calloc(2, sizeof *stop);
	if (!stop || !(stop[0] = strdup(NEXTEDIT_ZETA_REGION_END))) {
		free(stop);
		return -ENOMEM;
	}
	for (size_t i = 0; st->completion_stop && st->completion_stop[i]; i++)
		free(st->completion_stop[i]);
	free(st->completion_stop);
	st->completion_stop = stop;
	return 0;
}

/* The indentation of a block inserted at line start at: that of the line
 * there, or of the line before when the one there closes a block (`}`,
 * `)`, `]`, `end`) or is blank. */
static void block_indent(const char *t, size_t len, size_t at, struct nextedit_rewrite *rw)
{
	size_t ls = at, i = at;
	while (i < len && (t[i] == ' ' || t[i] == '\t')) i++;
	bool closes = i >= len || t[i] == '\n' || t[i] == '}' || t[i] == ')' || t[i] == ']' ||
	              (len - i >= 3 && !memcmp(t + i, "end", 3));
	if (closes && at > 0) {
		ls = ast_line_start(t, at - 1);
		while (ls > 0 && ast_line_end(t, len, ls) == ls) ls = ast_line_start(t, ls - 1);
		i = ls;
		while (i < len && (t[i] == ' ' || t[i] == '\t')) i++;
	}
	size_t n = i - ls < sizeof rw->indent ? i - ls : 0;
	memcpy(rw->indent, t + ls, n);
	rw->indent_len = n;
}

struct completion_request *nextedit_rewrite_request(const struct nextedit_rewrite_params *p,
                                                    struct nextedit_rewrite *rw)
{
	if (p->at > p->len) return NULL;
	memset(rw, 0, sizeof *rw);
	rw->format = p->format;
	rw->kind = p->kind;
	rw->at = p->at;
	rw->block = p->at == 0 || p->text[p->at - 1] == '\n';
	if (rw->block || p->format != NEXTEDIT_FORMAT_ZETA) {
		rw->start = rw->end = p->at;
	} else {
		rw->start = ast_line_start(p->text, p->at);
		rw->end = ast_line_end(p->text, p->len, p->at);
	}
	struct completion_request *req = calloc(1, sizeof *req);
	if (!req) return NULL;
	req->seq = p->seq;
	req->uri = strdup(p->uri);
	req->language_id = strdup(p->format == NEXTEDIT_FORMAT_ZETA ? "plaintext" : p->language_id);
	req->version = p->version;
	req->encoding = p->encoding;
	req->trigger = COMPLETION_TRIGGER_INVOKED;
	req->kind = COMPLETION_KIND_INLINE;
	req->arrival_ns = p->arrival_ns;
	req->rewrite = true;
	bool failed = !req->uri || !req->language_id ||
	              completion_settings_copy(&req->settings, p->settings);
	if (failed) memset(&req->settings, 0, sizeof req->settings);
	if (!failed && rewrite_settings(&req->settings, rw)) failed = true;
	const char *path = p->path ? p->path : p->uri;
	if (!failed && p->format == NEXTEDIT_FORMAT_ZETA) {
		req->text = nextedit_prompt_zeta(path, p->text, p->len, rw->start, rw->end, p->at,
		                                 p->pairs, p->n_pairs, &req->text_len);
		req->cursor = req->text_len;
	} else if (!failed) {
		/* a block opens a line at the place, indented, as one types one */
		if (rw->block) block_indent(p->text, p->len, p->at, rw);
		size_t extra = rw->block ? rw->indent_len + 1 : 0;
		req->text = malloc(p->len + extra + 1);
		if (req->text) {
			memcpy(req->text, p->text, p->at);
			memcpy(req->text + p->at, rw->indent, rw->indent_len);
			if (extra) req->text[p->at + rw->indent_len] = '\n';
			memcpy(req->text + p->at + extra, p->text + p->at, p->len - p->at);
			req->text_len = p->len + extra;
			req->text[req->text_len] = 0;
		}
		req->cursor = p->at + rw->indent_len;
		if (p->n_pairs) {
			req->project = calloc(1, sizeof *req->project);
			if (req->project) {
				req->n_project = 1;
				req->project[0].text = nextedit_prompt_fim_edits(
				        p->pairs, p->n_pairs, nextedit_comment_for(p->language_id));
				if (req->project[0].text)
					req->project[0].len = strlen(req->project[0].text);
				else
					failed = true;
			} else {
				failed = true;
			}
		}
	}
	if (failed || !req->text) {
		completion_request_free(req);
		return NULL;
	}
	req->position = (struct doc_pos){ 0, 0 };
	rw->cursor = req->cursor;
	return req;
}

/* Removes every Zeta cursor marker the model repeated (Zed drops them too). */
static size_t drop_cursor_markers(char *s, size_t n)
{
	const size_t ml = strlen(NEXTEDIT_ZETA_CURSOR);
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		if (n - i >= ml && !memcmp(s + i, NEXTEDIT_ZETA_CURSOR, ml)) {
			i += ml;
			continue;
		}
		s[w++] = s[i++];
	}
	s[w] = 0;
	return w;
}

static bool utf8_inner(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

int nextedit_rewrite_edit(const struct nextedit_rewrite *rw, const struct completion_result *res,
                          const struct ast_lang *lang, const char *text, size_t len,
                          struct nextedit_edit *out, bool *invalid)
{
	memset(out, 0, sizeof *out);
	*invalid = false;
	if (!res || !res->count || rw->end > len) return 0;
	const struct completion_candidate *c = &res->items[0];
	if (c->start != rw->cursor) return 0; /* not at the place (a clamp moved it) */
	size_t rest = c->end - c->start;      /* the place's own text it re-types */
	char *t = malloc(c->text_len + 2);
	if (!t) return -ENOMEM;
	memcpy(t, c->text, c->text_len);
	size_t n = c->text_len;
	t[n] = 0;
	if (strstr(t, NEXTEDIT_ZETA_REGION_START) || strstr(t, NEXTEDIT_ZETA_REGION_END)) {
		free(t);
		return 0;
	}
	if (rw->format == NEXTEDIT_FORMAT_ZETA) n = drop_cursor_markers(t, n);
	/* one final newline is the region's own: the edit keeps the document's */
	if (n && t[n - 1] == '\n') n--;
	if (n && t[n - 1] == '\r') n--;
	size_t s = rw->start, e = rw->end + (rw->format == NEXTEDIT_FORMAT_ZETA ? 0 : rest);
	if (e > len) e = len;
	if (rw->block) {
		bool blank = true;
		for (size_t i = 0; i < n && blank; i++) blank = t[i] == ' ' || t[i] == '\t';
		if (blank) {
			free(t);
			return 0;
		}
		if (rw->indent_len) { /* the opened line's own indentation */
			char *w = realloc(t, rw->indent_len + n + 2);
			if (!w) {
				free(t);
				return -ENOMEM;
			}
			t = w;
			memmove(t + rw->indent_len, t, n);
			memcpy(t, rw->indent, rw->indent_len);
			n += rw->indent_len;
		}
		t[n++] = '\n';
		e = s;
	}
	t[n] = 0;
	/* offer the part that changes: the bytes it shares with what stands
	 * there, at either end, stay (whole characters) */
	size_t olen = e - s, p = 0, q = 0;
	while (p < n && p < olen && t[p] == text[s + p]) p++;
	while (p > 0 && p < n && utf8_inner((unsigned char)t[p])) p--;
	while (q < n - p && q < olen - p && t[n - 1 - q] == text[e - 1 - q]) q++;
	while (q > 0 && n - q < n && utf8_inner((unsigned char)t[n - q])) q--;
	if (p == n - q && p == olen - q) { /* nothing changes */
		free(t);
		return 0;
	}
	size_t es = s + p, ee = e - q, tl = n - p - q;
	memmove(t, t + p, tl);
	t[tl] = 0;
	if (lang) {
		struct ast_text at = { text, len };
		struct ast_doc *d = ast_doc_new(lang, ast_text_read, &at);
		bool ok = false;
		int rc = d ? ast_doc_parse(d) : -ENOMEM;
		if (!rc && ast_replace_check(d, text, len, es, ee, t, tl, &ok)) ok = false;
		ast_doc_delete(d);
		if (rc == -ENOMEM) {
			free(t);
			return -ENOMEM;
		}
		if (rc || !ok) {
			*invalid = true;
			free(t);
			return 0;
		}
	}
	out->kind = rw->kind;
	out->start = es;
	out->end = ee;
	out->text = t;
	out->text_len = tl;
	return 1;
}
