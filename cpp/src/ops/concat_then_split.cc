// ConcatThenSplitIterDataset (Grain's packing_concat_then_split.py): sequences are concatenated
// into a buffer until a feature reaches its target length; the element that overflows is split
// and its remainder starts the next buffer. Elements with a full-length feature may pass
// through whole (split_full_length_features=false).
//
// Differences from Grain 0.2.18 (docs/compatibility.md): a feature that fits while another of
// the same element is split keeps absolute slice bounds (Grain stores its length as the split
// point, which re-emits the feature whole when the element is split a second time), and BOS
// replacement skips empty sequences (Grain raises IndexError on them).
//
// State (Grain's): {"parent_state": parent state before the remainder element (or now if there
// is none) when the buffer was last empty, "remainder_slices": {feature: [start, stop]} of that
// remainder ([-1, -1]: whole, all [-1, -1]: no remainder), "elements_from_buffer_after_checkpoint":
// outputs returned since}. Restoring re-reads the remainder and replays those outputs.
#include "ops/packing.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

#include "ops/pack_buffers.h"

namespace spelt {
namespace internal {
namespace {

constexpr const char* kName = "ConcatThenSplitIterDataset";
// State keys besides kRemainderSlicesKey (spelt/packing.h; Grain's ConcatThenSplitIterDataset):
// the parent's state before the remainder, the elements of the buffer returned since.
constexpr char kParentStateKey[] = "parent_state";
constexpr char kElementsFromBufferKey[] = "elements_from_buffer_after_checkpoint";
using Slice = std::pair<int64_t, int64_t>;
constexpr Slice kWhole = {-1, -1};

struct Feature {
  std::string key;
  int64_t target = 0;
  bool meta = false;
  bool bos = false;
};

struct Config {
  std::vector<Feature> features;
  bool split_full_length_features = true;
  int64_t bos_token_id = 0;
};

// One parent element, or the part [slices[k].first, slices[k].second) of each feature of it.
struct Element {
  State parent_state;  // before the parent returned it
  std::vector<Tokens> tokens;
  std::vector<Slice> slices;  // kWhole: the whole feature (meta features are always whole)
  int64_t index = 0;

  Slice Range(size_t k) const {
    return slices[k] == kWhole ? Slice{0, tokens[k].length} : slices[k];
  }
  int64_t Length(size_t k) const {
    const Slice r = Range(k);
    return r.second - r.first;
  }
};

class ConcatThenSplitIterator final : public DatasetIterator {
 public:
  ConcatThenSplitIterator(std::shared_ptr<const Config> config,
                          std::unique_ptr<DatasetIterator> parent)
      : config_(std::move(config)), parent_(std::move(parent)) {
    Checkpoint();
  }

  std::optional<Value> Next() override {
    if (!packed_.empty()) return Pop();
    if (stopped_) return std::nullopt;
    Checkpoint();
    std::vector<Element> buffer;
    std::vector<int64_t> tokens(config_->features.size(), 0);
    while (true) {
      if (remainder_) {
        remainder_ = MaybeAdd(std::move(*remainder_), buffer, tokens);
        if (remainder_) break;
      }
      State parent_state = parent_->GetState();
      std::optional<Value> v = parent_->Next();
      if (!v) {
        stopped_ = true;
        break;
      }
      Element e = Read(*v, std::move(parent_state));
      if (!config_->split_full_length_features && IsFullLength(e)) {
        packed_.push_back(PackElements({&e}));
        continue;
      }
      remainder_ = MaybeAdd(std::move(e), buffer, tokens);
      if (remainder_) break;
    }
    if (!buffer.empty()) {
      std::vector<const Element*> parts;
      for (const Element& e : buffer) parts.push_back(&e);
      packed_.push_front(PackElements(parts));
    }
    if (stopped_ && remainder_) {
      packed_.push_back(PackElements({&*remainder_}));
      remainder_.reset();
    }
    if (!packed_.empty()) return Pop();
    Checkpoint();
    return std::nullopt;
  }

  void StartPrefetch() override { parent_->StartPrefetch(); }
  State GetState() const override { return state_; }

  void SetState(const State& state) override {
    const State& slices = StateField(state, kRemainderSlicesKey, kName);
    const int64_t replay = StateInt(state, kElementsFromBufferKey, kName);
    const State& parent_state = StateField(state, kParentStateKey, kName);
    std::vector<Slice> restored(config_->features.size(), kWhole);
    bool has_remainder = false;
    for (size_t k = 0; k < config_->features.size(); ++k) {
      const Feature& f = config_->features[k];
      if (f.meta) continue;
      const auto it = slices.find(f.key);
      if (it == slices.end() || !it->is_array() || it->size() != 2) {
        throw std::invalid_argument(std::string(kName) + ": state remainder_slices['" + f.key +
                                    "'] missing or not a [start, stop] pair");
      }
      restored[k] = {(*it)[0].get<int64_t>(), (*it)[1].get<int64_t>()};
      has_remainder |= restored[k] != kWhole;
    }
    packed_.clear();
    remainder_.reset();
    stopped_ = false;
    elements_read_ = 0;
    parent_->SetState(parent_state);
    if (has_remainder) {
      std::optional<Value> v = parent_->Next();
      if (!v) {
        throw std::invalid_argument(std::string(kName) +
                                    ": the parent ended where the state has a remainder element");
      }
      Element e = Read(*v, parent_state);
      for (size_t k = 0; k < restored.size(); ++k) {
        const auto [start, stop] = restored[k];
        if (restored[k] != kWhole && (start < 0 || start > stop || stop > e.tokens[k].length)) {
          throw std::invalid_argument(std::string(kName) + ": state slice of '" +
                                      config_->features[k].key + "' is out of range");
        }
      }
      e.slices = std::move(restored);
      remainder_ = std::move(e);
    }
    Checkpoint();
    for (int64_t i = 0; i < replay; ++i) Next();
  }

 private:
  Value Pop() {
    ++state_[kElementsFromBufferKey].get_ref<int64_t&>();
    Value out = std::move(packed_.front());
    packed_.pop_front();
    return out;
  }

  // Grain's _checkpoint(): only taken when nothing is buffered but the remainder.
  void Checkpoint() {
    State slices = State::object();
    for (size_t k = 0; k < config_->features.size(); ++k) {
      if (config_->features[k].meta) continue;
      const Slice s = remainder_ ? remainder_->slices[k] : kWhole;
      slices[config_->features[k].key] = {s.first, s.second};
    }
    state_ = State{{kParentStateKey, remainder_ ? remainder_->parent_state : parent_->GetState()},
                   {kRemainderSlicesKey, std::move(slices)},
                   {kElementsFromBufferKey, 0}};
  }

  Element Read(const Value& v, State parent_state) {
    Element e;
    e.index = elements_read_++;
    e.parent_state = std::move(parent_state);
    const Value root = v.Unpacked();
    const std::string where = "element " + std::to_string(e.index);
    if (!root.is<std::shared_ptr<const Mapping>>()) {
      throw std::invalid_argument(std::string(kName) + ": Parent elements must be unnested"
                                  " dictionaries but " + where + " is " + root.Describe());
    }
    const Mapping& m = root.AsMapping();
    bool same_keys = m.items.size() == config_->features.size();
    for (const Feature& f : config_->features) same_keys = same_keys && m.Find(f.key) != nullptr;
    if (!same_keys) {
      std::string want;
      for (const Feature& f : config_->features) want += (want.empty() ? "" : ", ") + f.key;
      throw std::invalid_argument(std::string(kName) + ": Parent element has structure " +
                                  root.Describe() + " but target sequence length is for [" +
                                  want + "] (" + where +
                                  "). There must be a sequence length for each feature.");
    }
    for (const Feature& f : config_->features) {
      e.tokens.push_back(
          ToTokens(*m.Find(f.key), std::string(kName) + ": feature '" + f.key + "' of " + where));
    }
    e.slices.assign(config_->features.size(), kWhole);
    return e;
  }

  // Grain's _can_optimize_as_full_length.
  bool IsFullLength(const Element& e) const {
    bool full = false;
    for (size_t k = 0; k < config_->features.size(); ++k) {
      const int64_t n = e.Length(k), target = config_->features[k].target;
      if (n > target) return false;
      full |= n == target;
    }
    return full;
  }

  // Adds what fits of `e` to the buffer; returns what is left of it (nullopt if nothing).
  std::optional<Element> MaybeAdd(Element e, std::vector<Element>& buffer,
                                  std::vector<int64_t>& tokens) {
    const size_t n = config_->features.size();
    std::vector<int64_t> taken(n), split(n);
    bool needs_split = false, takes_any = false;
    for (size_t k = 0; k < n; ++k) {
      const Feature& f = config_->features[k];
      const int64_t length = e.Length(k), available = f.target - tokens[k];
      if (f.meta) {
        if (length > f.target) {
          throw std::invalid_argument(std::string(kName) + ": meta feature '" + f.key +
                                      "' of element " + std::to_string(e.index) + " has length " +
                                      std::to_string(length) + ", longer than its target length " +
                                      std::to_string(f.target) + " (meta features are never split)");
        }
        if (length > available) return e;  // meta features must fit whole
        taken[k] = length;
        continue;
      }
      const int64_t start = e.Range(k).first;
      taken[k] = std::min(length, available);
      needs_split |= length > available;
      split[k] = start + taken[k];
      takes_any |= split[k] != start;
    }
    for (size_t k = 0; k < n; ++k) tokens[k] += taken[k];
    if (!needs_split) {
      buffer.push_back(std::move(e));
      return std::nullopt;
    }
    if (!takes_any) return e;
    Element left = e;
    for (size_t k = 0; k < n; ++k) {
      if (config_->features[k].meta) continue;
      const Slice r = e.Range(k);
      left.slices[k] = {r.first, split[k]};
      e.slices[k] = {split[k], r.second};
    }
    buffer.push_back(std::move(left));
    return e;
  }

  // Grain's _pack_elements: per feature, the parts one after the other (segment ids 1, 2, ...)
  // then padding; <key>_segment_ids and <key>_positions after each non-meta feature.
  Value PackElements(const std::vector<const Element*>& parts) const {
    std::vector<std::pair<std::string, Value>> items;
    for (size_t k = 0; k < config_->features.size(); ++k) {
      const Feature& f = config_->features[k];
      const Tokens& shape_of = parts.front()->tokens[k];
      std::vector<int64_t> shape = {1, f.target};
      shape.insert(shape.end(), shape_of.trailing.begin(), shape_of.trailing.end());
      const Array values = Array::Allocate(shape_of.leaf.dtype, shape);
      const Array segment_ids = Array::Allocate(DType::kInt32, {f.target});
      const Array positions = Array::Allocate(DType::kInt32, {f.target});
      auto* seg = reinterpret_cast<int32_t*>(segment_ids.mutable_data());
      auto* pos = reinterpret_cast<int32_t*>(positions.mutable_data());
      int64_t end = 0;
      int32_t segment_id = 0;
      for (const Element* e : parts) {
        ++segment_id;
        const auto [from, to] = e->Range(k);
        const int64_t start = end, count = to - from;
        end = start + count;
        CopyTokens(values, start, e->tokens[k], from, count,
                   std::string(kName) + ": feature '" + f.key + "' of element " +
                       std::to_string(e->index));
        if (f.bos && count > 0) SetToken(values, start, config_->bos_token_id);
        for (int64_t i = 0; i < count; ++i) {
          seg[start + i] = segment_id;
          pos[start + i] = static_cast<int32_t>(i);
        }
      }
      items.emplace_back(f.key, RowView(values, 0));
      if (!f.meta) {
        items.emplace_back(f.key + "_segment_ids", segment_ids);
        items.emplace_back(f.key + "_positions", positions);
      }
    }
    return Value::Dict(std::move(items));
  }

  std::shared_ptr<const Config> config_;
  std::unique_ptr<DatasetIterator> parent_;
  std::deque<Value> packed_;         // packed outputs not yet returned
  std::optional<Element> remainder_;  // what is left of the element that overflowed
  bool stopped_ = false;
  int64_t elements_read_ = 0;
  State state_;
};

class ConcatThenSplitNode final : public IterNode {
 public:
  ConcatThenSplitNode(IterNodePtr parent, std::shared_ptr<const Config> config)
      : IterNode({parent}), parent_(std::move(parent)), config_(std::move(config)) {}
  std::string Name() const override { return kName; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return std::make_unique<ConcatThenSplitIterator>(config_, parent_->MakeIterator());
  }

 private:
  IterNodePtr parent_;
  std::shared_ptr<const Config> config_;
};

}  // namespace

IterNodePtr MakeConcatThenSplitNode(IterNodePtr parent, ConcatThenSplitOptions options) {
  auto config = std::make_shared<Config>();
  auto contains = [](const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  if (options.length_struct.empty()) {
    throw std::invalid_argument(std::string(kName) + ": length_struct is empty");
  }
  for (const auto& [key, target] : options.length_struct) {
    if (target <= 0) {
      throw std::invalid_argument(std::string(kName) + ": length_struct['" + key +
                                  "'] must be positive, got " + std::to_string(target));
    }
    config->features.push_back({key, target, contains(options.meta_features, key),
                                contains(options.bos_features, key)});
  }
  for (const std::string& k : options.bos_features) {
    if (contains(options.meta_features, k)) {
      throw std::invalid_argument("bos_features and meta_features should not overlap: '" + k +
                                  "' is in both");
    }
  }
  config->split_full_length_features = options.split_full_length_features;
  config->bos_token_id = options.bos_token_id;
  return std::make_shared<ConcatThenSplitNode>(std::move(parent), std::move(config));
}

}  // namespace internal
}  // namespace spelt
