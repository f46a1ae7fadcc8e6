// ArrayRecordWriterOptions: array_record's option strings, defaults and validation.
#include "array_record/writer_options.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace spelt {
namespace {

using internal::riegeli::CompressionType;

constexpr int kDefaultZstdLevel = 3;
constexpr int kDefaultZstdWindowLog = 20;  // array_record forces it for zstd
constexpr int kDefaultBrotliLevel = 6;     // riegeli's defaults
constexpr int kDefaultBrotliWindowLog = 22;
constexpr uint64_t kMaxGroupSize = (uint64_t{1} << 31) - 1;

[[noreturn]] void Invalid(const std::string& message) {
  throw std::invalid_argument("ArrayRecord writer options: " + message);
}

template <typename T>
T ParseNumber(std::string_view option, std::string_view value) {
  T result{};
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (error != std::errc() || end != value.data() + value.size()) {
    Invalid("bad number in \"" + std::string(option) + "\"");
  }
  return result;
}

void CheckRange(const char* what, int value, int min, int max) {
  if (value < min || value > max) {
    Invalid(std::string(what) + " " + std::to_string(value) + " is outside [" +
            std::to_string(min) + ", " + std::to_string(max) + "]");
  }
}

bool IsZstdOrBrotli(ArrayRecordCompression compression) {
  return compression == ArrayRecordCompression::kZstd ||
         compression == ArrayRecordCompression::kBrotli;
}

}  // namespace

ArrayRecordWriterOptions ArrayRecordWriterOptions::FromString(std::string_view text) {
  ArrayRecordWriterOptions options;
  std::vector<std::string> seen;  // each option (compression counting as one) at most once
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view option = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (option.empty()) continue;
    const size_t colon = option.find(':');
    const std::string_view key = option.substr(0, colon);
    const bool has_value = colon != std::string_view::npos;
    const std::string_view value = has_value ? option.substr(colon + 1) : std::string_view();
    const bool is_compression =
        key == "uncompressed" || key == "zstd" || key == "brotli" || key == "snappy";
    const std::string slot = is_compression ? "compression" : std::string(key);
    if (std::find(seen.begin(), seen.end(), slot) != seen.end()) {
      Invalid("\"" + std::string(option) + "\": " + slot + " is given more than once");
    }
    seen.push_back(slot);
    const auto no_value = [&] {
      if (has_value) Invalid("\"" + std::string(key) + "\" takes no value");
    };
    const auto compression = [&](ArrayRecordCompression c, bool takes_level) {
      options.compression = c;
      options.compression_level.reset();
      if (!takes_level) return no_value();
      if (has_value) options.compression_level = ParseNumber<int>(option, value);
    };
    if (key == "group_size") {
      options.group_size = ParseNumber<uint64_t>(option, value);
    } else if (key == "uncompressed") {
      compression(ArrayRecordCompression::kUncompressed, false);
    } else if (key == "zstd") {
      compression(ArrayRecordCompression::kZstd, true);
    } else if (key == "brotli") {
      compression(ArrayRecordCompression::kBrotli, true);
    } else if (key == "snappy") {
      compression(ArrayRecordCompression::kSnappy, false);
    } else if (key == "window_log") {
      options.window_log = ParseNumber<int>(option, value);
    } else if (key == "pad_to_block_boundary" && value == "true") {
      options.pad_to_block_boundary = true;
    } else if (key == "pad_to_block_boundary" && (value.empty() || value == "false")) {
      // A bare pad_to_block_boundary means false since array_record 0.8.4.
      options.pad_to_block_boundary = false;
    } else if (key == "default") {
      no_value();  // array_record's explicit "all defaults"
    } else if (key == "transpose_bucket_size") {
      ParseNumber<uint64_t>(option, value);  // applies only to transposed chunks: ignored
    } else if (key == "transpose" && value == "false") {
      // The default.
    } else if (key == "transpose") {
      Invalid("transposed chunks (\"" + std::string(option) + "\") are not supported");
    } else if (key == "max_parallelism") {
      // Encoding is serial; the value is checked and ignored.
      if (value != "auto") ParseNumber<uint32_t>(option, value);
    } else {
      Invalid("unknown option \"" + std::string(option) + "\"");
    }
  }
  options.Validate();
  return options;
}

void ArrayRecordWriterOptions::Validate() const {
  if (group_size < 1 || group_size > kMaxGroupSize) {
    Invalid("group_size " + std::to_string(group_size) + " is outside [1, " +
            std::to_string(kMaxGroupSize) + "]");
  }
  if (!IsZstdOrBrotli(compression) && (compression_level || window_log)) {
    Invalid("compression level and window_log apply only to zstd and brotli");
  }
  if (compression == ArrayRecordCompression::kZstd) {
    if (compression_level) CheckRange("zstd level", *compression_level, -131072, 22);
    if (window_log) CheckRange("zstd window_log", *window_log, 10, 31);
  }
  if (compression == ArrayRecordCompression::kBrotli) {
    if (compression_level) CheckRange("brotli level", *compression_level, 0, 11);
    if (window_log) CheckRange("brotli window_log", *window_log, 10, 30);
  }
}

std::string ArrayRecordWriterOptions::ToString() const {
  const internal::riegeli::CompressionOptions codec = internal::array_record::CompressionOf(*this);
  std::string text = "group_size:" + std::to_string(group_size) +
                     ",transpose:false,pad_to_block_boundary:" +
                     (pad_to_block_boundary ? "true" : "false") + ",";
  text += internal::riegeli::CompressionName(codec.type);
  if (IsZstdOrBrotli(compression)) text.append(":").append(std::to_string(codec.level));
  // array_record shows window_log when it is set, which it always is for zstd.
  if (window_log || compression == ArrayRecordCompression::kZstd) {
    text.append(",window_log:").append(std::to_string(codec.window_log));
  }
  return text + ",max_parallelism:1";
}

namespace internal::array_record {

riegeli::CompressionOptions CompressionOf(const ArrayRecordWriterOptions& options) {
  switch (options.compression) {
    case ArrayRecordCompression::kUncompressed:
      return {CompressionType::kNone};
    case ArrayRecordCompression::kSnappy:
      return {CompressionType::kSnappy};
    case ArrayRecordCompression::kZstd:
      return {CompressionType::kZstd, options.compression_level.value_or(kDefaultZstdLevel),
              options.window_log.value_or(kDefaultZstdWindowLog)};
    case ArrayRecordCompression::kBrotli:
      return {CompressionType::kBrotli, options.compression_level.value_or(kDefaultBrotliLevel),
              options.window_log.value_or(kDefaultBrotliWindowLog)};
  }
  return {};
}

}  // namespace internal::array_record
}  // namespace spelt
