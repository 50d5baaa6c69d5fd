"""A small LSP client for the integration tests (stdlib only).

Starts the real infill binary with pipes, writes frames (or raw bytes), and
reads what comes back on a thread so a test can wait for one response with a
timeout while notifications and server requests are collected on the side.
"""
import json
import os
import queue
import subprocess
import tempfile
import threading
import time

TIMEOUT = 10.0


def frame(obj=None, body=None):
    if body is None:
        body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Client:
    def __init__(self, binary, args=(), env=None, config_home=None):
        self.tmp = tempfile.TemporaryDirectory()
        e = dict(os.environ)
        e["XDG_CONFIG_HOME"] = config_home or self.tmp.name
        if env:
            e.update(env)
        self.stderr_path = os.path.join(self.tmp.name, "stderr.log")
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([binary, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=e)
        self.messages = queue.Queue()
        self.notifications = []
        self.server_requests = []
        self.responses = {}
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    # ---- reading ----
    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.rstrip(b"\r\n")
                if not line:
                    break
                k, _, v = line.partition(b":")
                headers[k.strip().lower()] = v.strip()
            n = int(headers[b"content-length"])
            body = out.read(n)
            self.messages.put(json.loads(body))

    def _pump(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no message from the server in time")
        msg = self.messages.get(timeout=left)
        if msg is None:
            raise EOFError("the server closed its output")
        if "method" in msg and "id" in msg:
            self.server_requests.append(msg)
        elif "method" in msg:
            self.notifications.append(msg)
        else:
            self.responses[json.dumps(msg["id"])] = msg
        return msg

    def response(self, id, timeout=TIMEOUT):
        key = json.dumps(id)
        deadline = time.monotonic() + timeout
        while key not in self.responses:
            self._pump(deadline)
        return self.responses.pop(key)

    def wait_for(self, pred, timeout=TIMEOUT):
        """Pumps until pred(msg) is true for a message; returns it."""
        deadline = time.monotonic() + timeout
        for m in self.notifications + self.server_requests:
            if pred(m):
                return m
        while True:
            m = self._pump(deadline)
            if pred(m):
                return m

    def drain(self, seconds=0.2):
        deadline = time.monotonic() + seconds
        try:
            while True:
                self._pump(deadline)
        except (TimeoutError, queue.Empty, EOFError):
            pass

    # ---- writing ----
    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj):
        self.send_raw(frame(obj))

    def notify(self, method, params=None):
        m = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)

    def request_async(self, method, params=None, id=None):
        if id is None:
            self.next_id += 1
            id = self.next_id
        m = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return id

    def request(self, method, params=None, timeout=TIMEOUT):
        return self.response(self.request_async(method, params), timeout)

    def initialize(self, capabilities=None, init_options=None, root_uri=None, **extra):
        params = {"processId": os.getpid(), "rootUri": root_uri,
                  "capabilities": capabilities or {}}
        if init_options is not None:
            params["initializationOptions"] = init_options
        params.update(extra)
        r = self.request("initialize", params)
        self.notify("initialized", {})
        return r

    def close_stdin(self):
        self.proc.stdin.close()

    def wait_exit(self, timeout=TIMEOUT):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    def shutdown_exit(self):
        r = self.request("shutdown")
        assert r.get("result", "missing") is None, r
        self.notify("exit")
        return self.wait_exit()

    def log(self):
        self.stderr.flush()
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()
        self.tmp.cleanup()
