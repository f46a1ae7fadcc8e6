// MakeReadAheadReader (tfrecord/read_ahead.h): kWindow run buffers; run k is read into buffer
// k % kWindow by a task of a serial OrderedWindow, submitted once run k - kWindow was consumed.
#include "tfrecord/read_ahead.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "base/ordered_window.h"

namespace spelt::internal::tfrecord {

namespace {

// Whole records, read and CRC checked, in file order.
struct Run {
  std::vector<std::string_view> records;  // payloads, in `bytes`
  std::vector<uint64_t> offsets;          // per record: the stream offset after it
  bool end = false;                       // the file ends after these records
  std::exception_ptr error;               // the next record failed: raised after these records
  std::unique_ptr<char[]> bytes;
  size_t capacity = 0;  // of `bytes`
};

// Replaces `run` with the next records of `reader`: at least one, until kRunBytes of payload,
// the end of the file or an error (the reader then stays at the bad record).
void ReadRun(TFRecordReader& reader, Run& run) {
  run.records.clear();
  run.offsets.clear();
  run.end = false;
  run.error = nullptr;
  size_t used = 0;
  try {
    if (!run.bytes) {  // even empty records get a real address to be read into
      run.bytes.reset(new char[kRunBytes]);
      run.capacity = kRunBytes;
    }
    while (used < kRunBytes) {
      const std::optional<uint64_t> length = reader.NextLength();
      if (!length) {
        run.end = true;
        return;
      }
      if (*length > run.capacity - used) {
        if (used > 0) return;  // the record starts the next run (the reader stays at it)
        run.capacity = std::max<size_t>(kRunBytes, *length);
        run.bytes.reset(new char[run.capacity]);
      }
      reader.ReadPayload(run.bytes.get() + used);
      run.records.emplace_back(run.bytes.get() + used, *length);
      run.offsets.push_back(reader.Tell());
      used += *length;
    }
  } catch (...) {
    run.error = std::current_exception();
  }
}

class ReadAheadReader final : public TFRecordReader {
 public:
  explicit ReadAheadReader(std::unique_ptr<TFRecordReader> reader)
      : reader_(std::move(reader)), runs_(kWindow), next_offset_(reader_->Tell()) {}

  bool ReadRecord(std::string* record) override {
    const std::optional<std::string_view> payload = Peek();
    if (!payload) return false;
    record->assign(*payload);
    Advance();
    return true;
  }

  std::optional<uint64_t> NextLength() override {
    const std::optional<std::string_view> payload = Peek();
    if (!payload) return std::nullopt;
    return payload->size();
  }

  void ReadPayload(char* dst) override {
    if (!taken_ || index_ >= Front().records.size()) {
      throw std::logic_error("TFRecordReader::ReadPayload without NextLength");
    }
    const std::string_view payload = Current();
    std::memcpy(dst, payload.data(), payload.size());
    Advance();
  }

  bool NextStepBuffered() const override {
    if (!taken_) return false;
    const Run& run = Front();
    return index_ < run.records.size() || run.end;
  }

  uint64_t Tell() const override { return next_offset_; }

  void Seek(uint64_t offset) override {
    Restart();
    try {
      reader_->Seek(offset);
    } catch (...) {
      next_offset_ = reader_->Tell();
      throw;
    }
    next_offset_ = offset;
  }

  const std::string& path() const override { return reader_->path(); }
  TFRecordCompression compression() const override { return reader_->compression(); }

 private:
  // The run at the front: the one being consumed (taken_) or the next one.
  const Run& Front() const { return runs_[front_]; }

  // The payload of Front()'s record index_. REQUIRES: taken_, index_ < its records.
  std::string_view Current() const { return Front().records[index_]; }

  void Advance() { next_offset_ = Front().offsets[index_++]; }

  // Drops the runs read ahead (waiting for one being read): the next run is read from where
  // reader_ stands.
  void Restart() {
    ahead_.Clear();
    halted_ = false;
    taken_ = false;
    index_ = 0;
  }

  // Submits reads until the window holds kWindow runs (the one being consumed included).
  // A read after a run that ends the file or failed reads nothing (halted_).
  void ReadAhead() {
    for (size_t held = ahead_.size() + (taken_ ? 1 : 0); held < kWindow; ++held) {
      Run& run = runs_[(front_ + held) % kWindow];
      ahead_.Submit([this, &run] {
        if (halted_) return;
        ReadRun(*reader_, run);
        halted_ = run.end || run.error;
      });
    }
  }

  // The next record's payload without moving past it, or nullopt at the end of the file:
  // takes the next run when the current one is used up (reading it here, or waiting for the
  // helper that reads it), and throws a run's error once its records are consumed.
  std::optional<std::string_view> Peek() {
    for (;;) {
      if (taken_) {
        const Run& run = Front();
        if (index_ < run.records.size()) return Current();
        if (run.end) return std::nullopt;
        const std::exception_ptr error = run.error;
        front_ = (front_ + 1) % kWindow;
        taken_ = false;
        index_ = 0;
        if (error) {
          Restart();  // nothing was read after it: the next call reads the bad record again
          std::rethrow_exception(error);
        }
      }
      ReadAhead();
      ahead_.Take();
      taken_ = true;
      ReadAhead();
    }
  }

  const std::unique_ptr<TFRecordReader> reader_;  // read by the tasks of ahead_ only
  std::vector<Run> runs_;                         // a ring of kWindow runs
  bool halted_ = false;  // a run read ends the file or failed: read no further (tasks only)
  size_t front_ = 0;     // the ring index of Front()
  bool taken_ = false;   // the caller consumes Front()
  size_t index_ = 0;     // Front()'s next record
  uint64_t next_offset_ = 0;
  // Declared last: destroyed first, waiting for a run being read.
  OrderedWindow ahead_{{.max_helpers = 1, .serial = true}};
};

}  // namespace

std::unique_ptr<TFRecordReader> MakeReadAheadReader(std::unique_ptr<TFRecordReader> reader) {
  return std::make_unique<ReadAheadReader>(std::move(reader));
}

}  // namespace spelt::internal::tfrecord
