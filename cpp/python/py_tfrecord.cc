// Bindings of spelt/tfrecord.h, spelt/tfrecord_source.h and spelt/tfrecord_dataset.h. Reads
// and index building release the GIL; the index progress callback takes it back.
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
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

}  // namespace

void RegisterTFRecord(nb::module_& m) {
  m.def("tfrecord_iter_dataset", [](std::string path, std::optional<std::string> compression) {
    return TFRecordIterDataset(std::move(path), ParseOptional(compression));
  }, "path"_a, "compression"_a.none(),
     "Grain's TFRecordIterDataset: records (bytes) in file order, state {'reader_offset': n}. "
     "compression: '', 'GZIP', 'ZLIB', or None to detect it.");

  m.def("detect_tfrecord_compression", [](const std::string& path) {
    return std::string(TFRecordCompressionName(DetectTFRecordCompression(path)));
  }, "path"_a, "'' (uncompressed), 'GZIP' or 'ZLIB', from the file's first bytes.");

  nb::class_<TFRecordSource, RandomAccessSource>(m, "TFRecordSource")
      .def("__init__", [](TFRecordSource* self, std::vector<std::string> paths, std::string repr,
                          std::optional<nb::callable> progress) {
        TFRecordIndexProgress report;
        if (progress) {
          report = [fn = *progress](uint64_t done, uint64_t total) {
            nb::gil_scoped_acquire acquire;
            fn(done, total);
          };
        }
        nb::gil_scoped_release release;
        new (self) TFRecordSource(std::move(paths), std::move(repr), report);
      }, "paths"_a, "repr"_a, "progress"_a.none(),
         "Indexes the files; progress(done_bytes, total_bytes) is called while it does.")
      .def("read_many", [](const TFRecordSource& s, std::vector<int64_t> indices) {
        std::vector<Value> records;
        {
          nb::gil_scoped_release release;
          s.GetMany(indices, &records);
        }
        nb::list out;
        for (const Value& r : records) out.append(ToPython(r));
        return out;
      }, "indices"_a, "Records at indices (bytes), consecutive ones read together.")
      .def_prop_ro("paths", &TFRecordSource::paths);

  nb::class_<TFRecordWriter>(m, "TFRecordWriter")
      .def_static("open", [](const std::string& path, const std::string& compression,
                             int level) {
        return TFRecordWriter::Open(path, ParseTFRecordCompression(compression), level);
      }, "path"_a, "compression"_a = "", "level"_a = -1)
      .def("write", [](TFRecordWriter& w, nb::bytes record) {
        w.Write(std::string_view(record.c_str(), record.size()));
      }, "record"_a)
      .def("close", [](TFRecordWriter& w) {
        nb::gil_scoped_release release;
        w.Close();
      })
      .def_prop_ro("num_records", &TFRecordWriter::NumRecords);
}

}  // namespace spelt::python
