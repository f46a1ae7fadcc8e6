"""The LM demo's data: Python's standard library as a corpus, tokenized, stored, packed.

This module is the one place that knows how the corpus is made and read:

- ``corpus_files`` lists the standard library's ``.py`` files (real text present offline on
  every machine with Python; site-packages excluded), up to a byte budget;
- ``prepare`` trains a byte-level BPE tokenizer on them with Hugging Face ``tokenizers`` (the
  optional extra ``spelt-ml[lm]``, imported here only), tokenizes every file, appends an
  end-of-text token, cuts each document into pieces of at most ``seq_len + 1`` tokens (first-fit
  packing does not split sequences) and writes the pieces as int32 arrays into ArrayRecord
  shards with Spelt's ``ArrayRecordWriter``;
- ``make_dataset(g, ...)`` builds the input pipeline on either engine (``g`` is ``spelt`` or
  ``grain``): a global shuffle of the documents, ``{"inputs", "targets"}`` (targets = inputs
  shifted by one), ``FirstFitPackIterDataset`` to ``seq_len`` (int32 ``*_segment_ids`` and
  ``*_positions`` added) and batches of ``(batch_size, seq_len)``.
"""

from __future__ import annotations

import glob
import hashlib
import os
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

import spelt

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "build" / "demo_lm" / "data"
END_OF_TEXT = "<|endoftext|>"
NUM_SHARDS = 4
NUM_PACKING_BINS = 64


def corpus_files(max_bytes: int) -> list[str]:
    """The standard library's .py files in sorted order, the first ones summing <= max_bytes."""
    stdlib = sysconfig.get_paths()["stdlib"]
    files, total = [], 0
    for path in sorted(glob.glob(os.path.join(stdlib, "**", "*.py"), recursive=True)):
        if "-packages" in path:  # site-packages / dist-packages are not the standard library
            continue
        size = os.path.getsize(path)
        if total + size > max_bytes:
            break
        files.append(path)
        total += size
    return files


def read_texts(files: Iterable[str]) -> list[str]:
    """The files' text (UTF-8, undecodable bytes replaced)."""
    return [Path(f).read_text(encoding="utf-8", errors="replace") for f in files]


def train_tokenizer(texts: list[str], vocab_size: int) -> Any:
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on texts, END_OF_TEXT its id 0."""
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    except ImportError as e:
        raise ImportError(
            "the LM demo tokenizes with Hugging Face tokenizers: pip install 'spelt-ml[lm]'"
        ) from e

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def documents(texts: list[str], tokenizer: Any, seq_len: int) -> list[np.ndarray]:
    """int32 token arrays: each text + END_OF_TEXT, cut into pieces of <= seq_len + 1 tokens."""
    eot = tokenizer.token_to_id(END_OF_TEXT)
    docs = []
    for encoding in tokenizer.encode_batch(texts):
        tokens = np.asarray(encoding.ids + [eot], np.int32)
        for start in range(0, len(tokens) - 1, seq_len):  # pieces overlap by the target token
            docs.append(tokens[start : start + seq_len + 1])
    return docs


def shard_paths(directory: Path = DATA_DIR) -> list[str]:
    return [str(directory / f"code-{i:05d}-of-{NUM_SHARDS:05d}") for i in range(NUM_SHARDS)]


def write_shards(docs: list[np.ndarray], directory: Path = DATA_DIR) -> None:
    """Writes the documents' int32 bytes as NUM_SHARDS ArrayRecord shards, round-robin."""
    directory.mkdir(parents=True, exist_ok=True)
    writers = [
        spelt.experimental.ArrayRecordWriter(p, "group_size:1") for p in shard_paths(directory)
    ]
    for i, doc in enumerate(docs):
        writers[i % NUM_SHARDS].write(doc.tobytes())
    for writer in writers:
        writer.close()


def prepare(max_bytes: int, vocab_size: int, seq_len: int, directory: Path = DATA_DIR) -> dict:
    """Builds the corpus, tokenizer and shards; returns what it made (for printing)."""
    files = corpus_files(max_bytes)
    texts = read_texts(files)
    tokenizer = train_tokenizer(texts, vocab_size)
    docs = documents(texts, tokenizer, seq_len)
    write_shards(docs, directory)
    tokenizer.save(str(directory / "tokenizer.json"))
    return {
        "files": len(files),
        "bytes": sum(len(t.encode()) for t in texts),
        "vocab_size": tokenizer.get_vocab_size(),
        "documents": len(docs),
        "tokens": sum(len(d) for d in docs),
    }


def parse(record: bytes) -> dict[str, np.ndarray]:
    """{"inputs", "targets"}: int32[n - 1] each, of a stored document of n int32 tokens."""
    tokens = np.frombuffer(record, np.int32)
    return {"inputs": tokens[:-1], "targets": tokens[1:]}


def make_dataset(
    g: Any, paths: list[str], seq_len: int, batch_size: int, seed: int = 0, num_epochs: int = 1
) -> Any:
    """ArrayRecord -> global shuffle -> parse -> first-fit packing -> batch, on engine g.

    Batches are dicts of int32 ``(batch_size, seq_len)`` arrays: "inputs", "targets" and their
    "_segment_ids" (0 = padding) and "_positions". The last, partial batch is dropped.
    """
    ds = g.MapDataset.source(g.sources.ArrayRecordDataSource(paths)).seed(seed)
    ds = ds.shuffle().repeat(num_epochs).map(parse).to_iter_dataset()
    ds = g.experimental.FirstFitPackIterDataset(
        ds,
        length_struct={"inputs": seq_len, "targets": seq_len},
        num_packing_bins=NUM_PACKING_BINS,
        seed=seed,
    )
    return ds.batch(batch_size, drop_remainder=True)


def batch_digest(batch: dict[str, np.ndarray]) -> str:
    """sha256 of a batch's arrays (keys, dtypes, shapes and bytes), keys sorted."""
    digest = hashlib.sha256()
    for key in sorted(batch):
        value = np.ascontiguousarray(batch[key])
        digest.update(f"{key}:{value.dtype}:{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def tokens_in(batch: dict[str, np.ndarray]) -> int:
    """Non-padding positions of a batch's "inputs"."""
    return int(np.count_nonzero(batch["inputs_segment_ids"]))
