// The server's log lines at their own levels in the output channel
// (src/log.js), and the status bar's state when a model load ends
// (src/settings.js loadEnd).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { parseLine } = require('../src/log');
const S = require('../src/settings');

test('a server log line keeps its level and loses the time', () => {
  // the shapes core/log.c writes: "%02d:%02d:%02d.%03ld %-5s "
  assert.deepStrictEqual(parseLine('02:41:55.953 info  infill 0.1.0 serving LSP on stdio'),
    { level: 'info', text: 'infill 0.1.0 serving LSP on stdio' });
  assert.deepStrictEqual(parseLine('02:41:55.953 warn  infill: bad value'), { level: 'warn', text: 'infill: bad value' });
  assert.deepStrictEqual(parseLine('02:41:55.953 error cannot open x'), { level: 'error', text: 'cannot open x' });
  assert.deepStrictEqual(parseLine('02:41:56.990 debug completion 1: prompt 64 tokens'),
    { level: 'debug', text: 'completion 1: prompt 64 tokens' });
  assert.deepStrictEqual(parseLine('02:41:56.990 trace <-- initialize'), { level: 'trace', text: '<-- initialize' });
});

test('a line without the server\'s shape is an error, shown whole', () => {
  assert.deepStrictEqual(parseLine('==123==ERROR: AddressSanitizer: heap-use-after-free'),
    { level: 'error', text: '==123==ERROR: AddressSanitizer: heap-use-after-free' });
  assert.deepStrictEqual(parseLine('02:41:56.990 notice something'), { level: 'error', text: '02:41:56.990 notice something' });
  assert.deepStrictEqual(parseLine(''), { level: 'error', text: '' });
});

test('the end of a model load sets the status bar', () => {
  assert.deepStrictEqual(S.loadEnd({ kind: 'end', message: 'failed' }),
    { phase: 'error', detail: 'the model failed to load' });
  assert.deepStrictEqual(S.loadEnd({ kind: 'end', message: 'ready' }), { phase: 'ready', detail: '' });
  assert.deepStrictEqual(S.loadEnd({ kind: 'end', message: 'ready: the embedded model (the model set failed to load)' }),
    { phase: 'ready', detail: 'the embedded model (the model set failed to load)' });
  assert.deepStrictEqual(S.loadEnd({ kind: 'end' }), { phase: 'ready', detail: '' });
});
