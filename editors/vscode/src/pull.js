// pull.js - `infill pull NAME` as a child process for the "infill: Download
// a Model" command: its stderr progress lines ("\r  12.0 / 986.0 MiB  1.2%
// ...") become percentages for a progress notification, its last lines say
// where the file went or why it did not. No vscode here: tested under node.
'use strict';
const cp = require('child_process');

// The percentage a progress line carries, or null.
function percentOf(line) {
  const m = /(\d+(?:\.\d+)?)%/.exec(line);
  return m ? Math.min(100, parseFloat(m[1])) : null;
}

// Runs `bin pull name`. opts.onLine(line) for each line (progress lines
// included, "infill pull: " taken off), opts.onPercent(pct) when a line
// carries one, opts.env for the child's environment, opts.token a
// cancellation token (onCancellationRequested) that ends the child (the
// .part stays: the next pull resumes it). Resolves to { ok, lines, error }.
function run(bin, name, opts = {}) {
  return new Promise((resolve) => {
    const lines = [];
    let pending = '';
    let child;
    const take = (part) => {
      part = part.replace(/^infill pull: /, '').trim();
      if (!part) return;
      lines.push(part);
      if (opts.onLine) opts.onLine(part);
      const p = percentOf(part);
      if (p !== null && opts.onPercent) opts.onPercent(p);
    };
    try {
      child = cp.spawn(bin, ['pull', name], { env: opts.env || process.env });
    } catch (err) {
      resolve({ ok: false, lines, error: `cannot run ${bin}: ${err.message}` });
      return;
    }
    const onData = (buf) => {
      const parts = (pending + buf.toString()).split(/[\r\n]/);
      pending = parts.pop();
      parts.forEach(take);
    };
    child.stderr.on('data', onData);
    child.stdout.on('data', onData);
    if (opts.token) opts.token.onCancellationRequested(() => child.kill('SIGTERM'));
    child.on('error', (err) => resolve({ ok: false, lines, error: `cannot run ${bin}: ${err.message}` }));
    child.on('close', (code) => {
      take(pending);
      const ok = code === 0;
      // the error line, and the hint after it when there is one
      const error = ok ? null : lines.slice(-2).join(' ') || `exit status ${code}`;
      resolve({ ok, lines, error });
    });
  });
}

module.exports = { run, percentOf };
