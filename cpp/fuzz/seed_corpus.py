"""Writes small valid ArrayRecord files as seeds for the fuzzer: seed_corpus.py CORPUS_DIR.

Each seed is one options byte (0: all checks on) followed by a whole file, as the fuzz target
expects (see array_record_fuzz.cc).
"""

import os
import sys
import tempfile

import spelt


def main(corpus: str) -> None:
    os.makedirs(corpus, exist_ok=True)
    cases = ["uncompressed", "zstd", "brotli", "snappy", "group_size:3,zstd", "group_size:3,snappy"]
    with tempfile.TemporaryDirectory() as tmp:
        for n, options in enumerate(cases):
            path = os.path.join(tmp, "f")
            with spelt.experimental.ArrayRecordWriter(path, options) as writer:
                for i in range(5):
                    writer.write(bytes(range(i * 7 % 256)) * (i + 1))
            with open(path, "rb") as f, open(os.path.join(corpus, f"seed{n}"), "wb") as out:
                out.write(b"\0" + f.read())


if __name__ == "__main__":
    main(sys.argv[1])
