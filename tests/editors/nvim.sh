#!/bin/sh
# nvim.sh INFILL PLUGIN_DIR MODEL TEST_LUA - runs the Neovim plugin test in a
# headless Neovim; exit 77 (skipped) when nvim or the model is missing.
bin=$1 plugin=$2 model=$3 test=$4
if ! command -v nvim >/dev/null 2>&1; then
	echo "SKIP: nvim not installed (apt-get install neovim)"
	exit 77
fi
if [ ! -f "$model" ]; then
	echo "SKIP: test model $model missing (the shared/ testdata folder)"
	exit 77
fi
# meson passes the binary relative to the build dir; the editors run
# elsewhere
case $bin in /*) ;; *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# keep Neovim's state, log and shada out of the user's home
export XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" \
	XDG_CACHE_HOME="$tmp/cache" INFILL_BIN="$bin" INFILL_PLUGIN="$plugin" \
	INFILL_MODEL="$model" INFILL_TMP="$tmp" \
	INFILL_HARNESS="$(cd "$(dirname "$test")" && pwd)/nvim_harness.lua"
nvim --version | head -1
nvim --headless -u NONE -i NONE -n -c "luafile $test" </dev/null
rc=$?
if [ $rc -ne 0 ] && [ -f "$tmp/state/nvim/lsp.log" ]; then
	echo "--- lsp.log"; tail -40 "$tmp/state/nvim/lsp.log"
elif [ $rc -ne 0 ] && [ -f "$tmp/cache/nvim/lsp.log" ]; then
	echo "--- lsp.log"; tail -40 "$tmp/cache/nvim/lsp.log"
fi
exit $rc
