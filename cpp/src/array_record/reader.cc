// ArrayRecordReader: opens a file by reading its postscript (the last block) and footer chunk,
// keeps the chunk offsets in memory, and reads records by decoding their chunk (through a
// small LRU cache). Spec: arrayrecord-format.md §2.3.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "array_record/chunk_cache.h"
#include "array_record/layout.h"
#include "array_record/read_plan.h"
#include "array_record/record_locations.h"
#include "riegeli/chunk_reader.h"
#include "riegeli/simple_chunk.h"
#include "spelt/array_record.h"
#include "spelt/blocking_wait.h"
#include "base/ordered_window.h"
#include "base/thread_pool.h"

namespace spelt {
namespace {

using internal::array_record::ChunkCache;
using internal::array_record::FooterEntry;
using internal::array_record::FooterMetadata;
using internal::array_record::Postscript;
using internal::array_record::ReadPlan;
using internal::array_record::RecordLocations;
using internal::Buffer;
using internal::riegeli::Chunk;
using internal::riegeli::ChunkType;
using internal::riegeli::DecodedChunk;
using internal::riegeli::FormatError;
using internal::riegeli::kBlockSize;

using ChunkPtr = ChunkCache::ChunkPtr;

// A chunk may decode to at most this many times the file size. Real data never comes close,
// but a corrupt size field could otherwise make the reader allocate without bound.
constexpr uint64_t kMaxExpansion = 4096;

// ReadRecords() reads neighbouring chunks with one pread of up to this many bytes.
constexpr uint64_t kMaxRunBytes = uint64_t{1} << 20;

// The first bytes of every Riegeli file: a block header and the file signature chunk.
constexpr uint64_t kFileSignatureSize =
    internal::riegeli::kBlockHeaderSize + internal::riegeli::kChunkHeaderSize;
std::string FileSignature() {
  using internal::riegeli::BlockHeader;
  using internal::riegeli::ChunkHeader;
  const auto block_header = BlockHeader{0, kFileSignatureSize}.Encode();
  const auto chunk_header = ChunkHeader::For(ChunkType::kFileSignature, {}, 0, 0).Encode();
  return std::string(block_header.begin(), block_header.end()) +
         std::string(chunk_header.begin(), chunk_header.end());
}

std::string Num(uint64_t n) { return std::to_string(n); }

std::string Hex(uint64_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  do {
    hex.insert(hex.begin(), kDigits[n & 15]);
    n >>= 4;
  } while (n != 0);
  return "0x" + hex;
}

class ArrayRecordReaderImpl final : public ArrayRecordReader {
 public:
  ArrayRecordReaderImpl(const std::string& path, ArrayRecordReaderOptions options,
                        const FileSystemPtr& fs)
      : options_(options),
        file_(OpenRandomAccessFile(path, fs)),
        max_decoded_size_(std::min(file_->size(), UINT64_MAX / kMaxExpansion) * kMaxExpansion),
        cache_(options.cache_chunks) {
    ReadIndex();
    if (group_size_ > 1) locations_ = std::make_unique<RecordLocations>(NumChunks());
  }

  const std::string& path() const override { return file_->path(); }
  uint64_t NumRecords() const override { return num_records_; }
  uint64_t NumChunks() const override { return chunk_offsets_.size() - 1; }
  uint64_t GroupSize() const override { return group_size_; }

  std::string ReadRecord(uint64_t index) const override {
    CheckIndex(index);
    const uint64_t c = index / group_size_, r = index % group_size_;
    if (const ChunkPtr cached = cache_.Find(c)) return std::string(cached->record(r));
    if (const RecordLocations::Chunk* located = InPlace(c, 1)) {
      std::string record;
      ReadLocated(c, *located, r, record);
      return record;
    }
    return std::string(GetChunk(c)->record(r));
  }

  std::vector<std::string> ReadRecords(std::span<const uint64_t> indices,
                                       int num_threads) const override;

  void ForEachRecord(uint64_t begin, uint64_t end,
                     const std::function<void(uint64_t, std::string_view)>& visit,
                     int num_threads) const override;

  ArrayRecordInfo Info() const override;

 private:
  // A ReadRecords() call: its plan, its result, and the state its workers share.
  struct Batch {
    const ArrayRecordReaderImpl* reader;  // used only while a run is left to read
    std::span<const uint64_t> indices;
    ReadPlan plan;
    std::vector<std::string> records;  // the result, by position in `indices`
    // By run: its bytes, read ahead with one ReadMany (high-latency files; null for a run
    // served from the cache or in place). Empty for other files.
    std::vector<Buffer> fetched;
    // By run: its records were read in place by that ReadMany, straight into `records`.
    std::vector<bool> read_in_place;
    std::atomic<size_t> next_run{0};
    std::atomic<size_t> runs_done{0};
    std::atomic<bool> failed{false};
    std::mutex mu;
    std::condition_variable all_done;
    std::exception_ptr error;  // guarded by mu; the first error
  };

  [[noreturn]] void Corrupt(uint64_t offset, const std::string& detail) const {
    throw CorruptFileError(path(), offset, detail);
  }

  void CheckIndex(uint64_t index) const {
    if (index >= num_records_) {
      throw std::out_of_range(path() + ": record index " + Num(index) +
                              " out of range; the file has " + Num(num_records_) + " records");
    }
  }

  void ReadIndex();
  void CheckSignature() const;
  uint64_t ReadPostscript() const;
  void ReadFooter(uint64_t footer_offset);

  // Throws unless `chunk`, which begins at `begin`, is a simple chunk.
  void CheckRecordsChunk(const Chunk& chunk, uint64_t begin) const {
    CheckRecordsChunk(chunk.header, begin);
  }
  void CheckRecordsChunk(const internal::riegeli::ChunkHeader& header, uint64_t begin) const;
  // Throws unless `header` is that of data chunk `c` as the footer describes it.
  void CheckDataChunk(uint64_t c, const internal::riegeli::ChunkHeader& header) const;
  DecodedChunk Decode(Chunk chunk, uint64_t begin) const;
  // The chunk at [begin, end), decoded.
  DecodedChunk ReadRecordsChunk(uint64_t begin, uint64_t end) const;
  uint64_t RecordsInChunk(uint64_t c) const {
    return c + 1 < NumChunks() ? group_size_ : num_records_ - c * group_size_;
  }
  // Data chunk `c` from its bytes.
  ChunkPtr DecodeDataChunk(uint64_t c, Chunk chunk) const;
  // Data chunk `c`, from the cache or the file (then cached).
  ChunkPtr GetChunk(uint64_t c) const;

  // Remembers where the records of data chunk `c` lie if it is uncompressed (its `values`, all
  // records concatenated, point into its logical `data`) and holds several records.
  void NoteLocations(uint64_t c, std::string_view data, std::string_view values,
                     const std::vector<uint64_t>& ends) const;
  // Where the records of data chunk `c` lie, if known.
  const RecordLocations::Chunk* Located(uint64_t c) const {
    return locations_ ? locations_->Find(c) : nullptr;
  }
  // Where the records of data chunk `c` lie, if known and if reading `requests` of them in
  // place (a pread each) is cheaper than reading and checking the whole chunk: a pread is
  // counted as reading kInPlaceReadCost bytes.
  const RecordLocations::Chunk* InPlace(uint64_t c, size_t requests) const {
    constexpr uint64_t kInPlaceReadCost = 4096;
    if (requests * kInPlaceReadCost >= chunk_offsets_[c + 1] - chunk_offsets_[c]) return nullptr;
    return Located(c);
  }
  // Reads record `r` of data chunk `c`, whose records lie at `located`, into `out`: only the
  // record's bytes are read (its chunk's hashes were checked when the locations were noted).
  void ReadLocated(uint64_t c, const RecordLocations::Chunk& located, uint64_t r,
                   std::string& out) const;
  // Sizes `out` to record `r` of data chunk `c` (whose records lie at `located`) and calls
  // `piece` with each read that fills it: its bytes between block headers.
  void ForEachLocatedPiece(uint64_t c, const RecordLocations::Chunk& located, uint64_t r,
                           std::string& out,
                           const std::function<void(const ReadRequest&)>& piece) const;

  // The records of data chunk `c`, whose bytes are at `bytes` (read from the file at its
  // offset; rearranged in place): their concatenation (pointing into `bytes` or into
  // `values_scratch`) and their ends in `ends`. `only`, if given, is where a chunk of one
  // record decompresses to. Notes the chunk's record locations.
  std::string_view DecodeInPlace(uint64_t c, char* bytes,
                                 internal::ScratchBuffer& sizes_scratch,
                                 internal::ScratchBuffer& values_scratch,
                                 std::vector<uint64_t>& ends, std::string* only = nullptr) const;
  // Reads the bytes of every run of `batch` that needs a read with one ReadMany, so that a
  // remote file has them all in flight at once (into batch.fetched; the records of a run read
  // in place straight into batch.records).
  void FetchRuns(Batch& batch) const;
  // Reads run `k` of `batch`.
  void ReadRun(Batch& batch, size_t k) const;
  // Reads runs of `batch` until none is left. Static: a helper may start after the call (and
  // the reader) is gone, and then touches only `batch`.
  static void Work(Batch& batch);

  const ArrayRecordReaderOptions options_;
  const internal::riegeli::ChunkChecks checks_{options_.verify_header_hashes,
                                               options_.verify_data_hash};
  const std::unique_ptr<RandomAccessFile> file_;
  const uint64_t max_decoded_size_;
  uint64_t num_records_ = 0;
  uint64_t group_size_ = 0;
  uint64_t decoded_bytes_ = 0;
  std::string writer_options_;
  std::vector<uint64_t> chunk_offsets_;  // one per data chunk, then the footer offset
  std::vector<uint64_t> decoded_sizes_;  // one per data chunk
  mutable ChunkCache cache_;
  std::unique_ptr<RecordLocations> locations_;  // null when chunks hold one record each
};

void ArrayRecordReaderImpl::ReadIndex() {
  const uint64_t size = file_->size();
  if (size < kBlockSize) {
    Corrupt(size, size == 0 ? "the file is empty"
                            : "the file has " + Num(size) + " bytes; an ArrayRecord file has at " +
                                  "least " + Num(kBlockSize));
  }
  if (size % kBlockSize != 0) {
    Corrupt(size, "the file size " + Num(size) + " is not a multiple of " + Num(kBlockSize) +
                      " (truncated?)");
  }
  CheckSignature();
  ReadFooter(ReadPostscript());
}

void ArrayRecordReaderImpl::CheckSignature() const {
  static const std::string kSignature = FileSignature();
  std::string head(kFileSignatureSize, '\0');
  file_->ReadAt(0, head.data(), head.size());
  if (head != kSignature) Corrupt(0, "no Riegeli file signature: not an ArrayRecord file");
}

// Returns the footer offset.
uint64_t ArrayRecordReaderImpl::ReadPostscript() const {
  const uint64_t begin = file_->size() - kBlockSize;
  const DecodedChunk chunk = ReadRecordsChunk(begin, file_->size());
  if (chunk.num_records() == 0) Corrupt(begin, "the postscript chunk has no records");
  Postscript postscript;
  try {
    postscript = internal::array_record::ParsePostscript(chunk.record(0));
  } catch (const FormatError& e) {
    Corrupt(begin, e.what());
  }
  if (postscript.magic != internal::array_record::kMagic) {
    Corrupt(begin, "postscript magic " + Hex(postscript.magic) + " is not ArrayRecord's " +
                       Hex(internal::array_record::kMagic) + ": not an ArrayRecord file");
  }
  if (postscript.footer_offset < kFileSignatureSize || postscript.footer_offset >= begin) {
    Corrupt(begin, "footer offset " + Num(postscript.footer_offset) + " is outside [" +
                       Num(kFileSignatureSize) + ", " + Num(begin) + ")");
  }
  return postscript.footer_offset;
}

void ArrayRecordReaderImpl::ReadFooter(uint64_t footer_offset) {
  const DecodedChunk footer = ReadRecordsChunk(footer_offset, file_->size() - kBlockSize);
  const auto corrupt = [&](const std::string& detail) {
    Corrupt(footer_offset, "footer: " + detail);
  };
  if (footer.num_records() == 0) corrupt("no records");
  FooterMetadata metadata;
  std::vector<FooterEntry> entries(footer.num_records() - 1);
  try {
    metadata = internal::array_record::ParseFooterMetadata(footer.record(0));
    for (size_t i = 0; i < entries.size(); ++i) {
      entries[i] = internal::array_record::ParseFooterEntry(footer.record(i + 1));
    }
  } catch (const FormatError& e) {
    corrupt(e.what());
  }
  if (metadata.version != internal::array_record::kVersion) {
    throw UnsupportedError(path(), footer_offset,
                           "layout version " + Num(metadata.version) + " (only 1 is supported)");
  }
  if (metadata.num_chunks != entries.size()) {
    corrupt("states " + Num(metadata.num_chunks) + " chunks but lists " + Num(entries.size()));
  }
  writer_options_ = std::move(metadata.writer_options);
  if (!entries.empty()) group_size_ = entries[0].num_records;
  chunk_offsets_.reserve(entries.size() + 1);
  decoded_sizes_.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const FooterEntry& e = entries[i];
    const uint64_t end = i + 1 < entries.size() ? entries[i + 1].chunk_offset : footer_offset;
    const auto bad_chunk = [&](const std::string& detail) {
      corrupt("chunk " + Num(i) + " at offset " + Num(e.chunk_offset) + " " + detail);
    };
    const uint64_t min_offset = i == 0 ? kFileSignatureSize : chunk_offsets_.back() + 1;
    if (e.chunk_offset < min_offset || end <= e.chunk_offset) {
      bad_chunk("is not between its neighbours");
    }
    const bool last = i + 1 == entries.size();
    if (e.num_records == 0 || e.num_records > group_size_ ||
        (!last && e.num_records != group_size_)) {
      bad_chunk("holds " + Num(e.num_records) + " records; the group size is " +
                Num(group_size_));
    }
    // A chunk spans at least one byte per record.
    if (e.num_records > end - e.chunk_offset) bad_chunk("is too short for its records");
    if (e.decoded_data_size > max_decoded_size_ ||
        decoded_bytes_ + e.decoded_data_size < decoded_bytes_) {
      bad_chunk("states an impossible decoded size " + Num(e.decoded_data_size));
    }
    decoded_bytes_ += e.decoded_data_size;
    num_records_ += e.num_records;  // at most the file size: no overflow
    chunk_offsets_.push_back(e.chunk_offset);
    decoded_sizes_.push_back(e.decoded_data_size);
  }
  chunk_offsets_.push_back(footer_offset);
  if (num_records_ != metadata.num_records) {
    corrupt("states " + Num(metadata.num_records) + " records but its chunks hold " +
            Num(num_records_));
  }
}

void ArrayRecordReaderImpl::CheckRecordsChunk(const internal::riegeli::ChunkHeader& header,
                                              uint64_t begin) const {
  if (header.chunk_type == ChunkType::kTransposed) {
    throw UnsupportedError(path(), begin,
                           "transposed chunks (written with the transpose option) are not "
                           "supported");
  }
  if (header.chunk_type != ChunkType::kSimple) {
    Corrupt(begin, "chunk of type " + Hex(static_cast<uint8_t>(header.chunk_type)) +
                       " where a chunk of records was expected");
  }
}

DecodedChunk ArrayRecordReaderImpl::Decode(Chunk chunk, uint64_t begin) const {
  try {
    return internal::riegeli::DecodeSimpleChunk(std::move(chunk), max_decoded_size_);
  } catch (const FormatError& e) {
    Corrupt(begin, e.what());
  }
}

DecodedChunk ArrayRecordReaderImpl::ReadRecordsChunk(uint64_t begin, uint64_t end) const {
  Chunk chunk = internal::riegeli::ReadChunk(*file_, begin, end, checks_);
  CheckRecordsChunk(chunk, begin);
  return Decode(std::move(chunk), begin);
}

void ArrayRecordReaderImpl::CheckDataChunk(uint64_t c,
                                           const internal::riegeli::ChunkHeader& header) const {
  const uint64_t begin = chunk_offsets_[c];
  CheckRecordsChunk(header, begin);
  if (header.num_records != RecordsInChunk(c) || header.decoded_data_size != decoded_sizes_[c]) {
    Corrupt(begin, "chunk header states " + Num(header.num_records) + " records of " +
                       Num(header.decoded_data_size) + " bytes; the footer says " +
                       Num(RecordsInChunk(c)) + " of " + Num(decoded_sizes_[c]));
  }
}

ChunkPtr ArrayRecordReaderImpl::DecodeDataChunk(uint64_t c, Chunk chunk) const {
  const uint64_t begin = chunk_offsets_[c];
  CheckDataChunk(c, chunk.header);
  const std::string_view data = chunk.data;  // moves with its storage into the decoded chunk
  auto decoded = std::make_shared<const DecodedChunk>(Decode(std::move(chunk), begin));
  NoteLocations(c, data, decoded->values(), decoded->ends());
  return decoded;
}

void ArrayRecordReaderImpl::NoteLocations(uint64_t c, std::string_view data,
                                          std::string_view values,
                                          const std::vector<uint64_t>& ends) const {
  const bool in_data = values.data() >= data.data() &&
                       values.data() + values.size() <= data.data() + data.size();
  if (!locations_ || !in_data || Located(c) != nullptr) return;
  locations_->Insert(c, {internal::riegeli::kChunkHeaderSize + static_cast<uint64_t>(values.data() - data.data()),
                         ends});
}

void ArrayRecordReaderImpl::ReadLocated(uint64_t c, const RecordLocations::Chunk& located,
                                        uint64_t r, std::string& out) const {
  ForEachLocatedPiece(c, located, r, out, [&](const ReadRequest& piece) {
    file_->ReadAt(piece.offset, piece.dst, piece.length);
  });
}

void ArrayRecordReaderImpl::ForEachLocatedPiece(
    uint64_t c, const RecordLocations::Chunk& located, uint64_t r, std::string& out,
    const std::function<void(const ReadRequest&)>& piece) const {
  const uint64_t record_begin = r == 0 ? 0 : located.ends[r - 1];
  out.resize(located.ends[r] - record_begin);
  uint64_t offset = located.values_begin + record_begin;  // logical, from the chunk's start
  for (size_t done = 0; done < out.size();) {
    // Up to the next block header.
    const uint64_t position = internal::riegeli::PhysicalPosition(chunk_offsets_[c], offset);
    const uint64_t n = std::min<uint64_t>(out.size() - done,
                                          internal::riegeli::RemainingInBlock(position));
    piece({position, n, out.data() + done});
    done += n;
    offset += n;
  }
}

ChunkPtr ArrayRecordReaderImpl::GetChunk(uint64_t c) const {
  if (ChunkPtr hit = cache_.Find(c)) return hit;
  ChunkPtr chunk = DecodeDataChunk(
      c, internal::riegeli::ReadChunk(*file_, chunk_offsets_[c], chunk_offsets_[c + 1], checks_));
  cache_.Insert(c, chunk);
  return chunk;
}

std::vector<std::string> ArrayRecordReaderImpl::ReadRecords(std::span<const uint64_t> indices,
                                                            int num_threads) const {
  for (const uint64_t index : indices) CheckIndex(index);
  auto batch = std::make_shared<Batch>();
  batch->reader = this;
  batch->indices = indices;
  batch->plan = internal::array_record::PlanReads(
      indices, group_size_, chunk_offsets_, kMaxRunBytes,
      [&](uint64_t c, size_t requests) {
        return cache_.Find(c) != nullptr || InPlace(c, requests) != nullptr;
      });
  batch->records.resize(indices.size());
  if (file_->HighLatency()) FetchRuns(*batch);
  // The caller works too, so the call finishes even if no helper ever starts.
  const size_t num_runs = batch->plan.runs.size();
  const size_t num_workers = std::min<size_t>(std::max(num_threads, 1), num_runs);
  for (size_t i = 1; i < num_workers; ++i) internal::SharedThreadPool().Submit([batch] { Work(*batch); });
  Work(*batch);
  // Helpers may need what this thread holds to read (a Python-backed file: the GIL).
  BlockingWait([&] {
    std::unique_lock<std::mutex> lock(batch->mu);
    batch->all_done.wait(lock, [&] { return batch->runs_done.load() == num_runs; });
  });
  std::lock_guard<std::mutex> lock(batch->mu);
  if (batch->error) std::rethrow_exception(batch->error);
  return std::move(batch->records);
}

void ArrayRecordReaderImpl::FetchRuns(Batch& batch) const {
  const ReadPlan& plan = batch.plan;
  batch.fetched.resize(plan.runs.size());
  batch.read_in_place.assign(plan.runs.size(), false);
  std::vector<ReadRequest> requests;
  for (size_t k = 0; k < plan.runs.size(); ++k) {
    const ReadPlan::Run& run = plan.runs[k];
    const ReadPlan::Group& first = plan.groups[run.begin];
    if (run.end - run.begin == 1 && cache_.Find(first.chunk) != nullptr) continue;
    if (const RecordLocations::Chunk* located =
            run.end - run.begin == 1 ? InPlace(first.chunk, first.end - first.begin)
                                     : nullptr) {
      // Only the records' bytes, into the results.
      batch.read_in_place[k] = true;
      for (size_t i = first.begin; i < first.end; ++i) {
        const size_t position = plan.order[i];
        ForEachLocatedPiece(first.chunk, *located, batch.indices[position] % group_size_,
                            batch.records[position],
                            [&](const ReadRequest& piece) { requests.push_back(piece); });
      }
      continue;
    }
    const uint64_t first_chunk = first.chunk;
    const uint64_t begin = chunk_offsets_[first_chunk];
    const uint64_t size = chunk_offsets_[first_chunk + (run.end - run.begin)] - begin;
    batch.fetched[k] = Buffer(size);
    requests.push_back({begin, size, batch.fetched[k].data()});
  }
  file_->ReadMany(requests);
}

void ArrayRecordReaderImpl::ReadRun(Batch& batch, size_t k) const {
  const ReadPlan& plan = batch.plan;
  const ReadPlan::Run& run = plan.runs[k];
  char* const fetched = batch.fetched.empty() ? nullptr : batch.fetched[k].data();
  const auto for_each_request = [&](const ReadPlan::Group& group, auto fn) {
    for (size_t i = group.begin; i < group.end; ++i) {
      const size_t position = plan.order[i];
      fn(batch.indices[position] % group_size_, batch.records[position]);
    }
  };
  if (!batch.read_in_place.empty() && batch.read_in_place[k]) return;  // by FetchRuns
  const ReadPlan::Group& first = plan.groups[run.begin];
  if (run.end - run.begin == 1 && fetched == nullptr) {  // from the cache, or read in place
    if (const ChunkPtr cached = cache_.Find(first.chunk)) {
      return for_each_request(first, [&](uint64_t r, std::string& out) {
        out = std::string(cached->record(r));
      });
    }
    if (const RecordLocations::Chunk* located =
            InPlace(first.chunk, first.end - first.begin)) {
      return for_each_request(first, [&](uint64_t r, std::string& out) {
        ReadLocated(first.chunk, *located, r, out);
      });
    }
  }
  // Chunks first.chunk, first.chunk + 1, ...: one pread into a per-thread buffer that is
  // reused from run to run. Each chunk is decoded in that buffer and its records copied
  // straight out of it (or out of a reused decompression buffer). The last chunk is also
  // cached if it holds other records and they cannot be read in place: a read of the records
  // that follow is the likeliest next.
  thread_local internal::ScratchBuffer run_scratch, sizes_scratch, values_scratch;
  thread_local std::vector<uint64_t> ends;
  const uint64_t first_chunk = first.chunk;
  const uint64_t last_chunk = first_chunk + (run.end - run.begin) - 1;
  const uint64_t begin = chunk_offsets_[first_chunk];
  char* bytes = fetched;
  if (bytes == nullptr) {
    bytes = run_scratch.Get(chunk_offsets_[last_chunk + 1] - begin);
    file_->ReadAt(begin, bytes, chunk_offsets_[last_chunk + 1] - begin);
  }
  for (size_t g = run.begin; g < run.end; ++g) {
    const uint64_t c = first_chunk + (g - run.begin);
    const ReadPlan::Group& group = plan.groups[g];
    // A chunk of one record read once decodes straight into the result.
    std::string* const only = RecordsInChunk(c) == 1 && group.end - group.begin == 1
                                  ? &batch.records[plan.order[group.begin]]
                                  : nullptr;
    const std::string_view values = DecodeInPlace(c, bytes + (chunk_offsets_[c] - begin),
                                                  sizes_scratch, values_scratch, ends, only);
    for_each_request(group, [&](uint64_t r, std::string& out) {
      if (values.data() == out.data()) return;  // decoded there
      const uint64_t record_begin = r == 0 ? 0 : ends[r - 1];
      out.assign(values.data() + record_begin, ends[r] - record_begin);
    });
    if (c == last_chunk && ends.size() > 1 && cache_.capacity() > 0 &&
        InPlace(c, 1) == nullptr) {
      Buffer storage(values.size());
      std::memcpy(storage.data(), values.data(), values.size());
      const std::string_view kept(storage.data(), values.size());
      cache_.Insert(c, std::make_shared<const DecodedChunk>(std::move(storage), kept, ends));
    }
  }
  run_scratch.Trim(internal::riegeli::kMaxKeptScratch);
  sizes_scratch.Trim(internal::riegeli::kMaxKeptScratch);
  values_scratch.Trim(internal::riegeli::kMaxKeptScratch);
}

std::string_view ArrayRecordReaderImpl::DecodeInPlace(
    uint64_t c, char* bytes, internal::ScratchBuffer& sizes_scratch,
    internal::ScratchBuffer& values_scratch, std::vector<uint64_t>& ends,
    std::string* only) const {
  const internal::riegeli::ChunkView chunk = internal::riegeli::ParseChunkInPlace(
      path(), chunk_offsets_[c], bytes, chunk_offsets_[c + 1] - chunk_offsets_[c], checks_);
  CheckDataChunk(c, chunk.header);
  std::string_view values;
  try {
    values = only != nullptr
                 ? internal::riegeli::DecodeSimpleChunkRecords(
                       chunk.header, chunk.data, max_decoded_size_, sizes_scratch, *only, ends)
                 : internal::riegeli::DecodeSimpleChunkRecords(
                       chunk.header, chunk.data, max_decoded_size_, sizes_scratch,
                       values_scratch, ends);
  } catch (const FormatError& e) {
    Corrupt(chunk_offsets_[c], e.what());
  }
  NoteLocations(c, chunk.data, values, ends);
  return values;
}

void ArrayRecordReaderImpl::ForEachRecord(
    uint64_t begin, uint64_t end, const std::function<void(uint64_t, std::string_view)>& visit,
    int num_threads) const {
  if (begin > end || end > num_records_) {
    throw std::out_of_range(path() + ": records [" + Num(begin) + ", " + Num(end) +
                            ") out of range; the file has " + Num(num_records_) + " records");
  }
  if (begin == end) return;
  // Runs: the chunks [runs[k], runs[k + 1]) are read with one pread (at least one chunk, up to
  // kMaxRunBytes).
  std::vector<uint64_t> runs{begin / group_size_};
  const uint64_t stop = (end - 1) / group_size_ + 1;
  for (uint64_t c = runs.back() + 1; c < stop; ++c) {
    if (chunk_offsets_[c + 1] - chunk_offsets_[runs.back()] > kMaxRunBytes) runs.push_back(c);
  }
  runs.push_back(stop);
  // A run read and decoded: its bytes, and per chunk its records' concatenation and ends; the
  // first `decoded` chunks are good, and `error` is that of the next one.
  struct Run {
    internal::ScratchBuffer bytes, sizes;
    std::vector<internal::ScratchBuffer> values;
    std::vector<std::vector<uint64_t>> ends;
    std::vector<std::string_view> records;
    uint64_t decoded = 0;
    std::exception_ptr error;
  };
  // Slots kept per thread; a call made from inside `visit` uses its own.
  struct Slots {
    std::vector<Run> runs;
    bool busy = false;
  };
  thread_local Slots kept;
  Slots own;
  Slots& slots = kept.busy ? own : kept;
  const size_t window = num_threads > 1 ? 2 * static_cast<size_t>(num_threads) : 1;
  if (slots.runs.size() < window) slots.runs.resize(window);
  struct Release {
    Slots& slots;
    ~Release() {
      slots.busy = false;
      for (Run& run : slots.runs) {
        run.bytes.Trim(internal::riegeli::kMaxKeptScratch);
        run.sizes.Trim(internal::riegeli::kMaxKeptScratch);
        for (auto& values : run.values) values.Trim(internal::riegeli::kMaxKeptScratch);
      }
    }
  } release{slots};
  slots.busy = true;
  const auto read_run = [&](size_t slot, size_t k) {
    Run& run = slots.runs[slot];
    const uint64_t first = runs[k], last = runs[k + 1], run_begin = chunk_offsets_[first];
    if (run.values.size() < last - first) {
      run.values.resize(last - first);
      run.ends.resize(last - first);
      run.records.resize(last - first);
    }
    run.decoded = 0;
    run.error = nullptr;
    try {
      char* const bytes = run.bytes.Get(chunk_offsets_[last] - run_begin);
      file_->ReadAt(run_begin, bytes, chunk_offsets_[last] - run_begin);
      for (uint64_t c = first; c < last; ++c, ++run.decoded) {
        run.records[c - first] = DecodeInPlace(c, bytes + (chunk_offsets_[c] - run_begin),
                                               run.sizes, run.values[c - first],
                                               run.ends[c - first]);
      }
    } catch (...) {  // raised once the records before the bad chunk are visited
      run.error = std::current_exception();
    }
  };
  uint64_t index = begin;
  const auto visit_run = [&](size_t slot, size_t k) {
    const Run& run = slots.runs[slot];
    for (uint64_t c = runs[k]; c < runs[k] + run.decoded; ++c) {
      const std::string_view values = run.records[c - runs[k]];
      const std::vector<uint64_t>& ends = run.ends[c - runs[k]];
      for (uint64_t r = index - c * group_size_; r < ends.size() && index < end; ++r, ++index) {
        const uint64_t record_begin = r == 0 ? 0 : ends[r - 1];
        visit(index, values.substr(record_begin, ends[r] - record_begin));
      }
    }
    if (run.error) std::rethrow_exception(run.error);
  };
  // Run k is read into slot k % window, submitted once run k - window was visited.
  internal::OrderedWindow ahead({.max_helpers = std::max(num_threads, 1) - 1});
  for (size_t k = 0, submitted = 0; k + 1 < runs.size(); ++k) {
    for (; submitted + 1 < runs.size() && submitted < k + window; ++submitted) {
      ahead.Submit([&read_run, submitted, window] { read_run(submitted % window, submitted); });
    }
    ahead.Take();
    visit_run(k % window, k);
  }
}

void ArrayRecordReaderImpl::Work(Batch& batch) {
  const size_t num_runs = batch.plan.runs.size();
  for (size_t r; (r = batch.next_run.fetch_add(1)) < num_runs;) {
    if (!batch.failed.load()) {
      try {
        batch.reader->ReadRun(batch, r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(batch.mu);
        if (!batch.error) batch.error = std::current_exception();
        batch.failed = true;
      }
    }
    if (batch.runs_done.fetch_add(1) + 1 == num_runs) {
      std::lock_guard<std::mutex> lock(batch.mu);  // the waiter checks runs_done under mu
      batch.all_done.notify_all();
    }
  }
}

ArrayRecordInfo ArrayRecordReaderImpl::Info() const {
  ArrayRecordInfo info;
  info.path = path();
  info.file_size = file_->size();
  info.num_records = num_records_;
  info.num_chunks = NumChunks();
  info.group_size = group_size_;
  info.writer_options = writer_options_;
  info.decoded_bytes = decoded_bytes_;
  info.footer_offset = chunk_offsets_.back();
  if (NumChunks() > 0) {
    const Chunk chunk =
        internal::riegeli::ReadChunk(*file_, chunk_offsets_[0], chunk_offsets_[1], checks_);
    CheckRecordsChunk(chunk, chunk_offsets_[0]);
    try {
      if (chunk.data.empty()) throw FormatError("simple chunk has no data");
      info.compression = internal::riegeli::CompressionName(
          internal::riegeli::ParseCompressionType(static_cast<uint8_t>(chunk.data[0])));
    } catch (const FormatError& e) {
      Corrupt(chunk_offsets_[0], e.what());
    }
  }
  return info;
}

}  // namespace

std::unique_ptr<ArrayRecordReader> ArrayRecordReader::Open(const std::string& path,
                                                           ArrayRecordReaderOptions options,
                                                           const FileSystemPtr& fs) {
  return std::make_unique<ArrayRecordReaderImpl>(path, options, fs);
}

}  // namespace spelt
