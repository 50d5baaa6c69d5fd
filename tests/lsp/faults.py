"""Fault injection ("never deaf, never killed, never hung"): each case breaks
a session on purpose, as a hostile client or a careless user would, and checks that the daemon answers,
says what happened, and ends when told to. One meson test per case.

usage: faults.py INFILL CASE   (or --list)
docs/reliability.md lists every case with what the daemon does.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

from lspclient import Client, frame

URI = "file:///tmp/infill-test/a.py"
HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "models", "infill-default.gguf")


def check(cond, what, *context):
    if not cond:
        raise AssertionError(what + "".join("\n  " + str(c) for c in context))


def open_doc(c, text, uri=URI, lang="python", version=1):
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": lang, "version": version, "text": text}})


def doc_text(c, uri=URI):
    r = c.request("infill/document", {"textDocument": {"uri": uri}})
    check("result" in r, "infill/document answered", r)
    return r["result"]


def inline(c, line, character, uri=URI, timeout=10.0):
    return c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 1}}, timeout=timeout)


def wait_model(c, want=True, timeout=30.0):
    """Until infill/stats shows a loaded model (want) or none (not want)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = c.request("infill/stats")["result"]
        if (s["backend"] != "none") == want:
            return s
        time.sleep(0.05)
    raise AssertionError("the model did not %s in time" % ("load" if want else "unload"))


def messages(c, pred=lambda m: True):
    c.drain(0.2)
    return [m["params"]["message"] for m in c.notifications
            if m.get("method") == "window/showMessage" and pred(m["params"]["message"])]


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"capabilities": {}}}).encode()
STATS = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "infill/stats"}).encode()


# ---- 1. framing ----------------------------------------------------------------

def case_frame_stray_bytes(c):
    # the reproducer: stray bytes before the first header
    c.send_raw(b"xyz" + frame(body=INIT))
    r = c.response(1)
    check("result" in r, "initialize after stray bytes is answered", r)
    c.notify("initialized", {})
    c.send_raw(b"\x00\xff garbage" + frame(body=STATS))
    check("result" in c.response(99), "and the next request too")
    check("resynchronised" in c.log(), "the skip is logged", c.log())
    check(c.shutdown_exit() == 0, "exit 0")


def case_frame_length_short(c):
    c.initialize()
    # characters counted instead of UTF-8 bytes: the declared length is one short
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "infill/stats",
                       "params": {"x": "\u00e9"}}, ensure_ascii=False).encode()
    c.send_raw(b"Content-Length: %d\r\n\r\n" % (len(body) - 1) + body)
    r = c.request("infill/stats")
    check("result" in r, "the request after a short length is answered", r)
    check(c.shutdown_exit() == 0, "exit 0 (shutdown heard)")


def case_frame_bad_lengths(c):
    c.initialize()
    for bad in (b"abc", b"18446744073709551615", b"-1", b"1e3"):
        c.send_raw(b"Content-Length: " + bad + b"\r\n\r\n" + STATS)
        r = c.request("infill/stats")
        check("result" in r, "answered after Content-Length: %s" % bad.decode(), r)
    check(c.shutdown_exit() == 0, "exit 0")


# ---- 2. the model file changes under the daemon ---------------------------------

def model_copy():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "m.gguf")
    shutil.copyfile(MODEL, path)
    return d, path


def case_model_truncated(c):
    c.initialize()
    wait_model(c)
    open_doc(c, "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n")
    check("result" in inline(c, 1, 11), "a completion before")
    with open(c.model_path, "r+b") as f:
        f.truncate(1000)  # what `truncate -s 1000 MODEL` does
    r = inline(c, 1, 11)
    check("result" in r, "the completion after the truncation is answered", r)
    check(c.proc.poll() is None, "the daemon is alive")
    warn = messages(c, lambda m: "changed on disk" in m)
    # "truncated" when the check before a job saw it first; "shrank while being
    # read" when a read (a background prefill) hit the SIGBUS guard first
    check(warn and ("truncated" in warn[0] or "shrank while being read" in warn[0]),
          "the user is told, and why", c.notifications)
    check(messages(c, lambda m: "cannot load" in m), "the reload of a broken file says so",
          c.notifications)
    # the download completes: the next request loads it again
    shutil.copyfile(MODEL, c.model_path + ".new")
    os.replace(c.model_path + ".new", c.model_path)
    check("result" in inline(c, 1, 11), "a completion after the file is back")
    wait_model(c)
    check(c.shutdown_exit() == 0, "exit 0")


def case_model_overwritten(c):
    """`cp small.gguf MODEL`: truncated in place, then a smaller file written."""
    c.initialize()
    wait_model(c)
    open_doc(c, "x = 1\ny = ")
    check("result" in inline(c, 1, 4), "a completion before")
    with open(c.model_path, "r+b") as f:
        head = f.read(4096)
        f.seek(0)
        f.truncate(0)
        f.write(head)
    r = inline(c, 1, 4)
    check("result" in r and c.proc.poll() is None, "answered, alive", r)
    check(messages(c, lambda m: "changed on disk" in m), "told", c.notifications)
    check(c.shutdown_exit() == 0, "exit 0")


# ---- 3. special files --------------------------------------------------------------

def case_model_fifo(c):
    r = c.initialize()
    check("result" in r, "initialize answered", r)
    m = c.wait_for(lambda m: m.get("method") == "window/showMessage")
    check("FIFO" in m["params"]["message"], "the model path is not a regular file", m)
    check(c.shutdown_exit() == 0, "exit ends the process")


def project(kind):
    root = tempfile.mkdtemp()
    path = os.path.join(root, ".infill.json")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "stdin":
        os.symlink("/proc/self/fd/0", path)
    elif kind == "dir":
        os.mkdir(path)
    return root


def case_project_fifo(c):
    r = c.initialize(root_uri="file://" + project("fifo"))
    check("result" in r, "initialize answered with a FIFO .infill.json", r)
    m = c.wait_for(lambda m: m.get("method") == "window/showMessage")
    check(".infill.json" in m["params"]["message"] and "regular file" in m["params"]["message"],
          "a clear warning", m)
    check("result" in c.request("infill/stats"), "the session goes on")
    check(c.shutdown_exit() == 0, "exit 0")


def case_project_stdin_link(c):
    r = c.initialize(root_uri="file://" + project("stdin"))
    check("result" in r, "initialize answered with .infill.json -> /proc/self/fd/0", r)
    # the next messages reach the server, not the settings reader
    for _ in range(3):
        check("result" in c.request("infill/stats", timeout=5), "later requests answered")
    check(messages(c, lambda m: ".infill.json" in m), "a warning", c.notifications)
    check(c.shutdown_exit() == 0, "exit 0")


# ---- 4. huge one-line documents ------------------------------------------------------

def vm_mb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def case_huge_one_line(c):
    """A 20 MB document on one line: the completion's work is bounded by a
    window around the cursor (the old daemon took 11-13 s and ~1.7 GB)."""
    c.initialize()
    wait_model(c)
    unit = "x = foo(a, b) + bar[1]; "
    text = unit * ((20 << 20) // len(unit))
    base = vm_mb(c.proc.pid, "VmRSS")
    open_doc(c, text)
    for ch in (len(text) // 2, len(text), 100):
        r = inline(c, 0, ch, timeout=60)
        check("result" in r, "answered at character %d" % ch, str(r)[:300])
        for item in r["result"]["items"]:
            check(item["range"]["start"] == {"line": 0, "character": ch},
                  "ranges are in the document, not the window", item)
    peak = vm_mb(c.proc.pid, "VmHWM")
    doc_mb = len(text) / float(1 << 20)
    with open("/proc/%d/maps" % c.proc.pid) as f:
        sanitized = "libasan" in f.read()  # its quarantine keeps freed memory
    check(sanitized or peak - base < 8 * doc_mb, "memory a small multiple of the document",
          "peak %.0f MB, before the document %.0f MB" % (peak, base))
    check(c.shutdown_exit() == 0, "exit 0")


# ---- 5. untrusted project settings ----------------------------------------------------

def case_project_limits(c):
    root = tempfile.mkdtemp()
    with open(os.path.join(root, ".infill.json"), "w") as f:
        json.dump({"threads": 1024, "log.level": "trace", "cache.memoryMB": 1048576,
                   "maxMessageMB": 4096, "model": "/dev/zero", "log.messageText": True,
                   "completion": {"candidates": 4, "draftModel": "/dev/zero"}}, f)
    c.initialize(root_uri="file://" + root)
    s = c.request("infill/settings", {})["result"]
    cpus = os.cpu_count()
    check(s["threads"] <= cpus, "threads clamped to the CPUs", s)
    check(s["log.level"] == "info" and s["log.messageText"] is False, "log not raised", s)
    check(s["cache.memoryMB"] <= 1024 and s["maxMessageMB"] <= 64, "memory clamped", s)
    check(s.get("model") in (None, ""), "model ignored", s)
    check(s.get("completion.draftModel") in (None, ""), "draftModel ignored", s)
    check(s["completion.candidates"] == 4, "harmless settings apply", s)
    warned = " ".join(messages(c))
    for key in ("threads", "log.level", "cache.memoryMB", "maxMessageMB", "model",
                "completion.draftModel"):
        check('"%s"' % key in warned, "a warning names " + key, warned)
    wait_model(c)
    c.drain(0.3)
    ready = [l for l in c.log().splitlines() if "model ready" in l]
    check(ready and ("%d threads" % 1024) not in ready[0], "the model runs few threads", ready)
    check(c.shutdown_exit() == 0, "exit 0")


def case_threads_capped(c):
    """Even from the user's own settings: never more threads than CPUs."""
    c.initialize(init_options={"threads": 1024})
    wait_model(c)
    c.drain(0.3)
    ready = [l for l in c.log().splitlines() if "model ready" in l]
    cpus = os.cpu_count()
    check(ready and ("%d thread" % cpus) in ready[0], "at most one per CPU", ready, cpus)
    check(c.shutdown_exit() == 0, "exit 0")


SECRET = "sk_live_do_not_log_me_42"


def case_log_no_text(c):
    c.initialize()
    open_doc(c, "token = '%s'\n" % SECRET)
    c.request("infill/stats")
    check("didOpen" in c.log(), "trace logs the messages", c.log())
    check(SECRET not in c.log(), "but not the document's text", c.log())
    check(c.shutdown_exit() == 0, "exit 0")


def case_log_text_asked(c):
    c.initialize(init_options={"log": {"messageText": True}})
    open_doc(c, "token = '%s'\n" % SECRET)
    c.request("infill/stats")
    check(SECRET in c.log(), "the user asked for message text in the log", c.log())
    check(c.shutdown_exit() == 0, "exit 0")


# ---- 6. smaller ones ---------------------------------------------------------------------

def case_open_invalid_utf8(c):
    c.initialize()
    td = b'{"uri": "%s", "languageId": "python", "version": 1, "text": "caf\xe9 = 1\\n"}' \
        % URI.encode()
    c.send_raw(frame(body=b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", '
                          b'"params": {"textDocument": ' + td + b'}}'))
    check(doc_text(c)["text"] == "caf\ufffd = 1\n", "opened, the bad byte replaced")
    check("invalid UTF-8" in c.log(), "and warned", c.log())
    check(c.shutdown_exit() == 0, "exit 0")


def case_open_lone_surrogate(c):
    c.initialize()
    c.send_raw(frame(body=(
        '{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": '
        '{"uri": "%s", "languageId": "python", "version": 1, '
        '"text": "a = \\"\\ud800\\"\\nb = \\"\\ud83d\\ude00\\"\\n"}}}' % URI).encode()))
    check(doc_text(c)["text"] == 'a = "\ufffd"\nb = "\U0001F600"\n',
          "opened, the lone surrogate replaced, the pair kept", doc_text(c))
    check("surrogate" in c.log(), "and warned", c.log())
    check(c.shutdown_exit() == 0, "exit 0")


def case_position_huge_integer(c):
    c.initialize()
    open_doc(c, "x = 1\n")
    for n in ("9223372036854775808", "18446744073709551616", "-9223372036854775809"):
        c.send_raw(frame(body=(
            '{"jsonrpc": "2.0", "id": 40, "method": "textDocument/completion", "params": '
            '{"textDocument": {"uri": "%s"}, "position": {"line": %s, "character": 0}}}'
            % (URI, n)).encode()))
        r = c.response(40)
        check(r.get("error", {}).get("code") == -32602, "-32602 for line %s" % n, r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_change_old_version(c):
    c.initialize()
    open_doc(c, "abc\n", version=5)
    c.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 7},
             "contentChanges": [{"text": "new\n"}]})
    c.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 6},
             "contentChanges": [{"text": "late\n"}]})
    d = doc_text(c)
    check(d["text"] == "new\n" and d["version"] == 7, "the older change is ignored", d)
    check("older than the document's" in c.log(), "with a warning", c.log())
    check(c.shutdown_exit() == 0, "exit 0")


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}
TRACE = ["--log-level", "trace"]


def main():
    if sys.argv[1:2] == ["--list"]:
        print("\n".join(CASES))
        return 0
    binary, name = sys.argv[1], sys.argv[2]
    args, model_dir, model_path = [], None, None
    if name in ("model_truncated", "model_overwritten"):
        model_dir, model_path = model_copy()
        args = ["--model", model_path]
    elif name == "model_fifo":
        model_dir = tempfile.mkdtemp()
        model_path = os.path.join(model_dir, "m.gguf")
        os.mkfifo(model_path)
        args = ["--model", model_path]
    elif name in ("log_no_text", "log_text_asked", "frame_stray_bytes"):
        args = TRACE if name != "frame_stray_bytes" else []
    c = Client(binary, args)
    c.model_path = model_path
    try:
        CASES[name](c)
    except BaseException:
        sys.stderr.write("---- server log ----\n" + c.log()[-20000:])
        raise
    finally:
        c.kill()
        if model_dir:
            shutil.rmtree(model_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
