// ShardOptions and EvenSplit (spelt/shard_options.h), as Grain's grain/_src/core/sharding.py.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "spelt/shard_options.h"

namespace spelt {

void ShardOptions::Validate() const {
  if (shard_count <= 0) {
    throw std::invalid_argument("Number of shards must be a positive integer but got " +
                                std::to_string(shard_count) + ".");
  }
  if (shard_index < 0 || shard_index >= shard_count) {
    throw std::invalid_argument(
        "Shard shard_index must be in [0, shard_count - 1], shard_count was " +
        std::to_string(shard_count) + " and shard_index was " + std::to_string(shard_index) +
        ".");
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

}  // namespace spelt
