// ReadOptions (spelt/read_options.h).
#include "spelt/read_options.h"

#include <stdexcept>
#include <string>

namespace spelt {

void ReadOptions::Validate() const {
  if (num_threads < 0) {
    throw std::invalid_argument("ReadOptions: num_threads must be >= 0, got " +
                                std::to_string(num_threads));
  }
  if (prefetch_buffer_size < 0) {
    throw std::invalid_argument("ReadOptions: prefetch_buffer_size must be >= 0, got " +
                                std::to_string(prefetch_buffer_size));
  }
}

}  // namespace spelt
