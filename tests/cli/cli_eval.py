#!/usr/bin/python3
"""e2e.py INFILL TESTDATA DATA_DIR - `infill eval` end to end on the tiny
random-weight model: it runs, the JSON has the four modes for every kind,
and every completion the checked and full pipelines returned adds no syntax error to the
file (validation's promise; whether it also restores what the cut removed,
the strict "parses" figure, is up to the model). (Random weights: the
figures themselves mean nothing here.) Exit 77 when the test data is missing.
"""
import json
import os
import subprocess
import sys

infill, testdata, data = sys.argv[1:4]
model = os.path.join(testdata, "models", "tiny-dsc-f32.gguf")
if not os.path.exists(model):
    print("SKIP: %s is missing" % model)
    sys.exit(77)

files = [os.path.join(data, f) for f in ("shapes.py", "stack.c", "queue.js")]
cmd = [infill, "eval", "--model", model, "--cases", "9", "--seed", "3", "--threads", "1",
       "--json", "--files"] + files
p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
fail = []
if p.returncode != 0:
    print(p.stderr)
    sys.exit("infill eval exited %d" % p.returncode)
out = json.loads(p.stdout)
table = p.stderr

if out["cases"] != 9:
    fail.append("cases: %r" % out["cases"])
if out["modes"] != ["line", "ast", "checked", "full"]:
    fail.append("modes: %r" % out["modes"])
rows = {(r["mode"], r["kind"]): r for r in out["rows"]}
for m in ("line", "ast", "checked", "full"):
    for k in ("all", "rest_of_line", "line", "block"):
        if (m, k) not in rows:
            fail.append("no row %s/%s" % (m, k))
    if "| %s | **all** |" % m not in table:
        fail.append("the table has no %s row" % m)
full = rows.get(("full", "all"))
if full and full["parse_checked"] and full["no_new_errors"] != 1.0:
    fail.append("full returned completions that add syntax errors: %r" % full)
for c in out["per_case"]:
    for m in ("checked", "full"):
        r = c["results"][m]
        if r["no_new_errors"] != r["checked"] or r["checked"] != r["returned"]:
            fail.append("case %s:%d (%s): %s: %d returned, %d checked, %d add no error; top %r"
                        % (c["path"], c["line"], c["kind"], m, r["returned"], r["checked"],
                           r["no_new_errors"], r["top"]))
    for m in ("line", "ast"):
        if c["results"][m]["returned"] > 1:
            fail.append("%s returned more than one completion" % m)
kinds = sorted(c["kind"] for c in out["per_case"])
if kinds != sorted(["rest_of_line", "line", "block"] * 3):
    fail.append("kinds: %r" % kinds)

# the same seed cuts the same cases
p2 = subprocess.run(cmd[:-4] + ["--modes", "line", "--json", "--files"] + files,
                    capture_output=True, text=True, timeout=600)
out2 = json.loads(p2.stdout)
same = [(c["path"], c["line"], c["kind"], c["expected"]) for c in out["per_case"]]
same2 = [(c["path"], c["line"], c["kind"], c["expected"]) for c in out2["per_case"]]
if same != same2:
    fail.append("a second run with the same seed cut other cases")

# the engine runs with the settings: cache.reuseShiftedSuffix reaches it
if out["settings"].get("reuse_shifted_suffix") is not True:
    fail.append("reuse_shifted_suffix by default: %r" % out["settings"])
p4 = subprocess.run(cmd[:-4] + ["--modes", "line", "--cases", "3", "--settings",
                                '{"cache.reuseShiftedSuffix": false}', "--json", "--files"] + files,
                    capture_output=True, text=True, timeout=600)
out4 = json.loads(p4.stdout) if p4.returncode == 0 else {}
if out4.get("settings", {}).get("reuse_shifted_suffix") is not False:
    fail.append("eval ignored cache.reuseShiftedSuffix: rc %d, %r, %s"
                % (p4.returncode, out4.get("settings"), p4.stderr[-500:]))

# a training file is refused
train = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "models",
                     "train-files.txt")
if os.path.exists(train):
    with open(train) as f:
        first = next((l.rstrip("\n").split("\t")[-1] for l in f if l.strip()), None)
    if first and os.path.exists(first):
        p3 = subprocess.run([infill, "eval", "--model", model, "--cases", "1", "--files", first],
                            capture_output=True, text=True, timeout=120)
        if p3.returncode == 0 or "training" not in p3.stderr:
            fail.append("a training file was not refused: rc %d, %s" % (p3.returncode, p3.stderr))

print(table)
for f in fail:
    print("FAIL:", f)
sys.exit(1 if fail else 0)
