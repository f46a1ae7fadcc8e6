// spelt._core.Arena: a shared-memory region (an anonymous memfd) mapped into this process, the
// hand-off buffer between a worker process and the consumer (python/spelt/_workers,
// docs/workers.md).
//
// A worker pickles the elements of a chunk one after the other with one pickle.Pickler
// (protocol 5, so one memo per chunk); large buffers go out of band. Store() copies each
// element's out-of-band buffers into one region of the arena (a first-fit allocator names
// regions by their offset), the pickle stream into another, and returns the *record* that
// describes them. The consumer's Unpack() turns a record back into the elements: one
// pickle.Unpickler loads them in order, with ArenaViews (writable buffer-protocol objects over
// the shared mapping) as the out-of-band buffers, so numpy arrays are zero-copy views into the
// arena. When the last view of an element's region dies (in any thread), the region id goes
// onto the arena's released queue; the consumer drains it into its next request to the worker,
// which Free()s it. The stream region is released as soon as it has been read.
//
// Record layout (native int64 words, then the stream bytes if it is inline):
//   [n, stream_offset (-1: inline after the words), stream_length,
//    then per element: pickle_end (offset in the stream), region (-1: none), span_count,
//    then span_count pairs (offset, length)]
//
// Python API (methods are safe from any Python thread; views may die anywhere):
//   Arena(fd, size)            maps `size` bytes of `fd` (MAP_SHARED); `fd` may be closed after.
//   Arena.size                 mapped size in bytes.
//   Arena.allocate(length)     worker: offset of a new region of `length` bytes, or None.
//   Arena.free(offsets)        worker: returns regions (offsets from allocate) to the free space.
//   Arena.store(stream, ends, buffer_ends, buffers) -> bytes | None
//                              worker: copies element k's buffers (buffers[buffer_ends[k-1]:
//                              buffer_ends[k]]) into a new region each and the stream (a
//                              contiguous buffer; element k's pickle ends at ends[k]) into
//                              another, inline if no region is free; returns the record, or
//                              None (nothing allocated) if some element's buffers do not fit.
//   Arena.unpack(record) -> (values, error)
//                              consumer: the elements of a record (see above); if loading
//                              element k raises, values holds the k before it and error is the
//                              exception (else None).
//   Arena.discard(record)      consumer: releases the regions of a record nobody will read.
//   Arena.take_released()      consumer: region ids released since the last call (list of int).
// The mapping stays valid until the Arena and all its views are gone.

#include "bindings.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace spelt::python {
namespace {

// Copies at least this large run without the GIL.
constexpr size_t kReleaseGilBytes = 64 * 1024;
// Offsets of buffers are multiples of this (a cache line; every numpy dtype's alignment).
constexpr int64_t kAlignment = 64;

int64_t Align(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// One mmap of a shared file; unmapped when the last owner is gone.
class Mapping {
 public:
  Mapping(int fd, size_t size) : size_(size) {
    void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "Arena: mmap");
    data_ = static_cast<std::byte*>(addr);
  }
  ~Mapping() { munmap(data_, size_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  size_t size() const { return size_; }
  // REQUIRES: CheckSpan(offset, size).
  std::byte* at(int64_t offset) const { return data_ + offset; }
  void CheckSpan(int64_t offset, int64_t size) const {
    if (offset < 0 || size < 0 || static_cast<uint64_t>(offset) > size_ ||
        static_cast<uint64_t>(size) > size_ - static_cast<uint64_t>(offset)) {
      throw std::out_of_range("Arena: span [" + std::to_string(offset) + ", +" +
                              std::to_string(size) + ") outside the " + std::to_string(size_) +
                              "-byte arena");
    }
  }

 private:
  std::byte* data_ = nullptr;
  size_t size_;
};

// First-fit allocator of [0, size) into regions named by their offset. Free space is a map of
// disjoint holes (offset -> length); freeing merges neighbours. Lowest addresses first keeps
// the touched part of the arena as small as the data in flight allows.
class RegionAllocator {
 public:
  explicit RegionAllocator(int64_t size) { holes_[0] = size; }

  std::optional<int64_t> Allocate(int64_t length) {
    if (length <= 0) throw std::invalid_argument("Arena.allocate: length must be positive");
    for (auto it = holes_.begin(); it != holes_.end(); ++it) {
      if (it->second < length) continue;
      const auto [offset, hole] = *it;
      holes_.erase(it);
      if (hole > length) holes_[offset + length] = hole - length;
      lengths_[offset] = length;
      return offset;
    }
    return std::nullopt;
  }

  void Free(int64_t offset) {
    auto found = lengths_.find(offset);
    if (found == lengths_.end()) {
      throw std::invalid_argument("Arena.free: no region at offset " + std::to_string(offset));
    }
    int64_t length = found->second;
    lengths_.erase(found);
    auto next = holes_.lower_bound(offset);
    if (next != holes_.end() && next->first == offset + length) {  // merge with the next hole
      length += next->second;
      next = holes_.erase(next);
    }
    if (next != holes_.begin()) {  // merge with the previous hole
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += length;
        return;
      }
    }
    holes_[offset] = length;
  }

 private:
  std::map<int64_t, int64_t> holes_;
  std::unordered_map<int64_t, int64_t> lengths_;  // live region offset -> length
};

// Ids of regions whose last view died; filled from any thread, drained by the consumer.
class ReleasedQueue {
 public:
  void Push(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    ids_.push_back(id);
  }
  std::vector<int64_t> TakeAll() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(ids_, {});
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> ids_;
};

// Shared by the views of one region; its destruction releases the region.
class Region {
 public:
  Region(std::shared_ptr<Mapping> mapping, std::shared_ptr<ReleasedQueue> released, int64_t id)
      : mapping_(std::move(mapping)), released_(std::move(released)), id_(id) {}
  ~Region() { released_->Push(id_); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  std::shared_ptr<Mapping> mapping_;  // outlives every view, even after the Arena is gone
  std::shared_ptr<ReleasedQueue> released_;
  int64_t id_;
};

// A writable 1-D byte buffer over part of a region (Python buffer protocol).
struct ArenaView {
  std::shared_ptr<Region> region;
  std::byte* data = nullptr;
  Py_ssize_t size = 0;
};

int ArenaViewGetBuffer(PyObject* self, Py_buffer* view, int flags) {
  ArenaView* v = nb::inst_ptr<ArenaView>(self);
  return PyBuffer_FillInfo(view, self, v->data, v->size, /*readonly=*/0, flags);
}

PyType_Slot kArenaViewSlots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(ArenaViewGetBuffer)},
    {0, nullptr},
};

// A contiguous buffer exported by a Python object, released on destruction.
class Buffer {
 public:
  explicit Buffer(nb::handle obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_ANY_CONTIGUOUS) != 0) throw nb::python_error();
  }
  ~Buffer() { PyBuffer_Release(&view_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  const void* data() const { return view_.buf; }
  int64_t size() const { return static_cast<int64_t>(view_.len); }

 private:
  Py_buffer view_;
};

// The parsed word part of a record (see the file comment).
struct RecordLayout {
  struct Element {
    int64_t pickle_end = 0;
    int64_t region = -1;
    std::vector<std::pair<int64_t, int64_t>> spans;
  };
  int64_t stream_offset = -1;
  int64_t stream_length = 0;
  std::vector<Element> elements;
  size_t words_bytes = 0;  // where an inline stream starts in the record
};

RecordLayout ParseRecord(const char* data, size_t size, const Mapping& mapping) {
  size_t pos = 0;
  auto word = [&]() {
    if (size - pos < sizeof(int64_t)) throw std::invalid_argument("Arena: truncated record");
    int64_t w;
    std::memcpy(&w, data + pos, sizeof(w));
    pos += sizeof(w);
    return w;
  };
  RecordLayout layout;
  const int64_t n = word();
  layout.stream_offset = word();
  layout.stream_length = word();
  if (n < 0 || layout.stream_length < 0) throw std::invalid_argument("Arena: corrupt record");
  int64_t previous_end = 0;
  for (int64_t k = 0; k < n; ++k) {
    RecordLayout::Element e;
    e.pickle_end = word();
    e.region = word();
    const int64_t spans = word();
    if (e.pickle_end < previous_end || e.pickle_end > layout.stream_length || spans < 0) {
      throw std::invalid_argument("Arena: corrupt record");
    }
    previous_end = e.pickle_end;
    for (int64_t s = 0; s < spans; ++s) {
      const int64_t offset = word(), length = word();
      mapping.CheckSpan(offset, length);
      e.spans.emplace_back(offset, length);
    }
    layout.elements.push_back(std::move(e));
  }
  layout.words_bytes = pos;
  if (layout.stream_offset < 0) {
    if (size - pos != static_cast<size_t>(layout.stream_length)) {
      throw std::invalid_argument("Arena: corrupt record (inline stream)");
    }
  } else {
    mapping.CheckSpan(layout.stream_offset, layout.stream_length);
  }
  return layout;
}

// pickle.Unpickler and io.BytesIO, looked up once (never freed: module objects live forever).
struct PickleModule {
  nb::object unpickler, bytes_io;
};
const PickleModule& Pickle() {
  static const PickleModule* module = [] {
    auto* m = new PickleModule();
    m->unpickler = nb::module_::import_("pickle").attr("Unpickler");
    m->bytes_io = nb::module_::import_("io").attr("BytesIO");
    return m;
  }();
  return *module;
}

class Arena {
 public:
  Arena(int fd, int64_t size)
      : mapping_(std::make_shared<Mapping>(fd, static_cast<size_t>(CheckedSize(size)))),
        released_(std::make_shared<ReleasedQueue>()),
        allocator_(size) {}

  int64_t size() const { return static_cast<int64_t>(mapping_->size()); }

  std::optional<int64_t> Allocate(int64_t length) { return allocator_.Allocate(length); }

  void Free(const std::vector<int64_t>& offsets) {
    for (int64_t offset : offsets) allocator_.Free(offset);
  }

  std::optional<nb::bytes> Store(nb::handle stream, const std::vector<int64_t>& ends,
                                 const std::vector<int64_t>& buffer_ends, nb::list buffers) {
    if (ends.size() != buffer_ends.size()) {
      throw std::invalid_argument("Arena.store: ends and buffer_ends differ in length");
    }
    Buffer stream_buffer(stream);
    std::vector<std::unique_ptr<Buffer>> sources;
    sources.reserve(nb::len(buffers));
    for (nb::handle b : buffers) sources.push_back(std::make_unique<Buffer>(b));

    // Allocate every element's region first, so that a failure leaves nothing allocated.
    std::vector<int64_t> words = {static_cast<int64_t>(ends.size()), -1, stream_buffer.size()};
    std::vector<int64_t> allocated;
    std::vector<std::pair<std::byte*, const Buffer*>> copies;
    int64_t first = 0;
    for (size_t k = 0; k < ends.size(); ++k) {
      const int64_t last = buffer_ends[k];
      if (last < first || last > static_cast<int64_t>(sources.size()) ||
          ends[k] > stream_buffer.size()) {
        FreeAll(allocated);
        throw std::invalid_argument("Arena.store: ends or buffer_ends out of range");
      }
      int64_t total = 0;
      for (int64_t b = first; b < last; ++b) total += Align(sources[b]->size());
      int64_t region = -1;
      if (last > first) {
        std::optional<int64_t> offset = allocator_.Allocate(std::max(total, kAlignment));
        if (!offset) {
          FreeAll(allocated);
          return std::nullopt;
        }
        region = *offset;
        allocated.push_back(region);
      }
      words.insert(words.end(), {ends[k], region, last - first});
      for (int64_t b = first, offset = region; b < last; ++b) {
        words.insert(words.end(), {offset, sources[b]->size()});
        copies.emplace_back(mapping_->at(offset), sources[b].get());
        offset += Align(sources[b]->size());
      }
      first = last;
    }
    std::optional<int64_t> stream_region;
    if (stream_buffer.size() > 0) stream_region = allocator_.Allocate(Align(stream_buffer.size()));
    if (stream_region) {
      words[1] = *stream_region;
      copies.emplace_back(mapping_->at(*stream_region), &stream_buffer);
    }
    CopyAll(copies);

    const size_t words_bytes = words.size() * sizeof(int64_t);
    const size_t inline_bytes = stream_region ? 0 : static_cast<size_t>(stream_buffer.size());
    nb::bytes record(nullptr, words_bytes + inline_bytes);
    char* out = const_cast<char*>(record.c_str());
    std::memcpy(out, words.data(), words_bytes);
    if (inline_bytes > 0) std::memcpy(out + words_bytes, stream_buffer.data(), inline_bytes);
    return record;
  }

  nb::tuple Unpack(nb::bytes record) {
    const RecordLayout layout = ParseRecord(record.c_str(), record.size(), *mapping_);
    nb::list views;
    for (const RecordLayout::Element& e : layout.elements) {
      if (e.region < 0) continue;
      auto region = std::make_shared<Region>(mapping_, released_, e.region);
      for (const auto& [offset, length] : e.spans) {
        views.append(nb::cast(ArenaView{region, mapping_->at(offset),
                                        static_cast<Py_ssize_t>(length)}));
      }
    }
    nb::object stream;
    if (layout.stream_offset < 0) {
      stream = nb::steal(PyMemoryView_FromObject(record.ptr()))[nb::slice(
          nb::int_(layout.words_bytes), nb::none(), nb::none())];
    } else {
      // Copied out so that the region can be released at once (the stream is small: large
      // buffers are in the element regions).
      stream = nb::bytes(reinterpret_cast<const char*>(mapping_->at(layout.stream_offset)),
                         static_cast<size_t>(layout.stream_length));
      released_->Push(layout.stream_offset);
    }
    nb::object unpickler = Pickle().unpickler(Pickle().bytes_io(stream),
                                              nb::arg("buffers") = views);
    nb::object load = unpickler.attr("load");
    nb::list values;
    nb::object error = nb::none();
    for (size_t k = 0; k < layout.elements.size(); ++k) {
      PyObject* value = PyObject_CallNoArgs(load.ptr());
      if (value == nullptr) {
        error = nb::borrow(nb::python_error().value());
        break;
      }
      values.append(nb::steal(value));
    }
    return nb::make_tuple(values, error);
  }

  void Discard(nb::bytes record) {
    const RecordLayout layout = ParseRecord(record.c_str(), record.size(), *mapping_);
    if (layout.stream_offset >= 0) released_->Push(layout.stream_offset);
    for (const RecordLayout::Element& e : layout.elements) {
      if (e.region >= 0) released_->Push(e.region);
    }
  }

  std::vector<int64_t> TakeReleased() { return released_->TakeAll(); }

 private:
  static int64_t CheckedSize(int64_t size) {
    if (size <= 0) throw std::invalid_argument("Arena: size must be positive");
    return size;
  }

  void FreeAll(const std::vector<int64_t>& offsets) {
    for (int64_t offset : offsets) allocator_.Free(offset);
  }

  static void CopyAll(const std::vector<std::pair<std::byte*, const Buffer*>>& copies) {
    size_t total = 0;
    for (const auto& [dst, src] : copies) total += static_cast<size_t>(src->size());
    auto copy = [&] {
      for (const auto& [dst, src] : copies) {
        std::memcpy(dst, src->data(), static_cast<size_t>(src->size()));
      }
    };
    if (total >= kReleaseGilBytes) {
      nb::gil_scoped_release unlocked;
      copy();
    } else {
      copy();
    }
  }

  std::shared_ptr<Mapping> mapping_;
  std::shared_ptr<ReleasedQueue> released_;
  RegionAllocator allocator_;  // used by the worker only
};

}  // namespace

void RegisterArena(nb::module_& m) {
  nb::class_<ArenaView>(m, "ArenaView", nb::type_slots(kArenaViewSlots),
                        "A writable byte buffer inside an Arena (buffer protocol).")
      .def("__len__", [](const ArenaView& v) { return v.size; });

  nb::class_<Arena>(m, "Arena", "A shared-memory file mapped into this process (py_arena.cc).")
      .def(nb::init<int, int64_t>(), nb::arg("fd"), nb::arg("size"))
      .def_prop_ro("size", &Arena::size)
      .def("allocate", &Arena::Allocate, nb::arg("length"))
      .def("free", &Arena::Free, nb::arg("offsets"))
      .def("store", &Arena::Store, nb::arg("stream"), nb::arg("ends"), nb::arg("buffer_ends"),
           nb::arg("buffers"))
      .def("unpack", &Arena::Unpack, nb::arg("record"))
      .def("discard", &Arena::Discard, nb::arg("record"))
      .def("take_released", &Arena::TakeReleased);
}

}  // namespace spelt::python
