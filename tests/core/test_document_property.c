/*
 * test_document_property.c - thousands of random incremental edits applied to a
 * struct doc, compared after each one with a shadow plain string that is
 * rebuilt whole (the "full replacement" a client would send) and with a
 * naive reference for positions, lines and points.
 *
 * Edits pick their range as random LSP positions in a random encoding (so
 * they land inside characters, past line ends and past the document end),
 * and insert text mixing multi-byte characters, surrogate-pair characters,
 * all three line terminators and invalid bytes. Seeded, deterministic:
 * DOC_PROPERTY_SEED, DOC_PROPERTY_EDITS and DOC_PROPERTY_SIZE (initial
 * bytes) override the defaults.
 */
#include "harness.h"
#include "position.h"

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static size_t rng_below(struct rng *r, size_t n)
{
	return n ? (size_t)(rng_next(r) % n) : 0;
}

/* ---- the naive reference -------------------------------------------------- */

struct shadow {
	char *s;
	size_t n;
};

static int is_break_start(const struct shadow *t, size_t i, size_t *term_len)
{
	if (t->s[i] == '\r') {
		*term_len = i + 1 < t->n && t->s[i + 1] == '\n' ? 2 : 1;
		return 1;
	}
	if (t->s[i] == '\n' && (i == 0 || t->s[i - 1] != '\r')) {
		*term_len = 1;
		return 1;
	}
	return 0;
}

/* Line starts and content ends of every line. */
static size_t ref_lines(const struct shadow *t, size_t *starts, size_t *ends)
{
	size_t n = 0, i = 0;
	starts[0] = 0;
	while (i < t->n) {
		size_t tl;
		if (is_break_start(t, i, &tl)) {
			ends[n] = i;
			starts[++n] = i + tl;
			i += tl;
		} else {
			i++;
		}
	}
	ends[n] = t->n;
	return n + 1;
}

/* Sequence length per the rules of position.h, written out separately from
 * position.c on purpose: decode the code point and check it. */
static size_t ref_seq(const unsigned char *s, size_t avail)
{
	unsigned c = s[0];
	size_t n;
	unsigned cp;
	if (c < 0x80) return 1;
	if ((c & 0xE0) == 0xC0) {
		n = 2;
		cp = c & 0x1F;
	} else if ((c & 0xF0) == 0xE0) {
		n = 3;
		cp = c & 0x0F;
	} else if ((c & 0xF8) == 0xF0) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 1;
	}
	if (avail < n) return 1;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80) return 1;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	static const unsigned min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 1;
	return n;
}

static unsigned ref_units(size_t n, int enc)
{
	return enc == POS_ENCODING_UTF8    ? (unsigned)n
	       : enc == POS_ENCODING_UTF16 ? (n == 4 ? 2 : 1)
	                                   : 1;
}

static size_t ref_offset_at(const struct shadow *t, const size_t *st, const size_t *en,
                            size_t lines, struct doc_pos p, int enc)
{
	if (p.line >= lines) return t->n;
	size_t at = st[p.line], u = 0;
	while (at < en[p.line]) {
		size_t n = ref_seq((const unsigned char *)t->s + at, en[p.line] - at);
		if (u + ref_units(n, enc) > p.character) break;
		u += ref_units(n, enc);
		at += n;
	}
	return at;
}

static struct doc_pos ref_pos_at(const struct shadow *t, const size_t *st, const size_t *en,
                                 size_t lines, size_t off, int enc)
{
	size_t line = 0;
	while (line + 1 < lines && st[line + 1] <= off) line++;
	if (off > en[line]) off = en[line];
	size_t at = st[line], u = 0;
	while (at < off) {
		size_t n = ref_seq((const unsigned char *)t->s + at, en[line] - at);
		if (at + n > off) break;
		u += ref_units(n, enc);
		at += n;
	}
	struct doc_pos p = { (uint32_t)line, (uint32_t)u };
	return p;
}

static const char *pieces[] = {
	"a",      "b",        "xyz", " ",    "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
	"\n",     "\r\n",     "\r",  "\xff", "\xe2\x82", "\x80",         "\t",
	"hello ", "\xf0\x9f",
};

static size_t make_text(struct rng *r, char *out, size_t max_pieces)
{
	size_t n = 0, k = rng_below(r, max_pieces + 1);
	for (size_t i = 0; i < k; i++) {
		const char *p = pieces[rng_below(r, sizeof pieces / sizeof pieces[0])];
		memcpy(out + n, p, strlen(p));
		n += strlen(p);
	}
	return n;
}

static size_t env_size(const char *name, size_t def)
{
	const char *v = getenv(name);
	return v && *v ? (size_t)strtoull(v, NULL, 10) : def;
}

TEST(random_edits_match_shadow)
{
	struct rng r = { env_size("DOC_PROPERTY_SEED", 0x9E3779B97F4A7C15ull) | 1 };
	size_t edits = env_size("DOC_PROPERTY_EDITS", 6000);
	size_t cap = 1 << 22;
	struct shadow t = { malloc(cap), 0 };
	size_t *st = malloc(cap * sizeof *st), *en = malloc(cap * sizeof *en);
	char *ins = malloc(1 << 16), *next = malloc(cap);
	REQUIRE(t.s && st && en && ins && next);

	/* Start with ~12 KiB so that the document spans several chunks. */
	size_t initial = env_size("DOC_PROPERTY_SIZE", 12000);
	size_t ceiling = initial * 10 / 3; /* above it, edits only shrink */
	while (t.n < initial) t.n += make_text(&r, t.s + t.n, 16);
	struct doc *d = doc_new(t.s, t.n);
	REQUIRE(d);

	int failures = 0;
	size_t min_len = t.n, max_len = t.n;
	for (size_t e = 0; e < edits && failures < 5; e++) {
		size_t lines = ref_lines(&t, st, en);
		int enc = (int)rng_below(&r, 3);
		struct doc_pos a = { (uint32_t)rng_below(&r, lines + 1),
			             (uint32_t)rng_below(&r, 40) };
		struct doc_pos b = a;
		unsigned kind = (unsigned)rng_below(&r, 10);
		if (t.n > ceiling)
			kind = 4; /* shrink: keeps the run short and the document in a few dozen chunks */
		if (kind < 4) { /* delete or replace a short span */
			b.line += (uint32_t)rng_below(&r, 2);
			b.character = (uint32_t)rng_below(&r, 40);
		} else if (kind == 4 &&
		           t.n > initial * 5 / 3) { /* a long span, when there is room */
			b.line += (uint32_t)rng_below(&r, 200);
		}
		size_t so = doc_offset_at(d, a, (enum pos_encoding)enc);
		size_t eo = doc_offset_at(d, b, (enum pos_encoding)enc);
		size_t rso = ref_offset_at(&t, st, en, lines, a, enc);
		size_t reo = ref_offset_at(&t, st, en, lines, b, enc);
		if (so != rso || eo != reo) {
			fprintf(stderr, "edit %zu: offsets %zu,%zu want %zu,%zu\n", e, so, eo, rso,
			        reo);
			failures++;
			CHECK(0);
			break;
		}
		if (so > eo) {
			size_t x = so;
			so = eo;
			eo = x;
		}
		size_t il =
		        kind == 9 ? make_text(&r, ins, 600) : make_text(&r, ins, kind < 4 ? 2 : 6);
		if (t.n > ceiling) il = 0;
		CHECK_INT_EQ(doc_replace(d, so, eo, ins, il), 0);

		/* Shadow: rebuild the whole text. */
		memcpy(next, t.s, so);
		memcpy(next + so, ins, il);
		memcpy(next + so + il, t.s + eo, t.n - eo);
		size_t nn = t.n - (eo - so) + il;
		memcpy(t.s, next, nn);
		t.n = nn;

		min_len = t.n < min_len ? t.n : min_len;
		max_len = t.n > max_len ? t.n : max_len;

		/* Compare. */
		lines = ref_lines(&t, st, en);
		char *got = doc_text(d);
		if (doc_length(d) != t.n || memcmp(got, t.s, t.n) != 0 ||
		    doc_line_count(d) != lines) {
			fprintf(stderr,
			        "edit %zu: text or line count differs (len %zu/%zu lines "
			        "%zu/%zu)\n",
			        e, doc_length(d), t.n, doc_line_count(d), lines);
			failures++;
		}
		free(got);
		for (int k = 0; k < 4; k++) {
			size_t l = rng_below(&r, lines + 1);
			size_t ws = l < lines ? st[l] : t.n, we = l < lines ? en[l] : t.n;
			if (doc_line_start(d, l) != ws || doc_line_end(d, l) != we) {
				fprintf(stderr, "edit %zu: line %zu bounds %zu,%zu want %zu,%zu\n",
				        e, l, doc_line_start(d, l), doc_line_end(d, l), ws, we);
				failures++;
			}
			size_t o = rng_below(&r, t.n + 1);
			int pe = (int)rng_below(&r, 3);
			struct doc_pos gp = doc_pos_at(d, o, (enum pos_encoding)pe);
			struct doc_pos wp = ref_pos_at(&t, st, en, lines, o, pe);
			if (gp.line != wp.line || gp.character != wp.character) {
				fprintf(stderr,
				        "edit %zu: pos_at(%zu, enc %d) = %u:%u want %u:%u\n", e, o,
				        pe, gp.line, gp.character, wp.line, wp.character);
				failures++;
			}
			size_t rows = 0, last = 0;
			for (size_t i = 0; i < o; i++)
				if (t.s[i] == '\n') {
					rows++;
					last = i + 1;
				}
			struct doc_point pt = doc_point_at(d, o);
			if (pt.row != rows || pt.column != o - last) {
				fprintf(stderr, "edit %zu: point_at(%zu) = %u:%u want %zu:%zu\n", e,
				        o, pt.row, pt.column, rows, o - last);
				failures++;
			}
		}
		/* doc_chunk covers the text without gaps. */
		if (e % 97 == 0) {
			size_t at = 0;
			while (at < t.n) {
				size_t len;
				const char *c = doc_chunk(d, at, &len);
				if (len == 0 || at + len > t.n || memcmp(c, t.s + at, len) != 0) {
					fprintf(stderr, "edit %zu: doc_chunk(%zu) wrong\n", e, at);
					failures++;
					break;
				}
				at += len;
			}
		}
	}
	CHECK_INT_EQ(failures, 0);
	fprintf(stderr, "%zu edits; length ranged %zu..%zu bytes, final %zu bytes, %zu lines\n",
	        edits, min_len, max_len, doc_length(d), doc_line_count(d));
	doc_free(d);
	free(t.s);
	free(st);
	free(en);
	free(ins);
	free(next);
}

TEST_MAIN()
