"""The first code a worker process runs: ``python bootstrap.py SYS_PATH ARGS...``.

Run as a script (launcher.py), so that it imports nothing of spelt (nor numpy) before it is the
worker's turn to start. Starting means importing spelt and numpy and unpickling the pipeline,
about a quarter of a second of CPU; a pool lets at most as many workers start at once as the
consumer has CPUs, so that the first worker is ready, and the first batch comes, as soon as
possible. The *gate* is a non-blocking pipe holding one byte per start allowed at once: a worker
takes a byte before it starts and puts it back once started (worker.main calls the release
function it is given), or when it exits, whichever comes first.

While it waits, the worker also watches the consumer (a pidfd, else polling getppid()) and
exits if the consumer is gone. It ignores SIGINT from the start: Ctrl-C is the consumer's.
ARGS are worker.main's; this module reads the last three: parent pid, gate read and write fds.
"""

import json
import os
import select
import signal
import sys

_PARENT_POLL_SECONDS = 0.5


def _wait_for_turn(gate_read: int, parent_pid: int) -> bool:
    """Takes a byte from the gate; False if the consumer or the whole pool is gone first."""
    try:
        pidfd = os.pidfd_open(parent_pid)
    except (AttributeError, OSError):
        pidfd = None
    watched = [gate_read] if pidfd is None else [gate_read, pidfd]
    try:
        while True:
            ready, _, _ = select.select(watched, [], [], None if pidfd else _PARENT_POLL_SECONDS)
            if (pidfd is not None and pidfd in ready) or os.getppid() != parent_pid:
                return False
            if gate_read in ready:
                try:
                    return os.read(gate_read, 1) == b"x"  # b"": no writer left, the pool is gone
                except BlockingIOError:  # another worker took it
                    continue
    finally:
        if pidfd is not None:
            os.close(pidfd)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    args = sys.argv[2:]
    parent_pid, gate_read, gate_write = map(int, args[-3:])
    if not _wait_for_turn(gate_read, parent_pid):
        return 0
    released = False

    def release_gate() -> None:
        nonlocal released
        if not released:
            released = True
            try:
                os.write(gate_write, b"x")
            except OSError:
                pass
            os.close(gate_read)
            os.close(gate_write)

    try:
        sys.path[:] = json.loads(sys.argv[1])
        from spelt._workers import worker  # pylint: disable=import-outside-toplevel

        return worker.main(args, release_gate)
    finally:
        release_gate()


if __name__ == "__main__":
    sys.exit(main())
