#!/usr/bin/env node
// tools/manpage.js INFILL [DATE] - prints infill(1) in roff, generated from
// what cannot drift from the binary: `INFILL --help` (the subcommands),
// `INFILL serve --help` (the server's flags), `INFILL SUBCOMMAND --help` for
// each subcommand, and the settings table (CONFIG_SETTINGS in core/config.h,
// read by editors/settings.js, the same reader the editors' settings come
// from). tools/package puts it in the .deb as /usr/share/man/man1/infill.1.gz.
// DATE (YYYY-MM-DD) defaults to today; tools/package passes the commit's.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { readTable } = require('../editors/settings.js');

const root = path.resolve(__dirname, '..');
const bin = process.argv[2];
if (!bin) {
  process.stderr.write('usage: tools/manpage.js INFILL [DATE]\n');
  process.exit(2);
}
const date = process.argv[3] || new Date().toISOString().slice(0, 10);

function run(args) {
  // some subcommands print their usage on stderr with status 0 or 2
  try {
    return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    return (e.stdout || '') + (e.stderr || '');
  }
}

// Text as roff: backslashes doubled, a leading dot or quote escaped.
function esc(s) {
  return s.replace(/\\/g, '\\e').replace(/-/g, '\\-').replace(/^([.'])/gm, '\\&$1');
}

// A block printed as it is (no filling, no adjusting).
function verbatim(text) {
  return '.nf\n' + esc(text.replace(/\s+$/, '')) + '\n.fi\n';
}

const version = run(['--version']).trim().replace(/^infill\s+/, '');
const help = run(['--help']);
const commands = [];
for (const line of help.split('\n')) {
  const m = line.match(/^ {2}([a-z][a-z0-9-]*)\s{2,}(.+)$/);
  if (m) commands.push({ name: m[1], text: m[2] });
}
if (commands.length === 0) throw new Error(bin + ' --help listed no subcommands');

const settings = readTable(fs.readFileSync(path.join(root, 'core', 'config.h'), 'utf8'));

function shown(v) {
  if (v === null || v === undefined) return 'unset';
  if (Array.isArray(v)) return JSON.stringify(v);
  return typeof v === 'string' ? '"' + v + '"' : String(v);
}

let out = '';
out += `.TH INFILL 1 "${date}" "infill ${esc(version)}" "User Commands"\n`;
out += '.SH NAME\ninfill \\- code completions from a fill\\-in\\-the\\-middle model, as a language server\n';
out += '.SH SYNOPSIS\n.B infill\n[\\fISUBCOMMAND\\fR] [\\fIOPTIONS\\fR]\n';
out += '.SH DESCRIPTION\n';
out += 'infill is a Language Server Protocol daemon that gives code completions (ghost text through\n' +
  '.B textDocument/inlineCompletion\n' +
  'and menu items through\n.BR textDocument/completion )\n' +
  'from a fill\\-in\\-the\\-middle code model that runs inside the daemon.\n' +
  'An editor starts\n.B infill\nwith no arguments and speaks LSP to it over stdin and stdout.\n' +
  'Without a\n.B model\nsetting it loads the small embedded model from\n' +
  '.IR /usr/share/infill/infill\\-default.gguf ;\n' +
  'it makes the whole path work, but its suggestions are weak: point\n.B model\n' +
  'at a real FIM model (a GGUF file) for real use.\n';
out += '.SH COMMANDS\n';
for (const c of commands) out += `.TP\n.B ${esc(c.name)}\n${esc(c.text)}\n`;
out += '.SH SERVER OPTIONS\n' + verbatim(run(['serve', '--help']));
for (const c of commands) {
  if (c.name === 'serve') continue;
  const text = run([c.name, '--help']);
  if (!/usage/i.test(text)) continue;
  out += `.SS infill ${esc(c.name)}\n` + verbatim(text);
}
out += '.SH SETTINGS\n';
out += 'Settings are read, later ones winning, from the built\\-in defaults, the user file\n' +
  '.RI ( $XDG_CONFIG_HOME/infill/config.json ),\n' +
  'the project\'s\n.IR .infill.json ,\n' +
  'the client\'s initializationOptions and workspace/configuration, and the flags above.\n' +
  'Keys are dotted or nested JSON objects, optionally under\n.BR "infill" ;\n' +
  'settings marked\n.I per language\nmay also appear under\n' +
  '.BR languages.<languageId> .\n';
for (const s of settings) {
  let range = '';
  if ((s.kind === 'int' || s.kind === 'double') && s.max > s.min) range = ` (${s.min}..${s.max})`;
  if (s.names) range = ` (${s.names.join(', ')})`;
  out += `.TP\n.B ${esc(s.key)}\n${esc(s.doc)}${esc(range)}. Default: ${esc(shown(s.default))}` +
    (s.scope === 'language' ? '; per language' : '') + '.\n';
}
out += '.SH FILES\n';
out += '.TP\n.I /usr/share/infill/infill\\-default.gguf\nthe embedded default model\n';
out += '.TP\n.I $XDG_CONFIG_HOME/infill/config.json\nthe user settings file\n';
out += '.TP\n.I /usr/share/nvim/site/lua/infill/\nthe Neovim client (\\fBrequire("infill").setup()\\fR)\n';
out += '.TP\n.I /usr/share/emacs/site\\-lisp/infill.el\nthe Emacs client (\\fB(require \'infill)\\fR)\n';
out += '.TP\n.I /usr/share/infill/infill.vsix\nthe VS Code extension, where the package carries it ' +
  '(\\fBcode \\-\\-install\\-extension\\fR it)\n';
out += '.SH SEE ALSO\nThe documents in the source tree: README.md, docs/settings.md, docs/architecture.md.\n';
process.stdout.write(out);
