"""A small HTTP proxy on loopback that injects faults into an S3 server's answers (for
tests/test_remote_faults.py).

Every request is forwarded to the upstream server as it came (the Host header included, so
signatures hold). Ranged GETs (reads of object bytes) are counted, with the most in flight at
once, and can be held (:meth:`FaultProxy.hold_until`) until a given number are in flight at
once, so that a client's concurrency shows whatever the machine's load. Faults queued with
:meth:`FaultProxy.inject` apply, one each, to the next ranged GETs (reads of object bytes):

* ``"503"``: answered 503 SlowDown without reaching the server (throttling);
* ``"500"``: answered 500 InternalError;
* ``"reset"``: the headers and half the body are sent, then the connection is reset (RST);
* ``"truncate"``: the headers promise the whole body, half is sent, the connection closes.
"""

from __future__ import annotations

import collections
import http.client
import http.server
import socket
import struct
import threading
import time

FAULTS = ("503", "500", "reset", "truncate")
_ERRORS = {
    "503": (503, "SlowDown", "Please reduce your request rate."),
    "500": (500, "InternalError", "We encountered an internal error. Please try again."),
}
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # many clients connect at once (the default 5 drops SYNs)


class FaultProxy:
    """The proxy, started on construction; ``close()`` stops it. Thread-safe."""

    def __init__(self, upstream: str):
        self.upstream = upstream  # "host:port"
        self._faults: collections.deque[str] = collections.deque()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._hold_for = 0  # ranged GETs wait until this many are in flight (0: no wait)
        self._hold_deadline = 0.0
        self.ranged_gets = 0  # ranged GETs seen, faulty ones included
        self.range_lengths: list[int] = []  # bytes each ranged GET asked for, in arrival order
        self.peak_concurrent = 0  # the most ranged GETs in flight at once
        self._concurrent = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802  (http.server's names)
                proxy.forward(self)

            do_HEAD = do_PUT = do_POST = do_DELETE = do_GET  # noqa: N815

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def inject(self, *faults: str) -> None:
        """Queues ``faults`` (names of FAULTS) for the next ranged GETs, in order."""
        assert all(f in FAULTS for f in faults), faults
        with self._lock:
            self._faults.extend(faults)

    def hold_until(self, count: int, timeout_s: float = 30.0) -> None:
        """Holds each next ranged GET until ``count`` are in flight at once (then all go, and
        later ones are not held), or until ``timeout_s`` has passed."""
        with self._lock:
            self._hold_for = count
            self._hold_deadline = time.monotonic() + timeout_s

    def clear(self) -> None:
        """Drops queued faults, the hold (releasing the held GETs) and the counts."""
        with self._lock:
            self._faults.clear()
            self._hold_for = 0
            self._changed.notify_all()
            self.ranged_gets = self.peak_concurrent = 0
            self.range_lengths = []

    def pending(self) -> int:
        """Faults queued and not yet applied."""
        with self._lock:
            return len(self._faults)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _take(self, handler) -> str | None:
        if handler.command != "GET" or "Range" not in handler.headers:
            return None
        first, _, last = handler.headers["Range"].removeprefix("bytes=").partition("-")
        with self._lock:
            self.ranged_gets += 1
            self.range_lengths.append(int(last) - int(first) + 1 if last else -1)
            return self._faults.popleft() if self._faults else None

    def forward(self, handler) -> None:
        ranged = handler.command == "GET" and "Range" in handler.headers
        if ranged:
            with self._changed:
                self._concurrent += 1
                self.peak_concurrent = max(self.peak_concurrent, self._concurrent)
                if self._hold_for and self._concurrent >= self._hold_for:
                    self._hold_for = 0  # reached: release them all
                    self._changed.notify_all()
                while self._hold_for and time.monotonic() < self._hold_deadline:
                    self._changed.wait(self._hold_deadline - time.monotonic())
        try:
            self._forward(handler)
        finally:
            if ranged:
                with self._lock:
                    self._concurrent -= 1

    def _forward(self, handler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        fault = self._take(handler)
        if fault in _ERRORS:
            status, code, message = _ERRORS[fault]
            data = (
                f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
                f"<Message>{message}</Message></Error>"
            ).encode()
            handler.send_response(status)
            handler.send_header("Content-Type", "application/xml")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        conn = http.client.HTTPConnection(self.upstream, timeout=30)
        try:
            conn.request(handler.command, handler.path, body, headers=dict(handler.headers))
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        handler.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in _HOP_BY_HOP:
                handler.send_header(key, value)
        if handler.command == "HEAD":
            handler.send_header("Content-Length", response.getheader("Content-Length", "0"))
            handler.end_headers()
            return
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if fault is None:
            handler.wfile.write(data)
            return
        handler.wfile.write(data[: len(data) // 2])
        handler.wfile.flush()
        handler.close_connection = True
        if fault == "reset":  # SO_LINGER 0: close() sends RST
            handler.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
        else:
            handler.connection.shutdown(socket.SHUT_RDWR)
        handler.connection.close()
