/*
 * eval_nextedit.h - what the files of `infill eval --next-edit` share:
 * the kinds of case, a case and its expected places, and the plain text
 * scanning both case makers use. eval_nextedit.c makes the rename, repeat
 * and signature cases, scores and prints; eval_nextedit_kinds.c makes the
 * enum-member, call and import cases; eval_nextedit_model.c the
 * model-rewrite cases and writes their places with the model.
 */
#ifndef INFILL_CLI_EVAL_NEXTEDIT_H
#define INFILL_CLI_EVAL_NEXTEDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "ast.h"
#include "nextedit.h"

enum ekind {
	EK_RENAME,
	EK_REPEAT,
	EK_SIG_RENAME,
	EK_SIG_REMOVE,
	EK_SIG_ADD,
	EK_ENUM_MEMBER,
	EK_CALL_ADD,
	EK_CALL_REMOVE,
	EK_IMPORT_UNUSED,
	EK_FIELD_INIT,        /* eval_nextedit_files.c */
	EK_IMPORT_MISSING,    /* eval_nextedit_files.c */
	EK_RENAME_CROSS_FILE, /* eval_nextedit_files.c */
	EK_MODEL_REWRITE,     /* eval_nextedit_model.c: places the model writes */
	EK_COUNT
};
#define MAX_PLACES      128
#define MAX_CASES_MORE  64 /* cases of eval_nextedit_kinds.c per file */
#define MAX_CASES_MODEL 16 /* cases of eval_nextedit_model.c per file */
#define MAX_CASES_FILES 64 /* cases of eval_nextedit_files.c per file */

struct file;

struct place {
	size_t start, end; /* in the text after the first edit */
	char text[400];
	bool has_text;
};

struct ecase {
	enum ekind kind;
	char *now; /* the text after the first edit (owned) */
	size_t len;
	struct nextedit_track track;
	struct place exp[MAX_PLACES];
	size_t n_exp;
	/* import-missing: the project the finder is shown (evne_defined_in) */
	const struct file *self, *all;
	size_t n_all;
	/* rename-cross-file: the other file, whose places exp[] are (in its
	 * offsets) and whose edits are scored */
	const struct file *other;
};

struct item {
	size_t start, end; /* trimmed */
};

struct file {
	const char *path;
	const struct ast_lang *lang;
	const char *t;
	size_t n;
	bool *code;
	bool name_last;         /* C, C++, Java: a parameter's name is its last word */
	struct ast_outline *ol; /* its outline (owned; NULL: none): the cross-file kinds */
};

/* text scanning: what is code (code[i] false in strings and comments) */
bool evne_word_at(const char *t, size_t n, const bool *code, size_t i, const char *w, size_t wl);
bool evne_after_member(const char *t, size_t i);
size_t evne_skip_ws(const char *t, size_t n, size_t i);
size_t evne_word_end(const char *t, size_t n, size_t i);
/* Whether the word w (NUL-terminated) stands at i of f, in code. */
bool evne_starts_word(const struct file *f, size_t i, const char *w);
size_t evne_match_paren(const char *t, size_t n, const bool *code, size_t open);
size_t evne_split_items(const char *t, const bool *code, size_t open, size_t close,
                        struct item *out, size_t cap);
bool evne_is_keyword(const char *w, size_t l);
bool evne_call_at(const struct file *f, size_t i, const char *w, size_t wl, size_t *open,
                  size_t *close);
bool evne_param_name(const struct file *f, const struct item *p, size_t *s, size_t *e);

/* A case: the file with [s, e) replaced by r, its track; then its expected
 * places in the file's offsets before the change (text NULL: a place a
 * model would write). */
int evne_case_start(struct ecase *c, enum ekind k, const struct file *f, size_t s, size_t e,
                    const char *r);
void evne_expect(struct ecase *c, size_t s, size_t e, const char *text);

/* The cases of the kinds in eval_nextedit_kinds.c for file f, appended to
 * out[*n..cap). */
void evne_make_enum_members(const struct file *f, struct ecase *out, size_t *n, size_t cap);
void evne_make_calls(const struct file *f, const char *name, size_t ds, size_t de,
                     struct ecase *out, size_t *n, size_t cap);
void evne_make_imports(const struct file *f, struct ecase *out, size_t *n, size_t cap);
/* eval_nextedit_files.c: field-init for f; import-missing and
 * rename-cross-file with all[0..n_all) (f among them) as the project */
void evne_make_fields(const struct file *f, struct ecase *out, size_t *n, size_t cap);
void evne_make_cross(const struct file *f, const struct file *all, size_t n_all, struct ecase *out,
                     size_t *n, size_t cap);
/* nextedit_params.defined_in over a case's project (ud: the struct ecase) */
bool evne_defined_in(void *ud, const char *name, char *buf, size_t cap);

/* ---- the model-rewrite kind (eval_nextedit_model.c) ---- */

/* Its cases for the function name defined at [ds, de) of f. */
void evne_make_model_rewrites(const struct file *f, const char *name, size_t ds, size_t de,
                              struct ecase *out, size_t *n, size_t cap);
/* The model the places are written with: path (NULL: the embedded model),
 * format "fim" or "zeta" (NULL: fim). NULL when it cannot be opened (said
 * on stderr). */
struct evne_model;
struct evne_model *evne_model_open(const char *path, const char *format);
void evne_model_close(struct evne_model *em); /* accepts NULL */
/* The places of r found with no text (up to two, as the server asks),
 * given the model's text where it wrote one worth offering. */
void evne_model_write(struct evne_model *em, const struct file *f, const struct ecase *c,
                      struct nextedit_result *r);

#endif
