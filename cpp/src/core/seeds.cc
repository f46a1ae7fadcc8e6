// The seed of a random transformation (spelt/seeds.h).
#include "spelt/seeds.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace spelt {
namespace {

// The default seed derived from ds.seed() upstream of `parent`; throws if there is none.
uint32_t DefaultSeedOf(const DatasetNode& parent, const char* what) {
  if (auto derived = parent.DefaultSeed()) return *derived;
  throw std::invalid_argument(std::string(what) +
                              ": no seed given and no upstream dataset has one; pass seed= "
                              "or call .seed(...) earlier in the pipeline");
}

}  // namespace

uint32_t ResolveSeed(std::optional<int64_t> seed, const DatasetNode& parent, const char* what) {
  return seed ? CheckSeed(*seed, what) : DefaultSeedOf(parent, what);
}

AnySeed ResolveAnySeed(std::optional<AnySeed> seed, const DatasetNode& parent) {
  return seed ? std::move(*seed) : AnySeed(DefaultSeedOf(parent, "random_map"));
}

}  // namespace spelt
