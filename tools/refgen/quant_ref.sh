#!/usr/bin/env bash
# tools/refgen/quant_ref.sh - regenerates tests/kernels/data/ggml-quant-ref.bin
# (see quant_ref.c) with llama.cpp's ggml as tools/llamacpp builds it. Not run
# by the tests or CI: the file is checked in; rerun it when the format or the
# llama.cpp version changes, and record the version in tests/kernels/data/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$("$root/tools/llamacpp")   # the folder with llama-quantize; the ggml libraries sit beside it
src=$(dirname "$(dirname "$bin")")/src
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/quant_ref" "$here/quant_ref.c" -I"$src/ggml/include" \
	-L"$bin" -lggml-base -lggml-cpu -Wl,-rpath,"$bin" -lm
"$tmp/quant_ref" "$root/tests/kernels/data/ggml-quant-ref.bin"
echo "llama.cpp: $(git -C "$src" describe --tags --always 2>/dev/null || echo unknown) ($(git -C "$src" rev-parse HEAD))"
