/*
 * validate.c - may this candidate be shown? Inserting it must not add syntax
 * errors to the document as it is.
 *
 * A document being typed is usually broken already, so the verdict compares
 * error nodes (ERROR and MISSING) with and without the candidate, sorted by
 * where they sit relative to the insertion:
 *   local     touches the inserted text and starts on the cursor's line or
 *             later, or sits earlier on the cursor's line and survives the
 *             insertion: the candidate's fault (or a break it failed to mend);
 *   other     everything else, including a large error region that began on
 *             an earlier line and swallows the cursor (not the candidate's
 *             doing).
 *   owned     an error that starts in the lines the cursor's line heads:
 *             itself and the run of deeper-indented lines after it, with the
 *             line that ends the run (`}`, `except:`). Where `if (x) {` or
 *             `try:` was cut out, that block is orphaned; a candidate that
 *             does not open it again leaves the file broken: counted local.
 * A candidate passes when it has no local error and no more other errors than
 * the document had (local + other) before, and, on a line that heads such a
 * block, the brackets of those lines never close more than they opened.
 * Where the cursor's line has text, the file with that text deleted sets a
 * further bound (near_limit): a line left unfinished must not leave the line
 * after it, or the rest of the file, more broken than no line at all would.
 * Where those lines are broken, a candidate that only starts a comment is
 * refused: it mends nothing and hides the unfinished line.
 * Beside the errors, two checks of what the candidate itself wrote: the
 * line's own text after the cursor must not fall into a comment the
 * candidate opened (`flags) { //` before `) {` mends the line by hiding
 * it), and the language's rules (rules.c: empty bodies, keywords read as
 * names, escapes and numbers the grammar lets through) must hold.
 * Each check copies the document's tree, ts_tree_edit()s the insertion into
 * the copy and re-parses incrementally, so its cost follows the edit, not
 * the file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *ast_verdict_name(enum ast_verdict v)
{
	switch (v) {
	case AST_VERDICT_VALID: return "valid";
	case AST_VERDICT_TRIMMED: return "trimmed";
	case AST_VERDICT_INVALID: return "invalid";
	case AST_VERDICT_UNCHECKED: return "unchecked";
	}
	return "?";
}

char spliced_byte(const struct spliced *s, size_t b)
{
	if (b < s->at) return s->text[b];
	if (b < s->at + s->k) return s->cand[b - s->at];
	b = b - s->k + s->del;
	return b < s->len ? s->text[b] : 0;
}

static const char *spliced_read(void *payload, uint32_t byte, TSPoint pos, uint32_t *n)
{
	(void)pos;
	const struct spliced *s = payload;
	size_t b = byte;
	const char *p = "";
	size_t l = 0;
	if (b < s->at) {
		p = s->text + b;
		l = s->at - b;
	} else if (b < s->at + s->k) {
		p = s->cand + (b - s->at);
		l = s->at + s->k - b;
	} else if (b - s->k + s->del < s->len) {
		p = s->text + (b - s->k + s->del);
		l = s->len - (b - s->k + s->del);
	}
	*n = (uint32_t)(l > UINT32_MAX ? UINT32_MAX : l);
	return p;
}

struct error_counts {
	size_t local, other;
};

/* An insertion occupying [s, e) (e == s for the document as it is), and
 * the error counts classify() sorts into. */
struct classify_ctx {
	size_t s, e, line_start, content_end, owned_end;
	struct error_counts c;
};

static void classify_one(TSNode n, void *ctx)
{
	struct classify_ctx *x = ctx;
	bool missing = ts_node_is_missing(n);
	size_t ns = ts_node_start_byte(n), ne = ts_node_end_byte(n);
	bool touches;
	if (x->e == x->s || missing)
		touches = ns <= x->e && ne >= x->s;
	else
		touches = ns < x->e && ne > x->s;
	/* Something missing where the file stops (an unclosed function at the
	 * end of a file being written) was missing before the candidate too. */
	if (missing && ns >= x->content_end) touches = false;
	/* An error earlier on the cursor's line that the insertion leaves
	 * standing (`if ` followed by text the parser cannot attach to it)
	 * means the candidate did not finish the line it was asked to finish. */
	bool unmended = !missing && x->e > x->s && ns >= x->line_start && ne <= x->s;
	bool owned =
	        ns >= x->line_start && ns <= x->owned_end && !(missing && ns >= x->content_end);
	if ((touches && ns >= x->line_start) || unmended || owned)
		x->c.local++;
	else
		x->c.other++;
}

/* Sorts the error nodes of a tree into local / other for an insertion
 * occupying [s, e) (e == s for the document as it is). */
static struct error_counts classify(TSNode root, size_t s, size_t e, size_t line_start,
                                    size_t content_end, size_t owned_end)
{
	struct classify_ctx x = { s, e, line_start, content_end, owned_end, { 0, 0 } };
	tree_each_error(root, classify_one, &x);
	return x.c;
}

static size_t indent_of(const char *t, size_t len, size_t ls)
{
	size_t i = ls;
	while (i < len && (t[i] == ' ' || t[i] == '\t')) i++;
	return i - ls;
}

/* End of the lines the cursor's line heads: its own end or, when non-blank
 * lines indented deeper than it follow (blank lines among them), the end of
 * that run, and of the line after it if that sits at the cursor line's own
 * indentation (the run's closing bracket, `except`, `else`). */
static size_t owned_end(const char *t, size_t len, size_t line_start, size_t cursor)
{
	size_t ind = indent_of(t, cursor, line_start); /* up to the cursor on a blank line */
	size_t end = ast_line_end(t, len, cursor), at = end;
	while (at < len) {
		size_t ls = at + 1, le = ast_line_end(t, len, ls);
		size_t i = indent_of(t, le, ls);
		if (ls + i == le || t[ls + i] == '\r') { /* blank */
			at = le;
			continue;
		}
		if (i > ind) {
			end = at = le;
			continue;
		}
		if (i == ind && end > ast_line_end(t, len, cursor)) end = le;
		break;
	}
	return end;
}

struct balance {
	long bal;
	bool leading;
};

static bool balance_one(TSNode leaf, void *ctx)
{
	struct balance *x = ctx;
	int b = tree_bracket(leaf, NULL);
	if (b < 0 && x->leading) return true;
	x->leading = false;
	x->bal += b;
	return x->bal >= 0;
}

/*
 * Whether the bracket tokens among the leaves in [s, e) never close more
 * than they opened, closers before the first other token aside (`} else {`
 * closes what came before the region). Tokens, not bytes: brackets in
 * strings and comments do not count, nor those the parser made up.
 */
static bool brackets_hold(TSNode root, size_t s, size_t e)
{
	struct balance x = { 0, true };
	tree_each_leaf(root, s, e, balance_one, &x);
	return x.bal >= 0;
}

struct checker {
	const struct ast_lang *lang;
	TSParser *parser; /* the document's (borrowed) or owned_parser */
	TSParser *owned_parser;
	const TSTree *old; /* the document's tree (borrowed or owned_old) */
	TSTree *owned_old;
	const char *text;
	size_t len, cursor, line_start;
	size_t tail_start; /* end of the document's last non-blank byte */
	size_t owned_end;  /* end of the lines the cursor's line heads (see classify) */
	bool heads_block;  /* deeper-indented lines follow the cursor's line */
	TSPoint at;        /* the cursor as a tree-sitter point */
	struct error_counts before;
	size_t near_end;    /* end of the next line with text after the cursor's */
	size_t near_from;   /* errors from here to line_start count as near if */
	size_t near_reach;  /* they reach this far (the end of the line above) */
	size_t near_hole;   /* near errors the document has */
	size_t near_limit;  /* near errors allowed once a candidate is in */
	size_t total_limit; /* and in the whole file */
	size_t rest;        /* first byte with text after the cursor on its line;
	                     * SIZE_MAX: none */
	unsigned parses;
};

/* The document's tree re-parsed with [at, at + del) replaced by cand[0..k);
 * `at` and the deleted bytes lie on the cursor's line. Caller owns it. */
static int parse_spliced(struct checker *ck, size_t at, size_t del, const char *cand, size_t k,
                         TSTree **out)
{
	TSTree *t = ts_tree_copy(ck->old);
	if (!t) return AST_ENOMEM;
	TSPoint start = { ck->at.row, (uint32_t)(at - ck->line_start) };
	TSPoint old_end = { start.row, start.column + (uint32_t)del }, end = start;
	for (size_t i = 0; i < k; i++) {
		if (cand[i] == '\n') {
			end.row++;
			end.column = 0;
		} else {
			end.column++;
		}
	}
	TSInputEdit ed = {
		.start_byte = (uint32_t)at,
		.old_end_byte = (uint32_t)(at + del),
		.new_end_byte = (uint32_t)(at + k),
		.start_point = start,
		.old_end_point = old_end,
		.new_end_point = end,
	};
	ts_tree_edit(t, &ed);
	struct spliced sp = { ck->text, ck->len, at, del, cand, k };
	TSInput in = { .payload = &sp, .read = spliced_read, .encoding = TSInputEncodingUTF8 };
	*out = ts_parser_parse(ck->parser, t, in);
	ts_tree_delete(t);
	ck->parses++;
	if (!*out) {
		ts_parser_reset(ck->parser);
		return AST_EPARSE;
	}
	return 0;
}

struct count_ctx {
	size_t s, e, end_min, end_max, content_end, n;
};

static void count_one_in(TSNode nd, void *ctx)
{
	struct count_ctx *x = ctx;
	size_t ns = ts_node_start_byte(nd), ne = ts_node_end_byte(nd);
	if (ns >= x->s && ns <= x->e && ne >= x->end_min && ne <= x->end_max &&
	    !(ts_node_is_missing(nd) && ns >= x->content_end))
		x->n++;
}

/* Error nodes that start in [s, e] and end in [end_min, end_max], less those
 * missing where the text ends. */
static size_t count_in(TSNode root, size_t s, size_t e, size_t end_min, size_t end_max,
                       size_t content_end)
{
	struct count_ctx x = { s, e, end_min, end_max, content_end, 0 };
	tree_each_error(root, count_one_in, &x);
	return x.n;
}

static size_t count_near(TSNode root, size_t s, size_t e, size_t content_end)
{
	return count_in(root, s, e, 0, SIZE_MAX, content_end);
}

/* Errors near the cursor's line in a tree where k bytes went in at the
 * cursor: from the line to the next line with text, and those that start
 * above it and reach the end of the line above (see near_limit). */
static size_t near_errors(const struct checker *ck, TSNode root, size_t k, size_t content_end)
{
	size_t n = count_near(root, ck->line_start, ck->near_end + k, content_end);
	if (ck->near_from < ck->line_start)
		n += count_in(root, ck->near_from, ck->line_start - 1, ck->near_reach, SIZE_MAX,
		              content_end);
	return n;
}

struct comment_ctx {
	size_t from;
	bool only;
};

static bool comment_one(TSNode leaf, void *ctx)
{
	struct comment_ctx *x = ctx;
	x->only = strstr(ts_node_type(leaf), "comment") && ts_node_start_byte(leaf) >= x->from;
	return x->only;
}

/* Whether the tokens in [s, e) are comments that begin there: a comment
 * the candidate starts, not one the line already had. */
static bool new_comment_only(TSNode root, size_t s, size_t e)
{
	struct comment_ctx x = { s, false };
	tree_each_leaf(root, s, e, comment_one, &x);
	return x.only;
}

/* Whether the text after the cursor on its line, at rest_at in a tree where
 * the candidate [s, e) went in, lies in a comment that the candidate began:
 * `if (r->` completed with `flags) { //` turns the line's own `) {` into
 * a comment, which mends the line by hiding it. */
static bool rest_commented(TSNode root, size_t rest_at, size_t s, size_t e)
{
	TSNode n =
	        ts_node_descendant_for_byte_range(root, (uint32_t)rest_at, (uint32_t)rest_at + 1);
	for (int up = 0; !ts_node_is_null(n) && up < 4; up++, n = ts_node_parent(n)) {
		size_t ns = ts_node_start_byte(n);
		if (strstr(ts_node_type(n), "comment") && ns >= s && ns < e) return true;
	}
	return false;
}

/* Whether cand[0..k) inserted at the cursor passes; *after gets its errors,
 * *rule (may be NULL) the language rule it broke, or NULL. */
static int check_prefix(struct checker *ck, const char *cand, size_t k, bool *ok, size_t *after,
                        const char **rule)
{
	TSTree *nt;
	int rc = parse_spliced(ck, ck->cursor, 0, cand, k, &nt);
	if (rc) return rc;
	/* Where the spliced text's last non-blank byte ends. */
	size_t content_end;
	if (ck->tail_start > ck->cursor) {
		content_end = ck->tail_start + k;
	} else {
		size_t ce = k;
		while (ce > 0 && strchr(" \t\r\n", cand[ce - 1])) ce--;
		content_end = ce > 0 ? ck->cursor + ce : ck->tail_start;
	}
	TSNode root = ts_tree_root_node(nt);
	struct error_counts c = classify(root, ck->cursor, ck->cursor + k, ck->line_start,
	                                 content_end, ck->owned_end + k);
	/* A line heading a block whose opener was cut (`if (x) {`, a call's
	 * first line) leaves the block's closer orphaned; tree-sitter's
	 * recovery may report that far from here or blame nothing, so the
	 * brackets of the lines it heads decide. */
	bool balanced = !ck->heads_block || brackets_hold(root, ck->line_start, ck->owned_end + k);
	size_t near = near_errors(ck, root, k, content_end);
	size_t total = count_near(root, 0, SIZE_MAX, content_end);
	/* the line's own text after the cursor must stay code */
	bool rest_hidden = ck->rest != SIZE_MAX &&
	                   rest_commented(root, ck->rest + k, ck->cursor, ck->cursor + k);
	struct spliced sp = { ck->text, ck->len, ck->cursor, 0, cand, k };
	const char *broken = rules_broken(ck->lang, root, &sp, ck->cursor, ck->cursor + k);
	if (rule) *rule = broken;
	/* A comment mends nothing: where the lines around the cursor are
	 * broken, it only hides that the line is unfinished (`} = // x`). */
	bool hides = ck->near_hole > 0 && new_comment_only(root, ck->cursor, ck->cursor + k);
	ts_tree_delete(nt);
	*after = c.local + c.other;
	*ok = balanced && !hides && !rest_hidden && !broken && c.local == 0 &&
	      c.other <= ck->before.local + ck->before.other && near <= ck->near_limit &&
	      total <= ck->total_limit;
	return 0;
}

/* The end of the next line with text after the one holding pos, or of
 * pos's own line when none follows. */
static size_t next_ast_line_end(const char *t, size_t len, size_t pos)
{
	size_t le = ast_line_end(t, len, pos);
	for (size_t at = le; at < len;) {
		size_t ls = at + 1, e = ast_line_end(t, len, ls);
		if (!text_is_blank(t, ls, e)) return e;
		at = e;
	}
	return le;
}

/* What the file has with the text of the cursor's line, [cs, ce), deleted:
 * errors from the line to the next line with text, and in all. */
static int bare_counts(struct checker *ck, size_t cs, size_t ce, struct doc_bare *out)
{
	TSTree *bare;
	int rc = parse_spliced(ck, cs, ce - cs, "", 0, &bare);
	if (rc) return rc;
	size_t del = ce - cs, tail = ck->tail_start > ce ? ck->tail_start - del : cs;
	while (tail > 0 && tail <= cs && strchr(" \t\r\n", ck->text[tail - 1])) tail--;
	TSNode root = ts_tree_root_node(bare);
	*out = (struct doc_bare){ true, ck->line_start,
		                  count_near(root, ck->line_start, ck->near_end - del, tail),
		                  count_near(root, 0, SIZE_MAX, tail) };
	ts_tree_delete(bare);
	return 0;
}

/*
 * How many errors may start between the cursor's line and the next line
 * with text once a candidate is in, and in the whole file. A line cut short
 * breaks the line after it (`...o` before `npm: x,` in an object) or the
 * rest of the file (a docstring left open): the document as it is has that
 * error too, so "no more errors than before" lets a candidate leave it.
 *   - The file with the line's text deleted has only the errors that are
 *     not the line's doing: no more of those may stay.
 *   - On a blank line, an error just after it or one that reaches the end
 *     of the line with text above it is most likely where the missing
 *     entry, `} = x` or a ternary's `: y` goes: there must be one fewer,
 *     there and in the whole file (not the same break, moved).
 *     (After a line with text it may as well be the next line's own, which
 *     no completion of this one mends: the line above a line being edited
 *     would go silent.)
 *   - A line copied from elsewhere in the file may break what follows it as
 *     much as it does there: the grammar does not know the project's macros.
 */
static int near_limit(struct checker *ck, const struct ast_validate_params *p)
{
	const char *t = ck->text;
	size_t le = ast_line_end(t, ck->len, ck->cursor);
	size_t cs = ck->line_start;
	while (cs < le && strchr(" \t\r", t[cs])) cs++;
	size_t ce = le;
	while (ce > cs && t[ce - 1] == '\r') ce--;
	ck->near_end = next_ast_line_end(t, ck->len, ck->cursor);
	ck->near_from = ck->line_start;
	size_t tail = ck->tail_start > ck->cursor ? ck->tail_start : ck->cursor;
	TSNode root = ts_tree_root_node(ck->old);
	/* a blank line: an error that reaches the end of the line above is near */
	for (size_t ls = ck->line_start; cs == ce && ls > 0;) {
		size_t ps = ast_line_start(t, ls - 1), pe = ls - 1;
		while (pe > ps && strchr(" \t\r", t[pe - 1])) pe--;
		if (pe > ps) {
			ck->near_from = ps;
			ck->near_reach = pe;
			break;
		}
		ls = ps;
	}
	ck->near_hole = near_errors(ck, root, 0, tail);
	if (cs == ce) { /* the document as it is, one fewer near and in all */
		bool hole = ck->near_hole > 0;
		ck->near_limit = ck->near_hole - hole;
		ck->total_limit = count_near(root, 0, SIZE_MAX, tail) - hole;
		return 0;
	}
	/* (only errors that lie around the copy's source: not a break far
	 * above it whose recovery happens to start there) */
	size_t copy_errors = 0;
	if (p->copied && p->copy_at < ck->len) {
		size_t ce2 = next_ast_line_end(t, ck->len, p->copy_at);
		copy_errors = count_in(root, ast_line_start(t, p->copy_at), ce2, 0, ce2, tail);
	}
	/* the same for every candidate at this line: kept with the document */
	struct doc_bare *memo =
	        p->doc && ast_doc_tree(p->doc) == ck->old ? ast_doc_bare(p->doc) : NULL;
	struct doc_bare b;
	if (memo && memo->valid && memo->line_start == ck->line_start) {
		b = *memo;
	} else {
		int rc = bare_counts(ck, cs, ce, &b);
		if (rc) return rc;
		if (memo) *memo = b;
	}
	ck->near_limit = copy_errors + b.near;
	ck->total_limit = copy_errors + b.total;
	return 0;
}

static void checker_finish(struct checker *ck)
{
	ts_tree_delete(ck->owned_old);
	ts_parser_delete(ck->owned_parser);
}

static int checker_init(struct checker *ck, const struct ast_validate_params *p)
{
	memset(ck, 0, sizeof *ck);
	ck->lang = p->lang;
	ck->text = p->text;
	ck->len = p->len;
	ck->cursor = p->cursor;
	ck->line_start = ast_line_start(p->text, p->cursor);
	if (p->doc && ast_doc_lang(p->doc) == p->lang) {
		ck->old = ast_doc_tree(p->doc);
		ck->parser = ast_doc_parser(p->doc);
	}
	if (!ck->parser) {
		ck->parser = ck->owned_parser = lang_parser_new(p->lang);
		if (!ck->parser) return AST_ENOMEM;
	}
	if (!ck->old) {
		ck->owned_old = ts_parser_parse_string(ck->parser, NULL, p->text, (uint32_t)p->len);
		ck->parses++;
		if (!ck->owned_old) {
			checker_finish(ck);
			return AST_EPARSE;
		}
		ck->old = ck->owned_old;
	}
	uint32_t row = 0;
	for (size_t i = 0; i < ck->line_start; i++) row += p->text[i] == '\n';
	ck->at = (TSPoint){ row, (uint32_t)(p->cursor - ck->line_start) };
	ck->tail_start = p->len;
	while (ck->tail_start > 0 && strchr(" \t\r\n", p->text[ck->tail_start - 1]))
		ck->tail_start--;
	ck->owned_end = owned_end(p->text, p->len, ck->line_start, p->cursor);
	ck->heads_block = ck->owned_end > ast_line_end(p->text, p->len, p->cursor);
	ck->rest = SIZE_MAX;
	for (size_t i = p->cursor, le = ast_line_end(p->text, p->len, p->cursor); i < le; i++)
		if (!strchr(" \t\r", p->text[i])) {
			ck->rest = i;
			break;
		}
	ck->before =
	        classify(ts_tree_root_node(ck->old), p->cursor, p->cursor, ck->line_start,
	                 ck->tail_start > p->cursor ? ck->tail_start : p->cursor, ck->owned_end);
	int rc = near_limit(ck, p);
	if (rc) checker_finish(ck);
	return rc;
}

/* Cut points for trimming, longest first: before each newline, and for
 * brace languages after each `;` or `}` that ends a statement. */
static size_t cut_points(const struct ast_lang *lang, const char *cand, size_t k, size_t *out,
                         size_t cap)
{
	size_t n = 0;
	bool brace = lang->blocks == AST_BLOCK_BRACE;
	for (size_t i = k; i-- > 0 && n < cap;) {
		size_t cut = 0;
		if (cand[i] == '\n')
			cut = i;
		else if (brace && (cand[i] == ';' || cand[i] == '}') &&
		         (i + 1 == k || strchr(" \t\r\n", cand[i + 1])))
			cut = i + 1;
		if (cut == 0 || cut >= k) continue;
		while (cut > 0 && strchr(" \t\r", cand[cut - 1])) cut--;
		if (text_is_blank(cand, 0, cut)) continue;
		if (n > 0 && out[n - 1] == cut) continue;
		out[n++] = cut;
	}
	return n;
}

enum { MAX_TRIES = 24 };

/* Whether an error node that began before the cursor's line encloses the
 * cursor in the document's tree: a break far above (an unclosed bracket)
 * whose recovery swallows the cursor's region, so that the whole-file parse
 * cannot tell a good candidate from a bad one. */
static bool cursor_swallowed(const struct checker *ck)
{
	TSNode root = ts_tree_root_node(ck->old);
	if (!ts_node_has_error(root)) return false;
	TSNode n =
	        ts_node_descendant_for_byte_range(root, (uint32_t)ck->cursor, (uint32_t)ck->cursor);
	for (; !ts_node_is_null(n); n = ts_node_parent(n))
		if (ts_node_is_error(n) && ts_node_start_byte(n) < ck->line_start) return true;
	return false;
}

/* A region around the cursor that stands on its own: from the last line at
 * or before the cursor's line that starts at column 0 with text (a top-level
 * definition or statement), to the next such line after it (a lone closing
 * brace at column 0 belongs to the region). False when that is the file. */
static bool isolate_window(const char *t, size_t len, size_t cursor, size_t *ws, size_t *we)
{
	size_t ls = ast_line_start(t, cursor);
	size_t s = ls;
	for (;;) {
		if (s < len && !strchr(" \t\r\n", t[s])) break;
		if (s == 0) return false;
		s = ast_line_start(t, s - 1);
	}
	size_t e = ast_line_end(t, len, cursor);
	while (e < len) {
		size_t n = e + 1;
		if (n < len && !strchr(" \t\r\n}", t[n])) break;
		e = ast_line_end(t, len, n);
	}
	if (e < len) e++; /* the newline */
	*ws = s;
	*we = e;
	return s > 0 || e < len;
}

/* Validates cand[0..k) with a checker of the text: the whole candidate,
 * then its cut points, longest first. Fills verdict, keep_len and errors. */
static int validate_text(struct checker *ck, const struct ast_lang *lang, const char *cand,
                         size_t k, bool scope_cut, struct ast_validation *out)
{
	out->errors_before = ck->before.local + ck->before.other;
	bool ok = false;
	size_t after = 0;
	int rc = check_prefix(ck, cand, k, &ok, &after, &out->rule);
	if (!rc && ok) {
		out->verdict = scope_cut ? AST_VERDICT_TRIMMED : AST_VERDICT_VALID;
		out->keep_len = k;
		out->errors_after = after;
		return 0;
	}
	size_t cuts[MAX_TRIES];
	size_t n = rc ? 0 : cut_points(lang, cand, k, cuts, MAX_TRIES);
	for (size_t i = 0; i < n; i++) {
		rc = check_prefix(ck, cand, cuts[i], &ok, &after, NULL);
		if (rc) break;
		if (ok) {
			out->verdict = AST_VERDICT_TRIMMED;
			out->keep_len = cuts[i];
			out->errors_after = after;
			return 0;
		}
	}
	out->verdict = AST_VERDICT_INVALID;
	out->keep_len = 0;
	out->errors_after = after;
	return rc;
}

int ast_validate(const struct ast_validate_params *p, struct ast_validation *out)
{
	memset(out, 0, sizeof *out);
	out->verdict = AST_VERDICT_INVALID;
	if (!p || !p->text || p->cursor > p->len || (!p->candidate && p->candidate_len))
		return AST_EINVAL;
	const char *cand = p->candidate ? p->candidate : "";
	/* Closers first: a `}` the suffix supplies is not a scope exit. */
	size_t k = closers_cut(p->text, p->len, p->cursor, cand, p->candidate_len);
	out->closers_dropped = k < p->candidate_len;
	size_t k2 = scope_cut(p->lang, p->text, p->len, p->cursor, cand, k);
	out->scope_cut = k2 < k;
	k = k2;
	out->keep_len = k;
	if (text_is_blank(cand, 0, k)) {
		out->keep_len = 0;
		return 0;
	}
	if (!p->lang) {
		out->verdict = AST_VERDICT_UNCHECKED;
		return 0;
	}
	struct checker ck;
	int rc = checker_init(&ck, p);
	if (rc) return rc;
	rc = validate_text(&ck, p->lang, cand, k, out->scope_cut, out);
	/* A candidate that heals the break swallowing the cursor (the `#endif`
	 * an `#ifndef` lacked) is judged by the file it mends. */
	bool heals = out->verdict != AST_VERDICT_INVALID && out->errors_after < out->errors_before;
	/* (errors_before/after then describe the window, parses both.) */
	size_t ws, we;
	if (rc || !cursor_swallowed(&ck) || heals ||
	    !isolate_window(p->text, p->len, p->cursor, &ws, &we))
		goto done;
	/* The file's own break hides the cursor's region, and its recovery
	 * can hide a bad candidate as well as condemn a good one: judge the
	 * candidate inside the top-level construct around the cursor instead. */
	struct ast_validate_params wp = *p;
	wp.text = p->text + ws;
	wp.len = we - ws;
	wp.cursor = p->cursor - ws;
	wp.doc = NULL;
	struct checker wck;
	rc = checker_init(&wck, &wp);
	if (rc) {
		out->verdict = AST_VERDICT_INVALID;
		out->keep_len = 0;
		goto done;
	}
	rc = validate_text(&wck, p->lang, cand, k, out->scope_cut, out);
	ck.parses += wck.parses;
	checker_finish(&wck);
	if (rc || out->verdict == AST_VERDICT_INVALID || out->errors_before == 0) goto done;
	/* Where the construct is broken as well (the cursor's line may be
	 * where it closes), it cannot vouch for the candidate alone: the file
	 * must not get worse either. */
	bool ok;
	size_t after;
	rc = check_prefix(&ck, cand, out->keep_len, &ok, &after, NULL);
	if (!rc && after > ck.before.local + ck.before.other) {
		out->verdict = AST_VERDICT_INVALID;
		out->keep_len = 0;
	}
done:
	out->parses += ck.parses;
	checker_finish(&ck);
	return rc;
}
