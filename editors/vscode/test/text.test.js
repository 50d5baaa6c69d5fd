// The suggestion splitting shared by the three clients (src/text.js).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { remainder, nextWord, nextLine, grewHere, samePlace } = require('../src/text');

test('remainder strips what was typed since the range start', () => {
  assert.strictEqual(remainder('list_python_files(root)', 'list_'), 'python_files(root)');
  assert.strictEqual(remainder('abc', ''), 'abc');
  assert.strictEqual(remainder('abc', 'abc'), null, 'nothing left to show');
  assert.strictEqual(remainder('abc', 'abx'), null, 'does not fit what was typed');
});

test('nextWord takes blanks then a word or a punctuation run', () => {
  assert.strictEqual(nextWord('python_files(root)'), 'python_files');
  assert.strictEqual(nextWord('(root)'), '(');
  assert.strictEqual(nextWord('  = os.walk(x)'), '  =');
  assert.strictEqual(nextWord(' walk'), ' walk');
  assert.strictEqual(nextWord('\n    return x'), '\n    ');
  assert.strictEqual(nextWord('\r\n\treturn'), '\r\n\t');
  assert.strictEqual(nextWord('   '), '   ');
  assert.strictEqual(nextWord('été = 1'), 'été', 'non-ASCII letters are word characters');
  assert.strictEqual(nextWord(''), '');
});

test('nextLine takes a line with its break, or the break and the next line', () => {
  assert.strictEqual(nextLine('a = 1\nb = 2\n'), 'a = 1\n');
  assert.strictEqual(nextLine('\n    b = 2\nc'), '\n    b = 2');
  assert.strictEqual(nextLine('tail'), 'tail');
});

test('word by word accept rebuilds the whole suggestion', () => {
  const s = 'found.append(os.path.join(dirpath, name))\n    return found';
  let rest = s, out = '', steps = 0;
  while (rest) {
    const w = nextWord(rest);
    assert.ok(w.length > 0, 'progress');
    out += w; rest = rest.slice(w.length); steps++;
  }
  assert.strictEqual(out, s);
  assert.ok(steps > 5);
});

test('the cases every client splits the same way (tests/editors/split_cases.json)', (t) => {
  const file = require('path').join(__dirname, '..', '..', '..', 'tests', 'editors', 'split_cases.json');
  if (!require('fs').existsSync(file)) return t.skip('no tests/editors (packaged copy)');
  const cases = JSON.parse(require('fs').readFileSync(file, 'utf8'));
  for (const c of cases.split) {
    assert.strictEqual(nextWord(c.s), c.word, 'nextWord ' + JSON.stringify(c.s));
    assert.strictEqual(nextLine(c.s), c.line, 'nextLine ' + JSON.stringify(c.s));
  }
  for (const c of cases.remainder) assert.strictEqual(remainder(c.insert, c.typed), c.rest, JSON.stringify(c));
});

test('grewHere: only where the suggestion is, at its version, nothing selected', () => {
  const p = { uri: 'file:///a.py', version: 3, position: { line: 4, character: 8 } };
  const at = { uri: 'file:///a.py', version: 3, line: 4, character: 8, selectionEmpty: true };
  assert.strictEqual(grewHere(p, at), true);
  assert.strictEqual(grewHere(p, { ...at, character: 9 }), false, 'the cursor moved on');
  assert.strictEqual(grewHere(p, { ...at, line: 5 }), false);
  assert.strictEqual(grewHere(p, { ...at, version: 4 }), false, 'typed since');
  assert.strictEqual(grewHere(p, { ...at, uri: 'file:///b.py' }), false, 'another editor');
  assert.strictEqual(grewHere(p, { ...at, selectionEmpty: false }), false, 'a selection');
  assert.strictEqual(grewHere(null, at), false);
  assert.strictEqual(grewHere({ uri: p.uri, version: 3 }, at), false, 'no position');
});

test('samePlace: one place in one version of a document', () => {
  const a = { uri: 'file:///a.py', version: 3, line: 4, character: 8 };
  assert.strictEqual(samePlace(a, { ...a }), true);
  assert.strictEqual(samePlace(a, { ...a, version: 4 }), false);
  assert.strictEqual(samePlace(a, { ...a, character: 7 }), false);
  assert.strictEqual(samePlace(a, { ...a, uri: 'file:///b.py' }), false);
  assert.strictEqual(samePlace(null, a), false);
});
