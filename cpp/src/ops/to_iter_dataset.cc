// PrefetchIterDataset (Grain's to_iter_dataset): reads a MapDataset in index order, skipping
// filtered elements, with ordered read-ahead of up to prefetch_buffer_size indices on
// num_threads threads. Serial pipelines (see DatasetNode::Serial) and num_threads == 0 read
// in the calling thread. State: {"next_index": n}, the number of indices consumed up to and
// including the last element returned (Grain's layout). An error in element i is raised when
// the consumer reaches i, after every element before it.
#include <algorithm>
#include <exception>
#include <future>

#include "core/nodes.h"
#include "core/thread_pool.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "PrefetchIterDataset";

// Results for indices [begin, begin + size), filled by one pool task.
struct Chunk {
  int64_t begin = 0;
  int64_t size = 0;
  std::vector<std::optional<Value>> values;  // values.size() == error_pos when error is set
  std::exception_ptr error;
  std::promise<void> done;
  std::shared_future<void> ready = done.get_future().share();
};

class PrefetchIterator final : public DatasetIterator {
 public:
  PrefetchIterator(MapNodePtr node, ReadOptions options, bool allow_nones)
      : node_(std::move(node)), options_(options), allow_nones_(allow_nones),
        length_(node_->Length()),
        async_(!node_->Serial() && options.num_threads > 0 && options.prefetch_buffer_size > 0) {
    if (async_) {
      chunk_size_ = std::clamp<int64_t>(
          options.prefetch_buffer_size / (2 * options.num_threads), 1, 64);
      max_chunks_ = std::max<int64_t>(1, options.prefetch_buffer_size / chunk_size_);
    }
  }

  ~PrefetchIterator() override { pool_.reset(); }

  std::optional<Value> Next() override {
    return async_ ? NextAsync() : NextSerial();
  }

  State GetState() const override { return State{{"next_index", next_index_}}; }

  void SetState(const State& state) override {
    const int64_t n = StateInt(state, "next_index", kName);
    if (n < 0 || n > length_) {
      throw std::invalid_argument(std::string(kName) + ": next_index " + std::to_string(n) +
                                  " out of range [0, " + std::to_string(length_) + "]");
    }
    in_flight_.clear();
    next_index_ = n;
    submit_index_ = n;
    pos_in_front_ = 0;
  }

 private:
  std::optional<Value> NextSerial() {
    while (next_index_ < length_) {
      std::optional<Value> v = node_->Get(next_index_++);
      if (v) return v;
      if (allow_nones_) return Value();
    }
    return std::nullopt;
  }

  std::optional<Value> NextAsync() {
    for (;;) {
      Refill();
      if (in_flight_.empty()) return std::nullopt;
      Chunk& c = *in_flight_.front();
      c.ready.wait();
      if (pos_in_front_ < static_cast<int64_t>(c.values.size())) {
        std::optional<Value>& v = c.values[static_cast<size_t>(pos_in_front_++)];
        next_index_ = c.begin + pos_in_front_;
        if (v) return std::move(v);
        if (allow_nones_) return Value();
        continue;
      }
      if (c.error && pos_in_front_ < c.size) {
        std::exception_ptr e = c.error;
        next_index_ = c.begin + ++pos_in_front_;  // step past the failing element
        AdvanceIfDone();
        std::rethrow_exception(e);
      }
      AdvanceIfDone();
    }
  }

  void AdvanceIfDone() {
    Chunk& c = *in_flight_.front();
    if (pos_in_front_ >= c.size) {
      in_flight_.erase(in_flight_.begin());
      pos_in_front_ = 0;
      // Resume after an error: the rest of that chunk was never computed.
    } else if (c.error) {
      // Elements after the error position in this chunk were not computed: recompute them.
      const int64_t restart = c.begin + pos_in_front_;
      in_flight_.clear();
      pos_in_front_ = 0;
      submit_index_ = restart;
    }
  }

  void Refill() {
    if (!pool_) {
      const int64_t threads = std::min(options_.num_threads, max_chunks_);
      pool_ = std::make_unique<ThreadPool>(static_cast<int>(threads));
    }
    while (static_cast<int64_t>(in_flight_.size()) < max_chunks_ && submit_index_ < length_) {
      auto chunk = std::make_shared<Chunk>();
      chunk->begin = submit_index_;
      chunk->size = std::min(chunk_size_, length_ - submit_index_);
      submit_index_ += chunk->size;
      in_flight_.push_back(chunk);
      pool_->Submit([node = node_, chunk] {
        chunk->values.reserve(static_cast<size_t>(chunk->size));
        try {
          for (int64_t i = 0; i < chunk->size; ++i) {
            chunk->values.push_back(node->Get(chunk->begin + i));
          }
        } catch (...) {
          chunk->error = std::current_exception();
        }
        chunk->done.set_value();
      });
    }
  }

  MapNodePtr node_;
  ReadOptions options_;
  bool allow_nones_;
  int64_t length_;
  bool async_;
  int64_t chunk_size_ = 1, max_chunks_ = 1;
  int64_t next_index_ = 0;    // indices consumed by the caller
  int64_t submit_index_ = 0;  // first index not yet submitted
  int64_t pos_in_front_ = 0;  // position inside in_flight_.front()
  std::vector<std::shared_ptr<Chunk>> in_flight_;
  std::unique_ptr<ThreadPool> pool_;
};

class PrefetchNode final : public IterNode {
 public:
  PrefetchNode(MapNodePtr parent, ReadOptions options, bool allow_nones)
      : IterNode({parent}), parent_(std::move(parent)), options_(options),
        allow_nones_(allow_nones) {}
  std::string Name() const override { return kName; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return std::make_unique<PrefetchIterator>(parent_, options_, allow_nones_);
  }

 private:
  MapNodePtr parent_;
  ReadOptions options_;
  bool allow_nones_;
};

}  // namespace

IterNodePtr MakePrefetchNode(MapNodePtr parent, ReadOptions options, bool allow_nones) {
  return std::make_shared<PrefetchNode>(std::move(parent), options, allow_nones);
}

}  // namespace spelt::internal
