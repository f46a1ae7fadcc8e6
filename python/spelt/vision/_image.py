"""The image convention of spelt.vision and its bridge to Pillow.

An image is a numpy ``uint8`` array of shape ``(height, width, channels)`` (HWC) with 1
(grayscale), 3 (RGB) or 4 (RGBA) channels. Pillow is imported only when a transform first
needs it, so ``import spelt.vision`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_CHANNELS = (1, 3, 4)  # Pillow modes L, RGB, RGBA


def pil_image() -> Any:
    """Returns the ``PIL.Image`` module. ImportError naming the extra if Pillow is missing."""
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(
            "spelt.vision needs Pillow: pip install Pillow (or spelt-ml[vision])"
        ) from e
    return Image


def check_image(image: Any, who: str) -> np.ndarray:
    """Returns ``image`` if it is a uint8 HWC array with 1, 3 or 4 channels; else TypeError
    (not a uint8 ndarray) or ValueError (another shape), naming the transform ``who``."""
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8:
        got = f"{image.dtype} array" if isinstance(image, np.ndarray) else type(image).__name__
        raise TypeError(f"{who}: expected a uint8 numpy array (height, width, channels), got {got}")
    if image.ndim != 3 or image.shape[2] not in _CHANNELS or 0 in image.shape:
        raise ValueError(
            f"{who}: expected shape (height, width, 1|3|4) with height and width >= 1, "
            f"got {image.shape}"
        )
    return image


def to_pil(image: np.ndarray) -> Any:
    """The Pillow image (mode L, RGB or RGBA) of a checked HWC uint8 array."""
    plane = image[:, :, 0] if image.shape[2] == 1 else image
    return pil_image().fromarray(np.ascontiguousarray(plane))


def from_pil(img: Any) -> np.ndarray:
    """A writable HWC uint8 array of a Pillow image of mode L, RGB or RGBA."""
    array = np.array(img, dtype=np.uint8)
    return array[:, :, None] if array.ndim == 2 else array


def is_int(n: Any) -> bool:
    """An int or NumPy integer, not a bool (``Resize(True)`` is a mistake, not size 1)."""
    return isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))


def size_pair(size: Any, who: str) -> tuple[int, int]:
    """``(height, width)`` of ``size``: an int n is ``(n, n)``, a pair is ``(h, w)``.
    TypeError for anything else (a bool included), ValueError unless both are positive."""
    pair = (size, size) if is_int(size) else size
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(is_int(n) for n in pair)):
        raise TypeError(f"{who}: size must be an int or (height, width) ints, got {size!r}")
    if min(pair) < 1:
        raise ValueError(f"{who}: size must be positive, got {size!r}")
    return int(pair[0]), int(pair[1])


def apply_to_field(element: Any, field: str | None, fn: Callable[[Any], Any]) -> Any:
    """``fn(element)`` if ``field`` is None; else a shallow copy of the dict ``element`` with
    ``element[field]`` replaced by ``fn(element[field])`` (TypeError if ``element`` is not a
    dict, KeyError if it lacks ``field``)."""
    if field is None:
        return fn(element)
    if not isinstance(element, dict):
        raise TypeError(f"field={field!r} needs dict elements, got {type(element).__name__}")
    return {**element, field: fn(element[field])}
