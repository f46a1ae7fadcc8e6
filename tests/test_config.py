"""``spelt.config``: Grain 0.2.18's flags (names, defaults), ``update``/``get_or_default``."""

import subprocess
import sys

import pytest

import spelt


def _grain_flags():
    """Grain's flags and defaults, read from its absl definitions (grain/_src/core/config.py)."""
    from absl import flags  # pylint: disable=import-outside-toplevel
    from grain._src.core import config as grain_config  # pylint: disable=import-outside-toplevel

    return {
        f.name.removeprefix("grain_"): flags.FLAGS[f.name].default
        for f in grain_config._GRAIN_FLAGS  # pylint: disable=protected-access
    }


def test_same_flags_and_defaults_as_grain():
    grain_flags = _grain_flags()
    assert len(grain_flags) == 12
    for name, default in grain_flags.items():
        assert spelt.config.get_or_default(name) == default, name
        assert getattr(spelt.config, name) == default, name
    with pytest.raises(ValueError, match="Unrecognized config option: py_no_such_flag"):
        spelt.config.get_or_default("py_no_such_flag")


def test_update_takes_effect_in_a_plain_script():
    code = (
        "import spelt as grain\n"
        "grain.config.update('py_debug_mode', True)\n"
        "grain.config.update('py_dataset_visualization_output_dir', '/tmp/vis')\n"
        "grain.config.update('py_traceback_filtering', 'off')\n"
        "grain.config.update('tf_lookup_batch_size', 7)\n"
        "c = grain.config\n"
        "print(c.py_debug_mode, c.get_or_default('py_dataset_visualization_output_dir'),"
        " c.py_traceback_filtering, c.tf_lookup_batch_size)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "/tmp/vis", "off", "7"]


@pytest.mark.parametrize(
    "name,value",
    [
        ("py_debug_mode", 1),
        ("tf_lookup_batch_size", True),
        ("tf_lookup_batch_size", 2.5),
        ("py_dataset_visualization_output_dir", 3),
        ("py_traceback_filtering", "sometimes"),
        ("remote_max_in_flight", 0),
        ("remote_max_in_flight", 8.0),
        ("remote_retry_seconds", -1),
        ("remote_read_ahead_mib", -1),
    ],
)
def test_update_rejects_wrong_types(name, value):
    before = spelt.config.get_or_default(name)
    with pytest.raises(ValueError, match=name):
        spelt.config.update(name, value)
    assert spelt.config.get_or_default(name) == before


def test_spelt_flags_for_remote_reads():
    assert spelt.config.remote_max_in_flight == 256
    assert spelt.config.remote_retry_seconds == 60
    assert spelt.config.remote_read_ahead_mib == 32
    spelt.config.update("remote_max_in_flight", 1)
    try:
        assert spelt.config.get_or_default("remote_max_in_flight") == 1
    finally:
        spelt.config.update("remote_max_in_flight", 256)


def test_unknown_names_and_assignment_raise():
    with pytest.raises(ValueError, match="Unrecognized config option: debug_mode"):
        spelt.config.update("debug_mode", True)
    with pytest.raises(ValueError, match="Unrecognized config option: grain_py_debug_mode"):
        spelt.config.grain_py_debug_mode  # noqa: B018  pylint: disable=pointless-statement
    with pytest.raises(ValueError, match="update"):
        spelt.config.py_debug_mode = True


def test_update_then_reset():
    spelt.config.update("py_dataset_visualization_output_dir", "/tmp/x")
    try:
        assert spelt.config.py_dataset_visualization_output_dir == "/tmp/x"
    finally:
        spelt.config.update("py_dataset_visualization_output_dir", None)
    assert spelt.config.py_dataset_visualization_output_dir is None
