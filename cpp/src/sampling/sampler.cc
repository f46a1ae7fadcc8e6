// Samplers and sharding (spelt/sampler.h).
#include "spelt/sampler.h"

#include <stdexcept>

#include "core/nodes.h"

namespace spelt {

void ShardOptions::Validate() const {
  if (shard_count <= 0) {
    throw std::invalid_argument("ShardOptions: shard_count must be positive, got " +
                                std::to_string(shard_count));
  }
  if (shard_index < 0 || shard_index >= shard_count) {
    throw std::invalid_argument("ShardOptions: shard_index must be in [0, " +
                                std::to_string(shard_count) + "), got " +
                                std::to_string(shard_index));
  }
}

std::string ShardOptions::Repr(std::string_view class_name) const {
  return std::string(class_name) + "(shard_index=" + std::to_string(shard_index) +
         ", shard_count=" + std::to_string(shard_count) +
         ", drop_remainder=" + (drop_remainder ? "True" : "False") + ")";
}

std::pair<int64_t, int64_t> EvenSplit(int64_t num_examples, const ShardOptions& options) {
  options.Validate();
  const int64_t per_shard = num_examples / options.shard_count;
  int64_t start = per_shard * options.shard_index;
  int64_t end = per_shard * (options.shard_index + 1);
  const int64_t unused = num_examples % options.shard_count;
  if (unused > 0 && !options.drop_remainder) {
    start += std::min(options.shard_index, unused);
    end += std::min(options.shard_index + 1, unused);
  }
  return {start, end};
}

namespace internal {
namespace {

class SamplerNode final : public MapNode {
 public:
  SamplerNode(std::shared_ptr<const Sampler> sampler,
              std::shared_ptr<const RandomAccessSource> source, ShardOptions options)
      : MapNode({}, sampler->Serial() || source->Serial()), sampler_(std::move(sampler)),
        source_(std::move(source)), options_(options),
        length_(sampler_->Length() == kInfiniteLength
                    ? kInfiniteLength
                    : sampler_->Length() / options.shard_count) {}
  std::string Name() const override { return "SamplerMapDataset"; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    const int64_t g = index * options_.shard_count + options_.shard_index;
    const int64_t key = sampler_->RecordKey(g);
    return source_->Get(key);
  }

 private:
  std::shared_ptr<const Sampler> sampler_;
  std::shared_ptr<const RandomAccessSource> source_;
  ShardOptions options_;
  int64_t length_;
};

}  // namespace
}  // namespace internal

IndexSampler::IndexSampler(int64_t num_records, ShardOptions shard_options, bool shuffle,
                           std::optional<int64_t> num_epochs, std::optional<int64_t> seed)
    : shard_options_(shard_options), keys_(MapDataset::Range(0)) {
  shard_options_.Validate();
  if (num_records <= 0) {
    throw std::invalid_argument("IndexSampler: num_records must be positive, got " +
                                std::to_string(num_records));
  }
  if (num_epochs && *num_epochs <= 0) {
    throw std::invalid_argument("IndexSampler: num_epochs must be positive, got " +
                                std::to_string(*num_epochs));
  }
  if (shuffle && !seed) throw std::invalid_argument("IndexSampler: shuffling requires a seed");
  if (seed && (*seed < 0 || *seed > int64_t{0xFFFFFFFF})) {
    throw std::invalid_argument("IndexSampler: seed must be in [0, 2**32), got " +
                                std::to_string(*seed));
  }
  max_index_ = num_epochs ? *num_epochs * num_records : kInfiniteLength;
  MapDataset keys = MapDataset::Range(num_records);
  if (shard_options_.shard_count != 1) {
    keys = MapDataset(internal::MakeShardNode(keys.node(), shard_options_));
    if (num_epochs && shard_options_.drop_remainder) {
      max_index_ = std::min(max_index_,
                            keys.Length() * shard_options_.shard_count * *num_epochs);
    }
  }
  if (shuffle) keys = keys.Shuffle(*seed);
  keys_ = keys;
}

int64_t IndexSampler::RecordKey(int64_t index) const {
  if (index < 0 || index >= max_index_) {
    throw std::out_of_range("IndexSampler: index " + std::to_string(index) +
                            " out of range [0, " + std::to_string(max_index_) + ")");
  }
  return keys_.Get(index / shard_options_.shard_count)->AsInt();
}

SequentialSampler::SequentialSampler(int64_t num_records, ShardOptions shard_options)
    : shard_options_(shard_options) {
  shard_options_.Validate();
  if (num_records <= 0) {
    throw std::invalid_argument("SequentialSampler: num_records must be positive, got " +
                                std::to_string(num_records));
  }
  max_index_ = shard_options_.drop_remainder
                   ? num_records / shard_options_.shard_count * shard_options_.shard_count
                   : num_records;
}

int64_t SequentialSampler::RecordKey(int64_t index) const {
  if (index < 0 || index >= max_index_) {
    throw std::out_of_range("SequentialSampler: index " + std::to_string(index) +
                            " out of range [0, " + std::to_string(max_index_) + ")");
  }
  return index;
}

MapDataset SamplerDataset(std::shared_ptr<const Sampler> sampler,
                          std::shared_ptr<const RandomAccessSource> source,
                          ShardOptions shard_options) {
  if (!sampler || !source) throw std::invalid_argument("SamplerDataset: null sampler or source");
  shard_options.Validate();
  return MapDataset(std::make_shared<internal::SamplerNode>(std::move(sampler), std::move(source),
                                                            shard_options));
}

}  // namespace spelt
