// Internal: Riegeli's hash, 64-bit HighwayHash keyed with "Riegeli/records\n" twice. It covers
// block headers, chunk headers and chunk data.
#ifndef SPELT_SRC_RIEGELI_HASH_H_
#define SPELT_SRC_RIEGELI_HASH_H_

#include <cstdint>
#include <string_view>

namespace spelt::internal::riegeli {

uint64_t Hash(std::string_view data);

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_HASH_H_
