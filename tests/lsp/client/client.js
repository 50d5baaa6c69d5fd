// client.js - drives infill with Microsoft's LSP client libraries
// (vscode-jsonrpc, vscode-languageserver-protocol): initialize, didOpen, a
// few didChange, completion and inline completion requests, shutdown, exit.
// usage: node client.js INFILL   (exit 0 pass, 1 fail, 77 skip)
'use strict';

let P;
try {
  P = require('vscode-languageserver-protocol/node');
} catch (e) {
  console.log('SKIP: node_modules missing (run npm ci in tests/lsp/client)');
  process.exit(77);
}
const cp = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

function check(cond, what, value) {
  if (!cond) {
    throw new Error(what + (value === undefined ? '' : ': ' + JSON.stringify(value)));
  }
}

async function main() {
  const binary = process.argv[2];
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-node-'));
  const proc = cp.spawn(binary, ['--stdio'], {
    env: { ...process.env, XDG_CONFIG_HOME: home },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  const conn = P.createProtocolConnection(
    new P.StreamMessageReader(proc.stdout), new P.StreamMessageWriter(proc.stdin));
  let configurationPulls = 0;
  conn.onRequest(P.ConfigurationRequest.type, (params) => {
    configurationPulls++;
    check(params.items[0].section === 'infill', 'asks for section infill', params);
    return [{ completion: { debounceMs: 5 } }];
  });
  const shown = [];
  conn.onNotification(P.ShowMessageNotification.type, (m) => shown.push(m));
  conn.listen();

  const uri = 'file://' + path.join(home, 'main.py');
  const init = await conn.sendRequest(P.InitializeRequest.type, {
    processId: process.pid,
    rootUri: 'file://' + home,
    clientInfo: { name: 'vscode-languageserver-protocol test' },
    capabilities: {
      general: { positionEncodings: ['utf-16'] },
      workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: false } },
      textDocument: {
        synchronization: { dynamicRegistration: false },
        completion: { completionItem: { snippetSupport: false } },
        inlineCompletion: { dynamicRegistration: false },
      },
    },
  });
  const caps = init.capabilities;
  check(caps.positionEncoding === 'utf-16', 'utf-16 negotiated', caps);
  check(caps.textDocumentSync.change === P.TextDocumentSyncKind.Incremental, 'incremental', caps);
  check(caps.completionProvider && caps.inlineCompletionProvider, 'completion providers', caps);
  await conn.sendNotification(P.InitializedNotification.type, {});

  await conn.sendNotification(P.DidOpenTextDocumentNotification.type, {
    textDocument: { uri, languageId: 'python', version: 1, text: 'import os\n\ndef main():\n    pa' },
  });
  const edits = [
    { range: { start: { line: 3, character: 6 }, end: { line: 3, character: 6 } }, text: 't' },
    { range: { start: { line: 3, character: 7 }, end: { line: 3, character: 7 } }, text: 'h' },
    { range: { start: { line: 3, character: 8 }, end: { line: 3, character: 8 } }, text: ' = os.' },
  ];
  let version = 1;
  for (const e of edits) {
    await conn.sendNotification(P.DidChangeTextDocumentNotification.type, {
      textDocument: { uri, version: ++version }, contentChanges: [e],
    });
  }
  const doc = await conn.sendRequest('infill/document', { textDocument: { uri } });
  check(doc.text === 'import os\n\ndef main():\n    path = os.', 'edits applied', doc);
  check(doc.version === 4, 'version kept', doc);

  const list = await conn.sendRequest(P.CompletionRequest.type, {
    textDocument: { uri }, position: { line: 3, character: 14 },
    context: { triggerKind: P.CompletionTriggerKind.TriggerCharacter, triggerCharacter: '.' },
  });
  check(list && Array.isArray(list.items) && list.isIncomplete === true, 'a CompletionList', list);
  if (P.InlineCompletionRequest) {
    const inline = await conn.sendRequest(P.InlineCompletionRequest.type, {
      textDocument: { uri }, position: { line: 3, character: 14 },
      context: { triggerKind: P.InlineCompletionTriggerKind.Automatic },
    });
    check(inline && Array.isArray(inline.items), 'an InlineCompletionList', inline);
  }
  // a request cancelled through the library's own token
  const source = new P.CancellationTokenSource();
  const cancelled = conn.sendRequest(P.CompletionRequest.type, {
    textDocument: { uri }, position: { line: 3, character: 14 },
  }, source.token);
  source.cancel();
  try {
    const r = await cancelled;
    check(r && Array.isArray(r.items), 'answered before the cancel arrived', r);
  } catch (e) {
    check(e.code === P.LSPErrorCodes.RequestCancelled, 'cancelled with -32800', e.code);
  }
  check(configurationPulls >= 1, 'workspace/configuration was pulled', configurationPulls);
  // settings warnings would mean our configuration was misread (a missing
  // model is reported as an error, type 1, and is not this test's business)
  check(shown.filter((m) => m.type === P.MessageType.Warning).length === 0, 'no warnings', shown);

  await conn.sendRequest(P.ShutdownRequest.type);
  await conn.sendNotification(P.ExitNotification.type);
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 5000))]);
  check(code === 0, 'exit status 0 after shutdown + exit', code);
  conn.dispose();
  fs.rmSync(home, { recursive: true, force: true });
  console.log('ok: vscode-languageserver-protocol client session');
}

const timer = setTimeout(() => { console.error('FAIL: timed out'); process.exit(1); }, 30000);
main().then(() => { clearTimeout(timer); process.exit(0); },
  (e) => { console.error('FAIL:', e.stack || e); process.exit(1); });
