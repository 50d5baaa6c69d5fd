/*
 * slice.c - context slicing: which part of the document the model sees.
 *
 * A plain client sends "N lines before, N lines after". Here the prefix
 * starts at a syntactic boundary (the start of a statement or definition at
 * some level of nesting around the cursor), the earliest one whose text fits
 * the budget, so the enclosing function or class is whole when it fits and no
 * cut falls inside a token; the suffix stops at a statement end no later than
 * the end of the enclosing definition. What the prefix had to drop but the
 * model needs comes back as ranked snippets: the file's imports and the
 * signatures of same-file definitions named near the cursor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

size_t ast_tokens_estimate(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	(void)text;
	/* About 3.5 bytes per token for code with BPE vocabularies of 32k-150k. */
	return (len * 2 + 6) / 7;
}

/* ---- growable arrays ---- */

struct offsets {
	size_t *v;
	size_t n, cap;
};

static int offsets_push(struct offsets *o, size_t x)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		size_t *v = realloc(o->v, cap * sizeof *v);
		if (!v) return AST_ENOMEM;
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n++] = x;
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

static void offsets_sort_unique(struct offsets *o)
{
	qsort(o->v, o->n, sizeof *o->v, cmp_size);
	size_t w = 0;
	for (size_t i = 0; i < o->n; i++)
		if (w == 0 || o->v[w - 1] != o->v[i]) o->v[w++] = o->v[i];
	o->n = w;
}

/* ---- budget search ---- */

struct counter {
	ast_count_fn fn;
	void *ctx;
	const char *text;
};

static size_t count(const struct counter *c, size_t from, size_t to)
{
	return to > from ? c->fn(c->ctx, c->text + from, to - from) : 0;
}

/* The smallest start in sorted `starts` (all <= end) whose text to `end`
 * fits `budget`; end itself when none does. Binary search: token counts
 * shrink as the start moves right, and each count costs a tokenizer pass. */
static size_t fit_start(const struct counter *c, const struct offsets *starts, size_t end,
                        size_t budget)
{
	size_t lo = 0, hi = starts->n; /* answer in [lo, hi] */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (count(c, starts->v[mid], end) <= budget)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < starts->n ? starts->v[lo] : end;
}

/* The largest end in sorted `ends` (all >= start) that fits; start if none. */
static size_t fit_end(const struct counter *c, const struct offsets *ends, size_t start,
                      size_t budget)
{
	size_t lo = 0, hi = ends->n; /* answer: ends[lo-1] */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (count(c, start, ends->v[mid]) <= budget)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? ends->v[lo - 1] : start;
}

/* A start moved back to its line's start when only indentation precedes it,
 * so the prefix keeps the first line's indentation. */
static size_t start_at_line(const char *text, size_t pos)
{
	size_t ls = text_line_start(text, pos);
	return text_is_blank(text, ls, pos) ? ls : pos;
}

/* An end moved past the rest of its line (and the newline) when blank. */
static size_t end_at_line(const char *text, size_t len, size_t pos)
{
	size_t le = text_line_end(text, len, pos);
	if (!text_is_blank(text, pos, le)) return pos;
	return le < len ? le + 1 : le;
}

/* ---- line-based slicing (no grammar) ---- */

static int line_bounds(const char *text, size_t len, size_t cursor, struct offsets *starts,
                       struct offsets *ends)
{
	for (size_t pos = 0; pos <= cursor;) {
		if (offsets_push(starts, pos)) return AST_ENOMEM;
		size_t le = text_line_end(text, len, pos);
		if (le >= len) break;
		pos = le + 1;
	}
	for (size_t pos = text_line_end(text, len, cursor);;
	     pos = text_line_end(text, len, pos + 1)) {
		size_t e = pos < len ? pos + 1 : len;
		if (offsets_push(ends, e)) return AST_ENOMEM;
		if (pos >= len) break;
	}
	return 0;
}

/* ---- syntactic boundaries ---- */

/* Starts and ends of the named children of every ancestor of the cursor
 * (statements, definitions, arguments...): the places a cut may fall.
 * *scope gets the innermost enclosing definition (or the root). */
static int tree_bounds(const struct ast_lang *lang, TSNode root, const char *text, size_t len,
                       size_t cursor, struct offsets *starts, struct offsets *ends, TSNode *scope)
{
	TSNode leaf = ts_node_descendant_for_byte_range(root, (uint32_t)cursor, (uint32_t)cursor);
	TSNode path[256];
	size_t depth = 0;
	for (TSNode n = leaf; !ts_node_is_null(n) && depth < 256; n = ts_node_parent(n))
		path[depth++] = n;
	*scope = root;
	bool scoped = false;
	for (size_t i = 0; i < depth; i++) {
		TSNode a = path[i];
		bool is_def = lang_type_in(ts_node_type(a), lang->defs);
		if (is_def && !scoped && ts_node_start_byte(a) < cursor) {
			*scope = a;
			scoped = true;
		}
		uint32_t nc = ts_node_named_child_count(a);
		for (uint32_t j = 0; j < nc; j++) {
			TSNode ch = ts_node_named_child(a, j);
			size_t s = ts_node_start_byte(ch), e = ts_node_end_byte(ch);
			if (s < cursor && offsets_push(starts, start_at_line(text, s)))
				return AST_ENOMEM;
			/* Ends only inside the scope: the suffix never leaves it. */
			if (e > cursor && (!scoped || (e <= ts_node_end_byte(*scope))) &&
			    offsets_push(ends, end_at_line(text, len, e)))
				return AST_ENOMEM;
		}
		if (offsets_push(starts, start_at_line(text, ts_node_start_byte(a))))
			return AST_ENOMEM;
		if (scoped && ts_node_eq(a, *scope))
			break; /* no ends beyond the enclosing definition */
	}
	/* Line ends in the scope, so a long statement can still be cut between lines. */
	size_t scope_end = ts_node_end_byte(*scope);
	size_t le = text_line_end(text, len, cursor);
	if (le < scope_end && offsets_push(ends, le + 1)) return AST_ENOMEM;
	if (offsets_push(ends, end_at_line(text, len, scope_end))) return AST_ENOMEM;
	/* The cursor's line start, a cut when nothing else fits. */
	if (offsets_push(starts, text_line_start(text, cursor))) return AST_ENOMEM;
	return 0;
}

/* ---- snippets ---- */

struct snippets {
	struct ast_snippet *v;
	size_t n, cap;
};

static int snippet_add(struct snippets *s, enum ast_snippet_kind kind, const char *name,
                       const char *text, size_t len, size_t start, double score)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct ast_snippet *v = realloc(s->v, cap * sizeof *v);
		if (!v) return AST_ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	struct ast_snippet *sn = &s->v[s->n];
	memset(sn, 0, sizeof *sn);
	sn->text = malloc(len + 1);
	if (!sn->text) return AST_ENOMEM;
	memcpy(sn->text, text, len);
	sn->text[len] = 0;
	sn->len = len;
	sn->kind = kind;
	snprintf(sn->name, sizeof sn->name, "%s", name);
	sn->start_byte = start;
	sn->score = score;
	s->n++;
	return 0;
}

/* Identifiers used near the cursor with their distance in lines. */
struct ref {
	char name[64];
	size_t dist;
};

struct refs {
	struct ref v[256];
	size_t n;
};

static bool is_ref_type(const char *t)
{
	return !strcmp(t, "identifier") || !strcmp(t, "type_identifier") ||
	       !strcmp(t, "field_identifier") || !strcmp(t, "property_identifier") ||
	       !strcmp(t, "constant");
}

static size_t lines_between(const char *text, size_t a, size_t b)
{
	if (a > b) {
		size_t t = a;
		a = b;
		b = t;
	}
	size_t n = 0;
	for (size_t i = a; i < b; i++) n += text[i] == '\n';
	return n;
}

static void refs_collect(TSNode root, const char *text, size_t from, size_t to, size_t cursor,
                         struct refs *r)
{
	TSTreeCursor c = ts_tree_cursor_new(root);
	for (;;) {
		TSNode n = ts_tree_cursor_current_node(&c);
		size_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
		bool inside = e > from && s < to;
		if (inside && ts_node_child_count(n) == 0 && is_ref_type(ts_node_type(n)) &&
		    e - s < sizeof r->v[0].name) {
			size_t d = lines_between(text, s, cursor);
			size_t k;
			for (k = 0; k < r->n; k++)
				if (strlen(r->v[k].name) == e - s &&
				    !memcmp(r->v[k].name, text + s, e - s))
					break;
			if (k < r->n) {
				if (d < r->v[k].dist) r->v[k].dist = d;
			} else if (r->n < sizeof r->v / sizeof r->v[0]) {
				memcpy(r->v[r->n].name, text + s, e - s);
				r->v[r->n].name[e - s] = 0;
				r->v[r->n].dist = d;
				r->n++;
			}
		}
		if (inside && ts_tree_cursor_goto_first_child(&c)) continue;
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (!ts_tree_cursor_goto_parent(&c)) {
				ts_tree_cursor_delete(&c);
				return;
			}
		}
	}
}

static const struct ref *refs_find(const struct refs *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].name, name)) return &r->v[i];
	return NULL;
}

static bool is_function_type(const char *t)
{
	return strstr(t, "function") || strstr(t, "method") || strstr(t, "constructor");
}

/* The header of a definition: its text up to its body, or all of it when it
 * has no body and is short (a typedef, a type alias). */
static size_t header_end(TSNode def, const char *text, size_t *start)
{
	*start = ts_node_start_byte(def);
	TSNode d = def;
	if (!strcmp(ts_node_type(d), "decorated_definition") ||
	    !strcmp(ts_node_type(d), "template_declaration")) {
		TSNode inner = ts_node_named_child(d, ts_node_named_child_count(d) - 1);
		if (!ts_node_is_null(inner)) d = inner;
	}
	TSNode body = ts_node_child_by_field_name(d, "body", 4);
	size_t end = ts_node_end_byte(d);
	const char *t = ts_node_type(d);
	bool type_like = !is_function_type(t) && !strstr(t, "class") && !strstr(t, "impl") &&
	                 !strstr(t, "namespace") && !strstr(t, "mod_item") && !strstr(t, "trait");
	/* Types: their fields are the signature, keep them when short. */
	if (!ts_node_is_null(body) && !(type_like && end - *start <= 600))
		end = ts_node_start_byte(body);
	if (end - *start > 600) {
		size_t le = *start;
		while (le < end && text[le] != '\n') le++;
		end = le;
	}
	while (end > *start && strchr(" \t\r\n{:", text[end - 1])) end--;
	return end;
}

static int signatures_add(const struct ast_lang *lang, TSNode root, const char *text,
                          size_t win_start, size_t win_end, size_t cursor, const struct refs *r,
                          struct snippets *out)
{
	TSTreeCursor c = ts_tree_cursor_new(root);
	int rc = 0;
	for (;;) {
		TSNode n = ts_tree_cursor_current_node(&c);
		const char *t = ts_node_type(n);
		bool descend = true;
		if (lang_type_in(t, lang->defs)) {
			size_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
			char name[64];
			const struct ref *ref;
			bool contains_cursor = s <= cursor && cursor <= e;
			bool visible = s >= win_start && e <= win_end;
			if (!contains_cursor && !visible &&
			    lang_def_name(n, text, name, sizeof name) &&
			    (ref = refs_find(r, name))) {
				size_t hs, he = header_end(n, text, &hs);
				char buf[720];
				size_t l = he - hs < 700 ? he - hs : 700;
				memcpy(buf, text + hs, l);
				if (lang->blocks == AST_BLOCK_INDENT) {
					memcpy(buf + l, ": ...", 5);
					l += 5;
				} else if (lang->blocks == AST_BLOCK_BRACE && he < e) {
					memcpy(buf + l, ";", 1);
					l += 1;
				}
				rc = snippet_add(out, AST_SNIPPET_SIGNATURE, name, buf, l, hs,
				                 10.0 / (1.0 + (double)ref->dist / 8.0));
				if (rc) break;
			}
			/* Nested functions are rarely called from outside. */
			descend = !is_function_type(t) || contains_cursor;
		}
		if (descend && ts_tree_cursor_goto_first_child(&c)) continue;
		bool done = false;
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (!ts_tree_cursor_goto_parent(&c)) {
				done = true;
				break;
			}
		}
		if (done) break;
	}
	ts_tree_cursor_delete(&c);
	return rc;
}

/* The top-level imports/includes before the prefix, as one snippet. */
static int imports_add(const struct ast_lang *lang, TSNode root, const char *text,
                       size_t prefix_start, struct snippets *out)
{
	size_t cap = 0, n = 0, first = 0;
	char *buf = NULL;
	uint32_t nc = ts_node_named_child_count(root);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode ch = ts_node_named_child(root, i);
		size_t s = ts_node_start_byte(ch), e = ts_node_end_byte(ch);
		if (s >= prefix_start) break;
		if (!lang_type_in(ts_node_type(ch), lang->imports)) continue;
		if (e > prefix_start) e = prefix_start;
		while (e > s && strchr("\r\n", text[e - 1])) e--;
		if (n == 0) first = s;
		if (n + (e - s) + 2 > cap) {
			cap = (n + (e - s) + 2) * 2;
			char *b = realloc(buf, cap);
			if (!b) {
				free(buf);
				return AST_ENOMEM;
			}
			buf = b;
		}
		memcpy(buf + n, text + s, e - s);
		n += e - s;
		buf[n++] = '\n';
	}
	int rc = n ? snippet_add(out, AST_SNIPPET_IMPORTS, "", buf, n, first, 100.0) : 0;
	free(buf);
	return rc;
}

static int cmp_snippet(const void *a, const void *b)
{
	const struct ast_snippet *x = a, *y = b;
	if (x->score != y->score) return x->score > y->score ? -1 : 1;
	return x->start_byte < y->start_byte ? -1 : x->start_byte > y->start_byte;
}

/* Keeps the best snippets that fit the extra budget, dropping the rest. */
static size_t snippets_fit(const struct counter *c, struct snippets *s, size_t budget)
{
	qsort(s->v, s->n, sizeof *s->v, cmp_snippet);
	size_t used = 0, w = 0;
	for (size_t i = 0; i < s->n; i++) {
		size_t t = c->fn(c->ctx, s->v[i].text, s->v[i].len);
		if (used + t <= budget) {
			s->v[i].tokens = t;
			used += t;
			s->v[w++] = s->v[i];
		} else {
			free(s->v[i].text);
		}
	}
	s->n = w;
	return used;
}

/* ---- the slice ---- */

void ast_slice_finish(struct ast_slice *s)
{
	if (!s) return;
	free(s->prefix);
	free(s->suffix);
	for (size_t i = 0; i < s->n_snippets; i++) free(s->snippets[i].text);
	free(s->snippets);
	memset(s, 0, sizeof *s);
}

static char *dup_range(const char *text, size_t from, size_t to)
{
	char *p = malloc(to - from + 1);
	if (p) {
		memcpy(p, text + from, to - from);
		p[to - from] = 0;
	}
	return p;
}

int ast_slice(const struct ast_slice_params *p, struct ast_slice *out)
{
	memset(out, 0, sizeof *out);
	if (!p || !p->text || p->cursor > p->len) return AST_EINVAL;
	struct counter c = { p->count ? p->count : ast_tokens_estimate, p->count_ctx, p->text };
	const char *text = p->text;
	size_t len = p->len, cursor = p->cursor;
	out->shape = ast_shape_at(p->lang, text, len, cursor);
	out->scope_end = len;

	TSParser *parser = NULL;
	TSTree *owned = NULL;
	const TSTree *tree = NULL;
	if (p->lang && p->doc && ast_doc_lang(p->doc) == p->lang) tree = ast_doc_tree(p->doc);
	if (p->lang && !tree) {
		parser = lang_parser_new(p->lang);
		if (parser) owned = ts_parser_parse_string(parser, NULL, text, (uint32_t)len);
		tree = owned;
	}

	struct offsets starts = { 0 }, ends = { 0 };
	struct snippets snips = { 0 };
	int rc;
	TSNode root = { 0 }, scope = { 0 };
	if (tree) {
		root = ts_tree_root_node(tree);
		rc = tree_bounds(p->lang, root, text, len, cursor, &starts, &ends, &scope);
		out->scope_end = ts_node_end_byte(scope);
		out->syntactic = true;
	} else {
		rc = line_bounds(text, len, cursor, &starts, &ends);
	}
	if (rc) goto fail;
	offsets_sort_unique(&starts);
	offsets_sort_unique(&ends);
	/* Drop starts past the cursor and ends before it (from line fix-ups). */
	while (starts.n && starts.v[starts.n - 1] > cursor) starts.n--;
	size_t skip = 0;
	while (skip < ends.n && ends.v[skip] < cursor) skip++;
	memmove(ends.v, ends.v + skip, (ends.n - skip) * sizeof *ends.v);
	ends.n -= skip;

	size_t ps = fit_start(&c, &starts, cursor, p->prefix_tokens);
	size_t se = fit_end(&c, &ends, cursor, p->suffix_tokens);
	out->prefix_start = ps;
	out->suffix_end = se;
	out->prefix = dup_range(text, ps, cursor);
	out->suffix = dup_range(text, cursor, se);
	if (!out->prefix || !out->suffix) {
		rc = AST_ENOMEM;
		goto fail;
	}
	out->prefix_len = cursor - ps;
	out->suffix_len = se - cursor;
	out->prefix_tokens_used = count(&c, ps, cursor);
	out->suffix_tokens_used = count(&c, cursor, se);

	if (tree && p->extra_tokens > 0) {
		rc = imports_add(p->lang, root, text, ps, &snips);
		if (rc) goto fail;
		/* Names used in the enclosing definition around the cursor (or the
		 * nearby lines at top level). */
		size_t from = ts_node_start_byte(scope), to = ts_node_end_byte(scope);
		if (ts_node_eq(scope, root)) {
			from = cursor > 2000 ? cursor - 2000 : 0;
			to = cursor + 500 < len ? cursor + 500 : len;
		}
		struct refs *r = calloc(1, sizeof *r);
		if (!r) {
			rc = AST_ENOMEM;
			goto fail;
		}
		refs_collect(root, text, from, to, cursor, r);
		rc = signatures_add(p->lang, root, text, ps, se, cursor, r, &snips);
		free(r);
		if (rc) goto fail;
		out->extra_tokens_used = snippets_fit(&c, &snips, p->extra_tokens);
		out->snippets = snips.v;
		out->n_snippets = snips.n;
		snips.v = NULL;
	}
	free(starts.v);
	free(ends.v);
	ts_tree_delete(owned);
	ts_parser_delete(parser);
	return 0;
fail:
	for (size_t i = 0; i < snips.n; i++) free(snips.v[i].text);
	free(snips.v);
	free(starts.v);
	free(ends.v);
	ts_tree_delete(owned);
	ts_parser_delete(parser);
	ast_slice_finish(out);
	return rc;
}
