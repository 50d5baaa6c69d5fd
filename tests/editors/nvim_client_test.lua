-- nvim_client_test.lua - the Neovim plugin's start-up and typing, in a
-- headless Neovim against the real server and the tiny model:
--   * the settings reach the server at initialize (initializationOptions),
--     so the first model load is already the configured one;
--   * writing .infill.json in Neovim reloads it on the server;
--   * typing along the ghost text shortens it in place: it never leaves the
--     screen between the key and the server's next answer.
-- Run by nvim.sh (INFILL_BIN, INFILL_MODEL, INFILL_PLUGIN, INFILL_TMP).
-- Exit 0 pass, 1 fail.
local bin, model, tmp = os.getenv('INFILL_BIN'), os.getenv('INFILL_MODEL'), os.getenv('INFILL_TMP')
vim.opt.runtimepath:prepend(os.getenv('INFILL_PLUGIN'))
vim.o.swapfile = false

local h = dofile(os.getenv('INFILL_HARNESS'))
local log, sleep, wait_for, check = h.log, h.sleep, h.wait_for, h.check

local function server_setting(key)
  return (h.request('infill/settings', { languageId = 'python' }, 2000) or {})[key]
end

-- every load the server began ($/progress begin: its message is the path)
local loads = {}
local default_progress = vim.lsp.handlers['$/progress']
vim.lsp.handlers['$/progress'] = function(err, result, ctx, config)
  local v = result and result.value
  if type(v) == 'table' and v.kind == 'begin' then
    loads[#loads + 1] = v.message or '?'
  end
  if default_progress then
    return default_progress(err, result, ctx, config)
  end
end

h.run(function()
  local infill = require('infill')
  local root = tmp .. '/proj'
  vim.fn.mkdir(root, 'p')
  local f = assert(io.open(root .. '/.infill.json', 'w'))
  f:write('{"completion": {"maxLines": 2}}\n')
  f:close()
  f = assert(io.open(root .. '/walk.py', 'w'))
  f:write('import os\n\n\ndef main():\n    total = 0\n')
  f:close()
  local cmd = { bin, '--user-config', '' } -- no --model: the settings name it
  if os.getenv('INFILL_LOG') then
    vim.list_extend(cmd, { '--log-file', os.getenv('INFILL_LOG'), '--log-level', 'debug' })
  end
  infill.setup {
    cmd = cmd,
    filetypes = { 'python' },
    settings = { model = model, modelFallback = false,
      completion = { debounceMs = 0, maxTokens = 8, candidates = 1 } },
  }
  vim.cmd('edit ' .. root .. '/walk.py')
  vim.cmd('filetype on')
  vim.bo.filetype = 'python'
  local pybuf = vim.api.nvim_get_current_buf()

  -- 1. the configured model is the first (and only) one loaded
  wait_for('the model to load', 60000, function()
    return #loads > 0 and infill.status() == '' and server_setting('completion.maxTokens') == 8
  end)
  log('loads: ' .. vim.inspect(loads))
  check(loads[1] == model, 'the first load is the configured model, not ' .. tostring(loads[1]))
  check(server_setting('modelFallback') == false, 'modelFallback = false on the server')
  sleep(300)
  check(#loads == 1, 'one load only: ' .. vim.inspect(loads))

  -- 2. writing .infill.json in Neovim reloads it (the server does not see
  -- JSON buffers)
  check(server_setting('completion.maxLines') == 2, 'the project file read at start')
  vim.cmd('edit ' .. root .. '/.infill.json')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { '{"completion": {"maxLines": 3}}' })
  vim.cmd('write')
  vim.cmd('buffer ' .. pybuf)
  wait_for('completion.maxLines = 3 after :write', 5000, function()
    return server_setting('completion.maxLines') == 3
  end)

  -- 3. typing along the ghost text: shortened at once, never gone
  local last = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_win_set_cursor(0, { last, 0 })
  vim.api.nvim_input('o    # count ')
  wait_for('insert mode after "# count "', 5000, function()
    return vim.api.nvim_get_mode().mode == 'i' and vim.endswith(vim.api.nvim_get_current_line(), '# count ')
  end)
  local base = vim.api.nvim_get_current_line()
  local ghost = 'the lines in every file'
  check(infill.show_items({ { insertText = ghost } }), 'the ghost is shown')
  for i = 1, 5 do
    local want = ghost:sub(i + 1)
    local typed_line = base .. ghost:sub(1, i)
    vim.api.nvim_input(ghost:sub(i, i))
    wait_for('the key ' .. ghost:sub(i, i), 2000, function()
      return vim.api.nvim_get_current_line() == typed_line
    end, 1)
    -- right after the key: no answer yet (the plugin waits 50 ms to ask)
    local v = infill.visible()
    check(v and v.text == want, 'key ' .. i .. ': the ghost shortened in place: ' .. vim.inspect(v))
    -- and it stays on screen until (and after) the server answers
    local t0 = vim.loop.now()
    while vim.loop.now() - t0 < 200 do
      check(infill.visible(), 'key ' .. i .. ': the ghost left the screen after '
        .. (vim.loop.now() - t0) .. ' ms')
      sleep(3)
    end
    if infill.visible().text ~= ghost:sub(i + 1) then
      -- the server answered something else: type along that from here
      log('the server answered ' .. vim.inspect(infill.visible().text))
      break
    end
  end
  -- a character that is not the ghost's next one hides it
  local v = infill.visible()
  local other = v.text:sub(1, 1) == 'Z' and 'Q' or 'Z'
  vim.api.nvim_input(other)
  wait_for('the key ' .. other, 2000, function()
    return vim.api.nvim_get_current_line():sub(-1) == other
  end, 1)
  check(not infill.visible() or infill.visible().text ~= v.text:sub(2), 'a different key does not type along')
  vim.api.nvim_input('<Esc>')
  sleep(50)
end, 110000)
