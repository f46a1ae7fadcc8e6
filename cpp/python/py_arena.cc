// spelt._core.Arena: a shared-memory region (an anonymous memfd) mapped into this process, the
// hand-off buffer between a worker process and the consumer (python/spelt/_workers,
// docs/workers.md).
//
// A worker stores the elements of a chunk one after the other (a ChunkWriter). An element of
// plain types is encoded natively (py_element_codec.h): a tag stream, and its arrays' bytes
// copied into one region of the arena (a first-fit allocator names regions by their offset).
// Any other element is pickled (protocol 5, by the Python function the worker passes), its
// large buffers out of band in its region. The tag streams and pickles of the chunk go into one
// more region (inline in the record if none is free), and Finish() returns the *record* that
// describes it all.
// The consumer's Unpack() rebuilds the elements: native ones as engine Values whose arrays
// point into the arena (no Python objects at all: a batch copies them straight from the arena);
// pickled ones with pickle.loads and ArenaViews (writable buffer-protocol objects over the
// mapping) as out-of-band buffers, so their numpy arrays are zero-copy views too. When the last
// array or view of an element's region dies (in any thread), the region id goes onto the
// arena's released queue; the consumer drains it into its next request to the worker, which
// Free()s it. The stream region is released as soon as it has been read.
//
// Record layout (native int64 words, then the stream bytes if it is inline):
//   [n, stream_offset (-1: inline after the words), stream_length,
//    then per element: kind (0 native, 1 pickled), end (offset in the stream where its bytes
//    end), region (-1: none), span_count, then span_count pairs (offset, length)]
//
// Python API (methods are safe from any Python thread; arrays and views may die anywhere):
//   Arena(fd, size)            maps `size` bytes of `fd` (MAP_SHARED); `fd` may be closed after.
//   Arena.size                 mapped size in bytes.
//   Arena.allocate(length)     worker: offset of a new region of `length` bytes, or None.
//   Arena.free(offsets)        worker: returns regions (offsets from allocate) to the free space.
//   Arena.writer() -> ChunkWriter
//                              worker: builds one chunk reply (the arena must outlive it):
//     .add(values, pickle_element) -> (count, error)
//                              stores the elements `values` (a list; None for a filtered one)
//                              after those added before; pickle_element(value, in_band) ->
//                              (bytes, buffers) pickles one that has no native form (in_band:
//                              everything in the bytes; else buffers are the out-of-band
//                              ones). An element whose buffers find no room goes in band. If
//                              pickle_element raises for values[count], the elements before
//                              it are stored and error is the exception (else None).
//     .finish() -> (record, nbytes)
//                              the record, and the bytes the chunk occupies.
//   Arena.unpack(record) -> UnpackedChunk
//                              consumer: the elements of a record; len() of them, and .error if
//                              unpickling the next one raised (the rest are dropped).
//   Arena.discard(record)      consumer: releases the regions of a record nobody will read.
//   Arena.take_released()      consumer: region ids released since the last call (list of int).
// The mapping stays valid until the Arena and all its arrays and views are gone.

#include "bindings.h"
#include "gil.h"
#include "py_arena.h"
#include "py_element_codec.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>
#include <emmintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace spelt::python {
namespace {

// Copies at least this large run without the GIL, and from kStreamBytes on with
// non-temporal stores.
constexpr size_t kReleaseGilBytes = 64 * 1024;
constexpr size_t kStreamBytes = 256 * 1024;
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

enum ElementKind : int64_t { kNative = 0, kPickled = 1 };

// The parsed word part of a record (see the file comment).
struct RecordLayout {
  struct Element {
    int64_t kind = kNative;
    int64_t end = 0;
    int64_t region = -1;
    std::vector<std::pair<int64_t, int64_t>> spans;
  };
  int64_t stream_offset = -1;
  int64_t stream_length = 0;
  std::vector<Element> elements;
  const char* stream = nullptr;  // in the record or in the arena
};

RecordLayout ParseRecord(const nb::bytes& record, const Mapping& mapping) {
  const char* data = record.c_str();
  const size_t size = record.size();
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
    e.kind = word();
    e.end = word();
    e.region = word();
    const int64_t spans = word();
    if ((e.kind != kNative && e.kind != kPickled) || e.end < previous_end ||
        e.end > layout.stream_length || spans < 0) {
      throw std::invalid_argument("Arena: corrupt record");
    }
    previous_end = e.end;
    for (int64_t s = 0; s < spans; ++s) {
      const int64_t offset = word(), length = word();
      mapping.CheckSpan(offset, length);
      e.spans.emplace_back(offset, length);
    }
    layout.elements.push_back(std::move(e));
  }
  if (layout.stream_offset < 0) {
    if (size - pos != static_cast<size_t>(layout.stream_length)) {
      throw std::invalid_argument("Arena: corrupt record (inline stream)");
    }
    layout.stream = data + pos;
  } else {
    mapping.CheckSpan(layout.stream_offset, layout.stream_length);
    layout.stream = reinterpret_cast<const char*>(mapping.at(layout.stream_offset));
  }
  return layout;
}

nb::handle PickleLoads() {
  static nb::handle loads = nb::object(nb::module_::import_("pickle").attr("loads")).release();
  return loads;  // kept for the process
}

// Where one element's bytes are, before they are copied into its region.
struct Sources {
  std::vector<Array> arrays;                   // a native element's arrays
  std::vector<std::unique_ptr<Buffer>> buffers;  // a pickled element's out-of-band buffers
  std::vector<std::pair<const void*, int64_t>> Spans() const {
    std::vector<std::pair<const void*, int64_t>> out;
    for (const Array& a : arrays) out.emplace_back(a.data, static_cast<int64_t>(a.nbytes()));
    for (const auto& b : buffers) out.emplace_back(b->data(), b->size());
    return out;
  }
};

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

  UnpackedChunk Unpack(nb::bytes record) {
    const RecordLayout layout = ParseRecord(record, *mapping_);
    UnpackedChunk out;
    out.values.reserve(layout.elements.size());
    int64_t begin = 0;
    size_t k = 0;
    for (; k < layout.elements.size(); ++k) {
      const RecordLayout::Element& e = layout.elements[k];
      std::shared_ptr<Region> region;
      if (e.region >= 0) region = std::make_shared<Region>(mapping_, released_, e.region);
      std::string_view bytes(layout.stream + begin, static_cast<size_t>(e.end - begin));
      begin = e.end;
      if (e.kind == kNative) {
        std::vector<ArrayBytes> arrays;
        for (const auto& [offset, length] : e.spans) {
          arrays.push_back({mapping_->at(offset), length, region});
        }
        out.values.push_back(DecodeElement(bytes, arrays));
        continue;
      }
      nb::list views;
      for (const auto& [offset, length] : e.spans) {
        views.append(nb::cast(ArenaView{region, mapping_->at(offset),
                                        static_cast<Py_ssize_t>(length)}));
      }
      nb::dict kwargs;
      kwargs["buffers"] = views;
      PyObject* value = PyObject_Call(
          PickleLoads().ptr(), nb::make_tuple(nb::bytes(bytes.data(), bytes.size())).ptr(),
          kwargs.ptr());
      if (value == nullptr) {
        out.error = nb::borrow(nb::python_error().value());
        break;
      }
      nb::object obj = nb::steal(value);
      if (obj.is_none()) {
        out.values.emplace_back();
      } else {
        out.values.emplace_back(Wrap(obj));
      }
    }
    for (++k; k < layout.elements.size(); ++k) {  // after a failure: never read
      if (layout.elements[k].region >= 0) released_->Push(layout.elements[k].region);
    }
    if (layout.stream_offset >= 0) released_->Push(layout.stream_offset);  // copied out
    return out;
  }

  void Discard(nb::bytes record) {
    const RecordLayout layout = ParseRecord(record, *mapping_);
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

  friend class ChunkWriter;
  std::shared_ptr<Mapping> mapping_;
  std::shared_ptr<ReleasedQueue> released_;
  RegionAllocator allocator_;  // used by the worker only
};

// Copies `size` bytes into the arena; large copies without the GIL and with non-temporal
// stores (the worker never reads them back: no read-for-ownership, no cache pollution; 15%
// faster for 1 MiB than memcpy here).
void CopyToArena(std::byte* dst, const void* src, int64_t size) {
  const auto n = static_cast<size_t>(size);
  if (n < kReleaseGilBytes) {
    std::memcpy(dst, src, n);
    return;
  }
  GilRelease unlocked;
  if (n < kStreamBytes || reinterpret_cast<uintptr_t>(dst) % 16 != 0) {
    std::memcpy(dst, src, n);
    return;
  }
  auto* d = reinterpret_cast<__m128i*>(dst);
  const auto* s = static_cast<const __m128i*>(src);
  for (size_t blocks = n / 64; blocks > 0; --blocks, d += 4, s += 4) {
    const __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1);
    const __m128i c = _mm_loadu_si128(s + 2), e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  std::memcpy(d, s, n % 64);
  _mm_sfence();
}

// Builds one chunk reply in the worker (Python: Arena.writer()): Add() the elements as they
// are computed (a few at a time, so that large arrays are copied while still in cache), then
// Finish() once.
class ChunkWriter {
 public:
  explicit ChunkWriter(Arena& arena) : arena_(arena) {}

  nb::tuple Add(nb::list values, nb::handle pickle_element) {
    if (finished_) throw std::invalid_argument("ChunkWriter.add: already finished");
    int64_t added = 0;
    for (nb::handle value : values) {
      nb::object error = AddOne(value, pickle_element);
      if (!error.is_none()) return nb::make_tuple(added, error);
      ++added;
    }
    return nb::make_tuple(added, nb::none());
  }

  nb::tuple Finish() {
    if (finished_) throw std::invalid_argument("ChunkWriter.finish: already finished");
    finished_ = true;
    words_[0] = count_;
    words_[2] = static_cast<int64_t>(stream_.size());
    nbytes_ += static_cast<int64_t>(stream_.size());
    std::optional<int64_t> stream_region;
    if (!stream_.empty()) stream_region = arena_.allocator_.Allocate(Align(stream_.size()));
    if (stream_region) {
      words_[1] = *stream_region;
      CopyToArena(arena_.mapping_->at(*stream_region), stream_.data(),
                  static_cast<int64_t>(stream_.size()));
    }
    const size_t words_bytes = words_.size() * sizeof(int64_t);
    const size_t inline_bytes = stream_region ? 0 : stream_.size();
    nb::bytes record(nullptr, words_bytes + inline_bytes);
    char* out = const_cast<char*>(record.c_str());
    std::memcpy(out, words_.data(), words_bytes);
    if (inline_bytes > 0) std::memcpy(out + words_bytes, stream_.data(), inline_bytes);
    return nb::make_tuple(record, nbytes_);
  }

 private:
  // Stores one element; returns what pickle_element raised (then nothing is stored), or None.
  nb::object AddOne(nb::handle value, nb::handle pickle_element) {
    const size_t start = stream_.size();
    Sources sources;
    int64_t kind = kNative;
    nb::object error = nb::none();
    if (!EncodeElement(value, &stream_, &sources.arrays)) {
      kind = kPickled;
      if (!Pickle(pickle_element, value, /*in_band=*/false, &sources, &error)) return error;
    }
    std::vector<std::pair<const void*, int64_t>> spans = sources.Spans();
    int64_t region = -1;
    if (!spans.empty()) {
      int64_t total = 0;
      for (const auto& span : spans) total += Align(span.second);
      if (std::optional<int64_t> offset = arena_.allocator_.Allocate(std::max(total, kAlignment))) {
        region = *offset;
      } else {  // no room: everything in band
        stream_.resize(start);
        sources = Sources();
        spans.clear();
        kind = kPickled;
        if (!Pickle(pickle_element, value, /*in_band=*/true, &sources, &error)) return error;
      }
    }
    words_.insert(words_.end(), {kind, static_cast<int64_t>(stream_.size()), region,
                                 static_cast<int64_t>(spans.size())});
    int64_t offset = region;
    for (const auto& [data, size] : spans) {
      words_.insert(words_.end(), {offset, size});
      CopyToArena(arena_.mapping_->at(offset), data, size);
      nbytes_ += size;
      offset += Align(size);
    }
    ++count_;
    return error;
  }

  // Appends pickle_element(value, in_band)'s bytes to the stream and its buffers to *sources;
  // false (with *error set) if it raised.
  bool Pickle(nb::handle pickle_element, nb::handle value, bool in_band, Sources* sources,
              nb::object* error) {
    nb::object pickled;
    try {
      pickled = pickle_element(value, in_band);
    } catch (nb::python_error& e) {
      *error = nb::borrow(e.value());
      return false;
    }
    Buffer data(pickled[0]);
    stream_.append(static_cast<const char*>(data.data()), static_cast<size_t>(data.size()));
    for (nb::handle b : pickled[1]) sources->buffers.push_back(std::make_unique<Buffer>(b));
    return true;
  }

  Arena& arena_;
  std::string stream_;
  std::vector<int64_t> words_ = {0, -1, 0};
  int64_t count_ = 0, nbytes_ = 0;
  bool finished_ = false;
};

}  // namespace

void RegisterArena(nb::module_& m) {
  nb::class_<ArenaView>(m, "ArenaView", nb::type_slots(kArenaViewSlots),
                        "A writable byte buffer inside an Arena (buffer protocol).")
      .def("__len__", [](const ArenaView& v) { return v.size; });

  nb::class_<UnpackedChunk>(m, "UnpackedChunk",
                            "The elements of a chunk reply, for the process executor.")
      // From elements computed elsewhere (a Ray actor's reply, python/spelt/_workers/
      // ray_pool.py): None where a filter removed the element, else the object as it is
      // (Wrap: no conversion, so numpy arrays stay zero-copy views of their buffers).
      .def("__init__",
           [](UnpackedChunk* self, const nb::list& values) {
             UnpackedChunk* chunk = new (self) UnpackedChunk();
             chunk->values.reserve(values.size());
             for (nb::handle v : values) {
               chunk->values.push_back(v.is_none() ? std::nullopt : std::optional(Wrap(v)));
             }
           },
           nb::arg("values"))
      .def("__len__", [](const UnpackedChunk& c) { return c.values.size(); })
      .def_prop_ro("error", [](const UnpackedChunk& c) { return c.error; });

  nb::class_<ChunkWriter>(m, "ChunkWriter", "Builds a chunk reply in a worker (py_arena.cc).")
      .def("add", &ChunkWriter::Add, nb::arg("values"), nb::arg("pickle_element"))
      .def("finish", &ChunkWriter::Finish);

  nb::class_<Arena>(m, "Arena", "A shared-memory file mapped into this process (py_arena.cc).")
      .def(nb::init<int, int64_t>(), nb::arg("fd"), nb::arg("size"))
      .def_prop_ro("size", &Arena::size)
      .def("allocate", &Arena::Allocate, nb::arg("length"))
      .def("free", &Arena::Free, nb::arg("offsets"))
      .def("writer", [](Arena& arena) { return ChunkWriter(arena); }, nb::keep_alive<0, 1>())
      .def("unpack", &Arena::Unpack, nb::arg("record"))
      .def("discard", &Arena::Discard, nb::arg("record"))
      .def("take_released", &Arena::TakeReleased);
}

}  // namespace spelt::python
