/*
 * replay_trace.c - runs a trace of editing events against the real server
 * (replay_trace.h): the documents as the editor holds them, the events in
 * time, the requests in flight, and the report. The client under it is
 * replay_client.c; the command line is cli_replay.c.
 *
 * Positions are sent in UTF-8 (the server prefers it; the client asks for
 * it), so a column is a byte offset in its line and no UTF-16 counting is
 * needed here.
 */
#include "replay_trace.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ast.h"
#include "cli.h"
#include "replay_client.h"
#include "stats.h"

#define TIMEOUT_MS        600000 /* a cold prompt on a big model on a busy machine */
#define TRUTH_MAX         4096   /* bytes of "what follows" kept per request */
#define DEADLINE_SLACK_MS 50.0
#define FAST_MS           30.0 /* "at once": before the next key of fast typing */

static const char *const event_keys[] = {
#define X(e, key, help) key,
	REPLAY_EVENTS(X)
#undef X
};

/* ---- checking a trace ----------------------------------------------------- */

static int event_kind(const json_t *ev)
{
	for (int k = 0; k < REPLAY_EVENT_COUNT; k++)
		if (json_object_get(ev, event_keys[k])) return k;
	return -1;
}

static bool is_count(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0;
}

int replay_trace_check(const json_t *trace, char *err, size_t errlen)
{
	if (!json_is_object(trace)) {
		snprintf(err, errlen, "a trace is a JSON object with an \"events\" array");
		return -EINVAL;
	}
	json_t *settings = json_object_get(trace, "settings");
	if (settings && !json_is_object(settings)) {
		snprintf(err, errlen, "\"settings\" must be an object of infill settings");
		return -EINVAL;
	}
	json_t *events = json_object_get(trace, "events");
	if (!json_is_array(events) || !json_array_size(events)) {
		snprintf(err, errlen, "\"events\" must be a non-empty array");
		return -EINVAL;
	}
	size_t i;
	json_t *ev;
	json_array_foreach(events, i, ev)
	{
		int k = json_is_object(ev) ? event_kind(ev) : -1;
		const char *bad = NULL;
		json_t *v = k >= 0 ? json_object_get(ev, event_keys[k]) : NULL;
		switch (k) {
		case REPLAY_EVENT_OPEN:
		case REPLAY_EVENT_CLOSE:
			if (!json_is_string(v)) bad = "a file path";
			break;
		case REPLAY_EVENT_GOTO:
			if (!json_is_string(v) || !is_count(json_object_get(ev, "line")) ||
			    json_integer_value(json_object_get(ev, "line")) < 1 ||
			    (json_object_get(ev, "column") &&
			     !is_count(json_object_get(ev, "column"))))
				bad = "a file path, \"line\" >= 1 and an optional \"column\" >= 0";
			break;
		case REPLAY_EVENT_DELETE:
			if (!is_count(v)) bad = "a count of characters";
			break;
		case REPLAY_EVENT_CUT:
			if (!is_count(v) &&
			    !(json_is_string(v) && (!strcmp(json_string_value(v), "line") ||
			                            !strcmp(json_string_value(v), "end"))))
				bad = "a count of characters, \"line\" or \"end\"";
			break;
		case REPLAY_EVENT_TYPE:
			if (!json_is_string(v) || (json_object_get(ev, "paceMs") &&
			                           !is_count(json_object_get(ev, "paceMs"))))
				bad = "text (valid UTF-8) and an optional \"paceMs\" >= 0";
			break;
		case REPLAY_EVENT_TYPE_SHOWN:
			if (!is_count(v) || (json_object_get(ev, "paceMs") &&
			                     !is_count(json_object_get(ev, "paceMs"))))
				bad = "a count of characters and an optional \"paceMs\" >= 0";
			break;
		case REPLAY_EVENT_WAIT:
			if (!is_count(v)) bad = "milliseconds";
			break;
		case REPLAY_EVENT_ACCEPT:
		case REPLAY_EVENT_ASK:
		case REPLAY_EVENT_AWAIT: break;
		default:
			snprintf(err, errlen,
			         "event %zu: expected an object with one of the keys open, close, "
			         "goto, "
			         "delete, cut, type, typeShown, accept, ask, wait, await (see "
			         "infill replay "
			         "--help)",
			         i);
			return -EINVAL;
		}
		if (bad) {
			snprintf(err, errlen, "event %zu (\"%s\"): expected %s", i, event_keys[k],
			         bad);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- the documents, as the editor holds them ------------------------------ */

struct tdoc {
	char *path; /* as the trace names it */
	char uri[PATH_MAX + 16];
	const char *language;
	char *text; /* NUL-terminated, len bytes */
	size_t len;
	int version;
	bool open;
};

/* A request in flight or answered. */
struct treq {
	json_int_t id;
	size_t doc;
	int version; /* of the document when sent */
	double sent_ms, cpu0;
	bool cold, keystroke, answered, superseded;
	bool along, grew;  /* a "typeShown" keystroke; asked again after a growth */
	size_t shown_left; /* for those: bytes of the suggestion shown still ahead */
	size_t alone;      /* requests in flight when it was sent (1: alone) */
	char *truth;       /* what follows the cursor in the file being retyped */
	size_t truth_len;
};

struct run {
	const struct replay_opts *o;
	struct replay_client *c;
	struct replay_report *rep;
	struct tdoc *docs;
	size_t n_docs;
	struct treq *reqs;
	size_t n_reqs, cap_reqs;
	size_t in_flight;
	bool has_cursor; /* after a goto, until its document is closed */
	size_t cur;      /* the document of the cursor */
	size_t cursor;   /* byte offset in it */
	bool next_cold;
	/* the suggestion on screen: the latest answer with items, for the
	 * document version it was made for */
	char *shown;
	size_t shown_len, shown_doc, shown_start, shown_end;
	int shown_version;
	json_t *shown_command; /* the item's command (owned), for an accept */
	/* the last suggestion the simulated user took (feedback):
	 * until the cursor passes its end in that document, the answers along
	 * it are what was taken, not new suggestions */
	bool took;
	size_t took_doc, took_end;
	/* latencies (ms) of answered requests; cold ones apart */
	double *lat, *cold, *cpu;
	size_t n_lat, n_cold, n_cpu;
	char *err;
	size_t errlen;
};

static void doc_path(const struct run *r, const char *path, char *out, size_t cap)
{
	if (path[0] == '/' || !r->o->base_dir)
		snprintf(out, cap, "%s", path);
	else
		snprintf(out, cap, "%s/%s", r->o->base_dir, path);
}

/* The document named path, opening it on the editor's side first when
 * need be (want_open). Returns its index, or -errno with err set. */
static long doc_get(struct run *r, const char *path, const char *language, bool want_open)
{
	size_t i;
	for (i = 0; i < r->n_docs; i++)
		if (!strcmp(r->docs[i].path, path)) break;
	if (i == r->n_docs) {
		struct tdoc *d = realloc(r->docs, (r->n_docs + 1) * sizeof *d);
		if (!d) return -ENOMEM;
		r->docs = d;
		d = &r->docs[r->n_docs];
		memset(d, 0, sizeof *d);
		char full[PATH_MAX];
		doc_path(r, path, full, sizeof full);
		size_t len;
		d->path = strdup(path);
		d->text = cli_read_file(full, &len);
		if (!d->path || !d->text) {
			free(d->path);
			free(d->text);
			snprintf(r->err, r->errlen, "cannot read %s", full);
			return -ENOENT;
		}
		d->len = len;
		char abs[PATH_MAX];
		snprintf(d->uri, sizeof d->uri, "file://%s", realpath(full, abs) ? abs : full);
		d->language = language ? language : ast_lang_id_from_path(full);
		r->n_docs++;
	}
	struct tdoc *d = &r->docs[i];
	if (language) d->language = language;
	if (want_open && !d->open) {
		json_t *text = json_stringn(d->text, d->len);
		if (!text) {
			snprintf(r->err, r->errlen, "%s is not valid UTF-8", path);
			return -EINVAL;
		}
		d->version = 1;
		d->open = true;
		replay_client_notify(r->c, "textDocument/didOpen",
		                     json_pack("{s:{s:s, s:s, s:i, s:o}}", "textDocument", "uri",
		                               d->uri, "languageId", d->language, "version", 1,
		                               "text", text));
	}
	return (long)i;
}

/* LSP position (UTF-8 columns) of byte offset off in d. */
static json_t *pos_json(const struct tdoc *d, size_t off)
{
	size_t line = 0, start = 0;
	for (size_t i = 0; i < off && i < d->len; i++)
		if (d->text[i] == '\n') line++, start = i + 1;
	return json_pack("{s:I, s:I}", "line", (json_int_t)line, "character",
	                 (json_int_t)(off - start));
}

static size_t pos_offset(const struct tdoc *d, json_t *pos)
{
	json_int_t line = json_integer_value(json_object_get(pos, "line"));
	json_int_t ch = json_integer_value(json_object_get(pos, "character"));
	size_t off = 0;
	for (json_int_t l = 0; l < line && off < d->len; l++) {
		const char *nl = memchr(d->text + off, '\n', d->len - off);
		off = nl ? (size_t)(nl - d->text) + 1 : d->len;
	}
	off += (size_t)(ch > 0 ? ch : 0);
	return off < d->len ? off : d->len;
}

/* Replaces bytes [a, b) of document i with s (n bytes), on both sides. */
static int doc_edit(struct run *r, size_t i, size_t a, size_t b, const char *s, size_t n)
{
	struct tdoc *d = &r->docs[i];
	json_t *text = json_stringn(s, n);
	if (!text) {
		snprintf(r->err, r->errlen, "an edit of %s is not valid UTF-8", d->path);
		return -EINVAL;
	}
	json_t *range = json_pack("{s:o, s:o}", "start", pos_json(d, a), "end", pos_json(d, b));
	char *t = malloc(d->len - (b - a) + n + 1);
	if (!t || !range) {
		free(t);
		json_decref(text);
		json_decref(range);
		return -ENOMEM;
	}
	memcpy(t, d->text, a);
	memcpy(t + a, s, n);
	memcpy(t + a + n, d->text + b, d->len - b);
	d->len = d->len - (b - a) + n;
	t[d->len] = 0;
	free(d->text);
	d->text = t;
	d->version++;
	replay_client_notify(r->c, "textDocument/didChange",
	                     json_pack("{s:{s:s, s:i}, s:[{s:o, s:o}]}", "textDocument", "uri",
	                               d->uri, "version", d->version, "contentChanges", "range",
	                               range, "text", text));
	return 0;
}

static size_t utf8_len(unsigned char b)
{
	return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* Bytes of the n code points starting at off (clamped to the text). */
static size_t chars_forward(const char *s, size_t len, size_t off, size_t n)
{
	size_t i = off;
	for (size_t k = 0; k < n && i < len; k++) i += utf8_len((unsigned char)s[i]);
	return (i < len ? i : len) - off;
}

/* Bytes of the n code points ending at off. */
static size_t chars_back(const char *s, size_t off, size_t n)
{
	size_t i = off;
	for (size_t k = 0; k < n && i > 0; k++) {
		i--;
		while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
	}
	return off - i;
}

/* ---- requests and answers ------------------------------------------------- */

static void shown_clear(struct run *r)
{
	free(r->shown);
	r->shown = NULL;
	r->shown_len = 0;
	json_decref(r->shown_command);
	r->shown_command = NULL;
}

/* Reports an item accepted whole: its command, as an editor runs it. */
static void report_accept(struct run *r, json_t *command)
{
	json_t *args = json_object_get(command, "arguments");
	const char *name = json_string_value(json_object_get(command, "command"));
	if (!name || !args) return; /* a server that names no item */
	replay_client_send_request(r->c, "workspace/executeCommand",
	                           json_pack("{s:s, s:O}", "command", name, "arguments", args));
}

/*
 * The feedback an editor sends for the top item now on screen:
 * shown, and taken whole when it is what the file says next (the simulated
 * user accepts every suggestion that is right, and only those; the trace
 * then types the same text on, which the server sees as typing along what
 * was already accepted). Answers inside what was taken are not new
 * suggestions and are not reported.
 */
static void report_shown(struct run *r, struct treq *q, json_t *top, bool correct)
{
	if (r->took && r->took_doc == q->doc && r->shown_start < r->took_end) return;
	r->took = false;
	replay_client_notify(r->c, "textDocument/didShowCompletion",
	                     json_pack("{s:O}", "item", top));
	if (!correct) return;
	report_accept(r, json_object_get(top, "command"));
	r->rep->taken++;
	r->took = true;
	r->took_doc = q->doc;
	r->took_end = r->shown_start + r->shown_len;
}

static void on_grew(struct run *r, json_t *params);

/* Whether s[0..n) is all blanks (none: true). */
static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return false;
	return true;
}

static void on_response(void *ud, json_t *msg)
{
	struct run *r = ud;
	const char *method = json_string_value(json_object_get(msg, "method"));
	if (method) {
		if (!strcmp(method, "infill/suggestionGrew"))
			on_grew(r, json_object_get(msg, "params"));
		return;
	}
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	struct treq *q = NULL;
	for (size_t i = r->n_reqs; i-- > 0;)
		if (r->reqs[i].id == id) {
			q = &r->reqs[i];
			break;
		}
	if (!q || q->answered) return; /* shutdown, stats: not ours */
	double now = replay_now_ms(), ms = now - q->sent_ms;
	q->answered = true;
	r->in_flight--;
	r->rep->responses++;
	json_t *items = json_object_get(json_object_get(msg, "result"), "items");
	if (r->o->verbose)
		fprintf(stderr, "request %lld%s%s: %.1f ms, %zu items%s\n", (long long)q->id,
		        q->cold ? " (cold)" : "", q->keystroke ? " (keystroke)" : "", ms,
		        json_array_size(items), q->superseded ? ", superseded" : "");
	if (q->superseded) return;
	struct replay_report *rep = r->rep;
	rep->answered++;
	if (q->cold) {
		r->cold[r->n_cold++] = ms;
		if (!rep->first_cold_ms) rep->first_cold_ms = ms;
	} else {
		r->lat[r->n_lat++] = ms;
	}
	bool within = ms <= (double)rep->deadline_ms + DEADLINE_SLACK_MS || rep->deadline_ms <= 0;
	rep->within_deadline += within;
	if (!q->cold) rep->warm_answered++, rep->warm_within += within;
	if (q->alone == 1 && r->in_flight == 0 && q->cpu0 >= 0) {
		double cpu = replay_client_cpu_ms(r->c);
		if (cpu >= 0) r->cpu[r->n_cpu++] = cpu - q->cpu0;
	}
	if (q->keystroke) rep->keystrokes_answered++;
	rep->along_answered += q->along;
	rep->grew_answered += q->grew;
	json_t *top = json_array_get(items, 0);
	const char *text = json_string_value(json_object_get(top, "insertText"));
	size_t tl = text ? strlen(text) : 0;
	/* typed along: the answer agrees with what was shown (either may be
	 * the longer: it grew, or the shown text was cut at a line's end);
	 * nothing agrees only where nothing but blanks was left to show (a
	 * server shows no suggestion of blanks alone) */
	size_t common = tl < q->shown_left ? tl : q->shown_left;
	bool agrees = tl ? !memcmp(text, q->truth, common) : blank(q->truth, q->shown_left);
	if (ms < FAST_MS && agrees) {
		rep->along_fast += q->along;
		rep->grew_fast += q->grew;
	}
	struct tdoc *d = &r->docs[q->doc];
	if (!json_array_size(items)) {
		/* an editor hides the suggestion an answer has none for */
		if (r->shown && r->shown_doc == q->doc && d->version == q->version) shown_clear(r);
		return;
	}
	rep->with_items++;
	if (q->keystroke) rep->keystrokes_with_items++;
	bool correct = q->keystroke && tl && tl <= q->truth_len && !memcmp(text, q->truth, tl);
	if (correct) {
		rep->correct++;
		rep->correct_chars += tl;
	}
	/* on screen only while the document is as it was asked about */
	json_t *range = json_object_get(top, "range");
	if (text && d->version == q->version && range) {
		shown_clear(r);
		r->shown = strdup(text);
		r->shown_len = r->shown ? tl : 0;
		r->shown_doc = q->doc;
		r->shown_version = q->version;
		r->shown_start = pos_offset(d, json_object_get(range, "start"));
		r->shown_end = pos_offset(d, json_object_get(range, "end"));
		if (r->shown_end < r->shown_start) r->shown_end = r->shown_start;
		r->shown_command = json_incref(json_object_get(top, "command"));
		report_shown(r, q, top, correct);
	}
}

/* An inlineCompletion request at the cursor; truth is what the user is
 * about to type there (borrowed), followed in the file by what is after the
 * cursor. */
static int ask(struct run *r, bool keystroke, const char *truth, size_t truth_len)
{
	if (!r->has_cursor) {
		snprintf(r->err, r->errlen, "a request before any goto: no cursor");
		return -EINVAL;
	}
	struct tdoc *d = &r->docs[r->cur];
	if (r->n_reqs == r->cap_reqs) {
		size_t cap = r->cap_reqs ? r->cap_reqs * 2 : 256;
		struct treq *q = realloc(r->reqs, cap * sizeof *q);
		double *l = realloc(r->lat, cap * sizeof *l);
		if (l) r->lat = l;
		double *cl = realloc(r->cold, cap * sizeof *cl);
		if (cl) r->cold = cl;
		double *cp = realloc(r->cpu, cap * sizeof *cp);
		if (cp) r->cpu = cp;
		if (q) r->reqs = q;
		if (!q || !l || !cl || !cp) return -ENOMEM;
		r->cap_reqs = cap;
	}
	/* what the user had asked about before in this document is superseded:
	 * the server answers it empty, and no editor would show it */
	double now = replay_now_ms();
	for (size_t i = 0; i < r->n_reqs; i++) {
		struct treq *o = &r->reqs[i];
		if (o->doc == r->cur && !o->answered && !o->superseded) {
			o->superseded = true;
			r->rep->superseded++;
			if (now - o->sent_ms > (double)r->rep->deadline_ms + DEADLINE_SLACK_MS &&
			    r->rep->deadline_ms > 0) {
				r->rep->superseded_late++;
				r->rep->warm_late += !o->cold;
			}
		}
	}
	struct treq *q = &r->reqs[r->n_reqs];
	memset(q, 0, sizeof *q);
	size_t after = d->len - r->cursor;
	size_t n = truth_len + after < TRUTH_MAX ? truth_len + after : TRUTH_MAX;
	q->truth = malloc(n + 1);
	if (!q->truth) return -ENOMEM;
	size_t t1 = truth_len < n ? truth_len : n;
	memcpy(q->truth, truth, t1);
	memcpy(q->truth + t1, d->text + r->cursor, n - t1);
	q->truth_len = n;
	q->doc = r->cur;
	q->version = d->version;
	q->cold = r->next_cold;
	q->keystroke = keystroke;
	q->alone = r->in_flight + 1;
	q->cpu0 = replay_client_cpu_ms(r->c);
	q->sent_ms = replay_now_ms();
	q->id = replay_client_send_request(
	        r->c, "textDocument/inlineCompletion",
	        json_pack("{s:{s:s}, s:o, s:{s:i}}", "textDocument", "uri", d->uri, "position",
	                  pos_json(d, r->cursor), "context", "triggerKind", 2));
	if (q->id < 0) {
		free(q->truth);
		snprintf(r->err, r->errlen, "the server closed its input");
		return -EPIPE;
	}
	r->n_reqs++;
	r->in_flight++;
	r->rep->requests++;
	if (keystroke) r->rep->keystrokes++;
	r->next_cold = false;
	return 0;
}

/* Lets time pass until `until` (monotonic ms), handling answers. */
static void pump_until(struct run *r, double until)
{
	for (;;) {
		double left = until - replay_now_ms();
		if (left <= 0) {
			replay_client_pump(r->c, 0);
			return;
		}
		if (!replay_client_pump(r->c, (int)left + 1)) return;
	}
}

/* Waits until nothing is in flight (or the server is gone, or TIMEOUT_MS). */
static void await_all(struct run *r)
{
	double until = replay_now_ms() + TIMEOUT_MS;
	while (r->in_flight && replay_now_ms() < until)
		if (!replay_client_pump(r->c, 1000)) break;
}

/* ---- the events ----------------------------------------------------------- */

static bool ask_flag(const json_t *ev)
{
	json_t *a = json_object_get(ev, "ask");
	return !a || json_is_true(a);
}

static int ev_goto(struct run *r, const json_t *ev)
{
	long i = doc_get(r, json_string_value(json_object_get(ev, "goto")), NULL, true);
	if (i < 0) return (int)i;
	struct tdoc *d = &r->docs[i];
	json_int_t line = json_integer_value(json_object_get(ev, "line"));
	json_int_t col = json_integer_value(json_object_get(ev, "column"));
	size_t off = 0;
	for (json_int_t l = 1; l < line && off < d->len; l++) {
		const char *nl = memchr(d->text + off, '\n', d->len - off);
		off = nl ? (size_t)(nl - d->text) + 1 : d->len;
	}
	const char *nl = memchr(d->text + off, '\n', d->len - off);
	size_t eol = nl ? (size_t)(nl - d->text) : d->len;
	off += (size_t)col;
	if (off > eol) off = eol;
	while (off > 0 && ((unsigned char)d->text[off] & 0xC0) == 0x80) off--;
	r->cur = (size_t)i;
	r->has_cursor = true;
	r->cursor = off;
	r->next_cold = true;
	shown_clear(r);
	return 0;
}

static int ev_delete_or_cut(struct run *r, const json_t *ev, bool cut)
{
	if (!r->has_cursor) {
		snprintf(r->err, r->errlen, "\"%s\" before any goto: no cursor",
		         cut ? "cut" : "delete");
		return -EINVAL;
	}
	struct tdoc *d = &r->docs[r->cur];
	size_t a = r->cursor, b = r->cursor;
	json_t *v = json_object_get(ev, cut ? "cut" : "delete");
	if (!cut) {
		a -= chars_back(d->text, r->cursor, (size_t)json_integer_value(v));
	} else if (json_is_integer(v)) {
		b += chars_forward(d->text, d->len, r->cursor, (size_t)json_integer_value(v));
	} else if (!strcmp(json_string_value(v), "line")) {
		const char *nl = memchr(d->text + a, '\n', d->len - a);
		b = nl ? (size_t)(nl - d->text) : d->len;
	} else {
		b = d->len;
	}
	int rc = doc_edit(r, r->cur, a, b, "", 0);
	if (rc) return rc;
	r->cursor = a;
	return ask_flag(ev) ? ask(r, false, "", 0) : 0;
}

static int ev_type(struct run *r, const json_t *ev)
{
	json_t *v = json_object_get(ev, "type");
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	json_t *pj = json_object_get(ev, "paceMs");
	double pace = pj ? (double)json_integer_value(pj) : 150.0;
	bool after = json_is_true(json_object_get(ev, "afterAnswer"));
	if (!r->has_cursor) {
		snprintf(r->err, r->errlen, "\"type\" before any goto: no cursor");
		return -EINVAL;
	}
	for (size_t i = 0; i < n;) {
		size_t k = utf8_len((unsigned char)s[i]);
		if (i + k > n) k = n - i;
		double t0 = replay_now_ms();
		int rc = doc_edit(r, r->cur, r->cursor, r->cursor, s + i, k);
		if (rc) return rc;
		r->cursor += k;
		i += k;
		rc = ask(r, true, s + i, n - i);
		if (rc) return rc;
		if (after) {
			await_all(r);
			t0 = replay_now_ms();
		}
		pump_until(r, t0 + pace);
	}
	return 0;
}

/* Where the suggestion on screen goes on at the cursor, as an editor
 * shows it while the user types along it: its rest after the cursor (*n
 * bytes, borrowed from r->shown), or NULL when none shows there. */
static const char *shown_rest(const struct run *r, size_t *n)
{
	if (!r->shown || !r->has_cursor || r->shown_doc != r->cur || r->cursor < r->shown_start)
		return NULL;
	const struct tdoc *d = &r->docs[r->cur];
	size_t typed = r->cursor - r->shown_start;
	if (typed >= r->shown_len || r->cursor > d->len ||
	    memcmp(d->text + r->shown_start, r->shown, typed))
		return NULL;
	*n = r->shown_len - typed;
	return r->shown + typed;
}

static int ev_type_shown(struct run *r, const json_t *ev)
{
	json_int_t n = json_integer_value(json_object_get(ev, "typeShown"));
	json_t *pj = json_object_get(ev, "paceMs");
	double pace = pj ? (double)json_integer_value(pj) : 150.0;
	if (!r->has_cursor) {
		snprintf(r->err, r->errlen, "\"typeShown\" before any goto: no cursor");
		return -EINVAL;
	}
	for (json_int_t i = 0; i < n; i++) {
		size_t left;
		const char *rest = shown_rest(r, &left);
		if (!rest) break;
		char key[4];
		size_t k = utf8_len((unsigned char)rest[0]);
		if (k > left) k = left;
		memcpy(key, rest, k);
		double t0 = replay_now_ms();
		int rc = doc_edit(r, r->cur, r->cursor, r->cursor, key, k);
		if (rc) return rc;
		r->cursor += k;
		rest = shown_rest(r, &left);
		rc = ask(r, true, rest ? rest : "", rest ? left : 0);
		if (rc) return rc;
		r->reqs[r->n_reqs - 1].along = true;
		r->reqs[r->n_reqs - 1].shown_left = rest ? left : 0;
		r->rep->along_keys++;
		pump_until(r, t0 + pace);
	}
	return 0;
}

/* infill/suggestionGrew: ask again where it says, when that is still the
 * cursor's place in the version the user sees (what the editors do). */
static void on_grew(struct run *r, json_t *params)
{
	if (!r->has_cursor) return;
	const struct tdoc *d = &r->docs[r->cur];
	const char *uri = json_string_value(json_object_get(params, "uri"));
	if (!uri || strcmp(uri, d->uri) ||
	    json_integer_value(json_object_get(params, "version")) != d->version ||
	    pos_offset(d, json_object_get(params, "position")) != r->cursor)
		return;
	size_t left;
	const char *rest = shown_rest(r, &left);
	if (ask(r, false, rest ? rest : "", rest ? left : 0)) return;
	r->reqs[r->n_reqs - 1].grew = true;
	r->reqs[r->n_reqs - 1].shown_left = rest ? left : 0;
	r->rep->grew_asks++;
}

static int ev_accept(struct run *r)
{
	if (!r->shown || !r->has_cursor || r->shown_doc != r->cur ||
	    r->docs[r->cur].version != r->shown_version) {
		r->rep->accept_missed++;
		return 0;
	}
	r->rep->accepted++;
	if (r->shown_command) report_accept(r, r->shown_command);
	size_t a = r->shown_start, b = r->shown_end, n = r->shown_len;
	char *text = r->shown;
	r->shown = NULL;
	shown_clear(r);
	int rc = doc_edit(r, r->cur, a, b, text, n);
	free(text);
	if (rc) return rc;
	r->cursor = a + n;
	return ask(r, false, "", 0);
}

static int run_event(struct run *r, const json_t *ev)
{
	int k = event_kind(ev);
	json_t *v = json_object_get(ev, event_keys[k]);
	switch ((enum replay_event_kind)k) {
	case REPLAY_EVENT_OPEN: {
		long i = doc_get(r, json_string_value(v),
		                 json_string_value(json_object_get(ev, "language")), true);
		return i < 0 ? (int)i : 0;
	}
	case REPLAY_EVENT_CLOSE: {
		long i = doc_get(r, json_string_value(v), NULL, false);
		if (i < 0) return (int)i;
		if (r->docs[i].open)
			replay_client_notify(
			        r->c, "textDocument/didClose",
			        json_pack("{s:{s:s}}", "textDocument", "uri", r->docs[i].uri));
		r->docs[i].open = false;
		if ((size_t)i == r->cur) r->has_cursor = false;
		return 0;
	}
	case REPLAY_EVENT_GOTO: return ev_goto(r, ev);
	case REPLAY_EVENT_DELETE: return ev_delete_or_cut(r, ev, false);
	case REPLAY_EVENT_CUT: return ev_delete_or_cut(r, ev, true);
	case REPLAY_EVENT_TYPE: return ev_type(r, ev);
	case REPLAY_EVENT_TYPE_SHOWN: return ev_type_shown(r, ev);
	case REPLAY_EVENT_ACCEPT: return ev_accept(r);
	case REPLAY_EVENT_ASK: return ask(r, false, "", 0);
	case REPLAY_EVENT_WAIT:
		pump_until(r, replay_now_ms() + (double)json_integer_value(v));
		return 0;
	case REPLAY_EVENT_AWAIT: await_all(r); return 0;
	case REPLAY_EVENT_COUNT: break;
	}
	return -EINVAL;
}

/* ---- the run -------------------------------------------------------------- */

/* initializationOptions: the trace's settings, then the command line's,
 * then what the run itself sets. New reference, or NULL with err set. */
static json_t *init_options(const json_t *trace, const struct replay_opts *o, char *err,
                            size_t errlen)
{
	json_t *init = json_object();
	json_t *ts = json_object_get(trace, "settings");
	if (ts) json_object_update(init, ts);
	if (o->settings) {
		json_error_t jerr;
		json_t *extra = json_loads(o->settings, 0, &jerr);
		if (!extra || !json_is_object(extra)) {
			snprintf(err, errlen, "--settings is not a JSON object");
			json_decref(extra);
			json_decref(init);
			return NULL;
		}
		json_object_update(init, extra);
		json_decref(extra);
	}
	/* a benchmark measures the model asked for, or fails: never the
	 * embedded one standing in for it */
	json_object_set_new(init, "modelFallback", json_false());
	json_object_set_new(init, "cache.enabled", json_boolean(o->cache));
	if (o->debounce_ms >= 0)
		json_object_set_new(init, "completion.debounceMs", json_integer(o->debounce_ms));
	return init;
}

/* Starts the server, waits for the model; 0 or -errno with err set. */
static int server_up(struct run *r, json_t *init)
{
	char *argv[8];
	int argc = 0;
	argv[argc++] = "infill";
	argv[argc++] = "serve";
	argv[argc++] = "--user-config";
	argv[argc++] = "";
	if (r->o->model) {
		argv[argc++] = "--model";
		argv[argc++] = (char *)r->o->model;
	}
	argv[argc] = NULL;
	int rc = replay_client_start(&r->c, r->o->server, argv, r->o->log);
	if (rc) {
		json_decref(init);
		snprintf(r->err, r->errlen, "cannot start the server: %s", strerror(-rc));
		return rc;
	}
	replay_client_on_response(r->c, on_response, r);
	double t0 = replay_now_ms();
	json_t *resp = replay_client_request(
	        r->c, "initialize",
	        json_pack("{s:i, s:n, s:{s:{s:b}, s:{s:[s]}}, s:o}", "processId", (int)getpid(),
	                  "rootUri", "capabilities", "window", "workDoneProgress", 1, "general",
	                  "positionEncodings", "utf-8", "initializationOptions", init),
	        30000);
	const char *enc = json_string_value(
	        json_object_get(json_object_get(json_object_get(resp, "result"), "capabilities"),
	                        "positionEncoding"));
	bool utf8 = enc && !strcmp(enc, "utf-8");
	json_decref(resp);
	if (!resp) {
		snprintf(r->err, r->errlen, "the server did not answer initialize");
		return -EIO;
	}
	if (!utf8) {
		snprintf(r->err, r->errlen, "the server did not take UTF-8 positions");
		return -EPROTO;
	}
	replay_client_notify(r->c, "initialized", json_object());
	char msg[1024];
	rc = replay_client_wait_loaded(r->c, TIMEOUT_MS, msg, sizeof msg);
	if (rc) {
		snprintf(r->err, r->errlen, "the model did not load: %s", msg);
		return rc;
	}
	r->rep->load_ms = replay_now_ms() - t0;
	json_t *st = replay_client_request(r->c, "infill/settings", NULL, 30000);
	json_t *dl = json_object_get(json_object_get(st, "result"), "completion.deadlineMs");
	r->rep->deadline_ms = dl ? (long)json_integer_value(dl) : 200;
	json_decref(st);
	return 0;
}

static json_t *stats_of(struct run *r)
{
	json_t *resp = replay_client_request(r->c, "infill/stats", NULL, 30000);
	json_t *res = json_incref(json_object_get(resp, "result"));
	json_decref(resp);
	return res;
}

/* b - a for a counter of infill/stats named key, or -1 when the server
 * does not have it (an older server, run with --server). */
static long long stat_delta(json_t *s1, const char *key, uint64_t a, uint64_t b)
{
	if (!json_is_integer(json_object_get(s1, key))) return -1;
	return (long long)b - (long long)a;
}

static struct replay_latency summarize(double *v, size_t n)
{
	struct replay_latency l = { .n = n };
	if (!n) return l;
	stats_sort(v, n);
	double sum = 0;
	for (size_t i = 0; i < n; i++) sum += v[i];
	l.mean = sum / (double)n;
	l.p50 = stats_percentile(v, n, 0.5);
	l.p90 = stats_percentile(v, n, 0.9);
	l.p99 = stats_percentile(v, n, 0.99);
	l.max = v[n - 1];
	return l;
}

/* The report's figures from infill/stats before (s0) and after (s1). */
static void stats_into(struct replay_report *rep, json_t *s0, json_t *s1)
{
	struct stats a, b; /* names borrowed from s1 */
	stats_from_json(s0, &a);
	stats_from_json(s1, &b);
#define DELTA(field) stat_delta(s1, stats_keys.field, a.field, b.field)
	rep->prompt = DELTA(prompt_tokens);
	rep->cached = DELTA(cached_prompt_tokens);
	rep->generated = DELTA(generated_tokens);
	rep->fast_path = DELTA(fast_path);
	rep->rejected = DELTA(rejected_candidates);
	rep->never_started = DELTA(never_started);
	rep->cold_requests = DELTA(cold_requests);
	rep->look_drafted = DELTA(draft_tokens);
	rep->look_kept = DELTA(accepted_draft_tokens);
	rep->model_drafted = DELTA(model_draft_tokens);
	rep->model_kept = DELTA(model_drafts_kept);
	rep->shown_answers = DELTA(shown_answers);
	rep->chars_answer = DELTA(shown_chars_answer);
	if (rep->chars_answer < 0) /* a server from before shownCharsAnswer */
		rep->chars_answer = DELTA(first_answer_chars);
	rep->chars_500ms = DELTA(shown_chars_500ms);
	rep->chars_1s = DELTA(shown_chars_1s);
	rep->chars_end = DELTA(shown_chars_end);
	rep->live_answers = DELTA(live_answers);
	rep->past_answers = DELTA(past_answers);
	rep->ahead_answers = DELTA(ahead_answers);
	rep->live_tokens = DELTA(live_tokens);
	rep->ahead_tokens = DELTA(ahead_tokens);
	rep->thrown_tokens = DELTA(live_thrown_tokens) + DELTA(ahead_thrown_tokens);
#undef DELTA
	/* the feedback counts, summed over languages and shapes */
	const char *lang, *shape;
	json_t *l, *c;
	json_object_foreach(json_object_get(s1, "feedback"), lang, l)
	{
		json_object_foreach(l, shape, c)
		{
			rep->fb_shown += (size_t)json_integer_value(json_object_get(c, "shown"));
			rep->fb_accepted +=
			        (size_t)json_integer_value(json_object_get(c, "accepted"));
			rep->fb_accepted +=
			        (size_t)json_integer_value(json_object_get(c, "partlyAccepted"));
			rep->fb_dismissed +=
			        (size_t)json_integer_value(json_object_get(c, "dismissed"));
			rep->fb_hidden += (size_t)json_integer_value(json_object_get(c, "hidden"));
			rep->fb_under_floor += (size_t)json_integer_value(
			        json_object_get(c, "acceptedUnderFloor"));
		}
	}
	snprintf(rep->backend, sizeof rep->backend, "%s", b.backend ? b.backend : "?");
}

static void run_free(struct run *r)
{
	for (size_t i = 0; i < r->n_docs; i++) {
		free(r->docs[i].path);
		free(r->docs[i].text);
	}
	free(r->docs);
	for (size_t i = 0; i < r->n_reqs; i++) free(r->reqs[i].truth);
	free(r->reqs);
	free(r->lat);
	free(r->cold);
	free(r->cpu);
	shown_clear(r);
}

int replay_trace_run(const json_t *trace, const struct replay_opts *o, struct replay_report *rep,
                     char *err, size_t errlen)
{
	memset(rep, 0, sizeof *rep);
	rep->cache = o->cache;
	struct run r = { .o = o, .rep = rep, .err = err, .errlen = errlen };
	err[0] = 0;
	int rc = replay_trace_check(trace, err, errlen);
	if (rc) return rc;
	json_t *init = init_options(trace, o, err, errlen);
	if (!init) return -EINVAL;
	rc = server_up(&r, init); /* takes init */
	if (rc) goto out;
	json_t *s0 = stats_of(&r);
	double cpu0 = replay_client_cpu_ms(r.c);
	size_t i;
	json_t *ev;
	json_array_foreach(json_object_get(trace, "events"), i, ev)
	{
		rc = run_event(&r, ev);
		if (rc) {
			char what[256];
			snprintf(what, sizeof what, "%s", err);
			snprintf(err, errlen, "event %zu: %s", i, what[0] ? what : strerror(-rc));
			json_decref(s0);
			goto out;
		}
	}
	await_all(&r);
	rep->server_cpu_total_ms = replay_client_cpu_ms(r.c) - cpu0;
	json_t *s1 = stats_of(&r);
	stats_into(rep, s0, s1);
	json_decref(s0);
	json_decref(s1);
	rep->latency = summarize(r.lat, r.n_lat);
	rep->cold = summarize(r.cold, r.n_cold);
	rep->server_cpu = summarize(r.cpu, r.n_cpu);
	rc = rep->responses == rep->requests ? 0 : 1;
out:
	replay_client_finish(r.c);
	run_free(&r);
	return rc;
}

/* ---- the report ----------------------------------------------------------- */

static json_t *latency_json(const struct replay_latency *l)
{
	return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "samples", (json_int_t)l->n, "p50",
	                 l->p50, "p90", l->p90, "p99", l->p99, "max", l->max, "mean", l->mean);
}

static double share(size_t a, size_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

json_t *replay_report_json(const struct replay_report *f)
{
	/* judged: answered, or superseded after the deadline had passed */
	size_t judged = f->answered + f->superseded_late;
	json_t *j = json_pack(
	        "{s:b, s:s, s:f, s:I, s:I, s:I, s:o, s:o, s:f, s:{s:f, s:f, s:f, s:f}, s:f, s:I}",
	        "cache", f->cache, stats_keys.backend, f->backend, "loadMs", f->load_ms,
	        "keystrokes", (json_int_t)f->keystrokes, "answered",
	        (json_int_t)f->keystrokes_answered, "nonEmpty",
	        (json_int_t)f->keystrokes_with_items, "latencyMs", latency_json(&f->latency),
	        "coldLatencyMs", latency_json(&f->cold), "coldMs", f->first_cold_ms, "serverCpuMs",
	        "p50", f->server_cpu.p50, "p90", f->server_cpu.p90, "mean", f->server_cpu.mean,
	        "total", f->server_cpu_total_ms, "withinDeadlineShare",
	        share(f->within_deadline, judged), "deadlineMs", (json_int_t)f->deadline_ms);
	json_object_set_new(j, "warmWithinDeadlineShare",
	                    json_real(share(f->warm_within, f->warm_answered + f->warm_late)));
	json_object_set_new(
	        j, "requests",
	        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "sent",
	                  (json_int_t)f->requests, "responses", (json_int_t)f->responses,
	                  "answered", (json_int_t)f->answered, "superseded",
	                  (json_int_t)f->superseded, "supersededLate",
	                  (json_int_t)f->superseded_late, "withItems", (json_int_t)f->with_items,
	                  "withinDeadline", (json_int_t)f->within_deadline, "accepted",
	                  (json_int_t)f->accepted, "acceptMissed", (json_int_t)f->accept_missed));
	json_object_set_new(j, "withItemsShare", json_real(share(f->with_items, f->answered)));
	/* the server's counters over the run, under the server's own keys */
	json_object_set_new(j, stats_keys.prompt_tokens, json_integer(f->prompt));
	json_object_set_new(j, stats_keys.cached_prompt_tokens, json_integer(f->cached));
	json_object_set_new(j, "cachedShare",
	                    json_real(f->prompt > 0 ? (double)f->cached / (double)f->prompt : 0.0));
	json_object_set_new(j, stats_keys.generated_tokens, json_integer(f->generated));
	json_object_set_new(j, stats_keys.fast_path, json_integer(f->fast_path));
	json_object_set_new(j, stats_keys.rejected_candidates, json_integer(f->rejected));
	json_object_set_new(j, stats_keys.never_started, json_integer(f->never_started));
	json_object_set_new(j, stats_keys.cold_requests, json_integer(f->cold_requests));
	json_object_set_new(j, stats_keys.draft_tokens, json_integer(f->look_drafted));
	json_object_set_new(j, stats_keys.accepted_draft_tokens, json_integer(f->look_kept));
	json_object_set_new(j, stats_keys.model_draft_tokens, json_integer(f->model_drafted));
	json_object_set_new(j, stats_keys.model_drafts_kept, json_integer(f->model_kept));
	double shown = f->shown_answers > 0 ? (double)f->shown_answers : 1.0;
	json_object_set_new(
	        j, "seen",
	        json_pack("{s:I, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:f}",
	                  "answers", (json_int_t)f->shown_answers, "charsAtAnswer",
	                  (double)f->chars_answer / shown, "charsAt500ms",
	                  (double)f->chars_500ms / shown, "charsAt1s", (double)f->chars_1s / shown,
	                  "charsAtEnd", (double)f->chars_end / shown, "liveAnswers",
	                  (json_int_t)f->live_answers, "pastAnswers", (json_int_t)f->past_answers,
	                  "aheadAnswers", (json_int_t)f->ahead_answers, "fromMemoryShare",
	                  share((size_t)(f->live_answers + f->past_answers + f->ahead_answers),
	                        f->answered),
	                  "liveTokens", (json_int_t)f->live_tokens, "aheadTokens",
	                  (json_int_t)f->ahead_tokens, "thrownTokens", (json_int_t)f->thrown_tokens,
	                  "thrownShare",
	                  f->generated > 0 ? (double)f->thrown_tokens / (double)f->generated
	                                   : 0.0));
	json_object_set_new(
	        j, "typedAlong",
	        json_pack("{s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:f}", "keys",
	                  (json_int_t)f->along_keys, "answered", (json_int_t)f->along_answered,
	                  "fast", (json_int_t)f->along_fast, "fastShare",
	                  share(f->along_fast, f->along_keys), "grewAsks", (json_int_t)f->grew_asks,
	                  "grewAnswered", (json_int_t)f->grew_answered, "grewFast",
	                  (json_int_t)f->grew_fast, "grewFastShare",
	                  share(f->grew_fast, f->grew_asks)));
	json_object_set_new(j, "correct", json_integer((json_int_t)f->correct));
	json_object_set_new(j, "correctChars", json_integer((json_int_t)f->correct_chars));
	json_object_set_new(j, "feedback",
	                    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "taken",
	                              (json_int_t)f->taken, "shown", (json_int_t)f->fb_shown,
	                              "accepted", (json_int_t)f->fb_accepted, "dismissed",
	                              (json_int_t)f->fb_dismissed, "hidden",
	                              (json_int_t)f->fb_hidden, "acceptedUnderFloor",
	                              (json_int_t)f->fb_under_floor, "acceptanceRate",
	                              share(f->fb_accepted, f->fb_shown)));
	return j;
}

void replay_report_print(const struct replay_report *f, FILE *out)
{
	size_t judged = f->answered + f->superseded_late;
	fprintf(out,
	        "cache %s: %zu requests (%zu keystrokes), %zu answered, %zu superseded (%zu after "
	        "the deadline), backend %s, model load %.0f ms\n",
	        f->cache ? "on " : "off", f->requests, f->keystrokes, f->answered, f->superseded,
	        f->superseded_late, f->backend, f->load_ms);
	fprintf(out, "  latency ms  p50 %.1f  p90 %.1f  p99 %.1f  mean %.1f  (%zu answers)\n",
	        f->latency.p50, f->latency.p90, f->latency.p99, f->latency.mean, f->latency.n);
	fprintf(out,
	        "  cold (first request at a new place) ms  p50 %.1f  p90 %.1f  max %.1f  (%zu)\n",
	        f->cold.p50, f->cold.p90, f->cold.max, f->cold.n);
	fprintf(out,
	        "  within completion.deadlineMs %ld + %.0f ms: %.1f%% (%.1f%% of those not at a "
	        "new "
	        "place);  with items: %.1f%%\n",
	        f->deadline_ms, DEADLINE_SLACK_MS, 100.0 * share(f->within_deadline, judged),
	        100.0 * share(f->warm_within, f->warm_answered + f->warm_late),
	        100.0 * share(f->with_items, f->answered));
	fprintf(out,
	        "  server CPU ms per request answered alone  p50 %.0f  p90 %.0f  mean %.0f;  "
	        "total %.0f\n",
	        f->server_cpu.p50, f->server_cpu.p90, f->server_cpu.mean, f->server_cpu_total_ms);
	fprintf(out,
	        "  prompt tokens %lld, from the prefix cache %lld (%.1f%%); generated %lld; fast "
	        "path %lld; rejected %lld; never started %lld; cold requests %lld\n",
	        f->prompt, f->cached,
	        f->prompt > 0 ? 100.0 * (double)f->cached / (double)f->prompt : 0.0, f->generated,
	        f->fast_path, f->rejected, f->never_started, f->cold_requests);
	fprintf(out,
	        "  drafted tokens checked: prompt lookup %lld (%lld kept), the draft model %lld "
	        "(%lld kept)\n",
	        f->look_drafted, f->look_kept, f->model_drafted, f->model_kept);
	double shown = f->shown_answers > 0 ? (double)f->shown_answers : 1.0;
	fprintf(out,
	        "  seen: the model's %lld answers' top item, mean bytes at the answer %.1f, "
	        "+0.5 s %.1f, +1 s %.1f, at its end %.1f; answered from a live candidate %lld, a "
	        "past answer %lld, an answer decoded ahead %lld (%.1f%% of answers); decoded "
	        "after answers %lld + ahead %lld tokens, thrown %lld (%.1f%% of generated)\n",
	        f->shown_answers, (double)f->chars_answer / shown, (double)f->chars_500ms / shown,
	        (double)f->chars_1s / shown, (double)f->chars_end / shown, f->live_answers,
	        f->past_answers, f->ahead_answers,
	        100.0 * share((size_t)(f->live_answers + f->past_answers + f->ahead_answers),
	                      f->answered),
	        f->live_tokens, f->ahead_tokens, f->thrown_tokens,
	        f->generated > 0 ? 100.0 * (double)f->thrown_tokens / (double)f->generated : 0.0);
	if (f->along_keys || f->grew_asks)
		fprintf(out,
		        "  typed along what was shown: %zu keys, %zu answered, %zu (%.1f%%) within "
		        "%.0f ms with text that agrees; asked again after infill/suggestionGrew: "
		        "%zu, "
		        "%zu answered, %zu (%.1f%%) within %.0f ms\n",
		        f->along_keys, f->along_answered, f->along_fast,
		        100.0 * share(f->along_fast, f->along_keys), FAST_MS, f->grew_asks,
		        f->grew_answered, f->grew_fast, 100.0 * share(f->grew_fast, f->grew_asks),
		        FAST_MS);
	fprintf(out,
	        "  top item is what the file says next: %zu of %zu keystrokes (%.1f%%), %zu "
	        "characters; accepted %zu (%zu with nothing shown)\n",
	        f->correct, f->keystrokes, 100.0 * share(f->correct, f->keystrokes),
	        f->correct_chars, f->accepted, f->accept_missed);
	fprintf(out,
	        "  feedback: %zu suggestions shown, %zu accepted (%.1f%%), %zu dismissed, %zu "
	        "hidden by minConfidence auto; %zu accepted under the floor learned by then (what "
	        "auto hides); the simulated user took %zu (each right one)\n",
	        f->fb_shown, f->fb_accepted, 100.0 * share(f->fb_accepted, f->fb_shown),
	        f->fb_dismissed, f->fb_hidden, f->fb_under_floor, f->taken);
}
