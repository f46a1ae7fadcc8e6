// ZipMapDataset and ZipIterDataset (Grain's zip.py): element i is the tuple of the parents'
// elements i. On a MapDataset a parent's filtered element is None inside the tuple, as in
// Grain. The stream version ends with its shortest parent; with `strict` a parent that ends
// before or after the others raises std::invalid_argument with Grain's message
// ("ZipIterDataset argument 2 is shorter than argument 1"). Stream state:
// {"parents": [state of each parent]}.
#include "ops/zip.h"

#include <exception>
#include <stdexcept>
#include <string>

#include "ops/get_many.h"

namespace spelt::internal {
namespace {

Value TupleOf(std::vector<std::optional<Value>*> items) {
  std::vector<Value> values;
  values.reserve(items.size());
  for (std::optional<Value>* v : items) values.push_back(*v ? std::move(**v) : Value());
  return Value::Tuple(std::move(values));
}

class ZipMapNode final : public MapNode {
 public:
  explicit ZipMapNode(std::vector<MapNodePtr> parents)
      : MapNode({parents.begin(), parents.end()}), parents_(std::move(parents)) {
    if (parents_.empty()) throw std::invalid_argument("At least one parent must be provided.");
    length_ = parents_[0]->Length();
    for (const MapNodePtr& p : parents_) {
      if (p->Length() != length_) {
        throw std::invalid_argument("All parents must have the same length.");
      }
    }
  }
  std::string Name() const override { return "ZipMapDataset"; }
  int64_t Length() const override { return length_; }
  std::optional<Value> Get(int64_t index) const override {
    std::vector<Value> values;
    values.reserve(parents_.size());
    for (const MapNodePtr& p : parents_) {
      std::optional<Value> v = p->Get(index);
      values.push_back(v ? std::move(*v) : Value());
    }
    return Value::Tuple(std::move(values));
  }
  // Each parent reads all indices with one GetMany. On errors, the tuples before the first
  // index at which some parent failed, then the error of the first parent (in order) that
  // failed there: what Get() raises for that index.
  void GetMany(std::span<const int64_t> indices, Elements* out) const override {
    std::vector<Elements> got(parents_.size());
    std::vector<std::exception_ptr> errors(parents_.size());
    size_t n = indices.size();
    for (size_t p = 0; p < parents_.size(); ++p) {
      errors[p] = Capture([&] { parents_[p]->GetMany(indices, &got[p]); });
      n = std::min(n, got[p].size());
    }
    out->reserve(out->size() + n);
    std::vector<std::optional<Value>*> items(parents_.size());
    for (size_t i = 0; i < n; ++i) {
      for (size_t p = 0; p < parents_.size(); ++p) items[p] = &got[p][i];
      out->push_back(TupleOf(items));
    }
    for (size_t p = 0; p < parents_.size(); ++p) {
      if (errors[p] && got[p].size() == n) std::rethrow_exception(errors[p]);
    }
  }

 private:
  std::vector<MapNodePtr> parents_;
  int64_t length_ = 0;
};

std::string StrictZipError(size_t i, const char* why) {
  return "ZipIterDataset argument " + std::to_string(i + 1) + " is " + why + " than argument" +
         (i == 1 ? " " : "s 1-") + std::to_string(i);
}

class ZipIterator final : public DatasetIterator {
 public:
  ZipIterator(std::vector<std::unique_ptr<DatasetIterator>> parents, bool strict)
      : parents_(std::move(parents)), strict_(strict) {}
  std::optional<Value> Next() override {
    std::vector<Value> items;
    items.reserve(parents_.size());
    for (size_t i = 0; i < parents_.size(); ++i) {
      std::optional<Value> v = parents_[i]->Next();
      if (!v) {
        if (strict_) CheckAllEnded(i);
        return std::nullopt;
      }
      items.push_back(std::move(*v));
    }
    return Value::Tuple(std::move(items));
  }
  void StartPrefetch() override {
    for (const auto& parent : parents_) parent->StartPrefetch();
  }
  State GetState() const override {
    State parents = State::array();
    for (const auto& p : parents_) parents.push_back(p->GetState());
    return State{{kParentsKey, std::move(parents)}};
  }
  void SetState(const State& state) override {
    const State& parents = StateField(state, kParentsKey, "ZipIterDataset");
    if (!parents.is_array() || parents.size() != parents_.size()) {
      throw std::invalid_argument("ZipIterDataset: state field 'parents' must be a list of " +
                                  std::to_string(parents_.size()) + " states");
    }
    for (size_t i = 0; i < parents_.size(); ++i) parents_[i]->SetState(parents[i]);
  }

 private:
  // Parent i ended: with strict zip, the others must end at the same element.
  void CheckAllEnded(size_t i) {
    if (i > 0) throw std::invalid_argument(StrictZipError(i, "shorter"));
    for (size_t j = 1; j < parents_.size(); ++j) {
      if (parents_[j]->Next()) throw std::invalid_argument(StrictZipError(j, "longer"));
    }
  }

  std::vector<std::unique_ptr<DatasetIterator>> parents_;
  bool strict_;
};

class ZipIterNode final : public IterNode {
 public:
  ZipIterNode(std::vector<IterNodePtr> parents, bool strict)
      : IterNode({parents.begin(), parents.end()}), parents_(std::move(parents)),
        strict_(strict) {
    if (parents_.empty()) throw std::invalid_argument("At least one parent must be provided.");
  }
  std::string Name() const override { return "ZipIterDataset"; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    std::vector<std::unique_ptr<DatasetIterator>> its;
    for (const IterNodePtr& p : parents_) its.push_back(p->MakeIterator());
    return std::make_unique<ZipIterator>(std::move(its), strict_);
  }

 private:
  std::vector<IterNodePtr> parents_;
  bool strict_;
};

}  // namespace

MapNodePtr MakeZipMapNode(std::vector<MapNodePtr> parents) {
  return std::make_shared<ZipMapNode>(std::move(parents));
}

IterNodePtr MakeZipIterNode(std::vector<IterNodePtr> parents, bool strict) {
  return std::make_shared<ZipIterNode>(std::move(parents), strict);
}

}  // namespace spelt::internal
