#!/bin/sh
# need.sh TOOL CMD ARGS... - runs CMD, or exits 77 (skipped) when TOOL is
# not installed.
tool=$1
shift
if ! command -v "$tool" >/dev/null 2>&1; then
	echo "SKIP: $tool not installed"
	exit 77
fi
exec "$@"
