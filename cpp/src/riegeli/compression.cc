#include "riegeli/compression.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <snappy.h>
#include <zstd.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "riegeli/format.h"
#include "riegeli/varint.h"

namespace spelt::internal::riegeli {
namespace {

template <auto kFree>
struct Deleter {
  template <typename T>
  void operator()(T* p) const { kFree(p); }
};
using ZstdCCtx = std::unique_ptr<ZSTD_CCtx, Deleter<ZSTD_freeCCtx>>;
using ZstdDCtx = std::unique_ptr<ZSTD_DCtx, Deleter<ZSTD_freeDCtx>>;
using BrotliEncoder = std::unique_ptr<BrotliEncoderState, Deleter<BrotliEncoderDestroyInstance>>;
using BrotliDecoder = std::unique_ptr<BrotliDecoderState, Deleter<BrotliDecoderDestroyInstance>>;

// Returns `p` or throws std::bad_alloc if a codec failed to allocate its state.
template <typename T>
T* NotNull(T* p) {
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

// Contexts are reused per thread: creating one costs more than decoding a small record.
ZSTD_CCtx* ThreadZstdCCtx() {
  thread_local ZstdCCtx ctx(NotNull(ZSTD_createCCtx()));
  return ctx.get();
}
ZSTD_DCtx* ThreadZstdDCtx() {
  thread_local ZstdDCtx ctx(NotNull(ZSTD_createDCtx()));
  return ctx.get();
}

size_t CheckZstd(size_t result) {
  if (ZSTD_isError(result)) {
    throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(result));
  }
  return result;
}

void AppendZstd(const CompressionOptions& options, std::string_view src, std::string& out) {
  ZSTD_CCtx* ctx = ThreadZstdCCtx();
  CheckZstd(ZSTD_CCtx_reset(ctx, ZSTD_reset_session_and_parameters));
  CheckZstd(ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, options.level));
  CheckZstd(ZSTD_CCtx_setParameter(ctx, ZSTD_c_windowLog, options.window_log));
  const size_t old_size = out.size();
  out.resize(old_size + ZSTD_compressBound(src.size()));
  const size_t n = CheckZstd(ZSTD_compress2(ctx, out.data() + old_size, out.size() - old_size,
                                            src.data(), src.size()));
  out.resize(old_size + n);
}

void AppendBrotli(const CompressionOptions& options, std::string_view src, std::string& out) {
  BrotliEncoder encoder(NotNull(BrotliEncoderCreateInstance(nullptr, nullptr, nullptr)));
  BrotliEncoderSetParameter(encoder.get(), BROTLI_PARAM_QUALITY, options.level);
  BrotliEncoderSetParameter(encoder.get(), BROTLI_PARAM_LGWIN, options.window_log);
  if (options.window_log > BROTLI_MAX_WINDOW_BITS) {
    BrotliEncoderSetParameter(encoder.get(), BROTLI_PARAM_LARGE_WINDOW, 1);
  }
  BrotliEncoderSetParameter(encoder.get(), BROTLI_PARAM_SIZE_HINT,
                            static_cast<uint32_t>(std::min<size_t>(src.size(), 1u << 30)));
  size_t available_in = src.size();
  const auto* next_in = reinterpret_cast<const uint8_t*>(src.data());
  while (!BrotliEncoderIsFinished(encoder.get())) {
    size_t available_out = 0;
    if (!BrotliEncoderCompressStream(encoder.get(), BROTLI_OPERATION_FINISH, &available_in,
                                     &next_in, &available_out, nullptr, nullptr)) {
      throw std::runtime_error("brotli compression failed");
    }
    size_t size = 0;
    const uint8_t* output = BrotliEncoderTakeOutput(encoder.get(), &size);
    out.append(reinterpret_cast<const char*>(output), size);
  }
}

void AppendSnappy(std::string_view src, std::string& out) {
  if (src.size() > std::numeric_limits<uint32_t>::max()) {
    throw std::invalid_argument("snappy cannot compress a buffer of 4 GiB or more");
  }
  const size_t old_size = out.size();
  out.resize(old_size + snappy::MaxCompressedLength(src.size()));
  size_t n = 0;
  snappy::RawCompress(src.data(), src.size(), out.data() + old_size, &n);
  out.resize(old_size + n);
}

void DecompressZstd(std::string_view src, char* dst_data, size_t dst_size) {
  const size_t n =
      ZSTD_decompressDCtx(ThreadZstdDCtx(), dst_data, dst_size, src.data(), src.size());
  if (ZSTD_isError(n)) throw FormatError(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != dst_size) {
    throw FormatError("zstd stream decodes to " + std::to_string(n) + " bytes, not the stated " +
                      std::to_string(dst_size));
  }
}

void DecompressBrotli(std::string_view src, char* dst_data, size_t dst_size) {
  BrotliDecoder decoder(NotNull(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr)));
  BrotliDecoderSetParameter(decoder.get(), BROTLI_DECODER_PARAM_LARGE_WINDOW, 1);
  size_t available_in = src.size();
  const auto* next_in = reinterpret_cast<const uint8_t*>(src.data());
  size_t available_out = dst_size;
  auto* next_out = reinterpret_cast<uint8_t*>(dst_data);
  switch (BrotliDecoderDecompressStream(decoder.get(), &available_in, &next_in, &available_out,
                                        &next_out, nullptr)) {
    case BROTLI_DECODER_RESULT_SUCCESS:
      if (available_in != 0) throw FormatError("brotli: data after the end of the stream");
      if (available_out != 0) throw FormatError("brotli stream decodes to fewer bytes than stated");
      return;
    case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
      throw FormatError("brotli stream decodes to more bytes than stated");
    case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
      throw FormatError("brotli stream is truncated");
    case BROTLI_DECODER_RESULT_ERROR:
      break;
  }
  throw FormatError(std::string("brotli: ") +
                    BrotliDecoderErrorString(BrotliDecoderGetErrorCode(decoder.get())));
}

void DecompressSnappy(std::string_view src, char* dst_data, size_t dst_size) {
  size_t n = 0;
  if (!snappy::GetUncompressedLength(src.data(), src.size(), &n) || n != dst_size) {
    throw FormatError("snappy block does not state the expected size");
  }
  if (!snappy::RawUncompress(src.data(), src.size(), dst_data)) {
    throw FormatError("snappy block is corrupt");
  }
}

}  // namespace

CompressionType ParseCompressionType(uint8_t byte) {
  switch (static_cast<CompressionType>(byte)) {
    case CompressionType::kNone:
    case CompressionType::kBrotli:
    case CompressionType::kZstd:
    case CompressionType::kSnappy:
      return static_cast<CompressionType>(byte);
  }
  throw FormatError("unknown compression type " + std::to_string(byte));
}

std::string_view CompressionName(CompressionType type) {
  switch (type) {
    case CompressionType::kNone: return "uncompressed";
    case CompressionType::kBrotli: return "brotli";
    case CompressionType::kZstd: return "zstd";
    case CompressionType::kSnappy: return "snappy";
  }
  return "unknown";
}

void AppendCompressed(const CompressionOptions& options, std::string_view src, std::string& out) {
  if (options.type == CompressionType::kNone) {
    out.append(src);
    return;
  }
  AppendVarint64(src.size(), out);
  switch (options.type) {
    case CompressionType::kZstd: return AppendZstd(options, src, out);
    case CompressionType::kBrotli: return AppendBrotli(options, src, out);
    case CompressionType::kSnappy: return AppendSnappy(src, out);
    case CompressionType::kNone: return;
  }
}

namespace {

// Decompress() with the output placed in `allocate(size)`.
template <typename Allocate>
std::string_view DecompressWith(CompressionType type, std::string_view framed, uint64_t max_size,
                                Allocate allocate) {
  if (type == CompressionType::kNone) {
    if (framed.size() > max_size) {
      throw FormatError("buffer of " + std::to_string(framed.size()) + " bytes exceeds the limit " +
                        std::to_string(max_size));
    }
    return framed;
  }
  uint64_t size = 0;
  if (!ReadVarint64(framed, size)) throw FormatError("bad decompressed size varint");
  if (size > max_size) {
    throw FormatError("stated decompressed size " + std::to_string(size) + " exceeds the limit " +
                      std::to_string(max_size));
  }
  char* const dst = allocate(size);
  switch (type) {
    case CompressionType::kZstd: DecompressZstd(framed, dst, size); break;
    case CompressionType::kBrotli: DecompressBrotli(framed, dst, size); break;
    case CompressionType::kSnappy: DecompressSnappy(framed, dst, size); break;
    case CompressionType::kNone: break;
  }
  return std::string_view(dst, size);
}

}  // namespace

std::string_view Decompress(CompressionType type, std::string_view framed, uint64_t max_size,
                            Buffer& storage) {
  return DecompressWith(type, framed, max_size, [&](uint64_t size) {
    storage = Buffer(size);
    return storage.data();
  });
}

std::string_view Decompress(CompressionType type, std::string_view framed, uint64_t max_size,
                            ScratchBuffer& scratch) {
  return DecompressWith(type, framed, max_size,
                        [&](uint64_t size) { return scratch.Get(size); });
}

std::string_view Decompress(CompressionType type, std::string_view framed, uint64_t max_size,
                            std::string& out) {
  return DecompressWith(type, framed, max_size, [&](uint64_t size) {
    out.resize(size);
    return out.data();
  });
}

}  // namespace spelt::internal::riegeli
