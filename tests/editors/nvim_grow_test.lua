-- nvim_grow_test.lua - a suggestion grows on screen while the user waits:
-- the Neovim plugin against the real server and the tiny model, with a 1 ms
-- deadline (so the first answer is cut) and the server's live slices slowed
-- (INFILL_TEST_LIVE_DELAY_MS, set by meson), in a headless Neovim. Type in
-- a comment, see the ghost text, then type nothing: the server's
-- infill/suggestionGrew makes the plugin ask again, and the ghost text at
-- the same place becomes longer, beginning with what was shown.
--
-- Run by nvim.sh (INFILL_BIN, INFILL_MODEL, INFILL_PLUGIN, INFILL_TMP).
-- Exit 0 pass, 1 fail.
local bin, model, tmp = os.getenv('INFILL_BIN'), os.getenv('INFILL_MODEL'), os.getenv('INFILL_TMP')
vim.opt.runtimepath:prepend(os.getenv('INFILL_PLUGIN'))
vim.o.swapfile = false

local h = dofile(os.getenv('INFILL_HARNESS'))
local log, poll, check = h.log, h.poll, h.check

local function stats()
  return h.request('infill/stats', {}, 5000) or {}
end

h.run(function()
  local infill = require('infill')
  local cmd = { bin, '--model', model, '--user-config', '' }
  if os.getenv('INFILL_LOG') then
    vim.list_extend(cmd, { '--log-file', os.getenv('INFILL_LOG'), '--log-level', 'debug' })
  end
  infill.setup {
    cmd = cmd,
    filetypes = { 'python' },
    settings = { completion = { debounceMs = 0, maxTokens = 32, candidates = 1, temperature = 0,
      deadlineMs = 1, prefillBudget = false } },
  }
  local path = tmp .. '/grow.py'
  local f = assert(io.open(path, 'w'))
  f:write('import os\n\n\ndef main():\n    total = 0\n')
  f:close()
  vim.cmd('edit ' .. path)
  vim.bo.filetype = 'python'
  check(poll(20000, function()
    for _, c in pairs(vim.lsp.buf_get_clients(0)) do
      if c.name == 'infill' and c.initialized ~= false then
        return true
      end
    end
  end), 'the client attached')
  check(poll(20000, function()
    local r = vim.lsp.buf_request_sync(0, 'infill/settings', { languageId = 'python' }, 2000) or {}
    for _, resp in pairs(r) do
      if resp.result and resp.result['completion.deadlineMs'] == 1 then
        return true
      end
    end
  end), 'the settings reached the server')
  check(poll(30000, function()
    return stats().backend == 'cpu'
  end), 'the model loaded')

  -- type in a comment (random weights write random text, valid there),
  -- a word at a time, until a suggestion shows; then wait without typing
  local words = { '    # count the lines', ' in every', ' file under', ' the root', ' and', ' print' }
  local last = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_win_set_cursor(0, { last, 0 })
  vim.api.nvim_input('o')
  for _, w in ipairs(words) do
    vim.api.nvim_input(w)
    local first = poll(3000, function()
      return infill.visible()
    end)
    if first then
      local cur = vim.api.nvim_win_get_cursor(0)
      local grown = poll(8000, function()
        local v = infill.visible()
        return v and #v.text > #first.text and v
      end)
      if grown then
        check(grown.text:sub(1, #first.text) == first.text,
          'grew in place: ' .. vim.inspect(first.text) .. ' -> ' .. vim.inspect(grown.text))
        local now = vim.api.nvim_win_get_cursor(0)
        check(now[1] == cur[1] and now[2] == cur[2], 'the cursor did not move')
        check((stats().grewNotices or 0) >= 1, 'the server sent infill/suggestionGrew')
        log('shown ' .. vim.inspect(first.text) .. ', then ' .. vim.inspect(grown.text))
        return
      end
      log('no growth after ' .. vim.inspect(first.text) .. ' (the answer was whole): type on')
    end
  end
  error('no suggestion grew on screen')
end)
