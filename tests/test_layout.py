"""The layout (issue 19): no import circle in python/spelt or bench/, the bases import no
operation, each transformation imports only the bases, few protected accesses across modules,
libspelt's folders include only the layers below them, and docs and comments name paths that
exist.

The import graph is read from the source (every ``import`` statement, also those inside
functions), so a circle that only shows at run time is found too; graphlib's topological
sort reports the first circle it meets.
"""

from __future__ import annotations

import ast
import graphlib
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "spelt"
BENCH = ROOT / "bench"

# Modules a transformation may import besides the bases: the engine, argument checks, and
# leaf modules with no dataset in them.
_LEAVES = {
    "spelt._args",
    "spelt._callables",
    "spelt._core",
    "spelt._tree",
    "spelt.element_spec",
    "spelt.options",
    "spelt.record",
    "spelt.transforms",
    "spelt.dataset_options",
}
# Transformations that compose others, and say so at their top.
_COMPOSITES = {"spelt.transformations.multithread_prefetch"}


def _module_name(path: pathlib.Path, root: pathlib.Path, prefix: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([prefix, *parts] if prefix else parts)


def _imports(path: pathlib.Path, modules: set[str], own: str) -> set[str]:
    """The modules of ``modules`` that the file imports: ``import a.b``, ``from a import b``
    (module ``a.b`` if it is one, else a name of module ``a``), anywhere in the file. Names of
    extension modules (``spelt._core``) are not in ``modules`` and have no edge."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [n if n in modules else node.module for n in names if not _extension(n)]
        else:
            continue
        found.update(n for n in names if n in modules and n != own)
    return found


def _extension(name: str) -> bool:
    """A compiled module of the package (built by CMake, not a file under python/)."""
    return name in ("spelt._core", "spelt._parquet_native")


def _graph(root: pathlib.Path, prefix: str) -> dict[str, set[str]]:
    files = {_module_name(p, root, prefix): p for p in root.rglob("*.py")}
    modules = set(files)
    return {name: _imports(path, modules, name) for name, path in files.items()}


@pytest.mark.parametrize(
    "root,prefix", [(PACKAGE, "spelt"), (BENCH, "")], ids=["python/spelt", "bench"]
)
def test_no_import_circle(root, prefix):
    graph = _graph(root, prefix)
    assert len(graph) > 10  # the walk found the modules
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        # graphlib lists each module before one that imports it
        pytest.fail(f"import circle: {' imports '.join(reversed(e.args[1]))}")


def test_a_circle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(graph).prepare()


def test_the_bases_import_no_operation_and_operations_only_the_bases():
    graph = _graph(PACKAGE, "spelt")
    assert not {m for m in graph["spelt._base"] if m.startswith("spelt.transformations")}
    allowed = _LEAVES | {"spelt._base"}
    for name, imported in graph.items():
        if name.startswith("spelt.transformations.") and name not in _COMPOSITES:
            assert imported <= allowed | {m for m in imported if m.startswith("spelt._workers")}, (
                name,
                imported - allowed,
            )


def test_few_protected_access_suppressions():
    count = sum(
        len(re.findall(r"disable=protected-access", p.read_text())) for p in PACKAGE.rglob("*.py")
    )
    assert count <= 10, f"{count} protected-access suppressions in python/spelt"


def test_only_the_tree_helper_gives_datasets_new_parents():
    assigners = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in PACKAGE.rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\b(?!self\b)\w+\._parents\s*=", line)
    ]
    assert assigners == ["python/spelt/_base.py:" + assigners[0].split(":")[1]], assigners


# The layers of libspelt (docs/architecture.md draws them): each layer's folders under cpp/src,
# its public headers (cpp/include/spelt/), and the layers it may include besides itself.
_CPP_LAYERS = {
    "base": (
        {"base"},
        {"blocking_wait.h", "errors.h", "parallel_work.h", "read_threads.h"},
        set(),
    ),
    "io": (
        {"io"},
        {
            "file_system.h",
            "range_reads.h",
            "remote_file.h",
            "native_files_abi.h",
            "native_file_system.h",
            "arrow_file_system.h",
        },
        {"base"},
    ),
    "riegeli": ({"riegeli"}, set(), {"base", "io"}),
    "array_record": ({"array_record"}, {"array_record.h"}, {"base", "io", "riegeli"}),
    "tfrecord": ({"tfrecord"}, {"tfrecord.h"}, {"base", "io"}),
    "core": (
        {"core"},
        {
            "value.h",
            "random.h",
            "stack.h",
            "source.h",
            "node.h",
            "seeds.h",
            "read_options.h",
            "shard_options.h",
        },
        {"base"},
    ),
    "vision": ({"vision"}, {"vision.h", "image_ops.h", "bfloat16_array.h"}, {"base", "core"}),
    "sources": (
        {"sources"},
        {"array_record_source.h", "tfrecord_source.h", "multi_file_index.h"},
        {"base", "io", "riegeli", "array_record", "tfrecord", "core"},
    ),
    "exec": ({"exec"}, {"executor.h", "stage_stats.h", "dataset_options.h"}, {"base", "core"}),
    "ops": (
        {"ops"},
        {"packing_options.h", "thread_prefetch.h", "interleave.h", "batched_read_ahead.h"},
        {"base", "core", "exec"},
    ),
    # The handles users build pipelines with, at the top: no node uses them.
    "api": (
        {"api"},
        {"dataset.h", "packing.h", "tfrecord_dataset.h", "virtual_shards.h"},
        {"base", "io", "riegeli", "array_record", "tfrecord", "core", "vision", "sources", "exec"}
        | {"ops"},
    ),
    # Samplers build their key pipelines with the handles.
    "sampling": ({"sampling"}, {"sampler.h"}, {"base", "core", "exec", "ops", "api"}),
}
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def _cpp_layer(path: str) -> str | None:
    """The layer of a file named as an include names it ("ops/map.h", "spelt/value.h")."""
    folder, _, name = path.partition("/")
    for layer, (folders, headers, _) in _CPP_LAYERS.items():
        if folder in folders or (folder == "spelt" and name in headers):
            return layer
    return None


def _layer_violations(files: dict[str, str]) -> list[str]:
    """Includes that break _CPP_LAYERS in ``files`` (path as an include names it -> text), and
    files or included headers that no layer holds."""
    problems = []
    for path, text in sorted(files.items()):
        layer = _cpp_layer(path)
        if layer is None:
            problems.append(f"{path}: in no layer of _CPP_LAYERS")
            continue
        allowed = _CPP_LAYERS[layer][2] | {layer}
        for included in _INCLUDE.findall(text):
            to = _cpp_layer(included)
            if to is None:
                problems.append(f"{path} includes {included}, in no layer of _CPP_LAYERS")
            elif to not in allowed:
                problems.append(f"{path} ({layer}) includes {included} ({to})")
    return problems


def _libspelt_files() -> dict[str, str]:
    src, include = ROOT / "cpp" / "src", ROOT / "cpp" / "include"
    files = {}
    for root in (src, include):
        for p in root.rglob("*"):
            if p.suffix in (".h", ".cc"):
                files[str(p.relative_to(root))] = p.read_text()
    return files


def test_libspelt_includes_only_lower_layers():
    files = _libspelt_files()
    assert len(files) > 100  # the walk found the sources
    assert _layer_violations(files) == []


def test_a_layer_violation_is_found():
    files = {
        "base/thread_pool.h": '#include "spelt/errors.h"\n',
        "io/file_system.cc": '#include "base/thread_pool.h"\n#include "core/nodes.h"\n',
        "tfrecord/reader.cc": '#include "array_record/layout.h"\n',
        "ops/shard.cc": '  #include "spelt/sampler.h"\n',
        "ops/cache.cc": '#include "spelt/dataset.h"\n#include "spelt/interleave.h"\n',
        "sources/tfrecord_dataset.cc": '#include "spelt/tfrecord_dataset.h"\n',
        "ops/map.cc": '#include "newfolder/x.h"\n',
        "newfolder/y.cc": "",
    }
    assert _layer_violations(files) == [
        "io/file_system.cc (io) includes core/nodes.h (core)",
        "newfolder/y.cc: in no layer of _CPP_LAYERS",
        "ops/cache.cc (ops) includes spelt/dataset.h (api)",
        "ops/map.cc includes newfolder/x.h, in no layer of _CPP_LAYERS",
        "ops/shard.cc (ops) includes spelt/sampler.h (sampling)",
        "sources/tfrecord_dataset.cc (sources) includes spelt/tfrecord_dataset.h (api)",
        "tfrecord/reader.cc (tfrecord) includes array_record/layout.h (array_record)",
    ]


_GRAIN_NAME = re.compile(r'"(\w+?)(Map|Iter)Dataset"')


def _variant_misnamed(files: dict[str, str]) -> list[str]:
    """The rule naming an op's variants, over ``files`` (ops/ file name -> text): where an op's
    MapDataset and IterDataset nodes (Grain's names, e.g. "FlatMapMapDataset") are in
    different files, the Iter one is iter_<the Map one's file>."""
    where: dict[tuple[str, str], set[str]] = {}
    for name, text in files.items():
        for op, kind in _GRAIN_NAME.findall(text):
            where.setdefault((op, kind), set()).add(name)
    problems = []
    for (op, kind), map_files in sorted(where.items()):
        if kind != "Map":
            continue
        for iter_file in sorted(where.get((op, "Iter"), set()) - map_files):
            for map_file in sorted(map_files):
                if iter_file != "iter_" + map_file:
                    problems.append(f"{op}: Map variant in {map_file}, Iter variant in {iter_file}")
    return problems


def test_the_iter_variant_of_an_op_is_iter_op():
    ops = ROOT / "cpp" / "src" / "ops"
    files = {p.name: p.read_text() for p in ops.glob("*.cc")}
    assert len(files) > 20
    assert _variant_misnamed(files) == []
    # The layout before this rule: flat_map.cc held the Iter variant, flat_map_map.cc the Map one.
    old = {
        "flat_map.cc": 'return "FlatMapIterDataset";',
        "flat_map_map.cc": 'return "FlatMapMapDataset";',
        "batch.cc": '"BatchMapDataset" "BatchIterDataset"',
    }
    assert _variant_misnamed(old) == [
        "FlatMap: Map variant in flat_map_map.cc, Iter variant in flat_map.cc"
    ]


# A path in a doc or comment: one of the repository's top folders (or a folder of cpp/src, or
# spelt/ for the public headers), then path parts, ending in a file or folder name.
_PATH = re.compile(
    r"(?<![\w/.<-])((?:python/spelt|cpp/(?:src|include|python|tests|fuzz)|tests|bench|docs"
    r"|examples|spelt|base|io|core|exec|ops|sampling|api|sources|vision|array_record|riegeli"
    r"|tfrecord)/[\w./-]*[A-Za-z0-9])"
)
_TEXT_FILES = (".md", ".py", ".cc", ".h", ".txt", ".toml", ".cmake")


def _named_paths_missing() -> list[str]:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    missing = []
    for name in tracked:
        if not name.endswith(_TEXT_FILES):
            continue
        for m in _PATH.finditer((ROOT / name).read_text(errors="replace")):
            path = m.group(1)
            if path.endswith("_test.py"):  # Grain's own test files, by their path in Grain
                continue
            roots = ("", "cpp/src/", "cpp/include/", "python/")
            if not any((ROOT / (r + path)).exists() for r in roots):
                missing.append(f"{name}: {path}")
    return missing


def test_docs_and_comments_name_paths_that_exist():
    assert _named_paths_missing() == []
