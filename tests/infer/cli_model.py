#!/usr/bin/env python3
"""cli_model.py - `infill logits` and `infill bench` with the KV cache type.

The tiny llama.cpp reference model is run with the default fp16 cache and with
--kv-type f32: the same token ids, logits that differ (the option takes effect)
but by less than 1e-3 (measured 4.7e-5; fp16 keeps 11 significant bits of each key and value).
`bench --json` must count the context's keys and values in the bytes a decode
step reads: 2 (K, V) x layers x kv heads x head dim x element size x the mean
context of the decode steps, twice as many with f32 as with f16. An unknown
cache type is refused before any work, with exit status 2.

usage: cli_model.py INFILL MODEL
"""
import json
import os
import subprocess
import sys
import tempfile

failed = total = 0


def check(ok, what):
    global failed, total
    total += 1
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    failed += not ok


def run(infill, *args):
    out = subprocess.run([infill, *args], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"{args[0]} failed: {out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    infill, model = sys.argv[1:3]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("def fibonacci(n):\n    if n < 2:\n        return n\n    return ")
    try:
        a = run(infill, "logits", "--model", model, "--prompt-file", f.name, "--top", "20")
        b = run(infill, "logits", "--model", model, "--prompt-file", f.name, "--top", "20",
                "--kv-type", "f32")
    finally:
        os.unlink(f.name)
    check(a["token_ids"] == b["token_ids"], "same token ids with either cache type")
    fa, fb = dict(a["top"]), dict(b["top"])
    common = set(fa) & set(fb)
    diff = max(abs(fa[i] - fb[i]) for i in common) if common else float("inf")
    check(len(common) >= 18 and 0 < diff < 1e-3,
          f"f16 vs f32 cache: {len(common)} of the top 20 shared, max |diff| {diff:.3g} in (0, 1e-3)")

    p, n = 8, 4
    r16 = run(infill, "bench", "--model", model, "-p", str(p), "-n", str(n), "--json")
    r32 = run(infill, "bench", "--model", model, "-p", str(p), "-n", str(n), "--json",
              "--kv-type", "f32")
    check(r16["kv_type"] == "f16" and r32["kv_type"] == "f32", "bench reports the cache type")
    kv16 = r16["decode_bytes_per_token"] - r16["decode_weight_bytes"]
    kv32 = r32["decode_bytes_per_token"] - r32["decode_weight_bytes"]
    # tiny-dsc: 2 layers, 2 KV heads of 16 dims (../shared/testdata/models/README.md)
    want16 = 2 * 2 * 2 * 16 * 2 * (p + (n + 1) / 2)
    check(abs(kv16 - want16) <= 1, f"f16 KV bytes per decode step {kv16} == {want16}")
    check(abs(kv32 - 2 * want16) <= 1, f"f32 KV bytes per decode step {kv32} == {2 * want16}")
    check(r16["decode_tps"] > 0 and 0 < r16["decode_bound_fraction"], "bench figures present")

    bad = subprocess.run([infill, "bench", "--model", model, "--kv-type", "f8"],
                         capture_output=True, text=True, timeout=10)
    check(bad.returncode == 2 and "unknown KV cache type f8" in bad.stderr,
          "an unknown cache type is refused with a message")
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
