"""Names of the meta features Grain pipelines attach to records.

Values are identical to Grain 0.2.18's ``grain.constants``. They start with
``_`` because users may read them but should not set them.
"""

__all__ = [
    "INDEX",
    "RECORD_KEY",
    "DATASET_INDEX",
    "EPOCH",
    "SEED",
    "RECORD",
    "META_FEATURES",
]

# Global, unique position of the record in the stream of all records (from 0).
INDEX = "_index"

# Key of the record in its data source (in its own dataset when mixing; from 0).
RECORD_KEY = "_record_key"

# Which dataset of a mixture the record comes from (from 0; only when mixing).
DATASET_INDEX = "_dataset_index"

# Epoch of the record over its dataset (from 1).
EPOCH = "_epoch"

# Per-record seed for stateless random operations; changes every epoch.
SEED = "_seed"

# The serialized record.
RECORD = "_record"

# frozenset of all the names above.
META_FEATURES = frozenset([INDEX, RECORD_KEY, DATASET_INDEX, EPOCH, SEED, RECORD])
