// spelt/vision.h: the native image kernels of spelt.vision (issue 23): JPEG decoding with
// libjpeg-turbo, PNG (our own decoder on zlib) and WebP with libwebp, EXIF orientation,
// torchvision's RandomResizedCrop parameters, Pillow's antialiased bilinear and nearest
// resizes, the fused JPEG decode + crop + resize, and the horizontal flip. They are the C++
// counterparts of the Python reference in python/spelt/vision/ (docs/vision.md) and follow it:
// the same pixels (resize), the same crop from the same random draws, the same conversions.
//
// Images: an Image is a uint8 array of shape (height, width, channels), HWC, rows packed with
// no padding (row stride = width * channels). Decoders give RGB (channels = 3); the resize and
// the flip take 1 to 4 channels.
//
// Errors: undecodable input throws CorruptImageError (spelt/errors.h) whose what() names the
// format, the input's size and the decoder's own message; bad arguments (an empty crop, a crop
// outside the image, a zero output size) throw std::invalid_argument.
//
// Thread-safety: every function is a pure function of its arguments and keeps no state between
// calls (each call has its own libjpeg decoder), so any number of threads may call them at
// once. A CropDraws source is stateful and is used by one thread at a time.
#ifndef SPELT_VISION_H_
#define SPELT_VISION_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "spelt/random.h"

namespace spelt::vision {

// A uint8 HWC image that owns its pixels.
struct Image {
  int height = 0;
  int width = 0;
  int channels = 3;
  // height * width * channels bytes, row-major: pixel (y, x) channel c at
  // (y * width + x) * channels + c.
  std::vector<uint8_t> pixels;

  // Zero-filled image of that shape. REQUIRES: height, width >= 0, channels in [1, 4].
  static Image Zeros(int height, int width, int channels);
  size_t row_bytes() const { return static_cast<size_t>(width) * channels; }
  uint8_t* row(int y) { return pixels.data() + static_cast<size_t>(y) * row_bytes(); }
  const uint8_t* row(int y) const { return pixels.data() + static_cast<size_t>(y) * row_bytes(); }
};

// ---------------------------------------------------------------------------------------
// JPEG
// ---------------------------------------------------------------------------------------

// What a JPEG's header says, without decoding the pixels.
struct JpegHeader {
  int height = 0;
  int width = 0;
  int components = 0;  // 1 (grayscale), 3 (YCbCr or RGB) or 4 (CMYK or YCCK)
  bool progressive = false;
};

// Reads the header of the JPEG in `data`. Throws CorruptImageError if it is not a JPEG or its
// header is truncated or corrupt.
JpegHeader ReadJpegHeader(std::span<const uint8_t> data);

// Decodes the whole JPEG in `data` to RGB with libjpeg-turbo's default (accurate integer)
// IDCT and fancy upsampling, the settings Pillow uses, so the output equals
// np.asarray(PIL.Image.open(f).convert("RGB")). Grayscale images repeat the gray level in R, G
// and B; CMYK and YCCK images are converted as Pillow does (Adobe's inverted CMYK, then
// R = (255 - C)(255 - K) / 255 with Pillow's rounding, no ICC colour management).
// Throws CorruptImageError with libjpeg's message for input that is not a JPEG, truncated
// ("Premature end of JPEG file") or corrupt where libjpeg notices; libjpeg's other warnings
// (e.g. extraneous bytes before a marker) are ignored, as Pillow ignores them.
Image DecodeJpeg(std::span<const uint8_t> data);

// A crop rectangle in pixels: rows [top, top + height), columns [left, left + width).
struct CropBox {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  bool operator==(const CropBox&) const = default;
};

// The fused path of RandomResizedCrop on a JPEG: returns an approximation of
// ResizeBilinearAntialias(crop of DecodeJpeg(data), out_height, out_width) that decodes only
// what the crop needs: the rows above the crop are skipped (jpeg_skip_scanlines), those below it
// are never decoded, and only the iMCU columns that cover it are (jpeg_crop_scanline), with a
// guard of a quarter iMCU on each side so that libjpeg's edge upsampling never reaches the
// crop. With `mirror`, the output is mirrored left to right (FlipHorizontal of it, at no cost:
// RandomHorizontalFlip fused). Where
// the crop is at least 3x the output in both dimensions, libjpeg-turbo's DCT scaling decodes at
// 1/2, 1/4 or 1/8 of the size (JpegScaleDenominator), and the resize starts from the scaled crop
// with the crop's exact (fractional) box.
// Exactness: with no DCT scaling the result equals the unfused path to the bit; with it, the
// pixels differ slightly (PSNR >= 40.7 dB on scikit-learn's photographs; tests require 38 dB).
// Scaling starts at 3x rather than 2x because at 2x the PSNR fell to 35.5 dB.
// Truncation or corruption in rows the crop does not need may go unnoticed.
// Throws CorruptImageError as DecodeJpeg; std::invalid_argument if `crop` is empty or not
// inside the image or an output side is < 1.
Image DecodeJpegCropResize(std::span<const uint8_t> data, const CropBox& crop, int out_height,
                           int out_width, bool mirror = false);
// The same, written to `out`: out_height * out_width * 3 bytes, rows packed (for example one
// image's place in a batch). On an exception `out` may be partly written.
void DecodeJpegCropResizeInto(std::span<const uint8_t> data, const CropBox& crop,
                              int out_height, int out_width, bool mirror, uint8_t* out);

// The DCT scaling denominator (1, 2, 4 or 8) that DecodeJpegCropResize uses for a crop of
// crop_height x crop_width resized to out_height x out_width: the largest d with
// crop >= 1.5 * d * output on both sides, else 1.
int JpegScaleDenominator(int crop_height, int crop_width, int out_height, int out_width);

// ---------------------------------------------------------------------------------------
// PNG and WebP
// ---------------------------------------------------------------------------------------

// Decodes the PNG in `data` (PNG spec, W3C 2003; our decoder on zlib's inflate, as Pillow's
// own PNG plugin: Debian's libpng cannot enter the manylinux_2_28 wheel) to RGB as Pillow's
// Image.open(f).convert("RGB") gives it: palettes expanded, gray repeated in R, G and B (1, 2
// and 4 bits scaled to 8), alpha and tRNS dropped without compositing, 16-bit samples reduced
// to their high byte (as Pillow for 16-bit colour; python/spelt/vision/decode.py does the same
// for 16-bit gray, where Pillow's convert would clip), interlaced images deinterlaced, no gamma
// or colour correction. APNG: the default image. Throws CorruptImageError naming the fault for
// input that is not a PNG, truncated or corrupt (e.g. a bad chunk CRC; IDAT CRCs are not checked,
// as Pillow) or above 2**31 decoded bytes.
Image DecodePng(std::span<const uint8_t> data);

// Decodes the still WebP (lossy or lossless, with or without alpha) in `data` to RGB with
// libwebp (libwebp-dev), the decoder Pillow uses: alpha dropped, colour values as decoded.
// Throws CorruptImageError for input that is not a WebP, truncated or corrupt or above 2**31
// decoded bytes; std::invalid_argument for an animated WebP (not decoded here).
Image DecodeWebp(std::span<const uint8_t> data);

// ---------------------------------------------------------------------------------------
// EXIF orientation
// ---------------------------------------------------------------------------------------

// The orientation of the JPEG in `data` as Pillow's Image.getexif() reads it: the Orientation
// tag (0x0112) of the first APP1 segment that starts "Exif\0\0" before the first scan (its
// TIFF header in either byte order, IFD0), or where that has none, the tiff:Orientation of the
// last XMP packet (APP1 "http://ns.adobe.com/xap/1.0/"). Returns 1 to 8; 1 where there is
// none, it is not one SHORT or LONG value in 1..8, or the data is damaged (Pillow's
// ImageOps.exif_transpose then does nothing either). Never throws for bad input.
int JpegExifOrientation(std::span<const uint8_t> data);

// `image` turned upright as an EXIF orientation says, as Pillow's ImageOps.exif_transpose:
// 1 as is, 2 mirrored, 3 rotated 180 degrees, 4 flipped top to bottom, 5 transposed, 6 rotated
// 90 degrees clockwise, 7 transversed, 8 rotated 90 degrees counter-clockwise (5 to 8 swap
// height and width). Throws std::invalid_argument for an orientation outside 1..8.
Image ApplyExifOrientation(const Image& image, int orientation);

// ---------------------------------------------------------------------------------------
// Crop parameters
// ---------------------------------------------------------------------------------------

// The random numbers RandomResizedCropParams consumes, in the kinds of numpy's Generator.
class CropDraws {
 public:
  virtual ~CropDraws() = default;
  // A double in [lo, hi): numpy's Generator.uniform(lo, hi).
  virtual double Uniform(double lo, double hi) = 0;
  // An integer in [lo, hi): numpy's Generator.integers(lo, hi). REQUIRES: lo < hi.
  virtual int64_t Integers(int64_t lo, int64_t hi) = 0;
};

// numpy's Generator(Philox) draws over a spelt::Philox, bit-exactly: Uniform is
// lo + (hi - lo) * random() (53-bit doubles) and Integers is numpy's bounded integers (Lemire's
// method on 32-bit halves of the 64-bit outputs, the high half kept for the next 32-bit draw, and
// no draw at all when hi - lo == 1). So a Philox built as the pipeline builds an element's
// generator gives the crop the Python reference draws from that element's numpy Generator.
// REQUIRES for Integers: hi - lo <= 2^32. Holds a reference to `philox`, which must outlive it,
// and is the only user of it while in use (the half-word buffer lives here).
class PhiloxCropDraws final : public CropDraws {
 public:
  explicit PhiloxCropDraws(Philox& philox) : philox_(philox) {}
  double Uniform(double lo, double hi) override;
  int64_t Integers(int64_t lo, int64_t hi) override;

 private:
  uint32_t NextUint32();
  Philox& philox_;
  bool has_uint32_ = false;
  uint32_t uint32_ = 0;
};

// torchvision's RandomResizedCrop.get_params as python/spelt/vision/crop.py's
// random_resized_crop_params implements it, with its draws from `draws` in the same order:
// up to 10 attempts of Uniform(scale) and Uniform(log ratio) (area, then exp of the log aspect),
// w = round(sqrt(area * s * r)), h = round(sqrt(area * s / r)) (half to even); the first attempt
// that fits draws Integers(0, height - h + 1) then Integers(0, width - w + 1); otherwise the
// centred crop with its aspect ratio clamped to `ratio`, sides at least 1. Given the same draws
// the result equals the Python reference's.
// Throws std::invalid_argument if height or width < 1, or scale / ratio are not (min, max) with
// 0 < min <= max.
CropBox RandomResizedCropParams(int height, int width, std::pair<double, double> scale,
                                std::pair<double, double> ratio, CropDraws& draws);

// ---------------------------------------------------------------------------------------
// Resize and flip
// ---------------------------------------------------------------------------------------

// Pillow's Image.resize((out_width, out_height), BILINEAR) of `image` (1 to 4 channels, each
// resampled on its own: Pillow's RGB and L; not RGBA, which Pillow premultiplies): a triangle
// filter whose support grows with the reduction factor (antialiased), separable, horizontal
// pass first, coefficients in Pillow's 22-bit fixed point, so the output equals Pillow's.
// Returns a copy where the size is unchanged. Throws std::invalid_argument if an output side is
// < 1 or the image is empty.
Image ResizeBilinearAntialias(const Image& image, int out_height, int out_width);

// The same resampling of the region box = (x0, y0, x1, y1) of `image` (Pillow's `box`
// argument, in pixels, fractional allowed): the filter is centred within the box but reads any
// pixel of `image` under its support. REQUIRES 0 <= x0 < x1 <= width, 0 <= y0 < y1 <= height
// (std::invalid_argument otherwise).
Image ResizeBilinearAntialiasBox(const Image& image, double x0, double y0, double x1, double y1,
                                 int out_height, int out_width);

// Pillow's Image.resize((out_width, out_height), NEAREST) of `image` (1 to 4 channels; RGBA
// too, which Pillow does not premultiply for NEAREST): output pixel (y, x) is input pixel
// (int(y'), int(x')), where x' starts at a / 2 for a = width / out_width and adds a once per
// column in double precision, as Pillow's ImagingScaleAffine (libImaging/Geometry.c) does (so
// its rounding is Pillow's, not that of (x + 0.5) * a); rows likewise. Equal to Pillow's output.
// Returns a copy where the size is unchanged. Throws std::invalid_argument if an output side is
// < 1 or the image is empty.
Image ResizeNearest(const Image& image, int out_height, int out_width);

// The image mirrored left to right, in place of the image given (pass a copy, or move in an
// image no longer needed).
Image FlipHorizontal(Image image);

}  // namespace spelt::vision

#endif  // SPELT_VISION_H_
