// Implementation of spelt/source.h.
#include "spelt/source.h"

#include "base/range_length.h"

#include <stdexcept>

namespace spelt {

void RandomAccessSource::GetMany(std::span<const int64_t> indices,
                                 std::vector<Value>* out) const {
  out->reserve(out->size() + indices.size());
  for (const int64_t i : indices) out->push_back(Get(i));
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
  length_ = internal::RangeLength(start, stop, step);
}

Value RangeSource::Get(int64_t index) const {
  CheckIndex(index, length_, *this);
  return Value(start_ + index * step_);
}

void RangeSource::GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const {
  out->reserve(out->size() + indices.size());
  for (const int64_t i : indices) out->push_back(RangeSource::Get(i));  // no virtual calls
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

void InMemorySource::GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const {
  out->reserve(out->size() + indices.size());
  for (const int64_t i : indices) out->push_back(InMemorySource::Get(i));  // no virtual calls
}

std::string InMemorySource::Repr() const {
  return name_ + "(len=" + std::to_string(records_.size()) + ")";
}

}  // namespace spelt
