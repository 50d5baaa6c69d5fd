// The extension packages to a .vsix with @vscode/vsce, offline: the npm
// registry and any proxy are pointed at a closed port while it runs. The
// sources and vscode-languageclient are bundled by esbuild into one file
// (vscode:prepublish), so the .vsix holds no node_modules and stays small:
// 726,649 bytes (392 files) unbundled, about 115 KB bundled.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const cp = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.join(__dirname, '..');
const vsce = path.join(root, 'node_modules', '.bin', 'vsce');

test('vsce package builds infill.vsix without the network', { timeout: 120000 }, (t) => {
  if (!fs.existsSync(vsce)) {
    t.skip('node_modules missing (npm ci in editors/vscode)');
    return;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-vsix-'));
  const out = path.join(tmp, 'infill.vsix');
  const closed = 'http://127.0.0.1:9';
  const r = cp.spawnSync(vsce, ['package', '--no-dependencies', '--skip-license', '--allow-missing-repository', '-o', out], {
    cwd: root, encoding: 'utf8', timeout: 110000,
    env: { ...process.env, HTTP_PROXY: closed, HTTPS_PROXY: closed, http_proxy: closed,
      https_proxy: closed, npm_config_registry: closed + '/', npm_config_offline: 'true' },
  });
  assert.strictEqual(r.status, 0, r.stdout + r.stderr);
  const size = fs.statSync(out).size;
  t.diagnostic(`infill.vsix: ${size} bytes`);
  assert.ok(size > 10000 && size < 200000, 'vsix size ' + size + ' (bundled: 10 KB .. 200 KB)');
  // a .vsix is a zip: the manifest and the bundle are in it, nothing else of ours
  const zip = fs.readFileSync(out).toString('latin1');
  for (const f of ['extension/package.json', 'extension/dist/extension.js', 'extension.vsixmanifest']) {
    assert.ok(zip.includes(f), f + ' in the vsix');
  }
  assert.ok(!zip.includes('extension/node_modules/'), 'node_modules stay out (bundled)');
  assert.ok(!zip.includes('extension/src/'), 'sources stay out (bundled)');
  assert.ok(!zip.includes('extension/test/'), 'tests stay out of the vsix');
  // the bundle carries the language client and loads without it installed
  const bundle = path.join(root, 'dist', 'extension.js');
  const code = fs.readFileSync(bundle, 'utf8');
  assert.ok(code.includes('workspace/configuration') && code.includes('textDocument/inlineCompletion'),
    'vscode-languageclient is inside the bundle');
  assert.ok(!/require\("vscode-languageclient/.test(code), 'no require of node_modules left');
  fs.rmSync(tmp, { recursive: true, force: true });
});
