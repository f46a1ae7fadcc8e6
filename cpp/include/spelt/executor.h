// spelt/executor.h: the one ordered-execution core of Spelt.
//
// Every read-ahead in Spelt (to_iter_dataset with threads, worker processes, Ray actors) is the
// same iterator: it asks an *executor* to compute chunks of consecutive global
// indices of a MapDataset, keeps several in flight, and hands out their elements strictly in
// index order. Executors differ only in where a chunk is computed:
//   - MakeInlineExecutor: in the calling thread, when the consumer asks for it (num_threads 0);
//   - MakeThreadPoolExecutor: on the process-wide thread pool (Python code of the pipeline
//     takes the GIL there);
//   - worker processes, or Ray actors behind the same interface (the Python package plugs
//     them in, cpp/python/process_executor.cc).
// The state rules are written once, in MakeOrderedIterator: the state is Grain's
// {"next_index": n}, the number of indices consumed up to and including the last element
// returned; read-ahead never counts, so a state restores with any executor.
//
// Thread-safety: an executor and its PendingChunks are used by the one thread that drives the
// ordered iterator; what they do inside (pool threads, processes) is their own business.
#ifndef SPELT_EXECUTOR_H_
#define SPELT_EXECUTOR_H_

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "spelt/node.h"
#include "spelt/read_options.h"

namespace spelt {

// The elements of global indices [begin, begin + count) of a MapDataset.
struct ChunkResult {
  int64_t begin = 0;
  int64_t count = 0;
  // values[k] is element begin + k; nullopt where a filter removed it. If `error` is set,
  // values.size() < count and `error` was raised by element begin + values.size(); the
  // elements after it were not computed.
  std::vector<std::optional<Value>> values;
  std::exception_ptr error;
};

// Computes indices [begin, begin + count) of `node` (MapNode::GetMany, then MapNode::Get one at
// a time from the first failure to find the failing index). Never throws: errors go into the
// result. This is the per-chunk work of every executor (worker processes call it too).
ChunkResult ComputeChunk(const MapNode& node, int64_t begin, int64_t count);

// A chunk that an executor is computing. Destroying it without Take() abandons it (the
// executor drops the result when it arrives).
class PendingChunk {
 public:
  virtual ~PendingChunk() = default;
  // Blocks until the chunk is computed and returns it. Called at most once. May throw if the
  // executor itself failed (e.g. a worker process died); the ordered iterator then keeps its
  // position, drops everything in flight and raises the error.
  virtual ChunkResult Take() = 0;
};

class ChunkExecutor {
 public:
  virtual ~ChunkExecutor() = default;
  // Most chunks worth keeping in flight besides the one being taken; 0: none (the ordered
  // iterator submits a chunk only when it needs one, so chunks are computed one at a time).
  virtual int64_t MaxInFlight() const = 0;
  // Size of the next chunk to submit (>= 1); executors may adapt it to measured cost.
  virtual int64_t NextChunkSize() = 0;
  // Starts computing [begin, begin + count). Chunks are taken in submission order, except that
  // abandoned ones are skipped.
  virtual std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) = 0;
  // From now on, reads about `elements` ahead (as ReadOptions.prefetch_buffer_size does), with
  // the chunks in flight kept. Executors that keep no chunk in flight ignore it.
  // REQUIRES: elements >= 1.
  virtual void SetReadAhead(int64_t /*elements*/) {}
};

// Computes chunks in the calling thread, inside Take(). Chunk sizes grow 1, 2, 4, ... up to
// `max_chunk_size`, so the first element comes after one element's work; once a chunk is
// taken, they are also capped at about 1 MiB of output (one element at least), so that large
// elements (batches) are computed one or a few at a time, as a plain loop would. Chunks that
// are seen to wait (under a quarter of their wall time on the thread's CPU, timed over at
// least 2 ms: reads from a remote store) double both limits, up to 64 times (64 MiB and
// 64 x max_chunk_size elements), so that more reads share each round trip; chunks that do not
// wait halve them again.
// REQUIRES: max_chunk_size >= 1.
std::unique_ptr<ChunkExecutor> MakeInlineExecutor(std::shared_ptr<const MapNode> node,
                                                  int64_t max_chunk_size = 64);

// Computes chunks on the process-wide thread pool (shared by every iterator and by the
// ArrayRecord reader; it grows to the largest num_threads asked for). At most
// options.num_threads chunks of this iterator run at once, and about
// options.prefetch_buffer_size elements are read ahead, in chunks of
// prefetch_buffer_size / (2 * min(num_threads, cores)) elements (1 to 64), or of
// prefetch_buffer_size / (2 * num_threads) for a node that CallsPython(), capped at about
// 1 MiB of output once a chunk is taken (as MakeInlineExecutor's). The chunks of a node that
// CallsPython() start at 1 element and double, and are computed by the consumer, each
// submitted when it is reached (Python holding the GIL gains nothing from threads), until
// they are seen to use under a quarter of their wall time in CPU (Python code that waits:
// I/O, sleep, native code without the GIL) or over half of it in heavy native work
// (spelt/parallel_work.h); from then on the pool computes them too, up to num_threads at once
// (each Python call taking the GIL), and the consumer still computes any it reaches
// unstarted. Waits go through BlockingWait (spelt/blocking_wait.h). Each chunk's sources get
// a share of min(num_threads, cores) threads for their reads (spelt/read_threads.h). Chunks
// that the pool computed and that are seen to wait (reads from a remote store) double their
// byte limit, up to 64 MiB, so that about prefetch_buffer_size elements are read ahead
// whatever their size; their element limit stays.
// Destroying the executor drops the chunks not started and waits for those being computed:
// no callable of the pipeline runs after it is gone.
// REQUIRES: options.num_threads >= 1, options.prefetch_buffer_size >= 1.
std::unique_ptr<ChunkExecutor> MakeThreadPoolExecutor(std::shared_ptr<const MapNode> node,
                                                      ReadOptions options);

// The ordered iterator over indices [0, length) computed by `executor` (see the file comment).
// Elements that a filter removed are skipped, or returned as None (Value()) if allow_nones.
// An error in element i is raised when the consumer reaches i, after every element before it;
// the next Next() continues with element i + 1. The ratio of removed elements is checked
// against the filter thresholds (spelt/dataset_options.h); `name` names the iterator there.
std::unique_ptr<DatasetIterator> MakeOrderedIterator(
    int64_t length, bool allow_nones, std::unique_ptr<ChunkExecutor> executor,
    std::string name = "PrefetchDatasetIterator");

}  // namespace spelt

#endif  // SPELT_EXECUTOR_H_
