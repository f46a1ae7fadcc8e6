// array_record_seq: single-threaded sequential read of one ArrayRecord file through libspelt's
// C++ API, against memcpy bandwidth measured in the same process. The Python bench
// (bench/bench_array_record.py) measures the same read from Python, where every record also
// becomes a `bytes` object; this program shows what the reader itself costs.
//
// Usage: array_record_seq FILE [REPS]
//   Reads FILE front to back REPS times (default 5) with ArrayRecordReader::ForEachRecord (the
//   sequential read: records viewed in the reader's buffer) with data-hash checks on (the
//   default) and off, on the calling thread and with num_threads = 2 (a helper reads, checks
//   and decodes the next runs while the caller visits), and for context with ReadRecords over consecutive ranges of 1,024
//   indices (a copy of every record), num_threads = 1; interleaved with a memcpy of a 256 MiB
//   buffer. Prints the median and min-max MB/s (10^6 bytes of record payload, or bytes copied,
//   per second) of each.
//
// Built with the C++ tests (`make cpp`): build/cpp/array_record_seq.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "spelt/array_record.h"

namespace {

constexpr uint64_t kChunk = 1024;
constexpr size_t kMemcpyBytes = size_t{256} << 20;

struct Series {
  const char* name;
  std::function<uint64_t()> run;  // one repetition; returns the bytes it moved
  std::vector<double> mb_per_s;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void Measure(Series& s) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t bytes = s.run();
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  s.mb_per_s.push_back(bytes / 1e6 / seconds.count());
}

// Visits every record of `reader` in order (helpers read ahead if num_threads > 1).
uint64_t VisitAll(const spelt::ArrayRecordReader& reader, int num_threads) {
  uint64_t bytes = 0;
  reader.ForEachRecord(
      0, reader.NumRecords(), [&](uint64_t, std::string_view record) { bytes += record.size(); },
      num_threads);
  return bytes;
}

// Reads every record of `reader` in order, one thread, kChunk indices per call.
uint64_t ReadAll(const spelt::ArrayRecordReader& reader) {
  uint64_t bytes = 0;
  std::vector<uint64_t> indices;
  for (uint64_t first = 0; first < reader.NumRecords(); first += kChunk) {
    indices.clear();
    for (uint64_t i = first; i < std::min(first + kChunk, reader.NumRecords()); ++i) {
      indices.push_back(i);
    }
    for (const std::string& record : reader.ReadRecords(indices, /*num_threads=*/1)) {
      bytes += record.size();
    }
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [REPS]\n", argv[0]);
    return 2;
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  spelt::ArrayRecordReaderOptions no_verify;
  no_verify.verify_data_hash = false;
  const auto verified = spelt::ArrayRecordReader::Open(argv[1]);
  const auto unverified = spelt::ArrayRecordReader::Open(argv[1], no_verify);

  std::vector<char> src(kMemcpyBytes, 1), dst(kMemcpyBytes, 0);  // touched: no page faults
  std::vector<Series> series = {
      {"ForEachRecord, hash checked", [&] { return VisitAll(*verified, 1); }, {}},
      {"ForEachRecord, hash not checked", [&] { return VisitAll(*unverified, 1); }, {}},
      {"ForEachRecord 2 threads, checked", [&] { return VisitAll(*verified, 2); }, {}},
      {"ForEachRecord 2 threads, not chk", [&] { return VisitAll(*unverified, 2); }, {}},
      {"ReadRecords (copies), checked", [&] { return ReadAll(*verified); }, {}},
      {"memcpy 256 MiB", [&] {
         std::memcpy(dst.data(), src.data(), kMemcpyBytes);
         asm volatile("" : : "r"(dst.data()) : "memory");  // keep the copy
         return uint64_t{kMemcpyBytes};
       }, {}},
  };
  for (Series& s : series) s.run();  // warm-up: page cache, allocator, pool
  for (int rep = 0; rep < reps; ++rep) {
    for (Series& s : series) Measure(s);
  }
  std::printf("%s: %llu records, %d repetitions each after a warm-up, interleaved\n", argv[1],
              static_cast<unsigned long long>(verified->NumRecords()), reps);
  const double memcpy_mb_s = Median(series.back().mb_per_s);
  for (const Series& s : series) {
    const auto [lo, hi] = std::minmax_element(s.mb_per_s.begin(), s.mb_per_s.end());
    std::printf("  %-32s %8.0f MB/s (%.0f-%.0f)  memcpy/this %.2fx\n", s.name, Median(s.mb_per_s),
                *lo, *hi, memcpy_mb_s / Median(s.mb_per_s));
  }
  return 0;
}
