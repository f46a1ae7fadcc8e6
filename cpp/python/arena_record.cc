#include "arena_record.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace spelt::python {
namespace {

void CheckSpan(int64_t offset, int64_t size, size_t arena_size) {
  if (offset < 0 || size < 0 || static_cast<uint64_t>(offset) > arena_size ||
      static_cast<uint64_t>(size) > arena_size - static_cast<uint64_t>(offset)) {
    throw std::out_of_range("Arena: span [" + std::to_string(offset) + ", +" +
                            std::to_string(size) + ") outside the " + std::to_string(arena_size) +
                            "-byte arena");
  }
}

}  // namespace

RecordLayout ParseRecord(std::string_view record, const std::byte* arena, size_t arena_size) {
  const char* data = record.data();
  const size_t size = record.size();
  size_t pos = 0;
  auto word = [&]() {
    if (size - pos < sizeof(int64_t)) throw std::invalid_argument("Arena: truncated record");
    int64_t w;
    std::memcpy(&w, data + pos, sizeof(w));
    pos += sizeof(w);
    return w;
  };
  RecordLayout layout;
  const int64_t n = word();
  layout.stream_offset = word();
  layout.stream_length = word();
  if (n < 0 || layout.stream_length < 0) throw std::invalid_argument("Arena: corrupt record");
  int64_t previous_end = 0;
  for (int64_t k = 0; k < n; ++k) {
    RecordLayout::Element e;
    e.kind = word();
    e.end = word();
    e.region = word();
    const int64_t spans = word();
    if ((e.kind != kTagged && e.kind != kPickled) || e.end < previous_end ||
        e.end > layout.stream_length || spans < 0) {
      throw std::invalid_argument("Arena: corrupt record");
    }
    previous_end = e.end;
    for (int64_t s = 0; s < spans; ++s) {
      const int64_t offset = word(), length = word();
      CheckSpan(offset, length, arena_size);
      e.spans.emplace_back(offset, length);
    }
    layout.elements.push_back(std::move(e));
  }
  if (layout.stream_offset < 0) {
    if (size - pos != static_cast<size_t>(layout.stream_length)) {
      throw std::invalid_argument("Arena: corrupt record (inline stream)");
    }
    layout.stream = data + pos;
  } else {
    CheckSpan(layout.stream_offset, layout.stream_length, arena_size);
    layout.stream = reinterpret_cast<const char*>(arena + layout.stream_offset);
  }
  return layout;
}

void RecordWords::AddElement(ElementKind kind, int64_t end, int64_t region,
                             const std::vector<Span>& spans) {
  words_.insert(words_.end(), {kind, end, region, static_cast<int64_t>(spans.size())});
  for (const auto& [offset, length] : spans) words_.insert(words_.end(), {offset, length});
  ++count_;
}

size_t RecordWords::RecordSize(size_t inline_bytes) const {
  return words_.size() * sizeof(int64_t) + inline_bytes;
}

void RecordWords::Write(char* out, int64_t stream_offset, int64_t stream_length,
                        std::string_view inline_stream) const {
  const int64_t header[] = {count_, stream_offset, stream_length};
  std::memcpy(out, header, sizeof(header));
  const size_t words_bytes = words_.size() * sizeof(int64_t);
  std::memcpy(out + sizeof(header), words_.data() + 3, words_bytes - sizeof(header));
  if (!inline_stream.empty()) {
    std::memcpy(out + words_bytes, inline_stream.data(), inline_stream.size());
  }
}

}  // namespace spelt::python
