"""The Python face shared by Spelt's record-file writers (ArrayRecord, TFRecord)."""

from __future__ import annotations

import contextlib
import os
from typing import Any


class RecordWriter:
    """Appends bytes records to one file through a native writer (``write``, ``num_records``,
    ``close``). Not thread-safe.

    ``close()`` finishes the file (records are readable only after it) and is idempotent. As a
    context manager, an exception in the ``with`` block abandons the file and removes it, so
    that no partial file is left looking complete.
    """

    def __init__(self, path: str, native: Any, files: Any = None):
        self._path = path
        self._writer = native
        self._files = files  # spelt._file_system.Files, or None for a local file

    def write(self, record: bytes) -> None:
        """Appends one record (bytes-like; TypeError for str). ValueError after close()."""
        if self._writer is None:
            raise ValueError(f"write() on closed {type(self).__name__}({self._path!r})")
        if isinstance(record, str):
            raise TypeError(f"a record must be bytes, not str (encode it first): {record[:40]!r}")
        self._writer.write(bytes(record))

    @property
    def num_records(self) -> int:
        """Records written so far (0 after close())."""
        return 0 if self._writer is None else self._writer.num_records

    def close(self) -> None:
        """Finishes and closes the file; idempotent."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
            return
        self._writer = None  # the native writer closes its file unfinished (remote: discards it)
        if self._files is None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self._path)
