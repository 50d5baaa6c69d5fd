// The extension packages to a .vsix with @vscode/vsce, offline: the npm
// registry and any proxy are pointed at a closed port while it runs.
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
  const r = cp.spawnSync(vsce, ['package', '--skip-license', '--allow-missing-repository', '-o', out], {
    cwd: root, encoding: 'utf8', timeout: 110000,
    env: { ...process.env, HTTP_PROXY: closed, HTTPS_PROXY: closed, http_proxy: closed,
      https_proxy: closed, npm_config_registry: closed + '/', npm_config_offline: 'true' },
  });
  assert.strictEqual(r.status, 0, r.stdout + r.stderr);
  const size = fs.statSync(out).size;
  assert.ok(size > 10000, 'vsix size ' + size);
  // a .vsix is a zip: the manifest and our sources are in it
  const zip = fs.readFileSync(out).toString('latin1');
  for (const f of ['extension/package.json', 'extension/src/extension.js', 'extension/src/text.js',
    'extension/node_modules/vscode-languageclient/package.json', 'extension.vsixmanifest']) {
    assert.ok(zip.includes(f), f + ' in the vsix');
  }
  assert.ok(!zip.includes('extension/test/'), 'tests stay out of the vsix');
  assert.ok(!zip.includes('node_modules/@vscode/vsce/'), 'dev dependencies stay out');
  fs.rmSync(tmp, { recursive: true, force: true });
});
