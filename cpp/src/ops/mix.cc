// MixedMapDataset: deterministic interleaving of the parents by integer proportions (Grain
// mix.py, SelectionWithProportionsMap and _dataset_and_key_of_next_element). Weights are
// scaled so the smallest becomes 100 and truncated to ints (_float_to_int_proportions);
// no weights means proportion 1 each. Length = int(min_i len_i / (w_i / sum(w))), capped at
// kInfiniteLength. Index k (any k >= 0; beyond Length() the parents' later epochs are read,
// as in Grain) maps to (parent i, key) where key counts the earlier picks of parent i.
#include <cmath>
#include <stdexcept>
#include <string>

#include "ops/mix.h"
#include "ops/get_many.h"

namespace spelt::internal {

using int128 = __int128;

std::vector<int64_t> IntProportions(size_t n, const std::optional<std::vector<double>>& weights) {
  if (!weights) return std::vector<int64_t>(n, 1);
  if (weights->size() != n) {
    throw std::invalid_argument("mix: got " + std::to_string(weights->size()) + " weights for " +
                                std::to_string(n) + " datasets");
  }
  double min_w = (*weights)[0];
  for (double w : *weights) {
    if (w == 0) throw std::invalid_argument("Must specify all non-zero proportions for mixing.");
    if (!(w > 0) || !std::isfinite(w)) {
      throw std::invalid_argument("mix: weights must be positive and finite");
    }
    min_w = std::min(min_w, w);
  }
  const double scale = 100.0 / min_w;
  std::vector<int64_t> out;
  for (double w : *weights) {
    const double p = w * scale;
    if (p >= 9.0e15) throw std::invalid_argument("mix: ratio of weights too large");
    out.push_back(static_cast<int64_t>(p));  // Python int(): truncation
  }
  return out;
}

Route MixRoute(int64_t k, std::span<const int64_t> proportions) {
  int128 remaining = 0;
  for (int64_t p : proportions) remaining += p;
  int128 curr_k = k, curr_k1 = int128{k} + 1;
  for (size_t i = 0; i < proportions.size(); ++i) {
    const int128 p = proportions[i];
    const int128 next_k = curr_k * (remaining - p) / remaining;
    const int128 next_k1 = curr_k1 * (remaining - p) / remaining;
    const int128 count_k_plus_1 = curr_k1 - next_k1;
    if (curr_k - next_k != count_k_plus_1) {
      return {i, static_cast<int64_t>(count_k_plus_1 - 1)};
    }
    remaining -= p;
    curr_k = next_k;
    curr_k1 = next_k1;
  }
  throw std::logic_error("mix: internal error selecting a dataset for index " +
                         std::to_string(k));
}

namespace {

class MixNode final : public RoutedNode {
 public:
  MixNode(std::vector<MapNodePtr> parents, const std::optional<std::vector<double>>& weights)
      : RoutedNode(std::move(parents)) {
    if (inputs().empty()) throw std::invalid_argument("mix: needs at least one dataset");
    proportions_ = IntProportions(inputs().size(), weights);
    int64_t weight_sum = 0;
    for (int64_t p : proportions_) weight_sum += p;
    double min_length = 0;
    std::string zero;
    for (size_t i = 0; i < inputs().size(); ++i) {
      const double len = static_cast<double>(inputs()[i]->Length()) /
                         (static_cast<double>(proportions_[i]) / static_cast<double>(weight_sum));
      if (len == 0) {
        zero += (zero.empty() ? "" : ", ") + std::string("index ") + std::to_string(i) + " (" +
                inputs()[i]->Name() + ")";
      }
      if (i == 0 || len < min_length) min_length = len;
    }
    if (!zero.empty()) {
      throw std::invalid_argument(
          "All datasets must have positive length for mixing, but dataset(s) at " + zero +
          " have length 0.");
    }
    length_ = min_length >= 9223372036854775808.0 ? kInfiniteLength
                                                   : static_cast<int64_t>(min_length);
  }
  std::string Name() const override { return "MixedMapDataset"; }
  int64_t Length() const override { return length_; }

 private:
  Route RouteOf(int64_t index) const override { return MixRoute(index, proportions_); }

  std::vector<int64_t> proportions_;
  int64_t length_ = 0;
};

}  // namespace

MapNodePtr MakeMixNode(std::vector<MapNodePtr> parents,
                       const std::optional<std::vector<double>>& weights) {
  return std::make_shared<MixNode>(std::move(parents), weights);
}

}  // namespace spelt::internal
