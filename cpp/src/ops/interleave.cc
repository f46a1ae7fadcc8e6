// InterleaveIterDataset (Grain 0.2.18's transformations/interleave.py,
// InterleaveDatasetIterator). Datasets 0..count-1 are opened in order into cycle_length slots
// (cycle_length = min(cycle_length, count)); each Next() takes one element from the slot at
// next_index_in_cycle and moves to the next slot; a slot whose iterator ends records that
// iterator's state and takes the next unopened dataset when its turn comes, or is passed over
// once none is left; the stream ends when every slot is empty. Every dataset is read through
// a ThreadPrefetchIterator of iter_buffer_size (as Grain does), so an iterator's state is the
// one after its last element returned, even at its end.
// State: Grain's keys and order (spelt/interleave.h). GetState() opens the slots not yet
// opened, as Grain does, so that their states are known. With num_make_iter_threads > 0, the next make_iter_buffer_size datasets'
// iterators are made (and start prefetching) ahead on threads of their own once the iterator
// has started; restoring drops them (and none are made after StopThreadPrefetching()).
// Every dataset's iterator checks the DatasetOptions of the interleave's iterator (its filter
// thresholds), whenever and on whichever thread it is made.
// Next index (Grain's): only with one dataset, that dataset's, read from its state (0 before
// it is opened) by a new iterator of it, so that the slots are never touched.
#include "ops/interleave.h"

#include <algorithm>
#include <deque>
#include <future>
#include <map>
#include <stdexcept>
#include <string>

#include "spelt/blocking_wait.h"
#include "exec/filter_threshold.h"
#include "ops/thread_prefetch.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "InterleaveIterDataset";

using Options = InterleaveOptions;
using Prefetched = std::unique_ptr<ThreadPrefetchIterator>;

// What the iterators share with the threads that make iterators ahead.
struct Datasets {
  int64_t count = 0;
  std::function<IterNodePtr(int64_t)> node_at;
  int64_t iter_buffer_size = 1;

  Prefetched Make(int64_t index, bool start_prefetch, const DatasetOptions& options) const {
    auto it = std::make_unique<ThreadPrefetchIterator>(
        MakeIteratorWithOptions(*node_at(index), options), iter_buffer_size);
    if (start_prefetch) it->StartPrefetch();
    return it;
  }
};

class InterleaveIterator final : public DatasetIterator {
 public:
  InterleaveIterator(std::shared_ptr<const Datasets> datasets, const Options& options)
      : datasets_(std::move(datasets)),
        options_(std::make_shared<const DatasetOptions>(CurrentDatasetOptions())),
        cycle_(std::min(options.cycle_length, datasets_->count)),
        make_ahead_(options.num_make_iter_threads > 0 ? options.make_iter_buffer_size : 0),
        slots_(static_cast<size_t>(cycle_)) {
    for (int64_t i = 0; i < cycle_; ++i) slots_[i].index = i;
  }
  ~InterleaveIterator() override { DropAhead(); }

  std::optional<Value> Next() override {
    started_ = true;
    if (cycle_ == 0) return std::nullopt;
    for (;;) {
      Slot& slot = slots_[next_in_cycle_];
      if (slot.it) {
        std::optional<Value> v = slot.it->Next();  // an error leaves the position as it was
        next_in_cycle_ = (next_in_cycle_ + 1) % cycle_;
        if (v) return v;
        slot.exhausted_state = slot.it->GetState();
        slot.it.reset();
        continue;
      }
      if (next_in_datasets_ < datasets_->count) {
        Open(slot);
      } else if (!AnyInUse()) {
        return std::nullopt;
      } else {
        next_in_cycle_ = (next_in_cycle_ + 1) % cycle_;
      }
    }
  }

  State GetState() const override {
    State states = State::array();
    for (int64_t i = 0; i < cycle_; ++i) states.push_back(nullptr);
    for (int64_t i = 0; i < cycle_; ++i) {
      Slot& slot = slots_[i];
      if (slot.it) {
        states[i] = slot.it->GetState();
      } else if (slot.exhausted_state) {
        states[i] = *slot.exhausted_state;
      } else if (next_in_datasets_ >= datasets_->count) {
        break;
      } else {
        Open(slot);
        states[i] = slot.it->GetState();
      }
    }
    State indices = State::array(), exhausted = State::array(), future = State::object();
    for (const Slot& slot : slots_) {
      indices.push_back(slot.index);
      exhausted.push_back(slot.exhausted_state ? 1 : 0);
    }
    for (const auto& [index, state] : future_states_) future[std::to_string(index)] = state;
    return State{{kNextIndexInCycleKey, next_in_cycle_},
                 {kNextIndexInDatasetsKey, next_in_datasets_},
                 {kIteratorsInUseIndicesKey, std::move(indices)},
                 {kIteratorsInUseStatesKey, std::move(states)},
                 {kExhaustedKey, std::move(exhausted)},
                 {kFutureStatesKey, std::move(future)}};
  }

  void SetState(const State& state) override {
    const int64_t next_in_cycle = StateInt(state, kNextIndexInCycleKey, kName);
    const int64_t next_in_datasets = StateInt(state, kNextIndexInDatasetsKey, kName);
    const State& indices = StateField(state, kIteratorsInUseIndicesKey, kName);
    const State& states = StateField(state, kIteratorsInUseStatesKey, kName);
    const State& exhausted = StateField(state, kExhaustedKey, kName);
    const int64_t n = static_cast<int64_t>(slots_.size());
    if (!indices.is_array() || !states.is_array() || !exhausted.is_array() ||
        static_cast<int64_t>(indices.size()) != n || static_cast<int64_t>(states.size()) != n ||
        static_cast<int64_t>(exhausted.size()) != n) {
      throw std::invalid_argument(std::string(kName) +
                                  ": 'iterators_in_use_indices', 'iterators_in_use_states' and "
                                  "'exhausted' must be lists of cycle_length = " +
                                  std::to_string(n) + " entries");
    }
    if ((n > 0 && (next_in_cycle < 0 || next_in_cycle >= n)) || next_in_datasets < 0 ||
        next_in_datasets > datasets_->count) {
      throw std::invalid_argument(std::string(kName) + ": 'next_index_in_cycle' " +
                                  std::to_string(next_in_cycle) + " or 'next_index_in_datasets' " +
                                  std::to_string(next_in_datasets) + " out of range");
    }
    std::map<int64_t, State> future = FutureStates(state);
    DropAhead();
    for (int64_t i = 0; i < n; ++i) {
      if (!indices[i].is_number_integer() || indices[i].get<int64_t>() < 0 ||
          indices[i].get<int64_t>() >= datasets_->count || !exhausted[i].is_number_integer()) {
        throw std::invalid_argument(std::string(kName) + ": bad entry " + std::to_string(i) +
                                    " of 'iterators_in_use_indices' or 'exhausted'");
      }
      Slot& slot = slots_[i];
      const int64_t index = indices[i].get<int64_t>();
      slot.exhausted_state.reset();
      if (states[i].is_null()) {
        slot.it.reset();
      } else if (exhausted[i].get<int64_t>() == 0) {
        if (!slot.it || slot.index != index) slot.it = datasets_->Make(index, false, *options_);
        slot.it->SetState(states[i]);
      } else {
        slot.exhausted_state = states[i];
        slot.it.reset();
      }
      slot.index = index;
    }
    next_in_cycle_ = next_in_cycle;
    next_in_datasets_ = next_in_datasets;
    future_states_ = std::move(future);
  }

  void StartPrefetch() override {
    for (Slot& slot : slots_) {
      if (slot.it) slot.it->StartPrefetch();
    }
  }

  int64_t NextIndexOf(const State& state) const override {
    const State& only = OnlyDatasetState(state, "get_next_index");
    return only.is_null() ? 0 : OnlyDatasetIterator()->NextIndexOf(only);
  }

  // The state with the one dataset's iterator (from its start if not yet opened) moved to
  // `index` and not exhausted.
  State StateAtIndex(int64_t index, const State& state) const override {
    const State& only = OnlyDatasetState(state, "set_next_index");
    const Prefetched reader = OnlyDatasetIterator();
    State out = state;
    out[kIteratorsInUseStatesKey][0] =
        reader->StateAtIndex(index, only.is_null() ? reader->GetState() : only);
    out[kExhaustedKey] = State::array({0});
    return out;
  }

 private:
  struct Slot {
    Prefetched it;                        // null: not opened, or exhausted
    int64_t index = 0;                    // dataset read in this slot
    std::optional<State> exhausted_state;  // of the slot's exhausted iterator
  };

  // Grain's rule: get/set_next_index only for an interleave of one dataset.
  const State& OnlyDatasetState(const State& state, const char* what) const {
    if (datasets_->count != 1) {
      throw NextIndexUnsupported(std::string(what) +
                                 " is not supported for InterleaveDatasetIterator with more "
                                 "than one dataset.");
    }
    const State& states = StateField(state, kIteratorsInUseStatesKey, kName);
    if (!states.is_array() || states.size() != 1) {
      throw std::invalid_argument(std::string(kName) + ": '" + kIteratorsInUseStatesKey +
                                  "' must be a list of 1 entry");
    }
    return states[0];
  }

  Prefetched OnlyDatasetIterator() const { return datasets_->Make(0, false, *options_); }

  bool AnyInUse() const {
    for (const Slot& slot : slots_) {
      if (slot.it) return true;
    }
    return false;
  }

  // Opens dataset next_in_datasets_ in `slot`.
  void Open(Slot& slot) const {
    const int64_t index = next_in_datasets_;
    slot.it = Take(index);
    next_in_datasets_ = index + 1;
    slot.exhausted_state.reset();
    slot.index = index;
    if (auto f = future_states_.find(index); f != future_states_.end()) {
      slot.it->SetState(f->second);
      future_states_.erase(f);
    }
  }

  // The iterator of dataset `index` (the next to open): made ahead if it was, else now.
  Prefetched Take(int64_t index) const {
    Prefetched it;
    if (!ahead_.empty() && ahead_begin_ == index) {
      std::future<Prefetched> made = std::move(ahead_.front());
      ahead_.pop_front();
      ++ahead_begin_;
      BlockingWait([&] { it = made.get(); });  // a failure is retried by the next Next()
    } else {
      DropAhead();
      it = datasets_->Make(index, started_, *options_);
    }
    if (started_) MakeAhead(index + 1);
    return it;
  }

  // Starts making the iterators of datasets [begin, begin + make_ahead_) not yet started.
  void MakeAhead(int64_t begin) const {
    if (ThreadPrefetchingStopped()) return;
    if (ahead_.empty()) ahead_begin_ = begin;
    for (int64_t i = ahead_begin_ + static_cast<int64_t>(ahead_.size());
         i < std::min(begin + make_ahead_, datasets_->count); ++i) {
      ahead_.push_back(std::async(std::launch::async,
                                  [d = datasets_, o = options_, i] { return d->Make(i, true, *o); }));
    }
  }

  void DropAhead() const {
    if (ahead_.empty()) return;
    BlockingWait([this] { ahead_.clear(); });  // waits for the threads making them
  }

  static std::map<int64_t, State> FutureStates(const State& state) {
    std::map<int64_t, State> out;
    auto it = state.find(kFutureStatesKey);
    if (it == state.end() || it->is_null()) return out;
    if (!it->is_object()) {
      throw std::invalid_argument(std::string(kName) + ": 'future_states' must be a mapping");
    }
    for (const auto& [key, value] : it->items()) {
      try {
        out[std::stoll(key)] = value;
      } catch (const std::logic_error&) {
        throw std::invalid_argument(std::string(kName) + ": bad 'future_states' key " + key);
      }
    }
    return out;
  }

  std::shared_ptr<const Datasets> datasets_;
  std::shared_ptr<const DatasetOptions> options_;  // of the iterator being made when made
  const int64_t cycle_;
  const int64_t make_ahead_;
  // GetState() opens slots, as Grain's get_state does; hence mutable.
  mutable std::vector<Slot> slots_;
  mutable int64_t next_in_datasets_ = 0;
  mutable std::map<int64_t, State> future_states_;
  mutable std::deque<std::future<Prefetched>> ahead_;  // datasets ahead_begin_, ...
  mutable int64_t ahead_begin_ = 0;
  int64_t next_in_cycle_ = 0;
  bool started_ = false;
};

class InterleaveNode final : public IterNode {
 public:
  InterleaveNode(std::shared_ptr<const Datasets> datasets, Options options)
      : IterNode(std::vector<std::shared_ptr<const DatasetNode>>{}),
        datasets_(std::move(datasets)),
        options_(options) {}
  std::string Name() const override { return kName; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return std::make_unique<InterleaveIterator>(datasets_, options_);
  }

 private:
  std::shared_ptr<const Datasets> datasets_;
  Options options_;
};

}  // namespace

IterNodePtr MakeInterleaveNode(int64_t count, std::function<IterNodePtr(int64_t)> node_at,
                               Options options) {
  auto datasets = std::make_shared<Datasets>();
  datasets->count = count;
  datasets->node_at = std::move(node_at);
  datasets->iter_buffer_size = options.iter_buffer_size;
  return std::make_shared<InterleaveNode>(std::move(datasets), options);
}

}  // namespace spelt::internal
