"""Multi-host JAX end to end (issue 22): N local ``jax.distributed`` processes on loopback (CPU,
gloo) run tests/multihost/mh_worker.py. Each shards six pipelines with ``ShardByJaxProcess``
(DataLoaders with 0 and 1 worker processes, a Dataset-API pipeline, and ElasticIterators over
a MapDataset: plain, with a worker process, and through ``experimental.device_put``), and
a filtered, mixed pipeline cut into virtual shards (``experimental.VirtualShardIterDataset``)
and first-fit packing in virtual shards with a worker process per shard (``mp_prefetch``),
assembles global batches with ``jax.make_array_from_process_local_data``, saves with Orbax at
step SAVE_AT and reads on. Restore runs continue from the checkpoint: every pipeline on the
same count (2 -> 2), the ElasticIterators and the virtual shards on another one (2 -> 1,
2 -> 3, 4 -> 2). Checked: every record (for the virtual shards: every output of every shard's
pipeline, every token of the packed records) exactly once across the union of hosts (records
lost and repeated: 0 and 0), resumed batches equal to the uninterrupted ones, and the same global batches as Grain 0.2.18
(which restores on another count only by hand, not through Orbax). Each case starts at most 4
JAX processes (and one worker process each for the ``_mp`` pipelines: per virtual shard for
``virtual_pack_mp``, 4 over all hosts).
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _installed(dist):
    # tests/conftest.py blocks `import jax` in this process; the workers import it.
    from importlib import metadata  # pylint: disable=import-outside-toplevel

    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


if not (_installed("jax") and _installed("orbax-checkpoint")):
    pytest.skip("needs jax and orbax-checkpoint", allow_module_level=True)

import mh_worker

WORKER = Path(__file__).with_name("mh_worker.py")
DOC = Path(__file__).parents[2] / "docs" / "multihost.md"
TIMEOUT_S = 120
ELASTIC, SAME_COUNT, VIRTUAL = mh_worker.ELASTIC, mh_worker.SAME_COUNT, mh_worker.VIRTUAL
# (processes that saved, processes that restore): the pipelines restored. docs/multihost.md's
# table lists these (test_docs_table_is_what_is_tested).
RESTORES = {
    (2, 2): SAME_COUNT + ELASTIC + VIRTUAL,
    (2, 1): ELASTIC + VIRTUAL,
    (2, 3): ELASTIC + VIRTUAL,
    (4, 2): ELASTIC + VIRTUAL,
}


def _free_port():
    import socket  # pylint: disable=import-outside-toplevel

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(lib, action, num_processes, ckpt_dir, tmp_path, tag):
    """Runs NUM_PROCESSES worker processes; returns their JSON outputs in process order.
    Every process is killed in ``finally`` (none is left behind; the workers' own worker
    processes end with them)."""
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    procs, outs = [], []
    try:
        for i in range(num_processes):
            out = tmp_path / f"{tag}-{i}.json"
            log = open(tmp_path / f"{tag}-{i}.log", "w")  # noqa: SIM115
            procs.append(
                (
                    subprocess.Popen(
                        [sys.executable, str(WORKER), lib, action, str(i)]
                        + [str(num_processes), str(port), str(ckpt_dir), str(out)],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    ),
                    log,
                )
            )
            outs.append(out)
        for proc, _ in procs:
            proc.wait(timeout=TIMEOUT_S)
    finally:
        for proc, log in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
    for proc, log in procs:
        assert proc.returncode == 0, Path(log.name).read_text()[-4000:]
    return [json.loads(out.read_text()) for out in outs]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(lib, action, count, saved=None)``: the outputs of a run (each run once per
    module). ``save`` on ``count`` processes writes checkpoint ``<lib>-<count>``; a restore
    reads the checkpoint that ``saved`` processes wrote (running that save first)."""
    tmp = tmp_path_factory.mktemp("multihost")
    cache = {}

    def get(lib, action, count, saved=None):
        saved = count if saved is None else saved
        key = (lib, action, count, saved)
        if key not in cache:
            if action != "save":
                get(lib, "save", saved)
            tag = f"{lib}-{action}-{saved}-to-{count}"
            cache[key] = _run(lib, action, count, tmp / f"{lib}-{saved}", tmp, tag)
        return cache[key]

    return get


def _expected(name):
    """Every record of pipeline ``name``, sorted: range(LENGTH); for ``virtual`` the outputs
    of its virtual shards' pipelines, each built here on its own; for ``virtual_pack_mp`` the
    tokens of every record."""
    if name not in VIRTUAL:
        return list(range(mh_worker.LENGTH))
    if name == "virtual_pack_mp":  # the records kept, of r % 3 + 1 tokens 100 * r + 1, ...
        kept = [r for r in range(mh_worker.LENGTH) if r % 5 != 0]
        return sorted(t for r in kept for t in range(100 * r + 1, 100 * r + r % 3 + 2))
    import spelt  # pylint: disable=import-outside-toplevel

    shards = [
        spelt.sharding.ShardOptions(v, mh_worker.VIRTUAL_SHARDS)
        for v in range(mh_worker.VIRTUAL_SHARDS)
    ]
    return sorted(int(x) for shard in shards for x in mh_worker.virtual_shard(spelt, shard))


def _lost_repeated(records, name):
    """(records of pipeline ``name`` never read, records read more than once) over ``records``."""
    seen = set(records)
    return len(set(_expected(name)) - seen), len(records) - len(seen)


def _check_exactly_once(results, name):
    """Every record of the pipeline once across hosts: in the hosts' local batches and in the
    global batches (all processes see the same global batches; ``virtual`` has none)."""
    local = [x for r in results for b in r[name]["local"] for x in b]
    assert _lost_repeated(local, name) == (0, 0), name
    assert sorted(local) == _expected(name), name
    if name in VIRTUAL:
        assert all(r[name]["global"] == [] for r in results), name
        return
    for r in results[1:]:
        assert r[name]["global"] == results[0][name]["global"], name
    flat = [x for b in results[0][name]["global"] for x in b]
    assert sorted(flat) == list(range(mh_worker.LENGTH)), name


def _installed_grain():
    return _installed("grain")


def test_virtual_pack_pipeline_tokens_are_distinct():
    """What ``virtual_pack_mp`` reads: the records kept, 1 to 3 distinct tokens each."""
    tokens = _expected("virtual_pack_mp")
    assert len(tokens) == len(set(tokens)) > mh_worker.LENGTH


def test_virtual_shard_pipeline_is_filtered_and_mixed():
    """What ``virtual`` reads: both sources of the mix, the first filtered."""
    records = _expected("virtual")
    assert len(records) == len(set(records)) > mh_worker.LENGTH // 2
    assert {x for x in records if x < 1000} <= {r for r in range(mh_worker.LENGTH) if r % 4 != 1}
    assert any(x >= 1000 for x in records)


@pytest.mark.parametrize("count", [2, 4])
def test_hosts_every_record_once_and_global_batches(runs, count):
    results = runs("spelt", "save", count)
    assert [r["process"] for r in results] == [[i, count] for i in range(count)]
    for name in SAME_COUNT + ELASTIC + VIRTUAL:
        _check_exactly_once(results, name)
    for name in SAME_COUNT + ELASTIC:
        for r in results:
            assert len(r[name]["local"]) == mh_worker.LENGTH // mh_worker.GLOBAL_BATCH, name
            for local, glob in zip(r[name]["local"], r[name]["global"]):
                # Process i's host batch is the i-th slice of the global array.
                i = r["process"][0]
                assert glob[i * len(local) : (i + 1) * len(local)] == local
    # Worker processes and device_put change no batch.
    for base, other in (("loader", "loader_mp"), ("elastic", "elastic_dp")):
        for r in results:
            assert r[other] == r[base], other


def test_device_put_of_host_data_to_global_sharding_is_not_the_global_batch(runs):
    """device_put of a host batch to the global sharding either raises or gives an array of
    the host batch's shape, never the global batch: use make_array_from_process_local_data."""
    for r in runs("spelt", "save", 2):
        assert r["device_put_error"] != [mh_worker.GLOBAL_BATCH], r["device_put_error"]


def test_restore_on_same_host_count(runs):
    results = runs("spelt", "save", 2)
    restored = runs("spelt", "restore", 2)
    k = mh_worker.SAVE_AT
    for name in RESTORES[2, 2]:
        for before, after in zip(results, restored):
            assert after[name]["local"] == before[name]["local"][k:], name
            assert after[name]["global"] == before[name]["global"][k:], name
        # Records before the save plus the resumed ones: each once.
        local = [
            x
            for b, a in zip(results, restored)
            for r in (b[name]["local"][:k], a[name]["local"])
            for batch in r
            for x in batch
        ]
        assert _lost_repeated(local, name) == (0, 0), name


@pytest.mark.parametrize("saved,count", [p for p in RESTORES if p[0] != p[1]])
def test_elastic_restore_on_another_host_count(runs, saved, count):
    """ElasticIterators and virtual shards: a checkpoint of SAVED processes restores on COUNT
    through Orbax, and over the union of hosts, before and after, each record is read once.
    ElasticIterators: each later global step holds the same records as the uninterrupted run
    (in the new hosts' order). Virtual shards: the batches are those of the uninterrupted run
    (cut inside each shard), read by other hosts."""
    results = runs("spelt", "save", saved)
    restored = runs("spelt", "restore-elastic", count, saved)
    assert [r["process"] for r in restored] == [[i, count] for i in range(count)]
    k = mh_worker.SAVE_AT
    for name in RESTORES[saved, count]:
        _check_exactly_after_restore(results, restored, name, k)
    for name in VIRTUAL:
        batches = sorted(b for r in restored for b in r[name]["local"])
        assert batches == sorted(b for r in results for b in r[name]["local"][k:]), name
    for name in ELASTIC:
        expected = results[0][name]["global"][k:]
        assert [sorted(b) for b in restored[0][name]["global"]] == [sorted(b) for b in expected]
        for r in restored:
            host_batch = mh_worker.GLOBAL_BATCH // count
            assert all(len(b) == host_batch for b in r[name]["local"]), name
    if count == 1:
        assert restored[0]["device_put_error"] == [mh_worker.GLOBAL_BATCH]  # one host: all


def _check_exactly_after_restore(results, restored, name, k):
    """Local records of every host before the save and of every new host after: each once."""
    local = [x for r in results for b in r[name]["local"][:k] for x in b]
    local += [x for r in restored for b in r[name]["local"] for x in b]
    assert _lost_repeated(local, name) == (0, 0), name
    for r in restored[1:]:
        assert r[name]["global"] == restored[0][name]["global"], name


@pytest.mark.parametrize("count", [2, 4])
def test_same_global_batches_as_grain(runs, count):
    if not _installed_grain():
        pytest.skip("needs grain")
    ours, theirs = runs("spelt", "save", count), runs("grain", "save", count)
    for name in SAME_COUNT + ELASTIC:
        for a, b in zip(ours, theirs):
            assert a[name] == b[name], name


def test_same_restore_as_grain_on_same_host_count(runs):
    """Grain restores its own checkpoint (2 -> 2) to the same batches as Spelt."""
    if not _installed_grain():
        pytest.skip("needs grain")
    ours, theirs = runs("spelt", "restore", 2), runs("grain", "restore", 2)
    for name in SAME_COUNT + ELASTIC:
        for a, b in zip(ours, theirs):
            assert a[name] == b[name], name


@pytest.mark.parametrize("saved,count", [p for p in RESTORES if p[0] != p[1]])
def test_same_elastic_restore_as_grain_by_hand(runs, saved, count):
    """Grain 0.2.18 restores an ElasticIterator on another process count only by hand (each
    process reads one process's file and calls set_state; its Orbax handler raises, see
    test_grain_orbax_restore_on_another_host_count_raises): the same batches as Spelt's Orbax
    restore, on every host."""
    if not _installed_grain():
        pytest.skip("needs grain")
    ours = runs("spelt", "restore-elastic", count, saved)
    theirs = runs("grain", "restore-elastic", count, saved)
    for name in ELASTIC:
        for a, b in zip(ours, theirs):
            assert a[name] == b[name], name


def test_grain_orbax_restore_on_another_host_count_raises(runs):
    """Why Grain is compared by hand above: its handler reads only this process's file."""
    if not _installed_grain():
        pytest.skip("needs grain")
    (theirs,) = runs("grain", "grain-orbax-elastic", 1, 2)
    assert "process_0-of-1.json does not exist" in theirs["error"], theirs["error"]


def _section(title):
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


# Section of docs/multihost.md: the snippets of mh_worker.py (``# snippet: <name>``) that its
# python blocks are, in order. Every case runs each of them (virtual with Spelt only).
SNIPPETS = {
    "Shard per host": ["shard"],
    "Assemble global batches": ["assemble"],
    "Checkpoint with Orbax": ["orbax_save", "orbax_restore"],
    "Resuming on another host count": ["resume"],
    "Resuming any pipeline: virtual shards": ["virtual"],
}


@pytest.mark.parametrize("title", list(SNIPPETS))
def test_docs_snippets_are_what_the_worker_runs(title):
    """Each python block of a section of docs/multihost.md (after its imports) is the body of
    a snippet of mh_worker.py, which the runs above run."""
    blocks = _section(title).split("```python\n")[1:]
    source = WORKER.read_text()
    assert len(blocks) >= len(SNIPPETS[title]), title
    for block, name in zip(blocks, SNIPPETS[title]):
        snippet = block.split("```", 1)[0]
        body = source.split(f"    # snippet: {name}\n", 1)[1].split("    # end of snippet", 1)[0]
        code = "".join(
            line for line in snippet.splitlines(keepends=True) if not line.startswith("import ")
        ).lstrip("\n")
        assert code == textwrap.dedent(body), name


def test_docs_table_is_what_is_tested():
    """The table of docs/multihost.md lists each restore tested above, with 0 / 0 records
    lost / repeated, which those tests assert."""
    rows = set()
    for line in _section("Resuming on another host count").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        pair = re.fullmatch(r"(\d+) -> (\d+)", cells[0])
        if pair:
            assert len(cells) == 5 and cells[3] == "0 / 0", line
            saved, count = int(pair[1]), int(pair[2])
            for name in cells[2].replace("`", "").split(", "):
                rows.add((saved, count, name))
    assert rows == {(n, m, name) for (n, m), names in RESTORES.items() for name in names}
