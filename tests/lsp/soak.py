"""Soak (not a test: it runs for minutes): a user typing fast in several
files for a long time, with cancels, against the real binary and a real
model. Checks that every request is answered, that no edit is lost and that
memory stops growing.

usage: soak.py INFILL MODEL [--minutes M] [--threads N] [--seed S] [--settings JSON]

Three files (two Python, one C) are opened; the "user" types at 10-20 keys/s
in bursts with pauses, deletes, makes new lines and jumps between and within
files. Each key is a didChange plus an inlineCompletion request that is not
waited for; a third of the superseded requests are cancelled with
$/cancelRequest as clients do. Every minute the server's copy of each
document (infill/document) is compared with the shadow copy, and the
daemon's RSS is read from /proc. At the end every request must have had an
answer (a result or RequestCancelled), the documents must match, and RSS
less the KV pool's resident part must be within 10% of
its value after the first 5 minutes (or the first third of a shorter run).
Exit status 0 only when all three hold.

RSS includes the KV pages the prefix cache has written: it grows until the
cache reaches cache.memoryMB (1024 by default) and is flat from then on.
The pool is one allocation, so /proc/PID/smaps tells its resident part
apart; kvTouchedMB (infill/stats, pages ever used) must stay within
cache.memoryMB.
At 10-20 keys/s most requests are superseded before they run, so the cache
fills slowly: hence the pool is taken out before comparing.
"""
import argparse
import json
import os
import random
import sys
import time

from lspclient import Client

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FILES = [
    ("/usr/lib/python3.11/json/decoder.py", "python"),
    ("/usr/lib/python3.11/textwrap.py", "python"),
    (os.path.join(ROOT, "subprojects/tree-sitter/lib/src/lexer.c"), "c"),
]
WORDS = ["value", "result", "self.", "return ", "(x)", "if ", "for i in ", "data", " = ",
         "None", "0", ", ", "count += 1", "len(", ")", "item", "->", "buf[i]", ";"]


def utf16_len(s):
    return len(s.encode("utf-16-le")) // 2


def rss_kb(pid, key="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def kv_rss_kb(pid):
    """Resident kB of the largest anonymous mapping: the CPU backend's KV
    pool (one allocation of cache.memoryMB), written page by page as the
    prefix cache fills."""
    best = (0, 0)
    size = rss = 0
    anon = False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                if anon:
                    best = max(best, (size, rss))
                anon = len(head) < 6
                size = rss = 0
            elif head[0] == "Size:":
                size = int(head[1])
            elif head[0] == "Rss:":
                rss = int(head[1])
    if anon:
        best = max(best, (size, rss))
    return best[1]


class Doc:
    def __init__(self, path, lang):
        with open(path, encoding="utf-8", errors="replace") as f:
            self.lines = f.read().split("\n")
        self.uri = "file:///soak/" + os.path.basename(path)
        self.lang = lang
        self.version = 1
        self.line = 0
        self.col = 0

    def text(self):
        return "\n".join(self.lines)

    def pos(self):
        return {"line": self.line, "character": utf16_len(self.lines[self.line][:self.col])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infill")
    ap.add_argument("model")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--settings", default="{}", help="initializationOptions to add")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    docs = [Doc(p, l) for p, l in FILES if os.path.exists(p)]
    if len(docs) < 2:
        print("soak: need at least two of", [p for p, _ in FILES])
        return 2
    c = Client(a.infill, ["--model", a.model, "--threads", str(a.threads), "--log-level", "warn"])
    pid = c.proc.pid
    opts = {"completion.debounceMs": 0}
    opts.update(json.loads(a.settings))
    c.initialize(init_options=opts)
    for d in docs:
        c.notify("textDocument/didOpen", {"textDocument": {"uri": d.uri, "languageId": d.lang,
                                                            "version": 1, "text": d.text()}})
    sent = cancelled = mismatches = 0
    pending = set()
    answers = {"items": 0, "empty": 0, "cancelled": 0, "error": 0}
    rss = []  # (minutes, kB)
    start = time.monotonic()
    end = start + a.minutes * 60
    next_check = start + 60
    doc = docs[0]
    burst = 0

    def collect():
        for k in list(c.responses):
            r = c.responses.pop(k)
            i = json.loads(k)
            if i not in pending:
                continue
            pending.discard(i)
            if "error" in r:
                answers["cancelled" if r["error"].get("code") == -32800 else "error"] += 1
            elif r.get("result") and r["result"].get("items"):
                answers["items"] += 1
            else:
                answers["empty"] += 1

    def check_docs():
        nonlocal mismatches
        for d in docs:
            r = c.request("infill/document", {"textDocument": {"uri": d.uri}}, timeout=60)
            got = r.get("result", {}).get("text")
            if got != d.text():
                mismatches += 1
                print("soak: %s differs from the shadow copy at version %d" % (d.uri, d.version))
        kv = c.request("infill/stats", timeout=60).get("result", {}).get("kvTouchedMB", 0)
        rss.append(((time.monotonic() - start) / 60, rss_kb(pid), kv_rss_kb(pid), kv))
        print("soak: %5.1f min  sent %d  pending %d  %s  RSS %d MB (anon %d, file %d; "
              "KV pool resident %d, written %d)" %
              (rss[-1][0], sent, len(pending), answers, rss[-1][1] // 1024,
               rss_kb(pid, "RssAnon") // 1024, rss_kb(pid, "RssFile") // 1024,
               rss[-1][2] // 1024, kv), flush=True)

    def edit(d, line, col, end_col, text):
        d.version += 1
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": d.uri, "version": d.version},
            "contentChanges": [{"range": {
                "start": {"line": line, "character": utf16_len(d.lines[line][:col])},
                "end": {"line": line, "character": utf16_len(d.lines[line][:end_col])}},
                "text": text}]})
        s = d.lines[line]
        parts = (s[:col] + text + s[end_col:]).split("\n")
        d.lines[line:line + 1] = parts

    while time.monotonic() < end:
        r = rnd.random()
        if r < 0.03:  # jump to another file or another place
            doc = rnd.choice(docs)
            doc.line = rnd.randrange(len(doc.lines))
            doc.col = rnd.randint(0, len(doc.lines[doc.line]))
            time.sleep(rnd.uniform(0.3, 1.5))
        elif r < 0.10 and doc.col > 0:  # backspace
            edit(doc, doc.line, doc.col - 1, doc.col, "")
            doc.col -= 1
        elif r < 0.13:  # new line
            edit(doc, doc.line, doc.col, doc.col, "\n    ")
            doc.line += 1
            doc.col = 4
        else:
            w = rnd.choice(WORDS)
            ch = w[burst % len(w)]
            edit(doc, doc.line, doc.col, doc.col, ch)
            doc.col += 1
        burst += 1
        if pending and rnd.random() < 1 / 3:
            c.notify("$/cancelRequest", {"id": max(pending)})
            cancelled += 1
        pending.add(c.request_async("textDocument/inlineCompletion", {
            "textDocument": {"uri": doc.uri}, "position": doc.pos(),
            "context": {"triggerKind": 2}}))
        sent += 1
        # 10-20 keys/s while typing; a pause now and then
        gap = rnd.uniform(0.05, 0.1) if rnd.random() > 0.02 else rnd.uniform(0.5, 3)
        c.drain(gap)
        collect()
        if time.monotonic() >= next_check:
            check_docs()
            next_check += 60
    deadline = time.monotonic() + 300
    while pending and time.monotonic() < deadline:
        c.drain(0.5)
        collect()
    check_docs()
    base_at = 5 if a.minutes >= 15 else a.minutes / 3
    at5 = next((r for r in rss if r[0] >= base_at), rss[0])
    base, final = at5[1] - at5[2], rss[-1][1] - rss[-1][2]
    growth = (final - base) / base if base else 0
    raw = (rss[-1][1] - at5[1]) / at5[1] if at5[1] else 0
    print("soak: %.1f min, %d requests (%d cancels sent), answers %s, unanswered %d%s, "
          "document mismatches %d; RSS %d MB after %.0f min -> %d MB at the end (%+.1f%%), "
          "of which the KV pool %d -> %d MB; RSS less the KV pool %d -> %d MB (%+.1f%%)" %
          (a.minutes, sent, cancelled, answers, len(pending),
           " (ids %s)" % sorted(pending) if pending else "", mismatches, at5[1] // 1024,
           base_at, rss[-1][1] // 1024, raw * 100, at5[2] // 1024, rss[-1][2] // 1024,
           base // 1024, final // 1024, growth * 100))
    print("soak: series min:rss/kv_pool_mb " +
          " ".join("%.0f:%d/%d" % (r[0], r[1] // 1024, r[2] // 1024) for r in rss))
    stats = c.request("infill/stats", timeout=60).get("result", {})
    print("soak: stats " + json.dumps(stats, sort_keys=True))
    code = c.shutdown_exit()
    kv_bound = rss[-1][3] <= json.loads(a.settings).get("cache.memoryMB", 1024)
    ok = (not pending and not mismatches and abs(growth) <= 0.10 and kv_bound and
          answers["error"] == 0 and code == 0)
    print("soak: " + ("PASS" if ok else "FAIL"))
    c.kill()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
