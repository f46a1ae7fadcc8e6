// spelt/seeds.h: the seed of a random transformation placed on a node (shuffle, random_map),
// resolved once, by Grain's rules: the seed passed, checked, or else the default seed derived
// from Seed() upstream (DatasetNode::DefaultSeed). The dataset handles (spelt/dataset.h) and
// the Python face (MapDataset/IterDataset.resolve_seed in spelt._core) both ask here.
// Thread-safe (reads immutable nodes).
#ifndef SPELT_SEEDS_H_
#define SPELT_SEEDS_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "spelt/node.h"
#include "spelt/random.h"

namespace spelt {

// A 32-bit seed (shuffle): `seed` if given (std::invalid_argument naming `what` outside
// [0, 2**32)), else `parent`'s default seed; std::invalid_argument naming `what` if there is
// none.
uint32_t ResolveSeed(std::optional<int64_t> seed, const DatasetNode& parent, const char* what);

// A seed of any size (random_map): `seed` if given, else `parent`'s default seed;
// std::invalid_argument if there is none.
AnySeed ResolveAnySeed(std::optional<AnySeed> seed, const DatasetNode& parent);

// A seed of any size (ds.seed(), random_map) from its decimal digits, as a Python int prints
// (for faces whose ints are wider than 64 bits): Grain's rule (numpy's SeedSequence), any
// non-negative integer. std::invalid_argument "<what>: seed must be non-negative, got <decimal>"
// for a negative one, and naming `what` for text that is not a decimal integer.
AnySeed ParseAnySeed(std::string_view decimal, std::string_view what);

}  // namespace spelt

#endif  // SPELT_SEEDS_H_
