// spelt/read_options.h: Grain's ReadOptions, the read-ahead of to_iter_dataset
// (MapDataset::ToIter, spelt/dataset.h; the thread-pool executor, spelt/executor.h).
//
// Thread-safety: a plain value.
#ifndef SPELT_READ_OPTIONS_H_
#define SPELT_READ_OPTIONS_H_

#include <cstdint>

namespace spelt {

// Grain's ReadOptions: read-ahead of to_iter_dataset. num_threads == 0 reads in the calling
// thread. Throws std::invalid_argument on negative values (Validate()).
struct ReadOptions {
  int64_t num_threads = 16;
  int64_t prefetch_buffer_size = 500;
  void Validate() const;
};

}  // namespace spelt

#endif  // SPELT_READ_OPTIONS_H_
