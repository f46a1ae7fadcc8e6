// Internal: whether work that a thread does in spans (chunks computed by the consumer) mostly
// waits (I/O, a remote store's round trip, sleep, native code without the GIL), mostly runs
// heavy native work (spelt/parallel_work.h), or computes. The executors decide from it:
// the thread-pool executor starts runners for Python chunks that wait, and the inline executor
// makes its chunks larger while they wait, so that one chunk's reads go out together
// (exec/chunk_sizer.h).
//
// It sums the spans' wall time, the thread's CPU time and its heavy native work until they
// cover kMinTimedNs, then judges them and starts again. On a busy machine a thread's wall time
// is mostly spent runnable without a CPU, which is not the work waiting: once the times say
// "waits", they are measured again with that time (the kernel's per-thread schedstat) left out
// of the wall; reading it costs a system call per span, so only then. Reading the thread's CPU
// time costs a system call too (about 0.35 us): spans that follow a short one (under
// kLongSpanNs) are timed one in kSampleEvery, so that cheap chunks (in-memory records) pay
// little for it.
// Thread-compatible: one WorkTimer is used by one thread.
#ifndef SPELT_SRC_EXEC_WORK_TIMER_H_
#define SPELT_SRC_EXEC_WORK_TIMER_H_

#include <chrono>
#include <cstdint>

namespace spelt::internal {

// The times of one span of work on one thread.
struct SpanTimes {
  int64_t cpu_ns = 0;       // the thread's CPU time
  int64_t wall_ns = 0;      // wall time, less the time runnable without a CPU if counted
  int64_t parallel_ns = 0;  // in heavy native work (spelt/parallel_work.h)
  bool runnable_counted = false;
};

// Times one span on the calling thread: Start() and Stop() on the same thread.
class SpanClock {
 public:
  // count_runnable: leave the time runnable without a CPU out of the wall time (a system call
  // more at each end).
  void Start(bool count_runnable);
  SpanTimes Stop() const;

 private:
  bool count_runnable_ = false;
  std::chrono::steady_clock::time_point start_;
  int64_t cpu_start_ = 0, runnable_start_ = 0, parallel_start_ = 0;
};

class WorkTimer {
 public:
  enum class Verdict {
    kUndecided,  // under kMinTimedNs timed since the last verdict, or measured again
    kWaits,      // under a quarter of the wall time on the CPU
    kNative,     // over half of the wall time in heavy native work
    kComputes,   // neither
  };
  // Work timed before a verdict.
  static constexpr int64_t kMinTimedNs = 2'000'000;
  static constexpr int64_t kLongSpanNs = 200'000;
  static constexpr int kSampleEvery = 8;

  // Around each span of work, on the same thread.
  void Begin();
  Verdict End();
  // A span timed elsewhere (on a pool thread; SpanTimes::runnable_counted says whether its
  // wall time needs measuring again).
  Verdict Add(const SpanTimes& span);
  // Whether the next span is worth timing (see the file comment), given that the last one's
  // wall time was `last_span_ns`.
  bool Sample(int64_t last_span_ns) {
    return last_span_ns >= kLongSpanNs || ++spans_ % kSampleEvery == 0;
  }

 private:
  int64_t cpu_ns_ = 0, wall_ns_ = 0, parallel_ns_ = 0;
  bool count_runnable_ = false;
  int64_t last_span_ns_ = kLongSpanNs;  // the wall time of the last span (Begin / End)
  int spans_ = 0;
  bool timed_ = false;  // this span is timed (Begin / End)
  std::chrono::steady_clock::time_point start_;
  SpanClock clock_;
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_EXEC_WORK_TIMER_H_
