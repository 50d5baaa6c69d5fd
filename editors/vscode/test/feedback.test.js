// The feedback reports' params (src/feedback.js) from items as
// vscode-languageclient hands them to VS Code.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const F = require('../src/feedback');

const cmd = { title: 'infill: accepted', command: 'infill.didAcceptCompletion', arguments: [7] };

test('the first item of an answer is reported shown, named by its command', () => {
  const items = [{ insertText: 'foo()', range: {}, command: cmd }, { insertText: 'bar', command: cmd }];
  assert.deepStrictEqual(F.shownParams(items), { item: { insertText: 'foo()', command: cmd } });
  // a SnippetString-like insertText
  assert.strictEqual(F.protocolItem({ insertText: { value: 'x' }, command: cmd }).insertText, 'x');
  assert.strictEqual(F.shownParams([]), null);
  assert.strictEqual(F.shownParams([{ insertText: 'x' }]), null, 'an item the server did not name');
  assert.strictEqual(F.shownParams([{ insertText: 'x', command: { command: 'other' } }]), null);
});

test('a partial accept counts from the insertText start, in UTF-16 units', () => {
  const item = { insertText: 'é😀 rest', command: cmd };
  assert.deepStrictEqual(F.partialParams(item, 'é😀'.length),
    { item: { insertText: 'é😀 rest', command: cmd }, acceptedLength: 3 });
  assert.strictEqual(F.partialParams({ insertText: 'x' }, 1), null);
});
