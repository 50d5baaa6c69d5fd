-- nvim_test.lua - the Neovim plugin against the real server and the tiny
-- model, in a headless Neovim: open a real source file, type, see the ghost
-- text extmark, accept it with <Tab> (the text lands in the buffer), accept
-- a word, and dismiss with <Esc> and with a cursor move.
--
-- Run by nvim.sh (which checks the tools and sets):
--   INFILL_BIN, INFILL_MODEL, INFILL_PLUGIN (editors/nvim), INFILL_TMP
-- Exit 0 pass, 1 fail.
local bin, model, tmp = os.getenv('INFILL_BIN'), os.getenv('INFILL_MODEL'), os.getenv('INFILL_TMP')
vim.opt.runtimepath:prepend(os.getenv('INFILL_PLUGIN'))
vim.o.swapfile = false

local function log(...)
  io.stderr:write(table.concat({ ... }, ' ') .. '\n')
end

local function finish(ok, msg)
  if msg then
    log(msg)
  end
  vim.cmd(ok and 'qa!' or 'cquit 1')
end

local co
local function resume()
  local ok, err = coroutine.resume(co)
  if not ok then
    finish(false, 'FAIL: ' .. debug.traceback(co, tostring(err)))
  elseif coroutine.status(co) == 'dead' then
    finish(true, 'PASS')
  end
end

local function sleep(ms)
  vim.defer_fn(resume, ms)
  coroutine.yield()
end

-- Polls cond until it returns something true (returned) or ms pass (nil).
local function poll(ms, cond)
  local t0 = vim.loop.now()
  while true do
    local v = cond()
    if v then
      return v
    end
    if vim.loop.now() - t0 > ms then
      return nil
    end
    sleep(25)
  end
end

local function wait_for(what, ms, cond)
  local v = poll(ms, cond)
  if not v then
    error('timed out after ' .. ms .. ' ms waiting for ' .. what)
  end
  return v
end

local function check(cond, what)
  if not cond then
    error('check failed: ' .. what, 2)
  end
end

local ns = vim.api.nvim_create_namespace('infill')
local function marks()
  return vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })
end
local function line(n)
  return vim.api.nvim_buf_get_lines(0, n - 1, n, false)[1]
end

local source = [[
import os


def list_python_files(root):
    """Return the paths of the Python files under root."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(".py"):
                found.append(os.path.join(dirpath, name))
    return found


def count_lines(path):
    with open(path) as f:
        return sum(1 for _ in f)


def main():
    total = 0
]]

-- Types keys (mappings apply, as if typed), then waits until a suggestion
-- is visible; types a few more characters when the model gives nothing fit
-- to show (random weights: some answers are empty or rejected).
local function type_until_suggestion(first, more)
  vim.api.nvim_input(first)
  for attempt = 0, #more do
    -- (an answer is empty while the model still loads: type on)
    local v = poll(attempt == 0 and 10000 or 15000, function()
      return require('infill').visible()
    end)
    if v then
      return v
    end
    if attempt < #more then
      vim.api.nvim_input(more:sub(attempt + 1, attempt + 1))
    end
  end
  error('no suggestion appeared after typing ' .. first .. more)
end

co = coroutine.create(function()
  local infill = require('infill')
  local cmd = { bin, '--model', model, '--user-config', '' }
  if os.getenv('INFILL_LOG') then -- the server's debug log, for a failing run
    vim.list_extend(cmd, { '--log-file', os.getenv('INFILL_LOG'), '--log-level', 'debug' })
  end
  infill.setup {
    cmd = cmd,
    filetypes = { 'python' },
    settings = { completion = { debounceMs = 0, maxTokens = 8, candidates = 1 } },
  }
  local path = tmp .. '/walk.py'
  local f = assert(io.open(path, 'w'))
  f:write(source)
  f:close()
  vim.cmd('edit ' .. path)
  vim.cmd('filetype on')
  vim.bo.filetype = 'python'
  wait_for('the client to attach', 20000, function()
    for _, c in pairs(vim.lsp.buf_get_clients(0)) do
      if c.name == 'infill' and c.initialized ~= false then
        return true
      end
    end
  end)

  -- the settings reached the server (it pulls them with workspace/configuration)
  wait_for('completion.maxTokens = 8 on the server', 10000, function()
    local r = vim.lsp.buf_request_sync(0, 'infill/settings', { languageId = 'python' }, 2000) or {}
    for _, resp in pairs(r) do
      if resp.result and resp.result['completion.maxTokens'] == 8 then
        return true
      end
    end
  end)

  -- 1. type at the end of the file: a ghost text extmark at the cursor
  local last = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_win_set_cursor(0, { last, 0 })
  -- (in a comment: random weights give random text, which is valid there)
  local v = type_until_suggestion('o    # count the lines in every file under the', ' roo')
  local ms = marks()
  check(#ms == 1, 'one extmark, got ' .. #ms)
  local row, col, details = ms[1][2], ms[1][3], ms[1][4]
  local cur = vim.api.nvim_win_get_cursor(0)
  check(row == cur[1] - 1 and col == cur[2], 'the extmark sits at the cursor')
  local first_line = v.text:match('^[^\n]*')
  check(details.virt_text and details.virt_text[1][1] == first_line:gsub('\t', string.rep(' ', vim.bo.tabstop)),
    'virt_text shows the suggestion: ' .. vim.inspect(details.virt_text) .. ' vs ' .. vim.inspect(v.text))
  if v.text:find('\n') then
    check(details.virt_lines and #details.virt_lines >= 1, 'multi-line suggestion has virt_lines')
  end
  log('suggestion: ' .. vim.inspect(v.text))

  -- 2. <Tab> accepts: the text lands in the buffer after what was typed
  local before_row = cur[1]
  local typed = line(before_row)
  vim.api.nvim_input('<Tab>')
  wait_for('the accept', 5000, function()
    return line(before_row) ~= typed
  end)
  local got = table.concat(vim.api.nvim_buf_get_lines(0, before_row - 1, -1, false), '\n')
  check(got:sub(1, #typed + #v.text) == typed .. v.text,
    'accepted text in the buffer: ' .. vim.inspect(got) .. ' expected prefix ' .. vim.inspect(typed .. v.text))
  local lines_in = select(2, v.text:gsub('\n', ''))
  cur = vim.api.nvim_win_get_cursor(0)
  check(cur[1] == before_row + lines_in, 'cursor row after accept')
  check(vim.api.nvim_get_mode().mode == 'i', 'still in insert mode after accept')

  -- 3. <Esc> dismisses: the extmark goes away
  vim.api.nvim_input('<Esc>o    # then print the total number of')
  v = type_until_suggestion('', ' lin')
  check(#marks() == 1, 'a new suggestion is visible')
  vim.api.nvim_input('<Esc>')
  wait_for('the dismissal on <Esc>', 5000, function()
    return #marks() == 0 and not infill.visible()
  end)

  -- 4. accept a word (<M-w>): only the first word goes in, the rest stays
  v = type_until_suggestion('A and', ' the')
  row = vim.api.nvim_win_get_cursor(0)[1]
  typed = line(row)
  local word = require('infill.text').next_word(v.text)
  vim.api.nvim_input('<M-w>')
  wait_for('the word accept', 5000, function()
    return line(row) ~= typed
  end)
  got = table.concat(vim.api.nvim_buf_get_lines(0, row - 1, -1, false), '\n')
  check(got:sub(1, #typed + #word) == typed .. word, 'accepted word: ' .. vim.inspect(got) .. ' word ' .. vim.inspect(word))
  if #word < #v.text then
    local left = infill.visible()
    check(left and left.text == v.text:sub(#word + 1), 'the rest stays visible: ' .. vim.inspect(left))
    -- 5. a cursor move dismisses
    vim.api.nvim_input('<Left>')
    wait_for('the dismissal on a cursor move', 5000, function()
      return #marks() == 0
    end)
  end
  vim.api.nvim_input('<Esc>')
  sleep(50)
end)

vim.defer_fn(function()
  finish(false, 'FAIL: the whole test took over 170 s')
end, 170000)
vim.schedule(resume)
