// spelt/sampler.h: samplers and sharding, with Grain's semantics (grain/_src/python/samplers.py,
// grain/_src/core/sharding.py).
//
// A Sampler maps a global sampler index g (0 <= g < Length()) to a record key. In a
// DataLoader, host shard s of S reads g = l * S + s for its local indices l = 0, 1, ...
// Samplers are immutable and thread-safe unless Serial().
#ifndef SPELT_SAMPLER_H_
#define SPELT_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "spelt/dataset.h"

namespace spelt {

// Which part of the data this host reads. Validate() throws std::invalid_argument unless
// 0 <= shard_index < shard_count.
struct ShardOptions {
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  bool drop_remainder = false;
  void Validate() const;
  // Grain's repr, e.g. "ShardOptions(shard_index=0, shard_count=1, drop_remainder=False)".
  std::string Repr(std::string_view class_name = "ShardOptions") const;
};

// [start, end) of this shard's contiguous block of num_examples (Grain's even_split): blocks
// of num_examples / shard_count; without drop_remainder the first num_examples % shard_count
// shards get one more.
std::pair<int64_t, int64_t> EvenSplit(int64_t num_examples, const ShardOptions& options);

class Sampler {
 public:
  virtual ~Sampler() = default;
  // Number of sampler indices, or kInfiniteLength.
  virtual int64_t Length() const = 0;
  // Record key of sampler index g. REQUIRES 0 <= g < Length() (std::out_of_range otherwise).
  virtual int64_t RecordKey(int64_t index) const = 0;
  // The sampler's shard options (used as the DataLoader's default).
  virtual const ShardOptions& shard_options() const = 0;
  virtual bool Serial() const { return false; }
};

// Grain's IndexSampler: the records [0, num_records), this shard's contiguous block of them,
// globally shuffled per epoch (epoch e uses seed + e) if `shuffle`, for num_epochs epochs
// (nullopt = infinite). Record key of g is block_keys[g / shard_count].
// Throws std::invalid_argument as Grain does: num_records <= 0, num_epochs <= 0, shuffle
// without a seed, seed outside [0, 2^32).
class IndexSampler final : public Sampler {
 public:
  IndexSampler(int64_t num_records, ShardOptions shard_options = {}, bool shuffle = false,
               std::optional<int64_t> num_epochs = std::nullopt,
               std::optional<int64_t> seed = std::nullopt);
  int64_t Length() const override { return max_index_; }
  int64_t RecordKey(int64_t index) const override;
  const ShardOptions& shard_options() const override { return shard_options_; }

 private:
  ShardOptions shard_options_;
  int64_t max_index_;
  MapDataset keys_;
};

// Grain's SequentialSampler: record key of g is g, for num_records indices (rounded down to a
// multiple of shard_count with drop_remainder).
class SequentialSampler final : public Sampler {
 public:
  explicit SequentialSampler(int64_t num_records, ShardOptions shard_options = {});
  int64_t Length() const override { return max_index_; }
  int64_t RecordKey(int64_t index) const override;
  const ShardOptions& shard_options() const override { return shard_options_; }

 private:
  ShardOptions shard_options_;
  int64_t max_index_;
};

// The DataLoader's first stage: a MapDataset whose element l is source[sampler.RecordKey(g)]
// with g = l * shard_count + shard_index, of length sampler.Length() / shard_count (as Grain
// 0.2.18's _SamplerMapDataset). Errors from the sampler or the source propagate unchanged.
MapDataset SamplerDataset(std::shared_ptr<const Sampler> sampler,
                          std::shared_ptr<const RandomAccessSource> source,
                          ShardOptions shard_options);

}  // namespace spelt

#endif  // SPELT_SAMPLER_H_
