"""A small inference server on the loopback for the remote backend's tests:
it speaks the openai /v1/completions stream (and /infill, /api/generate) and
misbehaves on purpose, one way per mode, for the faults a real llama-server
cannot be made to show (HTTP 500, invalid JSON, a disconnect mid-stream, a
wrong key, a slow answer, TLS with an unknown CA). It records each request
and when each stream ended (finished, or the client closed it).

    srv = FakeServer(mode="ok")          # or "slow", "http500", ...
    srv.url                              # http://127.0.0.1:PORT
    srv.requests                         # [(path, body dict, headers)]
    srv.closed_early                     # [monotonic time the client hung up]
    srv.stop()
"""
import http.server
import json
import socket
import ssl
import threading
import time

ANSWER = "total = a + b"


def sse(obj):
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each chunk goes out at once, as a real server's

    def log_message(self, fmt, *args):  # quiet
        pass

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _start(self, status=200, ctype="text/event-stream"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        # what the server says it serves (llama-server /props, /v1/models)
        srv = self.server.fake
        with srv.lock:
            srv.probes.append(self.path)
        if self.path in srv.serves:
            self._json(200, srv.serves[self.path])
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self):
        srv = self.server.fake
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/api/show":  # Ollama's model description
            with srv.lock:
                srv.probes.append(self.path)
            if self.path in srv.serves and body.get("model"):
                self._json(200, srv.serves[self.path])
            else:
                self._json(404, {"error": "model not found"})
            return
        with srv.lock:
            srv.requests.append((self.path, body, dict(self.headers)))
        mode = srv.mode
        if mode == "slow":
            time.sleep(srv.delay)
            mode = "ok"
        if mode == "http500":
            msg = json.dumps({"error": {"code": 500, "message": "boom: the GPU fell over"}}).encode()
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        if mode == "n1only" and int(body.get("n", 1)) > 1:  # as llama-server's /v1/completions
            msg = json.dumps({"error": {"code": 400, "type": "invalid_request_error",
                                        "message": "Field 'n': Value must be between 1 <= value "
                                                   "<= 1, but got %d" % int(body["n"])}}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        if mode == "n1only":
            mode = "ok"
        if mode == "key":
            if self.headers.get("Authorization") != "Bearer " + srv.key:
                msg = json.dumps({"error": {"code": 401, "message": "Invalid API Key"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)
                return
            mode = "ok"
        self._start()
        try:
            if mode == "badjson":
                self._chunk(b"data: {\"choices\": [{\"text\": \"tot\n\n")
                self._end()
                return
            if mode == "disconnect":
                self._chunk(sse({"choices": [{"index": 0, "text": "tot", "finish_reason": None}]}))
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if mode == "flood":  # ignores max_tokens: ~6 MB/s for srv.delay s, every choice
                chunk = "x = 1  # " + "y" * 1000 + "\n"
                end = time.monotonic() + srv.delay
                while time.monotonic() < end:
                    for i in range(int(body.get("n", 1))):
                        self._chunk(sse({"choices": [{"index": i, "text": chunk,
                                                      "finish_reason": None}]}))
                    with srv.lock:
                        srv.sent += len(chunk) * int(body.get("n", 1))
                self._chunk(b"data: [DONE]\n\n")
                self._end()
                return
            if mode == "huge":  # one non-streamed choice of srv.delay MB (made at start:
                # building it here would hold the test's GIL for seconds)
                self._chunk(srv.huge)
                with srv.lock:
                    srv.sent += len(srv.huge)
                self._end()
                return
            if mode == "stream":  # slow tokens until the client hangs up
                for i in range(int(srv.delay / 0.05)):
                    self._chunk(sse({"choices": [{"index": 0, "text": "x", "finish_reason": None}]}))
                    time.sleep(0.05)
                self._chunk(b"data: [DONE]\n\n")
                self._end()
                return
            self._answer(body)
        except (BrokenPipeError, ConnectionResetError, OSError):
            with srv.lock:
                srv.closed_early.append(time.monotonic())
            self.close_connection = True

    def _answer(self, body):
        path = self.path
        n = int(body.get("n", 1))
        if path.endswith("/v1/completions"):
            for i in range(n):
                for piece in (ANSWER[:5], ANSWER[5:]):
                    self._chunk(sse({"choices": [{"index": i, "text": piece,
                                                  "logprobs": {"token_logprobs": [-0.25]},
                                                  "finish_reason": None}]}))
                self._chunk(sse({"choices": [{"index": i, "text": "", "finish_reason": "stop"}]}))
            self._chunk(b"data: [DONE]\n\n")
        elif path.endswith("/infill"):
            for i in range(n):
                self._chunk(sse({"index": i, "content": ANSWER, "stop": False,
                                 "completion_probabilities": [{"logprob": -0.5}]}))
                self._chunk(sse({"index": i, "content": "", "stop": True, "stop_type": "eos"}))
        else:  # ollama
            self._chunk(json.dumps({"response": ANSWER, "done": False}).encode() + b"\n")
            self._chunk(json.dumps({"response": "", "done": True, "done_reason": "stop"}).encode()
                        + b"\n")
        self._end()


class FakeServer:
    def __init__(self, mode="ok", delay=2.0, key="s3cret", certfile=None, keyfile=None):
        self.sent = 0  # bytes of choice text written (flood, huge)
        self.huge = b""
        if mode == "huge":
            self.huge = (b'{"choices": [{"index": 0, "finish_reason": "length", "text": "'
                         + b"z" * int(delay * (1 << 20)) + b'"}]}')
        self.mode, self.delay, self.key = mode, delay, key
        self.requests, self.closed_early = [], []
        self.serves, self.probes = {}, []  # path -> JSON it answers a probe with; probes seen
        self.lock = threading.Lock()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self
        scheme = "http"
        if certfile:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.url = "%s://127.0.0.1:%d" % (scheme, self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
