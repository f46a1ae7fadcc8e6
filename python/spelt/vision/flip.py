"""RandomHorizontalFlip: mirror an image left to right with probability p."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from spelt import _args
from spelt import _core
from spelt import transforms
from spelt.vision import _image


@dataclasses.dataclass
class RandomHorizontalFlip(transforms.RandomMap):
    """Mirrors an image left to right with probability ``p`` (a Grain ``RandomMap``), as
    torchvision's ``RandomHorizontalFlip``.

    Args:
        p: float in [0, 1], default 0.5.
        field: None: the element is the image; a str: ``element[field]`` of a dict element.

    ``random_map(element, rng)`` draws exactly one ``rng.random()`` per element, whatever ``p``
    (so later draws from the same ``rng`` do not depend on it), and flips when it is below
    ``p``. Takes and returns a C-contiguous uint8 ``(H, W, C)`` array (a new one when flipped,
    the input otherwise). ValueError at construction if ``p`` is outside [0, 1].
    """

    p: float = 0.5
    field: str | None = None

    def __post_init__(self):
        self.p = _args.number_arg(self.p, "RandomHorizontalFlip: p")
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: p must be in [0, 1], got {self.p!r}")

    def random_map(self, element: Any, rng: np.random.Generator) -> Any:
        return _image.apply_to_field(element, self.field, lambda image: self._flip(image, rng))

    def _flip(self, image: Any, rng: np.random.Generator) -> np.ndarray:
        _image.check_image(image, "RandomHorizontalFlip")
        if rng.random() < self.p:
            return np.ascontiguousarray(image[:, ::-1])
        return image

    def _spelt_image_op(self) -> Any:
        """The native op (spelt/image_ops.h: one draw, as here); None for a subclass."""
        if type(self) is not RandomHorizontalFlip:
            return None
        reference = functools.partial(self._flip, rng=None)  # raises the input errors only
        return _core.image_op("RandomHorizontalFlip", self.field, p=self.p, reference=reference)
