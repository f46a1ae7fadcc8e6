"""The ``spelt`` command line (also ``python -m spelt``).

  spelt inspect FILE...      facts about ArrayRecord files
  spelt convert INPUT... -o PREFIX [--num-shards N] [--compression C] [--group-size G]
                             .npy / .npz files (or directories of them) to ArrayRecord shards

``convert`` writes one record per row (index along axis 0): the row in ``.npy`` format for
a .npy input, or an ``.npz`` of the rows of every array for a .npz input (all arrays must have
the same number of rows). Decode a record with ``numpy.load(io.BytesIO(record))``. Inputs are
concatenated in order; rows are split into contiguous shards ``PREFIX-00000-of-0000N``.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from typing import Iterator, Sequence

import numpy as np

from spelt import array_record
from spelt import sharding


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _inspect(files: Sequence[str]) -> int:
    status = 0
    for path in files:
        try:
            facts = array_record.info(path)
        except (OSError, ValueError, NotImplementedError) as e:
            print(f"{path}: error: {e}", file=sys.stderr)
            status = 1
            continue
        print(path)
        print(f"  records:        {facts['num_records']:,}")
        print(f"  chunks:         {facts['num_chunks']:,} (group size {facts['group_size']})")
        print(f"  compression:    {facts['compression'] or '-'}")
        print(f"  file size:      {_human(facts['file_size'])} ({facts['file_size']:,} bytes)")
        print(
            f"  record bytes:   {_human(facts['decoded_bytes'])} ({facts['decoded_bytes']:,} bytes)"
        )
        print(f"  writer options: {facts['writer_options']}")
    return status


def _input_files(inputs: Sequence[str]) -> list[str]:
    files: list[str] = []
    for item in inputs:
        if os.path.isdir(item):
            found = sorted(
                os.path.join(item, name)
                for name in os.listdir(item)
                if name.endswith((".npy", ".npz"))
            )
            if not found:
                raise ValueError(f"no .npy or .npz files in directory {item!r}")
            files.extend(found)
        elif item.endswith((".npy", ".npz")):
            files.append(item)
        else:
            raise ValueError(f"{item!r} is not a .npy or .npz file or a directory")
    return files


def _rows(path: str) -> tuple[int, Iterator[bytes]]:
    """(number of rows, iterator of encoded rows) of one input file. ValueError names the file."""
    try:
        return _load_rows(path)
    except ValueError as e:  # numpy's messages (not a .npy file, object arrays) omit the path
        if str(e).startswith(f"{path}:"):
            raise
        raise ValueError(f"{path}: cannot read: {e}") from e


def _load_rows(path: str) -> tuple[int, Iterator[bytes]]:
    if path.endswith(".npy"):
        array = np.load(path, mmap_mode="r", allow_pickle=False)
        if array.ndim == 0:
            raise ValueError(f"{path}: a 0-d array has no rows")

        def npy_rows() -> Iterator[bytes]:
            for row in array:
                buf = io.BytesIO()
                np.save(buf, np.asarray(row), allow_pickle=False)
                yield buf.getvalue()

        return len(array), npy_rows()
    arrays = np.load(path, allow_pickle=False)
    if not arrays.files:
        raise ValueError(f"{path}: the .npz file holds no arrays")
    columns = {key: arrays[key] for key in arrays.files}
    for key, column in columns.items():
        if column.ndim == 0:
            raise ValueError(f"{path}: array {key!r} is 0-d and has no rows")
    lengths = {key: len(column) for key, column in columns.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"{path}: arrays have different numbers of rows: {lengths}")
    n = next(iter(lengths.values()))

    def npz_rows() -> Iterator[bytes]:
        for i in range(n):
            buf = io.BytesIO()
            np.savez(buf, **{key: column[i] for key, column in columns.items()})
            yield buf.getvalue()

    return n, npz_rows()


class _Progress:
    """A one-line progress bar on stderr, redrawn at most 10 times a second."""

    def __init__(self, total: int, label: str):
        self._total, self._label = total, label
        self._start = self._last = time.monotonic()
        self._done = 0

    def advance(self, n: int = 1) -> None:
        self._done += n
        now = time.monotonic()
        if now - self._last >= 0.1 or self._done == self._total:
            self._last = now
            frac = self._done / self._total if self._total else 1.0
            bar = "#" * int(30 * frac)
            rate = self._done / max(now - self._start, 1e-9)
            sys.stderr.write(
                f"\r{self._label} [{bar:<30}] {self._done:,}/{self._total:,} ({rate:,.0f}/s)"
            )
            if self._done == self._total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _convert(args: argparse.Namespace) -> int:
    files = _input_files(args.inputs)
    sources = [_rows(path) for path in files]
    total = sum(n for n, _ in sources)
    if total == 0:
        raise ValueError("the inputs have no rows")
    if args.num_shards <= 0:
        raise ValueError(f"--num-shards must be positive, got {args.num_shards}")
    options = f"group_size:{args.group_size},{args.compression}"
    rows = (row for _, it in sources for row in it)
    progress = _Progress(total, "convert")
    outputs = []
    for shard in range(args.num_shards):
        start, end = sharding.even_split(total, sharding.ShardOptions(shard, args.num_shards))
        path = f"{args.output}-{shard:05d}-of-{args.num_shards:05d}"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with array_record.ArrayRecordWriter(path, options) as writer:
            for _ in range(end - start):
                writer.write(next(rows))
                progress.advance()
        outputs.append(path)
    print(f"wrote {total:,} records to {len(outputs)} shard(s): {args.output}@{args.num_shards}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the `spelt` command with `argv` (default: sys.argv[1:]); returns the exit code."""
    parser = argparse.ArgumentParser(prog="spelt", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    inspect = commands.add_parser("inspect", help="facts about ArrayRecord files")
    inspect.add_argument("files", nargs="+")
    convert = commands.add_parser("convert", help=".npy/.npz to ArrayRecord shards")
    convert.add_argument("inputs", nargs="+", help=".npy/.npz files or directories")
    convert.add_argument("-o", "--output", required=True, help="output path prefix")
    convert.add_argument("--num-shards", type=int, default=1)
    convert.add_argument(
        "--compression",
        default="zstd:3",
        help="uncompressed, zstd[:level], brotli[:level] or snappy",
    )
    convert.add_argument("--group-size", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        if args.command == "inspect":
            return _inspect(args.files)
        return _convert(args)
    except (OSError, ValueError) as e:
        print(f"spelt {args.command}: error: {e}", file=sys.stderr)
        return 1
