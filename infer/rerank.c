/*
 * rerank.c - ordering the candidates of one completion without the model:
 * near-duplicates merged (their count is evidence the model means it),
 * candidates that only repeat the text after the cursor demoted, the one
 * closest to the suggestion already on screen preferred (so it does not
 * flicker while the user types), all folded with the mean log-probability
 * into one score. Pure functions over caller-owned items.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* The plain dynamic program, one row of min(alen, blen) + 1 cells: the
 * reference the bit-parallel version below is tested against. */
size_t rerank_levenshtein_ref(const char *a, size_t alen, const char *b, size_t blen)
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

/*
 * One 64-row block of one column of Myers' bit-vector algorithm in
 * Hyyro's block form: pv/mv are the block's vertical +1/-1 deltas, eq the
 * rows whose pattern byte matches this column's, hin the horizontal delta
 * entering at the block's top row (-1, 0, +1). Returns the horizontal
 * delta leaving at row `out_bit` of the block.
 */
static int myers_block(uint64_t *pv, uint64_t *mv, uint64_t eq, int hin, int out_bit)
{
	uint64_t hin_neg = hin<0, hin_pos = hin> 0;
	uint64_t xv = eq | *mv;
	eq |= hin_neg;
	uint64_t xh = (((eq & *pv) + *pv) ^ *pv) | eq;
	uint64_t ph = *mv | ~(xh | *pv);
	uint64_t mh = *pv & xh;
	int hout = (int)((ph >> out_bit) & 1) - (int)((mh >> out_bit) & 1);
	ph = (ph << 1) | hin_pos;
	mh = (mh << 1) | hin_neg;
	*pv = mh | ~(xv | ph);
	*mv = ph & xv;
	return hout;
}

/*
 * Exact, in O(alen * blen / 64) word steps: the shorter string is the
 * pattern, held as blocks of 64 rows; each byte of the longer one is a
 * column, the blocks updated from the top with the horizontal delta passed
 * down (rows depend only on the rows above them, so the unused high rows
 * of the last block never reach row blen). The distance is blen plus the
 * deltas along the bottom row.
 */
size_t rerank_levenshtein(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen < blen) {
		const char *t = a;
		a = b, b = t;
		size_t tl = alen;
		alen = blen, blen = tl;
	}
	if (!blen) return alen;
	size_t nb = (blen + 63) / 64;
	/* peq[c * nb + k]: rows of block k whose pattern byte is c; then pv, mv */
	uint64_t stack[256 * 2 + 4], *peq = nb <= 2 ? stack : calloc(258 * nb, sizeof *peq);
	if (!peq) return SIZE_MAX;
	if (peq == stack) memset(stack, 0, sizeof stack);
	uint64_t *pv = peq + 256 * nb, *mv = pv + nb;
	for (size_t i = 0; i < blen; i++)
		peq[(size_t)(unsigned char)b[i] * nb + i / 64] |= (uint64_t)1 << (i % 64);
	for (size_t k = 0; k < nb; k++) pv[k] = ~(uint64_t)0, mv[k] = 0;
	int last_bit = (int)((blen - 1) % 64);
	size_t d = blen;
	for (size_t j = 0; j < alen; j++) {
		const uint64_t *eq = peq + (size_t)(unsigned char)a[j] * nb;
		int h = 1; /* the top row: D[0][j] = j */
		for (size_t k = 0; k + 1 < nb; k++) h = myers_block(&pv[k], &mv[k], eq[k], h, 63);
		h = myers_block(&pv[nb - 1], &mv[nb - 1], eq[nb - 1], h, last_bit);
		d = (size_t)((ptrdiff_t)d + h);
	}
	if (peq != stack) free(peq);
	return d;
}

/* Past this many bytes the candidates' heads are compared and the rest
 * counted by length: a server or a document can hand rerank megabytes, and
 * similarity only ranks, it needs no exact distance there. */
#define RERANK_COMPARE_MAX 2048

double rerank_similarity(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t m = alen > blen ? alen : blen;
	if (!m) return 1.0;
	size_t ca = alen < RERANK_COMPARE_MAX ? alen : RERANK_COMPARE_MAX;
	size_t cb = blen < RERANK_COMPARE_MAX ? blen : RERANK_COMPARE_MAX;
	size_t d = rerank_levenshtein(a, ca, b, cb);
	if (d == SIZE_MAX) return 0.0; /* out of memory: call them unrelated */
	size_t ra = alen - ca, rb = blen - cb;
	d += ra > rb ? ra - rb : rb - ra;
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

/* The distance is at least the length difference, so strings of very
 * different lengths cannot reach `threshold`: said without comparing them. */
static bool lengths_may_match(size_t x, size_t y, double threshold)
{
	size_t lo = x < y ? x : y, hi = x < y ? y : x;
	return hi == 0 || 1.0 - (double)(hi - lo) / (double)hi >= threshold;
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
	if (!lengths_may_match(sn, cn, p->dedup_threshold)) return false;
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
			if (lengths_may_match(items[j].len, items[i].len, p->dedup_threshold) &&
			    rerank_similarity(items[j].text, items[j].len, items[i].text,
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
