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

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spelt/dataset.h"

namespace spelt {

// Which bin of the current batch of bins a sequence goes to.
enum class PackStrategy : uint8_t {
  kFirstFit,  // the first bin where every feature fits (Grain's FirstFitPackedBatch)
  kBestFit,   // the fitting bin with the most tokens already in it (BestFitPackedBatch)
};

struct PackOptions {
  PackStrategy strategy = PackStrategy::kFirstFit;
  // Target length of each sequence feature: a dict (a tree with whole_batches) whose leaves
  // are ints. Features of the element that are not in it are dropped.
  Value length_struct;
  // Bins packed at once; when an element fits in none, they are emitted and a new batch of
  // bins starts with that element. REQUIRES > 0.
  int64_t num_packing_bins = 0;
  // Bins of a batch are emitted in the order of np.random.default_rng(seed + k).permuted(
  // range(bins)), where k counts the bins emitted before that batch. REQUIRES seed >= 0.
  int64_t seed = 0;
  bool shuffle_bins = true;
  // If set, the shuffled bins are then sorted (stably) by the mean of the distinct nonzero
  // values of this packed feature in each bin (e.g. an epoch id).
  std::optional<std::string> shuffle_bins_group_by_feature;
  // Top-level keys that get no segment ids / positions. Those in length_struct are packed like
  // sequences; the others are collected per bin, as a list of the elements' values.
  std::vector<std::string> meta_features;
  // None, or length_struct's structure with int leaves: each sequence starts at a multiple of
  // its feature's alignment.
  Value pack_alignment_struct;
  // None, or length_struct's structure with number (or None) leaves: the padding value of each
  // feature (default 0). Segment ids and positions are always padded with 0.
  Value padding_struct;
  // At most this many sequences per bin (nullopt: no limit). REQUIRES > 0.
  std::optional<int64_t> max_sequences_per_bin;
  // PackAndBatchOperation: each batch of bins is one output element, the tuple (values,
  // segment_ids, positions) of trees shaped like length_struct with leaves of shape
  // (num_packing_bins, length, ...); no bin shuffling.
  bool whole_batches = false;
};

// Packs the sequences of `parent` into bins (FirstFitPackIterDataset / BestFitPackIterDataset).
// State: {"parent": parent state before the first element of the current batch of bins,
// "next_row": bins of that batch already emitted, "counter": bins emitted in all} (Grain's).
// Throws std::invalid_argument on invalid options. Iterators throw std::invalid_argument
// naming the feature and the element for an element that is not a dict, lacks a feature, has
// a feature longer than its target length or tokens of another shape than the batch's.
IterDataset Pack(const IterDataset& parent, PackOptions options);

struct ConcatThenSplitOptions {
  // (feature, target length) in output order; elements must have exactly these keys.
  std::vector<std::pair<std::string, int64_t>> length_struct;
  // Features never split (repeated in each part of a split element) and without segment ids
  // and positions.
  std::vector<std::string> meta_features;
  // false: an element with a feature of exactly its target length (and none longer) is
  // emitted as it is, ahead of the buffer being filled.
  bool split_full_length_features = true;
  // Features whose first token of each packed sequence is replaced by bos_token_id
  // (BOSHandling.REPLACE_FIRST_TOKEN_WITH_BOS); empty: no BOS handling.
  std::vector<std::string> bos_features;
  int64_t bos_token_id = 0;
};

// The state key of a ConcatThenSplitIterDataset's remainder (Grain's), whose values Python
// reads as (start, stop) tuples.
inline constexpr char kRemainderSlicesKey[] = "remainder_slices";

// Concatenates the sequences of `parent` and splits them at the target lengths
// (ConcatThenSplitIterDataset). State: {"parent_state", kRemainderSlicesKey: {feature:
// [start, stop]} ([-1, -1]: no remainder), "elements_from_buffer_after_checkpoint"} (Grain's).
// Throws std::invalid_argument on invalid options; iterators throw std::invalid_argument
// naming the feature and element for an element with other keys than length_struct's or a
// meta feature longer than its target length.
IterDataset ConcatThenSplit(const IterDataset& parent, ConcatThenSplitOptions options);

}  // namespace spelt

#endif  // SPELT_PACKING_H_
