"""The vision demo (examples/vision_demo.py, ``make demo-vision``) on a few images: the native
images match the Pillow pipeline's, the job is killed with SIGKILL and resumes with identical
batches and bit-identical weights."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

EXAMPLES_DIR = os.path.join(os.path.dirname(__file__), os.pardir, "examples")

pytest.importorskip("sklearn")
sys.path.insert(0, EXAMPLES_DIR)
import vision_data  # noqa: E402  pylint: disable=wrong-import-position

import spelt  # noqa: E402  pylint: disable=wrong-import-position


def test_stored_images_and_labels_read_back(tmp_path):
    made = vision_data.prepare(12, tmp_path)
    assert made["images"] == 12
    labels = np.load(tmp_path / "labels.npy")
    assert labels.shape == (12,) and set(labels) <= set(range(vision_data.NUM_CLASSES))
    batches = list(vision_data.make_dataset(spelt, tmp_path, native=True, epochs=2, batch_size=4))
    assert len(batches) == 6
    images, batch_labels = batches[0]
    assert images.shape == (4, vision_data.SIZE, vision_data.SIZE, 3)
    assert images.dtype == np.float32 and batch_labels.dtype == np.int64
    assert sorted(np.concatenate([b[1] for b in batches[:3]])) == sorted(labels)


def test_demo_killed_and_resumed_gives_identical_batches(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(EXAMPLES_DIR, "vision_demo.py"),
            f"--data-dir={tmp_path / 'data'}",
            "--images=64",
            "--batch-size=16",
            "--steps=7",
            "--kill-at=3",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "killed with SIGKILL" in result.stdout
    assert "resume check:          PASSED" in result.stdout
    assert "labels identical" in result.stdout
