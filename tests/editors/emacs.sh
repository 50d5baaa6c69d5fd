#!/bin/sh
# emacs.sh INFILL EMACS_DIR MODEL TEST_EL - runs the Emacs client test in
# emacs --batch with eglot; exit 77 (skipped) when emacs, eglot or the model
# is missing.
bin=$1 lisp=$2 model=$3 test=$4
if ! command -v emacs >/dev/null 2>&1; then
	echo "SKIP: emacs not installed (apt-get install emacs-nox elpa-eglot)"
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
export HOME="$tmp" INFILL_BIN="$bin" INFILL_MODEL="$model" INFILL_TMP="$tmp"
emacs --version | head -1
exec emacs --batch -Q -L "$lisp" -l "$test"
