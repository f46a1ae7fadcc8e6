"""The demo's data: scikit-learn's handwritten digits, stored as ArrayRecord shards.

This module is the one place that knows how the data is stored: ``prepare`` writes the
shards with Spelt's ArrayRecord writer, ``open_split`` returns an ``ArrayRecordDataSource``
over them (records are bytes, read in C++), and ``ParseDigit`` is the pipeline's first
operation, turning a record into ``{"image": uint8[8, 8], "label": int}``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import spelt as grain

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "build" / "demo" / "data"
TEST_FRACTION = 0.2
SPLIT_SEED = 0
NUM_SHARDS = {"train": 4, "test": 1}
# A record: the 64 pixels (uint8, row-major), then the label (one uint8).
RECORD_BYTES = 65


def encode(image: np.ndarray, label: int) -> bytes:
    return image.astype(np.uint8).tobytes() + bytes([int(label)])


def decode(record: bytes) -> dict[str, object]:
    """{"image": uint8[8, 8], "label": int} of one record. ValueError on a wrong size."""
    if len(record) != RECORD_BYTES:
        raise ValueError(f"a digits record has {RECORD_BYTES} bytes, got {len(record)}")
    return {"image": np.frombuffer(record, np.uint8, 64).reshape(8, 8), "label": record[64]}


class ParseDigit(grain.transforms.Map):
    """Decodes a stored record (bytes) into {"image": uint8[8, 8], "label": int}."""

    def map(self, record):
        return decode(record)


def shard_spec(split: str, directory: Path = DATA_DIR) -> str:
    """The sharded path spec of a split, e.g. ".../digits-train@4"."""
    return f"{directory / ('digits-' + split)}@{NUM_SHARDS[split]}"


def prepare(directory: Path = DATA_DIR) -> dict[str, int]:
    """Writes the 1,797 8x8 digits (pixels 0..16) as train and test ArrayRecord shards.

    The split is stratified by label, with a fixed seed; records are split into contiguous
    shards. Returns the number of records per split.
    """
    digits = load_digits()
    train_images, test_images, train_labels, test_labels = train_test_split(
        digits.images,
        digits.target,
        test_size=TEST_FRACTION,
        random_state=SPLIT_SEED,
        stratify=digits.target,
    )
    directory.mkdir(parents=True, exist_ok=True)
    for split, images, labels in (
        ("train", train_images, train_labels),
        ("test", test_images, test_labels),
    ):
        shards = NUM_SHARDS[split]
        for shard in range(shards):
            start, end = grain.sharding.even_split(
                len(labels), grain.sharding.ShardOptions(shard, shards)
            )
            path = directory / f"digits-{split}-{shard:05d}-of-{shards:05d}"
            with grain.experimental.ArrayRecordWriter(path, "group_size:1,zstd:3") as writer:
                for i in range(start, end):
                    writer.write(encode(images[i], labels[i]))
    return {"train": len(train_labels), "test": len(test_labels)}


def open_split(split: str, directory: Path = DATA_DIR) -> grain.sources.ArrayRecordDataSource:
    """The data source over a split ("train" or "test") written by ``prepare``."""
    return grain.sources.ArrayRecordDataSource(shard_spec(split, directory))
