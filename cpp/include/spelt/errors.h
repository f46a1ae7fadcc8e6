// spelt/errors.h: exceptions for bad file contents, shared by every file format that Spelt
// reads (Riegeli/ArrayRecord, TFRecord), and for undecodable images (spelt/vision.h). what() names the file and the byte offset; callers
// catch FileFormatError for any of them. The Python face raises them as ValueError
// subclasses (cpp/python/bind_errors.cc translates every engine exception in one place).
#ifndef SPELT_ERRORS_H_
#define SPELT_ERRORS_H_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spelt {

// A problem with a file's contents at a known byte offset. Base of the two errors below.
class FileFormatError : public std::runtime_error {
 public:
  const std::string& path() const noexcept { return path_; }
  // Byte offset in the file of the structure found wrong (a block header, a chunk, ...).
  uint64_t offset() const noexcept { return offset_; }
  // What was found wrong there (the end of what()).
  const std::string& detail() const noexcept { return detail_; }

 protected:
  FileFormatError(std::string_view kind, std::string path, uint64_t offset,
                  std::string_view detail);

 private:
  std::string path_;
  uint64_t offset_;
  std::string detail_;
};

// The file is not a valid file of its format. Message: "<path>: corrupt <format> file at byte
// offset <offset>: <detail>", where `format` is "ArrayRecord" unless given (e.g. "TFRecord").
class CorruptFileError final : public FileFormatError {
 public:
  CorruptFileError(std::string path, uint64_t offset, std::string_view detail,
                   std::string_view format = "ArrayRecord");
};

// The file is valid but uses a feature that is not implemented. Message: "<path>: unsupported
// ArrayRecord feature at byte offset <offset>: <detail>".
class UnsupportedError final : public FileFormatError {
 public:
  UnsupportedError(std::string path, uint64_t offset, std::string_view detail);
};

// Encoded image bytes (an element, not a file) that cannot be decoded: not an image of the
// format, truncated, or corrupt where the decoder notices. Message: "corrupt <format> image
// (<size> bytes): <detail>", where detail is the decoder's own message (libjpeg's for JPEG).
class CorruptImageError final : public std::runtime_error {
 public:
  CorruptImageError(std::string_view format, size_t size, std::string_view detail);
  // The decoder's message (the end of what()).
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string detail_;
};

}  // namespace spelt

#endif  // SPELT_ERRORS_H_
