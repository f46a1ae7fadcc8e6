// Internal: the buffered front-to-back writing of the ArrayRecord and TFRecord writers over a
// WritableFile (spelt/file_system.h): bytes are gathered into 1 MiB pieces before each
// WritableFile::Write, so a remote file sees few large writes. Not thread-safe. Throws what
// the WritableFile throws (naming the path).
#ifndef SPELT_SRC_IO_APPEND_FILE_H_
#define SPELT_SRC_IO_APPEND_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "spelt/file_system.h"

namespace spelt::internal::io {

class AppendFile {
 public:
  // Creates or truncates `uri` with `fs` (null: the filesystem registered for its scheme).
  explicit AppendFile(const std::string& uri, const FileSystemPtr& fs = nullptr);
  // Drops the buffer if Close() was not called (the file may be left partial or absent).
  ~AppendFile() = default;
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void Append(std::string_view bytes);
  void AppendZeros(uint64_t n);
  // Writes the buffer out and closes the file.
  void Close();

 private:
  void Flush();

  std::unique_ptr<WritableFile> file_;
  std::string buffer_;
};

}  // namespace spelt::internal::io

#endif  // SPELT_SRC_IO_APPEND_FILE_H_
