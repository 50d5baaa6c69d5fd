-- infill.nextedit - next edits in Neovim: after an edit settles (leaving
-- insert mode, or a pause in normal mode), ask the server where the edit
-- implies another one (infill/nextEdit: a rename's other uses, a changed
-- signature's calls, the same fix on alike lines) and show the first at its
-- place: the text it replaces highlighted, the new text at the line's end.
--
-- Keys (normal mode, buffer-local; keymaps.next_edit_* in setup):
--   ]e      jump to the next edit shown
--   <Tab>   apply it (then the one after it is shown), else an ordinary <Tab>
--   <Esc>   dismiss it, else an ordinary <Esc>
-- The server counts what was shown, applied and dismissed (infill/stats
-- nextEdit*), as it does for completions.
local M = {}

local S = {
  ns = vim.api.nvim_create_namespace('infill_nextedit'),
  bufs = {}, -- bufnr -> { seq, edit, marks, tick }
  client_for = nil, -- set by init.lua: bufnr -> the infill client
  request = nil, -- client, method, params, handler, bufnr -> sends
  notify = nil,
}

local function state(bufnr)
  local b = S.bufs[bufnr]
  if not b then
    b = { seq = 0, edit = nil, marks = {}, tick = nil }
    S.bufs[bufnr] = b
  end
  return b
end

local function clear(bufnr)
  local b = S.bufs[bufnr]
  if not b then
    return
  end
  for _, m in ipairs(b.marks) do
    pcall(vim.api.nvim_buf_del_extmark, bufnr, S.ns, m)
  end
  b.marks = {}
  b.edit = nil
end

-- LSP positions to byte columns, in the client's encoding.
local function byte_col(bufnr, pos, enc)
  local line = vim.api.nvim_buf_get_lines(bufnr, pos.line, pos.line + 1, false)[1] or ''
  if enc == 'utf-8' then
    return math.min(pos.character, #line)
  end
  local ok, col = pcall(vim.str_byteindex, line, pos.character, enc == 'utf-16')
  return ok and col or #line
end

local function draw(bufnr, edit, enc)
  clear(bufnr)
  local b = state(bufnr)
  local r = edit.range
  local srow, scol = r.start.line, byte_col(bufnr, r.start, enc)
  local erow, ecol = r['end'].line, byte_col(bufnr, r['end'], enc)
  local first = (edit.text:gsub('\n.*', '…'))
  local label = first == '' and ' ⇢ (delete)' or ' ⇢ ' .. first
  if erow > srow or ecol > scol then
    b.marks[#b.marks + 1] = vim.api.nvim_buf_set_extmark(bufnr, S.ns, srow, scol, {
      end_row = erow, end_col = ecol, hl_group = 'InfillNextEditOld',
    })
  end
  b.marks[#b.marks + 1] = vim.api.nvim_buf_set_extmark(bufnr, S.ns, srow, scol, {
    virt_text = { { label, 'InfillNextEdit' } }, virt_text_pos = 'eol',
  })
  b.edit = { edit = edit, row = srow, col = scol, enc = enc }
  b.tick = vim.api.nvim_buf_get_changedtick(bufnr)
end

--- Asks the server for the next edits of bufnr and shows the first.
function M.request(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = S.client_for and S.client_for(bufnr)
  if not client then
    return
  end
  local b = state(bufnr)
  b.seq = b.seq + 1
  local seq, tick = b.seq, vim.api.nvim_buf_get_changedtick(bufnr)
  local cur = vim.api.nvim_win_get_cursor(0)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = cur[1] - 1, character = cur[2] },
  }
  S.request(client, 'infill/nextEdit', params, function(err, result)
    -- an answer about text the user changed since, or superseded: dropped
    if err or seq ~= b.seq or not vim.api.nvim_buf_is_valid(bufnr)
        or tick ~= vim.api.nvim_buf_get_changedtick(bufnr) then
      return
    end
    local edits = result and result.edits or {}
    if #edits == 0 then
      clear(bufnr)
      return
    end
    draw(bufnr, edits[1], client.offset_encoding or 'utf-16')
    S.notify(client, 'textDocument/didShowInlineEdit', { item = { command = edits[1].command } })
  end, bufnr)
end

--- The next edit shown in bufnr: {row, col, text} (0-based row, byte col),
--- or nil.
function M.visible(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local b = S.bufs[bufnr]
  if not b or not b.edit then
    return nil
  end
  if b.tick ~= vim.api.nvim_buf_get_changedtick(bufnr) then
    clear(bufnr) -- the text moved under it
    return nil
  end
  return { row = b.edit.row, col = b.edit.col, text = b.edit.edit.text }
end

--- Moves the cursor to the next edit shown; false when none.
function M.jump()
  local v = M.visible()
  if not v then
    return false
  end
  vim.cmd("normal! m'") -- the jump list, so that <C-o> comes back
  vim.api.nvim_win_set_cursor(0, { v.row + 1, v.col })
  return true
end

--- Applies the next edit shown, reports it, and asks for the one after it;
--- false when none is shown.
function M.accept()
  local bufnr = vim.api.nvim_get_current_buf()
  if not M.visible(bufnr) then
    return false
  end
  local e = S.bufs[bufnr].edit
  clear(bufnr)
  vim.lsp.util.apply_text_edits({ { range = e.edit.range, newText = e.edit.text } }, bufnr, e.enc)
  local client = S.client_for and S.client_for(bufnr)
  if client and e.edit.command then
    S.request(client, 'workspace/executeCommand', {
      command = e.edit.command.command, arguments = e.edit.command.arguments,
    }, function() end, bufnr)
  end
  M.request(bufnr)
  return true
end

--- Dismisses the next edit shown (the server counts it rejected); false
--- when none is shown.
function M.dismiss()
  local bufnr = vim.api.nvim_get_current_buf()
  if not M.visible(bufnr) then
    return false
  end
  local e = S.bufs[bufnr].edit
  clear(bufnr)
  state(bufnr).seq = state(bufnr).seq + 1
  local client = S.client_for and S.client_for(bufnr)
  if client and e.edit.command then
    S.notify(client, 'infill/didRejectNextEdit', { item = { command = e.edit.command } })
  end
  return true
end

local function feed(key)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(key, true, false, true), 'n', false)
end

--- Wires next edits into bufnr: the autocmds that ask, and the keys.
--- hooks: {client_for, request, notify} from init.lua; keys: {jump, accept,
--- dismiss} (a false entry is not mapped; keys = false maps none).
function M.attach(bufnr, hooks, keys)
  S.client_for, S.request, S.notify = hooks.client_for, hooks.request, hooks.notify
  vim.api.nvim_set_hl(0, 'InfillNextEdit', { link = 'Comment', default = true })
  vim.api.nvim_set_hl(0, 'InfillNextEditOld', { link = 'DiffDelete', default = true })
  local group = vim.api.nvim_create_augroup('infill_nextedit_' .. bufnr, { clear = true })
  -- an edit settles when insert mode ends, or in normal mode (`x`, `dw`,
  -- `.`) when the text stops changing for 'updatetime'
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'CursorHold' }, {
    group = group, buffer = bufnr,
    callback = function()
      local b = state(bufnr)
      local tick = vim.api.nvim_buf_get_changedtick(bufnr)
      if b.asked_tick ~= tick then
        b.asked_tick = tick
        M.request(bufnr)
      end
    end,
  })
  vim.api.nvim_create_autocmd('BufWipeout', {
    group = group, buffer = bufnr,
    callback = function()
      S.bufs[bufnr] = nil
    end,
  })
  if keys == false then
    return
  end
  local function map(lhs, fn, desc)
    if lhs then
      vim.keymap.set('n', lhs, function()
        if not fn() then
          feed(lhs)
        end
      end, { buffer = bufnr, desc = desc })
    end
  end
  map(keys.jump, M.jump, 'infill: jump to the next edit')
  map(keys.accept, M.accept, 'infill: apply the next edit')
  map(keys.dismiss, M.dismiss, 'infill: dismiss the next edit')
end

return M
