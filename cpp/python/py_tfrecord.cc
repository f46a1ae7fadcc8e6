// Bindings of spelt/tfrecord.h, spelt/tfrecord_source.h and spelt/tfrecord_dataset.h. Reads
// and index building release the GIL; the index progress callback takes it back.
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <mutex>

#include "bindings.h"
#include "gil.h"
#include "py_file_system.h"
#include "py_value.h"
#include "spelt/tfrecord.h"
#include "spelt/tfrecord_dataset.h"
#include "spelt/tfrecord_source.h"

using namespace nanobind::literals;

namespace spelt::python {
namespace {

std::optional<TFRecordCompression> ParseOptional(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return ParseTFRecordCompression(*name);
}

// Iterating a TFRecordIterDataset directly (no transformation on top): each record is read
// into a new Python bytes object, large payloads of an uncompressed file straight from the
// file (no other copy); a compressed file is decompressed ahead by a helper thread
// (TFRecordReader::Open's read_ahead). The GIL is released only for steps that read the file
// or wait for the helper (TFRecordReader::NextStepBuffered).
// Calls from several threads run one at a time (a waiting thread does not hold the GIL).
struct TFRecordIterator {
  std::unique_ptr<TFRecordReader> reader;
  std::mutex mu;

  // Holds `mu` (REQUIRES: the GIL; waits for the mutex without it) and the reader.
  class Lock {
   public:
    explicit Lock(TFRecordIterator& self) : lock_(self.mu, std::try_to_lock) {
      if (!lock_.owns_lock()) {
        GilRelease release;
        lock_.lock();
      }
      if (!self.reader) throw std::invalid_argument("the iterator is closed");
      reader_ = self.reader.get();
    }
    TFRecordReader& reader() { return *reader_; }
    // f(reader), without the GIL if the step reads the file.
    template <typename F>
    auto Step(F&& f) {
      if (reader_->NextStepBuffered()) return f(*reader_);
      GilRelease release;
      return f(*reader_);
    }

   private:
    std::unique_lock<std::mutex> lock_;
    TFRecordReader* reader_ = nullptr;
  };

  nb::object Next() {
    Lock lock(*this);  // both steps under one lock: they share the reader's pending record
    const std::optional<uint64_t> length =
        lock.Step([](TFRecordReader& r) { return r.NextLength(); });
    if (!length) throw nb::stop_iteration();
    PyObject* bytes = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(*length));
    if (bytes == nullptr) throw nb::python_error();
    nb::object out = nb::steal(bytes);
    lock.Step([&](TFRecordReader& r) { r.ReadPayload(PyBytes_AS_STRING(bytes)); });
    return out;
  }
};

}  // namespace

void RegisterTFRecord(nb::module_& m) {
  nb::class_<TFRecordIterator>(m, "TFRecordIterator",
                               "Iterator of a TFRecordIterDataset: bytes records, Grain's state.")
      .def("__init__", [](TFRecordIterator* self, std::string path,
                          std::optional<std::string> compression, nb::handle files) {
        const std::optional<TFRecordCompression> c = ParseOptional(compression);
        const FileSystemPtr fs = PyFileSystem(files);
        std::unique_ptr<TFRecordReader> reader;
        {
          GilRelease release;
          reader = TFRecordReader::Open(path, c, /*read_ahead=*/true, fs);
        }
        new (self) TFRecordIterator{std::move(reader), {}};
      }, "path"_a, "compression"_a.none(), "files"_a = nb::none())
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &TFRecordIterator::Next)
      .def("get_state", [](TFRecordIterator& self) {
        nb::dict state;
        state[kReaderOffsetKey] = TFRecordIterator::Lock(self).reader().Tell();
        return state;
      }, "{'reader_offset': byte offset of the next record}")
      .def("set_state", [](TFRecordIterator& self, nb::dict state) {
        if (!state.contains(kReaderOffsetKey) ||
            !nb::isinstance<nb::int_>(state[kReaderOffsetKey])) {
          throw std::invalid_argument(
              "TFRecordIterDataset: state must be {'reader_offset': int}, got " +
              nb::cast<std::string>(nb::repr(state)));
        }
        const int64_t offset = nb::cast<int64_t>(state[kReaderOffsetKey]);
        if (offset < 0) {
          throw std::invalid_argument("TFRecordIterDataset: negative reader_offset " +
                                      std::to_string(offset));
        }
        TFRecordIterator::Lock lock(self);
        GilRelease release;
        lock.reader().Seek(static_cast<uint64_t>(offset));
      }, "state"_a, "Restores a state of get_state(); ValueError if malformed or past the end.")
      .def("start_prefetch", [](TFRecordIterator&) {}, "Nothing to start: reads begin at next().")
      .def("close", [](TFRecordIterator& self) {
        std::unique_lock<std::mutex> lock(self.mu, std::try_to_lock);
        if (!lock.owns_lock()) {
          GilRelease release;
          lock.lock();
        }
        self.reader.reset();
      }, "Closes the file; idempotent.");

  m.def("tfrecord_iter_dataset", [](std::string path, std::optional<std::string> compression,
                                    nb::handle files) {
    return TFRecordIterDataset(std::move(path), ParseOptional(compression), PyFileSystem(files));
  }, "path"_a, "compression"_a.none(), "files"_a = nb::none(),
     "Grain's TFRecordIterDataset: records (bytes) in file order, state {'reader_offset': n}. "
     "compression: '', 'GZIP', 'ZLIB', or None to detect it.");

  m.def("detect_tfrecord_compression", [](const std::string& path, nb::handle files) {
    return std::string(TFRecordCompressionName(DetectTFRecordCompression(path, PyFileSystem(files))));
  }, "path"_a, "files"_a = nb::none(), "'' (uncompressed), 'GZIP' or 'ZLIB', from the file's first bytes.");

  nb::class_<TFRecordSource, RandomAccessSource>(m, "TFRecordSource")
      .def("__init__", [](TFRecordSource* self, std::vector<std::string> paths, std::string repr,
                          std::optional<nb::callable> progress, nb::handle files) {
        TFRecordIndexProgress report;
        if (progress) {
          report = [fn = *progress](uint64_t done, uint64_t total) {
            GilAcquire acquire;
            fn(done, total);
          };
        }
        const FileSystemPtr fs = PyFileSystem(files);
        GilRelease release;
        new (self) TFRecordSource(std::move(paths), std::move(repr), report, fs);
      }, "paths"_a, "repr"_a, "progress"_a.none(), "files"_a = nb::none(),
         "Indexes the files; progress(done_bytes, total_bytes) is called while it does.")
      .def("read_many", [](const TFRecordSource& s, std::vector<int64_t> indices) {
        std::vector<Value> records;
        {
          GilRelease release;
          s.GetMany(indices, &records);
        }
        nb::list out;
        for (const Value& r : records) out.append(ToPython(r));
        return out;
      }, "indices"_a, "Records at indices (bytes), consecutive ones read together.")
      .def_prop_ro("paths", &TFRecordSource::paths);

  nb::class_<TFRecordWriter>(m, "TFRecordWriter")
      .def_static("open", [](const std::string& path, const std::string& compression,
                             int level, nb::handle files) {
        return TFRecordWriter::Open(path, ParseTFRecordCompression(compression), level,
                                    PyFileSystem(files));
      }, "path"_a, "compression"_a = "", "level"_a = -1, "files"_a = nb::none())
      .def("write", [](TFRecordWriter& w, nb::bytes record) {
        w.Write(std::string_view(record.c_str(), record.size()));
      }, "record"_a)
      .def("close", [](TFRecordWriter& w) {
        GilRelease release;
        w.Close();
      })
      .def_prop_ro("num_records", &TFRecordWriter::NumRecords);
}

}  // namespace spelt::python
