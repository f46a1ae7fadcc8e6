// spelt/stack.h: combining elements into a batch (Grain's default batch function), and the
// numpy dtype promotion and casting rules it follows.
//
// Thread-safe (pure functions of their arguments).
#ifndef SPELT_STACK_H_
#define SPELT_STACK_H_

#include <cstddef>
#include <span>
#include <vector>

#include "spelt/value.h"

namespace spelt {

// Stacks `elements` (all with the same tree structure) leaf by leaf along a new leading axis,
// as Grain's batch does with np.stack:
//  - array leaves of shape S -> array of shape [n, S...]. bool / int / float scalars count as
//    0-d arrays of dtype bool / int64 / float64 (what np.asarray makes of them), so they
//    stack to 1-d arrays and mix with 0-d arrays. The output dtype is numpy's result type of
//    the dtypes seen at that leaf (ResultType(); e.g. int32 and float32 -> float64, bool and
//    int -> int64) and each leaf is converted to it as numpy casts (CastElements());
//  - str / bytes leaves -> a list of them tagged as stacked strings (Sequence with
//    kind kList and tag == StackedStringsTag()), which the Python face turns into a numpy
//    string array;
//  - containers keep their kind and tag (dict key order is the first element's; sorted under
//    TreeSemantics::kJax, which also requires sequences at one position to have the same tag);
//  - a leaf that is None in some element stacks to a numpy object array (np.stack of
//    [None, 1] is array([None, 1], dtype=object)), which only a face with object arrays can
//    build: the whole batch is then ObjectStackFallback()(elements). So is a leaf that is an
//    Opaque in some elements and native in others (np.stack of the Python ints 2**63 and 1 is
//    float64). Without a fallback registered, std::invalid_argument names the leaf path.
//    Under TreeSemantics::kJax a None in element 0 is an empty subtree instead: it stacks to
//    None, and an element with anything else there differs (std::invalid_argument); a None
//    where element 0 has a leaf still goes to the fallback (JAX passes it to np.stack).
// Opaque values are Unpack()ed first (once each). One that unpacks to an Opaque is a leaf that
// Spelt cannot represent (e.g. a numpy string array or an arbitrary Python object): every
// element must have an Opaque leaf there too, and the output leaf is
// leaves[0]->StackLeaves(leaves) (see Opaque::StackLeaves()).
// Throws std::invalid_argument if elements is empty, or if the elements differ in structure,
// dict keys, leaf kind or shape; the message names the leaf path (e.g. "['image'][2]"), the
// index of the first element that differs and both descriptions. Errors from StackLeaves()
// are rethrown as std::invalid_argument naming the leaf path.
Value Stack(const std::vector<Value>& elements);

// Grain's grain.experimental.batch_and_pad (dataset/transformations/batch.py): Stack(values),
// each array leaf padded along axis 0 to batch_size rows with pad_value (np.full's value in
// the dtype of values[0]'s leaf, then numpy's casting into the batch's dtype). With
// batch_size values it is Stack(values). Throws std::invalid_argument if values is empty
// ("Cannot batch 0 values."), has more than batch_size values, cannot be stacked (see Stack()),
// if a padded leaf is not numeric, or if pad_value is not a number.
Value BatchAndPad(const std::vector<Value>& values, int64_t batch_size, const Value& pad_value);
// What Stack() calls for a batch with None leaves (see above): stacks the elements as np.stack
// does, leaf by leaf, into a value whose object-array leaves are Opaque. Set once by a face
// (the Python module sets it at import); null by default. Thread-safe to read after set.
using ObjectStackFn = Value (*)(const std::vector<Value>& elements);
void SetObjectStackFallback(ObjectStackFn fn);
ObjectStackFn ObjectStackFallback();

// How Stack() reads trees, as Grain 0.2.18's tree_lib does in each environment: kPlain is Grain
// without JAX (None is a leaf, dict keys keep element 0's order, sequence tags are not
// compared), kJax is Grain with JAX (jax.tree_util: see Stack()). A face decides once which
// applies (the Python face: whether `jax` imports).
enum class TreeSemantics : uint8_t { kPlain, kJax };
using TreeSemanticsFn = TreeSemantics (*)();
// Set once by a face at startup (the Python module sets it at import); the function is called
// on the first CurrentTreeSemantics() after that (possibly by several threads at once, so it
// must give the same answer each time; it may block, e.g. to take the GIL).
void SetTreeSemanticsResolver(TreeSemanticsFn fn);
// The resolver's answer, asked once and then kept; kPlain while no resolver is set.
// Thread-safe.
TreeSemantics CurrentTreeSemantics();

// The tag Stack() puts on a list of stacked string leaves.
const ContainerTag& StackedStringsTag();

// numpy's np.promote_types(a, b) (numpy 2.x, no value-based casting). Commutative but not
// associative: promote(promote(int8, uint8), float16) is float32, promote(int8, promote(uint8,
// float16)) is float16.
DType PromoteTypes(DType a, DType b);

// numpy's result type of arrays with these dtypes (np.result_type, which np.stack and
// np.concatenate use), independent of their order: e.g. {int8, uint8, float16} -> float16.
// REQUIRES: !dtypes.empty().
DType ResultType(std::span<const DType> dtypes);

// Converts `count` elements of dtype `from` at `src` into dtype `to` at `dst` (non-overlapping
// buffers, any alignment) as numpy's C casts do: integers wrap modulo 2^bits, integer -> float
// rounds to nearest, float -> narrower float rounds to nearest even (overflow -> inf, NaN stays
// NaN), anything -> bool is "!= 0". Throws std::invalid_argument for float -> integer, which
// numpy leaves undefined out of range and promotion never needs.
void CastElements(DType from, const void* src, DType to, void* dst, size_t count);

}  // namespace spelt

#endif  // SPELT_STACK_H_
