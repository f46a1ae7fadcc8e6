// spelt/read_threads.h: how many threads a source may use for one GetMany(), its share of the
// reading iterator's thread budget (ReadOptions.num_threads, spelt/executor.h).
//
// Sources never choose their own parallelism: an executor sets the budget on the thread that
// computes a chunk, for the time of that chunk. The thread-pool executor gives each chunk
// min(num_threads, cores) divided by the number of the iterator's chunks being computed when
// it starts (itself included), at least 1: a chunk computed alone may read on all of them,
// chunks computed together read on a share each. Everywhere else (a read outside an iterator, the inline executor, a
// worker process computing its chunk) the budget is 1: the calling thread only.
// Thread-safety: the value is per thread; ScopedReadThreads affects only the thread that makes it.
#ifndef SPELT_READ_THREADS_H_
#define SPELT_READ_THREADS_H_

namespace spelt {

// The calling thread's budget (>= 1).
int ReadThreads();

// Sets the calling thread's budget to max(1, threads) until destroyed, then restores the one
// before (scopes nest).
class ScopedReadThreads {
 public:
  explicit ScopedReadThreads(int threads);
  ~ScopedReadThreads();
  ScopedReadThreads(const ScopedReadThreads&) = delete;
  ScopedReadThreads& operator=(const ScopedReadThreads&) = delete;

 private:
  int previous_;
};

}  // namespace spelt

#endif  // SPELT_READ_THREADS_H_
