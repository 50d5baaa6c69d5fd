// nextedit_ui.js - next edits in VS Code: after an edit settles (a pause
// in typing, or the cursor leaving the edited line), ask the server where it
// implies another one (infill/nextEdit: a rename's other uses, a changed
// signature's calls, the same fix on alike lines) and show the first at its
// place: the text it replaces struck through, the new text right after it.
//
// Commands (package.json binds the keys, through the context keys set here):
//   infill.nextEdit.jump     Ctrl+Alt+]  the cursor to the edit shown
//   infill.nextEdit.accept   Tab         apply it (the cursor on its line),
//                                        then the one after it is shown
//   infill.nextEdit.dismiss  Escape      drop it
// Context keys: infill.nextEditVisible (one is shown in the active editor),
// infill.nextEditAtCursor (and the cursor is on its line, one empty
// selection). The server counts what was shown, applied and dismissed
// (infill/stats nextEdit*), as the Neovim client reports them.
// The decisions without VS Code in them are in src/nextedit.js.
'use strict';

const vscode = require('vscode');
const N = require('./nextedit');

// A pause this long after the last change is an edit settled. Long enough
// that a word typed at a normal pace (a key each 100-300 ms) is not asked
// about half-typed, short enough to be there when the eyes look up.
const SETTLE_MS = 500;

// hooks: client() -> the running LanguageClient or null; wanted(document)
// -> whether next edits are asked for it (suggestions on, its language
// served, infill.nextEdits on). Returns the controller; dispose() it.
function create(hooks) {
  const docs = new Map(); // document uri string -> state
  const ctx = { visible: false, atCursor: false };
  const subs = [];

  const newType = vscode.window.createTextEditorDecorationType({
    textDecoration: 'line-through',
    backgroundColor: new vscode.ThemeColor('diffEditor.removedTextBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.modifiedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Center,
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    after: {
      backgroundColor: new vscode.ThemeColor('diffEditor.insertedTextBackground'),
      margin: '0 0 0 0.2em',
    },
  });
  subs.push(newType);

  function state(key) {
    let s = docs.get(key);
    if (!s) {
      s = { seq: 0, cts: null, askedVersion: null, sentVersion: null, shown: null };
      docs.set(key, s);
    }
    return s;
  }

  function setContext(name, field, value) {
    if (ctx[field] === value) return;
    ctx[field] = value;
    vscode.commands.executeCommand('setContext', name, value);
  }

  // The edit shown in document doc, or null; one whose text changed under
  // it is dropped.
  function shownIn(doc) {
    const s = docs.get(doc.uri.toString());
    if (!s || !s.shown) return null;
    if (s.shown.version !== doc.version) {
      clear(doc.uri.toString());
      return null;
    }
    return s.shown;
  }

  function updateContext() {
    const ed = vscode.window.activeTextEditor;
    const shown = ed ? shownIn(ed.document) : null;
    setContext('infill.nextEditVisible', 'visible', !!shown);
    setContext('infill.nextEditAtCursor', 'atCursor', !!shown && ed.selections.length === 1 &&
      N.atTarget(shown.range, ed.selection.active, ed.selection.isEmpty));
  }

  function draw(editor) {
    const shown = shownIn(editor.document);
    if (!shown) {
      editor.setDecorations(newType, []);
      return;
    }
    const keys = 'Tab (on its line) applies it, Escape dismisses it, Ctrl+Alt+] jumps to it';
    editor.setDecorations(newType, [{
      range: shown.range,
      hoverMessage: new vscode.MarkdownString().appendText(`infill: next edit → ${shown.edit.text}\n\n${keys}`),
      renderOptions: { after: { contentText: N.label(shown.edit.text) } },
    }]);
  }

  function redraw(key) {
    for (const ed of vscode.window.visibleTextEditors) {
      if (!key || ed.document.uri.toString() === key) draw(ed);
    }
    updateContext();
  }

  // No edit shown for key; an answer still coming is cancelled.
  function clear(key, keepAsking) {
    const s = docs.get(key);
    if (!s) return;
    const had = !!s.shown;
    s.shown = null;
    if (!keepAsking) cancel(s);
    if (had) redraw(key);
  }

  function cancel(s) {
    s.seq++;
    if (s.cts) {
      s.cts.cancel();
      s.cts.dispose();
      s.cts = null;
    }
  }

  function report(method, params) {
    const c = hooks.client();
    if (params && c && c.isRunning()) c.sendNotification(method, params).catch(() => { /* best effort */ });
  }

  function editorOf(doc) {
    const ed = vscode.window.activeTextEditor;
    if (ed && ed.document === doc) return ed;
    return vscode.window.visibleTextEditors.find((e) => e.document === doc) || null;
  }

  // Asks for the next edits of doc and shows the first. force: ask even
  // when this version was asked about already (after an accept).
  async function ask(doc, force) {
    const c = hooks.client();
    if (!c || !c.isRunning() || doc.isClosed || !hooks.wanted(doc)) return;
    const key = doc.uri.toString();
    const s = state(key);
    if (!force && s.askedVersion === doc.version) return;
    cancel(s);
    const seq = s.seq;
    const version = doc.version;
    s.askedVersion = version;
    s.sentVersion = version;
    const cts = new vscode.CancellationTokenSource();
    s.cts = cts; // in flight while set
    const ed = editorOf(doc);
    const cursor = ed ? ed.selection.active : new vscode.Position(0, 0);
    const uri = c.code2ProtocolConverter.asUri(doc.uri);
    let result = null;
    try {
      result = await c.sendRequest(N.METHOD, N.requestParams(uri, version, cursor), cts.token);
    } catch (e) {
      return; // cancelled, or the server went away
    } finally {
      if (s.cts === cts) {
        s.cts = null;
        cts.dispose();
      }
    }
    // an answer about text changed since, or superseded: dropped
    if (seq !== s.seq || doc.isClosed || doc.version !== version) return;
    const edit = N.firstEdit(result, uri);
    if (!edit) {
      clear(key, true);
      return;
    }
    s.shown = { edit, range: c.protocol2CodeConverter.asRange(edit.range), version };
    redraw(key);
    report('textDocument/didShowInlineEdit', N.shownParams(edit));
  }

  const settle = new N.Settle(SETTLE_MS, (key) => {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
    if (doc) ask(doc, false);
  });

  subs.push(
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (!e.contentChanges.length) return;
      const key = e.document.uri.toString();
      const s = docs.get(key);
      // the edit shown is about the text before; so is an answer asked
      // for before this change
      if (s) {
        const stale = s.cts && s.sentVersion !== e.document.version;
        clear(key, !stale);
      }
      if (hooks.wanted(e.document)) {
        settle.changed(key, N.changeEndLine(e.contentChanges[e.contentChanges.length - 1]));
      }
    }),
    vscode.window.onDidChangeTextEditorSelection((e) => {
      settle.moved(e.textEditor.document.uri.toString(), e.selections[0].active.line);
      updateContext();
    }),
    vscode.window.onDidChangeActiveTextEditor(() => updateContext()),
    vscode.window.onDidChangeVisibleTextEditors((eds) => {
      for (const ed of eds) draw(ed);
      updateContext();
    }),
    vscode.workspace.onDidCloseTextDocument((doc) => {
      const key = doc.uri.toString();
      settle.forget(key);
      const s = docs.get(key);
      if (s) cancel(s);
      docs.delete(key);
      updateContext();
    }));

  // ---- the commands ----

  // The cursor to the edit shown in the active editor; with none shown,
  // asks now (the palette's "jump" then shows one to jump to).
  function jump() {
    const ed = vscode.window.activeTextEditor;
    if (!ed) return false;
    const shown = shownIn(ed.document);
    if (!shown) {
      ask(ed.document, true);
      return false;
    }
    const at = shown.range.start;
    ed.selection = new vscode.Selection(at, at);
    ed.revealRange(shown.range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    updateContext();
    return true;
  }

  // Applies the edit shown in the active editor, reports it, and asks for
  // the one after it.
  async function accept() {
    const ed = vscode.window.activeTextEditor;
    if (!ed) return false;
    const doc = ed.document;
    const shown = shownIn(doc);
    if (!shown) return false;
    const key = doc.uri.toString();
    clear(key);
    settle.forget(key);
    // the editor's own edit, not a WorkspaceEdit: VS Code sends a
    // WorkspaceEdit's replace as the smaller edits that differ (`size` ->
    // `area_m2` as `are` and `a_m2`), which the server cannot tell for the
    // edit it offered (it keeps the rest of its list only for that one)
    const start = doc.offsetAt(shown.range.start);
    const cursorIn = N.atTarget(shown.range, ed.selection.active, ed.selection.isEmpty);
    const ok = await ed.edit((b) => b.replace(shown.range, shown.edit.text),
      { undoStopBefore: true, undoStopAfter: true });
    if (!ok) return false;
    settle.forget(key); // asked below, not after a pause
    if (cursorIn) {
      // after the new text, as where typing it would have left the cursor
      const end = doc.positionAt(start + shown.edit.text.length);
      ed.selection = new vscode.Selection(end, end);
    }
    const c = hooks.client();
    const params = N.acceptParams(shown.edit);
    if (c && c.isRunning() && params) {
      c.sendRequest('workspace/executeCommand', params).catch(() => { /* a report: best effort */ });
    }
    await ask(doc, true);
    return true;
  }

  // Drops the edit shown in the active editor (the server counts it
  // rejected).
  function dismiss() {
    const ed = vscode.window.activeTextEditor;
    if (!ed) return false;
    const shown = shownIn(ed.document);
    if (!shown) return false;
    clear(ed.document.uri.toString());
    report('infill/didRejectNextEdit', N.rejectParams(shown.edit));
    return true;
  }

  // Every edit shown dropped, nothing asked (suggestions turned off, the
  // server restarted: its edits' ids are the old server's).
  function clearAll() {
    settle.dispose();
    for (const key of [...docs.keys()]) clear(key);
    docs.clear();
    updateContext();
  }

  return {
    jump, accept, dismiss, clearAll,
    // for a test or a caller: the edit shown in doc ({range, text}) or null
    visible: (doc) => {
      const shown = shownIn(doc);
      return shown ? { range: shown.range, text: shown.edit.text } : null;
    },
    dispose: () => {
      clearAll();
      for (const d of subs) d.dispose();
    },
  };
}

module.exports = { create, SETTLE_MS };
