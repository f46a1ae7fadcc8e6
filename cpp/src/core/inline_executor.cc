// MakeInlineExecutor (spelt/executor.h): chunks computed in the consumer's thread when taken.
#include <algorithm>
#include <stdexcept>

#include "spelt/executor.h"

namespace spelt {
namespace {

class InlineChunk final : public PendingChunk {
 public:
  InlineChunk(std::shared_ptr<const MapNode> node, int64_t begin, int64_t count)
      : node_(std::move(node)), begin_(begin), count_(count) {}
  ChunkResult Take() override { return ComputeChunk(*node_, begin_, count_); }

 private:
  std::shared_ptr<const MapNode> node_;
  int64_t begin_, count_;
};

class InlineExecutor final : public ChunkExecutor {
 public:
  InlineExecutor(std::shared_ptr<const MapNode> node, int64_t max_chunk_size)
      : node_(std::move(node)), max_chunk_size_(max_chunk_size) {
    if (max_chunk_size < 1) {
      throw std::invalid_argument("MakeInlineExecutor: max_chunk_size must be >= 1, got " +
                                  std::to_string(max_chunk_size));
    }
  }
  // Nothing runs ahead: a chunk is computed when the consumer reaches it.
  int64_t MaxInFlight() const override { return 1; }
  int64_t NextChunkSize() override {
    const int64_t size = next_size_;
    next_size_ = std::min(2 * next_size_, max_chunk_size_);
    return size;
  }
  std::unique_ptr<PendingChunk> Submit(int64_t begin, int64_t count) override {
    return std::make_unique<InlineChunk>(node_, begin, count);
  }

 private:
  std::shared_ptr<const MapNode> node_;
  int64_t max_chunk_size_;
  int64_t next_size_ = 1;
};

}  // namespace

std::unique_ptr<ChunkExecutor> MakeInlineExecutor(std::shared_ptr<const MapNode> node,
                                                  int64_t max_chunk_size) {
  return std::make_unique<InlineExecutor>(std::move(node), max_chunk_size);
}

}  // namespace spelt
