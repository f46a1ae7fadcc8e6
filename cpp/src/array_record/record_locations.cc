#include "array_record/record_locations.h"

#include <utility>

namespace spelt::internal::array_record {

RecordLocations::RecordLocations(uint64_t num_chunks)
    : num_chunks_(num_chunks), chunks_(new std::atomic<const Chunk*>[num_chunks]) {
  for (uint64_t c = 0; c < num_chunks_; ++c) chunks_[c].store(nullptr, std::memory_order_relaxed);
}

RecordLocations::~RecordLocations() {
  for (uint64_t c = 0; c < num_chunks_; ++c) delete chunks_[c].load(std::memory_order_relaxed);
}

void RecordLocations::Insert(uint64_t c, Chunk chunk) {
  if (Find(c) != nullptr) return;
  auto entry = std::make_unique<const Chunk>(std::move(chunk));
  const Chunk* expected = nullptr;
  if (chunks_[c].compare_exchange_strong(expected, entry.get(), std::memory_order_acq_rel)) {
    entry.release();
  }
}

}  // namespace spelt::internal::array_record
