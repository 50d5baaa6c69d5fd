#!/bin/sh
# nvim_tty.sh INFILL PLUGIN_DIR - Neovim in a terminal (a tmux pane) starting
# infill with a model path that does not exist and modelFallback off: the
# server's error (naming the long path) must not stop start-up at "Press
# ENTER"; it shows on one line, and the whole text stays in
# :InfillStatus. Only a real screen shows a hit-enter prompt (headless
# Neovim has none). Exit 77 (skipped) without nvim or tmux.
bin=$1 plugin=$2
for t in nvim tmux; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "SKIP: $t not installed"
		exit 77
	fi
done
case $bin in /*) ;; *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
tmp=$(mktemp -d) || exit 1
sock="infill-test-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
export XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" \
	XDG_CACHE_HOME="$tmp/cache"
# a long path, as real ones are: the message does not fit the command line
missing="$tmp/models/deepseek-coder-1.3b-base/a-model-file-that-is-not-there.Q4_K_M.gguf"
printf 'import os\n\n\ndef main():\n    pass\n' >"$tmp/walk.py"
cat >"$tmp/init.lua" <<EOL
vim.opt.runtimepath:prepend('$plugin')
vim.o.swapfile = false
vim.cmd('filetype on')
require('infill').setup {
  cmd = { '$bin', '--user-config', '' },
  filetypes = { 'python' },
  settings = { model = '$missing', modelFallback = false },
}
-- the test reads this file once the server's message has arrived
vim.defer_fn(function() end, 0)
local t = vim.loop.new_timer()
t:start(100, 100, vim.schedule_wrap(function()
  local s = require('infill').status()
  if s:find('cannot load') then
    t:stop()
    vim.defer_fn(function()
      local f = io.open('$tmp/status', 'w')
      f:write(s)
      f:close()
    end, 500)
  end
end))
EOL
tmux -L "$sock" new-session -d -x 100 -y 20 "nvim -u '$tmp/init.lua' -i NONE -n '$tmp/walk.py'"
i=0
while [ ! -f "$tmp/status" ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.5
screen=$(tmux -L "$sock" capture-pane -p)
echo "$screen"
echo "--- status: $(cat "$tmp/status" 2>/dev/null)"
fail=0
if [ ! -f "$tmp/status" ]; then
	echo "FAIL: the server's message about the missing model never came"
	fail=1
fi
if echo "$screen" | grep -q 'Press ENTER'; then
	echo "FAIL: start-up stopped at Press ENTER"
	fail=1
fi
if ! echo "$screen" | tail -1 | grep -q 'infill'; then
	echo "FAIL: the message is not on the command line"
	fail=1
fi
# typing works at once: the file is still the editor's
tmux -L "$sock" send-keys 'Go# typed' Escape
sleep 0.5
if ! tmux -L "$sock" capture-pane -p | grep -q '^# typed'; then
	echo "FAIL: the keys typed did not reach the buffer"
	tmux -L "$sock" capture-pane -p
	fail=1
fi
[ $fail -eq 0 ] && echo PASS
exit $fail
