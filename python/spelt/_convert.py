"""``spelt convert``: inputs to ArrayRecord shards, with a manifest, resumable.

Records of all inputs, in order, are split into ``num_shards`` contiguous shards
``PREFIX-0000i-of-0000N`` (even split, as ``grain.sharding.even_split``). Each shard is written
under a hidden temporary name (``.NAME.partial`` in the same directory) and renamed when
complete, so a file with a shard's name is always a complete shard. The plan (inputs with
their sizes and modification times, options) is saved first in ``.PREFIX.convert.json``; a
conversion that was interrupted resumes when rerun with the same arguments (complete shards
are kept, the rest rewritten) and is refused with other ones. At the end ``PREFIX.manifest.json``
is written (records, shards, sources, schema, options) and the plan removed.

PREFIX may be a URI of an object store (``s3://bucket/train``, any scheme that pyarrow.fs or
fsspec opens): there an object appears only once its upload completes, so shards are written
under their own names, and the plan and manifest are written as objects.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from spelt import _convert_inputs
from spelt import _file_system
from spelt import array_record
from spelt import sharding

_DECODE = {"npy": "numpy.load(io.BytesIO(record))", "npz": "numpy.load(io.BytesIO(record))"}
_DECODE["json"] = "json.loads(record)"
_DECODE["bytes"] = "the record as stored in the input (e.g. tf.train.Example.FromString(record))"
_PROGRESS_EVERY = 256  # records between progress updates


def shard_paths(prefix: str, num_shards: int) -> list[str]:
    return [f"{prefix}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


def _hidden(path: str, suffix: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}{suffix}")


class _Place:
    """Where the output goes: a local folder, or an object store (``files``) whose objects
    appear whole when written, so that nothing needs a temporary name there."""

    def __init__(self, prefix: str):
        self.files = _file_system.files_for(prefix)
        if self.files is None:
            os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)

    def existing(self, paths: Sequence[str]) -> list[str]:
        """Those of ``paths`` that exist, in order (in a bucket, looked up concurrently: a
        round trip each)."""
        if self.files is None:
            return [p for p in paths if os.path.exists(p)]
        with concurrent.futures.ThreadPoolExecutor(len(paths)) as pool:
            found = list(pool.map(self.files.is_file, paths))
        return [p for p, there in zip(paths, found) if there]

    def remove(self, paths: Sequence[str]) -> None:
        """Removes those of ``paths`` that exist (in a bucket, concurrently)."""
        if self.files is None:
            for path in self.existing(paths):
                os.remove(path)
            return
        with concurrent.futures.ThreadPoolExecutor(len(paths)) as pool:
            list(pool.map(self.files.remove, paths))

    def partial(self, path: str) -> str:
        """The name to write ``path`` under until :meth:`finish`."""
        return path if self.files is not None else _hidden(path, ".partial")

    def finish(self, path: str) -> None:
        if self.files is None:
            os.replace(_hidden(path, ".partial"), path)

    def read_json(self, path: str) -> Any:
        if self.files is None:
            with open(path) as f:
                return json.load(f)
        with self.files.filesystem_open(path, "rb") as f:
            return json.load(f)

    def write_json(self, path: str, value: Any) -> None:
        """Writes JSON (a reader never sees half a file)."""
        text = json.dumps(value, indent=2) + "\n"
        if self.files is None:
            with open(self.partial(path), "w") as f:
                f.write(text)
        else:
            with self.files.filesystem_open(path, "wb") as f:
                f.write(text.encode())
        self.finish(path)


class _PlainProgress:
    """A one-line progress bar on stderr, redrawn at most 10 times a second (tqdm's stand-in)."""

    def __init__(self, total: int, desc: str):
        self._total, self._label = total, desc
        self._start = self._last = time.monotonic()
        self._done = 0

    def update(self, n: int) -> None:
        self._done += n
        now = time.monotonic()
        if now - self._last >= 0.1 or self._done == self._total:
            self._last = now
            frac = self._done / self._total if self._total else 1.0
            rate = self._done / max(now - self._start, 1e-9)
            sys.stderr.write(
                f"\r{self._label} [{'#' * int(30 * frac):<30}] {self._done:,}/{self._total:,}"
                f" ({rate:,.0f} records/s)"
            )
            sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


def _progress(total: int, desc: str) -> Any:
    try:
        from tqdm import tqdm  # pylint: disable=import-outside-toplevel
    except ImportError:
        return _PlainProgress(total, desc)
    return tqdm(total=total, desc=desc, unit=" records", unit_scale=True, file=sys.stderr)


def _records(inputs: Sequence[_convert_inputs.Input], start: int, stop: int) -> Iterator[bytes]:
    """Records [start, stop) of the inputs laid end to end."""
    first = 0
    for item in inputs:
        lo, hi = max(start, first), min(stop, first + len(item))
        if lo < hi:
            yield from item.records(lo - first, hi - first)
        first += len(item)


def _finish_shard(
    place: _Place,
    writer: array_record.ArrayRecordWriter,
    path: str,
    plan_saved: concurrent.futures.Future,
) -> None:
    """Completes a shard once the plan is saved, or abandons it if the plan could not be: a
    complete shard always has its plan beside it, so that a rerun resumes."""
    with writer:
        plan_saved.result()
    place.finish(path)


def _shard_is_complete(place: _Place, path: str, num_records: int) -> bool:
    filesystem = None if place.files is None else place.files.filesystem
    try:
        return array_record.info(path, filesystem)["num_records"] == num_records
    except (OSError, ValueError):
        return False


def _check_resumable(
    place: _Place, prefix: str, plan: dict[str, Any], shards: list[str], state: str
) -> bool:
    """True to resume an interrupted conversion of this plan; ValueError if the output is
    there from another conversion."""
    manifest = prefix + ".manifest.json"
    found = set(place.existing([state, *shards, manifest]))  # one round of lookups
    if state in found:
        saved = place.read_json(state)
        if saved != plan:
            raise ValueError(
                f"{state}: an interrupted conversion to {prefix} with other inputs or options is"
                " there; rerun it with the same arguments to resume it, or pass --overwrite to"
                " start again"
            )
        return True
    existing = [p for p in [*shards, manifest] if p in found]
    if existing:
        raise ValueError(
            f"{existing[0]}: the output exists; pass --overwrite to replace it (or choose another"
            " -o prefix)"
        )
    return False


def convert(
    inputs: Sequence[_convert_inputs.Input],
    prefix: str,
    *,
    num_shards: int,
    writer_options: str,
    options: dict[str, Any],
    overwrite: bool,
) -> dict[str, Any]:
    """Writes the shards and the manifest; returns the manifest. ``options`` (JSON) are
    recorded in the plan and the manifest. ValueError for no records or an output that is
    there from another conversion (see the module docstring)."""
    total = sum(len(item) for item in inputs)
    if total == 0:
        names = ", ".join(item.path for item in inputs)
        raise ValueError(f"no rows (records) in the inputs: {names}")
    sources = [
        {**item.fingerprint(), "kind": item.kind, "records": len(item), "schema": item.schema()}
        for item in inputs
    ]
    plan = {"sources": sources, "options": options}
    shards = shard_paths(prefix, num_shards)
    state = _hidden(prefix, ".convert.json")
    manifest_path = prefix + ".manifest.json"
    place = _Place(prefix)
    if overwrite:
        place.remove([state, manifest_path] + shards)
    resume = _check_resumable(place, prefix, plan, shards, state)
    counts = []
    progress = _progress(total, "convert")
    todo = []  # (path, first record, end) of the shards to write
    for shard, path in enumerate(shards):
        start, end = sharding.even_split(total, sharding.ShardOptions(shard, num_shards))
        counts.append(end - start)
        if resume and _shard_is_complete(place, path, end - start):
            progress.update(end - start)
        else:
            todo.append((path, start, end))
    filesystem = None if place.files is None else place.files.filesystem

    def open_writer(path: str) -> array_record.ArrayRecordWriter:
        return array_record.ArrayRecordWriter(
            place.partial(path), writer_options, filesystem=filesystem
        )

    # In a bucket each of these is a round trip or more, so they run on threads of their own
    # while a shard is written: saving the plan, then completing each shard (its last parts
    # uploaded), in that order on one thread; opening the next shard on another.
    closer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spelt-convert")
    opener = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spelt-convert-open")
    plan_saved = closer.submit(place.write_json, state, plan)
    closing = [plan_saved]
    upcoming = opener.submit(open_writer, todo[0][0]) if todo else None
    try:
        for i, (path, start, end) in enumerate(todo):
            writer, upcoming = upcoming.result(), None
            if i + 1 < len(todo):
                upcoming = opener.submit(open_writer, todo[i + 1][0])
            with contextlib.ExitStack() as on_error:
                on_error.push(writer)  # an error abandons the shard (RecordWriter.__exit__)
                pending = 0
                for record in _records(inputs, start, end):
                    writer.write(record)
                    pending += 1
                    if pending == _PROGRESS_EVERY:
                        progress.update(pending)
                        pending = 0
                progress.update(pending)
                on_error.pop_all()
            closing.append(closer.submit(_finish_shard, place, writer, path, plan_saved))
        for done in closing:
            done.result()  # raises the plan's or a close's error
    except BaseException as e:
        if upcoming is not None and upcoming.exception() is None:
            upcoming.result().__exit__(type(e), e, e.__traceback__)  # abandons the next shard
        raise
    finally:
        opener.shutdown(wait=True)
        closer.shutdown(wait=True)
        progress.close()
    formats = {_convert_inputs.RECORD_FORMATS[item.kind] for item in inputs}
    schemas = [s["schema"] for s in sources]
    manifest = {
        "spelt_convert_manifest": 1,
        "spec": f"{os.path.basename(prefix)}@{num_shards}",
        "shards": [os.path.basename(p) for p in shards],
        "num_records": total,
        "records_per_shard": counts,
        "record_format": formats.pop() if len(formats) == 1 else "mixed (see sources)",
        "decode": sorted({_DECODE[_convert_inputs.RECORD_FORMATS[item.kind]] for item in inputs}),
        "schema": schemas[0] if all(s == schemas[0] for s in schemas) else "mixed (see sources)",
        **plan,
    }
    place.write_json(manifest_path, manifest)
    place.remove([state])
    return manifest
