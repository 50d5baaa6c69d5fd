#!/bin/sh
# vscode.sh INFILL VSCODE_DIR MODEL TEST_FILE... - runs the VS Code
# extension's tests under node's test runner; exit 77 (skipped) when node or
# editors/vscode/node_modules is missing.
bin=$1 dir=$2 model=$3
shift 3
if ! command -v node >/dev/null 2>&1; then
	echo "SKIP: node not installed"
	exit 77
fi
if [ ! -d "$dir/node_modules/vscode-languageclient" ]; then
	echo "SKIP: $dir/node_modules missing (run: npm ci --prefix $dir)"
	exit 77
fi
# meson passes the binary relative to the build dir; the editors run
# elsewhere
case $bin in /*) ;; *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
export INFILL_BIN="$bin" INFILL_MODEL="$model"
exec node --test "$@"
