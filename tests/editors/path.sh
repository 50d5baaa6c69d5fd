#!/bin/sh
# path.sh INFILL SOURCE_ROOT - the `infill` an editor starts by name (the
# README's configs) is on PATH, is this version, and finds its embedded model
# from any directory (once, after the README's commands it was not on
# PATH, so every editor config failed to spawn it). tools/setup installs it;
# exit 77 (skipped) only when it has not run or could not install.
bin=$1 root=$2
found=$(command -v infill 2>/dev/null)
if [ -z "$found" ]; then
	echo "SKIP: infill is not on PATH: run tools/setup (it installs into /usr/local)"
	exit 77
fi
case $bin in /*) ;; *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
want=$("$bin" --version) got=$(infill --version)
if [ "$want" != "$got" ]; then
	echo "FAIL: $found says '$got', the build says '$want': run tools/setup again"
	exit 1
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$root/examples/files.py" "$tmp/files.py"
# from elsewhere, with no model setting: the embedded model must be found
out=$(cd "$tmp" && XDG_CONFIG_HOME="$tmp" infill complete files.py:9:9 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: $found complete files.py:9:9 exited $rc:"
	echo "$out" | tail -5
	exit 1
fi
echo "$found: $got; complete: $(echo "$out" | head -3)"
