// WorkTimer (exec/work_timer.h).
#include "exec/work_timer.h"

#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>

#include "spelt/parallel_work.h"

namespace spelt::internal {
namespace {

int64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// The calling thread's schedstat file, open while the thread lives. A forked child's one
// thread reopens its own (the inherited descriptor reads the parent's thread).
class SchedstatFile {
 public:
  SchedstatFile() { Open(); }
  ~SchedstatFile() { Close(); }
  SchedstatFile(const SchedstatFile&) = delete;
  SchedstatFile& operator=(const SchedstatFile&) = delete;
  int fd() const { return fd_; }

  static SchedstatFile& OfThisThread() {
    static const bool reopen_after_fork = [] {
      return pthread_atfork(nullptr, nullptr, [] { OfThisThread().Reopen(); }) == 0;
    }();
    (void)reopen_after_fork;
    thread_local SchedstatFile file;
    return file;
  }

 private:
  void Open() { fd_ = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
  }
  void Reopen() {
    Close();
    Open();
  }

  int fd_ = -1;
};

// The calling thread's total time runnable but waiting for a CPU, in ns: the second field of
// the kernel's per-thread schedstat (Documentation/scheduler/sched-stats.rst), updated when
// the thread gets a CPU. 0 without /proc (or before Linux 3.17).
int64_t ThreadRunnableNs() {
  const int fd = SchedstatFile::OfThisThread().fd();
  char text[96];
  const ssize_t n = fd < 0 ? -1 : ::pread(fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return 0;
  text[n] = '\0';
  char* end = nullptr;
  std::strtoll(text, &end, 10);  // the CPU time, updated only at ticks: not used
  return std::strtoll(end, nullptr, 10);
}

}  // namespace

void SpanClock::Start(bool count_runnable) {
  count_runnable_ = count_runnable;
  start_ = std::chrono::steady_clock::now();
  cpu_start_ = ThreadCpuNs();
  runnable_start_ = count_runnable ? ThreadRunnableNs() : 0;
  parallel_start_ = ParallelWorkNs();
}

SpanTimes SpanClock::Stop() const {
  SpanTimes span;
  span.cpu_ns = ThreadCpuNs() - cpu_start_;
  span.parallel_ns = ParallelWorkNs() - parallel_start_;
  span.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start_).count();
  if (count_runnable_) span.wall_ns -= ThreadRunnableNs() - runnable_start_;
  span.runnable_counted = count_runnable_;
  return span;
}

void WorkTimer::Begin() {
  timed_ = Sample(last_span_ns_);
  start_ = std::chrono::steady_clock::now();
  if (timed_) clock_.Start(count_runnable_);
}

WorkTimer::Verdict WorkTimer::End() {
  last_span_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start_).count();
  return timed_ ? Add(clock_.Stop()) : Verdict::kUndecided;
}

WorkTimer::Verdict WorkTimer::Add(const SpanTimes& span) {
  cpu_ns_ += span.cpu_ns;
  parallel_ns_ += span.parallel_ns;
  wall_ns_ += span.wall_ns;
  if (wall_ns_ < kMinTimedNs) return Verdict::kUndecided;
  const bool waits = cpu_ns_ * 4 < wall_ns_;
  const bool native = parallel_ns_ * 2 > wall_ns_;
  cpu_ns_ = wall_ns_ = parallel_ns_ = 0;
  if (native) return Verdict::kNative;
  if (!waits) return Verdict::kComputes;
  if (span.runnable_counted) return Verdict::kWaits;
  count_runnable_ = true;  // measure again (Begin / End)
  return Verdict::kUndecided;
}

}  // namespace spelt::internal
