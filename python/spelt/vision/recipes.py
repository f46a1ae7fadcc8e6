"""The usual ImageNet recipes as lists of spelt.vision transforms.

Each list goes straight into ``DataLoader(operations=[*recipe, Batch(n)])`` (Spelt's or, with
the same classes, Grain's), or step by step into ``ds.map(t)`` / ``ds.random_map(t)``. The
element is encoded image bytes, or a dict holding them under ``field``; the output is a
float32 ``(size, size, 3)`` HWC image normalised with torchvision's ImageNet mean and std.
"""

from __future__ import annotations

from spelt import transforms
from spelt.vision.crop import CenterCrop, RandomResizedCrop
from spelt.vision.decode import DecodeImage
from spelt.vision.flip import RandomHorizontalFlip
from spelt.vision.normalize import IMAGENET_MEAN, IMAGENET_STD, Normalize
from spelt.vision.resize import Resize


def eval_transforms(
    size: int = 224, resize: int = 256, *, field: str | None = None
) -> list[transforms.Map]:
    """Decode, resize the shorter side to ``resize``, centre-crop ``size`` x ``size``, normalise
    (torchvision's ImageNet evaluation transform)."""
    return [
        DecodeImage(field),
        Resize(resize, field=field),
        CenterCrop(size, field=field),
        Normalize(IMAGENET_MEAN, IMAGENET_STD, field=field),
    ]


def train_transforms(
    size: int = 224, *, field: str | None = None
) -> list[transforms.Map | transforms.RandomMap]:
    """Decode, RandomResizedCrop to ``size`` x ``size`` (scale 0.08-1, ratio 3/4-4/3), flip
    with p = 0.5, normalise (torchvision's ImageNet training transform); needs a seed."""
    return [
        DecodeImage(field),
        RandomResizedCrop(size, field=field),
        RandomHorizontalFlip(field=field),
        Normalize(IMAGENET_MEAN, IMAGENET_STD, field=field),
    ]
