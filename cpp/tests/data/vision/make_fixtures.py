"""Writes the fixtures of the `vision_*_test.cc` tests in cpp/tests/ with Pillow (run from
anywhere with a Python that has numpy and Pillow; the files are committed, so this reruns only
to change them):

    python cpp/tests/data/vision/make_fixtures.py

- *.jpg: small JPEGs (RGB 4:2:0 and 4:4:4, grayscale, CMYK, progressive, 1x1) and
  photo_like.jpg, a 320x240 synthetic "photograph" (smooth shading, edges, noise) for the fused
  path's PSNR test; *.rgb: Pillow's decode of each small one,
  np.asarray(Image.open(f).convert("RGB")), raw HWC bytes.
- resize_*.raw: Pillow's Image.resize(..., BILINEAR) of the pattern image of Pattern() in
  vision_resize_test.cc (same formula as pattern() below), raw HWC bytes.
- goldens.txt: the FNV-1a 64 hashes of Pillow's decode (and of 224x224 resizes of it) of
  scikit-learn's china.jpg and flower.jpg, for the tests that read them where present.
"""

from __future__ import annotations

import io
import pathlib

import numpy as np
from PIL import Image

HERE = pathlib.Path(__file__).resolve().parent


def pattern(height: int, width: int, channels: int) -> np.ndarray:
    y, x, c = np.meshgrid(np.arange(height), np.arange(width), np.arange(channels), indexing="ij")
    return ((x * 37 + y * 91 + c * 53 + ((x * y) % 29) * 5) & 255).astype(np.uint8)


def photo_like(height: int, width: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.meshgrid(np.linspace(0, 1, height), np.linspace(0, 1, width), indexing="ij")
    r = 120 + 80 * np.sin(6 * x + 2 * y) + 30 * np.cos(17 * x * y)
    g = 100 + 90 * np.cos(5 * y - 3 * x) + 20 * np.sin(23 * y)
    b = 90 + 70 * np.sin(9 * (x - 0.5) ** 2 + 7 * (y - 0.3) ** 2)
    img = np.stack([r, g, b], axis=-1)
    img[(x - 0.6) ** 2 + (y - 0.4) ** 2 < 0.04] = (230, 200, 40)  # a disc with sharp edges
    img[(y > 0.75) & (x < 0.3)] = (20, 40, 160)
    img += rng.normal(0, 6, img.shape)  # sensor-like noise
    return np.clip(img, 0, 255).astype(np.uint8)


def jpeg(image: Image.Image, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", **options)
    return out.getvalue()


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main() -> None:
    small = {
        "rgb_420.jpg": jpeg(Image.fromarray(photo_like(45, 61, 1)), quality=90),
        "rgb_444.jpg": jpeg(Image.fromarray(photo_like(21, 33, 2)), quality=95, subsampling=0),
        "gray.jpg": jpeg(Image.fromarray(photo_like(17, 23, 3)).convert("L"), quality=90),
        "cmyk.jpg": jpeg(Image.fromarray(photo_like(13, 19, 4)).convert("CMYK"), quality=90),
        "progressive.jpg": jpeg(
            Image.fromarray(photo_like(45, 61, 5)), quality=85, progressive=True
        ),
        "one_pixel.jpg": jpeg(Image.fromarray(np.array([[[200, 30, 90]]], np.uint8))),
    }
    for name, data in small.items():
        (HERE / name).write_bytes(data)
        rgb = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        (HERE / name.replace(".jpg", ".rgb")).write_bytes(rgb.tobytes())
        print(name, len(data), "bytes", rgb.shape)
    (HERE / "photo_like.jpg").write_bytes(
        jpeg(Image.fromarray(photo_like(240, 320, 6)), quality=90)
    )
    print("photo_like.jpg", (HERE / "photo_like.jpg").stat().st_size, "bytes")

    # (in_h, in_w, channels, out_h, out_w, box or None); names as vision_resize_test.cc's.
    cases = [
        (29, 41, 3, 7, 10, None),
        (29, 41, 3, 60, 17, None),
        (29, 41, 3, 29, 13, None),
        (29, 41, 3, 5, 41, None),
        (29, 41, 3, 40, 55, None),
        (29, 41, 1, 11, 11, None),
        (1, 1, 3, 3, 2, None),
        (29, 41, 3, 9, 12, (2.5, 1.25, 30.75, 20.5)),
    ]
    for in_h, in_w, c, out_h, out_w, box in cases:
        img = pattern(in_h, in_w, c)
        pil = Image.fromarray(img[:, :, 0] if c == 1 else img)
        out = np.asarray(pil.resize((out_w, out_h), Image.Resampling.BILINEAR, box=box))
        name = f"resize_{in_h}x{in_w}x{c}_to_{out_h}x{out_w}{'_box' if box else ''}.raw"
        (HERE / name).write_bytes(out.tobytes())

    lines = []
    try:
        import sklearn.datasets

        images = pathlib.Path(sklearn.datasets.__file__).parent / "images"
    except ImportError:
        images = None
    for name in ("china.jpg", "flower.jpg"):
        if images is None or not (images / name).exists():
            continue
        img = Image.open(images / name).convert("RGB")
        lines.append(f"{name} decode {fnv1a64(np.asarray(img).tobytes()):016x}")
        for w, h in ((224, 224), (300, 200), (320, 213)):
            out = np.asarray(img.resize((w, h), Image.Resampling.BILINEAR))
            lines.append(f"{name} resize_{h}x{w} {fnv1a64(out.tobytes()):016x}")
    (HERE / "goldens.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
