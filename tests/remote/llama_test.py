"""The remote backend against a real llama-server (built by tools/llamacpp
from node-llama-cpp@3.21.1's llama.cpp, once per machine, by tools/setup --tests)
serving the embedded model on the loopback:

  greedy_equal   the server's greedy text equals the in-process engine's
                 on the same prompts (test_remote_llama.c)
  openai_lsp     /v1/completions end to end through the LSP, the prompt as
                 token ids built with remote.tokenizer
  infill_lsp     /infill end to end through the LSP
  cancel_lsp     $/cancelRequest closes the stream: the server logs the
                 task cancelled
  overhead       the daemon's own time per request (infill/stats
                 daemonLatencyMs) beside the server's, over 20 requests

Skipped (77) only where llama-server is not built: tools/setup --tests builds it;
the reason is printed.

usage: llama_test.py INFILL TEST_REMOTE_LLAMA MODEL CASE  (or --list)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lsp"))
sys.path.insert(0, HERE)
from lspclient import Client  # noqa: E402
from fakeserver import free_port  # noqa: E402

URI = "file:///tmp/infill-remote/llama.py"
PY = ("import os\n\n\ndef list_files(path):\n    out = []\n    for name in os.listdir(path):\n"
      "        \n    return out\n")
LINE, CH = 6, 8


class Failed(Exception):
    pass


def check(cond, what, *context):
    if not cond:
        raise Failed(what + "".join("\n  " + str(c)[:3000] for c in context))


def find_server():
    """llama-server from tools/llamacpp's cache: the build for this CPU."""
    if os.environ.get("INFILL_LLAMA_SERVER"):
        return os.environ["INFILL_LLAMA_SERVER"]
    cache = os.environ.get("INFILL_CACHE", os.path.expanduser("~/.cache/infill"))
    for path in sorted(glob.glob(os.path.join(cache, "llama.cpp-3.21.1-*/build/bin/llama-server"))):
        try:
            r = subprocess.run([path, "--version"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0:  # a build for another CPU dies with SIGILL here
            return path
    return None


class LlamaServer:
    def __init__(self, model, extra=()):
        exe = find_server()
        if not exe:
            print("SKIP: llama-server is not built here (tools/setup --tests runs `tools/llamacpp "
                  "llama-server`, which builds it once per machine)")
            sys.exit(77)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log_file = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log",
                                                    delete=False)
        self.proc = subprocess.Popen(
            [exe, "-m", model, "--host", "127.0.0.1", "--port", str(self.port), "-c", "8192",
             "-np", "4", "-t", "2", "--no-webui", *extra],
            stdout=self.log_file, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while True:
            check(self.proc.poll() is None, "llama-server started", self.log())
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            check(time.time() < deadline, "llama-server ready within 120 s", self.log())
            time.sleep(0.2)

    def log(self):
        with open(self.log_file.name, errors="replace") as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.unlink(self.log_file.name)


def start(binary, settings):
    c = Client(binary, args=["--user-config", ""])
    # no deadline: a loaded test machine's server must not be cut short
    opts = {"backend": "remote", "completion.debounceMs": 0, "completion.candidates": 3,
            "completion.maxTokens": 24, "completion.deadlineMs": 0, "remote.timeoutMs": 60000}
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


def inline_async(c):
    return c.request_async("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": LINE, "character": CH},
        "context": {"triggerKind": 1}})


def errors(c):
    return [m["params"]["message"] for m in c.notifications
            if m.get("method") == "window/showMessage" and m["params"]["type"] == 1]


def end_to_end(binary, model, api):
    srv = LlamaServer(model)
    c = start(binary, {"remote.url": srv.url, "remote.api": api, "remote.tokenizer": model})
    try:
        r = c.response(inline_async(c), 120)
        check("result" in r, "answered", r, errors(c), c.log())
        s = c.request("infill/stats")["result"]
        check(s["backend"] == "remote", "backend remote", s)
        check(s["remoteRequests"] >= 2 and s["remoteFailures"] == 0,
              "the greedy call and the samples' call, no failure", s, errors(c), c.log())
        check(s["generatedTokens"] > 0, "the server generated tokens", s)
        items = r["result"]["items"]
        check(items or s["rejectedCandidates"] > 0,
              "candidates came back (shown, or dropped by validation)", r, s)
        check(not errors(c), "no error shown", errors(c))
        return srv.log()
    finally:
        c.kill()
        srv.stop()


def case_openai_lsp(binary, test_bin, model):
    end_to_end(binary, model, "openai")


def case_infill_lsp(binary, test_bin, model):
    log = end_to_end(binary, model, "llama-infill")
    check("/infill" in log or "infill" in log.lower(), "the server served /infill", log[-3000:])


def case_greedy_equal(binary, test_bin, model):
    """Flash attention off, as the engine computes attention (scores and
    softmax in F32 over the F16 cache, not ggml's F16 flash-attention
    path). llama-server's default (auto: on for the CPU) moves the C
    prompt's second-token log-probabilities by up to 0.06 and flips its
    near-tie (`return` against `\t`, 0.04 apart in the engine) into tabs
    only; with it off the order is the engine's."""
    srv = LlamaServer(model, ("-fa", "off"))
    try:
        r = subprocess.run([test_bin, model, srv.url], capture_output=True, text=True,
                           timeout=240)
        print(r.stdout, r.stderr)
        check(r.returncode == 0, "greedy texts equal", r.stdout, r.stderr)
    finally:
        srv.stop()


def case_cancel_lsp(binary, test_bin, model):
    """$/cancelRequest while the server streams: the server logs the task
    cancelled. A generation that ends (end of text) before the cancel
    arrives proves nothing, so such a try is repeated at another place, up
    to 4 times."""
    srv = LlamaServer(model)
    c = start(binary, {"remote.url": srv.url, "remote.tokenizer": model,
                       "completion.candidates": 1, "completion.maxTokens": 1500,
                       "completion.multiline": "always", "completion.maxLines": 1000,
                       "completion.temperature": 1.0})
    try:
        places = [(LINE, CH), (4, 4), (5, 4), (1, 0)]
        for line, ch in places:
            before = srv.log().count("processing task")
            rid = c.request_async("textDocument/inlineCompletion", {
                "textDocument": {"uri": URI}, "position": {"line": line, "character": ch},
                "context": {"triggerKind": 1}})
            deadline = time.time() + 60
            while srv.log().count("processing task") <= before:
                check(time.time() < deadline, "the server started the task",
                      srv.log()[-3000:])
                time.sleep(0.02)
            time.sleep(0.05)
            c.notify("$/cancelRequest", {"id": rid})
            r = c.response(rid, 30)
            if r.get("error", {}).get("code") != -32800:
                continue  # answered before the cancel came: try elsewhere
            deadline = time.time() + 10
            while "cancel task" not in srv.log():
                if time.time() > deadline:
                    break
                time.sleep(0.05)
            if "cancel task" in srv.log():
                return
        raise Failed("the server never logged a task cancelled\n" + srv.log()[-4000:])
    finally:
        c.kill()
        srv.stop()


def case_overhead(binary, test_bin, model):
    """The daemon's own time per request against the server's round trip,
    from infill/stats, over 20 sequential requests (printed; the aim is
    <= 5 ms p50; asserted loosely here, since the machine running tests
    may be loaded)."""
    srv = LlamaServer(model)
    c = start(binary, {"remote.url": srv.url, "remote.tokenizer": model,
                       "completion.candidates": 1, "completion.maxTokens": 8})
    try:
        for _ in range(20):
            r = c.response(inline_async(c), 60)
            check("result" in r, "answered", r)
        s = c.request("infill/stats")["result"]
        print(json.dumps({k: s[k] for k in ("remoteLatencyMs", "daemonLatencyMs", "remoteShare",
                                            "latencyMs")}))
        check(s["daemonLatencyMs"]["samples"] == 20, "20 samples", s)
        check(s["daemonLatencyMs"]["p50"] < 100, "the daemon's own p50 is small", s)
    finally:
        c.kill()
        srv.stop()


def case_probe_lsp(binary, test_bin, model):
    """fim.template auto, no remote.tokenizer: infill asks the real server
    what it serves. Under an alias that names a family, that family's
    template is chosen and said once; under its file name alone (no
    family), one message says exactly which setting to set."""
    srv = LlamaServer(model, extra=("--alias", "deepseek-coder-1.3b-base"))
    c = start(binary, {"remote.url": srv.url, "remote.api": "openai", "fim.template": "auto"})
    try:
        r = c.response(inline_async(c), 120)
        check("result" in r, "answered", r, errors(c))
        c.response(inline_async(c), 120)
        said = [m["params"]["message"] for m in c.notifications
                if m.get("method") == "window/showMessage" and "fim.template" in
                m["params"]["message"]]
        check(len(said) == 1 and '"deepseek"' in said[0] and "deepseek-coder-1.3b-base" in said[0],
              "the family's template, said once", said, errors(c))
        s = c.request("infill/stats")["result"]
        check(s["remoteRequests"] >= 1 and s["remoteFailures"] == 0, "the server answered", s)
        check(not errors(c), "no error", errors(c))
    finally:
        c.kill()
        srv.stop()
    srv = LlamaServer(model)
    c = start(binary, {"remote.url": srv.url, "remote.api": "openai", "fim.template": "auto"})
    try:
        for _ in range(2):
            c.response(inline_async(c), 120)
        msgs = [m["params"]["message"] for m in c.notifications
                if m.get("method") == "window/showMessage"]
        said = [m for m in msgs if "set fim.template" in m]
        check(len(said) == 1 and os.path.basename(model) in said[0], "what is missing, once",
              msgs)
    finally:
        c.kill()
        srv.stop()


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}

if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        sys.exit(0)
    binary, test_bin, model, case = sys.argv[1:5]
    try:
        CASES[case](binary, test_bin, model)
    except Failed as e:
        print("FAIL:", e)
        sys.exit(1)
    print("ok")
