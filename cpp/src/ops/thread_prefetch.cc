// ThreadPrefetchIterDataset (Grain's prefetch.py, ThreadPrefetchIterDataset and
// ThreadPrefetchDatasetIterator); see ops/thread_prefetch.h. The producer is a thread of the
// iterator, not a task of the shared pool: it blocks on its parent, whose own read-ahead may
// be waiting for tasks of that pool.
#include "ops/thread_prefetch.h"

#include <stdexcept>
#include <string>
#include <atomic>
#include <set>

#include "spelt/blocking_wait.h"
#include "spelt/thread_prefetch.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "ThreadPrefetchIterDataset";

// The iterators alive in the process (for StopThreadPrefetching), and whether it was called.
std::mutex g_registry_mu;
std::set<ThreadPrefetchIterator*>& Registry() {
  static auto* const registry = new std::set<ThreadPrefetchIterator*>();
  return *registry;
}
std::atomic<bool> g_stopped{false};

// The node's CallsPython() is false even over a parent that calls Python: its iterator calls
// the parent from one thread at a time, and parents that need the GIL take it themselves
// (py_adapters.h), so the consumer need not hold it.
class ThreadPrefetchNode final : public IterNode {
 public:
  ThreadPrefetchNode(IterNodePtr parent, int64_t buffer_size)
      : IterNode({parent}), parent_(std::move(parent)), buffer_size_(buffer_size) {
    clear_calls_python();
  }
  std::string Name() const override { return kName; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return std::make_unique<ThreadPrefetchIterator>(parent_->MakeIterator(), buffer_size_);
  }

 private:
  IterNodePtr parent_;
  int64_t buffer_size_;
};

}  // namespace

ThreadPrefetchIterator::ThreadPrefetchIterator(std::unique_ptr<DatasetIterator> parent,
                                               int64_t buffer_size)
    : parent_(std::move(parent)), buffer_size_(static_cast<size_t>(buffer_size)),
      state_(parent_->GetState()) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  Registry().insert(this);
}

ThreadPrefetchIterator::~ThreadPrefetchIterator() {
  {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    Registry().erase(this);
  }
  Stop();
}

void ThreadPrefetchIterator::StartPrefetch() {
  if (buffer_size_ == 0 || absorbed_ || producer_.joinable() || g_stopped.load()) return;
  if (parent_->AbsorbReadAhead(static_cast<int64_t>(buffer_size_))) {
    absorbed_ = true;
    parent_->StartPrefetch();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = true;
  }
  producer_ = std::thread([this] { Produce(); });
}

void ThreadPrefetchIterator::WaitForProducerToStop() {
  { std::lock_guard<std::mutex> lock(mu_); }  // the producer sees g_stopped at its next check
  cv_.notify_all();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !running_; });
}

void ThreadPrefetchIterator::Produce() {
  while (!g_stopped.load()) {
    Entry entry;
    try {
      entry.value = parent_->Next();
      if (entry.value) entry.state = parent_->GetState();
    } catch (...) {
      entry.error = std::current_exception();
      entry.state = StateAfterError();
    }
    const bool last = !entry.value;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || buffer_.size() < buffer_size_ || g_stopped; });
      if (stop_) break;
      buffer_.push_back(std::move(entry));  // past the buffer size once stopped: kept in order
    }
    cv_.notify_all();
    if (last) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
  }
  cv_.notify_all();
}

State ThreadPrefetchIterator::StateAfterError() const {
  try {
    return parent_->GetState();
  } catch (...) {
    return State();
  }
}

std::optional<Value> ThreadPrefetchIterator::ReadParent() {
  std::optional<Value> v;
  try {
    v = parent_->Next();
  } catch (...) {
    if (State after = StateAfterError(); !after.is_null()) state_ = std::move(after);
    throw;
  }
  if (v) state_ = parent_->GetState();
  return v;
}

std::optional<Value> ThreadPrefetchIterator::Next() {
  if (buffer_size_ == 0) return ReadParent();
  StartPrefetch();
  if (absorbed_) return ReadParent();
  Entry entry;
  bool got = false;
  BlockingWait([&] {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !buffer_.empty() || !running_; });
    if (buffer_.empty()) return;
    entry = std::move(buffer_.front());
    buffer_.pop_front();
    got = true;
  });
  cv_.notify_all();
  if (!got) {  // StopThreadPrefetching() stopped the thread: read here from now on
    if (producer_.joinable()) BlockingWait([this] { producer_.join(); });
    return ReadParent();
  }
  if (!entry.value) {  // the producer has stopped after the end or an error
    BlockingWait([this] { producer_.join(); });
    if (entry.error) {
      // The state the next Next() continues from, so that a checkpoint taken now restores
      // to what this iterator yields next.
      if (!entry.state.is_null()) state_ = std::move(entry.state);
      std::rethrow_exception(entry.error);
    }
    return std::nullopt;
  }
  state_ = std::move(entry.state);
  return std::move(entry.value);
}

void ThreadPrefetchIterator::Stop() {
  if (!producer_.joinable()) return;
  std::deque<Entry> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    dropped.swap(buffer_);
  }
  cv_.notify_all();
  BlockingWait([this] { producer_.join(); });
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = false;
  dropped.insert(dropped.end(), std::make_move_iterator(buffer_.begin()),
                 std::make_move_iterator(buffer_.end()));
  buffer_.clear();
  // `dropped` is destroyed outside the lock (elements may hold Python objects).
}

void ThreadPrefetchIterator::SetState(const State& state) {
  Stop();
  parent_->SetState(state);
  state_ = parent_->GetState();
}

bool ThreadPrefetchingStopped() { return g_stopped.load(); }

void CheckBufferSize(int64_t buffer_size) {
  if (buffer_size < 0) {
    throw std::invalid_argument(
        "`prefetch_buffer_size` must be greater than or equal to 0, got " +
        std::to_string(buffer_size) + ".");
  }
}

IterNodePtr MakeThreadPrefetchNode(IterNodePtr parent, int64_t buffer_size) {
  CheckBufferSize(buffer_size);
  return std::make_shared<ThreadPrefetchNode>(std::move(parent), buffer_size);
}

}  // namespace spelt::internal

namespace spelt {

void StopThreadPrefetching() {
  internal::g_stopped.store(true);
  BlockingWait([] {
    std::lock_guard<std::mutex> lock(internal::g_registry_mu);
    for (internal::ThreadPrefetchIterator* it : internal::Registry()) {
      it->WaitForProducerToStop();
    }
  });
}

std::unique_ptr<DatasetIterator> MakeThreadPrefetchIterator(
    std::unique_ptr<DatasetIterator> parent, int64_t buffer_size) {
  internal::CheckBufferSize(buffer_size);
  return std::make_unique<internal::ThreadPrefetchIterator>(std::move(parent), buffer_size);
}

}  // namespace spelt
