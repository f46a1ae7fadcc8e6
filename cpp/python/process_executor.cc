// Worker processes as a ChunkExecutor of the ordered core (spelt/executor.h), and the engine
// side of the worker processes themselves (docs/workers.md):
//
//   _core.process_prefetch(parent, keeper, allow_nones, num_workers, per_worker_buffer_size,
//                          target_chunk_seconds=0.01)
//       -> IterDataset: ProcessPrefetchIterDataset's node (and RayPrefetchIterDataset's: Ray
//       actors behind the same keeper interface, python/spelt/_workers/ray_pool.py, with
//       longer chunks against Ray's larger per-chunk cost). Its iterator is
//       MakeOrderedIterator over a ProcessExecutor: chunks of consecutive indices of `parent`
//       are computed by worker processes; the merge in index order, the state
//       ({"next_index": n}) and everything downstream (batch, ...) are C++. A batch(n) over it
//       (with no filter below and allow_nones false) has the workers compute whole batches
//       (spelt/batched_read_ahead.h): chunks of consecutive batches of
//       `parent.batches_from(m, n, drop_remainder, none_marker)`, so the consumer neither
//       decodes nor stacks elements one by one.
//   MapDataset.batches_from(begin, batch_size, drop_remainder, none_marker=None) -> MapDataset
//       MakeBatchesFromNode: the batches of the elements from `begin` on, raising where an
//       element is None, with the object `none_marker` (by identity) as a None element (what
//       the workers compute for such a batch). A batch that holds Python objects (a numpy
//       object array) raises too: the consumer may traverse them where the worker could not
//       (a JAX pytree class registered in the user's __main__, which workers do not run).
//   MapDataset.compute_chunk(begin, count) -> (values, error)
//       ComputeChunk, values as a list (None where filtered) and `error` the exception raised
//       by element begin + len(values) (else None): what a Ray actor runs per request.
//   MapDataset.compute_chunk_into(writer, begin, count, pickle_element)
//       -> (stored, error, pickle_failed)
//       what a worker process runs per request: ComputeChunk, each element stored by the
//       ChunkWriter straight from the engine value (py_chunk_writer.h); `error` is what
//       pickling element begin + stored raised (pickle_failed) or the exception of that
//       element's computation, else None.
//
// The processes are Python's business (python/spelt/_workers); the executor talks to them once
// per chunk through three small Python objects:
//   keeper.acquire() -> lease     a pool of started workers, leased to this iterator (raises if
//                                 the pipeline cannot be pickled); dropping the lease hands the
//                                 pool back to the keeper, which keeps it warm for a while;
//   lease.submit(begin, count, batching) -> ticket
//                                 batching: None, or (m, n, drop_remainder, none_marker) to
//                                 compute batches [begin, begin + count) of
//                                 parent.batches_from(*batching) instead of elements
//   ticket.take() -> (chunk, error, seconds, nbytes)
//                                 blocks (without the GIL) for the chunk; raises if the pool
//                                 failed (a worker died, Ctrl-C), in which case the executor
//                                 stops it (lease.close()) and the next chunk starts a new one;
//                                 dropping an untaken ticket abandons the chunk. `chunk` is
//                                 an UnpackedChunk (py_arena.h): the elements, already engine
//                                 Values; `error` the exception of the element after them.
// Chunk sizes (ChunkSizer) adapt to the per-element time and size the workers report.
//
// Thread-safety: as every executor, used by the one thread that drives the iterator; every
// call into Python takes the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include "bindings.h"
#include "gil.h"
#include "py_arena.h"
#include "py_chunk_writer.h"
#include "py_value.h"
#include "spelt/batched_read_ahead.h"
#include "spelt/executor.h"

namespace spelt::python {
namespace {

// How many consecutive indices to put in one request. A chunk should be long enough that the
// fixed cost of a request and its reply (tens of microseconds on each side) is small against
// the work, and short enough that the consumer does not wait long for the first element.
// Sizes double from 1 (a fast first element) until the first reply, then aim at
// `target_seconds` of a worker's time per chunk, capped by element count and by bytes: with large
// arrays, smaller chunks keep the copies of workers and consumer overlapping (8 MiB beat 32 MiB
// by ~20% with 1 MiB elements on 2 cores) and touch less of the arenas. Sizes affect only
// speed: the output never depends on them.
class ChunkSizer {
 public:
  explicit ChunkSizer(double target_seconds) : target_seconds_(target_seconds) {}

  void Observe(int64_t count, double seconds, double bytes) {
    if (count <= 0) return;
    seconds_ = Smooth(seconds_, seconds / static_cast<double>(count));
    bytes_ = Smooth(bytes_, bytes / static_cast<double>(count));
  }

  bool Observed() const { return seconds_.has_value(); }

  int64_t Next() {
    if (!seconds_) {
      const int64_t size = warmup_;
      warmup_ = std::min(2 * warmup_, kMaxWarmup);
      return size;
    }
    const double size = std::min({static_cast<double>(kMaxElements),
                                  target_seconds_ / std::max(*seconds_, 1e-9),
                                  kMaxBytes / std::max(*bytes_, 1.0)});
    return std::max<int64_t>(1, static_cast<int64_t>(size));
  }

 private:
  static constexpr int64_t kMaxElements = 1024;
  static constexpr double kMaxBytes = 8 << 20;
  static constexpr int64_t kMaxWarmup = 8;  // chunk size before the first reply
  static constexpr double kSmoothing = 0.3;  // weight of the newest observation

  static double Smooth(std::optional<double> old, double now) {
    return old ? (1 - kSmoothing) * *old + kSmoothing * now : now;
  }

  const double target_seconds_;
  std::optional<double> seconds_, bytes_;  // per element
  int64_t warmup_ = 1;
};

// What the executor and its pending chunks share. REQUIRES the GIL for every member function
// but Abandon(). Destroying it drops the lease (PyRef takes the GIL), which hands the pool back
// to the keeper.
class Session {
 public:
  // batching: None, or the arguments of MapDataset.batches_from for the batches computed.
  // failures: counts the pool's failures (calls that raised), if not null.
  Session(nb::handle keeper, int64_t length, double target_chunk_seconds, nb::object batching,
          std::shared_ptr<int64_t> failures)
      : keeper_(MakePyRef(keeper)), length_(length), batching_(MakePyRef(batching)),
        failures_(std::move(failures)), sizer_(target_chunk_seconds) {
    Lease();  // starts the workers now, and raises now if the pipeline cannot be pickled
  }

  PyRef Submit(int64_t begin, int64_t count) {
    nb::object ticket = Call([&] {
      return Lease().attr("submit")(begin, count, nb::handle(batching_.get()));
    });
    ++outstanding_;
    submitted_end_ = begin + count;
    return MakePyRef(ticket);
  }

  ChunkResult Take(const PyRef& ticket, int64_t begin, int64_t count) {
    nb::tuple reply = nb::borrow<nb::tuple>(Call([&] {
      return nb::handle(ticket.get()).attr("take")();
    }));
    --outstanding_;
    taken_end_ = begin + count;
    ChunkResult out;
    out.begin = begin;
    out.count = count;
    out.values = std::move(nb::cast<UnpackedChunk&>(reply[0]).values);
    nb::object error = reply[1];
    if (!error.is_none()) {
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
      out.error = std::make_exception_ptr(nb::python_error());
    }
    sizer_.Observe(static_cast<int64_t>(out.values.size()), nb::cast<double>(reply[2]),
                   nb::cast<double>(reply[3]));
    // Everything computed and taken: the workers go back to the keeper (warm) until a
    // set_state() asks for more.
    if (outstanding_ == 0 && submitted_end_ >= length_) lease_.reset();
    return out;
  }

  // Needs no GIL.
  void Abandon() { --outstanding_; }
  bool Replied() const { return sizer_.Observed(); }  // needs no GIL
  int64_t NextChunkSize() { return OneByOne() ? 1 : sizer_.Next(); }

  // True after the pool failed (a worker died) until the indices that were submitted then
  // have been taken: they are computed one at a time, one element per request, so that the
  // elements before the one that kills a worker are delivered and the error comes at that
  // element (as in Grain, whose workers hand out elements one by one). Needs no GIL.
  bool OneByOne() const { return taken_end_ < suspect_end_; }

 private:
  nb::handle Lease() {
    if (!lease_) {
      lease_ = MakePyRef(nb::handle(keeper_.get()).attr("acquire")());
      outstanding_ = 0;
    }
    return lease_.get();
  }

  // Runs a call on the lease; if it raises, the pool is broken: it is stopped (the next call
  // starts a new one) and the error propagates.
  template <typename F>
  nb::object Call(F&& f) {
    try {
      return f();
    } catch (nb::python_error&) {
      suspect_end_ = std::max(suspect_end_, submitted_end_);
      if (failures_) ++*failures_;
      if (lease_) {
        nb::error_scope keep;  // the error being propagated
        try {
          nb::handle(lease_.get()).attr("close")();
        } catch (nb::python_error& close_error) {
          close_error.discard_as_unraisable("spelt: stopping worker processes");
        }
        lease_.reset();
      }
      throw;
    }
  }

  PyRef keeper_;
  PyRef lease_;  // null when no pool is leased
  const int64_t length_;
  const PyRef batching_;
  const std::shared_ptr<int64_t> failures_;
  int64_t outstanding_ = 0;  // chunks of lease_ submitted, neither taken nor abandoned
  int64_t submitted_end_ = 0;
  int64_t taken_end_ = 0;    // end of the last chunk taken
  int64_t suspect_end_ = 0;  // end of what was submitted when the pool last failed
  ChunkSizer sizer_;
};

class ProcessChunk final : public PendingChunk {
 public:
  ProcessChunk(std::shared_ptr<Session> session, PyRef ticket, int64_t begin, int64_t count)
      : session_(std::move(session)), ticket_(std::move(ticket)), begin_(begin), count_(count) {}
  // Dropping the ticket (PyRef takes the GIL) tells the pool to drop the reply.
  ~ProcessChunk() override {
    if (ticket_ != nullptr) session_->Abandon();
  }
  ChunkResult Take() override {
    GilAcquire gil;
    PyRef ticket = std::move(ticket_);
    return session_->Take(ticket, begin_, count_);
  }

 private:
  std::shared_ptr<Session> session_;
  PyRef ticket_;
  int64_t begin_, count_;
};

// What the workers compute instead of elements: batches [0, ...) of
// MapDataset.batches_from(begin, batch_size, drop_remainder, none_marker).
struct WorkerBatching {
  int64_t begin, batch_size;
  bool drop_remainder;
  nb::handle none_marker;  // the Python object that is a None element (see BatchRequest), or None
};

class ProcessExecutor final : public ChunkExecutor {
 public:
  // batching: batches to compute, else elements; failures: counts the pool's failures.
  ProcessExecutor(nb::handle keeper, int64_t length, int64_t max_in_flight,
                  double target_chunk_seconds, std::optional<WorkerBatching> batching = {},
                  std::shared_ptr<int64_t> failures = nullptr)
      : max_in_flight_(max_in_flight), batches_(batching.has_value()) {
    GilAcquire gil;
    nb::object spec = nb::none();
    if (batching) {
      spec = nb::make_tuple(batching->begin, batching->batch_size, batching->drop_remainder,
                            batching->none_marker);
    }
    session_ = std::make_shared<Session>(keeper, length, target_chunk_seconds, spec,
                                         std::move(failures));
  }
  // Batches are computed one chunk (of one batch) at a time until the first reply: if they are
  // large, WorkerBatches hands over to element-wise batching after the first one.
  int64_t MaxInFlight() const override {
    if (session_->OneByOne() || (batches_ && !session_->Replied())) return 0;
    return max_in_flight_;
  }
  int64_t NextChunkSize() override { return session_->NextChunkSize(); }
  std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) override {
    GilAcquire gil;
    return std::make_unique<ProcessChunk>(session_, session_->Submit(begin, count), begin,
                                          count);
  }

 private:
  std::shared_ptr<Session> session_;
  const int64_t max_in_flight_;
  const bool batches_;  // computes batches (WorkerBatches)
};

// Whole batches computed by the workers: batches [0, ...) of parent.batches_from(begin, ...).
class WorkerBatches final : public BatchesAhead {
 public:
  // none_marker: the Python object that is a None element (see BatchRequest), or None.
  WorkerBatches(std::shared_ptr<const MapNode> parent, nb::handle keeper, int64_t max_in_flight,
                double target_chunk_seconds, int64_t batch_size, bool drop_remainder,
                nb::handle none_marker)
      : parent_(std::move(parent)), keeper_(MakePyRef(keeper)), max_in_flight_(max_in_flight),
        target_chunk_seconds_(target_chunk_seconds), batch_size_(batch_size),
        drop_remainder_(drop_remainder), none_marker_(MakePyRef(none_marker)) {}

  std::unique_ptr<DatasetIterator> From(int64_t begin) override {
    const int64_t num_batches =
        MakeBatchesFromNode(parent_, begin, batch_size_, drop_remainder_)->Length();
    return MakeOrderedIterator(
        num_batches, /*allow_nones=*/true,  // a batch of None elements is None
        std::make_unique<ProcessExecutor>(
            keeper_.get(), num_batches, max_in_flight_, target_chunk_seconds_,
            WorkerBatching{begin, batch_size_, drop_remainder_, nb::handle(none_marker_.get())},
            failures_));
  }
  // Large batches are batched by the consumer: a worker would stack them and copy them into
  // its arena (two copies on its side), and they would hold arena space while the user holds
  // them: W2 in docs/workers.md (32 MiB batches of 1 MiB records) ran at a third of its
  // element-wise speed with 5x the memory. Per-element costs of the consumer are small against
  // such elements anyway.
  Sized OnFirstBatch(int64_t batch_bytes) override {
    return batch_bytes > kMaxBatchBytes ? Sized::kElementwise : Sized::kGoOn;
  }
  static constexpr int64_t kMaxBatchBytes = int64_t{8} << 20;

  // The pool failed (a worker died, Ctrl-C): raised as it is, as the element-wise iterator
  // raises it; that iterator then starts new workers at the failed batch's start.
  bool RaiseAsIs() override {
    const bool failed = *failures_ > 0;
    *failures_ = 0;
    return failed;
  }

 private:
  std::shared_ptr<const MapNode> parent_;
  PyRef keeper_;
  int64_t max_in_flight_;
  double target_chunk_seconds_;
  int64_t batch_size_;
  bool drop_remainder_;
  PyRef none_marker_;
  // Failures of the current iterator's pool (written under the GIL by the consumer thread).
  std::shared_ptr<int64_t> failures_ = std::make_shared<int64_t>(0);
};

class ProcessPrefetchNode final : public IterNode {
 public:
  ProcessPrefetchNode(std::shared_ptr<const MapNode> parent, nb::handle keeper,
                      bool allow_nones, int64_t max_in_flight, double target_chunk_seconds)
      : IterNode({parent}, /*calls_python_self=*/true),
        parent_(std::move(parent)),
        keeper_(MakePyRef(keeper)),
        allow_nones_(allow_nones),
        max_in_flight_(max_in_flight),
        target_chunk_seconds_(target_chunk_seconds) {}
  std::string Name() const override { return "ProcessPrefetchIterDataset"; }
  std::unique_ptr<DatasetIterator> MakeIterator() const override {
    const int64_t length = parent_->Length();
    return MakeOrderedIterator(
        length, allow_nones_,
        std::make_unique<ProcessExecutor>(keeper_.get(), length, max_in_flight_,
                                          target_chunk_seconds_));
  }
  // Without a filter below, the workers compute whole batches; a Python map that returns None
  // (an element to_iter_dataset skips) hands over to element-wise batching at its batch.
  std::unique_ptr<DatasetIterator> MakeBatchIterator(
      const BatchRequest& request,
      std::function<std::unique_ptr<DatasetIterator>()> elementwise) const override {
    if (parent_->Filters() || allow_nones_) return nullptr;
    nb::handle marker = nb::none();
    if (request.none_marker) {
      const auto* object = dynamic_cast<const PyOpaque*>(request.none_marker.get());
      if (object == nullptr) return nullptr;
      marker = object->object();
    }
    GilAcquire gil;  // for the references WorkerBatches takes
    return MakeBatchedReadAheadIterator(
        parent_->Length(), request.batch_size,
        std::make_unique<WorkerBatches>(parent_, keeper_.get(), max_in_flight_,
                                        target_chunk_seconds_, request.batch_size,
                                        request.drop_remainder, marker),
        std::move(elementwise));
  }

 private:
  std::shared_ptr<const MapNode> parent_;
  PyRef keeper_;
  bool allow_nones_;
  int64_t max_in_flight_;
  double target_chunk_seconds_;
};

// The Python exception for an engine error: a Python error as it is, anything else translated
// as at the boundary of a bound function (bind_errors.cc), by raising it from one.
nb::object ExceptionToPython(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (nb::python_error& e) {
    return nb::borrow(e.value());
  } catch (...) {
  }
  try {
    nb::cpp_function([error] { std::rethrow_exception(error); })();
  } catch (nb::python_error& e) {
    return nb::borrow(e.value());
  }
  throw std::logic_error("ExceptionToPython: the error did not raise");
}

// Whether a stacked batch holds Python objects: a numpy object array (or any leaf that is not
// a numpy array), which only the consumer can be trusted to have traversed alike.
bool HoldsObjects(const Value& batch) {
  return std::visit(
      [](const auto& v) -> bool {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<const Sequence>>) {
          return std::any_of(v->items.begin(), v->items.end(), HoldsObjects);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Mapping>>) {
          return std::any_of(v->items.begin(), v->items.end(),
                             [](const auto& item) { return HoldsObjects(item.second); });
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Opaque>>) {
          const auto* object = dynamic_cast<const PyOpaque*>(v.get());
          if (object == nullptr) return true;
          GilAcquire gil;
          nb::handle leaf = object->object();
          return !nb::hasattr(leaf, "dtype") || !nb::hasattr(leaf, "shape") ||
                 nb::cast<std::string>(leaf.attr("dtype").attr("kind")) == "O";
        } else {
          return false;
        }
      },
      batch.variant());
}

// ComputeChunk on the dataset's node: without the GIL unless the pipeline calls Python.
ChunkResult ComputeChunkOf(const MapDataset& dataset, int64_t begin, int64_t count) {
  if (begin < 0 || count < 0) {
    throw std::invalid_argument("compute_chunk: begin and count must be >= 0, got " +
                                std::to_string(begin) + ", " + std::to_string(count));
  }
  ChunkResult chunk;
  if (dataset.node()->CallsPython()) {  // keep the GIL (bind_iterator.cc)
    chunk = ComputeChunk(*dataset.node(), begin, count);
  } else {
    GilRelease unlocked;
    chunk = ComputeChunk(*dataset.node(), begin, count);
  }
  return chunk;
}

nb::tuple ComputeChunkToPython(const MapDataset& dataset, int64_t begin, int64_t count) {
  const ChunkResult chunk = ComputeChunkOf(dataset, begin, count);
  nb::list values;
  for (const std::optional<Value>& v : chunk.values) {
    values.append(v ? ToPython(*v) : nb::none());
  }
  nb::object error = nb::none();
  if (chunk.error) error = ExceptionToPython(chunk.error);
  return nb::make_tuple(values, error);
}

// A worker's chunk in one call: computed, then each element stored by `writer` from the engine
// value. (stored, error, pickle_failed): the elements stored; the exception of the element
// after them (what pickling it raised if pickle_failed, else the computation's), or None.
nb::tuple ComputeChunkInto(const MapDataset& dataset, ChunkWriter& writer, int64_t begin,
                           int64_t count, nb::handle pickle_element) {
  const ChunkResult chunk = ComputeChunkOf(dataset, begin, count);
  int64_t stored = 0;
  for (const std::optional<Value>& v : chunk.values) {
    nb::object pickle_error = writer.AddValue(v, pickle_element);
    if (!pickle_error.is_none()) return nb::make_tuple(stored, pickle_error, true);
    ++stored;
  }
  nb::object error = nb::none();
  if (chunk.error) error = ExceptionToPython(chunk.error);
  return nb::make_tuple(stored, error, false);
}

}  // namespace

void RegisterProcessExecutor(nb::module_& m) {
  m.def("process_prefetch", [](const MapDataset& parent, nb::object keeper, bool allow_nones,
                               int64_t num_workers, int64_t per_worker_buffer_size,
                               double target_chunk_seconds) {
    if (num_workers < 1 || per_worker_buffer_size < 1) {
      throw std::invalid_argument(
          "process_prefetch: num_workers and per_worker_buffer_size must be >= 1");
    }
    if (!(target_chunk_seconds > 0)) {
      throw std::invalid_argument("process_prefetch: target_chunk_seconds must be > 0");
    }
    // Per worker: one chunk being computed and per_worker_buffer_size ready.
    return IterDataset(std::make_shared<ProcessPrefetchNode>(
        parent.node(), keeper, allow_nones, num_workers * (per_worker_buffer_size + 1),
        target_chunk_seconds));
  }, nb::arg("parent"), nb::arg("keeper"), nb::arg("allow_nones"), nb::arg("num_workers"),
     nb::arg("per_worker_buffer_size"), nb::arg("target_chunk_seconds") = 0.01);

  nb::handle map_dataset = nb::type<MapDataset>();
  nb::setattr(map_dataset, "batches_from",
              nb::cpp_function(
                  [](const MapDataset& dataset, int64_t begin, int64_t batch_size,
                     bool drop_remainder, nb::handle none_marker) {
                    if (batch_size < 1) {
                      throw std::invalid_argument("batches_from: batch_size must be >= 1");
                    }
                    std::function<bool(const Value&)> is_marker;
                    if (!none_marker.is_none()) {
                      is_marker = [marker = MakePyRef(none_marker)](const Value& v) {
                        return IsObject(v, marker.get());
                      };
                    }
                    const MapDataset batches(MakeBatchesFromNode(
                        dataset.node(), begin, batch_size, drop_remainder, std::move(is_marker)));
                    return batches.Map([](Value batch) {
                      if (HoldsObjects(batch)) {
                        throw std::invalid_argument("batch: holds Python objects");
                      }
                      return batch;
                    });
                  },
                  nb::scope(map_dataset), nb::name("batches_from"), nb::is_method(),
                  nb::arg("begin"), nb::arg("batch_size"), nb::arg("drop_remainder"),
                  nb::arg("none_marker").none() = nb::none()));
  nb::setattr(map_dataset, "compute_chunk",
              nb::cpp_function(&ComputeChunkToPython, nb::scope(map_dataset),
                               nb::name("compute_chunk"), nb::is_method(), nb::arg("begin"),
                               nb::arg("count")));
  nb::setattr(map_dataset, "compute_chunk_into",
              nb::cpp_function(&ComputeChunkInto, nb::scope(map_dataset),
                               nb::name("compute_chunk_into"), nb::is_method(),
                               nb::arg("writer"), nb::arg("begin"), nb::arg("count"),
                               nb::arg("pickle_element")));
}

}  // namespace spelt::python
