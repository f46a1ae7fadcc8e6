// The record of one chunk reply: what a worker's ChunkWriter (py_chunk_writer.h) sends over the
// socket and the consumer's Arena (py_arena.h) reads, describing where the chunk's elements lie
// in the arena.
//
// Layout (host-order int64 words, then the stream bytes if it is inline):
//   [n, stream_offset (-1: inline after the words), stream_length,
//    then per element: kind (0 tagged, 1 pickled), end (offset in the stream where its bytes
//    end), region (-1: none), span_count, then span_count pairs (offset, length)]
// The stream holds each element's tag stream (py_element_codec.h) or pickle, one after the
// other; a span is one array's (or out-of-band buffer's) bytes inside the element's region.
#ifndef SPELT_PYTHON_ARENA_RECORD_H_
#define SPELT_PYTHON_ARENA_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace spelt::python {

// Offsets of buffers in the arena are multiples of this (a cache line; every numpy dtype's
// alignment).
inline constexpr int64_t kArenaAlignment = 64;
inline int64_t ArenaAlign(int64_t n) {
  return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

enum ElementKind : int64_t { kTagged = 0, kPickled = 1 };

using Span = std::pair<int64_t, int64_t>;  // (offset in the arena, length), bytes

// The parsed word part of a record.
struct RecordLayout {
  struct Element {
    int64_t kind = kTagged;
    int64_t end = 0;
    int64_t region = -1;
    std::vector<Span> spans;
  };
  int64_t stream_offset = -1;
  int64_t stream_length = 0;
  std::vector<Element> elements;
  const char* stream = nullptr;  // in the record or in the arena
};

// Parses `record` for an arena of `arena_size` bytes mapped at `arena`. Throws
// std::invalid_argument for a truncated or corrupt record and std::out_of_range for a span
// outside the arena.
RecordLayout ParseRecord(std::string_view record, const std::byte* arena, size_t arena_size);

// Builds the words of a record, element by element (not thread-safe).
class RecordWords {
 public:
  void AddElement(ElementKind kind, int64_t end, int64_t region, const std::vector<Span>& spans);
  // The record's size in bytes with `inline_bytes` of stream after the words.
  size_t RecordSize(size_t inline_bytes) const;
  // Writes the record to `out` (RecordSize(inline_stream.size()) bytes): the header for
  // `stream_length` stream bytes at `stream_offset` (-1: `inline_stream`, written after the
  // words), then the elements' words.
  void Write(char* out, int64_t stream_offset, int64_t stream_length,
             std::string_view inline_stream) const;

 private:
  int64_t count_ = 0;
  std::vector<int64_t> words_ = {0, -1, 0};  // header, filled in by Write
};

}  // namespace spelt::python

#endif  // SPELT_PYTHON_ARENA_RECORD_H_
