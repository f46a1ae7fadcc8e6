"""A GCS emulator (gcp-storage-emulator, in memory) on loopback for the remote-file tests, and
pyarrow's and gcsfs's clients of it. Import the fixtures: ``gcs_endpoint`` (one emulator per
test module, with the bucket ``BUCKET``: its "host:port"), ``gcs`` (a
``pyarrow.fs.GcsFileSystem`` pointed at it) and ``gcsfs_fs`` (gcsfs's plain fsspec filesystem
pointed at it: ``gcsfs.core.GCSFileSystem``, not the class that ``gcsfs.GCSFileSystem`` names
by default, whose bucket-type lookup over gRPC waits 60 s on an emulator).

The emulator runs in its own process: pyarrow's GCS client holds the GIL while it opens a file,
so an emulator thread of the test process could not answer."""

import datetime
import socket
import subprocess
import sys
import time

import pyarrow.fs as pafs
import pytest

BUCKET = "bucket"
_SERVE = (
    "import sys, threading\n"
    "from gcp_storage_emulator.server import create_server\n"
    "create_server('127.0.0.1', int(sys.argv[1]), in_memory=True, default_bucket=sys.argv[2]).start()\n"
    "threading.Event().wait()\n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gcs_endpoint():
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-c", _SERVE, str(port), BUCKET])
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the GCS emulator did not start") from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


@pytest.fixture(scope="module")
def gcs(gcs_endpoint):  # pylint: disable=redefined-outer-name
    return pafs.GcsFileSystem(
        endpoint_override=gcs_endpoint,
        scheme="http",
        anonymous=True,
        retry_time_limit=datetime.timedelta(seconds=30),
    )


@pytest.fixture(scope="module")
def gcsfs_fs(gcs_endpoint):  # pylint: disable=redefined-outer-name
    import gcsfs.core  # pylint: disable=import-outside-toplevel  (requirements-dev.txt)

    return gcsfs.core.GCSFileSystem(
        endpoint_url=f"http://{gcs_endpoint}", token="anon", project="test"
    )
