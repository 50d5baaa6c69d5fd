"""The remote backend end to end over LSP against a fake server
on the loopback (fakeserver.py): answers come back as items, validated; each
fault (server down, slow past remote.timeoutMs, HTTP 500, invalid JSON, a
disconnect mid-stream, a wrong key, TLS with an unknown CA) is one clear
window/showMessage however many keystrokes hit it, and the daemon goes on
answering; completion.deadlineMs closes a slow server's stream and answers
with what came by then; a superseded request's stream is closed at once; a project file
cannot point the daemon at a server; `infill pull` resumes and checks.
The hostile_* cases meet servers that flood, or break HTTP itself
(rawserver.py: trickle, silence, lying lengths and chunk sizes, bytes that
are not UTF-8, invalid events, a close mid-event, HTML error pages): each
request answered in time, the next one answered, RSS bounded, one clean
message per kind of failure.

usage: remote_test.py INFILL CASE  (or --list)
"""
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lsp"))
sys.path.insert(0, HERE)
from lspclient import Client  # noqa: E402
from fakeserver import ANSWER, FakeServer, free_port  # noqa: E402

URI = "file:///tmp/infill-remote/a.py"
PY = "def add(a, b):\n    \n    return total\n"
LINE, CH = 1, 4  # the blank line in add()


class Failed(Exception):
    pass


def check(cond, what, *context):
    if not cond:
        raise Failed(what + "".join("\n  " + str(c)[:3000] for c in context))


def start(binary, settings, env=None):
    c = Client(binary, args=["--user-config", ""], env=env)
    # no deadline unless a case sets one: a loaded test machine must not cut
    # the fake server's answers (the deadline's own cases set it)
    opts = {"backend": "remote", "remote.api": "openai", "fim.template": "qwen",
            "completion.debounceMs": 0, "completion.candidates": 2,
            "completion.deadlineMs": 0, "remote.timeoutMs": 10000}
    opts.update(settings)
    c.initialize(capabilities={"window": {"workDoneProgress": True}}, init_options=opts)
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "python", "version": 1, "text": PY}})
    # until the backend is up, requests are answered empty at once
    deadline = time.time() + 30
    while c.request("infill/stats")["result"]["backend"] != "remote":
        check(time.time() < deadline, "the remote backend came up", c.log())
        time.sleep(0.02)
    return c


def inline_async(c, line=LINE, ch=CH):
    return c.request_async("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": line, "character": ch},
        "context": {"triggerKind": 1}})


def inline(c, line=LINE, ch=CH, timeout=30):
    r = c.response(inline_async(c, line, ch), timeout)
    check("result" in r, "inline completion answered", r)
    return r["result"]["items"]


def stats(c):
    return c.request("infill/stats")["result"]


def messages(c, type_=None):
    return [m["params"]["message"] for m in c.notifications
            if m.get("method") == "window/showMessage"
            and (type_ is None or m["params"]["type"] == type_)]


# ---- answers --------------------------------------------------------------

def answered(binary, api):
    srv = FakeServer("ok")
    c = start(binary, {"remote.url": srv.url, "remote.api": api})
    try:
        items = inline(c)
        texts = [i["insertText"] for i in items]
        check(any(t.startswith(ANSWER) for t in texts), "the server's text is shown", texts)
        s = stats(c)
        check(s["backend"] == "remote", "stats name the backend", s)
        check(s["remoteRequests"] >= 1 and s["remoteFailures"] == 0, "one call, no failure", s)
        check(s["remoteLatencyMs"]["samples"] >= 1 and s["daemonLatencyMs"]["samples"] >= 1,
              "latency split recorded", s)
        check(0 < s["remoteShare"] <= 1, "remote share", s)
        for key in ("requests", "latencyMs", "promptTokens", "kvType"):  # the old keys stay
            check(key in s, "stats keep " + key, s)
        path, body, headers = srv.requests[0]
        return path, body, srv
    finally:
        c.kill()
        srv.stop()


def case_openai(binary):
    """/v1/completions: greedy call (n 1, temperature 0) and the samples
    (n = candidates - 1), streamed, with log-probabilities asked for; the
    text prompt written with fim.template (no tokenizer)."""
    path, body, srv = answered(binary, "openai")
    check(path == "/v1/completions", "the path", path)
    bodies = [b for _, b, _ in srv.requests]
    greedy = [b for b in bodies if b["temperature"] == 0]
    check(greedy and greedy[0]["n"] == 1, "a greedy call", bodies)
    check(any(b["n"] == 1 and b["temperature"] > 0 for b in bodies), "a sampled call", bodies)
    check(body["stream"] is True and body["logprobs"] == 1, "streamed, with logprobs", body)
    check(body["prompt"].startswith("<|fim_prefix|>def add(a, b):")
          and "<|fim_suffix|>" in body["prompt"] and body["prompt"].endswith("<|fim_middle|>"),
          "the qwen FIM prompt as text", body["prompt"])


def case_sampling_refused(binary):
    """A server that takes n = 1 only (llama-server's /v1/completions refuses
    n > 1 with HTTP 400): the greedy answer still comes, one warning says
    why there is one candidate, and later requests send the greedy call
    alone."""
    srv = FakeServer("n1only")
    c = start(binary, {"remote.url": srv.url, "completion.candidates": 3})
    try:
        for k in range(3):
            texts = [i["insertText"] for i in inline(c)]
            check(any(t.startswith(ANSWER) for t in texts), "the greedy answer is shown", k,
                  texts, c.log())
        time.sleep(0.2)
        warn = [m for m in messages(c, 2) if "sampled candidates" in m]
        check(len(warn) == 1, "one warning", messages(c), c.log())
        check(not messages(c, 1), "no error shown", messages(c))
        sampled = [b for _, b, _ in srv.requests if b.get("n", 1) > 1]
        check(len(sampled) == 1, "the sampling call is not sent again",
              [b.get("n") for _, b, _ in srv.requests])
    finally:
        c.kill()
        srv.stop()


def case_llama_infill(binary):
    """/infill: prefix and suffix for the server's own template."""
    path, body, _ = answered(binary, "llama-infill")
    check(path == "/infill", "the path", path)
    check(body["input_prefix"].startswith("def add(a, b):") and
          body["input_suffix"].lstrip().startswith("return total"), "prefix and suffix", body)


def case_ollama(binary):
    """/api/generate with suffix: one greedy call (no n in that API)."""
    path, body, srv = answered(binary, "ollama")
    check(path == "/api/generate", "the path", path)
    check(len(srv.requests) == 1 and body["options"]["temperature"] == 0, "one greedy call",
          srv.requests)
    check("suffix" in body, "suffix sent", body)


# ---- faults ---------------------------------------------------------------

def fault(binary, settings, expect, srv=None, env=None, keystrokes=3, secret=None):
    """Each keystroke's request fails; one message names the fault; the
    daemon answers on (empty items, infill/stats)."""
    c = start(binary, settings, env=env)
    try:
        for k in range(keystrokes):
            items = inline(c)
            check(items == [], "a failed request answers empty", items)
        c.drain(0.3)
        errs = [m for m in messages(c, 1) if "remote backend" in m]
        check(len(errs) == 1, "exactly one message for %d failing keystrokes" % keystrokes,
              messages(c))
        check(expect in errs[0], "the message says " + repr(expect), errs[0])
        s = stats(c)
        check(s["remoteFailures"] >= keystrokes, "failures counted", s)
        if secret:
            check(secret not in c.log() and secret not in json.dumps(c.notifications),
                  "the key is never logged or shown")
        check(c.shutdown_exit() == 0, "clean exit after the faults")
        return errs[0]
    finally:
        c.kill()
        if srv:
            srv.stop()


def case_fault_down(binary):
    """Nothing listens: refused, retried with backoff, then one message."""
    port = free_port()
    msg = fault(binary, {"remote.url": "http://127.0.0.1:%d" % port}, "cannot connect")
    check("3 attempts" in msg, "retried twice before giving up", msg)


def case_fault_credentials_in_url(binary):
    """Credentials written into remote.url never appear in a message or the
    log; the message still names the host."""
    port = free_port()
    fault(binary, {"remote.url": "http://someone:s3cr3t-pass@127.0.0.1:%d" % port},
          "127.0.0.1:%d" % port, secret="s3cr3t-pass")


def rss_mb(c):
    try:
        with open("/proc/%d/status" % c.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


class ForkedServer:
    """A FakeServer in a child process: a flood written from this process
    would hold its GIL and make the client's own timings lie."""

    def __init__(self, mode, delay):
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        self.pipe, child = ctx.Pipe()
        self.proc = ctx.Process(target=ForkedServer._serve, args=(mode, delay, child),
                                daemon=True)
        self.proc.start()
        self.url = self.pipe.recv()

    @staticmethod
    def _serve(mode, delay, pipe):
        srv = FakeServer(mode, delay=delay)
        pipe.send(srv.url)
        pipe.recv()  # until stop()
        srv.stop()

    def stop(self):
        try:
            self.pipe.send("stop")
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


def hostile(binary, mode, delay, deadline_ms):
    """A server that ignores max_tokens: the request is answered within the
    deadline + 1 s with bounded candidates, infill/stats answers at once
    while the reply streams, the next request works, the peak RSS stays
    under 300 MB."""
    srv = ForkedServer(mode, delay)
    c = start(binary, {"remote.url": srv.url, "completion.deadlineMs": deadline_ms,
                       "completion.maxTokens": 64})
    try:
        t0 = time.time()
        rid = c.request_async("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": LINE, "character": CH},
            "context": {"triggerKind": 1}})
        time.sleep(0.1)
        t1 = time.time()
        s = c.request("infill/stats")["result"]
        check(time.time() - t1 < 0.5, "infill/stats answered while the reply streams",
              time.time() - t1)
        limit = deadline_ms / 1000 + 1.0 if deadline_ms else 5.0
        r = c.response(rid, timeout=limit + 5)
        took = time.time() - t0
        check(took < limit, "answered within the deadline + 1 s (5 s without one)", took)
        items = (r.get("result") or {}).get("items", [])
        for it in items:
            check(len(it["insertText"]) <= 64 * 16, "a candidate is bounded",
                  len(it["insertText"]))
        check(rss_mb(c) < 300, "peak RSS under 300 MB", rss_mb(c))
        s = c.request("infill/stats")["result"]
        check(s["requests"] >= 1, "the daemon answers on", s)
        check(c.shutdown_exit() == 0, "clean exit")
    finally:
        c.kill()
        srv.stop()


def case_hostile_flood(binary):
    hostile(binary, "flood", 3.0, 400)


def case_hostile_flood_events_deadline(binary):
    """~50 MB as 1 KB stream events (10 s at ~6 MB/s), max_tokens 64, the
    deadline 200 ms: answered by the deadline + 1 s, reading stops once the
    choices are full (generatedTokens counts a few events, not the ~90,000
    of the whole body), and infill/stats is answered while it streams."""
    srv = ForkedServer("flood", 10.0)
    c = start(binary, {"remote.url": srv.url, "completion.deadlineMs": 200,
                       "completion.maxTokens": 64})
    try:
        t0 = time.time()
        rid = inline_async(c)
        worst = 0.0
        for _ in range(5):
            time.sleep(0.03)
            t1 = time.time()
            c.request("infill/stats")
            worst = max(worst, time.time() - t1)
        r = c.response(rid, timeout=15)
        took = time.time() - t0
        check(took < 1.2, "answered within the deadline + 1 s", took)
        check(worst < 0.5, "infill/stats answered while the reply streams", worst)
        check("result" in r, "answered", r)
        s = stats(c)
        check(s["generatedTokens"] <= 2 * 64, "reading stopped once the choices were full", s)
        check(rss_mb(c) < 300, "peak RSS under 300 MB", rss_mb(c))
        check(c.shutdown_exit() == 0, "clean exit")
    finally:
        c.kill()
        srv.stop()


def case_hostile_huge_choice(binary):
    hostile(binary, "huge", 50, 400)


def case_hostile_huge_choice_no_deadline(binary):
    hostile(binary, "huge", 50, 0)


# ---- a server that breaks HTTP itself (rawserver.py) ----------------------

HOSTILE_KEY = "sk-hostile-5e5e5e"
URL_PASS = "url-pass-77"


def clean_message(m):
    """A message a user can act on: no markup dumped, no control bytes,
    no credentials, bounded."""
    return ("<html" not in m.lower() and "</" not in m and "<!doctype" not in m.lower()
            and "\ufffd" not in m and not any(ord(ch) < 0x20 for ch in m)
            and HOSTILE_KEY not in m and URL_PASS not in m and len(m) < 800)


def misbehaving(binary, mode, deadline_ms=600, timeout_ms=10000, keystrokes=3, expect=None,
                shown=None, modes=None, within=None):
    """Each keystroke meets the misbehaving server (modes: one per keystroke,
    in turn): it is answered within completion.deadlineMs + 1 s (with the
    deadline off, remote.timeoutMs + 1 s), whatever is shown is valid text,
    the user sees at most one message per kind of failure (expect: the one
    that must come, and what it says), clean of markup and credentials;
    once the server behaves, the next request is answered; the peak RSS
    stays under 300 MB. Returns the items of each keystroke."""
    from rawserver import RawServer, ANSWER as RAW_ANSWER
    srv = RawServer(modes[0] if modes else mode)
    url = srv.url.replace("http://", "http://someone:%s@" % URL_PASS)
    c = start(binary, {"remote.url": url, "remote.apiKeyEnv": "INFILL_TEST_KEY",
                       "completion.deadlineMs": deadline_ms, "remote.timeoutMs": timeout_ms,
                       "completion.maxTokens": 64},
              env={"INFILL_TEST_KEY": HOSTILE_KEY})
    try:
        limit = within or (deadline_ms if deadline_ms else timeout_ms) / 1000 + 1.0
        seen = []
        for k in range(keystrokes):
            if modes:
                srv.mode = modes[k % len(modes)]
            t0 = time.monotonic()
            items = inline(c, timeout=limit + 20)
            took = time.monotonic() - t0
            check(took < limit, "%s: keystroke %d answered within %.1f s: %.3f s"
                  % (srv.mode, k, limit, took), c.log()[-3000:])
            for it in items:
                t = it["insertText"]
                check("\ufffd" not in t and len(t.encode()) <= 64 * 16,
                      "a shown candidate is bounded text", repr(t))
            seen.append([it["insertText"] for it in items])
        if shown is not None:
            check(any(shown in t for ts in seen for t in ts), "shown: " + repr(shown), seen,
                  messages(c), c.log()[-3000:])
        srv.mode = "ok"
        texts = [i["insertText"] for i in inline(c, timeout=limit + 20)]
        check(any(t.startswith(RAW_ANSWER) for t in texts),
              "the next request, to a server that behaves, is answered", texts, messages(c),
              c.log()[-3000:])
        c.drain(0.3)
        errs = [m for m in messages(c) if "remote backend" in m]
        for m in messages(c):
            check(clean_message(m), "a clean message", repr(m))
        check(not [m for m in messages(c) if "sampled candidates" in m],
              "no warning that sampling was refused: nothing was answered", messages(c))
        kinds = {}
        for m in errs:
            kinds.setdefault(failure_kind(m), []).append(m)
        for kind, ms in kinds.items():
            check(len(ms) == 1, "at most one message for the kind " + kind, errs)
        if expect:
            check(len(errs) >= 1 and all(e in " ".join(errs) for e in expect),
                  "a message says %r" % (expect,), errs, c.log()[-3000:])
        check(rss_mb(c) < 300, "peak RSS under 300 MB", rss_mb(c))
        check(c.shutdown_exit() == 0, "clean exit")
        return seen
    finally:
        c.kill()
        srv.stop()


def failure_kind(m):
    for key, kind in (("remote.timeoutMs", "timeout"), ("completion.deadlineMs", "late"),
                      ("refused the key", "auth"), ("wants a key", "auth"),
                      ("answered HTTP", "http"), ("not the openai API", "protocol"),
                      ("HTML page", "protocol"), ("in the middle", "disconnect"),
                      ("cannot connect", "connect"), ("sampled candidates", "sampling")):
        if key in m:
            return kind
    return m


def case_hostile_trickle(binary):
    """Status line, headers and events one byte every 50-200 ms, never
    ending: answered at the deadline, one message that the server is too
    slow for it."""
    misbehaving(binary, "trickle", expect=["completion.deadlineMs"])


def case_hostile_trickle_no_deadline(binary):
    misbehaving(binary, "trickle", deadline_ms=0, timeout_ms=1500,
                expect=["remote.timeoutMs (1500 ms)"])


def case_hostile_trickle_body_no_deadline(binary):
    misbehaving(binary, "trickle-body", deadline_ms=0, timeout_ms=1500,
                expect=["remote.timeoutMs (1500 ms)"])


def case_hostile_silent(binary):
    """Accepts the connection and never answers: remote.timeoutMs with the
    deadline off."""
    misbehaving(binary, "silent", deadline_ms=0, timeout_ms=1200, keystrokes=2,
                expect=["remote.timeoutMs (1200 ms): nothing came back"])


def case_hostile_silent_deadline(binary):
    misbehaving(binary, "silent", expect=["completion.deadlineMs"])


def case_hostile_length_long(binary):
    """Content-Length past the body, then the connection closes: the JSON
    that came is a whole answer, and it is used."""
    misbehaving(binary, "length-long", deadline_ms=0, shown="total = a + b")


def case_hostile_length_long_hang(binary):
    """Content-Length past the body and the connection held open: the
    stream said [DONE], so the answer is used (200 ms later) without
    waiting for bytes that never come (remote.timeoutMs, 10 s)."""
    misbehaving(binary, "length-long-hang", deadline_ms=0, timeout_ms=10000, within=1.5,
                shown="total = a + b")


def case_hostile_length_short(binary):
    """Content-Length short of the body on a kept-alive connection: the
    rest is never read as the next reply."""
    misbehaving(binary, "length-short", expect=["in the middle"])


def case_hostile_chunk_long(binary):
    """A chunk size past its data, then a close: the events that came said
    [DONE], and are used."""
    misbehaving(binary, "chunk-long", deadline_ms=0, shown="total = a + b")


def case_hostile_chunk_short(binary):
    """A chunk size short of its data: the rest is not a chunk size."""
    misbehaving(binary, "chunk-short", expect=["in the middle"])


def case_hostile_chunk_huge(binary):
    """A chunk size past any buffer, the stream going on: bounded by the
    candidate's byte cap, the deadline off."""
    misbehaving(binary, "chunk-huge", deadline_ms=0, timeout_ms=3000)


def case_hostile_bad_utf8(binary):
    """Bytes that are not UTF-8 inside a choice's text: the candidate is
    cut where the text stops being text; nothing broken reaches the editor."""
    seen = misbehaving(binary, "bad-utf8", deadline_ms=0, shown="total")
    check(all(t == "total" for ts in seen for t in ts), "cut at the first bad byte", seen)


def case_hostile_bad_json(binary):
    """Invalid events among good ones: one message, each request answered."""
    misbehaving(binary, "bad-json", deadline_ms=0, expect=["not the openai API's: not JSON"])


def case_hostile_close_mid_event(binary):
    misbehaving(binary, "close-mid-event", expect=["closed the connection in the middle"])


def case_hostile_close_mid_event_plain(binary):
    """The connection closes inside an event of a body delimited by the
    close: a disconnect, not a wrong remote.api."""
    misbehaving(binary, "close-mid-event-plain", deadline_ms=0,
                expect=["closed the connection in the middle"])


def case_hostile_close_mid_json(binary):
    misbehaving(binary, "close-mid-json", deadline_ms=0,
                expect=["closed the connection in the middle"])


def case_hostile_html_502(binary):
    """A proxy's HTML page for a 502: the status and the page's title, not
    the page."""
    misbehaving(binary, "html-502", expect=["HTTP 502", "Bad Gateway"])


def case_hostile_html_404(binary):
    """Every call answered by an HTML 404 (a web server at remote.url): one
    error naming the page, not a warning that sampling was refused (the
    greedy call was refused too)."""
    misbehaving(binary, "html-404", expect=["HTTP 404: 404 Not Found"])


def case_hostile_html_401(binary):
    """An HTML 401 page that echoes the refused key: the key is named by
    its variable, never shown."""
    misbehaving(binary, "html-401", expect=["refused the key (HTTP 401: 401 Authorization "
                                            "Required)", "INFILL_TEST_KEY"])


def case_hostile_key_echoed(binary):
    """A refusal whose words quote the key (a plain-text first line, an
    OpenAI-shaped JSON error): shown without it."""
    misbehaving(binary, "text-401", expect=["refused the key (HTTP 401: invalid credentials"])
    misbehaving(binary, "json-403", expect=["refused the key (HTTP 403: Incorrect API key"])


def case_hostile_html_200(binary):
    """An HTML page with status 200 (a captive portal, a web UI at that
    URL): said so, with the page's title."""
    misbehaving(binary, "html-200", deadline_ms=0,
                expect=["HTML page", "Sign in - Guest Wi-Fi", "remote.url"])


def case_hostile_redirect(binary):
    """A redirect (not followed): where it points, without its password."""
    misbehaving(binary, "redirect", deadline_ms=0,
                       expect=["HTTP 301, a redirect to https://someone:***@elsewhere.invalid",
                               "set remote.url"])


def case_hostile_not_http(binary):
    """Another protocol on that port: said so, not 'cannot connect'."""
    misbehaving(binary, "not-http", deadline_ms=0, expect=["did not answer in HTTP"])


def case_hostile_html_500_endless(binary):
    """An error page that never ends: the status is the failure, with the
    deadline (not 'nothing came') and without it (not a timeout)."""
    misbehaving(binary, "html-500-endless", expect=["HTTP 500", "Internal Server Error"])
    misbehaving(binary, "html-500-endless", deadline_ms=0, timeout_ms=5000,
                expect=["HTTP 500", "Internal Server Error"])


def case_hostile_silent_and_stalled(binary):
    """Silence and a stream stalled after its first words, in turn, with
    the deadline: the words are shown, and the one 'nothing within the
    deadline' message is not shown again after each (a cut answer is not a
    server that works again)."""
    misbehaving(binary, None, keystrokes=6, modes=["silent", "stall"], shown="total",
                expect=["completion.deadlineMs"])


def case_hostile_mixed_kinds(binary):
    """A server whose failures alternate between kinds: one message per
    kind, not one per request."""
    misbehaving(binary, None, deadline_ms=0, keystrokes=6,
                modes=["html-502", "bad-json", "close-mid-json"],
                expect=["HTTP 502", "not JSON", "in the middle"])


def case_fault_slow(binary):
    srv = FakeServer("slow", delay=3.0)
    fault(binary, {"remote.url": srv.url, "remote.timeoutMs": 300},
          "did not answer within remote.timeoutMs (300 ms)", srv, keystrokes=2)


def case_fault_http500(binary):
    srv = FakeServer("http500")
    fault(binary, {"remote.url": srv.url}, "answered HTTP 500: boom: the GPU fell over", srv)


def case_fault_invalid_json(binary):
    srv = FakeServer("badjson")
    fault(binary, {"remote.url": srv.url}, "not the openai API's: not JSON", srv)


def case_fault_disconnect(binary):
    srv = FakeServer("disconnect")
    fault(binary, {"remote.url": srv.url}, "closed the connection in the middle of an answer",
          srv)


def case_fault_wrong_key(binary):
    srv = FakeServer("key", key="right-key")
    msg = fault(binary, {"remote.url": srv.url, "remote.apiKeyEnv": "INFILL_TEST_KEY"},
                "refused the key (HTTP 401", srv, env={"INFILL_TEST_KEY": "wrong-key-123"},
                secret="wrong-key-123")
    check("INFILL_TEST_KEY" in msg, "names the variable", msg)


def make_cert(d):
    key, crt = os.path.join(d, "key.pem"), os.path.join(d, "cert.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", crt, "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True)
    check(r.returncode == 0, "openssl made a certificate", r.stderr)
    return crt, key


def case_fault_tls_unknown_ca(binary):
    """A TLS server whose CA the system does not know: refused (TLS is
    always verified), one message pointing at remote.caFile; with
    remote.caFile set to that CA the same server answers."""
    if not shutil.which("openssl"):
        print("SKIP: no openssl to make a certificate")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as d:
        crt, key = make_cert(d)
        srv = FakeServer("ok", certfile=crt, keyfile=key)
        fault(binary, {"remote.url": srv.url}, "remote.caFile", None, keystrokes=2)
        c = start(binary, {"remote.url": srv.url, "remote.caFile": crt})
        try:
            texts = [i["insertText"] for i in inline(c)]
            check(any(t.startswith(ANSWER) for t in texts), "answered over TLS with caFile",
                  texts, messages(c))
        finally:
            c.kill()
            srv.stop()


def case_recovers_and_reports_again(binary):
    """A failure is shown once; after an answer comes through, a new
    failure is shown again."""
    srv = FakeServer("http500")
    c = start(binary, {"remote.url": srv.url})
    try:
        inline(c), inline(c)
        srv.mode = "ok"
        items = inline(c)
        check(items != [], "answers once the server is back", items, messages(c), c.log())
        srv.mode = "http500"
        inline(c)
        c.drain(0.3)
        errs = [m for m in messages(c, 1) if "remote backend" in m]
        check(len(errs) == 2, "shown again after a recovery", errs)
    finally:
        c.kill()
        srv.stop()


# ---- the deadline (completion.deadlineMs) ---------------------------------

def case_deadline_cuts_stream(binary):
    """A server still streaming at completion.deadlineMs: the request is
    answered at the deadline with what had streamed (the editor is not held
    until the server ends, 5 s later), the stream is closed then, no error
    is shown, and stats count the cut."""
    srv = FakeServer("stream", delay=5.0)
    c = start(binary, {"remote.url": srv.url, "completion.candidates": 1,
                       "completion.deadlineMs": 600})
    try:
        t0 = time.monotonic()
        items = inline(c, timeout=10)
        took = time.monotonic() - t0
        check(took < 2.0, "answered near the deadline (600 ms), not at the stream's end (5 s): "
              "%.3f s" % took)
        texts = [i["insertText"] for i in items]
        check(texts and texts[0].startswith("x"), "what streamed by the deadline is shown", texts,
              c.log())
        t1 = time.monotonic()
        while not srv.closed_early and time.monotonic() - t1 < 3:
            time.sleep(0.01)
        check(srv.closed_early, "the server saw the stream closed")
        check(srv.closed_early[0] - t0 < 2.5, "closed at the deadline, not at the end",
              srv.closed_early[0] - t0)
        c.drain(0.2)
        check(not [m for m in messages(c, 1) if "remote backend" in m], "no error shown",
              messages(c))
        s = stats(c)
        check(s["remoteDeadlineCuts"] == 1, "the cut counted", s)
        check(s["remoteFailures"] == 0, "not a failure", s)
        # the next request with a fast answer is not cut
        srv.mode = "ok"
        texts = [i["insertText"] for i in inline(c, timeout=10)]
        check(any(t.startswith(ANSWER) for t in texts), "a fast answer comes whole", texts)
        check(stats(c)["remoteDeadlineCuts"] == 1, "and is not counted", stats(c))
    finally:
        c.kill()
        srv.stop()


def case_deadline_nothing_streamed(binary):
    """A server that sends nothing before completion.deadlineMs: each
    keystroke is answered empty at the deadline (not at remote.timeoutMs,
    10 s), one message says the server is too slow for the deadline, and the
    daemon goes on."""
    srv = FakeServer("slow", delay=4.0)
    c = start(binary, {"remote.url": srv.url, "completion.deadlineMs": 400})
    try:
        for _ in range(3):
            t0 = time.monotonic()
            items = inline(c, timeout=10)
            took = time.monotonic() - t0
            check(items == [], "answered empty", items)
            check(took < 2.0, "answered near the deadline (400 ms): %.3f s" % took)
        c.drain(0.3)
        errs = [m for m in messages(c, 1) if "remote backend" in m]
        check(len(errs) == 1, "one message for 3 keystrokes", messages(c))
        check("completion.deadlineMs (400 ms" in errs[0], "it names the deadline", errs[0])
        s = stats(c)
        check(s["remoteDeadlineCuts"] == 3, "3 cuts counted", s)
        check(c.shutdown_exit() == 0, "clean exit")
    finally:
        c.kill()
        srv.stop()


# ---- cancellation ---------------------------------------------------------

def case_cancel_closes_stream(binary):
    """$/cancelRequest and a superseding request close the stream: the
    server sees the client hang up well before the answer would end."""
    srv = FakeServer("stream", delay=5.0)
    c = start(binary, {"remote.url": srv.url, "completion.candidates": 1})
    try:
        rid = inline_async(c)
        t0 = time.monotonic()
        while not srv.requests and time.monotonic() - t0 < 5:
            time.sleep(0.01)
        check(srv.requests, "the request reached the server")
        time.sleep(0.2)  # streaming now
        t_cancel = time.monotonic()
        c.notify("$/cancelRequest", {"id": rid})
        r = c.response(rid, 10)
        check(r.get("error", {}).get("code") == -32800, "answered cancelled", r)
        t1 = time.monotonic()
        while not srv.closed_early and time.monotonic() - t1 < 3:
            time.sleep(0.01)
        check(srv.closed_early, "the server saw the stream closed")
        lag = srv.closed_early[0] - t_cancel
        check(lag < 0.5, "closed within half a second of the cancel (%.3f s)" % lag)
        # superseded by a newer keystroke: the same
        n0 = len(srv.closed_early)
        inline_async(c)
        time.sleep(0.3)
        newer = inline_async(c, LINE, CH)
        t_sup = time.monotonic()
        while len(srv.closed_early) == n0 and time.monotonic() - t_sup < 3:
            time.sleep(0.01)
        check(len(srv.closed_early) > n0, "a superseded request's stream is closed")
        c.notify("$/cancelRequest", {"id": newer})
        s = stats(c)
        check(s["cancelled"] >= 2, "cancellations counted", s)
    finally:
        c.kill()
        srv.stop()


def case_overhead(binary):
    """The daemon's own time per request (daemonLatencyMs) beside the
    server's round trip, against a server that answers at once: printed,
    and held loosely (the aim, 5 ms p50, is for an idle machine)."""
    srv = FakeServer("ok")
    c = start(binary, {"remote.url": srv.url})
    try:
        for _ in range(30):
            inline(c)
        s = stats(c)
        print(json.dumps({k: s[k] for k in ("remoteLatencyMs", "daemonLatencyMs", "remoteShare",
                                            "latencyMs")}))
        check(s["daemonLatencyMs"]["samples"] == 30, "30 samples", s)
        check(s["daemonLatencyMs"]["p50"] < 250, "the daemon's own p50 is small", s)
    finally:
        c.kill()
        srv.stop()


# ---- settings -------------------------------------------------------------

def case_project_cannot_point_at_a_server(binary):
    """A cloned repository's .infill.json cannot choose the remote backend,
    its URL, key variable or CA: each is ignored with a warning naming the
    key, and the code never reaches its server."""
    srv = FakeServer("ok")
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, ".infill.json"), "w") as f:
            json.dump({"backend": "remote", "remote": {"url": srv.url, "apiKeyEnv": "HOME",
                                                       "caFile": "/etc/passwd"}}, f)
        c = Client(binary, args=["--user-config", ""])
        try:
            c.initialize(root_uri="file://" + root,
                         init_options={"model": "none", "completion.debounceMs": 0})
            c.notify("textDocument/didOpen", {"textDocument": {
                "uri": URI, "languageId": "python", "version": 1, "text": PY}})
            inline(c)
            eff = c.request("infill/settings", {})["result"]
            check(eff.get("backend") != "remote", "backend not taken from the project", eff)
            check(not eff.get("remote.url"), "remote.url not taken from the project", eff)
            check(not eff.get("remote.apiKeyEnv") and not eff.get("remote.caFile"),
                  "key variable and CA not taken", eff)
            warn = " ".join(m["params"]["message"] for m in c.notifications
                            if m.get("method") in ("window/showMessage", "window/logMessage"))
            for key in ("remote.url", "remote.apiKeyEnv", "remote.caFile", "backend"):
                check(key in warn, "a warning names " + key, warn)
            check(not srv.requests, "nothing was sent to the project's server", srv.requests)
        finally:
            c.kill()
            srv.stop()


def case_no_url(binary):
    """backend remote without remote.url: one message saying what to set."""
    fault(binary, {}, "needs remote.url", keystrokes=2)


# ---- infill pull ----------------------------------------------------------

class RangeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        files = getattr(self.server, "files", {})  # path -> bytes (models by name)
        data = files.get(self.path, self.server.data)
        start = 0
        if not self.path.endswith("/m.gguf") and self.path not in files:
            body = b"<html><body>404 Not Found</body></html>"
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        rng = self.headers.get("Range")
        if self.server.cut_at and not rng:  # the first download breaks off
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:self.server.cut_at])
            self.wfile.flush()
            self.close_connection = True
            return
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
            self.server.ranges.append(start)
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1,
                                                                   len(data)))
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])


def case_pull(binary):
    """infill pull: a download cut off half-way is resumed with a Range
    request, checked against its sha256 and put in place; a wrong sha256
    removes it and fails."""
    data = os.urandom(300_000)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    httpd.data, httpd.cut_at, httpd.ranges = data, 100_000, []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/models/m.gguf" % httpd.server_address[1]
    sha = hashlib.sha256(data).hexdigest()
    try:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.gguf")
            r = subprocess.run([binary, "pull", url, "-o", out, "--sha256", sha],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode != 0, "the cut download fails", r.stderr)
            check("run the same command again to resume" in r.stderr, "says how to resume",
                  r.stderr)
            check(os.path.getsize(out + ".part") == 100_000 and not os.path.exists(out),
                  "the part is kept, nothing in place")
            httpd.cut_at = 0
            r = subprocess.run([binary, "pull", url, "-o", out, "--sha256", sha],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 0, "the resumed download succeeds", r.stderr)
            check(httpd.ranges == [100_000], "resumed with Range at the part's end",
                  httpd.ranges)
            check("MiB" in r.stderr and "sha256 checked" in r.stderr, "progress and check",
                  r.stderr)
            with open(out, "rb") as f:
                check(f.read() == data, "the file is whole")
            check(not os.path.exists(out + ".part"), "no part left")
            bad = os.path.join(d, "bad.gguf")
            r = subprocess.run([binary, "pull", url, "-o", bad, "--sha256", "0" * 64],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode != 0 and "sha256 mismatch" in r.stderr, "a wrong sha fails",
                  r.stderr)
            check(not os.path.exists(bad) and not os.path.exists(bad + ".part"),
                  "and keeps nothing")
            r = subprocess.run([binary, "pull", url, "-o", os.path.join(d, "x"), "--quiet"],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 0 and r.stderr == "", "--quiet is quiet", r.stderr)
            # a 404: one error line, no progress fragment, no .part left
            gone = os.path.join(d, "gone.gguf")
            r = subprocess.run([binary, "pull", url.replace("m.gguf", "nothing.gguf"), "-o",
                                gone], capture_output=True, text=True, timeout=60)
            check(r.returncode != 0 and "404" in r.stderr, "a 404 fails and says so", r.stderr)
            check(r.stderr.count("\n") == 1 and r.stderr.startswith("infill pull: "),
                  "one error line, nothing before it", repr(r.stderr))
            check(not os.path.exists(gone + ".part"), "no empty .part left", os.listdir(d))
    finally:
        httpd.shutdown()
        httpd.server_close()


# ---- models by name (infill pull NAME, infill models, "model": NAME) ------

DEFAULT_GGUF = os.path.join(HERE, "..", "..", "models", "infill-default.gguf")


def served(files):
    """A loopback server for `files` (path -> bytes), with resume support."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    httpd.data, httpd.cut_at, httpd.ranges, httpd.files = b"", 0, [], files
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, "http://127.0.0.1:%d" % httpd.server_address[1]


def test_catalog(d, base, entries):
    """An INFILL_CATALOG file (the documented override for tests and mirrors)."""
    path = os.path.join(d, "catalog.json")
    for e in entries:
        e["url"] = base + e["url"]
    with open(path, "w") as f:
        json.dump(entries, f)
    return path


def pull(binary, name, env, **kw):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([binary, "pull", name], capture_output=True, text=True, timeout=60,
                          env=e, **kw)


def case_pull_name_gguf_check(binary):
    """infill pull NAME of an entry without a published sha256: cut off, it
    resumes with a Range request; whole, its GGUF header is checked (and the
    check named); the wrong architecture, or bytes that are no GGUF, are
    refused and removed."""
    with open(DEFAULT_GGUF, "rb") as f:
        model = f.read()
    junk = os.urandom(200_000)
    httpd, base = served({"/m/ok.gguf": model, "/m/junk.gguf": junk})
    try:
        with tempfile.TemporaryDirectory() as d:
            cat = test_catalog(d, base, [
                {"model": "tiny-coder:1m", "quant": "Q8_0", "default": True, "family": "deepseek",
                 "arch": "llama", "url": "/m/ok.gguf", "size": "%d bytes" % len(model)},
                {"model": "tiny-coder:1m", "quant": "Q4_K_M", "family": "qwen", "arch": "qwen2",
                 "url": "/m/ok.gguf"},
                {"model": "junk:1m", "quant": "Q8_0", "default": True, "family": "deepseek",
                 "arch": "llama", "url": "/m/junk.gguf"}])
            env = {"INFILL_CATALOG": cat, "XDG_CACHE_HOME": os.path.join(d, "cache")}
            dest = os.path.join(d, "cache", "infill", "models", "tiny-coder-1m-q8_0.gguf")
            httpd.cut_at = 1_000_000
            r = pull(binary, "tiny-coder:1m", env)
            check(r.returncode != 0 and "run the same command again to resume" in r.stderr,
                  "the cut download fails, resumable", r.stderr)
            check(os.path.getsize(dest + ".part") == 1_000_000, "the part is kept")
            httpd.cut_at = 0
            r = pull(binary, "tiny-coder:1m", env)
            check(r.returncode == 0, "the resumed pull succeeds", r.stderr)
            check(httpd.ranges == [1_000_000], "resumed at the part's end", httpd.ranges)
            check("checked by its GGUF header: architecture llama" in r.stderr
                  and "no sha256" in r.stderr, "says which check it made", r.stderr)
            with open(dest, "rb") as f:
                check(f.read() == model, "the file is whole, in the cache folder")
            check('"model": "tiny-coder:1m"' in r.stderr, "says what to set", r.stderr)
            r = pull(binary, "tiny-coder:1m-q4_k_m", env)
            check(r.returncode != 0 and "is a llama model" in r.stderr
                  and "must be qwen2" in r.stderr, "another architecture is refused", r.stderr)
            bad = dest.replace("q8_0", "q4_k_m")
            check(not os.path.exists(bad) and not os.path.exists(bad + ".part"), "kept nothing")
            r = pull(binary, "junk:1m", env)
            check(r.returncode != 0 and "not a whole GGUF model" in r.stderr, "junk is refused",
                  r.stderr)
            check(not any(n.startswith("junk") for n in os.listdir(os.path.dirname(dest))),
                  "and removed", os.listdir(os.path.dirname(dest)))
    finally:
        httpd.shutdown()
        httpd.server_close()


def case_pull_name_sha256(binary):
    """The built-in catalog through INFILL_MODEL_MIRROR (its URLs' paths on
    the loopback): an entry with a published sha256 is checked against it, a
    mismatch keeps nothing; a name not in the catalog names near ones."""
    data = os.urandom(300_000)
    path = ("/itlwas/Qwen2.5-Coder-0.5B-Q4_K_M-GGUF/resolve/"
            "b63d6a5417edf4f574624b050a5c5642b052dcfb/qwen2.5-coder-0.5b-q4_k_m.gguf")
    httpd, base = served({path: data})
    try:
        with tempfile.TemporaryDirectory() as d:
            env = {"INFILL_MODEL_MIRROR": base, "XDG_CACHE_HOME": d}
            r = pull(binary, "qwen2.5-coder:0.5b", env)
            check(r.returncode != 0 and "sha256 mismatch" in r.stderr
                  and "72918254a3fa9f4c" in r.stderr, "checked against the published sha256",
                  r.stderr)
            check(not os.listdir(os.path.join(d, "infill", "models")), "nothing kept")
            check(len(httpd.files) == 1, "fetched from the mirror")
            r = pull(binary, "qwen2.5-coder:1.5b-q4", env)
            check(r.returncode == 2 and "not in the model catalog" in r.stderr
                  and "did you mean qwen2.5-coder:1.5b" in r.stderr, "near names", r.stderr)
            r = pull(binary, "starcodr2:3b", env)
            check("starcoder2:3b" in r.stderr, "a typo finds its model", r.stderr)
    finally:
        httpd.shutdown()
        httpd.server_close()


def case_pull_name_no_space(binary):
    """A file-size limit (RLIMIT_FSIZE, as a full disk) ends the pull with a
    message that says what happened and keeps the part to resume."""
    import resource
    data = os.urandom(400_000)
    httpd, base = served({"/m/big.gguf": data})
    try:
        with tempfile.TemporaryDirectory() as d:
            cat = test_catalog(d, base, [
                {"model": "big:1m", "quant": "Q8_0", "default": True, "family": "qwen",
                 "arch": "qwen2", "url": "/m/big.gguf"}])
            env = {"INFILL_CATALOG": cat, "XDG_CACHE_HOME": d}
            limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
            r = pull(binary, "big:1m", env, preexec_fn=limit)
            check(r.returncode == 1 and "file-size limit" in r.stderr
                  and "run the same command again to resume" in r.stderr, "says why", r.stderr)
            part = os.path.join(d, "infill", "models", "big-1m-q8_0.gguf.part")
            check(0 < os.path.getsize(part) <= 100_000, "the part stays for a resume")
    finally:
        httpd.shutdown()
        httpd.server_close()


def case_models_list(binary):
    """infill models: this machine's memory and CPU, a suggestion, every
    catalog entry with size, RAM, fit, check and what is downloaded."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "infill", "models"))
        open(os.path.join(d, "infill", "models", "starcoder2-3b-q4_k_m.gguf"), "wb").close()
        e = dict(os.environ, XDG_CACHE_HOME=d)
        e.pop("INFILL_CATALOG", None)
        r = subprocess.run([binary, "models"], capture_output=True, text=True, timeout=30, env=e)
        check(r.returncode == 0, "exit 0", r.stderr)
        out = r.stdout
        with open("/proc/meminfo") as f:
            gb = int(f.readline().split()[1]) * 1024 / 1e9
        check("This machine: %.1f GB memory" % gb in out, "memory from /proc/meminfo", out)
        check("Suggested:    qwen2.5-coder:" in out, "a suggestion", out)
        rows = {l.split()[0]: l.split() for l in out.splitlines() if l.startswith(
            ("qwen", "deepseek", "starcoder", "codegemma", "codellama"))}
        for name in ("qwen2.5-coder:1.5b", "deepseek-coder:1.3b", "deepseek-coder:6.7b",
                     "starcoder2:3b", "starcoder2:7b", "codegemma:2b", "codellama:7b",
                     "qwen2.5-coder:0.5b", "qwen2.5-coder:7b"):
            check(name in rows, "lists " + name, out)
        q = rows["qwen2.5-coder:1.5b"]
        check(q[1:5] == ["qwen", "Q4_K_M", "986", "MB"] and q[-2:] == ["yes", "sha256"] or
              q[-1] == "sha256", "size and check as published", q)
        check(rows["starcoder2:3b"][-1] == "yes", "a downloaded file is shown", rows["starcoder2:3b"])
        check(rows["starcoder2:3b-q8_0"][-1] == "gguf", "gguf-checked entries say so", out)


def case_model_by_name(binary):
    """"model": a catalog name: not downloaded, one message with the pull
    command and the embedded model answers (with its one note per session);
    downloaded, the cached file loads and no embedded note comes."""
    with tempfile.TemporaryDirectory() as d:
        cat = test_catalog(d, "http://127.0.0.1:9", [
            {"model": "tiny-coder:1m", "quant": "Q8_0", "default": True, "family": "deepseek",
             "arch": "llama", "url": "/m/ok.gguf"}])
        env = {"INFILL_CATALOG": cat, "XDG_CACHE_HOME": d}
        opts = {"model": "tiny-coder:1m", "completion.debounceMs": 0}
        c = Client(binary, args=["--user-config", ""], env=env)
        try:
            c.initialize(init_options=opts)
            c.notify("textDocument/didOpen", {"textDocument": {
                "uri": URI, "languageId": "python", "version": 1, "text": PY}})
            m = c.wait_for(lambda m: m.get("method") == "window/showMessage"
                           and "not downloaded" in m["params"]["message"], timeout=60)
            check("`infill pull tiny-coder:1m`" in m["params"]["message"], "names the command", m)
            deadline = time.time() + 60
            while stats(c)["backend"] == "none" and time.time() < deadline:
                time.sleep(0.05)
            inline(c)
            inline(c, 2, 4)
            c.wait_for(lambda m: m.get("method") == "window/showMessage"
                       and "embedded model" in m["params"]["message"], timeout=30)
            time.sleep(0.3)
            notes = [t for t in messages(c) if "small embedded model" in t]
            # the test catalog has no model the suggestion rule names: the
            # note points at the catalog instead
            check("`infill models`" in notes[0] and "`infill pull NAME`" in notes[0],
                  "says how to get a real model", notes)
            check(len(notes) == 1, "one embedded note per session", messages(c))
            check(len([t for t in messages(c) if "not downloaded" in t]) == 1, "said once",
                  messages(c))
        finally:
            c.kill()
        dest = os.path.join(d, "infill", "models")
        os.makedirs(dest, exist_ok=True)
        shutil.copy(DEFAULT_GGUF, os.path.join(dest, "tiny-coder-1m-q8_0.gguf"))
        c = Client(binary, args=["--user-config", "", "--log-file", os.path.join(d, "log")],
                   env=env)
        try:
            c.initialize(init_options=opts)
            c.notify("textDocument/didOpen", {"textDocument": {
                "uri": URI, "languageId": "python", "version": 1, "text": PY}})
            deadline = time.time() + 60
            while stats(c)["backend"] == "none" and time.time() < deadline:
                time.sleep(0.05)
            inline(c)
            time.sleep(0.3)
            check(not messages(c), "no message: the catalog model loaded", messages(c))
            with open(os.path.join(d, "log")) as f:
                log = f.read()
            check("model ready: " + os.path.join(dest, "tiny-coder-1m-q8_0.gguf") in log,
                  "the cached file is what loaded", log[-2000:])
        finally:
            c.kill()


# ---- what the server serves (fim.template and remote.tokenizer unset) ------

def probed(binary, serves, api="openai", settings=None):
    srv = FakeServer("ok")
    srv.serves = serves
    opts = {"remote.url": srv.url, "remote.api": api, "fim.template": "auto"}
    opts.update(settings or {})
    c = start(binary, opts)
    return srv, c


def case_probe_props(binary):
    """llama-server's /props names the model file: its family's template is
    used (the prompt shows it) and one message says what was chosen; asked
    once, not per request."""
    srv, c = probed(binary, {"/props": {"model_path": "/models/Qwen2.5-Coder-1.5B.Q8_0.gguf",
                                        "total_slots": 1}})
    try:
        items = inline(c)
        check(any(i["insertText"].startswith(ANSWER) for i in items), "answered", items)
        inline(c, 2, 4)
        prompts = [b["prompt"] for p, b, _ in srv.requests if p == "/v1/completions"]
        check(prompts and all(p.startswith("<|fim_prefix|>") and p.endswith("<|fim_middle|>")
                              for p in prompts), "the qwen template", prompts[:1])
        said = [m for m in messages(c, 3) if "fim.template" in m]
        check(len(said) == 1 and "Qwen2.5-Coder-1.5B.Q8_0.gguf" in said[0]
              and '"qwen"' in said[0] and "/props" in said[0], "one message says so",
              messages(c))
        check(srv.probes.count("/props") == 1, "asked once", srv.probes)
    finally:
        c.kill()
        srv.stop()


def case_probe_v1_models(binary):
    """No /props (vLLM, TGI): /v1/models' id picks the template."""
    srv, c = probed(binary, {"/v1/models": {"object": "list", "data": [
        {"id": "deepseek-ai/deepseek-coder-6.7b-base", "object": "model"}]}})
    try:
        inline(c)
        prompts = [b["prompt"] for p, b, _ in srv.requests if p == "/v1/completions"]
        check(prompts and prompts[0].startswith("<｜fim▁begin｜>"), "the deepseek template",
              prompts[:1])
        check(any("/v1/models" in m and '"deepseek"' in m for m in messages(c, 3)),
              "says what was chosen", messages(c))
    finally:
        c.kill()
        srv.stop()


def case_probe_ollama(binary):
    """An Ollama server through the openai API, its model pulled under a
    name of the user's own: /v1/models' id says nothing, /api/show's
    details.family picks the template. Ollama's own API asks nothing (the
    server applies its template)."""
    serves = {"/v1/models": {"data": [{"id": "my-coder:latest"}]},
              "/api/show": {"details": {"family": "starcoder2"},
                            "model_info": {"general.architecture": "starcoder2"}}}
    srv, c = probed(binary, serves)
    try:
        inline(c)
        prompts = [b["prompt"] for p, b, _ in srv.requests if p == "/v1/completions"]
        check(prompts and prompts[0].startswith("<fim_prefix>"), "the starcoder template",
              prompts[:1])
        check(any("/api/show" in m and '"starcoder"' in m for m in messages(c, 3)),
              "says where it came from", messages(c))
    finally:
        c.kill()
        srv.stop()
    srv, c = probed(binary, serves, api="ollama", settings={"remote.model": "my-coder"})
    try:
        inline(c)
        check("/api/show" not in srv.probes, "ollama's API asks nothing", srv.probes)
    finally:
        c.kill()
        srv.stop()


def case_probe_nothing_matches(binary):
    """A server that names a model of no known family, or names none: one
    message saying exactly which setting is missing and what was served."""
    srv, c = probed(binary, {"/v1/models": {"data": [{"id": "my-private-model"}]}})
    try:
        for _ in range(3):
            inline(c)
        errs = [m for m in messages(c) if "fim.template" in m]
        check(len(errs) == 1, "one message however many requests", messages(c))
        check("my-private-model" in errs[0] and "set fim.template" in errs[0]
              and "remote.tokenizer" in errs[0], "names what was served and what to set", errs)
        check(not [p for p, _, _ in srv.requests if p == "/v1/completions"], "nothing sent")
    finally:
        c.kill()
        srv.stop()


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}

if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        sys.exit(0)
    binary, case = sys.argv[1], sys.argv[2]
    try:
        CASES[case](binary)
    except Failed as e:
        print("FAIL:", e)
        sys.exit(1)
    print("ok")
