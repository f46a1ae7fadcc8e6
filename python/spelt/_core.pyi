"""libspelt bindings; use the `spelt` package instead of this module."""

from collections.abc import Callable, Sequence
from typing import Annotated, overload

import numpy
from numpy.typing import NDArray


class CorruptFileError(ValueError):
    pass

class UnsupportedError(NotImplementedError):
    pass

class CorruptImageError(ValueError):
    pass

class EmptyShardError(ZeroDivisionError):
    pass

class NextIndexUnsupported(NotImplementedError):
    pass

def index_shuffle(index: int, max_index: int, seed: int, rounds: int = 4) -> int:
    """
    Grain's index_shuffle: position of `index` in a permutation of [0, max_index] (spelt/random.h).
    """

def stack(elements: list) -> object:
    """Grain's default batch function: stacks leaves along a new axis 0."""

def batch_and_pad(elements: list, batch_size: int, pad_value: object) -> object:
    """
    Grain's batch_and_pad: stacks, then pads axis 0 to batch_size rows (spelt/stack.h).
    """

class MapDataset:
    """Engine handle of a MapDataset (spelt/dataset.h)."""

    def name(self) -> str:
        """Grain's class name of the node, e.g. 'ShuffleMapDataset'."""

    def resolve_seed(self, seed: int | None, what: str) -> int:
        """
        The seed of a random transformation `what` on top (spelt/seeds.h): `seed` if given (ValueError outside [0, 2**32)), else Grain's default seed derived from seed() upstream (ValueError if there is none).
        """

    def seed(self, words: Sequence[int]) -> MapDataset:
        """
        Marks the node as the source of default seeds; the seed (any size) as its 32-bit words, least significant first.
        """

    def map(self, fn: Callable) -> MapDataset: ...

    def random_map(self, fn: Callable, words: Sequence[int]) -> MapDataset:
        """
        fn(element, numpy.random.Generator) with Grain's Philox scheme; the seed (any size) as its 32-bit words, least significant first.
        """

    def map_with_index(self, fn: Callable) -> MapDataset: ...

    def batch(self, batch_size: int, drop_remainder: bool, batch_fn: Callable | None) -> MapDataset: ...

    def __len__(self) -> int: ...

    def calls_python(self) -> bool:
        """
        True if the node calls Python per element (computed with the GIL held).
        """

    def get(self, index: int) -> object:
        """Element at a global index (>= 0); None if filtered out."""

    def get_many(self, indices: Sequence[int]) -> list:
        """
        Elements at global indices (each >= 0), read together (MapNode::GetMany).
        """

    def filter(self, fn: Callable) -> MapDataset: ...

    def shuffle(self, seed: int) -> MapDataset: ...

    def window_shuffle(self, window_size: int, seed: int) -> MapDataset:
        """Grain's WindowShuffleMapDataset."""

    def flat_map(self, fn: Callable, max_fan_out: int) -> MapDataset:
        """Grain's FlatMapMapDataset."""

    def slice(self, start: int | None, stop: int | None, step: int | None) -> MapDataset: ...

    def reindex(self, indices: Annotated[NDArray[numpy.int64], dict(shape=(None,), order='C', device='cpu', writable=False)]) -> MapDataset:
        """
        Grain's ReindexMapDataset (spelt/dataset.h Reindex): element k is the element at indices[k % len(indices)]; indices: a 1-D C-contiguous int64 array.
        """

    def repeat(self, num_epochs: int | None, reseed_each_epoch: bool) -> MapDataset: ...

    def to_iter(self, num_threads: int, prefetch_buffer_size: int, allow_nones: bool) -> IterDataset:
        """Grain's to_iter_dataset: ordered read-ahead (spelt/executor.h)."""

    def as_stream(self) -> IterDataset:
        """
        This dataset read by an IterDataset operation (spelt/dataset.h AsStream).
        """

    def batches_from(self, begin: int, batch_size: int, drop_remainder: bool, none_marker: object | None = None) -> MapDataset: ...

    def compute_chunk(self, begin: int, count: int) -> tuple: ...

    def compute_chunk_into(self, writer: ChunkWriter, begin: int, count: int, pickle_element: object) -> tuple: ...

    def image_map(self, ops: Sequence[ImageOp]) -> MapDataset:
        """
        Map by native image ops (spelt/image_ops.h), called concurrently without the GIL.
        """

    def image_random_map(self, ops: Sequence[ImageOp], words: Sequence[int]) -> MapDataset:
        """
        random_map by native image ops, drawing from random_map's Philox stream.
        """

    def image_record_map(self, ops: Sequence[ImageOp], sampler: Sampler, shard_options: ShardOptions) -> MapDataset:
        """
        A DataLoader's per-record image ops (see bind_vision.cc), run without the GIL.
        """

@overload
def source(source: NativeSource) -> MapDataset: ...

@overload
def source(source: object) -> MapDataset:
    """A MapDataset over any object with __len__ and __getitem__."""

def seed_words(seed: int, what: str) -> list[int]:
    """
    The 32-bit words of a seed of any size (ds.seed(), random_map), least significant first, as numpy splits an int (spelt/seeds.h): ValueError naming `what` if negative.
    """

def range(start: int, stop: int, step: int) -> MapDataset: ...

def concatenate(datasets: Sequence[MapDataset]) -> MapDataset: ...

def mix(datasets: Sequence[MapDataset], weights: Sequence[float] | None) -> MapDataset: ...

def zip(datasets: Sequence[MapDataset]) -> MapDataset:
    """Grain's ZipMapDataset."""

def zip_iter(datasets: Sequence[IterDataset], strict: bool) -> IterDataset:
    """Grain's ZipIterDataset."""

def mix_iter(datasets: Sequence[IterDataset], weights: Sequence[float] | None, keys: Sequence[str]) -> IterDataset:
    """
    Grain's MixedIterDataset; keys: one per dataset for a mapping of parents, or empty.
    """

def python_map_dataset(dataset: object, parents: Sequence[object]) -> MapDataset:
    """
    A user's MapDataset subclass (__len__, __getitem__) as an engine node; parents: the engine datasets (MapDataset / IterDataset) of its parents.
    """

def python_iter_dataset(dataset: object, parents: Sequence[object]) -> IterDataset:
    """
    A user's IterDataset subclass (__iter__ -> DatasetIterator) as an engine node; parents: the engine datasets (MapDataset / IterDataset) of its parents.
    """

class IterDataset:
    """Engine handle of an IterDataset (spelt/dataset.h)."""

    def name(self) -> str:
        """Grain's class name of the node, e.g. 'ShuffleMapDataset'."""

    def resolve_seed(self, seed: int | None, what: str) -> int:
        """
        The seed of a random transformation `what` on top (spelt/seeds.h): `seed` if given (ValueError outside [0, 2**32)), else Grain's default seed derived from seed() upstream (ValueError if there is none).
        """

    def seed(self, words: Sequence[int]) -> IterDataset:
        """
        Marks the node as the source of default seeds; the seed (any size) as its 32-bit words, least significant first.
        """

    def map(self, fn: Callable) -> IterDataset: ...

    def random_map(self, fn: Callable, words: Sequence[int]) -> IterDataset:
        """
        fn(element, numpy.random.Generator) with Grain's Philox scheme; the seed (any size) as its 32-bit words, least significant first.
        """

    def map_with_index(self, fn: Callable) -> IterDataset: ...

    def batch(self, batch_size: int, drop_remainder: bool, batch_fn: Callable | None) -> IterDataset: ...

    def filter(self, fn: Callable, transform_name: str) -> IterDataset: ...

    def flat_map(self, fn: Callable) -> IterDataset: ...

    def window_shuffle(self, window_size: int, seed: int) -> IterDataset:
        """Grain's WindowShuffleIterDataset."""

    def marker_as_none(self, marker: object) -> IterDataset:
        """
        Each element that is the object `marker` (by identity) becomes None, the rest pass unchanged; a MapIterDataset node whose function runs no Python.
        """

    def with_options(self) -> IterDataset:
        """Grain's WithOptionsIterDataset level (for default-seed derivation)."""

    def rebatch(self, batch_size: int, drop_remainder: bool) -> IterDataset:
        """Grain's RebatchIterDataset."""

    def limit(self, count: int) -> IterDataset:
        """Grain's LimitIterDataset."""

    def repeat(self, num_epochs: int | None) -> IterDataset:
        """Grain's RepeatIterDataset."""

    def make_iterator(self, filter_warn_threshold_ratio: float | None = 0.9, filter_raise_threshold_ratio: float | None = None, warn: Callable[[str], None] | None = None) -> DatasetIterator:
        """
        An iterator whose filters check these thresholds (spelt/dataset_options.h); `warn` receives the warnings (None: stderr).
        """

    def image_map(self, ops: Sequence[ImageOp]) -> IterDataset:
        """
        Map by native image ops (spelt/image_ops.h), called concurrently without the GIL.
        """

    def image_random_map(self, ops: Sequence[ImageOp], words: Sequence[int]) -> IterDataset:
        """
        random_map by native image ops, drawing from random_map's Philox stream.
        """

def with_filter_thresholds(dataset: IterDataset, warn_set: bool, warn: float | None, raise_set: bool, raise_: float | None) -> IterDataset:
    """
    The thresholds a pipeline sets for itself, over those of the iterator that makes it (spelt/dataset_options.h WithFilterThresholds).
    """

NEXT_INDEX_KEY: str = 'next_index'

PARENT_KEY: str = 'parent'

INTERLEAVE_NEXT_INDEX_IN_CYCLE_KEY: str = 'next_index_in_cycle'

INTERLEAVE_NEXT_INDEX_IN_DATASETS_KEY: str = 'next_index_in_datasets'

INTERLEAVE_ITERATORS_IN_USE_INDICES_KEY: str = 'iterators_in_use_indices'

INTERLEAVE_ITERATORS_IN_USE_STATES_KEY: str = 'iterators_in_use_states'

INTERLEAVE_EXHAUSTED_KEY: str = 'exhausted'

INTERLEAVE_FUTURE_STATES_KEY: str = 'future_states'

class DatasetIterator:
    """
    Iterator of an engine pipeline. Thread-safe: calls from several threads run one at a time (a waiting thread does not hold the GIL), so each element goes to exactly one caller and get_state() is always the position between two elements. A call from inside the pipeline's own callables raises RuntimeError.
    """

    def next(self) -> object:
        """The next element; StopIteration at the end, ValueError once closed."""

    def get_state(self) -> object:
        """The state after the last element returned (JSON-compatible dict)."""

    def set_state(self, arg: object, /) -> None:
        """Restores a state of get_state(); ValueError if malformed or closed."""

    def get_next_index(self) -> int:
        """
        The index of the element next() returns next, read from get_state() (Grain's get_next_index: a batch counts batches, limit / random_map / map_with_index their elements). NotImplementedError (NextIndexUnsupported) where the pipeline cannot tell (after a filter, say); ValueError once closed.
        """

    def set_next_index(self, index: int) -> None:
        """
        Moves the iterator to return element `index` next, without reading any element (Grain's set_next_index), through set_state: IndexError out of range; NotImplementedError (NextIndexUnsupported) where the pipeline cannot move to an index; ValueError once closed.
        """

    def start_prefetch(self) -> None:
        """
        Starts the pipeline's background read-ahead now (Grain's start_prefetch).
        """

    def close(self) -> None:
        """Releases the pipeline (after a next() in progress); idempotent."""

class ShardOptions:
    def __init__(self, shard_index: int, shard_count: int, drop_remainder: bool = False) -> None: ...

    @property
    def shard_index(self) -> int: ...

    @property
    def shard_count(self) -> int: ...

    @property
    def drop_remainder(self) -> bool: ...

    def global_index(self, local_index: int) -> int: ...

    def even_split(self, num_examples: int) -> tuple: ...

    def __repr__(self) -> str: ...

class Sampler:
    def __len__(self) -> int: ...

    def record_key(self, index: int) -> int: ...

    def rng_key(self, index: int) -> int | None: ...

    def record(self, index: int) -> tuple[int, int | None]: ...

    @property
    def shard_options(self) -> ShardOptions: ...

class IndexSampler(Sampler):
    def __init__(self, num_records: int, shard_options: ShardOptions, shuffle: bool, num_epochs: int | None, seed: object | None) -> None: ...

class SequentialSampler(Sampler):
    def __init__(self, num_records: int, shard_options: ShardOptions, seed: object | None) -> None: ...

def python_sampler(sampler: object, shard_options: ShardOptions) -> Sampler: ...

@overload
def sampler_dataset(sampler: Sampler, source: NativeSource, shard_options: ShardOptions) -> MapDataset: ...

@overload
def sampler_dataset(sampler: Sampler, source: object, shard_options: ShardOptions) -> MapDataset: ...

def range_source(start: int, stop: int, step: int) -> NativeSource: ...

class NativeSource:
    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

    def __getitem__(self, arg: int, /) -> object: ...

class ArrayRecordSource(NativeSource):
    def __init__(self, paths: Sequence[str], repr: str, verify_data_hash: bool = True, files: object | None = None) -> None:
        """
        files: None (local paths) or a spelt._file_system.Files opening the paths.
        """

    def read_many(self, indices: Sequence[int], num_threads: int) -> list: ...

    @property
    def paths(self) -> list[str]: ...

class ArrayRecordWriter:
    @staticmethod
    def open(path: str, options: str = '', files: object | None = None) -> ArrayRecordWriter: ...

    def write(self, record: bytes) -> None: ...

    def close(self) -> None: ...

    @property
    def num_records(self) -> int: ...

def array_record_info(path: str, files: object | None = None) -> dict:
    """Facts about one ArrayRecord file (reads its index and first chunk)."""

class TFRecordIterator:
    """Iterator of a TFRecordIterDataset: bytes records, Grain's state."""

    def __init__(self, path: str, compression: str | None, files: object | None = None) -> None: ...

    def __iter__(self) -> object: ...

    def __next__(self) -> object: ...

    def get_state(self) -> dict:
        """{'reader_offset': byte offset of the next record}"""

    def set_state(self, state: dict) -> None:
        """
        Restores a state of get_state(); ValueError if malformed or past the end.
        """

    def start_prefetch(self) -> None:
        """Nothing to start: reads begin at next()."""

    def close(self) -> None:
        """Closes the file; idempotent."""

def tfrecord_iter_dataset(path: str, compression: str | None, files: object | None = None) -> IterDataset:
    """
    Grain's TFRecordIterDataset: records (bytes) in file order, state {'reader_offset': n}. compression: '', 'GZIP', 'ZLIB', or None to detect it.
    """

def detect_tfrecord_compression(path: str, files: object | None = None) -> str:
    """'' (uncompressed), 'GZIP' or 'ZLIB', from the file's first bytes."""

class TFRecordSource(NativeSource):
    def __init__(self, paths: Sequence[str], repr: str, progress: Callable | None, files: object | None = None) -> None:
        """
        Indexes the files; progress(done_bytes, total_bytes) is called while it does.
        """

    def read_many(self, indices: Sequence[int]) -> list:
        """Records at indices (bytes), consecutive ones read together."""

    @property
    def paths(self) -> list[str]: ...

class TFRecordWriter:
    @staticmethod
    def open(path: str, compression: str = '', level: int = -1, files: object | None = None) -> TFRecordWriter: ...

    def write(self, record: bytes) -> None: ...

    def close(self) -> None: ...

    @property
    def num_records(self) -> int: ...

class ArenaView:
    """A writable byte buffer inside an Arena (buffer protocol)."""

    def __len__(self) -> int: ...

class UnpackedChunk:
    """The elements of a chunk reply, for the process executor."""

    def __init__(self, values: list) -> None: ...

    def __len__(self) -> int: ...

    @property
    def error(self) -> object: ...

class ChunkWriter:
    """Builds a chunk reply in a worker (py_chunk_writer.h)."""

    def add(self, values: list, pickle_element: object) -> tuple: ...

    def finish(self) -> tuple: ...

class Arena:
    """A shared-memory file mapped into this process (py_arena.h)."""

    def __init__(self, fd: int, size: int) -> None: ...

    @property
    def size(self) -> int: ...

    def allocate(self, length: int) -> int | None: ...

    def free(self, offsets: Sequence[int]) -> None: ...

    def writer(self) -> ChunkWriter: ...

    def unpack(self, record: bytes) -> UnpackedChunk: ...

    def discard(self, record: bytes) -> None: ...

    def take_released(self) -> list[int]: ...

def process_prefetch(parent: MapDataset, keeper: object, allow_nones: bool, num_workers: int, per_worker_buffer_size: int, target_chunk_seconds: float = 0.01) -> IterDataset: ...

def pack(parent: IterDataset, length_struct: object, num_packing_bins: int, seed: int, shuffle_bins: bool, shuffle_bins_group_by_feature: str | None, meta_features: Sequence[str], pack_alignment_struct: object | None, padding_struct: object | None, max_sequences_per_bin: int | None, best_fit: bool, whole_batches: bool) -> IterDataset:
    """
    First-fit / best-fit packing of the parent's sequences into bins (spelt/packing.h).
    """

def concat_then_split(parent: IterDataset, length_struct: Sequence[tuple[str, int]], meta_features: Sequence[str], split_full_length_features: bool, bos_features: Sequence[str], bos_token_id: int) -> IterDataset:
    """
    Concatenates the parent's sequences and splits them at target lengths (spelt/packing.h).
    """

class StageStats:
    """Counters of one pipeline stage (thread-safe)."""

    def __init__(self) -> None: ...

    def snapshot(self) -> dict:
        """
        {'elements', 'total_ns', 'self_ns', 'bytes'}: the counters now (ints; ns summed over the threads that ran the stage).
        """

def profiled_map(dataset: MapDataset, stats: StageStats) -> MapDataset:
    """The node with its Get/GetMany/GetStacked counted in stats."""

def profiled_iter(dataset: IterDataset, stats: StageStats) -> IterDataset:
    """The node with its iterators' Next counted in stats."""

def thread_prefetch(dataset: IterDataset, buffer_size: int) -> IterDataset:
    """Grain's ThreadPrefetchIterDataset (spelt/thread_prefetch.h)."""

def thread_prefetch_iterator(parent: object, buffer_size: int) -> DatasetIterator:
    """
    Grain's ThreadPrefetchDatasetIterator over a Python iterator with get_state/set_state.
    """

def cache(dataset: IterDataset) -> IterDataset:
    """Grain's CacheIterDataset (ops/cache.cc)."""

def interleave(datasets: Sequence[IterDataset], cycle_length: int, num_make_iter_threads: int, make_iter_buffer_size: int, iter_buffer_size: int) -> IterDataset:
    """Grain's InterleaveIterDataset over a list of datasets."""

def interleave_lazy(count: int, dataset_at: Callable, cycle_length: int, num_make_iter_threads: int, make_iter_buffer_size: int, iter_buffer_size: int) -> IterDataset:
    """
    Grain's InterleaveIterDataset over `count` datasets; dataset_at(i) -> IterDataset is called (with the GIL) each time dataset i's iterator is made.
    """

def virtual_shards(shards: Sequence[IterDataset], num_virtual_shards: int, shard_index: int, shard_count: int) -> IterDataset:
    """
    One host's round robin over its virtual shards' pipelines (shards h, h + M, ... < K, in that order; spelt/virtual_shards.h).
    """

class ImageOp:
    """One spelt.vision transform for the native path."""

    @property
    def name(self) -> str: ...

    @property
    def random(self) -> bool: ...

def image_op(kind: str, field: str | None, height: int = 0, width: int = 0, shorter_side: int = 0, nearest: bool = False, scale: tuple[float, float] = (0.08, 1.0), ratio: tuple[float, float] = (0.75, 1.3333333333333333), p: float = 0.5, mean: Sequence[float] = [], std: Sequence[float] = [], per_channel: bool = False, chw: bool = False, bfloat16: bool = False, defer_decode: bool = False, exif_orientation: bool = False, skip_corrupt: bool = False, reference: object | None = None, decode: object | None = None, resize: object | None = None) -> ImageOp:
    """
    An ImageOp (spelt/image_ops.h); reference(leaf), decode(bytes) and resize(image, h, w) are the Python fallbacks.
    """
