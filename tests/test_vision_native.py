"""spelt.vision's native path (issue 23; spelt/image_ops.h, python/spelt/transformations/map.py):
pipelines of spelt.vision transforms run by the engine's C++ kernels without the GIL give the
outputs of the Python reference (the same transforms run as Python, which is what Grain runs),
equal to the bit wherever the fused decode does not use DCT scaling and within the PSNR bound
where it does; the same for the DataLoader, with worker processes, and after a restore; input
the kernels do not take goes to the reference (PNG, RGBA, errors)."""

from __future__ import annotations

import dataclasses
import io
import threading

import numpy as np
import pytest
import spelt
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from pipelines import assert_same
from spelt import vision
from test_vision import (
    CHINA,
    FLOWER,
    PNG_VARIANTS,
    RGB,
    SMALL,
    UPRIGHT,
    VARIANTS,
    WIDE16,
    encode,
    exif_jpeg,
    pil_decode,
    records,
)


def python_twins(transforms):
    """The same transforms as subclasses, which the engine runs as Python (the reference)."""
    return [
        dataclasses.make_dataclass("Py" + type(t).__name__, [], bases=(type(t),))(
            **{f.name: getattr(t, f.name) for f in dataclasses.fields(t)}
        )
        for t in transforms
    ]


def apply_ops(ds, transforms, seed=7):
    for t in transforms:
        ds = ds.random_map(t, seed=seed) if isinstance(t, spelt.transforms.RandomMap) else ds.map(t)
        seed += 1
    return ds


def photos(n=16):
    """JPEGs (quality 90) of several sizes cut from the photographs, 4:2:0 and 4:4:4."""
    out = []
    for i in range(n):
        photo = RGB if i % 2 else pil_decode(FLOWER)
        h, w = 180 + 13 * i, 260 - 5 * i
        piece = photo[3 * i : 3 * i + h, 7 * i : 7 * i + w]
        out.append(encode(piece, "JPEG", quality=90, subsampling=i % 3))
    return out


def assert_close(native, python):
    """Equal structure and dtypes, pixels within 1 level: the issue's bound for resizing. Pillow
    (13) does its vertical pass first for some shapes (e.g. a width enlarged while the height
    shrinks), where the kernel's horizontal-first order rounds its intermediate differently
    (docs/vision.md); a float32 output is compared in levels of its std (IMAGENET_STD's least)."""
    assert len(native) == len(python)
    for a, b in zip(native, python, strict=True):
        a, b = (a["image"], b["image"]) if isinstance(a, dict) else (a, b)
        assert a.dtype == b.dtype and a.shape == b.shape
        level = 1.0 if a.dtype == np.uint8 else 1 / 255 / min(vision.IMAGENET_STD) + 1e-6
        assert np.abs(a.astype(np.float64) - b.astype(np.float64)).max() <= level


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return np.inf if mse == 0 else 10 * np.log10(255.0**2 / mse)


def array_record_source(tmp_path, data):
    path = tmp_path / "images.array_record"
    with spelt.experimental.ArrayRecordWriter(path, "group_size:1") as writer:
        for record in data:
            writer.write(record)
    return spelt.sources.ArrayRecordDataSource(str(path))


def test_vision_maps_run_natively_on_the_read_threads(tmp_path):
    """Over a native source the ops call no Python (they run concurrently); the Python twins do."""
    data = photos(6)
    source = spelt.MapDataset.source(array_record_source(tmp_path, data))
    ds = source.map(vision.DecodeImage())
    crop = ds.random_map(vision.RandomResizedCrop(96), seed=1)
    assert not ds.engine_node.calls_python() and not crop.engine_node.calls_python()
    python = source.map(python_twins([vision.DecodeImage()])[0])
    assert python.engine_node.calls_python()
    read = crop.to_iter_dataset(spelt.ReadOptions(num_threads=2))
    want = spelt.MapDataset.source(data).map(vision.DecodeImage())
    assert_same(list(read), list(want.random_map(vision.RandomResizedCrop(96), seed=1)))
    twin = python_twins([vision.RandomResizedCrop(96)])[0]
    assert_close(list(read), list(want.random_map(twin, seed=1)))


@pytest.mark.parametrize(
    "recipe",
    [
        lambda: vision.train_transforms(160),
        lambda: vision.eval_transforms(160, 180),
        lambda: [vision.DecodeImage(), vision.Resize((97, 131)), vision.CenterCrop((300, 20))],
        lambda: [vision.DecodeImage(), vision.Normalize(0.5, 0.25, layout="CHW")],
    ],
    ids=["train", "eval", "resize-exact-pad", "normalize-chw"],
)
def test_native_pipelines_equal_the_reference(recipe, request):
    recipe_id = request.node.callspec.id
    data = photos()
    native = list(apply_ops(spelt.MapDataset.source(data), recipe()))
    python = list(apply_ops(spelt.MapDataset.source(data), python_twins(recipe())))
    assert_close(native, python)
    if recipe_id == "normalize-chw":  # no resampling: equal to the bit
        assert_same(native, python)


def test_dct_scaled_crops_stay_within_the_psnr_bound():
    """Outputs small enough for DCT scaling (crop >= 3x the output) differ slightly."""
    data = [CHINA, FLOWER] * 20
    recipe = [vision.DecodeImage(), vision.RandomResizedCrop(48, scale=(0.5, 1.0))]
    native = list(apply_ops(spelt.MapDataset.source(data), recipe))
    python = list(apply_ops(spelt.MapDataset.source(data), python_twins(recipe)))
    values = [psnr(a, b) for a, b in zip(native, python, strict=True)]
    assert min(values) >= 38.0, values
    assert any(v < np.inf for v in values)  # the scaled path ran


def test_native_pipeline_on_a_field_keeps_the_other_keys():
    recs = records()
    recipe = vision.train_transforms(24, field="image")
    native = list(apply_ops(spelt.MapDataset.source(recs).seed(3).shuffle(), recipe))
    python = list(apply_ops(spelt.MapDataset.source(recs).seed(3).shuffle(), python_twins(recipe)))
    assert_close(native, python)
    assert sorted(native[0]) == ["image", "label"]


def test_iter_dataset_native_maps_restore_from_a_checkpoint():
    recipe = vision.train_transforms(96)  # crops below 3x the output: no DCT scaling
    ds = apply_ops(spelt.MapDataset.source(photos(8)).to_iter_dataset(), recipe)
    want = list(ds)
    python = apply_ops(spelt.MapDataset.source(photos(8)).to_iter_dataset(), python_twins(recipe))
    assert_close(want, list(python))
    it = iter(ds)
    for _ in range(3):
        next(it)
    state = it.get_state()
    resumed = iter(ds)
    resumed.set_state(state)
    assert_same(list(resumed), want[3:])


@pytest.mark.parametrize(
    "recipe",
    [
        lambda: [vision.DecodeImage(), vision.RandomResizedCrop(40), vision.RandomHorizontalFlip()],
        lambda: vision.eval_transforms(40, 48),
        lambda: [vision.DecodeImage(), vision.CenterCrop(300)],
        lambda: [vision.DecodeImage(), vision.RandomResizedCrop(40), vision.Normalize(0.5, 0.2)],
    ],
    ids=["train-flip-node", "eval", "center-crop-pad", "normalize"],
)
def test_batches_written_into_their_slots_equal_the_stacked_elements(recipe):
    """The image maps write a MapDataset batch's elements into its buffer (MapInto, a flip node
    in place): the batches of every face equal np.stack of the unbatched elements."""
    data = photos(12)
    ds = apply_ops(spelt.MapDataset.source(data).seed(5).shuffle(), recipe())
    elements = [ds[i] for i in range(12)]
    want = [np.stack(elements[i : i + 5]) for i in range(0, 12, 5)]
    assert_same(list(ds.batch(5)), want)
    assert_same(list(ds.to_iter_dataset(spelt.ReadOptions(num_threads=2)).batch(5)), want)
    ragged = apply_ops(spelt.MapDataset.source(data), [vision.DecodeImage()])
    with pytest.raises(ValueError):
        ragged.batch(2)[0]  # images of different sizes do not stack, with or without slots
    ops = recipe()

    def data_loader(extra):
        return spelt.DataLoader(
            data_source=data,
            sampler=spelt.samplers.IndexSampler(12, shuffle=True, seed=2, num_epochs=1),
            operations=[*ops, *extra],
        )

    unbatched = list(data_loader([]))
    assert_same(
        list(data_loader([spelt.transforms.Batch(5)])),
        [np.stack(unbatched[i : i + 5]) for i in range(0, 12, 5)],
    )


def loader(recipe, worker_count=0, num_threads=2):
    return spelt.DataLoader(
        data_source=records(),
        sampler=spelt.samplers.IndexSampler(12, shuffle=True, seed=9, num_epochs=2),
        operations=[*recipe, spelt.transforms.Batch(4)],
        worker_count=worker_count,
        read_options=spelt.ReadOptions(num_threads=num_threads),
    )


def test_data_loader_runs_the_record_ops_natively_as_the_reference():
    recipe = vision.train_transforms(24, field="image")
    native = list(loader(recipe))
    assert_close(native, list(loader(python_twins(recipe))))
    assert_same(list(loader(recipe, num_threads=0)), native)
    it = iter(loader(recipe))
    next(it)
    state = it.get_state()
    resumed = iter(loader(recipe))
    resumed.set_state(state)
    assert_same(list(resumed), native[1:])
    assert_same(list(loader(recipe, worker_count=2)), native)


def test_non_jpeg_and_four_channel_input_go_to_the_reference():
    rgba = np.dstack([SMALL, np.arange(SMALL.size // 3, dtype=np.uint8).reshape(SMALL.shape[:2])])
    data = [encode(SMALL, "PNG"), encode(rgba, "PNG"), encode(SMALL, "WEBP", lossless=True)]
    recipe = [vision.DecodeImage(), vision.RandomResizedCrop(40)]
    assert_close(
        list(apply_ops(spelt.MapDataset.source(data), recipe)),
        list(apply_ops(spelt.MapDataset.source(data), python_twins(recipe))),
    )
    images = [rgba, SMALL[:, :, :1]]
    recipe = [vision.Resize(50), vision.RandomResizedCrop(30), vision.RandomHorizontalFlip()]
    assert_close(
        list(apply_ops(spelt.MapDataset.source(images), recipe)),
        list(apply_ops(spelt.MapDataset.source(images), python_twins(recipe))),
    )


@pytest.mark.parametrize(
    "element, transform, error, fragment",
    [
        (np.zeros((4, 4, 3), np.float32), vision.Resize(2), TypeError, "Resize: expected a uint8"),
        (
            np.zeros((4, 4), np.uint8),
            vision.CenterCrop(2),
            ValueError,
            "CenterCrop: expected shape",
        ),
        (np.zeros((4, 4, 3), np.float32), vision.RandomHorizontalFlip(), TypeError, "uint8"),
        (np.zeros((4, 4, 2), np.uint8), vision.RandomResizedCrop(2), ValueError, "expected shape"),
        (SMALL, vision.Normalize((0.5, 0.5), (0.5, 0.5)), ValueError, "has 3 channels"),
        (12, vision.DecodeImage(), TypeError, "expected encoded image bytes, got int"),
        (CHINA[:200], vision.DecodeImage(), ValueError, "truncated or corrupt JPEG header"),
        (CHINA[:30000], vision.DecodeImage(), ValueError, "truncated or corrupt JPEG data"),
    ],
)
def test_bad_input_raises_the_references_error(element, transform, error, fragment):
    ds = apply_ops(spelt.MapDataset.source([element]), [transform])
    with pytest.raises(error) as info:
        list(ds)
    assert fragment in str(info.value)


def test_a_truncated_jpeg_fails_in_the_fused_crop_as_in_the_reference():
    recipe = [vision.DecodeImage(), vision.RandomResizedCrop(64, scale=(0.9, 1.0))]
    ds = apply_ops(spelt.MapDataset.source([CHINA[: len(CHINA) // 2]]), recipe)
    with pytest.raises(ValueError, match="truncated or corrupt JPEG data"):
        list(ds)


def test_native_ops_behind_a_python_source_run_on_the_read_threads():
    """A Python source makes the pipeline call Python (computed on the consumer), but the image ops'
    time counts as parallel work (spelt/parallel_work.h), so read threads start and the
    source's reads come from them too (each with the GIL)."""
    data, threads = photos(24) * 8, set()  # enough chunks left once read threads start

    class Source:
        def __len__(self):
            return len(data)

        def __getitem__(self, i):
            threads.add(threading.get_ident())
            return data[i]

    ds = spelt.MapDataset.source(Source()).map(vision.DecodeImage())
    ds = ds.random_map(vision.RandomResizedCrop(96), seed=2)
    got = list(ds.to_iter_dataset(spelt.ReadOptions(num_threads=2)))
    assert_same(
        got,
        list(
            apply_ops(spelt.MapDataset.source(data), [vision.DecodeImage()]).random_map(
                vision.RandomResizedCrop(96), seed=2
            )
        ),
    )
    assert threads - {threading.get_ident()}, "no read thread ran the pipeline"


def nearest_cases():
    """(image, Resize) pairs: shapes up, down and mixed, 1, 3 and 4 channels (RGBA is not
    premultiplied for NEAREST), both size modes, and ratios whose accumulated source position
    rounds differently from (x + 0.5) * in / out."""
    rng = np.random.default_rng(5)
    cases = []
    for (h, w, c), size in [
        ((29, 41, 3), (7, 10)),
        ((29, 41, 3), (60, 17)),
        ((3, 10, 1), (7, 3)),
        ((13, 7, 4), (50, 49)),
        ((1, 1, 3), (5, 3)),
        ((2, 2, 3), (7, 7)),
        ((100, 49, 3), (300, 147)),
        ((96, 128, 3), 37),
        ((41, 29, 1), 101),
    ]:
        image = rng.integers(0, 256, (h, w, c), dtype=np.uint8)
        cases.append((image, vision.Resize(size, interpolation="nearest")))
    return cases


def test_nearest_resize_equals_pillow_to_the_bit():
    for image, resize in nearest_cases():
        native = list(spelt.MapDataset.source([image]).map(resize))
        assert resize._spelt_image_op() is not None
        assert_same(native, [resize._resize(image)])  # the reference: Pillow's NEAREST


@settings(max_examples=150, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 90), st.integers(1, 90), st.sampled_from([1, 3])),
    size=st.tuples(st.integers(1, 120), st.integers(1, 120)),
    seed=st.integers(0, 2**32 - 1),
)
def test_bilinear_resize_is_within_one_level_of_pillow(shape, size, seed):
    """The native bilinear resize (vectorised passes where the CPU has AVX2, with the last
    pixels of each row made one by one) is within 1 level of Pillow's for any shape, up and
    down: Pillow 13 runs its vertical pass first for some shapes, and each pass rounds."""
    image = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
    resize = vision.Resize(size)
    assert resize._spelt_image_op() is not None
    (native,) = spelt.MapDataset.source([image]).map(resize)
    reference = resize._resize(image)
    assert native.shape == reference.shape
    assert np.abs(native.astype(int) - reference).max() <= 1


def test_nearest_resize_and_crop_of_jpegs_equal_the_reference_to_the_bit():
    """A nearest Resize or RandomResizedCrop after a DecodeImage decodes the whole JPEG (no fused
    path) and equals the reference's pixels exactly."""
    for recipe in (
        [vision.DecodeImage(), vision.Resize(77, interpolation="nearest")],
        [vision.DecodeImage(), vision.Resize((50, 300), interpolation="nearest")],
        [vision.DecodeImage(), vision.RandomResizedCrop(40, interpolation="nearest")],
    ):
        native = list(apply_ops(spelt.MapDataset.source(photos(6)), recipe))
        python = list(apply_ops(spelt.MapDataset.source(photos(6)), python_twins(recipe)))
        assert_same(native, python)


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
def test_bfloat16_normalize_equals_the_reference_and_batches(layout):
    """The native bfloat16 output is ml_dtypes' rounding of the float32 result, to the bit, in
    both layouts; it batches natively and survives a restore."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    recipe = [  # no resampling, so the float32 values are the reference's to the bit
        vision.DecodeImage(),
        vision.CenterCrop(32),
        vision.RandomHorizontalFlip(),
        vision.Normalize(vision.IMAGENET_MEAN, vision.IMAGENET_STD, "bfloat16", layout),
    ]
    native = list(apply_ops(spelt.MapDataset.source(photos(8)), recipe))
    python = list(apply_ops(spelt.MapDataset.source(photos(8)), python_twins(recipe)))
    assert native[0].dtype == ml_dtypes.bfloat16
    assert native[0].shape == ((32, 32, 3) if layout == "HWC" else (3, 32, 32))
    assert_same([a.view(np.uint16) for a in native], [b.view(np.uint16) for b in python])
    batched = apply_ops(spelt.MapDataset.source(photos(8)), recipe).batch(4)
    batches = list(batched)
    assert batches[0].dtype == ml_dtypes.bfloat16 and batches[0].shape[0] == 4
    assert_same(
        [b.view(np.uint16) for b in batches],
        [np.stack(python[i : i + 4]).view(np.uint16) for i in (0, 4)],
    )
    it = iter(batched.to_iter_dataset())
    next(it)
    resumed = iter(batched.to_iter_dataset())
    resumed.set_state(it.get_state())
    assert_same([b.view(np.uint16) for b in resumed], [batches[1].view(np.uint16)])


def test_bfloat16_rounds_to_nearest_even_as_ml_dtypes():
    """Every uint8 level through a Normalize whose quotients land near bfloat16 ties."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    image = np.arange(256, dtype=np.uint8).reshape(16, 16, 1)
    for mean, std in [(0.0, 1.0), (0.5, 0.5), (0.485, 0.229), (1.0, 0.003)]:
        op = vision.Normalize(mean, std, dtype="bfloat16")
        (native,) = list(spelt.MapDataset.source([image]).map(op))
        float32 = vision.Normalize(mean, std)._normalize(image)
        assert native.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(
            native.view(np.uint16), float32.astype(ml_dtypes.bfloat16).view(np.uint16)
        )


# ---------------------------------------------------------------------------------------------
# PNG, WebP and EXIF orientation natively (libpng, libwebp, spelt/vision.h)


def refuse(self, data):
    raise AssertionError("the reference decoder was called: the native decode refused the bytes")


NATIVE_DECODES = {
    **{f"png_{name}": make for name, make in PNG_VARIANTS.items()},
    "png_rgb": lambda: encode(SMALL, "PNG"),
    "png_rgba": lambda: encode(np.dstack([SMALL, SMALL[:, :, :1]]), "PNG"),
    "png_palette": lambda: encode(Image.fromarray(SMALL).quantize(64), "PNG"),
    "png_gray16": lambda: encode(WIDE16[:, :, 0], "PNG"),
    "png_1x1": lambda: encode(SMALL[:1, :1], "PNG"),
    "webp_lossy": lambda: encode(RGB, "WEBP", quality=90),
    "webp_lossless": lambda: encode(RGB, "WEBP", lossless=True),
    "webp_lossy_alpha": lambda: encode(np.dstack([SMALL, SMALL[:, :, :1]]), "WEBP", quality=80),
    "webp_lossless_alpha": lambda: encode(
        np.dstack([SMALL, SMALL[:, :, 1:2]]), "WEBP", lossless=True
    ),
    "webp_1x1": lambda: encode(SMALL[:1, :1], "WEBP"),
    "jpeg_gray": VARIANTS["gray_jpeg"],
    "jpeg_cmyk": VARIANTS["cmyk_jpeg"],
    "jpeg_progressive": VARIANTS["progressive_jpeg"],
    "jpeg_1x1": VARIANTS["1x1_jpeg"],
}


@pytest.mark.parametrize("name", NATIVE_DECODES)
def test_png_webp_and_jpeg_variants_decode_natively_as_the_reference(name, monkeypatch):
    """Each variant is decoded by the native decoder alone (the reference decoder, the
    fallback, is made to fail) and equals the reference: Pillow's decode, 16-bit gray kept at
    its high byte. A RandomResizedCrop after it (fused for JPEGs, crops below 3x the output so
    without DCT scaling) draws the same crop."""
    data = NATIVE_DECODES[name]()
    recipe = [vision.DecodeImage(), vision.RandomResizedCrop(160, scale=(0.5, 1.0))]
    want = list(apply_ops(spelt.MapDataset.source([data]), python_twins(recipe[:1])))
    want_crop = list(apply_ops(spelt.MapDataset.source([data]), python_twins(recipe)))
    monkeypatch.setattr(vision.DecodeImage, "decode", refuse)
    assert_same(list(spelt.MapDataset.source([data]).map(vision.DecodeImage())), want)
    assert_close(list(apply_ops(spelt.MapDataset.source([data]), recipe)), want_crop)


def test_animated_webp_goes_to_the_reference():
    frames = [Image.fromarray(SMALL), Image.fromarray(SMALL[::-1].copy())]
    buf = io.BytesIO()
    frames[0].save(buf, "WEBP", save_all=True, append_images=frames[1:], lossless=True)
    data = buf.getvalue()
    native = list(spelt.MapDataset.source([data]).map(vision.DecodeImage()))
    assert_same(native, [pil_decode(data)])
    np.testing.assert_array_equal(native[0], SMALL)  # the first frame


@pytest.mark.parametrize("orientation", UPRIGHT)
def test_exif_orientation_natively_as_the_reference(orientation, monkeypatch):
    """All 8 orientations, in EXIF of both byte orders and in XMP, decoded natively; a
    RandomResizedCrop or a Resize after the decode takes its crop from the upright image (the
    fused path is not used when the orientation is not 1), in the Dataset API and the
    DataLoader."""
    data = [exif_jpeg(orientation, big_endian=big) for big in (False, True)]
    data.append(exif_jpeg(orientation, xmp=True))
    decode = vision.DecodeImage(exif_orientation=True)
    recipes = [
        [decode],
        [decode, vision.RandomResizedCrop(40, scale=(0.3, 1.0))],
        [decode, vision.Resize((50, 30))],
    ]
    want = [list(apply_ops(spelt.MapDataset.source(data), python_twins(r))) for r in recipes]
    upright = UPRIGHT[orientation](SMALL)
    np.testing.assert_array_equal(want[0][0], want[0][1])
    assert np.abs(want[0][0].astype(int) - upright).mean() < 8  # the photograph, upright
    monkeypatch.setattr(vision.DecodeImage, "decode", refuse)
    for recipe, expected in zip(recipes, want, strict=True):
        assert_same(list(apply_ops(spelt.MapDataset.source(data), recipe)), expected)
    monkeypatch.undo()

    def loader(source, operations):
        return spelt.DataLoader(
            data_source=source,
            sampler=spelt.samplers.IndexSampler(3, shuffle=False, seed=3, num_epochs=1),
            operations=operations,
        )

    crop = [vision.RandomResizedCrop(40, scale=(0.3, 1.0))]
    want_loader = list(loader([decode.map(d) for d in data], python_twins(crop)))
    monkeypatch.setattr(vision.DecodeImage, "decode", refuse)
    assert_same(list(loader(data, [decode, *crop])), want_loader)


def test_a_large_jpeg_is_cropped_without_decoding_all_of_it():
    """An 8000 x 6000 JPEG: small RandomResizedCrops decode fused, equal to the reference's
    (full decode, crop, resize). With the file cut at half its bytes, the crops that lie in the
    rows before the cut still come out, equal, because the fused path never reads the rest;
    those below it fail as the reference does (which fails on all: it decodes the whole)."""
    big = np.tile(RGB, (15, 13, 1))[:6000, :8000]
    data = encode(big, "JPEG", quality=75)
    recipe = [vision.DecodeImage(), vision.RandomResizedCrop(64, scale=(1e-4, 1e-4))]
    want = list(apply_ops(spelt.MapDataset.source([data] * 8), python_twins(recipe)))
    assert_close(list(apply_ops(spelt.MapDataset.source([data] * 8), recipe)), want)
    cut = apply_ops(spelt.MapDataset.source([data[: len(data) // 2]] * 8), recipe)
    outcomes = []
    for i in range(8):
        try:
            out = cut[i]
        except ValueError as e:
            assert "truncated or corrupt JPEG data" in str(e)
            outcomes.append("failed")
        else:
            assert_close([out], [want[i]])
            outcomes.append("equal")
    assert set(outcomes) == {"failed", "equal"}, outcomes


# ---------------------------------------------------------------------------------------------
# Corrupt records: errors that name them


def notes_of(info) -> str:
    return " ".join(getattr(info.value, "__notes__", []))


@pytest.mark.parametrize("worker_count", [0, 2])
def test_a_corrupt_image_in_a_data_loader_names_its_record(worker_count):
    data = photos(6)
    data[4] = data[4][: len(data[4]) // 3]  # truncated in its scan data
    sampler = spelt.samplers.IndexSampler(6, shuffle=True, seed=5, num_epochs=1)
    loader = spelt.DataLoader(
        data_source=data,
        sampler=sampler,
        operations=[*vision.train_transforms(32), spelt.transforms.Batch(2)],
        worker_count=worker_count,
    )
    position = next(i for i in range(6) if sampler[i].record_key == 4)
    with pytest.raises(ValueError, match="truncated or corrupt JPEG data") as info:
        list(loader)
    assert (
        "spelt: raised by the image ops DecodeImage, RandomResizedCrop, RandomHorizontalFlip, "
        f"Normalize on record 4 of the data source (the sampler's index {position})"
    ) in notes_of(info)


@pytest.mark.parametrize("iter_dataset", [False, True], ids=["map_dataset", "iter_dataset"])
def test_a_corrupt_image_in_a_dataset_names_its_element(iter_dataset):
    data = photos(5)
    data[3] = b"not an image at all"
    ds = spelt.MapDataset.source(data)
    if iter_dataset:
        ds = ds.to_iter_dataset()
    decoded = ds.map(vision.DecodeImage())
    kind = "IterDataset" if iter_dataset else "MapDataset"
    with pytest.raises(ValueError, match="are not a JPEG, PNG or WebP image") as info:
        list(decoded)
    # A MapDataset's plain map names the index; an IterDataset's names none (an index there
    # would be a counter in its state, which Grain's MapIterDataset does not have).
    where = (
        "an element of the IterDataset" if iter_dataset else "element 3 of the MapDataset it maps"
    )
    assert f"spelt: raised by the image ops DecodeImage on {where}" in notes_of(info)
    assert str(decoded).startswith("MapMapDataset(" if not iter_dataset else "MapIterDataset(")
    # A JPEG is decoded by the crop after the decode (fused), whose chain raises.
    data[3] = CHINA[:200]
    ds = spelt.MapDataset.source(data)
    ds = ds.to_iter_dataset() if iter_dataset else ds
    cropped = ds.map(vision.DecodeImage()).random_map(vision.RandomResizedCrop(16), seed=1)
    with pytest.raises(ValueError, match="truncated or corrupt JPEG header") as info:
        list(cropped)
    assert f"RandomResizedCrop on element 3 of the {kind} it maps" in notes_of(info)


# ---------------------------------------------------------------------------------------------
# Corrupt records: DecodeImage(on_error="skip")

CORRUPT = {1: CHINA[: len(CHINA) // 3], 4: b"GIF89a" + bytes(40)}  # record -> bad bytes


def with_corrupt_records(n=7):
    data = photos(n)
    for i, bad in CORRUPT.items():
        data[i] = bad
    return data


def test_skipped_images_are_filtered_elements_of_a_map_dataset():
    data = with_corrupt_records()
    recipe = [vision.DecodeImage(on_error="skip"), vision.RandomResizedCrop(160)]
    native = apply_ops(spelt.MapDataset.source(data), recipe)
    python = apply_ops(spelt.MapDataset.source(data), python_twins(recipe))
    assert len(native) == len(data)
    for i in CORRUPT:
        assert native[i] is None and python[i] is None
    got = list(native)
    assert len(got) == len(data) - len(CORRUPT)
    assert_close(got, list(python))
    with pytest.raises(ValueError, match="truncated or corrupt JPEG data"):
        list(apply_ops(spelt.MapDataset.source(data), [vision.DecodeImage(), recipe[1]]))


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_data_loader_skips_corrupt_images_and_the_summary_shows_them(native):
    data = with_corrupt_records(9)
    recipe = [vision.DecodeImage(on_error="skip"), vision.RandomResizedCrop(32)]
    loader = spelt.DataLoader(
        data_source=data,
        sampler=spelt.samplers.IndexSampler(9, shuffle=True, seed=2, num_epochs=1),
        operations=[*(recipe if native else python_twins(recipe)), spelt.transforms.Batch(7)],
        enable_profiling=True,
    )
    it = iter(loader)
    batches = list(it)
    assert [len(b) for b in batches] == [7]  # 9 records, 2 skipped: one full batch
    clean = [d for i, d in enumerate(data) if i not in CORRUPT]
    assert not any(np.array_equal(b, c) for b in batches[0] for c in clean)  # decoded, cropped
    stages = spelt.experimental.get_execution_summary(it).to_dict()["stages"]
    produced = {s["name"]: s["elements"] for s in stages}
    assert any(n == 7 for n in produced.values()) and any(n == 9 for n in produced.values())
    # The record ops' stage counts the 2 skipped images in its own column.
    assert [s["filtered"] for s in stages if s["filtered"]] == [2]
