/*
 * fuzz_stream.c - libFuzzer target for what comes from the network: a body
 * cut into pieces anywhere (remote_stream_feed), its payloads parsed as one
 * API's JSON (remote_acc_feed), then the whole body parsed as a reply that
 * was not streamed. The first byte picks the API, the cap on a choice's
 * bytes and the cut points. Every choice must stay within the cap, be
 * NUL-terminated at its length, and no cut may change what is parsed: the
 * body fed in one piece gives the same choices.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "remote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(what)                                          \
	do {                                                \
		fprintf(stderr, "fuzz-stream: %s\n", what); \
		__builtin_trap();                           \
	} while (0)

struct run {
	struct remote_acc acc;
	enum remote_api api;
};

static int on_payload(void *ud, const char *payload, size_t len)
{
	struct run *r = ud;
	int rc = remote_acc_feed(&r->acc, r->api, payload, len);
	return rc == -ENOMEM ? rc : 0; /* a bad payload is skipped, as the client does */
}

static void check_choices(const struct remote_acc *acc)
{
	size_t cap = acc->max_bytes ? acc->max_bytes : REMOTE_CHOICE_MAX_BYTES;
	for (int i = 0; i < acc->n; i++) {
		const struct remote_choice *c = &acc->choices[i];
		if (c->len > cap) FAIL("a choice past its byte cap");
		if (c->text && c->text[c->len] != 0)
			FAIL("a choice not NUL-terminated at its length");
		if (c->text && strlen(c->text) > c->len) FAIL("a choice longer than its length");
		if (c->text && remote_text_valid(c->text, c->len) != c->len)
			FAIL("a choice that is not whole UTF-8");
		if (c->text && strstr(c->text, "\xEF\xBF\xBD")) FAIL("a choice past a U+FFFD");
	}
}

/* A server's words for a message: one printable line of whole UTF-8. */
static void check_excerpt(const char *body, size_t len)
{
	char out[REMOTE_EXCERPT_MAX + 8];
	remote_text_excerpt(body, len, out, sizeof out);
	size_t n = strlen(out);
	if (n > REMOTE_EXCERPT_MAX) FAIL("an excerpt past its cap");
	if (remote_text_valid(out, n) != n) FAIL("an excerpt that is not whole UTF-8");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f) FAIL("a control byte shown");
}

/* Feeds body in pieces of `step` bytes (0: one piece). */
static void feed(struct run *r, const char *body, size_t len, size_t step)
{
	struct remote_stream s = { 0 };
	size_t at = 0;
	while (at < len) {
		size_t n = step && len - at > step ? step : len - at;
		if (remote_stream_feed(&s, body + at, n, on_payload, r)) break;
		at += n;
	}
	check_choices(&r->acc);
	size_t all_len;
	remote_stream_all(&s, &all_len);
	if (all_len > len) FAIL("the kept body is longer than what came");
	remote_stream_finish(&s);
}

static bool same_choices(const struct remote_acc *a, const struct remote_acc *b)
{
	if (a->n != b->n) return false;
	for (int i = 0; i < a->n; i++) {
		const struct remote_choice *x = &a->choices[i], *y = &b->choices[i];
		if (x->len != y->len || x->finish != y->finish) return false;
		if (x->len && memcmp(x->text, y->text, x->len)) return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1) return 0;
	static const enum remote_api apis[] = { REMOTE_API_OPENAI, REMOTE_API_LLAMA_INFILL,
		                                REMOTE_API_OLLAMA };
	uint8_t ctl = data[0];
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	struct run whole = { .api = apis[ctl % 3] }, cut = { .api = apis[ctl % 3] };
	whole.acc.max_bytes = cut.acc.max_bytes = (ctl & 0x80) ? 16 : 0;
	feed(&whole, body, len, 0);
	feed(&cut, body, len, 1 + (ctl >> 2 & 0x1f));
	if (!same_choices(&whole.acc, &cut.acc)) FAIL("a cut changed the choices");
	/* The body as one non-streamed reply. */
	struct remote_acc one = { .max_bytes = whole.acc.max_bytes };
	remote_acc_feed(&one, whole.api, body, len);
	check_choices(&one);
	check_excerpt(body, len);
	struct remote_reply reply = { 0 };
	remote_acc_take(&whole.acc, &reply);
	remote_reply_finish(&reply);
	remote_acc_finish(&whole.acc);
	remote_acc_finish(&cut.acc);
	remote_acc_finish(&one);
	return 0;
}
