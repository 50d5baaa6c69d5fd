/*
 * json_mini.h - the small JSON reader the engine tests use to read the
 * reference logits (tests of infer/ link no jansson). Parses a whole
 * document into a tree of nodes allocated from one array; strings keep
 * pointers into the caller's buffer (escapes are left undecoded, which the
 * reference file's keys and names do not need). Test-only: on malformed
 * input it returns NULL.
 */
#ifndef INFILL_TESTS_JSON_MINI_H
#define INFILL_TESTS_JSON_MINI_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum jm_type { JM_NULL, JM_BOOL, JM_NUM, JM_STR, JM_ARR, JM_OBJ };

struct jm_node {
	enum jm_type type;
	double num;
	const char *str; /* JM_STR: not NUL-terminated; also the key of an object member */
	size_t len;
	const char *key;
	size_t key_len;
	int first_child, next; /* indices into the node array, -1 for none */
	int n_children;
};

struct jm_doc {
	struct jm_node *nodes;
	int n, cap;
	const char *p, *end;
	char *text; /* owned copy of the file */
};

static int jm_new(struct jm_doc *d, enum jm_type t)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 1024;
		d->nodes = realloc(d->nodes, (size_t)d->cap * sizeof *d->nodes);
	}
	struct jm_node *n = &d->nodes[d->n];
	memset(n, 0, sizeof *n);
	n->type = t;
	n->first_child = n->next = -1;
	return d->n++;
}

static void jm_ws(struct jm_doc *d)
{
	while (d->p < d->end && (*d->p == ' ' || *d->p == '\n' || *d->p == '\r' || *d->p == '\t'))
		d->p++;
}

static int jm_value(struct jm_doc *d);

static int jm_string(struct jm_doc *d, const char **s, size_t *len)
{
	if (d->p >= d->end || *d->p != '"') return -1;
	const char *start = ++d->p;
	while (d->p < d->end && *d->p != '"') {
		if (*d->p == '\\') d->p++;
		d->p++;
	}
	if (d->p >= d->end) return -1;
	*s = start;
	*len = (size_t)(d->p - start);
	d->p++;
	return 0;
}

static int jm_value(struct jm_doc *d)
{
	jm_ws(d);
	if (d->p >= d->end) return -1;
	char c = *d->p;
	if (c == '{' || c == '[') {
		int id = jm_new(d, c == '{' ? JM_OBJ : JM_ARR), prev = -1;
		d->p++;
		jm_ws(d);
		if (d->p < d->end && *d->p == (c == '{' ? '}' : ']')) {
			d->p++;
			return id;
		}
		for (;;) {
			const char *key = NULL;
			size_t klen = 0;
			jm_ws(d);
			if (c == '{') {
				if (jm_string(d, &key, &klen)) return -1;
				jm_ws(d);
				if (d->p >= d->end || *d->p != ':') return -1;
				d->p++;
			}
			int ch = jm_value(d);
			if (ch < 0) return -1;
			d->nodes[ch].key = key;
			d->nodes[ch].key_len = klen;
			if (prev < 0)
				d->nodes[id].first_child = ch;
			else
				d->nodes[prev].next = ch;
			prev = ch;
			d->nodes[id].n_children++;
			jm_ws(d);
			if (d->p < d->end && *d->p == ',') {
				d->p++;
				continue;
			}
			if (d->p < d->end && *d->p == (c == '{' ? '}' : ']')) {
				d->p++;
				return id;
			}
			return -1;
		}
	}
	if (c == '"') {
		int id = jm_new(d, JM_STR);
		const char *s;
		size_t len;
		if (jm_string(d, &s, &len)) return -1;
		d->nodes[id].str = s;
		d->nodes[id].len = len;
		return id;
	}
	if (!strncmp(d->p, "true", 4) || !strncmp(d->p, "false", 5)) {
		int id = jm_new(d, JM_BOOL);
		d->nodes[id].num = *d->p == 't';
		d->p += *d->p == 't' ? 4 : 5;
		return id;
	}
	if (!strncmp(d->p, "null", 4)) {
		d->p += 4;
		return jm_new(d, JM_NULL);
	}
	char *e;
	double v = strtod(d->p, &e);
	if (e == d->p) return -1;
	d->p = e;
	int id = jm_new(d, JM_NUM);
	d->nodes[id].num = v;
	return id;
}

/* Reads and parses `path`; returns 0 or -1. The root is node 0. */
static int jm_load(struct jm_doc *d, const char *path)
{
	memset(d, 0, sizeof *d);
	FILE *f = fopen(path, "rb");
	if (!f) return -1;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	d->text = malloc((size_t)size + 1);
	if (!d->text || fread(d->text, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		return -1;
	}
	fclose(f);
	d->text[size] = 0;
	d->p = d->text;
	d->end = d->text + size;
	return jm_value(d) == 0 ? 0 : -1;
}

static void jm_free(struct jm_doc *d)
{
	free(d->nodes);
	free(d->text);
}

/* Member `key` of object node id, or -1. */
static int jm_get(const struct jm_doc *d, int id, const char *key)
{
	if (id < 0 || d->nodes[id].type != JM_OBJ) return -1;
	size_t kl = strlen(key);
	for (int c = d->nodes[id].first_child; c >= 0; c = d->nodes[c].next)
		if (d->nodes[c].key_len == kl && !memcmp(d->nodes[c].key, key, kl)) return c;
	return -1;
}

/* Element i of array node id, or -1. */
static int jm_at(const struct jm_doc *d, int id, int i)
{
	if (id < 0 || d->nodes[id].type != JM_ARR) return -1;
	int c = d->nodes[id].first_child;
	while (c >= 0 && i-- > 0) c = d->nodes[c].next;
	return c;
}

static int jm_len(const struct jm_doc *d, int id)
{
	return id < 0 ? 0 : d->nodes[id].n_children;
}

static double jm_num(const struct jm_doc *d, int id)
{
	return id < 0 ? 0 : d->nodes[id].num;
}

static int jm_str_eq(const struct jm_doc *d, int id, const char *s)
{
	return id >= 0 && d->nodes[id].type == JM_STR && d->nodes[id].len == strlen(s) &&
	       !memcmp(d->nodes[id].str, s, d->nodes[id].len);
}

/* Copies a numeric array into out[cap] (iterating the child list once); returns its length. */
static int jm_nums(const struct jm_doc *d, int id, double *out, int cap)
{
	int n = 0;
	if (id < 0) return 0;
	for (int c = d->nodes[id].first_child; c >= 0; c = d->nodes[c].next, n++)
		if (n < cap) out[n] = d->nodes[c].num;
	return n;
}

#endif
