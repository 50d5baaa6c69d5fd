// log.js - the server's log lines (its stderr, written by core/log.c as
// "HH:MM:SS.mmm LEVEL text") split into the level and the text, so the
// output channel shows each at its own level. No vscode import.
'use strict';

// The output channel's method for each of the server's levels.
const LEVELS = { error: 'error', warn: 'warn', info: 'info', debug: 'debug', trace: 'trace' };

// { level, text } of one line; a line without the server's shape (a crash
// report, a sanitizer's message) is an error, shown whole.
function parseLine(line) {
  const m = /^\d\d:\d\d:\d\d\.\d{3} (error|warn|info|debug|trace) +(.*)$/.exec(line);
  if (!m) return { level: 'error', text: line };
  return { level: LEVELS[m[1]], text: m[2] };
}

module.exports = { parseLine };
