"""End-to-end tests of the completion pipeline over LSP with the tiny
random-weight model (../shared/testdata/models/tiny-dsc-f32.gguf).

Random weights write random code, so these tests check what must hold
whatever the model says: every candidate that reaches the client passes
validation, greedy decoding is deterministic, a superseded request is
answered, the prefix cache is used after a one-character edit, a model that
cannot be loaded is reported and never crashes the server, progress is shown
while the model loads, and typing what is on screen is answered without the
model.

usage: pipeline_test.py INFILL TESTDATA CASE  (or --list)
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lsp"))
from lspclient import Client  # noqa: E402

URI = "file:///tmp/infill-pipeline/a.py"
PY = (
    "import os\n"
    "\n"
    "\n"
    "def add(a, b):\n"
    "    total = a + b\n"
    "    return total\n"
    "\n"
    "\n"
    "def main():\n"
    "    x = add(1, 2)\n"
    "    print(x)\n"
    "    \n"
    "\n"
    "\n"
    "if __name__ == \"__main__\":\n"
    "    main()\n"
    "# notes: \n"
)
LOAD_TIMEOUT = 60


class Failed(Exception):
    pass


def check(cond, what, *context):
    if not cond:
        raise Failed(what + "".join("\n  " + json.dumps(c)[:2000] for c in context))


def start(binary, model, init=None, caps=None, root=None, args=(), env=None):
    c = Client(binary, args=["--user-config", "", *args], env=env)
    # No deadline unless a case sets one: the cases compare answers, and a
    # deadline makes them depend on how busy the machine is.
    opts = {"model": model, "completion.debounceMs": 0, "completion.deadlineMs": 0,
            "threads": 1}
    opts.update(init or {})
    c.initialize(capabilities=caps or {"window": {"workDoneProgress": True}},
                 init_options=opts, root_uri="file://" + root if root else None)
    return c


def wait_loaded(c):
    """Waits for the end of the model-load progress; returns its message."""
    m = c.wait_for(lambda m: m.get("method") == "$/progress"
                   and m["params"]["value"]["kind"] == "end", timeout=LOAD_TIMEOUT)
    return m["params"]["value"].get("message")


def open_doc(c, text, uri=URI, lang="python"):
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": lang, "version": 1, "text": text}})


def inline(c, line, ch, uri=URI, timeout=60):
    r = c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": ch},
        "context": {"triggerKind": 1}}, timeout=timeout)
    check("result" in r, "inline completion answered", r)
    return r["result"]["items"]


def offset(text, line, ch):
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[:line]) + ch


def validate(binary, text, line, ch, cand, start_end=None):
    """infill validate on text with cand inserted at (line, ch): the
    candidate must be shown whole."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        out = subprocess.run([binary, "validate", "%s:%d:%d" % (path, line + 1, ch + 1),
                              "--text", cand], capture_output=True, text=True, timeout=30)
    finally:
        os.unlink(path)
    check(out.returncode == 0, "infill validate ran", out.stderr)
    return json.loads(out.stdout)


def stats(c):
    return c.request("infill/stats")["result"]


def poll(pred, seconds):
    """pred() until true or seconds pass; its last value."""
    end = time.time() + seconds
    while not pred():
        if time.time() > end:
            return False
        time.sleep(0.05)
    return True


# ---- cases ------------------------------------------------------------------

def case_progress_and_valid(binary, model):
    """$/progress begin/end during the load; every candidate shown passes
    validation at several cursor positions."""
    c = start(binary, model, {"completion.candidates": 4, "completion.maxTokens": 24,
                              "completion.temperature": 1.0, "completion.multiline": "always"})
    try:
        msg = wait_loaded(c)
        check(msg == "ready", "the load ends ready", msg)
        kinds = [m["params"]["value"]["kind"] for m in c.notifications
                 if m.get("method") == "$/progress"]
        check(kinds[0] == "begin" and kinds[-1] == "end", "progress begin ... end", kinds)
        creates = [m for m in c.server_requests
                   if m.get("method") == "window/workDoneProgress/create"]
        check(creates, "the progress token was created", c.server_requests)
        open_doc(c, PY)
        shown = 0
        for line, ch in [(4, 17), (5, 4), (9, 8), (11, 4), (10, 12), (15, 10), (16, 9)]:
            items = inline(c, line, ch)
            cur = offset(PY, line, ch)
            for it in items:
                r = it["range"]
                check(r["start"] == {"line": line, "character": ch}, "starts at the cursor", it)
                end = offset(PY, r["end"]["line"], r["end"]["character"])
                check(end >= cur, "range ends at or after the cursor", it)
                text = PY[:cur] + PY[end:]  # the replaced span removed
                v = validate(binary, text, line, ch, it["insertText"])
                check(v["valid"] and v["text"] == it["insertText"],
                      "a shown candidate passes validation whole", it, v)
                check(it["insertText"].strip(), "no blank candidate", it)
                shown += 1
        s = stats(c)
        check(s["promptTokens"] > 0 and s["generatedTokens"] > 0, "the model ran", s)
        check(s["backend"] in ("cpu", "cuda"), "backend named", s)
        print("shown %d candidates, rejected %d" % (shown, s["rejectedCandidates"]))
        check(shown > 0, "something shown (in the comment at least)", s)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_greedy_deterministic(binary, model):
    c = start(binary, model, {"completion.candidates": 1, "completion.temperature": 0,
                              "completion.maxTokens": 16})
    try:
        wait_loaded(c)
        open_doc(c, PY, lang="plaintext")  # unchecked: the answer is shown as generated
        # (each item's command names it for the feedback reports: not compared)
        a = [(it["insertText"], it["range"]) for it in inline(c, 9, 8)]
        b = [(it["insertText"], it["range"]) for it in inline(c, 9, 8)]
        check(a == b, "the same greedy answer twice", a, b)
        c2 = start(binary, model, {"completion.candidates": 1, "completion.temperature": 0,
                                   "completion.maxTokens": 16, "cache.enabled": False})
        try:
            wait_loaded(c2)
            open_doc(c2, PY, lang="plaintext")
            d = [(it["insertText"], it["range"]) for it in inline(c2, 9, 8)]
            check(a == d, "the same answer with the cache off", a, d)
            check(c2.shutdown_exit() == 0, "exit 0")
        finally:
            c2.kill()
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


TABLE = (
    "static const struct op ops[] = {\n"
    "    { \"add\", op_add, 2 },\n"
    "    { \"sub\", op_sub, 2 },\n"
    "    { \"mul\", op_mul, 2 },\n"
    "    { \"div\", op_div, 2 },\n"
    "    { \"\n"
    "};\n"
)


def case_prompt_lookup(binary, model):
    """completion.promptLookup changes how many steps decoding takes, not
    what it answers; infill/stats counts the drafted and the kept tokens.
    It is on by default (None: the key left out)."""
    answers, figures = {}, {}
    for on in (False, True, None):
        settings = {"completion.candidates": 1, "completion.temperature": 0,
                    "completion.maxTokens": 48}
        if on is not None:
            settings["completion.promptLookup"] = on
        c = start(binary, model, settings)
        try:
            wait_loaded(c)
            open_doc(c, TABLE, lang="plaintext")  # unchecked: shown as generated
            answers[on] = [inline(c, 5, 7), inline(c, 4, 4), inline(c, 6, 2)]
            figures[on] = stats(c)
            check(c.shutdown_exit() == 0, "exit 0")
        finally:
            c.kill()
    check(answers[True] == answers[False], "the same answers with and without lookup",
          answers)
    off, on = figures[False], figures[True]
    check(off["draftTokens"] == 0 and off["acceptedDraftTokens"] == 0, "off: no drafts", off)
    check(on["draftTokens"] > 0, "on: tokens drafted", on)
    check(0 < on["acceptedDraftTokens"] <= on["draftTokens"], "on: some kept", on)
    check(on["generatedTokens"] == off["generatedTokens"], "the same tokens generated", off, on)
    dflt = figures[None]
    check(answers[None] == answers[False], "by default: the answers without lookup", answers)
    check(dflt["draftTokens"] > 0 and dflt["acceptedDraftTokens"] > 0,
          "by default: tokens drafted and kept", dflt)


def case_superseded(binary, model):
    """A newer request for the same document answers the running one at once
    (empty) and its job stops; the newer one is answered too."""
    c = start(binary, model, {"completion.candidates": 8, "completion.maxTokens": 4096,
                              "completion.multiline": "always", "completion.maxLines": 1000,
                              "completion.temperature": 1.0})
    try:
        wait_loaded(c)
        open_doc(c, PY, lang="plaintext")
        first = c.request_async("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 11, "character": 4},
            "context": {"triggerKind": 1}})
        c.drain(0.3)  # let its job start generating
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 11, "character": 4},
                                          "end": {"line": 11, "character": 4}},
                                "text": "r"}]})
        c.notify("workspace/didChangeConfiguration",
                 {"settings": {"infill": {"completion": {"maxTokens": 4}}}})
        second = c.request_async("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 11, "character": 5},
            "context": {"triggerKind": 1}})
        r1 = c.response(first, timeout=30)
        check(r1.get("result") == {"items": []}, "the superseded request is answered empty", r1)
        r2 = c.response(second, timeout=60)
        check("result" in r2, "the newer one is answered", r2)
        s = stats(c)
        check(s["cancelled"] >= 1, "counted as cancelled", s)
        # the first job stopped early: all 8 candidates running to 4096
        # tokens would have generated 32768 (a cancelled job still counts
        # what it generated before it stopped)
        check(s["generatedTokens"] < 8 * 4096, "the superseded job stopped generating", s)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_cache_reuse(binary, model):
    """After a one-character edit the prompt is mostly served from the cache."""
    c = start(binary, model, {"completion.candidates": 2, "completion.maxTokens": 8})
    try:
        wait_loaded(c)
        open_doc(c, PY)
        inline(c, 11, 4)
        s0 = stats(c)
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 11, "character": 4},
                                          "end": {"line": 11, "character": 4}},
                                "text": "r"}]})
        inline(c, 11, 5)
        s1 = stats(c)
        prompt = s1["promptTokens"] - s0["promptTokens"]
        cached = s1["cachedPromptTokens"] - s0["cachedPromptTokens"]
        check(prompt > 0, "a second prompt", s0, s1)
        check(cached > 0, "cachedPromptTokens grew after a one-character edit", s0, s1)
        check(cached > prompt // 2, "most of the prompt re-used", s0, s1)
        print("second prompt %d tokens, %d from the cache" % (prompt, cached))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_kv_type(binary, model):
    """cache.kvType picks the KV cache's precision; changing it reloads the
    model with a pool of the same bytes (so twice the pages in f16)."""
    c = start(binary, model, {"cache.kvType": "f32", "cache.memoryMB": 16})
    try:
        wait_loaded(c)
        s32 = stats(c)
        check(s32["kvType"] == "f32" and s32["kvPages"] > 0, "an f32 cache", s32)
        open_doc(c, PY)
        check(inline(c, 11, 4) is not None, "answers with an f32 cache")
        c.notify("workspace/didChangeConfiguration",
                 {"settings": {"infill": {"cache": {"kvType": "f16"}}}})
        check(poll(lambda: stats(c)["kvType"] == "f16", LOAD_TIMEOUT), "reloaded in f16")
        s16 = stats(c)
        check(s16["kvPages"] == 2 * s32["kvPages"], "the same memory holds twice the pages",
              s32, s16)
        check(inline(c, 11, 4) is not None, "answers with an f16 cache")
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()
    # left to the server ("auto"): q8_0 where the CPU runs a model whose head
    # size is a multiple of 32 (tiny-kq-q6_k's 32), f16 where not (this one's 16)
    for name, want in (("tiny-kq-q6_k.gguf", "q8_0"), (os.path.basename(model), "f16")):
        c = start(binary, os.path.join(os.path.dirname(model), name), {"backend": "cpu"})
        try:
            wait_loaded(c)
            s = stats(c)
            check(s["kvType"] == want and s["kvPages"] > 0, "auto: " + want + " for " + name, s)
            check(c.shutdown_exit() == 0, "exit 0")
        finally:
            c.kill()


def case_deadline(binary, model):
    """completion.deadlineMs bounds the work per request: with a deadline that
    has passed by the time decoding starts, each candidate gets the one token
    the prompt's logits give (cut back to a whole word), so the greedy answer
    is a prefix of the full-length one, and what is shown still passes
    validation."""
    answers = {}
    for deadline in (0, 1):
        # the decode deadline is what this case is about: the prefill
        # budget (a shorter context where the prompt would not be in by
        # the deadline, judged from the rates measured on a loaded
        # machine) would change the first token itself
        c = start(binary, model, {"completion.candidates": 1, "completion.temperature": 0,
                                  "completion.maxTokens": 24, "completion.deadlineMs": deadline,
                                  "completion.multiline": "always",
                                  "completion.prefillBudget": False})
        try:
            wait_loaded(c)
            open_doc(c, PY, lang="plaintext")
            answers[deadline] = [(inline(c, line, ch) or [{"insertText": ""}])[0]["insertText"]
                                 for line, ch in [(9, 8), (11, 4), (5, 4), (16, 9)]]
            check(c.shutdown_exit() == 0, "exit 0")
        finally:
            c.kill()
    print("no deadline %r\n1 ms deadline %r" % (answers[0], answers[1]))
    for full, short in zip(answers[0], answers[1]):
        # (a full answer can be dropped whole, e.g. as a repeat of the text
        # after the cursor, where its one-token start is not)
        check(not full or full.startswith(short), "the cut answer is a prefix of the full one",
              full, short)
    check(any(len(s) < len(f) for f, s in zip(answers[0], answers[1])),
          "the deadline cut some answer short", answers)
    c = start(binary, model, {"completion.candidates": 3, "completion.maxTokens": 64,
                              "completion.deadlineMs": 1, "completion.multiline": "always"})
    try:
        wait_loaded(c)
        open_doc(c, PY)
        for line, ch in [(11, 4), (9, 8)]:
            cur = offset(PY, line, ch)
            for it in inline(c, line, ch):
                r = it["range"]
                text = PY[:cur] + PY[offset(PY, r["end"]["line"], r["end"]["character"]):]
                v = validate(binary, text, line, ch, it["insertText"])
                check(v["valid"] and v["text"] == it["insertText"],
                      "a cut-short candidate passes validation whole", it, v)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_deadline_then_extended(binary, model):
    """An answer the deadline cut short is decoded on to full length in the
    background: typing its first character is answered from the fast path
    with the rest of the full-length answer (the one a run without a
    deadline gives)."""
    base = {"completion.candidates": 1, "completion.temperature": 0,
            "completion.maxTokens": 24, "completion.multiline": "always"}
    full = {}
    c = start(binary, model, base)
    try:
        wait_loaded(c)
        open_doc(c, PY, lang="plaintext")
        for line, ch in [(9, 8), (11, 4), (5, 4), (16, 9)]:
            items = inline(c, line, ch)
            full[(line, ch)] = items[0]["insertText"] if items else ""
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()
    opts = dict(base)
    opts["completion.deadlineMs"] = 1
    # the decode deadline is what this case is about: with the prefill
    # budget (calibrated at load) a 1 ms deadline answers from the short
    # context instead, which is not lengthened
    opts["completion.prefillBudget"] = False
    c = start(binary, model, opts)
    try:
        wait_loaded(c)
        open_doc(c, PY, lang="plaintext")
        tried = 0
        for (line, ch), want in full.items():
            items = inline(c, line, ch)
            if not items:
                continue
            short = items[0]["insertText"]
            if len(want) <= len(short) or not want.startswith(short):
                continue
            tried += 1
            # a re-ask at the same place is answered from the live candidate,
            # which grows slice by slice to the full-length answer
            check(poll(lambda: (inline(c, line, ch) or [{"insertText": ""}])[0]["insertText"]
                       == want, 60), "the shown answer grew to full length", stats(c))
            check(stats(c)["extended"] >= tried, "counted as extended", stats(c))
            before = stats(c)["fastPath"]
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": URI, "version": 10 + tried},
                "contentChanges": [{"range": {"start": {"line": line, "character": ch},
                                              "end": {"line": line, "character": ch}},
                                    "text": short[0]}]})
            rest = inline(c, line, ch + 1)
            check(stats(c)["fastPath"] == before + 1, "answered by the fast path", stats(c))
            check(rest and rest[0]["insertText"] == want[1:],
                  "the rest of the full-length answer", short, want, rest)
            print("shown %r, then %r" % (short, rest[0]["insertText"]))
            break
        check(tried > 0, "some answer was cut short", full)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_replay(binary, model):
    """infill replay types 20 characters back through the real server: every
    keystroke answered, the prefix cache serves most of each prompt, and the
    figures it prints are consistent."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PY)
        path = f.name
    try:
        out = subprocess.run([binary, "replay", path, "--line", "10", "--chars", "20",
                              "--model", model, "--json", "--settings",
                              '{"threads": 1, "completion.maxTokens": 8}'],
                             capture_output=True, text=True, timeout=240)
    finally:
        os.unlink(path)
    check(out.returncode == 0, "replay ran", out.stderr[-2000:])
    r = json.loads(out.stdout)
    figs = r["runs"] if "runs" in r else [r]
    for fig in figs:
        check(fig["keystrokes"] == 20 and fig["answered"] == 20, "every keystroke answered", fig)
        check(fig["cachedShare"] > 0.5, "most prompt tokens from the cache", fig)
        check(0 <= fig["correct"] <= fig["keystrokes"], "correct counted per keystroke", fig)
        check(fig["latencyMs"]["p50"] > 0, "latency measured", fig)
        print("replay p50 %.1f ms, cache share %.2f, correct %d" % (
            fig["latencyMs"]["p50"], fig["cachedShare"], fig["correct"]))


def case_load_failure(binary, model):
    """A missing or corrupt model, with modelFallback off: a showMessage error
    naming the file, empty answers, a clean exit. With it on (the default,
    once left completion silent): a warning naming the file and the embedded model, which is
    loaded instead and answers."""
    with tempfile.NamedTemporaryFile("wb", suffix=".gguf", delete=False) as f:
        f.write(b"GGUF\x03\x00\x00\x00" + b"\xff" * 64)
        corrupt = f.name
    try:
        c = start(binary, corrupt)
        try:
            m = c.wait_for(lambda m: m.get("method") == "window/showMessage",
                           timeout=LOAD_TIMEOUT)
            msg = m["params"]["message"]
            check(m["params"]["type"] == 2 and corrupt in msg and "embedded model" in msg
                  and "modelFallback" in msg, "a warning: the file, the fallback, the setting", m)
            end = c.wait_for(lambda m: m.get("method") == "$/progress"
                             and m["params"]["value"].get("kind") == "end",
                             timeout=LOAD_TIMEOUT)
            check("embedded model" in end["params"]["value"].get("message", ""),
                  "the progress ends naming the embedded model", end)
            s = c.request("infill/stats")["result"]
            check(s["kvType"] != "none" and s["kvPages"] > 0, "a model is loaded", s)
            check(c.shutdown_exit() == 0, "exit 0")
        finally:
            c.kill()
        for path in ["/nonexistent/model.gguf", corrupt]:
            c = start(binary, path, {"modelFallback": False})
            try:
                m = c.wait_for(lambda m: m.get("method") == "window/showMessage"
                               and m["params"]["type"] == 1, timeout=LOAD_TIMEOUT)
                check(path in m["params"]["message"], "the message names the file", m)
                open_doc(c, PY)
                items = inline(c, 9, 8)
                check(items == [], "empty answers without a model", items)
                r = c.request("textDocument/completion", {
                    "textDocument": {"uri": URI}, "position": {"line": 9, "character": 8}})
                check(r["result"]["items"] == [], "completion too", r)
                check(c.shutdown_exit() == 0, "exit 0")
            finally:
                c.kill()
    finally:
        os.unlink(corrupt)


def case_before_ready(binary, model):
    """Requests that arrive while the model loads get an empty answer, not a
    hang; after the load they get the model's."""
    c = start(binary, model, {"completion.candidates": 1, "completion.maxTokens": 4})
    try:
        open_doc(c, PY, lang="plaintext")
        r = c.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 9, "character": 8},
            "context": {"triggerKind": 1}}, timeout=10)
        check("result" in r, "answered while loading (maybe already loaded)", r)
        wait_loaded(c)
        inline(c, 9, 8)
        check(stats(c)["promptTokens"] > 0, "the model ran after the load")
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_fast_path(binary, model):
    """Typing the first character of the suggestion on screen is answered
    with the rest of it, without the model."""
    c = start(binary, model, {"completion.candidates": 1, "completion.temperature": 0,
                              "completion.maxTokens": 12})
    try:
        wait_loaded(c)
        open_doc(c, PY, lang="plaintext")
        items = []
        line, ch = 11, 4
        for line, ch in [(11, 4), (9, 8), (5, 4), (4, 17)]:
            items = [it for it in inline(c, line, ch) if len(it["insertText"]) >= 2
                     and it["insertText"][0] != "\n" and it["insertText"][1:].strip()]
            if items:
                break
        if not items:
            print("SKIP: the random model offered nothing to type ahead into")
            sys.exit(77)
        top = items[0]["insertText"]
        s0 = stats(c)
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"range": {"start": {"line": line, "character": ch},
                                          "end": {"line": line, "character": ch}},
                                "text": top[0]}]})
        rest = inline(c, line, ch + 1)
        s1 = stats(c)
        check(rest and rest[0]["insertText"] == top[1:], "the rest of the suggestion", top, rest)
        check(rest[0]["range"]["start"] == {"line": line, "character": ch + 1},
              "at the new cursor", rest)
        check(s1["fastPath"] == s0["fastPath"] + 1, "counted as fast path", s0, s1)
        check(s1["promptTokens"] == s0["promptTokens"], "no model run", s0, s1)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


# ---- live candidates: the answer the deadline cut decodes on --------------

LIVE_BASE = {"completion.candidates": 1, "completion.temperature": 0,
             "completion.maxTokens": 24, "completion.multiline": "always"}
# between slices of 4 decode steps: the tiny model would otherwise end a
# live candidate before a test can act on it
LIVE_ENV = {"INFILL_TEST_LIVE_DELAY_MS": "150"}


def full_answers(binary, model, text, places, opts):
    """The answers without a deadline at each place: what a live candidate
    must grow to."""
    c = start(binary, model, opts)
    try:
        wait_loaded(c)
        open_doc(c, text, lang="plaintext")
        out = {}
        for line, ch in places:
            items = inline(c, line, ch)
            out[(line, ch)] = items[0]["insertText"] if items else ""
        check(c.shutdown_exit() == 0, "exit 0")
        return out
    finally:
        c.kill()


def live_start(binary, model, text=PY, places=((9, 8), (11, 4), (5, 4), (16, 9)), extra=None,
               ok=lambda short, want: True):
    """A server with a 1 ms deadline (so answers are cut) and slow live
    slices, the document open; the first place whose cut answer is a proper
    prefix of the full one (and passes ok). Returns (client, line, ch, short,
    want); exits 77 when the random model gives no such place."""
    opts = dict(LIVE_BASE, **(extra or {}))
    full = full_answers(binary, model, text, places, opts)
    opts["completion.deadlineMs"] = 1
    # the decode deadline is what these cases are about, not the prefill budget
    opts["completion.prefillBudget"] = False
    c = start(binary, model, opts, env=LIVE_ENV)
    try:
        wait_loaded(c)
        open_doc(c, text, lang="plaintext")
        for (line, ch), want in full.items():
            items = inline(c, line, ch)
            if not items:
                continue
            short = items[0]["insertText"]
            if len(want) > len(short) and want.startswith(short) and ok(short, want):
                return c, line, ch, short, want
        c.kill()
    except BaseException:
        c.kill()
        raise
    print("SKIP: no answer was cut short here", full)
    sys.exit(77)


def grew_at(c, line, ch, version=1):
    """The infill/suggestionGrew notification for the answer at (line, ch)."""
    m = c.wait_for(lambda m: m.get("method") == "infill/suggestionGrew"
                   and m["params"]["position"] == {"line": line, "character": ch}, timeout=30)
    check(m["params"]["uri"] == URI and m["params"]["version"] == version,
          "names the document and its version", m)
    return m


def top_text(items):
    return items[0]["insertText"] if items else ""


def case_live_reask_grows(binary, model):
    """Survival: asked again at the same place, the answer comes at once from
    the live candidate (no model run), longer than the first one; decoding
    goes on to the natural end (maxTokens here), which is exactly the
    answer of a run without a deadline, and then stops."""
    c, line, ch, short, want = live_start(binary, model)
    try:
        grew_at(c, line, ch)
        s0 = stats(c)
        again = top_text(inline(c, line, ch))
        s1 = stats(c)
        check(s1["fastPath"] == s0["fastPath"] + 1 and s1["liveAnswers"] == s0["liveAnswers"] + 1,
              "answered from the live candidate", s0, s1)
        check(s1["promptTokens"] == s0["promptTokens"], "no model run", s0, s1)
        check(len(again) > len(short) and want.startswith(again), "longer, same text",
              short, again, want)
        seen = []
        check(poll(lambda: seen.append(top_text(inline(c, line, ch))) or seen[-1] == want, 60),
              "grew to the full answer", want, seen[-1:], stats(c))
        end = stats(c)
        time.sleep(0.6)
        check(stats(c)["liveTokens"] == end["liveTokens"], "no decoding after its end", end)
        check(end["liveTokens"] > 0 and end["firstAnswers"] >= 1
              and end["firstAnswerChars"] >= len(short) and 0 < end["liveShare"] <= 1,
              "the live figures", end)
        print("first %r, then %r, at the end %r" % (short, again, want))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_live_typed_along(binary, model):
    """Survival: typing the suggestion's first character is answered at once
    with the rest of it, and the candidate goes on growing after: asked
    again there, the rest grows to the full answer's rest."""
    c, line, ch, short, want = live_start(
        binary, model, ok=lambda short, want: want[0] not in "\n\r" and want[1:].strip())
    try:
        grew_at(c, line, ch)  # what is remembered has grown past the first character
        edit(c, 2, line, ch, want[0])
        s0 = stats(c)
        rest = top_text(inline(c, line, ch + 1))
        s1 = stats(c)
        check(s1["liveAnswers"] == s0["liveAnswers"] + 1 and s1["promptTokens"] == s0["promptTokens"],
              "answered from the live candidate", s0, s1)
        check(rest and want[1:].startswith(rest), "the rest of it", short, rest, want)
        check(poll(lambda: top_text(inline(c, line, ch + 1)) == want[1:], 60),
              "it grew on after the key", want, stats(c))
        check(stats(c)["liveTokens"] > 0, "decoded after the answer", stats(c))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


# A document whose start lies outside a small context: the edit there leaves
# the candidates' context alone.
FILLER = "".join("value_%d = %d\n" % (i, i) for i in range(120))


def case_live_edit_elsewhere(binary, model):
    """Survival: a didChange far above the cursor, outside the candidates'
    context (context.prefixTokens 48), leaves the live candidate: asked again
    at the moved place, the answer comes at once, and it grows on to the
    full answer."""
    n = FILLER.count("\n")
    places = [(n + 9, 8), (n + 11, 4), (n + 5, 4), (n + 16, 9)]
    extra = {"context.prefixTokens": 48, "context.suffixTokens": 16,
             "context.extraTokens": 0}
    c, line, ch, short, want = live_start(binary, model, FILLER + PY, places, extra)
    try:
        edit(c, 2, 0, 0, "# edited far above\n")
        s0 = stats(c)
        again = top_text(inline(c, line + 1, ch))
        s1 = stats(c)
        check(s1["liveAnswers"] == s0["liveAnswers"] + 1 and s1["promptTokens"] == s0["promptTokens"],
              "answered from the live candidate after the edit", s0, s1)
        check(len(again) >= len(short) and want.startswith(again), "the same text", short, again)
        check(poll(lambda: top_text(inline(c, line + 1, ch)) == want, 60),
              "it grew on after the edit", want, stats(c))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_live_diverging_edit_ends(binary, model):
    """End rule: a character typed that is not the suggestion's next one ends
    the live candidate at once: what it decoded after the answer counts as
    thrown away, it decodes no more, and the next request runs the model."""
    c, line, ch, short, want = live_start(binary, model,
                                          ok=lambda short, want: short[0] not in "\n\r")
    try:
        grew_at(c, line, ch)  # it has decoded something after the answer
        other = "Q" if short[0] != "Q" else "Z"
        edit(c, 2, line, ch, other)
        check(poll(lambda: stats(c)["liveThrownTokens"] > 0, 10),
              "its tokens were thrown away", stats(c))
        s0 = stats(c)
        time.sleep(0.8)
        s1 = stats(c)
        check(s1["liveTokens"] == s0["liveTokens"], "no decoding after the edit", s0, s1)
        inline(c, line, ch + 1)
        s2 = stats(c)
        check(s2["promptTokens"] > s1["promptTokens"] and s2["liveAnswers"] == s1["liveAnswers"],
              "the model answered", s1, s2)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_live_new_place_ends(binary, model):
    """End rule: a request at another place of the document (one the fast
    path cannot answer) ends the live candidate there (a return to the place
    is answered from its past answer); closing the document ends the next
    one."""
    c, line, ch, short, want = live_start(binary, model)
    try:
        grew_at(c, line, ch)
        s0 = stats(c)
        inline(c, 0, 0)
        s1 = stats(c)
        check(s1["promptTokens"] > s0["promptTokens"], "the model answered there", s0, s1)
        check(s1["liveThrownTokens"] > s0["liveThrownTokens"], "the old one ended", s0, s1)
        # back at the first place: answered at once from its past answer
        # (a result cache by context), with no model run
        items = inline(c, line, ch)
        s1b = stats(c)
        check(items and s1b["pastAnswers"] == s1["pastAnswers"] + 1
              and s1b["promptTokens"] == s1["promptTokens"], "a past answer", items, s1, s1b)
        # an edit in its context (the line above): a new cut answer, then the
        # document closed
        edit(c, 2, line - 1, 0, "#")
        c.notifications.clear()
        inline(c, line, ch)
        grew_at(c, line, ch, version=2)
        s2 = stats(c)
        c.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
        check(poll(lambda: stats(c)["liveThrownTokens"] > s2["liveThrownTokens"], 10),
              "closing ended it", s2, stats(c))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def edit(c, version, line, ch, text):
    c.notify("textDocument/didChange", {
        "textDocument": {"uri": URI, "version": version},
        "contentChanges": [{"range": {"start": {"line": line, "character": ch},
                                      "end": {"line": line, "character": ch}},
                            "text": text}]})


def auto_request(c, line, ch):
    """An automatic inline request (it waits the debounce); its id."""
    return c.request_async("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": line, "character": ch},
        "context": {"triggerKind": 2}})


def case_pace_deadline(binary, model):
    """While keys come in a burst, each request is due before the next key
    (completion.deadlineFollowsTyping): once three gaps are known the pace
    sets the deadline (paceDeadlines counts them) and the answers still
    come; a request after a pause keeps the whole deadline, and with the
    setting off none is set."""
    c = start(binary, model, {"completion.candidates": 1, "completion.maxTokens": 4,
                              "completion.deadlineMs": 5000})

    def burst(version, col, keys):
        ids = []
        for k in range(keys):
            edit(c, version + k, 11, col + k, "x")
            ids.append(auto_request(c, 11, col + k + 1))
            time.sleep(0.1)
        for i in ids:
            r = c.response(i, timeout=60)
            check("result" in r, "every key of the burst answered", r)
        return version + keys, col + keys

    try:
        wait_loaded(c)
        open_doc(c, PY)
        v, col = burst(2, 4, 6)
        s1 = stats(c)
        # gaps 1 and 2 make no pace yet; keys 4, 5 and 6 have one
        check(s1["paceDeadlines"] == 3, "the burst's later keys are due at its pace", s1)
        time.sleep(1.2)
        v, col = burst(v, col, 1)
        s2 = stats(c)
        check(s2["paceDeadlines"] == s1["paceDeadlines"], "a key after a pause is not", s1, s2)
        c.notify("workspace/didChangeConfiguration",
                 {"settings": {"infill": {"completion.deadlineFollowsTyping": False}}})
        v, col = burst(v, col, 6)
        s3 = stats(c)
        check(s3["paceDeadlines"] == s2["paceDeadlines"], "none with the setting off", s2, s3)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_stats_truthful(binary, model):
    """infill/stats counts only the prompt tokens the engine processed:
    requests superseded during their debounce count as neverStarted and add
    no prompt tokens; a prompt after a one-character edit is not a cold
    request, one without the prefix cache is."""
    c = start(binary, model, {"completion.candidates": 1, "completion.maxTokens": 4,
                              "completion.debounceMs": 1500})
    try:
        wait_loaded(c)
        open_doc(c, PY)
        s0 = stats(c)
        check(s0["neverStarted"] == 0 and s0["coldRequests"] == 0, "fresh counters", s0)
        # three keystrokes in a burst: the first two are superseded while
        # they wait out the debounce; only the third reaches the engine
        ids = []
        for k, ch in enumerate("ret"):
            edit(c, 2 + k, 11, 4 + k, ch)
            ids.append(auto_request(c, 11, 5 + k))
        for i in ids[:2]:
            r = c.response(i, timeout=30)
            check(r.get("result") == {"items": []}, "superseded: answered empty", r)
        r = c.response(ids[2], timeout=60)
        check("result" in r, "the last one answered", r)
        s1 = stats(c)
        check(s1["neverStarted"] - s0["neverStarted"] == 2, "two never started", s0, s1)
        check(s1["cancelled"] - s0["cancelled"] == 2, "and counted as cancelled", s0, s1)
        first = s1["promptTokens"] - s0["promptTokens"]
        # one prompt's worth: the superseded requests added nothing
        one = c.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 11, "character": 7},
            "context": {"triggerKind": 1}})
        check("result" in one, "asked again", one)
        s2 = stats(c)
        again = s2["promptTokens"] - s1["promptTokens"]
        check(first > 0 and abs(again - first) <= 2, "one prompt counted, not three",
              first, again)
        # a character off the suggestion shown, so the model runs again
        shown = [it["insertText"] for it in one["result"]["items"]]
        ch = next(x for x in "uvwxyz" if not any(t.startswith(x) for t in shown))
        edit(c, 5, 11, 7, ch)
        inline(c, 11, 8)
        s3 = stats(c)
        check(s3["coldRequests"] == s2["coldRequests"], "a one-character edit is not cold",
              s2, s3)
        check(s3["cachedPromptTokens"] > s2["cachedPromptTokens"], "served from the cache", s3)
        # without the cache every prompt is prefilled whole: cold
        c.notify("workspace/didChangeConfiguration",
                 {"settings": {"infill": {"cache.enabled": False}}})
        inline(c, 11, 8)
        s4 = stats(c)
        check(s4["coldRequests"] == s3["coldRequests"] + 1, "a prompt with no cache is cold",
              s3, s4)
        check(s4["cachedPromptTokens"] == s3["cachedPromptTokens"], "nothing cached", s3, s4)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_fast_path_no_debounce(binary, model):
    """Typing along the suggestion on screen is answered at once, without
    waiting completion.debounceMs (here 4 s); a keystroke off the suggestion
    still waits it."""
    c = start(binary, model, {"completion.candidates": 1, "completion.temperature": 0,
                              "completion.maxTokens": 12, "completion.debounceMs": 4000})
    try:
        wait_loaded(c)
        open_doc(c, PY, lang="plaintext")
        items = []
        line, ch = 11, 4
        for line, ch in [(11, 4), (9, 8), (5, 4), (4, 17)]:
            # invoked: no debounce for the first answer
            items = [it for it in inline(c, line, ch) if len(it["insertText"]) >= 3
                     and it["insertText"][0] != "\n"
                     and it["insertText"][1:].strip()]
            if items:
                break
        if not items:
            print("SKIP: the random model offered nothing to type ahead into")
            sys.exit(77)
        top = items[0]["insertText"]
        s0 = stats(c)
        edit(c, 2, line, ch, top[0])
        t0 = time.time()
        r = c.response(auto_request(c, line, ch + 1), timeout=30)
        fast_s = time.time() - t0
        s1 = stats(c)
        check(s1["fastPath"] == s0["fastPath"] + 1, "answered by the fast path", s0, s1)
        check(r["result"]["items"] and r["result"]["items"][0]["insertText"] == top[1:],
              "the rest of the suggestion", top, r)
        # the debounce is 4 s: an answer in under 2 s did not wait it,
        # however busy the machine
        check(fast_s < 2.0, "answered without the debounce", fast_s)
        # a character that is not the suggestion's next one waits it
        off = "Q" if top[1] != "Q" else "Z"
        edit(c, 3, line, ch + 1, off)
        t0 = time.time()
        r = c.response(auto_request(c, line, ch + 2), timeout=60)
        slow_s = time.time() - t0
        check("result" in r, "answered", r)
        check(slow_s >= 3.9, "a keystroke off the suggestion waits the debounce", slow_s)
        print("along the suggestion %.3f s, off it %.3f s" % (fast_s, slow_s))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_background_prefill(binary, model):
    """A file just opened has its head prefilled while the engine is idle
    (backgroundPrefillTokens); a request the deadline leaves no time for is
    answered from the short context (shortContexts), and the full context
    is then prefilled in the background, so the same request finds it all
    in the cache."""
    text = PY * 20  # ~4.6 KB: its end lies past the head that didOpen warms
    c = start(binary, model, {"completion.candidates": 1, "completion.maxTokens": 4,
                              "completion.deadlineMs": 1})
    try:
        wait_loaded(c)
        open_doc(c, text)
        check(poll(lambda: stats(c).get("backgroundPrefillTokens", 0) > 0, 60),
              "the opened file's head prefilled in the background", stats(c))

        def settled():
            a = stats(c)["backgroundPrefillTokens"]
            time.sleep(0.5)
            return stats(c)["backgroundPrefillTokens"] == a
        poll(settled, 60)
        s0 = stats(c)
        last = len(text.split("\n")) - 7  # "    x = add(1, 2)" of the last copy
        inline(c, last, 4)  # 1 ms: no time to prefill anything uncached
        s1 = stats(c)
        check(s1["shortContexts"] == s0["shortContexts"] + 1,
              "answered from the short context", s0, s1)
        check(poll(lambda: stats(c)["backgroundPrefillTokens"]
                   > s1["backgroundPrefillTokens"], 60),
              "the full context prefilled after the short answer", s1, stats(c))
        poll(settled, 60)
        # the same request without a deadline: its full prompt is cached
        c.notify("workspace/didChangeConfiguration",
                 {"settings": {"infill": {"completion.deadlineMs": 0}}})
        s2 = stats(c)
        inline(c, last, 4)
        s3 = stats(c)
        prompt = s3["promptTokens"] - s2["promptTokens"]
        cached = s3["cachedPromptTokens"] - s2["cachedPromptTokens"]
        check(prompt > 50 and cached >= prompt - 1,
              "the full prompt came from the background prefill", s2, s3)
        print("background %d tokens; full prompt %d tokens, %d cached"
              % (s3["backgroundPrefillTokens"], prompt, cached))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()



def case_project_context(binary, model):
    """Context from the rest of the project: the workspace index
    is built after initialized and follows workspace/didChangeWatchedFiles
    and didSave; a definition from an imported file goes into the prompt
    (projectTokens); another open document's lines are scored as
    candidates (projectLines) and may be shown; context.project false
    turns it all off."""
    root = tempfile.mkdtemp()
    lib = os.path.join(root, "lib.py")
    with open(lib, "w") as f:
        f.write("def unrelated():\n    pass\n")
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("skipped/\n")
    os.mkdir(os.path.join(root, "skipped"))
    with open(os.path.join(root, "skipped", "x.py"), "w") as f:
        f.write("def x(): pass\n")
    main_uri, other_uri = "file://%s/main.py" % root, "file://%s/other.py" % root
    main = ("from lib import fetch_page\n\n\ndef run(url):\n"
            "    page = fetch_page(url)\n    resp = session.get(")
    other = "def g(url):\n    resp = session.get(url, timeout=LIMIT)\n"
    c = start(binary, model, {"completion.candidates": 1, "completion.maxTokens": 16},
              root=root, args=["--log-level", "debug"],
              caps={"window": {"workDoneProgress": True},
                    "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}})
    try:
        reg = c.wait_for(lambda m: m.get("method") == "client/registerCapability")
        check(reg["params"]["registrations"][0]["method"] == "workspace/didChangeWatchedFiles",
              "asks the client to watch the workspace's files", reg)
        c.send({"jsonrpc": "2.0", "id": reg["id"], "result": None})
        wait_loaded(c)
        check(poll(lambda: "workspace index: 1 files" in c.log(), 30),
              "the index holds lib.py (main.py is not on disk, skipped/ is ignored)", c.log())
        check(stats(c)["indexFiles"] == 1, "indexFiles", stats(c))
        open_doc(c, other, uri=other_uri)
        open_doc(c, main, uri=main_uri)
        items = inline(c, 5, len("    resp = session.get("), uri=main_uri)
        s0 = stats(c)
        check(s0["projectLines"] >= 1, "the other document's line was scored", s0)
        check(any(i["insertText"].endswith("url, timeout=LIMIT)") for i in items),
              "and shown (its prior beats random weights)", items)
        check(s0["projectTokens"] > 0, "the other document's similar chunk in the prompt", s0)
        # lib.py gains the definition; the client says so
        with open(lib, "w") as f:
            f.write("def fetch_page(url, retries=3, *, timeout=None):\n    return url\n")
        c.notify("workspace/didChangeWatchedFiles",
                 {"changes": [{"uri": "file://" + lib, "type": 2}]})
        check(poll(lambda: "workspace index: 1 files after" in c.log(), 30),
              "the index read lib.py again", c.log())
        # a new line: chosen again, now with the signature
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": main_uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 5, "character": 4},
                                          "end": {"line": 5, "character": 4}},
                                "text": "x = 1\n    "}]})
        c.notify("textDocument/didClose", {"textDocument": {"uri": other_uri}})
        inline(c, 6, len("    resp = session.get("), uri=main_uri)
        s1 = stats(c)
        check(s1["projectTokens"] > s0["projectTokens"], "the definition in the prompt", s0, s1)
        # off: no project tokens at all
        c.notify("workspace/didChangeConfiguration",
                 {"settings": {"infill": {"context": {"project": False}}}})
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": main_uri, "version": 3},
            "contentChanges": [{"range": {"start": {"line": 6, "character": 4},
                                          "end": {"line": 6, "character": 4}},
                                "text": "y = 2\n    "}]})
        inline(c, 7, len("    resp = session.get("), uri=main_uri)
        s2 = stats(c)
        check(s2["projectTokens"] == s1["projectTokens"] and
              s2["projectLines"] == s1["projectLines"], "context.project false: none", s1, s2)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()

def case_lines_of_the_same_language(binary, model):
    """Other documents' lines are offered only from files of the document's
    language or its family: with inventory.py, ring.c and cart.js open,
    `ret` in a .js is offered cart.js's `return` and never the Python
    one, in the inline list and in the menu."""
    root = tempfile.mkdtemp()
    files = {
        "inventory.py": ("python", "class Item:\n    def total(self):\n"
                         "        return self.price * self.quantity\n"),
        "ring.c": ("c", "int ring_len(struct ring *r)\n{\n    return r->head - r->tail;\n}\n"),
        "cart.js": ("javascript", "function total(cart) {\n  return cart.items.length;\n}\n"),
    }
    main = "function price(cart) {\n  ret"
    main_uri = "file://%s/price.js" % root
    # maxTokens: a given line longer than it is not scored
    c = start(binary, model, {"completion.candidates": 3, "completion.maxTokens": 32},
              root=root)
    try:
        wait_loaded(c)
        for name, (lang, text) in files.items():
            open_doc(c, text, uri="file://%s/%s" % (root, name), lang=lang)
        open_doc(c, main, uri=main_uri, lang="javascript")
        items = inline(c, 1, len("  ret"), uri=main_uri)
        texts = [i["insertText"] for i in items]
        check(any(t.endswith("urn cart.items.length;") for t in texts),
              "the JavaScript line is offered (its prior beats random weights)", texts)
        check(not any("self." in t or "r->" in t for t in texts),
              "no line of another language inline", texts)
        r = c.request("textDocument/completion", {
            "textDocument": {"uri": main_uri}, "position": {"line": 1, "character": 5}})
        menu = r.get("result") or []
        menu = menu.get("items", []) if isinstance(menu, dict) else menu
        words = [json.dumps(m) for m in menu]
        check(not any("self.price" in w or "r->head" in w for w in words),
              "nor in the menu", words)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_project_context_unopened_files(binary, model):
    """Files that are not open reach the server's prompts: the
    workspace index keeps the texts it read off the loop, so a C file's
    sibling that includes the same headers (ctx_index_related) and the
    header it includes give their chunks and their lines as candidates
    (projectLines) with no editor tab open on them; a change on disk
    announced by the client is what the next choice sees."""
    root = tempfile.mkdtemp()
    os.mkdir(os.path.join(root, "ops"))

    def put(rel, text):
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    put("ops/ctx.h", "struct ops_ctx { int n; unsigned flags; };\n#define OPS_SKIP_COMPUTE 1\n")
    put("ops/util.h", "int util_clamp(int v);\n")
    put("ops/mul.c", "#include \"ctx.h\"\n#include \"util.h\"\n\n"
        "int ops_mul(struct ops_ctx *octx) {\n"
        "    if (octx->flags & OPS_SKIP_COMPUTE) {\n"
        "        return 0;\n    }\n"
        "    return util_clamp(octx->n * 2);\n}\n")
    add_uri = "file://%s/ops/add.c" % root
    add = ("#include \"ctx.h\"\n#include \"util.h\"\n\n"
           "int ops_add(struct ops_ctx *octx) {\n    if (")
    c = start(binary, model, {"completion.candidates": 1, "completion.maxTokens": 16},
              root=root, args=["--log-level", "debug"])
    try:
        wait_loaded(c)
        check(poll(lambda: "workspace index: 3 files" in c.log(), 30),
              "the index holds the headers and the sibling", c.log())
        open_doc(c, add, uri=add_uri, lang="c")
        inline(c, 4, len("    if ("), uri=add_uri)
        s0 = stats(c)
        check(s0["openDocuments"] == 1, "no other tab is open", s0)
        check(s0["projectLines"] >= 1, "the unopened sibling's lines were scored", s0)
        check(s0["projectTokens"] > 0, "project context in the prompt", s0)
        check(poll(lambda: "similar ops/mul.c" in c.log(), 5),
              "the unopened sibling's chunk chosen, from the index's copy", c.log())
        # the sibling changes on disk; the client says so; a new line
        # chooses again from the text the index read again
        put("ops/mul.c", "#include \"ctx.h\"\n#include \"util.h\"\n\n"
            "int ops_mul(struct ops_ctx *octx) {\n"
            "    int mul_changed_on_disk = octx->n;\n"
            "    return util_clamp(mul_changed_on_disk * 2);\n}\n")
        c.notify("workspace/didChangeWatchedFiles",
                 {"changes": [{"uri": "file://%s/ops/mul.c" % root, "type": 2}]})
        check(poll(lambda: "workspace index: 3 files after" in c.log(), 30),
              "the index read ops/mul.c again", c.log())
        # counted before the edit: the server may start on the new line
        # as soon as the edit arrives
        n_logged = c.log().count("similar ops/mul.c")
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": add_uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 4, "character": 4},
                                          "end": {"line": 4, "character": 8}},
                                "text": "int x = octx->n;\n    int y = octx->"}]})
        inline(c, 5, len("    int y = octx->"), uri=add_uri)
        check(poll(lambda: c.log().count("similar ops/mul.c") > n_logged, 5),
              "chosen again on the new line", c.log())
        check(stats(c)["projectLines"] >= s0["projectLines"], "lines scored", stats(c))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def feedback_of(c, lang="plaintext"):
    """infill/stats "feedback" for lang, summed over shapes."""
    f = stats(c).get("feedback", {}).get(lang, {})
    out = {}
    for shape in f.values():
        for k, v in shape.items():
            out[k] = out.get(k, 0) + v
    return out


def spots_with_items(c, spots):
    """The spots (line, ch) of PY where the model offers an item."""
    return [(sp, items) for sp, items in ((sp, inline(c, *sp)) for sp in spots) if items]


def case_feedback(binary, model):
    """Feedback: the reports of the clients (Copilot's names) reach
    infill/stats: an item shown, another shown instead (the first
    dismissed), accepted with its command, partly accepted; unknown or
    stale items are ignored without an error."""
    c = start(binary, model, {"completion.candidates": 2, "completion.maxTokens": 8})
    try:
        init = c.request("infill/settings")  # (alive)
        check("result" in init, "settings", init)
        wait_loaded(c)
        open_doc(c, PY, lang="plaintext")  # (random text passes no parser)
        found = spots_with_items(c, [(11, 4), (9, 8), (5, 4), (4, 17), (12, 0)])
        if len(found) < 2:
            print("SKIP: the random model offered items at fewer than two places")
            sys.exit(77)
        (_, a), (_, b) = found[0], found[1]
        for it in a + b:
            cmd = it.get("command", {})
            check(cmd.get("command") == "infill.didAcceptCompletion" and
                  len(cmd.get("arguments", [])) == 1, "each item names itself", it)
        check(not any(feedback_of(c).values()), "nothing counted before a report", stats(c))
        c.notify("textDocument/didShowCompletion", {"item": a[0]})
        c.notify("textDocument/didShowCompletion", {"item": a[0]})  # again: once
        c.notify("textDocument/didShowCompletion", {"item": b[0]})  # a replaces b
        r = c.request("workspace/executeCommand", a[0]["command"])  # stale: closed
        check(r.get("result", "x") is None, "a stale accept is answered, not an error", r)
        r = c.request("workspace/executeCommand", b[0]["command"])
        check(r.get("result", "x") is None, "accept answered null", r)
        f = feedback_of(c)
        check(f.get("shown") == 2 and f.get("dismissed") == 1 and f.get("accepted") == 1,
              "shown twice, one dismissed, one accepted", f)
        check(f.get("acceptedChars") == len(b[0]["insertText"]), "the characters accepted",
              f, b[0])
        # a partial accept of a fresh item (never reported shown: implied)
        more = inline(c, *found[0][0])
        if more:
            c.notify("textDocument/didPartiallyAcceptCompletion",
                     {"item": more[0], "acceptedLength": 1})
            f = feedback_of(c)
            check(f.get("partlyAccepted") == 1 and f.get("shown") == 3 and
                  f.get("acceptedChars") == len(b[0]["insertText"]) + 1, "partly accepted", f)
        # unknown items, malformed reports, an unknown command
        c.notify("textDocument/didShowCompletion", {"item": {"insertText": "x"}})
        c.notify("textDocument/didShowCompletion", {"item": {"command": {"arguments": ["999999"]}}})
        c.notify("textDocument/didPartiallyAcceptCompletion", {"item": a[0]})
        r = c.request("workspace/executeCommand", {"command": "rm -rf", "arguments": []})
        check(r.get("error", {}).get("code") == -32602, "an unknown command is refused", r)
        check(feedback_of(c).get("shown") == (3 if more else 2), "nothing else counted",
              feedback_of(c))
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def case_min_confidence_auto(binary, model):
    """Feedback: with completion.minConfidence "auto", once 30 suggestions of
    a language were shown and none accepted, the floor rises over their
    confidence and the same suggestions are hidden (but one in ten)."""
    c = start(binary, model, {"completion.candidates": 1, "completion.temperature": 0,
                              "completion.maxTokens": 6, "completion.minConfidence": "auto"})
    try:
        wait_loaded(c)
        s = c.request("infill/settings", {"languageId": "plaintext"})["result"]
        check(s.get("completion.minConfidence") == "auto", "auto in effect", s)
        open_doc(c, PY, lang="plaintext")  # (random text passes no parser)
        found = spots_with_items(c, [(11, 4), (9, 8), (5, 4), (4, 17), (12, 0), (10, 12),
                                     (6, 0)])
        # two places whose suggestions have one shape (each shape learns apart)
        by_shape = {}
        for sp, items in found:
            by_shape.setdefault("\n" in items[0]["insertText"].rstrip("\n"), []).append(sp)
        spots = max(by_shape.values(), key=len) if by_shape else []
        if len(spots) < 2:
            print("SKIP: the random model offered items of one shape at fewer than two places")
            sys.exit(77)
        # each shown in turn (alternating places: no fast path), none
        # accepted: the 31st shown makes the 30th dismissed
        for i in range(31):
            items = inline(c, *spots[i % 2])
            check(items, "still shown while learning", i, stats(c).get("feedback"))
            c.notify("textDocument/didShowCompletion", {"item": items[0]})
        f = stats(c)["feedback"]["plaintext"]
        shape = max(f, key=lambda k: f[k]["shown"])
        check(f[shape]["minConfidence"] > 0, "a floor was learned", f)
        empty = sum(1 for i in range(10) if not inline(c, *spots[i % 2]))
        f2 = stats(c)["feedback"]["plaintext"]
        check(empty >= 8 and f2[shape]["hidden"] >= 8, "hidden under the floor, but explored",
              empty, f2)
        check(c.shutdown_exit() == 0, "exit 0")
    finally:
        c.kill()


def utf16_len(t):
    return len(t.encode("utf-16-le")) // 2


def accepted(text, line, ch, insert):
    """text with insert at (line, ch) (ch in ASCII there), and the position
    after it (UTF-16 columns)."""
    lines = text.split("\n")
    at = sum(len(x) + 1 for x in lines[:line]) + ch
    parts = insert.split("\n")
    end = (line, ch + utf16_len(insert)) if len(parts) == 1 else \
        (line + len(parts) - 1, utf16_len(parts[-1]))
    return text[:at] + insert + text[at:], end


def case_ahead_after_accept(binary, model):
    """As if accepted: after an answer and a pause the answer that would
    follow it once accepted is decoded ahead; the editor accepting it (the
    edit) and asking at its end is answered at once from it (aheadAnswers,
    no model run), with the text the model gives there asked afresh (no
    prefix cache: both prompts computed whole, in the same chunks, so the
    random model's near-ties fall alike)."""
    c = start(binary, model, dict(LIVE_BASE, **{"cache.enabled": False}))
    try:
        wait_loaded(c)
        for k, (line, ch) in enumerate([(9, 8), (11, 4), (5, 4), (16, 9), (10, 4)]):
            uri = "file:///ahead%d.py" % k
            open_doc(c, PY, uri=uri, lang="plaintext")
            before = stats(c)["aheadTokens"]
            items = inline(c, line, ch, uri=uri)
            if not items:
                continue
            top = items[0]["insertText"]
            poll(lambda: stats(c)["aheadTokens"] > before, 10)
            time.sleep(0.3)  # the answer reaches the loop after the figures
            text, (l2, c2) = accepted(PY, line, ch, top)
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"range": items[0]["range"], "text": top}]})
            s0 = stats(c)
            got = inline(c, l2, c2, uri=uri)
            s1 = stats(c)
            # afresh: the document reopened with that text (its memory gone)
            c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            open_doc(c, text, uri=uri, lang="plaintext")
            fresh = inline(c, l2, c2, uri=uri)
            if not fresh:
                continue  # nothing to decode ahead there
            check(s1["aheadAnswers"] == s0["aheadAnswers"] + 1
                  and s1["promptTokens"] == s0["promptTokens"], "answered from ahead", s0, s1)
            check(top_text(got) == top_text(fresh), "the model's own answer", got, fresh)
            check(c.shutdown_exit() == 0, "exit 0")
            return
        print("SKIP: the random model offered no answer after an accepted one")
        sys.exit(77)
    finally:
        c.kill()


def case_ahead_after_typing_it(binary, model):
    """As if accepted, typed: the user types the answer shown key by key
    (no Tab) right after it came. Each key's didChange hints the next
    request there, but the memory covers that place (typed along, then to
    the end), so the hints are dropped and do not stop the answer decoded
    ahead as if it were accepted (a hint cleared it before it began); asked
    at the end, the answer comes from it (aheadAnswers, no model run)."""
    c = start(binary, model, LIVE_BASE)
    try:
        wait_loaded(c)
        ran = False
        for k, (line, ch) in enumerate([(9, 8), (11, 4), (5, 4), (16, 9), (10, 4)]):
            uri = "file:///typed%d.py" % k
            open_doc(c, PY, uri=uri, lang="plaintext")
            before = stats(c)
            items = inline(c, line, ch, uri=uri)
            top = top_text(items)
            if not top.strip() or "\n" in top:
                continue
            col = ch
            for i, key in enumerate(top):  # faster than the ahead's pause
                c.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": 2 + i},
                    "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                                  "end": {"line": line, "character": col}},
                                        "text": key}]})
                col += utf16_len(key)
            if not poll(lambda: stats(c)["aheadTokens"] > before["aheadTokens"], 10):
                continue  # an empty answer there, or the work was stopped
            ran = True
            time.sleep(0.3)  # the answer reaches the loop after the figures
            s0 = stats(c)
            got = inline(c, line, col, uri=uri)
            s1 = stats(c)
            if not got and s1["aheadAnswers"] == s0["aheadAnswers"]:
                continue  # nothing decoded there as if accepted
            check(s1["aheadAnswers"] == s0["aheadAnswers"] + 1
                  and s1["promptTokens"] == s0["promptTokens"], "answered from ahead", s0, s1)
            check(c.shutdown_exit() == 0, "exit 0")
            return
        check(ran, "the answer as if accepted was decoded while the user typed it", stats(c))
        print("SKIP: the random model decoded nothing as if accepted")
        sys.exit(77)
    finally:
        c.kill()


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def main():
    if sys.argv[1:2] == ["--list"]:
        print("\n".join(CASES))
        return 0
    binary, testdata, name = sys.argv[1], sys.argv[2], sys.argv[3]
    model = os.path.join(testdata, "models", "tiny-dsc-f32.gguf")
    if not os.path.exists(model):
        print("SKIP: %s is missing" % model)
        return 77
    try:
        CASES[name](binary, model)
    except Failed as e:
        print("FAIL:", e)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
