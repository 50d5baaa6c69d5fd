/*
 * nextedit.c - the places a settled edit implies, and the text for each
 * (nextedit.h states the rules; ast/refs.c answers the tree's questions).
 *
 * The finder works on two texts: the document now, and the document as it
 * was before the settled edit (now with the edit undone). A rename's other
 * uses and a signature's old parameters are read in the old text, where
 * the old name still stands everywhere; every place found there is mapped
 * to the text now, which it lies outside the edit in, so its bytes did not
 * move but by the edit's growth.
 */
#include "nextedit.h"
#include "nextedit_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRACK_MAX  (64u << 10)
#define MAX_EDITS  32
#define MAX_REFS   512
#define MAX_CALLS  256
#define MAX_REPEAT 64

static const char *const kind_names[NEXTEDIT_KIND_COUNT] = { "rename", "signature",  "repeat",
	                                                     "member", "definition", "import" };

const char *nextedit_kind_name(enum nextedit_kind k)
{
	return k < NEXTEDIT_KIND_COUNT ? kind_names[k] : "?";
}

uint64_t nextedit_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- 1. The settled edit ------------------------------------------------------ */

void nextedit_track_finish(struct nextedit_track *t)
{
	free(t->old);
	memset(t, 0, sizeof *t);
}

/*
 * A change that touches the tracked span (overlaps it or abuts it) widens
 * it: every byte of the union that the span did not cover lies inside the
 * change's own removed range (the change reaches the span), so the union's
 * old text is removed's head + the span's old text + removed's tail.
 */
int nextedit_track_change(struct nextedit_track *t, size_t start, size_t end, const char *removed,
                          size_t inserted)
{
	size_t rlen = end - start;
	if (!t->valid || end < t->start || start > t->end) {
		nextedit_track_finish(t);
		if (rlen > TRACK_MAX || inserted > TRACK_MAX) return 0;
		t->old = malloc(rlen + 1);
		if (!t->old) return -ENOMEM;
		memcpy(t->old, removed, rlen);
		t->old[rlen] = 0;
		t->old_len = rlen;
		t->start = start;
		t->end = start + inserted;
		t->valid = true;
		return 0;
	}
	size_t head = start < t->start ? t->start - start : 0;
	size_t tail = end > t->end ? end - t->end : 0;
	size_t nlen = head + t->old_len + tail;
	size_t ustart = start < t->start ? start : t->start;
	size_t uend = end > t->end ? end : t->end;
	size_t new_end = uend + inserted - rlen;
	if (nlen > TRACK_MAX || new_end - ustart > TRACK_MAX) {
		nextedit_track_finish(t);
		return 0;
	}
	char *o = malloc(nlen + 1);
	if (!o) {
		nextedit_track_finish(t);
		return -ENOMEM;
	}
	memcpy(o, removed, head);
	memcpy(o + head, t->old, t->old_len);
	memcpy(o + head + t->old_len, removed + (rlen - tail), tail);
	o[nlen] = 0;
	free(t->old);
	t->old = o;
	t->old_len = nlen;
	t->start = ustart;
	t->end = new_end;
	return 0;
}

/* ---- 2. The finder: shared state (nextedit_internal.h) ---------------------------- */

/* An offset of the old text outside the edit, in the text now. */
size_t nextedit_to_now(const struct finder *f, size_t p)
{
	return p < f->a ? p : p - f->olen + (f->b - f->a);
}

int nextedit_push(struct finder *f, enum nextedit_kind kind, size_t s, size_t e, const char *text,
                  size_t tlen)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct nextedit_edit *v = realloc(f->v, cap * sizeof *v);
		if (!v) return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	struct nextedit_edit *ed = &f->v[f->n];
	ed->kind = kind;
	ed->start = s;
	ed->end = e;
	ed->text = NULL;
	ed->text_len = 0;
	if (text) {
		ed->text = malloc(tlen + 1);
		if (!ed->text) return -ENOMEM;
		memcpy(ed->text, text, tlen);
		ed->text[tlen] = 0;
		ed->text_len = tlen;
	}
	f->n++;
	return 0;
}

bool nextedit_all_ident(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!ast_is_ident_byte((unsigned char)s[i])) return false;
	return true;
}

bool nextedit_is_name(const char *s, size_t n)
{
	return n > 0 && !(s[0] >= '0' && s[0] <= '9') && nextedit_all_ident(s, n);
}

enum nextedit_flavour nextedit_flavour_of(const struct ast_lang *lang)
{
	const char *n = ast_lang_name(lang);
	if (!strcmp(n, "python")) return NE_FL_PY;
	if (!strcmp(n, "javascript") || !strcmp(n, "typescript") || !strcmp(n, "typescriptreact") ||
	    !strcmp(n, "javascriptreact"))
		return NE_FL_JS;
	if (!strcmp(n, "c") || !strcmp(n, "cpp")) return NE_FL_C;
	return NE_FL_NONE;
}

/* ---- rename ---- */

/* Whether the tokens refs[0..n) of name ow (the old text) are a name the
 * file defines at its top level: a definition of that name no other
 * definition holds has one of them, and the scope there is the one the
 * edited token's is (the same tokens), not a function's own. */
static bool top_level_name(struct finder *f, const char *ow, size_t owlen,
                           const struct ast_span *refs, int n)
{
	if (owlen >= 64) return false;
	struct ast_outline ol;
	bool top = false;
	if (ast_outline(f->p->lang, f->old, f->old_len, f->dold, &ol)) {
		ast_outline_finish(&ol);
		return false;
	}
	for (size_t d = 0; d < ol.n_defs && !top; d++) {
		const struct ast_def *df = &ol.defs[d];
		if (strlen(df->name) != owlen || memcmp(df->name, ow, owlen)) continue;
		bool nested = false;
		for (size_t k = 0; k < ol.n_defs && !nested; k++)
			nested = k != d && ol.defs[k].start <= df->start &&
			         df->end <= ol.defs[k].end &&
			         !(ol.defs[k].start == df->start && ol.defs[k].end == df->end);
		if (nested) continue;
		for (int i = 0; i < n && !top; i++) {
			if (refs[i].start < df->start || refs[i].start >= df->end) continue;
			/* the same scope: as many tokens from there, the first and the
			 * last the same */
			struct ast_span *all = malloc(MAX_REFS * sizeof *all);
			if (!all) break;
			int m = ast_ident_refs(f->dold, f->old, f->old_len, refs[i].start, ow,
			                       owlen, all, MAX_REFS);
			top = m == n && all[0].start == refs[0].start &&
			      all[m - 1].start == refs[n - 1].start;
			free(all);
			break;
		}
	}
	ast_outline_finish(&ol);
	return top;
}

/* The edit turned identifier `old` into `new` when both it and the text it
 * replaced are parts of one word. 1 when it was a rename (places pushed or
 * none found), 0 when it was not one, or -ENOMEM. */
static int find_rename(struct finder *f)
{
	if (!f->dold || !nextedit_all_ident(f->o, f->olen) ||
	    !nextedit_all_ident(f->now + f->a, f->b - f->a))
		return 0;
	size_t ws = f->a, we = f->b;
	while (ws > 0 && ast_is_ident_byte((unsigned char)f->now[ws - 1])) ws--;
	while (we < f->len && ast_is_ident_byte((unsigned char)f->now[we])) we++;
	const char *nw = f->now + ws;
	size_t nwlen = we - ws;
	size_t owlen = nwlen - (f->b - f->a) + f->olen;
	const char *ow = f->old + ws;
	if (!nextedit_is_name(nw, nwlen) || !nextedit_is_name(ow, owlen) ||
	    (nwlen == owlen && !memcmp(nw, ow, nwlen)))
		return 0;
	struct ast_span *refs = malloc(MAX_REFS * sizeof *refs);
	if (!refs) return -ENOMEM;
	int n = ast_ident_refs(f->dold, f->old, f->old_len, ws, ow, owlen, refs, MAX_REFS);
	bool seen = false; /* the edited word is a token of the old name */
	for (int i = 0; i < n; i++) seen |= refs[i].start == ws;
	int rc = seen ? 1 : 0;
	if (seen && nwlen < sizeof f->renamed_to && top_level_name(f, ow, owlen, refs, n)) {
		memcpy(f->renamed_from, ow, owlen);
		f->renamed_from[owlen] = 0;
		memcpy(f->renamed_to, nw, nwlen);
		f->renamed_to[nwlen] = 0;
	}
	for (int i = 0; seen && i < n; i++) {
		if (refs[i].start == ws) continue;
		size_t s = nextedit_to_now(f, refs[i].start);
		if (nextedit_push(f, NEXTEDIT_RENAME, s, s + owlen, nw, nwlen)) {
			rc = -ENOMEM;
			break;
		}
	}
	free(refs);
	return rc;
}

/* ---- signature ---- */

static bool arg_name_is(const char *text, const struct ast_arg *g, const char *name, size_t nlen)
{
	return g->name_end - g->name_start == nlen && !memcmp(text + g->name_start, name, nlen);
}

static bool same_name(const char *ta, const struct ast_arg *a, const char *tb,
                      const struct ast_arg *b)
{
	return arg_name_is(tb, b, ta + a->name_start, a->name_end - a->name_start);
}

/* [start, end) that removes argument j of call c, with one comma. */
static void arg_removal(const struct ast_call *c, size_t j, size_t *s, size_t *e)
{
	if (j + 1 < c->n_args) {
		*s = c->args[j].start;
		*e = c->args[j + 1].start;
	} else if (j > 0) {
		*s = c->args[j - 1].end;
		*e = c->args[j].end;
	} else {
		*s = c->args[j].start;
		*e = c->args[j].end;
	}
}

/* 1 when the edit changed a parameter list (places pushed or none), 0 when
 * not, -ENOMEM. */
static int find_signature(struct finder *f)
{
	if (!f->dold) return 0;
	struct ast_params pn, po;
	if (!ast_params_at(f->dnow, f->now, f->len, f->a, &pn) ||
	    !ast_params_at(f->dold, f->old, f->old_len, f->a, &po) || strcmp(pn.name, po.name))
		return 0;
	size_t i = 0, nn = pn.n, no = po.n;
	while (i < nn && i < no && same_name(f->old, &po.params[i], f->now, &pn.params[i])) i++;
	enum { NONE, REMOVED, ADDED, RENAMED } what = NONE;
	if (nn + 1 == no) {
		what = REMOVED;
		for (size_t k = i; k < nn; k++)
			if (!same_name(f->old, &po.params[k + 1], f->now, &pn.params[k]))
				what = NONE;
	} else if (nn == no + 1) {
		what = ADDED;
		for (size_t k = i; k < no; k++)
			if (!same_name(f->old, &po.params[k], f->now, &pn.params[k + 1]))
				what = NONE;
		if (pn.params[i].has_default) what = NONE; /* callers need not pass it */
	} else if (nn == no && i < nn) {
		what = RENAMED;
		for (size_t k = i + 1; k < nn; k++)
			if (!same_name(f->old, &po.params[k], f->now, &pn.params[k])) what = NONE;
	}
	if (what == NONE) return i == nn && nn == no ? 0 : 1;
	/* a method's receiver is a parameter no call passes */
	const struct ast_arg *p0 = &po.params[0];
	bool receiver =
	        no > 0 && (arg_name_is(f->old, p0, "self", 4) || arg_name_is(f->old, p0, "cls", 3));
	const struct ast_arg *gone = what == ADDED ? NULL : &po.params[i];
	const char *gname = gone ? f->old + gone->name_start : NULL;
	size_t gnlen = gone ? gone->name_end - gone->name_start : 0;
	struct ast_call *calls = malloc(MAX_CALLS * sizeof *calls);
	if (!calls) return -ENOMEM;
	int nc = ast_calls_of(f->dnow, f->now, f->len, pn.name, strlen(pn.name), calls, MAX_CALLS);
	int rc = 1;
	for (int c = 0; c < nc && rc == 1; c++) {
		const struct ast_call *call = &calls[c];
		if (call->start < f->b && f->a < call->end) continue;
		if (call->start >= pn.list_start && call->end <= pn.list_end) continue;
		/* a keyword argument names the parameter wherever it stands */
		size_t kw = call->n_args;
		for (size_t k = 0; gone && k < call->n_args; k++)
			if (arg_name_is(f->now, &call->args[k], gname, gnlen)) kw = k;
		size_t j = i;
		if (receiver && call->method) {
			if (i == 0) continue;
			j = i - 1;
		}
		/* a call passing another number of arguments than the definition
		 * had is another function of the name, or relies on defaults or
		 * varargs: where its arguments go is a guess, so it is left alone */
		size_t want = no - (receiver && call->method ? 1 : 0);
		bool counted = call->n_args == want && call->n_args < AST_CALL_ARGS;
		if (what == RENAMED) {
			if (kw == call->n_args) continue;
			const struct ast_arg *g = &call->args[kw];
			const struct ast_arg *np = &pn.params[i];
			if (nextedit_push(f, NEXTEDIT_SIGNATURE, g->name_start, g->name_end,
			                  f->now + np->name_start, np->name_end - np->name_start))
				rc = -ENOMEM;
		} else if (what == REMOVED) {
			if (kw == call->n_args) {
				if (!counted || j >= call->n_args ||
				    call->args[j].name_end > call->args[j].name_start)
					continue;
				kw = j;
			}
			size_t s, e;
			arg_removal(call, kw, &s, &e);
			if (nextedit_push(f, NEXTEDIT_SIGNATURE, s, e, "", 0)) rc = -ENOMEM;
		} else { /* ADDED: the argument is the model's to write */
			if (!counted) continue;
			size_t at = j < call->n_args ? call->args[j].start
			            : call->n_args   ? call->args[call->n_args - 1].end
			                             : call->args_start + 1;
			if (nextedit_push(f, NEXTEDIT_SIGNATURE, at, at, NULL, 0)) rc = -ENOMEM;
		}
	}
	free(calls);
	return rc;
}

/* ---- repeat ---- */

static bool has_ident(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ast_is_ident_byte((unsigned char)s[i]) && !(s[i] >= '0' && s[i] <= '9'))
			return true;
	return false;
}

/* The token before `at` on its line (spaces skipped, then an identifier
 * run or one other character): its start, or `at` when none. */
static size_t token_before(const char *t, size_t ls, size_t at)
{
	size_t x = at;
	while (x > ls && (t[x - 1] == ' ' || t[x - 1] == '\t')) x--;
	if (x == ls) return at;
	if (ast_is_ident_byte((unsigned char)t[x - 1])) {
		while (x > ls && ast_is_ident_byte((unsigned char)t[x - 1])) x--;
		return x;
	}
	return x - 1;
}

static size_t token_after(const char *t, size_t le, size_t at)
{
	size_t x = at;
	while (x < le && (t[x] == ' ' || t[x] == '\t')) x++;
	if (x == le) return at;
	if (ast_is_ident_byte((unsigned char)t[x])) {
		while (x < le && ast_is_ident_byte((unsigned char)t[x])) x++;
		return x;
	}
	return x + 1;
}

static size_t line_end(const char *t, size_t len, size_t at)
{
	while (at < len && t[at] != '\n' && t[at] != '\r') at++;
	return at;
}

/* The fragment before (B, in the old text) and after (A, now) that stands
 * for the change: the changed bytes widened to whole words where the change
 * cuts into one, then by a neighbouring token until it holds a name, so
 * that it is looked for where it means the same. */
static int find_repeat(struct finder *f)
{
	if (memchr(f->o, '\n', f->olen) || memchr(f->now + f->a, '\n', f->b - f->a)) return 0;
	size_t ls = ast_line_start(f->now, f->a), le = line_end(f->now, f->len, f->b);
	size_t x0 = f->a, x1 = f->b; /* in the text now */
	unsigned char first = f->olen ? (unsigned char)f->o[0] : (unsigned char)f->now[f->a];
	unsigned char last = f->b > f->a ? (unsigned char)f->now[f->b - 1]
	                     : f->olen   ? (unsigned char)f->o[f->olen - 1]
	                                 : 0;
	if (ast_is_ident_byte(first))
		while (x0 > ls && ast_is_ident_byte((unsigned char)f->now[x0 - 1])) x0--;
	if (ast_is_ident_byte(last))
		while (x1 < le && ast_is_ident_byte((unsigned char)f->now[x1])) x1++;
	/* widen until B holds a name: insertions leftwards first (the anchor an
	 * insertion follows: `f(` for an argument put first), replacements
	 * rightwards first (`== None`), then the other way */
	bool left_first = f->olen == 0;
	for (int step = 0; step < 6; step++) {
		size_t blen = (f->a - x0) + f->olen + (x1 - f->b);
		if (blen >= 512) return 0;
		if (has_ident(f->now + x0, f->a - x0) || has_ident(f->o, f->olen) ||
		    has_ident(f->now + f->b, x1 - f->b))
			break;
		size_t l = token_before(f->now, ls, x0), r = token_after(f->now, le, x1);
		bool left = left_first ? l != x0 : r == x1;
		if (left && l != x0)
			x0 = l;
		else if (r != x1)
			x1 = r;
		else if (l != x0)
			x0 = l;
		else
			return 0;
	}
	size_t blen = (f->a - x0) + f->olen + (x1 - f->b);
	size_t alen = x1 - x0;
	char *B = malloc(blen + 1);
	if (!B) return -ENOMEM;
	memcpy(B, f->now + x0, f->a - x0);
	memcpy(B + (f->a - x0), f->o, f->olen);
	memcpy(B + (f->a - x0) + f->olen, f->now + f->b, x1 - f->b);
	const char *A = f->now + x0;
	if (!has_ident(B, blen) || blen == 0) {
		free(B);
		return 0;
	}
	/* the bytes that differ, inside B and A */
	size_t pre = 0, suf = 0;
	while (pre < blen && pre < alen && B[pre] == A[pre]) pre++;
	while (suf < blen - pre && suf < alen - pre && B[blen - 1 - suf] == A[alen - 1 - suf])
		suf++;
	bool wl = ast_is_ident_byte((unsigned char)B[0]);
	bool wr = ast_is_ident_byte((unsigned char)B[blen - 1]);
	size_t found = 0;
	int rc = 0;
	struct ast_params pl;
	bool site_in_params = f->dnow && ast_params_at(f->dnow, f->now, f->len, f->a, &pl);
	for (size_t pos = 0; pos + blen <= f->len && found < MAX_REPEAT && rc == 0; pos++) {
		if (f->now[pos] != B[0] || memcmp(f->now + pos, B, blen)) continue;
		if (pos >= ls && pos <= le) continue; /* the edited line */
		if (wl && pos > 0 && ast_is_ident_byte((unsigned char)f->now[pos - 1])) continue;
		if (wr && pos + blen < f->len &&
		    ast_is_ident_byte((unsigned char)f->now[pos + blen]))
			continue;
		if (memchr(f->now + pos, '\n', blen)) continue;
		/* a change made in calls is not one for a definition's parameters
		 * (nor the other way round) */
		if (f->dnow &&
		    ast_params_at(f->dnow, f->now, f->len, pos + pre, &pl) != site_in_params)
			continue;
		/* a call's arguments changed: the other calls of that function
		 * only (in a C macro's body the tree sees no call: not there) */
		if (f->call_name[0] && f->dnow) {
			struct ast_call c;
			char nm[64];
			if (!ast_call_at(f->dnow, f->now, f->len, pos + pre, &c, nm, sizeof nm) ||
			    strcmp(nm, f->call_name))
				continue;
		}
		/* already changed: A stands here, B being its head or its tail */
		if (alen > blen && pre == blen && pos + alen <= f->len &&
		    !memcmp(f->now + pos, A, alen))
			continue;
		if (alen > blen && suf == blen && pos >= alen - blen &&
		    !memcmp(f->now + pos - (alen - blen), A, alen))
			continue;
		rc = nextedit_push(f, NEXTEDIT_REPEAT, pos + pre, pos + blen - suf, A + pre,
		                   alen - pre - suf);
		found++;
		pos += blen - 1;
	}
	free(B);
	return rc;
}

/* ---- ranking, overlap, validation ---- */

/* Whether a ranks before b: by kind, then the places after the edit
 * (nearest first), then those before it from the top. */
static bool ranks_before(const struct nextedit_edit *a, const struct nextedit_edit *b,
                         size_t anchor)
{
	/* the kinds read from the tree before the textual guess of a repeat,
	 * which yields where they meet */
	static const unsigned char order[NEXTEDIT_KIND_COUNT] = {
		[NEXTEDIT_RENAME] = 0,     [NEXTEDIT_SIGNATURE] = 1, [NEXTEDIT_MEMBER] = 2,
		[NEXTEDIT_DEFINITION] = 3, [NEXTEDIT_IMPORT] = 4,    [NEXTEDIT_REPEAT] = 5,
	};
	if (a->kind != b->kind) return order[a->kind] < order[b->kind];
	bool aa = a->start >= anchor, ba = b->start >= anchor;
	if (aa != ba) return aa;
	return a->start < b->start;
}

/* An insertion sort: a few dozen edits, and qsort has no context. */
static void rank(struct nextedit_edit *v, size_t n, size_t anchor)
{
	for (size_t i = 1; i < n; i++) {
		struct nextedit_edit x = v[i];
		size_t j = i;
		while (j > 0 && ranks_before(&x, &v[j - 1], anchor)) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

static void edit_free(struct nextedit_edit *e)
{
	free(e->text);
	e->text = NULL;
}

/* Whether e overlaps the settled edit or one of kept[0..k). */
static bool clashes(const struct finder *f, const struct nextedit_edit *e,
                    const struct nextedit_edit *kept, size_t k)
{
	bool clash = e->start < f->b && f->a < e->end && !(e->start == e->end && e->start == f->b);
	for (size_t j = 0; j < k && !clash; j++) {
		const struct nextedit_edit *g = &kept[j];
		clash = (e->start < g->end && g->start < e->end) ||
		        (e->start == g->start && e->end == g->end);
	}
	return clash;
}

void nextedit_result_finish(struct nextedit_result *r)
{
	for (size_t i = 0; i < r->n; i++) edit_free(&r->edits[i]);
	free(r->edits);
	memset(r, 0, sizeof *r);
}

int nextedit_find(const struct nextedit_params *p, struct nextedit_result *out)
{
	memset(out, 0, sizeof *out);
	const struct nextedit_track *t = p->edit;
	if (!t || !t->valid) return 0;
	if (t->start > t->end || t->end > p->len) return -EINVAL;
	struct finder f = { .p = p,
		            .now = p->text,
		            .len = p->len,
		            .a = t->start,
		            .b = t->end,
		            .o = t->old ? t->old : "",
		            .olen = t->old_len };
	if (f.olen == f.b - f.a && !memcmp(f.o, f.now + f.a, f.olen)) return 0;
	f.old_len = f.len - (f.b - f.a) + f.olen;
	f.old = malloc(f.old_len + 1);
	if (!f.old) return -ENOMEM;
	memcpy(f.old, f.now, f.a);
	memcpy(f.old + f.a, f.o, f.olen);
	memcpy(f.old + f.a + f.olen, f.now + f.b, f.len - f.b);
	f.old[f.old_len] = 0;
	int rc = 0;
	if (p->lang) {
		f.tnow = (struct ast_text){ f.now, f.len };
		f.told = (struct ast_text){ f.old, f.old_len };
		f.dnow = ast_doc_new(p->lang, ast_text_read, &f.tnow);
		f.dold = ast_doc_new(p->lang, ast_text_read, &f.told);
		if (!f.dnow || !f.dold) rc = -ENOMEM;
		if (!rc && (ast_doc_parse(f.dnow) || ast_doc_parse(f.dold))) {
			ast_doc_delete(f.dnow);
			ast_doc_delete(f.dold);
			f.dnow = f.dold = NULL; /* no tree: the text-only kinds */
		}
	}
	/* each kind in turn until one says the edit was its kind; an edit of
	 * none may be one to repeat */
	int (*const kinds[])(struct finder *) = { find_rename, find_signature, nextedit_find_member,
		                                  nextedit_find_definition };
	int hit = 0;
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && !rc && hit == 0; k++) {
		int r = kinds[k](&f);
		if (r < 0) rc = -ENOMEM;
		hit = r > 0;
		/* a rename of a parameter is also a signature change */
		if (k == 0 && r > 0 && (r = find_signature(&f)) < 0) rc = -ENOMEM;
	}
	if (!rc && nextedit_find_import(&f)) rc = -ENOMEM;
	if (!rc && !hit) rc = find_repeat(&f);
	if (!rc) rc = nextedit_find_call_sites(&f);

	rank(f.v, f.n, f.b);
	size_t max = p->max_edits ? p->max_edits : MAX_EDITS;
	/* in rank order, until the deadline: an edit that overlaps one kept
	 * before it goes, the others are validated (one that breaks the syntax
	 * goes, and does not hold its place against those after it) */
	size_t k = 0;
	for (size_t i = 0; i < f.n; i++) {
		struct nextedit_edit *e = &f.v[i];
		bool keep = k < max && !rc && !clashes(&f, e, f.v, k);
		if (keep && e->text) {
			if (p->deadline_ns && nextedit_now_ns() > p->deadline_ns) {
				out->cut = true;
				keep = false;
			} else {
				bool ok = f.dnow == NULL;
				if (f.dnow && ast_replace_check(f.dnow, f.now, f.len, e->start,
				                                e->end, e->text, e->text_len, &ok))
					ok = false;
				if (!ok) out->dropped_invalid++;
				keep = ok;
			}
		}
		if (keep)
			f.v[k++] = *e;
		else
			edit_free(e);
	}
	f.n = k;
	ast_doc_delete(f.dnow);
	ast_doc_delete(f.dold);
	free(f.old);
	if (rc) {
		for (size_t i = 0; i < f.n; i++) edit_free(&f.v[i]);
		free(f.v);
		return rc;
	}
	out->edits = f.v;
	out->n = f.n;
	memcpy(out->renamed_from, f.renamed_from, sizeof out->renamed_from);
	memcpy(out->renamed_to, f.renamed_to, sizeof out->renamed_to);
	return 0;
}
