// Internal: the filter-threshold check of spelt/dataset_options.h (exec/filter_threshold.cc),
// used by the filtering iterators (ops/iter_filter.cc, exec/ordered_iterator.cc), and the
// options of the iterator being made (api/dataset.cc applies them to the handles).
#ifndef SPELT_SRC_EXEC_FILTER_THRESHOLD_H_
#define SPELT_SRC_EXEC_FILTER_THRESHOLD_H_

#include <memory>
#include <string>

#include "core/nodes.h"
#include "spelt/dataset_options.h"

namespace spelt::internal {

// The options of the iterator being made in this thread: those given to MakeIterator(ds,
// options) while it runs, else the defaults.
const DatasetOptions& CurrentDatasetOptions();

// An iterator of `node` whose filtering iterators check `options` (MakeIterator(ds, options),
// spelt/dataset.h).
std::unique_ptr<DatasetIterator> MakeIteratorWithOptions(const IterNode& node,
                                                         DatasetOptions options);

// WithFilterThresholds (spelt/dataset.h) as a node: `parent`, whose iterators check
// `thresholds` over the options they are made with.
IterNodePtr MakeFilterThresholdsNode(IterNodePtr parent, FilterThresholds thresholds);

// Grain's FilterThresholdChecker: counts passed / skipped elements per window of 1000 and
// warns or throws at the end of a window (see spelt/dataset_options.h). Reads the thresholds
// of CurrentDatasetOptions() when constructed. Not thread-safe (one per iterator).
class FilterThresholdChecker {
 public:
  // `transform_name` names the filter in messages, e.g. "FilterDatasetIterator(transform=f)".
  explicit FilterThresholdChecker(std::string transform_name);
  void Check(bool passed);

 private:
  std::string transform_name_;
  double warn_ratio_;
  double raise_ratio_;
  std::function<void(const std::string&)> warn_;
  int64_t passed_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace spelt::internal

#endif  // SPELT_SRC_EXEC_FILTER_THRESHOLD_H_
