// Profiled nodes and iterators (spelt/stage_stats.h).
//
// Self time: each thread keeps the time spent in profiled calls made from its current
// profiled call (tls_inner_ns); a call subtracts that from its own duration and then adds its
// own duration to its caller's share. Calls into a parent on another thread (read-ahead) are
// not subtracted: a prefetching stage's self time includes its waits for its threads.
#include "spelt/stage_stats.h"

#include <chrono>
#include <stdexcept>
#include <utility>
#include <variant>

namespace spelt {
namespace {

thread_local int64_t tls_inner_ns = 0;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs `call` (returning its result) and records it in `stats`; `count(result)` gives the
// elements and bytes produced. An exception is recorded as time with no element.
template <typename Call, typename Count>
auto Timed(StageStats& stats, Call&& call, Count&& count) {
  const int64_t outer_inner = tls_inner_ns;
  tls_inner_ns = 0;
  const int64_t start = NowNs();
  auto finish = [&](int64_t elements, int64_t bytes) {
    const int64_t total = NowNs() - start;
    stats.Record(elements, total, total - tls_inner_ns, bytes);
    tls_inner_ns = outer_inner + total;
  };
  try {
    auto result = call();
    const auto [elements, bytes] = count(result);
    finish(elements, bytes);
    return result;
  } catch (...) {
    finish(0, 0);
    throw;
  }
}

using Counts = std::pair<int64_t, int64_t>;  // elements, bytes

Counts CountOne(StageStats& stats, const std::optional<Value>& v) {
  return v ? Counts{1, stats.BytesOf(*v)} : Counts{0, 0};
}

// Rows of a stacked batch: the leading dimension of its first array leaf (1 if none).
int64_t Rows(const Value& v) {
  return std::visit(
      [](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Array>) {
          return x.shape.empty() ? 1 : x.shape[0];
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Sequence>>) {
          return x->items.empty() ? 1 : Rows(x->items.front());
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Mapping>>) {
          return x->items.empty() ? 1 : Rows(x->items.front().second);
        } else {
          return 1;
        }
      },
      v.variant());
}

class ProfiledIterator final : public DatasetIterator {
 public:
  ProfiledIterator(std::unique_ptr<DatasetIterator> inner, std::shared_ptr<StageStats> stats,
                   bool batches)
      : inner_(std::move(inner)), stats_(std::move(stats)), batches_(batches) {}
  std::optional<Value> Next() override {
    return Timed(*stats_, [&] { return inner_->Next(); }, [&](const std::optional<Value>& v) {
      if (!v || !batches_) return CountOne(*stats_, v);
      return Counts{Rows(*v), stats_->BytesOf(*v)};
    });
  }
  void StartPrefetch() override { inner_->StartPrefetch(); }
  State GetState() const override { return inner_->GetState(); }
  void SetState(const State& state) override { inner_->SetState(state); }
  int64_t NextIndexOf(const State& state) const override { return inner_->NextIndexOf(state); }
  State StateAtIndex(int64_t index, const State& state) const override {
    return inner_->StateAtIndex(index, state);
  }

 private:
  std::unique_ptr<DatasetIterator> inner_;
  std::shared_ptr<StageStats> stats_;
  bool batches_;  // elements are stacked batches made by MakeBatchIterator: count their rows
};

class ProfiledIter final : public IterNode {
 public:
  ProfiledIter(std::shared_ptr<const IterNode> node, std::shared_ptr<StageStats> stats)
      : IterNode({node}), node_(std::move(node)), stats_(std::move(stats)) {}
  std::string Name() const override { return node_->Name(); }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    return std::make_unique<ProfiledIterator>(node_->MakeIterator(), stats_, false);
  }
  std::unique_ptr<DatasetIterator> MakeBatchIterator(
      const BatchRequest& request,
      std::function<std::unique_ptr<DatasetIterator>()> elementwise) const override {
    auto batched = node_->MakeBatchIterator(request, std::move(elementwise));
    if (!batched) return nullptr;
    return std::make_unique<ProfiledIterator>(std::move(batched), stats_, true);
  }

 private:
  std::shared_ptr<const IterNode> node_;
  std::shared_ptr<StageStats> stats_;
};

class ProfiledMap final : public MapNode {
 public:
  ProfiledMap(std::shared_ptr<const MapNode> node, std::shared_ptr<StageStats> stats)
      : MapNode({node}), node_(std::move(node)), stats_(std::move(stats)) {}
  std::string Name() const override { return node_->Name(); }
  int64_t Length() const override { return node_->Length(); }
  std::optional<Value> Get(int64_t index) const override {
    return Timed(*stats_, [&] { return node_->Get(index); },
                 [&](const std::optional<Value>& v) { return CountOne(*stats_, v); });
  }
  void GetMany(std::span<const int64_t> indices,
               std::vector<std::optional<Value>>* out) const override {
    const size_t first = out->size();
    Timed(*stats_, [&] {
      node_->GetMany(indices, out);
      return 0;
    }, [&](int) {
      Counts counts{0, 0};
      for (size_t k = first; k < out->size(); ++k) {
        const auto [elements, bytes] = CountOne(*stats_, (*out)[k]);
        counts.first += elements;
        counts.second += bytes;
      }
      return counts;
    });
  }
  std::optional<Value> GetStacked(std::span<const int64_t> indices) const override {
    return Timed(*stats_, [&] { return node_->GetStacked(indices); },
                 [&](const std::optional<Value>& v) {
                   if (!v) return Counts{0, 0};
                   return Counts{static_cast<int64_t>(indices.size()), stats_->BytesOf(*v)};
                 });
  }

 private:
  std::shared_ptr<const MapNode> node_;
  std::shared_ptr<StageStats> stats_;
};

template <typename Node>
void CheckArgs(const Node& node, const std::shared_ptr<StageStats>& stats, const char* what) {
  if (!node || !stats) throw std::invalid_argument(std::string(what) + ": null node or stats");
}

}  // namespace

void StageStats::Record(int64_t elements, int64_t total_ns, int64_t self_ns, int64_t bytes) {
  elements_.fetch_add(elements, std::memory_order_relaxed);
  total_ns_.fetch_add(total_ns, std::memory_order_relaxed);
  self_ns_.fetch_add(self_ns, std::memory_order_relaxed);
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

StageCounters StageStats::Snapshot() const {
  return {elements_.load(std::memory_order_relaxed), total_ns_.load(std::memory_order_relaxed),
          self_ns_.load(std::memory_order_relaxed), bytes_.load(std::memory_order_relaxed)};
}

int64_t StageStats::BytesOf(const Value& value) {
  const int64_t call = calls_.fetch_add(1, std::memory_order_relaxed);
  return ValueBytes(value, call < 64 ? 1 : (call % 16 == 0 ? 16 : 0));
}

int64_t ValueBytes(const Value& value, int64_t opaque_weight) {
  return std::visit(
      [opaque_weight](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Array>) {
          return static_cast<int64_t>(x.nbytes());
        } else if constexpr (std::is_same_v<T, String>) {
          return static_cast<int64_t>(x.data.size());
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Sequence>>) {
          int64_t n = 0;
          for (const Value& item : x->items) n += ValueBytes(item, opaque_weight);
          return n;
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Mapping>>) {
          int64_t n = 0;
          for (const auto& item : x->items) n += ValueBytes(item.second, opaque_weight);
          return n;
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Opaque>>) {
          return opaque_weight == 0 ? 0 : opaque_weight * x->ByteSize();
        } else {
          return 0;
        }
      },
      value.variant());
}

std::shared_ptr<const MapNode> ProfiledMapNode(std::shared_ptr<const MapNode> node,
                                               std::shared_ptr<StageStats> stats) {
  CheckArgs(node, stats, "ProfiledMapNode");
  return std::make_shared<ProfiledMap>(std::move(node), std::move(stats));
}

std::shared_ptr<const IterNode> ProfiledIterNode(std::shared_ptr<const IterNode> node,
                                                 std::shared_ptr<StageStats> stats) {
  CheckArgs(node, stats, "ProfiledIterNode");
  return std::make_shared<ProfiledIter>(std::move(node), std::move(stats));
}

}  // namespace spelt
