"""Image decoding and augmentation as Grain transforms (``Map`` / ``RandomMap`` subclasses).

Each transform has a reference implementation in numpy and Pillow, so a pipeline written with
them runs under Spelt and under Grain. Images are uint8 numpy arrays of shape
``(height, width, channels)``; transforms act on the element, or on ``element[field]`` of a dict
element. Behaviour follows torchvision's transforms on PIL images; docs/vision.md has the
details. Pillow is imported on first use (``pip install spelt-ml[vision]``).
"""

from spelt.vision.crop import CenterCrop, RandomResizedCrop, random_resized_crop_params
from spelt.vision.decode import DecodeImage
from spelt.vision.flip import RandomHorizontalFlip
from spelt.vision.normalize import IMAGENET_MEAN, IMAGENET_STD, Normalize
from spelt.vision.recipes import eval_transforms, train_transforms
from spelt.vision.resize import Resize

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "CenterCrop",
    "DecodeImage",
    "Normalize",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "Resize",
    "eval_transforms",
    "random_resized_crop_params",
    "train_transforms",
]
