/*
 * attn.c - the CPU backend's attention: causal, grouped-query, over the
 * paged KV cache, softmax in float with a double sum as ggml does. Prompts
 * run head-major jobs over blocks of queries (attn_run: attn_block_rows, or
 * attn_block_lanes with the queries in the lanes); decode batches run chunks
 * of positions for every head (attn_decode).
 *
 * A Q8_0 cache is read as llama.cpp's CPU flash attention reads one: the
 * queries rounded to q8_0 blocks, each score an integer dot per block
 * scaled by both blocks' d, V's blocks widened on the fly into the float
 * sums, the probabilities left in float; prompts take the lanes kernels
 * where the set has score_t_q8 (the AVX-512 and AVX2 sets), the rows path
 * elsewhere (the reference).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu_backend.h"
#include "quant.h"

struct attn_task;
/* One job: the g queries of the block from batch entry i0, head h, on
 * thread ith's scratch. */
typedef void (*attn_block_fn)(const struct attn_task *t, int ith, int64_t i0, int g, int h);

struct attn_task {
	struct cpu_backend *c;
	const struct backend_batch *b;
	int layer;
	const float *q; /* [nt][n_head*hd] */
	float *out;     /* [nt][n_head*hd] */
	/* Query blocks: up to attn_qb (CPU_ATTN_QT in the lanes) consecutive
	 * entries of one sequence, block k = entries [blk[k], blk[k + 1]). */
	const int32_t *blk;
	int64_t n_blk;
	attn_block_fn block;
	int hd, group;       /* head size, query heads per KV head */
	int64_t ld, qd, kvd; /* slots in the pool, q's and a KV row's widths */
	float scale;         /* 1 / sqrt(hd) */
	atomic_llong next;   /* next job (head * n_blk + block); causal jobs differ in cost */
};

/* Slots from p0 up to last that lie in p0's page: one kernel call's run. */
static int32_t page_run(const struct cpu_backend *c, int32_t p0, int32_t last)
{
	int32_t n = c->page_size - p0 % c->page_size;
	return n < last + 1 - p0 ? n : last + 1 - p0;
}

/* Head h's K or V rows of the block's sequence from slot p0. */
static const char *head_rows(const struct attn_task *t, int64_t i0, int h, int32_t p0, int which)
{
	const struct backend_seq *s = &t->b->seqs[t->b->seq_ids[i0]];
	return (const char *)kv_slot(t->c, s, t->layer, p0, which) +
	       (size_t)(h / t->group) * t->c->kv_head_bytes;
}

/* The queries of a block against the cache rows, row-major (score/mix). */
static void attn_block_rows(const struct attn_task *t, int ith, int64_t i0, int g, int h)
{
	struct cpu_backend *c = t->c;
	int hd = t->hd;
	int64_t ld = t->ld, qd = t->qd, kvd = t->kvd;
	float *sc = c->scores + ith * attn_scratch_floats(ld, hd); /* [CPU_ATTN_QB][ld] */
	float qr[CPU_ATTN_QB * BACKEND_MAX_HEAD_DIM];
	int32_t maxpos = 0;
	for (int j = 0; j < g; j++)
		if (t->b->positions[i0 + j] > maxpos) maxpos = t->b->positions[i0 + j];
	const float *q = t->q + i0 * qd + (int64_t)h * hd;
	int64_t q_stride = qd;
	struct block_q8_0 q8[CPU_ATTN_QB * BACKEND_MAX_HEAD_DIM / QK8_0];
	if (c->kv_q8) /* as ggml's flash attention: q in K's vec_dot type */
		for (int j = 0; j < g; j++)
			cpu_q8_0_quantize(q + j * qd, q8 + j * (hd / QK8_0), hd);
	if (c->kv_f16) { /* llama.cpp's K.q with an F16 cache rounds q to fp16 too */
		uint16_t qh[BACKEND_MAX_HEAD_DIM];
		for (int j = 0; j < g; j++) {
			c->k->to_f16(q + j * qd, qh, hd);
			c->k->from_f16(qh, qr + j * hd, hd);
		}
		q = qr;
		q_stride = hd;
	}
	/* Scores of every query of the block up to the block's last position,
	 * one kernel call per run of slots contiguous in a page. */
	for (int32_t p0 = 0; p0 <= maxpos;) {
		int32_t n = page_run(c, p0, maxpos);
		const char *k = head_rows(t, i0, h, p0, 0);
		if (c->kv_q8)
			c->k->score_q8(hd, g, q8, (int64_t)(hd / QK8_0 * sizeof *q8), k,
			               (int64_t)c->kv_row_bytes, n, t->scale, sc + p0, ld);
		else if (c->kv_f16)
			c->k->score_f16(hd, g, q, q_stride, (const uint16_t *)k, kvd, n, t->scale,
			                sc + p0, ld);
		else
			c->k->score_f32(hd, g, q, q_stride, (const float *)k, kvd, n, t->scale,
			                sc + p0, ld);
		p0 += n;
	}
	/* Softmax per query over its own causal range; slots past it get
	 * probability 0, which adds exactly nothing in the mix. */
	for (int j = 0; j < g; j++) {
		float *sj = sc + j * ld;
		int32_t pos = t->b->positions[i0 + j];
		/* With an F16 cache llama.cpp multiplies V by the probabilities
		 * rounded to fp16; with that rounding (and q's, above) we match
		 * its F16-cache logits to 5e-6 (7e-5 without). */
		c->k->softmax(sj, (int64_t)pos + 1, c->kv_f16);
		for (int32_t p = pos + 1; p <= maxpos; p++) sj[p] = 0;
	}
	float *o = t->out + i0 * qd + (int64_t)h * hd;
	for (int j = 0; j < g; j++)
		for (int e = 0; e < hd; e++) o[j * qd + e] = 0;
	for (int32_t p0 = 0; p0 <= maxpos;) {
		int32_t n = page_run(c, p0, maxpos);
		const char *v = head_rows(t, i0, h, p0, 1);
		if (c->kv_q8)
			c->k->mix_q8(hd, g, sc + p0, ld, v, (int64_t)c->kv_row_bytes, n, o, qd);
		else if (c->kv_f16)
			c->k->mix_f16(hd, g, sc + p0, ld, (const uint16_t *)v, kvd, n, o, qd);
		else
			c->k->mix_f32(hd, g, sc + p0, ld, (const float *)v, kvd, n, o, qd);
		p0 += n;
	}
}

/* Whether prompts take the queries-in-lanes kernels (cpu.h score_t_f16). */
static bool attn_lanes(const struct cpu_backend *c)
{
	return (c->kv_f16 && c->k->score_t_f16) || (c->kv_q8 && c->k->score_t_q8);
}

/* The same with the block's queries in the lanes (F16 or Q8_0 cache): q
 * is transposed in and the output out. */
static void attn_block_lanes(const struct attn_task *t, int ith, int64_t i0, int g, int h)
{
	struct cpu_backend *c = t->c;
	int hd = t->hd;
	int64_t ld = t->ld, qd = t->qd, kvd = t->kvd;
	float *st = c->scores + ith * attn_scratch_floats(ld, hd);      /* [ld][CPU_ATTN_QT] */
	float *qt = st + CPU_ATTN_QT * ld, *ot = qt + CPU_ATTN_QT * hd; /* [hd][CPU_ATTN_QT] */
	int32_t maxpos = 0, last[CPU_ATTN_QT];
	for (int j = 0; j < CPU_ATTN_QT; j++) {
		last[j] = j < g ? t->b->positions[i0 + j] : -1;
		if (last[j] > maxpos) maxpos = last[j];
	}
	const float *q = t->q + i0 * qd + (int64_t)h * hd;
	if (c->kv_q8) {
		/* q rounded to q8_0 blocks, as attn_block_rows does, then into the
		 * lanes (hd / 32 * 1280 bytes: less than qt's floats) */
		struct block_q8_0 q8[CPU_ATTN_QT * BACKEND_MAX_HEAD_DIM / QK8_0];
		for (int j = 0; j < g; j++)
			cpu_q8_0_quantize(q + j * qd, q8 + j * (hd / QK8_0), hd);
		cpu_q8_lanes_pack(q8, (int64_t)(hd / QK8_0 * sizeof *q8), g, hd,
		                  (struct cpu_q8_lanes *)qt);
	} else {
		/* q rounded to fp16, as attn_block_rows does, into the lanes */
		uint16_t qh[BACKEND_MAX_HEAD_DIM];
		float qf[BACKEND_MAX_HEAD_DIM];
		memset(qt, 0, (size_t)CPU_ATTN_QT * hd * sizeof(float));
		for (int j = 0; j < g; j++) {
			c->k->to_f16(q + j * qd, qh, hd);
			c->k->from_f16(qh, qf, hd);
			for (int e = 0; e < hd; e++) qt[e * CPU_ATTN_QT + j] = qf[e];
		}
	}
	for (int32_t p0 = 0; p0 <= maxpos;) {
		int32_t n = page_run(c, p0, maxpos);
		const char *k = head_rows(t, i0, h, p0, 0);
		float *sp = st + (int64_t)p0 * CPU_ATTN_QT;
		if (c->kv_q8)
			c->k->score_t_q8(hd, (const struct cpu_q8_lanes *)qt, k,
			                 (int64_t)c->kv_row_bytes, n, t->scale, sp);
		else
			c->k->score_t_f16(hd, qt, (const uint16_t *)k, kvd, n, t->scale, sp);
		p0 += n;
	}
	/* probabilities rounded to fp16 for an F16 cache only, as the rows path */
	c->k->softmax_t(st, (int64_t)maxpos + 1, last, c->kv_f16);
	memset(ot, 0, (size_t)CPU_ATTN_QT * hd * sizeof(float));
	for (int32_t p0 = 0; p0 <= maxpos;) {
		int32_t n = page_run(c, p0, maxpos);
		const char *v = head_rows(t, i0, h, p0, 1);
		const float *sp = st + (int64_t)p0 * CPU_ATTN_QT;
		if (c->kv_q8)
			c->k->mix_t_q8(hd, sp, v, (int64_t)c->kv_row_bytes, n, ot);
		else
			c->k->mix_t_f16(hd, sp, (const uint16_t *)v, kvd, n, ot);
		p0 += n;
	}
	float *o = t->out + i0 * qd + (int64_t)h * hd;
	for (int j = 0; j < g; j++)
		for (int e = 0; e < hd; e++) o[j * qd + e] = ot[e * CPU_ATTN_QT + j];
}

static void attn_run(void *arg, int ith, int nth)
{
	struct attn_task *t = arg;
	(void)nth;
	for (;;) {
		int64_t job = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
		if (job >= t->n_blk * t->c->hp.n_head) break;
		/* Head-major: consecutive jobs read the same head's K/V slice, which
		 * then stays in L2 (a layer's whole cache would not). */
		int64_t k0 = job % t->n_blk;
		t->block(t, ith, t->blk[k0], t->blk[k0 + 1] - t->blk[k0], (int)(job / t->n_blk));
	}
}

/*
 * Decode attention (at most ATTN_DEC_MAX entries, each on its own): the
 * head-major jobs above would read each head's cache rows a KV row apart,
 * from DRAM for a long context. Here jobs are chunks of positions and take
 * every head of each cache row while the row is at hand, so rows are read
 * whole, in order ("flash decoding"): scores for all heads (pass 1), softmax
 * per head (2), partial weighted sums of V per chunk (3), then the partials
 * added in chunk order (deterministic whatever thread ran which chunk).
 * A job of pass 1 or 3 is one chunk for every entry in turn: the entries of
 * a step share most of their pages (a candidate's drafts, candidates forked
 * off one prompt), which are then read from DRAM once and from cache for
 * the next entry, not once per entry. The queries are rounded to fp16 once
 * a layer (attn_decode); per head and chunk, in scalar code, that cost
 * ~4 ms a forward for each entry at 1,000 positions (1.3B model).
 */

struct attn_dec_task {
	struct cpu_backend *c;
	const struct backend_batch *b;
	int layer, pass;
	int64_t n_chunks; /* per entry: ceil(ld / ATTN_DEC_CHUNK) */
	int64_t n_used;   /* chunks up to the furthest entry's position */
	atomic_llong next;
};

/* Pass 1 or 3 over n cache rows from position p0 (at rows, K or V) for the
 * ne entries i0.. that read the same rows: one at a time its heads that
 * share a KV head together; several, head by head with the entries as the
 * kernel's queries, so each row is read once for all of them. A (query,
 * row) score and each output's FMA chain are the same bits either way
 * (cpu.h's contract: they do not depend on g). */
static void attn_dec_rows(const struct attn_dec_task *t, int32_t i0, int32_t ne, int64_t k,
                          int32_t p0, int32_t n, const char *rows)
{
	struct cpu_backend *c = t->c;
	const struct backend_hparams *hp = &c->hp;
	int hd = hp->head_dim, group = hp->n_head / hp->n_head_kv, qb = c->k->attn_qb;
	int64_t ld = (int64_t)c->n_pages * c->page_size, qd = (int64_t)hp->n_head * hd;
	int64_t kvd = (int64_t)hp->n_head_kv * hd;
	float scale = 1.0f / sqrtf((float)hd);
	/* a call's queries: g heads of one entry, or one head of ne entries */
	int64_t q_stride = ne > 1 ? qd : hd, s_stride = ne > 1 ? hp->n_head * ld : ld;
	int64_t o_stride = ne > 1 ? t->n_chunks * qd : hd;
	const float *q0 = c->q + i0 * qd;
	float *part0 = c->dpart + (i0 * t->n_chunks + k) * qd;
	int g = 0;
	for (int64_t h = 0; h < hp->n_head; h += g) {
		int left = group - (int)(h % group); /* heads on this KV head from h */
		g = ne > 1 ? 1 : left < qb ? left : qb;
		const char *r = rows + (size_t)(h / group) * c->kv_head_bytes;
		float *sc = c->dscores + (i0 * hp->n_head + h) * ld + p0;
		int nq = ne > 1 ? ne : g; /* the call's queries */
		if (t->pass == 3) {
			if (c->kv_q8)
				c->k->mix_q8(hd, nq, sc, s_stride, r, (int64_t)c->kv_row_bytes, n,
				             part0 + h * hd, o_stride);
			else if (c->kv_f16)
				c->k->mix_f16(hd, nq, sc, s_stride, (const uint16_t *)r, kvd, n,
				              part0 + h * hd, o_stride);
			else
				c->k->mix_f32(hd, nq, sc, s_stride, (const float *)r, kvd, n,
				              part0 + h * hd, o_stride);
		} else if (c->kv_q8) { /* q in q8_0 blocks (attn_decode) */
			int64_t qbs = (int64_t)(qd / QK8_0 * sizeof(struct block_q8_0));
			c->k->score_q8(
			        hd, nq,
			        (const char *)c->dq8 + i0 * qbs +
			                h * (int64_t)(hd / QK8_0 * sizeof(struct block_q8_0)),
			        ne > 1 ? qbs : (int64_t)(hd / QK8_0 * sizeof(struct block_q8_0)), r,
			        (int64_t)c->kv_row_bytes, n, scale, sc, s_stride);
		} else if (c->kv_f16) { /* q rounded to fp16 (attn_decode) */
			c->k->score_f16(hd, nq, q0 + h * hd, q_stride, (const uint16_t *)r, kvd, n,
			                scale, sc, s_stride);
		} else {
			c->k->score_f32(hd, nq, q0 + h * hd, q_stride, (const float *)r, kvd, n,
			                scale, sc, s_stride);
		}
	}
}

/* Lines [p, p + bytes) toward L2 (prefetcht1): whole pages of slots,
 * read by the next kernel calls of this job. */
static void prefetch_run(const void *p, int64_t bytes)
{
	for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch((const char *)p + o, 0, 2);
}

/* Pass 1 or 3 over the positions of chunk k for every entry: the entries
 * next to each other in the batch that read the same cache rows there (a
 * candidate and its drafts; candidates forked off one prompt, on its
 * pages) go through attn_dec_rows together. */
static void attn_dec_chunk(const struct attn_dec_task *t, int64_t k)
{
	struct cpu_backend *c = t->c;
	const struct backend_batch *b = t->b;
	int64_t qd = (int64_t)c->hp.n_head * c->hp.head_dim;
	int32_t p_lo = (int32_t)(k * ATTN_DEC_CHUNK), last = -1, hi[ATTN_DEC_MAX];
	for (int32_t i = 0; i < b->n_tokens; i++) {
		hi[i] = p_lo + ATTN_DEC_CHUNK - 1 < b->positions[i] ? p_lo + ATTN_DEC_CHUNK - 1
		                                                    : b->positions[i];
		if (hi[i] < p_lo) continue; /* past the entry's position: not summed either */
		if (t->pass == 3)
			memset(c->dpart + (i * t->n_chunks + k) * qd, 0,
			       (size_t)qd * sizeof(float));
		if (hi[i] > last) last = hi[i];
	}
	for (int32_t p0 = p_lo; p0 <= last;) {
		const char *rows[ATTN_DEC_MAX];
		int32_t n = ATTN_DEC_CHUNK;
		for (int32_t i = 0; i < b->n_tokens; i++) {
			rows[i] = NULL;
			if (hi[i] < p0) continue;
			rows[i] = kv_slot(c, &b->seqs[b->seq_ids[i]], t->layer, p0,
			                  t->pass == 1 ? 0 : 1);
			int32_t ni = page_run(c, p0, hi[i]);
			if (ni < n) n = ni; /* a run split in two: the same bits (see above) */
		}
		/* Every head's rows of the next run of this chunk into L2 while
		 * this run's are summed (the first run's at once, so its lines
		 * are fetched together): a run is a page of slots, pages lie
		 * apart, and the kernels' own prefetches stay within their run.
		 * Without it decode waited on each page's first lines (the
		 * q8_0 mix's scale gather held a third of its time). */
		int32_t first = 0;
		while (first < b->n_tokens && !rows[first]) first++;
		if (p0 == p_lo && first < b->n_tokens)
			prefetch_run(rows[first], (int64_t)n * c->kv_row_bytes);
		if (first < b->n_tokens && p0 + n <= hi[first]) {
			int32_t nn = page_run(c, p0 + n, hi[first]);
			prefetch_run(kv_slot(c, &b->seqs[b->seq_ids[first]], t->layer, p0 + n,
			                     t->pass == 1 ? 0 : 1),
			             (int64_t)nn * c->kv_row_bytes);
		}
		for (int32_t i = 0; i < b->n_tokens;) {
			if (!rows[i]) {
				i++;
				continue;
			}
			int32_t j = i + 1;
			while (j < b->n_tokens && j - i < c->k->attn_qb && rows[j] == rows[i]) j++;
			attn_dec_rows(t, i, j - i, k, p0, n, rows[i]);
			i = j;
		}
		p0 += n;
	}
}

static void attn_dec_run(void *arg, int ith, int nth)
{
	struct attn_dec_task *t = arg;
	const struct backend_hparams *hp = &t->c->hp;
	const struct backend_batch *b = t->b;
	int64_t ld = (int64_t)t->c->n_pages * t->c->page_size;
	(void)ith, (void)nth;
	int64_t n_jobs = t->pass == 2 ? (int64_t)b->n_tokens * hp->n_head : t->n_used;
	for (;;) {
		int64_t job = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
		if (job >= n_jobs) break;
		if (t->pass == 2) { /* softmax of entry i, head h */
			int64_t i = job / hp->n_head, h = job % hp->n_head;
			t->c->k->softmax(t->c->dscores + (i * hp->n_head + h) * ld,
			                 (int64_t)b->positions[i] + 1, t->c->kv_f16);
			continue;
		}
		attn_dec_chunk(t, job);
	}
}

static void attn_decode(struct cpu_backend *c, const struct backend_batch *b, int layer, float *out)
{
	const struct backend_hparams *hp = &c->hp;
	int64_t ld = (int64_t)c->n_pages * c->page_size;
	int64_t qd = (int64_t)hp->n_head * hp->head_dim;
	struct attn_dec_task t = { .c = c, .b = b, .layer = layer };
	t.n_chunks = (ld + ATTN_DEC_CHUNK - 1) / ATTN_DEC_CHUNK;
	if (c->kv_q8) /* as attn_block_rows: q in q8_0 blocks, once here */
		for (int32_t i = 0; i < b->n_tokens; i++)
			cpu_q8_0_quantize(
			        c->q + i * qd,
			        (char *)c->dq8 + i * qd / QK8_0 * sizeof(struct block_q8_0), qd);
	if (c->kv_f16) { /* as attn_run: q rounded to fp16, once here, not per chunk */
		uint16_t h[256];
		for (int64_t e = 0; e < b->n_tokens * qd; e += 256) {
			int64_t n = b->n_tokens * qd - e < 256 ? b->n_tokens * qd - e : 256;
			c->k->to_f16(c->q + e, h, n);
			c->k->from_f16(h, c->q + e, n);
		}
	}
	for (int32_t i = 0; i < b->n_tokens; i++)
		if (b->positions[i] / ATTN_DEC_CHUNK + 1 > t.n_used)
			t.n_used = b->positions[i] / ATTN_DEC_CHUNK + 1;
	for (int pass = 1; pass <= 3; pass++) {
		t.pass = pass;
		atomic_init(&t.next, 0);
		cpu_pool_run(c->pool, attn_dec_run, &t);
	}
	for (int32_t i = 0; i < b->n_tokens; i++) {
		float *o = out + i * qd;
		int64_t used = b->positions[i] / ATTN_DEC_CHUNK + 1;
		for (int64_t e = 0; e < qd; e++) o[e] = 0;
		for (int64_t k = 0; k < used; k++) {
			const float *part = c->dpart + (i * t.n_chunks + k) * qd;
			for (int64_t e = 0; e < qd; e++) o[e] += part[e];
		}
	}
}

int64_t cpu_attn_blocks(struct cpu_backend *c, const struct backend_batch *b)
{
	int64_t n = 0, qb = attn_lanes(c) ? CPU_ATTN_QT : c->k->attn_qb;
	for (int32_t i = 0; i < b->n_tokens;) {
		int32_t j = i + 1;
		while (j < b->n_tokens && j - i < qb && b->seq_ids[j] == b->seq_ids[i]) j++;
		c->idx[n++] = i;
		i = j;
	}
	c->idx[n] = b->n_tokens;
	return n;
}

void cpu_attention(struct cpu_backend *c, const struct backend_batch *b, int layer, int64_t n_blk,
                   float *out)
{
	/* Every decode step, drafts checked with it included, takes the same
	 * path: a token's attention is then the same bits whatever else its
	 * step carries, so prompt lookup gives exactly plain decoding's text
	 * (the blocked path sums V in another order past ATTN_DEC_CHUNK). */
	if (b->n_tokens <= ATTN_DEC_MAX && c->dscores) {
		attn_decode(c, b, layer, out);
		return;
	}
	const struct backend_hparams *hp = &c->hp;
	struct attn_task at = {
		.c = c,
		.b = b,
		.layer = layer,
		.q = c->q,
		.out = out,
		.blk = c->idx,
		.n_blk = n_blk,
		.block = attn_lanes(c) ? attn_block_lanes : attn_block_rows,
		.hd = hp->head_dim,
		.group = hp->n_head / hp->n_head_kv,
		.ld = (int64_t)c->n_pages * c->page_size,
		.qd = (int64_t)hp->n_head * hp->head_dim,
		.kvd = (int64_t)hp->n_head_kv * hp->head_dim,
		.scale = 1.0f / sqrtf((float)hp->head_dim),
	};
	atomic_init(&at.next, 0);
	cpu_pool_run(c->pool, attn_run, &at);
}
