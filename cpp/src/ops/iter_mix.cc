// MixedIterDataset (Grain's mix.py, _MixedDatasetIterator): element k comes from parent
// MixRoute(k, proportions).parent, the same selection as MixedMapDataset. The stream stops for
// good as soon as the selected parent is exhausted or raises (then "stop" is true), even if
// other parents have elements left, as in Grain. State: {"parents": [...] or {key: ...},
// "index": k, "stop": bool}; restoring an object of states sets only the keys present.
#include "ops/iter_mix.h"

#include <stdexcept>

#include "ops/mix.h"

namespace spelt::internal {
namespace {

constexpr const char* kName = "MixedIterDataset";
// State keys (Grain's MixedIterDataset): the parents' states, the next element's index, and
// whether a parent ended.
constexpr char kIndexKey[] = "index";
constexpr char kStopKey[] = "stop";

class MixIterator final : public DatasetIterator {
 public:
  MixIterator(std::vector<std::unique_ptr<DatasetIterator>> parents,
              std::vector<int64_t> proportions, std::vector<std::string> keys)
      : parents_(std::move(parents)), proportions_(std::move(proportions)),
        keys_(std::move(keys)) {}
  std::optional<Value> Next() override {
    if (stop_) return std::nullopt;
    const size_t input = MixRoute(index_, proportions_).parent;
    ++index_;
    std::optional<Value> v;
    try {
      v = parents_[input]->Next();
    } catch (...) {
      stop_ = true;
      throw;
    }
    if (!v) stop_ = true;
    return v;
  }
  void StartPrefetch() override {
    for (const auto& parent : parents_) parent->StartPrefetch();
  }
  State GetState() const override {
    State parents = keys_.empty() ? State::array() : State::object();
    for (size_t i = 0; i < parents_.size(); ++i) {
      if (keys_.empty()) {
        parents.push_back(parents_[i]->GetState());
      } else {
        parents[keys_[i]] = parents_[i]->GetState();
      }
    }
    return State{{kParentsKey, std::move(parents)}, {kIndexKey, index_}, {kStopKey, stop_}};
  }
  void SetState(const State& state) override {
    const State& parents = StateField(state, kParentsKey, kName);
    const int64_t index = StateInt(state, kIndexKey, kName);
    const State& stop = StateField(state, kStopKey, kName);
    if (index < 0) throw std::invalid_argument(std::string(kName) + ": negative index");
    if (!stop.is_boolean()) throw std::invalid_argument(std::string(kName) + ": bad 'stop'");
    if (keys_.empty()) {
      if (!parents.is_array() || parents.size() != parents_.size()) {
        throw std::invalid_argument(std::string(kName) + ": 'parents' must be a list of " +
                                    std::to_string(parents_.size()) + " states");
      }
      for (size_t i = 0; i < parents_.size(); ++i) parents_[i]->SetState(parents[i]);
    } else {
      if (!parents.is_object()) {
        throw std::invalid_argument(std::string(kName) + ": 'parents' must be an object");
      }
      for (size_t i = 0; i < parents_.size(); ++i) {
        auto it = parents.find(keys_[i]);
        if (it != parents.end() && !it->is_null()) parents_[i]->SetState(*it);
      }
    }
    index_ = index;
    stop_ = stop.get<bool>();
  }

 private:
  std::vector<std::unique_ptr<DatasetIterator>> parents_;
  std::vector<int64_t> proportions_;
  std::vector<std::string> keys_;
  int64_t index_ = 0;
  bool stop_ = false;
};

class MixIterNode final : public IterNode {
 public:
  MixIterNode(std::vector<IterNodePtr> parents, std::vector<int64_t> proportions,
              std::vector<std::string> keys)
      : IterNode({parents.begin(), parents.end()}), parents_(std::move(parents)),
        proportions_(std::move(proportions)), keys_(std::move(keys)) {}
  std::string Name() const override { return kName; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    std::vector<std::unique_ptr<DatasetIterator>> its;
    for (const IterNodePtr& p : parents_) its.push_back(p->MakeIterator());
    return std::make_unique<MixIterator>(std::move(its), proportions_, keys_);
  }

 private:
  std::vector<IterNodePtr> parents_;
  std::vector<int64_t> proportions_;
  std::vector<std::string> keys_;
};

}  // namespace

IterNodePtr MakeIterMixNode(std::vector<IterNodePtr> parents,
                            const std::optional<std::vector<double>>& weights,
                            std::vector<std::string> keys) {
  if (parents.empty()) throw std::invalid_argument("mix: needs at least one dataset");
  if (!keys.empty() && keys.size() != parents.size()) {
    throw std::invalid_argument("mix: got " + std::to_string(keys.size()) + " keys for " +
                                std::to_string(parents.size()) + " datasets");
  }
  std::vector<int64_t> proportions = IntProportions(parents.size(), weights);
  return std::make_shared<MixIterNode>(std::move(parents), std::move(proportions),
                                       std::move(keys));
}

}  // namespace spelt::internal
