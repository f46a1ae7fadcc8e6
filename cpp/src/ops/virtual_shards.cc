// VirtualShardIterDataset's round robin over one host's virtual shards (spelt/virtual_shards.h
// has the order and the state; python/spelt/virtual_shards.py the Python face). The turn is
// an index into the live shards, so that reading the next shard's element is one virtual call.
#include "ops/virtual_shards.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace spelt::internal {
namespace {

constexpr const char* kName = "VirtualShardIterDataset";
constexpr const char* kKeys[] = {"num_virtual_shards", "shard_index", "shard_count",
                                 "next_shard", "shards"};

class VirtualShardsIterator final : public DatasetIterator {
 public:
  VirtualShardsIterator(std::vector<std::unique_ptr<DatasetIterator>> shards,
                        int64_t num_virtual_shards, int64_t shard_index, int64_t shard_count)
      : shards_(std::move(shards)), k_(num_virtual_shards), index_(shard_index),
        count_(shard_count) {
    for (size_t slot = 0; slot < shards_.size(); ++slot) live_.push_back(slot);
  }

  std::optional<Value> Next() override {
    while (!live_.empty()) {
      std::optional<Value> v = shards_[live_[turn_]]->Next();
      if (v) {
        if (++turn_ == live_.size()) turn_ = 0;
        return v;
      }
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(turn_));
      if (turn_ == live_.size()) turn_ = 0;
    }
    return std::nullopt;
  }

  void StartPrefetch() override {
    for (const auto& shard : shards_) shard->StartPrefetch();
  }

  State GetState() const override {
    std::vector<bool> live(shards_.size(), false);
    for (size_t slot : live_) live[slot] = true;
    State shards = State::object();
    for (size_t slot = 0; slot < shards_.size(); ++slot) {
      shards[std::to_string(Owned(slot))] =
          State{{"exhausted", live[slot] ? 0 : 1}, {"state", shards_[slot]->GetState()}};
    }
    return State{{kKeys[0], k_},
                 {kKeys[1], index_},
                 {kKeys[2], count_},
                 {kKeys[3], live_.empty() ? int64_t{-1} : Owned(live_[turn_])},
                 {kKeys[4], std::move(shards)}};
  }

  void SetState(const State& state) override {
    CheckKeys(state);
    if (StateInt(state, kKeys[0], kName) != k_) {
      throw std::invalid_argument("the state has " + state[kKeys[0]].dump() +
                                  " virtual shards, this dataset " + std::to_string(k_));
    }
    const State& shards = state[kKeys[4]];
    std::string missing;
    for (size_t slot = 0; slot < shards_.size(); ++slot) {
      if (!shards.contains(std::to_string(Owned(slot)))) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(Owned(slot));
      }
    }
    if (!missing.empty()) {
      throw std::invalid_argument(
          "the state lacks virtual shards " + missing + " of this host (shard " +
          std::to_string(index_) + " of " + std::to_string(count_) +
          "); restore on another host count from merge_states() of all hosts' states");
    }
    const int64_t next = StateInt(state, kKeys[3], kName);
    std::vector<size_t> live;
    for (size_t slot = 0; slot < shards_.size(); ++slot) {
      const State& shard = shards[std::to_string(Owned(slot))];
      shards_[slot]->SetState(StateField(shard, "state", kName));
      const State& exhausted = StateField(shard, "exhausted", kName);
      if (!exhausted.is_boolean() && !exhausted.is_number_integer()) {
        throw std::invalid_argument(std::string(kName) + ": 'exhausted' must be 0 or 1, got " +
                                    exhausted.dump());
      }
      if (!(exhausted.is_boolean() ? exhausted.get<bool>() : exhausted.get<int64_t>() != 0)) {
        live.push_back(slot);
      }
    }
    live_ = std::move(live);
    turn_ = 0;
    for (size_t p = 0; p < live_.size(); ++p) {
      if (Owned(live_[p]) == next) turn_ = p;
    }
  }

 private:
  int64_t Owned(size_t slot) const { return index_ + static_cast<int64_t>(slot) * count_; }

  static void CheckKeys(const State& state) {
    bool ok = state.is_object() && state.size() == std::size(kKeys);
    for (const char* key : kKeys) ok = ok && state.contains(key);
    if (!ok || !state[kKeys[4]].is_object()) {
      throw std::invalid_argument(
          "a VirtualShardIterDataset state is a dict with keys ['next_shard',"
          " 'num_virtual_shards', 'shard_count', 'shard_index', 'shards'], got " +
          state.dump());
    }
  }

  std::vector<std::unique_ptr<DatasetIterator>> shards_;  // slot i: shard index_ + i * count_
  int64_t k_, index_, count_;
  std::vector<size_t> live_;  // slots not exhausted, in shard order
  size_t turn_ = 0;           // position in live_ of the shard read next
};

class VirtualShardsNode final : public IterNode {
 public:
  VirtualShardsNode(std::vector<IterNodePtr> shards, int64_t num_virtual_shards,
                    int64_t shard_index, int64_t shard_count)
      : IterNode({shards.begin(), shards.end()}), shards_(std::move(shards)),
        k_(num_virtual_shards), index_(shard_index), count_(shard_count) {}
  std::string Name() const override { return kName; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    std::vector<std::unique_ptr<DatasetIterator>> its;
    for (const IterNodePtr& shard : shards_) its.push_back(shard->MakeIterator());
    return std::make_unique<VirtualShardsIterator>(std::move(its), k_, index_, count_);
  }

 private:
  std::vector<IterNodePtr> shards_;
  int64_t k_, index_, count_;
};

}  // namespace

IterNodePtr MakeVirtualShardsNode(std::vector<IterNodePtr> shards, int64_t num_virtual_shards,
                                  int64_t shard_index, int64_t shard_count) {
  if (shard_count <= 0 || shard_index < 0 || shard_index >= shard_count ||
      shard_count > num_virtual_shards) {
    throw std::invalid_argument(
        "virtual shards: need 0 <= shard_index < shard_count <= num_virtual_shards, got " +
        std::to_string(shard_index) + ", " + std::to_string(shard_count) + ", " +
        std::to_string(num_virtual_shards));
  }
  const int64_t owned = (num_virtual_shards - shard_index + shard_count - 1) / shard_count;
  if (static_cast<int64_t>(shards.size()) != owned) {
    throw std::invalid_argument("virtual shards: host " + std::to_string(shard_index) + " of " +
                                std::to_string(shard_count) + " owns " + std::to_string(owned) +
                                " of " + std::to_string(num_virtual_shards) + " shards, got " +
                                std::to_string(shards.size()) + " pipelines");
  }
  return std::make_shared<VirtualShardsNode>(std::move(shards), num_virtual_shards, shard_index,
                                             shard_count);
}

}  // namespace spelt::internal
