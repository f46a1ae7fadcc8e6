// spelt._parquet_native: Parquet row groups decoded by Arrow C++'s low-level column readers
// (row_group_decoder.h), linked against the libarrow / libparquet of the pyarrow wheel it was
// built with (import pyarrow first). Optional: built only when pyarrow is importable at build
// time; spelt/_parquet.py falls back to pyarrow's read_row_group when the import fails.
//
// Also the native remote files (arrow_files.h): native_files(filesystem, base_type,
// description, connections) -> a capsule of native_files_abi.h's table, or None; configure(...) and
// remote_counters() for the process's settings and counters.
//
// RowGroupDecoder(path, specs) -> .decode(g) (without the GIL) -> DecodedRowGroup
// -> .columns() (with the GIL): per leaf column a read-only numpy array (shape (rows,) or
// (rows, width) for a list column) over a recycled buffer, a TextColumn (str / bytes values),
// or None (not decoded: read it through pyarrow).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "arrow_files.h"
#include "gil.h"
#include "row_group_decoder.h"
#include "unwrap_filesystem.h"

namespace spelt::parquet_native {
namespace {

namespace nb = nanobind;
using python::GilRelease;

// A decoded row group, converted to Python objects by columns() (once).
struct DecodedRowGroup {
  explicit DecodedRowGroup(std::vector<std::optional<DecodedColumn>> c) : columns(std::move(c)) {}
  DecodedRowGroup(const DecodedRowGroup&) = delete;
  DecodedRowGroup(DecodedRowGroup&&) = default;
  std::vector<std::optional<DecodedColumn>> columns;
};

template <typename T>
nb::object NumericArray(DecodedColumn& column) {
  auto* buffer = new internal::Buffer(std::move(column.values));
  nb::capsule owner(buffer, [](void* p) noexcept { delete static_cast<internal::Buffer*>(p); });
  const T* data = reinterpret_cast<const T*>(buffer->data());
  const size_t shape[2] = {static_cast<size_t>(column.rows), static_cast<size_t>(column.width)};
  return nb::cast(
      nb::ndarray<nb::numpy, const T>(data, column.spec.list ? 2 : 1, shape, owner));
}

// A decoded string / binary column, converted to Python on demand: all values as objects, or
// rows [start, stop) as the fixed-width array numpy's conversion of those values gives.
struct TextColumn {
  std::shared_ptr<const DecodedColumn> column;

  nb::object Objects() const;

  // (stop - start, width) uint8 for bytes, uint32 (UCS-4) for str, each row a value padded
  // with zeros to the longest (width at least 1): the memory of numpy's S / <U array of those
  // values. None for str values that are not all ASCII. ValueError for a bad range.
  nb::object FixedWidth(int64_t start, int64_t stop) const {
    const DecodedColumn& c = *column;
    if (start < 0 || start > stop || stop > c.rows) throw nb::value_error("bad row range");
    const int64_t* offsets = c.offsets.data();
    int64_t width = 1;
    for (int64_t r = start; r < stop; ++r) width = std::max(width, offsets[r + 1] - offsets[r]);
    const bool str = c.spec.type == ValueType::kString;
    const auto* data = reinterpret_cast<const uint8_t*>(c.data.data());
    if (str) {
      uint8_t high = 0;
      for (int64_t i = offsets[start]; i < offsets[stop]; ++i) high |= data[i];
      if (high & 0x80) return nb::none();
    }
    return str ? Fill<uint32_t>(data, offsets, start, stop, width)
               : Fill<uint8_t>(data, offsets, start, stop, width);
  }

  template <typename T>
  static nb::object Fill(const uint8_t* data, const int64_t* offsets, int64_t start,
                         int64_t stop, int64_t width) {
    const size_t n = static_cast<size_t>(stop - start);
    T* out = new T[n * width]();
    nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<T*>(p); });
    for (size_t r = 0; r < n; ++r) {
      const uint8_t* value = data + offsets[start + r];
      std::copy(value, data + offsets[start + r + 1], out + r * width);
    }
    const size_t shape[2] = {n, static_cast<size_t>(width)};
    return nb::cast(nb::ndarray<nb::numpy, T>(out, 2, shape, owner));
  }
};

nb::object TextList(const DecodedColumn& column) {
  nb::list out;
  const bool str = column.spec.type == ValueType::kString;
  for (int64_t r = 0; r < column.rows; ++r) {
    const char* p = column.data.data() + column.offsets[r];
    const Py_ssize_t n = static_cast<Py_ssize_t>(column.offsets[r + 1] - column.offsets[r]);
    PyObject* value = str ? PyUnicode_DecodeUTF8(p, n, "strict") : PyBytes_FromStringAndSize(p, n);
    if (value == nullptr) throw nb::python_error();
    out.append(nb::steal(value));
  }
  return out;
}

nb::object TextColumn::Objects() const { return TextList(*column); }

// A capsule of the native files of `filesystem` (a pyarrow.fs.FileSystem) for `connections`
// requests at once, or None if its C++ object cannot be read.
nb::object NativeFiles(nb::handle filesystem, nb::handle base_type, std::string description,
                       int connections) {
  std::shared_ptr<arrow::fs::FileSystem> fs =
      UnwrapFileSystem(filesystem.ptr(), base_type.ptr());
  if (fs == nullptr) return nb::none();
  {
    GilRelease release;  // making a client may take a while
    fs = WithConnections(std::move(fs), connections);
  }
  SpeltNativeFiles* table = NewArrowFiles(std::move(fs), std::move(description));
  PyObject* capsule = PyCapsule_New(table, SPELT_NATIVE_FILES_CAPSULE, [](PyObject* c) {
    FreeTable(static_cast<SpeltNativeFiles*>(PyCapsule_GetPointer(c, SPELT_NATIVE_FILES_CAPSULE)));
  });
  if (capsule == nullptr) {
    FreeTable(table);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

nb::list Columns(DecodedRowGroup& group) {
  nb::list out;
  for (std::optional<DecodedColumn>& decoded : group.columns) {
    if (!decoded) {
      out.append(nb::none());
      continue;
    }
    DecodedColumn& column = *decoded;
    out.append(VisitValueType(column.spec.type, [&](auto tag) {
      if constexpr (std::is_same_v<decltype(tag), std::nullptr_t>) {
        return nb::cast(TextColumn{std::make_shared<const DecodedColumn>(std::move(column))});
      } else {
        return NumericArray<typename decltype(tag)::type>(column);
      }
    }));
  }
  group.columns.clear();
  return out;
}

}  // namespace

NB_MODULE(_parquet_native, m) {
  python::RegisterExitHook();
  m.doc() = "Parquet row groups through Arrow C++'s column readers; used by spelt._parquet.";

  m.def("native_files", &NativeFiles, nb::arg("filesystem"), nb::arg("base_type"),
        nb::arg("description"), nb::arg("connections"),
        "A PyCapsule of native remote files (spelt.native_files.v1) reading and writing"
        " through the Arrow C++ filesystem of `filesystem` without the GIL (an S3 one made"
        " again with a client of `connections` connections), or None if it is not a"
        " `base_type` (pyarrow.fs.FileSystem) whose C++ object can be read.");
  m.def(
      "configure",
      [](int max_in_flight, double retry_seconds, uint64_t read_ahead_bytes) {
        Configure({max_in_flight, retry_seconds, read_ahead_bytes});
      },
      nb::arg("max_in_flight"), nb::arg("retry_seconds"), nb::arg("read_ahead_bytes"),
      "Sets the native files' in-flight limit, retry time (s) and read-ahead (bytes, for"
      " files opened after the call): spelt.config's remote_* flags.");
  m.def(
      "remote_counters",
      [] {
        const RemoteCounters c = Counters();
        return nb::make_tuple(c.requests, c.bytes, c.retries, c.in_flight, c.peak_in_flight);
      },
      "The native files' (requests, bytes, retries, in flight now, peak in flight) of this"
      " process.");

  nb::class_<TextColumn>(m, "TextColumn")
      .def("objects", &TextColumn::Objects, "All values, a list of str (bytes for binary).")
      .def("fixed_width", &TextColumn::FixedWidth, nb::arg("start"), nb::arg("stop"),
           "Rows [start, stop) as a (rows, width) uint8 (bytes) or uint32 (str, UCS-4) array,"
           " zero-padded: the memory of numpy's S / <U array of them; None if str values are"
           " not all ASCII. ValueError for a bad range.");
  nb::class_<DecodedRowGroup>(m, "DecodedRowGroup")
      .def("columns", &Columns,
           "Per leaf column, a read-only numpy array ((rows,) or (rows, width) for a list"
           " column), a TextColumn, or None if not decoded. Once: later calls return [].")
      .def_prop_ro(
          "decoded",
          [](const DecodedRowGroup& group) {
            std::vector<bool> out;
            for (const auto& column : group.columns) out.push_back(column.has_value());
            return out;
          },
          "Per leaf column, whether it was decoded (columns() gives its values).");

  nb::class_<RowGroupDecoder>(m, "RowGroupDecoder")
      .def(
          "__init__",
          [](RowGroupDecoder* self, const std::string& path,
             const std::vector<std::string>& specs) {
            std::vector<std::optional<ColumnSpec>> parsed;
            for (const std::string& s : specs) {
              parsed.push_back(s.empty() ? std::nullopt : std::optional(ColumnSpec::Parse(s)));
            }
            GilRelease release;
            new (self) RowGroupDecoder(path, std::move(parsed));
          },
          nb::arg("path"), nb::arg("specs"),
          "Opens a local Parquet file (memory-mapped). specs: one per leaf column, 'int32',"
          " 'int64', 'float32', 'float64', 'str', 'bytes', 'list<NUMERIC>', or '' (not read)."
          " ValueError if they do not match the file's columns; RuntimeError if it cannot be"
          " read.")
      .def_prop_ro("num_row_groups", &RowGroupDecoder::num_row_groups)
      .def(
          "decode",
          [](RowGroupDecoder& self, int g) {
            std::vector<std::optional<DecodedColumn>> columns;
            {
              GilRelease release;
              columns = self.Decode(g);
            }
            return DecodedRowGroup(std::move(columns));
          },
          nb::arg("g"),
          "Row group g, decoded without the GIL (a leaf with nulls, or lists of different"
          " lengths, is left undecoded). IndexError for a bad g; RuntimeError for corrupt"
          " data. Thread-safe (one decode at a time).");
}

}  // namespace spelt::parquet_native
