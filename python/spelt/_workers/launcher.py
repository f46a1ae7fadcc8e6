"""Starting a worker process: a fresh interpreter (spawn semantics), never a fork of this one.

``subprocess`` forks and immediately execs ``sys.executable`` (no Python code runs between the
two, so this is safe in a process with threads), passing exactly the given file descriptors.
The worker runs bootstrap.py as a script, which waits for its turn to start, sets ``sys.path``
to the consumer's and runs ``spelt._workers.worker.main``.

Unlike ``multiprocessing``'s spawn and forkserver methods, the user's ``__main__`` module is not
re-imported in the worker: the pipeline arrives by value (cloudpickle), so scripts need no
``if __name__ == "__main__"`` guard, and a training script's heavy imports are not repeated in
every worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from multiprocessing import connection

_BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap.py")


class WorkerProcess:
    """A started worker. ``sentinel`` is a pidfd, readable once the process has exited (None on
    kernels without pidfd_open, where callers poll ``exitcode``)."""

    def __init__(self, args: list[str], pass_fds: tuple[int, ...]):
        if not sys.executable:
            raise RuntimeError("spelt: cannot start worker processes: sys.executable is not set")
        self._popen = subprocess.Popen(
            [sys.executable, _BOOTSTRAP, json.dumps(sys.path), *args],
            pass_fds=pass_fds,
            stdin=subprocess.DEVNULL,
        )
        self.pid = self._popen.pid
        try:
            self.sentinel: int | None = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self.sentinel = None

    @property
    def exitcode(self) -> int | None:
        """None while running; else the exit status, or -N if killed by signal N."""
        return self._popen.poll()

    def describe_exit(self) -> str:
        code = self.exitcode
        if code is None:
            return "is still running"
        if code < 0:
            try:
                return f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"was terminated unexpectedly with exit code {code}"

    def wait(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds for the exit; True if the process has exited."""
        timeout = max(timeout, 0.0)
        if self.sentinel is not None:  # wakes up at the exit (Popen.wait polls with sleeps)
            connection.wait([self.sentinel], timeout)
            return self.exitcode is not None
        try:
            self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def kill(self) -> None:
        """SIGKILL (if still running) and reap; releases the sentinel."""
        if self._popen.poll() is None:
            self._popen.kill()
        self._popen.wait()
        if self.sentinel is not None:
            os.close(self.sentinel)
            self.sentinel = None
