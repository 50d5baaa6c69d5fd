// Next edits' pure part (src/nextedit.js): the edit of an answer shown, its
// label, where Tab applies it, the reports' params, and when an edit has
// settled (a pause, or the cursor leaving the line), with fake timers.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const N = require('../src/nextedit');
const pkg = require('../package.json');

const cmd = { title: 'Accept next edit', command: 'infill.didAcceptNextEdit', arguments: ['4'] };
const uri = 'file:///w/area.py';
const edit = (line, text, u = uri) => ({
  textDocument: { uri: u, version: 3 },
  range: { start: { line, character: 22 }, end: { line, character: 26 } },
  text, command: cmd,
});

test('the first well-formed edit of this document is shown', () => {
  assert.deepStrictEqual(N.firstEdit({ edits: [edit(2, 'area_m2'), edit(3, 'area_m2')] }, uri), edit(2, 'area_m2'));
  assert.deepStrictEqual(N.firstEdit({ edits: [edit(1, 'x', 'file:///w/other.py'), edit(3, 'y')] }, uri), edit(3, 'y'));
  const bad = { range: { start: { line: -1, character: 0 }, end: { line: 0, character: 0 } }, text: 'x' };
  assert.deepStrictEqual(N.firstEdit({ edits: [bad, { range: edit(1, '').range }, edit(5, '')] }, uri), edit(5, ''));
  for (const r of [null, {}, { edits: [] }, { edits: 'no' }]) assert.strictEqual(N.firstEdit(r, uri), null);
});

test('the request names the document, its version and the cursor', () => {
  assert.deepStrictEqual(N.requestParams(uri, 7, { line: 1, character: 4, other: 1 }),
    { textDocument: { uri, version: 7 }, position: { line: 1, character: 4 } });
  assert.strictEqual(N.METHOD, 'infill/nextEdit');
});

test('the label: the first line of the new text, … when more follow', () => {
  assert.strictEqual(N.label('area_m2'), 'area_m2');
  assert.strictEqual(N.label('f(a,\n  b)'), 'f(a,…');
  assert.strictEqual(N.label('x\r\ny'), 'x…');
  assert.strictEqual(N.label(''), '');
});

test('Tab applies where the cursor is on the edit\'s lines, one empty selection', () => {
  const r = { start: { line: 2, character: 22 }, end: { line: 3, character: 1 } };
  assert.ok(N.atTarget(r, { line: 2, character: 0 }, true));
  assert.ok(N.atTarget(r, { line: 3, character: 9 }, true));
  assert.ok(!N.atTarget(r, { line: 1, character: 22 }, true));
  assert.ok(!N.atTarget(r, { line: 4, character: 0 }, true));
  assert.ok(!N.atTarget(r, { line: 2, character: 22 }, false), 'not over a selection');
  assert.ok(!N.atTarget(null, { line: 2, character: 22 }, true));
});

test('the reports name the edit by its command', () => {
  const e = edit(2, 'area_m2');
  assert.deepStrictEqual(N.shownParams(e), { item: { command: cmd } });
  assert.deepStrictEqual(N.rejectParams(e), { item: { command: cmd } });
  assert.deepStrictEqual(N.acceptParams(e), { command: 'infill.didAcceptNextEdit', arguments: ['4'] });
  const bare = { ...e, command: undefined };
  assert.strictEqual(N.shownParams(bare), null);
  assert.strictEqual(N.acceptParams(bare), null);
  assert.deepStrictEqual(N.acceptParams({ command: { command: 'c' } }), { command: 'c', arguments: [] });
});

function fakeTimers() {
  const t = { now: 0, list: [] };
  t.set = (fn, ms) => { const h = { at: t.now + ms, fn }; t.list.push(h); return h; };
  t.clear = (h) => { t.list = t.list.filter((x) => x !== h); };
  t.advance = (ms) => {
    t.now += ms;
    for (const h of t.list.filter((x) => x.at <= t.now)) {
      t.clear(h);
      h.fn();
    }
  };
  return t;
}

test('an edit settles after a pause: one ask per run of changes', () => {
  const t = fakeTimers();
  const asked = [];
  const s = new N.Settle(500, (k) => asked.push(k), t);
  s.changed('a', 1);
  t.advance(300);
  s.changed('a', 1); // typing on: the pause starts again
  t.advance(300);
  assert.deepStrictEqual(asked, []);
  t.advance(200);
  assert.deepStrictEqual(asked, ['a']);
  t.advance(2000);
  assert.deepStrictEqual(asked, ['a'], 'asked once');
  s.moved('a', 5);
  assert.deepStrictEqual(asked, ['a'], 'moving without a change asks nothing');
});

test('an edit settles when the cursor leaves its line', () => {
  const t = fakeTimers();
  const asked = [];
  const s = new N.Settle(500, (k) => asked.push(k), t);
  s.changed('a', 1);
  s.changed('b', 4);
  s.moved('a', 1); // still on the line: typing goes on
  assert.deepStrictEqual(asked, []);
  s.moved('a', 2);
  assert.deepStrictEqual(asked, ['a']);
  t.advance(1000);
  assert.deepStrictEqual(asked, ['a', 'b'], 'b after its pause, a not twice');
  s.changed('c', 0);
  s.forget('c');
  s.changed('d', 0);
  s.dispose();
  t.advance(1000);
  assert.deepStrictEqual(asked, ['a', 'b'], 'forgotten and disposed ones are not asked');
});

test('the line a change ends on', () => {
  const r = { start: { line: 3, character: 0 }, end: { line: 3, character: 0 } };
  assert.strictEqual(N.changeEndLine({ range: r, text: 'x' }), 3);
  assert.strictEqual(N.changeEndLine({ range: r, text: 'x\n  y\n' }), 5);
});

test('the keys: contributed, bound to the context keys the extension sets', () => {
  const src = fs.readFileSync(path.join(__dirname, '..', 'src', 'nextedit_ui.js'), 'utf8');
  for (const k of ['infill.nextEditVisible', 'infill.nextEditAtCursor']) {
    assert.ok(src.includes(`'${k}'`), k + ' is set');
  }
  const bind = (c) => pkg.contributes.keybindings.find((k) => k.command === c);
  const jump = bind('infill.nextEdit.jump');
  const acc = bind('infill.nextEdit.accept');
  const dis = bind('infill.nextEdit.dismiss');
  assert.strictEqual(jump.key, 'ctrl+alt+]');
  assert.ok(/infill\.nextEditVisible/.test(jump.when));
  assert.strictEqual(acc.key, 'tab');
  // the ghost text keeps Tab, and the word list
  assert.ok(/infill\.nextEditAtCursor/.test(acc.when) && /!inlineSuggestionVisible/.test(acc.when) &&
    /!suggestWidgetVisible/.test(acc.when), acc.when);
  assert.strictEqual(dis.key, 'escape');
  for (const w of ['infill.nextEditVisible', '!inlineSuggestionVisible', '!suggestWidgetVisible', '!findWidgetVisible',
    '!editorHasMultipleSelections']) assert.ok(dis.when.includes(w), w + ' in ' + dis.when);
  // Alt+] is VS Code's "Show Next Inline Suggestion", also ours for cycling
  assert.ok(!pkg.contributes.keybindings.some((k) => k.key === 'alt+]'));
});
