"""The demo's training job: a small numpy MLP on the digits, fed by a spelt.DataLoader.

    demo_train.py RUN_DIR [--checkpoint-at STEP]

Trains from scratch, or from RUN_DIR/checkpoint.npz when it exists (weights, step and the
loader's ``get_state()`` bytes). With --checkpoint-at it writes that checkpoint atomically
after STEP steps and carries on. It logs a sha256 of every batch to
RUN_DIR/batches_from_step_<first step>.log and writes RUN_DIR/final_weights.npz at the end.
demo.py runs it as a subprocess; everything here is deterministic.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

import numpy as np

import spelt as grain

import demo_data
from checkpoint import load_checkpoint, save_checkpoint

SEED = 42
NUM_EPOCHS = 20
BATCH_SIZE = 32
HIDDEN_UNITS = 64
LEARNING_RATE = 0.3
MIN_INKED_PIXELS = 25
SHIFT_PROBABILITY = 0.3
NOISE_STDDEV = 0.05
NUM_PROGRESS_LINES = 10


# The input pipeline.
class DropFaintScans(grain.transforms.Filter):
    """Keeps a record only if at least MIN_INKED_PIXELS of its 64 pixels are inked."""

    def filter(self, record):
        return np.count_nonzero(record["image"]) >= MIN_INKED_PIXELS


class ShiftAndNoise(grain.transforms.RandomMap):
    """Sometimes shifts the image by up to one pixel each way; scales it to [0, 1]; adds noise."""

    def random_map(self, record, rng):
        image = record["image"].astype(np.float32) / 16
        if rng.random() < SHIFT_PROBABILITY:
            dy, dx = rng.integers(-1, 2, size=2)
            image = np.pad(image, 1)[1 + dy : 9 + dy, 1 + dx : 9 + dx]
        noise = rng.normal(0, NOISE_STDDEV, (8, 8)).astype(np.float32)
        return {"image": image + noise, "label": record["label"]}


def make_loader(source) -> grain.DataLoader:
    """Global shuffle over NUM_EPOCHS epochs, filter, augmentation, batches of BATCH_SIZE."""
    sampler = grain.samplers.IndexSampler(
        num_records=len(source), shuffle=True, seed=SEED, num_epochs=NUM_EPOCHS
    )
    return grain.DataLoader(
        data_source=source,
        sampler=sampler,
        operations=[
            demo_data.ParseDigit(),
            DropFaintScans(),
            ShiftAndNoise(),
            grain.transforms.Batch(batch_size=BATCH_SIZE, drop_remainder=True),
        ],
    )


def count_kept(source) -> int:
    """Records of one epoch that DropFaintScans keeps."""
    keep = DropFaintScans()
    return sum(keep.filter(demo_data.decode(source[i])) for i in range(len(source)))


def total_steps(source) -> int:
    return NUM_EPOCHS * count_kept(source) // BATCH_SIZE


def progress_interval(total: int) -> int:
    """Steps between two progress lines."""
    return max(1, total // NUM_PROGRESS_LINES)


def batch_digest(batch) -> str:
    return hashlib.sha256(batch["image"].tobytes() + batch["label"].tobytes()).hexdigest()


# The model: 64 pixels -> HIDDEN_UNITS ReLU units -> 10 logits, plain SGD.
def init_weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return {
        "w1": rng.normal(0, np.sqrt(2 / 64), (64, HIDDEN_UNITS)).astype(np.float32),
        "b1": np.zeros(HIDDEN_UNITS, np.float32),
        "w2": rng.normal(0, np.sqrt(1 / HIDDEN_UNITS), (HIDDEN_UNITS, 10)).astype(np.float32),
        "b2": np.zeros(10, np.float32),
    }


def predict(weights, images: np.ndarray) -> np.ndarray:
    """Class probabilities, and the hidden activations (for the backward pass)."""
    hidden = np.maximum(images.reshape(len(images), -1) @ weights["w1"] + weights["b1"], 0)
    logits = hidden @ weights["w2"] + weights["b2"]
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True), hidden


def train_step(weights, images: np.ndarray, labels: np.ndarray):
    """One SGD step on the cross-entropy loss; returns (new weights, loss)."""
    n = len(labels)
    x = images.reshape(n, -1)
    probs, hidden = predict(weights, images)
    loss = -np.log(probs[np.arange(n), labels]).mean()
    d_logits = probs
    d_logits[np.arange(n), labels] -= 1
    d_logits /= n
    d_hidden = (d_logits @ weights["w2"].T) * (hidden > 0)
    grads = {
        "w1": x.T @ d_hidden,
        "b1": d_hidden.sum(axis=0),
        "w2": hidden.T @ d_logits,
        "b2": d_logits.sum(axis=0),
    }
    return {k: weights[k] - np.float32(LEARNING_RATE) * grads[k] for k in weights}, float(loss)


def accuracy(weights, source) -> float:
    """Accuracy on a split, un-augmented."""
    records = [demo_data.decode(source[i]) for i in range(len(source))]
    images = np.stack([r["image"] for r in records]).astype(np.float32) / 16
    labels = np.array([r["label"] for r in records])
    probs, _ = predict(weights, images)
    return float((probs.argmax(axis=1) == labels).mean())


def train(run_dir: Path, checkpoint_at: int | None) -> None:
    source = demo_data.open_split("train")
    total = total_steps(source)
    iterator = iter(make_loader(source))
    checkpoint = run_dir / "checkpoint.npz"
    step, weights = 0, init_weights()
    if checkpoint.exists():
        step, weights, loader_state = load_checkpoint(checkpoint)
        iterator.set_state(loader_state)
        print(f"  resumed from {checkpoint.name} at step {step}", flush=True)
    report_every = progress_interval(total)
    losses, start = [], time.perf_counter()
    with open(run_dir / f"batches_from_step_{step}.log", "w", buffering=1) as log:
        for batch in iterator:
            weights, loss = train_step(weights, batch["image"], batch["label"])
            log.write(f"{step} {batch_digest(batch)}\n")
            step += 1
            losses.append(loss)
            if step % report_every == 0 or step == total:
                elapsed = time.perf_counter() - start
                print(
                    f"  step {step:4d}/{total}  epoch {step * NUM_EPOCHS / total:4.1f}  loss"
                    f" {np.mean(losses):.3f}  {len(losses) * BATCH_SIZE / elapsed:8,.0f} records/s",
                    flush=True,
                )
                losses, start = [], time.perf_counter()
            if step == checkpoint_at:
                save_checkpoint(checkpoint, step, weights, iterator.get_state())
                print(f"  checkpoint written at step {step}", flush=True)
    if step != total:
        raise SystemExit(f"expected {total} steps, the loader gave {step}")
    np.savez(run_dir / "final_weights.npz", **weights)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint-at", type=int, help="checkpoint after this many steps")
    args = parser.parse_args()
    train(args.run_dir, args.checkpoint_at)


if __name__ == "__main__":
    main()
