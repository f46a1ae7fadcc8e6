// Internal: the file access of the ArrayRecord reader and writer. RandomAccessFile reads at
// offsets with pread on one descriptor (safe from many threads at once); AppendFile writes a
// new file through a buffer. Both throw std::system_error naming the path on an OS error.
#ifndef SPELT_SRC_IO_FILE_H_
#define SPELT_SRC_IO_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace spelt::internal::io {

class RandomAccessFile {
 public:
  explicit RandomAccessFile(std::string path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  const std::string& path() const { return path_; }
  // Size when opened.
  uint64_t size() const { return size_; }
  // Reads `n` bytes at `offset` into `dst`. Throws CorruptFileError if the file ends first
  // (it shrank since it was opened).
  void ReadAt(uint64_t offset, char* dst, uint64_t n) const;

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class AppendFile {
 public:
  // Creates or truncates `path`.
  explicit AppendFile(std::string path);
  // Closes the descriptor without flushing the buffer if Close() was not called.
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void Append(std::string_view bytes);
  void AppendZeros(uint64_t n);
  // Writes the buffer out and closes the file.
  void Close();

 private:
  void Flush();
  void WriteFully(std::string_view bytes);

  std::string path_;
  int fd_;
  std::string buffer_;
};

}  // namespace spelt::internal::io

#endif  // SPELT_SRC_IO_FILE_H_
