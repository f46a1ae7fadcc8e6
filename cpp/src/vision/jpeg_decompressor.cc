// JpegDecompressor (jpeg_decompressor.h).
#include "vision/jpeg_decompressor.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "spelt/errors.h"

// clang-format off
#include <jerror.h>
// clang-format on

namespace spelt::vision::internal {
namespace {

// libjpeg's error_exit: keep the message and jump back to Guarded's setjmp.
[[noreturn]] void ErrorExit(j_common_ptr info) {
  auto* err = reinterpret_cast<JpegErrorManager*>(info->err);
  (*info->err->format_message)(info, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1) are counted and ignored as Pillow does, except a premature end of the
// data before the last pixel, after which libjpeg would invent gray pixels: that one fails. Trace
// messages (level >= 0) are dropped.
void EmitMessage(j_common_ptr info, int msg_level) {
  if (msg_level < 0) {
    if (info->err->msg_code == JWRN_JPEG_EOF &&
        reinterpret_cast<JpegErrorManager*>(info->err)->eof_is_error) {
      ErrorExit(info);
    }
    ++info->err->num_warnings;
  }
}

void OutputMessage(j_common_ptr) {}  // never print to stderr

// Pillow's CMYK JPEG decode ("CMYK;I": Adobe's inverted CMYK, as libjpeg gives it) followed by
// its cmyk2rgb: with C = 255 - c etc., R = CLIP8(nk - MULDIV255(C, nk)), nk = 255 - K = k.
inline uint8_t MulDiv255(int a, int b) {
  const int tmp = a * b + 128;
  return static_cast<uint8_t>(((tmp >> 8) + tmp) >> 8);
}

void CmykToRgb(const uint8_t* in, uint8_t* out, int width) {
  for (int x = 0; x < width; ++x, in += 4, out += 3) {
    const int nk = in[3];
    for (int c = 0; c < 3; ++c) {
      const int v = nk - MulDiv255(255 - in[c], nk);
      out[c] = static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
    }
  }
}

}  // namespace

JpegDecompressor::JpegDecompressor(std::span<const uint8_t> data) : data_(data) {
  static_assert(offsetof(JpegErrorManager, pub) == 0);
  std::memset(&info_, 0, sizeof(info_));
  info_.err = jpeg_std_error(&error_.pub);
  error_.pub.error_exit = ErrorExit;
  error_.pub.emit_message = EmitMessage;
  error_.pub.output_message = OutputMessage;
  error_.message[0] = '\0';
  // jpeg_create_decompress fails only for a library/version mismatch or out of memory.
  if (!Guarded([&] { jpeg_create_decompress(&info_); })) {
    jpeg_destroy_decompress(&info_);
    Throw();
  }
  // jpeg_mem_src fails for empty input ("Empty input buffer").
  if (!Guarded([&] {
        jpeg_mem_src(&info_, data_.data(), static_cast<unsigned long>(data_.size()));
      })) {
    jpeg_destroy_decompress(&info_);
    Throw();
  }
}

JpegDecompressor::~JpegDecompressor() { jpeg_destroy_decompress(&info_); }

void JpegDecompressor::Throw() const {
  throw CorruptImageError("JPEG", data_.size(), error_.message);
}

JpegHeader JpegDecompressor::ReadHeader() {
  if (!Guarded([&] { jpeg_read_header(&info_, TRUE); })) Throw();
  JpegHeader header;
  header.height = static_cast<int>(info_.image_height);
  header.width = static_cast<int>(info_.image_width);
  header.components = info_.num_components;
  header.progressive = info_.progressive_mode != 0;
  return header;
}

void JpegDecompressor::Start(int scale_denom) {
  cmyk_ = info_.num_components == 4;
  info_.out_color_space = cmyk_ ? JCS_CMYK : JCS_RGB;
  info_.scale_num = 1;
  info_.scale_denom = static_cast<unsigned int>(scale_denom);
  if (!Guarded([&] { jpeg_start_decompress(&info_); })) Throw();
  if (cmyk_) cmyk_row_.resize(static_cast<size_t>(info_.output_width) * 4);
}

void JpegDecompressor::CropColumns(int* xoffset, int* width) {
  JDIMENSION x = static_cast<JDIMENSION>(*xoffset);
  JDIMENSION w = static_cast<JDIMENSION>(*width);
  if (!Guarded([&] { jpeg_crop_scanline(&info_, &x, &w); })) Throw();
  *xoffset = static_cast<int>(x);
  *width = static_cast<int>(w);
  if (cmyk_) cmyk_row_.resize(static_cast<size_t>(info_.output_width) * 4);
}

void JpegDecompressor::SkipRows(int rows) {
  if (rows <= 0) return;
  if (!Guarded([&] { jpeg_skip_scanlines(&info_, static_cast<JDIMENSION>(rows)); })) Throw();
}

void JpegDecompressor::ReadRows(int rows, uint8_t* dst, size_t stride) {
  // Up to kBatch rows per call (libjpeg hands out a row group at a time), CMYK one at a time
  // through the conversion buffer.
  constexpr int kBatch = 16;
  for (int y = 0; y < rows;) {
    JSAMPROW pointers[kBatch];
    const int n = cmyk_ ? 1 : std::min(kBatch, rows - y);
    for (int k = 0; k < n; ++k) {
      pointers[k] = cmyk_ ? cmyk_row_.data() : dst + static_cast<size_t>(y + k) * stride;
    }
    JDIMENSION got = 0;
    if (!Guarded([&] { got = jpeg_read_scanlines(&info_, pointers, n); })) Throw();
    if (got == 0) {
      // With an in-memory source libjpeg never suspends; this would be a libjpeg bug.
      throw CorruptImageError("JPEG", data_.size(), "libjpeg returned no scanline");
    }
    if (cmyk_) {
      CmykToRgb(cmyk_row_.data(), dst + static_cast<size_t>(y) * stride,
                static_cast<int>(info_.output_width));
    }
    y += static_cast<int>(got);
  }
}

void JpegDecompressor::Finish() {
  error_.eof_is_error = false;
  if (!Guarded([&] { jpeg_finish_decompress(&info_); })) Throw();
}

}  // namespace spelt::vision::internal
