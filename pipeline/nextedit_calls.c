/*
 * nextedit_calls.c - what a changed call implies for its definition
 * (nextedit.h, kind "definition"): an argument added at one call site -> a
 * parameter at its place in the definition's list; an argument removed ->
 * the parameter at its place removed. The other direction (a definition
 * changed -> its calls) is nextedit.c's signature kind; the tree's answers
 * come from ast/refs.c.
 *
 * The text is computed where it is mechanical: a removed parameter, and an
 * added one where the argument is a plain name in a language whose
 * parameters need no type (Python, JavaScript: `f(a, b)` -> `def f(a, b)`).
 * A C, Go or Rust parameter needs its type, a literal argument a name: the
 * place is found with no text. The function's other calls that passed as
 * many arguments want the same change: where the repeat kind did not write
 * it, the argument removed is removed there too, and the one added is
 * added with the same text (the repeat kind's guess, made where its
 * textual match missed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nextedit_internal.h"

#define MAX_SITES 256 /* calls of one function looked at */

static bool arg_same(const char *ta, const struct ast_arg *a, const char *tb,
                     const struct ast_arg *b)
{
	return a->end - a->start == b->end - b->start &&
	       !memcmp(ta + a->start, tb + b->start, a->end - a->start);
}

static bool typeless_params(const struct ast_lang *lang)
{
	const char *n = ast_lang_name(lang);
	return !strcmp(n, "python") || !strcmp(n, "javascript");
}

/* [s, e) that removes parameter j of list p, with one comma. */
static void param_removal(const struct ast_params *p, size_t j, size_t *s, size_t *e)
{
	if (j + 1 < p->n) {
		*s = p->params[j].start;
		*e = p->params[j + 1].start;
	} else if (j > 0) {
		*s = p->params[j - 1].end;
		*e = p->params[j].end;
	} else {
		*s = p->params[j].start;
		*e = p->params[j].end;
	}
}

int nextedit_find_definition(struct finder *f)
{
	if (!f->dold || !f->dnow) return 0;
	struct ast_call *c = malloc(2 * sizeof *c);
	struct ast_params *def = malloc(sizeof *def);
	if (!c || !def) {
		free(c);
		free(def);
		return -ENOMEM;
	}
	struct ast_call *cn = &c[0], *co = &c[1];
	char name[64], oname[64];
	int rc = 0;
	/* the same call before and after (it starts before the edit, so at the
	 * same byte), one argument more or fewer */
	if (!ast_call_at(f->dnow, f->now, f->len, f->a, cn, name, sizeof name) ||
	    cn->start >= f->a ||
	    !ast_call_at(f->dold, f->old, f->old_len, f->a, co, oname, sizeof oname) ||
	    co->start != cn->start || strcmp(name, oname) || cn->n_args >= AST_CALL_ARGS ||
	    co->n_args >= AST_CALL_ARGS ||
	    (cn->n_args != co->n_args + 1 && cn->n_args + 1 != co->n_args))
		goto out;
	bool added = cn->n_args > co->n_args;
	const struct ast_call *more = added ? cn : co, *less = added ? co : cn;
	const char *tmore = added ? f->now : f->old, *tless = added ? f->old : f->now;
	size_t j = 0;
	while (j < less->n_args && arg_same(tmore, &more->args[j], tless, &less->args[j])) j++;
	for (size_t k = j; k < less->n_args; k++)
		if (!arg_same(tmore, &more->args[k + 1], tless, &less->args[k])) goto out;
	/* a call changed: its other calls may want the same change (the repeat
	 * kind, which still runs: this one never claims the edit) */
	memcpy(f->call_name, name, sizeof f->call_name);
	f->call_start = cn->start;
	f->call_old_n = co->n_args;
	f->call_j = j;
	f->call_added = added;
	f->call_arg[0] = 0;
	if (added && cn->args[j].end - cn->args[j].start < sizeof f->call_arg) {
		size_t l = cn->args[j].end - cn->args[j].start;
		memcpy(f->call_arg, f->now + cn->args[j].start, l);
		f->call_arg[l] = 0;
	}
	if (!ast_def_params(f->dnow, f->now, f->len, name, def)) goto out;
	/* the definition must not be inside the edit, nor hold the call */
	if (def->list_start < f->b && f->a < def->list_end) goto out;
	size_t skip = 0; /* a method's receiver, which the call does not pass */
	if (def->n > 0 && cn->method) {
		const struct ast_arg *p0 = &def->params[0];
		size_t l = p0->name_end - p0->name_start;
		if ((l == 4 && !memcmp(f->now + p0->name_start, "self", 4)) ||
		    (l == 3 && !memcmp(f->now + p0->name_start, "cls", 3)))
			skip = 1;
	}
	/* the definition took what the call passed before: its arguments map
	 * one to one on its parameters (no defaults, no varargs in between) */
	if (def->n != co->n_args + skip || def->n >= AST_CALL_ARGS) goto out;
	for (size_t k = 0; k < def->n; k++) {
		const struct ast_arg *p = &def->params[k];
		char c0 = f->now[p->start];
		if (p->has_default || c0 == '*' || c0 == '.' || c0 == '&' ||
		    memchr(f->now + p->start, '=', p->end - p->start)) /* JS `b = 1` */
			goto out;
	}
	size_t pj = j + skip;
	if (!added) {
		size_t s, e;
		param_removal(def, pj, &s, &e);
		rc = nextedit_push(f, NEXTEDIT_DEFINITION, s, e, "", 0);
		goto out;
	}
	const struct ast_arg *ga = &cn->args[j];
	size_t at, sep; /* where, and whether ", " goes before (1) or after (2) */
	if (pj < def->n) {
		at = def->params[pj].start;
		sep = 2;
	} else if (def->n) {
		at = def->params[def->n - 1].end;
		sep = 1;
	} else {
		at = def->list_start + 1;
		sep = 0;
	}
	const char *arg = f->now + ga->start;
	size_t alen = ga->end - ga->start;
	if (ga->name_end > ga->name_start) { /* a keyword argument names it */
		arg = f->now + ga->name_start;
		alen = ga->name_end - ga->name_start;
	}
	if (!typeless_params(f->p->lang) || !nextedit_is_name(arg, alen) || alen > 64) {
		rc = nextedit_push(f, NEXTEDIT_DEFINITION, at, at, NULL, 0);
		goto out;
	}
	/* the same name as another parameter would be a syntax error's twin */
	for (size_t k = 0; k < def->n; k++)
		if (def->params[k].name_end - def->params[k].name_start == alen &&
		    !memcmp(f->now + def->params[k].name_start, arg, alen))
			goto out;
	char text[72];
	size_t tl = 0;
	if (sep == 1) text[tl++] = ',', text[tl++] = ' ';
	memcpy(text + tl, arg, alen);
	tl += alen;
	if (sep == 2) text[tl++] = ',', text[tl++] = ' ';
	rc = nextedit_push(f, NEXTEDIT_DEFINITION, at, at, text, tl);
out:
	free(c);
	free(def);
	return rc;
}

int nextedit_find_call_sites(struct finder *f)
{
	if (!f->call_name[0] || !f->dnow) return 0;
	struct ast_call *calls = malloc(MAX_SITES * sizeof *calls);
	if (!calls) return -ENOMEM;
	int nc = ast_calls_of(f->dnow, f->now, f->len, f->call_name, strlen(f->call_name), calls,
	                      MAX_SITES);
	size_t found = f->n; /* the edits before these */
	int rc = 0;
	for (int i = 0; i < nc && !rc; i++) {
		const struct ast_call *c = &calls[i];
		if (c->start == f->call_start || c->n_args != f->call_old_n ||
		    c->n_args >= AST_CALL_ARGS || f->call_j > c->n_args)
			continue;
		bool has = false; /* the repeat found this call's edit */
		for (size_t k = 0; k < found && !has; k++)
			has = f->v[k].start >= c->args_start && f->v[k].end <= c->args_end;
		if (has) continue;
		size_t j = f->call_j;
		if (!f->call_added) {
			if (j >= c->n_args) continue;
			size_t s, e;
			if (j + 1 < c->n_args)
				s = c->args[j].start, e = c->args[j + 1].start;
			else if (j > 0)
				s = c->args[j - 1].end, e = c->args[j].end;
			else
				s = c->args[j].start, e = c->args[j].end;
			rc = nextedit_push(f, NEXTEDIT_DEFINITION, s, e, "", 0);
		} else {
			size_t at = j < c->n_args ? c->args[j].start
			            : c->n_args   ? c->args[c->n_args - 1].end
			                          : c->args_start + 1;
			char text[sizeof f->call_arg + 4];
			int tl = !f->call_arg[0] ? -1
			         : j < c->n_args ? snprintf(text, sizeof text, "%s, ", f->call_arg)
			         : c->n_args     ? snprintf(text, sizeof text, ", %s", f->call_arg)
			                         : snprintf(text, sizeof text, "%s", f->call_arg);
			rc = nextedit_push(f, NEXTEDIT_DEFINITION, at, at, tl > 0 ? text : NULL,
			                   tl > 0 ? (size_t)tl : 0);
		}
	}
	free(calls);
	return rc;
}
