"""Encoding of one record as ``.npy`` / ``.npz`` bytes, fast (for ``spelt convert``).

The bytes are those numpy itself reads: ``numpy.load(io.BytesIO(record))`` gives the array
(``.npy``) or an NpzFile of the named arrays (``.npz``, a stored zip of ``name.npy`` members,
as ``numpy.savez`` writes). Written here directly because ``numpy.savez`` goes through
``zipfile`` and costs tens of microseconds per record. Object arrays are refused (they would
need pickle): ValueError naming the field.
"""

from __future__ import annotations

import functools
import io
import struct
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

_HEADERS: dict[tuple[str, tuple[int, ...]], bytes] = {}
_DOS_DATE = 0x21  # 1980-01-01, as zipfile writes for no timestamp
# Zip headers of stored members (version 2.0), in pieces: the head, the CRC and sizes, the
# rest (_member_fields); a central header ends with its local header's offset and the name.
_LOCAL_HEAD = struct.Struct("<IHHHHH")
_CENTRAL_HEAD = struct.Struct("<IHHHHHH")
_SIZES = struct.Struct("<III")  # CRC-32, compressed size, size
_NAME_LENGTHS = struct.Struct("<HH")
_LOCAL_HEADER_SIZE = _LOCAL_HEAD.size + _SIZES.size + _NAME_LENGTHS.size  # before the name
_CENTRAL_NAME = struct.Struct("<HHHHHI")
_U32 = struct.Struct("<I")
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
    return _zip(
        [f"{name}.npy".encode() for name in fields],
        [npy_bytes(value, f"field {name!r}") for name, value in fields.items()],
    )


def _column_npys(name: str, column: np.ndarray) -> list[bytes]:
    """``npy_bytes(column[i])`` for each row i of ``column``; the rows of a numeric column are
    cut from one copy of its bytes under one header."""
    if column.dtype.hasobject:
        return [npy_bytes(value, f"field {name!r}") for value in column]
    header = _header(column.dtype, column.shape[1:])
    data = np.ascontiguousarray(column).tobytes()
    width = len(data) // len(column) if len(column) else 0
    return [header + data[i * width : (i + 1) * width] for i in range(len(column))]


def npz_records(names: Sequence[str], columns: Sequence[np.ndarray]) -> Iterator[bytes]:
    """``npz_bytes({names[j]: columns[j][i] ...})`` for each row i of the columns (arrays of
    equal length along axis 0, one per name), faster than one npz_bytes call per row."""
    filenames = [f"{name}.npy".encode() for name in names]
    npys = [_column_npys(name, column) for name, column in zip(names, columns)]
    for datas in zip(*npys):
        yield _zip(filenames, datas)


def _zip(filenames: Sequence[bytes], datas: Sequence[bytes]) -> bytes:
    """A stored (uncompressed) zip archive of the members ``filenames[j]: datas[j]`` (UTF-8
    names), as ``zipfile`` writes it (no timestamp, no extra fields)."""
    parts, central, offset = [], [], 0
    for filename, data in zip(filenames, datas):
        size = len(data)
        sizes = _SIZES.pack(zlib.crc32(data), size, size)
        local_head, local_tail, central_head, central_tail = _member_fields(filename)
        parts += (local_head, sizes, local_tail, data)
        central += (central_head, sizes, central_tail, _U32.pack(offset), filename)
        offset += _LOCAL_HEADER_SIZE + len(filename) + size
    directory = b"".join(central)
    end = _END.pack(0x06054B50, 0, 0, len(filenames), len(filenames), len(directory), offset, 0)
    return b"".join(parts) + directory + end


@functools.lru_cache(maxsize=1024)
def _member_fields(filename: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    """The header fields of a member that do not depend on its data: (local header up to the
    CRC, local header after the sizes with the name, central header up to the CRC, central
    header after the sizes up to the offset). Flag bit 11 marks a non-ASCII (UTF-8) name."""
    flags = 0 if filename.isascii() else 0x800
    return (
        _LOCAL_HEAD.pack(0x04034B50, 20, flags, 0, 0, _DOS_DATE),
        _NAME_LENGTHS.pack(len(filename), 0) + filename,
        _CENTRAL_HEAD.pack(0x02014B50, 20, 20, flags, 0, 0, _DOS_DATE),
        _CENTRAL_NAME.pack(len(filename), 0, 0, 0, 0, 0),
    )
