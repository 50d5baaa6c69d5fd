-- nvim_harness.lua - what the headless Neovim tests share. A test's body
-- runs as a coroutine that sleeps on Neovim's timers, so the editor and the
-- server go on while it waits; it ends Neovim with PASS (exit 0) when the
-- body returns, FAIL (exit 1) when it raises or runs past its time.
--
-- Loaded by the tests with dofile(os.getenv('INFILL_HARNESS')) (nvim.sh).
local M = {}

function M.log(...)
  io.stderr:write(table.concat({ ... }, ' ') .. '\n')
end

function M.finish(ok, msg)
  if msg then
    M.log(msg)
  end
  vim.cmd(ok and 'qa!' or 'cquit 1')
end

local co
local function resume()
  local ok, err = coroutine.resume(co)
  if not ok then
    M.finish(false, 'FAIL: ' .. debug.traceback(co, tostring(err)))
  elseif coroutine.status(co) == 'dead' then
    M.finish(true, 'PASS')
  end
end

function M.sleep(ms)
  vim.defer_fn(resume, ms)
  coroutine.yield()
end

-- Polls cond every step ms (25) until it returns something true (returned)
-- or ms pass (nil).
function M.poll(ms, cond, step)
  local t0 = vim.loop.now()
  while true do
    local v = cond()
    if v then
      return v
    end
    if vim.loop.now() - t0 > ms then
      return nil
    end
    M.sleep(step or 25)
  end
end

-- M.poll, raising with what was awaited (and the editor's mode) on a timeout.
function M.wait_for(what, ms, cond, step)
  local v = M.poll(ms, cond, step)
  if not v then
    M.log('mode at the timeout: ' .. vim.inspect(vim.api.nvim_get_mode()))
    error('timed out after ' .. ms .. ' ms waiting for ' .. what)
  end
  return v
end

function M.check(cond, what)
  if not cond then
    error('check failed: ' .. what, 2)
  end
end

-- The first result of an LSP request to the current buffer's servers (nil
-- where none answered within ms).
function M.request(method, params, ms)
  local r = vim.lsp.buf_request_sync(0, method, params, ms) or {}
  for _, resp in pairs(r) do
    if resp.result then
      return resp.result
    end
  end
end

-- Runs body as the test; past limit_ms (if given) on_limit (if given) may
-- log what it sees, and the test fails.
function M.run(body, limit_ms, on_limit)
  co = coroutine.create(body)
  if limit_ms then
    vim.defer_fn(function()
      if on_limit then
        on_limit()
      end
      M.finish(false, 'FAIL: the whole test took over ' .. limit_ms / 1000 .. ' s')
    end, limit_ms)
  end
  vim.schedule(resume)
end

return M
