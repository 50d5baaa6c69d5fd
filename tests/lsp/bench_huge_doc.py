"""Benchmark (not a test): completion on one huge one-line document.

usage: bench_huge_doc.py INFILL [MB ...]   (default: 20 50)
For each size: opens a document of that many MB on one line (Python-like
text), asks for an inline completion at its end and in its middle, and
prints the seconds each took and the daemon's peak RSS (VmHWM). The machine
is shared: compare figures from one run, and say the load.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import Client  # noqa: E402

URI = "file:///tmp/infill-bench/huge.py"


def vm(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def one(binary, mb):
    unit = "x = foo(a, b) + bar[1]; "
    text = unit * (mb * (1 << 20) // len(unit))
    c = Client(binary, ["--log-level", "warn"])
    try:
        c.initialize()
        deadline = time.monotonic() + 60
        while c.request("infill/stats")["result"]["backend"] == "none":
            if time.monotonic() > deadline:
                raise SystemExit("the model did not load")
            time.sleep(0.05)
        rss0 = vm(c.proc.pid, "VmRSS")
        t = time.monotonic()
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": URI, "languageId": "python", "version": 1, "text": text}})
        c.request("infill/stats", timeout=120)
        t_open = time.monotonic() - t
        times = []
        for ch in (len(text), len(text) // 2):
            t = time.monotonic()
            r = c.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": URI}, "position": {"line": 0, "character": ch},
                "context": {"triggerKind": 1}}, timeout=300)
            times.append(time.monotonic() - t)
            assert "result" in r, r
        hwm = vm(c.proc.pid, "VmHWM")
        print("%3d MB: open %.2f s, completion at end %.2f s, in the middle %.2f s; "
              "RSS before open %.0f MB, peak %.0f MB" % (mb, t_open, times[0], times[1], rss0, hwm))
        c.shutdown_exit()
    finally:
        c.kill()


def main():
    binary = sys.argv[1]
    sizes = [int(a) for a in sys.argv[2:]] or [20, 50]
    print("load average: %s" % open("/proc/loadavg").read().split()[0])
    for mb in sizes:
        one(binary, mb)


if __name__ == "__main__":
    main()
