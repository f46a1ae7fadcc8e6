"""Test-session setup shared by all test modules.

jax is installed in the test environment only because orbax-checkpoint needs it
(tests/test_orbax.py runs Orbax in subprocesses). The test process hides it, so that the
comparisons with Grain run Grain as it runs without jax: with jax importable, Grain's tree
utilities (grain/_src/core/tree_lib.py) switch to jax.tree_util, which orders dict keys
(packing outputs), and its profiler reads absl flags in mp_prefetch. Spelt decides as Grain
does (spelt/_tree.py), so both run without jax here; their behaviour with jax present is
compared in the subprocesses of tests/test_jax_trees.py and tests/test_orbax.py.
"""

import sys

sys.modules.setdefault("jax", None)  # `import jax` raises ImportError in this process
