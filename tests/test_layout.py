"""The layout of the Python face (issue 19): no import circle in python/spelt or bench/, the
bases import no operation, each transformation imports only the bases, and few protected
accesses across modules.

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

# Modules a transformation may import besides the bases: the engine, argument checks, the
# index plans, and leaf modules with no dataset in them.
_LEAVES = {
    "spelt._args",
    "spelt._callables",
    "spelt._core",
    "spelt._index_plan",
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


# A path in a doc or comment: one of the repository's top folders (or a folder of cpp/src, or
# spelt/ for the public headers), then path parts, ending in a file or folder name.
_PATH = re.compile(
    r"(?<![\w/.<-])((?:python/spelt|cpp/(?:src|include|python|tests|fuzz)|tests|bench|docs"
    r"|examples|spelt|core|io|ops|sampling|array_record|riegeli|tfrecord)/[\w./-]*[A-Za-z0-9])"
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
