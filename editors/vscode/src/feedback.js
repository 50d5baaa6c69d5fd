// feedback.js - the reports of what became of a suggestion (the server
// counts them in infill/stats "feedback" and sends them nowhere).
//
// What VS Code 1.100 offers an extension: an accepted inline item runs its
// command, so an item accepted whole (Tab) runs the server's
// `infill.didAcceptCompletion`, which vscode-languageclient registers from
// the server's executeCommandProvider and sends as workspace/executeCommand:
// nothing to do here. The hooks for an item shown and partly accepted
// (InlineCompletionItemProvider.handleDidShowCompletionItem and
// handleDidPartiallyAcceptCompletionItem) are the proposed
// inlineCompletionsAdditions API, not final, and vscode-languageclient's
// provider does not implement them anyway. So they are inferred:
//   - shown: the first item of each answer, when the answer is handed to VS
//     Code (it shows the first item that fits the cursor; an answer VS Code
//     does not draw, with the suggest widget in the way, is counted too);
//   - partly accepted: a word or line taken with infill.acceptWord or
//     infill.acceptLine. VS Code's own word accept (Ctrl+Right) has no hook:
//     the server sees it as typing along the suggestion.
// Pure (no vscode import): the params only; extension.js sends them.
'use strict';

// The item as the server sent it, from VS Code's InlineCompletionItem (what
// vscode-languageclient made of it): the server reads command.arguments.
function protocolItem(item) {
  if (!item || !item.command || item.command.command !== 'infill.didAcceptCompletion') return null;
  const insert = typeof item.insertText === 'string' ? item.insertText
    : item.insertText && item.insertText.value;
  return {
    insertText: insert,
    command: { title: item.command.title, command: item.command.command,
      arguments: item.command.arguments || [] },
  };
}

// textDocument/didShowCompletion params for the first item of items, or null.
function shownParams(items) {
  const item = protocolItem(items && items[0]);
  return item ? { item } : null;
}

// textDocument/didPartiallyAcceptCompletion params: the first accepted
// characters of the item's insertText are in the document (JS string length:
// UTF-16 units, the position encoding VS Code negotiates). null for an item
// the server did not name.
function partialParams(item, accepted) {
  const p = protocolItem(item);
  return p ? { item: p, acceptedLength: accepted } : null;
}

module.exports = { protocolItem, shownParams, partialParams };
