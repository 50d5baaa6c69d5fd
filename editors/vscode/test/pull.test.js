// The download command's child process (src/pull.js) against the real
// infill binary (INFILL_BIN) and a loopback HTTP server serving the test
// model (INFILL_MODEL), through a catalog file (INFILL_CATALOG, the
// documented override for tests and mirrors): percentages rise to 100, the
// file lands in the cache folder; a name not in the catalog fails with
// near names.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const pull = require('../src/pull');

test('percentOf reads progress lines', () => {
  assert.strictEqual(pull.percentOf('  12.0 / 986.0 MiB   1.2%  3.0 MiB/s'), 1.2);
  assert.strictEqual(pull.percentOf('resuming x.part at 1.0 MiB'), null);
});

test('infill pull NAME with progress, and a name not in the catalog', { timeout: 60000 }, async (t) => {
  const bin = process.env.INFILL_BIN, model = process.env.INFILL_MODEL;
  if (!bin || !model || !fs.existsSync(model)) {
    t.skip('INFILL_BIN or INFILL_MODEL missing');
    return;
  }
  const data = fs.readFileSync(model);
  const server = http.createServer((req, res) => {
    if (req.url !== '/m/tiny.gguf') { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Length': data.length });
    // in pieces, so that progress lines come on the way
    let at = 0;
    const step = () => {
      if (at >= data.length) { res.end(); return; }
      res.write(data.subarray(at, at + (1 << 20)));
      at += 1 << 20;
      setTimeout(step, 30);
    };
    step();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-pull-'));
  try {
    const catalog = path.join(tmp, 'catalog.json');
    fs.writeFileSync(catalog, JSON.stringify([{ model: 'tiny-coder:1m', quant: 'Q8_0', default: true,
      family: 'deepseek', arch: 'llama', url: `http://127.0.0.1:${server.address().port}/m/tiny.gguf` }]));
    const env = { ...process.env, INFILL_CATALOG: catalog, XDG_CACHE_HOME: tmp };
    const pcts = [];
    const r = await pull.run(bin, 'tiny-coder:1m', { env, onPercent: (p) => pcts.push(p) });
    assert.ok(r.ok, r.error + '\n' + r.lines.join('\n'));
    assert.ok(pcts.length >= 2 && pcts[pcts.length - 1] === 100, 'percentages rise to 100: ' + pcts);
    const file = path.join(tmp, 'infill', 'models', 'tiny-coder-1m-q8_0.gguf');
    assert.strictEqual(fs.statSync(file).size, data.length);
    assert.ok(r.lines.some((l) => l.includes('checked by its GGUF header')), r.lines.join('\n'));
    const bad = await pull.run(bin, 'tiny-coder:2m', { env });
    assert.ok(!bad.ok);
    assert.ok(/not in the model catalog/.test(bad.lines.join('\n')) && /tiny-coder:1m/.test(bad.lines.join('\n')),
      bad.lines.join('\n'));
  } finally {
    server.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
