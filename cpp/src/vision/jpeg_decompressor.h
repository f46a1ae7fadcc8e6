// JpegDecompressor: one libjpeg-turbo decompression of a JPEG in memory, with libjpeg's errors
// turned into CorruptImageError. Shared by DecodeJpeg and DecodeJpegCropResize.
//
// libjpeg reports errors by calling error_exit, which must not return. Ours longjmps back to
// a setjmp taken in Guarded(), a small function that calls one libjpeg step through a lambda
// holding only trivially destructible values, so the jump skips C frames and that lambda only
// (never a C++ destructor, which would be undefined behaviour); the caller then throws from
// ordinary C++ code. Throwing from error_exit itself would unwind through libjpeg's C frames,
// which need not have unwind tables. Every call into libjpeg that can fail goes through
// Guarded (a failure outside it would jump to a stale jmp_buf).
#ifndef SPELT_VISION_JPEG_DECOMPRESSOR_H_
#define SPELT_VISION_JPEG_DECOMPRESSOR_H_

// clang-format off
#include <cstddef>
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on

#include <csetjmp>
#include <cstdint>
#include <span>
#include <vector>

#include "spelt/vision.h"

namespace spelt::vision::internal {

// libjpeg's error manager plus where error_exit jumps to and the message it formatted.
struct JpegErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg sees only this
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool eof_is_error = true;  // a premature end of the data fails the decode
};

class JpegDecompressor {
 public:
  // REQUIRES: `data` outlives this object.
  explicit JpegDecompressor(std::span<const uint8_t> data);
  ~JpegDecompressor();
  JpegDecompressor(const JpegDecompressor&) = delete;
  JpegDecompressor& operator=(const JpegDecompressor&) = delete;

  // jpeg_read_header. Throws CorruptImageError.
  JpegHeader ReadHeader();
  // Sets RGB output (CMYK for 4-component images, converted in ReadRows) at a scale of
  // 1/scale_denom and calls jpeg_start_decompress. REQUIRES: ReadHeader done.
  void Start(int scale_denom);
  // Size of the (scaled) output: valid after Start.
  int output_height() const { return static_cast<int>(info_.output_height); }
  int output_width() const { return static_cast<int>(info_.output_width); }
  // Size in output pixels of an iMCU (the unit of jpeg_crop_scanline's alignment and of
  // jpeg_skip_scanlines' whole-row skips): valid after Start.
  int imcu_width() const { return info_.max_h_samp_factor * info_.min_DCT_scaled_size; }
  int imcu_height() const { return info_.max_v_samp_factor * info_.min_DCT_scaled_size; }
  // jpeg_crop_scanline: decode only columns [*xoffset, *xoffset + *width) of each row, which
  // libjpeg widens to iMCU boundaries (both updated). Rows then have *width pixels.
  void CropColumns(int* xoffset, int* width);
  // jpeg_skip_scanlines(rows).
  void SkipRows(int rows);
  // Decodes the next `rows` rows as RGB into dst, rows `stride` bytes apart.
  void ReadRows(int rows, uint8_t* dst, size_t stride);
  // jpeg_finish_decompress (after every row has been read). The data may end there without its
  // EOI marker: Pillow accepts that too, every pixel having been decoded.
  void Finish();

 private:
  // Runs step(); false if libjpeg failed in it (message in error_.message).
  template <class Step>
  [[gnu::noinline]] bool Guarded(const Step& step) {
    if (setjmp(error_.jump) != 0) return false;
    step();
    return true;
  }
  [[noreturn]] void Throw() const;

  std::span<const uint8_t> data_;
  JpegErrorManager error_;
  jpeg_decompress_struct info_;
  bool cmyk_ = false;
  std::vector<uint8_t> cmyk_row_;  // libjpeg's CMYK output of one row
};

}  // namespace spelt::vision::internal

#endif  // SPELT_VISION_JPEG_DECOMPRESSOR_H_
