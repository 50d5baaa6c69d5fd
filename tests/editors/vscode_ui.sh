#!/bin/sh
# vscode_ui.sh INFILL VSCODE_DIR MODEL TEST_JS - the extension in VS Code
# itself: code-server (VS Code 1.100.3 for the browser, installed once by
# tools/setup --tests through tools/codeserver into INFILL_CACHE) driven by Debian's
# headless chromium through puppeteer-core. Exit 77 (skipped), saying why,
# only where that set-up is missing.
bin=$1 dir=$2 model=$3 test=$4
cache=${INFILL_CACHE:-$HOME/.cache/infill}
cs=$cache/code-server-4.100.3
skip() {
	echo "SKIP: $*"
	exit 77
}
command -v node >/dev/null 2>&1 || skip "node not installed"
[ -f "$cs/.done" ] || skip "code-server missing in $cs (run tools/setup --tests, or tools/codeserver)"
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || skip "$chromium missing (apt-get install chromium)"
[ -d "$dir/node_modules/@vscode/vsce" ] || skip "$dir/node_modules missing (run: npm ci --prefix $dir)"
[ -f "$model" ] || skip "model $model missing"
case $bin in /*) ;; *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
export INFILL_BIN="$bin" INFILL_VSCODE="$dir" INFILL_MODEL="$model" CODE_SERVER="$cs" CHROMIUM="$chromium"
exec node "$test"
