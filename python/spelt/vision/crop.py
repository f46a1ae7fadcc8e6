"""CenterCrop, and RandomResizedCrop with torchvision's parameter sampling."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from spelt import _core
from spelt import transforms
from spelt.vision import _image, resize

ATTEMPTS = 10


def _check_range(name: str, pair: Any) -> tuple[float, float]:
    """``(lo, hi)`` as floats; ValueError unless 0 < lo <= hi."""
    lo, hi = (float(v) for v in pair)
    if not 0 < lo <= hi:
        raise ValueError(f"RandomResizedCrop: {name} must be (min, max) with 0 < min <= max")
    return lo, hi


def random_resized_crop_params(
    height: int, width: int, scale: Any, ratio: Any, rng: np.random.Generator
) -> tuple[int, int, int, int]:
    """Samples a crop ``(top, left, h, w)`` of an image of ``height`` x ``width`` pixels the way
    torchvision's ``RandomResizedCrop.get_params`` does, drawing from the numpy Generator ``rng``.

    Up to 10 attempts, each drawing in this order: ``s = rng.uniform(*scale)`` and
    ``r = exp(rng.uniform(log ratio[0], log ratio[1]))``, then ``w = round(sqrt(s * area * r))``,
    ``h = round(sqrt(s * area / r))`` (Python's round, half to even). The first attempt with
    ``0 < w <= width`` and ``0 < h <= height`` draws ``top = rng.integers(0, height - h + 1)`` and
    ``left = rng.integers(0, width - w + 1)`` and returns. If none fits (20 draws), the fallback
    is the largest centred crop whose aspect ratio is clamped to ``ratio``: ``h = round(width /
    ratio[0])`` where the image is narrower than ``ratio[0]``, ``w = round(height * ratio[1])``
    where it is wider than ``ratio[1]``, else the whole image; ``top = (height - h) // 2``, ``left
    = (width - w) // 2``. Unlike torchvision, the fallback's sides are at least 1 (torchvision
    gives an empty crop for a 1-pixel side with extreme ratios).

    Returns ints with ``0 <= top``, ``top + h <= height``, ``0 <= left``, ``left + w <= width``,
    ``h, w >= 1``. ValueError if ``height`` or ``width`` < 1 or ``scale`` / ``ratio`` are not
    ``(min, max)`` with ``0 < min <= max``.
    """
    if height < 1 or width < 1:
        raise ValueError(f"random_resized_crop_params: image of {height}x{width} pixels")
    scale = _check_range("scale", scale)
    ratio = _check_range("ratio", ratio)
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(ATTEMPTS):
        target_area = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(log_ratio[0], log_ratio[1]))
        w = round(math.sqrt(target_area * aspect))
        h = round(math.sqrt(target_area / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(rng.integers(0, height - h + 1))
            left = int(rng.integers(0, width - w + 1))
            return top, left, h, w
    h, w = height, width
    if width / height < ratio[0]:
        h = max(1, round(width / ratio[0]))
    elif width / height > ratio[1]:
        w = max(1, round(height * ratio[1]))
    return (height - h) // 2, (width - w) // 2, h, w


@dataclasses.dataclass
class RandomResizedCrop(transforms.RandomMap):
    """Crops a random area and aspect ratio, then resizes it (a Grain ``RandomMap``), as
    torchvision's ``RandomResizedCrop`` on a PIL image.

    Args:
        size: int n (output n x n) or ``(height, width)``.
        scale: ``(min, max)`` fraction of the image's area to crop, default (0.08, 1.0).
        ratio: ``(min, max)`` aspect ratio (width / height) of the crop, sampled log-uniformly,
            default (3/4, 4/3).
        interpolation: ``"bilinear"`` (default; Pillow's antialiased bilinear) or ``"nearest"``.
        field: None: the element is the image; a str: ``element[field]`` of a dict element.

    ``random_map(element, rng)`` takes a uint8 ``(H, W, C)`` array (C in 1, 3, 4) and the
    per-element Generator the pipeline passes, samples ``(top, left, h, w)`` with
    :func:`random_resized_crop_params`, and returns the uint8 ``(height, width, C)`` array of
    Pillow's resize of ``image[top:top + h, left:left + w]`` (crop first, then resize, as
    torchvision's ``resized_crop``). At construction: TypeError for a size that is not an int or
    a pair of ints, ValueError for a non-positive size, a bad scale, ratio or interpolation.
    TypeError / ValueError for an image of another dtype / shape.
    """

    size: Any
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0)
    interpolation: str = "bilinear"
    field: str | None = None

    def __post_init__(self):
        self.size = _image.size_pair(self.size, "RandomResizedCrop")
        self.scale = _check_range("scale", self.scale)
        self.ratio = _check_range("ratio", self.ratio)
        resize.check_interpolation(self.interpolation, "RandomResizedCrop")

    def random_map(self, element: Any, rng: np.random.Generator) -> Any:
        return _image.apply_to_field(element, self.field, lambda image: self._crop(image, rng))

    def _crop(self, image: Any, rng: np.random.Generator) -> np.ndarray:
        height, width = _image.check_image(image, "RandomResizedCrop").shape[:2]
        top, left, h, w = random_resized_crop_params(height, width, self.scale, self.ratio, rng)
        crop = image[top : top + h, left : left + w]
        return resize.resize_image(crop, *self.size, self.interpolation)

    fuses_decode = True  # a DecodeImage just before it decodes only the crop (native path)

    def _spelt_image_op(self) -> Any:
        """The native op (spelt/image_ops.h; fused with a JPEG decode just before it where the
        resampling is bilinear); None for a subclass. Its reference only raises the input
        errors."""
        if type(self) is not RandomResizedCrop:
            return None
        return _core.image_op(
            "RandomResizedCrop",
            self.field,
            height=self.size[0],
            width=self.size[1],
            scale=self.scale,
            ratio=self.ratio,
            nearest=self.interpolation == "nearest",
            reference=functools.partial(self._crop, rng=None),
            resize=resize.bilinear,
        )


@dataclasses.dataclass
class CenterCrop(transforms.Map):
    """Crops the centre of an image (a Grain ``Map``), as torchvision's ``CenterCrop``.

    Args:
        size: int n (n x n) or ``(height, width)``.
        field: None: the element is the image; a str: ``element[field]`` of a dict element.

    ``map`` takes a uint8 ``(H, W, C)`` array and returns a new uint8 ``(height, width, C)``
    array. An image smaller than ``size`` on a side is first padded with zeros on that side
    (``(size - H) // 2`` before, the rest after), then the crop starts at
    ``round((H - height) / 2)``, ``round((W - width) / 2)`` (Python's round, half to
    even), torchvision's rule. TypeError / ValueError at construction for a size that is not
    an int or pair of ints / not positive; TypeError / ValueError for an image of another
    dtype / shape.
    """

    size: Any
    field: str | None = None

    def __post_init__(self):
        self.size = _image.size_pair(self.size, "CenterCrop")

    def map(self, element: Any) -> Any:
        return _image.apply_to_field(element, self.field, self._crop)

    def _crop(self, image: Any) -> np.ndarray:
        _image.check_image(image, "CenterCrop")
        height, width = self.size
        pad_h, pad_w = max(0, height - image.shape[0]), max(0, width - image.shape[1])
        if pad_h or pad_w:
            pads = ((pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0))
            image = np.pad(image, pads)
        top = round((image.shape[0] - height) / 2)
        left = round((image.shape[1] - width) / 2)
        return image[top : top + height, left : left + width].copy()

    def _spelt_image_op(self) -> Any:
        """The native op (spelt/image_ops.h); None for a subclass."""
        if type(self) is not CenterCrop:
            return None
        height, width = self.size
        return _core.image_op(
            "CenterCrop", self.field, height=height, width=width, reference=self._crop
        )
