"""The Python face shared by Spelt's random-access record-file sources (ArrayRecord,
TFRecord): a native source over a list of files whose record keys run across them in order."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, SupportsIndex


class FileSource:
    """``len()``, ``ds[i]`` (bytes; IndexError outside [0, len); TypeError for a non-integer)
    and ``__getitems__(keys)`` (one engine call) over ``self._source``, the native source that
    a subclass opens over ``self._paths``. The repr is array-record's (the class name and a
    SHA-1 of the paths) and goes into checkpoints. Thread-safe."""

    _paths: list[str]
    _source: Any

    @property
    def paths(self) -> list[str]:
        """The files, in record order (record keys count through them in this order)."""
        return list(self._paths)

    def __len__(self) -> int:
        return len(self._source)

    def __getitem__(self, record_key: SupportsIndex) -> bytes:
        key = operator.index(record_key)
        if key < 0 or key >= len(self):
            raise IndexError(f"record key {key} out of range [0, {len(self)}) of {self!r}")
        return self._source[key]

    def __getitems__(self, record_keys: Sequence[int]) -> list[bytes]:
        return self._source.read_many([operator.index(k) for k in record_keys])

    _getitems = __getitems__

    def _spelt_native_source(self) -> Any:
        return self._source

    def __repr__(self) -> str:
        import hashlib  # pylint: disable=import-outside-toplevel  # 3 ms of `import spelt`

        digest = hashlib.sha1()
        for path in self._paths:
            digest.update(path.encode())
        return f"{type(self).__name__}(hash_of_paths={digest.hexdigest()})"
