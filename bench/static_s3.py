"""A read-only S3 endpoint over a local folder, with a round trip added to every request: the
store of bench_remote.py.

``HEAD /bucket/key`` and ``GET /bucket/key`` (with or without ``Range: bytes=a-b``) answer from
``folder/bucket/key`` with Content-Length, Content-Range, ETag and Last-Modified, as S3 does;
signatures are not checked. Each request waits ``rtt_s`` before its answer (the store's round
trip: this machine's kernel has no ``sch_netem``, so ``tc netem`` cannot add it on the wire);
connections are kept alive, as clients' pools keep them. Counts requests and the most served at
once (``GET /_stats`` answers them as JSON). Thread-safe; one thread per connection.

``python bench/static_s3.py FOLDER RTT_S`` serves in its own process (so that the server's
Python does not share the client's GIL) and prints its endpoint; :class:`StoreProcess` runs it.
"""

from __future__ import annotations

import email.utils
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # many clients connect at once (the default 5 drops SYNs)


class StaticS3:
    """The server, started on construction on 127.0.0.1; ``close()`` stops it."""

    def __init__(self, folder: str, rtt_s: float = 0.0):
        self.folder = folder
        self.rtt_s = rtt_s
        self.requests = 0
        self.peak_concurrent = 0
        self._concurrent = 0
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802  (http.server's names)
                server.answer(self, body=True)

            def do_HEAD(self):  # noqa: N802
                server.answer(self, body=False)

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return "127.0.0.1:%d" % self._server.server_address[1]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, handler, body: bool) -> None:
        with self._lock:
            self.requests += 1
            self._concurrent += 1
            self.peak_concurrent = max(self.peak_concurrent, self._concurrent)
        try:
            time.sleep(self.rtt_s)
            self._answer(handler, body)
        finally:
            with self._lock:
                self._concurrent -= 1

    def _answer(self, handler, body: bool) -> None:
        if handler.path == "/_stats":
            data = json.dumps({"requests": self.requests, "peak": self.peak_concurrent}).encode()
            handler.send_response(200)
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        path = os.path.join(self.folder, handler.path.split("?")[0].lstrip("/"))
        if not os.path.isfile(path):
            handler.send_response(404)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        st = os.stat(path)
        start, stop = 0, st.st_size
        match = _RANGE.fullmatch(handler.headers.get("Range", ""))
        if match:
            start = int(match[1])
            stop = min(int(match[2]) + 1 if match[2] else st.st_size, st.st_size)
        handler.send_response(206 if match else 200)
        handler.send_header("Content-Length", str(stop - start))
        if match:
            handler.send_header("Content-Range", f"bytes {start}-{stop - 1}/{st.st_size}")
        handler.send_header("ETag", f'"{st.st_mtime_ns:x}-{st.st_size:x}"')
        handler.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        handler.send_header("Accept-Ranges", "bytes")
        handler.end_headers()
        if body:
            with open(path, "rb") as f:
                handler.wfile.write(os.pread(f.fileno(), stop - start, start))


class StoreProcess:
    """StaticS3 in a child process; ``stats()`` reads its counters, ``close()`` ends it."""

    def __init__(self, folder: str, rtt_s: float):
        self._process = subprocess.Popen(
            [sys.executable, __file__, folder, str(rtt_s)], stdout=subprocess.PIPE, text=True
        )
        self.endpoint = self._process.stdout.readline().strip()

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"http://{self.endpoint}/_stats") as r:
            return json.loads(r.read())

    def close(self) -> None:
        self._process.terminate()
        self._process.wait()


if __name__ == "__main__":
    store = StaticS3(sys.argv[1], float(sys.argv[2]))
    print(store.endpoint, flush=True)
    threading.Event().wait()
