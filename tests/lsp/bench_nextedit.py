"""Benchmark (not a test): how long infill/nextEdit takes after a rename,
as a client sees it (docs/benchmarks.md).

usage: bench_nextedit.py INFILL [--renames N] [--seed S] [FILE...]

Opens each file (default: the system Python's argparse.py and textwrap.py),
and N times: picks a random identifier used 2+ times, renames one use of it
(a delete and the new name typed a key at a time, as didChange notifications),
asks infill/nextEdit, and puts the text back. Prints the client-measured
round trips (p50/p90), the edits offered per request, and the server's own
nextEditLatencyMs. No model runs for next edits; the server is started with
the embedded model as usual and its load does not block the requests.
"""
import argparse
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import Client  # noqa: E402

DEFAULT_FILES = ["/usr/lib/python3.11/argparse.py", "/usr/lib/python3.11/textwrap.py"]
LANG = {".py": "python", ".c": "c", ".h": "c", ".js": "javascript", ".go": "go", ".rs": "rust"}


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q * len(v) + 0.5)) - 1))] if v else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infill")
    ap.add_argument("--renames", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    files = a.files or DEFAULT_FILES
    c = Client(a.infill, [])
    c.initialize()
    docs = []
    for path in files:
        text = open(path, encoding="utf-8").read()
        uri = "file://" + os.path.abspath(path)
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": LANG.get(os.path.splitext(path)[1], "plaintext"),
            "version": 1, "text": text}})
        lines = text.split("\n")
        uses = {}
        for ln, line in enumerate(lines):
            code = line.split("#")[0]
            for m in re.finditer(r"\b[A-Za-z_][A-Za-z_0-9]{2,}\b", code):
                uses.setdefault(m.group(0), []).append((ln, m.start()))
        names = [n for n, u in uses.items() if len(u) >= 2]
        docs.append({"uri": uri, "version": 1, "uses": uses, "names": names})
    rtt, offered = [], []
    for _ in range(a.renames):
        d = rnd.choice(docs)
        name = rnd.choice(d["names"])
        ln, col = rnd.choice(d["uses"][name])
        new = name + "_x"

        def change(s, e, t):
            d["version"] += 1
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": d["uri"], "version": d["version"]},
                "contentChanges": [{"range": {"start": {"line": ln, "character": s},
                                              "end": {"line": ln, "character": e}},
                                    "text": t}]})
        change(col, col + len(name), "")
        for i, ch in enumerate(new):
            change(col + i, col + i, ch)
        t0 = time.perf_counter()
        r = c.request("infill/nextEdit", {"textDocument": {"uri": d["uri"], "version": d["version"]},
                                          "position": {"line": ln, "character": col}})
        rtt.append((time.perf_counter() - t0) * 1e3)
        offered.append(len(r["result"]["edits"]))
        change(col, col + len(new), name)  # back as it was
    st = c.request("infill/stats")["result"]
    c.shutdown_exit()
    lat = st["nextEditLatencyMs"]
    print("files: %s" % ", ".join(os.path.basename(f) for f in files))
    print("renames: %d; edits offered per request: mean %.1f, max %d"
          % (len(rtt), sum(offered) / len(offered), max(offered)))
    print("client round trip ms: p50 %.2f p90 %.2f" % (pct(rtt, 0.5), pct(rtt, 0.9)))
    print("server nextEditLatencyMs: p50 %.2f p90 %.2f (%d samples)"
          % (lat["p50"], lat["p90"], lat["samples"]))
    print("load average: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
