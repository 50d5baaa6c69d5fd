#!/usr/bin/env bash
# tests/gpu/run.sh - everything a GPU machine needs for the CUDA backend, in one go:
# build with CUDA, run the GPU tests, make the benchmark models with
# `infill mkmodel`, run `infill bench --backend cuda` and bench_cuda on them,
# and print one SUMMARY line per figure with the fraction of its physical bound.
#
#   tests/gpu/run.sh            (from anywhere; a few minutes on an H200 with 16 cores)
#
# Then decode after 2,048 tokens with cache.kvType f16 then q8_0 (1.3B Q8_0),
# and last a draft pair (speculative decoding) with bench-draft.
# Environment: BUILD (build dir, default <repo>/build-gpu), MODELS (where the
# random-weight models go, default $BUILD/gpu-models), PEAK_GBS and PEAK_TFLOPS
# (by the GPU's name: H200 4800 / 989, H100 3350 / 989, A100 2039 / 312; dense
# f16 tensor cores), QUICK=1 (1.3B Q8_0 only: the one to use within a device
# session's minutes), OUT (if set, the log is copied there), BUILDTYPE
# (release), INFILL_TESTDATA (the llama.cpp reference data, default
# <repo>/../shared/testdata, else <repo>/gpu-data/testdata: a device machine
# is sent the repository alone, so tests/gpu/stage-testdata.sh copies a part
# that fits its transfer there; the tests whose files are not there say SKIP).
# Without a CUDA device it still builds and runs the tests (which skip), then
# prints "SKIP: no CUDA device" and exits 77.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
MODELS=${MODELS:-$BUILD/gpu-models}
BUILDTYPE=${BUILDTYPE:-release}
if [ -z "${INFILL_TESTDATA:-}" ]; then
	INFILL_TESTDATA=$ROOT/../shared/testdata
	[ -d "$INFILL_TESTDATA" ] || INFILL_TESTDATA=$ROOT/gpu-data/testdata
fi
export INFILL_TESTDATA
JOBS=$(nproc 2>/dev/null || echo 4)
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$BUILD"
LOG=$BUILD/gpu-run.log
: >"$LOG"
SUMMARY=$BUILD/gpu-summary.txt
: >"$SUMMARY"
T0=$(date +%s)

say() { echo "== $* ($(($(date +%s) - T0)) s)" | tee -a "$LOG"; }
finish() {
	local rc=$?
	if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then cp "$LOG" "$SUMMARY" "$OUT"/ 2>/dev/null || true; fi
	exit $rc
}
trap finish EXIT

for tool in meson ninja nvcc; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (needs meson, ninja, CUDA at /usr/local/cuda)"; exit 2; }
done

say "build ($BUILD, -Dcuda=enabled, $BUILDTYPE, $JOBS jobs)"
if [ -f "$BUILD/build.ninja" ]; then
	meson configure "$BUILD" -Dcuda=enabled -Dbuildtype="$BUILDTYPE" >>"$LOG" 2>&1
else
	meson setup "$BUILD" "$ROOT" -Dcuda=enabled -Dbuildtype="$BUILDTYPE" >>"$LOG" 2>&1 ||
		{ tail -30 "$LOG"; exit 1; }
fi
ninja -C "$BUILD" -j"$JOBS" >>"$LOG" 2>&1 || { tail -40 "$LOG"; exit 1; }
MODULE=$BUILD/kernels/cuda/libinfill-cuda.so
[ -f "$MODULE" ] || { echo "run.sh: $MODULE was not built"; exit 1; }
export INFILL_CUDA_MODULE=$MODULE

say "GPU tests"
set +e
meson test -C "$BUILD" --suite gpu --no-suite emu --print-errorlogs --num-processes 1 >>"$LOG" 2>&1
test_rc=$?
TEST_FILTER=no-such-case "$BUILD/tests/gpu/test_cuda_kernels" >>"$LOG" 2>&1
dev_rc=$?
set -e
grep -E "^ *[0-9]+/[0-9]+ .*(OK|FAIL|SKIP|TIMEOUT)" "$LOG" | tail -5 || echo "run.sh: meson test printed no results (see $LOG)"
if [ "$dev_rc" = 77 ]; then
	echo "SKIP: no CUDA device: the module and tests built, the tests skipped; the benchmark needs a GPU" | tee -a "$LOG"
	exit 77
fi
if [ "$test_rc" != 0 ]; then
	echo "SUMMARY GPU tests: FAILED (meson test rc $test_rc; see $LOG); benchmarking anyway" | tee -a "$SUMMARY"
else
	echo "SUMMARY GPU tests: passed" | tee -a "$SUMMARY"
fi
if grep -q "gpu-cuda-backend .*SKIP" "$LOG"; then
	echo "SUMMARY GPU tests: FAILED (gpu-cuda-backend skipped with a device present; see $LOG)" | tee -a "$SUMMARY"
fi
# the cases whose testdata was not staged (a passing test's output is in
# meson's log, not in the summary meson test prints)
grep -hE "^SKIP " "$BUILD/meson-logs/testlog.txt" | sed 's/^/SUMMARY /' | tee -a "$SUMMARY" || true
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader 2>/dev/null | tee -a "$LOG" || true
case "$GPU_NAME" in
*H200*) gbs=4800 tflops=989 ;;
*H100*) gbs=3350 tflops=989 ;;
*A100*) gbs=2039 tflops=312 ;;
*) gbs=4800 tflops=989 ;;
esac
PEAK_GBS=${PEAK_GBS:-$gbs}
PEAK_TFLOPS=${PEAK_TFLOPS:-$tflops}
echo "bounds for ${GPU_NAME:-an unknown GPU}: $PEAK_GBS GB/s, $PEAK_TFLOPS TFLOPS" | tee -a "$LOG"

say "models (infill mkmodel, random weights)"
mkdir -p "$MODELS"
if [ "${QUICK:-0}" = 1 ]; then
	SPECS="deepseek-coder-1.3b:q8_0:1.3B-q8_0"
else
	SPECS="deepseek-coder-1.3b:f16:1.3B-f16 deepseek-coder-1.3b:q8_0:1.3B-q8_0 deepseek-coder-6.7b:q4_0:6.7B-q4_0"
fi
pids=()
for spec in $SPECS; do
	IFS=: read -r shape type label <<<"$spec"
	f=$MODELS/$label.gguf
	if [ ! -s "$f" ]; then
		"$BUILD/infill" mkmodel --shape "$shape" --type "$type" --vocab "$ROOT/models/infill-default.gguf" \
			--pad-vocab 24064 -o "$f.tmp" >>"$LOG" 2>&1 &&
			mv "$f.tmp" "$f" &
		pids+=($!)
	fi
done
for p in ${pids[@]+"${pids[@]}"}; do wait "$p" || { echo "run.sh: mkmodel failed"; tail -20 "$LOG"; exit 1; }; done

# ms value, bound ms -> "x ms | bound y ms | z% of bound"
frac() { awk -v v="$1" -v b="$2" 'BEGIN { printf "%.3f ms | bound %.3f ms | %.0f%% of bound", v, b, (v > 0 ? 100 * b / v : 0) }'; }

for spec in $SPECS; do
	IFS=: read -r shape type label <<<"$spec"
	f=$MODELS/$label.gguf
	say "bench $label"
	set +e
	J=$(timeout 300 "$BUILD/infill" bench --model "$f" --backend cuda -p 512 -n 64 --json 2>>"$LOG" | tail -1)
	set -e
	echo "$J" >>"$LOG"
	J=${J%%,\"cpu_time\"*} # the wall-clock figures, not the per-CPU-second ones after
	if [ -n "$J" ]; then
		num() { echo "$J" | sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }
		ptps=$(num prompt_tps); dtps=$(num decode_tps); bytes=$(num decode_bytes_per_token)
		dms=$(awk -v t="$dtps" 'BEGIN { printf "%.4f", 1000 / t }')
		dbound=$(awk -v b="$bytes" -v g="$PEAK_GBS" 'BEGIN { printf "%.4f", b / (g * 1e9) * 1000 }')
		pms=$(awk -v t="$ptps" 'BEGIN { printf "%.4f", 512 * 1000 / t }')
		echo "SUMMARY $label infill-bench decode b1: $(frac "$dms" "$dbound") (${dtps} tok/s)" | tee -a "$SUMMARY"
		echo "SUMMARY $label infill-bench prefill 512: ${pms} ms (${ptps} tok/s)" | tee -a "$SUMMARY"
	else
		echo "SUMMARY $label infill-bench: FAILED (see $LOG)" | tee -a "$SUMMARY"
	fi
	set +e
	timeout 300 "$BUILD/tests/gpu/bench_cuda" --model "$f" --label "$label" --peak-gbs "$PEAK_GBS" \
		--peak-tflops "$PEAK_TFLOPS" 2>>"$LOG" | tee -a "$LOG" | sed -n 's/^FIGURE /SUMMARY /p' | tee -a "$SUMMARY"
	set -e
done

# cache.kvType q8_0 on the GPU: decode after 2,048 tokens of context, f16
# then q8_0 K/V (the same model, one after the other: the ratio is the figure)
f=$MODELS/1.3B-q8_0.gguf
if [ -s "$f" ]; then
	say "bench kv f16 vs q8_0 at 2048"
	for kvt in f16 q8_0; do
		set +e
		J=$(timeout 300 "$BUILD/infill" bench --model "$f" --backend cuda -p 2048 -n 64 --kv-type "$kvt" --json 2>>"$LOG" | tail -1)
		set -e
		echo "$J" >>"$LOG"
		J=${J%%,\"cpu_time\"*}
		dtps=$(echo "$J" | sed -n 's/.*"decode_tps":\([0-9.eE+-]*\).*/\1/p')
		eval "kv_$kvt=\${dtps:-0}"
		echo "SUMMARY 1.3B-q8_0 decode after 2048, kv $kvt: ${dtps:-FAILED} tok/s" | tee -a "$SUMMARY"
	done
	awk -v a="$kv_f16" -v b="$kv_q8_0" 'BEGIN { if (a > 0) printf "SUMMARY kv q8_0 / f16 decode at 2048: %.2f\n", b / a }' | tee -a "$SUMMARY"
fi

# speculative decoding on the GPU: the x4.77 pair of docs/benchmarks.md
# (a 24-layer target over its 4-layer draft, ~80% greedy agreement), where
# a verify row costs next to nothing; bench-draft prints the agreement
# beside the speed-up and fails on any output that differs from plain greedy
say "bench draft pair"
V=$ROOT/models/infill-default.gguf
for spec in "4:0:pair-draft" "24:0.05:pair-target"; do
	IFS=: read -r layers perturb label <<<"$spec"
	f=$MODELS/$label.gguf
	[ "$layers" = 4 ] && pair= || pair="--pair-layers 4 --perturb $perturb"
	# shellcheck disable=SC2086 # $pair is two options or none
	[ -s "$f" ] || { "$BUILD/infill" mkmodel --shape deepseek-coder-1.3b --type q4_0 --vocab "$V" \
		--pad-vocab 24064 --seed 5 --layers "$layers" $pair -o "$f.tmp" >>"$LOG" 2>&1 && mv "$f.tmp" "$f"; } ||
		echo "SUMMARY draft pair: mkmodel FAILED (see $LOG)" | tee -a "$SUMMARY"
done
set +e
timeout 180 "$BUILD/tests/infer/bench-draft" "$MODELS/pair-target.gguf" "$MODELS/pair-draft.gguf" \
	--backend cuda --tokens 64 --reps 1 2>>"$LOG" | tee -a "$LOG" |
	sed -n 's/^\(ALL\|LIVE\)/SUMMARY draft pair \1/p' | tee -a "$SUMMARY"
[ "${PIPESTATUS[0]}" = 0 ] || echo "SUMMARY draft pair: bench-draft FAILED (see $LOG)" | tee -a "$SUMMARY"
set -e

say "done"
echo "---- summary (bounds at $PEAK_GBS GB/s, $PEAK_TFLOPS TFLOPS) ----"
cat "$SUMMARY"
