"""Integration tests: start the real infill binary and speak LSP to it.

usage: integration.py INFILL CASE   (or --list)
Each case is a function below; meson runs each as its own test.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from lspclient import Client, frame

URI = "file:///tmp/infill-test/a.py"


def check(cond, what, *context):
    if not cond:
        raise AssertionError(what + "".join("\n  " + str(c) for c in context))


def err_code(resp):
    return resp.get("error", {}).get("code")


def open_doc(c, text, uri=URI, lang="python", version=1):
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": lang, "version": version, "text": text}})


def doc_text(c, uri=URI):
    r = c.request("infill/document", {"textDocument": {"uri": uri}})
    check("result" in r, "infill/document answered", r)
    return r["result"]


def rng(l1, c1, l2, c2):
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


# ---- cases -----------------------------------------------------------------

def case_lifecycle(c):
    r = c.initialize()
    caps = r["result"]["capabilities"]
    check(caps["positionEncoding"] == "utf-16", "utf-16 by default", caps)
    check(caps["textDocumentSync"]["change"] == 2, "incremental sync", caps)
    check("completionProvider" in caps and "inlineCompletionProvider" in caps, "providers", caps)
    check(r["result"]["serverInfo"]["name"] == "infill", "serverInfo", r)
    check(c.shutdown_exit() == 0, "exit 0 after shutdown")


def case_encoding_negotiation(c):
    r = c.initialize({"general": {"positionEncodings": ["utf-32", "utf-8", "utf-16"]}})
    check(r["result"]["capabilities"]["positionEncoding"] == "utf-8", "utf-8 chosen", r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_encoding_utf32(c):
    r = c.initialize({"general": {"positionEncodings": ["utf-32", "utf-16"]}})
    check(r["result"]["capabilities"]["positionEncoding"] == "utf-32", "utf-32 chosen", r)
    open_doc(c, "a\U0001F600b\n")
    c.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
             "contentChanges": [{"range": rng(0, 2, 0, 3), "text": "X"}]})
    check(doc_text(c)["text"] == "a\U0001F600X\n", "utf-32 columns", doc_text(c))
    check(c.shutdown_exit() == 0, "exit 0")


def case_exit_without_shutdown(c):
    c.initialize()
    c.notify("exit")
    check(c.wait_exit() == 1, "exit 1 without shutdown")


def case_sigterm(c):
    """SIGTERM and SIGINT end the daemon as exit does, within 2 s: status 0
    after shutdown, else 1, the reason in the log (not death by signal)."""
    import signal
    c.initialize()
    open_doc(c, "def f():\n    return 1\n")
    c.proc.send_signal(signal.SIGTERM)
    t0 = time.time()
    rc = c.wait_exit(timeout=5)
    check(rc == 1 and time.time() - t0 < 2.0, "SIGTERM without shutdown: status 1 within 2 s",
          rc, time.time() - t0)
    check("Terminated: ending with status 1" in c.log(), "the log says why", c.log())
    c2 = Client(sys.argv[1])
    try:
        c2.initialize()
        check("result" in c2.request("shutdown"), "shutdown answered")
        c2.proc.send_signal(signal.SIGINT)
        check(c2.wait_exit(timeout=5) == 0, "SIGINT after shutdown: status 0")
    finally:
        c2.kill()


def case_exit_before_initialize(c):
    c.notify("exit")
    check(c.wait_exit() == 1, "exit 1 before initialize")


def case_stdin_closed(c):
    c.initialize()
    open_doc(c, "x = 1\n")
    c.request_async("textDocument/completion", {"textDocument": {"uri": URI},
                    "position": {"line": 0, "character": 1}})
    c.close_stdin()
    check(c.wait_exit() == 1, "exit 1 when stdin closes without exit")
    check("input closed without exit" in c.log(), "the reason is logged", c.log())


def case_stdin_closed_after_shutdown(c):
    c.initialize()
    c.request("shutdown")
    c.close_stdin()
    check(c.wait_exit() == 1, "exit 1: input ended without exit")


def case_error_not_initialized(c):
    r = c.request("textDocument/completion", {"textDocument": {"uri": URI},
                  "position": {"line": 0, "character": 0}})
    check(err_code(r) == -32002, "-32002 before initialize", r)
    c.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python",
             "version": 1, "text": "dropped"}})
    r = c.request("shutdown")
    check(err_code(r) == -32002, "shutdown before initialize is -32002 too", r)
    c.initialize()
    r = c.request("infill/document", {"textDocument": {"uri": URI}})
    check(err_code(r) == -32602, "the didOpen before initialize was dropped", r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_error_parse(c):
    c.initialize()
    c.send_raw(frame(body=b'{"jsonrpc": "2.0", "id": 1, "method": '))
    r = c.response(None)
    check(err_code(r) == -32700 and r["id"] is None, "-32700 with id null", r)
    r = c.request("infill/stats")
    check("result" in r, "the stream recovers at the next frame", r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_error_invalid_request(c):
    c.initialize()
    for body, id in [(b'[1, 2]', None), (b'42', None), (b'{"id": 7, "method": "shutdown"}', 7),
                     (b'{"jsonrpc": "2.0", "id": 8, "method": 5}', 8),
                     (b'{"jsonrpc": "2.0", "id": 9, "method": "x", "params": 3}', 9),
                     (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}', None),
                     (b'{"jsonrpc": "2.0"}', None)]:
        c.send_raw(frame(body=body))
        r = c.response(id)
        check(err_code(r) == -32600, "-32600 for " + body.decode(), r)
    r = c.request("initialize", {"capabilities": {}})
    check(err_code(r) == -32600, "a second initialize is -32600", r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_error_method_not_found(c):
    c.initialize()
    r = c.request("textDocument/noSuchThing", {})
    check(err_code(r) == -32601, "-32601 for an unknown request", r)
    c.notify("textDocument/noSuchNotification", {})
    c.notify("$/unknown", {})
    r = c.request("exit")
    check(err_code(r) == -32601, "exit sent as a request is not a request we know", r)
    r = c.request("infill/stats")
    check("result" in r, "unknown notifications are ignored", r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_error_invalid_params(c):
    c.initialize()
    open_doc(c, "x\n")
    for p in [None, {}, {"textDocument": {"uri": URI}},
              {"textDocument": {"uri": URI}, "position": {"line": -1, "character": 0}},
              {"textDocument": {"uri": 3}, "position": {"line": 0, "character": 0}}]:
        for m in ["textDocument/completion", "textDocument/inlineCompletion"]:
            r = c.request(m, p)
            check(err_code(r) == -32602, "-32602 for %s %s" % (m, p), r)
    r = c.request("initialize", None)
    check(err_code(r) == -32600, "second initialize", r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_error_initialize_params(c):
    r = c.request("initialize", None)
    check(err_code(r) == -32602, "initialize without params is -32602", r)
    r = c.request("initialize", {"capabilities": 5})
    check(err_code(r) == -32602, "bad capabilities are -32602", r)
    c.initialize()
    check(c.shutdown_exit() == 0, "exit 0")


def case_error_after_shutdown(c):
    c.initialize()
    c.request("shutdown")
    r = c.request("infill/stats")
    check(err_code(r) == -32600, "requests after shutdown are -32600", r)
    c.notify("exit")
    check(c.wait_exit() == 0, "exit 0")


def case_error_cancelled(c):
    c.initialize(init_options={"completion": {"debounceMs": 5000}})
    open_doc(c, "def f():\n    ret")
    id = c.request_async("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 1, "character": 7},
        "context": {"triggerKind": 2}})
    c.notify("$/cancelRequest", {"id": id})
    r = c.response(id)
    check(err_code(r) == -32800, "-32800 for a cancelled request", r)
    c.notify("$/cancelRequest", {"id": id})  # already answered: ignored
    s = c.request("infill/stats")["result"]
    check(s["cancelled"] == 1 and s["requests"] == 1, "stats count it", s)
    check(c.shutdown_exit() == 0, "exit 0")


def case_cancel_race(c):
    c.initialize(init_options={"completion": {"debounceMs": 0}})
    open_doc(c, "x = 1\n")
    burst = b""
    ids = []
    for i in range(200):
        id = 1000 + i
        ids.append(id)
        kind = "textDocument/completion" if i % 2 else "textDocument/inlineCompletion"
        uri = "file:///tmp/infill-test/%d.py" % (i % 7)
        if i % 7 == 0:
            uri = URI
        burst += frame({"jsonrpc": "2.0", "id": id, "method": kind, "params": {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": i % 5}}})
        if i % 3 == 0:
            burst += frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}})
        if i % 5 == 0 and i:
            burst += frame({"jsonrpc": "2.0", "method": "$/cancelRequest",
                            "params": {"id": id - 1}})
    c.send_raw(burst)
    for id in ids:
        r = c.response(id)
        check("result" in r or err_code(r) == -32800, "one answer each", r)
    c.drain(0.3)
    check(not c.responses, "no second answer to any request", c.responses)
    check(c.shutdown_exit() == 0, "exit 0")


def case_garbage_then_valid(c):
    c.initialize()
    c.send_raw(b"hello there\r\n\r\nthis is not a header\r\nX: y\r\n\r\n")
    c.send_raw(b"Content-Length: abc\r\n\r\n{}")
    c.send_raw(b"\x00\xff\xfe garbage with no newline ")
    c.send_raw(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n")
    r = c.request("infill/stats")
    check("result" in r, "a valid request after garbage is answered", r)
    # a truncated frame: it declares more bytes than it has before the next frame
    c.send_raw(b'Content-Length: 500\r\n\r\n{"jsonrpc": "2.0", "id": 77, "meth')
    r = c.request("infill/stats")
    check("result" in r, "a valid request after a truncated frame is answered", r)
    check("truncated" in c.log() or "cut short" in c.log(), "the truncation is logged", c.log())
    check(c.shutdown_exit() == 0, "exit 0")


def case_content_type_and_splits(c):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"capabilities": {}}}).encode()
    data = (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
            b"content-length: %d\r\n\r\n" % len(body)) + body
    for i in range(len(data)):  # one byte per write
        c.send_raw(data[i:i + 1])
    r = c.response(1)
    check("result" in r, "a frame split into single bytes", r)
    # several frames in one write
    many = b"".join(frame({"jsonrpc": "2.0", "id": 10 + i, "method": "infill/stats"})
                    for i in range(50))
    c.send_raw(many)
    for i in range(50):
        check("result" in c.response(10 + i), "frame %d of a batch answered" % i)
    check(c.shutdown_exit() == 0, "exit 0")


def case_oversized(c):
    c.initialize()
    big = b'{"jsonrpc": "2.0", "id": 5, "method": "infill/stats", "params": {"x": "' + \
        b"a" * (2 << 20) + b'"}}'
    c.send_raw(frame(body=big))
    r = c.request("infill/stats")
    check("result" in r, "the request after an oversized frame is answered", r)
    check(5 not in [json.loads(k) for k in c.responses], "the oversized one is not", c.responses)
    check("over the maximum" in c.log(), "the oversized frame is logged", c.log())
    # a huge declared length followed directly by a valid frame
    c.send_raw(b"Content-Length: 99999999999999\r\n\r\n")
    r = c.request("infill/stats")
    check("result" in r, "a bogus huge length does not swallow the stream", r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_invalid_utf8(c):
    c.initialize()
    c.send_raw(frame(body=b'{"jsonrpc": "2.0", "id": 3, "method": "x\xff\xfe"}'))
    r = c.response(3)
    # invalid UTF-8 is replaced (the message is kept), so the request is answered
    check(err_code(r) == -32601, "invalid UTF-8 is replaced: method not found", r)
    open_doc(c, "caf\u00e9 \u4e2d\u6587 \U0001F600\n")
    r = c.request("infill/stats")
    check("result" in r, "the stream goes on", r)
    check(doc_text(c)["text"] == "caf\u00e9 \u4e2d\u6587 \U0001F600\n", "UTF-8 text kept")
    check(c.shutdown_exit() == 0, "exit 0")


def case_documents(c):
    c.initialize()
    open_doc(c, "line one\nline two\r\nline three")
    c.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
             "contentChanges": [
                 {"range": rng(0, 5, 0, 8), "text": "1"},          # "line 1"
                 {"range": rng(1, 0, 1, 0), "text": ">> "},        # ">> line two"
                 {"range": rng(2, 100, 2, 100), "text": "!"},      # clamped to the end
                 {"range": rng(9, 0, 9, 0), "text": "\nend"},      # past the last line
             ]})
    d = doc_text(c)
    check(d["text"] == "line 1\n>> line two\r\nline three!\nend", "incremental edits in order", d)
    check(d["version"] == 2 and d["languageId"] == "python", "version kept", d)
    # surrogate pairs: the emoji is 2 UTF-16 units
    c.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3},
             "contentChanges": [{"text": "a\U0001F600b\n"},
                                {"range": rng(0, 3, 0, 4), "text": "c"}]})
    d = doc_text(c)
    check(d["text"] == "a\U0001F600c\n", "full then incremental, UTF-16 columns", d)
    c.notify("textDocument/didSave", {"textDocument": {"uri": URI}})
    c.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    r = c.request("infill/document", {"textDocument": {"uri": URI}})
    check(err_code(r) == -32602, "closed documents are gone", r)
    c.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 4},
             "contentChanges": [{"text": "x"}]})  # not open: ignored
    check("result" in c.request("infill/stats"), "still alive")
    check(c.shutdown_exit() == 0, "exit 0")


def case_completion_empty(c):
    c.initialize()
    open_doc(c, "def add(a, b):\n    return ")
    r = c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1}})
    # empty until a model is loaded; with one, well-formed items
    items = r.get("result", {}).get("items")
    check(isinstance(items, list) and all("insertText" in i and "range" in i for i in items),
          "inline: InlineCompletionItems", r)
    r = c.request("textDocument/completion", {
        "textDocument": {"uri": URI}, "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1}})
    res = r.get("result", {})
    check(res.get("isIncomplete") is True and isinstance(res.get("items"), list) and
          all("textEdit" in i and "filterText" in i for i in res["items"]),
          "completion: an incomplete CompletionList with textEdits", r)
    r = c.request("textDocument/completion", {
        "textDocument": {"uri": "file:///not/open.py"}, "position": {"line": 0, "character": 0}})
    check(r.get("result", {}).get("items") == [], "a document not open: empty", r)
    s = c.request("infill/stats")["result"]
    for k in ["requests", "cancelled", "fastPath", "promptTokens", "cachedPromptTokens",
              "generatedTokens", "rejectedCandidates", "documentLines", "backend", "latencyMs"]:
        check(k in s, "stats has " + k, s)
    check(set(s["latencyMs"]) >= {"p50", "p90", "p99"}, "latency percentiles", s)
    check(s["requests"] == 3 and s["latencyMs"]["samples"] == 2, "counted", s)
    check(c.shutdown_exit() == 0, "exit 0")


def case_superseded(c):
    c.initialize(init_options={"completion.debounceMs": 3000})
    open_doc(c, "abc")
    first = c.request_async("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 0, "character": 1},
        "context": {"triggerKind": 2}})
    menu = c.request_async("textDocument/completion", {
        "textDocument": {"uri": URI}, "position": {"line": 0, "character": 1}})
    second = c.request_async("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 0, "character": 2},
        "context": {"triggerKind": 1}})  # invoked: no debounce
    r = c.response(first)
    check(r.get("result") == {"items": []}, "the superseded request gets an empty result", r)
    r = c.response(second, timeout=2.5)
    check(isinstance(r.get("result", {}).get("items"), list),
          "the newer one is answered without debounce", r)
    check(menu not in [json.loads(k) for k in c.responses], "the other kind is not superseded")
    c.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    r = c.response(menu, timeout=1)
    check(r.get("result", {}).get("items") == [], "closing answers what is pending", r)
    check(c.shutdown_exit() == 0, "exit 0")


def case_config_warning(c):
    c.initialize(init_options={"completion": {"candidates": "many"}, "noSuchKey": 1})
    m = c.wait_for(lambda m: m.get("method") == "window/showMessage")
    text = json.dumps(c.notifications)
    check("completion.candidates" in text, "the warning names the key", c.notifications)
    check("noSuchKey" in text, "unknown keys are named too", c.notifications)
    check(c.shutdown_exit() == 0, "exit 0")


def case_config_layers(c):
    root = tempfile.mkdtemp()
    with open(os.path.join(root, ".infill.json"), "w") as f:
        json.dump({"completion": {"candidates": 5, "maxTokens": 40}}, f)
    os.makedirs(os.path.join(c.tmp.name, "infill"))
    with open(os.path.join(c.tmp.name, "infill", "config.json"), "w") as f:
        json.dump({"completion": {"candidates": 2, "maxLines": 3, "maxTokens": 10,
                                  "temperature": 0.5}}, f)
    c.initialize(capabilities={"workspace": {"configuration": True}},
                 root_uri="file://" + root, init_options={"completion.maxTokens": 50})
    s = c.request("infill/settings", {})["result"]
    check(s["completion.maxLines"] == 3, "user file", s)
    check(s["completion.candidates"] == 5, "project file beats user file", s)
    check(s["completion.maxTokens"] == 50, "initializationOptions beat the project", s)
    req = c.wait_for(lambda m: m.get("method") == "workspace/configuration")
    check(req["params"]["items"][0]["section"] == "infill", "pulls section infill", req)
    c.send({"jsonrpc": "2.0", "id": req["id"], "result": [
        {"completion": {"temperature": 0.7}, "languages": {"python": {"completion.maxLines": 1}}}]})
    s = c.request("infill/settings", {})["result"]
    check(abs(s["completion.temperature"] - 0.7) < 1e-9, "workspace/configuration wins", s)
    p = c.request("infill/settings", {"languageId": "python"})["result"]
    check(p["completion.maxLines"] == 1, "per-language override", p)
    c.notify("workspace/didChangeConfiguration", {"settings": None})
    req2 = c.wait_for(lambda m: m.get("method") == "workspace/configuration"
                      and m["id"] != req["id"])
    c.send({"jsonrpc": "2.0", "id": req2["id"], "result": [{"completion": {"candidates": 7}}]})
    s = c.request("infill/settings", {})["result"]
    check(s["completion.candidates"] == 7, "pulled again after didChangeConfiguration", s)
    check(c.shutdown_exit() == 0, "exit 0")


def case_config_project_file(c):
    root = tempfile.mkdtemp()
    proj = os.path.join(root, ".infill.json")
    with open(proj, "w") as f:
        f.write('{"completion": {"candidates": 4,}')  # broken JSON
    c.initialize(root_uri="file://" + root)
    m = c.wait_for(lambda m: m.get("method") == "window/showMessage")
    check(".infill.json" in m["params"]["message"], "the warning names the file", m)
    s = c.request("infill/settings", {})["result"]
    check(s["completion.candidates"] == 3, "a broken file changes nothing", s)
    with open(proj, "w") as f:
        json.dump({"completion": {"candidates": 6}}, f)
    c.notify("textDocument/didSave", {"textDocument": {"uri": "file://" + proj}})
    s = c.request("infill/settings", {})["result"]
    check(s["completion.candidates"] == 6, "saving .infill.json reloads it", s)
    check(c.shutdown_exit() == 0, "exit 0")


def case_config_watched_file(c):
    """.infill.json changed on disk (saved in an editor that does not sync
    JSON): the server asks to watch it and reloads it when told."""
    root = tempfile.mkdtemp()
    proj = os.path.join(root, ".infill.json")
    with open(proj, "w") as f:
        json.dump({"completion": {"candidates": 4}}, f)
    # no index (maxFiles 0): the settings file is watched all the same
    c.initialize(capabilities={"workspace": {"didChangeWatchedFiles": {
        "dynamicRegistration": True}}}, root_uri="file://" + root,
        init_options={"context.index.maxFiles": 0})
    req = c.wait_for(lambda m: m.get("method") == "client/registerCapability")
    reg = req["params"]["registrations"][0]
    check(reg["method"] == "workspace/didChangeWatchedFiles", "registers a watcher", req)
    globs = [w["globPattern"] for w in reg["registerOptions"]["watchers"]]
    check(any(g in ("**/.infill.json", "**/*") for g in globs), "the watcher covers .infill.json", globs)
    c.send({"jsonrpc": "2.0", "id": req["id"], "result": None})
    s = c.request("infill/settings", {})["result"]
    check(s["completion.candidates"] == 4, "read at start", s)
    with open(proj, "w") as f:
        json.dump({"completion": {"candidates": 6}}, f)
    c.notify("workspace/didChangeWatchedFiles",
             {"changes": [{"uri": "file://" + proj, "type": 2}]})
    s = c.request("infill/settings", {})["result"]
    check(s["completion.candidates"] == 6, "a watched change reloads it", s)
    os.remove(proj)
    c.notify("workspace/didChangeWatchedFiles",
             {"changes": [{"uri": "file://" + proj, "type": 3}]})
    s = c.request("infill/settings", {})["result"]
    check(s["completion.candidates"] == 3, "deleting it drops its settings", s)
    # another file of that name deeper down is not the project's
    os.makedirs(os.path.join(root, "sub"))
    with open(os.path.join(root, "sub", ".infill.json"), "w") as f:
        json.dump({"completion": {"candidates": 8}}, f)
    c.notify("workspace/didChangeWatchedFiles",
             {"changes": [{"uri": "file://" + root + "/sub/.infill.json", "type": 1}]})
    s = c.request("infill/settings", {})["result"]
    check(s["completion.candidates"] == 3, "only the root's file counts", s)
    check(c.shutdown_exit() == 0, "exit 0")


def case_config_push(c):
    c.initialize()
    c.notify("workspace/didChangeConfiguration",
             {"settings": {"infill": {"completion": {"candidates": 4}}, "other": {"x": 1}}})
    s = c.request("infill/settings", {})["result"]
    check(s["completion.candidates"] == 4, "pushed settings apply", s)
    check(c.shutdown_exit() == 0, "exit 0")


def case_flags_win(c):
    c.initialize(init_options={"threads": 3, "backend": "cuda"})
    s = c.request("infill/settings", {})["result"]
    check(s["threads"] == 2 and s["backend"] == "cpu", "flags beat settings", s)
    check(c.shutdown_exit() == 0, "exit 0")


def case_trace(c):
    c.initialize()
    c.notify("$/setTrace", {"value": "verbose"})
    c.request("infill/stats")
    m = c.wait_for(lambda m: m.get("method") == "$/logTrace")
    check("infill/stats" in m["params"]["message"], "traces received requests", m)
    c.notify("$/setTrace", {"value": "off"})
    check(c.shutdown_exit() == 0, "exit 0")


TINY_Q8 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                       "shared", "testdata", "models", "tiny-dsc-q8_0.gguf")


def home_with_model():
    """A HOME holding models/tiny.gguf (for case model_path)."""
    home = tempfile.mkdtemp()
    os.makedirs(os.path.join(home, "models"))
    os.symlink(os.path.abspath(TINY_Q8), os.path.join(home, "models", "tiny.gguf"))
    return {"HOME": home}


def case_model_path(c):
    """`model` as users write it: "~/..." is the home folder; a load error
    names the path once; the log has no line that ends in nothing. A catalog
    name is its download; one not downloaded says what to run (and is
    loaded once it lands, the embedded model standing in), and a misspelt
    one what was meant."""
    if not os.path.exists(TINY_Q8):
        print("SKIP: " + TINY_Q8 + " missing")
        sys.exit(77)
    c.initialize(capabilities={"window": {"workDoneProgress": True}},
                 init_options={"model": "~/models/tiny.gguf", "modelFallback": False})
    end = c.wait_for(lambda m: m.get("method") == "$/progress"
                     and m["params"]["value"].get("kind") == "end", timeout=60)
    check(end["params"]["value"].get("message") == "ready", "~/models/tiny.gguf loads", end,
          c.notifications)
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "model": "~/models/missing.gguf", "modelFallback": False}}})
    err = c.wait_for(lambda m: m.get("method") == "window/showMessage"
                     and m["params"]["type"] == 1, timeout=60)
    text = err["params"]["message"]
    check(text.count("missing.gguf") == 1, "the error names the path once", text)
    check("cannot open" in text or "No such file" in text, "and says why", text)
    log = c.log()
    check(not re.search(r"loading the model: *$", log, re.M), "no log line ends in nothing", log)
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "model": "deepseek-coder:1.3b", "modelFallback": False}}})
    def ready(m):
        return (m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "end"
                and m["params"]["value"].get("message") == "ready")
    try:
        c.wait_for(lambda m: ready(m) and sum(map(ready, c.notifications)) == 2, timeout=60)
    except Exception:  # a timeout: the check below says what came
        pass
    check(sum(map(ready, c.notifications)) == 2, "a downloaded catalog name loads its file",
          c.notifications)
    check(not any("1.3b" in m["params"]["message"] for m in c.notifications
                  if m.get("method") == "window/showMessage"), "without a warning",
          c.notifications)
    for name, says in (("deepseek-coder:6.7b", "run `infill pull deepseek-coder:6.7b`"),
                       ("deepsek-coder:1.3b", "did you mean deepseek-coder:1.3b")):
        c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
            "model": name, "modelFallback": False}}})
        warn = c.wait_for(lambda m: m.get("method") == "window/showMessage"
                          and name in m["params"]["message"], timeout=60)
        check(says in warn["params"]["message"], name + " says what to do", warn)
    # with the fallback the embedded model answers until the download lands;
    # the first request after that loads it
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "model": "deepseek-coder:6.7b", "modelFallback": True}}})
    def loaded(what):
        """Whether the log's last "model ready" names what, within 30 s."""
        end = time.time() + 30
        while what not in c.log().split("model ready:")[-1].split("\n")[0]:
            if time.time() > end:
                return False
            time.sleep(0.05)
        return True
    check(loaded("infill-default"), "the embedded model stands in", c.log())
    cache = os.path.join(HOMES[-1], ".cache", "infill", "models")
    os.symlink(os.path.abspath(TINY_Q8), os.path.join(cache, "6.7b.part"))
    os.replace(os.path.join(cache, "6.7b.part"),
               os.path.join(cache, "deepseek-coder-6.7b-q4_k_m.gguf"))
    open_doc(c, "x = 1\n")
    c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 1, "character": 0},
        "context": {"triggerKind": 1}})
    check(loaded("deepseek-coder-6.7b-q4_k_m.gguf"), "the download is loaded", c.log())
    check(any("downloaded now" in m["params"]["message"] for m in c.notifications
              if m.get("method") == "window/showMessage"), "and said", c.notifications)
    check(c.shutdown_exit() == 0, "exit 0")


TINY_F32 = os.path.join(os.path.dirname(TINY_Q8), "tiny-dsc-f32.gguf")


def stats_when(c, cond, timeout=30):
    """infill/stats once cond holds of it (the engine thread changes it
    after the request that asked), or as it is at the timeout."""
    end = time.time() + timeout
    while True:
        s = c.request("infill/stats")["result"]
        if cond(s) or time.time() > end:
            return s
        time.sleep(0.05)


def case_draft_model(c):
    """completion.draftModel as users write it: "~/..." loads a smaller model
    of the same vocabulary without a word; a draft as large as the model is
    refused with one warning that names the key and says why, and
    completions go on. Changing it swaps the draft alone: the model is not
    loaded again. A catalog name is its download."""
    if not os.path.exists(TINY_Q8) or not os.path.exists(TINY_F32):
        print("SKIP: the tiny models are missing")
        sys.exit(77)
    c.initialize(capabilities={"window": {"workDoneProgress": True}},
                 init_options={"model": TINY_F32, "modelFallback": False,
                               "completion.draftModel": "~/models/tiny.gguf"})
    end = c.wait_for(lambda m: m.get("method") == "$/progress"
                     and m["params"]["value"].get("kind") == "end", timeout=60)
    check(end["params"]["value"].get("message") == "ready", "the model loads", end)
    check(not any(m.get("method") == "window/showMessage" for m in c.notifications),
          "a smaller draft is taken without a warning", c.notifications)
    s = c.request("infill/stats")["result"]
    check(s.get("draftModel") == "on", "it drafts", s)
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "completion": {"draftModel": TINY_F32}}}})
    warn = c.wait_for(lambda m: m.get("method") == "window/showMessage", timeout=60)
    text = warn["params"]["message"]
    check(warn["params"]["type"] == 2, "a warning, not an error", warn)
    check("completion.draftModel" in text and "not smaller" in text,
          "it names the key and says why", text)
    open_doc(c, "def add(a, b):\n    return ")
    r = c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1}})
    check(isinstance(r.get("result", {}).get("items"), list), "completions are answered", r)
    s = c.request("infill/stats")["result"]
    check(s.get("generatedTokens", 0) > 0, "by the model, without the draft", s)
    check(s.get("modelDraftTokens") == 0 and s.get("draftModel") == "none",
          "nothing was drafted", s)
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "completion": {"draftModel": "~/models/tiny.gguf"}}}})
    r = c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1}})
    check(isinstance(r.get("result", {}).get("items"), list), "answered with the draft", r)
    s = stats_when(c, lambda s: s.get("draftModel") == "on")
    check(s.get("draftModel") == "on", "the draft is back", s)
    shown = [m for m in c.notifications if m.get("method") == "window/showMessage"]
    check(len(shown) == 1, "the smaller draft is taken without a warning", shown)
    # a catalog name not downloaded says what to run; one downloaded is its file
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "completion": {"draftModel": "deepseek-coder:6.7b"}}}})
    warn = c.wait_for(lambda m: m.get("method") == "window/showMessage"
                      and "6.7b" in m["params"]["message"], timeout=60)
    check("infill pull deepseek-coder:6.7b" in warn["params"]["message"],
          "one not downloaded names the command", warn)
    s = c.request("infill/stats")["result"]
    check(s.get("draftModel") == "none", "and none drafts", s)
    # the download lands (`infill pull` renames it in): the next job takes it
    cache = os.path.join(HOMES[-1], ".cache", "infill", "models")
    os.symlink(os.path.abspath(TINY_Q8), os.path.join(cache, "6.7b.part"))
    os.replace(os.path.join(cache, "6.7b.part"),
               os.path.join(cache, "deepseek-coder-6.7b-q4_k_m.gguf"))
    open_doc(c, "x = 1\n", uri=URI + "2")
    c.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI + "2"}, "position": {"line": 1, "character": 0},
        "context": {"triggerKind": 1}})
    s = stats_when(c, lambda s: s.get("draftModel") == "on")
    check(s.get("draftModel") == "on", "a download that lands drafts", s)
    c.wait_for(lambda m: m.get("method") == "window/showMessage"
               and "drafts now" in m["params"]["message"], timeout=30)  # and says so
    # a path longer than any: said, not cut to another path
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "completion": {"draftModel": "/" + "a" * 5000 + ".gguf"}}}})
    warn = c.wait_for(lambda m: m.get("method") == "window/showMessage"
                      and "longer than a path" in m["params"]["message"], timeout=30)
    check(stats_when(c, lambda s: s.get("draftModel") == "none").get("draftModel") == "none",
          "and none drafts", warn)
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "completion": {"draftModel": "deepseek-coder:1.3b"}}}})
    s = stats_when(c, lambda s: s.get("draftModel") == "on")
    check(s.get("draftModel") == "on", "a downloaded one drafts", s)
    begins = [m for m in c.notifications if m.get("method") == "$/progress"
              and m["params"]["value"].get("kind") == "begin"]
    check(len(begins) == 1, "the model was loaded once", begins)
    check(c.shutdown_exit() == 0, "exit 0")


def case_draft_model_remote(c):
    """completion.draftModel with the remote backend: said not to be used
    (the server decodes), at the start and when it changes."""
    remote = {"backend": "remote", "remote": {"url": "http://127.0.0.1:9"}}
    c.initialize(init_options=dict(remote, **{"completion.draftModel": "/x.gguf"}))
    c.wait_for(lambda m: m.get("method") == "window/showMessage"
               and "completion.draftModel" in m["params"]["message"], timeout=30)
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": dict(
        remote, completion={"draftModel": "/y.gguf"})}})
    c.wait_for(lambda m: m.get("method") == "window/showMessage"
               and "completion.draftModel" in m["params"]["message"]
               and sum("completion.draftModel" in n["params"].get("message", "")
                       for n in c.notifications
                       if n.get("method") == "window/showMessage") == 2, timeout=30)
    said = [m["params"] for m in c.notifications if m.get("method") == "window/showMessage"]
    check(all("remote backend" in p["message"] and p["type"] == 2 for p in said),
          "a warning that says why", said)
    check(c.request("infill/stats")["result"].get("draftModel") == "none", "none drafts")
    check(c.shutdown_exit() == 0, "exit 0")


def case_draft_file_changed(c):
    """The draft model's file changes on disk while it drafts: replaced by
    a new download, it is loaded again; truncated, it is dropped with a
    warning that says so, and completions go on without it; whole again,
    it drafts again."""
    if not os.path.exists(TINY_Q8) or not os.path.exists(TINY_F32):
        print("SKIP: the tiny models are missing")
        sys.exit(77)
    tmp = tempfile.mkdtemp()
    draft = os.path.join(tmp, "draft.gguf")
    shutil.copy(TINY_Q8, draft)
    c.initialize(init_options={"model": TINY_F32, "modelFallback": False,
                               "completion.draftModel": draft})
    open_doc(c, "def add(a, b):\n    return ")
    version = [1]

    def ask():
        # a new line above each time: a job, not an answer from memory
        version[0] += 1
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": URI, "version": version[0]},
            "contentChanges": [{"text": "x%d = 1\ndef add(a, b):\n    return " % version[0]}]})
        r = c.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 2, "character": 11},
            "context": {"triggerKind": 1}}, timeout=60)
        check(isinstance(r.get("result", {}).get("items"), list), "answered", r)

    def shown():
        return [m["params"]["message"] for m in c.notifications
                if m.get("method") == "window/showMessage"]
    ask()
    check(stats_when(c, lambda s: s.get("draftModel") == "on").get("draftModel") == "on",
          "the draft drafts", c.notifications)
    shutil.copy(TINY_Q8, draft + ".new")
    os.replace(draft + ".new", draft)
    ask()
    c.wait_for(lambda m: m.get("method") == "window/showMessage", timeout=30)
    check(len(shown()) == 1 and "draft model file" in shown()[0]
          and "changed on disk" in shown()[0], "a replaced draft is said", shown())
    # loaded beside the jobs, taken between them (the old one drafts meanwhile)
    end = time.time() + 30
    while c.log().count("draft model ready") < 1 and time.time() < end:
        time.sleep(0.05)
    check(c.log().count("draft model ready") == 1, "and loaded again", c.log())
    check(stats_when(c, lambda s: s.get("draftModel") == "on").get("draftModel") == "on",
          "and drafts", shown())
    os.truncate(draft, 1000)
    ask()
    c.wait_for(lambda m: m.get("method") == "window/showMessage"
               and "not used" in m["params"]["message"], timeout=30)
    check(sum("changed on disk" in m for m in shown()) == 2, "a truncated draft is said",
          shown())
    s = stats_when(c, lambda s: s.get("draftModel") == "none")
    check(s.get("draftModel") == "none", "and dropped", s)
    ask()
    # whole again: the next job takes it
    shutil.copy(TINY_Q8, draft + ".new")
    os.replace(draft + ".new", draft)
    ask()
    c.wait_for(lambda m: m.get("method") == "window/showMessage"
               and "drafts now" in m["params"]["message"], timeout=30)
    s = stats_when(c, lambda s: s.get("draftModel") == "on")
    check(s.get("draftModel") == "on", "a whole file is taken again", s, shown())
    check(c.shutdown_exit() == 0, "exit 0")
    shutil.rmtree(tmp)


def case_draft_loads_beside_jobs(c):
    """A draft set while a model answers loads on a thread of its own: the
    completions asked meanwhile are answered (without it) before its load
    ends, also when the setting changes again during the load (the later
    draft loads after it, and the earlier is dropped unsaid); it drafts once
    loaded. The server holds each draft load back 4 s
    (INFILL_TEST_DRAFT_LOAD_DELAY_MS), so that the loads outlast the jobs."""
    if not os.path.exists(TINY_Q8) or not os.path.exists(TINY_F32):
        print("SKIP: the tiny models are missing")
        sys.exit(77)
    c.initialize(capabilities={"window": {"workDoneProgress": True}},
                 init_options={"model": TINY_F32, "modelFallback": False})
    c.wait_for(lambda m: m.get("method") == "$/progress"
               and m["params"]["value"].get("kind") == "end", timeout=60)
    open_doc(c, "def add(a, b):\n    return ")
    answered = []
    for version in range(2, 6):  # a new line above each time: a job each
        if version < 4:  # the second draft, as large as the model, is refused
            c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
                "completion": {"draftModel": (TINY_Q8, TINY_F32)[version - 2]}}}})
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": URI, "version": version},
            "contentChanges": [{"text": "x%d = 1\ndef add(a, b):\n    return " % version}]})
        r = c.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 1, "character": 11},
            "context": {"triggerKind": 1}}, timeout=60)
        answered.append(isinstance(r.get("result", {}).get("items"), list))
    s = c.request("infill/stats")["result"]
    check(all(answered) and s.get("generatedTokens", 0) > 0, "answered by the model", answered,
          s)
    check(s.get("draftModel") == "none" and s.get("modelDraftTokens") == 0,
          "while the drafts load, without them", s)
    check(s["latencyMs"]["p99"] < 2000, "no job waited for a draft's load (4 s)", s["latencyMs"])
    warn = c.wait_for(lambda m: m.get("method") == "window/showMessage", timeout=60)
    check("not smaller" in warn["params"]["message"], "the later draft is loaded and refused",
          warn)
    c.notify("workspace/didChangeConfiguration", {"settings": {"infill": {
        "completion": {"draftModel": TINY_Q8}}}})
    s = stats_when(c, lambda s: s.get("draftModel") == "on")
    check(s.get("draftModel") == "on", "a draft drafts once loaded", s)
    shown = [m for m in c.notifications if m.get("method") == "window/showMessage"]
    check(len(shown) == 1, "the dropped draft and the one taken without a word", shown)
    check(c.shutdown_exit() == 0, "exit 0")


def case_kv_type_the_model_cannot_take(c):
    """cache.kvType q8_0 on a model whose head size is not a multiple of 32
    (the tiny model's is 16): the model still loads, with an f16 cache, and
    one warning names the setting and says why."""
    if not os.path.exists(TINY_F32):
        print("SKIP: " + TINY_F32 + " missing")
        sys.exit(77)
    c.initialize(capabilities={"window": {"workDoneProgress": True}},
                 init_options={"model": TINY_F32, "modelFallback": False,
                               "cache": {"kvType": "q8_0"}})
    end = c.wait_for(lambda m: m.get("method") == "$/progress"
                     and m["params"]["value"].get("kind") == "end", timeout=60)
    check(end["params"]["value"].get("message") == "ready", "the model loads", end)
    warns = [m["params"] for m in c.notifications if m.get("method") == "window/showMessage"]
    check(len(warns) == 1 and warns[0]["type"] == 2, "one warning", warns)
    check("cache.kvType" in warns[0]["message"] and "multiple of 32" in warns[0]["message"],
          "it names the setting and says why", warns)
    s = c.request("infill/stats")["result"]
    check(s.get("kvType") == "f16", "the cache is f16", s)
    check(c.shutdown_exit() == 0, "exit 0")


def case_load_progress(c):
    """The model load reports progress between its begin and its end (a
    large model takes seconds in its weights' packing), and each report
    says how far it is."""
    model = TINY_Q8
    if not os.path.exists(model):
        print("SKIP: " + model + " missing")
        sys.exit(77)
    c.initialize(capabilities={"window": {"workDoneProgress": True}},
                 init_options={"model": model, "threads": 1})
    end = c.wait_for(lambda m: m.get("method") == "$/progress"
                     and m["params"]["value"].get("kind") == "end", timeout=60)
    values = [m["params"]["value"] for m in c.notifications
              if m.get("method") == "$/progress" and m["params"]["token"] == end["params"]["token"]]
    pcts = [v.get("percentage") for v in values if v.get("kind") == "report"]
    check(end["params"]["value"].get("message") == "ready", "the model loaded", values)
    check(any(p is not None and 0 < p < 100 for p in pcts),
          "a report between 0% and 100%", values)
    check(all(p is not None for p in pcts), "every report has its percentage", values)
    check(c.shutdown_exit() == 0, "exit 0")


def case_log_message(c):
    c.initialize(capabilities={"window": {"workDoneProgress": True}})
    m = c.wait_for(lambda m: m.get("method") == "window/logMessage")
    check("ready" in m["params"]["message"] and m["params"]["type"] == 3, "a log line", m)
    check(c.shutdown_exit() == 0, "exit 0")


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}
def home_with_draft():
    """home_with_model's HOME, with the tiny model downloaded under the
    catalog's name deepseek-coder:1.3b too (for cases model_path and
    draft_model)."""
    env = home_with_model()
    cache = os.path.join(env["HOME"], ".cache", "infill", "models")
    os.makedirs(cache)
    os.symlink(os.path.abspath(TINY_Q8), os.path.join(cache, "deepseek-coder-1.3b-q4_k_m.gguf"))
    env["XDG_CACHE_HOME"] = ""
    env["INFILL_CATALOG"] = ""
    HOMES.append(env["HOME"])
    return env


HOMES = []  # the HOME home_with_draft made, for the case to change


ENVS = {"model_path": home_with_draft, "draft_model": home_with_draft,
        "draft_loads_beside_jobs": lambda: dict(os.environ,
                                                INFILL_TEST_DRAFT_LOAD_DELAY_MS="4000")}
ARGS = {"flags_win": ["--threads", "2", "--backend", "cpu"],
        "oversized": ["--max-message-mb", "1"]}


def run_file_stdio(binary):
    """stdin and stdout are regular files, not pipes."""
    with tempfile.TemporaryDirectory() as d:
        inp, outp = os.path.join(d, "in"), os.path.join(d, "out")
        with open(inp, "wb") as f:
            f.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"capabilities": {}}}))
            f.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            f.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        with open(inp, "rb") as i, open(outp, "wb") as o:
            rc = subprocess.run([binary], stdin=i, stdout=o, stderr=subprocess.DEVNULL,
                                env=dict(os.environ, XDG_CONFIG_HOME=d), timeout=10).returncode
        out = open(outp, "rb").read()
        check(rc == 0, "exit 0 with file stdio", rc, out)
        check(out.count(b"Content-Length") == 2 and b'"id":2' in out, "two responses", out)


def run_tty_stdio(binary):
    """stdin and stdout are a terminal (a pty in raw mode)."""
    import pty
    import select
    import tty
    master, slave = pty.openpty()
    tty.setraw(slave)
    p = subprocess.Popen([binary], stdin=slave, stdout=slave, stderr=subprocess.DEVNULL,
                         env=dict(os.environ, XDG_CONFIG_HOME=tempfile.gettempdir() + "/none"))
    os.close(slave)
    try:
        os.write(master, frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"capabilities": {}}}))
        os.write(master, frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        out, deadline = b"", time.monotonic() + 10
        while time.monotonic() < deadline and out.count(b"Content-Length") < 2:
            if select.select([master], [], [], 0.5)[0]:
                out += os.read(master, 65536)
        os.write(master, frame({"jsonrpc": "2.0", "method": "exit"}))
        rc = p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    check(out.count(b"Content-Length") == 2 and b'"id":2' in out, "two responses", out)
    check(rc == 0, "exit 0 on a tty", rc)


def main():
    if sys.argv[1:2] == ["--list"]:
        print("\n".join(list(CASES) + ["file_stdio", "tty_stdio", "flags"]))
        return 0
    binary, name = sys.argv[1], sys.argv[2]
    if name == "file_stdio":
        run_file_stdio(binary)
        return 0
    if name == "tty_stdio":
        run_tty_stdio(binary)
        return 0
    if name == "flags":
        out = subprocess.run([binary, "--version"], capture_output=True, text=True)
        check(out.returncode == 0 and out.stdout.startswith("infill "), "--version", out)
        out = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True)
        check(out.returncode == 0 and "--max-message-mb" in out.stdout, "--help", out)
        out = subprocess.run([binary, "--threads", "x"], capture_output=True, text=True)
        check(out.returncode == 2 and "--threads" in out.stderr, "bad flag: 2", out)
        out = subprocess.run([binary, "--bogus"], capture_output=True, text=True)
        check(out.returncode == 2, "unknown flag: 2", out)
        return 0
    c = Client(binary, ARGS.get(name, []), env=ENVS[name]() if name in ENVS else None)
    try:
        CASES[name](c)
    except BaseException:
        sys.stderr.write("---- server log ----\n" + c.log())
        raise
    finally:
        c.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
