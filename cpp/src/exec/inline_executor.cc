// MakeInlineExecutor (spelt/executor.h): chunks computed in the consumer's thread when taken.
#include <algorithm>
#include <stdexcept>

#include "exec/chunk_sizer.h"
#include "spelt/executor.h"

namespace spelt {
namespace {

class InlineChunk final : public PendingChunk {
 public:
  InlineChunk(std::shared_ptr<const MapNode> node, int64_t begin, int64_t count,
              internal::ChunkSizer* sizer)
      : node_(std::move(node)), begin_(begin), count_(count), sizer_(sizer) {}
  ChunkResult Take() override {
    ChunkResult result = ComputeChunk(*node_, begin_, count_);
    sizer_->Observe(result);
    return result;
  }

 private:
  std::shared_ptr<const MapNode> node_;
  int64_t begin_, count_;
  internal::ChunkSizer* sizer_;  // the executor's, which outlives its chunks
};

class InlineExecutor final : public ChunkExecutor {
 public:
  InlineExecutor(std::shared_ptr<const MapNode> node, int64_t max_chunk_size)
      : node_(std::move(node)), sizer_(1, CheckedMax(max_chunk_size)) {}
  // Nothing runs ahead: a chunk is computed when the consumer reaches it.
  int64_t MaxInFlight() const override { return 0; }
  int64_t NextChunkSize() override { return sizer_.Next(); }
  std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) override {
    return std::make_unique<InlineChunk>(node_, begin, count, &sizer_);
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
};

}  // namespace

std::unique_ptr<ChunkExecutor> MakeInlineExecutor(std::shared_ptr<const MapNode> node,
                                                  int64_t max_chunk_size) {
  return std::make_unique<InlineExecutor>(std::move(node), max_chunk_size);
}

}  // namespace spelt
