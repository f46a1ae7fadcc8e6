// libFuzzer target for the TFRecord reader, writer and random-access source. The first input
// byte selects the compression the reader is told (bits 0-1: detect, none, GZIP, ZLIB); the
// rest is the file. The target reads every record, then seeks back to each of the last four
// records' offsets and reads the rest again (same records), reads it again with read_ahead
// (same records, offsets and end), indexes the file with TFRecordSource and reads its
// records one by one and batched (same records), and writes the records it read to a new
// file with TFRecordWriter (bit 2 of the first byte: gzip) and reads that back (same records).
// A file may be rejected only with spelt::FileFormatError (CorruptFileError), or by
// TFRecordSource with std::invalid_argument for a compressed file; any other exception, a
// crash, a sanitizer report, a hang or an allocation over -malloc_limit_mb is a bug.
//
// Build and run: `make fuzz` (CMake option SPELT_BUILD_FUZZERS, clang, ASan + UBSan), or
//   CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DSPELT_BUILD_FUZZERS=ON
//   cmake --build build/fuzz --target tfrecord_fuzz
//   build/fuzz/tfrecord_fuzz -max_len=70000 -timeout=10 CORPUS_DIR
// (cpp/fuzz/tfrecord_seed_corpus.py writes small valid files as seeds).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "spelt/errors.h"
#include "spelt/tfrecord.h"
#include "spelt/tfrecord_source.h"

namespace {

// A memfd holding `bytes`, closed on destruction; path() names it.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) : fd_(memfd_create("tfrecord_fuzz", MFD_CLOEXEC)) {
    for (size_t written = 0; fd_ >= 0 && written < size;) {
      const ssize_t n = write(fd_, data + written, size - written);
      if (n <= 0) __builtin_trap();
      written += static_cast<size_t>(n);
    }
  }
  ~MemFile() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

// Reads `reader` to the end, appending the records and each record's offset; false if it
// stopped at a FileFormatError (after which an uncompressed reader must be at that record).
bool ReadAll(spelt::TFRecordReader& reader, std::vector<std::string>* records,
             std::vector<uint64_t>* offsets) {
  std::string record;
  try {
    for (;;) {
      const uint64_t offset = reader.Tell();
      if (!reader.ReadRecord(&record)) return true;
      offsets->push_back(offset);
      records->push_back(record);
    }
  } catch (const spelt::FileFormatError& e) {
    Check(reader.Tell() == e.offset() || reader.compression() != spelt::TFRecordCompression::kNone);
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const MemFile file(data + 1, size - 1);
  if (!file.ok()) return 0;
  std::optional<spelt::TFRecordCompression> compression;
  if ((flags & 3) != 0) compression = static_cast<spelt::TFRecordCompression>((flags & 3) - 1);

  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  const auto reader = spelt::TFRecordReader::Open(file.path(), compression);
  const bool whole = ReadAll(*reader, &records, &offsets);
  // Seeking back to any record offset reads the same records again (the last few only: a
  // compressed stream decompresses from the start on each backward seek).
  for (size_t k = offsets.size() > 4 ? offsets.size() - 4 : 0; k < offsets.size(); ++k) {
    reader->Seek(offsets[k]);
    std::vector<std::string> again;
    std::vector<uint64_t> again_offsets;
    ReadAll(*reader, &again, &again_offsets);
    Check(std::equal(again.begin(), again.end(), records.begin() + k, records.end()));
  }

  // Reading ahead (a helper thread, for compressed files) reads the same records and offsets
  // and stops at the same place.
  const auto ahead = spelt::TFRecordReader::Open(file.path(), compression, /*read_ahead=*/true);
  std::vector<std::string> ahead_records;
  std::vector<uint64_t> ahead_offsets;
  Check(ReadAll(*ahead, &ahead_records, &ahead_offsets) == whole);
  Check(ahead_records == records && ahead_offsets == offsets);

  try {
    const spelt::TFRecordSource source({file.path()}, "fuzz");
    // A reader of the same uncompressed file that read it whole saw the same records.
    const bool same = whole && reader->compression() == spelt::TFRecordCompression::kNone;
    Check(!same || source.Length() == static_cast<int64_t>(records.size()));
    std::vector<int64_t> keys(static_cast<size_t>(source.Length()));
    std::iota(keys.begin(), keys.end(), int64_t{0});
    std::vector<spelt::Value> batch;
    try {
      source.GetMany(keys, &batch);
    } catch (const spelt::FileFormatError&) {  // a payload CRC: the records before it came
      Check(!same && batch.size() < keys.size());
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const std::string& got = batch[i].as<spelt::String>().data;
      Check(source.Get(static_cast<int64_t>(i)).as<spelt::String>().data == got);
      Check(!same || got == records[i]);
    }
  } catch (const spelt::FileFormatError&) {
  } catch (const std::invalid_argument&) {  // a compressed file: no random access
    Check(spelt::DetectTFRecordCompression(file.path()) != spelt::TFRecordCompression::kNone);
  }

  // The records read so far survive a round trip through the writer.
  const MemFile copy(nullptr, 0);
  const auto out_compression =
      (flags & 4) ? spelt::TFRecordCompression::kGzip : spelt::TFRecordCompression::kNone;
  const auto writer = spelt::TFRecordWriter::Open(copy.path(), out_compression);
  for (const std::string& r : records) writer->Write(r);
  writer->Close();
  const auto copy_reader = spelt::TFRecordReader::Open(copy.path(), out_compression);
  std::string record;
  for (const std::string& r : records) Check(copy_reader->ReadRecord(&record) && record == r);
  Check(!copy_reader->ReadRecord(&record));
  return 0;
}
