// The seed of a random transformation (spelt/seeds.h).
#include "spelt/seeds.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

AnySeed ParseAnySeed(std::string_view decimal, std::string_view what) {
  const bool negative = decimal.starts_with('-');
  const std::string_view digits = decimal.substr(negative ? 1 : 0);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    throw std::invalid_argument(std::string(what) + ": seed must be an integer, got '" +
                                std::string(decimal) + "'");
  }
  if (negative && digits.find_first_not_of('0') != std::string_view::npos) {
    throw std::invalid_argument(std::string(what) + ": seed must be non-negative, got " +
                                std::string(decimal));
  }
  std::vector<uint32_t> words = {0};  // least significant first
  for (const char digit : digits) {
    uint64_t carry = static_cast<uint64_t>(digit - '0');
    for (uint32_t& word : words) {
      const uint64_t v = uint64_t{word} * 10 + carry;
      word = static_cast<uint32_t>(v);
      carry = v >> 32;
    }
    if (carry != 0) words.push_back(static_cast<uint32_t>(carry));
  }
  return AnySeed(std::move(words));
}

AnySeed ResolveAnySeed(std::optional<AnySeed> seed, const DatasetNode& parent) {
  return seed ? std::move(*seed) : AnySeed(DefaultSeedOf(parent, "random_map"));
}

}  // namespace spelt
