// Bindings of spelt/array_record.h and spelt/array_record_source.h. Reads release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "gil.h"
#include "py_file_system.h"
#include "py_value.h"
#include "spelt/array_record.h"
#include "spelt/array_record_source.h"

using namespace nanobind::literals;

namespace spelt::python {
namespace {

nb::bytes ToBytes(const std::string& s) { return nb::bytes(s.data(), s.size()); }

}  // namespace

void RegisterArrayRecord(nb::module_& m) {
  nb::class_<RandomAccessSource>(m, "NativeSource")
      .def("__len__", &RandomAccessSource::Length)
      .def("__repr__", &RandomAccessSource::Repr)
      .def("__getitem__", [](const RandomAccessSource& s, int64_t index) {
        Value v;
        {
          GilRelease release;
          v = s.Get(index);
        }
        return ToPython(v);
      });

  nb::class_<ArrayRecordSource, RandomAccessSource>(m, "ArrayRecordSource")
      .def("__init__", [](ArrayRecordSource* self, std::vector<std::string> paths,
                          std::string repr, bool verify_data_hash, nb::handle files) {
        ArrayRecordReaderOptions options;
        options.verify_data_hash = verify_data_hash;
        const FileSystemPtr fs = PyFileSystem(files);
        GilRelease release;
        new (self) ArrayRecordSource(std::move(paths), options, std::move(repr), fs);
      }, "paths"_a, "repr"_a, "verify_data_hash"_a = true, "files"_a = nb::none(),
         "files: None (local paths) or a spelt._file_system.Files opening the paths.")
      .def("read_many", [](const ArrayRecordSource& s, std::vector<int64_t> indices,
                           int num_threads) {
        std::vector<std::string> records;
        {
          GilRelease release;
          records = s.ReadMany(indices, num_threads);
        }
        nb::list out;
        for (const std::string& r : records) out.append(ToBytes(r));
        return out;
      }, "indices"_a, "num_threads"_a)
      .def_prop_ro("paths", &ArrayRecordSource::paths);

  nb::class_<ArrayRecordWriter>(m, "ArrayRecordWriter")
      .def_static("open", [](const std::string& path, const std::string& options,
                             nb::handle files) {
        return ArrayRecordWriter::Open(path, ArrayRecordWriterOptions::FromString(options),
                                       PyFileSystem(files));
      }, "path"_a, "options"_a = "", "files"_a = nb::none())
      .def("write", [](ArrayRecordWriter& w, nb::bytes record) {
        w.Write(std::string_view(record.c_str(), record.size()));
      }, "record"_a)
      .def("close", [](ArrayRecordWriter& w) {
        GilRelease release;
        w.Close();
      })
      .def_prop_ro("num_records", &ArrayRecordWriter::NumRecords);

  m.def("array_record_info", [](const std::string& path, nb::handle files) {
    ArrayRecordInfo info;
    const FileSystemPtr fs = PyFileSystem(files);
    {
      GilRelease release;
      info = ArrayRecordReader::Open(path, {}, fs)->Info();
    }
    nb::dict d;
    d["path"] = info.path;
    d["file_size"] = info.file_size;
    d["num_records"] = info.num_records;
    d["num_chunks"] = info.num_chunks;
    d["group_size"] = info.group_size;
    d["compression"] = info.compression;
    d["writer_options"] = info.writer_options;
    d["decoded_bytes"] = info.decoded_bytes;
    d["footer_offset"] = info.footer_offset;
    return d;
  }, "path"_a, "files"_a = nb::none(),
     "Facts about one ArrayRecord file (reads its index and first chunk).");
}

}  // namespace spelt::python
