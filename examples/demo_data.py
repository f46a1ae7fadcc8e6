"""The demo's data: scikit-learn's handwritten digits, stored on disk and read back by Spelt.

This module is the one place that knows how the data is stored: ``prepare`` writes it and
``open_split`` returns a data source over it. Today the storage is one .npy file per split
and field; switching to another format (e.g. ArrayRecord shards) changes only this file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "build" / "demo" / "data"
TEST_FRACTION = 0.2
SPLIT_SEED = 0


def prepare(directory: Path = DATA_DIR) -> dict[str, int]:
  """Writes the 1,797 8x8 digits (pixels 0..16, uint8) as a train and a test split.

  The split is stratified by label, with a fixed seed. Returns the number of records per split.
  """
  digits = load_digits()
  images = digits.images.astype(np.uint8)
  labels = digits.target.astype(np.int64)
  train_images, test_images, train_labels, test_labels = train_test_split(
      images, labels, test_size=TEST_FRACTION, random_state=SPLIT_SEED, stratify=labels
  )
  directory.mkdir(parents=True, exist_ok=True)
  for split, split_images, split_labels in (
      ("train", train_images, train_labels), ("test", test_images, test_labels)
  ):
    np.save(directory / f"{split}_images.npy", split_images)
    np.save(directory / f"{split}_labels.npy", split_labels)
  return {"train": len(train_labels), "test": len(test_labels)}


class DigitsSource:
  """Random access to one stored split: record i is {"image": uint8[8, 8], "label": int}.

  Its repr is stable (the DataLoader stores it in checkpoints to detect a changed source).
  """

  def __init__(self, directory: Path, split: str):
    self._directory = directory
    self._split = split
    self._images = np.load(directory / f"{split}_images.npy", mmap_mode="r")
    self._labels = np.load(directory / f"{split}_labels.npy", mmap_mode="r")

  def __len__(self) -> int:
    return len(self._labels)

  def __getitem__(self, key: int) -> dict[str, object]:
    return {"image": np.array(self._images[key]), "label": int(self._labels[key])}

  def __repr__(self) -> str:
    return (
        f"DigitsSource(directory='{self._directory}', split='{self._split}',"
        f" num_records={len(self)})"
    )


def open_split(split: str, directory: Path = DATA_DIR) -> DigitsSource:
  """The data source over a split ("train" or "test") written by ``prepare``."""
  return DigitsSource(directory, split)
