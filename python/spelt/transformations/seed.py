"""``ds.seed(seed)``: the seed from which later random transformations derive their default
seeds (Grain's ``seed()``, which sets ``_default_seed`` on a copy of the dataset). Here it is an
engine node (cpp/src/ops/with_options.cc) that passes elements through unchanged; it is not a stage of
the execution summary."""

from __future__ import annotations

from spelt import _base
from spelt import _core


class SeedMapDataset(_base.ParentSpec, _base.OpMapDataset):
    """Args: (seed as its 32-bit words, least significant first,)."""

    _build = staticmethod(_core.MapDataset.seed)
    _no_stage = True


class SeedIterDataset(_base.ParentSpec, _base.OpIterDataset):
    """Args: (seed as its 32-bit words, least significant first,). Its iterator's state is its
    parent's, so ``get_next_index`` / ``set_next_index`` go through it (Grain's seed() returns
    a copy of the dataset, whose iterator is the parent's)."""

    _build = staticmethod(_core.IterDataset.seed)
    _no_stage = True
