/*
 * nextedit_internal.h - what the files of the next-edit finder share and
 * nobody else sees: the finder's state for one search and the helpers that
 * add a place. nextedit.c runs the search (the settled edit, rename,
 * signature, repeat, ranking and validation); nextedit_members.c finds what
 * an added enum variant or struct field implies, nextedit_calls.c what a
 * changed call implies for its definition, nextedit_imports.c the import
 * lines an edit left wanting, nextedit_files.c a rename in the files that
 * import the name.
 */
#ifndef INFILL_PIPELINE_NEXTEDIT_INTERNAL_H
#define INFILL_PIPELINE_NEXTEDIT_INTERNAL_H

#include "nextedit.h"

struct finder {
	const struct nextedit_params *p;
	const char *now; /* the document now (p->text) */
	size_t len;
	char *old; /* the document before the edit (owned) */
	size_t old_len;
	size_t a, b;   /* the edit's span now */
	const char *o; /* what stood there */
	size_t olen;
	struct ast_text tnow, told;
	struct ast_doc *dnow, *dold; /* NULL without a grammar */
	struct nextedit_edit *v;
	size_t n, cap;
	/* the function whose call's arguments the edit changed ("" when
	 * none): a change repeated is repeated in its calls only */
	char call_name[64];
	size_t call_start; /* that call's first byte (now) */
	size_t call_old_n; /* the arguments it passed before */
	size_t call_j;     /* the one added or removed */
	bool call_added;
	char call_arg[128]; /* the argument added ("" when longer) */
	/* a rename of a top-level name (nextedit_result.renamed_*) */
	char renamed_from[64], renamed_to[64];
};

/* An offset of the old text outside the edit, in the text now. */
size_t nextedit_to_now(const struct finder *f, size_t p);

/* Adds a place: [s, e) of the text now -> text[0..tlen) (copied), or a
 * place with no text when text is NULL. 0 or -ENOMEM. */
int nextedit_push(struct finder *f, enum nextedit_kind kind, size_t s, size_t e, const char *text,
                  size_t tlen);

/* The family of a language's imports: Python, JavaScript/TypeScript (with
 * JSX), C/C++ (#include), or none the finders know. */
enum nextedit_flavour { NE_FL_NONE, NE_FL_PY, NE_FL_JS, NE_FL_C };
enum nextedit_flavour nextedit_flavour_of(const struct ast_lang *lang);

/* Whether s[0..n) is all identifier bytes / an identifier. */
bool nextedit_all_ident(const char *s, size_t n);
bool nextedit_is_name(const char *s, size_t n);

/* Each kind's finder: 1 when the edit was of its kind (places pushed, or
 * none found), 0 when not, -ENOMEM. The definition kind pushes its place
 * and still answers 0: the other calls may want the change repeated. */
int nextedit_find_member(struct finder *f);
int nextedit_find_definition(struct finder *f);
int nextedit_find_import(struct finder *f);

/* After the repeat kind: the other calls of the function whose call the
 * edit changed, passing as many arguments as it did before, where no edit
 * was found in them: the argument removed (text ""), or the one added (the
 * same text, as the repeat kind would write it; no text when it is long).
 * 0 or -ENOMEM. */
int nextedit_find_call_sites(struct finder *f);

#endif
