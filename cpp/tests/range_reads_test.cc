// PlanRanges / CopyFromRanges (spelt/range_reads.h) and SequentialReads (io/sequential_reads.h).
#include "spelt/range_reads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io/sequential_reads.h"
#include "spelt/errors.h"

namespace spelt {
namespace {

constexpr uint64_t kKiB = 1024;

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 251);
  return s;
}

TEST(PlanRangesTest, CoalescesNeighboursWithinTheGapInAnyOrder) {
  char sink[1];
  const std::vector<ReadRequest> requests = {
      {1000, 10, sink},  // 900 bytes after [0, 100)
      {0, 100, sink},
      {5000, 0, sink},  // empty: ignored
      {3011, 5, sink},  // 1001 bytes after [1010, 2010)
      {1010, 1000, sink},
      {3016, 1, sink},
  };
  EXPECT_EQ(PlanRanges(requests, /*max_gap=*/1000, /*max_range=*/1 << 20),
            (std::vector<ByteRange>{{0, 2010}, {3011, 6}}));
  EXPECT_EQ(PlanRanges(requests, /*max_gap=*/0, /*max_range=*/1 << 20),
            (std::vector<ByteRange>{{0, 100}, {1000, 1010}, {3011, 6}}));
  EXPECT_TRUE(PlanRanges({}).empty());
}

TEST(PlanRangesTest, SplitsLongRangesAndKeepsOverlapsOnce) {
  char sink[1];
  const std::vector<ReadRequest> requests = {{0, 25, sink}, {5, 10, sink}, {20, 3, sink}};
  EXPECT_EQ(PlanRanges(requests, 0, 10),
            (std::vector<ByteRange>{{0, 10}, {10, 10}, {20, 5}}));
  EXPECT_THROW(PlanRanges(requests, 0, 0), std::invalid_argument);
}

TEST(PlanRangesTest, CopyFromRangesFillsEveryRequest) {
  const std::string file = Bytes(200 * kKiB);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::string> got(1 + rng() % 40);
    std::vector<ReadRequest> requests;
    for (std::string& g : got) {
      const uint64_t offset = rng() % file.size();
      g.assign(rng() % std::min<uint64_t>(20 * kKiB, file.size() - offset + 1), '\0');
      requests.push_back({offset, g.size(), g.data()});
    }
    const uint64_t gap = rng() % (8 * kKiB), max_range = 1 + rng() % (16 * kKiB);
    const std::vector<ByteRange> ranges = PlanRanges(requests, gap, max_range);
    std::vector<std::string> parts;
    std::vector<const char*> starts;
    for (const ByteRange& r : ranges) {
      ASSERT_LE(r.length, max_range);
      parts.push_back(file.substr(r.offset, r.length));
    }
    for (const std::string& p : parts) starts.push_back(p.data());
    CopyFromRanges(requests, ranges, starts);
    for (const ReadRequest& r : requests) {
      EXPECT_EQ(std::string(r.dst, r.length), file.substr(r.offset, r.length));
    }
  }
}

// An in-memory file that counts its reads; high latency or not, with `read_ahead` bytes for
// sequential readers. Reads at offsets of at least `gate_from` wait until `open_gate` is set.
class CountingFile final : public RandomAccessFile {
 public:
  CountingFile(std::string bytes, bool high_latency, uint64_t read_ahead = 0)
      : bytes_(std::move(bytes)), high_latency_(high_latency), read_ahead_(read_ahead) {}
  const std::string& path() const override { return path_; }
  uint64_t size() const override { return bytes_.size(); }
  bool HighLatency() const override { return high_latency_; }
  uint64_t ReadAheadBytes() const override { return read_ahead_; }
  void ReadAt(uint64_t offset, char* dst, uint64_t n) const override {
    ++reads;
    if (offset >= gate_from) {
      while (!open_gate) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (offset + n > bytes_.size()) throw CorruptFileError(path_, bytes_.size(), "ends");
    std::memcpy(dst, bytes_.data() + offset, n);
  }
  mutable std::atomic<int> reads = 0;  // windows are read ahead on other threads
  uint64_t gate_from = UINT64_MAX;
  std::atomic<bool> open_gate = false;

 private:
  std::string path_ = "mem://f", bytes_;
  bool high_latency_;
  uint64_t read_ahead_;
};

TEST(SequentialReadsTest, ReadsARemoteFileInWindowsAhead) {
  const std::string bytes = Bytes(1000 * kKiB);
  CountingFile file(bytes, /*high_latency=*/true, /*read_ahead=*/300 * kKiB);  // 2 windows
  std::string got(bytes.size(), '\0');
  {
    internal::SequentialReads reads(file, /*window=*/256 * kKiB);
    for (uint64_t at = 0; at < bytes.size(); at += 3 * kKiB) {
      const uint64_t n = std::min<uint64_t>(3 * kKiB, bytes.size() - at);
      reads.Read(at, got.data() + at, n);
    }
    EXPECT_EQ(got, bytes);
    EXPECT_EQ(file.reads, 4);  // 1000 KiB in windows of 256 KiB, each read once
    std::string big(300 * kKiB, '\0');  // larger than the window: read directly
    reads.Read(100, big.data(), big.size());
    EXPECT_EQ(big, bytes.substr(100, big.size()));
    EXPECT_EQ(file.reads, 5);
    reads.Read(5, got.data(), 10);  // behind the window: a new window there, two ahead of it
    EXPECT_EQ(got.substr(0, 10), bytes.substr(5, 10));
    for (int i = 0; i < 10000 && file.reads < 8; ++i) {  // the two ahead start on helpers
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(file.reads, 8);
    // Not where the windows read ahead start: they are dropped (one not started never is).
    EXPECT_THROW(reads.Read(bytes.size() - 5, got.data(), 10), CorruptFileError);
    EXPECT_EQ(file.reads, 10);  // 9 (the last 5 bytes), 10 (past the end)
  }
  internal::SequentialReads reads(file, /*window=*/256 * kKiB);
  reads.Read(0, got.data(), 10);  // the windows ahead are being read when `reads` ends
}

TEST(SequentialReadsTest, SkipsForwardIntoAWindowReadAheadKeepingIt) {
  const std::string bytes = Bytes(1000 * kKiB);
  CountingFile file(bytes, /*high_latency=*/true, /*read_ahead=*/2 * 256 * kKiB);
  internal::SequentialReads reads(file, /*window=*/256 * kKiB);
  std::string got(10, '\0');
  reads.Read(0, got.data(), got.size());  // windows at 0 (current), 256 and 512 KiB (ahead)
  for (int i = 0; i < 10000 && file.reads < 3; ++i) {  // the two ahead start on helpers
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  reads.Read(600 * kKiB, got.data(), got.size());  // in the window at 512: 256 is dropped
  EXPECT_EQ(got, bytes.substr(600 * kKiB, got.size()));
  reads.Read(900 * kKiB, got.data(), got.size());  // in the last window, read ahead meanwhile
  EXPECT_EQ(got, bytes.substr(900 * kKiB, got.size()));
  EXPECT_EQ(file.reads, 4);  // 0, 256, 512, 768: none read twice
}

TEST(SequentialReadsTest, KeepsTheReadAheadInFlightAtOnce) {
  const std::string bytes = Bytes(2000 * kKiB);
  for (const uint64_t read_ahead : {uint64_t{0}, 100 * kKiB, 3 * 100 * kKiB}) {
    CountingFile file(bytes, /*high_latency=*/true, read_ahead);
    file.gate_from = 100 * kKiB;  // windows after the first wait until all ahead are asked for
    internal::SequentialReads reads(file, /*window=*/100 * kKiB);
    std::string got(kKiB, '\0');
    reads.Read(0, got.data(), got.size());
    const int expected = 1 + static_cast<int>(std::max<uint64_t>(1, read_ahead / (100 * kKiB)));
    for (int i = 0; i < 10000 && file.reads < expected; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // time for one too many
    EXPECT_EQ(file.reads, expected) << read_ahead;  // started together, none finished
    file.open_gate = true;
    std::string rest(bytes.size() - got.size(), '\0');
    for (uint64_t at = got.size(); at < bytes.size(); at += rest.size() / 50) {
      const uint64_t n = std::min<uint64_t>(rest.size() / 50, bytes.size() - at);
      reads.Read(at, rest.data() + (at - got.size()), n);
    }
    EXPECT_EQ(got + rest, bytes);
    EXPECT_EQ(file.reads, 20);  // each window once
  }
}

TEST(SequentialReadsTest, ReadsALocalFileDirectly) {
  const std::string bytes = Bytes(100 * kKiB);
  CountingFile file(bytes, /*high_latency=*/false);
  internal::SequentialReads reads(file, /*window=*/64 * kKiB);
  std::string got(kKiB, '\0');
  for (int i = 0; i < 10; ++i) reads.Read(i * kKiB, got.data(), kKiB);
  EXPECT_EQ(file.reads, 10);
  EXPECT_EQ(got, bytes.substr(9 * kKiB, kKiB));
}

}  // namespace
}  // namespace spelt
