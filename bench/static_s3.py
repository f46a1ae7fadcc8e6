"""An S3 endpoint over a local folder, with a round trip added to every request: the store of
bench_remote.py.

``HEAD /bucket/key`` and ``GET /bucket/key`` (with or without ``Range: bytes=a-b``) answer from
``folder/bucket/key`` with Content-Length, Content-Range, ETag and Last-Modified, as S3 does.
Writes: ``PUT /bucket/key`` (PutObject), multipart uploads (``POST ?uploads``, ``PUT
?partNumber=&uploadId=``, ``POST ?uploadId=`` to complete, ``DELETE ?uploadId=`` to abort) and
``DELETE /bucket/key``; bodies may be sent chunked or aws-chunked. ``GET /bucket?list-type=2``
lists keys under ``prefix``. Signatures are not checked. Each request waits ``rtt_s`` before its
answer (the store's round trip: this machine's kernel has no ``sch_netem``, so ``tc netem``
cannot add it on the wire); connections are kept alive, as clients' pools keep them. Counts
requests and the most served at once (``GET /_stats`` answers them as JSON). Thread-safe; one
thread per connection.

``python bench/static_s3.py FOLDER RTT_S`` serves in its own process (so that the server's
Python does not share the client's GIL) and prints its endpoint; :class:`StoreProcess` runs it.
"""

from __future__ import annotations

import email.utils
import http.server
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid

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
        self._uploads: dict[str, dict[int, bytes]] = {}  # multipart uploads in progress
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: with Nagle's algorithm the second
            # waits for the client's delayed ACK (40 ms), which no store adds.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802  (http.server's names)
                server.answer(self, body=True)

            def do_HEAD(self):  # noqa: N802
                server.answer(self, body=False)

            def do_PUT(self):  # noqa: N802
                server.answer(self, body=True)

            def do_POST(self):  # noqa: N802
                server.answer(self, body=True)

            def do_DELETE(self):  # noqa: N802
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
            self._reply(handler, 200, data)
            return
        url = urllib.parse.urlsplit(handler.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        name = urllib.parse.unquote(url.path).lstrip("/")
        if handler.command != "GET" and handler.command != "HEAD":
            self._write(handler, name, query)
            return
        if "list-type" in query:
            self._list(handler, name, query.get("prefix", [""])[0])
            return
        path = os.path.join(self.folder, name)
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

    @staticmethod
    def _reply(handler, status: int, data: bytes = b"", headers: dict[str, str] | None = None):
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _body(handler) -> bytes:
        """The request's body: by Content-Length or chunked, aws-chunked decoded."""
        if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = _chunks(handler.rfile)
        else:
            data = handler.rfile.read(int(handler.headers.get("Content-Length", 0)))
        if "aws-chunked" in handler.headers.get("Content-Encoding", ""):
            data = _chunks(io.BytesIO(data))
        return data

    def _write(self, handler, name: str, query: dict[str, list[str]]) -> None:
        data = self._body(handler)
        path = os.path.join(self.folder, name)
        command = handler.command
        if command == "POST" and "uploads" in query:
            upload = uuid.uuid4().hex
            with self._lock:
                self._uploads[upload] = {}
            bucket, _, key = name.partition("/")
            xml = (
                "<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key>"
                "<UploadId>%s</UploadId></InitiateMultipartUploadResult>" % (bucket, key, upload)
            )
            self._reply(handler, 200, xml.encode())
        elif command == "PUT" and "uploadId" in query:
            with self._lock:
                self._uploads[query["uploadId"][0]][int(query["partNumber"][0])] = data
            self._reply(handler, 200, headers={"ETag": f'"{uuid.uuid4().hex}"'})
        elif command == "POST" and "uploadId" in query:
            with self._lock:
                parts = self._uploads.pop(query["uploadId"][0])
            self._store(path, b"".join(parts[n] for n in sorted(parts)))
            bucket, _, key = name.partition("/")
            xml = (
                "<CompleteMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key>"
                '<ETag>"%s"</ETag></CompleteMultipartUploadResult>'
                % (bucket, key, uuid.uuid4().hex)
            )
            self._reply(handler, 200, xml.encode())
        elif command == "PUT":
            self._store(path, data)
            self._reply(handler, 200, headers={"ETag": f'"{uuid.uuid4().hex}"'})
        elif command == "DELETE":
            if "uploadId" in query:
                with self._lock:
                    self._uploads.pop(query["uploadId"][0], None)
            elif os.path.isfile(path):
                os.remove(path)
            self._reply(handler, 204)
        else:
            self._reply(handler, 405)

    @staticmethod
    def _store(path: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if path.endswith("/"):  # a folder marker, as pyarrow writes them
            return
        with open(path, "wb") as f:
            f.write(data)

    def _list(self, handler, bucket: str, prefix: str) -> None:
        root = os.path.join(self.folder, bucket)
        entries = []
        for folder, _, names in os.walk(root):
            for n in names:
                key = os.path.relpath(os.path.join(folder, n), root)
                if key.startswith(prefix):
                    size = os.path.getsize(os.path.join(folder, n))
                    entries.append(
                        f"<Contents><Key>{key}</Key><Size>{size}</Size>"
                        "<LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents>"
                    )
        xml = (
            f"<ListBucketResult><Name>{bucket}</Name><Prefix>{prefix}</Prefix>"
            f"<KeyCount>{len(entries)}</KeyCount><IsTruncated>false</IsTruncated>"
            + "".join(sorted(entries))
            + "</ListBucketResult>"
        )
        self._reply(handler, 200, xml.encode())


def _chunks(stream) -> bytes:
    """The data of a chunked body: lines ``SIZE[;extensions]`` (hex), each followed by its
    bytes and a line end, then ``0``, trailers and an empty line."""
    out = []
    while True:
        size = int(stream.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while stream.readline().strip():  # trailers
                pass
            return b"".join(out)
        out.append(stream.read(size))
        stream.readline()


class StoreProcess:
    """StaticS3 in a child process; ``stats()`` reads its counters, ``close()`` ends it."""

    def __init__(self, folder: str, rtt_s: float):
        self._process = subprocess.Popen(
            [sys.executable, __file__, folder, str(rtt_s)], stdout=subprocess.PIPE, text=True
        )
        self.endpoint = self._process.stdout.readline().strip()
        self.pid = self._process.pid

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
