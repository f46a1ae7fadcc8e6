// IndexSampler (spelt/sampler.h), as Grain 0.2.18's grain/_src/python/samplers.py: the keys
// are MapDataset.range(num_records), sharded into this shard's contiguous block and shuffled,
// so that epochs, sharding and shuffling are the engine's own operations.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/nodes.h"
#include "ops/shard.h"
#include "sampling/sampler_common.h"
#include "spelt/sampler.h"

namespace spelt {
namespace {

constexpr int64_t kMaxSeed = int64_t{1} << 32;

}  // namespace

IndexSampler::IndexSampler(int64_t num_records, ShardOptions shard_options, bool shuffle,
                           std::optional<int64_t> num_epochs, std::optional<int64_t> seed)
    : shard_options_(shard_options), seed_(seed), keys_(MapDataset::Range(0)) {
  internal::CheckNumRecords(num_records);
  if (num_epochs && *num_epochs <= 0) {
    // Grain's message, missing space included.
    throw std::invalid_argument("Invalid number of epochs in Index Sampler.Got " +
                                std::to_string(*num_epochs) +
                                " epochs, but number of epochs must be greater than 0.");
  }
  if (shuffle && !seed) throw std::invalid_argument("Shuffling requires specifying a seed.");
  if (seed && (*seed < 0 || *seed >= kMaxSeed)) {
    throw std::invalid_argument("Seed should be positive 32-bit integer.");
  }
  shard_options_.Validate();
  max_index_ = kInfiniteLength;
  if (num_epochs && __builtin_mul_overflow(*num_epochs, num_records, &max_index_)) {
    throw std::overflow_error("IndexSampler: num_epochs * num_records = " +
                              std::to_string(*num_epochs) + " * " +
                              std::to_string(num_records) + " exceeds 2**63 - 1");
  }
  MapDataset keys = MapDataset::Range(num_records);
  if (shard_options_.shard_count != 1) {  // one shard of one is the whole range
    keys = MapDataset(internal::MakeShardNode(keys.node(), shard_options_));
    if (num_epochs && shard_options_.drop_remainder) {
      // This shard's block, the same size in every shard, for every shard and epoch.
      max_index_ =
          std::min(max_index_, keys.Length() * shard_options_.shard_count * *num_epochs);
    }
  }
  if (shuffle) keys = keys.Shuffle(static_cast<uint32_t>(*seed));
  keys_ = keys;
}

void IndexSampler::CheckIndex(int64_t index) const {
  if (index < 0 || index >= max_index_) {
    throw internal::SamplerIndexError(
        index, max_index_ == kInfiniteLength ? std::nullopt : std::optional(max_index_));
  }
  if (keys_.Length() == 0) {
    throw EmptyShardError("IndexSampler: shard " + std::to_string(shard_options_.shard_index) +
                          " of " + std::to_string(shard_options_.shard_count) +
                          " owns no records (Grain raises ZeroDivisionError here)");
  }
}

int64_t IndexSampler::RecordKey(int64_t index) const {
  CheckIndex(index);
  return keys_.Get(index / shard_options_.shard_count)->AsInt();
}

void IndexSampler::RecordKeys(std::span<const int64_t> indices,
                              std::vector<int64_t>* keys) const {
  std::vector<int64_t> positions;  // in this shard's key stream
  positions.reserve(indices.size());
  std::exception_ptr error;
  for (const int64_t index : indices) {
    try {
      CheckIndex(index);
    } catch (...) {
      error = std::current_exception();
      break;
    }
    positions.push_back(index / shard_options_.shard_count);
  }
  std::vector<std::optional<Value>> values;
  keys_.node()->GetMany(positions, &values);  // range, shard and shuffle never fail here
  keys->reserve(keys->size() + values.size());
  for (const std::optional<Value>& v : values) keys->push_back(v->AsInt());
  if (error) std::rethrow_exception(error);
}

std::optional<uint64_t> IndexSampler::RngKey(int64_t index) const {
  return internal::SeedPlusIndex(seed_, index);
}

}  // namespace spelt
