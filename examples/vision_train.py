"""The vision demo's training job: a tiny numpy classifier fed by Spelt's native train recipe.

    vision_train.py --data-dir DIR --batch-size B --steps N --epochs E RUN_DIR

Trains for N steps from scratch, or from RUN_DIR/checkpoint.npz when it exists, checkpointing
the weights and the iterator's state after every step (checkpoint.train_resumably); logs a
sha256 of every batch and writes RUN_DIR/final_weights.npz. vision_demo.py runs it as a
subprocess (and kills it); everything is deterministic.

The model: 4x4 average pooling of the normalised 64 x 64 x 3 image (768 features), then a
softmax regression over the 4 classes, plain SGD.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import spelt

import vision_data
from checkpoint import train_resumably

POOL = 4
LEARNING_RATE = 0.002


def features(images: np.ndarray) -> np.ndarray:
    """(B, 64, 64, 3) -> (B, 768): means over POOL x POOL blocks."""
    b, h, w, c = images.shape
    pooled = images.reshape(b, h // POOL, POOL, w // POOL, POOL, c).mean(axis=(2, 4))
    return pooled.reshape(b, -1)


def init_weights() -> dict[str, np.ndarray]:
    n = (vision_data.SIZE // POOL) ** 2 * 3
    return {
        "w": np.zeros((n, vision_data.NUM_CLASSES), np.float32),
        "b": np.zeros(vision_data.NUM_CLASSES, np.float32),
    }


def train_step(weights, batch) -> tuple[dict[str, np.ndarray], float]:
    """One SGD step on the mean cross-entropy; returns (new weights, loss)."""
    images, labels = batch
    x = features(images)
    logits = x @ weights["w"] + weights["b"]
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    n = len(labels)
    loss = float(-np.log(probs[np.arange(n), labels]).mean())
    probs[np.arange(n), labels] -= 1
    probs /= n
    lr = np.float32(LEARNING_RATE)
    return {"w": weights["w"] - lr * (x.T @ probs), "b": weights["b"] - lr * probs.sum(0)}, loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--epochs", type=int, required=True)
    args = parser.parse_args()
    dataset = vision_data.make_dataset(
        spelt, args.data_dir, native=True, epochs=args.epochs, batch_size=args.batch_size
    )

    def report(step: int, loss: float, batch) -> None:
        if step % 10 == 0 or step == args.steps:
            print(f"  step {step:3d}/{args.steps}  loss {loss:.3f}", flush=True)

    train_resumably(
        args.run_dir,
        iter(dataset),
        init_weights(),
        args.steps,
        train_step,
        vision_data.batch_digest,
        report,
    )


if __name__ == "__main__":
    main()
