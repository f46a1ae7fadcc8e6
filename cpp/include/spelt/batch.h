// spelt/batch.h: combining elements into a batch (Grain's default batch function).
//
// Thread-safe (pure function of its arguments).
#ifndef SPELT_BATCH_H_
#define SPELT_BATCH_H_

#include <vector>

#include "spelt/value.h"

namespace spelt {

// Stacks `elements` (all with the same tree structure) leaf by leaf along a new leading axis,
// as Grain's batch does with np.stack:
//  - array leaves of shape S and dtype D -> array of shape [n, S...], dtype D;
//  - bool / int / float scalars -> 1-d arrays of dtype bool / int64 / float64;
//  - str / bytes leaves -> a list of them tagged as stacked strings (Sequence with
//    kind kList and tag == StackedStringsTag()), which the Python face turns into a numpy
//    string array;
//  - containers keep their kind and tag (dict key order is the first element's).
// Opaque leaves are Unpack()ed first. A None leaf is kept as None if it is None in every
// element.
// Throws std::invalid_argument if elements is empty, or if the elements differ in structure,
// dict keys, leaf kind, shape or dtype; the message names the leaf path (e.g. "['image'][2]"),
// the index of the first element that differs and both descriptions.
Value Stack(const std::vector<Value>& elements);

// The tag Stack() puts on a list of stacked string leaves.
const ContainerTag& StackedStringsTag();

}  // namespace spelt

#endif  // SPELT_BATCH_H_
