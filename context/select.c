/*
 * select.c - what of the rest of the project goes into one prompt (see
 * ctx_select in context.h): definitions of the names near the cursor from
 * the files the current one imports (and distinctive names from anywhere
 * in the index), the chunks of other open documents most like the text
 * around the cursor, and the recent ring; each within one token budget,
 * in order of trust, and each with the reason it was chosen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "context_internal.h"

#define MAX_NAMES            48
#define MAX_IMPORTED         16
#define MAX_READ             8            /* imported files looked into */
#define MAX_RELATED          3            /* and files related by their imports ... */
#define MAX_RELATED_POOL     12           /* ... the most alike of this many */
#define MAX_DOC_BYTES        (512u << 10) /* larger documents are not looked into */
#define MAX_LINES_BYTES      (1u << 20)   /* ctx_chunks.lines */
#define CHUNK_LINES          16           /* similar chunks: windows of lines ... */
#define CHUNK_STRIDE         8            /* ... this far apart */
#define MIN_JACCARD          0.10         /* a chunk less alike is not worth its tokens */
#define MAX_SIMILAR          3
#define MAX_RECENT           4
#define MAX_PARSE_BYTES      (256u << 10) /* the current file parsed whole up to this */
#define MAX_HEAD_BYTES       (32u << 10)  /* else its head (imports) */
#define MAX_OPEN_PARSED      4            /* open documents outlined */
#define MAX_OPEN_PARSE_BYTES (64u << 10)  /* when this short */

const char *ctx_source_name(enum ctx_source s)
{
	switch (s) {
	case CTX_SOURCE_DEFINITION: return "definition";
	case CTX_SOURCE_SIMILAR: return "similar";
	case CTX_SOURCE_RECENT: return "recent";
	case CTX_SOURCE_COUNT: break;
	}
	return "?";
}

void ctx_chunks_finish(struct ctx_chunks *c)
{
	if (!c) return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].path);
		free(c->v[i].text);
	}
	free(c->v);
	free(c->lines);
	memset(c, 0, sizeof *c);
}

static int chunk_push(struct ctx_chunks *c, enum ctx_source src, const char *path, const char *text,
                      size_t len, double score, const char *why)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct ctx_chunk *v = realloc(c->v, cap * sizeof *v);
		if (!v) return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	struct ctx_chunk ch = { .source = src, .len = len, .score = score };
	ch.path = strdup(path ? path : "");
	ch.text = strndup(text, len);
	if (!ch.path || !ch.text) {
		free(ch.path);
		free(ch.text);
		return -ENOMEM;
	}
	snprintf(ch.why, sizeof ch.why, "%s", why);
	c->v[c->n++] = ch;
	return 0;
}

/* The path as shown: relative to the root when under it. */
static const char *shown_path(const struct ctx_query *q, const char *path)
{
	if (!q->index || !path) return path;
	const char *root = ctx_index_root(q->index);
	size_t rl = strlen(root);
	if (!strncmp(path, root, rl) && path[rl] == '/') return path + rl + 1;
	return path;
}

/* ---- identifier sets (Jaccard) ---- */

struct idset {
	uint32_t *v; /* hashes, sorted, unique */
	size_t n, cap;
};

static bool is_id_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_id(char c)
{
	return is_id_start(c) || (c >= '0' && c <= '9');
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* The identifiers (2 bytes or more) of text[s, e) into *set. */
static int idset_build(struct idset *set, const char *text, size_t s, size_t e)
{
	set->n = 0;
	for (size_t i = s; i < e;) {
		if (!is_id_start(text[i]) || (i > s && is_id(text[i - 1]))) {
			i++;
			continue;
		}
		size_t j = i;
		uint32_t h = 2166136261u;
		while (j < e && is_id(text[j])) h = (h ^ (uint8_t)text[j++]) * 16777619u;
		if (j - i >= 2) {
			if (set->n == set->cap) {
				size_t cap = set->cap ? set->cap * 2 : 64;
				uint32_t *v = realloc(set->v, cap * sizeof *v);
				if (!v) return -ENOMEM;
				set->v = v;
				set->cap = cap;
			}
			set->v[set->n++] = h;
		}
		i = j;
	}
	if (!set->n) return 0;
	qsort(set->v, set->n, sizeof *set->v, cmp_u32);
	size_t w = 1;
	for (size_t i = 1; i < set->n; i++)
		if (set->v[i] != set->v[w - 1]) set->v[w++] = set->v[i];
	set->n = w;
	return 0;
}

static double jaccard(const struct idset *a, const struct idset *b)
{
	size_t i = 0, j = 0, both = 0;
	while (i < a->n && j < b->n) {
		if (a->v[i] == b->v[j])
			both++, i++, j++;
		else if (a->v[i] < b->v[j])
			i++;
		else
			j++;
	}
	size_t uni = a->n + b->n - both;
	return uni ? (double)both / (double)uni : 0;
}

static size_t line_back(const char *t, size_t at, int lines)
{
	while (at > 0 && t[at - 1] != '\n') at--;
	for (int i = 0; i < lines && at > 0; i++) {
		at--;
		while (at > 0 && t[at - 1] != '\n') at--;
	}
	return at;
}

static size_t line_fwd(const char *t, size_t len, size_t at, int lines)
{
	for (int i = 0; i < lines && at < len; i++) {
		const char *nl = memchr(t + at, '\n', len - at);
		at = nl ? (size_t)(nl - t) + 1 : len;
	}
	return at;
}

/* The window of CHUNK_LINES lines of od most like here (its Jaccard in
 * out->score, 0 when none); there is scratch. 0 or -ENOMEM. */
struct best {
	double score;
	size_t doc, s, e;
};

static int doc_best(const struct idset *here, const struct ctx_doc *od, size_t d,
                    struct idset *there, struct best *out)
{
	struct best b = { 0 };
	int rc = 0;
	for (size_t at = 0; at < od->len && !rc && here->n;) {
		size_t e = line_fwd(od->text, od->len, at, CHUNK_LINES);
		rc = idset_build(there, od->text, at, e);
		double j = rc ? 0 : jaccard(here, there);
		if (j > b.score) b = (struct best){ j, d, at, e };
		if (e >= od->len) break;
		at = line_fwd(od->text, od->len, at, CHUNK_STRIDE);
	}
	*out = b;
	return rc;
}

/* ---- the pieces ---- */

struct sel {
	const struct ctx_query *q;
	struct ctx_chunks cand; /* candidates of every source, before the budget */
	struct ast_name names[MAX_NAMES];
	int n_names;
	struct ast_outline self;                          /* the current file's outline */
	struct ctx_doc docs[MAX_READ + MAX_RELATED + 32]; /* open documents, then files read */
	size_t n_docs, n_open_docs;
	char *owned[MAX_READ + MAX_RELATED]; /* texts of the files read */
	size_t n_owned;
	struct idset here, there;                      /* the cursor's surroundings; scratch */
	double doc_score[MAX_READ + MAX_RELATED + 32]; /* best window's Jaccard per document */
};

static bool defined_here(const struct sel *s, const char *name)
{
	for (size_t i = 0; i < s->self.n_defs; i++)
		if (!strcmp(s->self.defs[i].name, name)) return true;
	return false;
}

static bool have_def(const struct sel *s, const char *name)
{
	for (size_t i = 0; i < s->cand.n; i++)
		if (s->cand.v[i].source == CTX_SOURCE_DEFINITION &&
		    !strncmp(s->cand.v[i].why, name, strlen(name)) &&
		    s->cand.v[i].why[strlen(name)] == ':')
			return true;
	return false;
}

static int def_found(void *ud, const char *rel, const struct ast_def *def,
                     const struct ast_name *name, bool global)
{
	struct sel *s = ud;
	if (defined_here(s, name->name) || have_def(s, name->name)) return 0;
	char why[96];
	snprintf(why, sizeof why, "%s: defined in %s, %s", name->name, rel,
	         global ? "found by name" : "imported");
	double score = (global ? 0.5 : 1.0) * 10.0 / (1.0 + (double)name->dist / 8.0);
	return chunk_push(&s->cand, CTX_SOURCE_DEFINITION, rel, def->sig, def->sig_len, score, why);
}

/* Reads a file whole when it is small enough; NULL otherwise. */
static char *read_small(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) return NULL;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_DOC_BYTES) {
		close(fd);
		return NULL;
	}
	char *t = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (t && got < (size_t)st.st_size) {
		ssize_t r = read(fd, t + got, (size_t)st.st_size - got);
		if (r <= 0) break;
		got += (size_t)r;
	}
	close(fd);
	if (t) t[got] = 0;
	*len = got;
	return t;
}

static bool is_open(const struct sel *s, const char *path)
{
	for (size_t d = 0; d < s->n_open_docs; d++)
		if (s->docs[d].path && !strcmp(s->docs[d].path, path)) return true;
	return false;
}

/* The text of the file at path (absolute): read from disk when the query
 * says so and small enough, else the index's copy when it kept one. New
 * string or NULL in *out. 0 or -ENOMEM. */
static int text_of(const struct sel *s, const char *path, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (s->q->read_imported) {
		*out = read_small(path, len);
		return 0;
	}
	int rc = ctx_index_text(s->q->index, path, out, len);
	return rc < 0 ? rc : 0;
}

/* Adds path and its text t (both taken) to the documents looked at. */
static void add_doc(struct sel *s, char *path, char *t, size_t len)
{
	s->owned[s->n_owned++] = t;
	s->docs[s->n_docs++] = (struct ctx_doc){ path, t, len };
}

/* Adds the file at path (absolute) to the documents looked at, unless it
 * is open (the editor's text is newer). 0 or -ENOMEM. */
static int read_doc(struct sel *s, const char *path)
{
	if (is_open(s, path)) return 0;
	size_t len;
	char *t;
	int rc = text_of(s, path, &t, &len);
	if (rc || !t) return rc;
	char *p = strdup(path); /* freed with the selection, as the text */
	if (!p) {
		free(t);
		return -ENOMEM;
	}
	add_doc(s, p, t, len);
	return 0;
}

/*
 * Of the related files paths[0..n) (best first by their imports), the
 * MAX_RELATED whose best window is most like the cursor's surroundings
 * join the documents looked at: siblings that tie on their imports (a
 * folder of `*-ops.c` that include the same headers) differ in what they
 * do, and the one that does what the cursor's lines do repeats their
 * statements. Ties keep the index's order. 0 or -ENOMEM.
 */
static int read_related(struct sel *s, char **paths, int n)
{
	struct cand {
		char *text;
		size_t len;
		int i;
		double score;
	} c[MAX_RELATED_POOL];
	int nc = 0, rc = 0;
	for (int i = 0; i < n && nc < MAX_RELATED_POOL && !rc; i++) {
		if (is_open(s, paths[i])) continue;
		size_t len;
		char *t;
		rc = text_of(s, paths[i], &t, &len);
		if (rc || !t) continue;
		struct best b;
		struct ctx_doc od = { paths[i], t, len };
		rc = doc_best(&s->here, &od, 0, &s->there, &b);
		c[nc++] = (struct cand){ t, len, i, b.score };
	}
	/* best first; stable among equals (insertion sort: a few entries) */
	for (int i = 1; i < nc; i++)
		for (int k = i; k > 0 && c[k - 1].score < c[k].score; k--) {
			struct cand t = c[k];
			c[k] = c[k - 1];
			c[k - 1] = t;
		}
	for (int i = 0; i < nc; i++) {
		char *p = !rc && i < MAX_RELATED ? strdup(paths[c[i].i]) : NULL;
		if (!p) {
			if (!rc && i < MAX_RELATED) rc = -ENOMEM;
			free(c[i].text);
			continue;
		}
		add_doc(s, p, c[i].text, c[i].len);
	}
	return rc;
}

static int step_definitions(struct sel *s)
{
	const struct ctx_query *q = s->q;
	const struct ast_lang *lang = ast_lang_from_id(q->language_id);
	if (!lang) return 0;
	/* One parse of the file for its names and its imports; a file too
	 * long for that on the server's loop (it may run there) is read in
	 * pieces: the names from the lines around the cursor alone (which may
	 * begin inside a string: fewer names), the imports from its head. */
	int rc, n;
	if (q->len <= MAX_PARSE_BYTES) {
		struct ast_text flat = { q->text, q->len };
		struct ast_doc *doc = ast_doc_new(lang, ast_text_read, &flat);
		if (!doc) return -ENOMEM;
		n = ast_names_near(lang, q->text, q->len, q->cursor, doc, s->names, MAX_NAMES);
		rc = n < 0 ? n : ast_outline(lang, q->text, q->len, doc, &s->self);
		ast_doc_delete(doc);
	} else {
		size_t ws = line_back(q->text, q->cursor, 40);
		size_t we = line_fwd(q->text, q->len, q->cursor, 9);
		n = ast_names_near(lang, q->text + ws, we - ws, q->cursor - ws, NULL, s->names,
		                   MAX_NAMES);
		rc = n < 0 ? n
		           : ast_outline(lang, q->text, line_back(q->text, MAX_HEAD_BYTES, 0), NULL,
		                         &s->self);
	}
	if (n < 0) return n == AST_ENOMEM ? -ENOMEM : 0;
	if (rc == AST_ENOMEM) return -ENOMEM;
	s->n_names = n;
	rc = 0;
	/* open documents, outlined here: their unsaved text counts */
	for (size_t d = 0, parsed = 0; d < q->n_open && parsed < MAX_OPEN_PARSED; d++) {
		const struct ctx_doc *od = &q->open[d];
		if (od->len > MAX_OPEN_PARSE_BYTES ||
		    (q->path && od->path && !strcmp(od->path, q->path)))
			continue;
		parsed++;
		const struct ast_lang *ol = ast_lang_from_path(od->path);
		if (!ol) continue;
		struct ast_outline o;
		if (ast_outline(ol, od->text, od->len, NULL, &o)) continue;
		for (size_t i = 0; i < o.n_defs && !rc; i++)
			for (int k = 0; k < n && !rc; k++)
				if (!strcmp(o.defs[i].name, s->names[k].name))
					rc = def_found(s, shown_path(q, od->path), &o.defs[i],
					               &s->names[k], false);
		ast_outline_finish(&o);
		if (rc) return rc;
	}
	if (!q->index) return 0;
	char **paths = NULL;
	int np = ctx_index_imported(q->index, q->path, lang, s->self.imports, s->self.n_imports,
	                            &paths, MAX_IMPORTED);
	if (np < 0) return np;
	rc = ctx_index_find_defs(q->index, q->path, paths, (size_t)np, s->names, (size_t)n,
	                         def_found, s);
	/* the imported files stand for open documents where they are not open */
	for (int i = 0; i < np && !rc && s->n_owned < MAX_READ; i++) rc = read_doc(s, paths[i]);
	/* and so do the files that import what this one imports: a module's
	 * siblings, which repeat its statements (the other `*_ops.c` of a
	 * folder: the same includes, the same context struct unpacked, the
	 * same error paths) where the headers show only prototypes */
	char **rel_paths = NULL;
	int nr = rc ? 0
	            : ctx_index_related(q->index, q->path, lang, s->self.imports, s->self.n_imports,
	                                &rel_paths, MAX_RELATED_POOL + 4);
	if (nr < 0) rc = nr;
	int w = 0; /* the imported files are in already */
	for (int i = 0; i < nr; i++) {
		bool dup = false;
		for (int k = 0; k < np && !dup; k++) dup = !strcmp(paths[k], rel_paths[i]);
		if (dup)
			free(rel_paths[i]);
		else
			rel_paths[w++] = rel_paths[i];
	}
	nr = w;
	if (!rc) rc = read_related(s, rel_paths, nr);
	for (int i = 0; i < nr; i++) free(rel_paths[i]);
	free(rel_paths);
	for (int i = 0; i < np; i++) free(paths[i]);
	free(paths);
	return rc;
}

static int step_similar(struct sel *s)
{
	const struct ctx_query *q = s->q;
	if (!s->n_docs) return 0;
	struct best best[MAX_READ + MAX_RELATED + 32];
	size_t nb = 0;
	int rc = 0;
	for (size_t d = 0; d < s->n_docs && !rc && s->here.n; d++) {
		const struct ctx_doc *od = &s->docs[d];
		if (od->len > MAX_DOC_BYTES) continue;
		struct best b;
		rc = doc_best(&s->here, od, d, &s->there, &b);
		s->doc_score[d] = b.score;
		if (!rc && b.score >= MIN_JACCARD) best[nb++] = b; /* one per document */
	}
	/* the MAX_SIMILAR best, best first (insertion sort: a few entries) */
	for (size_t i = 1; i < nb; i++)
		for (size_t k = i; k > 0 && best[k - 1].score < best[k].score; k--) {
			struct best t = best[k];
			best[k] = best[k - 1];
			best[k - 1] = t;
		}
	if (nb > MAX_SIMILAR) nb = MAX_SIMILAR;
	for (size_t i = 0; i < nb && !rc; i++) {
		const struct ctx_doc *od = &s->docs[best[i].doc];
		const char *p = shown_path(q, od->path);
		char why[96];
		size_t line = 1;
		for (size_t k = 0; k < best[i].s; k++) line += od->text[k] == '\n';
		snprintf(why, sizeof why, "lines %zu-%zu of %s, Jaccard %.2f", line,
		         line + CHUNK_LINES - 1, p ? p : "?", best[i].score);
		rc = chunk_push(&s->cand, CTX_SOURCE_SIMILAR, p, od->text + best[i].s,
		                best[i].e - best[i].s, best[i].score, why);
	}
	return rc;
}

static int step_recent(struct sel *s)
{
	const struct ctx_query *q = s->q;
	size_t n = ctx_ring_count(q->ring), taken = 0;
	int rc = 0;
	for (size_t i = 0; i < n && taken < MAX_RECENT && !rc; i++) {
		const char *path, *text;
		size_t len;
		ctx_ring_at(q->ring, i, &path, &text, &len);
		if (q->path && !strcmp(path, q->path)) continue; /* the prefix shows it */
		char why[96];
		snprintf(why, sizeof why, "edited or viewed %zu chunk%s ago", i, i == 1 ? "" : "s");
		rc = chunk_push(&s->cand, CTX_SOURCE_RECENT, shown_path(q, path), text, len,
		                1.0 / (1.0 + (double)i), why);
		taken++;
	}
	return rc;
}

/* Trust order: source, then score. */
static int cmp_trust(const void *a, const void *b)
{
	const struct ctx_chunk *x = a, *y = b;
	if (x->source != y->source) return (int)x->source - (int)y->source;
	return (x->score < y->score) - (x->score > y->score);
}

/* Prompt order: recent, similar, definitions; within one, least trusted
 * first, so the best sits nearest the prefix. */
static int cmp_prompt(const void *a, const void *b)
{
	const struct ctx_chunk *x = a, *y = b;
	if (x->source != y->source) return (int)y->source - (int)x->source;
	return (x->score > y->score) - (x->score < y->score);
}

/* The extension of a path's last component ("" when none). */
static const char *path_ext(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strrchr(base, '.');
	return dot && dot != base ? dot : "";
}

/*
 * Whether a file's lines may continue a line of the query's document: a
 * line of another language is no answer however well it starts (`ret` in
 * a .js completed with a Python `return self.price`). The same language or
 * its family (ast_lang_kin: C with C++, JavaScript with TypeScript); where
 * the document's language has no grammar, files of its extension.
 */
static bool lines_kin(const struct ctx_query *q, const char *path)
{
	const struct ast_lang *here = ast_lang_from_id(q->language_id);
	if (!here && q->path) here = ast_lang_from_path(q->path);
	if (!path) return false;
	const struct ast_lang *there = ast_lang_from_path(path);
	if (here || there) return ast_lang_kin(here, there);
	return q->path && path_ext(q->path)[0] && !strcasecmp(path_ext(q->path), path_ext(path));
}

/* The documents' texts of the document's language (lines_kin), the most
 * like the cursor's surroundings first (the candidates' ties go to them),
 * one form feed line between two (a line counts once per file:
 * pipeline/recall.h). */
static int join_lines(struct sel *s, struct ctx_chunks *out)
{
	size_t order[MAX_READ + MAX_RELATED + 32];
	for (size_t d = 0; d < s->n_docs; d++) {
		size_t k = d;
		for (; k > 0 && s->doc_score[order[k - 1]] < s->doc_score[d]; k--)
			order[k] = order[k - 1];
		order[k] = d;
	}
	const size_t sep = 3; /* "\n\f\n" */
	size_t total = 0;
	bool kin[sizeof order / sizeof order[0]];
	for (size_t d = 0; d < s->n_docs; d++) {
		kin[d] = lines_kin(s->q, s->docs[d].path);
		if (kin[d] && s->docs[d].len <= MAX_DOC_BYTES &&
		    total + s->docs[d].len + sep <= MAX_LINES_BYTES)
			total += s->docs[d].len + sep;
	}
	if (!total) return 0;
	out->lines = malloc(total + 1);
	if (!out->lines) return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < s->n_docs; i++) {
		const struct ctx_doc *od = &s->docs[order[i]];
		if (!kin[order[i]] || od->len > MAX_DOC_BYTES || n + od->len + sep > total)
			continue;
		memcpy(out->lines + n, od->text, od->len);
		n += od->len;
		memcpy(out->lines + n, "\n\f\n", sep);
		n += sep;
	}
	out->lines[n] = 0;
	out->lines_len = n;
	return 0;
}

int ctx_select(const struct ctx_query *q, struct ctx_chunks *out)
{
	memset(out, 0, sizeof *out);
	struct sel *s = calloc(1, sizeof *s);
	if (!s) return -ENOMEM;
	s->q = q;
	for (size_t i = 0; i < q->n_open && s->n_docs < 32; i++)
		if (!(q->path && q->open[i].path && !strcmp(q->open[i].path, q->path)))
			s->docs[s->n_docs++] = q->open[i];
	size_t n_open_docs = s->n_open_docs = s->n_docs;
	/* the text around the cursor, which the other files' chunks are
	 * compared with: 20 lines before it, 4 after */
	int rc = idset_build(&s->here, q->text, line_back(q->text, q->cursor, 20),
	                     line_fwd(q->text, q->len, q->cursor, 4));
	if (!rc) rc = step_definitions(s);
	if (!rc) rc = step_similar(s);
	if (!rc) rc = step_recent(s);
	if (!rc) rc = join_lines(s, out);
	/* within the budget, in order of trust; whole chunks only */
	if (!rc) {
		if (s->cand.n) qsort(s->cand.v, s->cand.n, sizeof *s->cand.v, cmp_trust);
		size_t left = q->budget, w = 0;
		ast_count_fn count = q->count ? q->count : ast_tokens_estimate;
		for (size_t i = 0; i < s->cand.n; i++) {
			struct ctx_chunk *c = &s->cand.v[i];
			/* the path line above it counts too */
			c->tokens = count(q->count_ctx, c->text, c->len) +
			            count(q->count_ctx, c->path, strlen(c->path)) + 2;
			/* a chunk of lines that does not fit is cut to the lines
			 * that do (3 at least; each line counted once, their sum
			 * standing for the whole); a signature is whole or nothing */
			if (c->tokens > left && c->source != CTX_SOURCE_DEFINITION) {
				size_t head = count(q->count_ctx, c->path, strlen(c->path)) + 2;
				size_t used = head, end = 0, lines = 0;
				while (end < c->len) {
					const char *nl = memchr(c->text + end, '\n', c->len - end);
					size_t e = nl ? (size_t)(nl - c->text) + 1 : c->len;
					size_t t = count(q->count_ctx, c->text + end, e - end);
					if (used + t > left) break;
					used += t;
					end = e;
					lines++;
				}
				if (lines >= 3) {
					c->len = end;
					c->text[end] = 0;
					c->tokens = used;
				}
			}
			/* signatures of one file share one chunk under one path */
			struct ctx_chunk *same = NULL;
			for (size_t k = 0; c->source == CTX_SOURCE_DEFINITION && k < w && !same;
			     k++)
				if (s->cand.v[k].source == CTX_SOURCE_DEFINITION &&
				    !strcmp(s->cand.v[k].path, c->path))
					same = &s->cand.v[k];
			size_t cost = same ? count(q->count_ctx, c->text, c->len) + 1 : c->tokens;
			char *joined = NULL;
			if (same && cost <= left &&
			    (joined = realloc(same->text, same->len + c->len + 2))) {
				joined[same->len] = '\n';
				memcpy(joined + same->len + 1, c->text, c->len + 1);
				same->text = joined;
				same->len += c->len + 1;
				same->tokens += cost;
				left -= cost;
				out->tokens[c->source] += cost;
				size_t wl = strlen(same->why), nl = strcspn(c->why, ":");
				if (wl + nl + 3 < sizeof same->why)
					snprintf(same->why + wl, sizeof same->why - wl, "; %.*s",
					         (int)nl, c->why);
				free(c->path);
				free(c->text);
			} else if (!same && c->tokens <= left) {
				left -= c->tokens;
				out->tokens[c->source] += c->tokens;
				s->cand.v[w++] = *c;
			} else {
				free(c->path);
				free(c->text);
			}
		}
		s->cand.n = w;
		if (s->cand.n) qsort(s->cand.v, s->cand.n, sizeof *s->cand.v, cmp_prompt);
		out->v = s->cand.v;
		out->n = s->cand.n;
		out->cap = s->cand.cap;
		s->cand.v = NULL;
		s->cand.n = 0;
	}
	ctx_chunks_finish(&s->cand);
	ast_outline_finish(&s->self);
	free(s->here.v);
	free(s->there.v);
	for (size_t i = n_open_docs; i < s->n_docs; i++) free((char *)s->docs[i].path);
	for (size_t i = 0; i < s->n_owned; i++) free(s->owned[i]);
	free(s);
	if (rc) ctx_chunks_finish(out);
	return rc;
}
