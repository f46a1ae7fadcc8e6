// TFRecordSource (spelt/tfrecord_source.h).
#include "spelt/tfrecord_source.h"

#include <stdexcept>

#include "spelt/tfrecord.h"
#include "tfrecord/format.h"
#include "tfrecord/index.h"
#include "tfrecord/input_stream.h"

namespace spelt {

using internal::tfrecord::kFooterSize;
using internal::tfrecord::kHeaderSize;

namespace {

// Consecutive records are read together up to this many bytes.
constexpr uint64_t kMaxRunBytes = uint64_t{4} << 20;

}  // namespace

struct TFRecordSource::File {
  explicit File(std::unique_ptr<RandomAccessFile> f) : file(std::move(f)) {}
  std::unique_ptr<RandomAccessFile> file;
  std::vector<uint64_t> offsets;  // IndexRecords: one per record, then the file size
};

TFRecordSource::TFRecordSource(std::vector<std::string> paths, std::string repr,
                               const TFRecordIndexProgress& progress, const FileSystemPtr& fs)
    : paths_(std::move(paths)), repr_(std::move(repr)) {
  if (paths_.empty()) throw std::invalid_argument("TFRecordSource: no files given");
  for (const std::string& path : paths_) {
    files_.push_back(std::make_unique<File>(OpenRandomAccessFile(path, fs)));
  }
  uint64_t total_bytes = 0, done_before = 0;
  for (const auto& f : files_) total_bytes += f->file->size();
  for (const auto& f : files_) {
    // The compression is detected from the index scan's first window.
    internal::SequentialReads reads(*f->file);
    const TFRecordCompression compression =
        internal::tfrecord::DetectCompression(*f->file, &reads);
    if (compression != TFRecordCompression::kNone) {
      throw std::invalid_argument(
          f->file->path() + ": a " + std::string(TFRecordCompressionName(compression)) +
          "-compressed TFRecord file has no random access; read it in order with "
          "TFRecordIterDataset, or write it uncompressed");
    }
    std::function<void(uint64_t)> file_progress;
    if (progress) {
      file_progress = [&](uint64_t done) { progress(done_before + done, total_bytes); };
    }
    f->offsets = internal::tfrecord::IndexRecords(*f->file, reads, file_progress);
    done_before += f->file->size();
    index_.AddFile(static_cast<int64_t>(f->offsets.size() - 1));
  }
}

TFRecordSource::~TFRecordSource() = default;

TFRecordSource::Location TFRecordSource::Locate(int64_t index) const {
  const auto [f, record] = index_.Locate(index, "TFRecordSource", repr_);
  const auto j = static_cast<size_t>(record);
  const std::vector<uint64_t>& offsets = files_[f]->offsets;
  return {f, offsets[j], offsets[j + 1] - offsets[j] - kHeaderSize - kFooterSize};
}

Value TFRecordSource::Get(int64_t index) const {
  std::vector<Value> out;
  ReadRun(index, 1, &out);
  return std::move(out.front());
}

void TFRecordSource::ReadRun(int64_t first, int64_t count, std::vector<Value>* out,
                             const std::string* bytes) const {
  const Location start = Locate(first);
  const File& f = *files_[start.file];
  const uint64_t end = f.offsets[static_cast<size_t>(first - index_.Start(start.file) + count)];
  if (count == 1 && bytes == nullptr) {  // straight into the record's own memory: one copy
    std::string record(start.length + kFooterSize, '\0');
    f.file->ReadAt(start.offset + kHeaderSize, record.data(), record.size());
    if (!internal::tfrecord::FooterMatches(std::string_view(record.data(), start.length),
                                           record.data() + start.length)) {
      internal::tfrecord::ThrowCorrupt(
          f.file->path(), start.offset,
          "the masked CRC32C of the " + std::to_string(start.length) +
              "-byte payload does not match (record key " + std::to_string(first) + " of " +
              repr_ + ")");
    }
    record.resize(start.length);
    out->push_back(Value::Bytes(std::move(record)));
    return;
  }
  thread_local std::string read;
  if (bytes == nullptr) {
    read.resize(end - start.offset);
    f.file->ReadAt(start.offset, read.data(), read.size());
    bytes = &read;
  }
  for (int64_t k = 0; k < count; ++k) {
    const size_t j = static_cast<size_t>(first - index_.Start(start.file) + k);
    const uint64_t at = f.offsets[j] - start.offset + kHeaderSize;
    const uint64_t length = f.offsets[j + 1] - f.offsets[j] - kHeaderSize - kFooterSize;
    const std::string_view payload(bytes->data() + at, length);
    if (!internal::tfrecord::FooterMatches(payload, payload.data() + length)) {
      throw std::runtime_error("TFRecordSource: bad record in a run");  // located by GetMany
    }
    out->push_back(Value::Bytes(std::string(payload)));
  }
}

std::vector<TFRecordSource::Run> TFRecordSource::PlanRuns(std::span<const int64_t> indices) const {
  std::vector<Run> runs;
  size_t i = 0;
  while (i < indices.size()) {
    // The longest run of consecutive keys in one file, up to kMaxRunBytes.
    const Location start = Locate(indices[i]);
    const int64_t file_end = index_.End(start.file);
    const std::vector<uint64_t>& offsets = files_[start.file]->offsets;
    const auto end_of = [&](int64_t key) {
      return offsets[static_cast<size_t>(key - index_.Start(start.file)) + 1];
    };
    size_t n = 1;
    while (i + n < indices.size() && indices[i + n] == indices[i] + static_cast<int64_t>(n) &&
           indices[i + n] < file_end && end_of(indices[i + n]) - start.offset <= kMaxRunBytes) {
      ++n;
    }
    runs.push_back({i, static_cast<int64_t>(n)});
    i += n;
  }
  return runs;
}

std::vector<std::string> TFRecordSource::FetchRuns(std::span<const int64_t> indices,
                                                   const std::vector<Run>& runs) const {
  std::vector<std::string> bytes(runs.size());
  std::vector<std::vector<ReadRequest>> by_file(files_.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    const int64_t first = indices[runs[r].begin];
    const Location start = Locate(first);
    const std::vector<uint64_t>& offsets = files_[start.file]->offsets;
    const uint64_t end = offsets[static_cast<size_t>(first - index_.Start(start.file) + runs[r].count)];
    bytes[r].resize(end - start.offset);
    by_file[start.file].push_back({start.offset, end - start.offset, bytes[r].data()});
  }
  for (size_t f = 0; f < files_.size(); ++f) {
    if (!by_file[f].empty()) files_[f]->file->ReadMany(by_file[f]);
  }
  return bytes;
}

void TFRecordSource::GetMany(std::span<const int64_t> indices, std::vector<Value>* out) const {
  out->reserve(out->size() + indices.size());
  const size_t size_before = out->size();
  try {
    const std::vector<Run> runs = PlanRuns(indices);
    const std::vector<std::string> fetched =
        files_.front()->file->HighLatency() ? FetchRuns(indices, runs)
                                            : std::vector<std::string>();
    for (size_t r = 0; r < runs.size(); ++r) {
      ReadRun(indices[runs[r].begin], runs[r].count, out, fetched.empty() ? nullptr : &fetched[r]);
    }
  } catch (const std::exception&) {
    // Read again one at a time, so that the error is Get()'s for the first bad record and
    // *out holds the records before it.
    out->erase(out->begin() + static_cast<std::ptrdiff_t>(size_before), out->end());
    RandomAccessSource::GetMany(indices, out);
  }
}

}  // namespace spelt
