// MakeThreadPoolExecutor (spelt/executor.h): chunks computed as the tasks of an OrderedWindow
// (base/ordered_window.h) on the process-wide thread pool, at most num_threads of one
// iterator at a time, taken in submission (= index) order.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "base/ordered_window.h"
#include "base/thread_pool.h"
#include "exec/chunk_sizer.h"
#include "exec/work_timer.h"
#include "spelt/executor.h"
#include "spelt/read_threads.h"

namespace spelt {
namespace {

// A chunk computed by a task of the window, and how long it took there.
struct Computed {
  ChunkResult result;
  int64_t wall_ns = 0;
  std::optional<internal::SpanTimes> times;  // if the task was timed
};

class ThreadPoolExecutor final : public ChunkExecutor {
 public:
  ThreadPoolExecutor(std::shared_ptr<const MapNode> node, ReadOptions options)
      : node_(std::move(node)),
        calls_python_(node_->CallsPython()),
        max_runners_(options.num_threads),
        read_threads_(std::min<int64_t>(options.num_threads, Cores())),
        allowed_runners_(calls_python_ ? 0 : options.num_threads),
        sizer_(1, 1),
        window_({.max_helpers = static_cast<int>(std::min<int64_t>(allowed_runners_, 1024)),
                 .consumer_runs = calls_python_ ? internal::OrderedWindow::ConsumerRuns::kOldest
                                                : internal::OrderedWindow::ConsumerRuns::kNone}) {
    if (options.num_threads < 1 || options.prefetch_buffer_size < 1) {
      throw std::invalid_argument(
          "MakeThreadPoolExecutor: num_threads and prefetch_buffer_size must be >= 1");
    }
    const int64_t chunk_size = ChunkSize(options.prefetch_buffer_size);
    // Python code may be slow per element: its chunks grow 1, 2, 4, ... so the first elements
    // come without waiting for a whole chunk. Large elements make chunks smaller
    // (exec/chunk_sizer.h).
    sizer_ = internal::ChunkSizer(calls_python_ ? 1 : chunk_size, chunk_size);
    max_in_flight_ = std::max<int64_t>(1, options.prefetch_buffer_size / chunk_size);
    internal::SharedThreadPool().Reserve(
        static_cast<int>(std::min<int64_t>(options.num_threads, 1024)));
  }
  // window_ goes first: it drops the chunks not started and waits for those being computed,
  // so that no callable of the pipeline runs after the iterator is gone (a C++ callable may
  // refer to the caller's locals).
  ~ThreadPoolExecutor() override = default;

  // A pipeline that calls Python, whose chunks the consumer computes alone, keeps none in
  // flight: each is submitted when reached, so its size follows what the chunks before it
  // measured. The first chunk of any pipeline is one element, alone in flight: until an
  // element's size is known, chunks cannot be sized in bytes, and the read-ahead submitted
  // before the first is taken (max_in_flight_ + 1 chunks of up to ChunkSizer::kUnsizedChunk
  // elements) was all of a short epoch: 64 batches of 12.8 MB, 820 MB and 8,192 remote reads
  // before the first batch (docs/remote.md, run 6).
  int64_t MaxInFlight() const override {
    return allowed_runners_ == 0 || !first_taken_ ? 0 : max_in_flight_;
  }
  int64_t NextChunkSize() override { return first_taken_ ? sizer_.Next() : 1; }
  std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) override;
  void SetReadAhead(int64_t elements) override {
    const int64_t chunk_size = ChunkSize(elements);
    sizer_.SetMax(chunk_size);
    max_in_flight_ = std::max<int64_t>(1, elements / chunk_size);
  }

  // Takes the oldest chunk not taken nor dropped, whose task leaves it in `computed`.
  // A chunk that calls Python and that no runner has started is computed here, by the
  // consumer, so that a pipeline used from inside another's pool task never waits for a free
  // pool thread. Python code that holds the GIL gains nothing from threads and loses the
  // hand-offs (2x on cheap sources), so a pipeline that calls Python starts with no runners:
  // the consumer computes every chunk, timing them (exec/work_timer.h), and once its chunks
  // have used under a quarter of their wall time in CPU (the code waits: I/O, sleep, native
  // code without the GIL), or over half of it in heavy native work (spelt/parallel_work.h:
  // e.g. image decoding after a Python source), runners start for good, up to num_threads at
  // once.
  // Other chunks are waited for through BlockingWait (a runner may need the consumer's GIL).
  // Chunks that the runners computed are timed too (a sample of them, exec/work_timer.h): while
  // they wait (reads from a remote store), their byte limit grows (exec/chunk_sizer.h), so that
  // the reads in flight approach prefetch_buffer_size elements rather than a few MiB; their
  // element limit stays, and with it the elements read ahead.
  ChunkResult Take(Computed& computed);
  void Drop(uint64_t number) { window_.Drop(number); }

 private:
  static int64_t Cores() { return std::max<int64_t>(1, std::thread::hardware_concurrency()); }

  // Elements per chunk for `read_ahead` elements ahead: two chunks in flight per thread that
  // can actually run at once. For a pipeline that calls no Python, more threads than cores only
  // make chunks smaller (a thread hand-off every few elements) without more parallelism.
  // Python code may block instead (I/O, sleep, native code that releases the GIL), so every
  // thread of a pipeline that calls Python may help.
  int64_t ChunkSize(int64_t read_ahead) const {
    const int64_t parallel = calls_python_ ? max_runners_ : read_threads_;
    return std::clamp<int64_t>(read_ahead / (2 * parallel), 1, 64);
  }

  // ComputeChunk with the chunk's share of the iterator's read budget (spelt/read_threads.h):
  // read_threads_ over the chunks being computed at its start, counting itself. The count
  // drops before the result is handed over, so a chunk that starts after another's result
  // was taken does not count that one.
  ChunkResult ComputeSharingReads(int64_t begin, int64_t count) {
    struct Reading {
      std::atomic<int64_t>& n;
      ~Reading() { n.fetch_sub(1, std::memory_order_relaxed); }
    } reading{reading_};
    const int64_t sharing = reading_.fetch_add(1, std::memory_order_relaxed) + 1;
    ScopedReadThreads budget(static_cast<int>(std::max<int64_t>(1, read_threads_ / sharing)));
    return ComputeChunk(*node_, begin, count);
  }

  const std::shared_ptr<const MapNode> node_;
  const bool calls_python_;
  const int64_t max_runners_;
  const int64_t read_threads_;  // the iterator's budget for its sources: min(num_threads, cores)
  // Runners allowed: max_runners_, or for a node that calls Python 0 until its Python code is
  // seen to block (see Take). Used on the consumer's thread only.
  int64_t allowed_runners_;
  std::atomic<int64_t> reading_{0};  // chunks inside ComputeSharingReads
  int64_t max_in_flight_ = 1;
  bool first_taken_ = false;  // a chunk was taken (its element's size is known, if kept)
  internal::ChunkSizer sizer_;
  internal::WorkTimer timer_;       // the consumer's Python chunks (see Take)
  internal::WorkTimer pool_timer_;  // the runners' chunks (see Take)
  int64_t last_chunk_ns_ = internal::WorkTimer::kLongSpanNs;  // the last taken chunk's wall time
  internal::OrderedWindow window_;  // declared last: destroyed first
};

class PoolChunk final : public PendingChunk {
 public:
  PoolChunk(ThreadPoolExecutor& executor, uint64_t number, std::shared_ptr<Computed> computed)
      : executor_(executor), number_(number), computed_(std::move(computed)) {}
  ~PoolChunk() override {
    if (!taken_) executor_.Drop(number_);
  }
  ChunkResult Take() override {
    taken_ = true;
    return executor_.Take(*computed_);
  }

 private:
  ThreadPoolExecutor& executor_;  // outlives its chunks
  const uint64_t number_;         // in the executor's window
  const std::shared_ptr<Computed> computed_;  // written by the chunk's task
  bool taken_ = false;
};

std::unique_ptr<PendingChunk> ThreadPoolExecutor::Submit(int64_t begin, int64_t count) {
  auto computed = std::make_shared<Computed>();
  const bool timed = allowed_runners_ > 0 && pool_timer_.Sample(last_chunk_ns_);
  const uint64_t number = window_.Submit([this, computed, begin, count, timed] {
    const auto start = std::chrono::steady_clock::now();
    internal::SpanClock clock;
    if (timed) clock.Start(/*count_runnable=*/true);
    computed->result = ComputeSharingReads(begin, count);
    if (timed) computed->times = clock.Stop();
    computed->wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - start).count();
  });
  return std::make_unique<PoolChunk>(*this, number, std::move(computed));
}

ChunkResult ThreadPoolExecutor::Take(Computed& computed) {
  if (allowed_runners_ > 0) {
    window_.Take();
    last_chunk_ns_ = computed.wall_ns;
    if (computed.times) {
      switch (pool_timer_.Add(*computed.times)) {
        case internal::WorkTimer::Verdict::kWaits:
          sizer_.Widen(/*elements=*/false);
          break;
        case internal::WorkTimer::Verdict::kNative:
        case internal::WorkTimer::Verdict::kComputes:
          sizer_.Narrow();
          break;
        case internal::WorkTimer::Verdict::kUndecided:
          break;
      }
    }
  } else {  // the chunk calls Python and is computed here (no runner may start): timed
    timer_.Begin();
    window_.Take();
    const internal::WorkTimer::Verdict verdict = timer_.End();
    if (verdict == internal::WorkTimer::Verdict::kWaits ||
        verdict == internal::WorkTimer::Verdict::kNative) {
      allowed_runners_ = max_runners_;
      window_.SetMaxHelpers(static_cast<int>(std::min<int64_t>(max_runners_, 1024)));
    }
  }
  ChunkResult taken = std::move(computed.result);
  sizer_.Observe(taken);
  first_taken_ = true;
  return taken;
}

}  // namespace

std::unique_ptr<ChunkExecutor> MakeThreadPoolExecutor(std::shared_ptr<const MapNode> node,
                                                      ReadOptions options) {
  return std::make_unique<ThreadPoolExecutor>(std::move(node), options);
}

}  // namespace spelt
