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

local h = dofile(os.getenv('INFILL_HARNESS'))
local log, sleep, poll, wait_for, check = h.log, h.sleep, h.poll, h.wait_for, h.check

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

-- the server's feedback counts (infill/stats "feedback"), summed
-- over shapes, for python: { shown, accepted, partlyAccepted, ... }.
local function feedback()
  local sum = {}
  local r = vim.lsp.buf_request_sync(0, 'infill/stats', {}, 5000) or {}
  for _, resp in pairs(r) do
    local py = resp.result and resp.result.feedback and resp.result.feedback.python or {}
    for _, shape in pairs(py) do
      for k, n in pairs(shape) do
        sum[k] = (sum[k] or 0) + n
      end
    end
  end
  return sum
end

-- Waits until feedback()[key] >= n.
local function wait_feedback(key, n)
  return wait_for('feedback ' .. key .. ' >= ' .. n, 5000, function()
    local f = feedback()
    return (f[key] or 0) >= n and f
  end)
end

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

h.run(function()
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

  -- the plugin sets 'omnifunc' (E764 without it)
  check(vim.bo.omnifunc == 'v:lua.vim.lsp.omnifunc', "omnifunc set, got '" .. vim.bo.omnifunc .. "'")

  -- a suggestion in the middle of a line is drawn where it goes
  -- (0.7-0.9: an overlay showing the line as it would read; 0.10+: inline
  -- virtual text), not after the line's closing `)`
  local last0 = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_buf_set_lines(0, last0, last0, false, { 'print(are)' })
  vim.api.nvim_win_set_cursor(0, { last0 + 1, 9 })
  -- (in normal mode: the drawing does not depend on the mode)
  check(infill.show_items({ { insertText = 'area_of_circle(2.0)', range = {
    start = { line = last0, character = 6 }, ['end'] = { line = last0, character = 9 } } } }),
    'the mid-line item is shown')
  local mm = marks()
  check(#mm == 1 and mm[1][2] == last0 and mm[1][3] == 9, 'the extmark sits at the cursor')
  local shown = ''
  for _, chunk in ipairs(mm[1][4].virt_text) do
    shown = shown .. chunk[1]
  end
  if vim.fn.has('nvim-0.10') == 1 then
    check(mm[1][4].virt_text_pos == 'inline' and shown == 'a_of_circle(2.0)',
      'inline virtual text: ' .. vim.inspect(mm[1][4]))
  else
    check(mm[1][4].virt_text_pos == 'overlay', 'drawn over the rest of the line, not at its end: '
      .. tostring(mm[1][4].virt_text_pos))
    -- over real characters, their highlights do not show through (MatchParen
    -- of the `)` under the cursor on the first ghost character)
    check(mm[1][4].hl_mode == 'replace', 'the overlay replaces what it covers: '
      .. tostring(mm[1][4].hl_mode))
    check(vim.trim(shown) == 'a_of_circle(2.0))', 'the line reads as after accepting: ' .. vim.inspect(shown))
  end
  infill.dismiss()
  vim.api.nvim_buf_set_lines(0, last0, last0 + 1, false, {})

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
  -- feedback: the server heard of the suggestion shown and of its accept
  local fb = wait_feedback('accepted', 1)
  check(fb.shown >= 1 and fb.acceptedChars >= #v.text:gsub('[\128-\191]', ''),
    'shown and accepted counted: ' .. vim.inspect(fb))

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
  -- feedback: the suggestions typed over before were counted dismissed
  wait_feedback('dismissed', 1)
  if #word < #v.text then
    -- and this one partly accepted
    fb = wait_feedback('partlyAccepted', 1)
    log('feedback: ' .. vim.inspect(fb))
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

  -- 6. menu completion (<C-x><C-o>) after a partly typed word: the
  -- items replace from the word's start, so the word typed does not filter
  -- them all away
  -- (the filtering is Neovim's own, vim.lsp.omnifunc's: its start column and
  -- vim.lsp.util's prefix filter over the server's answer)
  local r = vim.api.nvim_buf_line_count(0) + 1
  vim.api.nvim_buf_set_lines(0, r - 1, r - 1, false, { '    # and add the wor' })
  vim.api.nvim_win_set_cursor(0, { r, 21 }) -- after "wor", as in insert mode
  local start = vim.fn.match(line(r):sub(1, 21), '\\k*$')
  check(start == 18, 'the word starts at column 18, got ' .. start)
  local words = poll(60000, function()
    local resp = vim.lsp.buf_request_sync(0, 'textDocument/completion',
      vim.lsp.util.make_position_params(), 5000) or {}
    for _, rr in pairs(resp) do
      local m = rr.result and vim.lsp.util.text_document_completion_list_to_complete_items(rr.result, 'wor')
      if m and #m > 0 then
        return m
      end
    end
  end)
  check(words, 'menu items after the partly typed word "wor"')
  for _, it in ipairs(words) do
    check(vim.startswith(it.word, 'wor'), 'item starts with the typed word: ' .. vim.inspect(it.word))
  end
  log('menu items: ' .. #words .. ', first ' .. vim.inspect(words[1].word))

  -- 7. a model that fails to load: the embedded one stands in,
  -- the status says so (once prefixed), and suggestions keep coming
  infill.setup {
    cmd = { bin, '--model', tmp .. '/missing.gguf', '--user-config', '' },
    filetypes = { 'python' },
    settings = { completion = { debounceMs = 0, maxTokens = 8, candidates = 1 } },
  }
  infill.restart()
  local st = wait_for('the status to name the embedded model', 30000, function()
    local s = infill.status()
    return s:find('embedded model') and s
  end)
  log('status: ' .. st)
  check(not st:find('infill: infill:'), 'no doubled prefix: ' .. st)
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
  type_until_suggestion('o    # the number of lines in', ' the fil')
  vim.api.nvim_input('<Esc>')
  wait_for('normal mode', 5000, function()
    return vim.api.nvim_get_mode().mode == 'n'
  end)

  -- 7b. a setting the load cannot honour (a q8_0 cache on the tiny model,
  -- whose head size is 16): the model loads, and the warning stays in the
  -- status after "ready" (where the echo's ":InfillStatus" points)
  infill.setup {
    cmd = { bin, '--model', model, '--user-config', '' },
    filetypes = { 'python' },
    settings = { cache = { kvType = 'q8_0' }, completion = { debounceMs = 0, maxTokens = 8 } },
  }
  infill.restart()
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
  type_until_suggestion('o    # the lines in', ' the fil') -- the load has ended
  vim.api.nvim_input('<Esc>')
  wait_for('normal mode', 5000, function()
    return vim.api.nvim_get_mode().mode == 'n'
  end)
  st = infill.status()
  log('status: ' .. st)
  check(st:find('cache.kvType q8_0 is not used', 1, true) and st:find('its cache is f16', 1, true),
    'the status keeps the warning: ' .. st)

  -- 8. (last: what the keys leave pending is not waited out)
  -- with no suggestion shown, an Alt key keeps its meaning in
  -- insert mode (<Esc> then the key), typing no stray character
  for _, k in ipairs({ '<M-w>', '<M-l>' }) do
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    vim.api.nvim_input('i' .. k)
    wait_for(k .. ' to leave insert mode', 5000, function()
      return vim.api.nvim_get_mode().mode == 'n'
    end)
    check(line(1) == 'import os', k .. ' typed a stray character: ' .. vim.inspect(line(1)))
    if k == '<M-w>' then
      wait_for('<M-w> to act as <Esc>w (to "os")', 5000, function()
        return vim.api.nvim_win_get_cursor(0)[2] == 7
      end)
    end
  end

  sleep(50)
end, 170000, function()
  log('mode: ' .. vim.inspect(vim.api.nvim_get_mode()) .. ' line ' .. vim.inspect(vim.api.nvim_get_current_line()))
end)
