"""Vision input pipelines (issue 23, V1-V3 and peak memory): Spelt's native image ops against
the same transforms run as Python (Pillow + numpy) by Grain and by Spelt with worker processes,
and against a full libjpeg-turbo decode (simplejpeg, requirements-bench.txt).

``python bench/bench_vision.py [--images 384] [--repeats 3] [--threads 2] [-k V2]``. The records are
~500x375 JPEGs (quality 90) cut and resized from scikit-learn's two photographs, with varied
crops, in one ArrayRecord file (group_size 1) that every loader reads. Cases (batches of 64,
a shuffled IndexSampler, one epoch):

- V1 train: DecodeImage, RandomResizedCrop(224), RandomHorizontalFlip; V3 eval: DecodeImage,
  Resize(256), CenterCrop(224), Normalize (ImageNet statistics, float32).
- ``spelt-native``: ``spelt.DataLoader`` with those transforms, 0 worker processes and
  ``ReadOptions(num_threads=T)``: the engine runs the C++ kernels on T threads.
- ``spelt-dataset``: the same on the Dataset API (``MapDataset.source(...).shuffle().map(...)
  .random_map(...).to_iter_dataset(ReadOptions(num_threads=T)).batch(64)``).
- ``spelt-python-2w`` / ``grain-python-2w``: the transforms as Python (subclasses, which
  Spelt's engine does not run natively; Grain always runs them as Python) with 2 worker
  processes.
- ``pil-1core``: the Python reference alone in a plain loop on one core (no loader): the rate
  one core gives that Python, the bound of any loader running it per core.

- V2, per core: images per CPU second (``time.process_time``, all threads of the process) of
  the train recipe natively (Dataset API, 1 and 2 read threads) against simplejpeg's
  ``decode_jpeg`` of the same files in a loop on one thread, with libjpeg-turbo's accurate IDCT
  and fancy upsampling (the settings of the native decode; also with its fast ones). The fused
  decode reads only the crop, so it must beat decoding the whole image (goal >= 1.3x). Each
  native case twice: 3 epochs of new iterators, every image counted with all the CPU time
  (start-up included), and ``-steady``: one iterator over 3 epochs from its second batch. CPU
  time, unlike wall time, is not inflated by other processes on the cores. With it, the bound:
  bench/jpeg_crop_bound.cc (``make cpp``) times libjpeg-turbo decoding only each crop box
  (no resize), its full decode, and Spelt's fused kernels in a plain loop, on the same files.
- memory: the V1 train pipeline over one epoch in a new process: ``spelt-native`` (2 threads)
  against ``grain-python-2w`` (its 2 worker processes included); the peak over the run of the
  summed RSS, and of the summed PSS (shared pages divided between the processes), of the
  process and its descendants, sampled every 20 ms (proc_stats.tree_memory).

Rates are images/s from the second batch to the end (start-up, reported apart: the time to the
first batch); the loaders alternate within each repeat; medians of the repeats, with the
ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.resources
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time

import grain
import numpy as np
from PIL import Image

import proc_stats
import spelt
from spelt import vision

BATCH = 64


def make_records(count: int) -> list[bytes]:
    """~500x375 JPEGs (quality 90) of varied crops of scikit-learn's photographs."""
    photos = []
    for name in ("china.jpg", "flower.jpg"):
        data = (importlib.resources.files("sklearn.datasets") / "images" / name).read_bytes()
        photos.append(Image.open(io.BytesIO(data)).convert("RGB"))
    rng = np.random.default_rng(0)
    out = []
    for i in range(count):
        photo = photos[i % 2]
        w, h = photo.size
        cw, ch = int(rng.integers(w // 2, w)), int(rng.integers(h // 2, h))
        x, y = int(rng.integers(0, w - cw)), int(rng.integers(0, h - ch))
        size = (500, 375) if i % 3 else (375, 500)
        image = photo.crop((x, y, x + cw, y + ch)).resize(size, Image.BILINEAR)
        if i % 4 == 0:
            image = image.transpose(Image.FLIP_LEFT_RIGHT)
        buf = io.BytesIO()
        image.save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


# The transforms as subclasses: the same Python reference, which the engine never runs natively.
class PyDecodeImage(vision.DecodeImage):
    pass


class PyRandomResizedCrop(vision.RandomResizedCrop):
    pass


class PyRandomHorizontalFlip(vision.RandomHorizontalFlip):
    pass


class PyResize(vision.Resize):
    pass


class PyCenterCrop(vision.CenterCrop):
    pass


class PyNormalize(vision.Normalize):
    pass


def python_twins(transforms):
    twins = {
        c.__mro__[1]: c
        for c in (
            PyDecodeImage,
            PyRandomResizedCrop,
            PyRandomHorizontalFlip,
            PyResize,
            PyCenterCrop,
            PyNormalize,
        )
    }
    return [
        twins[type(t)](**{f.name: getattr(t, f.name) for f in dataclasses.fields(t)})
        for t in transforms
    ]


RECIPES = {
    "train": lambda: [
        vision.DecodeImage(),
        vision.RandomResizedCrop(224),
        vision.RandomHorizontalFlip(),
    ],
    "eval": lambda: vision.eval_transforms(224, 256),
}


def spelt_loader(path, n, ops, workers, threads):
    return spelt.DataLoader(
        data_source=spelt.sources.ArrayRecordDataSource(path),
        sampler=spelt.samplers.IndexSampler(n, shuffle=True, seed=1, num_epochs=1),
        operations=[*ops, spelt.transforms.Batch(BATCH, drop_remainder=True)],
        worker_count=workers,
        read_options=spelt.ReadOptions(num_threads=threads),
    )


def spelt_dataset(path, ops, threads, epochs=1):
    ds = spelt.MapDataset.source(spelt.sources.ArrayRecordDataSource(path)).seed(1).shuffle()
    if epochs > 1:
        ds = ds.repeat(epochs)
    for t in ops:
        ds = ds.random_map(t) if isinstance(t, spelt.transforms.RandomMap) else ds.map(t)
    ds = ds.to_iter_dataset(spelt.ReadOptions(num_threads=threads))
    return ds.batch(BATCH, drop_remainder=True)


class GrainMap(grain.transforms.Map):
    """A spelt.vision Map as a Grain one (Grain checks its own base classes)."""

    def __init__(self, transform):
        self.transform = transform

    def map(self, element):
        return self.transform.map(element)


class GrainRandomMap(grain.transforms.RandomMap):
    def __init__(self, transform):
        self.transform = transform

    def random_map(self, element, rng):
        return self.transform.random_map(element, rng)


def grain_loader(path, n, ops, workers):
    ops = [
        GrainRandomMap(t) if isinstance(t, spelt.transforms.RandomMap) else GrainMap(t) for t in ops
    ]
    return grain.DataLoader(
        data_source=grain.sources.ArrayRecordDataSource(path),
        sampler=grain.samplers.IndexSampler(
            n, grain.sharding.NoSharding(), shuffle=True, seed=1, num_epochs=1
        ),
        operations=[*ops, grain.transforms.Batch(BATCH, drop_remainder=True)],
        worker_count=workers,
    )


def timed(iterable) -> tuple[float, float, int]:
    """(seconds to the first batch, images/s after it, images after it)."""
    start = time.perf_counter()
    it = iter(iterable)
    next(it)
    first = time.perf_counter()
    count = sum(len(b) for b in it)
    return first - start, count / (time.perf_counter() - first), count


def pil_one_core(records, ops, seconds=3.0) -> float:
    """Images/s of the Python reference alone on this thread."""
    rng = np.random.default_rng(0)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        x = records[count % len(records)]
        for t in ops:
            x = t.random_map(x, rng) if isinstance(t, spelt.transforms.RandomMap) else t.map(x)
        count += 1
    return count / (time.perf_counter() - start)


def loader_cases(path, n, recipe, threads):
    ops = RECIPES[recipe]()
    twins = python_twins(ops)
    return {
        "spelt-native": lambda: spelt_loader(path, n, ops, 0, threads),
        "spelt-dataset": lambda: spelt_dataset(path, ops, threads),
        "spelt-python-2w": lambda: spelt_loader(path, n, twins, 2, threads),
        "grain-python-2w": lambda: grain_loader(path, n, twins, 2),
    }


def bench_recipe(path, records, recipe, label, args):
    """V1 (train) or V3 (eval): the loaders side by side."""
    n = len(records)
    cases = loader_cases(path, n, recipe, args.threads)
    twins = python_twins(RECIPES[recipe]())
    rates = {name: [] for name in cases}
    starts = {name: [] for name in cases}
    ceiling = []
    for _ in range(args.repeats):
        for name, make in cases.items():
            start, rate, _ = timed(make())
            rates[name].append(rate)
            starts[name].append(start)
        ceiling.append(pil_one_core(records, twins))
    grain_rate = statistics.median(rates["grain-python-2w"])
    spelt_python = statistics.median(rates["spelt-python-2w"])
    print(f"\n{label} {recipe}: images/s (median of {args.repeats}; min-max), start-up s")
    for name in cases:
        med = statistics.median(rates[name])
        print(
            f"  {name:16s} {med:8.0f} ({min(rates[name]):.0f}-{max(rates[name]):.0f})"
            f"  start {statistics.median(starts[name]):.2f}"
            f"  x grain {med / grain_rate:5.2f}  x spelt-python {med / spelt_python:5.2f}"
        )
    print(f"  {'pil-1core':16s} {statistics.median(ceiling):8.0f}")


def per_cpu_second(run) -> float:
    """Images per CPU second (this process, all its threads) of ``run()``, which returns the
    number of images it made."""
    cpu = time.process_time()
    count = run()
    return count / (time.process_time() - cpu)


def native_images(path, ops, threads, epochs=3) -> int:
    """Reads ``epochs`` epochs of the native pipeline; all the images (per CPU second, the CPU
    time of every image is counted, so is every image: the start-up's share falls with the
    epochs)."""
    ds = spelt_dataset(path, ops, threads)
    return sum(len(b) for _ in range(epochs) for b in ds)


def steady_per_cpu_second(path, ops, threads, epochs=3) -> float:
    """Images per CPU second from the second batch on: one iterator over ``epochs`` epochs,
    the CPU time of its first batch (start-up) left out."""
    it = iter(spelt_dataset(path, ops, threads, epochs))
    next(it)
    cpu = time.process_time()
    count = sum(len(b) for b in it)
    return count / (time.process_time() - cpu)


def full_decodes(records, fast: bool, seconds=2.0) -> int:
    """Decodes the records in a loop with simplejpeg (whole image, RGB) for ``seconds``."""
    import simplejpeg  # pylint: disable=import-outside-toplevel

    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        simplejpeg.decode_jpeg(
            records[count % len(records)], colorspace="RGB", fastdct=fast, fastupsample=fast
        )
        count += 1
    return count


def bench_v2(path, records, args):
    """V2: the native train recipe against a full libjpeg-turbo decode, per CPU second."""
    ops = RECIPES["train"]()
    cases = {
        "spelt-native-1t": lambda: per_cpu_second(lambda: native_images(path, ops, 1)),
        f"spelt-native-{args.threads}t": lambda: per_cpu_second(
            lambda: native_images(path, ops, args.threads)
        ),
        "spelt-native-1t-steady": lambda: steady_per_cpu_second(path, ops, 1),
        f"spelt-native-{args.threads}t-steady": lambda: steady_per_cpu_second(
            path, ops, args.threads
        ),
        "simplejpeg-decode": lambda: per_cpu_second(lambda: full_decodes(records, fast=False)),
        "simplejpeg-decode-fast": lambda: per_cpu_second(lambda: full_decodes(records, fast=True)),
    }
    rates = {name: [] for name in cases}
    for _ in range(args.repeats):
        for name, run in cases.items():
            rates[name].append(run())
    base = statistics.median(rates["simplejpeg-decode"])
    print(f"\nV2 per core: images per CPU second (median of {args.repeats}; min-max)")
    for name, r in rates.items():
        m = statistics.median(r)
        print(
            f"  {name:26s} {m:8.0f} ({min(r):.0f}-{max(r):.0f})  x simplejpeg-decode {m / base:5.2f}"
        )
    codec_bound(records, args)


def codec_bound(records, args):
    """V2's binding limit: libjpeg-turbo decoding only each crop box, against its full decode and
    Spelt's fused kernels without the engine (bench/jpeg_crop_bound.cc, built by `make cpp`)."""
    program = os.path.join(os.path.dirname(__file__), "..", "build", "cpp", "jpeg_crop_bound")
    if not os.path.exists(program):
        print("  (no build/cpp/jpeg_crop_bound: `make cpp` builds the codec-bound program)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for i, r in enumerate(records):
            with open(os.path.join(tmp, f"{i:05d}.jpg"), "wb") as f:
                f.write(r)
        out = subprocess.run(
            [program, tmp, str(max(3, args.repeats))], check=True, capture_output=True, text=True
        )
    print("V2 bound, one thread without the engine (bench/jpeg_crop_bound.cc): " + out.stdout)


def memory_child(case, path, n, threads):
    """Runs one epoch of the V1 loader `case` in this process (the parent samples it)."""
    timed(loader_cases(path, n, "train", threads)[case]())


def peak_memory(case, path, n, threads) -> tuple[float, float]:
    """(peak summed RSS, peak summed PSS) in MB of a new process running `case`."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--memory-child", case, path, str(n), str(threads)]
    )
    peak_rss = peak_pss = 0
    while child.poll() is None:
        try:
            rss, pss = proc_stats.tree_memory(child.pid)
        except ProcessLookupError:
            break
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(0.02)
    if child.wait() != 0:
        raise RuntimeError(f"the memory case {case} failed")
    return peak_rss / 1e6, peak_pss / 1e6


def bench_memory(path, n, args):
    cases = ("spelt-native", "grain-python-2w")
    rss = {c: [] for c in cases}
    pss = {c: [] for c in cases}
    for _ in range(args.repeats):
        for c in cases:
            r, p = peak_memory(c, path, n, args.threads)
            rss[c].append(r)
            pss[c].append(p)
    print(f"\nmemory: peak of the process tree over one V1 epoch, MB (median of {args.repeats})")
    for c in cases:
        ratio_rss = statistics.median(rss[c]) / statistics.median(rss["grain-python-2w"])
        ratio_pss = statistics.median(pss[c]) / statistics.median(pss["grain-python-2w"])
        print(
            f"  {c:16s} RSS {statistics.median(rss[c]):7.0f} ({min(rss[c]):.0f}-{max(rss[c]):.0f})"
            f" x grain {ratio_rss:4.2f}   PSS {statistics.median(pss[c]):7.0f}"
            f" ({min(pss[c]):.0f}-{max(pss[c]):.0f}) x grain {ratio_pss:4.2f}"
        )


def main(argv=None):
    from absl import flags  # pylint: disable=import-outside-toplevel

    flags.FLAGS.mark_as_parsed()  # Grain's worker processes read its flags
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("-k", default="", help="run only the cases (V1, V2, V3, memory) with this")
    parser.add_argument("--memory-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        case, path, n, threads = args.memory_child
        memory_child(case, path, int(n), int(threads))
        return
    benches = {
        "V1": lambda: bench_recipe(path, records, "train", "V1", args),
        "V2": lambda: bench_v2(path, records, args),
        "V3": lambda: bench_recipe(path, records, "eval", "V3", args),
        "memory": lambda: bench_memory(path, len(records), args),
    }
    chosen = [name for name in benches if args.k in name]
    if not chosen:
        return
    records = make_records(args.images)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "images.array_record")
        with spelt.experimental.ArrayRecordWriter(path, "group_size:1") as writer:
            for r in records:
                writer.write(r)
        print(
            f"vision: {len(records)} JPEGs, mean {np.mean([len(r) for r in records]) / 1e3:.0f} kB,"
            f" cores {os.cpu_count()}, threads {args.threads}"
        )
        for name in chosen:
            benches[name]()


if __name__ == "__main__":
    main()
