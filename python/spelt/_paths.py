"""Local file paths for the readers and writers that libspelt opens itself.

``file://`` URIs (RFC 8089) name local files and become plain paths here, so that Python's
own file functions (glob, os.path) see them too. Other URIs go through
``spelt._file_system`` (pyarrow.fs or fsspec).
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlsplit

PathLike = str | os.PathLike

_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")


def local_path(path: PathLike, what: str) -> str:
    """``path`` as a local path string: a ``file://`` URI becomes its path.

    Raises ValueError naming ``what`` for a ``file://`` URI naming another host, or for a URI
    of another scheme (callers route those through ``spelt._file_system``).
    """
    path = os.fspath(path)
    match = _URI.match(path)
    if match is None:
        return path
    if match["scheme"].lower() != "file":
        raise ValueError(f"{what}: {path!r} is not a local path")
    parts = urlsplit(path)
    if parts.netloc not in ("", "localhost"):
        raise ValueError(
            f"{what}: {path!r} names host {parts.netloc!r}; file:// URIs must be local"
        )
    return unquote(parts.path)
