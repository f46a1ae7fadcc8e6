"""DecodeImage: encoded JPEG, PNG or WebP bytes to a uint8 HWC array (Pillow's decoders)."""

from __future__ import annotations

import dataclasses
import io
import struct
from typing import Any

import numpy as np

from spelt import _core
from spelt import transforms
from spelt.vision import _image

_FORMATS = ("JPEG", "PNG", "WEBP")
_CHANNELS = {"RGB": 3, "L": 1, "RGBA": 4}
# What Pillow's decoders raise for damaged data.
_DECODER_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error)


def sniff_format(head: bytes) -> str:
    """The format named by the first bytes of an encoded image ("JPEG", "PNG", "WEBP"), or
    "unknown format" (for error messages)."""
    if head.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    return "unknown format"


@dataclasses.dataclass
class DecodeImage(transforms.Map):
    """Decodes an encoded image into a numpy array (a Grain ``Map``).

    Args:
        field: None (default): the element is the encoded image. A str: the element is a dict
            and ``element[field]`` is decoded; the other keys pass through (a shallow copy).
        mode: ``"RGB"`` (default), ``"L"`` (grayscale) or ``"RGBA"``: the output's colours.
        exif_orientation: bool, default False. True: rotate or mirror the image as its EXIF
            Orientation tag says (Pillow's ``ImageOps.exif_transpose``), so the output is
            upright; False: the pixels as stored, as torchvision's ``decode_jpeg`` and PIL's
            ``Image.open`` give them.
        on_error: ``"raise"`` (default): undecodable bytes raise ValueError (below).
            ``"skip"``: ``map`` returns None for them instead, which drops the element where
            None drops one: on a MapDataset (Grain's convention: ``ds[i]`` is None, iteration
            skips it, ``len`` is unchanged) and in a DataLoader's operations (the record is
            left out, as a Filter would); on an IterDataset a map's None is yielded (Grain's).
            The execution summary shows them: that stage produces as many fewer elements than
            its parent. TypeError (not bytes-like) still raises. docs/vision.md has more.

    ``map(element)`` takes bytes (or any bytes-like object: bytearray, memoryview, a 1-D uint8
    array) and returns a writable, C-contiguous uint8 array of shape ``(height, width, C)``
    with C = 3, 1 or 4 for mode RGB, L or RGBA. Decoding is Pillow's (libjpeg-turbo,
    its own zlib-based PNG decoder, libwebp): the output equals
    ``np.asarray(PIL.Image.open(f).convert(mode))`` except for 16-bit images. Conversions:

    - grayscale JPEG and PNG: the gray level in each of R, G and B;
    - CMYK JPEG (Adobe's inverted ones included): Pillow's conversion, R = (255 - C)(255 - K) /
      255 and so on, without ICC colour management;
    - alpha (PNG, WebP, palette transparency): dropped for RGB and L, the colour values kept
      as stored (not composited on a background);
    - 16-bit PNG: reduced to 8 bits by keeping the high byte of each sample (v >> 8), which is
      what Pillow does for 16-bit colour PNGs; for 16-bit grayscale Pillow's own ``convert``
      would clip at 255 instead, which this does not follow;
    - animated PNG or WebP: the first frame.

    Errors: TypeError if the input is not bytes-like (or ``field`` is set and the element not
    a dict); ValueError if the bytes are not a JPEG, PNG or WebP image, or are truncated or
    corrupt where the decoder notices (libjpeg decodes some damage in the entropy-coded data
    to wrong pixels without an error, as Pillow does). Pillow's
    ``DecompressionBombError`` for images above ``PIL.Image.MAX_IMAGE_PIXELS`` * 2 passes
    through unchanged.
    """

    field: str | None = None
    mode: str = "RGB"
    exif_orientation: bool = False
    on_error: str = "raise"

    def __post_init__(self):
        if self.mode not in _CHANNELS:
            raise ValueError(
                f"DecodeImage: mode must be one of {list(_CHANNELS)}, got {self.mode!r}"
            )
        if self.on_error not in ("raise", "skip"):
            raise ValueError(
                f"DecodeImage: on_error must be 'raise' or 'skip', got {self.on_error!r}"
            )

    @property
    def drops_none(self) -> bool:
        """True if ``map`` may return None for an element to drop (``on_error="skip"``)."""
        return self.on_error == "skip"

    def map(self, element: Any) -> Any:
        try:
            return _image.apply_to_field(element, self.field, self.decode)
        except ValueError:
            if self.on_error == "skip":
                return None
            raise

    def _decode_or_none(self, data: Any) -> np.ndarray | None:
        """``decode(data)``, or None for undecodable bytes (the native path's fallback decoder
        with ``on_error="skip"``: None tells the engine to drop the element)."""
        try:
            return self.decode(data)
        except ValueError:
            return None

    defers_decode = True  # _spelt_image_op(defer_decode=True) hands a JPEG on undecoded

    def _spelt_image_op(self, defer_decode: bool = False) -> Any:
        """The native op (spelt/image_ops.h: JPEG with libjpeg-turbo, PNG with libpng, WebP
        with libwebp, the rest through ``decode``) for mode RGB; None otherwise. With
        ``exif_orientation`` the JPEG's EXIF orientation is applied natively and PNG and WebP
        go to ``decode``. ``defer_decode``: a JPEG leaves it undecoded (unless it must be turned
        upright), for a RandomResizedCrop or Resize to decode fused."""
        if type(self) is not DecodeImage or self.mode != "RGB":
            return None
        return _core.image_op(
            "DecodeImage",
            self.field,
            defer_decode=defer_decode,
            exif_orientation=self.exif_orientation,
            skip_corrupt=self.drops_none,
            reference=self.decode,
            decode=self._decode_or_none if self.drops_none else self.decode,
        )

    def decode(self, data: Any) -> np.ndarray:
        """Decodes one encoded image (the bytes alone, without the ``field`` lookup)."""
        try:
            view = memoryview(data)
        except TypeError:
            raise TypeError(
                f"DecodeImage: expected encoded image bytes, got {type(data).__name__}"
            ) from None
        image_module = _image.pil_image()
        size = view.nbytes
        detected = sniff_format(bytes(view[:12]))
        try:
            img = image_module.open(io.BytesIO(view), formats=_FORMATS)
        except image_module.UnidentifiedImageError:
            raise ValueError(
                f"DecodeImage: image decode failed: {size} bytes ({detected} by its first bytes)"
                " are not a JPEG, PNG or WebP image (or its header is corrupt)"
            ) from None
        except _DECODER_ERRORS as e:
            raise ValueError(
                f"DecodeImage: image decode failed: truncated or corrupt {detected} header"
                f" ({size} bytes): {e}"
            ) from e
        try:
            img.load()
        except _DECODER_ERRORS as e:
            raise ValueError(
                f"DecodeImage: image decode failed: truncated or corrupt {img.format} data"
                f" ({size} bytes): {e}"
            ) from e
        if self.exif_orientation:
            from PIL import ImageOps

            img = ImageOps.exif_transpose(img)
        return _image.from_pil(self._convert(img, image_module))

    def _convert(self, img: Any, image_module: Any) -> Any:
        """``img`` in this transform's mode; 16-bit (mode I*) images keep their high byte."""
        if img.mode.startswith("I"):
            high = np.clip(np.asarray(img), 0, 65535).astype(np.uint16) >> 8
            img = image_module.fromarray(high.astype(np.uint8))
        return img if img.mode == self.mode else img.convert(self.mode)
