// vscode_fake_server.js - a stand-in language server for tests/editors/
// vscode_ui.js that does, at exactly the worst moment, what infill may do:
// in the same write as its initialize answer it asks
// window/workDoneProgress/create and reports progress on that token (infill
// starts loading the model at initialize), and it writes log lines of every
// level to stderr. The client's answer to the create request goes to the
// file named by $INFILL_FAKE_OUT. With $INFILL_FAKE_INLINE set it is also an
// inline completion provider that always offers that text as the whole
// line at the cursor (VS Code shows what continues what was typed), so that
// what VS Code does with a known ghost text can be tested. With
// $INFILL_FAKE_GROW ("line|longer line|..."), it offers the first line and,
// 300 ms after each answer, tells the client the suggestion grew
// (infill/suggestionGrew) and offers the next one when asked again at the same
// place and version: a suggestion that grows while the user waits.
// No dependencies.
'use strict';
const fs = require('fs');

const out = process.env.INFILL_FAKE_OUT;
const grow = process.env.INFILL_FAKE_GROW ? process.env.INFILL_FAKE_GROW.split('|') : null;
const inline = process.env.INFILL_FAKE_INLINE || (grow && grow[0]);
const versions = new Map();
let stage = { key: '', n: 0 };
const frame = (msg) => {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
};

function handle(msg) {
  if (msg.method === 'initialize') {
    const token = 'fake/progress/1';
    const value = (v) => ({ jsonrpc: '2.0', method: '$/progress', params: { token, value: v } });
    process.stdout.write(Buffer.concat([
      frame({ jsonrpc: '2.0', id: msg.id, result: { capabilities: inline
        ? { textDocumentSync: 1, inlineCompletionProvider: {} } : { textDocumentSync: 1 },
      serverInfo: { name: 'fake' } } }),
      frame({ jsonrpc: '2.0', id: 'create-1', method: 'window/workDoneProgress/create', params: { token } }),
      frame(value({ kind: 'begin', title: 'fake: loading the model', message: 'x.gguf' })),
      frame(value({ kind: 'end', message: 'ready' })),
    ]));
    process.stderr.write('12:00:00.000 info  fake-info-line\n12:00:00.001 warn  fake-warn-line\n' +
      '12:00:00.002 error fake-error-line\na line without a level\n');
  } else if (msg.id === 'create-1' && !msg.method) {
    if (out) fs.writeFileSync(out, JSON.stringify(msg));
  } else if (msg.method === 'textDocument/didOpen' || msg.method === 'textDocument/didChange') {
    versions.set(msg.params.textDocument.uri, msg.params.textDocument.version);
  } else if (msg.method === 'textDocument/inlineCompletion' && inline) {
    const pos = msg.params.position;
    const uri = msg.params.textDocument.uri;
    const version = versions.get(uri);
    let text = inline;
    if (grow) {
      const key = JSON.stringify([uri, version, pos]);
      if (stage.key !== key) stage = { key, n: 0 };
      text = grow[stage.n];
      if (stage.n + 1 < grow.length && !stage.pending) {
        const at = stage;
        at.pending = true;
        setTimeout(() => {
          at.pending = false;
          if (stage !== at) return;
          at.n++;
          process.stdout.write(frame({ jsonrpc: '2.0', method: 'infill/suggestionGrew',
            params: { uri, version, position: pos } }));
        }, 600);
      }
    }
    process.stdout.write(frame({ jsonrpc: '2.0', id: msg.id, result: { items: [{ insertText: text,
      range: { start: { line: pos.line, character: 0 }, end: pos } }] } }));
  } else if (msg.method === 'shutdown') {
    process.stdout.write(frame({ jsonrpc: '2.0', id: msg.id, result: null }));
  } else if (msg.method === 'exit') {
    process.exit(0);
  } else if (msg.id !== undefined && msg.method) {
    process.stdout.write(frame({ jsonrpc: '2.0', id: msg.id, result: null }));
  }
}

let buf = Buffer.alloc(0);
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  for (;;) {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const m = /Content-Length: *(\d+)/i.exec(buf.slice(0, end).toString());
    const len = m ? +m[1] : 0;
    if (buf.length < end + 4 + len) return;
    const body = buf.slice(end + 4, end + 4 + len).toString('utf8');
    buf = buf.slice(end + 4 + len);
    handle(JSON.parse(body));
  }
});
process.stdin.on('end', () => process.exit(0));
