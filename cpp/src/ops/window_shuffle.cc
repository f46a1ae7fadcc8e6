// WindowShuffleMapDataset and WindowShuffleIterDataset: shuffles within consecutive windows of
// `window_size` elements, window w with index_shuffle seeded by seed + w (mod 2^32) (Grain
// 0.2.18's shuffle.py).
//
// Map: element i of epoch e is the parent's element at the same epoch, shuffled within its
// window. Windows never cross an epoch boundary: the last window of an epoch holds the
// remainder and is shuffled among itself; windows are numbered across epochs
// (ceil(length / window_size) per epoch). Where length is a multiple of window_size this is
// Grain's mapping exactly; otherwise Grain's last window reads indices past the epoch (the next
// epoch's elements) and loses some of its own, which Spelt does not (docs/compatibility.md).
//
// Iter: reads a window of elements from the parent, shuffles it with the window's seed and
// hands it out from its end (Grain's order). State: {"parent_window_start_state": parent state
// before the window, "window_index": w, "pos_in_window": k}; restoring re-reads the window from
// that parent state, reshuffles it with seed + w and drops its first k outputs, in any fresh
// iterator (the window index is part of the state: grain#1179).
#include "ops/window_shuffle.h"

#include <algorithm>

#include "core/iter_op_node.h"
#include "ops/get_many.h"

namespace spelt::internal {
namespace {

uint32_t WindowSeed(uint32_t seed, int64_t window) {
  return static_cast<uint32_t>(seed + static_cast<uint64_t>(window));
}

class WindowShuffleMapNode final : public IndexMapNode {
 public:
  WindowShuffleMapNode(MapNodePtr parent, int64_t window_size, uint32_t seed)
      : IndexMapNode(std::move(parent)), window_size_(window_size), seed_(seed),
        length_(this->parent()->Length()),
        windows_per_epoch_(length_ / window_size + (length_ % window_size != 0)) {}
  std::string Name() const override { return "WindowShuffleMapDataset"; }
  int64_t Length() const override { return length_; }

 private:
  int64_t ParentIndex(int64_t index) const override {
    if (length_ == 0) throw std::out_of_range("window shuffle: index into an empty dataset");
    const int64_t epoch = index / length_;
    const int64_t window = (index % length_) / window_size_;
    const int64_t window_start = epoch * length_ + window * window_size_;
    const int64_t size = std::min(window_size_, length_ - window * window_size_);
    const uint64_t shuffled = IndexShuffle(static_cast<uint64_t>(index - window_start),
                                           static_cast<uint64_t>(size - 1),
                                           WindowSeed(seed_, epoch * windows_per_epoch_ + window));
    return window_start + static_cast<int64_t>(shuffled);
  }

  int64_t window_size_;
  uint32_t seed_;
  int64_t length_;
  int64_t windows_per_epoch_;
};

constexpr const char* kIterName = "WindowShuffleIterDataset";
// State keys (Grain's WindowShuffleIterDataset): the parent's state before the window, the
// window's number, the elements of it already returned.
constexpr char kWindowStartStateKey[] = "parent_window_start_state";
constexpr char kWindowIndexKey[] = "window_index";
constexpr char kPosInWindowKey[] = "pos_in_window";

class WindowShuffleIterator final : public DatasetIterator {
 public:
  WindowShuffleIterator(std::unique_ptr<DatasetIterator> parent, int64_t window_size,
                        uint32_t seed)
      : parent_(std::move(parent)), window_size_(window_size), seed_(seed),
        window_start_state_(parent_->GetState()) {}

  std::optional<Value> Next() override {
    while (window_.empty()) {
      if (parent_exhausted_) return std::nullopt;
      // After an error of the parent, the elements read for this window are kept (filling_)
      // and the window is filled on from there; its start state stays the one before them.
      if (filling_.empty() && restored_skip_ < 0) {
        window_start_state_ = parent_->GetState();
        pos_in_window_ = 0;
      }
      FillAndShuffle();
      if (restored_skip_ >= 0) {  // drop what the restored state had handed out already
        window_.resize(window_.size() - std::min(window_.size(), size_t(restored_skip_)));
        restored_skip_ = -1;
      } else if (window_.empty()) {
        return std::nullopt;
      }
    }
    ++pos_in_window_;
    Value v = std::move(window_.back());
    window_.pop_back();
    if (window_.empty()) ++window_index_;
    return v;
  }

  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    return State{{kWindowStartStateKey, window_start_state_},
                 {kWindowIndexKey, window_index_},
                 {kPosInWindowKey, pos_in_window_}};
  }

  void SetState(const State& state) override {
    const int64_t window_index = StateInt(state, kWindowIndexKey, kIterName);
    const int64_t pos = StateInt(state, kPosInWindowKey, kIterName);
    if (window_index < 0 || pos < 0) {
      throw std::invalid_argument(std::string(kIterName) +
                                  ": window_index and pos_in_window must be non-negative");
    }
    const State& start = StateField(state, kWindowStartStateKey, kIterName);
    parent_->SetState(start);
    window_start_state_ = start;
    window_index_ = window_index;
    pos_in_window_ = pos;
    parent_exhausted_ = false;
    filling_.clear();
    window_.clear();
    restored_skip_ = pos;  // the window is re-read at the next Next(), where errors belong
  }

 private:
  // Reads up to window_size elements (into filling_, which an error of the parent leaves as it
  // is) and orders them as Grain hands them out: position p of the shuffled window is element
  // IndexShuffle(p) of the read ones, and Next() takes the last.
  void FillAndShuffle() {
    while (static_cast<int64_t>(filling_.size()) < window_size_) {
      std::optional<Value> v = parent_->Next();
      if (!v) {
        parent_exhausted_ = true;
        break;
      }
      filling_.push_back(std::move(*v));
    }
    std::vector<Value> read = std::move(filling_);
    filling_.clear();
    window_.clear();
    window_.reserve(read.size());
    const uint32_t seed = WindowSeed(seed_, window_index_);
    for (uint64_t p = 0; p < read.size(); ++p) {
      window_.push_back(read[IndexShuffle(p, read.size() - 1, seed)]);
    }
  }

  std::unique_ptr<DatasetIterator> parent_;
  int64_t window_size_;
  uint32_t seed_;
  State window_start_state_;
  std::vector<Value> window_;   // shuffled; handed out from the back
  std::vector<Value> filling_;  // read for the next window when an error interrupted it
  int64_t restored_skip_ = -1;  // after SetState(): pos_in_window of the window to re-read
  int64_t window_index_ = 0;
  int64_t pos_in_window_ = 0;
  bool parent_exhausted_ = false;
};

}  // namespace

MapNodePtr MakeWindowShuffleMapNode(MapNodePtr parent, int64_t window_size, uint32_t seed) {
  return std::make_shared<WindowShuffleMapNode>(std::move(parent), window_size, seed);
}

IterNodePtr MakeWindowShuffleIterNode(IterNodePtr parent, int64_t window_size, uint32_t seed) {
  return std::make_shared<IterOpNode>(std::move(parent), kIterName, [=](auto p) {
    return std::make_unique<WindowShuffleIterator>(std::move(p), window_size, seed);
  });
}

}  // namespace spelt::internal
