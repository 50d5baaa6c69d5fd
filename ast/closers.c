/*
 * closers.c - texts that close what the document left open at the cursor,
 * which a small model seldom proposes: it continues the code it has seen,
 * and the code it has seen goes on past the point where the file must end.
 *
 *   closing lines   the rest of a language's closing line the cursor's line
 *                   has begun (C's `#endif`);
 *   brackets        on a line of closing brackets, the brackets the matched
 *                   opener's line opened with it and nothing closes later
 *                   (`} );` under `}( function( x ) {`, `})` under
 *                   `it('x', () => {`);
 *   strings         in a string that an earlier line opened (a docstring
 *                   left open), its delimiter.
 * Guesses all: the caller validates them like any candidate.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { MAX_BRACKETS = 8 };

static void add(struct ast_closer *out, size_t cap, size_t *n, const char *text, size_t len,
                bool must_mend)
{
	if (*n >= cap || len == 0 || len >= sizeof out->text) return;
	memcpy(out[*n].text, text, len);
	out[*n].text[len] = 0;
	out[*n].must_mend = must_mend;
	(*n)++;
}

static void closing_lines(const struct ast_lang *lang, const char *text, size_t cs, size_t cursor,
                          struct ast_closer *out, size_t cap, size_t *n)
{
	for (const char *const *c = lang->closers; c && *c; c++)
		if (strlen(*c) > cursor - cs && !memcmp(*c, text + cs, cursor - cs))
			add(out, cap, n, *c + (cursor - cs), strlen(*c) - (cursor - cs), true);
}

/* An open bracket: the character that closes it, and its row. */
struct opened {
	char closer;
	uint32_t row;
};

/*
 * Bracket tokens in document order (not bytes: brackets in strings and
 * comments do not count, nor those the parser made up). Up to the cursor,
 * the cursor's line's closers tell the row of the line they close; the
 * brackets that row left open above them are ours, unless a closer after
 * the cursor matches one of them.
 */
struct bracket_scan {
	struct opened *stack; /* owned */
	size_t n, cap;
	size_t line_start, cursor;
	bool have_row;
	uint32_t row;     /* of the line the cursor's line closes */
	size_t base, top; /* ours: stack[base, top), once past the cursor */
	bool failed;      /* out of memory */
};

static bool scan_push(struct bracket_scan *s, char closer, uint32_t row)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct opened *p = realloc(s->stack, cap * sizeof *p);
		if (!p) {
			s->failed = true;
			return false;
		}
		s->stack = p;
		s->cap = cap;
	}
	s->stack[s->n++] = (struct opened){ closer, row };
	return true;
}

/* Index of the innermost open bracket that `c` closes, or SIZE_MAX: the
 * ones above it were never closed and are dropped with it, as a parser's
 * recovery would. */
static size_t scan_match(const struct bracket_scan *s, char c)
{
	for (size_t i = s->n; i-- > 0;)
		if (s->stack[i].closer == c) return i;
	return SIZE_MAX;
}

static void scan_mark(struct bracket_scan *s)
{
	s->top = s->n;
	for (s->base = s->n; s->base > 0 && s->stack[s->base - 1].row == s->row;) s->base--;
}

static bool scan_one(TSNode leaf, void *ctx)
{
	struct bracket_scan *s = ctx;
	size_t at = ts_node_start_byte(leaf);
	if (at >= s->cursor && s->base == SIZE_MAX) {
		if (!s->have_row) return false;
		scan_mark(s);
	}
	char c = 0;
	int kind = tree_bracket(leaf, &c);
	if (kind > 0) return scan_push(s, c, ts_node_start_point(leaf).row);
	if (kind == 0) return true;
	size_t j = scan_match(s, ts_node_type(leaf)[0]);
	if (j == SIZE_MAX) return true;
	if (at >= s->line_start && at < s->cursor) {
		s->row = s->stack[j].row;
		s->have_row = true;
	}
	s->n = j;
	if (s->base != SIZE_MAX && j < s->top) {
		/* A closer after the cursor reaches ours: where it matches one of
		 * them, that one is closed and none is offered; where it matches
		 * one below, ours are dropped unclosed and stay ours. */
		if (j >= s->base) s->base = s->top;
		return false;
	}
	return true;
}

/* The closers of the brackets that the row the cursor's line closes left
 * open, innermost first, into ours[0..cap). */
static size_t open_on_closed_row(TSNode root, size_t line_start, size_t cursor, char *ours,
                                 size_t cap)
{
	struct bracket_scan s = { .line_start = line_start, .cursor = cursor, .base = SIZE_MAX };
	/* A subtree without an error has its brackets in pairs: it neither
	 * leaves one open nor closes one of ours, so only the cursor's line and
	 * the broken parts are walked (a 5,000-line file: 6 ms for every token,
	 * see bench-ast). */
	tree_each_broken_leaf(root, line_start, cursor, scan_one, &s);
	if (s.base == SIZE_MAX && s.have_row) scan_mark(&s); /* nothing after the cursor */
	size_t n = 0;
	if (s.base != SIZE_MAX && !s.failed)
		for (size_t i = s.top; i-- > s.base && n < cap;) ours[n++] = s.stack[i].closer;
	free(s.stack);
	return n;
}

static void brackets(const struct ast_lang *lang, TSNode root, const char *text, size_t ls,
                     size_t cs, size_t cursor, struct ast_closer *out, size_t cap, size_t *n)
{
	bool closer = false;
	for (size_t i = cs; i < cursor; i++) {
		if (strchr(")]}", text[i]))
			closer = true;
		else if (text[i] != ' ' && text[i] != '\t')
			return;
	}
	if (!closer) return;
	char ours[MAX_BRACKETS + 2];
	size_t k = open_on_closed_row(root, ls, cursor, ours, MAX_BRACKETS);
	if (k == 0) return;
	/* whether the statement ends here too is the model's to say */
	add(out, cap, n, ours, k, false);
	if (lang->blocks == AST_BLOCK_BRACE) {
		ours[k] = ';';
		add(out, cap, n, ours, k + 1, false);
	}
}

static void strings(TSNode root, const char *text, size_t cursor, uint32_t row,
                    struct ast_closer *out, size_t cap, size_t *n)
{
	TSNode nd = ts_node_descendant_for_byte_range(root, (uint32_t)cursor, (uint32_t)cursor);
	for (int up = 0; up < 3 && !ts_node_is_null(nd); up++, nd = ts_node_parent(nd)) {
		const char *type = ts_node_type(nd);
		if (strcmp(type, "string") && strcmp(type, "template_string")) continue;
		if (ts_node_start_point(nd).row >= row || ts_node_child_count(nd) == 0) return;
		TSNode open = ts_node_child(nd, 0);
		size_t s = ts_node_start_byte(open), e = ts_node_end_byte(open);
		while (s < e && strchr("rRbBuUfF", text[s])) s++; /* r""" f''' */
		bool multiline = (e - s == 3 && (!memcmp(text + s, "\"\"\"", 3) ||
		                                 !memcmp(text + s, "'''", 3))) ||
		                 (e - s == 1 && text[s] == '`');
		/* an open string that a later one's opening closes: only shown
		 * where it mends */
		if (multiline) add(out, cap, n, text + s, e - s, true);
		return;
	}
}

size_t ast_closers_at(struct ast_doc *doc, const struct ast_lang *lang, const char *text,
                      size_t len, size_t cursor, struct ast_closer *out, size_t cap)
{
	if (!lang || cursor > len) return 0;
	size_t le = ast_line_end(text, len, cursor);
	if (!text_is_blank(text, cursor, le)) return 0;
	size_t ls = ast_line_start(text, cursor), cs = ls;
	while (cs < cursor && (text[cs] == ' ' || text[cs] == '\t')) cs++;
	size_t n = 0;
	closing_lines(lang, text, cs, cursor, out, cap, &n);
	const TSTree *tree = doc && ast_doc_lang(doc) == lang ? ast_doc_tree(doc) : NULL;
	if (!tree) return n;
	TSNode root = ts_tree_root_node(tree);
	if (!ts_node_has_error(root)) return n;
	brackets(lang, root, text, ls, cs, cursor, out, cap, &n);
	uint32_t row = 0;
	for (size_t i = 0; i < ls; i++) row += text[i] == '\n';
	strings(root, text, cursor, row, out, cap, &n);
	return n;
}
