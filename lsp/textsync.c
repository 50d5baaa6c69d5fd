/*
 * textsync.c - textDocument/didOpen, didChange, didClose, didSave: keeps the
 * open documents in step with the editor and tells the pipeline about each
 * edit (so syntax trees can be edited, not re-parsed).
 *
 * These are notifications: a malformed one cannot be answered, so it is
 * logged and skipped. An incremental change whose range runs past the end
 * is clamped (LSP positions clamp); one whose end precedes its start is
 * skipped, and the rest of the batch still applies in order. A didChange
 * whose version is older than the document's is ignored with a warning.
 */
#include "feedback.h"
#include "server_priv.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of a file's head worth prefilling when it is opened: about what the
 * prefix budget (1024 tokens, ~3.5 bytes each) holds, so a first completion
 * near the top of the file finds its prefix cached. */
#define HEAD_BYTES 3072

/* Where the head ends: the start of the line holding byte HEAD_BYTES (the
 * whole file when it is shorter). */
static size_t head_end(const struct doc *d)
{
	size_t len = doc_length(d);
	if (len <= HEAD_BYTES) return len;
	return doc_line_start(d, doc_line_at(d, HEAD_BYTES));
}

void textsync_did_open(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	json_t *td = json_object_get(params, "textDocument");
	const char *uri = json_get_string(td, "uri");
	json_t *text = json_object_get(td, "text");
	if (!uri || !json_is_string(text)) {
		log_warn(s->log, "didOpen without textDocument.uri or .text: ignored");
		return;
	}
	const char *lang = json_get_string(td, "languageId");
	json_int_t version = json_integer_value(json_object_get(td, "version"));
	if (docs_find(s->docs, uri)) {
		log_debug(s->log, "didOpen of %s, which is open: replacing it", uri);
		completions_doc_closed(s->completions, uri);
		feedback_doc_closed(s->feedback, uri);
		nextedits_doc_closed(s->nextedits, uri);
		project_doc_closed(s->project, uri);
		pipeline_doc_close(s->pipeline, uri);
	}
	struct docs_entry *e = docs_open(s->docs, uri, lang, version, json_string_value(text),
	                                 json_string_length(text));
	if (!e) {
		log_error(s->log, "out of memory opening %s", uri);
		server_show_message(s, MESSAGE_ERROR, "infill: out of memory opening %s", uri);
		return;
	}
	log_debug(s->log, "opened %s (%s, %zu bytes)", uri, e->language_id, doc_length(e->doc));
	pipeline_doc_open(s->pipeline, uri, e->language_id, e->doc);
	completions_warm(s, e, head_end(e->doc));
}

/* Applies one TextDocumentContentChangeEvent; false when it was skipped.
 * *at receives the end of the inserted text. */
static bool apply_change(struct server *s, struct docs_entry *e, json_t *change, size_t *at)
{
	json_t *text = json_object_get(change, "text");
	if (!json_is_string(text)) {
		log_warn(s->log, "didChange of %s: a change without text skipped", e->uri);
		return false;
	}
	const char *t = json_string_value(text);
	size_t tlen = json_string_length(text);
	json_t *range = json_object_get(change, "range");
	size_t start, end, old_len = doc_length(e->doc);
	if (!range) { /* full text */
		start = 0;
		end = old_len;
	} else {
		struct doc_pos a, b;
		if (!json_get_position(json_object_get(range, "start"), &a) ||
		    !json_get_position(json_object_get(range, "end"), &b)) {
			log_warn(s->log, "didChange of %s: a malformed range skipped", e->uri);
			return false;
		}
		start = doc_offset_at(e->doc, a, s->encoding);
		end = doc_offset_at(e->doc, b, s->encoding);
		if (end < start) {
			log_warn(s->log, "didChange of %s: a range ending before it starts skipped",
			         e->uri);
			return false;
		}
	}
	nextedits_change(s, e, start, end, t, tlen);
	if (doc_replace(e->doc, start, end, t, tlen)) {
		log_error(s->log, "didChange of %s: out of memory applying a change", e->uri);
		return false;
	}
	e->generation++;
	pipeline_doc_edit(s->pipeline, e->uri, e->doc, start, end, start + tlen);
	feedback_edit(s->feedback, e->uri, e->doc, start, end, tlen);
	*at = start + tlen;
	return true;
}

void textsync_did_change(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	json_t *td = json_object_get(params, "textDocument");
	const char *uri = json_get_string(td, "uri");
	json_t *changes = json_object_get(params, "contentChanges");
	if (!uri || !json_is_array(changes)) {
		log_warn(s->log, "didChange without textDocument.uri or contentChanges: ignored");
		return;
	}
	struct docs_entry *e = docs_find(s->docs, uri);
	if (!e) {
		log_warn(s->log, "didChange of %s, which is not open: ignored", uri);
		return;
	}
	/* Versions only grow (LSP): an older one is a change that arrived late
	 * or twice, and applying it would garble the text. */
	json_t *version = json_object_get(td, "version");
	if (json_is_integer(version) && json_integer_value(version) < e->version) {
		log_warn(s->log,
		         "didChange of %s with version %lld, older than the document's %lld: "
		         "ignored",
		         uri, (long long)json_integer_value(version), (long long)e->version);
		return;
	}
	size_t i, at = 0;
	bool any = false;
	json_t *change;
	json_array_foreach(changes, i, change) any |= apply_change(s, e, change, &at);
	if (json_is_integer(version)) e->version = json_integer_value(version);
	/* the next completion most likely comes where the text changed */
	if (any) project_did_edit(s->project, e, at);
	if (any) completions_warm(s, e, at);
}

void textsync_did_close(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	const char *uri = json_get_string(json_object_get(params, "textDocument"), "uri");
	if (!uri) {
		log_warn(s->log, "didClose without textDocument.uri: ignored");
		return;
	}
	completions_doc_closed(s->completions, uri);
	feedback_doc_closed(s->feedback, uri);
	nextedits_doc_closed(s->nextedits, uri);
	if (docs_close(s->docs, uri)) {
		log_warn(s->log, "didClose of %s, which is not open", uri);
		return;
	}
	pipeline_doc_close(s->pipeline, uri);
	log_debug(s->log, "closed %s", uri);
}

void textsync_did_save(struct server *s, json_t *id, json_t *params)
{
	(void)id;
	const char *uri = json_get_string(json_object_get(params, "textDocument"), "uri");
	/* The text already arrived through didChange; only a saved
	 * .infill.json at the workspace root means something here. */
	log_debug(s->log, "saved %s", uri ? uri : "?");
	if (uri) workspace_file_saved(s, uri);
	if (uri) project_file_changed(s->project, uri);
}

/* infill/document {textDocument: {uri}}: the server's copy of a document
 * ({uri, languageId, version, text}), for tests and for debugging a client
 * whose edits drift. -32602 when it is not open. */
void textsync_show_document(struct server *s, json_t *id, json_t *params)
{
	const char *uri = json_get_string(json_object_get(params, "textDocument"), "uri");
	struct docs_entry *e = uri ? docs_find(s->docs, uri) : NULL;
	if (!e) {
		server_reply_error(s, id, RPC_ERROR_INVALID_PARAMS, "no such open document");
		return;
	}
	char *text = doc_text(e->doc);
	json_t *jtext = text ? json_stringn(text, doc_length(e->doc)) : NULL;
	free(text);
	if (!jtext) /* not UTF-8 after a bad edit split a character */
		jtext = json_null();
	server_reply(s, id,
	             json_pack("{s:s, s:s, s:I, s:o}", "uri", e->uri, "languageId", e->language_id,
	                       "version", (json_int_t)e->version, "text", jtext));
}
