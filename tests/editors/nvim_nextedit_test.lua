-- nvim_nextedit_test.lua - next edits in a headless Neovim against the real
-- server: rename a variable at one place with ordinary keys (ciw...<Esc>),
-- see the next use offered, ]e jumps to it, <Tab> applies it and the one
-- after it is offered, until the file is right; <Esc> dismisses one; the
-- server counted what was shown, applied and dismissed.
-- Run by nvim.sh (INFILL_BIN, INFILL_MODEL, INFILL_PLUGIN, INFILL_TMP).
-- Exit 0 pass, 1 fail.
local bin, model, tmp = os.getenv('INFILL_BIN'), os.getenv('INFILL_MODEL'), os.getenv('INFILL_TMP')
vim.opt.runtimepath:prepend(os.getenv('INFILL_PLUGIN'))
vim.o.swapfile = false

local h = dofile(os.getenv('INFILL_HARNESS'))
local log, sleep, wait_for, check = h.log, h.sleep, h.wait_for, h.check

local function stats()
  return h.request('infill/stats', {}, 2000) or {}
end

local function lines()
  return vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

h.run(function()
  local infill = require('infill')
  local root = tmp .. '/proj'
  vim.fn.mkdir(root, 'p')
  local f = assert(io.open(root .. '/area.py', 'w'))
  f:write('def area(w, h):\n    size = w * h\n    print("size", size)\n    return size\n\n'
    .. 'def other():\n    size = 3\n    return size\n')
  f:close()
  infill.setup {
    cmd = { bin, '--user-config', '' },
    filetypes = { 'python' },
    settings = { model = model, modelFallback = false },
  }
  vim.cmd('edit ' .. root .. '/area.py')
  vim.cmd('filetype on')
  vim.bo.filetype = 'python'
  wait_for('the client to attach', 20000, function()
    return #vim.tbl_values(vim.lsp.buf_get_clients(0)) > 0
  end)
  sleep(300)

  -- 1. rename `size` to `area_m2` at its first use, as a user would
  vim.api.nvim_win_set_cursor(0, { 2, 5 })
  vim.api.nvim_input('ciwarea_m2<Esc>')
  local v = wait_for('the next use offered', 10000, function()
    return infill.next_edit_visible()
  end)
  check(v.row == 2 and v.text == 'area_m2', 'line 3 offered first: ' .. vim.inspect(v))
  local marks = vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_create_namespace('infill_nextedit'),
    0, -1, { details = true })
  local shown = false
  for _, m in ipairs(marks) do
    local vt = m[4].virt_text
    shown = shown or (vt and vt[1][1]:find('area_m2', 1, true) ~= nil)
  end
  check(shown, 'the new text is drawn: ' .. vim.inspect(marks))

  -- 2. ]e jumps to it, <Tab> applies it, and the next is offered
  vim.api.nvim_input(']e')
  wait_for(']e to move the cursor', 2000, function()
    local c = vim.api.nvim_win_get_cursor(0)
    return c[1] == 3 and c[2] == v.col
  end)
  vim.api.nvim_input('<Tab>')
  wait_for('line 3 changed', 2000, function()
    return lines()[3] == '    print("size", area_m2)'
  end)
  v = wait_for('the use after it offered', 5000, function()
    local n = infill.next_edit_visible()
    return n and n.row == 3 and n
  end)
  vim.api.nvim_input(']e<Tab>')
  wait_for('line 4 changed', 2000, function()
    return lines()[4] == '    return area_m2'
  end)
  sleep(300)
  local want = { 'def area(w, h):', '    area_m2 = w * h', '    print("size", area_m2)',
    '    return area_m2', '', 'def other():', '    size = 3', '    return size' }
  check(vim.deep_equal(lines(), want), 'the file is right: ' .. vim.inspect(lines()))
  check(not infill.next_edit_visible(), 'nothing more offered (other() keeps its own size)')

  -- 3. another rename, dismissed with <Esc>
  vim.api.nvim_win_set_cursor(0, { 7, 5 })
  vim.api.nvim_input('ciwn<Esc>')
  wait_for('the next use in other() offered', 10000, function()
    local n = infill.next_edit_visible()
    return n and n.row == 7
  end)
  vim.api.nvim_input('<Esc>')
  wait_for('dismissed', 2000, function()
    return not infill.next_edit_visible()
  end)
  check(lines()[8] == '    return size', 'a dismissed edit is not applied')
  local st = wait_for('the counts', 3000, function()
    local s = stats()
    return s.nextEditRejected == 1 and s
  end)
  log('stats: ' .. vim.inspect({ st.nextEditRequests, st.nextEditOffered, st.nextEditShown,
    st.nextEditAccepted, st.nextEditRejected, st.nextEditLatencyMs }))
  check(st.nextEditAccepted == 2, 'two applied: ' .. tostring(st.nextEditAccepted))
  check(st.nextEditShown >= 3, 'three shown: ' .. tostring(st.nextEditShown))
end, 60000)
