"""A read-only S3 endpoint over a local folder, served by nginx (Debian's ``nginx-light`` with
``libnginx-mod-http-lua``), with a round trip added to every request: the store of
bench_remote.py's read cases, so that the store's CPU does not bound what the client carries
(issue 21 asks for such a server; bench/static_s3.py, in Python, took about half of this
2-core machine at 0 ms).

``HEAD /bucket/key`` and ``GET /bucket/key`` (with or without ``Range: bytes=a-b``) answer from
``folder/bucket/key`` with Content-Length, Content-Range, ETag and Last-Modified, as S3 does
(nginx's static files; sendfile). Each request waits ``rtt_s`` before its answer, in the
server (``ngx.sleep``: this machine's kernel has no ``sch_netem``, so ``tc netem`` cannot add
it on the wire). ``GET /_stats`` answers ``{"requests": n, "peak": m}``, m the most requests
served at once, as static_s3.StoreProcess does. Connections are kept alive. No writes, no
listing (bench_remote.py's writes use static_s3).

:func:`available` says whether nginx and the Lua module are installed (``make bench`` installs
them); :class:`NginxStore` runs one server and ``close()`` stops it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

_MODULES = "/usr/lib/nginx/modules"
_LUA = ("ndk_http_module.so", "ngx_http_lua_module.so")

_CONF = """
load_module {modules}/ndk_http_module.so;
load_module {modules}/ngx_http_lua_module.so;
{user}worker_processes 1;
daemon off;
pid {run}/nginx.pid;
error_log {run}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {run}/body;
  proxy_temp_path {run}/proxy;
  fastcgi_temp_path {run}/fastcgi;
  uwsgi_temp_path {run}/uwsgi;
  scgi_temp_path {run}/scgi;
  sendfile on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  keepalive_timeout 600s;
  lua_shared_dict stats 1m;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location = /_stats {{
      content_by_lua_block {{
        local d = ngx.shared.stats
        ngx.say(string.format('{{"requests": %d, "peak": %d}}',
                              d:get("requests") or 0, d:get("peak") or 0))
      }}
    }}
    location / {{
      access_by_lua_block {{
        local d = ngx.shared.stats
        d:incr("requests", 1, 0)
        local now = d:incr("now", 1, 0)
        if now > (d:get("peak") or 0) then d:set("peak", now) end
        ngx.ctx.counted = true
        if {rtt_s} > 0 then ngx.sleep({rtt_s}) end
      }}
      log_by_lua_block {{
        if ngx.ctx.counted then ngx.shared.stats:incr("now", -1, 0) end
      }}
    }}
  }}
}}
"""


def available() -> bool:
    return shutil.which("nginx") is not None and all(
        os.path.exists(os.path.join(_MODULES, m)) for m in _LUA
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NginxStore:
    """nginx serving ``folder`` on 127.0.0.1 after ``rtt_s``; the interface of
    static_s3.StoreProcess (``endpoint``, ``stats()``, ``close()``)."""

    def __init__(self, folder: str, rtt_s: float):
        self._run = tempfile.mkdtemp(prefix="nginx-s3-")
        port = _free_port()
        conf = os.path.join(self._run, "nginx.conf")
        with open(conf, "w") as f:
            f.write(
                _CONF.format(
                    modules=_MODULES,
                    run=self._run,
                    port=port,
                    root=os.path.abspath(folder),
                    rtt_s=rtt_s,
                    # As root, nginx's worker would run as nobody, who cannot read a private
                    # folder: it runs as the caller instead.
                    user="user root;\n" if os.geteuid() == 0 else "",
                )
            )
        self._process = subprocess.Popen(["nginx", "-c", conf, "-e", f"{self._run}/error.log"])
        self.pid = self._process.pid  # the master; its worker is a child (proc_stats.cpu_seconds)
        self.endpoint = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while True:
            try:
                self.stats()
                return
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    with open(os.path.join(self._run, "error.log")) as log:
                        error = log.read()
                    self.close()
                    raise RuntimeError(f"nginx did not start: {error}") from None
                time.sleep(0.05)

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"http://{self.endpoint}/_stats", timeout=5) as r:
            return json.loads(r.read())

    def close(self) -> None:
        self._process.terminate()
        self._process.wait()
        shutil.rmtree(self._run, ignore_errors=True)
