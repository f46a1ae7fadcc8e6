// Implementation of spelt/source.h.
#include "spelt/source.h"

#include <stdexcept>

namespace spelt {

std::vector<Value> RandomAccessSource::GetMany(std::span<const int64_t> indices) const {
  std::vector<Value> out;
  out.reserve(indices.size());
  for (int64_t i : indices) out.push_back(Get(i));
  return out;
}

namespace {
void CheckIndex(int64_t index, int64_t length, const RandomAccessSource& source) {
  if (index < 0 || index >= length) {
    throw std::out_of_range("record index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(length) + ") of " + source.Repr());
  }
}
}  // namespace

RangeSource::RangeSource(int64_t start, int64_t stop, int64_t step)
    : start_(start), stop_(stop), step_(step) {
  if (step == 0) throw std::invalid_argument("RangeSource: step must not be 0");
  if (step > 0) {
    // Unsigned arithmetic: no overflow for huge steps (Python: len(range(0, 10, 2**63-1)) == 1).
    length_ = stop > start ? static_cast<int64_t>((static_cast<uint64_t>(stop) -
                                                   static_cast<uint64_t>(start) - 1) /
                                                  static_cast<uint64_t>(step) + 1)
                           : 0;
  } else {
    length_ = start > stop ? static_cast<int64_t>((static_cast<uint64_t>(start) -
                                                   static_cast<uint64_t>(stop) - 1) /
                                                  (0 - static_cast<uint64_t>(step)) + 1)
                           : 0;
  }
}

Value RangeSource::Get(int64_t index) const {
  CheckIndex(index, length_, *this);
  return Value(start_ + index * step_);
}

std::string RangeSource::Repr() const {
  return "RangeDataSource(start=" + std::to_string(start_) + ", stop=" + std::to_string(stop_) +
         ", step=" + std::to_string(step_) + ")";
}

InMemorySource::InMemorySource(std::vector<Value> records, std::string name)
    : records_(std::move(records)), name_(std::move(name)) {}

Value InMemorySource::Get(int64_t index) const {
  CheckIndex(index, Length(), *this);
  return records_[static_cast<size_t>(index)];
}

std::string InMemorySource::Repr() const {
  return name_ + "(len=" + std::to_string(records_.size()) + ")";
}

}  // namespace spelt
