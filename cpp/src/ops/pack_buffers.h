// Internal: the leaf-level pieces shared by the packing ops (ops/pack.cc, ops/packed_bins.cc,
// ops/concat_then_split.cc): a feature of an element seen as a run of tokens, copies of token
// ranges into packed buffers (numpy's assignment casting), buffers filled with a padding
// value, zero-copy row views, and paths into element trees.
#ifndef SPELT_SRC_OPS_PACK_BUFFERS_H_
#define SPELT_SRC_OPS_PACK_BUFFERS_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "spelt/value.h"

namespace spelt::internal {

// A sequence feature of one element: `length` tokens along the leading axis, each token a
// C-contiguous block of shape `trailing` (a scalar is one token of shape ()). Views `leaf`'s
// buffer: valid while `leaf` is alive (it holds the owner).
struct Tokens {
  Array leaf;
  int64_t length = 0;
  std::vector<int64_t> trailing;
  size_t token_bytes() const;  // bytes of one token
};

// The feature `leaf` as tokens: an array (its leading axis; 0-d: one token), a bool / int /
// float scalar (one token of dtype bool / int64 / float64, as np.asarray makes it), or a
// list / tuple of such scalars (int64 if all are ints or bools, else float64). Opaque values
// are unpacked. Throws std::invalid_argument starting with `what` for anything else.
Tokens ToTokens(const Value& leaf, const std::string& what);

// A buffer of `dtype` and `shape`, every element set to `fill` (None: zero). A float fill is
// truncated towards zero for integer dtypes (np.full's casting). Throws std::invalid_argument
// if `fill` is not a number.
Array FilledArray(DType dtype, std::vector<int64_t> shape, const Value& fill);

// Copies tokens [from, from + count) of `src` into `dst` (not yet shared) starting at token
// `at` of its flattened (steps, *trailing) layout, casting dtypes as numpy assignment does.
// Throws std::invalid_argument starting with `what` if the token shapes differ or the cast is
// not possible.
void CopyTokens(const Array& dst, int64_t at, const Tokens& src, int64_t from, int64_t count,
                const std::string& what);

// Sets every element of token `at` of `dst` to `value` (e.g. a BOS id).
void SetToken(const Array& dst, int64_t at, int64_t value);

// batch[row] for an array of shape (rows, ...): shares batch's buffer, no copy.
Array RowView(const Array& batch, int64_t row);

// A path from the root of an element to a leaf: dict keys and sequence indices.
using PathKey = std::variant<std::string, size_t>;
using LeafPath = std::vector<PathKey>;
// "inputs", "nested/inner", "0/1": for messages.
std::string PathName(const LeafPath& path);

// The leaves of `tree` (dicts in key order, lists / tuples in order), with their paths, depth
// first. Opaque values are leaves: callers pass Unpacked() trees.
std::vector<std::pair<LeafPath, Value>> FlattenTree(const Value& tree);

// The value at `path` in `element` (an Unpacked() tree), or nullptr if a key or index is
// missing or the path goes through a leaf.
const Value* FindPath(const Value& element, const LeafPath& path);

// `tree` with its leaves (in FlattenTree() order) replaced by `leaves`; containers keep their
// kind, tag and key order, or with `sort_keys` every dict's keys come out sorted (as Grain's
// packers build their outputs with JAX's trees, TreeSemantics::kJax in spelt/stack.h).
Value RebuildTree(const Value& tree, const std::vector<Value>& leaves, bool sort_keys = false);

}  // namespace spelt::internal

#endif  // SPELT_SRC_OPS_PACK_BUFFERS_H_
