"""Benchmark (not a test): replay typing into a large file through the real
binary and report the server-side round trip of each keystroke.

usage: bench_keystrokes.py INFILL [LINES] [KEYSTROKES]
Each keystroke is a didChange (one character, incremental) followed by an
inlineCompletion request (debounce 0, null pipeline); we time request ->
response, then print p50/p90/p99 and the server's own infill/stats.
"""
import sys
import time

from lspclient import Client

binary = sys.argv[1]
lines = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
keys = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
text = "".join("    value_%d = compute(value_%d) + 1\n" % (i, i - 1) for i in range(lines))
uri = "file:///bench/big.py"
c = Client(binary, ["--log-level", "error"])
try:
    c.initialize(init_options={"completion.debounceMs": 0})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                        "version": 1, "text": text}})
    line = lines // 2
    times = []
    for k in range(keys):
        col = 4 + k
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": k + 2},
                 "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                               "end": {"line": line, "character": col}},
                                     "text": "x"}]})
        t = time.perf_counter()
        c.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                  "position": {"line": line, "character": col + 1},
                  "context": {"triggerKind": 2}})
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    pct = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print("file: %d lines, %d bytes; %d keystrokes" % (lines, len(text), keys))
    print("client-measured round trip ms: p50 %.3f p90 %.3f p99 %.3f" %
          (pct(0.5), pct(0.9), pct(0.99)))
    s = c.request("infill/stats")["result"]
    print("server latencyMs:", s["latencyMs"])
    c.shutdown_exit()
finally:
    c.kill()
