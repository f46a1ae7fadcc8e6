"""Normalize: uint8 image to float32 or bfloat16, (x / 255 - mean) / std, HWC or CHW."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from spelt import transforms
from spelt.vision import _image

# torchvision's ImageNet statistics, in [0, 1] units.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

DTYPES = ("float32", "bfloat16")
LAYOUTS = ("HWC", "CHW")


def _numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype for ``name`` in DTYPES; bfloat16 is ml_dtypes' (ImportError if it is
    not installed)."""
    if name == "float32":
        return np.dtype(np.float32)
    try:
        import ml_dtypes
    except ImportError as e:
        raise ImportError(
            "Normalize(dtype='bfloat16') needs ml_dtypes: pip install ml_dtypes"
        ) from e
    return np.dtype(ml_dtypes.bfloat16)


@dataclasses.dataclass
class Normalize(transforms.Map):
    """Scales a uint8 image to [0, 1] and normalises each channel (a Grain ``Map``), as
    torchvision's ``ToTensor()`` followed by ``Normalize(mean, std)``.

    Args:
        mean: one float per channel, in [0, 1] units (IMAGENET_MEAN for torchvision's).
        std: one non-zero float per channel, in [0, 1] units (IMAGENET_STD).
        dtype: ``"float32"`` (default) or ``"bfloat16"`` (``ml_dtypes.bfloat16``, rounded to
            nearest even from the float32 result; ImportError at construction without ml_dtypes).
        layout: ``"HWC"`` (default, as JAX models take images) or ``"CHW"`` (as torchvision).
        field: None: the element is the image; a str: ``element[field]`` of a dict element.

    ``map`` takes a uint8 ``(H, W, C)`` array with C == len(mean) and returns a C-contiguous
    array of shape ``(H, W, C)`` or ``(C, H, W)``: ``(x.astype(float32) / 255 - mean) / std``,
    every step in float32 in torchvision's order. ValueError at construction for a bad dtype or
    layout, mean and std of different lengths or a zero std; ValueError if the image's
    channels differ from len(mean); TypeError for a non-uint8 image.
    """

    mean: Sequence[float]
    std: Sequence[float]
    dtype: str = "float32"
    layout: str = "HWC"
    field: str | None = None

    def __post_init__(self):
        self.mean = tuple(float(m) for m in self.mean)
        self.std = tuple(float(s) for s in self.std)
        if len(self.mean) != len(self.std) or not self.mean or 0.0 in self.std:
            raise ValueError("Normalize: mean and std need one value per channel, std non-zero")
        if self.dtype not in DTYPES:
            raise ValueError(f"Normalize: dtype must be one of {list(DTYPES)}, got {self.dtype!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(
                f"Normalize: layout must be one of {list(LAYOUTS)}, got {self.layout!r}"
            )
        _numpy_dtype(self.dtype)

    def map(self, element: Any) -> Any:
        return _image.apply_to_field(element, self.field, self._normalize)

    def _normalize(self, image: Any) -> np.ndarray:
        _image.check_image(image, "Normalize")
        if image.shape[2] != len(self.mean):
            raise ValueError(
                f"Normalize: image has {image.shape[2]} channels, mean and std {len(self.mean)}"
            )
        mean = np.asarray(self.mean, np.float32)
        std = np.asarray(self.std, np.float32)
        out = (image.astype(np.float32) / np.float32(255) - mean) / std
        if self.layout == "CHW":
            out = out.transpose(2, 0, 1)
        return np.ascontiguousarray(out.astype(_numpy_dtype(self.dtype), copy=False))
