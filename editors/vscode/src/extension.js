// extension.js - the VS Code client for infill: starts the server over stdio
// with vscode-languageclient (whose InlineCompletionItemFeature turns
// textDocument/inlineCompletion into VS Code ghost text), answers
// workspace/configuration from the "infill.*" settings, shows model loading
// progress and errors in the status bar, writes the server's log lines to
// the output channel at their own levels, and adds commands to restart the
// server, toggle suggestions and accept a word or a line of a suggestion,
// and shows next edits (src/nextedit_ui.js).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const vscode = require('vscode');
const lc = require('vscode-languageclient/node');
const readline = require('readline');
const settings = require('./settings');
const serverLog = require('./log');
const text = require('./text');
const feedback = require('./feedback');
const pull = require('./pull');
const nextEditUi = require('./nextedit_ui');
const pkg = require('../package.json');

const KEYS = settings.serverKeys(pkg);

// Extension state (one per window).
const st = {
  client: null,
  status: null,
  enabled: true,
  phase: 'starting', // starting | loading | ready | error | stopped
  detail: '',
  context: null,
  nextEdits: null, // src/nextedit_ui.js's controller
  last: null, // the latest inline answer: {uri, version, line, character, items}
  askedAgain: null, // where a growth last made VS Code ask again (it does once a place)
  grown: null, // a grown answer fetched for the provider to hand over: {...place, result}
};

function cfg(scope) {
  return vscode.workspace.getConfiguration('infill', scope);
}

// ---- settings -------------------------------------------------------------

function settingsFor(scopeUri) {
  const uri = scopeUri ? vscode.Uri.parse(scopeUri) : undefined;
  const languages = [...new Set(vscode.workspace.textDocuments.map((d) => d.languageId))];
  return settings.serverSettings(KEYS, (key, languageId) =>
    languageId ? cfg({ uri, languageId }).inspect(key) : cfg(uri).inspect(key), languages);
}

// ---- status bar -----------------------------------------------------------

function showStatus() {
  const s = st.status;
  if (!s) return;
  const icon = { starting: '$(sync~spin)', loading: '$(sync~spin)', ready: '$(sparkle)',
    error: '$(error)', stopped: '$(debug-disconnect)' }[st.phase];
  // an error shows its first words; the whole message is in the tooltip
  const short = st.phase === 'error' ? st.detail.replace(/^infill: /, '').split(/[:;(]/)[0].slice(0, 48) : st.detail;
  const shown = st.phase !== 'starting' && st.phase !== 'stopped' && short ? ': ' + short : '';
  s.text = `${st.enabled ? icon : '$(circle-slash)'} infill${shown}`;
  s.tooltip = (st.enabled ? '' : 'Suggestions off. ') + (st.detail || st.phase) + '\nClick to turn suggestions on or off.';
  s.backgroundColor = st.phase === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  s.show();
}

function setPhase(phase, detail) {
  st.phase = phase;
  st.detail = detail || '';
  showStatus();
}

// ---- the client -----------------------------------------------------------

function expandHome(p) {
  return p.startsWith('~/') ? path.join(os.homedir(), p.slice(2)) : p;
}

function eachLine(input, fn) {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 })
    .on('line', fn);
}

function makeClient() {
  const cmd = settings.serverCommand((k) => cfg().get(k));
  const server = { command: expandHome(cmd.command), args: cmd.args, transport: lc.TransportKind.stdio };
  const clientOptions = {
    documentSelector: settings.documentSelector(cfg().get('languages')),
    initializationOptions: settingsFor(),
    outputChannelName: 'infill',
    // The server's stderr is its log ("HH:MM:SS.mmm LEVEL text"): each line
    // goes to the output channel at its own level, not all as [error]
    // (vscode-languageclient's default).
    stdioOptions: {
      stdout: (input, channel) => eachLine(input, (line) => channel.info(line)),
      stderr: (input, channel) => eachLine(input, (line) => {
        const { level, text } = serverLog.parseLine(line);
        channel[level](text);
      }),
    },
    middleware: {
      workspace: {
        configuration: (params) => params.items.map((item) =>
          item.section === 'infill' ? settingsFor(item.scopeUri) : null),
      },
      // infill's menu items repeat the ghost text: in the list that opens
      // by itself while typing they open it on nearly every keystroke and
      // take Tab from the ghost text, so they are off unless
      // infill.menuItems is on (README.md, "Tab"); the toggle turns them off
      // too, not only the ghost text
      provideCompletionItem: (document, position, context, token, next) =>
        (st.enabled && cfg(document).get('menuItems') ? next(document, position, context, token) : null),
      provideInlineCompletionItems: async (document, position, context, token, next) => {
        if (!st.enabled) return null;
        const here = { uri: document.uri.toString(), version: document.version,
          line: position.line, character: position.character };
        const grown = st.grown;
        st.grown = null;
        const result = text.samePlace(grown, here) ? grown.result : await next(document, position, context, token);
        const items = Array.isArray(result) ? result : (result && result.items) || [];
        st.last = { ...here, items };
        report('textDocument/didShowCompletion', feedback.shownParams(items));
        return result;
      },
    },
  };
  return new lc.LanguageClient('infill', 'infill', server, clientOptions);
}

function watchClient(client) {
  client.onDidChangeState((e) => {
    if (e.newState === lc.State.Running) setPhase('ready');
    else if (e.newState === lc.State.Stopped && st.phase !== 'error') setPhase('stopped', 'server stopped');
  });
}

// Work-done progress (the model loading) goes to the status bar item, to
// VS Code's own progress in the status bar and to the output channel.
function followProgress(client, token) {
  let title = '';
  let finish = null;
  const done = new Promise((resolve) => { finish = resolve; });
  const sub = client.onProgress(lc.WorkDoneProgress.type, token, (value) => {
    if (value.kind === 'begin') {
      title = value.title;
      vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title }, () => done);
    }
    const t = settings.progressText(value, title);
    if (t) {
      if (value.kind === 'begin') client.outputChannel.info(t);
      setPhase('loading', t);
      return;
    }
    const end = settings.loadEnd(value);
    client.outputChannel[end.phase === 'error' ? 'error' : 'info'](
      `${title || 'progress'}: ${(value && value.message) || 'done'}`);
    // "ready: the embedded model (...)": keep it in sight
    if (st.phase === 'loading' || end.phase === 'error') setPhase(end.phase, end.detail);
    finish();
    sub.dispose();
  });
}

// Registered before the client starts, so a create request that arrives
// with the initialize answer (the model starts loading at once) is never
// refused as "Unhandled method", and again once it runs (the client's own
// progress feature takes the method over while it starts).
function hookProgress(client) {
  client.onRequest(lc.WorkDoneProgressCreateRequest.type, ({ token }) => {
    followProgress(client, token);
    return null;
  });
}

function hookNotifications(client) {
  // The suggestion on screen grew (the server decodes it on after its
  // deadline): asked again where it is, the server answers at once with the
  // longer text, and VS Code extends the ghost text in place. Only while the
  // cursor is still there; otherwise the next keystroke asks anyway.
  client.onNotification('infill/suggestionGrew', async (params) => {
    const ed = vscode.window.activeTextEditor;
    if (!st.enabled || !ed) return;
    const doc = ed.document;
    const pos = ed.selection.active;
    const here = { uri: doc.uri.toString(), version: doc.version,
      line: pos.line, character: pos.character, selectionEmpty: ed.selection.isEmpty };
    if (!text.grewHere(params, here)) return;
    const trigger = () => vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
    if (!text.samePlace(st.askedAgain, here)) {
      st.askedAgain = here;
      trigger();
      return;
    }
    // VS Code asks again once: its explicit request then stands for every
    // later one at the same place and version. So the grown answer is
    // fetched here first, VS Code's suggestion is cleared and asked for
    // again, and the provider hands over the answer already here: the ghost
    // text is replaced within one round trip inside VS Code.
    const invoke = { triggerKind: vscode.InlineCompletionTriggerKind.Invoke, selectedCompletionInfo: undefined };
    const ls = await client.sendRequest('textDocument/inlineCompletion',
      client.code2ProtocolConverter.asInlineCompletionParams(doc, pos, invoke)).catch(() => null);
    if (!ls || doc.version !== here.version || !ed.selection.active.isEqual(pos)) return;
    st.grown = { ...here, result: await client.protocol2CodeConverter.asInlineCompletionResult(ls) };
    // both sent at once: VS Code runs them in order, and the blank between
    // them lasts no IPC round trip
    vscode.commands.executeCommand('editor.action.inlineSuggest.hide');
    trigger();
  });
  client.onNotification(lc.ShowMessageNotification.type, (m) => {
    if (m.type === lc.MessageType.Error) {
      // the reason of a failed load keeps the status bar's words
      const load = st.phase === 'error' && st.detail === settings.loadEnd({ message: 'failed' }).detail;
      setPhase('error', load ? `${st.detail}: ${m.message}` : m.message);
      vscode.window.showErrorMessage(m.message);
    } else if (m.type === lc.MessageType.Warning) {
      vscode.window.showWarningMessage(m.message);
    } else {
      vscode.window.showInformationMessage(m.message);
    }
  });
}

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch (e) {
    return false;
  }
}

async function start() {
  setPhase('starting');
  // a wrong infill.serverPath: one message, ours, that names the setting
  // (vscode-languageclient would add its own "couldn't create connection")
  const cmd = settings.serverCommand((k) => cfg().get(k));
  if (!settings.findExecutable(expandHome(cmd.command), process.env.PATH, isExecutable)) {
    setPhase('error', `could not start ${cmd.command}: no such executable`);
    vscode.window.showErrorMessage(`infill: ${st.detail}. Set "infill.serverPath" to the infill binary.`);
    return;
  }
  const client = makeClient();
  st.client = client;
  watchClient(client);
  hookProgress(client);
  try {
    await client.start();
    hookProgress(client);
    hookNotifications(client);
    if (st.phase === 'starting') setPhase('ready');
  } catch (err) {
    setPhase('error', `could not start ${cfg().get('serverPath')}: ${err.message || err}`);
    vscode.window.showErrorMessage(`infill: ${st.detail}. Set "infill.serverPath" to the infill binary.`);
  }
}

async function restart() {
  const old = st.client;
  st.client = null;
  if (st.nextEdits) st.nextEdits.clearAll();
  if (old) {
    try { await old.stop(); } catch (e) { /* it may have died already */ }
  }
  await start();
}

// ---- feedback (src/feedback.js) ------------------------------------------

function report(method, params) {
  if (params && st.client && st.client.isRunning()) {
    st.client.sendNotification(method, params).catch(() => { /* a report: best effort */ });
  }
}

// ---- commands -------------------------------------------------------------

function toggle() {
  st.enabled = !st.enabled;
  st.context.globalState.update('infill.enabled', st.enabled);
  showStatus();
  if (!st.enabled) {
    vscode.commands.executeCommand('editor.action.inlineSuggest.hide');
    if (st.nextEdits) st.nextEdits.clearAll();
  }
}

// Next edits are asked for the documents the client serves, while
// suggestions are on and infill.nextEdits is.
function nextEditsWanted(doc) {
  return st.enabled && cfg(doc).get('nextEdits') !== false &&
    vscode.languages.match(settings.documentSelector(cfg().get('languages')), doc) > 0;
}

// Accepts the next word or line of the suggestion being shown. Only VS Code
// knows which one that is once the user has cycled (the provider's show
// events are proposed API in VS Code 1.100), so its own partial accept does
// the work; its word and line are VS Code's (Ctrl+Right's), which differ
// from the Neovim and Emacs clients' split in small ways (see README.md).
// What it put in names the item for the partial-accept report: the first
// of the latest answer that continues with it.
async function acceptPart(kind) {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const doc = editor.document;
  const pos = editor.selection.active;
  const version = doc.version;
  const lineBefore = doc.lineAt(pos.line).text;
  await vscode.commands.executeCommand(kind === 'word'
    ? 'editor.action.inlineSuggest.acceptNextWord' : 'editor.action.inlineSuggest.acceptNextLine');
  const now = editor.selection.active;
  const last = st.last;
  if (doc.version === version || !now.isAfter(pos) || !last || last.uri !== doc.uri.toString() ||
      last.version !== version || last.line !== pos.line || last.character !== pos.character) {
    return;
  }
  const piece = doc.getText(new vscode.Range(pos, now));
  for (const item of last.items) {
    const insert = typeof item.insertText === 'string' ? item.insertText : item.insertText.value;
    const typed = item.range ? lineBefore.slice(item.range.start.character, pos.character) : '';
    const rest = text.remainder(insert, typed);
    if (rest && rest.startsWith(piece)) {
      report('textDocument/didPartiallyAcceptCompletion',
        feedback.partialParams(item, typed.length + piece.length));
      return;
    }
  }
}

// Tab while the ghost text and VS Code's word list both show (the list
// opens as one types along the ghost text, with a word such as `item` over
// `items.values():`): the ghost text is what the user was looking at, so
// Tab takes it and closes the list (package.json binds Tab to this only
// then; the list keeps Enter, and Tab where no ghost text shows).
async function acceptSuggestion() {
  await vscode.commands.executeCommand('editor.action.inlineSuggest.commit');
  await vscode.commands.executeCommand('hideSuggestWidget');
}

// "infill: Download a Model": `infill pull NAME` (the binary of
// infill.serverPath) with its progress in a notification; cancelling keeps
// the .part, which the next download of the same name resumes.
async function pullModel() {
  const name = await vscode.window.showInputBox({
    prompt: 'infill: the model to download (`infill models` lists them, with what fits this machine)',
    value: 'qwen2.5-coder:1.5b',
  });
  if (!name) return;
  const bin = cfg().get('serverPath') || 'infill';
  const r = await vscode.window.withProgress({
    location: vscode.ProgressLocation.Notification, title: `infill: downloading ${name}`, cancellable: true,
  }, (progress, token) => {
    let shown = 0;
    return pull.run(bin, name, {
      token,
      onLine: (l) => { if (pull.percentOf(l) === null) progress.report({ message: l }); },
      onPercent: (p) => {
        progress.report({ increment: p - shown, message: `${p.toFixed(1)}%` });
        shown = p;
      },
    });
  });
  if (r.ok) {
    const use = await vscode.window.showInformationMessage(`infill: ${name} downloaded.`, 'Use it');
    if (use) await cfg().update('model', name, vscode.ConfigurationTarget.Global);
  } else {
    vscode.window.showErrorMessage(`infill: download of ${name} failed: ${r.error}`);
  }
}

// ---- activation -----------------------------------------------------------

async function activate(context) {
  st.context = context;
  st.enabled = context.globalState.get('infill.enabled', true);
  st.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  st.status.command = 'infill.toggleCompletions';
  context.subscriptions.push(st.status);
  st.nextEdits = nextEditUi.create({
    client: () => (st.client && st.client.isRunning() ? st.client : null),
    wanted: nextEditsWanted,
  });
  context.subscriptions.push(st.nextEdits);
  context.subscriptions.push(
    vscode.commands.registerCommand('infill.restartServer', restart),
    vscode.commands.registerCommand('infill.pullModel', pullModel),
    vscode.commands.registerCommand('infill.toggleCompletions', toggle),
    vscode.commands.registerCommand('infill.acceptSuggestion', acceptSuggestion),
    vscode.commands.registerCommand('infill.acceptWord', () => acceptPart('word')),
    vscode.commands.registerCommand('infill.acceptLine', () => acceptPart('line')),
    vscode.commands.registerCommand('infill.nextEdit.jump', () => st.nextEdits.jump()),
    vscode.commands.registerCommand('infill.nextEdit.accept', () => st.nextEdits.accept()),
    vscode.commands.registerCommand('infill.nextEdit.dismiss', () => st.nextEdits.dismiss()),
    vscode.commands.registerCommand('infill.showOutput', () => st.client && st.client.outputChannel.show()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (st.client && e.affectsConfiguration('infill')) st.client.outputChannel.info('settings changed');
      if (e.affectsConfiguration('infill.serverPath') || e.affectsConfiguration('infill.serverArgs') ||
          e.affectsConfiguration('infill.languages')) {
        restart();
      } else if (e.affectsConfiguration('infill') && st.client && st.client.isRunning()) {
        // the server pulls workspace/configuration again
        st.client.sendNotification(lc.DidChangeConfigurationNotification.type, { settings: null });
      }
    }));
  await start();
  return { client: () => st.client, nextEdit: (doc) => st.nextEdits.visible(doc) };
}

async function deactivate() {
  if (st.client) await st.client.stop();
}

module.exports = { activate, deactivate };
