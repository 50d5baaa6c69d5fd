// nextedit.js - the pure part of next edits in VS Code (src/nextedit_ui.js
// draws them and binds the keys): when an edit has settled and the server is
// asked (infill/nextEdit), which edit of its answer is shown and how, and the
// params of the reports on it. The same rules as editors/nvim's
// infill/nextedit.lua. No vscode import, so node's test runner checks it.
'use strict';

// The method asked; the server answers textDocument/copilotInlineEdit too.
const METHOD = 'infill/nextEdit';

// infill/nextEdit params: the document as the server knows it (uri as
// vscode-languageclient sent it, version so that an answer about older text
// is empty) and the cursor.
function requestParams(uri, version, position) {
  return { textDocument: { uri, version }, position: { line: position.line, character: position.character } };
}

function isPos(p) {
  return p && Number.isInteger(p.line) && Number.isInteger(p.character) && p.line >= 0 && p.character >= 0;
}

// The edit of an answer to show: the first (the server ranks them) that is
// for this document and well formed, or null.
function firstEdit(result, uri) {
  const edits = result && Array.isArray(result.edits) ? result.edits : [];
  for (const e of edits) {
    if (!e || typeof e.text !== 'string' || !e.range || !isPos(e.range.start) || !isPos(e.range.end)) continue;
    if (e.textDocument && e.textDocument.uri && e.textDocument.uri !== uri) continue;
    return e;
  }
  return null;
}

// What is drawn after the replaced text: the new text's first line, with
// "…" when more lines follow; nothing for a deletion (the struck-through
// text says it).
function label(text) {
  const nl = text.indexOf('\n');
  return nl < 0 ? text : text.slice(0, nl).replace(/\r$/, '') + '…';
}

// The cursor is at the edit (Tab applies it there): one empty selection on
// one of the lines the edit replaces. range: {start, end} with line fields
// (LSP's or VS Code's).
function atTarget(range, cursor, selectionEmpty) {
  return !!(range && cursor && selectionEmpty &&
    cursor.line >= range.start.line && cursor.line <= range.end.line);
}

// The reports (lsp/nextedit_rpc.c): shown and dismissed name the edit by its
// command; applied is the command itself, sent as workspace/executeCommand.
// null for an edit without a command (nothing to report).
function shownParams(edit) {
  return edit && edit.command ? { item: { command: edit.command } } : null;
}

function rejectParams(edit) {
  return shownParams(edit);
}

function acceptParams(edit) {
  const c = edit && edit.command;
  return c && typeof c.command === 'string' ? { command: c.command, arguments: c.arguments || [] } : null;
}

// When an edit settles: a pause of delayMs after a document's last change,
// or at once when the cursor leaves the line that change ended on (as the
// Neovim client asks on leaving insert mode). ask(key) is called once per
// run of changes. timers: {set(fn, ms) -> handle, clear(handle)}.
class Settle {
  constructor(delayMs, ask, timers) {
    this.delayMs = delayMs;
    this.ask = ask;
    this.timers = timers || { set: (fn, ms) => setTimeout(fn, ms), clear: (h) => clearTimeout(h) };
    this.pending = new Map(); // key -> { line, timer }
  }

  // A change of document key whose last edited line is line.
  changed(key, line) {
    this.forget(key);
    const p = { line, timer: null };
    p.timer = this.timers.set(() => this.fire(key, p), this.delayMs);
    this.pending.set(key, p);
  }

  // The cursor of document key is on line now.
  moved(key, line) {
    const p = this.pending.get(key);
    if (p && p.line !== line) this.fire(key, p);
  }

  fire(key, p) {
    if (this.pending.get(key) !== p) return;
    this.forget(key);
    this.ask(key);
  }

  // No ask for key's changes so far (the document closed, or asked already).
  forget(key) {
    const p = this.pending.get(key);
    if (p) this.timers.clear(p.timer);
    this.pending.delete(key);
  }

  dispose() {
    for (const key of [...this.pending.keys()]) this.forget(key);
  }
}

// The line a change ends on: its start line plus the lines it inserted.
function changeEndLine(change) {
  const nl = (change.text.match(/\n/g) || []).length;
  return change.range.start.line + nl;
}

module.exports = {
  METHOD, requestParams, firstEdit, label, atTarget, shownParams, rejectParams, acceptParams,
  Settle, changeEndLine,
};
