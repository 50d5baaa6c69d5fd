-- infill.text - pure text logic shared by the ghost-text code: which part of
-- a suggestion is still to be shown, and how much "accept word" and "accept
-- line" take. No Neovim API here, so it can be tested on its own and reads
-- the same as editors/vscode/src/text.js and the splitting in infill.el.
local M = {}

-- The part of an item's insertText that is not on screen yet. typed is the
-- text between the item's range start and the cursor (the user already typed
-- it); a suggestion that does not begin with it does not fit the cursor and
-- gives nil.
function M.remainder(insert_text, typed)
  if insert_text:sub(1, #typed) ~= typed then
    return nil
  end
  local rest = insert_text:sub(#typed + 1)
  if rest == '' then
    return nil
  end
  return rest
end

-- The next word of a suggestion: leading blanks, then either a run of word
-- characters or a run of other non-blank characters. A suggestion starting
-- with a line break gives the line break (and the next line's indentation),
-- so accepting word by word walks into the next line instead of stopping.
function M.next_word(s)
  local nl = s:match('^\r?\n[ \t]*')
  if nl then
    return nl
  end
  local piece = s:match('^[ \t]*[%w_\128-\255]+') or s:match('^[ \t]*[^%w_%s\128-\255]+') or s:match('^[ \t]+')
  return piece or s
end

-- The next line of a suggestion including its line break; a suggestion that
-- starts with a line break gives the break and the whole following line.
function M.next_line(s)
  local first = s:match('^[^\n]*\n')
  if not first then
    return s
  end
  if first:match('^\r?\n$') then
    local second = s:sub(#first + 1):match('^[^\n]*')
    return first .. second
  end
  return first
end

-- Splits text into lines (a trailing newline gives a final empty line), as
-- nvim_buf_set_text wants them.
function M.lines(s)
  local out = {}
  for line in (s .. '\n'):gmatch('([^\n]*)\n') do
    out[#out + 1] = line:gsub('\r$', '')
  end
  return out
end

-- Length of a UTF-8 sequence from its first byte.
local function seq_len(c)
  if c < 0x80 then return 1 elseif c >= 0xF0 then return 4 elseif c >= 0xE0 then return 3 elseif c >= 0xC0 then return 2 end
  return 1 -- a stray continuation byte counts as one unit
end

-- The LSP "character" of byte offset col in line, in the negotiated
-- position encoding ('utf-8', 'utf-16' or 'utf-32').
function M.lsp_char(line, col, enc)
  if enc == 'utf-8' then
    return col
  end
  local i, units = 1, 0
  while i <= col and i <= #line do
    local n = seq_len(line:byte(i))
    units = units + ((enc == 'utf-16' and n == 4) and 2 or 1)
    i = i + n
  end
  return units
end

-- The byte offset of LSP character ch in line (clamped to the line).
function M.byte_col(line, ch, enc)
  if enc == 'utf-8' then
    return math.min(ch, #line)
  end
  local i, units = 1, 0
  while units < ch and i <= #line do
    local n = seq_len(line:byte(i))
    units = units + ((enc == 'utf-16' and n == 4) and 2 or 1)
    i = i + n
  end
  return math.min(i - 1, #line)
end

return M
