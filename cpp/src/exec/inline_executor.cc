// MakeInlineExecutor (spelt/executor.h): chunks computed in the consumer's thread when taken,
// timed (exec/work_timer.h): while they wait (a remote store's round trips), they grow larger,
// so that more of one chunk's reads share a round trip (exec/chunk_sizer.h).
#include <algorithm>
#include <stdexcept>

#include "exec/chunk_sizer.h"
#include "exec/work_timer.h"
#include "spelt/executor.h"

namespace spelt {
namespace {

class InlineChunk final : public PendingChunk {
 public:
  InlineChunk(std::shared_ptr<const MapNode> node, int64_t begin, int64_t count,
              internal::ChunkSizer* sizer, internal::WorkTimer* timer)
      : node_(std::move(node)), begin_(begin), count_(count), sizer_(sizer), timer_(timer) {}
  ChunkResult Take() override {
    timer_->Begin();
    ChunkResult result = ComputeChunk(*node_, begin_, count_);
    switch (timer_->End()) {
      case internal::WorkTimer::Verdict::kWaits:
        sizer_->Widen(/*elements=*/true);
        break;
      case internal::WorkTimer::Verdict::kNative:
      case internal::WorkTimer::Verdict::kComputes:
        sizer_->Narrow();
        break;
      case internal::WorkTimer::Verdict::kUndecided:
        break;
    }
    sizer_->Observe(result);
    return result;
  }

 private:
  std::shared_ptr<const MapNode> node_;
  int64_t begin_, count_;
  // The executor's, which outlives its chunks.
  internal::ChunkSizer* sizer_;
  internal::WorkTimer* timer_;
};

class InlineExecutor final : public ChunkExecutor {
 public:
  InlineExecutor(std::shared_ptr<const MapNode> node, int64_t max_chunk_size)
      : node_(std::move(node)), sizer_(1, CheckedMax(max_chunk_size)) {}
  // Nothing runs ahead: a chunk is computed when the consumer reaches it.
  int64_t MaxInFlight() const override { return 0; }
  int64_t NextChunkSize() override { return sizer_.Next(); }
  std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) override {
    return std::make_unique<InlineChunk>(node_, begin, count, &sizer_, &timer_);
  }

 private:
  static int64_t CheckedMax(int64_t max_chunk_size) {
    if (max_chunk_size < 1) {
      throw std::invalid_argument("MakeInlineExecutor: max_chunk_size must be >= 1, got " +
                                  std::to_string(max_chunk_size));
    }
    return max_chunk_size;
  }

  std::shared_ptr<const MapNode> node_;
  internal::ChunkSizer sizer_;
  internal::WorkTimer timer_;
};

}  // namespace

std::unique_ptr<ChunkExecutor> MakeInlineExecutor(std::shared_ptr<const MapNode> node,
                                                  int64_t max_chunk_size) {
  return std::make_unique<InlineExecutor>(std::move(node), max_chunk_size);
}

}  // namespace spelt
