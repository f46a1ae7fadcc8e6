"""Encoding of one record as ``.npy`` / ``.npz`` bytes, fast (for ``spelt convert``).

The bytes are those numpy itself reads: ``numpy.load(io.BytesIO(record))`` gives the array
(``.npy``) or an NpzFile of the named arrays (``.npz``, a stored zip of ``name.npy`` members,
as ``numpy.savez`` writes). Written here directly because ``numpy.savez`` goes through
``zipfile`` and costs tens of microseconds per record. Object arrays are refused (they would
need pickle): ValueError naming the field.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

_HEADERS: dict[tuple[str, tuple[int, ...]], bytes] = {}
_DOS_DATE = 0x21  # 1980-01-01, as zipfile writes for no timestamp
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")


def _header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    key = (dtype.str if dtype.names is None else repr(dtype.descr), shape)
    header = _HEADERS.get(key)
    if header is None:
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            buf,
            {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape},
        )
        header = _HEADERS[key] = buf.getvalue()
    return header


def npy_bytes(value: Any, what: str = "value") -> bytes:
    """``value`` (an array, numpy scalar, str, bytes, number) as ``.npy`` bytes."""
    array = np.asarray(value)
    if array.dtype.hasobject:
        raise ValueError(f"{what}: cannot store {type(value).__name__} values of dtype object")
    return _header(array.dtype, array.shape) + np.ascontiguousarray(array).tobytes()


def npz_bytes(fields: Mapping[str, Any]) -> bytes:
    """The named values as ``.npz`` bytes (field order kept)."""
    parts, central, offset = [], [], 0
    for name, value in fields.items():
        data = npy_bytes(value, f"field {name!r}")
        filename = f"{name}.npy".encode()
        crc, size = zlib.crc32(data), len(data)
        local = _LOCAL.pack(0x04034B50, 20, 0, 0, 0, _DOS_DATE, crc, size, size, len(filename), 0)
        parts += (local, filename, data)
        central.append(
            _CENTRAL.pack(
                0x02014B50,
                20,
                20,
                0,
                0,
                0,
                _DOS_DATE,
                crc,
                size,
                size,
                len(filename),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + filename
        )
        offset += len(local) + len(filename) + size
    directory = b"".join(central)
    end = _END.pack(0x06054B50, 0, 0, len(central), len(central), len(directory), offset, 0)
    return b"".join(parts) + directory + end
