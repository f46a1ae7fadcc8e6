"""spelt.vision (issue 23, the Python reference): decoding against Pillow on real photographs
(scikit-learn's samples) and their re-encodings, torchvision's crop parameter sampling, resize
against Pillow, and full train pipelines that are deterministic and restore from a checkpoint.
"""

from __future__ import annotations

import importlib.resources
import io
import math
import pickle
import struct
import subprocess
import sys
import zlib

import grain
import numpy as np
import pytest
import spelt
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from pipelines import assert_same, timeout  # noqa: F401
from spelt import vision


def _photo_bytes(name: str) -> bytes:
    return (importlib.resources.files("sklearn.datasets") / "images" / name).read_bytes()


CHINA = _photo_bytes("china.jpg")  # 640 x 427 RGB JPEG
FLOWER = _photo_bytes("flower.jpg")


def pil_decode(data: bytes, mode: str = "RGB") -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert(mode))


def encode(image, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    image = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    image.save(buf, fmt, **options)
    return buf.getvalue()


# PNG color types (PNG spec, IHDR): channels of each.
PNG_COLOR_TYPES = {0: 1, 2: 3, 4: 2, 6: 4}  # gray, RGB, gray + alpha, RGBA
# Adam7's passes: (first row, first column, row step, column step).
ADAM7 = [
    (0, 0, 8, 8),
    (0, 4, 8, 8),
    (4, 0, 8, 4),
    (0, 2, 4, 4),
    (2, 0, 4, 2),
    (0, 1, 2, 2),
    (1, 0, 2, 1),
]


def png_raw(array: np.ndarray, color_type: int, interlaced: bool = False) -> bytes:
    """A PNG of a (H, W, C) uint8 or uint16 array (8 or 16 bits), written by hand: Pillow
    writes neither 16-bit colour nor interlaced PNGs. Unfiltered rows, Adam7 if interlaced."""
    assert array.dtype in (np.uint8, np.uint16), array.dtype
    height, width, channels = array.shape
    assert PNG_COLOR_TYPES[color_type] == channels
    depth = 16 if array.dtype == np.uint16 else 8

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    def rows(part: np.ndarray) -> bytes:
        return b"".join(
            b"\0" + row.astype(">u2" if depth == 16 else "u1").tobytes() for row in part
        )

    passes = [array[y::dy, x::dx] for y, x, dy, dx in ADAM7] if interlaced else [array]
    header = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, int(interlaced))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows(p) for p in passes if p.size)))
        + chunk(b"IEND", b"")
    )


RGB = pil_decode(CHINA)
SMALL = RGB[100:196, 200:328]  # 96 x 128 piece of the photograph


def test_import_spelt_vision_does_not_import_pillow():
    code = "import sys, spelt, spelt.vision; print('PIL' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------
# DecodeImage


@pytest.mark.parametrize("data", [CHINA, FLOWER], ids=["china", "flower"])
def test_decode_photographs_equals_pillow(data):
    out = vision.DecodeImage().map(data)
    assert out.shape == (427, 640, 3) and out.dtype == np.uint8
    assert out.flags.writeable and out.flags.c_contiguous
    np.testing.assert_array_equal(out, pil_decode(data))
    for bytes_like in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        np.testing.assert_array_equal(vision.DecodeImage().map(bytes_like), out)


VARIANTS = {
    "progressive_jpeg": lambda: encode(RGB, "JPEG", quality=90, progressive=True),
    "gray_jpeg": lambda: encode(Image.fromarray(RGB).convert("L"), "JPEG", quality=90),
    "cmyk_jpeg": lambda: encode(Image.fromarray(RGB).convert("CMYK"), "JPEG", quality=90),
    "rgba_png": lambda: encode(np.dstack([RGB, RGB[:, :, :1]]), "PNG"),
    "palette_png": lambda: encode(Image.fromarray(RGB).quantize(64), "PNG"),
    "lossy_webp": lambda: encode(RGB, "WEBP", quality=90),
    "lossless_webp": lambda: encode(RGB, "WEBP", lossless=True),
    "1x1_jpeg": lambda: encode(RGB[:1, :1], "JPEG", quality=90),
    "1x1_png": lambda: encode(RGB[:1, :1], "PNG"),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_decode_variants_equal_pillow(name):
    data = VARIANTS[name]()
    out = vision.DecodeImage().map(data)
    assert out.dtype == np.uint8 and out.shape == (RGB.shape if "1x1" not in name else (1, 1, 3))
    np.testing.assert_array_equal(out, pil_decode(data))
    if name == "progressive_jpeg":
        assert Image.open(io.BytesIO(data)).info.get("progressive")
    if name == "gray_jpeg":
        assert (out == out[:, :, :1]).all()  # the gray level in R, G and B
    if name in ("cmyk_jpeg", "lossy_webp", "progressive_jpeg"):
        assert np.abs(out.astype(int) - RGB).mean() < 4  # close to the photograph
    if name in ("rgba_png", "lossless_webp", "1x1_png"):
        np.testing.assert_array_equal(out, RGB[: out.shape[0], : out.shape[1]])  # alpha dropped


# 16-bit samples: the photograph's levels as high bytes, random low bytes.
WIDE16 = SMALL.astype(np.uint16) * 256 + np.random.default_rng(1).integers(
    0, 256, SMALL.shape, dtype=np.uint16
)
ODD = (slice(0, 37), slice(0, 53))  # a size that leaves Adam7 passes partly empty
PNG_VARIANTS = {
    "gray": lambda: encode(SMALL[:, :, 0], "PNG"),
    "gray_alpha": lambda: encode(
        Image.fromarray(np.dstack([SMALL, SMALL[:, :, :1]])).convert("LA"), "PNG"
    ),
    "palette_transparency": lambda: encode(
        Image.fromarray(SMALL).quantize(16), "PNG", transparency=3
    ),
    "palette_4bit": lambda: encode(Image.fromarray(SMALL).quantize(16), "PNG", bits=4),
    "bilevel": lambda: encode(Image.fromarray(SMALL[:, :, 0]).convert("1"), "PNG"),
    "gray_transparency": lambda: encode(SMALL[:, :, 0], "PNG", transparency=17),
    "rgb_transparency": lambda: encode(SMALL, "PNG", transparency=(1, 2, 3)),
    "rgb16": lambda: png_raw(WIDE16, 2),
    "rgba16": lambda: png_raw(np.dstack([WIDE16, WIDE16[:, :, :1]]), 6),
    "gray_alpha16": lambda: png_raw(WIDE16[:, :, :2], 4),
    "interlaced": lambda: png_raw(SMALL[ODD], 2, interlaced=True),
    "interlaced_rgba16": lambda: png_raw(np.dstack([WIDE16, WIDE16[:, :, :1]])[ODD], 6, True),
    "interlaced_gray": lambda: png_raw(SMALL[ODD][:, :, :1], 0, interlaced=True),
}


@pytest.mark.parametrize("name", PNG_VARIANTS)
def test_decode_png_variants_equal_pillow(name):
    """Every PNG colour type and depth Pillow reads to RGB, as Pillow converts them: 16-bit
    colour samples keep their high byte, alpha and tRNS are dropped, not composited."""
    data = PNG_VARIANTS[name]()
    out = vision.DecodeImage().map(data)
    np.testing.assert_array_equal(out, pil_decode(data))
    if name.startswith("rgb") or name == "interlaced":
        np.testing.assert_array_equal(out, SMALL[: out.shape[0], : out.shape[1]])


def test_decode_modes():
    data = encode(np.dstack([SMALL, SMALL[:, :, :1]]), "PNG")
    gray = vision.DecodeImage(mode="L").map(data)
    assert gray.shape == (96, 128, 1)
    np.testing.assert_array_equal(gray[:, :, 0], pil_decode(data, "L"))
    rgba = vision.DecodeImage(mode="RGBA").map(data)
    np.testing.assert_array_equal(rgba, np.dstack([SMALL, SMALL[:, :, :1]]))
    with pytest.raises(ValueError, match="mode"):
        vision.DecodeImage(mode="CMYK")


def test_decode_16_bit_png_keeps_the_high_byte():
    rng = np.random.default_rng(0)
    gray16 = SMALL[:, :, 0].astype(np.uint16) * 256 + rng.integers(0, 256, SMALL.shape[:2])
    data = encode(gray16.astype(np.uint16), "PNG")
    assert Image.open(io.BytesIO(data)).mode.startswith("I")
    out = vision.DecodeImage().map(data)
    np.testing.assert_array_equal(out, np.repeat(SMALL[:, :, :1], 3, axis=2))  # not clipped
    rgb16 = SMALL.astype(np.uint16) * 256 + 255
    np.testing.assert_array_equal(vision.DecodeImage().map(png_raw(rgb16, 2)), SMALL)


# EXIF orientation -> the numpy operation that turns the stored image upright (EXIF 2.3).
UPRIGHT = {
    1: lambda a: a,
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1],
    5: lambda a: a.transpose(1, 0, 2),
    6: lambda a: np.rot90(a, k=-1),  # the camera was turned: display rotated 90 clockwise
    7: lambda a: np.rot90(a, k=-1)[::-1],
    8: lambda a: np.rot90(a, k=1),
}


def exif_jpeg(
    orientation: int, image: np.ndarray = SMALL, big_endian: bool = False, xmp: bool = False
) -> bytes:
    """A JPEG whose EXIF (little-endian TIFF, as Pillow writes it, or big-endian) carries
    ``orientation``; with ``xmp``, an XMP packet carries it instead (no EXIF)."""
    if xmp:
        packet = b'<rdf:Description tiff:Orientation="%d"/>' % orientation
        return encode(image, "JPEG", quality=90, xmp=packet)
    exif = Image.Exif()
    exif[0x0112] = orientation
    data = encode(image, "JPEG", quality=90, exif=exif)
    if big_endian:  # the same TIFF structure in Motorola byte order (IFD0 at 8, one entry)
        tiff = b"MM\0*" + struct.pack(">IHHHIHH", 8, 1, 0x0112, 3, 1, orientation, 0) + bytes(4)
        start = data.index(b"Exif\0\0")
        length = struct.unpack(">H", data[start - 2 : start])[0]
        segment = b"Exif\0\0" + tiff
        data = (
            data[: start - 2]
            + struct.pack(">H", len(segment) + 2)
            + segment
            + data[start - 2 + length :]
        )
    return data


@pytest.mark.parametrize("orientation", UPRIGHT)
@pytest.mark.parametrize(
    "big_endian, xmp",
    [(False, False), (True, False), (False, True)],
    ids=["intel", "motorola", "xmp"],
)
def test_decode_exif_orientation(orientation, big_endian, xmp):
    data = exif_jpeg(orientation, big_endian=big_endian, xmp=xmp)
    assert Image.open(io.BytesIO(data)).getexif()[0x0112] == orientation
    stored = vision.DecodeImage().map(data)
    upright = vision.DecodeImage(exif_orientation=True).map(data)
    assert stored.shape == (96, 128, 3)
    np.testing.assert_array_equal(upright, UPRIGHT[orientation](stored))


def test_decode_field_of_a_dict():
    element = {"image": CHINA, "label": 7}
    out = vision.DecodeImage("image").map(element)
    assert out["label"] == 7 and element["image"] is CHINA  # the input is not changed
    np.testing.assert_array_equal(out["image"], RGB)
    with pytest.raises(TypeError, match="dict"):
        vision.DecodeImage("image").map(CHINA)
    with pytest.raises(KeyError):
        vision.DecodeImage("jpeg").map(element)


@pytest.mark.parametrize(
    "data,message",
    [
        (CHINA[: len(CHINA) // 2], "truncated or corrupt JPEG"),
        (CHINA[:200], "truncated or corrupt JPEG header"),
        (encode(SMALL, "PNG")[:-300], "truncated or corrupt PNG"),
        (b"", r"0 bytes \(unknown format by its first bytes\) are not a JPEG, PNG or WebP"),
        (b"\x00" * 64, "not a JPEG, PNG or WebP"),
        (encode(SMALL, "GIF"), "not a JPEG, PNG or WebP"),
    ],
    ids=["half_jpeg", "jpeg_header_only", "truncated_png", "empty", "zeros", "gif"],
)
def test_decode_bad_bytes_raise_value_error(data, message):
    with pytest.raises(ValueError, match=message):
        vision.DecodeImage().map(data)


def test_decode_non_bytes_raises_type_error():
    with pytest.raises(TypeError, match="expected encoded image bytes, got str"):
        vision.DecodeImage().map("china.jpg")


# ---------------------------------------------------------------------------------------------
# RandomResizedCrop


@settings(max_examples=300, deadline=None)
@given(
    height=st.integers(1, 3000),
    width=st.integers(1, 3000),
    scale=st.tuples(st.floats(0.01, 1.5), st.floats(0.01, 1.5)).map(sorted),
    ratio=st.tuples(st.floats(0.1, 10), st.floats(0.1, 10)).map(sorted),
    seed=st.integers(0, 2**32 - 1),
)
def test_crop_params_are_deterministic_inside_and_within_bounds(height, width, scale, ratio, seed):
    params = vision.random_resized_crop_params(
        height, width, scale, ratio, np.random.default_rng(seed)
    )
    assert params == vision.random_resized_crop_params(
        height, width, scale, ratio, np.random.default_rng(seed)
    )
    top, left, h, w = params
    assert all(isinstance(v, int) for v in params)
    assert 0 <= top and top + h <= height and 0 <= left and left + w <= width and h >= 1 <= w
    if params == _fallback(height, width, ratio):
        return
    # w = round(sqrt(area * s * r)), h = round(sqrt(area * s / r)): each within 0.5 of the real
    # value, so s * area lies in [(w - .5)(h - .5), (w + .5)(h + .5)], and r likewise.
    area = height * width
    assert (w - 0.5) * (h - 0.5) <= scale[1] * area * (1 + 1e-9)
    assert (w + 0.5) * (h + 0.5) >= scale[0] * area * (1 - 1e-9)
    assert (w - 0.5) / (h + 0.5) <= ratio[1] * (1 + 1e-9)
    assert (w + 0.5) / (h - 0.5) >= ratio[0] * (1 - 1e-9)


def _fallback(height, width, ratio):
    if width / height < ratio[0]:
        h = max(1, round(width / ratio[0]))
        return (height - h) // 2, 0, h, width
    if width / height > ratio[1]:
        w = max(1, round(height * ratio[1]))
        return 0, (width - w) // 2, height, w
    return 0, 0, height, width


@pytest.mark.parametrize(
    "height,width,want",
    [(100, 400, (0, 133, 100, 133)), (400, 100, (133, 0, 133, 100)), (50, 50, (0, 0, 50, 50))],
)
def test_crop_params_fallback_after_ten_attempts(height, width, want):
    rng = np.random.default_rng(3)
    # every attempt asks for 2-3 times the image's area: none fits
    assert vision.random_resized_crop_params(height, width, (2, 3), (3 / 4, 4 / 3), rng) == want
    reference = np.random.default_rng(3)
    reference.random(20)  # ten attempts of two uniform draws each
    assert rng.random() == reference.random()


class ScriptedRng:
    """Answers uniform() and integers() from a script and records the calls."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    def uniform(self, low, high):
        self.calls.append(("uniform", low, high))
        return self.answers.pop(0)

    def integers(self, low, high):
        self.calls.append(("integers", low, high))
        return self.answers.pop(0)


def test_crop_params_draw_in_torchvisions_order():
    # attempt 1: 1.2 of the area does not fit; attempt 2: 0.256036 of it with ratio 1 is
    # sqrt(2560.36) = 50.6 on each side, rounded to 51
    rng = ScriptedRng([1.2, 0.0, 0.256036, 0.0, 7, 9])
    assert vision.random_resized_crop_params(100, 100, (0.2, 1.3), (0.5, 2.0), rng) == (
        7,
        9,
        51,
        51,
    )
    uniform_scale = ("uniform", 0.2, 1.3)
    uniform_ratio = ("uniform", math.log(0.5), math.log(2.0))
    assert rng.calls == [
        uniform_scale,
        uniform_ratio,
        uniform_scale,
        uniform_ratio,
        ("integers", 0, 50),
        ("integers", 0, 50),
    ]


@pytest.mark.parametrize(
    "bad,error",
    [
        ({"scale": (0.5, 0.1)}, ValueError),
        ({"ratio": (0, 1)}, ValueError),
        ({"size": 0}, ValueError),
        ({"size": (8, 0)}, ValueError),
        ({"size": 8.0}, TypeError),
        ({"size": (8, 8, 8)}, TypeError),
        ({"interpolation": "bicubic"}, ValueError),
    ],
)
def test_random_resized_crop_rejects_bad_arguments(bad, error):
    with pytest.raises(error):
        vision.RandomResizedCrop(**{"size": 8, **bad})


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_random_resized_crop_equals_pillow_crop_then_resize(interpolation):
    transform = vision.RandomResizedCrop((160, 224), interpolation=interpolation)
    for seed in range(5):
        out = transform.random_map(RGB, np.random.default_rng(seed))
        top, left, h, w = vision.random_resized_crop_params(
            427, 640, transform.scale, transform.ratio, np.random.default_rng(seed)
        )
        crop = Image.fromarray(RGB).crop((left, top, left + w, top + h))
        want = crop.resize((224, 160), getattr(Image.Resampling, interpolation.upper()))
        assert out.shape == (160, 224, 3)
        np.testing.assert_array_equal(out, np.asarray(want))


def test_random_resized_crop_of_a_1x1_image():
    pixel = RGB[:1, :1]
    out = vision.RandomResizedCrop(8).random_map(pixel, np.random.default_rng(0))
    assert out.shape == (8, 8, 3) and (out == pixel).all()


# ---------------------------------------------------------------------------------------------
# Resize, CenterCrop, RandomHorizontalFlip, Normalize


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_resize_equals_pillow(interpolation):
    resample = getattr(Image.Resampling, interpolation.upper())
    pil = Image.fromarray(RGB)
    cases = [
        (RGB, 256, (256, 383)),  # shorter side 256, longer int(256 * 640 / 427)
        (np.ascontiguousarray(RGB.transpose(1, 0, 2)), 256, (383, 256)),
        (RGB, (100, 50), (100, 50)),
        (RGB, 1000, (1000, 1498)),  # upscaling
    ]
    for image, size, (h, w) in cases:
        out = vision.Resize(size, interpolation).map(image)
        assert out.shape == (h, w, 3)
        source = pil if image is RGB else Image.fromarray(image)
        np.testing.assert_array_equal(out, np.asarray(source.resize((w, h), resample)))
    gray = RGB[:, :, :1]
    out = vision.Resize(64, interpolation).map(gray)
    want = Image.fromarray(RGB[:, :, 0]).resize((95, 64), resample)
    np.testing.assert_array_equal(out[:, :, 0], np.asarray(want))


def test_resize_rejects_bad_input():
    with pytest.raises(ValueError, match="interpolation"):
        vision.Resize(8, "bicubic")
    with pytest.raises(TypeError, match="uint8"):
        vision.Resize(8).map(RGB.astype(np.float32))
    with pytest.raises(ValueError, match="shape"):
        vision.Resize(8).map(RGB[:, :, 0])


def test_center_crop_rounds_half_to_even_and_pads_like_torchvision():
    image = np.arange(7 * 9, dtype=np.uint8).reshape(7, 9, 1)
    # (7 - 4) / 2 = 1.5 -> 2 and (9 - 8) / 2 = 0.5 -> 0
    np.testing.assert_array_equal(vision.CenterCrop((4, 8)).map(image), image[2:6, 0:8])
    np.testing.assert_array_equal(vision.CenterCrop(5).map(image), image[1:6, 2:7])
    padded = vision.CenterCrop((10, 4)).map(image)  # 3 rows of zeros: 1 above, 2 below
    assert padded.shape == (10, 4, 1)
    np.testing.assert_array_equal(padded[1:8], image[:, 2:6])
    assert not padded[0].any() and not padded[8:].any()


def test_flip_draws_once_and_flips_below_p():
    image = SMALL
    for p, flips in ((0.0, False), (1.0, True)):
        rng, reference = np.random.default_rng(1), np.random.default_rng(1)
        out = vision.RandomHorizontalFlip(p).random_map(image, rng)
        np.testing.assert_array_equal(out, image[:, ::-1] if flips else image)
        reference.random()
        assert rng.random() == reference.random()
    flipped = sum(
        vision.RandomHorizontalFlip(0.3).random_map(image, np.random.default_rng(s))[0, 0, 0]
        != image[0, 0, 0]
        for s in range(400)
    )
    assert 80 < flipped < 160  # 120 expected
    with pytest.raises(ValueError):
        vision.RandomHorizontalFlip(1.5)


def test_normalize():
    out = vision.Normalize(vision.IMAGENET_MEAN, vision.IMAGENET_STD).map(SMALL)
    assert out.dtype == np.float32 and out.shape == (96, 128, 3)
    want = (SMALL / 255.0 - np.array(vision.IMAGENET_MEAN)) / np.array(vision.IMAGENET_STD)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    chw = vision.Normalize(vision.IMAGENET_MEAN, vision.IMAGENET_STD, layout="CHW").map(SMALL)
    assert chw.shape == (3, 96, 128) and chw.flags.c_contiguous
    np.testing.assert_array_equal(chw, out.transpose(2, 0, 1))
    bf16 = vision.Normalize(vision.IMAGENET_MEAN, vision.IMAGENET_STD, dtype="bfloat16").map(SMALL)
    assert bf16.dtype.name == "bfloat16"
    np.testing.assert_array_equal(bf16, out.astype(bf16.dtype))
    with pytest.raises(ValueError, match="channels"):
        vision.Normalize([0.5], [0.5]).map(SMALL)
    with pytest.raises(ValueError):
        vision.Normalize([0.5], [0.0])
    with pytest.raises(ValueError, match="dtype"):
        vision.Normalize([0.5], [0.5], dtype="float16")


def test_normalize_bfloat16_without_ml_dtypes(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with pytest.raises(ImportError, match="ml_dtypes"):
        vision.Normalize([0.5], [0.5], dtype="bfloat16")


# ---------------------------------------------------------------------------------------------
# Recipes and pipelines


def apply(transforms, element, rng=None):
    for t in transforms:
        element = (
            t.random_map(element, rng)
            if isinstance(t, spelt.transforms.RandomMap)
            else t.map(element)
        )
    return element


def test_eval_recipe_equals_pillow_resize_and_centre_crop():
    out = apply(vision.eval_transforms(), CHINA)
    assert out.shape == (224, 224, 3) and out.dtype == np.float32
    resized = np.asarray(
        Image.open(io.BytesIO(CHINA)).resize((383, 256), Image.Resampling.BILINEAR)
    )
    crop = resized[16:240, 80:304]  # round(32 / 2), round(159 / 2) = round(79.5) = 80
    want = vision.Normalize(vision.IMAGENET_MEAN, vision.IMAGENET_STD).map(crop)
    np.testing.assert_array_equal(out, want)


def test_train_recipe_on_a_field():
    transforms = vision.train_transforms(32, field="image")
    assert [type(t) for t in transforms] == [
        vision.DecodeImage,
        vision.RandomResizedCrop,
        vision.RandomHorizontalFlip,
        vision.Normalize,
    ]
    out = apply(transforms, {"image": CHINA, "label": 3}, np.random.default_rng(0))
    assert out["label"] == 3 and out["image"].shape == (32, 32, 3)
    again = apply(
        pickle.loads(pickle.dumps(transforms)), {"image": CHINA}, np.random.default_rng(0)
    )
    np.testing.assert_array_equal(again["image"], out["image"])


def records(n=12):
    """n dicts of a JPEG (quality 90) cut from the photographs at several sizes, and a label."""
    photos = [RGB, pil_decode(FLOWER)]
    out = []
    for i in range(n):
        h, w = 60 + 7 * i, 90 - 3 * i
        piece = photos[i % 2][5 * i : 5 * i + h, 11 * i : 11 * i + w]
        out.append({"image": encode(piece, "JPEG", quality=90), "label": i})
    return out


def dataset_pipeline(g, transform):
    """MapDataset of records() through the train recipe; Grain is handed the bound methods
    (its own base classes are not Spelt's)."""
    crop = vision.RandomResizedCrop(24, field="image")
    flip = vision.RandomHorizontalFlip(field="image")
    normalize = vision.Normalize(vision.IMAGENET_MEAN, vision.IMAGENET_STD, field="image")
    ds = g.MapDataset.source(records()).seed(5).shuffle()
    ds = ds.map(transform(vision.DecodeImage("image"), "map"))
    ds = ds.random_map(transform(crop, "random_map")).random_map(transform(flip, "random_map"))
    return ds.map(transform(normalize, "map"))


def test_dataset_pipeline_is_deterministic_and_equals_grain():
    as_object = dataset_pipeline(spelt, lambda t, method: t)
    first, second = list(as_object), list(as_object)
    assert len(first) == 12 and first[0]["image"].shape == (24, 24, 3)
    assert_same(first, second)
    assert not all(np.array_equal(first[0]["image"], e["image"]) for e in first[1:])
    with_methods = list(dataset_pipeline(spelt, getattr))
    under_grain = list(dataset_pipeline(grain, getattr))
    assert_same(with_methods, first)
    assert_same(under_grain, first)


def test_data_loader_train_recipe_restores_from_a_checkpoint():
    def loader(worker_count=0):
        return spelt.DataLoader(
            data_source=records(),
            sampler=spelt.samplers.IndexSampler(12, shuffle=True, seed=9, num_epochs=2),
            operations=[*vision.train_transforms(24, field="image"), spelt.transforms.Batch(4)],
            worker_count=worker_count,
        )

    batches = list(loader())
    assert len(batches) == 6 and batches[0]["image"].shape == (4, 24, 24, 3)
    assert_same(list(loader()), batches)
    assert not np.array_equal(batches[0]["image"], batches[3]["image"])  # epochs differ
    it = iter(loader())
    for _ in range(2):
        next(it)
    state = it.get_state()
    resumed = iter(loader())
    resumed.set_state(state)
    assert_same(list(resumed), batches[2:])
    assert_same(list(loader(worker_count=2)), batches)  # the same with worker processes


def test_a_large_photograph():
    big = np.tile(RGB, (6, 6, 1))  # 2562 x 3840
    data = encode(big, "JPEG", quality=90)
    decoded = vision.DecodeImage().map(data)
    np.testing.assert_array_equal(decoded, pil_decode(data))
    out = apply(vision.train_transforms(), data, np.random.default_rng(0))
    assert out.shape == (224, 224, 3) and np.isfinite(out).all()


# ---------------------------------------------------------------------------------------------
# Argument errors (issue: fresh-user trial)


@pytest.mark.parametrize(
    "make, error, fragment",
    [
        (lambda: vision.Resize(True), TypeError, "Resize: size must be an int"),
        (lambda: vision.Resize((8, False)), TypeError, "Resize: size must be an int"),
        (lambda: vision.Resize(100000), ValueError, "limit of 32768 pixels per side"),
        (lambda: vision.RandomHorizontalFlip(p="0.5"), TypeError, "p must be a number, got str"),
        (lambda: vision.Normalize("0.5", 0.5), TypeError, "mean must be a number or a sequence"),
        (lambda: vision.Normalize([0.5, "x"], 0.5), TypeError, "Normalize: mean[1] must be"),
        (lambda: vision.Normalize([0.5, 0.5], [0.5]), ValueError, "got 2 and 1 values"),
        (
            lambda: vision.Normalize((123.675, 116.28, 103.53), (58.395, 57.12, 57.375)),
            ValueError,
            "for statistics in 0-255 units divide them by 255",
        ),
        (lambda: vision.Normalize(0.5, 2.0), ValueError, "std in (0, 1]"),
        (lambda: spelt.MapDataset.range(2).map(vision.DecodeImage), TypeError, "pass DecodeImage"),
    ],
)
def test_vision_arguments_are_checked_at_construction(make, error, fragment):
    with pytest.raises(error) as info:
        make()
    assert fragment in str(info.value)


def test_normalize_broadcasts_a_scalar_mean_and_std_over_the_channels():
    out = vision.Normalize(0.5, 0.25).map(SMALL)
    want = vision.Normalize((0.5,) * 3, (0.25,) * 3).map(SMALL)
    np.testing.assert_array_equal(out, want)
    gray = SMALL[:, :, :1]
    assert vision.Normalize(0.5, 0.25).map(gray).shape == gray.shape


def test_resize_refuses_an_output_above_two_gib():
    with pytest.raises(ValueError, match=r"output image 30000x300000x3 would be 27000000000 bytes"):
        vision.Resize(30000).map(np.zeros((10, 100, 3), np.uint8))


@pytest.mark.parametrize(
    "data, fragment",
    [
        (CHINA[:200], "image decode failed: truncated or corrupt JPEG header (200 bytes)"),
        (b"GIF89a" + bytes(20), "image decode failed: 26 bytes (unknown format by its first"),
        (encode(SMALL, "PNG")[:40], "40 bytes (PNG by its first bytes) are not a JPEG"),
    ],
)
def test_decode_errors_say_what_failed(data, fragment):
    with pytest.raises(ValueError) as info:
        list(spelt.MapDataset.source([data]).map(vision.DecodeImage()))
    assert fragment in str(info.value)


def test_random_ops_in_a_data_loader_without_a_sampler_seed_say_so():
    loader = spelt.DataLoader(
        data_source=[encode(SMALL, "PNG")] * 2,
        sampler=spelt.samplers.IndexSampler(2, spelt.sharding.NoSharding(), num_epochs=1),
        operations=vision.train_transforms(32),
    )
    with pytest.raises(AttributeError) as info:
        list(loader)
    assert "RandomResizedCrop got rng=None because the sampler has no seed" in str(
        info.value.__notes__
    )
