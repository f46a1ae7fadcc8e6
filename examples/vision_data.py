"""The vision demo's data and pipelines: JPEGs cut from scikit-learn's sample photographs,
stored as ArrayRecord, read with the native train recipe or with the same steps in Pillow.

``prepare`` writes DATA_DIR/images.array_record (one JPEG per record) and DATA_DIR/labels.npy.
Each image is a piece of one of the two photographs (china.jpg, flower.jpg), from its left or
right half, with its own size, brightness and JPEG quality; its label (0-3) says which photo and
which half. ``make_dataset`` zips the decoded, augmented images with their labels, shuffles and
batches them, on Spelt or on Grain (``g`` is the module), the images either through
``spelt.vision.train_transforms`` (native under Spelt) or through PIL_TRAIN (Python).
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance

from spelt import vision

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "build" / "demo_vision" / "data"
NUM_CLASSES = 4  # (photo, half): china left, china right, flower left, flower right
SIZE = 64  # output images are SIZE x SIZE x 3
SEED = 0


def prepare(count: int, data_dir: Path) -> dict[str, float]:
    """Writes ``count`` JPEGs (about 300-420 x 220-320 pixels) and their labels; returns
    {"images", "bytes"}."""
    import spelt  # pylint: disable=import-outside-toplevel
    from sklearn.datasets import load_sample_images  # pylint: disable=import-outside-toplevel

    photos = [Image.fromarray(p) for p in load_sample_images().images]
    rng = np.random.default_rng(SEED)
    data_dir.mkdir(parents=True, exist_ok=True)
    labels, total = [], 0
    with spelt.experimental.ArrayRecordWriter(
        str(data_dir / "images.array_record"), "group_size:1"
    ) as writer:
        for i in range(count):
            label = int(rng.integers(NUM_CLASSES))
            photo = photos[label // 2]
            half_w, h = photo.width // 2, photo.height
            cw, ch = int(rng.integers(half_w // 2, half_w)), int(rng.integers(h // 2, h))
            x = int(rng.integers(0, half_w - cw + 1)) + (label % 2) * half_w
            y = int(rng.integers(0, h - ch + 1))
            size = (int(rng.integers(300, 421)), int(rng.integers(220, 321)))
            piece = photo.crop((x, y, x + cw, y + ch)).resize(size, Image.BILINEAR)
            piece = ImageEnhance.Brightness(piece).enhance(float(rng.uniform(0.7, 1.3)))
            buf = io.BytesIO()
            piece.save(buf, "JPEG", quality=int(rng.integers(80, 96)))
            writer.write(buf.getvalue())
            labels.append(label)
            total += buf.tell()
    np.save(data_dir / "labels.npy", np.array(labels, np.int64))
    return {"images": count, "bytes": total}


# The train recipe written with Pillow and numpy, as a user would, step by step as
# spelt.vision.train_transforms: (is it random, function). The crop's parameters are
# torchvision's, drawn as spelt.vision draws them, so the steps draw what the native ops draw.
def pil_decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def pil_random_resized_crop(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    top, left, h, w = vision.random_resized_crop_params(
        image.shape[0], image.shape[1], (0.08, 1.0), (3 / 4, 4 / 3), rng
    )
    crop = Image.fromarray(image[top : top + h, left : left + w])
    return np.asarray(crop.resize((SIZE, SIZE), Image.BILINEAR))


def pil_flip(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return image[:, ::-1] if rng.random() < 0.5 else image


def pil_normalize(image: np.ndarray) -> np.ndarray:
    mean = np.asarray(vision.IMAGENET_MEAN, np.float32)
    std = np.asarray(vision.IMAGENET_STD, np.float32)
    return (image.astype(np.float32) / np.float32(255) - mean) / std


PIL_TRAIN = [
    (False, pil_decode),
    (True, pil_random_resized_crop),
    (True, pil_flip),
    (False, pil_normalize),
]


def make_dataset(g, data_dir: Path, *, native: bool, epochs: int, batch_size: int, workers=0):
    """Batches of (images float32[B, SIZE, SIZE, 3], labels int64[B]) over ``epochs`` shuffled
    epochs, on the library ``g`` (spelt or grain). ``native``: the images go through
    spelt.vision.train_transforms (Spelt runs them in C++ on 2 read threads; Grain runs their
    Python reference); else through PIL_TRAIN. Each step's seed is SEED plus its position. ``workers`` > 0 adds ``mp_prefetch`` with that
    many worker processes."""
    import spelt  # pylint: disable=import-outside-toplevel

    path = str(data_dir / "images.array_record")
    images = g.MapDataset.source(g.sources.ArrayRecordDataSource(path))
    if native:
        steps = [
            (isinstance(t, spelt.transforms.RandomMap), t) for t in vision.train_transforms(SIZE)
        ]
        if g is not spelt:  # Grain takes the transforms' methods (docs/vision.md)
            steps = [(r, t.random_map if r else t.map) for r, t in steps]
    else:
        steps = PIL_TRAIN
    for seed, (random, step) in enumerate(steps, start=SEED):
        images = images.random_map(step, seed=seed) if random else images.map(step)
    labels = g.MapDataset.source(np.load(data_dir / "labels.npy"))
    ds = g.experimental.ZipMapDataset([images, labels]).shuffle(seed=SEED).repeat(epochs)
    ds = ds.to_iter_dataset(g.ReadOptions(num_threads=2)).batch(batch_size, drop_remainder=True)
    if workers:
        ds = ds.mp_prefetch(g.MultiprocessingOptions(num_workers=workers))
    return ds


def batch_digest(batch) -> str:
    """sha256 of a batch's image bytes and labels."""
    images, labels = batch
    return hashlib.sha256(np.ascontiguousarray(images).tobytes() + labels.tobytes()).hexdigest()
