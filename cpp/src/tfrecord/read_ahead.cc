// MakeReadAheadReader (tfrecord/read_ahead.h): a ring of kWindow runs between one
// reading thread at a time (a helper or the caller) and the caller.
#include "tfrecord/read_ahead.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "base/thread_pool.h"
#include "spelt/blocking_wait.h"

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

// What the caller and the helper share. The helper holds it by shared_ptr, so one that starts
// after the reader is gone finds `stopping` and leaves.
struct Shared {
  explicit Shared(std::unique_ptr<TFRecordReader> r) : reader(std::move(r)), runs(kWindow) {}

  std::mutex mu;
  std::condition_variable cv;
  const std::unique_ptr<TFRecordReader> reader;  // used by the thread that is `reading` only
  std::vector<Run> runs;                         // a ring
  size_t front = 0;       // the ring index of the oldest run held
  size_t held = 0;        // runs read and not yet released by the caller
  bool reading = false;   // a thread reads into runs[(front + held) % kWindow]
  bool halted = false;    // the newest run held ends the file or failed: read no further
  bool helper = false;    // a helper is submitted and has not left
  bool stopping = false;  // the reader is being destroyed
};

bool CanRead(const Shared& s) {
  return !s.stopping && !s.reading && !s.halted && s.held < kWindow;
}

// Reads the next run with s.mu released. REQUIRES: `lock` holds s.mu, CanRead(s).
void ReadNext(Shared& s, std::unique_lock<std::mutex>& lock) {
  Run& run = s.runs[(s.front + s.held) % kWindow];
  s.reading = true;
  lock.unlock();
  ReadRun(*s.reader, run);
  lock.lock();
  s.reading = false;
  s.halted = run.end || run.error;
  ++s.held;
  s.cv.notify_all();
}

// Submits a helper unless one is pending or there is nothing to read. REQUIRES: s->mu held.
void StartHelper(const std::shared_ptr<Shared>& s) {
  if (s->helper || !CanRead(*s)) return;
  s->helper = true;
  SharedThreadPool().Submit([s] {
    std::unique_lock<std::mutex> lock(s->mu);
    while (CanRead(*s)) ReadNext(*s, lock);
    s->helper = false;
  });
}

class ReadAheadReader final : public TFRecordReader {
 public:
  explicit ReadAheadReader(std::unique_ptr<TFRecordReader> reader)
      : s_(std::make_shared<Shared>(std::move(reader))), next_offset_(s_->reader->Tell()) {}

  ~ReadAheadReader() override {
    std::unique_lock<std::mutex> lock(s_->mu);
    s_->stopping = true;
    BlockingWait([&] { s_->cv.wait(lock, [&] { return !s_->reading; }); });
  }

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
    std::unique_lock<std::mutex> lock(s_->mu);
    BlockingWait([&] { s_->cv.wait(lock, [&] { return !s_->reading; }); });
    s_->front = s_->held = 0;
    s_->halted = false;
    taken_ = false;
    index_ = 0;
    try {
      s_->reader->Seek(offset);
    } catch (...) {
      next_offset_ = s_->reader->Tell();
      throw;
    }
    next_offset_ = offset;
  }

  const std::string& path() const override { return s_->reader->path(); }
  TFRecordCompression compression() const override { return s_->reader->compression(); }

 private:
  // The run at the front: the one being consumed (taken_) or the next one. Only the caller
  // moves s_->front, so it reads it without the lock.
  Run& Front() const { return s_->runs[s_->front]; }

  // The payload of Front()'s record index_. REQUIRES: taken_, index_ < its records.
  std::string_view Current() const { return Front().records[index_]; }

  void Advance() { next_offset_ = Front().offsets[index_++]; }

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
        std::unique_lock<std::mutex> lock(s_->mu);
        s_->front = (s_->front + 1) % kWindow;
        --s_->held;
        taken_ = false;
        index_ = 0;
        if (error) {
          s_->halted = false;  // nothing is held after it: the next call reads it again
          std::rethrow_exception(error);
        }
        StartHelper(s_);
      }
      std::unique_lock<std::mutex> lock(s_->mu);
      while (s_->held == 0) {
        if (CanRead(*s_)) {
          ReadNext(*s_, lock);  // no thread is reading: read it here
        } else {
          BlockingWait([&] { s_->cv.wait(lock); });  // the helper may need the GIL to read
        }
      }
      taken_ = true;
      StartHelper(s_);
    }
  }

  std::shared_ptr<Shared> s_;  // shared with the helper
  bool taken_ = false;         // the caller consumes Front()
  size_t index_ = 0;           // Front()'s next record
  uint64_t next_offset_ = 0;
};

}  // namespace

std::unique_ptr<TFRecordReader> MakeReadAheadReader(std::unique_ptr<TFRecordReader> reader) {
  return std::make_unique<ReadAheadReader>(std::move(reader));
}

}  // namespace spelt::internal::tfrecord
