// text.js - pure text logic for inline suggestions: which part of an item is
// not typed yet, and how much "accept word" / "accept line" take. The same
// rules as editors/nvim/lua/infill/text.lua and infill.el. No vscode import.
'use strict';

// The part of insertText after typed (the text between the item's range
// start and the cursor), or null when the item does not begin with it.
function remainder(insertText, typed) {
  if (!insertText.startsWith(typed) || insertText.length === typed.length) return null;
  return insertText.slice(typed.length);
}

// Blanks, then a run of word characters or a run of other non-blank
// characters; a leading line break comes with the next line's indentation.
function nextWord(s) {
  let m = /^\r?\n[ \t]*/.exec(s);
  if (m) return m[0];
  m = /^[ \t]*(?:[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]+)/u.exec(s) || /^[ \t]+/.exec(s);
  return m ? m[0] : s;
}

// The next line with its line break; a leading line break comes with the
// whole following line.
function nextLine(s) {
  let m = /^\r?\n[^\n]*/.exec(s);
  if (m) return m[0];
  m = /^[^\n]*\n/.exec(s);
  return m ? m[0] : s;
}

// Whether an infill/suggestionGrew notification (params: {uri, version,
// position}) is about the editor's state here (at: {uri, version, line,
// character, selectionEmpty}): the same document at the same version, the
// cursor where the suggestion was asked for, nothing selected. Only then is
// asking again worth it: the longer text then comes at once, in place.
function grewHere(params, at) {
  if (!params || !params.position || !at || !at.selectionEmpty) return false;
  return samePlace({ uri: params.uri, version: params.version, ...params.position }, at);
}

// Whether a and b ({uri, version, line, character}) are one place in one
// version of a document.
function samePlace(a, b) {
  return !!a && !!b && a.uri === b.uri && a.version === b.version &&
    a.line === b.line && a.character === b.character;
}

module.exports = { remainder, nextWord, nextLine, grewHere, samePlace };
