#!/bin/sh
# package_test.sh TOOLS_PACKAGE INFILL EXAMPLE - tools/package builds the .deb
# from this build's binary; the .deb is unpacked into a temporary folder
# (dpkg -x: no root, no install) and `infill complete` runs from there:
# the binary finds the model the package put beside it (its --json names
# the file), the man page renders, the editor clients sit where Neovim and
# Emacs look. lintian (when installed) must report no error; tools/package
# fails on one. Skipped (77) without dpkg-deb or node.
set -eu
pkg=$1 bin=$2 example=$3
command -v dpkg-deb >/dev/null || { echo "SKIP: no dpkg-deb"; exit 77; }
command -v node >/dev/null || { echo "SKIP: no node (tools/manpage.js)"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

deb=$("$pkg" --binary "$bin" --out "$d") || fail "tools/package failed"
case "$deb" in */infill_*_amd64.deb) ;; *) fail "unexpected name: $deb" ;; esac
dpkg-deb -f "$deb" Package Version Architecture Depends
dpkg-deb -f "$deb" Depends | grep -q libuv1 || fail "Depends lacks libuv1"
mkdir "$d/root"
dpkg -x "$deb" "$d/root"
r=$d/root
for f in usr/bin/infill usr/share/infill/infill-default.gguf usr/share/man/man1/infill.1.gz \
	usr/share/nvim/site/lua/infill/init.lua usr/share/emacs/site-lisp/infill.el \
	usr/share/emacs/site-lisp/infill-settings.el usr/share/doc/infill/copyright; do
	[ -f "$r/$f" ] || fail "missing $f"
done
[ -f "$r/usr/share/infill/infill.vsix" ] && echo "with the .vsix" || echo "without the .vsix"

"$r/usr/bin/infill" --version
out=$("$r/usr/bin/infill" complete "$example:9:9" --json) || fail "infill complete failed"
want=$(readlink -f "$r/usr/share/infill/infill-default.gguf")
got=$(printf '%s' "$out" | python3 -c 'import json,os,sys; print(os.path.realpath(json.load(sys.stdin)["model"]))')
[ "$got" = "$want" ] || fail "the model came from $got, not the package's $want"
n=$(printf '%s' "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["candidates"]))')
[ "$n" -gt 0 ] || fail "no candidates"
echo "infill complete from the unpacked package: $n candidates, model $got"

man=$(zcat "$r/usr/share/man/man1/infill.1.gz")
for want in ".TH INFILL 1" "metrics.file" "completion.deadlineMs" "infill complete"; do
	printf '%s' "$man" | grep -qF -- "$want" || fail "the man page lacks $want"
done
if command -v man >/dev/null; then
	MANWIDTH=80 man -l "$r/usr/share/man/man1/infill.1.gz" 2>&1 >/dev/null | grep . && fail "man reports problems" || true
fi
echo "ok"
