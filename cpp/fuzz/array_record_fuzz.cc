// libFuzzer target for the ArrayRecord reader. The first input byte selects reader options;
// the rest is the file. The target opens it and reads every record (one by one, and batched)
// and Info(). A file may be rejected only with spelt::FileFormatError (CorruptFileError or
// UnsupportedError); any other exception, a crash, a sanitizer report, a hang or an allocation
// over -malloc_limit_mb is a bug.
//
// Build and run: `make fuzz` (CMake option SPELT_BUILD_FUZZERS, clang, ASan + UBSan), or
//   CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DSPELT_BUILD_FUZZERS=ON
//   cmake --build build/fuzz --target array_record_fuzz
// Run with a corpus of small valid files (written by ArrayRecordWriter, each prefixed with one
// options byte; files are at least 128 KiB, so raise -max_len):
//   build/fuzz/array_record_fuzz -max_len=300000 -timeout=10 CORPUS_DIR
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "spelt/array_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  ++data;
  --size;

  // Skipping hash checks lets the fuzzer reach the code behind them; the reader must be safe
  // either way.
  spelt::ArrayRecordReaderOptions options;
  options.verify_header_hashes = (flags & 1) == 0;
  options.verify_data_hash = (flags & 2) == 0;
  options.cache_chunks = (flags >> 2) & 3;
  const int batch_threads = (flags & 16) ? 2 : 1;

  const int fd = memfd_create("array_record_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  for (size_t written = 0; written < size;) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) {
      close(fd);
      return 0;
    }
    written += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const std::unique_ptr<spelt::ArrayRecordReader> reader =
        spelt::ArrayRecordReader::Open(path, options);
    reader->Info();
    std::vector<uint64_t> indices(reader->NumRecords());
    std::iota(indices.begin(), indices.end(), uint64_t{0});
    const std::vector<std::string> batch = reader->ReadRecords(indices, batch_threads);
    for (const uint64_t i : indices) {
      if (reader->ReadRecord(i) != batch[i]) __builtin_trap();
    }
  } catch (const spelt::FileFormatError&) {
  }
  close(fd);
  return 0;
}
