#!/usr/bin/env node
// settings.js - the editor clients' settings, generated from the server's
// one settings table (CONFIG_SETTINGS in core/config.h) so they cannot drift:
//   editors/vscode/package.json   contributes.configuration ("infill.<key>")
//   editors/emacs/infill-settings.el  one defcustom per setting
//
// usage: node editors/settings.js           rewrite both files
//        node editors/settings.js --check   exit 1 (and say which) when either
//                                           file differs from the table
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const configH = path.join(root, 'core', 'config.h');
const packageJson = path.join(root, 'editors', 'vscode', 'package.json');
const emacsSettings = path.join(root, 'editors', 'emacs', 'infill-settings.el');

// ---- reading the table ----------------------------------------------------

// Splits the argument list of one X(...) at top-level commas.
function splitArgs(s) {
  const out = [];
  let depth = 0, cur = '', inStr = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inStr) {
      cur += c;
      if (c === '\\') cur += s[++i];
      else if (c === '"') inStr = false;
    } else if (c === '"') {
      inStr = true; cur += c;
    } else if (c === '(') {
      depth++; cur += c;
    } else if (c === ')') {
      depth--; cur += c;
    } else if (c === ',' && depth === 0) {
      out.push(cur.trim()); cur = '';
    } else {
      cur += c;
    }
  }
  out.push(cur.trim());
  return out;
}

// A C string literal (possibly several adjacent ones) or NULL.
function cString(s) {
  if (s === 'NULL') return null;
  const parts = s.match(/"(?:[^"\\]|\\.)*"/g);
  if (!parts) throw new Error('not a string literal: ' + s);
  return parts.map((p) => JSON.parse(p)).join('');
}

function readTable(text) {
  const start = text.indexOf('#define CONFIG_SETTINGS(X)');
  if (start < 0) throw new Error(configH + ': no CONFIG_SETTINGS');
  // the macro body: every line that ends with a backslash, and the next one
  const lines = text.slice(start).split('\n');
  let body = '';
  for (const line of lines) {
    body += line.replace(/\\$/, '') + ' ';
    if (!line.endsWith('\\')) break;
  }
  body = body.replace(/^#define CONFIG_SETTINGS\(X\)/, '');
  const settings = [];
  const re = /\bX\(/g;
  let m;
  while ((m = re.exec(body))) {
    let depth = 1, i = re.lastIndex, inStr = false;
    for (; i < body.length && depth > 0; i++) {
      const c = body[i];
      if (inStr) { if (c === '\\') i++; else if (c === '"') inStr = false; }
      else if (c === '"') inStr = true;
      else if (c === '(') depth++;
      else if (c === ')') depth--;
    }
    const a = splitArgs(body.slice(re.lastIndex, i - 1));
    if (a.length !== 11) throw new Error('X() with ' + a.length + ' arguments: ' + a.join(', '));
    const [field, key, kind, , dnum, dstr, lo, hi, names, scope, doc] = a;
    const k = kind.replace('CONFIG_KIND_', '').toLowerCase();
    const s = {
      field, key: cString(key), kind: k, doc: cString(doc),
      scope: scope === 'CONFIG_SCOPE_LANGUAGE' ? 'language' : 'global',
      min: Number(lo), max: Number(hi),
      names: names === 'NULL' ? null : cString(names).split('|'),
    };
    if (k === 'bool') s.default = Number(dnum) !== 0;
    else if (k === 'int' || k === 'double') s.default = Number(dnum);
    else if (k === 'string') s.default = cString(dstr);
    else if (k === 'enum') {
      // the default is an enumerator; its position among the enum's
      // members (declared in config.h) names it
      const enumName = a[3].replace(/^enum\s+/, '');
      const em = text.match(new RegExp('enum ' + enumName + '\\s*\\{([^}]*)\\}'));
      if (!em) throw new Error('enum ' + enumName + ' not found');
      const members = em[1].split(',').map((x) => x.replace(/\/\*.*?\*\//g, '').trim()).filter(Boolean);
      const idx = /^\d+$/.test(dnum) ? Number(dnum) : members.indexOf(dnum);
      if (idx < 0 || idx >= s.names.length) throw new Error('default ' + dnum + ' of ' + s.key);
      s.default = s.names[idx];
    } else if (k === 'strlist') s.default = [];
    else throw new Error('unknown kind ' + kind);
    settings.push(s);
  }
  if (settings.length === 0) throw new Error('no settings found in ' + configH);
  return settings;
}

// ---- VS Code --------------------------------------------------------------

// The extension's own settings (not the server's).
const vscodeOwn = {
  'infill.serverPath': {
    type: 'string', default: 'infill', scope: 'machine-overridable',
    description: 'Path of the infill binary (or a command name on PATH).',
  },
  'infill.serverArgs': {
    type: 'array', items: { type: 'string' }, default: [], scope: 'machine-overridable',
    description: 'Extra command-line arguments for the infill binary (e.g. ["--log-level", "debug"]).',
  },
  'infill.languages': {
    type: 'array', items: { type: 'string' },
    default: ['c', 'cpp', 'csharp', 'go', 'java', 'javascript', 'javascriptreact', 'kotlin', 'lua',
      'php', 'python', 'ruby', 'rust', 'scala', 'shellscript', 'swift', 'typescript',
      'typescriptreact'],
    scope: 'window',
    description: 'Language ids to offer suggestions in (not prose or data: Markdown, plain text and JSON are left out); ["*"]: every file.',
  },
  'infill.menuItems': {
    type: 'boolean', default: false, scope: 'language-overridable',
    markdownDescription: "Also offer infill's suggestions in VS Code's word list (labelled `infill`). Off (the default, as with Copilot): ghost text only, so the list does not open on every keystroke and take Tab from the ghost text.",
  },
  'infill.nextEdits': {
    type: 'boolean', default: true, scope: 'language-overridable',
    markdownDescription: 'After an edit settles (a pause, or the cursor leaving the line), show the edit it implies next (a rename\'s other uses, a changed signature\'s calls, the same fix on alike lines) at its place: Ctrl+Alt+] jumps to it, Tab on its line applies it, Escape dismisses it.',
  },
  'infill.trace.server': {
    type: 'string', enum: ['off', 'messages', 'verbose'], default: 'off', scope: 'window',
    description: 'Trace the LSP messages between VS Code and infill in the output channel.',
  },
};

function vscodeProperty(s) {
  const p = {};
  const range = (s.kind === 'int' || s.kind === 'double') ? ` (${s.min}..${s.max})` : '';
  switch (s.kind) {
    case 'bool': p.type = 'boolean'; break;
    case 'int': p.type = 'integer'; p.minimum = s.min; p.maximum = s.max; break;
    case 'double':
      if (s.names) { // a number, or one of the names (completion.minConfidence "auto")
        p.anyOf = [{ type: 'number', minimum: s.min, maximum: s.max }, { type: 'string', enum: s.names }];
      } else {
        p.type = 'number'; p.minimum = s.min; p.maximum = s.max;
      }
      break;
    case 'string': p.type = s.default === null ? ['string', 'null'] : 'string'; break;
    case 'enum': p.type = 'string'; p.enum = s.names; break;
    case 'strlist': p.type = 'array'; p.items = { type: 'string' }; p.maxItems = s.max; break;
  }
  p.default = s.default;
  const text = s.doc.charAt(0).toUpperCase() + s.doc.slice(1);
  p.markdownDescription = `${text}${range}. Server setting \`${s.key}\`.`;
  // language-overridable settings may appear under "[python]": {...}
  // Where code and keys go is the user's alone: a workspace's
  // .vscode/settings.json (it comes with a cloned repository) cannot set
  // these, as .infill.json cannot (core/config.c, project_rules); nor choose
  // a file the daemon writes (metrics.file). The files loaded as models
  // are the machine's, which a trusted workspace may override.
  const userOnly = ['remote.url', 'remote.apiKeyEnv', 'remote.caFile', 'remote.tokenizer',
    'metrics.file'];
  p.scope = s.scope === 'language' ? 'language-overridable'
    : userOnly.includes(s.key) ? 'machine'
    : (['model', 'completion.draftModel'].includes(s.key) ? 'machine-overridable' : 'window');
  return p;
}

function vscodeConfiguration(settings) {
  const properties = { ...vscodeOwn };
  for (const s of settings) properties['infill.' + s.key] = vscodeProperty(s);
  return { title: 'infill', properties };
}

// ---- Emacs ----------------------------------------------------------------

function lispSymbol(key) {
  return 'infill-' + key.replace(/\./g, '-').replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

// Wraps each line of a docstring at 75 columns (Emacs wants them under 80).
function fill(s) {
  return s.split('\n').map((line) => {
    const out = [];
    let cur = '';
    for (const w of line.split(' ')) {
      if (cur && (cur + ' ' + w).length > 75) { out.push(cur); cur = w; } else cur = cur ? cur + ' ' + w : w;
    }
    out.push(cur);
    return out.join('\n');
  }).join('\n');
}

function lispString(s) {
  return '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
}

function lispValue(v) {
  if (v === true) return 't';
  if (v === false) return ':json-false';
  if (typeof v === 'string') return lispString(v);
  if (Array.isArray(v)) return v.length ? '[' + v.map(lispValue).join(' ') + ']' : '[]';
  return String(v);
}

function lispType(s) {
  const dflt = '(const :tag "Server default" nil)';
  switch (s.kind) {
    case 'bool': return `(choice ${dflt} (const :tag "On" t) (const :tag "Off" :json-false))`;
    case 'int': return `(choice ${dflt} (integer :tag "Value"))`;
    case 'double': return `(choice ${dflt} (number :tag "Value")${(s.names || []).map((n) => ` (const ${lispString(n)})`).join('')})`;
    case 'string': return `(choice ${dflt} (string :tag "Value"))`;
    case 'enum': return `(choice ${dflt} ${s.names.map((n) => `(const ${lispString(n)})`).join(' ')})`;
    case 'strlist': return `(choice ${dflt} (repeat :tag "Strings" string))`;
  }
  throw new Error(s.kind);
}

function emacsFile(settings) {
  const out = [];
  out.push(';;; infill-settings.el --- infill server settings as customization variables  -*- lexical-binding: t -*-');
  out.push('');
  out.push(';; Generated by editors/settings.js from CONFIG_SETTINGS in core/config.h;');
  out.push(';; do not edit (run `node editors/settings.js` after changing the table).');
  out.push(';;');
  out.push(';; Each variable is nil by default, meaning "do not send it": the server then');
  out.push(';; uses its own default, the user file or the project\'s .infill.json.');
  out.push('');
  out.push(';;; Code:');
  out.push('');
  out.push('(defgroup infill-settings nil');
  out.push('  "Settings sent to the infill server (initializationOptions)."');
  out.push('  :group \'infill)');
  for (const s of settings) {
    const range = (s.kind === 'int' || s.kind === 'double') ? `; range ${s.min}..${s.max}` : '';
    const dflt = s.default === null ? 'unset' : JSON.stringify(s.default);
    const lang = s.scope === 'language' ? '\nMay be set per language under "languages" in .infill.json.' : '';
    const doc = `${s.doc.charAt(0).toUpperCase() + s.doc.slice(1)}.\nServer setting "${s.key}" (server default ${dflt}${range}).\nnil: leave it to the server.${lang}`;
    out.push('');
    out.push(`(defcustom ${lispSymbol(s.key)} nil`);
    out.push(`  ${lispString(fill(doc))}`);
    out.push(`  :type '${lispType(s)}`);
    out.push('  :group \'infill-settings)');
  }
  out.push('');
  out.push('(defconst infill-settings-table');
  out.push("  '(" + settings.map((s) => `(${lispString(s.key)} . ${lispSymbol(s.key)})`).join('\n    ') + ')');
  out.push('  "Server setting key -> the variable that holds it.")');
  out.push('');
  out.push('(defconst infill-settings-defaults');
  out.push("  '(" + settings.map((s) => `(${lispString(s.key)} . ${s.default === null ? 'nil' : lispValue(s.default)})`).join('\n    ') + ')');
  out.push('  "Server setting key -> the server\'s default (for display).")');
  out.push('');
  out.push("(provide 'infill-settings)");
  out.push(';;; infill-settings.el ends here');
  return out.join('\n') + '\n';
}

// ---- main -----------------------------------------------------------------

function main() {
  const check = process.argv.includes('--check');
  const settings = readTable(fs.readFileSync(configH, 'utf8'));
  const pkg = JSON.parse(fs.readFileSync(packageJson, 'utf8'));
  const wantConfig = vscodeConfiguration(settings);
  const wantEl = emacsFile(settings);
  let bad = 0;
  if (check) {
    if (JSON.stringify(pkg.contributes.configuration) !== JSON.stringify(wantConfig)) {
      console.log('DRIFT: editors/vscode/package.json contributes.configuration differs from core/config.h');
      bad++;
    }
    const el = fs.existsSync(emacsSettings) ? fs.readFileSync(emacsSettings, 'utf8') : '';
    if (el !== wantEl) {
      console.log('DRIFT: editors/emacs/infill-settings.el differs from core/config.h');
      bad++;
    }
    if (bad) {
      console.log('fix: node editors/settings.js');
      process.exit(1);
    }
    console.log(`ok: ${settings.length} settings in step (VS Code, Emacs)`);
    return;
  }
  pkg.contributes.configuration = wantConfig;
  fs.writeFileSync(packageJson, JSON.stringify(pkg, null, 2) + '\n');
  fs.writeFileSync(emacsSettings, wantEl);
  console.log(`wrote ${settings.length} settings to package.json and infill-settings.el`);
}

if (require.main === module) main();
module.exports = { readTable, vscodeConfiguration, emacsFile, lispSymbol };
