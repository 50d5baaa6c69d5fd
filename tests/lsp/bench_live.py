"""Benchmark (not a test): what a user sees of a suggestion while reading it.

usage: bench_live.py INFILL MODEL FILE [PLACES] [THREADS] [DEADLINE_MS]
At PLACES places of FILE (the ends of comment and code lines, spread over
the file), one inline request under the default deadline (200 ms), then
(DEADLINE_MS stands in for a slower model on a small one) then
the same request again after 0.3 s, 1 s and 3 s of reading: with live
candidates the re-asks are answered from the candidate that went on
decoding. Prints the median characters shown at each point, the share of
re-asks answered without the model (fastPath), and the server's live
figures (infill/stats).
"""
import statistics
import sys
import time

from lspclient import Client

binary, model, path = sys.argv[1], sys.argv[2], sys.argv[3]
n_places = int(sys.argv[4]) if len(sys.argv) > 4 else 8
threads = int(sys.argv[5]) if len(sys.argv) > 5 else 2
deadline = int(sys.argv[6]) if len(sys.argv) > 6 else 200
text = open(path).read()
lines = text.split("\n")
cands = [i for i, l in enumerate(lines) if len(l.strip()) > 8]
step = max(1, len(cands) // n_places)
places = [(i, len(lines[i])) for i in cands[::step][:n_places]]
uri = "file:///bench/" + path.split("/")[-1]
c = Client(binary, ["--log-level", "error", "--user-config", ""])
waits = (0.3, 1.0, 3.0)
shown = {w: [] for w in (0.0,) + waits}
try:
    c.initialize(init_options={"model": model, "threads": threads, "completion.debounceMs": 0,
                                 "completion.deadlineMs": deadline},
                 capabilities={"window": {"workDoneProgress": True}})
    c.wait_for(lambda m: m.get("method") == "$/progress"
               and m["params"]["value"]["kind"] == "end", timeout=120)
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                        "version": 1, "text": text}})

    def ask(line, ch):
        r = c.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": ch},
            "context": {"triggerKind": 2}}, timeout=60)
        items = r.get("result", {}).get("items", [])
        return len(items[0]["insertText"]) if items else 0

    for line, ch in places:
        t0 = time.monotonic()
        shown[0.0].append(ask(line, ch))
        for w in waits:
            time.sleep(max(0, t0 + w - time.monotonic()))
            shown[w].append(ask(line, ch))
    st = c.request("infill/stats")["result"]
    med = {w: statistics.median(v) for w, v in shown.items()}
    print("%d places of %s, %d threads, deadline %d ms" % (len(places), path, threads, deadline))
    print("median characters shown: first %s, +0.3 s %s, +1 s %s, +3 s %s" %
          (med[0.0], med[0.3], med[1.0], med[3.0]))
    print("per place (first, 0.3, 1, 3 s):",
          list(zip(shown[0.0], shown[0.3], shown[1.0], shown[3.0])))
    keys = ("requests", "fastPath", "liveAnswers", "liveShare", "firstAnswers",
            "firstAnswerChars", "liveTokens", "liveThrownTokens", "thrownShare",
            "grewNotices", "generatedTokens")
    print({k: st.get(k) for k in keys})
    c.shutdown_exit()
finally:
    c.kill()
