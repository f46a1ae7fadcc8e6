// spelt/sampler.h: samplers and sharding, with Grain 0.2.18's semantics
// (grain/_src/python/samplers.py, grain/_src/core/sharding.py, and the DataLoader's
// _SamplerMapDataset in grain/_src/python/data_loader.py). The Python classes
// spelt.samplers.IndexSampler / SequentialSampler and spelt.sharding.* are faces over these.
//
// A Sampler maps a global sampler index g (0 <= g < Length()) to a record key and, when it
// has a seed, to the key of the record's random generator. In a DataLoader, host shard s of
// S reads g = l * S + s for its local indices l = 0, 1, ... (SamplerDataset).
// Samplers are immutable; their methods may be called from many threads at once (also where
// CallsPython(): each Python call takes the GIL).
#ifndef SPELT_SAMPLER_H_
#define SPELT_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spelt/dataset.h"
#include "spelt/shard_options.h"

namespace spelt {

// Thrown when a sampler reads a shard that owns no records (Grain raises ZeroDivisionError
// there; the Python face raises spelt._core.EmptyShardError, a ZeroDivisionError).
class EmptyShardError : public std::domain_error {
 public:
  using std::domain_error::domain_error;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  // Number of sampler indices, or kInfiniteLength (Grain's sys.maxsize).
  virtual int64_t Length() const = 0;
  // Record key of sampler index g. Throws std::out_of_range (Grain's IndexError message)
  // unless 0 <= g < Length().
  virtual int64_t RecordKey(int64_t index) const = 0;
  // Record keys of `indices`, appended to *keys in order. On an exception, *keys holds
  // exactly the keys before the failing index and the exception is the one RecordKey()
  // would raise for it. The default calls RecordKey() per index.
  virtual void RecordKeys(std::span<const int64_t> indices, std::vector<int64_t>* keys) const;
  // Key of the Philox generator of sampler index g: Grain gives record g the generator
  // numpy.random.Generator(numpy.random.Philox(key=seed + g)). nullopt if the sampler has no
  // seed (the default). Does not check g's range; throws std::invalid_argument if
  // seed + g < 0 (numpy rejects negative keys).
  virtual std::optional<uint64_t> RngKey(int64_t /*index*/) const { return std::nullopt; }
  // The sampler's shard options (the DataLoader's default).
  virtual const ShardOptions& shard_options() const = 0;
  // True if its methods call Python (a sampler written in Python): the nodes that read it
  // then CallsPython() (spelt/node.h).
  virtual bool CallsPython() const { return false; }
};

// Grain's IndexSampler: the records [0, num_records), this shard's contiguous block of them
// (EvenSplit, epoch-aware), globally shuffled per epoch (epoch e uses seed + e) if `shuffle`,
// for num_epochs epochs (nullopt = infinite). The record key of g is block_keys[g /
// shard_count]. Length: num_epochs * num_records, capped at block_size * shard_count *
// num_epochs with drop_remainder; kInfiniteLength without num_epochs.
// Throws as Grain does, in Grain's order and with its messages: std::invalid_argument if
// num_records <= 0, num_epochs <= 0, shuffle without a seed, or a seed outside [0, 2^32);
// then std::invalid_argument for invalid shard options and std::overflow_error if the
// length exceeds 2^63 - 1. RecordKey throws EmptyShardError if this shard owns no records.
class IndexSampler final : public Sampler {
 public:
  IndexSampler(int64_t num_records, ShardOptions shard_options = {}, bool shuffle = false,
               std::optional<int64_t> num_epochs = std::nullopt,
               std::optional<int64_t> seed = std::nullopt);
  int64_t Length() const override { return max_index_; }
  int64_t RecordKey(int64_t index) const override;
  void RecordKeys(std::span<const int64_t> indices, std::vector<int64_t>* keys) const override;
  std::optional<uint64_t> RngKey(int64_t index) const override;
  const ShardOptions& shard_options() const override { return shard_options_; }

 private:
  // Throws unless g may be read: std::out_of_range, or EmptyShardError.
  void CheckIndex(int64_t index) const;

  ShardOptions shard_options_;
  std::optional<int64_t> seed_;
  int64_t max_index_;
  MapDataset keys_;  // this shard's keys, epoch after epoch (range -> shard -> shuffle)
};

// Grain's SequentialSampler: the record key of g is g, for num_records indices (rounded down
// to a multiple of shard_count with drop_remainder). Throws std::invalid_argument if
// num_records <= 0 (Grain's message) or the shard options are invalid. The seed is not
// checked (as in Grain): RngKey throws where seed + g < 0.
class SequentialSampler final : public Sampler {
 public:
  explicit SequentialSampler(int64_t num_records, ShardOptions shard_options = {},
                             std::optional<int64_t> seed = std::nullopt);
  int64_t Length() const override { return max_index_; }
  int64_t RecordKey(int64_t index) const override;
  std::optional<uint64_t> RngKey(int64_t index) const override;
  const ShardOptions& shard_options() const override { return shard_options_; }

 private:
  ShardOptions shard_options_;
  std::optional<int64_t> seed_;
  int64_t max_index_;
};

// The DataLoader's first stage: a MapDataset whose element l is
// source[sampler.RecordKey(shard_options.GlobalIndex(l))], of length sampler.Length() /
// shard_count (as Grain 0.2.18's _SamplerMapDataset, which drops a shard's remainder). A
// chunk computes all its record keys, then reads them with one RandomAccessSource::GetMany.
// Errors from the sampler or the source propagate unchanged. Throws std::invalid_argument
// for a null sampler or source or invalid shard options.
MapDataset SamplerDataset(std::shared_ptr<const Sampler> sampler,
                          std::shared_ptr<const RandomAccessSource> source,
                          ShardOptions shard_options);

}  // namespace spelt

#endif  // SPELT_SAMPLER_H_
