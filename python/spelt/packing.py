"""Sequence packing (Grain 0.2.18's ``FirstFitPackIterDataset``, ``BestFitPackIterDataset``,
``ConcatThenSplitIterDataset``, ``BOSHandling`` and the DataLoader's ``PackAndBatchOperation``).

The packing runs in C++ (cpp/src/ops/pack.cc, packed_bins.cc, concat_then_split.cc; contract in
cpp/include/spelt/packing.h): these classes only describe it. Elements are dicts whose sequence
features are numpy arrays (int32 / int64 token ids, or any dtype with extra trailing axes),
the sequence on axis 0; scalars count as one token. Outputs are dicts of fixed-shape numpy
arrays: each packed feature of shape ``(length, ...)``, with int32 ``<feature>_segment_ids``
(1, 2, ... per packed sequence, 0 for padding) and int32 ``<feature>_positions``. The rows of
one batch of bins are views of one buffer per feature (no copy).

Outputs and states equal Grain's element for element on the same input (bin order and bin
shuffling included), and states move both ways between Grain and Spelt. Where Grain 0.2.18 is
wrong, Spelt is right instead; docs/compatibility.md lists those places.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Collection, Iterator, Mapping, Sequence

from spelt import _args
from spelt import _base
from spelt import _core
from spelt import record


def _check_max_sequences_per_bin(max_sequences_per_bin: int | None) -> None:
    _args.int_arg(max_sequences_per_bin, "max_sequences_per_bin", optional=True)
    if max_sequences_per_bin is not None and max_sequences_per_bin <= 0:
        raise ValueError(
            "If specified, `max_sequences_per_bin` must be a positive integer,"
            f" but got {max_sequences_per_bin}."
        )


class PackIterDataset(_base.IterDataset):
    """Packs whole sequences into ``num_packing_bins`` bins; when an element fits in no bin,
    the bins are emitted (those holding a sequence, shuffled if ``shuffle_bins``) and a new
    batch of bins starts with it (Grain's PackIterDataset).

    State: ``{"parent": parent state before the batch of bins being emitted, "next_row": bins of
    it already emitted, "counter": bins emitted in all}``.

    Raises (when iterating) ValueError naming the feature and the element for an element that
    lacks a feature of ``length_struct``, has one longer than its target length, or has tokens
    of another shape than the first element of its batch.
    """

    _best_fit = False
    _name = ""

    def __init__(
        self,
        parent: _base.IterDataset,
        *,
        length_struct: Any,
        num_packing_bins: int,
        seed: int = 0,
        shuffle_bins: bool = True,
        shuffle_bins_group_by_feature: str | None = None,
        meta_features: Sequence[str] = (),
        pack_alignment_struct: Any = None,
        padding_struct: Any = None,
        max_sequences_per_bin: int | None = None,
    ):
        """Args (Grain's):
        parent: dataset of dicts with variable-length sequence features.
        length_struct: dict feature -> target length (int); other features are dropped.
        num_packing_bins: bins packed at once (more bins: less padding, more mixing).
        seed: seed of the bin shuffle (numpy's default_rng(seed + bins emitted before)).
        shuffle_bins: emit the bins of a batch in shuffled order.
        shuffle_bins_group_by_feature: then sort them by the mean of this packed feature's
          distinct nonzero values (e.g. an epoch id).
        meta_features: features without segment ids / positions; those not in length_struct
          are returned per bin as the list of the packed elements' values.
        pack_alignment_struct: like length_struct: each sequence starts at a multiple of it.
        padding_struct: like length_struct: padding value per feature (default 0).
        max_sequences_per_bin: at most this many sequences per bin (ValueError if <= 0).
        """
        super().__init__(parent)
        _check_max_sequences_per_bin(max_sequences_per_bin)
        self._length_struct = length_struct
        self._num_packing_bins = _args.int_arg(num_packing_bins, f"{self._name}: num_packing_bins")
        self._seed = _args.int_arg(seed, f"{self._name}: seed")
        self._shuffle_bins = shuffle_bins
        self._shuffle_bins_group_by_feature = shuffle_bins_group_by_feature
        self._meta_features = list(meta_features)
        self._pack_alignment_struct = pack_alignment_struct
        self._padding_struct = padding_struct
        self._max_sequences_per_bin = max_sequences_per_bin
        self.engine_node  # argument errors surface here  # pylint: disable=pointless-statement

    def __iter__(self) -> PackingDatasetIterator:
        return PackingDatasetIterator(_base.engine_iterator(self), self._num_packing_bins, self)

    def _make_node(self):
        return _core.pack(
            self._stream_nodes()[0],
            self._length_struct,
            self._num_packing_bins,
            self._seed,
            self._shuffle_bins,
            self._shuffle_bins_group_by_feature,
            self._meta_features,
            self._pack_alignment_struct,
            self._padding_struct,
            self._max_sequences_per_bin,
            self._best_fit,
            False,
        )

    def __str__(self) -> str:
        return self._name


class PackingDatasetIterator(_base.EngineDatasetIterator):
    """Iterator of a PackIterDataset (Grain's PackingDatasetIterator)."""

    def __init__(self, it: Any, num_packing_bins: int, pipeline: Any = None):
        """pipeline: the PackIterDataset, whose data sources ``close()`` closes."""
        super().__init__(it, pipeline=pipeline)
        self._num_packing_bins = num_packing_bins
        self._size_bytes: int | None = None

    def __next__(self) -> Any:
        element = super().__next__()
        if self._size_bytes is None:
            self._size_bytes = self._batch_size_bytes(element)
        return element

    def _batch_size_bytes(self, element: dict[str, Any]) -> int:
        # Per packed feature: values, int32 segment ids and positions, and one int64 cursor per
        # bin, as Grain counts them. Features with segment ids are the non-meta features.
        total = 0
        for key, value in element.items():
            seg = element.get(f"{key}_segment_ids")
            if seg is None or key.endswith(("_segment_ids", "_positions")):
                continue
            total += self._num_packing_bins * (value.nbytes + 2 * seg.nbytes + 8)
        return total

    def get_packed_batch_size_bytes(self) -> int:
        """Bytes of one batch of bins (values, segment ids, positions, bin cursors) of the
        packed features. ValueError before the first element."""
        if self._size_bytes is None:
            raise ValueError(
                "No current batch. Size can only be computed after at least one"
                " element has been packed."
            )
        return self._size_bytes


class FirstFitPackIterDataset(PackIterDataset):
    """First-fit packing: each sequence goes to the first bin where all its features fit
    (Grain's FirstFitPackIterDataset; see PackIterDataset for the arguments and state)."""

    _name = "FirstFitPackIterDataset"


class BestFitPackIterDataset(PackIterDataset):
    """Best-fit packing: each sequence goes to the fitting bin with the most tokens already in it
    (Grain's BestFitPackIterDataset; see PackIterDataset for the arguments and state)."""

    _best_fit = True
    _name = "BestFitPackIterDataset"


class BOSHandling(enum.Enum):
    """The BOS handling done inside a packing algorithm (Grain's)."""

    # The packing algorithm will not add or remove any BOS to/from its inputs.
    DO_NOTHING = enum.auto()
    # Replaces the first token of each packed sequence (also of each part of a split one) with
    # BOS; an empty sequence is left as it is.
    REPLACE_FIRST_TOKEN_WITH_BOS = enum.auto()


class ConcatThenSplitIterDataset(_base.IterDataset):
    """Concat-then-split packing (Grain's ConcatThenSplitIterDataset): sequences are
    concatenated until a feature reaches its target length; the overflowing element is split and
    its rest starts the next output. Outputs: per feature of ``length_struct`` (in its order) the
    packed array of shape ``(length, ...)``, then, unless it is a meta feature, int32
    ``<feature>_segment_ids`` and ``<feature>_positions``.

    State: ``{"parent_state", "remainder_slices": {feature: (start, stop)} ((-1, -1): no
    remainder), "elements_from_buffer_after_checkpoint"}``, Grain's.

    Raises (when iterating) ValueError naming the element if its keys differ from
    ``length_struct``'s, or naming the feature if a meta feature is longer than its target.
    """

    def __init__(
        self,
        parent: _base.IterDataset,
        *,
        length_struct: Mapping[str, int],
        meta_features: Collection[str] = (),
        split_full_length_features: bool = True,
        bos_handling: BOSHandling = BOSHandling.DO_NOTHING,
        bos_features: Collection[str] = (),
        bos_token_id: int | None = None,
    ):
        """Args (Grain's):
        parent: dataset of unnested dicts of sequence features.
        length_struct: feature -> target length; elements must have exactly these features.
        meta_features: never split (repeated in each part of a split element), no segment ids
          or positions.
        split_full_length_features: False: an element with a feature of exactly its target
          length (and none longer) is emitted whole, ahead of the buffer being filled.
        bos_handling, bos_features, bos_token_id: see BOSHandling. ValueError if bos_handling
          is DO_NOTHING and the others are set, if bos_token_id is missing otherwise, or if
          bos_features and meta_features overlap.
        """
        super().__init__(parent)
        if bos_handling == BOSHandling.DO_NOTHING and (bos_token_id is not None or bos_features):
            raise ValueError(
                f"bos_handling={bos_handling} indicates that BOS handling is not"
                " used. So bos_token_id and bos_features should not be set."
            )
        if bos_handling != BOSHandling.DO_NOTHING and bos_token_id is None:
            raise ValueError(f"bos_token_id must be set if bos_handling is {bos_handling}.")
        if not set(meta_features).isdisjoint(set(bos_features)):
            raise ValueError(
                "bos_features and meta_features should not overlap. bos_features: "
                f"{bos_features}, meta_features: {meta_features}"
            )
        if not isinstance(length_struct, Mapping):
            raise TypeError(f"length_struct must be a mapping, got {type(length_struct)}")
        self._length_struct = dict(length_struct)
        self._meta_features = list(meta_features)
        self._split_full_length_features = split_full_length_features
        self._bos_features = (
            list(bos_features) if bos_handling == BOSHandling.REPLACE_FIRST_TOKEN_WITH_BOS else []
        )
        self._bos_token_id = 0 if bos_token_id is None else bos_token_id
        self.engine_node  # argument errors surface here  # pylint: disable=pointless-statement

    def _make_node(self):
        return _core.concat_then_split(
            self._stream_nodes()[0],
            [(k, int(v)) for k, v in self._length_struct.items()],
            self._meta_features,
            self._split_full_length_features,
            self._bos_features,
            self._bos_token_id,
        )

    def __str__(self) -> str:
        return "ConcatThenSplitIterDataset"


class _PackAndBatchIterDataset(_base.IterDataset):
    """The engine side of PackAndBatchOperation: first-fit packing whose output is each whole
    batch of bins, ``(values, segment_ids, positions)``. State: that of the packing iterator."""

    def __init__(self, parent: _base.IterDataset, op: PackAndBatchOperation):
        super().__init__(parent)
        self._op = op
        self.engine_node  # pylint: disable=pointless-statement

    def _make_node(self):
        op = self._op
        return _core.pack(
            self._stream_nodes()[0],
            op.length_struct,
            op.batch_size,
            0,
            False,
            None,
            [],
            None,
            None,
            op.max_sequences_per_bin,
            False,
            True,
        )


# The state key of _CountingIterator.
_COUNT_KEY = "count"


class _CountingIterator(_base.DatasetIterator):
    """Hands out ``record.data`` of the records of ``records`` and keeps their metadata; state:
    ``{"count": records handed out}`` (not restorable: the input is a plain iterator)."""

    def __init__(self, records: Iterator[Any], metadata: list[Any]):
        super().__init__()
        self._records = records
        self._metadata = metadata

    def __next__(self) -> Any:
        r = next(self._records)
        self._metadata.append(r.metadata)
        return r.data

    def get_state(self) -> dict[str, Any]:
        return {_COUNT_KEY: len(self._metadata)}

    def set_state(self, state: dict[str, Any]) -> None:
        raise ValueError("PackAndBatchOperation over a plain iterator cannot be restored")


class _RecordsIterDataset(_base.IterDataset):
    def __init__(self, records: Iterator[Any], metadata: list[Any]):
        super().__init__()
        self._records = records
        self._metadata = metadata

    def __iter__(self) -> _base.DatasetIterator:
        return _CountingIterator(self._records, self._metadata)


@dataclasses.dataclass
class PackAndBatchOperation:
    """Packs sequences first-fit into batches of ``batch_size`` rows (Grain's deprecated
    DataLoader operation; prefer FirstFitPackIterDataset).

    In ``DataLoader(operations=[..., PackAndBatchOperation(...)])`` each output element is
    ``(values, segment_ids, positions)``: trees shaped like ``length_struct`` with leaves of
    shape ``(batch_size, length, ...)`` (segment ids and positions int32); the packing runs in
    the engine and the DataLoader's state is the packing iterator's state, which restores
    exactly (Grain's drops the element that closed each batch). Called on an iterator of
    ``Record``s, it yields ``Record``s of that tuple whose metadata is that of the last record
    packed into the batch, as Grain's does.

    Raises ValueError (when iterating) naming the feature and record for a feature longer than
    its target length.
    """

    length_struct: Any
    batch_size: int
    max_sequences_per_bin: int | None = None

    def __post_init__(self):
        _check_max_sequences_per_bin(self.max_sequences_per_bin)
        if _args.int_arg(self.batch_size, "PackAndBatchOperation: batch_size") <= 0:
            raise ValueError(f"batch_size must be positive, got {self.batch_size}")

    def apply_to(self, ds: _base.IterDataset) -> _base.IterDataset:
        """The packed batches of ``ds`` (whose elements are the records' data)."""
        return _PackAndBatchIterDataset(ds, self)

    def __call__(self, input_iterator: Iterator[record.Record]) -> Iterator[record.Record]:
        metadata: list[Any] = []
        it = iter(self.apply_to(_RecordsIterDataset(iter(input_iterator), metadata)))
        for batch in it:
            packed = it.get_state()[_core.PARENT_KEY][_COUNT_KEY]
            yield record.Record(metadata=metadata[packed - 1].remove_record_key(), data=batch)
