// Decoding the row groups of a Parquet file with Arrow C++'s low-level column readers
// (parquet::TypedColumnReader::ReadBatch), for columns whose values need no list offsets or
// validity: numeric columns and strings without nulls, and list<numeric> columns whose rows
// all hold the same number of non-null values. Skipping Arrow's assembly of list columns
// (levels turned into offsets and validity, values copied into fresh arrays) makes the decode
// of a list<float> column ~3x cheaper than parquet::arrow's ReadRowGroup (docs/benchmarks.md,
// S1).
#ifndef SPELT_CPP_PARQUET_NATIVE_ROW_GROUP_DECODER_H_
#define SPELT_CPP_PARQUET_NATIVE_ROW_GROUP_DECODER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/buffer_pool.h"

namespace parquet {
class ParquetFileReader;
class ColumnReader;
class ColumnDescriptor;
}  // namespace parquet

namespace spelt::parquet_native {

// What a column holds, as its Arrow type reads: a number of one of four types, a list of such
// numbers, or a string (UTF-8) / binary value.
enum class ValueType { kInt32, kInt64, kFloat32, kFloat64, kString, kBinary };

// The C type of a numeric ValueType, as a tag.
template <typename T>
struct NumericTag {
  using type = T;
};

// f(NumericTag<int32_t>{}), f(NumericTag<int64_t>{}), f(NumericTag<float>{}) or
// f(NumericTag<double>{}) for a numeric type; f(nullptr) for kString and kBinary.
template <typename F>
decltype(auto) VisitValueType(ValueType type, F&& f) {
  switch (type) {
    case ValueType::kInt32:
      return f(NumericTag<int32_t>{});
    case ValueType::kInt64:
      return f(NumericTag<int64_t>{});
    case ValueType::kFloat32:
      return f(NumericTag<float>{});
    case ValueType::kFloat64:
      return f(NumericTag<double>{});
    case ValueType::kString:
    case ValueType::kBinary:
      break;
  }
  return f(nullptr);
}

struct ColumnSpec {
  ValueType type;
  bool list = false;  // list<type>, type numeric

  // "int32", "int64", "float32", "float64", "str", "bytes", or "list<NUMERIC>".
  // Throws std::invalid_argument for any other name.
  static ColumnSpec Parse(const std::string& name);
};

// One decoded column of a row group with `rows` rows.
// Numeric: `values` holds rows * width values of the spec's type (width 1 for a flat column), in
// a buffer of the module's pool (base/buffer_pool.h: no fresh pages per row group).
// String / binary: value r is data[offsets[r], offsets[r + 1]).
struct DecodedColumn {
  ColumnSpec spec;
  int64_t rows = 0;
  int64_t width = 1;
  internal::Buffer values;
  std::vector<int64_t> offsets;
  std::string data;
};

// The row groups of one local Parquet file (memory-mapped), with one optional spec per leaf
// column in file order: the leaves without a spec are not read. Thread-safe: decodes run one
// at a time.
class RowGroupDecoder {
 public:
  // Throws std::invalid_argument if the file's leaf columns do not match `specs` (count, and
  // the physical type and nesting of each leaf with a spec); parquet::ParquetException if the
  // file cannot be opened.
  RowGroupDecoder(const std::string& path, std::vector<std::optional<ColumnSpec>> specs);
  ~RowGroupDecoder();

  int num_row_groups() const;

  // Per leaf column of row group g, its values; nullopt for a leaf without a spec, and for one
  // that holds a null, an empty or null list, or lists of different lengths, or if the row
  // group is empty (read those through Arrow).
  // Throws std::out_of_range for a bad g, parquet::ParquetException for corrupt data.
  std::vector<std::optional<DecodedColumn>> Decode(int g);

 private:
  std::mutex mu_;
  std::unique_ptr<parquet::ParquetFileReader> reader_;
  std::vector<std::optional<ColumnSpec>> specs_;
};

}  // namespace spelt::parquet_native

#endif  // SPELT_CPP_PARQUET_NATIVE_ROW_GROUP_DECODER_H_
