// Pieces the samplers of spelt/sampler.h share (internal).
#ifndef SPELT_SAMPLING_SAMPLER_COMMON_H_
#define SPELT_SAMPLING_SAMPLER_COMMON_H_

#include <cstdint>
#include <optional>
#include <stdexcept>

namespace spelt::internal {

// Throws std::invalid_argument with Grain's message unless num_records > 0.
void CheckNumRecords(int64_t num_records);

// Grain's IndexError for sampler index `index` outside [0, max_index); nullopt max_index
// (an infinite sampler) prints as None, as in Grain's message.
std::out_of_range SamplerIndexError(int64_t index, std::optional<int64_t> max_index);

// seed + index as a Philox key (Grain: numpy.random.Philox(key=seed + index)), nullopt
// without a seed. Throws std::invalid_argument if the sum is negative.
std::optional<uint64_t> SeedPlusIndex(std::optional<int64_t> seed, int64_t index);

}  // namespace spelt::internal

#endif  // SPELT_SAMPLING_SAMPLER_COMMON_H_
