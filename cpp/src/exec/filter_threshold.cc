// The filter-threshold check (Grain 0.2.18's FilterThresholdChecker in
// dataset/transformations/filter.py) and the options of the iterator being made.
#include "exec/filter_threshold.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

namespace spelt {
namespace internal {
namespace {

constexpr int64_t kCheckInterval = 1000;
constexpr int64_t kWarnIntervalNs = 60'000'000'000;

thread_local const DatasetOptions* current_options = nullptr;

// Grain's `threshold or inf`: nullopt and 0 disable the check.
double Threshold(const std::optional<double>& ratio) {
  return ratio && *ratio != 0 ? *ratio : std::numeric_limits<double>::infinity();
}

// Grain's message; `option` names the DatasetOptions field that disables it.
std::string Message(const std::string& name, double ratio, int64_t seen, const char* option) {
  char percent[32];
  std::snprintf(percent, sizeof(percent), "%.2f", ratio * 100);
  return "Transformation " + name + " skipped " + percent + " % of the last seen " +
         std::to_string(seen) +
         " elements. Please check the filtering logic. If this is intended, consider "
         "pre-filtering the input dataset before training. To disable this check, set "
         "`grain.experimental.DatasetOptions." + option +
         "` used in `WithOptionsIterDataset` to `None`.";
}

// For the default sink: at most one warning per kWarnIntervalNs in the process (absl's
// log_every_n_seconds).
bool WarningDue() {
  static std::atomic<int64_t> last_ns{std::numeric_limits<int64_t>::min()};
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_ns.load();
  while (last == std::numeric_limits<int64_t>::min() || now - last >= kWarnIntervalNs) {
    if (last_ns.compare_exchange_weak(last, now)) return true;
  }
  return false;
}

}  // namespace

const DatasetOptions& CurrentDatasetOptions() {
  static const DatasetOptions defaults;
  return current_options != nullptr ? *current_options : defaults;
}

FilterThresholdChecker::FilterThresholdChecker(std::string transform_name)
    : transform_name_(std::move(transform_name)) {
  const DatasetOptions& options = CurrentDatasetOptions();
  warn_ratio_ = Threshold(options.filter_warn_threshold_ratio);
  raise_ratio_ = Threshold(options.filter_raise_threshold_ratio);
  warn_ = options.warn;
}

void FilterThresholdChecker::Check(bool passed) {
  ++(passed ? passed_ : skipped_);
  const int64_t seen = passed_ + skipped_;
  if (seen < kCheckInterval) return;
  const double ratio = static_cast<double>(skipped_) / static_cast<double>(seen);
  if (ratio >= raise_ratio_) {  // the counts stay: the next element raises again, as in Grain
    throw std::invalid_argument(
        Message(transform_name_, ratio, seen, "filter_raise_threshold_ratio"));
  }
  if (ratio >= warn_ratio_) {
    const std::string message =
        Message(transform_name_, ratio, seen, "filter_warn_threshold_ratio");
    if (warn_) {
      warn_(message);
    } else if (WarningDue()) {
      std::cerr << "WARNING: " << message << "\n";
    }
  }
  passed_ = skipped_ = 0;
}

namespace {

class ThresholdsNode final : public IterNode {
 public:
  ThresholdsNode(std::shared_ptr<const IterNode> parent, FilterThresholds thresholds)
      : IterNode({parent}), parent_(std::move(parent)), thresholds_(thresholds) {
    set_not_a_level();
  }
  std::string Name() const override { return "WithOptionsIterDataset"; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    DatasetOptions options = internal::CurrentDatasetOptions();
    if (const auto& warn = thresholds_.filter_warn_threshold_ratio) {
      options.filter_warn_threshold_ratio = *warn;
    }
    if (const auto& raise = thresholds_.filter_raise_threshold_ratio) {
      options.filter_raise_threshold_ratio = *raise;
    }
    return MakeIteratorWithOptions(*parent_, std::move(options));
  }

 private:
  std::shared_ptr<const IterNode> parent_;
  FilterThresholds thresholds_;
};

}  // namespace

IterNodePtr MakeFilterThresholdsNode(IterNodePtr parent, FilterThresholds thresholds) {
  return std::make_shared<ThresholdsNode>(std::move(parent), thresholds);
}

std::unique_ptr<DatasetIterator> MakeIteratorWithOptions(const IterNode& node,
                                                         DatasetOptions options) {
  const DatasetOptions* outer = current_options;
  current_options = &options;
  struct Restore {
    const DatasetOptions* outer;
    ~Restore() { current_options = outer; }
  } restore{outer};
  return node.MakeIterator();
}

}  // namespace internal
}  // namespace spelt
