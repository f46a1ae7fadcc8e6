// spelt/packing_options.h: the options of sequence packing (spelt/packing.h), for the packing
// operations (ops/pack.cc, ops/concat_then_split.cc) and their users alike.
#ifndef SPELT_PACKING_OPTIONS_H_
#define SPELT_PACKING_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spelt/value.h"

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

}  // namespace spelt

#endif  // SPELT_PACKING_OPTIONS_H_
