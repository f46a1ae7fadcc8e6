"""The ``spelt`` command line (also ``python -m spelt``).

  spelt inspect SPEC... [--verify]   facts about ArrayRecord files (SPEC: a path, a glob, or
                                     name@N), --verify reads and checks every chunk
  spelt convert INPUT... -o PREFIX   .npy/.npz, Parquet, JSON Lines, CSV files or a folder of
                                     files to ArrayRecord shards, with a JSON manifest
  spelt profile SCRIPT [ARGS...] [-o OUT]
                                     runs SCRIPT, prints each pipeline's execution summary
                                     and writes its picture (HTML, PNG, SVG or PDF)
  spelt --version

Exit status: 0 on success, 1 when an input or a file is bad (the message names it), 2 for a
usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence

import spelt
from spelt import _convert
from spelt import _convert_inputs
from spelt import _file_system
from spelt import _profile_cli
from spelt import array_record

_INSPECT_EXAMPLES = """examples:
  spelt inspect data/train@8                 the 8 shards data/train-0000?-of-00008
  spelt inspect 'data/train-*' data/extra    a glob and a file
  spelt inspect --verify data/train@8        also read every chunk and check its hashes
"""

_CONVERT_EXAMPLES = """examples:
  spelt convert images.npz -o data/train --num-shards 8
  spelt convert part-*.parquet -o data/train --num-shards 16 --compression zstd:5
  spelt convert logs.jsonl more.jsonl -o data/logs
  spelt convert table.csv -o data/table
  spelt convert train-*.tfrecord -o data/train          TFRecord (gzip / zlib too)
  spelt convert --kind files photos/ -o data/photos    every file under photos/

one record per row (per line, per file), in input order, in contiguous shards:
  .npy            the row in .npy format           numpy.load(io.BytesIO(record))
  .npz, Parquet   an .npz of the row's fields      numpy.load(io.BytesIO(record))["field"]
  JSON Lines      the line (checked to be JSON)    json.loads(record)
  CSV             a JSON object {header: value}    json.loads(record)
  TFRecord        the record's bytes as stored     e.g. tf.train.Example.FromString(record)
  --kind files    an .npz {"data": the file's bytes as uint8, "label": its relative path}
A directory argument stands for its data files (sorted by name). PREFIX.manifest.json lists
the shards, record count, sources, schema and options. Shards are written under temporary
names and renamed when complete; rerunning an interrupted conversion resumes it.
"""


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _verify(path: str, num_records: int, group_size: int) -> None:
    """Reads every record, chunk after chunk, checking hashes; CorruptFileError (naming the
    file and the byte offset of the first corrupt chunk) on the first bad one."""
    source = array_record.ArrayRecordDataSource(path)
    step = max(group_size, 1) * max(1, 4096 // max(group_size, 1))
    for start in range(0, num_records, step):
        source.__getitems__(range(start, min(start + step, num_records)))


def _describe(path: str, verify: bool) -> None:
    facts = array_record.info(path)
    if verify:
        _verify(path, facts["num_records"], facts["group_size"])
    print(path)
    print(f"  records:        {facts['num_records']:,}")
    print(f"  chunks:         {facts['num_chunks']:,} (group size {facts['group_size']})")
    print(f"  compression:    {facts['compression'] or '-'}")
    print(f"  file size:      {_human(facts['file_size'])} ({facts['file_size']:,} bytes)")
    print(f"  record bytes:   {_human(facts['decoded_bytes'])} ({facts['decoded_bytes']:,} bytes)")
    print(f"  writer options: {facts['writer_options']}")
    if verify:
        print("  verified:       every chunk read, hashes match")


def _inspect(specs: Sequence[str], verify: bool) -> int:
    status = 0
    for spec in specs:
        try:
            paths = array_record.expand_paths(spec)
        except (OSError, ValueError, NotImplementedError) as e:
            print(f"{spec}: error: {e}", file=sys.stderr)
            status = 1
            continue
        for path in paths:
            try:
                _describe(path, verify)
            except (OSError, ValueError, NotImplementedError) as e:
                message = str(e) if str(e).startswith(path) else f"{path}: {e}"
                print(f"error: {message}", file=sys.stderr)
                status = 1
    return status


def _convert_command(args: argparse.Namespace) -> int:
    if args.num_shards <= 0:
        raise ValueError(f"--num-shards must be positive, got {args.num_shards}")
    output = _file_system.normalize(args.output, None, "-o")
    writer_options = f"group_size:{args.group_size},{args.compression}"
    with tempfile.TemporaryDirectory() as d:  # bad options fail now, before any reading
        array_record.ArrayRecordWriter(os.path.join(d, "check"), writer_options).close()
    inputs = _convert_inputs.open_inputs(args.inputs, args.kind, args.allow_mixed)
    manifest = _convert.convert(
        inputs,
        output,
        num_shards=args.num_shards,
        writer_options=writer_options,
        options={
            "num_shards": args.num_shards,
            "compression": args.compression,
            "group_size": args.group_size,
            "writer_options": writer_options,
            "kind": args.kind,
            "allow_mixed": args.allow_mixed,
        },
        overwrite=args.overwrite,
    )
    print(
        f"wrote {manifest['num_records']:,} records to {args.num_shards} shard(s):"
        f" {output}@{args.num_shards} (manifest: {output}.manifest.json)"
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spelt",
        description="Spelt's command line: inspect ArrayRecord files, convert data files to them.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="run 'spelt inspect --help' or 'spelt convert --help' for examples",
    )
    parser.add_argument("--version", action="version", version=f"spelt {spelt.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    inspect = commands.add_parser(
        "inspect",
        help="facts about ArrayRecord files",
        description="Facts about ArrayRecord files: records, chunks, compression, sizes.",
        epilog=_INSPECT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inspect.add_argument("files", nargs="+", metavar="SPEC", help="a path, a glob or name@N")
    inspect.add_argument(
        "--verify",
        action="store_true",
        help="read every chunk and check its hashes; report the first corrupt byte offset",
    )
    convert = commands.add_parser(
        "convert",
        help="files to ArrayRecord shards",
        description="Writes ArrayRecord shards PREFIX-0000i-of-0000N from data files.",
        epilog=_CONVERT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    convert.add_argument("inputs", nargs="+", metavar="INPUT", help="files or directories")
    convert.add_argument("-o", "--output", required=True, metavar="PREFIX", help="output prefix")
    convert.add_argument("--num-shards", type=int, default=1, metavar="N")
    convert.add_argument(
        "--compression",
        default="zstd:3",
        help="uncompressed, zstd[:level], brotli[:level] or snappy (default zstd:3)",
    )
    convert.add_argument(
        "--group-size", type=int, default=1, metavar="G", help="records per chunk (default 1)"
    )
    convert.add_argument(
        "--kind",
        choices=("auto", *_convert_inputs.KINDS),
        default="auto",
        help="input kind (default: from the extension); 'files' takes directories of any files",
    )
    convert.add_argument(
        "--allow-mixed", action="store_true", help="allow inputs of different kinds in one dataset"
    )
    convert.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing output (or an interrupted one) instead of refusing/resuming",
    )
    _profile_cli.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the `spelt` command with `argv` (default: sys.argv[1:]); returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "inspect":
            return _inspect(args.files, args.verify)
        if args.command == "profile":
            return _profile_cli.run(args)
        return _convert_command(args)
    except (OSError, ValueError, ImportError, NotImplementedError) as e:
        print(f"spelt {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"spelt {args.command}: interrupted", file=sys.stderr)
        return 130
