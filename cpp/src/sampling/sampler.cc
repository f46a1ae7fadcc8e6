// The Sampler base (spelt/sampler.h) and the pieces its implementations share.
#include <string>

#include "sampling/sampler_common.h"
#include "spelt/sampler.h"

namespace spelt {

void Sampler::RecordKeys(std::span<const int64_t> indices, std::vector<int64_t>* keys) const {
  keys->reserve(keys->size() + indices.size());
  for (const int64_t index : indices) keys->push_back(RecordKey(index));
}

namespace internal {

void CheckNumRecords(int64_t num_records) {
  if (num_records <= 0) {
    throw std::invalid_argument(
        "Invalid number of records in Sampler. Got " + std::to_string(num_records) +
        " records, but number of records must be greater than 0.");
  }
}

std::out_of_range SamplerIndexError(int64_t index, std::optional<int64_t> max_index) {
  return std::out_of_range(
      "RecordMetadata object index is out of bounds; Got index " + std::to_string(index) +
      ", allowed indices should be in [0, " +
      (max_index ? std::to_string(*max_index) : std::string("None")) + "]");
}

std::optional<uint64_t> SeedPlusIndex(std::optional<int64_t> seed, int64_t index) {
  if (!seed) return std::nullopt;
  if (*seed >= 0 && index >= 0) {
    return static_cast<uint64_t>(*seed) + static_cast<uint64_t>(index);  // < 2^64
  }
  const int64_t key = *seed + index;  // one is negative: no overflow
  if (key < 0) {
    throw std::invalid_argument("sampler rng: Philox key seed + index = " +
                                std::to_string(key) + " is negative (seed " +
                                std::to_string(*seed) + ", index " + std::to_string(index) +
                                "); numpy needs a key in [0, 2**128)");
  }
  return static_cast<uint64_t>(key);
}

}  // namespace internal
}  // namespace spelt
