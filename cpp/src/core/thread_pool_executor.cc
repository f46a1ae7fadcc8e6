// MakeThreadPoolExecutor (spelt/executor.h): chunks computed on the process-wide thread pool,
// at most num_threads of one iterator at a time, in submission (= index) order.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/thread_pool.h"
#include "spelt/blocking_wait.h"
#include "spelt/executor.h"

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
  std::mutex mu;
  std::condition_variable idle_cv;  // signalled when `computing` drops to 0
  std::deque<std::shared_ptr<ChunkTask>> tasks;
  int64_t runners = 0;    // submitted to the pool and not finished (some may not have started)
  int64_t computing = 0;  // runners inside ComputeChunk
};

// Runs this iterator's queued chunks one after the other until the queue is empty.
void RunQueue(const std::shared_ptr<Queue>& queue) {
  std::unique_lock<std::mutex> lock(queue->mu);
  while (!queue->tasks.empty()) {
    std::shared_ptr<ChunkTask> task = std::move(queue->tasks.front());
    queue->tasks.pop_front();
    if (task->abandoned.load(std::memory_order_relaxed)) continue;
    ++queue->computing;
    lock.unlock();
    ChunkResult result = ComputeChunk(*queue->node, task->begin, task->count);
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

class PoolChunk final : public PendingChunk {
 public:
  PoolChunk(std::shared_ptr<Queue> queue, std::shared_ptr<ChunkTask> task)
      : queue_(std::move(queue)), task_(std::move(task)) {}
  ~PoolChunk() override { task_->abandoned.store(true, std::memory_order_relaxed); }
  // A serial chunk (Python) that no runner has started is computed here, by the consumer, so
  // that a pipeline used from inside another's pool task never waits for a free pool thread.
  // Else waits for it through BlockingWait (a runner may need the GIL the consumer holds).
  ChunkResult Take() override {
    if (queue_->node->Serial()) {
      std::unique_lock<std::mutex> lock(queue_->mu);
      auto queued = std::find(queue_->tasks.begin(), queue_->tasks.end(), task_);
      if (queued != queue_->tasks.end()) {
        queue_->tasks.erase(queued);
        ++queue_->computing;
        lock.unlock();
        ChunkResult result = ComputeChunk(*queue_->node, task_->begin, task_->count);
        lock.lock();
        if (--queue_->computing == 0) queue_->idle_cv.notify_all();
        return result;
      }
    }
    BlockingWait([this] {
      std::unique_lock<std::mutex> lock(task_->mu);
      task_->done_cv.wait(lock, [this] { return task_->done; });
    });
    return std::move(task_->result);
  }

 private:
  std::shared_ptr<Queue> queue_;
  std::shared_ptr<ChunkTask> task_;
};

class ThreadPoolExecutor final : public ChunkExecutor {
 public:
  ThreadPoolExecutor(std::shared_ptr<const MapNode> node, ReadOptions options)
      : queue_(std::make_shared<Queue>()) {
    if (options.num_threads < 1 || options.prefetch_buffer_size < 1) {
      throw std::invalid_argument(
          "MakeThreadPoolExecutor: num_threads and prefetch_buffer_size must be >= 1");
    }
    // Two chunks in flight per thread that can actually run at once. For a pipeline that
    // calls no Python, more threads than cores only make chunks smaller (a thread hand-off
    // every few elements) without more parallelism. Python code may block instead (I/O, sleep,
    // native code that releases the GIL), so every thread of a serial pipeline may help.
    const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    const int64_t parallel =
        node->Serial() ? options.num_threads : std::min(options.num_threads, cores);
    chunk_size_ = std::clamp<int64_t>(options.prefetch_buffer_size / (2 * parallel), 1, 64);
    queue_->node = std::move(node);
    queue_->max_runners = options.num_threads;
    max_in_flight_ = std::max<int64_t>(1, options.prefetch_buffer_size / chunk_size_);
    // Python code may be slow per element: chunks grow 1, 2, 4, ... so the first elements
    // come without waiting for a whole chunk.
    next_size_ = queue_->node->Serial() ? 1 : chunk_size_;
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
  int64_t MaxInFlight() const override { return max_in_flight_; }
  int64_t NextChunkSize() override {
    const int64_t size = next_size_;
    next_size_ = std::min(next_size_ * 2, chunk_size_);
    return size;
  }
  std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) override {
    auto task = std::make_shared<ChunkTask>();
    task->begin = begin;
    task->count = count;
    bool start_runner = false;
    {
      std::lock_guard<std::mutex> lock(queue_->mu);
      queue_->tasks.push_back(task);
      if (queue_->runners < queue_->max_runners) {
        ++queue_->runners;
        start_runner = true;
      }
    }
    if (start_runner) internal::SharedThreadPool().Submit([queue = queue_] { RunQueue(queue); });
    return std::make_unique<PoolChunk>(queue_, std::move(task));
  }

 private:
  std::shared_ptr<Queue> queue_;
  int64_t chunk_size_ = 1, max_in_flight_ = 1, next_size_ = 1;
};

}  // namespace

std::unique_ptr<ChunkExecutor> MakeThreadPoolExecutor(std::shared_ptr<const MapNode> node,
                                                      ReadOptions options) {
  return std::make_unique<ThreadPoolExecutor>(std::move(node), options);
}

}  // namespace spelt
