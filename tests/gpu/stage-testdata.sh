#!/usr/bin/env bash
# tests/gpu/stage-testdata.sh SET... - copies parts of the llama.cpp reference
# data (../shared/testdata) that gpu-cuda-backend reads into gpu-data/testdata
# inside the repository (ignored by git), for a device machine: a run there is
# sent the repository alone (about 15 MiB) with at most 64 MiB in all, and the
# whole of what the test reads is 94 MiB. So the test runs in two or three
# calls on one warm machine, each carrying "gpu-data", one set or two a call:
#
#   dsc         the tiny deepseek-coder F32/F16/Q8_0 files and their logits
#               (45 MiB): reference_*, batched candidates, chunked prefill,
#               KV shift
#   kq          the K-quant files and theirs (30 MiB): converts_types_...
#   starcoder2  the tiny starcoder2 and its logits (19 MiB)
#
# gemma and the q8_0 KV cache read tests/infer/model_data (in the repository)
# and run every time. A case whose files are not staged says SKIP (run.sh
# lists those lines). Replaces what gpu-data held; says when the repository
# and the sets together are over what a call sends.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FROM=${FROM:-$ROOT/../shared/testdata}
[ $# -gt 0 ] || { echo "usage: tests/gpu/stage-testdata.sh dsc|kq|starcoder2..." >&2; exit 2; }
files=""
for set in "$@"; do
	case "$set" in
	dsc) files="$files tiny-dsc-f32.gguf tiny-dsc-f16.gguf tiny-dsc-q8_0.gguf tiny-dsc-reference.json" ;;
	kq) files="$files tiny-kq-q4_k_m.gguf tiny-kq-q5_k_m.gguf tiny-kq-reference.json" ;;
	starcoder2) files="$files tiny-starcoder2-f32.gguf tiny-starcoder2-reference.json" ;;
	*) echo "stage-testdata.sh: no set $set (dsc, kq, starcoder2)" >&2; exit 2 ;;
	esac
done
rm -rf "$ROOT/gpu-data"
mkdir -p "$ROOT/gpu-data/testdata/models"
for f in $files; do cp "$FROM/models/$f" "$ROOT/gpu-data/testdata/models/"; done
cd "$ROOT"
staged=$(du -sb gpu-data | cut -f1)
tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
echo "staged $((staged >> 20)) MiB in gpu-data (carry \"gpu-data\"); with the repository's $((tree >> 20)) MiB: $(((staged + tree) >> 20)) of 64 MiB"
if [ $((staged + tree)) -gt $((64 << 20)) ]; then
	echo "stage-testdata.sh: over what a call sends: stage fewer sets a call" >&2
	exit 1
fi
