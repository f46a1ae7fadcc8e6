// TFRecordCompression names and detection (spelt/tfrecord.h).
#include <stdexcept>
#include <string>

#include "spelt/tfrecord.h"
#include "tfrecord/format.h"
#include "tfrecord/input_stream.h"

namespace spelt {

TFRecordCompression ParseTFRecordCompression(std::string_view name) {
  if (name.empty()) return TFRecordCompression::kNone;
  if (name == "GZIP") return TFRecordCompression::kGzip;
  if (name == "ZLIB") return TFRecordCompression::kZlib;
  throw std::invalid_argument("TFRecord compression must be \"\", \"GZIP\" or \"ZLIB\", got \"" +
                              std::string(name) + "\"");
}

std::string_view TFRecordCompressionName(TFRecordCompression compression) {
  switch (compression) {
    case TFRecordCompression::kGzip:
      return "GZIP";
    case TFRecordCompression::kZlib:
      return "ZLIB";
    case TFRecordCompression::kNone:
      break;
  }
  return "";
}

TFRecordCompression DetectTFRecordCompression(const std::string& path, const FileSystemPtr& fs) {
  return internal::tfrecord::DetectCompression(*OpenRandomAccessFile(path, fs));
}

TFRecordCompression internal::tfrecord::DetectCompression(const RandomAccessFile& file,
                                                         internal::SequentialReads* reads) {
  char head[internal::tfrecord::kHeaderSize];
  const auto n = static_cast<size_t>(std::min<uint64_t>(file.size(), sizeof(head)));
  if (reads != nullptr) {
    reads->Read(0, head, n);
  } else {
    file.ReadAt(0, head, n);
  }
  if (n == sizeof(head) && internal::tfrecord::DecodeHeader(head)) {
    return TFRecordCompression::kNone;  // a valid first record, whatever its bytes look like
  }
  const auto b0 = static_cast<unsigned char>(head[0]), b1 = static_cast<unsigned char>(head[1]);
  if (n >= 3 && b0 == 0x1f && b1 == 0x8b && head[2] == 8) return TFRecordCompression::kGzip;
  // RFC 1950: CM = 8 (deflate), CINFO <= 7, no preset dictionary, FCHECK makes it a multiple
  // of 31.
  if (n >= 2 && (b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && (b1 & 0x20) == 0 && (b0 * 256 + b1) % 31 == 0) {
    return TFRecordCompression::kZlib;
  }
  return TFRecordCompression::kNone;
}

}  // namespace spelt
