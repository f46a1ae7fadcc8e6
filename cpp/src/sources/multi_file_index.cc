// MultiFileIndex (spelt/multi_file_index.h).
#include "spelt/multi_file_index.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace spelt {

void MultiFileIndex::AddFile(int64_t num_records) {
  starts_.push_back(total_);
  total_ += num_records;
}

int64_t MultiFileIndex::End(size_t file) const {
  return file + 1 < starts_.size() ? starts_[file + 1] : total_;
}

MultiFileIndex::Position MultiFileIndex::Locate(int64_t key, std::string_view source,
                                                std::string_view name) const {
  if (key < 0 || key >= total_) {
    std::string message = std::string(source) + ": record key " + std::to_string(key) +
                          " out of range [0, " + std::to_string(total_) + ")";
    if (!name.empty()) message += " of " + std::string(name);
    throw std::out_of_range(message);
  }
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), key);
  const auto file = static_cast<size_t>(it - starts_.begin() - 1);
  return {file, key - starts_[file]};
}

}  // namespace spelt
