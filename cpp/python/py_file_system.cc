#include "py_file_system.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "gil.h"
#include "py_value.h"
#include "spelt/errors.h"
#include "spelt/native_file_system.h"
#include "spelt/range_reads.h"
#include "spelt/remote_file.h"

namespace spelt::python {
namespace {

// Simple (contiguous, read-only) buffer views of Python objects, released together.
class BufferViews {
 public:
  BufferViews() = default;
  BufferViews(const BufferViews&) = delete;
  BufferViews& operator=(const BufferViews&) = delete;
  ~BufferViews() {
    for (Py_buffer& view : views_) PyBuffer_Release(&view);
  }
  // A view of `object`'s bytes (the GIL held). Throws nb::python_error if it has none.
  const Py_buffer& Add(nb::handle object) {
    Py_buffer view;
    if (PyObject_GetBuffer(object.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
    views_.push_back(view);
    data_.push_back(static_cast<const char*>(view.buf));
    return views_.back();
  }
  size_t size() const { return views_.size(); }
  // The start of each view, in the order added.
  const std::vector<const char*>& data() const { return data_; }

 private:
  std::vector<Py_buffer> views_;
  std::vector<const char*> data_;
};

class PyRandomAccessFile final : public RemoteFile {
 public:
  PyRandomAccessFile(std::string uri, nb::handle handle)
      : RemoteFile(std::move(uri)), handle_(MakePyRef(handle)) {
    size_ = nb::cast<uint64_t>(handle.attr("size"));
    read_ahead_ = nb::cast<uint64_t>(handle.attr("read_ahead"));
  }

  // The batch goes to Python as the ranges PlanRanges makes (spelt/range_reads.h): neighbours
  // coalesced, long reads split, so that Python sends few requests, all at once.
  void ReadMany(std::span<const ReadRequest> requests) const override {
    const std::vector<ByteRange> ranges = PlanRanges(requests);
    if (ranges.empty()) return;
    GilAcquire gil;
    nb::list wanted;
    for (const ByteRange& r : ranges) wanted.append(nb::make_tuple(r.offset, r.length));
    const nb::object got = nb::handle(handle_.get()).attr("read_ranges")(wanted);
    BufferViews views;
    for (nb::handle part : got) {
      if (views.size() == ranges.size()) break;
      const ByteRange& r = ranges[views.size()];
      const Py_buffer& view = views.Add(part);
      const auto length = static_cast<uint64_t>(view.len);
      if (length != r.length) {
        throw CorruptFileError(path_, r.offset + std::min(length, r.length),
                               "read " + std::to_string(length) + " of " +
                                   std::to_string(r.length) + " bytes (the object ends early)",
                               "remote");
      }
    }
    if (views.size() != ranges.size()) {
      throw std::runtime_error(path_ + ": read_ranges returned fewer parts than ranges");
    }
    GilRelease copy_without_gil;
    CopyFromRanges(requests, ranges, views.data());
  }

 private:
  PyRef handle_;
};

class PyWritableFile final : public WritableFile {
 public:
  PyWritableFile(std::string uri, nb::handle handle)
      : path_(std::move(uri)), handle_(MakePyRef(handle)) {}
  ~PyWritableFile() override {
    if (closed_) return;
    TryGil gil;  // abandon the file (best effort; skipped while Python exits)
    if (!gil.held()) return;
    try {
      nb::handle(handle_.get()).attr("discard")();
    } catch (nb::python_error& e) {
      e.discard_as_unraisable(path_.c_str());
    }
  }

  const std::string& path() const override { return path_; }

  void Write(std::string_view bytes) override {
    GilAcquire gil;
    nb::handle(handle_.get()).attr("write")(nb::bytes(bytes.data(), bytes.size()));
  }

  void Close() override {
    GilAcquire gil;
    closed_ = true;
    nb::handle(handle_.get()).attr("close")();
  }

 private:
  std::string path_;
  PyRef handle_;
  bool closed_ = false;
};

class PyFiles final : public FileSystem {
 public:
  explicit PyFiles(nb::handle files) : files_(MakePyRef(files)) {}

  std::unique_ptr<RandomAccessFile> OpenForRead(const std::string& uri) const override {
    GilAcquire gil;
    const nb::object handle = nb::handle(files_.get()).attr("open_input")(uri);
    return std::make_unique<PyRandomAccessFile>(uri, handle);
  }

  std::unique_ptr<WritableFile> OpenForWrite(const std::string& uri) const override {
    GilAcquire gil;
    const nb::object handle = nb::handle(files_.get()).attr("open_output")(uri);
    return std::make_unique<PyWritableFile>(uri, handle);
  }

 private:
  PyRef files_;
};

// The FileSystem of `capsule`, a PyCapsule of native files (SPELT_NATIVE_FILES_CAPSULE; it may
// die first: the FileSystem keeps its own reference to the files). Throws
// std::invalid_argument for another object or table version.
FileSystemPtr CapsuleFileSystem(nb::handle capsule) {
  auto* table = static_cast<const SpeltNativeFiles*>(
      PyCapsule_IsValid(capsule.ptr(), SPELT_NATIVE_FILES_CAPSULE)
          ? PyCapsule_GetPointer(capsule.ptr(), SPELT_NATIVE_FILES_CAPSULE)
          : nullptr);
  if (table == nullptr) {
    throw std::invalid_argument("not a capsule of native files (" SPELT_NATIVE_FILES_CAPSULE ")");
  }
  return NativeFileSystem(*table);
}

}  // namespace

FileSystemPtr PyFileSystem(nb::handle files) {
  if (!files.is_valid() || files.is_none()) return nullptr;
  const nb::object native = nb::getattr(files, "native", nb::none());
  if (!native.is_none()) return CapsuleFileSystem(native);
  return std::make_shared<PyFiles>(files);
}

}  // namespace spelt::python
