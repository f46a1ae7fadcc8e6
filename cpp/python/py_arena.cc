// spelt._core.Arena: a shared-memory region (an anonymous memfd) mapped into this process, the
// hand-off buffer between a worker process and the consumer (python/spelt/_workers).
//
// The worker writes a chunk's array buffers into a region of its arena; the consumer maps the
// same memfd and wraps each buffer in an ArenaView, a buffer-protocol object that numpy (via
// pickle protocol 5) turns into zero-copy arrays. A region is released when the last view of
// it dies: its id goes onto the arena's released queue, which the consumer drains and sends
// back to the worker so that the worker reuses the memory.
//
// Python API (all methods are safe to call from any Python thread; views may die anywhere):
//   Arena(fd, size)                 maps `size` bytes of file descriptor `fd` (MAP_SHARED);
//                                   the caller may close `fd` afterwards.
//   Arena.size                      mapped size in bytes.
//   Arena.write(offset, buffer)     copies a contiguous buffer to [offset, offset + len).
//   Arena.views(region, spans)      one writable ArenaView per (offset, size) in `spans`; when
//                                   all of them are gone, `region` (an int) is released.
//   Arena.take_released()           ids released since the last call (list of int).
// The mapping stays valid until the Arena and all its views are gone.

#include "bindings.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace spelt::python {
namespace {

// Copies at least this large run without the GIL.
constexpr size_t kReleaseGilBytes = 64 * 1024;

// One mmap of a shared file; unmapped when the last owner is gone.
class Mapping {
 public:
  Mapping(int fd, size_t size) : size_(size) {
    if (size == 0) throw std::invalid_argument("Arena: size must be positive");
    void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "Arena: mmap");
    data_ = static_cast<std::byte*>(addr);
  }
  ~Mapping() { munmap(data_, size_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  size_t size() const { return size_; }
  // REQUIRES: CheckSpan(offset, size).
  std::byte* at(size_t offset) const { return data_ + offset; }
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

class Arena {
 public:
  Arena(int fd, int64_t size)
      : mapping_(std::make_shared<Mapping>(fd, static_cast<size_t>(CheckedSize(size)))),
        released_(std::make_shared<ReleasedQueue>()) {}

  int64_t size() const { return static_cast<int64_t>(mapping_->size()); }

  void Write(int64_t offset, nb::handle buffer) {
    Py_buffer src;
    if (PyObject_GetBuffer(buffer.ptr(), &src, PyBUF_ANY_CONTIGUOUS) != 0) throw nb::python_error();
    std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> release(&src, PyBuffer_Release);
    mapping_->CheckSpan(offset, src.len);
    std::byte* dst = mapping_->at(static_cast<size_t>(offset));
    const size_t n = static_cast<size_t>(src.len);
    if (n >= kReleaseGilBytes) {
      nb::gil_scoped_release unlocked;
      std::memcpy(dst, src.buf, n);
    } else {
      std::memcpy(dst, src.buf, n);
    }
  }

  std::vector<ArenaView> Views(int64_t region_id,
                               const std::vector<std::pair<int64_t, int64_t>>& spans) {
    for (const auto& [offset, size] : spans) mapping_->CheckSpan(offset, size);
    auto region = std::make_shared<Region>(mapping_, released_, region_id);
    std::vector<ArenaView> views;
    views.reserve(spans.size());
    for (const auto& [offset, size] : spans) {
      views.push_back(ArenaView{region, mapping_->at(static_cast<size_t>(offset)),
                                static_cast<Py_ssize_t>(size)});
    }
    return views;
  }

  std::vector<int64_t> TakeReleased() { return released_->TakeAll(); }

 private:
  static int64_t CheckedSize(int64_t size) {
    if (size <= 0) throw std::invalid_argument("Arena: size must be positive");
    return size;
  }

  std::shared_ptr<Mapping> mapping_;
  std::shared_ptr<ReleasedQueue> released_;
};

}  // namespace

void RegisterArena(nb::module_& m) {
  nb::class_<ArenaView>(m, "ArenaView", nb::type_slots(kArenaViewSlots),
                        "A writable byte buffer inside an Arena (buffer protocol).")
      .def("__len__", [](const ArenaView& v) { return v.size; });

  nb::class_<Arena>(m, "Arena", "A shared-memory file mapped into this process (py_arena.h).")
      .def(nb::init<int, int64_t>(), nb::arg("fd"), nb::arg("size"))
      .def_prop_ro("size", &Arena::size)
      .def("write", &Arena::Write, nb::arg("offset"), nb::arg("buffer"))
      .def("views", &Arena::Views, nb::arg("region"), nb::arg("spans"))
      .def("take_released", &Arena::TakeReleased);
}

}  // namespace spelt::python
