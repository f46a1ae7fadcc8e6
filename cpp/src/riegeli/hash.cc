#include "riegeli/hash.h"

#include <highwayhash/c_bindings.h>

namespace spelt::internal::riegeli {

uint64_t Hash(std::string_view data) {
  // The bytes "Riegeli/records\n" twice, read as little-endian words.
  static const uint64_t kKey[4] = {0x2f696c6567656952, 0x0a7364726f636572,
                                   0x2f696c6567656952, 0x0a7364726f636572};
  return HighwayHash64(kKey, data.data(), data.size());
}

}  // namespace spelt::internal::riegeli
