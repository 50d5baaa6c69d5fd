// VS Code settings -> what the server receives (src/settings.js), and the
// package.json schema against the server's table (core/config.h).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const fs = require('fs');
const S = require('../src/settings');
const pkg = require('../package.json');
const gen = require('../../settings.js');

const configH = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'core', 'config.h'), 'utf8');
const table = gen.readTable(configH);

test('package.json mirrors every server setting with its type, default and range', () => {
  const props = pkg.contributes.configuration.properties;
  assert.deepStrictEqual(S.serverKeys(pkg).sort(), table.map((s) => s.key).sort());
  for (const s of table) {
    const p = props['infill.' + s.key];
    assert.ok(p, s.key);
    assert.deepStrictEqual(p.default, s.default, s.key + ' default');
    if (s.kind === 'int' || s.kind === 'double') {
      // a double with names (minConfidence "auto") is a number or one of them
      const num = p.anyOf ? p.anyOf.find((x) => x.type === 'number') : p;
      assert.strictEqual(num.minimum, s.min, s.key);
      assert.strictEqual(num.maximum, s.max, s.key);
      if (s.names) assert.deepStrictEqual(p.anyOf.find((x) => x.type === 'string').enum, s.names, s.key);
    }
    if (s.kind === 'enum') assert.deepStrictEqual(p.enum, s.names, s.key);
    assert.strictEqual(p.scope === 'language-overridable', s.scope === 'language', s.key + ' scope');
  }
  // a few facts from the table itself, so a parser bug cannot pass silently
  assert.strictEqual(props['infill.completion.debounceMs'].default, 30);
  assert.strictEqual(props['infill.completion.debounceMs'].type, 'integer');
  assert.strictEqual(props['infill.completion.temperature'].type, 'number');
  assert.strictEqual(props['infill.backend'].default, 'auto');
  assert.deepStrictEqual(props['infill.log.level'].enum, ['error', 'warn', 'info', 'debug', 'trace']);
  assert.strictEqual(props['infill.enabled'].type, 'boolean');
  assert.deepStrictEqual(props['infill.completion.minConfidence'].anyOf[1].enum, ['auto']);
});

test('the generated files are in step with core/config.h', () => {
  assert.deepStrictEqual(pkg.contributes.configuration, gen.vscodeConfiguration(table));
  const el = fs.readFileSync(path.join(__dirname, '..', '..', 'emacs', 'infill-settings.el'), 'utf8');
  assert.strictEqual(el, gen.emacsFile(table), 'run node editors/settings.js');
  assert.match(el, /\(defcustom infill-completion-debounce-ms nil/);
});

test('only explicitly set values are sent, nested, folder over workspace over user', () => {
  const inspected = {
    'completion.debounceMs': { defaultValue: 30, globalValue: 5, workspaceValue: 0 },
    'completion.maxTokens': { defaultValue: 64 },
    'model': { defaultValue: null, globalValue: '/m.gguf' },
    'enabled': { defaultValue: true, globalValue: true, workspaceFolderValue: false },
    'completion.stop': { defaultValue: [], workspaceValue: ['\n\n'] },
  };
  const got = S.serverSettings(Object.keys(inspected), (k) => inspected[k]);
  assert.deepStrictEqual(got, {
    completion: { debounceMs: 0, stop: ['\n\n'] },
    model: '/m.gguf',
    enabled: false,
  });
});

test('language-specific values become languages.<id> overrides', () => {
  const got = S.serverSettings(['completion.maxTokens', 'enabled'], (k, lang) => {
    if (lang === 'python' && k === 'completion.maxTokens') return { globalLanguageValue: 16 };
    if (lang === 'go' && k === 'enabled') return { workspaceLanguageValue: false };
    return { defaultValue: 1 };
  }, ['python', 'go', 'lua']);
  assert.deepStrictEqual(got, { languages: { python: { completion: { maxTokens: 16 } }, go: { enabled: false } } });
});

test('nothing set sends an empty object', () => {
  assert.deepStrictEqual(S.serverSettings(S.serverKeys(pkg), () => ({ defaultValue: 1 })), {});
});

test('server command line', () => {
  assert.deepStrictEqual(S.serverCommand(() => undefined), { command: 'infill', args: ['--stdio'] });
  const v = { serverPath: ' /opt/infill ', serverArgs: ['--log-level', 'debug'] };
  assert.deepStrictEqual(S.serverCommand((k) => v[k]),
    { command: '/opt/infill', args: ['--log-level', 'debug', '--stdio'] });
});

test('progress text for the status bar', () => {
  assert.strictEqual(S.progressText({ kind: 'begin', title: 'loading model' }), 'loading model');
  assert.strictEqual(S.progressText({ kind: 'report', message: 'tensors', percentage: 42.4 }, 'loading model'),
    'loading model: tensors 42%');
  assert.strictEqual(S.progressText({ kind: 'end' }, 'x'), null);
});

test('every command the extension registers is contributed, and back', () => {
  const src = fs.readFileSync(path.join(__dirname, '..', 'src', 'extension.js'), 'utf8');
  const registered = [...src.matchAll(/registerCommand\('([^']+)'/g)].map((m) => m[1]).sort();
  const contributed = pkg.contributes.commands.map((c) => c.command).sort();
  assert.deepStrictEqual(registered, contributed);
  for (const k of pkg.contributes.keybindings) assert.ok(contributed.includes(k.command), k.command);
});

test('the document selector: code languages by default, "*" for every file', () => {
  const def = pkg.contributes.configuration.properties['infill.languages'].default;
  const sel = S.documentSelector(def);
  const langs = new Set(sel.map((f) => f.language));
  for (const l of ['python', 'c', 'javascript', 'typescript']) assert.ok(langs.has(l), l);
  for (const l of ['markdown', 'plaintext', 'json']) assert.ok(!langs.has(l), l + ' is left out');
  assert.ok(sel.every((f) => f.scheme === 'file' || f.scheme === 'untitled'));
  assert.deepStrictEqual(S.documentSelector(['*']), [{ scheme: 'file' }, { scheme: 'untitled' }]);
  assert.deepStrictEqual(S.documentSelector(['rust']),
    [{ scheme: 'file', language: 'rust' }, { scheme: 'untitled', language: 'rust' }]);
  assert.ok(!S.serverKeys(pkg).includes('languages'), 'a client setting, not sent to the server');
});

test('the status after a load: the embedded model standing in is named', () => {
  assert.strictEqual(S.readyDetail({ kind: 'end', message: 'ready' }), '');
  assert.strictEqual(S.readyDetail({ kind: 'end', message: 'ready: the embedded model (x)' }),
    'the embedded model (x)');
  assert.strictEqual(S.readyDetail({ kind: 'report', message: 'ready: y' }), '');
});

test('findExecutable: a path as it is, a bare name in PATH, null when missing', () => {
  const exe = new Set(['/usr/bin/infill', '/opt/x/infill']);
  const isExe = (p) => exe.has(p);
  assert.strictEqual(S.findExecutable('/opt/x/infill', '/usr/bin', isExe), '/opt/x/infill');
  assert.strictEqual(S.findExecutable('/opt/y/infill', '/usr/bin', isExe), null);
  assert.strictEqual(S.findExecutable('infill', '/bin:/usr/bin', isExe), '/usr/bin/infill');
  assert.strictEqual(S.findExecutable('infill', '/bin', isExe), null);
  assert.strictEqual(S.findExecutable('infill', '', isExe), null);
});
