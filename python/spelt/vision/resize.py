"""Resize: to a shorter side or an exact size, with Pillow's antialiased bilinear or its nearest
resampling."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from spelt import _core
from spelt import transforms
from spelt.vision import _image

INTERPOLATIONS = ("bilinear", "nearest")

# Output-size guard (docs/vision.md): a requested side above MAX_SIDE pixels is refused at
# construction, an output image above MAX_OUTPUT_BYTES (2 GiB) when mapped, rather than let
# Pillow allocate until the process is killed.
MAX_SIDE = 32768
MAX_OUTPUT_BYTES = 2**31


def check_output_size(height: int, width: int, channels: int, who: str) -> None:
    """ValueError naming the output size when ``height * width * channels`` bytes exceed
    MAX_OUTPUT_BYTES."""
    nbytes = height * width * channels
    if nbytes > MAX_OUTPUT_BYTES:
        raise ValueError(
            f"{who}: output image {height}x{width}x{channels} would be {nbytes} bytes,"
            f" more than the limit of {MAX_OUTPUT_BYTES} (2**31) bytes"
        )


def check_interpolation(interpolation: str, who: str) -> None:
    """ValueError unless ``interpolation`` is one of INTERPOLATIONS."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(
            f"{who}: interpolation must be one of {list(INTERPOLATIONS)}, got {interpolation!r}"
        )


def resize_image(image: np.ndarray, height: int, width: int, interpolation: str) -> np.ndarray:
    """``image`` (checked uint8 HWC) resampled to ``(height, width, C)`` by Pillow's
    ``Image.resize``: ``"bilinear"`` is Pillow's BILINEAR, a triangle filter whose support
    grows with the reduction factor (so downscaling is antialiased, as torchvision's resize of
    PIL images and its ``antialias=True``); ``"nearest"`` is Pillow's NEAREST. RGBA is resampled
    with premultiplied alpha, as Pillow does."""
    img = _image.to_pil(image)
    resample = getattr(_image.pil_image().Resampling, interpolation.upper())
    return _image.from_pil(img.resize((width, height), resample))


def bilinear(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """``resize_image(image, height, width, "bilinear")`` (the native path's fallback for
    4-channel images)."""
    return resize_image(image, height, width, "bilinear")


def shorter_side_shape(height: int, width: int, size: int) -> tuple[int, int]:
    """Output ``(height, width)`` when the shorter side becomes ``size``: torchvision's rule,
    the longer side is ``int(size * longer / shorter)`` (truncated, not rounded)."""
    if width <= height:
        return int(size * height / width), size
    return size, int(size * width / height)


@dataclasses.dataclass
class Resize(transforms.Map):
    """Resizes an image (a Grain ``Map``), as torchvision's ``Resize`` on a PIL image.

    Args:
        size: an int: the shorter side becomes ``size`` and the longer one
            ``int(size * longer / shorter)`` (torchvision's rule; the aspect ratio kept up to that
            truncation); a pair ``(height, width)``: exactly that size.
        interpolation: ``"bilinear"`` (default; Pillow's antialiased bilinear) or ``"nearest"``.
        field: None: the element is the image; a str: ``element[field]`` of a dict element.

    ``map`` takes a uint8 array of shape ``(H, W, C)``, C in 1, 3, 4, and returns a new uint8
    array of shape ``(height, width, C)``, equal to Pillow's ``Image.resize`` of it. TypeError
    for another dtype, ValueError for another shape. At construction: TypeError for a size that
    is not an int or a pair of ints (a bool included), ValueError for a non-positive one, a side
    above MAX_SIDE (32768) or a bad interpolation; when mapped, ValueError if the output image
    would exceed MAX_OUTPUT_BYTES (2**31 bytes).
    """

    size: Any
    interpolation: str = "bilinear"
    field: str | None = None

    def __post_init__(self):
        pair = _image.size_pair(self.size, "Resize")
        if max(pair) > MAX_SIDE:
            raise ValueError(
                f"Resize: size {self.size!r} exceeds the limit of {MAX_SIDE} pixels per side"
            )
        check_interpolation(self.interpolation, "Resize")

    def map(self, element: Any) -> Any:
        return _image.apply_to_field(element, self.field, self._resize)

    def _resize(self, image: Any) -> np.ndarray:
        height, width = _image.check_image(image, "Resize").shape[:2]
        if _image.is_int(self.size):
            height, width = shorter_side_shape(height, width, int(self.size))
        else:
            height, width = _image.size_pair(self.size, "Resize")
        check_output_size(height, width, image.shape[2], "Resize")
        return resize_image(image, height, width, self.interpolation)

    fuses_decode = True  # a DecodeImage just before it decodes with DCT scaling (native path)

    def _spelt_image_op(self) -> Any:
        """The native op (spelt/image_ops.h); None for a subclass."""
        if type(self) is not Resize:
            return None
        exact = not _image.is_int(self.size)
        height, width = _image.size_pair(self.size, "Resize") if exact else (0, 0)
        return _core.image_op(
            "Resize",
            self.field,
            height=height,
            width=width,
            shorter_side=0 if exact else int(self.size),
            nearest=self.interpolation == "nearest",
            reference=self._resize,
            resize=bilinear,
        )
