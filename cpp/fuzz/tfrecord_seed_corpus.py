"""Writes small valid TFRecord files as seeds for the fuzzer: tfrecord_seed_corpus.py DIR.

Each seed is one options byte followed by a whole file, as the fuzz target expects (see
tfrecord_fuzz.cc): uncompressed, gzip and zlib files, each with the compression detected
(byte 0) and told (1: none, 2: GZIP, 3: ZLIB).
"""

import os
import sys
import tempfile

import spelt.experimental


def main(corpus: str) -> None:
    os.makedirs(corpus, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n, compression in enumerate(["", "GZIP", "ZLIB"]):
            path = os.path.join(tmp, "f")
            with spelt.experimental.TFRecordWriter(path, compression) as writer:
                for i in range(5):
                    writer.write(bytes(range(i * 7 % 256)) * (i + 1))
            with open(path, "rb") as f:
                data = f.read()
            for options in (0, n + 1):
                with open(os.path.join(corpus, f"seed{n}-{options}"), "wb") as out:
                    out.write(bytes([options]) + data)


if __name__ == "__main__":
    main(sys.argv[1])
