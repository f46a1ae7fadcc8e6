// ReadThreads (spelt/read_threads.h): one thread-local budget.
#include "spelt/read_threads.h"

#include <algorithm>

namespace spelt {
namespace {

thread_local int read_threads = 1;

}  // namespace

int ReadThreads() { return read_threads; }

ScopedReadThreads::ScopedReadThreads(int threads) : previous_(read_threads) {
  read_threads = std::max(1, threads);
}

ScopedReadThreads::~ScopedReadThreads() { read_threads = previous_; }

}  // namespace spelt
