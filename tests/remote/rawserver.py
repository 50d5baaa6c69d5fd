"""A hostile inference server on the loopback, written on bare sockets so
that it can break HTTP itself, which http.server cannot: dribble a reply a
byte at a time, lie in Content-Length or in chunk sizes, send bytes that are
not UTF-8 or JSON that is cut, drop the connection inside an event, answer
a proxy's HTML error page, or accept a connection and never answer.

    srv = RawServer("trickle")   # one misbehaviour per mode (MODES below)
    srv.mode = "ok"              # from the next request on: a good answer
    srv.url, srv.requests, srv.stop()

Connections are kept alive between requests where the mode leaves the
connection usable as far as HTTP can tell (a Content-Length shorter than
the body, say): the client must not read the rest as the next reply.
"""
import json
import random
import socket
import threading
import time

ANSWER = "total = a + b"


def sse(obj):
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def good_events(n):
    out = b""
    for i in range(n):
        for piece in (ANSWER[:5], ANSWER[5:]):
            out += sse({"choices": [{"index": i, "text": piece, "finish_reason": None,
                                     "logprobs": {"token_logprobs": [-0.25]}}]})
        out += sse({"choices": [{"index": i, "text": "", "finish_reason": "stop"}]})
    return out + b"data: [DONE]\n\n"


def head(status="200 OK", ctype="text/event-stream", extra=()):
    h = ["HTTP/1.1 " + status, "Content-Type: " + ctype] + list(extra)
    return ("\r\n".join(h) + "\r\n\r\n").encode()


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


# A reverse proxy's page when the server behind it is down (as nginx writes it).
HTML_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
            b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n"
            b"</body>\r\n</html>\r\n")


def html_401(auth):
    # a page that echoes the credentials it refused, as some gateways do
    return (b"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>401 Authorization "
            b"Required</title>\n<style>body{font-family:sans-serif}</style></head>\n<body><h1>"
            b"Unauthorized</h1><p>The credentials &quot;" + auth.encode() + b"&quot; were "
            b"refused.</p></body></html>\n")


class RawServer:
    def __init__(self, mode="ok"):
        self.mode = mode
        self.requests = []  # (path, body dict, headers dict)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self):
        self.stopping.set()
        try:
            self.sock.close()
        except OSError:
            pass
        for c in list(self.conns):
            try:
                c.close()
            except OSError:
                pass

    def _accept(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _read_request(self, conn, buf):
        while b"\r\n\r\n" not in buf:
            d = conn.recv(65536)
            if not d:
                return None, b""
            buf += d
        hdr, _, rest = buf.partition(b"\r\n\r\n")
        lines = hdr.decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1]
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        while len(rest) < n:
            d = conn.recv(65536)
            if not d:
                return None, b""
            rest += d
        body = json.loads(rest[:n] or b"{}")
        with self.lock:
            self.requests.append((path, body, headers))
        return (path, body, headers), rest[n:]

    def _serve(self, conn):
        buf = b""
        try:
            while not self.stopping.is_set():
                req, buf = self._read_request(conn, buf)
                if req is None:
                    break
                keep = getattr(self, "_" + self.mode.replace("-", "_"))(conn, *req)
                if not keep:
                    break
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _wait_gone(self, conn, seconds=30):
        """Holds the connection open, reading, until the client hangs up."""
        conn.settimeout(0.05)
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.stopping.is_set():
            try:
                if not conn.recv(4096):
                    return
            except socket.timeout:
                pass

    def _drip(self, conn, data, forever=False):
        """One byte every 50-200 ms (forever: the data again and again)."""
        rnd = random.Random(7)
        while not self.stopping.is_set():
            for b in data:
                if self.stopping.is_set():
                    return
                conn.sendall(bytes([b]))
                time.sleep(rnd.uniform(0.05, 0.2))
            if not forever:
                return

    # ---- modes: each returns whether the connection stays open ------------

    def _ok(self, conn, path, body, headers):
        data = good_events(int(body.get("n", 1)))
        conn.sendall(head(extra=["Content-Length: %d" % len(data)]) + data)
        return True

    def _silent(self, conn, path, body, headers):
        self._wait_gone(conn)
        return False

    def _trickle(self, conn, path, body, headers):
        # the status line and headers too, then events that never end
        self._drip(conn, head(extra=["Transfer-Encoding: chunked"]))
        ev = sse({"choices": [{"index": 0, "text": "x", "finish_reason": None}]})
        self._drip(conn, chunk(ev), forever=True)
        return False

    def _trickle_body(self, conn, path, body, headers):
        conn.sendall(head(extra=["Transfer-Encoding: chunked"]))
        ev = sse({"choices": [{"index": 0, "text": "x", "finish_reason": None}]})
        self._drip(conn, chunk(ev), forever=True)
        return False

    def _length_long(self, conn, path, body, headers):
        # says 100000 bytes, sends a whole JSON answer of fewer, closes
        data = json.dumps({"choices": [{"index": 0, "text": ANSWER,
                                        "finish_reason": "stop"}]}).encode()
        conn.sendall(head(ctype="application/json", extra=["Content-Length: 100000"]) + data)
        return False

    def _length_long_hang(self, conn, path, body, headers):
        data = good_events(int(body.get("n", 1)))
        conn.sendall(head(extra=["Content-Length: %d" % (len(data) + 5000)]) + data)
        self._wait_gone(conn)
        return False

    def _length_short(self, conn, path, body, headers):
        # says fewer bytes than it sends: the rest must not be read as the
        # next reply on this connection (kept open)
        data = good_events(int(body.get("n", 1)))
        conn.sendall(head(extra=["Content-Length: %d" % (len(data) // 2)]) + data)
        return True

    def _chunk_long(self, conn, path, body, headers):
        # a chunk that says more than it holds, then the connection closes
        data = good_events(int(body.get("n", 1)))
        conn.sendall(head(extra=["Transfer-Encoding: chunked"]) +
                     b"%x\r\n" % (len(data) + 4096) + data)
        return False

    def _chunk_short(self, conn, path, body, headers):
        # a chunk that says less than it holds: the rest is read as a size
        data = good_events(int(body.get("n", 1)))
        conn.sendall(head(extra=["Transfer-Encoding: chunked"]) +
                     b"%x\r\n" % (len(data) // 3) + data + b"\r\n0\r\n\r\n")
        return True

    def _chunk_huge(self, conn, path, body, headers):
        # a chunk size past any buffer, then events that go on
        conn.sendall(head(extra=["Transfer-Encoding: chunked"]) + b"7fffffffffffffff\r\n")
        ev = sse({"choices": [{"index": 0, "text": "x", "finish_reason": None}]})
        end = time.monotonic() + 30
        while time.monotonic() < end and not self.stopping.is_set():
            conn.sendall(ev * 64)
            time.sleep(0.01)
        return False

    def _bad_utf8(self, conn, path, body, headers):
        # raw bytes that are not UTF-8 inside the choices' text: a stray
        # byte, a cut sequence, an overlong form, an encoded surrogate
        n = int(body.get("n", 1))
        out = b""
        for i in range(n):
            for raw in (b"total\xff = ", b"a \xe2\x82", b"+ \xc0\xaf", b"b\xed\xa0\x80"):
                out += (b'data: {"choices": [{"index": %d, "finish_reason": null, "text": "'
                        % i + raw + b'"}]}\n\n')
            out += sse({"choices": [{"index": i, "text": "", "finish_reason": "stop"}]})
        out += b"data: [DONE]\n\n"
        conn.sendall(head(extra=["Content-Length: %d" % len(out)]) + out)
        return True

    def _bad_json(self, conn, path, body, headers):
        # invalid events between good ones
        n = int(body.get("n", 1))
        out = sse({"choices": [{"index": 0, "text": "tot", "finish_reason": None}]})
        out += b'data: {"choices": [{"index": 0, "text": "al\n\n'
        out += b"data: <html>\xff\xfe not json\n\n"
        out += b'data: {"choices": 5}\n\n'
        out += good_events(n)
        conn.sendall(head(extra=["Content-Length: %d" % len(out)]) + out)
        return True

    def _close_mid_event(self, conn, path, body, headers):
        conn.sendall(head(extra=["Transfer-Encoding: chunked"]) +
                     chunk(sse({"choices": [{"index": 0, "text": "tot"}]})) +
                     chunk(b'data: {"choices": [{"index": 0, "te'))
        conn.shutdown(socket.SHUT_RDWR)
        return False

    def _close_mid_event_plain(self, conn, path, body, headers):
        # a body that ends when the connection does (no length, no chunks)
        conn.sendall(head(extra=["Connection: close"]) +
                     b'data: {"choices": [{"index": 0, "text": "tot", "fin')
        conn.shutdown(socket.SHUT_RDWR)
        return False

    def _close_mid_json(self, conn, path, body, headers):
        data = json.dumps({"choices": [{"index": 0, "text": ANSWER,
                                        "finish_reason": "stop"}]}).encode()
        conn.sendall(head(ctype="application/json", extra=["Connection: close"]) +
                     data[:len(data) // 2])
        conn.shutdown(socket.SHUT_RDWR)
        return False

    def _html_502(self, conn, path, body, headers):
        conn.sendall(head("502 Bad Gateway", "text/html",
                          ["Content-Length: %d" % len(HTML_502)]) + HTML_502)
        return True

    def _html_401(self, conn, path, body, headers):
        page = html_401(headers.get("authorization", ""))
        conn.sendall(head("401 Unauthorized", "text/html; charset=utf-8",
                          ["Content-Length: %d" % len(page)]) + page)
        return True

    def _text_401(self, conn, path, body, headers):
        # a plain-text refusal that quotes the key on its first line
        page = ("invalid credentials: %s\n" % headers.get("authorization", "")).encode()
        conn.sendall(head("401 Unauthorized", "text/plain",
                          ["Content-Length: %d" % len(page)]) + page)
        return True

    def _json_403(self, conn, path, body, headers):
        # OpenAI's shape, the key quoted in the message
        key = headers.get("authorization", "").replace("Bearer ", "")
        page = json.dumps({"error": {"message": "Incorrect API key provided: %s." % key,
                                     "type": "invalid_request_error"}}).encode()
        conn.sendall(head("403 Forbidden", "application/json",
                          ["Content-Length: %d" % len(page)]) + page)
        return True

    def _redirect(self, conn, path, body, headers):
        page = b"<html><head><title>301 Moved Permanently</title></head></html>"
        conn.sendall(head("301 Moved Permanently", "text/html",
                          ["Location: https://someone:moved-pass@elsewhere.invalid" + path,
                           "Content-Length: %d" % len(page)]) + page)
        return True

    def _not_http(self, conn, path, body, headers):
        # another protocol on that port (an SSH banner, say)
        conn.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
        self._wait_gone(conn, 2)
        return False

    def _html_404(self, conn, path, body, headers):
        # a web server where the API should be: every path is missing
        page = b"<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n" \
               b"<title>404 Not Found</title>\n</head><body>\n<h1>Not Found</h1>\n" \
               b"<p>The requested URL was not found on this server.</p>\n</body></html>\n"
        conn.sendall(head("404 Not Found", "text/html; charset=iso-8859-1",
                          ["Content-Length: %d" % len(page)]) + page)
        return True

    def _stall(self, conn, path, body, headers):
        # one event with text at once, then nothing: the deadline cuts it
        conn.sendall(head(extra=["Transfer-Encoding: chunked"]) +
                     chunk(sse({"choices": [{"index": 0, "text": "total",
                                             "finish_reason": None}]})))
        self._wait_gone(conn)
        return False

    def _html_200(self, conn, path, body, headers):
        # a captive portal or a web UI where the API should be
        page = b"<!doctype html><html><head><title>Sign in - Guest Wi-Fi</title></head>" \
               b"<body><form>...</form></body></html>\n"
        conn.sendall(head("200 OK", "text/html", ["Content-Length: %d" % len(page)]) + page)
        return True

    def _html_500_endless(self, conn, path, body, headers):
        # an error page that never ends: the status is known at once
        conn.sendall(head("500 Internal Server Error", "text/html",
                          ["Transfer-Encoding: chunked"]) +
                     chunk(b"<html><head><title>500 Internal Server Error</title></head>"))
        end = time.monotonic() + 30
        while time.monotonic() < end and not self.stopping.is_set():
            conn.sendall(chunk(b"<p>" + b"stack frame " * 80 + b"</p>\n"))
            time.sleep(0.02)
        return False


MODES = sorted(n[1:].replace("_", "-") for n in vars(RawServer)
               if n.startswith("_") and not n.startswith("__")
               and n[1:] not in ("accept", "read_request", "serve", "wait_gone", "drip"))
