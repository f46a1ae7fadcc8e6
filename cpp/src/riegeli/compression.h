// Internal: Riegeli's compressed buffers. A compressed buffer is the varint64 decompressed size
// followed by the codec's output (zstd frame, raw brotli stream, or raw snappy block); an
// uncompressed buffer is the bytes themselves. Spec: arrayrecord-format.md §1.7.
#ifndef SPELT_SRC_RIEGELI_COMPRESSION_H_
#define SPELT_SRC_RIEGELI_COMPRESSION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/buffer_pool.h"

namespace spelt::internal::riegeli {

// The compression byte of a simple chunk.
enum class CompressionType : uint8_t { kNone = 0, kBrotli = 'b', kZstd = 'z', kSnappy = 's' };

// Throws FormatError for a byte that names no compression type.
CompressionType ParseCompressionType(uint8_t byte);
// "uncompressed", "brotli", "zstd" or "snappy".
std::string_view CompressionName(CompressionType type);

struct CompressionOptions {
  CompressionType type = CompressionType::kNone;
  int level = 0;       // zstd and brotli
  int window_log = 0;  // zstd and brotli
};

// Appends `src` as one buffer compressed with `options` to `out`. Throws std::invalid_argument
// if the codec cannot encode it (snappy: 4 GiB or more) and std::runtime_error if the codec
// fails.
void AppendCompressed(const CompressionOptions& options, std::string_view src, std::string& out);

// Decodes one buffer compressed with `type` (held whole in `framed`). Returns `framed` itself
// for kNone, otherwise the decompressed bytes, which are put in `storage`. Never allocates more
// than `max_size` bytes. Throws FormatError if the stream is corrupt, does not decode to exactly
// its stated size, or that size exceeds `max_size`.
std::string_view Decompress(CompressionType type, std::string_view framed, uint64_t max_size,
                            Buffer& storage);
// As above, with the decompressed bytes in `scratch` (valid until its next use).
std::string_view Decompress(CompressionType type, std::string_view framed, uint64_t max_size,
                            ScratchBuffer& scratch);
// As above, with the decompressed bytes in `out` (resized to them); `out` is left alone for
// kNone.
std::string_view Decompress(CompressionType type, std::string_view framed, uint64_t max_size,
                            std::string& out);

}  // namespace spelt::internal::riegeli

#endif  // SPELT_SRC_RIEGELI_COMPRESSION_H_
