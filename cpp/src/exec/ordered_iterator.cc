// The ordered iterator of spelt/executor.h: chunks of consecutive indices computed by an
// executor, handed out in index order. State: {"next_index": n} (Grain's
// PrefetchDatasetIterator layout), the indices consumed up to and including the last element
// returned; chunks in flight never count. Its next index is n.
#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

#include "exec/filter_threshold.h"
#include "core/nodes.h"
#include "spelt/executor.h"

namespace spelt {
namespace {

constexpr const char* kName = "PrefetchIterDataset";

class OrderedIterator final : public DatasetIterator {
 public:
  OrderedIterator(int64_t length, bool allow_nones, std::unique_ptr<ChunkExecutor> executor,
                  std::string name)
      : length_(length), allow_nones_(allow_nones), executor_(std::move(executor)),
        checker_(std::move(name)) {
    if (!executor_) throw std::invalid_argument("MakeOrderedIterator: null executor");
  }

  std::optional<Value> Next() override {
    for (;;) {
      if (position_ < static_cast<int64_t>(current_.values.size())) {
        std::optional<Value>& v = current_.values[static_cast<size_t>(position_++)];
        next_index_ = current_.begin + position_;
        checker_.Check(v || allow_nones_);
        if (v) return std::move(v);
        if (allow_nones_) return Value();
        continue;
      }
      if (current_.error) {
        std::exception_ptr error = current_.error;
        next_index_ = current_.begin + position_ + 1;  // step past the failing element
        Restart();  // the rest of that chunk was never computed
        std::rethrow_exception(error);
      }
      if (next_index_ >= length_) return std::nullopt;
      TakeNextChunk();
    }
  }

  State GetState() const override { return internal::PositionState(next_index_); }

  void SetState(const State& state) override {
    next_index_ = internal::StateNextIndex(state, length_, kName);
    Restart();
  }

  int64_t NextIndexOf(const State& state) const override {
    return internal::StateInt(state, kNextIndexKey, kName);
  }
  State StateAtIndex(int64_t index, const State& /*state*/) const override {
    return internal::PositionState(index);
  }

 private:
  // Continues from next_index_: drops the current chunk and abandons those in flight.
  void Restart() {
    in_flight_.clear();
    current_ = ChunkResult();
    current_.begin = next_index_;
    position_ = 0;
    submit_index_ = next_index_;
  }

  // Submits chunks until `limit` are in flight or every index is submitted.
  void Refill(int64_t limit) {
    while (static_cast<int64_t>(in_flight_.size()) < limit && submit_index_ < length_) {
      const int64_t count = std::min(executor_->NextChunkSize(), length_ - submit_index_);
      in_flight_.push_back(executor_->Submit(submit_index_, count));
      submit_index_ += count;
    }
  }

  void TakeNextChunk() {
    try {
      Refill(std::max<int64_t>(executor_->MaxInFlight(), 1));
      std::unique_ptr<PendingChunk> chunk = std::move(in_flight_.front());
      in_flight_.pop_front();
      Refill(executor_->MaxInFlight());  // keep the executor busy while this chunk is consumed
      current_ = chunk->Take();
      position_ = 0;
    } catch (...) {
      Restart();  // the executor failed: nothing consumed, nothing in flight
      throw;
    }
  }

  const int64_t length_;
  const bool allow_nones_;
  std::unique_ptr<ChunkExecutor> executor_;
  int64_t next_index_ = 0;    // indices consumed by the caller
  int64_t submit_index_ = 0;  // first index not yet submitted
  ChunkResult current_;       // the chunk being consumed
  int64_t position_ = 0;      // in current_.values
  std::deque<std::unique_ptr<PendingChunk>> in_flight_;  // index order, after current_
  internal::FilterThresholdChecker checker_;  // of the elements a filter removed
};

}  // namespace

std::unique_ptr<DatasetIterator> MakeOrderedIterator(int64_t length, bool allow_nones,
                                                     std::unique_ptr<ChunkExecutor> executor,
                                                     std::string name) {
  return std::make_unique<OrderedIterator>(length, allow_nones, std::move(executor),
                                           std::move(name));
}

}  // namespace spelt
