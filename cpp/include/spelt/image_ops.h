// spelt/image_ops.h: spelt.vision's transforms (python/spelt/vision/) as engine functions, so
// that a pipeline decodes and augments images on the engine's threads without Python
// (issue 23). Each ImageOp is one transform with its parameters; ApplyImageOps runs a chain of
// them on an element, reading the image at the element or at one field of a dict element, and
// returns the element with that image replaced, as the Python reference does. The kernels are
// those of spelt/vision.h; where a DecodeImage of a JPEG is directly followed by a
// bilinear RandomResizedCrop or Resize, the two run as the fused DecodeJpegCropResize (the crop's
// rows and columns alone are decoded; see spelt/vision.h for its exactness), also across chains
// through ImageOp::defer_decode.
//
// Elements: the image leaf is encoded bytes (a bytes String or a 1-D uint8 array) before a
// DecodeImage and a uint8 array of shape (height, width, channels), channels 1, 3 or 4, after
// it. DecodeImage gives RGB (3 channels); Normalize gives float32 or bfloat16 (a BFloat16Array
// leaf, spelt/bfloat16_array.h), HWC or CHW, and ends what a chain can do natively (later ops
// take uint8 images).
//
// Fallbacks: what the kernels do not take is handed to ImageOpFallbacks, which the Python face
// fills with its reference implementation (bytes that are not a JPEG, PNG or still WebP, or
// that libjpeg, the PNG decoder or libwebp refuse, to its Pillow decoder, so that Pillow's error is
// raised; 4-channel images to Pillow's resize; anything else to the transform itself so that
// its own error is raised). An empty fallback makes such input a std::invalid_argument naming
// the transform (CorruptImageError for bytes).
//
// Random draws: RandomResizedCrop and RandomHorizontalFlip draw from the Philox stream given to
// ApplyImageOps, in the order and kinds of numpy's Generator (PhiloxCropDraws), so a chain
// draws what the Python reference draws from the Generator built on the same stream. One stream
// serves the whole chain, as one Generator serves all of a DataLoader record's RandomMaps.
//
// Its time counts as parallel work (spelt/parallel_work.h), so that read threads run it even
// behind a Python source.
//
// Thread-safety: ImageOp is an immutable value; ApplyImageOps may run on any number of threads
// at once (each call has its own decoder state). Fallbacks are called from those threads and
// must be thread-safe themselves (the Python face takes the GIL in them).
#ifndef SPELT_IMAGE_OPS_H_
#define SPELT_IMAGE_OPS_H_

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "spelt/random.h"
#include "spelt/value.h"

namespace spelt::vision {

// One transform of spelt.vision and its parameters (the Python classes' fields).
struct ImageOp {
  enum class Kind {  // kNormalize last (bind_vision.cc walks them)
    kDecode,                // DecodeImage(mode="RGB", exif_orientation, on_error)
    kRandomResizedCrop,     // RandomResizedCrop(size, scale, ratio, interpolation)
    kResize,                // Resize(size, interpolation)
    kCenterCrop,            // CenterCrop(size)
    kRandomHorizontalFlip,  // RandomHorizontalFlip(p)
    kNormalize,             // Normalize(mean, std, dtype, layout)
  };
  Kind kind = Kind::kDecode;
  // nullopt: the element is the image; else element[field] of a dict element.
  std::optional<std::string> field;
  // The output (height, width) of RandomResizedCrop, CenterCrop and an exact Resize.
  int height = 0;
  int width = 0;
  // Resize to a shorter side of this many pixels (torchvision's rule); 0 for an exact size.
  int shorter_side = 0;
  // RandomResizedCrop and Resize: Pillow's NEAREST (ResizeNearest), else BILINEAR. Only
  // BILINEAR fuses with a JPEG decode (a nearest resize decodes the whole JPEG first).
  bool nearest = false;
  std::pair<double, double> scale{0.08, 1.0};               // RandomResizedCrop
  std::pair<double, double> ratio{3.0 / 4.0, 4.0 / 3.0};    // RandomResizedCrop
  double p = 0.5;                                           // RandomHorizontalFlip
  // Normalize: one value per channel (per_channel; an image with another number of channels
  // goes to the reference, which raises), or one value for every channel.
  std::vector<float> mean;
  std::vector<float> std;
  bool per_channel = false;
  bool chw = false;  // Normalize: CHW output layout (else HWC)
  bool bfloat16 = false;  // Normalize: bfloat16 output (a BFloat16Array leaf), else float32
  // DecodeImage: turn a JPEG upright as its EXIF Orientation says (JpegExifOrientation); one
  // with an orientation other than 1 is decoded in full (never fused with a crop). PNG and WebP
  // bytes then go to the fallback decoder (Pillow's EXIF handling of their chunks).
  bool exif_orientation = false;
  // DecodeImage(on_error="skip"): bytes that do not decode (CorruptImageError, also from the
  // fallback decoder, and where a later op decodes a deferred JPEG) make ApplyImageOps return
  // None for the element instead of throwing.
  bool skip_corrupt = false;
  // DecodeImage: a JPEG leaves the chain undecoded, as an Opaque leaf that decodes in full when
  // unpacked, so that a RandomResizedCrop or Resize in the next chain (of the next dataset
  // node) fuses it with its decode. For a decode whose only reader is such a chain.
  bool defer_decode = false;
  // A short name for messages, e.g. "RandomResizedCrop".
  std::string_view name() const;
  // True for the ops that draw random numbers.
  bool random() const {
    return kind == Kind::kRandomResizedCrop || kind == Kind::kRandomHorizontalFlip;
  }
};

// What the kernels leave to the caller; see the header comment. Each may be empty.
struct ImageOpFallbacks {
  // The transform's reference applied to an image leaf the kernels do not take (not bytes for
  // a decode, not a uint8 HWC array after it, channels that differ from Normalize's): it
  // returns the op's output for that leaf or throws the transform's own error. For a random op
  // it must throw (std::logic_error if it returns: it would have drawn from another stream).
  std::function<Value(const Value& leaf)> op;
  // Decodes bytes the native decoders do not take (see above) into a uint8 HWC array.
  std::function<Array(std::span<const uint8_t> data)> decode;
  // Resizes a 4-channel image (Pillow premultiplies alpha) to (height, width).
  std::function<Array(const Array& image, int height, int width)> resize;
};

// Applies ops[0], ops[1], ... to `element` (all ops act on the same field: REQUIRES equal
// `field`s, else std::invalid_argument). `fallbacks` has one entry per op, or is empty.
// `rng` is required if any op is random(). Returns None where a DecodeImage with skip_corrupt
// meets undecodable bytes. Throws CorruptImageError (spelt/errors.h) for undecodable bytes,
// std::invalid_argument for bad input without a fallback, and whatever a fallback throws.
Value ApplyImageOps(std::span<const ImageOp> ops, std::span<const ImageOpFallbacks> fallbacks,
                    const Value& element, Philox* rng);

// ApplyImageOps for one element of a batch, its output written into `slot` (an array of the
// output's dtype and shape: one element's place in a batch's buffer). The last kernel writes
// there itself where it can (the fused JPEG decode's resize, with or without a fused flip; a
// flip of an image array, also in place when `element` is the slot's own array; Normalize's
// float32 output); any other array output of the slot's dtype and shape is copied in. Returns
// false, with nothing the caller relies on written, where the output is not such an array
// (another shape or dtype, None, bfloat16, a dict element's field): the caller then calls
// ApplyImageOps. Throws as ApplyImageOps.
bool ApplyImageOpsInto(std::span<const ImageOp> ops, std::span<const ImageOpFallbacks> fallbacks,
                       const Value& element, Philox* rng, const Array& slot);

}  // namespace spelt::vision

#endif  // SPELT_IMAGE_OPS_H_
