#include "py_arena.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>
#include <sys/mman.h>

#include <cerrno>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include "arena_record.h"
#include "bindings.h"
#include "py_chunk_writer.h"
#include "py_element_codec.h"

namespace spelt::python {

// One mmap of a shared file; unmapped when the last owner is gone.
class SharedMapping {
 public:
  SharedMapping(int fd, size_t size) : size_(size) {
    void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "Arena: mmap");
    data_ = static_cast<std::byte*>(addr);
  }
  ~SharedMapping() { munmap(data_, size_); }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;

  size_t size() const { return size_; }
  std::byte* data() const { return data_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_;
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

namespace {

// Shared by the views of one region; its destruction releases the region.
class Region {
 public:
  Region(std::shared_ptr<SharedMapping> mapping, std::shared_ptr<ReleasedQueue> released,
         int64_t id)
      : mapping_(std::move(mapping)), released_(std::move(released)), id_(id) {}
  ~Region() { released_->Push(id_); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  std::shared_ptr<SharedMapping> mapping_;  // outlives every view, even after the Arena is gone
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

nb::handle PickleLoads() {
  static nb::handle loads = nb::object(nb::module_::import_("pickle").attr("loads")).release();
  return loads;  // kept for the process
}

int64_t CheckedSize(int64_t size) {
  if (size <= 0) throw std::invalid_argument("Arena: size must be positive");
  return size;
}

RecordLayout Parse(const nb::bytes& record, const SharedMapping& mapping) {
  return ParseRecord(std::string_view(record.c_str(), record.size()), mapping.data(),
                     mapping.size());
}

}  // namespace

Arena::Arena(int fd, int64_t size)
    : mapping_(std::make_shared<SharedMapping>(fd, static_cast<size_t>(CheckedSize(size)))),
      released_(std::make_shared<ReleasedQueue>()),
      allocator_(size) {}

int64_t Arena::size() const { return static_cast<int64_t>(mapping_->size()); }

std::byte* Arena::at(int64_t offset) const { return mapping_->data() + offset; }

void Arena::Free(const std::vector<int64_t>& offsets) {
  for (int64_t offset : offsets) allocator_.Free(offset);
}

UnpackedChunk Arena::Unpack(nb::bytes record) {
  const RecordLayout layout = Parse(record, *mapping_);
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
    if (e.kind == kTagged) {
      std::vector<ArrayBytes> arrays;
      for (const auto& [offset, length] : e.spans) arrays.push_back({at(offset), length, region});
      out.values.push_back(DecodeElement(bytes, arrays));
      continue;
    }
    nb::list views;
    for (const auto& [offset, length] : e.spans) {
      views.append(nb::cast(ArenaView{region, at(offset), static_cast<Py_ssize_t>(length)}));
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

void Arena::Discard(nb::bytes record) {
  const RecordLayout layout = Parse(record, *mapping_);
  if (layout.stream_offset >= 0) released_->Push(layout.stream_offset);
  for (const RecordLayout::Element& e : layout.elements) {
    if (e.region >= 0) released_->Push(e.region);
  }
}

std::vector<int64_t> Arena::TakeReleased() { return released_->TakeAll(); }

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

  RegisterChunkWriter(m);

  nb::class_<Arena>(m, "Arena", "A shared-memory file mapped into this process (py_arena.h).")
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
