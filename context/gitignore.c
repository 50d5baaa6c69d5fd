/*
 * gitignore.c - the subset of gitignore(5) the workspace index honours (see
 * context.h): rules from every .gitignore of the walk, matched last to
 * first so that the last matching rule decides.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

struct rule {
	char *base;    /* folder of its .gitignore, relative to the root ("" for it) */
	char *pattern; /* without '!', the anchoring '/' and the trailing '/' */
	bool negate;
	bool dir_only;
	bool anchored; /* matched against the path from base, not any name */
};

struct ctx_ignore {
	struct rule *v;
	size_t n, cap;
};

struct ctx_ignore *ctx_ignore_new(void)
{
	return calloc(1, sizeof(struct ctx_ignore));
}

void ctx_ignore_free(struct ctx_ignore *ig)
{
	if (!ig) return;
	for (size_t i = 0; i < ig->n; i++) {
		free(ig->v[i].base);
		free(ig->v[i].pattern);
	}
	free(ig->v);
	free(ig);
}

/* Glob match of pattern p against string s (both NUL-terminated): `*` and
 * `?` do not cross '/', `**` does (`**` then '/' may match no folder at all), `[...]` is a
 * class with ranges and a leading `!` or `^`. */
static bool glob(const char *p, const char *s)
{
	for (; *p; p++, s++) {
		if (p[0] == '*' && p[1] == '*') {
			p += 2;
			if (*p == '/') { /* `**` then '/': zero or more folders */
				p++;
				for (const char *t = s;; t++) {
					if ((t == s || t[-1] == '/') && glob(p, t)) return true;
					if (!*t) return false;
				}
			}
			for (const char *t = s;; t++) { /* trailing `**`: anything */
				if (glob(p, t)) return true;
				if (!*t) return false;
			}
		}
		if (*p == '*') {
			for (const char *t = s;; t++) {
				if (glob(p + 1, t)) return true;
				if (!*t || *t == '/') return false;
			}
		}
		if (!*s) return false;
		if (*p == '?') {
			if (*s == '/') return false;
			continue;
		}
		if (*p == '[') {
			const char *q = p + 1;
			bool neg = *q == '!' || *q == '^';
			if (neg) q++;
			bool in = false;
			const char *start = q;
			while (*q && (*q != ']' || q == start)) {
				if (q[1] == '-' && q[2] && q[2] != ']') {
					in |= *s >= q[0] && *s <= q[2];
					q += 3;
				} else {
					in |= *s == *q++;
				}
			}
			if (!*q) return *s == '['; /* no closing ']': a literal '[' */
			if (in == neg || *s == '/') return false;
			p = q;
			continue;
		}
		if (*p != *s) return false;
	}
	return !*s;
}

int ctx_ignore_add(struct ctx_ignore *ig, const char *base, const char *text, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t e = i;
		while (e < len && text[e] != '\n') e++;
		size_t s = i, end = e;
		i = e + 1;
		while (end > s && (text[end - 1] == '\r' || text[end - 1] == ' ')) end--;
		if (end == s || text[s] == '#') continue;
		struct rule r = { 0 };
		if (text[s] == '!') {
			r.negate = true;
			s++;
		}
		if (end > s && text[end - 1] == '/') {
			r.dir_only = true;
			end--;
		}
		if (end > s && text[s] == '/') {
			r.anchored = true;
			s++;
		}
		if (end == s) continue;
		if (memchr(text + s, '/', end - s)) r.anchored = true;
		if (ig->n == ig->cap) {
			size_t cap = ig->cap ? ig->cap * 2 : 32;
			struct rule *v = realloc(ig->v, cap * sizeof *v);
			if (!v) return -ENOMEM;
			ig->v = v;
			ig->cap = cap;
		}
		r.base = strdup(base);
		r.pattern = strndup(text + s, end - s);
		if (!r.base || !r.pattern) {
			free(r.base);
			free(r.pattern);
			return -ENOMEM;
		}
		ig->v[ig->n++] = r;
	}
	return 0;
}

static bool rule_matches(const struct rule *r, const char *relpath, bool is_dir)
{
	if (r->dir_only && !is_dir) return false;
	size_t bl = strlen(r->base);
	const char *rest = relpath;
	if (bl) { /* the rule sees only paths under its folder */
		if (strncmp(relpath, r->base, bl) || relpath[bl] != '/') return false;
		rest = relpath + bl + 1;
	}
	if (r->anchored) return glob(r->pattern, rest);
	const char *name = strrchr(rest, '/');
	return glob(r->pattern, name ? name + 1 : rest);
}

bool ctx_ignore_match(const struct ctx_ignore *ig, const char *relpath, bool is_dir)
{
	if (!ig) return false;
	for (size_t i = ig->n; i-- > 0;)
		if (rule_matches(&ig->v[i], relpath, is_dir)) return !ig->v[i].negate;
	return false;
}
