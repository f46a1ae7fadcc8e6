// FirstFitPackIterDataset, BestFitPackIterDataset and the DataLoader's PackAndBatchOperation
// (Grain's PackingDatasetIterator, packing.py): elements are placed into a batch of bins
// (ops/packed_bins.cc) until one fits in none; the bins are then emitted, one per Next() (or
// all as one element for PackAndBatchOperation), optionally shuffled with numpy's PCG64
// permutation Grain draws, and a new batch starts with that element.
// State (Grain's): {"parent": parent state before the first element of the batch being
// emitted, "next_row": bins of it already emitted, "counter": bins emitted in all}; restoring
// re-packs that batch from the parent and skips its first next_row bins.
#include "ops/packing.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/pcg64.h"
#include "ops/packed_bins.h"
#include "spelt/stack.h"

namespace spelt {
namespace internal {
namespace {

// State keys besides kParentKey (Grain's FirstFitPackIterDataset): bins of the current batch
// already emitted, bins emitted in all.
constexpr char kNextRowKey[] = "next_row";
constexpr char kCounterKey[] = "counter";

// Whether outputs follow JAX's trees (sorted dict keys), as Grain's packers' do with JAX.
bool JaxTrees() { return CurrentTreeSemantics() == TreeSemantics::kJax; }

// Where the packed feature named by shuffle_bins_group_by_feature lives.
struct GroupBy {
  enum Kind { kValues, kSegmentIds, kPositions } kind = kValues;
  size_t feature = 0;
};

class PackIterator final : public DatasetIterator {
 public:
  PackIterator(std::shared_ptr<const PackSpec> spec, std::optional<GroupBy> group_by,
               std::unique_ptr<DatasetIterator> parent)
      : spec_(std::move(spec)), group_by_(group_by), parent_(std::move(parent)),
        last_emitted_state_(parent_->GetState()) {}

  std::optional<Value> Next() override {
    if (!out_.empty()) return Emit();
    while (true) {
      State prior = parent_->GetState();
      std::optional<Value> v = parent_->Next();
      if (!v) {
        if (!bins_) return std::nullopt;
        Finalize();
        batch_state_ = std::move(prior);
        return Emit();
      }
      PackElement element = Extract(*v);
      if (!bins_) bins_ = std::make_unique<PackedBins>(spec_, element);
      if (bins_->TryAdd(element)) continue;
      Finalize();
      batch_state_ = std::move(prior);
      bins_ = std::make_unique<PackedBins>(spec_, element);
      if (!bins_->TryAdd(element)) {
        throw std::invalid_argument(spec_->op_name + ": element " +
                                    std::to_string(element.index) +
                                    " does not fit into an empty bin");
      }
      return Emit();
    }
  }

  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override {
    return State{
        {kParentKey, last_emitted_state_}, {kNextRowKey, next_row_}, {kCounterKey, counter_}};
  }

  void SetState(const State& state) override {
    const char* name = spec_->op_name.c_str();
    const int64_t next_row = StateInt(state, kNextRowKey, name);
    const int64_t counter = StateInt(state, kCounterKey, name);
    if (next_row < 0 || counter < next_row) {
      throw std::invalid_argument(spec_->op_name + ": invalid state (next_row " +
                                  std::to_string(next_row) + ", counter " +
                                  std::to_string(counter) + ")");
    }
    parent_->SetState(StateField(state, kParentKey, name));
    bins_.reset();
    out_.clear();
    order_.clear();
    elements_read_ = 0;
    last_emitted_state_ = parent_->GetState();
    next_row_ = next_row;
    counter_ = counter;
  }

 private:
  PackElement Extract(const Value& v) {
    PackElement e;
    e.index = elements_read_++;
    const Value root = v.Unpacked();
    const bool is_dict = root.is<std::shared_ptr<const Mapping>>();
    if (!is_dict && !spec_->options.whole_batches) {
      throw std::invalid_argument(spec_->op_name + ": element " + std::to_string(e.index) +
                                  " must be a dict of features, got " + root.Describe());
    }
    e.tokens.reserve(spec_->features.size());
    for (const PackSpec::Feature& f : spec_->features) {
      const Value* leaf = FindPath(root, f.path);
      const std::string what =
          spec_->op_name + ": feature '" + f.name + "' of element " + std::to_string(e.index);
      if (leaf == nullptr) {
        throw std::invalid_argument(what + " is missing (length_struct names it; the element is " +
                                    root.Describe() + ")");
      }
      e.tokens.push_back(ToTokens(*leaf, what));
    }
    for (const std::string& k : spec_->non_sequence_meta) {
      const Value* meta = is_dict ? root.AsMapping().Find(k) : nullptr;
      if (meta == nullptr) {
        throw std::invalid_argument(spec_->op_name + ": meta feature '" + k + "' of element " +
                                    std::to_string(e.index) + " is missing");
      }
      e.meta.push_back(*meta);
    }
    return e;
  }

  // The bins of bins_ become the outputs out_ (in the order order_), and bins_ is dropped.
  void Finalize() {
    const PackedBins& bins = *bins_;
    const Value& ls = spec_->options.length_struct;
    if (spec_->options.whole_batches) {
      auto tree = [&](const std::vector<Array>& arrays) {
        return RebuildTree(ls, std::vector<Value>(arrays.begin(), arrays.end()), JaxTrees());
      };
      out_ = {Value::Tuple(
          {tree(bins.values()), tree(bins.segment_ids()), tree(bins.positions())})};
      order_ = {0};
      bins_.reset();
      return;
    }
    const int64_t used = bins.bins_used();
    out_.clear();
    for (int64_t b = 0; b < used; ++b) out_.push_back(Bin(bins, b));
    order_.resize(static_cast<size_t>(used));
    for (int64_t b = 0; b < used; ++b) order_[static_cast<size_t>(b)] = b;
    if (spec_->options.shuffle_bins) Shuffle(bins, used);
    bins_.reset();
  }

  // Bin b as Grain emits it: the features of length_struct (views of the bins' buffers), the
  // non-sequence meta features (lists), then <key>_segment_ids and <key>_positions; with JAX,
  // all in sorted key order, dicts inside length_struct too (not inside meta values).
  Value Bin(const PackedBins& bins, int64_t b) const {
    const bool jax = JaxTrees();
    const Mapping& ls = spec_->options.length_struct.AsMapping();
    const auto& meta_features = spec_->options.meta_features;
    auto is_meta = [&](const std::string& k) {
      return std::find(meta_features.begin(), meta_features.end(), k) != meta_features.end();
    };
    std::vector<std::pair<std::string, Value>> items;
    std::vector<std::pair<std::string, Value>> aux;
    size_t f = 0;
    for (const auto& [key, sub] : ls.items) {
      std::vector<Value> leaves;
      const size_t first = f;
      for (; f < spec_->features.size() && std::get<std::string>(spec_->features[f].path[0]) == key;
           ++f) {
        leaves.push_back(RowView(bins.values()[f], b));
      }
      items.emplace_back(key, RebuildTree(sub, leaves, jax));
      if (!is_meta(key)) {
        aux.emplace_back(key + "_segment_ids", RowView(bins.segment_ids()[first], b));
        aux.emplace_back(key + "_positions", RowView(bins.positions()[first], b));
      }
    }
    for (size_t k = 0; k < spec_->non_sequence_meta.size(); ++k) {
      items.emplace_back(spec_->non_sequence_meta[k],
                         Value::List(bins.meta()[k][static_cast<size_t>(b)]));
    }
    for (auto& item : aux) items.push_back(std::move(item));
    if (jax) std::ranges::sort(items, {}, &std::pair<std::string, Value>::first);
    return Value::Dict(std::move(items));
  }

  // Grain's _generate_and_set_shuffled_rows.
  void Shuffle(const PackedBins& bins, int64_t used) {
    const auto seed = static_cast<uint64_t>(spec_->options.seed + counter_ - next_row_);
    order_ = NumpyPermuted(seed, used);
    if (!group_by_) return;
    const Array& a = group_by_->kind == GroupBy::kValues       ? bins.values()[group_by_->feature]
                     : group_by_->kind == GroupBy::kSegmentIds ? bins.segment_ids()[group_by_->feature]
                                                               : bins.positions()[group_by_->feature];
    const int64_t per_bin = a.num_elements() / a.shape[0];
    std::vector<double> row(static_cast<size_t>(per_bin));
    std::vector<std::tuple<double, int64_t, int64_t>> keys;
    for (int64_t b = 0; b < used; ++b) {
      CastElements(a.dtype, a.data + static_cast<size_t>(b * per_bin) * ItemSize(a.dtype),
                   DType::kFloat64, row.data(), row.size());
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
      double sum = 0;
      int64_t nonzero = 0;
      for (double x : row) {
        sum += x;
        nonzero += x != 0;
      }
      const double mean = nonzero ? sum / static_cast<double>(nonzero) : 0.0;
      keys.emplace_back(std::isnan(mean) ? 0.0 : mean, order_[static_cast<size_t>(b)], b);
      row.resize(static_cast<size_t>(per_bin));
    }
    std::sort(keys.begin(), keys.end());
    for (size_t i = 0; i < keys.size(); ++i) order_[i] = std::get<2>(keys[i]);
  }

  Value Emit() {
    Value out = std::move(out_[static_cast<size_t>(order_[static_cast<size_t>(next_row_)])]);
    ++next_row_;
    ++counter_;
    if (next_row_ >= static_cast<int64_t>(out_.size())) {
      out_.clear();
      order_.clear();
      last_emitted_state_ = std::move(batch_state_);
      next_row_ = 0;
    }
    return out;
  }

  std::shared_ptr<const PackSpec> spec_;
  std::optional<GroupBy> group_by_;
  std::unique_ptr<DatasetIterator> parent_;
  State last_emitted_state_;  // parent state before the batch being emitted
  State batch_state_;         // parent state after the batch being emitted
  std::unique_ptr<PackedBins> bins_;  // the batch being filled
  std::vector<Value> out_;            // the batch being emitted
  std::vector<int64_t> order_;        // emission order of out_
  int64_t next_row_ = 0, counter_ = 0, elements_read_ = 0;
};

class PackNode final : public IterNode {
 public:
  PackNode(IterNodePtr parent, std::shared_ptr<const PackSpec> spec)
      : IterNode({parent}), parent_(std::move(parent)), spec_(std::move(spec)) {
    const auto& group = spec_->options.shuffle_bins_group_by_feature;
    if (group && spec_->options.shuffle_bins) group_by_ = FindGroupBy(*group);
  }
  std::string Name() const override { return spec_->op_name; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    CheckTopLevelLeaves();
    return std::make_unique<PackIterator>(spec_, group_by_, parent_->MakeIterator());
  }

 private:
  // Grain rekeys <key>_segment_ids / <key>_positions per top-level key, so a non-meta key of
  // length_struct must be a single feature (Grain raises this when it emits the first bin).
  void CheckTopLevelLeaves() const {
    if (spec_->options.whole_batches) return;
    const auto& meta = spec_->options.meta_features;
    for (const auto& [key, sub] : spec_->options.length_struct.AsMapping().items) {
      if (sub.is<std::shared_ptr<const Mapping>>() || sub.is<std::shared_ptr<const Sequence>>()) {
        if (std::find(meta.begin(), meta.end(), key) != meta.end()) continue;
        throw std::invalid_argument(
            "Failed to extract segment ids for '" + key + "', which has type <class '" +
            std::string(sub.KindName()) +
            "'> rather than np.ndarray. Perhaps it should be marked as a meta feature?");
      }
    }
  }

  std::optional<GroupBy> FindGroupBy(const std::string& name) const {
    for (size_t f = 0; f < spec_->features.size(); ++f) {
      const LeafPath& path = spec_->features[f].path;
      if (path.size() != 1) continue;
      const std::string& key = std::get<std::string>(path[0]);
      if (name == key) return GroupBy{GroupBy::kValues, f};
      if (name == key + "_segment_ids") return GroupBy{GroupBy::kSegmentIds, f};
      if (name == key + "_positions") return GroupBy{GroupBy::kPositions, f};
    }
    throw std::invalid_argument(spec_->op_name + ": shuffle_bins_group_by_feature '" + name +
                                "' is not a packed feature (a key of length_struct or its"
                                " _segment_ids / _positions)");
  }

  IterNodePtr parent_;
  std::shared_ptr<const PackSpec> spec_;
  std::optional<GroupBy> group_by_;
};

}  // namespace

IterNodePtr MakePackNode(IterNodePtr parent, PackOptions options) {
  const char* name = options.whole_batches ? "PackAndBatchOperation"
                     : options.strategy == PackStrategy::kBestFit ? "BestFitPackIterDataset"
                                                                  : "FirstFitPackIterDataset";
  if (options.whole_batches) options.shuffle_bins = false;
  auto spec = MakePackSpec(std::move(options), name);
  return std::make_shared<PackNode>(std::move(parent), std::move(spec));
}

}  // namespace internal
}  // namespace spelt
