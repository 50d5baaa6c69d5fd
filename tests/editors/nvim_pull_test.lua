-- nvim_pull_test.lua - :InfillPull NAME in a headless Neovim: `infill pull`
-- runs as a job against a loopback HTTP server (python3 -m http.server) and
-- a catalog file (INFILL_CATALOG, the documented override for tests and
-- mirrors); its progress lines come through, the model lands in the cache
-- folder with its GGUF check named, and a name not in the catalog ends in
-- a message that names near ones.
--
-- Run by nvim.sh (INFILL_BIN, INFILL_MODEL, INFILL_PLUGIN, INFILL_TMP and
-- XDG_CACHE_HOME under INFILL_TMP). Exit 0 pass, 1 fail.
local bin, model, tmp = os.getenv('INFILL_BIN'), os.getenv('INFILL_MODEL'), os.getenv('INFILL_TMP')
vim.opt.runtimepath:prepend(os.getenv('INFILL_PLUGIN'))

local function finish(ok, msg)
  io.stderr:write((msg or '') .. '\n')
  vim.cmd(ok and 'qa!' or 'cquit 1')
end

local function check(cond, what, ...)
  if not cond then
    local extra = {}
    for _, v in ipairs({ ... }) do
      table.insert(extra, vim.inspect(v))
    end
    error('FAIL: ' .. what .. ' ' .. table.concat(extra, ' '), 0)
  end
end

local ok, err = pcall(function()
  local srv = tmp .. '/srv'
  vim.fn.mkdir(srv .. '/m', 'p')
  vim.fn.system({ 'cp', model, srv .. '/m/tiny.gguf' })
  local port
  local server = vim.fn.jobstart({ 'python3', '-u', '-m', 'http.server', '0', '--bind', '127.0.0.1',
    '--directory', srv }, {
    on_stdout = function(_, data)
      for _, l in ipairs(data) do
        port = port or l:match('port (%d+)')
      end
    end,
  })
  check(server > 0, 'python3 -m http.server started')
  check(vim.wait(10000, function() return port ~= nil end, 20), 'the server said its port')
  local catalog = tmp .. '/catalog.json'
  vim.fn.writefile({ vim.fn.json_encode({ {
    model = 'tiny-coder:1m', quant = 'Q8_0', default = true, family = 'deepseek',
    arch = 'llama', url = 'http://127.0.0.1:' .. port .. '/m/tiny.gguf' } }) }, catalog)
  vim.env.INFILL_CATALOG = catalog

  local infill = require('infill')
  infill.setup({ cmd = { bin, '--stdio' } })
  check(vim.fn.exists(':InfillPull') == 2, ':InfillPull is defined')
  local done, good, last
  infill.pull('tiny-coder:1m', function(o, l) done, good, last = true, o, l end)
  check(vim.wait(60000, function() return done end, 20), 'the pull ended')
  check(good, 'the pull succeeded', last, infill.pull_lines())
  local file = os.getenv('XDG_CACHE_HOME') .. '/infill/models/tiny-coder-1m-q8_0.gguf'
  check(vim.fn.getfsize(file) == vim.fn.getfsize(model), 'the model is in the cache folder', file)
  local lines = table.concat(infill.pull_lines(), '\n')
  check(lines:find('MiB', 1, true), 'progress lines came through', lines)
  check(lines:find('checked by its GGUF header', 1, true), 'the check is named', lines)

  -- the command itself, with a name the catalog lacks
  done = nil
  vim.cmd('InfillPull tiny-coder:2m')
  check(vim.wait(30000, function()
    return table.concat(infill.pull_lines(), '\n'):find('not in the model catalog', 1, true)
  end, 20), 'a name not in the catalog is said', infill.pull_lines())
  check(table.concat(infill.pull_lines(), '\n'):find('did you mean tiny-coder:1m', 1, true),
    'with the near name', infill.pull_lines())
  vim.fn.jobstop(server)
end)
if ok then
  finish(true, 'PASS')
else
  finish(false, tostring(err))
end
