"""Packing pipelines built the same way with Grain or Spelt (``g`` is the ``grain`` or the
``spelt`` module), for tests/test_packing.py and the new-process restore test (run as a script:
``python packing_pipelines.py NAME STATE_JSON`` prints a digest of the outputs after restoring).
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import numpy as np


def documents(n: int, seed: int, max_len: int = 30, equal_lengths: bool = False) -> list[dict]:
    """Dicts of int32 "inputs" and int64 "targets" token arrays of random lengths in [0, max_len)
    (equal lengths per document with equal_lengths, as an LM's inputs and shifted targets)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        inputs = rng.integers(1, 1000, size=rng.integers(0, max_len)).astype(np.int32)
        n_targets = len(inputs) if equal_lengths else rng.integers(0, max_len)
        targets = rng.integers(1, 1000, size=n_targets).astype(np.int64)
        out.append({"inputs": inputs, "targets": targets})
    return out


def first_fit(g: Any, data_seed: int = 0, **kwargs: Any) -> Any:
    kw = {"length_struct": {"inputs": 40, "targets": 50}, "num_packing_bins": 4, "seed": 7}
    kw.update(kwargs)
    source = g.MapDataset.source(documents(150, data_seed)).to_iter_dataset()
    return g.experimental.FirstFitPackIterDataset(source, **kw)


def best_fit(g: Any, data_seed: int = 0, **kwargs: Any) -> Any:
    kw = {"length_struct": {"inputs": 40, "targets": 50}, "num_packing_bins": 5, "seed": 3}
    kw.update(kwargs)
    source = g.MapDataset.source(documents(150, data_seed)).to_iter_dataset()
    return g.experimental.BestFitPackIterDataset(source, **kw)


def concat_then_split(g: Any, data_seed: int = 0, **kwargs: Any) -> Any:
    kw = {"length_struct": {"inputs": 32, "targets": 32}}
    kw.update(kwargs)
    docs = documents(120, data_seed, max_len=70, equal_lengths=True)
    return g.experimental.ConcatThenSplitIterDataset(
        g.MapDataset.source(docs).to_iter_dataset(), **kw
    )


PIPELINES = {"first_fit": first_fit, "best_fit": best_fit, "concat_then_split": concat_then_split}


def digest(elements: list[Any]) -> str:
    h = hashlib.sha256()
    for e in elements:
        for k in sorted(e):
            h.update(k.encode())
            h.update(np.ascontiguousarray(e[k]).tobytes())
    return h.hexdigest()


if __name__ == "__main__":
    import spelt

    it = iter(PIPELINES[sys.argv[1]](spelt))
    it.set_state(json.loads(sys.argv[2]))
    print(digest(list(it)))
