/*
 * rerank.c - ordering the candidates of one completion without the model:
 * near-duplicates merged (their count is evidence the model means it),
 * candidates that only repeat the text after the cursor demoted, the one
 * closest to the suggestion already on screen preferred (so it does not
 * flicker while the user types), all folded with the mean log-probability
 * into one score. Pure functions over caller-owned items.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* One row of min(alen, blen) + 1 cells, on the stack for the short
 * candidates (a few hundred bytes) rerank sees. */
size_t rerank_levenshtein(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen < blen) {
		const char *t = a;
		a = b, b = t;
		size_t tl = alen;
		alen = blen, blen = tl;
	}
	if (!blen) return alen;
	size_t stack[257], *row = blen < 257 ? stack : malloc((blen + 1) * sizeof *row);
	if (!row) return SIZE_MAX;
	for (size_t j = 0; j <= blen; j++) row[j] = j;
	for (size_t i = 1; i <= alen; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= blen; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best) best = up + 1;
			if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	size_t d = row[blen];
	if (row != stack) free(row);
	return d;
}

double rerank_similarity(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t m = alen > blen ? alen : blen;
	if (!m) return 1.0;
	size_t d = rerank_levenshtein(a, alen, b, blen);
	if (d == SIZE_MAX) return 0.0; /* out of memory: call them unrelated */
	return 1.0 - (double)d / (double)m;
}

struct rerank_params rerank_params_default(void)
{
	return (struct rerank_params){
		.dedup_threshold = 0.9,
		.min_confidence = -INFINITY,
		.w_evidence = 0.3,
		.w_suffix = 1.0,
		.w_previous = 0.5,
	};
}

bool rerank_is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r') return false;
	return true;
}

/* The first non-blank line of s, trimmed. */
static void first_line(const char *s, size_t n, const char **out, size_t *olen)
{
	size_t i = 0;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
	size_t e = i;
	while (e < n && s[e] != '\n') e++;
	while (e > i && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) e--;
	*out = s + i, *olen = e - i;
}

/* The last non-blank line of s, trimmed. */
static void last_line(const char *s, size_t n, const char **out, size_t *olen)
{
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	size_t b = n;
	while (b && s[b - 1] != '\n') b--;
	while (b < n && (s[b] == ' ' || s[b] == '\t')) b++;
	*out = s + b, *olen = n - b;
}

/*
 * True when the candidate ends by writing out what already follows the
 * cursor: its last line equals (nearly) the suffix's first line, the
 * classic "the model re-types the next line" failure.
 */
static bool repeats_suffix(const struct rerank_params *p, const struct rerank_item *it)
{
	if (!p->suffix || !p->suffix_len) return false;
	const char *sl, *cl;
	size_t sn, cn;
	first_line(p->suffix, p->suffix_len, &sl, &sn);
	last_line(it->text, it->len, &cl, &cn);
	if (!sn || !cn) return false;
	/* The distance is at least the length difference, so lines of very
	 * different lengths cannot pass: said without the O(sn * cn) table,
	 * which a one-line document of megabytes made cost seconds. */
	size_t lo = sn < cn ? sn : cn, hi = sn < cn ? cn : sn;
	if (1.0 - (double)(hi - lo) / (double)hi < p->dedup_threshold) return false;
	return rerank_similarity(sl, sn, cl, cn) >= p->dedup_threshold;
}

static int by_logprob(const void *a, const void *b)
{
	const struct rerank_item *x = a, *y = b;
	if (x->mean_logprob != y->mean_logprob) return x->mean_logprob > y->mean_logprob ? -1 : 1;
	return x->index - y->index;
}

static int by_score(const void *a, const void *b)
{
	const struct rerank_item *x = a, *y = b;
	if (x->score != y->score) return x->score > y->score ? -1 : 1;
	return x->index - y->index;
}

size_t rerank_run(const struct rerank_params *p, struct rerank_item *items, size_t n)
{
	/* 1. drop blanks, remember the engine's order */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct rerank_item it = items[i];
		it.index = (int32_t)i;
		it.evidence = 1;
		if (!it.text || rerank_is_blank(it.text, it.len)) continue;
		items[k++] = it;
	}
	/* 2. merge near-duplicates into the more probable one */
	qsort(items, k, sizeof *items, by_logprob);
	size_t kept = 0;
	for (size_t i = 0; i < k; i++) {
		size_t j = 0;
		for (; j < kept; j++)
			if (rerank_similarity(items[j].text, items[j].len, items[i].text,
			                      items[i].len) >= p->dedup_threshold)
				break;
		if (j < kept) {
			items[j].evidence += items[i].evidence;
			if (items[i].prior > items[j].prior) items[j].prior = items[i].prior;
		} else {
			items[kept++] = items[i];
		}
	}
	/* 3. score, threshold, sort */
	size_t out = 0;
	for (size_t i = 0; i < kept; i++) {
		struct rerank_item *it = &items[i];
		double s = it->mean_logprob + it->prior + p->w_evidence * log((double)it->evidence);
		if (repeats_suffix(p, it)) s -= p->w_suffix;
		if (p->previous && p->previous_len)
			s += p->w_previous *
			     rerank_similarity(p->previous, p->previous_len, it->text, it->len);
		it->score = s;
		if (s >= p->min_confidence) items[out++] = *it;
	}
	qsort(items, out, sizeof *items, by_score);
	return out;
}
