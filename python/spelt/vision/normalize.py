"""Normalize: uint8 image to float32 or bfloat16, (x / 255 - mean) / std, HWC or CHW."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from spelt import _args
from spelt import _core
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


def _channel_values(values: Any, name: str) -> float | tuple[float, ...]:
    """``values`` as a float (one number: the same for every channel) or a non-empty tuple of
    floats; TypeError naming ``name`` otherwise."""
    if isinstance(values, numbers.Real) and not isinstance(values, (bool, np.bool_)):
        return float(values)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(
            f"Normalize: {name} must be a number or a sequence of numbers (one per channel),"
            f" got {type(values).__name__}"
        )
    values = tuple(_args.number_arg(v, f"Normalize: {name}[{i}]") for i, v in enumerate(values))
    if not values:
        raise ValueError(f"Normalize: {name} needs at least one value")
    return values


@dataclasses.dataclass
class Normalize(transforms.Map):
    """Scales a uint8 image to [0, 1] and normalises each channel (a Grain ``Map``), as
    torchvision's ``ToTensor()`` followed by ``Normalize(mean, std)``.

    Args:
        mean: one float per channel, in [0, 1] units (IMAGENET_MEAN for torchvision's), or
            one float for every channel.
        std: one float in (0, 1] per channel (IMAGENET_STD), or one for every channel.
        dtype: ``"float32"`` (default) or ``"bfloat16"`` (``ml_dtypes.bfloat16``, rounded to
            nearest even from the float32 result; ImportError at construction without ml_dtypes).
        layout: ``"HWC"`` (default, as JAX models take images) or ``"CHW"`` (as torchvision).
        field: None: the element is the image; a str: ``element[field]`` of a dict element.

    ``map`` takes a uint8 ``(H, W, C)`` array with C == len(mean) and returns a C-contiguous
    array of shape ``(H, W, C)`` or ``(C, H, W)``: ``(x.astype(float32) / 255 - mean) / std``,
    every step in float32 in torchvision's order. ValueError at construction for a bad dtype or
    layout, mean and std of different lengths, a mean outside [0, 1] or a std outside (0, 1]
    (statistics in 0-255 units, e.g. 123.675: divide them by 255); TypeError for a mean or std
    that is not numbers; ValueError if the image's
    channels differ from len(mean); TypeError for a non-uint8 image.
    """

    mean: Sequence[float]
    std: Sequence[float]
    dtype: str = "float32"
    layout: str = "HWC"
    field: str | None = None

    def __post_init__(self):
        self.mean = _channel_values(self.mean, "mean")
        self.std = _channel_values(self.std, "std")
        if (
            isinstance(self.mean, tuple)
            and isinstance(self.std, tuple)
            and len(self.mean) != len(self.std)
        ):
            raise ValueError(
                f"Normalize: mean and std need one value per channel, got {len(self.mean)}"
                f" and {len(self.std)} values"
            )
        means = self.mean if isinstance(self.mean, tuple) else (self.mean,)
        stds = self.std if isinstance(self.std, tuple) else (self.std,)
        if any(not 0.0 <= m <= 1.0 for m in means) or any(not 0.0 < s <= 1.0 for s in stds):
            raise ValueError(
                f"Normalize: mean must be in [0, 1] and std in (0, 1] (the image is divided by"
                f" 255 first, as torchvision's ToTensor), got mean={self.mean!r},"
                f" std={self.std!r}; for statistics in 0-255 units divide them by 255"
            )
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
        if isinstance(self.mean, tuple) and image.shape[2] != len(self.mean):
            raise ValueError(
                f"Normalize: image has {image.shape[2]} channels, mean and std {len(self.mean)}"
            )
        mean = np.asarray(self.mean, np.float32)
        std = np.asarray(self.std, np.float32)
        out = (image.astype(np.float32) / np.float32(255) - mean) / std
        if self.layout == "CHW":
            out = out.transpose(2, 0, 1)
        return np.ascontiguousarray(out.astype(_numpy_dtype(self.dtype), copy=False))

    def _spelt_image_op(self) -> Any:
        """The native op (spelt/image_ops.h: the same float32 arithmetic, as a table, then for
        bfloat16 the same rounding) for a mean and std that are both numbers or both per channel
        (numpy's broadcasting of one against the other is left to this reference); None
        otherwise."""
        if type(self) is not Normalize:
            return None
        if isinstance(self.mean, tuple) != isinstance(self.std, tuple):
            return None
        per_channel = isinstance(self.mean, tuple)
        return _core.image_op(
            "Normalize",
            self.field,
            mean=list(self.mean) if per_channel else [self.mean],
            std=list(self.std) if per_channel else [self.std],
            per_channel=per_channel,
            chw=self.layout == "CHW",
            bfloat16=self.dtype == "bfloat16",
            reference=self._normalize,
        )
