/*
 * scope.c - what can be read from the lines around the cursor without a tree:
 * the completion's shape and indentation, where a candidate leaves the
 * enclosing scope, and which closing brackets the text after the cursor
 * already supplies. These run for every candidate, so they are plain scans.
 */
#include <limits.h>
#include <string.h>

#include "internal.h"

/* ---- text helpers ---- */

size_t ast_line_start(const char *text, size_t pos)
{
	while (pos > 0 && text[pos - 1] != '\n') pos--;
	return pos;
}

size_t ast_line_end(const char *text, size_t len, size_t pos)
{
	while (pos < len && text[pos] != '\n') pos++;
	return pos;
}

size_t text_indent_width(const char *text, size_t from, size_t to)
{
	size_t w = 0;
	for (size_t i = from; i < to; i++) {
		if (text[i] == ' ')
			w++;
		else if (text[i] == '\t')
			w = (w / 8 + 1) * 8;
		else
			break;
	}
	return w;
}

bool text_is_blank(const char *text, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '\n')
			return false;
	return true;
}

static size_t indent_end(const char *text, size_t ls, size_t le)
{
	while (ls < le && (text[ls] == ' ' || text[ls] == '\t')) ls++;
	return ls;
}

/* Last non-blank byte of text[from..to) ignoring trailing whitespace, or 0. */
static char last_char(const char *text, size_t from, size_t to)
{
	while (to > from && strchr(" \t\r\n", text[to - 1])) to--;
	return to > from ? text[to - 1] : 0;
}

/* ---- shape ---- */

const char *ast_shape_name(enum ast_shape_kind kind)
{
	switch (kind) {
	case AST_SHAPE_REST_OF_LINE: return "rest_of_line";
	case AST_SHAPE_LINE: return "line";
	case AST_SHAPE_BLOCK: return "block";
	}
	return "?";
}

/* The file's indentation unit: a tab if indented lines start with one, else
 * the smallest space indent seen in the first lines, else 4 spaces. */
static void indent_unit(const char *text, size_t len, char *unit, size_t *unit_len)
{
	size_t best = 0;
	size_t pos = 0;
	for (int lines = 0; pos < len && lines < 400; lines++) {
		size_t le = ast_line_end(text, len, pos);
		if (text[pos] == '\t' && !text_is_blank(text, pos, le)) {
			unit[0] = '\t';
			*unit_len = 1;
			return;
		}
		size_t ie = indent_end(text, pos, le);
		if (ie > pos && ie < le && (best == 0 || ie - pos < best)) best = ie - pos;
		pos = le + 1;
	}
	if (best == 0 || best > 8) best = 4;
	memset(unit, ' ', best);
	*unit_len = best;
}

static void shape_set_indent(struct ast_shape *s, const char *text, size_t from, size_t to,
                             const char *extra, size_t extra_len)
{
	size_t n = to - from;
	if (n >= sizeof s->indent) n = sizeof s->indent - 1;
	memcpy(s->indent, text + from, n);
	if (n + extra_len >= sizeof s->indent) extra_len = sizeof s->indent - 1 - n;
	memcpy(s->indent + n, extra, extra_len);
	s->indent_len = n + extra_len;
	s->indent[s->indent_len] = 0;
}

/* The previous line with text on it before line start ls, as [start, end). */
static bool prev_nonblank_line(const char *text, size_t ls, size_t *ps, size_t *pe)
{
	while (ls > 0) {
		size_t e = ls - 1; /* the '\n' */
		size_t s = ast_line_start(text, e);
		if (!text_is_blank(text, s, e)) {
			*ps = s;
			*pe = e;
			return true;
		}
		ls = s;
	}
	return false;
}

struct ast_shape ast_shape_at(const struct ast_lang *lang, const char *text, size_t len,
                              size_t cursor)
{
	struct ast_shape s = { .kind = AST_SHAPE_LINE };
	if (cursor > len) cursor = len;
	size_t ls = ast_line_start(text, cursor), le = ast_line_end(text, len, cursor);
	size_t ie = indent_end(text, ls, le);
	bool before_blank = text_is_blank(text, ls, cursor);
	char unit[16];
	size_t unit_len;
	indent_unit(text, len, unit, &unit_len);

	shape_set_indent(&s, text, ls, ie < cursor ? ie : cursor, "", 0);
	if (!text_is_blank(text, cursor, le)) {
		s.kind = AST_SHAPE_REST_OF_LINE;
		return s;
	}
	enum ast_block_style style = lang ? lang->blocks : AST_BLOCK_NONE;
	char opener = style == AST_BLOCK_INDENT ? ':' : style == AST_BLOCK_BRACE ? '{' : 0;

	if (!before_blank) {
		/* `def f():|` or `int f() {|`: the completion starts a body. */
		if (opener && last_char(text, ls, cursor) == opener) {
			s.kind = AST_SHAPE_BLOCK;
			shape_set_indent(&s, text, ls, ie, unit, unit_len);
		}
		return s;
	}
	size_t ps, pe;
	if (!prev_nonblank_line(text, ls, &ps, &pe)) {
		s.kind = AST_SHAPE_LINE;
		return s;
	}
	size_t pie = indent_end(text, ps, pe);
	if (!opener || last_char(text, ps, pe) != opener) {
		/* A blank line inside a body: keep the cursor's indentation, or the
		 * previous line's if the editor did not indent. */
		if (cursor == ls) shape_set_indent(&s, text, ps, pie, "", 0);
		return s;
	}
	/* After an opener: is the body empty? */
	size_t next = le < len ? le + 1 : len;
	while (next < len) {
		size_t ne = ast_line_end(text, len, next);
		if (!text_is_blank(text, next, ne)) break;
		next = ne + 1;
	}
	bool empty;
	if (next >= len) {
		empty = true;
	} else if (style == AST_BLOCK_INDENT) {
		size_t ne = ast_line_end(text, len, next);
		empty = text_indent_width(text, next, ne) <= text_indent_width(text, ps, pe);
	} else {
		size_t k = indent_end(text, next, ast_line_end(text, len, next));
		empty = text[k] == '}';
	}
	s.kind = empty ? AST_SHAPE_BLOCK : AST_SHAPE_LINE;
	/* The editor's own indentation of the cursor's line wins when it is
	 * already deeper than the block's opener. */
	if (text_indent_width(text, ls, cursor) > text_indent_width(text, ps, pie))
		shape_set_indent(&s, text, ls, cursor, "", 0);
	else
		shape_set_indent(&s, text, ps, pie, unit, unit_len);
	return s;
}

/* ---- scope cut ---- */

/* How skip_literal() reads a language's literals. */
enum {
	LIT_C_COMMENTS = 1, /* // and slash-star comments */
	LIT_CHAR_QUOTE = 2, /* '...' is a short char literal ('a', '\\n'), else a
			       lifetime or label (Rust 'a) and no literal at all */
};

static size_t skip_literal(const char *t, size_t n, size_t i, int mode);

/* Python: the first candidate line (after its first) whose indentation is
 * below the cursor's block ends it. */
static size_t scope_cut_indent(const char *text, size_t len, size_t cursor, const char *cand,
                               size_t cand_len)
{
	size_t ls = ast_line_start(text, cursor);
	size_t le = ast_line_end(text, len, cursor);
	size_t min;
	if (text_is_blank(text, ls, cursor)) {
		min = text_indent_width(text, ls, cursor);
		/* A line that opens a block just above: the body is deeper. */
		size_t ps, pe;
		if (cursor == ls && prev_nonblank_line(text, ls, &ps, &pe)) {
			min = text_indent_width(text, ps, pe);
			if (last_char(text, ps, pe) == ':') min++;
		}
	} else {
		min = text_indent_width(text, ls, le);
		if (last_char(text, ls, cursor) == ':')
			min++; /* the candidate writes the body */
		else if (!text_is_blank(text, cursor, le))
			return cand_len; /* mid-line: a rest-of-line candidate */
	}
	/* Walk the candidate's lines. A line inside open brackets (or after a
	 * backslash) continues the previous one; otherwise it must not dedent
	 * below the block, nor indent deeper unless the line before opened a
	 * block with `:` (Python's "unexpected indent", which tree-sitter's
	 * grammar tolerates, so it is caught here). */
	size_t first_nl = 0;
	while (first_nl < cand_len && cand[first_nl] != '\n') first_nl++;
	size_t prev_indent = text_indent_width(text, ls, le);
	if (text_is_blank(text, ls, cursor)) prev_indent = text_indent_width(text, ls, cursor);
	char lc = last_char(cand, 0, first_nl);
	bool prev_opens = (lc ? lc : last_char(text, ls, cursor)) == ':';
	bool prev_cont = lc == '\\';
	long depth = 0;
	size_t scanned = 0;
	for (size_t i = first_nl; i < cand_len; i++) {
		if (cand[i] != '\n') continue;
		/* Bracket depth over the candidate up to this line. */
		while (scanned < i) {
			size_t j = skip_literal(cand, i, scanned, 0);
			if (j != scanned) {
				scanned = j;
				continue;
			}
			char ch = cand[scanned++];
			if (ch == '(' || ch == '[' || ch == '{')
				depth++;
			else if ((ch == ')' || ch == ']' || ch == '}') && depth > 0)
				depth--;
			else if (ch == '#')
				while (scanned < i && cand[scanned] != '\n') scanned++;
		}
		size_t s = i + 1, e = s;
		while (e < cand_len && cand[e] != '\n') e++;
		if (text_is_blank(cand, s, e) || depth > 0 || prev_cont) {
			prev_cont = !text_is_blank(cand, s, e) && last_char(cand, s, e) == '\\';
			continue;
		}
		size_t w = text_indent_width(cand, s, e);
		if (w < min || (w > prev_indent && !prev_opens)) {
			/* Keep through the last non-blank line before this one. */
			size_t k = i;
			while (k > 0 && strchr(" \t\r\n", cand[k - 1])) k--;
			return k;
		}
		prev_indent = w;
		prev_opens = last_char(cand, s, e) == ':';
		prev_cont = last_char(cand, s, e) == '\\';
	}
	return cand_len;
}

/* Steps over a string, char literal or comment starting at t[i]; returns the
 * index after it, or i when t[i] starts none. */
static size_t skip_literal(const char *t, size_t n, size_t i, int mode)
{
	char c = t[i];
	bool c_comments = mode & LIT_C_COMMENTS;
	if (c == '\'' && (mode & LIT_CHAR_QUOTE)) {
		size_t j = i + 1;
		if (j < n && t[j] == '\\') {
			for (j += 2; j < n && j < i + 12 && t[j] != '\''; j++)
				;
			return j < n && t[j] == '\'' ? j + 1 : i;
		}
		/* One character, possibly several UTF-8 bytes. */
		if (j < n) j++;
		while (j < n && ((unsigned char)t[j] & 0xC0) == 0x80) j++;
		return j < n && t[j] == '\'' ? j + 1 : i;
	}
	if (c == '"' || c == '\'' || c == '`') {
		for (size_t j = i + 1; j < n; j++) {
			if (t[j] == '\\') {
				j++;
				continue;
			}
			if (t[j] == c) return j + 1;
			if (t[j] == '\n' && c != '`') return j;
		}
		return n;
	}
	if (c_comments && c == '/' && i + 1 < n && t[i + 1] == '/') {
		while (i < n && t[i] != '\n') i++;
		return i;
	}
	if (c_comments && c == '/' && i + 1 < n && t[i + 1] == '*') {
		for (size_t j = i + 2; j + 1 < n; j++)
			if (t[j] == '*' && t[j + 1] == '/') return j + 2;
		return n;
	}
	return i;
}

/* Index of the first `}` in t[0..n) that closes a brace opened before t
 * once `allowed` such closers have been let through, or n. *unmatched_open
 * (optional) gets the `{` left open at the end. */
static size_t unmatched_brace(const char *t, size_t n, int mode, long allowed, long *unmatched_open)
{
	long depth = 0;
	for (size_t i = 0; i < n;) {
		size_t j = skip_literal(t, n, i, mode);
		if (j != i) {
			i = j;
			continue;
		}
		if (t[i] == '{') {
			depth++;
		} else if (t[i] == '}') {
			if (depth > 0)
				depth--;
			else if (allowed > 0)
				allowed--;
			else
				return i;
		}
		i++;
	}
	if (unmatched_open) *unmatched_open = depth;
	return n;
}

/* Unmatched `}` in t[0..n): how many scopes opened before t it closes. */
static long closers_count(const char *t, size_t n, int mode)
{
	long depth = 0, closes = 0;
	for (size_t i = 0; i < n;) {
		size_t j = skip_literal(t, n, i, mode);
		if (j != i) {
			i = j;
			continue;
		}
		if (t[i] == '{')
			depth++;
		else if (t[i] == '}' && --depth < 0) {
			closes++;
			depth = 0;
		}
		i++;
	}
	return closes;
}

size_t scope_cut(const struct ast_lang *lang, const char *text, size_t len, size_t cursor,
                 const char *cand, size_t cand_len)
{
	if (!lang) return cand_len;
	if (lang->blocks == AST_BLOCK_INDENT)
		return scope_cut_indent(text, len, cursor, cand, cand_len);
	if (lang->blocks != AST_BLOCK_BRACE) return cand_len;
	/* Braces the prefix leaves open that the suffix does not close are the
	 * candidate's to close (a literal opened on the cursor's line, a body at
	 * the end of the file); one more `}` leaves the enclosing scope. */
	int mode = LIT_C_COMMENTS;
	if (strcmp(lang->name, "javascript") && strcmp(lang->name, "typescript") &&
	    strcmp(lang->name, "typescriptreact"))
		mode |= LIT_CHAR_QUOTE;
	long open = 0;
	unmatched_brace(text, cursor, mode, LONG_MAX, &open);
	long allowed = open - closers_count(text + cursor, len - cursor, mode);
	size_t k = unmatched_brace(cand, cand_len, mode, allowed > 0 ? allowed : 0, NULL);
	if (k == cand_len) return cand_len;
	while (k > 0 && strchr(" \t\r\n", cand[k - 1])) k--;
	return k;
}

/* ---- closers the suffix supplies ---- */

static int closer_index(char c)
{
	switch (c) {
	case ')': return 0;
	case ']': return 1;
	case '}': return 2;
	case '"': return 3;
	case '\'': return 4;
	case '`': return 5;
	}
	return -1;
}

size_t closers_cut(const char *text, size_t len, size_t cursor, const char *cand, size_t cand_len)
{
	size_t le = ast_line_end(text, len, cursor);
	const char *rest = text + cursor;
	size_t rest_len = le - cursor;
	if (rest_len == 0 || cand_len == 0) return cand_len;
	/* How many of each closer the candidate leaves unmatched. */
	long open[6] = { 0 };
	for (size_t i = 0; i < cand_len; i++) {
		int ci = closer_index(cand[i]);
		if (cand[i] == '(')
			open[0]++;
		else if (cand[i] == '[')
			open[1]++;
		else if (cand[i] == '{')
			open[2]++;
		else if (ci >= 3)
			open[ci] ^= 1; /* quotes: odd count = one unmatched */
		else if (ci >= 0)
			open[ci]--;
	}
	size_t max = rest_len < cand_len ? rest_len : cand_len;
	for (size_t k = max; k > 0; k--) {
		if (memcmp(cand + cand_len - k, rest, k) != 0) continue;
		long need[6] = { 0 };
		bool ok = true;
		for (size_t i = 0; i < k && ok; i++) {
			int ci = closer_index(rest[i]);
			if (ci < 0) {
				ok = rest[i] == ';' || rest[i] == ',';
				continue;
			}
			need[ci]++;
		}
		for (int t = 0; t < 6 && ok; t++) {
			if (t < 3)
				ok = need[t] <= -open[t];
			else
				ok = need[t] == 0 || (need[t] == 1 && open[t] == 1);
		}
		if (ok) return cand_len - k;
	}
	return cand_len;
}
