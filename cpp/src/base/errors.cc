// The exception types of spelt/errors.h.
#include <string>
#include <utility>

#include "spelt/errors.h"

namespace spelt {

FileFormatError::FileFormatError(std::string_view kind, std::string path, uint64_t offset,
                                 std::string_view detail)
    : std::runtime_error(path + ": " + std::string(kind) + " at byte offset " +
                         std::to_string(offset) + ": " + std::string(detail)),
      path_(std::move(path)),
      offset_(offset),
      detail_(detail) {}

CorruptFileError::CorruptFileError(std::string path, uint64_t offset, std::string_view detail,
                                   std::string_view format)
    : FileFormatError("corrupt " + std::string(format) + " file", std::move(path), offset,
                      detail) {}

UnsupportedError::UnsupportedError(std::string path, uint64_t offset, std::string_view detail)
    : FileFormatError("unsupported ArrayRecord feature", std::move(path), offset, detail) {}

CorruptImageError::CorruptImageError(std::string_view format, size_t size,
                                     std::string_view detail)
    : std::runtime_error("corrupt " + std::string(format) + " image (" + std::to_string(size) +
                         " bytes): " + std::string(detail)),
      detail_(detail) {}

}  // namespace spelt
