"""Wrong argument types in the public API raise a TypeError (ValueError for a wrong value) that
names the argument and the type received, never nanobind's "incompatible function arguments"
list of internal signatures. Where Grain 0.2.18 raises for the same call it raises the same type
(often only when iterating; Spelt raises at the call)."""

import numpy as np
import pytest
import spelt
from spelt import experimental

_M = spelt.MapDataset.range(10)
_I = _M.to_iter_dataset()
_BATCHES = _M.batch(2).to_iter_dataset()
_NO_SHARDING = spelt.sharding.NoSharding()


def _first(ds):
    return next(iter(ds))


CASES = {
    # MapDataset
    "range": (lambda: spelt.MapDataset.range(0, 2.5), "range: stop"),
    "map_batch": (lambda: _M.batch(2.0), "batch: batch_size"),
    "map_batch_fn": (lambda: _M.batch(2, batch_fn=5), "batch: batch_fn"),
    "map_repeat": (lambda: _M.repeat(1.5), "repeat: num_epochs"),
    "map_shuffle": (lambda: _M.shuffle(seed=1.5), "shuffle: seed"),
    "map_seed": (lambda: _M.seed("x"), "seed: seed"),
    "map_filter": (lambda: _M.filter(5), "filter"),
    "map_map": (lambda: _M.map(5), "map"),
    "map_slice": (lambda: _M.slice(slice(1.5, None)), "slice: start"),
    "map_getitem": (lambda: _M[1.5], "index"),
    "map_getitem_slice": (lambda: _M[0:2.5], "slice: stop"),
    "map_getitem_step": (lambda: _M[::"x"], "slice: step"),
    "map_mix_weights": (lambda: spelt.MapDataset.mix([_M, _M], weights="x"), "mix: weights"),
    "map_mix_weight": (lambda: spelt.MapDataset.mix([_M, _M], [1, None]), "mix: weights[1]"),
    "map_source": (lambda: spelt.MapDataset.source(None), "MapDataset.source"),
    "map_concatenate": (lambda: spelt.MapDataset.concatenate(1.5), "concatenate: datasets"),
    "map_mix_datasets": (lambda: spelt.MapDataset.mix([_M, _I]), "mix: datasets[1]"),
    "zip_map": (lambda: experimental.ZipMapDataset([_M, 5]), "ZipMapDataset: datasets[1]"),
    "to_iter_num_threads": (
        lambda: _M.to_iter_dataset(spelt.ReadOptions(num_threads=1.5)),
        "ReadOptions.num_threads",
    ),
    "to_iter_prefetch_buffer_size": (
        lambda: _M.to_iter_dataset(spelt.ReadOptions(prefetch_buffer_size=1.5)),
        "ReadOptions.prefetch_buffer_size",
    ),
    "window_shuffle_map": (
        lambda: experimental.WindowShuffleMapDataset(_M, window_size=2.0, seed=0),
        "window_size",
    ),
    "flat_map_map": (lambda: experimental.FlatMapMapDataset(_M, 5), "FlatMap"),
    # IterDataset
    "iter_batch": (lambda: _I.batch("2"), "batch: batch_size"),
    "iter_batch_fn": (lambda: _I.batch(2, batch_fn="x"), "batch: batch_fn"),
    "iter_map": (lambda: _I.map(None), "map"),
    "iter_mix_datasets": (lambda: spelt.IterDataset.mix([_I, None]), "mix: datasets[1]"),
    "zip_iter": (lambda: experimental.ZipIterDataset(["x"]), "ZipIterDataset: datasets[0]"),
    "iter_mix_weights": (lambda: spelt.IterDataset.mix([_I, _I], weights=1.5), "mix: weights"),
    "mp_prefetch_num_workers": (
        lambda: _I.mp_prefetch(spelt.MultiprocessingOptions(num_workers=1.5)),
        "MultiprocessingOptions.num_workers",
    ),
    "mp_prefetch_buffer_size": (
        lambda: _I.mp_prefetch(
            spelt.MultiprocessingOptions(num_workers=1, per_worker_buffer_size="x")
        ),
        "MultiprocessingOptions.per_worker_buffer_size",
    ),
    "mp_prefetch_worker_init_fn": (
        lambda: _I.mp_prefetch(spelt.MultiprocessingOptions(num_workers=1), worker_init_fn=5),
        "mp_prefetch: worker_init_fn",
    ),
    "mp_prefetch_ram_budget_mb": (
        lambda: _I.mp_prefetch(autotune=True, ram_budget_mb="x"),
        "mp_prefetch: ram_budget_mb",
    ),
    "prefetch": (
        lambda: _I.prefetch(spelt.MultiprocessingOptions(num_workers=None)),
        "MultiprocessingOptions.num_workers",
    ),
    "flat_map_iter": (lambda: experimental.FlatMapIterDataset(_I, 5), "FlatMapIterDataset"),
    "rebatch": (lambda: experimental.RebatchIterDataset(_BATCHES, 2.5), "batch_size"),
    "window_shuffle_iter": (
        lambda: experimental.WindowShuffleIterDataset(_I, window_size=2.0, seed=0),
        "window_size",
    ),
    "interleave": (
        lambda: experimental.InterleaveIterDataset([_I, _I], cycle_length=1.5),
        "cycle_length",
    ),
    "interleave_buffer": (
        lambda: experimental.InterleaveIterDataset([_I], cycle_length=1, iter_buffer_size="x"),
        "iter_buffer_size",
    ),
    "thread_prefetch": (
        lambda: experimental.ThreadPrefetchIterDataset(_I, prefetch_buffer_size=1.5),
        "prefetch_buffer_size",
    ),
    "multithread_prefetch": (
        lambda: experimental.multithread_prefetch(_I, num_threads=2, buffer_size=1.5),
        "buffer_size",
    ),
    "first_fit_bins": (
        lambda: experimental.FirstFitPackIterDataset(_I, length_struct=4, num_packing_bins=1.5),
        "num_packing_bins",
    ),
    "best_fit_bins": (
        lambda: experimental.BestFitPackIterDataset(_I, length_struct=4, num_packing_bins=None),
        "num_packing_bins",
    ),
    "dataset_options": (
        lambda: experimental.DatasetOptions(filter_warn_threshold_ratio="x"),
        "filter_warn_threshold_ratio",
    ),
    "index_shuffle": (lambda: experimental.index_shuffle(1.5, 10, 0), "index_shuffle: index"),
    "batch_and_pad": (
        lambda: experimental.batch_and_pad([np.ones(2)], batch_size=1.5),
        "batch_and_pad: batch_size",
    ),
    # transforms, samplers, sharding, DataLoader
    "transforms_batch": (lambda: spelt.transforms.Batch(batch_size=2.5), "Batch: batch_size"),
    "transforms_batch_fn": (
        lambda: spelt.transforms.Batch(batch_size=2, batch_fn=1),
        "Batch: batch_fn",
    ),
    "index_sampler": (lambda: spelt.samplers.IndexSampler(5.0), "IndexSampler: num_records"),
    "index_sampler_getitem": (
        lambda: spelt.samplers.IndexSampler(5, num_epochs=1)[1.5],
        "sampler index",
    ),
    "sequential_sampler_getitem": (
        lambda: spelt.samplers.SequentialSampler(5)[None],
        "sampler index",
    ),
    "shard_index": (
        lambda: spelt.sharding.ShardOptions(shard_index=0.5, shard_count=2),
        "ShardOptions.shard_index",
    ),
    "shard_count": (
        lambda: spelt.sharding.ShardOptions(shard_index=0, shard_count="2"),
        "ShardOptions.shard_count",
    ),
    "even_split": (
        lambda: spelt.sharding.even_split(10.0, _NO_SHARDING),
        "even_split: num_examples",
    ),
    "data_loader_source": (
        lambda: spelt.DataLoader(data_source=None, sampler=spelt.samplers.IndexSampler(5)),
        "data_source",
    ),
    "data_loader_num_threads": (
        lambda: _first(
            spelt.DataLoader(
                data_source=list(range(5)),
                sampler=spelt.samplers.SequentialSampler(5, _NO_SHARDING),
                read_options=spelt.ReadOptions(num_threads=1.5),
            )
        ),
        "ReadOptions.num_threads",
    ),
    "data_loader_worker_count": (
        lambda: spelt.DataLoader(
            data_source=list(range(5)), sampler=spelt.samplers.IndexSampler(5), worker_count=1.5
        ),
        "DataLoader: worker_count",
    ),
    "data_loader_worker_buffer_size": (
        lambda: spelt.DataLoader(
            data_source=list(range(5)),
            sampler=spelt.samplers.IndexSampler(5),
            worker_buffer_size="x",
        ),
        "DataLoader: worker_buffer_size",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrong_argument_type_names_the_argument(name):
    make, what = CASES[name]
    with pytest.raises(TypeError) as e:
        make()
    message = str(e.value)
    assert what in message
    assert "incompatible function arguments" not in message


@pytest.mark.parametrize(
    "make",
    [
        lambda: _M.batch(np.int64(2))[0],
        lambda: _M.slice(slice(np.int32(1), None, None))[0],
        lambda: _M[np.uint8(3)],
        lambda: spelt.MapDataset.mix([_M, _M], np.array([1, 2]))[0],
        lambda: spelt.MapDataset.mix([_M, _M], [np.float32(0.5), 1])[0],
        lambda: _first(_M.to_iter_dataset(spelt.ReadOptions(num_threads=np.int64(2)))),
        lambda: _first(
            experimental.InterleaveIterDataset([_I], cycle_length=np.int64(1), iter_buffer_size=0)
        ),
        lambda: spelt.transforms.Batch(batch_size=np.int64(2), batch_fn=list),
        lambda: spelt.samplers.IndexSampler(5, num_epochs=1)[np.int64(2)],
        lambda: spelt.sharding.ShardOptions(shard_index=np.int64(1), shard_count=2),
        lambda: experimental.DatasetOptions(filter_raise_threshold_ratio=np.float64(0.5)),
    ],
)
def test_other_integer_and_number_types_are_accepted(make):
    make()


@pytest.mark.parametrize("flag", [np.bool_(True), 1, True, np.int64(1)])
def test_drop_remainder_and_allow_nones_take_numpy_bools_and_ints(flag):
    # Grain reads these flags by truthiness
    assert len(list(_M.batch(3, drop_remainder=flag))) == 3
    assert len(list(_I.batch(3, drop_remainder=flag))) == 3
    assert len(list(_I.apply(spelt.transforms.Batch(3, drop_remainder=flag)))) == 3
    assert len(list(_M.to_iter_dataset(allow_nones=flag))) == 10
    assert len(list(_M.batch(3, drop_remainder=np.bool_(False)))) == 4


ERROR_CASES = {
    "drop_remainder_str": (
        lambda: _M.batch(2, drop_remainder="False"),
        TypeError,
        "batch: drop_remainder must be a bool, got str",
    ),
    "allow_nones_none": (
        lambda: _M.to_iter_dataset(allow_nones=None),
        TypeError,
        "to_iter_dataset: allow_nones must be a bool, got NoneType",
    ),
    "batch_transform_drop_remainder": (
        lambda: spelt.transforms.Batch(2, drop_remainder=[1]),
        TypeError,
        "Batch: drop_remainder must be a bool, got list",
    ),
    "read_options_dict": (
        lambda: _M.to_iter_dataset({"num_threads": 2}),
        TypeError,
        "to_iter_dataset: read_options must be a ReadOptions or None, got dict",
    ),
    "read_options_int": (
        lambda: spelt.MapDataset.range(3).to_iter_dataset(4),
        TypeError,
        "to_iter_dataset: read_options must be a ReadOptions or None, got int",
    ),
    "mp_prefetch_options_dict": (
        lambda: _I.mp_prefetch({"num_workers": 2}),
        TypeError,
        "mp_prefetch: options must be a MultiprocessingOptions or None, got dict",
    ),
    "loader_read_options": (
        lambda: spelt.DataLoader(
            data_source=[1, 2],
            sampler=spelt.samplers.SequentialSampler(2, _NO_SHARDING),
            read_options=3,
        ),
        TypeError,
        "DataLoader: read_options must be a ReadOptions or None, got int",
    ),
    "loader_sampler_list": (
        lambda: spelt.DataLoader(data_source=[1, 2], sampler=[0, 1]),
        TypeError,
        "DataLoader: sampler must be a sampler",
    ),
    "index_sampler_shard_options_int": (
        lambda: spelt.samplers.IndexSampler(4, 2),
        TypeError,
        "shard_options must be a ShardOptions (shard_index, shard_count, drop_remainder), got int",
    ),
    "batch_transform_zero": (
        lambda: spelt.transforms.Batch(0),
        ValueError,
        "Batch: batch_size must be positive, got 0",
    ),
    "map_transform_class": (
        lambda: _M.map(spelt.transforms.Map),
        TypeError,
        "map expects a transform instance, got the class Map",
    ),
}


@pytest.mark.parametrize("name", ERROR_CASES)
def test_wrong_arguments_raise_at_the_call(name):
    make, kind, fragment = ERROR_CASES[name]
    with pytest.raises(kind) as info:
        make()
    assert fragment in str(info.value)


def test_range_of_a_bool_is_range_of_an_int_as_in_grain_and_python():
    assert list(spelt.MapDataset.range(True)) == [0]


def test_mp_prefetch_of_a_native_pipeline_does_not_warn_about_its_own_buffer(caplog):
    ds = spelt.MapDataset.range(10).to_iter_dataset()
    with caplog.at_level("WARNING", logger="spelt.options"):
        out = list(ds.mp_prefetch(spelt.MultiprocessingOptions(num_workers=2)))
    assert out == list(range(10))
    assert "smaller than num_threads" not in caplog.text
    # values the user set still warn, as in Grain
    with caplog.at_level("WARNING", logger="spelt.options"):
        spelt.ReadOptions(num_threads=16, prefetch_buffer_size=2)
    assert "prefetch_buffer_size=2 is smaller than num_threads=16" in caplog.text
