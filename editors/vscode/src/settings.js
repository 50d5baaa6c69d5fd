// settings.js - VS Code configuration -> what infill receives, and the
// server's command line. Pure (no vscode import) so node's test runner can
// check it; extension.js passes in VS Code's inspect() results.
'use strict';

// The extension's own settings, not sent to the server.
const OWN = new Set(['serverPath', 'serverArgs', 'languages', 'menuItems', 'nextEdits', 'trace.server']);

// Server setting keys ("completion.debounceMs", ...) from the extension's
// package.json contributes.configuration (generated from core/config.h).
function serverKeys(pkg) {
  return Object.keys(pkg.contributes.configuration.properties)
    .map((k) => k.replace(/^infill\./, ''))
    .filter((k) => !OWN.has(k));
}

// The value a user set explicitly (folder over workspace over user), or
// undefined. Defaults are never sent: the server has the same ones, and
// sending them would hide the project's .infill.json.
function explicitValue(info, language) {
  if (!info) return undefined;
  const order = language
    ? ['workspaceFolderLanguageValue', 'workspaceLanguageValue', 'globalLanguageValue']
    : ['workspaceFolderValue', 'workspaceValue', 'globalValue'];
  for (const k of order) if (info[k] !== undefined) return info[k];
  return undefined;
}

function put(obj, key, value) {
  const parts = key.split('.');
  let o = obj;
  for (const p of parts.slice(0, -1)) {
    if (typeof o[p] !== 'object' || o[p] === null) o[p] = {};
    o = o[p];
  }
  o[parts[parts.length - 1]] = value;
}

// The nested settings object for section "infill". keys: serverKeys();
// inspect(key, languageId?) -> VS Code's inspect() result for "infill.<key>"
// (with a language scope when languageId is given); languageIds: languages
// whose "[lang]" overrides to send under "languages".
function serverSettings(keys, inspect, languageIds = []) {
  const out = {};
  for (const key of keys) {
    const v = explicitValue(inspect(key));
    if (v !== undefined && v !== null) put(out, key, v);
  }
  for (const lang of languageIds) {
    for (const key of keys) {
      const v = explicitValue(inspect(key, lang), lang);
      if (v !== undefined && v !== null) {
        out.languages = out.languages || {};
        out.languages[lang] = out.languages[lang] || {};
        put(out.languages[lang], key, v);
      }
    }
  }
  return out;
}

// The server's command line from get(key) (the extension's own settings).
function serverCommand(get) {
  const command = (get('serverPath') || 'infill').trim() || 'infill';
  const args = Array.isArray(get('serverArgs')) ? get('serverArgs').map(String) : [];
  if (!args.includes('--stdio')) args.push('--stdio');
  return { command, args };
}

// Where the server command is: a path (with a "/") as it is, a bare name
// looked up in PATH (pathVar); null when no executable file is there. The
// extension checks before starting, so a wrong "infill.serverPath" gives one
// message that names the setting, not vscode-languageclient's own as well.
// isExecutable(path) -> bool is passed in (fs), so this stays testable.
function findExecutable(command, pathVar, isExecutable) {
  if (command.includes('/')) return isExecutable(command) ? command : null;
  for (const dir of (pathVar || '').split(':')) {
    const p = (dir || '.') + '/' + command;
    if (isExecutable(p)) return p;
  }
  return null;
}

// Status bar text for a $/progress value; title: the begin's title.
function progressText(value, title) {
  if (!value || value.kind === 'end') return null;
  let text = value.title || title || 'loading';
  if (value.message) text += ': ' + value.message;
  if (typeof value.percentage === 'number') text += ` ${Math.round(value.percentage)}%`;
  return text;
}

// The client's document selector from the "infill.languages" setting: the
// languages listed, in files and untitled buffers; "*" (or no list): every
// document. Suggestions in Markdown, plain text or JSON are prose and data,
// which a code model only gets in the way of, so the default lists code.
function documentSelector(languages) {
  const list = Array.isArray(languages) ? languages.filter((l) => typeof l === 'string' && l) : [];
  if (list.length === 0 || list.includes('*')) return [{ scheme: 'file' }, { scheme: 'untitled' }];
  const out = [];
  for (const language of list) {
    out.push({ scheme: 'file', language }, { scheme: 'untitled', language });
  }
  return out;
}

// The status bar's detail once the model is loaded: "" when it is the one
// set, else what the server's progress end says (the embedded model standing
// in for one that failed to load).
function readyDetail(value) {
  const m = value && value.kind === 'end' && typeof value.message === 'string' ? value.message : '';
  return m.startsWith('ready: ') ? m.slice('ready: '.length) : '';
}

// The status bar's phase and detail when the model's load progress ends:
// "failed" is an error the status bar keeps showing (the server's message
// with the reason follows as window/showMessage), anything else is ready.
function loadEnd(value) {
  const m = value && typeof value.message === 'string' ? value.message : '';
  if (m === 'failed') return { phase: 'error', detail: 'the model failed to load' };
  return { phase: 'ready', detail: readyDetail(value) };
}

module.exports = { serverKeys, explicitValue, serverSettings, serverCommand, findExecutable, progressText,
  documentSelector, readyDetail, loadEnd };
