// ScopedParallelWork and ParallelWorkNs (spelt/parallel_work.h).
#include "spelt/parallel_work.h"

#include <chrono>

namespace spelt {
namespace {

thread_local int64_t total_ns = 0;
thread_local int depth = 0;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int64_t ParallelWorkNs() { return total_ns; }

ScopedParallelWork::ScopedParallelWork() {
  if (depth++ == 0) start_ns_ = NowNs();
}

ScopedParallelWork::~ScopedParallelWork() {
  --depth;
  if (start_ns_ >= 0) total_ns += NowNs() - start_ns_;
}

}  // namespace spelt
