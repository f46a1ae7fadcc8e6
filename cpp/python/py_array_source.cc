// Implementation of py_array_source.h.
#include "py_array_source.h"

#include <nanobind/stl/string.h>

#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace spelt::python {
namespace {

class NumpyArraySourceImpl final : public RandomAccessSource {
 public:
  // `whole`: the ndarray as an Array whose owner holds the ndarray.
  NumpyArraySourceImpl(Array whole, std::string repr)
      : whole_(std::move(whole)),
        row_shape_(whole_.shape.begin() + 1, whole_.shape.end()),
        row_bytes_(whole_.shape[0] == 0
                       ? 0
                       : whole_.nbytes() / static_cast<size_t>(whole_.shape[0])),
        repr_(std::move(repr)) {}
  int64_t Length() const override { return whole_.shape[0]; }
  Value Get(int64_t index) const override {
    if (index < 0 || index >= Length()) {
      throw std::out_of_range("record index " + std::to_string(index) + " out of range [0, " +
                              std::to_string(Length()) + ") of " + repr_);
    }
    Array row;
    row.dtype = whole_.dtype;
    row.shape = row_shape_;
    row.owner = whole_.owner;
    row.data = whole_.data + static_cast<size_t>(index) * row_bytes_;
    return Value(std::move(row));
  }
  // The row views of a chunk (the stacking that follows does the gather).
  void GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const override {
    out->reserve(out->size() + indices.size());
    for (const int64_t i : indices) out->push_back(NumpyArraySourceImpl::Get(i));
  }
  // The gather itself: rows copied straight into one new array (numpy's take along axis 0).
  std::optional<Value> GetStacked(std::span<const int64_t> indices) const override {
    for (const int64_t i : indices) {
      if (i < 0 || i >= Length()) NumpyArraySourceImpl::Get(i);  // throws its error
    }
    std::vector<int64_t> shape = {static_cast<int64_t>(indices.size())};
    shape.insert(shape.end(), row_shape_.begin(), row_shape_.end());
    Array batch = Array::AllocateUninitialized(whole_.dtype, std::move(shape));
    std::byte* dst = batch.mutable_data();
    for (const int64_t i : indices) {
      std::memcpy(dst, whole_.data + static_cast<size_t>(i) * row_bytes_, row_bytes_);
      dst += row_bytes_;
    }
    return Value(std::move(batch));
  }
  std::string Repr() const override { return repr_; }

 private:

  Array whole_;
  std::vector<int64_t> row_shape_;
  size_t row_bytes_;
  std::string repr_;
};

}  // namespace

std::shared_ptr<const RandomAccessSource> NumpyArraySource(nb::handle obj) {
  nb::module_ np = nb::module_::import_("numpy");
  if (!obj.type().is(np.attr("ndarray"))) return nullptr;
  if (nb::cast<int>(obj.attr("ndim")) < 2) return nullptr;
  nb::object flags = obj.attr("flags");
  // Rows leave as writable ndarrays (as arr[i] of a writable array does), so read-only
  // memory stays on the Python path, where arr[i] keeps it read-only.
  if (!nb::cast<bool>(flags.attr("c_contiguous")) || !nb::cast<bool>(flags.attr("writeable"))) {
    return nullptr;
  }
  Value whole = ToValue(obj);  // zero-copy for a C-contiguous array of a dtype Spelt has
  if (!whole.is<Array>()) return nullptr;
  return std::make_shared<NumpyArraySourceImpl>(whole.as<Array>(),
                                                nb::cast<std::string>(nb::str(obj.type())));
}

}  // namespace spelt::python
