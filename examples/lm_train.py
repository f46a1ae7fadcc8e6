"""The LM demo's training job: a tiny numpy language model fed by packed Spelt batches.

    lm_train.py RUN_DIR --data-dir DIR --vocab-size V --seq-len L --batch-size B --steps N

Trains for N steps from scratch, or from RUN_DIR/checkpoint.npz when it exists (weights, step
and the iterator's ``get_state()`` as JSON), checkpointing after every step. It logs a sha256 of
every batch to RUN_DIR/batches_from_step_<first step>.log and writes RUN_DIR/final_weights.npz
at the end. lm_demo.py runs it as a subprocess (and kills it); everything is deterministic.

The model predicts the next token from the current one through a rank-``EMBED_DIM`` bigram
table: ``logits = embed[inputs] @ unembed``, cross-entropy against ``targets`` over the
non-padding positions (``inputs_segment_ids > 0``), plain SGD with gradients written out.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import spelt

import lm_data
from checkpoint import train_resumably

SEED = 0
EMBED_DIM = 32
LEARNING_RATE = 20.0


def init_weights(vocab_size: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return {
        "embed": rng.normal(0, 1, (vocab_size, EMBED_DIM)).astype(np.float32),
        "unembed": np.zeros((EMBED_DIM, vocab_size), np.float32),  # loss starts at ln(vocab)
    }


def train_step(weights, batch) -> tuple[dict[str, np.ndarray], float]:
    """One SGD step on the mean next-token cross-entropy; returns (new weights, loss)."""
    mask = batch["inputs_segment_ids"].reshape(-1) > 0
    inputs = batch["inputs"].reshape(-1)[mask]
    targets = batch["targets"].reshape(-1)[mask]
    n = len(inputs)
    hidden = weights["embed"][inputs]  # (n, EMBED_DIM)
    logits = hidden @ weights["unembed"]  # (n, vocab)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    loss = -np.log(probs[np.arange(n), targets]).mean()
    d_logits = probs
    d_logits[np.arange(n), targets] -= 1
    d_logits /= n
    d_embed = np.zeros_like(weights["embed"])
    np.add.at(d_embed, inputs, d_logits @ weights["unembed"].T)
    grads = {"embed": d_embed, "unembed": hidden.T @ d_logits}
    return {k: weights[k] - np.float32(LEARNING_RATE) * grads[k] for k in weights}, float(loss)


def train(args: argparse.Namespace) -> None:
    dataset = lm_data.make_dataset(
        spelt,
        lm_data.shard_paths(args.data_dir),
        args.seq_len,
        args.batch_size,
        num_epochs=args.epochs,
    )
    start, tokens = time.perf_counter(), 0

    def report(step: int, loss: float, batch) -> None:
        nonlocal tokens
        tokens += lm_data.tokens_in(batch)
        if step % args.report_every == 0 or step == args.steps:
            rate = tokens / (time.perf_counter() - start)
            print(
                f"  step {step:3d}/{args.steps}  loss {loss:.3f}  {rate:9,.0f} tokens/s (with training)",
                flush=True,
            )

    train_resumably(
        args.run_dir,
        iter(dataset),
        init_weights(args.vocab_size),
        args.steps,
        train_step,
        lm_data.batch_digest,
        report,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--vocab-size", type=int, required=True)
    parser.add_argument("--seq-len", type=int, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--report-every", type=int, default=5)
    train(parser.parse_args())


if __name__ == "__main__":
    main()
