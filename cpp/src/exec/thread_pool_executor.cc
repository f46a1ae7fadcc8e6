// MakeThreadPoolExecutor (spelt/executor.h): chunks computed on the process-wide thread pool,
// at most num_threads of one iterator at a time, in submission (= index) order.
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "exec/chunk_sizer.h"
#include "base/thread_pool.h"
#include "spelt/blocking_wait.h"
#include "spelt/executor.h"
#include "spelt/read_threads.h"
#include "spelt/parallel_work.h"

namespace spelt {
namespace {

struct ChunkTask {
  int64_t begin = 0, count = 0;
  std::atomic<bool> abandoned{false};
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  ChunkResult result;
};

// The executor's queue, shared with its runners on the pool (which may outlive the executor).
struct Queue {
  std::shared_ptr<const MapNode> node;
  int64_t max_runners = 1;
  // Runners allowed now: max_runners, or for a node that calls Python 0 until its Python code
  // is seen to block (see PoolChunk::Take).
  int64_t allowed_runners = 1;
  std::mutex mu;
  std::condition_variable idle_cv;  // signalled when `computing` drops to 0
  std::deque<std::shared_ptr<ChunkTask>> tasks;
  int64_t runners = 0;    // submitted to the pool and not finished (some may not have started)
  int64_t computing = 0;  // runners inside ComputeChunk
  int64_t read_threads = 1;  // the iterator's budget for its sources: min(num_threads, cores)
  std::atomic<int64_t> reading{0};  // chunks inside ComputeChunk (ComputeSharingReads)
};

// ComputeChunk with the chunk's share of the iterator's read budget (spelt/read_threads.h):
// read_threads over the chunks being computed at its start, counting itself. The count drops
// before the result is handed over, so a chunk that starts after another's result was taken
// does not count that one.
ChunkResult ComputeSharingReads(Queue& queue, int64_t begin, int64_t count) {
  struct Reading {
    std::atomic<int64_t>& n;
    ~Reading() { n.fetch_sub(1, std::memory_order_relaxed); }
  } reading{queue.reading};
  const int64_t sharing = queue.reading.fetch_add(1, std::memory_order_relaxed) + 1;
  ScopedReadThreads budget(static_cast<int>(std::max<int64_t>(1, queue.read_threads / sharing)));
  return ComputeChunk(*queue.node, begin, count);
}

// Runs this iterator's queued chunks one after the other until the queue is empty.
void RunQueue(const std::shared_ptr<Queue>& queue) {
  std::unique_lock<std::mutex> lock(queue->mu);
  while (!queue->tasks.empty()) {
    std::shared_ptr<ChunkTask> task = std::move(queue->tasks.front());
    queue->tasks.pop_front();
    if (task->abandoned.load(std::memory_order_relaxed)) continue;
    ++queue->computing;
    lock.unlock();
    ChunkResult result = ComputeSharingReads(*queue, task->begin, task->count);
    {
      std::lock_guard<std::mutex> task_lock(task->mu);
      task->result = std::move(result);
      task->done = true;
    }
    task->done_cv.notify_one();
    // Dropped before taking the lock: if the consumer abandoned the chunk, this frees its
    // elements, which may take the GIL (Python objects), and the consumer may hold the GIL
    // while it waits for the lock.
    task.reset();
    lock.lock();
    if (--queue->computing == 0) queue->idle_cv.notify_all();
  }
  --queue->runners;
}

// Claims up to `wanted` more runners, within the allowed number; returns how many to submit
// (with SubmitRunners, after releasing queue.mu). REQUIRES: queue.mu held.
int64_t ClaimRunners(Queue& queue, int64_t wanted) {
  const int64_t n = std::max<int64_t>(0, std::min(queue.allowed_runners - queue.runners, wanted));
  queue.runners += n;
  return n;
}

void SubmitRunners(const std::shared_ptr<Queue>& queue, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    internal::SharedThreadPool().Submit([queue] { RunQueue(queue); });
  }
}

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

// What the consumer measured of the Python chunks it computed alone (only it touches this):
// CPU, wall, and the time in heavy native work (spelt/parallel_work.h). On a busy machine a
// thread's wall time is mostly spent runnable without a CPU, which is not the code waiting:
// once the times say "waits", they are measured again with that time left out of the wall
// (count_runnable; reading it costs a system call per chunk, so only then).
struct ConsumerTimes {
  int64_t cpu_ns = 0, wall_ns = 0, parallel_ns = 0;
  bool count_runnable = false;
};

class PoolChunk final : public PendingChunk {
 public:
  PoolChunk(std::shared_ptr<Queue> queue, std::shared_ptr<ChunkTask> task, ConsumerTimes* times,
            internal::ChunkSizer* sizer)
      : queue_(std::move(queue)), task_(std::move(task)), times_(times), sizer_(sizer) {}
  ~PoolChunk() override { task_->abandoned.store(true, std::memory_order_relaxed); }
  // A chunk that calls Python and that no runner has started is computed here, by the
  // consumer, so that a pipeline used from inside another's pool task never waits for a free
  // pool thread. Python code that holds the GIL gains nothing from threads and loses the
  // hand-offs (2x on cheap sources), so a pipeline that calls Python starts with no runners:
  // the consumer computes every chunk, timing them, and once its chunks have used under a
  // quarter of their wall time in CPU (the code waits: I/O, sleep, native code without the
  // GIL), or over half of it in heavy native work (spelt/parallel_work.h: e.g. image decoding
  // after a Python source), runners start for good, up to num_threads at once.
  // Other chunks are waited for through BlockingWait (a runner may need the consumer's GIL).
  ChunkResult Take() override {
    ChunkResult result = Compute();
    sizer_->Observe(result);
    return result;
  }

 private:
  ChunkResult Compute() {
    if (queue_->node->CallsPython()) {
      std::unique_lock<std::mutex> lock(queue_->mu);
      auto queued = std::find(queue_->tasks.begin(), queue_->tasks.end(), task_);
      if (queued != queue_->tasks.end()) {
        queue_->tasks.erase(queued);
        ++queue_->computing;
        lock.unlock();
        const auto start = std::chrono::steady_clock::now();
        const int64_t cpu_start = ThreadCpuNs();
        const int64_t runnable_start = times_->count_runnable ? ThreadRunnableNs() : 0;
        const int64_t parallel_start = ParallelWorkNs();
        ChunkResult result = ComputeSharingReads(*queue_, task_->begin, task_->count);
        times_->cpu_ns += ThreadCpuNs() - cpu_start;
        times_->parallel_ns += ParallelWorkNs() - parallel_start;
        times_->wall_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - start).count();
        if (times_->count_runnable) times_->wall_ns -= ThreadRunnableNs() - runnable_start;
        lock.lock();
        if (--queue_->computing == 0) queue_->idle_cv.notify_all();
        int64_t start_runners = 0;
        const bool waits = times_->cpu_ns * 4 < times_->wall_ns;
        const bool mostly_native = times_->parallel_ns * 2 > times_->wall_ns;
        if (queue_->allowed_runners == 0 && times_->wall_ns >= kMinTimedNs) {
          if (waits && !mostly_native && !times_->count_runnable) {
            *times_ = ConsumerTimes{.count_runnable = true};  // measure again (ConsumerTimes)
          } else if (waits || mostly_native) {
            queue_->allowed_runners = queue_->max_runners;
            start_runners = ClaimRunners(*queue_, static_cast<int64_t>(queue_->tasks.size()));
          }
        }
        lock.unlock();
        SubmitRunners(queue_, start_runners);
        return result;
      }
    }
    BlockingWait([this] {
      std::unique_lock<std::mutex> lock(task_->mu);
      task_->done_cv.wait(lock, [this] { return task_->done; });
    });
    return std::move(task_->result);
  }

  // Consumer time measured before runners may start for a pipeline that calls Python.
  static constexpr int64_t kMinTimedNs = 2'000'000;

  std::shared_ptr<Queue> queue_;
  std::shared_ptr<ChunkTask> task_;
  ConsumerTimes* times_;  // the executor's, which outlives its chunks
  internal::ChunkSizer* sizer_;  // the executor's
};

class ThreadPoolExecutor final : public ChunkExecutor {
 public:
  ThreadPoolExecutor(std::shared_ptr<const MapNode> node, ReadOptions options)
      : queue_(std::make_shared<Queue>()), sizer_(1, 1) {
    if (options.num_threads < 1 || options.prefetch_buffer_size < 1) {
      throw std::invalid_argument(
          "MakeThreadPoolExecutor: num_threads and prefetch_buffer_size must be >= 1");
    }
    // Two chunks in flight per thread that can actually run at once. For a pipeline that
    // calls no Python, more threads than cores only make chunks smaller (a thread hand-off
    // every few elements) without more parallelism. Python code may block instead (I/O, sleep,
    // native code that releases the GIL), so every thread of a pipeline that calls Python
    // may help.
    const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    const int64_t parallel =
        node->CallsPython() ? options.num_threads : std::min(options.num_threads, cores);
    const int64_t chunk_size =
        std::clamp<int64_t>(options.prefetch_buffer_size / (2 * parallel), 1, 64);
    // Python code may be slow per element: its chunks grow 1, 2, 4, ... so the first elements
    // come without waiting for a whole chunk. Large elements make chunks smaller
    // (exec/chunk_sizer.h).
    sizer_ = internal::ChunkSizer(node->CallsPython() ? 1 : chunk_size, chunk_size);
    queue_->node = std::move(node);
    queue_->max_runners = options.num_threads;
    queue_->read_threads = std::min(options.num_threads, cores);
    queue_->allowed_runners = queue_->node->CallsPython() ? 0 : options.num_threads;
    max_in_flight_ = std::max<int64_t>(1, options.prefetch_buffer_size / chunk_size);
    internal::SharedThreadPool().Reserve(
        static_cast<int>(std::min<int64_t>(options.num_threads, 1024)));
  }
  // Drops the chunks not started and waits for those being computed, so that no callable of
  // the pipeline runs after the iterator is gone (a C++ callable may refer to the caller's
  // locals). Runners that start later find nothing to do.
  ~ThreadPoolExecutor() override {
    BlockingWait([this] {
      std::unique_lock<std::mutex> lock(queue_->mu);
      queue_->tasks.clear();
      queue_->idle_cv.wait(lock, [&] { return queue_->computing == 0; });
    });
  }
  // A pipeline that calls Python, whose chunks the consumer computes alone, keeps none in
  // flight: each is submitted when reached, so its size follows what the chunks before it
  // measured.
  // (allowed_runners changes only on this, the consumer's, thread.)
  int64_t MaxInFlight() const override {
    return queue_->allowed_runners == 0 ? 0 : max_in_flight_;
  }
  int64_t NextChunkSize() override { return sizer_.Next(); }
  std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) override {
    auto task = std::make_shared<ChunkTask>();
    task->begin = begin;
    task->count = count;
    int64_t start_runners = 0;
    {
      std::lock_guard<std::mutex> lock(queue_->mu);
      queue_->tasks.push_back(task);
      start_runners = ClaimRunners(*queue_, 1);
    }
    SubmitRunners(queue_, start_runners);
    return std::make_unique<PoolChunk>(queue_, std::move(task), &times_, &sizer_);
  }

 private:
  std::shared_ptr<Queue> queue_;
  int64_t max_in_flight_ = 1;
  internal::ChunkSizer sizer_;
  ConsumerTimes times_;
};

}  // namespace

std::unique_ptr<ChunkExecutor> MakeThreadPoolExecutor(std::shared_ptr<const MapNode> node,
                                                      ReadOptions options) {
  return std::make_unique<ThreadPoolExecutor>(std::move(node), options);
}

}  // namespace spelt
