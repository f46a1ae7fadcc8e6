"""Local file paths for the readers and writers that open files themselves.

ArrayRecord and TFRecord files are opened by libspelt with POSIX calls, so they must be local
(or mounted, e.g. with gcsfuse). A URI such as ``gs://bucket/x`` or ``s3://bucket/x`` would be
taken as a relative path and silently create or read a local folder named ``gs:``; this
module refuses it with a clear error instead. ``file://`` URIs (RFC 8089) name local files
and are accepted. Parquet files are read through pyarrow, which opens remote URIs itself.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlsplit

PathLike = str | os.PathLike

_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")


def local_path(path: PathLike, what: str) -> str:
    """``path`` as a local path string: ``file://`` URIs become paths, other URIs are refused.

    Raises NotImplementedError naming ``what`` and the URI for a URI of any scheme other than
    ``file`` (remote object stores are not readable by this reader yet), and ValueError for a
    ``file://`` URI naming another host.
    """
    path = os.fspath(path)
    match = _URI.match(path)
    if match is None:
        return path
    scheme = match["scheme"].lower()
    if scheme != "file":
        raise NotImplementedError(
            f"{what}: {path!r} is a {scheme}:// URI, and this reader and writer open local"
            " files only; copy or mount the files locally (e.g. gcsfuse, mountpoint-s3), or"
            " use ParquetDataSource, which reads remote URIs through pyarrow"
        )
    parts = urlsplit(path)
    if parts.netloc not in ("", "localhost"):
        raise ValueError(
            f"{what}: {path!r} names host {parts.netloc!r}; file:// URIs must be local"
        )
    return unquote(parts.path)
