// vscode_fake_server.js - a stand-in language server for tests/editors/
// vscode_ui.js that does, at exactly the worst moment, what infill may do:
// in the same write as its initialize answer it asks
// window/workDoneProgress/create and reports progress on that token (infill
// starts loading the model at initialize), and it writes log lines of every
// level to stderr. The client's answer to the create request goes to the
// file named by $INFILL_FAKE_OUT. With $INFILL_FAKE_INLINE set it is also an
// inline completion provider that always offers that text as the whole
// line at the cursor (VS Code shows what continues what was typed), so that
// what VS Code does with a known ghost text can be tested. No dependencies.
'use strict';
const fs = require('fs');

const out = process.env.INFILL_FAKE_OUT;
const inline = process.env.INFILL_FAKE_INLINE;
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
  } else if (msg.method === 'textDocument/inlineCompletion' && inline) {
    const pos = msg.params.position;
    process.stdout.write(frame({ jsonrpc: '2.0', id: msg.id, result: { items: [{ insertText: inline,
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
