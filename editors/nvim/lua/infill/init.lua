-- infill - Neovim client for the infill language server.
--
--   require('infill').setup{
--     cmd = { 'infill', '--model', '/path/to/model.gguf' },
--     filetypes = { 'python', 'c', 'lua' },            -- where to start it
--     settings = { completion = { maxTokens = 64 } },   -- sent at initialize, and as section "infill"
--     init_options = {},                                -- initializationOptions
--   }
--
-- The server is started with vim.lsp.start (Neovim 0.8+) or
-- vim.lsp.start_client + vim.lsp.buf_attach_client (0.7). Suggestions come
-- from textDocument/inlineCompletion after a pause in typing and are drawn
-- as extmarks (virtual text at the cursor, virtual lines below for the rest
-- of a multi-line suggestion). Neovim 0.12+ has vim.lsp.inline_completion;
-- there (native = 'auto') the native ghost text is used instead.
--
-- Keys (insert mode, buffer-local; keymaps = false to map them yourself):
--   <Tab>   accept when a suggestion is visible, else an ordinary <Tab>
--   <M-w>   accept the next word          <M-l>  accept the next line
--   <M-]>   next candidate                <M-[>  previous candidate
--   <C-]>   dismiss (leaving insert mode or moving the cursor also does)
--
-- Next edits (normal mode, infill.nextedit; next_edits = false turns them
-- off): after an edit settles, the place it implies next (a rename's other
-- uses, a signature's calls, the same fix on alike lines) is shown there.
--   ]e      jump to it        <Tab>  apply it        <Esc>  dismiss it
local text = require('infill.text')
local nextedit = require('infill.nextedit')

local M = {}

local defaults = {
  cmd = { 'infill', '--stdio' },
  filetypes = {
    'c', 'cpp', 'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact',
    'go', 'rust', 'java', 'lua', 'sh',
  },
  settings = {},
  init_options = nil,
  root_markers = { '.infill.json', '.git' },
  delay_ms = 50, -- pause in typing before asking (the server debounces too)
  omnifunc = 'auto', -- set 'omnifunc' to vim.lsp.omnifunc where the buffer has none (true: always)
  native = 'auto', -- use vim.lsp.inline_completion where it exists
  hl_group = 'InfillGhost',
  keymaps = {
    accept = '<Tab>',
    accept_word = '<M-w>',
    accept_line = '<M-l>',
    next = '<M-]>',
    prev = '<M-[>',
    dismiss = '<C-]>',
    next_edit_jump = ']e',
    next_edit_accept = '<Tab>',
    next_edit_dismiss = '<Esc>',
  },
  next_edits = true, -- ask for next edits when an edit settles
  on_attach = nil,
}

-- All state lives in this table (one per Neovim instance).
local S = {
  opts = nil,
  ns = vim.api.nvim_create_namespace('infill'),
  enabled = true,
  client_id = nil, -- 0.7: the one client, shared by all buffers
  bufs = {},       -- bufnr -> per-buffer state (see buf_state)
  status = '',     -- model loading progress / last error, for statuslines
}

local function buf_state(bufnr)
  local b = S.bufs[bufnr]
  if not b then
    b = { seq = 0, items = nil, index = 1, shown = nil, mark = nil, timer = nil, keep_tick = nil }
    S.bufs[bufnr] = b
  end
  return b
end

-- The LSP clients named infill (of one buffer, or all), on every version:
-- get_clients arrived in 0.10, buf_get_clients/get_active_clients went.
local function infill_clients(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = 'infill' })
  end
  local out = {}
  local all = bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()
  for _, c in pairs(all) do
    if c.name == 'infill' then
      out[#out + 1] = c
    end
  end
  return out
end

local function client_for(bufnr)
  return infill_clients(bufnr)[1]
end

-- client:request() from 0.11 on, client.request() before it.
local new_methods = vim.fn.has('nvim-0.11') == 1
local function client_request(client, ...)
  if new_methods then
    return client:request(...)
  end
  return client.request(...)
end

local function client_notify(client, ...)
  if new_methods then
    return client:notify(...)
  end
  return client.notify(...)
end

-- ---- feedback ---------------------------------------------------------
-- The server counts what becomes of each suggestion (infill/stats
-- "feedback", never sent anywhere): shown, accepted whole (the item's
-- command, as workspace/executeCommand), accepted by word or line
-- (textDocument/didPartiallyAcceptCompletion, Copilot's name). Dismissals it
-- infers from the edits. Items without a command are not reported.

local function report_shown(bufnr, item)
  local b = buf_state(bufnr)
  local client = client_for(bufnr)
  if client and item.command and b.reported ~= item then
    b.reported = item
    client_notify(client, 'textDocument/didShowCompletion', { item = item })
  end
end

-- accepted_bytes: how much of the item's insertText is in the buffer now.
local function report_accept(bufnr, s, accepted_bytes)
  local client = client_for(bufnr)
  local item = s.item
  if not client or not item or not item.command then
    return
  end
  if accepted_bytes >= #s.insert then
    client_request(client, 'workspace/executeCommand', {
      command = item.command.command, arguments = item.command.arguments,
    }, function() end, bufnr)
  else
    client_notify(client, 'textDocument/didPartiallyAcceptCompletion', {
      item = item,
      acceptedLength = text.lsp_char(s.insert, accepted_bytes, client.offset_encoding or 'utf-16'),
    })
  end
end

local function client_stop(client)
  if new_methods then
    return client:stop()
  end
  return client.stop()
end

local function has_native()
  return S.opts.native ~= false and vim.lsp.inline_completion ~= nil
end

-- ---- drawing ------------------------------------------------------------

local function clear(bufnr)
  local b = S.bufs[bufnr]
  if not b then
    return
  end
  if b.mark then
    pcall(vim.api.nvim_buf_del_extmark, bufnr, S.ns, b.mark)
  end
  b.mark, b.shown = nil, nil
end

local function expand_tabs(s)
  return (s:gsub('\t', string.rep(' ', vim.bo.tabstop)))
end

-- Draws rest (the not-yet-typed part of a suggestion) at (row, col), row
-- 1-based, col in bytes. end_col: where the accepted text stops replacing
-- (>= col; beyond col when the item replaces text after the cursor).
local function render(bufnr, row, col, rest, end_col)
  clear(bufnr)
  local b = buf_state(bufnr)
  local lines = text.lines(rest)
  local line = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1] or ''
  local vt = { { expand_tabs(lines[1]), S.opts.hl_group } }
  local last_line = { { expand_tabs(lines[#lines]), S.opts.hl_group } }
  local pos = 'overlay' -- at the line's end: nothing after the cursor to hide
  -- combine: the ghost text takes the line's background (cursorline)
  local hl_mode = 'combine'
  if vim.fn.has('nvim-0.10') == 1 then
    pos = 'inline' -- the native inline virtual text moves what follows
  elseif col < #line then
    -- 0.7-0.9 cannot insert virtual text mid-line (eol would put it after
    -- the line's closing `)`, as if it followed it): overlay the rest of
    -- the line with the line as it would read after accepting, the
    -- suggestion then what follows what it replaces, padded to hide
    -- what the overlay does not cover
    local tail = line:sub((end_col or col) + 1)
    local covered = vim.fn.strdisplaywidth(line:sub(col + 1))
    if #lines == 1 then
      vt[#vt + 1] = { tail, 'Normal' }
    else
      last_line[#last_line + 1] = { tail, 'Normal' }
    end
    local w = 0
    for _, chunk in ipairs(vt) do
      w = w + vim.fn.strdisplaywidth(chunk[1])
    end
    if w < covered then
      vt[#vt + 1] = { string.rep(' ', covered - w), 'Normal' }
    end
    -- drawn over real characters: their highlights (MatchParen on the `)`
    -- under the cursor) must not show through the first ghost character
    hl_mode = 'replace'
  end
  local opts = { virt_text = vt, virt_text_pos = pos, hl_mode = hl_mode }
  if #lines > 1 then
    local vl = {}
    for i = 2, #lines - 1 do
      vl[#vl + 1] = { { expand_tabs(lines[i]), S.opts.hl_group } }
    end
    vl[#vl + 1] = last_line
    opts.virt_lines = vl
  end
  b.mark = vim.api.nvim_buf_set_extmark(bufnr, S.ns, row - 1, col, opts)
  b.shown = { row = row, col = col, rest = rest, end_col = end_col or col,
    tick = vim.api.nvim_buf_get_changedtick(bufnr) }
end

-- Typing along the suggestion: when the buffer changed since it was drawn,
-- the cursor is on its row past its start, and what was typed there is the
-- start of the ghost text, the ghost is shortened in place at once (no
-- flicker while the server's answer for the new cursor is on its way).
-- Returns whether the suggestion is still visible.
local function type_along(bufnr)
  local b = S.bufs[bufnr]
  local s = b and b.shown
  if not s or s.tick == vim.api.nvim_buf_get_changedtick(bufnr) then
    return s ~= nil
  end
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1] or ''
  local n = col - s.col
  if row ~= s.row or n <= 0 or n >= #s.rest or line:sub(s.col + 1, col) ~= s.rest:sub(1, n) then
    clear(bufnr)
    return false
  end
  render(bufnr, row, col, s.rest:sub(n + 1), s.end_col + n)
  b.shown.item, b.shown.insert, b.shown.along = s.item, s.insert, true
  return true
end

-- Shows item number b.index of b.items if it fits the cursor; returns
-- whether something is visible.
local function show_current(bufnr, client)
  local b = buf_state(bufnr)
  clear(bufnr)
  local item = b.items and b.items[b.index]
  if not item then
    return false
  end
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1] or ''
  local enc = client and client.offset_encoding or 'utf-16'
  local insert = type(item.insertText) == 'table' and item.insertText.value or item.insertText
  if type(insert) ~= 'string' then
    return false
  end
  local start_col, end_col = col, col
  if item.range then
    if item.range.start.line ~= row - 1 or item.range['end'].line ~= row - 1 then
      return false
    end
    start_col = text.byte_col(line, item.range.start.character, enc)
    end_col = text.byte_col(line, item.range['end'].character, enc)
    if start_col > col or end_col < col then
      return false
    end
  end
  local rest = text.remainder(insert, line:sub(start_col + 1, col))
  if not rest then
    return false
  end
  render(bufnr, row, col, rest, end_col)
  b.shown.item, b.shown.insert = item, insert
  report_shown(bufnr, item)
  return true
end

-- ---- requests -----------------------------------------------------------

local function request(bufnr)
  local client = client_for(bufnr)
  if not client or not S.enabled or vim.api.nvim_get_current_buf() ~= bufnr then
    return
  end
  local b = buf_state(bufnr)
  b.seq = b.seq + 1
  local seq = b.seq
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1] or ''
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = row - 1, character = text.lsp_char(line, col, client.offset_encoding or 'utf-16') },
    context = { triggerKind = 2 },
  }
  client_request(client, 'textDocument/inlineCompletion', params, function(err, result)
    -- a newer keystroke, a move or a mode change made this answer stale
    if err or seq ~= b.seq or not vim.api.nvim_buf_is_valid(bufnr)
        or vim.api.nvim_buf_get_changedtick(bufnr) ~= tick
        or vim.api.nvim_get_current_buf() ~= bufnr
        or vim.api.nvim_get_mode().mode:sub(1, 1) ~= 'i' then
      return
    end
    local r, c = unpack(vim.api.nvim_win_get_cursor(0))
    if r ~= row or c ~= col then
      return
    end
    local items = result and (result.items or result) or {}
    local along = b.shown and b.shown.along and b.shown
    b.items, b.index = items, 1
    if not show_current(bufnr, client) and along then
      -- nothing new fits here: keep what the user is typing along
      render(bufnr, along.row, along.col, along.rest, along.end_col)
      b.shown.item, b.shown.insert, b.shown.along = along.item, along.insert, true
    end
  end, bufnr)
end

local function schedule_request(bufnr)
  local b = buf_state(bufnr)
  b.seq = b.seq + 1 -- whatever is in flight is stale now
  if not b.timer then
    b.timer = vim.loop.new_timer()
  end
  b.timer:stop()
  b.timer:start(S.opts.delay_ms, 0, vim.schedule_wrap(function()
    if vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_get_mode().mode:sub(1, 1) == 'i' then
      request(bufnr)
    end
  end))
end

-- ---- accepting ----------------------------------------------------------

-- Inserts piece at the suggestion's anchor (replacing up to the item's range
-- end when full) and leaves the cursor after it.
local function insert_piece(bufnr, s, piece, full)
  local row0 = s.row - 1
  local stop = full and s.end_col or s.col
  local lines = text.lines(piece)
  vim.api.nvim_buf_set_text(bufnr, row0, s.col, row0, stop, lines)
  local new_row = row0 + #lines
  local new_col = #lines == 1 and s.col + #lines[1] or #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { new_row, new_col })
  return new_row, new_col
end

local function accept_with(split)
  local bufnr = vim.api.nvim_get_current_buf()
  local b = S.bufs[bufnr]
  local s = b and b.shown
  if not s then
    return false
  end
  local piece = split and split(s.rest) or s.rest
  local left = s.rest:sub(#piece + 1)
  clear(bufnr)
  b.seq = b.seq + 1
  local row, col = insert_piece(bufnr, s, piece, left == '')
  if s.insert then
    report_accept(bufnr, s, #s.insert - #left)
  end
  if left ~= '' then
    -- keep showing the rest: the edit was ours, not the user's typing
    b.keep_tick = vim.api.nvim_buf_get_changedtick(bufnr)
    local end_col = s.end_col
    if row ~= s.row then
      end_col = col
    else
      end_col = end_col + #piece
    end
    render(bufnr, row, col, left, end_col)
    b.shown.item, b.shown.insert = s.item, s.insert
  end
  return true
end

--- Accepts the whole visible suggestion; false when none is visible.
function M.accept()
  if has_native() then
    return vim.lsp.inline_completion.get() and true or false
  end
  return accept_with(nil)
end

--- Accepts the next word of the visible suggestion.
function M.accept_word()
  return accept_with(text.next_word)
end

--- Accepts the next line of the visible suggestion.
function M.accept_line()
  return accept_with(text.next_line)
end

--- Shows the next (count 1) or previous (-1) candidate.
function M.cycle(count)
  if has_native() then
    vim.lsp.inline_completion.select({ count = count })
    return true
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local b = S.bufs[bufnr]
  if not b or not b.items or #b.items == 0 then
    return false
  end
  b.index = (b.index - 1 + count) % #b.items + 1
  return show_current(bufnr, client_for(bufnr))
end

--- Hides the suggestion and forgets the pending request.
function M.dismiss()
  local bufnr = vim.api.nvim_get_current_buf()
  local b = S.bufs[bufnr]
  if b then
    b.seq = b.seq + 1
    b.items = nil
    if b.timer then
      b.timer:stop()
    end
  end
  clear(bufnr)
end

--- The visible suggestion: { row, col, text } (row 1-based, col in bytes),
--- or nil.
function M.visible()
  local b = S.bufs[vim.api.nvim_get_current_buf()]
  local s = b and b.shown
  return s and { row = s.row, col = s.col, text = s.rest } or nil
end

--- Shows items (InlineCompletionItem[], as the server sends them) as the
--- answer at the cursor, as if the server had sent them; returns whether
--- one fits the cursor and is visible.
function M.show_items(items)
  local bufnr = vim.api.nvim_get_current_buf()
  local b = buf_state(bufnr)
  b.items, b.index = items, 1
  return show_current(bufnr, client_for(bufnr))
end

--- Next edits (infill.nextedit): ask, jump, apply, dismiss, and what is
--- shown ({row, col, text} or nil).
M.next_edit = nextedit.request
M.next_edit_jump = nextedit.jump
M.next_edit_accept = nextedit.accept
M.next_edit_dismiss = nextedit.dismiss
M.next_edit_visible = nextedit.visible

--- Model loading progress or the last error, for a statusline.
function M.status()
  return S.status
end

-- ---- attaching ----------------------------------------------------------

-- What a mapped key does when infill has nothing to do with it: its own
-- meaning. An unmapped Alt chord in insert mode acts as <Esc> then the key
-- (:help i_META), so <M-w> leaves insert mode and moves a word; fed back as
-- itself it would insert the bare character instead.
local function fallthrough_keys(key)
  local k = key:match('^<[MmAa]%-(.+)>$')
  if k then
    return '<Esc>' .. (#k == 1 and k or '<' .. k .. '>')
  end
  return key
end

local function feed(key)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(fallthrough_keys(key), true, false, true), 'n', false)
end

local function map_keys(bufnr)
  local km = S.opts.keymaps
  if km == false then
    return
  end
  local function map(lhs, fn, desc)
    if lhs then
      vim.keymap.set('i', lhs, function()
        if not fn() then
          feed(lhs)
        end
      end, { buffer = bufnr, desc = desc })
    end
  end
  map(km.accept, M.accept, 'infill: accept the suggestion')
  if not has_native() then
    map(km.accept_word, M.accept_word, 'infill: accept a word')
    map(km.accept_line, M.accept_line, 'infill: accept a line')
  end
  map(km.next, function() return M.cycle(1) end, 'infill: next candidate')
  map(km.prev, function() return M.cycle(-1) end, 'infill: previous candidate')
  map(km.dismiss, function()
    local shown = M.visible() ~= nil
    M.dismiss()
    return shown
  end, 'infill: dismiss')
end

local function on_attach(client, bufnr)
  S.client_id = client.id
  -- menu completion (<C-x><C-o>) from textDocument/completion, unless the
  -- buffer has its own omnifunc already
  if S.opts.omnifunc ~= false and (vim.bo[bufnr].omnifunc == '' or S.opts.omnifunc == true) then
    vim.bo[bufnr].omnifunc = 'v:lua.vim.lsp.omnifunc'
  end
  if has_native() then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
  else
    local group = vim.api.nvim_create_augroup('infill_buf_' .. bufnr, { clear = true })
    vim.api.nvim_create_autocmd('TextChangedI', {
      group = group, buffer = bufnr,
      callback = function()
        local b = buf_state(bufnr)
        if b.keep_tick == vim.api.nvim_buf_get_changedtick(bufnr) then
          return
        end
        type_along(bufnr)
        if S.enabled then
          schedule_request(bufnr)
        end
      end,
    })
    vim.api.nvim_create_autocmd('CursorMovedI', {
      group = group, buffer = bufnr,
      callback = function()
        local b = S.bufs[bufnr]
        local s = b and b.shown
        if s then
          local r, c = unpack(vim.api.nvim_win_get_cursor(0))
          if r ~= s.row or c ~= s.col then
            if s.tick == vim.api.nvim_buf_get_changedtick(bufnr) then
              clear(bufnr) -- a move, no edit
            else
              -- a typed character moves the cursor before TextChangedI
              type_along(bufnr)
            end
          end
        end
      end,
    })
    vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
      group = group, buffer = bufnr,
      callback = function()
        local b = S.bufs[bufnr]
        if b then
          b.seq = b.seq + 1
          if b.timer then
            b.timer:stop()
          end
        end
        clear(bufnr)
      end,
    })
    vim.api.nvim_create_autocmd('BufWipeout', {
      group = group, buffer = bufnr,
      callback = function()
        local b = S.bufs[bufnr]
        if b and b.timer then
          b.timer:stop()
          b.timer:close()
        end
        S.bufs[bufnr] = nil
      end,
    })
  end
  map_keys(bufnr)
  if S.opts.next_edits ~= false then
    local km = S.opts.keymaps
    nextedit.attach(bufnr, {
      client_for = client_for, request = client_request, notify = client_notify,
    }, km and { jump = km.next_edit_jump, accept = km.next_edit_accept,
                dismiss = km.next_edit_dismiss } or false)
  end
  if S.opts.on_attach then
    S.opts.on_attach(client, bufnr)
  end
end

local function root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = name ~= '' and vim.fn.fnamemodify(name, ':p:h') or vim.loop.cwd()
  local d = dir
  while d do
    for _, m in ipairs(S.opts.root_markers) do
      if vim.loop.fs_stat(d .. '/' .. m) then
        return d
      end
    end
    local parent = vim.fn.fnamemodify(d, ':h')
    if parent == d then
      break
    end
    d = parent
  end
  return dir
end

-- The server's messages start with "infill: " already.
local function prefixed(msg)
  msg = tostring(msg)
  return msg:match('^infill: ') and msg or 'infill: ' .. msg
end

local function progress_handler(err, result, ctx, config)
  local v = result and result.value
  if type(v) == 'table' then
    if v.kind == 'end' then
      -- "ready", or "ready: the embedded model (...)" when the model set
      -- failed to load and the embedded one stands in: keep that in sight,
      -- and so a warning the load gave (a setting it could not honour)
      S.status = (v.message and v.message ~= 'ready' and v.message ~= 'superseded')
        and prefixed(v.message) or S.load_warning or ''
      S.load_warning = nil
      -- the model is ready: answers before this were empty, so ask again
      -- for the cursor the user is looking at
      local bufnr = vim.api.nvim_get_current_buf()
      if S.enabled and S.bufs[bufnr] and not has_native()
          and vim.api.nvim_get_mode().mode:sub(1, 1) == 'i' then
        schedule_request(bufnr)
      end
    else
      if v.kind == 'begin' then
        S.load_warning = nil
      end
      local msg = v.title or S.status:match('^infill: ([^:]*)') or 'loading'
      if v.message then
        msg = msg .. ': ' .. v.message
      end
      if v.percentage then
        msg = msg .. string.format(' (%d%%)', v.percentage)
      end
      S.status = prefixed(msg)
    end
    pcall(vim.cmd, 'redrawstatus')
  end
  local default = vim.lsp.handlers['$/progress']
  if default then
    return default(err, result, ctx, config)
  end
end

-- One line that fits the command line: a message longer than it (a model
-- path and its error easily are) would stop Neovim at "Press ENTER", at
-- start-up too. The whole text stays in infill.status() (:InfillStatus);
-- tail (where to read it) is kept whole after a cut.
local function echo_short(msg, hl, tail)
  tail = tail or ''
  local width = math.max(20, (vim.v.echospace or vim.o.columns - 12) - 1)
  local room = math.max(10, width - vim.fn.strdisplaywidth(tail))
  if vim.fn.strdisplaywidth(msg) > room then
    msg = vim.fn.strcharpart(msg, 0, room - 1) .. '…'
  end
  vim.api.nvim_echo({ { msg .. tail, hl } }, true, {})
end

local function message_handler(_, result, _, _)
  if not result then
    return
  end
  local msg = prefixed(result.message):gsub('%s*\n%s*', ' ')
  if result.type == 1 or (result.type == 2 and msg:find('model')) then
    S.status = msg
    S.load_warning = msg
    pcall(vim.cmd, 'redrawstatus')
  end
  if result.type == 1 or result.type == 2 then
    vim.schedule(function()
      echo_short(msg, result.type == 1 and 'ErrorMsg' or 'WarningMsg',
        S.status == msg and ' (:InfillStatus)' or '')
    end)
  elseif result.type == 3 then
    vim.schedule(function()
      echo_short(msg, 'None')
    end)
  end
end

local function init_options()
  local o = vim.tbl_deep_extend('force', {}, S.opts.settings or {}, S.opts.init_options or {})
  return next(o) and o or nil
end

-- infill/suggestionGrew {uri, version, position}: the suggestion on screen
-- grew (the server decodes it on after its deadline). Asked again where it
-- is, the server answers at once with the longer text, drawn in place. Only
-- while the cursor is still there in insert mode, in that buffer.
local function grew_handler(err, result, ctx, config)
  local _ = err, ctx, config
  local bufnr = vim.api.nvim_get_current_buf()
  if not result or not result.position or not S.enabled or not S.bufs[bufnr] or has_native()
      or vim.api.nvim_get_mode().mode:sub(1, 1) ~= 'i'
      or vim.uri_from_bufnr(bufnr) ~= result.uri then
    return
  end
  local client = client_for(bufnr)
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1] or ''
  local ch = text.lsp_char(line, col, (client and client.offset_encoding) or 'utf-16')
  if row - 1 == result.position.line and ch == result.position.character then
    request(bufnr)
  end
end

local function client_config(bufnr)
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.textDocument = caps.textDocument or {}
  caps.textDocument.inlineCompletion = { dynamicRegistration = false }
  caps.window = caps.window or {}
  caps.window.workDoneProgress = true
  -- 0.7 answers workspace/configuration (from `settings`) but does not say
  -- so; without this the server never asks and the settings are lost
  caps.workspace = caps.workspace or {}
  caps.workspace.configuration = true
  return {
    name = 'infill',
    cmd = S.opts.cmd,
    root_dir = root_dir(bufnr),
    -- workspace/configuration asks for section "infill"
    settings = { infill = S.opts.settings or {} },
    -- and the same at initialize, so that the first model load already
    -- follows them (model, modelFallback, backend): workspace/configuration
    -- comes only after loading began
    init_options = init_options(),
    capabilities = caps,
    flags = { debounce_text_changes = 0 }, -- a request must follow its edit
    handlers = {
      ['$/progress'] = progress_handler,
      ['window/showMessage'] = message_handler,
      ['infill/suggestionGrew'] = grew_handler,
    },
    on_attach = on_attach,
  }
end

local function client_is_stopped(client)
  if new_methods then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- Starts the server for bufnr (default: the current buffer) and attaches
--- it; returns the client id or nil.
function M.start(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local cfg = client_config(bufnr)
  if vim.lsp.start then
    return vim.lsp.start(cfg, { bufnr = bufnr })
  end
  local client = S.client_id and vim.lsp.get_client_by_id(S.client_id)
  if not client or client_is_stopped(client) then
    S.client_id = vim.lsp.start_client(cfg)
  end
  if S.client_id then
    vim.lsp.buf_attach_client(bufnr, S.client_id)
  end
  return S.client_id
end

--- Stops the server and starts it again for every buffer it had.
function M.restart()
  local attached = {}
  for _, c in ipairs(infill_clients(nil)) do
    for b in pairs(c.attached_buffers or {}) do
      attached[#attached + 1] = b
    end
    client_stop(c)
  end
  for b in pairs(S.bufs) do
    clear(b)
  end
  S.client_id = nil
  vim.defer_fn(function()
    for _, b in ipairs(attached) do
      if vim.api.nvim_buf_is_valid(b) then
        M.start(b)
      end
    end
  end, 500)
end

--- Turns suggestions on or off (all buffers); returns the new state.
function M.toggle()
  S.enabled = not S.enabled
  if not S.enabled then
    for b in pairs(S.bufs) do
      clear(b)
    end
  end
  if vim.lsp.inline_completion then
    pcall(vim.lsp.inline_completion.enable, S.enabled)
  end
  vim.notify('infill: suggestions ' .. (S.enabled and 'on' or 'off'))
  return S.enabled
end

--- Configures the plugin and starts the server for the filetypes given.
-- :InfillPull NAME runs `infill pull NAME` (the binary of opts.cmd) as a
-- job: its progress lines (stderr, one per "\r") show on the command line
-- as they come, and its last line says where the file went or why it did
-- not. on_done(ok, last_line) is for callers and tests; may be nil.
function M.pull(name, on_done)
  local exe = (S.opts and S.opts.cmd or defaults.cmd)[1]
  local last, before, pending = '', '', ''
  local function show(text, hl)
    vim.schedule(function()
      echo_short('infill pull: ' .. text, hl or 'None')
    end)
  end
  local function line(part)
    part = vim.trim((part:gsub('^infill pull: ', '')))
    if part ~= '' then
      before, last = last, part
      S.pull_lines = S.pull_lines or {}
      table.insert(S.pull_lines, part)
      show(part)
    end
  end
  -- a job's output comes in chunks that cut lines anywhere: data[1] goes on
  -- with the last piece, data[#data] is the start of the next line
  local function take(_, data)
    if not data then
      return
    end
    for i, chunk in ipairs(data) do
      if i == 1 then
        chunk = pending .. chunk
      end
      if i == #data then
        -- a progress line ends in "\r": what is before the last one is whole
        local head, tail = chunk:match('^(.*)\r([^\r]*)$')
        if head then
          for part in head:gmatch('[^\r]+') do
            line(part)
          end
          chunk = tail
        end
        pending = chunk
      else
        for part in chunk:gmatch('[^\r]+') do
          line(part)
        end
      end
    end
  end
  if not name or name == '' then
    echo_short('usage: :InfillPull NAME (`infill models` lists them)', 'WarningMsg')
    return
  end
  local job = vim.fn.jobstart({ exe, 'pull', name }, {
    on_stderr = take,
    on_stdout = take,
    on_exit = function(_, code)
      vim.schedule(function()
        line(pending)
        pending = ''
        if code == 0 then
          S.status = prefixed(name .. ' downloaded; set "model": "' .. name .. '" to use it')
        else
          -- the error, and the hint after it
          S.status = prefixed('pull ' .. name .. ' failed: ' .. before .. ' ' .. last)
        end
        echo_short(S.status, code == 0 and 'None' or 'ErrorMsg')
        if on_done then
          on_done(code == 0, last)
        end
      end)
    end,
  })
  if job <= 0 then
    echo_short('infill pull: cannot run ' .. tostring(exe), 'ErrorMsg')
    if on_done then
      on_done(false, 'cannot run ' .. tostring(exe))
    end
  end
end

-- What :InfillPull printed so far (tests).
function M.pull_lines()
  return S.pull_lines or {}
end

--- Safe to call again (later calls replace the options).
function M.setup(opts)
  opts = opts or {}
  local o = vim.tbl_deep_extend('force', {}, defaults, opts)
  if opts.keymaps == false then
    o.keymaps = false
  end
  if opts.filetypes then
    o.filetypes = opts.filetypes -- a list replaces, it does not merge
  end
  if opts.cmd then
    o.cmd = opts.cmd
  end
  S.opts = o
  vim.api.nvim_set_hl(0, 'InfillGhost', { link = 'Comment', default = true })
  local group = vim.api.nvim_create_augroup('infill', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = o.filetypes,
    callback = function(args)
      M.start(args.buf)
    end,
  })
  -- Neovim 0.7 cannot watch files for the server and the settings file is
  -- not a buffer the server sees: tell it when .infill.json is written
  vim.api.nvim_create_autocmd('BufWritePost', {
    group = group,
    pattern = '.infill.json',
    callback = function(args)
      local uri = vim.uri_from_fname(vim.fn.fnamemodify(args.file, ':p'))
      for _, c in ipairs(infill_clients(nil)) do
        client_notify(c, 'workspace/didChangeWatchedFiles', { changes = { { uri = uri, type = 2 } } })
      end
    end,
  })
  vim.api.nvim_create_user_command('InfillRestart', M.restart, { desc = 'infill: restart the server' })
  vim.api.nvim_create_user_command('InfillToggle', M.toggle, { desc = 'infill: suggestions on/off' })
  vim.api.nvim_create_user_command('InfillPull', function(a)
    M.pull(a.args)
  end, { nargs = 1, desc = 'infill: download a model by name (infill pull NAME)' })
  vim.api.nvim_create_user_command('InfillStatus', function()
    vim.notify(S.status ~= '' and S.status or 'infill: ready')
  end, { desc = 'infill: model loading progress or the last error' })
  -- buffers already open with a matching filetype
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.tbl_contains(o.filetypes, vim.bo[b].filetype) then
      M.start(b)
    end
  end
end

return M
