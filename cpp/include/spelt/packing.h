// spelt/packing.h: sequence packing for language-model training (Grain 0.2.18's
// FirstFitPackIterDataset, BestFitPackIterDataset, ConcatThenSplitIterDataset and the
// DataLoader's PackAndBatchOperation), run in C++ over the element tree.
//
// Elements are dicts (or, for whole-batch packing, any tree) whose sequence features are
// arrays with the sequence on the leading axis (bool / int / float scalars count as one token,
// lists of numbers as 1-d arrays). Packed outputs are fixed-shape arrays; the rows of a packed
// batch are views of one buffer per feature (no copy), with int32 `<feature>_segment_ids`
// (1, 2, ... per packed sequence, 0 for padding) and int32 `<feature>_positions`.
// Output and iterator state equal Grain's for the same input and parent (see
// docs/compatibility.md for the places where Grain 0.2.18 is wrong and Spelt is not).
//
// Thread-safety: as every dataset (spelt/dataset.h): datasets are immutable, an iterator is
// used by one thread at a time.
#ifndef SPELT_PACKING_H_
#define SPELT_PACKING_H_

#include "spelt/dataset.h"
#include "spelt/packing_options.h"

namespace spelt {

// Packs the sequences of `parent` into bins (FirstFitPackIterDataset / BestFitPackIterDataset).
// State: {"parent": parent state before the first element of the current batch of bins,
// "next_row": bins of that batch already emitted, "counter": bins emitted in all} (Grain's).
// Throws std::invalid_argument on invalid options. Iterators throw std::invalid_argument
// naming the feature and the element for an element that is not a dict, lacks a feature, has
// a feature longer than its target length or tokens of another shape than the batch's.
IterDataset Pack(const IterDataset& parent, PackOptions options);

// Concatenates the sequences of `parent` and splits them at the target lengths
// (ConcatThenSplitIterDataset). State: {"parent_state", kRemainderSlicesKey: {feature:
// [start, stop]} ([-1, -1]: no remainder), "elements_from_buffer_after_checkpoint"} (Grain's).
// Throws std::invalid_argument on invalid options; iterators throw std::invalid_argument
// naming the feature and element for an element with other keys than length_struct's or a
// meta feature longer than its target length.
IterDataset ConcatThenSplit(const IterDataset& parent, ConcatThenSplitOptions options);

}  // namespace spelt

#endif  // SPELT_PACKING_H_
