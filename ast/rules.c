/*
 * rules.c - what a grammar lets through and a language does not mean or
 * does not accept, one table row per rule (validate.c asks rules_broken()
 * of every candidate it parses).
 *
 * Three families:
 *   empty bodies   `if (x);`, `while (x);`, `for (...);`, `else ;` parse
 *                  and are almost never meant: accepted, they write a
 *                  silent bug (the body that follows runs unconditionally);
 *   keywords       a member named by a keyword (`r->if(r->flags)`: what
 *                  C's grammar makes of `\n\n    if (r->flags)` typed
 *                  after `if (r->`), which no compiler takes;
 *   lexical        tree-sitter grammars take any backslash in a string and
 *                  most digit runs as a number; the compiler does not:
 *                  Python refuses `"\unic"` (truncated \uXXXX escape), C a
 *                  `\x` with no hex digit, every language `0x` with none.
 * (A number row exists only where its grammar lets a broken literal through:
 * the JavaScript, Go, Rust and Java grammars already refuse `0x`, `1e` and
 * `0b` with no digit, Python's and C's take `1_` and `1e`, Python's `012`.)
 * Only what the candidate wrote is judged: the empty statement, the escape
 * or the literal must overlap the inserted bytes, so a document's own
 * `while (busy());` never silences a completion elsewhere.
 *
 * Neighbours: validate.c (calls it on each re-parsed tree), lang.c (the
 * languageIds the rows name). Tests: tests/ast/test_rules.c runs every row
 * on its own cases (refused, and a neighbour accepted) and fails for a row
 * without one.
 */
#include <string.h>

#include "internal.h"

enum rule_kind {
	RULE_EMPTY_BODY, /* node's body (field, or its last child) is an empty statement */
	RULE_ESCAPE,     /* a string node's escapes, by the dialect */
	RULE_NUMBER,     /* a numeric literal's digits, by the dialect */
	RULE_KEYWORD,    /* a name whose text is one of the reserved words */
};

enum rule_dialect {
	DIALECT_NONE,
	DIALECT_PYTHON, /* \x 2 hex, \u 4, \U 8, \N{name}; raw strings none, bytes \x
	                    * only; numbers separated, no leading zero in an integer */
	DIALECT_C,      /* \x at least 1 hex, \u 4, \U 8 */
	DIALECT_JS,     /* \x 2 hex, \u 4 or {hex} */
	DIALECT_JAVA,   /* \u 4 hex; no escape outside btnfrs"'\ and octal */
};

struct rule {
	const char *name;  /* ast_rule_name: "<what>" or "<language>-<what>" */
	const char *langs; /* canonical languageIds (lang.c), space-separated */
	enum rule_kind kind;
	const char *nodes; /* node types it looks at, space-separated */
	const char *field; /* RULE_EMPTY_BODY: the body's field; NULL: the last child */
	enum rule_dialect dialect;
	const char *words; /* RULE_KEYWORD: the reserved words, space-separated */
};

#define C_WORDS                                                                                  \
	"auto break case char const continue default do double else enum extern float for goto " \
	"if inline int long register restrict return short signed sizeof static struct switch "  \
	"typedef union unsigned void volatile while"
#define NAMES "identifier field_identifier type_identifier"

#define BRACES "c cpp java javascript typescript typescriptreact"
#define JSTS   "javascript typescript typescriptreact"

static const struct rule rules[] = {
	/* tree-sitter reads a keyword as a name where that alone parses:
	 * `if (r->` + `\n\n    if (r->flags)` is the call `r->if(r->flags)` */
	{ "c-keyword-as-name", "c", RULE_KEYWORD, NAMES, NULL, DIALECT_NONE, C_WORDS },
	{ "cpp-keyword-as-name", "cpp", RULE_KEYWORD, NAMES, NULL, DIALECT_NONE,
	  C_WORDS " catch class delete namespace new operator private protected public template "
	          "this throw try typename using virtual" },
	{ "java-keyword-as-name", "java", RULE_KEYWORD, "identifier type_identifier", NULL,
	  DIALECT_NONE,
	  "abstract assert boolean break byte case catch char class continue default do double "
	  "else enum extends final finally float for if implements import instanceof int "
	  "interface long native new package private protected public return short static "
	  "super switch synchronized this throw throws try void volatile while" },
	{ "empty-if-body", BRACES, RULE_EMPTY_BODY, "if_statement", "consequence", DIALECT_NONE,
	  NULL },
	{ "empty-else-body", "c cpp " JSTS, RULE_EMPTY_BODY, "else_clause", NULL, DIALECT_NONE,
	  NULL },
	{ "java-empty-else-body", "java", RULE_EMPTY_BODY, "if_statement", "alternative",
	  DIALECT_NONE, NULL },
	{ "empty-while-body", BRACES, RULE_EMPTY_BODY, "while_statement", "body", DIALECT_NONE,
	  NULL },
	{ "empty-for-body", BRACES, RULE_EMPTY_BODY, "for_statement", "body", DIALECT_NONE, NULL },
	{ "cpp-empty-range-for-body", "cpp", RULE_EMPTY_BODY, "for_range_loop", "body",
	  DIALECT_NONE, NULL },
	{ "js-empty-for-in-body", JSTS, RULE_EMPTY_BODY, "for_in_statement", "body", DIALECT_NONE,
	  NULL },
	{ "java-empty-for-each-body", "java", RULE_EMPTY_BODY, "enhanced_for_statement", "body",
	  DIALECT_NONE, NULL },
	{ "python-string-escape", "python", RULE_ESCAPE, "string", NULL, DIALECT_PYTHON, NULL },
	{ "c-string-escape", "c cpp", RULE_ESCAPE, "string_literal char_literal", NULL, DIALECT_C,
	  NULL },
	{ "js-string-escape", JSTS, RULE_ESCAPE, "string", NULL, DIALECT_JS, NULL },
	{ "java-string-escape", "java", RULE_ESCAPE, "string_literal character_literal", NULL,
	  DIALECT_JAVA, NULL },
	{ "python-number", "python", RULE_NUMBER, "integer float", NULL, DIALECT_PYTHON, NULL },
	{ "c-number", "c cpp", RULE_NUMBER, "number_literal", NULL, DIALECT_NONE, NULL },
};

#define N_RULES (sizeof rules / sizeof rules[0])

size_t ast_rule_count(void)
{
	return N_RULES;
}

const char *ast_rule_name(size_t i)
{
	return i < N_RULES ? rules[i].name : NULL;
}

const char *ast_rule_langs(size_t i)
{
	return i < N_RULES ? rules[i].langs : NULL;
}

/* Whether word is one of the space-separated words of list. */
static bool word_in(const char *word, const char *list)
{
	size_t n = strlen(word);
	for (const char *p = list; *p;) {
		while (*p == ' ') p++;
		size_t l = strcspn(p, " ");
		if (l == n && !memcmp(p, word, n)) return true;
		p += l;
	}
	return false;
}

/* ---- empty bodies ----------------------------------------------------------- */

/* `;` standing for a statement: JS's empty_statement, C's expression
 * statement with no expression, Java's bare `;`. */
static bool is_empty_statement(TSNode n)
{
	const char *t = ts_node_type(n);
	if (!strcmp(t, "empty_statement") || !strcmp(t, ";")) return true;
	return !strcmp(t, "expression_statement") && ts_node_named_child_count(n) == 0 &&
	       ts_node_child_count(n) == 1;
}

static bool empty_body(const struct rule *r, TSNode node, size_t s, size_t e)
{
	TSNode body;
	if (r->field) {
		body = ts_node_child_by_field_name(node, r->field, (uint32_t)strlen(r->field));
	} else {
		uint32_t n = ts_node_child_count(node);
		if (n < 2) return false;
		body = ts_node_child(node, n - 1);
	}
	if (ts_node_is_null(body) || ts_node_is_missing(body) || !is_empty_statement(body))
		return false;
	size_t bs = ts_node_start_byte(body), be = ts_node_end_byte(body);
	return bs >= s && be <= e && be > bs;
}

/* ---- escapes ---------------------------------------------------------------- */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Hex digits at [at, end), at most max. */
static size_t hex_run(const struct spliced *sp, size_t at, size_t end, size_t max)
{
	size_t n = 0;
	while (at + n < end && n < max && is_hex(spliced_byte(sp, at + n))) n++;
	return n;
}

/*
 * The escape whose backslash is at b, within the string's text [b, end):
 * how many bytes it spans (at least 2, or what is left), and whether the
 * language accepts it.
 */
static bool escape_ok(enum rule_dialect d, bool bytes, const struct spliced *sp, size_t b,
                      size_t end, size_t *span)
{
	*span = 2;
	if (b + 1 >= end) return true; /* a line continuation or the text ends */
	char c = spliced_byte(sp, b + 1);
	size_t need = 0, got = 0;
	switch (d) {
	case DIALECT_PYTHON:
		if (c == 'x') {
			need = 2;
		} else if (!bytes && c == 'u') {
			need = 4;
		} else if (!bytes && c == 'U') {
			need = 8;
		} else if (!bytes && c == 'N') {
			/* \N{NAME}: a brace, a name, a closing brace on this line */
			size_t i = b + 2;
			if (i >= end || spliced_byte(sp, i) != '{') return false;
			for (i++; i < end; i++) {
				char ch = spliced_byte(sp, i);
				if (ch == '}') {
					*span = i + 1 - b;
					return i > b + 3;
				}
				if (ch == '\n' || ch == '"' || ch == '\'' || ch == '\\') break;
			}
			*span = i - b;
			return false;
		}
		break;
	case DIALECT_C:
		if (c == 'x') {
			got = hex_run(sp, b + 2, end, SIZE_MAX);
			*span = 2 + got;
			return got > 0;
		}
		need = c == 'u' ? 4 : c == 'U' ? 8 : 0;
		break;
	case DIALECT_JS:
		if (c == 'x') {
			need = 2;
		} else if (c == 'u' && b + 2 < end && spliced_byte(sp, b + 2) == '{') {
			got = hex_run(sp, b + 3, end, SIZE_MAX);
			*span = 3 + got + 1;
			return got > 0 && b + 3 + got < end && spliced_byte(sp, b + 3 + got) == '}';
		} else if (c == 'u') {
			need = 4;
		}
		break;
	case DIALECT_JAVA: {
		if (c == 'u') { /* \uuuu0041 is \u0041 */
			size_t i = b + 1;
			while (i < end && spliced_byte(sp, i) == 'u') i++;
			got = hex_run(sp, i, end, 4);
			*span = i + got - b;
			return got == 4;
		}
		if (strchr("btnfrs\"'\\\n\r", c) || (c >= '0' && c <= '7')) return true;
		return false;
	}
	default: break;
	}
	if (!need) return true;
	got = hex_run(sp, b + 2, end, need);
	*span = 2 + got;
	return got == need;
}

/* The bytes of a string node that are its text (between its delimiters),
 * with interpolations left out: [from, to) pieces are scanned one by one. */
static bool bad_escape_in(enum rule_dialect d, bool bytes, const struct spliced *sp, size_t from,
                          size_t to, size_t s, size_t e)
{
	for (size_t i = from; i < to; i++) {
		if (spliced_byte(sp, i) != '\\') continue;
		size_t span;
		bool ok = escape_ok(d, bytes, sp, i, to, &span);
		if (!ok && i < e && i + span > s) return true;
		i += span - 1;
	}
	return false;
}

static bool bad_escape(const struct rule *r, TSNode str, const struct spliced *sp, size_t s,
                       size_t e)
{
	uint32_t n = ts_node_child_count(str);
	size_t ns = ts_node_start_byte(str), ne = ts_node_end_byte(str);
	bool bytes = false;
	size_t from = ns + 1, to = ne;
	if (n >= 2) {
		TSNode open = ts_node_child(str, 0), close = ts_node_child(str, n - 1);
		from = ts_node_end_byte(open);
		if (!ts_node_is_missing(close) &&
		    (!ts_node_is_named(close) || !strcmp(ts_node_type(close), "string_end")))
			to = ts_node_start_byte(close);
		/* Python: the prefix letters before the quote (r, b, f, u) */
		for (size_t i = ts_node_start_byte(open); r->dialect == DIALECT_PYTHON && i < from;
		     i++) {
			char c = spliced_byte(sp, i);
			if (c == 'r' || c == 'R') return false; /* raw: no escapes */
			if (c == 'b' || c == 'B') bytes = true;
		}
	} else if (ne > ns + 1) {
		to = ne - 1; /* a string that is one token: its quotes */
	}
	if (to <= from || to <= s || from >= e) return false;
	/* interpolations (f-strings, templates) are code, not text */
	size_t at = from;
	for (uint32_t i = 1; i + 1 < n; i++) {
		TSNode c = ts_node_child(str, i);
		if (strcmp(ts_node_type(c), "interpolation")) continue;
		if (bad_escape_in(r->dialect, bytes, sp, at, ts_node_start_byte(c), s, e))
			return true;
		at = ts_node_end_byte(c);
	}
	return bad_escape_in(r->dialect, bytes, sp, at, to, s, e);
}

/* ---- numbers ------------------------------------------------------------------ */

static bool digit_of(char c, int base)
{
	if (base == 16) return is_hex(c);
	return c >= '0' && c < '0' + (base < 10 ? base : 10);
}

/*
 * Whether a numeric literal has the digits its form promises: a base
 * prefix (0x, 0b, 0o) followed by a digit of that base, an exponent (e, or
 * p after hex digits) followed by a digit, and, where `_` separates digits,
 * no `_` that ends it. Python also refuses a decimal integer with a
 * leading zero (`012`: "leading zeros ... are not permitted"), though not
 * `00`, `0_0` or the float `012.5`.
 */
static bool number_ok(const struct rule *r, TSNode node, const struct spliced *sp, size_t from,
                      size_t to)
{
	char t[64];
	size_t n = to - from < sizeof t - 1 ? to - from : sizeof t - 1;
	for (size_t i = 0; i < n; i++) t[i] = spliced_byte(sp, from + i);
	t[n] = 0;
	size_t i = 0;
	int base = 10;
	if (t[0] == '0' && t[1] && strchr("xXbBoO", t[1])) {
		base = strchr("xX", t[1]) ? 16 : strchr("bB", t[1]) ? 2 : 8;
		i = 2;
		while (t[i] == '_' || t[i] == '\'') i++;
		if (!digit_of(t[i], base)) return false;
	}
	while (digit_of(t[i], base) || t[i] == '_' || t[i] == '\'' || t[i] == '.') i++;
	if (r->dialect == DIALECT_PYTHON && i > 0 && t[i - 1] == '_') return false;
	if (r->dialect == DIALECT_PYTHON && base == 10 && t[0] == '0' &&
	    !strcmp(ts_node_type(node), "integer") && strspn(t, "0_") < strspn(t, "0123456789_") &&
	    !t[strspn(t, "0123456789_")])
		return false;
	char exp = base == 16 ? 'p' : 'e';
	if (t[i] == exp || t[i] == exp - 32) {
		i++;
		if (t[i] == '+' || t[i] == '-') i++;
		if (!(t[i] >= '0' && t[i] <= '9')) return false;
	}
	return true;
}

/* ---- keywords as names ------------------------------------------------------- */

static bool keyword_name(const struct rule *r, TSNode node, const struct spliced *sp, size_t s,
                         size_t e)
{
	size_t ns = ts_node_start_byte(node), ne = ts_node_end_byte(node);
	char t[24];
	if (ne <= ns || ne - ns >= sizeof t || ns >= e || ne <= s) return false;
	/* only a member's name (after `.` or `->`): elsewhere a keyword read
	 * as a name is the grammar's recovery from a macro it does not know
	 * (`PR_BEGIN_EXTERN_C` before `typedef`), not the candidate's doing */
	TSNode prev = ts_node_prev_sibling(node);
	if (ts_node_is_null(prev)) return false;
	const char *pt = ts_node_type(prev);
	if (strcmp(pt, ".") && strcmp(pt, "->")) return false;
	for (size_t i = ns; i < ne; i++) t[i - ns] = spliced_byte(sp, i);
	t[ne - ns] = 0;
	return word_in(t, r->words);
}

/* ---- the walk ----------------------------------------------------------------- */

struct walk {
	const struct rule *rows[N_RULES];
	size_t n;
	const struct spliced *sp;
	size_t s, e;
};

static const char *check_node(const struct walk *w, TSNode node)
{
	const char *type = ts_node_type(node);
	for (size_t i = 0; i < w->n; i++) {
		const struct rule *r = w->rows[i];
		if (!word_in(type, r->nodes)) continue;
		bool broken = false;
		switch (r->kind) {
		case RULE_EMPTY_BODY: broken = empty_body(r, node, w->s, w->e); break;
		case RULE_ESCAPE: broken = bad_escape(r, node, w->sp, w->s, w->e); break;
		case RULE_KEYWORD: broken = keyword_name(r, node, w->sp, w->s, w->e); break;
		case RULE_NUMBER:
			broken = !number_ok(r, node, w->sp, ts_node_start_byte(node),
			                    ts_node_end_byte(node));
			break;
		}
		if (broken) return r->name;
	}
	return NULL;
}

/* Visits the nodes that overlap [s, e), outer first. */
static const char *walk_node(const struct walk *w, TSNode node, unsigned depth)
{
	const char *hit = check_node(w, node);
	if (hit || depth > 200) return hit;
	uint32_t n = ts_node_child_count(node);
	for (uint32_t i = 0; i < n; i++) {
		TSNode c = ts_node_child(node, i);
		size_t cs = ts_node_start_byte(c), ce = ts_node_end_byte(c);
		if (ce <= w->s) continue;
		if (cs >= w->e) break;
		if ((hit = walk_node(w, c, depth + 1))) return hit;
	}
	return NULL;
}

const char *rules_broken(const struct ast_lang *lang, TSNode root, const struct spliced *sp,
                         size_t s, size_t e)
{
	if (!lang || e <= s) return NULL;
	struct walk w = { .sp = sp, .s = s, .e = e };
	for (size_t i = 0; i < N_RULES; i++)
		if (word_in(lang->name, rules[i].langs)) w.rows[w.n++] = &rules[i];
	return w.n ? walk_node(&w, root, 0) : NULL;
}
