"""Spelt LM demo: a language-model input job on real text, killed with SIGKILL, resumed exactly.

1. Builds a corpus from the Python standard library's source files (present offline wherever
   Python is), trains a byte-level BPE tokenizer on it (Hugging Face ``tokenizers``, the
   ``spelt-ml[lm]`` extra) and stores the tokenized documents as ArrayRecord shards of int32
   arrays (lm_data.py).
2. Reads them with a global shuffle, packs them first-fit to ``--seq-len`` tokens with segment
   ids and positions (``spelt.experimental.FirstFitPackIterDataset``) and batches them; measures
   one epoch of that pipeline alone (tokens/s, packing efficiency), then Grain's packer on the
   same documents (efficiency, tokens/s, and whether its batches are the same).
3. Trains a tiny numpy language model (lm_train.py) in its own process, start to finish.
4. Trains again in a new process that checkpoints the iterator state after every step; this
   script kills it with SIGKILL once its checkpoint reaches ``--kill-at`` steps. A third process
   resumes from the last checkpoint and finishes.
5. Checks that the resumed batches (a sha256 per step) equal the uninterrupted run's and that
   the final weights are bit-identical.

Run from the repository root with ``make demo-lm``. Exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from pathlib import Path

import spelt

import lm_data
from kill_resume import check_resume, report_resume, run_and_kill, run_job

TRAIN_JOB = Path(__file__).resolve().parent / "lm_train.py"


def measure_pipeline(g, args) -> dict:
    """One epoch of the pipeline on engine g: batch digests, tokens, efficiency, tokens/s."""
    start = time.perf_counter()
    digests, tokens, batches = [], 0, 0
    for batch in lm_data.make_dataset(
        g, lm_data.shard_paths(args.data_dir), args.seq_len, args.batch_size
    ):
        digests.append(lm_data.batch_digest(batch))
        tokens += lm_data.tokens_in(batch)
        batches += 1
    seconds = time.perf_counter() - start
    return {
        "digests": digests,
        "tokens_per_s": tokens / seconds,
        "efficiency": tokens / (batches * args.batch_size * args.seq_len),
        "batches": batches,
        "seconds": seconds,
    }


def job_command(args) -> list[str]:
    """lm_train.py's command line, to which kill_resume appends the run directory."""
    command = [sys.executable, str(TRAIN_JOB), "--data-dir", str(args.data_dir)]
    for name in ("vocab_size", "seq_len", "batch_size", "steps"):
        command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    return command + ["--report-every", str(max(1, args.steps // 4))]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=lm_data.DATA_DIR)
    parser.add_argument("--max-bytes", type=int, default=3_000_000, help="corpus size cap")
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--kill-at", type=int, default=10, help="kill once this step is saved")
    args = parser.parse_args(argv)
    if not 0 < args.kill_at < args.steps:
        parser.error("--kill-at must be between 0 and --steps")
    return args


def main(argv: list[str] | None = None) -> int:
    sys.stdout.reconfigure(line_buffering=True)  # keep our lines in order with the jobs' lines
    logging.getLogger("absl").setLevel(logging.ERROR)  # Grain warns that jax is missing
    import grain  # PyPI grain 0.2.18, the reference packer
    import grain.experimental

    args = parse_args(argv)
    start = time.perf_counter()
    print("Spelt LM demo: packed language-model batches from ArrayRecord, killed and resumed\n")
    shutil.rmtree(args.data_dir, ignore_errors=True)
    made = lm_data.prepare(args.max_bytes, args.vocab_size, args.seq_len, args.data_dir)
    print(
        f"corpus:    {made['files']} standard-library .py files, {made['bytes']:,} bytes"
        f" ({time.perf_counter() - start:.1f} s to tokenize and store)\n"
        f"tokenizer: byte-level BPE (Hugging Face tokenizers), vocabulary {made['vocab_size']}\n"
        f"stored:    {made['documents']:,} documents (<= {args.seq_len + 1} tokens each),"
        f" {made['tokens']:,} int32 tokens, {lm_data.NUM_SHARDS} ArrayRecord shards\n"
        f"pipeline:  global shuffle -> FirstFitPackIterDataset({args.seq_len},"
        f" {lm_data.NUM_PACKING_BINS} bins) -> batch({args.batch_size})"
    )
    ours, theirs = measure_pipeline(spelt, args), measure_pipeline(grain, args)
    if ours["batches"] < args.steps:
        raise SystemExit(f"one epoch has {ours['batches']} batches, fewer than --steps")
    same = ours["digests"] == theirs["digests"]
    print(
        f"one epoch: {ours['batches']} batches of {args.batch_size} x {args.seq_len};"
        f" Grain's batches {'identical' if same else 'DIFFERENT'}"
    )

    runs = args.data_dir.parent / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    reference, interrupted = runs / "uninterrupted", runs / "interrupted"
    print(f"\n[1/3] uninterrupted run of {args.steps} steps, in its own process")
    run_job(job_command(args), reference)
    print(f"\n[2/3] new process, checkpoint every step, SIGKILL once step {args.kill_at} is saved")
    resumed_at = run_and_kill(job_command(args), interrupted, args.kill_at)
    print("\n[3/3] new process: resume from the last checkpoint and finish")
    run_job(job_command(args), interrupted)
    problems = check_resume(reference, interrupted, resumed_at, args.steps)
    if not same:
        problems.append("Grain's packer gave other batches")

    print("\nSummary")
    print(
        f"  input pipeline:     Spelt {ours['tokens_per_s']:12,.0f} tokens/s,"
        f" Grain {theirs['tokens_per_s']:10,.0f} tokens/s (one epoch, no training)"
    )
    print(
        f"  packing efficiency: Spelt {ours['efficiency']:.4f}, Grain {theirs['efficiency']:.4f}"
        " (fraction of non-padding tokens)"
    )
    return report_resume(problems, args.steps, resumed_at, start, 20)


if __name__ == "__main__":
    sys.exit(main())
