// spelt/dataset_options.h: the options of a pipeline that the engine enforces (Grain 0.2.18's
// DatasetOptions, grain/_src/python/dataset/base.py): the filter thresholds.
//
// A filter that removes nearly every element is usually a bug. Every filtering iterator (an
// IterDataset filter, and to_iter_dataset skipping the elements a MapDataset filter removed)
// counts passed and skipped elements in consecutive windows of 1000; at the end of a window
// whose skipped ratio is >= filter_raise_threshold_ratio, Next() throws std::invalid_argument,
// and if it is >= filter_warn_threshold_ratio, `warn` gets Grain's message (the default
// writes it to stderr, at most once per 60 s in the process). A threshold that is nullopt or 0 disables its check (Grain's `or inf`).
//
// MakeIterator(ds, options) and WithFilterThresholds (spelt/dataset.h) apply them to a pipeline.
//
// Thread-safety: MakeIterator(ds, options) may be called from any thread; the iterators it
// makes call `warn` from the thread that calls their Next().
#ifndef SPELT_DATASET_OPTIONS_H_
#define SPELT_DATASET_OPTIONS_H_

#include <functional>
#include <optional>
#include <string>

namespace spelt {

struct DatasetOptions {
  std::optional<double> filter_warn_threshold_ratio = 0.9;
  std::optional<double> filter_raise_threshold_ratio;
  // Receives every warning; empty: stderr, at most one per 60 s.
  std::function<void(const std::string&)> warn;
};

// Thresholds a pipeline sets for itself: each field that holds a value (nullopt inside: the
// check is disabled) overrides that of the options of the iterator that makes this one.
struct FilterThresholds {
  std::optional<std::optional<double>> filter_warn_threshold_ratio;
  std::optional<std::optional<double>> filter_raise_threshold_ratio;
};

}  // namespace spelt

#endif  // SPELT_DATASET_OPTIONS_H_
