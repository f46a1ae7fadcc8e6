"""``spelt profile SCRIPT [ARGS...]``: runs a Python script with stage tracking on for every
Dataset and DataLoader iterator it makes, then prints each iterator's execution summary and
writes the picture (pipeline graph and per-stage time bars) to ``-o`` (default
``spelt-profile.html``; ``.png``/``.svg``/``.pdf`` write the busiest pipeline's picture).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from spelt import _summary

_EXAMPLES = """examples:
  spelt profile train.py --steps 100          writes spelt-profile.html
  spelt profile -o profile.png train.py       the busiest pipeline as a PNG
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    profile = commands.add_parser(
        "profile",
        help="per-stage execution summary of a script's pipelines",
        description=__doc__.split("\n\n", maxsplit=1)[0].replace("\n", " "),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    profile.add_argument("-o", "--output", default="spelt-profile.html", metavar="PATH")
    profile.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    profile.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")


def run(args: argparse.Namespace) -> int:
    """Runs the script as __main__ (sys.argv = [SCRIPT, *ARGS]); returns 1 if it made no
    iterator, else the script's exit status (0 when it returned)."""
    if not os.path.isfile(args.script):
        raise OSError(f"no such script: {args.script}")
    status = 0
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [args.script, *args.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    try:
        with _summary.collecting() as trackers:
            try:
                runpy.run_path(args.script, run_name="__main__")
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    if not trackers:
        print(
            f"spelt profile: {args.script} made no Dataset or DataLoader iterator", file=sys.stderr
        )
        return 1
    summaries = [t.summary() for t in trackers]
    order = sorted(range(len(summaries)), key=lambda i: -summaries[i].output.elements)
    titles = [f"iterator {i + 1}: {summaries[i].output.name}" for i in order]
    for title, i in zip(titles, order):
        print(f"{title}\n{summaries[i].table()}\n")
    from spelt import _plot  # pylint: disable=import-outside-toplevel

    _plot.plot_execution_summary([summaries[i] for i in order], args.output, titles=titles)
    print(f"spelt profile: wrote {args.output}")
    return status
