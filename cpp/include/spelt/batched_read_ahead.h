// to_iter_dataset().batch(n) computed as whole batches ahead of the consumer: the iterator that
// hands them out (states, restores, and the hand-over to element-wise batching after an error),
// and the batches it asks for. The read-ahead threads compute them (ops/to_iter_dataset.cc), or
// worker processes (cpp/python/process_executor.cc), so that the consumer only hands batches
// out instead of taking every element and stacking it.
//
// Thread-safety: an iterator is used by one thread at a time (as every DatasetIterator).
#ifndef SPELT_BATCHED_READ_AHEAD_H_
#define SPELT_BATCHED_READ_AHEAD_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "spelt/node.h"

namespace spelt {

// Where a batched read-ahead's batches are computed.
class BatchesAhead {
 public:
  virtual ~BatchesAhead() = default;
  // The stacked batches of the parent's elements [begin, length) in order (the last one
  // partial unless the remainder is dropped), each raising where one of its elements fails or
  // is None. The iterator made before is destroyed first.
  virtual std::unique_ptr<DatasetIterator> From(int64_t begin) = 0;
  // What to do once the first batch's size in bytes is known, called while the iterator that
  // From() made last is alive.
  enum class Sized {
    kGoOn,
    kElementwise,  // batch element by element from the next batch on (until a SetState())
  };
  virtual Sized OnFirstBatch(int64_t /*batch_bytes*/) { return Sized::kGoOn; }
  // DatasetIterator::AbsorbReadAhead for `batches` more batches, from now on and after
  // restores; false where the consumer computes the batches. The default returns false.
  virtual bool AbsorbReadAhead(int64_t /*batches*/) { return false; }
  // True if the error the iterator of From() just raised is not an element's (worker
  // processes failed, Ctrl-C): it is raised as it is, and the element-wise iterator takes over
  // at the next call. An element's error is raised by the element-wise iterator, at its element.
  virtual bool RaiseAsIs() { return false; }
};

// Batch k of the node is the parent's elements [begin + k*batch_size, begin +
// (k+1)*batch_size) stacked (Stack(), spelt/stack.h; partial at the end unless
// drop_remainder), as BatchMapDataset over the parent's slice from `begin`, except that an
// element that is None raises std::invalid_argument (a filter, or a map that returned None:
// to_iter_dataset would skip it), and an element that `is_none_marker` accepts (if given; see
// BatchRequest::none_marker) is a None element of its batch. std::out_of_range if begin is
// outside [0, length].
std::shared_ptr<const MapNode> MakeBatchesFromNode(
    std::shared_ptr<const MapNode> parent, int64_t begin, int64_t batch_size,
    bool drop_remainder, std::function<bool(const Value&)> is_none_marker = {});

// The iterator of BatchIterDataset(batch_size) over an ordered read of a MapDataset of
// `length` elements, with the batches from `batches`: the elements, states and errors of
// `elementwise()` (the plain batching of the parent's elements one by one). The state is
// {"next_index": n}, n the parent elements consumed; after a batch raises, `elementwise()`
// restored at that batch's start takes over until the next SetState() (it raises the error at
// the same element with the same state, or skips the None; see BatchesAhead::RaiseAsIs).
std::unique_ptr<DatasetIterator> MakeBatchedReadAheadIterator(
    int64_t length, int64_t batch_size, std::unique_ptr<BatchesAhead> batches,
    std::function<std::unique_ptr<DatasetIterator>()> elementwise);

}  // namespace spelt

#endif  // SPELT_BATCHED_READ_AHEAD_H_
