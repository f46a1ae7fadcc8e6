// BatchAndPad (spelt/stack.h): Grain 0.2.18's batch_and_pad, a batch function that pads a
// partial batch to a fixed size instead of dropping it.
#include <cstring>

#include "ops/pack_buffers.h"
#include "spelt/stack.h"

namespace spelt {
namespace {

std::invalid_argument NotNumeric(const std::string& where, const Value& leaf) {
  return std::invalid_argument("batch_and_pad: " + where + " is " + leaf.Describe() +
                               "; padding needs numeric leaves");
}

// The dtype np.asarray gives a leaf of an element (what np.full pads it with).
DType LeafDType(const Value& leaf, const std::string& where) {
  if (leaf.is<Array>()) return leaf.AsArray().dtype;
  if (leaf.is<bool>()) return DType::kBool;
  if (leaf.is<int64_t>()) return DType::kInt64;
  if (leaf.is<double>()) return DType::kFloat64;
  throw NotNumeric(where, leaf);
}

}  // namespace

Value BatchAndPad(const std::vector<Value>& values, int64_t batch_size, const Value& pad_value) {
  const auto n = static_cast<int64_t>(values.size());
  if (n == 0) throw std::invalid_argument("Cannot batch 0 values.");  // Grain's messages
  if (n > batch_size) {
    throw std::invalid_argument("Cannot batch " + std::to_string(n) + " values to " +
                                std::to_string(batch_size) + ".");
  }
  Value stacked = Stack(values);
  if (n == batch_size) return stacked;
  const Value first = values[0].Unpacked();
  std::vector<Value> leaves;
  for (auto& [path, leaf] : internal::FlattenTree(stacked)) {
    const std::string where =
        path.empty() ? std::string("the element") : "leaf '" + internal::PathName(path) + "'";
    if (!leaf.is<Array>()) throw NotNumeric(where, leaf);
    const Array& batch = leaf.AsArray();
    const Value* first_leaf = internal::FindPath(first, path);
    const DType pad_dtype = first_leaf ? LeafDType(*first_leaf, where) : batch.dtype;
    std::vector<int64_t> shape = batch.shape;
    shape[0] = batch_size - n;
    Array padding = internal::FilledArray(pad_dtype, shape, pad_value);
    shape[0] = batch_size;
    Array out = Array::AllocateUninitialized(batch.dtype, std::move(shape));
    if (batch.nbytes() != 0) std::memcpy(out.mutable_data(), batch.data, batch.nbytes());
    CastElements(pad_dtype, padding.data, out.dtype, out.mutable_data() + batch.nbytes(),
                 static_cast<size_t>(padding.num_elements()));
    leaves.push_back(Value(std::move(out)));
  }
  return internal::RebuildTree(stacked, leaves);
}

}  // namespace spelt
