"""Python exits cleanly while a daemon thread is inside a Spelt iterator.

Training scripts often feed batches from a daemon thread and let the interpreter exit under
it. CPython ends such a thread with pthread_exit when it next takes the GIL, and unwinding
C++ frames that way aborts the process ("terminate called without an active exception"):
before the exit hook of ``cpp/python/gil.h``, every pipeline below aborted at exit. Each
case runs in a fresh interpreter, twice (the exit races with the thread). The daemon thread
may still report an error on its way out (worker processes are stopped at exit too), as a
Python thread would.
"""

import subprocess
import sys
import textwrap

import pytest

PIPELINES = {
    "read-ahead threads, batched": """
        src = np.arange(200_000 * 16).reshape(200_000, 16)
        ds = spelt.MapDataset.source(src).shuffle(seed=1).repeat()
        it = iter(ds.to_iter_dataset(spelt.ReadOptions(num_threads=4)).batch(64))
    """,
    "Python map": """
        ds = spelt.MapDataset.range(10**9).map(lambda x: np.full(1000, x)).to_iter_dataset()
        it = iter(ds.batch(8))
    """,
    "Python source": """
        class Source:
            def __len__(self):
                return 10**9
            def __getitem__(self, i):
                return np.full(100, i)
        ds = spelt.MapDataset.source(Source()).to_iter_dataset(spelt.ReadOptions(num_threads=2))
        it = iter(ds)
    """,
    "worker processes": """
        ds = spelt.MapDataset.range(10**9).map(lambda x: np.full(1000, x)).to_iter_dataset()
        it = iter(ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=2)))
    """,
}

SCRIPT = """
import threading
import time

import numpy as np
import spelt

{pipeline}
first = threading.Event()

def feed():
    while True:
        next(it)
        first.set()

threading.Thread(target=feed, daemon=True).start()
first.wait(60)
time.sleep(0.05)
print("exiting")
"""


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_exit_with_daemon_thread_in_next(name):
    script = SCRIPT.format(pipeline=textwrap.dedent(PIPELINES[name]))
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip() == "exiting"
        assert "terminate called" not in proc.stderr
        assert "Fatal Python error" not in proc.stderr
