"""Benchmark (not a test): jumps between and within files, as people edit
(docs/benchmarks.md).

usage: bench_jumps.py INFILL [--model M] [--settings JSON] [--jumps N] [--keys K]
                      [--seed S] [--think-ms T] [FILE...]

Opens the files (default: json/decoder.py, argparse.py, textwrap.py of the
system's Python), waits for the model and for the background prefill of the
files' heads to settle, then N times: jumps to a random line inside a
function body of a random file, clears the line after its indentation and
asks (the cold jump), then retypes its first K characters, one request per
key, each sent when the previous answer came (plus --think-ms). The line is
put back before the next jump. Client-measured latencies (request to
response); the share answered within completion.deadlineMs + 50 ms; the
prefix cache's share per cold jump (re-use per jump) and overall; and the
server's shortContexts / backgroundPrefillTokens.
"""
import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lspclient import Client  # noqa: E402

DEFAULT_FILES = ["/usr/lib/python3.11/json/decoder.py", "/usr/lib/python3.11/argparse.py",
                 "/usr/lib/python3.11/textwrap.py"]


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infill")
    ap.add_argument("files", nargs="*")
    ap.add_argument("--model")
    ap.add_argument("--settings", default="{}")
    ap.add_argument("--jumps", type=int, default=8)
    ap.add_argument("--keys", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--think-ms", type=float, default=0)
    a = ap.parse_args()
    files = a.files or DEFAULT_FILES
    opts = {"threads": 2}
    if a.model:
        opts["model"] = a.model
    opts.update(json.loads(a.settings))
    deadline = opts.get("completion.deadlineMs", 200)
    rnd = random.Random(a.seed)
    c = Client(a.infill, ["--log-level", "error", "--user-config", ""])
    texts = {}
    try:
        c.initialize(init_options=opts)
        t0 = time.time()
        while c.request("infill/stats")["result"].get("backend", "none") == "none":
            if time.time() - t0 > 300:
                raise SystemExit("the model did not load")
            time.sleep(0.2)
        for i, path in enumerate(files):
            uri = "file://" + os.path.abspath(path)
            with open(path) as f:
                texts[uri] = f.read().split("\n")
            c.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python" if path.endswith(".py") else "c",
                "version": 1, "text": "\n".join(texts[uri])}})
        version = {u: 1 for u in texts}

        def stats():
            return c.request("infill/stats")["result"]

        def settle():
            """until background prefill stops growing (at most 120 s)"""
            end = time.time() + 120
            last = -1
            while time.time() < end:
                b = stats().get("backgroundPrefillTokens", 0)
                if b == last:
                    return
                last = b
                time.sleep(1.0)

        def edit(uri, line, start, end, text):
            version[uri] += 1
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version[uri]},
                "contentChanges": [{"range": {"start": {"line": line, "character": start},
                                              "end": {"line": line, "character": end}},
                                    "text": text}]})

        def ask(uri, line, ch):
            t = time.perf_counter()
            r = c.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": line, "character": ch},
                "context": {"triggerKind": 2}}, timeout=600)
            ms = (time.perf_counter() - t) * 1000
            return ms, len(r.get("result", {}).get("items", []))

        settle()
        s_start = stats()
        cold, keys, reuse = [], [], []
        for j in range(a.jumps):
            uri = rnd.choice(sorted(texts))
            lines = texts[uri]
            cands = [i for i, l in enumerate(lines)
                     if len(l) - len(l.lstrip(" ")) >= 8 and len(l.strip()) >= a.keys + 4
                     and not l.strip().startswith(("#", '"', "'"))]
            line = rnd.choice(cands)
            orig = lines[line]
            ind = len(orig) - len(orig.lstrip(" "))
            edit(uri, line, ind, len(orig), "")
            s0 = stats()
            ms, n = ask(uri, line, ind)
            s1 = stats()
            prompt = s1["promptTokens"] - s0["promptTokens"]
            cached = s1["cachedPromptTokens"] - s0["cachedPromptTokens"]
            cold.append(ms)
            reuse.append(cached / prompt if prompt else float("nan"))
            print("jump %d: %s:%d cold %.0f ms, %d items, prompt %d, cached %d" %
                  (j, os.path.basename(uri), line + 1, ms, n, prompt, cached), flush=True)
            for k in range(a.keys):
                time.sleep(a.think_ms / 1000)
                edit(uri, line, ind + k, ind + k, orig[ind + k])
                ms, n = ask(uri, line, ind + k + 1)
                keys.append(ms)
            edit(uri, line, ind, ind + a.keys, orig[ind:])  # the line as it was
        s_end = stats()
        every = cold + keys
        within = sum(1 for x in every if x <= deadline + 50) / len(every)
        prompt = s_end["promptTokens"] - s_start["promptTokens"]
        cached = s_end["cachedPromptTokens"] - s_start["cachedPromptTokens"]
        print("settings: %s" % json.dumps(opts))
        print("cold jump ms: p50 %.0f p90 %.0f max %.0f (%d jumps)" %
              (pct(cold, .5), pct(cold, .9), max(cold), len(cold)))
        print("keystroke ms: p50 %.0f p90 %.0f (%d keys)" % (pct(keys, .5), pct(keys, .9),
                                                           len(keys)))
        print("within deadline+50 ms (%d): %.0f%% of all, %.0f%% of keystrokes" %
              (deadline + 50, 100 * within,
               100 * sum(1 for x in keys if x <= deadline + 50) / max(1, len(keys))))
        print("cache share: %.1f%% of prompt tokens; per cold jump: %s" %
              (100 * cached / max(1, prompt), " ".join("%.0f%%" % (100 * r) for r in reuse)))
        print("shortContexts %d, backgroundPrefillTokens %d (whole run, warm-up included)" %
              (s_end.get("shortContexts", 0), s_end.get("backgroundPrefillTokens", 0)))
        c.shutdown_exit()
    finally:
        c.kill()


if __name__ == "__main__":
    main()
