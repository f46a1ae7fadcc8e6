// spelt/source.h: random-access data sources, the leaves of every pipeline.
//
// A RandomAccessSource has a fixed number of records and returns record i for any
// 0 <= i < Length(). Implementations must be safe to call from many threads at once; one that
// calls Python says so (CallsPython()), and each of its Python calls takes the GIL.
#ifndef SPELT_SOURCE_H_
#define SPELT_SOURCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spelt/value.h"

namespace spelt {

class RandomAccessSource {
 public:
  virtual ~RandomAccessSource() = default;
  virtual int64_t Length() const = 0;
  // Record `index`. REQUIRES: 0 <= index < Length(). Throws std::out_of_range otherwise, and
  // whatever the underlying storage throws on a bad record (naming the record).
  virtual Value Get(int64_t index) const = 0;
  // Records at `indices` (each as Get() would return it), appended to *out in order, read
  // together so that a source can batch the work (one parallel read, one gather, one
  // interpreter-lock hold). On an exception, *out holds exactly the records before the failing
  // index and the exception is the one Get() would raise for it: a source that reads the
  // whole batch at once and fails locates the failing record by reading one at a time (the
  // default). The default calls Get() for each index.
  virtual void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const;
  // The records at `indices` stacked as Stack() stacks them (one array, the records along a
  // new first axis), gathered straight into it, for sources that can (an in-memory array);
  // nullopt for the others (the default). May throw where GetMany() would.
  virtual std::optional<Value> GetStacked(std::span<const int64_t> /*indices*/) const {
    return std::nullopt;
  }
  // A stable description; it is stored in checkpoints to detect a changed source.
  virtual std::string Repr() const = 0;
  // True if its methods call Python (a Python data source): the nodes that read it then
  // CallsPython() (spelt/node.h), and the engine computes their chunks on the consumer until
  // they are seen to wait.
  virtual bool CallsPython() const { return false; }
};

// The integers start, start + step, ... below stop (as Python's range), as int64 scalars.
// Throws std::invalid_argument if step == 0. Repr matches Grain's RangeDataSource.
class RangeSource final : public RandomAccessSource {
 public:
  RangeSource(int64_t start, int64_t stop, int64_t step = 1);
  int64_t Length() const override { return length_; }
  Value Get(int64_t index) const override;
  void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const override;
  std::string Repr() const override;

 private:
  int64_t start_, stop_, step_, length_;
};

// Records held in memory, returned by shared reference (no copy).
class InMemorySource final : public RandomAccessSource {
 public:
  explicit InMemorySource(std::vector<Value> records, std::string name = "InMemorySource");
  int64_t Length() const override { return static_cast<int64_t>(records_.size()); }
  Value Get(int64_t index) const override;
  void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const override;
  std::string Repr() const override;

 private:
  std::vector<Value> records_;
  std::string name_;
};

}  // namespace spelt

#endif  // SPELT_SOURCE_H_
