// extension.js - the VS Code client for infill: starts the server over stdio
// with vscode-languageclient (whose InlineCompletionItemFeature turns
// textDocument/inlineCompletion into VS Code ghost text), answers
// workspace/configuration from the "infill.*" settings, shows model loading
// progress and errors in the status bar, and adds commands to restart the
// server, toggle suggestions and accept a word or a line of a suggestion.
'use strict';

const os = require('os');
const path = require('path');
const vscode = require('vscode');
const lc = require('vscode-languageclient/node');
const settings = require('./settings');
const text = require('./text');
const feedback = require('./feedback');
const pkg = require('../package.json');

const KEYS = settings.serverKeys(pkg);

// Extension state (one per window).
const st = {
  client: null,
  status: null,
  enabled: true,
  phase: 'starting', // starting | loading | ready | error | stopped
  detail: '',
  last: null, // { uri, version, line, character, items } of the latest answer
  context: null,
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
  const shown = (st.phase === 'loading' || st.phase === 'ready') && st.detail ? ': ' + st.detail : '';
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

function makeClient() {
  const cmd = settings.serverCommand((k) => cfg().get(k));
  const server = { command: expandHome(cmd.command), args: cmd.args, transport: lc.TransportKind.stdio };
  const clientOptions = {
    documentSelector: settings.documentSelector(cfg().get('languages')),
    initializationOptions: settingsFor(),
    outputChannelName: 'infill',
    middleware: {
      workspace: {
        configuration: (params) => params.items.map((item) =>
          item.section === 'infill' ? settingsFor(item.scopeUri) : null),
      },
      // the toggle turns the menu items off too, not only the ghost text
      provideCompletionItem: (document, position, context, token, next) =>
        (st.enabled ? next(document, position, context, token) : null),
      provideInlineCompletionItems: async (document, position, context, token, next) => {
        if (!st.enabled) return null;
        const result = await next(document, position, context, token);
        const items = Array.isArray(result) ? result : (result && result.items) || [];
        st.last = { uri: document.uri.toString(), version: document.version,
          line: position.line, character: position.character, items };
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

// Progress and messages go to the status bar as well as to VS Code's own UI.
function hookNotifications(client) {
  client.onRequest(lc.WorkDoneProgressCreateRequest.type, ({ token }) => {
    let title = '';
    const sub = client.onProgress(lc.WorkDoneProgress.type, token, (value) => {
      if (value.kind === 'begin') title = value.title;
      const t = settings.progressText(value, title);
      if (t) setPhase('loading', t);
      else {
        // "ready: the embedded model (...)": keep it in sight
        if (st.phase === 'loading') setPhase('ready', settings.readyDetail(value));
        sub.dispose();
      }
    });
    return null;
  });
  client.onNotification(lc.ShowMessageNotification.type, (m) => {
    if (m.type === lc.MessageType.Error) {
      setPhase('error', m.message);
      vscode.window.showErrorMessage(m.message);
    } else if (m.type === lc.MessageType.Warning) {
      vscode.window.showWarningMessage(m.message);
    } else {
      vscode.window.showInformationMessage(m.message);
    }
  });
}

async function start() {
  setPhase('starting');
  const client = makeClient();
  st.client = client;
  watchClient(client);
  try {
    await client.start();
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
  if (old) {
    try { await old.stop(); } catch (e) { /* it may have died already */ }
  }
  await start();
}

// ---- feedback (issue 21, src/feedback.js) ---------------------------------

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
  if (!st.enabled) vscode.commands.executeCommand('editor.action.inlineSuggest.hide');
}

// Accepts the next word or line of the latest suggestion at the cursor,
// using the same splitting as the Neovim and Emacs clients; VS Code then
// asks again and shows the rest (the server answers it from its last result).
async function acceptPart(split) {
  const editor = vscode.window.activeTextEditor;
  const last = st.last;
  if (!editor || !last) return;
  const doc = editor.document;
  const pos = editor.selection.active;
  if (doc.uri.toString() !== last.uri || doc.version !== last.version ||
      pos.line !== last.line || pos.character !== last.character || !last.items.length) {
    return;
  }
  const item = last.items[0];
  const insert = typeof item.insertText === 'string' ? item.insertText : item.insertText.value;
  const typed = item.range ? doc.getText(new vscode.Range(item.range.start, pos)) : '';
  const rest = text.remainder(insert, typed);
  if (!rest) return;
  const piece = split(rest);
  await editor.edit((b) => b.insert(pos, piece));
  report('textDocument/didPartiallyAcceptCompletion',
    feedback.partialParams(item, typed.length + piece.length));
  await vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
}

// ---- activation -----------------------------------------------------------

async function activate(context) {
  st.context = context;
  st.enabled = context.globalState.get('infill.enabled', true);
  st.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  st.status.command = 'infill.toggleCompletions';
  context.subscriptions.push(st.status);
  context.subscriptions.push(
    vscode.commands.registerCommand('infill.restartServer', restart),
    vscode.commands.registerCommand('infill.toggleCompletions', toggle),
    vscode.commands.registerCommand('infill.acceptWord', () => acceptPart(text.nextWord)),
    vscode.commands.registerCommand('infill.acceptLine', () => acceptPart(text.nextLine)),
    vscode.commands.registerCommand('infill.showOutput', () => st.client && st.client.outputChannel.show()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('infill.serverPath') || e.affectsConfiguration('infill.serverArgs') ||
          e.affectsConfiguration('infill.languages')) {
        restart();
      } else if (e.affectsConfiguration('infill') && st.client && st.client.isRunning()) {
        // the server pulls workspace/configuration again
        st.client.sendNotification(lc.DidChangeConfigurationNotification.type, { settings: null });
      }
    }));
  await start();
  return { client: () => st.client };
}

async function deactivate() {
  if (st.client) await st.client.stop();
}

module.exports = { activate, deactivate };
