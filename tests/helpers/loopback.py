"""A real HTTP server on 127.0.0.1 for tests: routes map paths to handlers, every request logged.

    with LoopbackServer() as srv:
        srv.route("/models", lambda req: Reply(200, body=b"{}", headers={"ETag": '"a"'}))
        requests.get(srv.url + "/models")
        assert srv.requests[0].path == "/models"
"""
from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str  # without the query
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float  # time.perf_counter() when the request was read: the clock the bench client times with
    # for streamed replies, the perf_counter() just before each chunk was written
    chunks_sent_at: list[float] = field(default_factory=list)


@dataclass
class Reply:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # for streaming: a list of (delay_s, chunk) written one by one with flushes
    chunks: list[tuple[float, bytes]] | None = None


Handler = Callable[[Request], Reply]


class _QuietServer(ThreadingHTTPServer):
    """A client hanging up (timeouts, dropped streams) is normal in tests, not worth a traceback."""

    def handle_error(self, request, client_address):
        import sys
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class LoopbackServer:
    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.prefix_routes: list[tuple[str, Handler]] = []
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body are two writes: with Nagle's algorithm the body waited for the
            # client's delayed ACK, ~40 ms a request on a kept-alive connection
            disable_nagle_algorithm = True

            def log_message(self, *args):  # quiet
                pass

            def _handle(self):
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(self.command, parts.path, parse_qs(parts.query),
                              {k.lower(): v for k, v in self.headers.items()}, body, time.perf_counter())
                with server._lock:
                    server.requests.append(req)
                handler = server.find(parts.path)
                reply = handler(req) if handler else Reply(404, b"not found")
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    if reply.chunks is not None:
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        for delay, chunk in reply.chunks:
                            if delay:
                                time.sleep(delay)
                            req.chunks_sent_at.append(time.perf_counter())
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                        return
                    data = reply.body.encode() if isinstance(reply.body, str) else reply.body
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_HEAD = _handle

        self.httpd = _QuietServer(("127.0.0.1", 0), _H)
        self.httpd.daemon_threads = True
        # a short poll interval so leaving the `with` block (shutdown) takes ms, not 0.5 s
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def route(self, path: str, handler: Handler | Reply) -> None:
        self.routes[path] = handler if callable(handler) else (lambda req, r=handler: r)

    def route_prefix(self, prefix: str, handler: Handler) -> None:
        self.prefix_routes.append((prefix, handler))

    def find(self, path: str) -> Handler | None:
        if path in self.routes:
            return self.routes[path]
        for prefix, handler in self.prefix_routes:
            if path.startswith(prefix):
                return handler
        return None

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    def __enter__(self) -> "LoopbackServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class RawRequest:
    """What a RawServer read of a request: its line and headers (lower-case names)."""

    method: str
    target: str  # as sent: a path, or a whole URL when the client talks to a proxy
    headers: dict[str, str]


class RawServer:
    """A TCP server on 127.0.0.1 whose handler writes every byte of the answer itself, as a
    misbehaving or old server would: headers a byte at a time, HTTP/1.0, a reset mid-body.

        def answer(req, conn):
            conn.sendall(b"HTTP/1.0 200 OK\\r\\n\\r\\nhello")
        with RawServer(answer) as srv:
            requests.get(srv.url + "/")

    One request per connection; the server closes it when the handler returns. `stopping` is set
    when the `with` block ends: a handler that trickles checks it so that no thread outlives the test.
    """

    def __init__(self, handler: Callable[[RawRequest, socket.socket], None]) -> None:
        self.handler = handler
        self.requests: list[RawRequest] = []
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._accepting = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(10)
            head = b""
            try:
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    data = conn.recv(4096)
                    if not data:
                        return
                    head += data
                line, *lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
                method, target, _version = line.split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in lines if ":" in h)}
                req = RawRequest(method, target, headers)
                self.requests.append(req)
                self.handler(req, conn)
            except OSError:
                pass  # the client hung up: normal for the tests that cut a server off

    def sleep(self, seconds: float) -> None:
        """Wait in a handler, returning early when the server stops."""
        self.stopping.wait(seconds)

    def __enter__(self) -> "RawServer":
        self._accepting.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self._accepting.join()
        self._listener.close()
        for t in self._threads:
            t.join(timeout=10)
