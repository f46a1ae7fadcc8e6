// spelt/shard_options.h: which part of the data a host reads (Grain 0.2.18's ShardOptions and
// even_split, grain/_src/core/sharding.py), used by the samplers (spelt/sampler.h) and by
// MapDataset sharding (ops/shard.cc).
//
// Thread-safety: plain values; the functions are pure.
#ifndef SPELT_SHARD_OPTIONS_H_
#define SPELT_SHARD_OPTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace spelt {

// Which part of the data this host reads (Grain's ShardOptions).
struct ShardOptions {
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  // Every shard gets num_examples / shard_count examples and the rest are dropped; otherwise
  // the first num_examples % shard_count shards get one more.
  bool drop_remainder = false;
  // Throws std::invalid_argument with Grain's messages unless shard_count > 0 and
  // 0 <= shard_index < shard_count.
  void Validate() const;
  // Grain's repr, e.g. "ShardOptions(shard_index=0, shard_count=1, drop_remainder=False)".
  std::string Repr(std::string_view class_name = "ShardOptions") const;
  // The sampler index a DataLoader reads for local index `local` of this shard:
  // local * shard_count + shard_index (Grain 0.2.18's _SamplerMapDataset).
  int64_t GlobalIndex(int64_t local) const { return local * shard_count + shard_index; }
};

// [start, end) of this shard's contiguous block of num_examples (Grain's even_split): blocks
// of num_examples / shard_count; without drop_remainder the first num_examples % shard_count
// shards get one more. Throws std::invalid_argument if `options` is invalid.
std::pair<int64_t, int64_t> EvenSplit(int64_t num_examples, const ShardOptions& options);

}  // namespace spelt

#endif  // SPELT_SHARD_OPTIONS_H_
