// SequentialSampler (spelt/sampler.h), as Grain 0.2.18's grain/_src/python/samplers.py.
#include "sampling/sampler_common.h"
#include "spelt/sampler.h"

namespace spelt {

SequentialSampler::SequentialSampler(int64_t num_records, ShardOptions shard_options,
                                     std::optional<int64_t> seed)
    : shard_options_(shard_options), seed_(seed) {
  internal::CheckNumRecords(num_records);
  shard_options_.Validate();
  max_index_ = shard_options_.drop_remainder
                   ? num_records / shard_options_.shard_count * shard_options_.shard_count
                   : num_records;
}

int64_t SequentialSampler::RecordKey(int64_t index) const {
  if (index < 0 || index >= max_index_) throw internal::SamplerIndexError(index, max_index_);
  return index;
}

std::optional<uint64_t> SequentialSampler::RngKey(int64_t index) const {
  return internal::SeedPlusIndex(seed_, index);
}

}  // namespace spelt
