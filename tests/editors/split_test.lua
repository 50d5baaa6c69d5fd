-- split_test.lua - editors/nvim/lua/infill/text.lua against the shared
-- cases in split_cases.json (the same cases the VS Code and Emacs clients
-- pass), plus the UTF-16 position conversions. Run headless:
--   nvim --headless -u NONE -c 'luafile split_test.lua' (INFILL_PLUGIN, INFILL_CASES)
vim.opt.runtimepath:prepend(os.getenv('INFILL_PLUGIN'))
local text = require('infill.text')
local f = assert(io.open(os.getenv('INFILL_CASES')))
local cases = vim.fn.json_decode(f:read('*a'))
f:close()
local bad = 0
local function eq(got, want, what)
  if got ~= want then
    bad = bad + 1
    io.stderr:write(string.format('FAIL %s: got %s want %s\n', what, vim.inspect(got), vim.inspect(want)))
  end
end
for _, c in ipairs(cases.split) do
  eq(text.next_word(c.s), c.word, 'next_word ' .. vim.inspect(c.s))
  eq(text.next_line(c.s), c.line, 'next_line ' .. vim.inspect(c.s))
end
for _, c in ipairs(cases.remainder) do
  local want = c.rest
  if want == vim.NIL then want = nil end
  eq(text.remainder(c.insert, c.typed), want, 'remainder ' .. vim.inspect(c))
end
-- "aé😀b": bytes 1,2,4,1; UTF-16 units 1,1,2,1
local s = 'a\195\169\240\159\152\128b'
eq(text.lsp_char(s, 3, 'utf-16'), 2, 'utf-16 after é')
eq(text.lsp_char(s, 7, 'utf-16'), 4, 'utf-16 after the emoji')
eq(text.lsp_char(s, 7, 'utf-32'), 3, 'utf-32 after the emoji')
eq(text.lsp_char(s, 7, 'utf-8'), 7, 'utf-8 is bytes')
eq(text.byte_col(s, 4, 'utf-16'), 7, 'byte of utf-16 4')
eq(text.byte_col(s, 5, 'utf-16'), 8, 'byte of utf-16 5')
eq(text.byte_col(s, 99, 'utf-16'), #s, 'clamped')
eq(table.concat(text.lines('a\nb\n'), '|'), 'a|b|', 'lines')
io.stderr:write(bad == 0 and 'PASS\n' or (bad .. ' failures\n'))
vim.cmd(bad == 0 and 'qa!' or 'cquit 1')
