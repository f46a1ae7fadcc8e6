// SamplerMapDataset (spelt/sampler.h): the DataLoader's first stage, as Grain 0.2.18's
// _SamplerMapDataset (grain/_src/python/data_loader.py). A chunk computes its record keys
// with one Sampler::RecordKeys, then reads them with one RandomAccessSource::GetMany (or, for
// a batch, one RandomAccessSource::GetStacked where the source gathers).
#include <exception>
#include <stdexcept>

#include "core/nodes.h"
#include "spelt/sampler.h"

namespace spelt {
namespace internal {
namespace {

// Sampler indices this shard reads: g = l * shard_count + shard_index below the sampler's
// length; without drop_remainder the first (length % shard_count) shards read one more, so no
// record is lost (Grain after 0.2.18, grain@5bad1a2; 0.2.18 always dropped the remainder).
int64_t ShardLength(int64_t sampler_length, const ShardOptions& options) {
  if (sampler_length == kInfiniteLength) return kInfiniteLength;
  const int64_t extra =
      !options.drop_remainder && options.shard_index < sampler_length % options.shard_count;
  return sampler_length / options.shard_count + extra;
}

class SamplerNode final : public MapNode {
 public:
  SamplerNode(std::shared_ptr<const Sampler> sampler,
              std::shared_ptr<const RandomAccessSource> source, ShardOptions options)
      : MapNode({}, sampler->CallsPython() || source->CallsPython()),
        sampler_(std::move(sampler)), source_(std::move(source)), options_(options),
        length_(ShardLength(sampler_->Length(), options)) {}
  std::string Name() const override { return "SamplerMapDataset"; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    return source_->Get(sampler_->RecordKey(options_.GlobalIndex(index)));
  }
  // The records gathered straight into one batch by a source that can (an in-memory array).
  std::optional<Value> GetStacked(std::span<const int64_t> indices) const override {
    std::vector<int64_t> keys;
    sampler_->RecordKeys(Globals(indices), &keys);
    return source_->GetStacked(keys);
  }
  void GetMany(std::span<const int64_t> indices,
               std::vector<std::optional<Value>>* out) const override {
    const std::vector<int64_t> globals = Globals(indices);
    std::vector<int64_t> keys;
    std::exception_ptr key_error;
    try {
      sampler_->RecordKeys(globals, &keys);
    } catch (...) {
      key_error = std::current_exception();  // keys holds those before the failing index
    }
    std::vector<Value> records;
    std::exception_ptr read_error;
    try {
      source_->GetMany(keys, &records);
    } catch (...) {
      read_error = std::current_exception();  // an earlier index than key_error's
    }
    out->reserve(out->size() + records.size());
    for (Value& record : records) out->push_back(std::move(record));
    if (read_error) std::rethrow_exception(read_error);
    if (key_error) std::rethrow_exception(key_error);
  }

 private:
  // The sampler indices of this shard's `indices`.
  std::vector<int64_t> Globals(std::span<const int64_t> indices) const {
    std::vector<int64_t> globals;
    globals.reserve(indices.size());
    for (const int64_t index : indices) globals.push_back(options_.GlobalIndex(index));
    return globals;
  }

  std::shared_ptr<const Sampler> sampler_;
  std::shared_ptr<const RandomAccessSource> source_;
  ShardOptions options_;
  int64_t length_;
};

}  // namespace
}  // namespace internal

MapDataset SamplerDataset(std::shared_ptr<const Sampler> sampler,
                          std::shared_ptr<const RandomAccessSource> source,
                          ShardOptions shard_options) {
  if (!sampler || !source) throw std::invalid_argument("SamplerDataset: null sampler or source");
  shard_options.Validate();
  return MapDataset(std::make_shared<internal::SamplerNode>(std::move(sampler),
                                                            std::move(source), shard_options));
}

}  // namespace spelt
