#!/bin/sh
# check_layers_test.sh CHECKER ROOT - tools/check-layers passes on the tree
# as it is, and fails on each planted back-arrow: core/ including a server
# header, ast/ including the pipeline's, pipeline/ including lsp/'s, a
# relative include from infer/ up into cli/.
set -u
check=$1 root=$2
"$check" "$root" || { echo "FAIL: the tree itself has a back-arrow"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in core kernels ast remote infer context pipeline lsp cli; do cp -r "$root/$d" "$tmp/$d"; done
plant() { # FILE INCLUDE: plant, expect a failure, undo
	cp "$tmp/$1" "$tmp/$1.orig"
	printf '#include "%s"\n' "$2" >>"$tmp/$1"
	if "$check" "$tmp" 2>/dev/null; then echo "FAIL: $1 including $2 passed"; exit 1; fi
	mv "$tmp/$1.orig" "$tmp/$1"
}
plant core/log.c server_priv.h
plant ast/scope.c pipeline.h
plant pipeline/complete.c server.h
plant context/ring.c engine.h
plant infer/stop.c ../cli/cli.h
"$check" "$tmp" || { echo "FAIL: the copy did not come back clean"; exit 1; }
echo "ok: 5 planted back-arrows caught"
