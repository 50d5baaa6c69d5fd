// The round trip the extension relies on, through the same protocol layer
// vscode-languageclient uses (vscode-languageserver-protocol over
// vscode-jsonrpc, the versions it depends on): initialize with the
// capabilities the client sends, workspace/configuration answered by
// src/settings.js from "user settings", didOpen/didChange, then
// textDocument/inlineCompletion returning items the ghost text can show;
// and next edits as src/nextedit_ui.js asks for them and reports on them.
// Needs INFILL_BIN and INFILL_MODEL (set by tests/editors/vscode.sh).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const cp = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const S = require('../src/settings');
const T = require('../src/text');
const F = require('../src/feedback');
const N = require('../src/nextedit');
const pkg = require('../package.json');

let P = null;
try {
  P = require('vscode-languageserver-protocol/node');
} catch (e) { /* skipped below */ }

const bin = process.env.INFILL_BIN;
const model = process.env.INFILL_MODEL;

const source = `import os


def list_python_files(root):
    """Return the paths of the Python files under root."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(".py"):
                found.append(os.path.join(dirpath, name))
    return found


def main():
`;

test('inline completion round trip with the real server', { timeout: 170000 }, async (t) => {
  if (!P) return t.skip('node_modules missing (npm ci in editors/vscode)');
  if (!bin || !fs.existsSync(bin)) return t.skip('INFILL_BIN not set (run through meson)');
  if (!model || !fs.existsSync(model)) return t.skip('test model missing');

  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-vscode-'));
  const proc = cp.spawn(bin, ['--model', model, '--user-config', '', '--stdio'],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, XDG_CONFIG_HOME: home } });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const conn = P.createProtocolConnection(new P.StreamMessageReader(proc.stdout),
    new P.StreamMessageWriter(proc.stdin));

  // what a user would have in settings.json
  const user = {
    'completion.debounceMs': { defaultValue: 30, globalValue: 0 },
    'completion.maxTokens': { defaultValue: 64, workspaceValue: 8 },
    'completion.candidates': { defaultValue: 3, globalValue: 1 },
  };
  const inspect = (k) => user[k] || { defaultValue: null };
  const keys = S.serverKeys(pkg);
  let pulls = 0;
  conn.onRequest(P.ConfigurationRequest.type, (params) => {
    pulls++;
    return params.items.map((i) => (i.section === 'infill' ? S.serverSettings(keys, inspect) : null));
  });
  const warnings = [];
  conn.onNotification(P.ShowMessageNotification.type, (m) => warnings.push(m));
  const progress = [];
  conn.onRequest(P.WorkDoneProgressCreateRequest.type, ({ token }) => {
    conn.onProgress(P.WorkDoneProgress.type, token, (v) => progress.push(v));
    return null;
  });
  conn.listen();
  try {
    const init = await conn.sendRequest(P.InitializeRequest.type, {
      processId: process.pid,
      rootUri: 'file://' + home,
      clientInfo: { name: 'Visual Studio Code', version: '1.91.0' },
      initializationOptions: S.serverSettings(keys, inspect),
      capabilities: {
        window: { workDoneProgress: true, showMessage: {} },
        workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: true } },
        textDocument: {
          synchronization: { dynamicRegistration: true, didSave: true },
          inlineCompletion: { dynamicRegistration: true },
        },
      },
    });
    assert.ok(init.capabilities.inlineCompletionProvider, 'inlineCompletionProvider advertised');
    // feedback: vscode-languageclient registers these commands, which VS
    // Code runs when an item (whose command it is) is accepted: a completion,
    // a next edit
    assert.deepStrictEqual(init.capabilities.executeCommandProvider,
      { commands: ['infill.didAcceptCompletion', 'infill.didAcceptNextEdit'] });
    await conn.sendNotification(P.InitializedNotification.type, {});

    const uri = 'file://' + path.join(home, 'walk.py');
    await conn.sendNotification(P.DidOpenTextDocumentNotification.type,
      { textDocument: { uri, languageId: 'python', version: 1, text: source } });
    const lines = source.split('\n');
    let line = lines.length - 1; // the empty last line
    let col = 0;
    let version = 1;
    const type = async (s) => {
      await conn.sendNotification(P.DidChangeTextDocumentNotification.type, {
        textDocument: { uri, version: ++version },
        contentChanges: [{ range: { start: { line, character: col }, end: { line, character: col } }, text: s }],
      });
      col += s.length;
    };
    let typed = '';
    let items = [];
    // in a comment: random weights give random text, which is valid there
    for (const s of ['    # count the lines in every file under the', ' ', 'r', 'o', 'o', 't', 's']) {
      await type(s);
      typed += s;
      const deadline = Date.now() + (s.length > 1 ? 60000 : 15000);
      while (Date.now() < deadline) {
        const r = await conn.sendRequest(P.InlineCompletionRequest.type, {
          textDocument: { uri }, position: { line, character: col },
          context: { triggerKind: P.InlineCompletionTriggerKind.Automatic },
        });
        items = Array.isArray(r) ? r : (r && r.items) || [];
        if (items.length) break;
        await new Promise((res) => setTimeout(res, 200)); // the model may still be loading
      }
      if (items.length) break;
    }
    assert.ok(items.length > 0, 'a non-empty inline completion; server log:\n' + stderr.slice(-2000));
    assert.ok(pulls >= 1, 'the server pulled workspace/configuration');
    const eff = await conn.sendRequest('infill/settings', { languageId: 'python' });
    const flat = JSON.stringify(eff);
    assert.ok(/"maxTokens":8\b|"completion.maxTokens":8\b/.test(flat), 'maxTokens 8 took effect: ' + flat);
    assert.deepStrictEqual(warnings.filter((w) => w.type <= 2), [], 'no warnings about our settings');
    for (const it of items) {
      assert.strictEqual(typeof it.insertText, 'string');
      assert.ok(it.range, 'item has a range');
      assert.strictEqual(it.range.start.line, line);
      assert.strictEqual(it.range.end.line, line);
      assert.ok(it.range.start.character <= col && it.range.end.character >= col, 'range covers the cursor');
      const before = typed.slice(it.range.start.character);
      assert.ok(T.remainder(it.insertText, before) !== null,
        `item ${JSON.stringify(it.insertText)} continues what was typed ${JSON.stringify(before)}`);
    }
    for (const v of progress) {
      if (v.kind !== 'end') assert.ok(S.progressText(v, 'x'), 'progress formats');
    }
    t.diagnostic(`first item: ${JSON.stringify(items[0].insertText)}; progress events: ${progress.length}`);

    // feedback: the extension's reports (src/feedback.js) reach infill/stats:
    // the answer's first item shown, a word of it accepted, then all of it
    // (the item's command, as vscode-languageclient sends it)
    const feedback = async () => {
      const py = ((await conn.sendRequest('infill/stats')).feedback || {}).python || {};
      const sum = {};
      for (const shape of Object.values(py)) {
        for (const [k, v] of Object.entries(shape)) sum[k] = (sum[k] || 0) + v;
      }
      return sum;
    };
    await conn.sendNotification('textDocument/didShowCompletion', F.shownParams(items));
    await conn.sendNotification('textDocument/didPartiallyAcceptCompletion',
      F.partialParams(items[0], items[0].insertText.length > 1 ? 1 : 0));
    const c = items[0].command;
    assert.strictEqual(await conn.sendRequest('workspace/executeCommand',
      { command: c.command, arguments: c.arguments }), null);
    const fb = await feedback();
    assert.strictEqual(fb.shown, 1, JSON.stringify(fb));
    assert.strictEqual(fb.accepted, 1, JSON.stringify(fb));
    assert.strictEqual(fb.partlyAccepted, 1, JSON.stringify(fb));

    await conn.sendRequest(P.ShutdownRequest.type);
    await conn.sendNotification(P.ExitNotification.type);
    const code = await new Promise((res) => proc.on('exit', res));
    assert.strictEqual(code, 0, 'clean exit');
  } finally {
    conn.dispose();
    proc.kill();
    fs.rmSync(home, { recursive: true, force: true });
  }
});

// Next edits as the extension asks (src/nextedit.js's params): a rename
// typed as VS Code sends it (the word replaced by its first letter, then a
// key at a time), the next use offered, applied as the extension applies it,
// the use after it offered; a dismissed one; infill/stats counts them.
test('next edits round trip with the real server', { timeout: 120000 }, async (t) => {
  if (!P) return t.skip('node_modules missing (npm ci in editors/vscode)');
  if (!bin || !fs.existsSync(bin)) return t.skip('INFILL_BIN not set (run through meson)');
  if (!model || !fs.existsSync(model)) return t.skip('test model missing');

  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-vscode-ne-'));
  const proc = cp.spawn(bin, ['--model', model, '--user-config', '', '--stdio'],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, XDG_CONFIG_HOME: home } });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const conn = P.createProtocolConnection(new P.StreamMessageReader(proc.stdout),
    new P.StreamMessageWriter(proc.stdin));
  conn.onRequest(P.ConfigurationRequest.type, (params) => params.items.map(() => null));
  conn.onRequest(P.WorkDoneProgressCreateRequest.type, () => null);
  conn.listen();
  try {
    const init = await conn.sendRequest(P.InitializeRequest.type, {
      processId: process.pid, rootUri: 'file://' + home, capabilities: {},
    });
    assert.deepStrictEqual(init.capabilities.experimental.nextEditProvider.methods[0], N.METHOD);
    await conn.sendNotification(P.InitializedNotification.type, {});
    const uri = 'file://' + path.join(home, 'area.py');
    let text = 'def area(w, h):\n    size = w * h\n    print("size", size)\n    return size\n\n' +
      'def other():\n    size = 3\n    return size\n';
    let version = 1;
    await conn.sendNotification(P.DidOpenTextDocumentNotification.type,
      { textDocument: { uri, languageId: 'python', version, text } });
    const lines = () => text.split('\n');
    const change = async (line, from, to, s) => {
      const ls = lines();
      ls[line] = ls[line].slice(0, from) + s + ls[line].slice(to);
      text = ls.join('\n');
      await conn.sendNotification(P.DidChangeTextDocumentNotification.type, {
        textDocument: { uri, version: ++version },
        contentChanges: [{ range: { start: { line, character: from }, end: { line, character: to } }, text: s }],
      });
    };
    const ask = async (line, character) => N.firstEdit(
      await conn.sendRequest(N.METHOD, N.requestParams(uri, version, { line, character })), uri);
    const apply = async (e) => {
      assert.strictEqual(e.range.start.line, e.range.end.line);
      await change(e.range.start.line, e.range.start.character, e.range.end.character, e.text);
      assert.strictEqual(await conn.sendRequest('workspace/executeCommand', N.acceptParams(e)), null);
    };

    // `size` selected and typed over: `a` replaces it, then r, e, a, ...
    await change(1, 4, 8, 'a');
    let col = 5;
    for (const c of 'rea_m2') await change(1, col, col++, c);
    const stale = await conn.sendRequest(N.METHOD, N.requestParams(uri, version - 1, { line: 1, character: col }));
    assert.deepStrictEqual(stale.edits, [], 'an older version is answered with no edits');
    let e = await ask(1, col);
    assert.ok(e, 'the next use offered; server log:\n' + stderr.slice(-2000));
    assert.deepStrictEqual([e.range.start.line, e.text, N.label(e.text)], [2, 'area_m2', 'area_m2']);
    await conn.sendNotification('textDocument/didShowInlineEdit', N.shownParams(e));
    await apply(e);
    e = await ask(2, e.range.start.character);
    assert.ok(e && e.range.start.line === 3, 'the use after it: ' + JSON.stringify(e));
    await conn.sendNotification('textDocument/didShowInlineEdit', N.shownParams(e));
    await apply(e);
    assert.strictEqual(await ask(3, 11), null, 'nothing more: other() keeps its size');
    assert.deepStrictEqual(lines().slice(1, 4), ['    area_m2 = w * h', '    print("size", area_m2)', '    return area_m2']);

    // other(): renamed, offered, dismissed
    await change(6, 4, 8, 'n');
    e = await ask(6, 5);
    assert.ok(e && e.range.start.line === 7 && e.text === 'n', JSON.stringify(e));
    await conn.sendNotification('textDocument/didShowInlineEdit', N.shownParams(e));
    await conn.sendNotification('infill/didRejectNextEdit', N.rejectParams(e));
    const st = await conn.sendRequest('infill/stats');
    t.diagnostic(`nextEdit stats: requests ${st.nextEditRequests}, offered ${st.nextEditOffered}, ` +
      `shown ${st.nextEditShown}, accepted ${st.nextEditAccepted}, rejected ${st.nextEditRejected}`);
    assert.strictEqual(st.nextEditShown, 3);
    assert.strictEqual(st.nextEditAccepted, 2);
    assert.strictEqual(st.nextEditRejected, 1);

    await conn.sendRequest(P.ShutdownRequest.type);
    await conn.sendNotification(P.ExitNotification.type);
  } finally {
    conn.dispose();
    proc.kill();
    fs.rmSync(home, { recursive: true, force: true });
  }
});
