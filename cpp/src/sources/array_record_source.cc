// ArrayRecordSource (spelt/array_record_source.h).
#include "spelt/array_record_source.h"

#include <stdexcept>

#include "spelt/errors.h"
#include "spelt/read_threads.h"

namespace spelt {
namespace {

constexpr const char* kName = "ArrayRecordSource";

}  // namespace

ArrayRecordSource::ArrayRecordSource(std::vector<std::string> paths,
                                     ArrayRecordReaderOptions options, std::string repr,
                                     const FileSystemPtr& fs)
    : paths_(std::move(paths)), repr_(std::move(repr)) {
  if (paths_.empty()) throw std::invalid_argument("ArrayRecordSource: no files given");
  for (const std::string& path : paths_) {
    readers_.push_back(ArrayRecordReader::Open(path, options, fs));
    index_.AddFile(static_cast<int64_t>(readers_.back()->NumRecords()));
  }
}

Value ArrayRecordSource::Get(int64_t index) const {
  const auto [file, record] = index_.Locate(index, kName);
  try {
    return Value::Bytes(readers_[file]->ReadRecord(static_cast<uint64_t>(record)));
  } catch (const CorruptFileError& e) {
    throw CorruptFileError(e.path(), e.offset(), e.detail() + NamingRecord(index));
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(e.path(), e.offset(), e.detail() + NamingRecord(index));
  }
}

std::string ArrayRecordSource::NamingRecord(int64_t index) const {
  return " (reading record key " + std::to_string(index) + " of " + repr_ + ")";
}

std::vector<std::string> ArrayRecordSource::ReadMany(std::span<const int64_t> indices,
                                                     int num_threads) const {
  // Split the request by file, read each file's share in one parallel call, put back in order.
  std::vector<std::vector<uint64_t>> positions(readers_.size());
  std::vector<std::vector<size_t>> slots(readers_.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    const auto [file, record] = index_.Locate(indices[i], kName);
    positions[file].push_back(static_cast<uint64_t>(record));
    slots[file].push_back(i);
  }
  std::vector<std::string> out(indices.size());
  for (size_t f = 0; f < readers_.size(); ++f) {
    if (positions[f].empty()) continue;
    std::vector<std::string> records = readers_[f]->ReadRecords(positions[f], num_threads);
    for (size_t j = 0; j < records.size(); ++j) out[slots[f][j]] = std::move(records[j]);
  }
  return out;
}

void ArrayRecordSource::GetMany(std::span<const int64_t> indices,
                                std::vector<Value>* out) const {
  std::vector<std::string> records;
  try {
    records = ReadMany(indices, ReadThreads());
  } catch (const std::exception&) {
    RandomAccessSource::GetMany(indices, out);  // one at a time: throws at the first bad record
    return;
  }
  out->reserve(out->size() + records.size());
  for (std::string& r : records) out->push_back(Value::Bytes(std::move(r)));
}

}  // namespace spelt
