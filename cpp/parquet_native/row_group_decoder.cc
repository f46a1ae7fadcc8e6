#include "row_group_decoder.h"

#include <parquet/api/reader.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace spelt::parquet_native {
namespace {

// Levels read per ReadBatch call: two level buffers of this many int16 stay in the L2 cache.
constexpr int64_t kChunk = 16384;

struct Levels {
  std::vector<int16_t> def = std::vector<int16_t>(kChunk);
  std::vector<int16_t> rep = std::vector<int16_t>(kChunk);
};

// The parquet::DataType whose values are of C type T.
template <typename T>
using ParquetType = std::conditional_t<
    std::is_same_v<T, int32_t>, parquet::Int32Type,
    std::conditional_t<std::is_same_v<T, int64_t>, parquet::Int64Type,
                       std::conditional_t<std::is_same_v<T, float>, parquet::FloatType,
                                          parquet::DoubleType>>>;

bool AllDefined(const int16_t* def, int64_t n, int16_t max_def) {
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= def[i] ^ max_def;
  return bad == 0;
}

// Whether rep[0, n) starts a row (level 0) exactly every `width` levels, where *pos is the
// position within its row of rep[0]; advances *pos.
bool RowsOfWidth(const int16_t* rep, int64_t n, int64_t width, int64_t* pos) {
  int bad = 0;
  int64_t p = *pos;
  for (int64_t i = 0; i < n;) {
    if (p == 0) {
      bad |= rep[i++];
      p = 1;
    }
    const int64_t run = std::min(width - p, n - i);
    const int16_t* r = rep + i;
    for (int64_t k = 0; k < run; ++k) bad |= r[k] ^ 1;
    i += run;
    p = p + run == width ? 0 : p + run;
  }
  *pos = p;
  return bad == 0;
}

template <typename DType>
bool ReadNumeric(parquet::ColumnReader& column, int64_t levels_total, Levels& levels,
                 DecodedColumn& out) {
  using T = typename DType::c_type;
  if (out.spec.list) {
    if (levels_total % out.rows != 0) return false;
    out.width = levels_total / out.rows;
  } else if (levels_total != out.rows) {
    return false;
  }
  out.values = internal::Buffer(static_cast<size_t>(levels_total) * sizeof(T));
  T* values = reinterpret_cast<T*>(out.values.data());
  auto& reader = static_cast<parquet::TypedColumnReader<DType>&>(column);
  const int16_t max_def = column.descr()->max_definition_level();
  int16_t* def = max_def > 0 ? levels.def.data() : nullptr;
  int16_t* rep = out.spec.list ? levels.rep.data() : nullptr;
  int64_t read = 0, pos = 0;
  while (read < levels_total) {
    int64_t got = 0;
    const int64_t n =
        reader.ReadBatch(std::min(kChunk, levels_total - read), def, rep, values + read, &got);
    if (n == 0 || got != n || (def && !AllDefined(def, n, max_def))) return false;
    if (rep && !RowsOfWidth(rep, n, out.width, &pos)) return false;
    read += n;
  }
  return !reader.HasNext();
}

bool ReadText(parquet::ColumnReader& column, int64_t levels_total, int64_t size_hint,
              Levels& levels, DecodedColumn& out) {
  if (levels_total != out.rows) return false;
  out.data.reserve(static_cast<size_t>(std::max<int64_t>(size_hint, 0)));
  auto& reader = static_cast<parquet::ByteArrayReader&>(column);
  const int16_t max_def = column.descr()->max_definition_level();
  int16_t* def = max_def > 0 ? levels.def.data() : nullptr;
  std::vector<parquet::ByteArray> values(kChunk);
  out.offsets.reserve(out.rows + 1);
  out.offsets.push_back(0);
  int64_t read = 0;
  while (read < levels_total) {
    int64_t got = 0;
    const int64_t n =
        reader.ReadBatch(std::min(kChunk, levels_total - read), def, nullptr, values.data(), &got);
    if (n == 0 || got != n || (def && !AllDefined(def, n, max_def))) return false;
    for (int64_t i = 0; i < n; ++i) {
      out.data.append(reinterpret_cast<const char*>(values[i].ptr), values[i].len);
      out.offsets.push_back(static_cast<int64_t>(out.data.size()));
    }
    read += n;
  }
  return !reader.HasNext();
}

parquet::Type::type PhysicalType(ValueType type) {
  switch (type) {
    case ValueType::kInt32:
      return parquet::Type::INT32;
    case ValueType::kInt64:
      return parquet::Type::INT64;
    case ValueType::kFloat32:
      return parquet::Type::FLOAT;
    case ValueType::kFloat64:
      return parquet::Type::DOUBLE;
    case ValueType::kString:
    case ValueType::kBinary:
      return parquet::Type::BYTE_ARRAY;
  }
  throw std::logic_error("unknown ValueType");
}

}  // namespace

ColumnSpec ColumnSpec::Parse(const std::string& name) {
  const bool list = name.starts_with("list<") && name.ends_with(">");
  const std::string type = list ? name.substr(5, name.size() - 6) : name;
  ColumnSpec spec{ValueType::kInt32, list};
  if (type == "int32") {
    spec.type = ValueType::kInt32;
  } else if (type == "int64") {
    spec.type = ValueType::kInt64;
  } else if (type == "float32") {
    spec.type = ValueType::kFloat32;
  } else if (type == "float64") {
    spec.type = ValueType::kFloat64;
  } else if (type == "str" && !list) {
    spec.type = ValueType::kString;
  } else if (type == "bytes" && !list) {
    spec.type = ValueType::kBinary;
  } else {
    throw std::invalid_argument("unsupported Parquet column spec: " + name);
  }
  return spec;
}

RowGroupDecoder::RowGroupDecoder(const std::string& path,
                                 std::vector<std::optional<ColumnSpec>> specs)
    : reader_(parquet::ParquetFileReader::OpenFile(path, /*memory_map=*/true)),
      specs_(std::move(specs)) {
  const parquet::SchemaDescriptor* schema = reader_->metadata()->schema();
  if (schema->num_columns() != static_cast<int>(specs_.size())) {
    throw std::invalid_argument("the file's leaf columns do not match the column specs");
  }
  for (int j = 0; j < schema->num_columns(); ++j) {
    const parquet::ColumnDescriptor* column = schema->Column(j);
    if (specs_[j] && (column->physical_type() != PhysicalType(specs_[j]->type) ||
                      column->max_repetition_level() != (specs_[j]->list ? 1 : 0))) {
      throw std::invalid_argument("column " + column->path()->ToDotString() +
                                  " does not match its spec");
    }
  }
}

RowGroupDecoder::~RowGroupDecoder() = default;

int RowGroupDecoder::num_row_groups() const { return reader_->metadata()->num_row_groups(); }

std::vector<std::optional<DecodedColumn>> RowGroupDecoder::Decode(int g) {
  std::lock_guard lock(mu_);
  if (g < 0 || g >= num_row_groups()) throw std::out_of_range("row group out of range");
  std::shared_ptr<parquet::RowGroupReader> group = reader_->RowGroup(g);
  const int64_t rows = group->metadata()->num_rows();
  std::vector<std::optional<DecodedColumn>> columns(specs_.size());
  Levels levels;
  for (int j = 0; j < static_cast<int>(specs_.size()); ++j) {
    if (!specs_[j] || rows == 0) continue;
    DecodedColumn out;
    out.spec = *specs_[j];
    out.rows = rows;
    const std::unique_ptr<parquet::ColumnChunkMetaData> chunk = group->metadata()->ColumnChunk(j);
    const int64_t levels_total = chunk->num_values();
    std::shared_ptr<parquet::ColumnReader> column = group->Column(j);
    const bool ok = VisitValueType(out.spec.type, [&](auto tag) {
      if constexpr (std::is_same_v<decltype(tag), std::nullptr_t>) {
        // Uncompressed pages: the values and their lengths (or dictionary and indices).
        return ReadText(*column, levels_total, chunk->total_uncompressed_size(), levels, out);
      } else {
        using DType = ParquetType<typename decltype(tag)::type>;
        return ReadNumeric<DType>(*column, levels_total, levels, out);
      }
    });
    if (ok) columns[j] = std::move(out);
  }
  return columns;
}

}  // namespace spelt::parquet_native
