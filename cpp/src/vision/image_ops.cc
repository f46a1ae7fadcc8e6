// ApplyImageOps (spelt/image_ops.h): spelt.vision's transforms as one pass over an element.
#include "spelt/image_ops.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>

#include "spelt/bfloat16_array.h"
#include "spelt/errors.h"
#include "spelt/parallel_work.h"
#include "spelt/vision.h"

namespace spelt::vision {
namespace {

using Kind = ImageOp::Kind;

// Output images above this many bytes are refused, as python/spelt/vision/resize.py's
// MAX_OUTPUT_BYTES (2**31).
constexpr int64_t kMaxOutputBytes = int64_t{1} << 31;

// JPEG bytes whose decode is put off until the next op says what it needs. `owner` keeps
// `data` alive; `decoder` holds the DecodeImage's fallbacks; `skip_corrupt` its policy.
struct PendingJpeg {
  Value owner;
  std::span<const uint8_t> data;
  const ImageOpFallbacks* decoder = nullptr;
  bool skip_corrupt = false;
};

// The output already written into the caller's slot (ApplyImageOpsInto).
struct InSlot {};

// The image as it moves along a chain: the leaf as given, JPEG bytes not yet decoded, a uint8
// image, a finished array (Normalize's float32 output), or the output in the slot.
using Working = std::variant<Value, PendingJpeg, Image, Array, InSlot>;

bool IsJpeg(std::span<const uint8_t> data) {
  return data.size() >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

bool IsPng(std::span<const uint8_t> data) {
  static constexpr uint8_t kSignature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return data.size() >= 8 && std::equal(kSignature, kSignature + 8, data.begin());
}

bool IsWebp(std::span<const uint8_t> data) {
  return data.size() >= 12 && std::memcmp(data.data(), "RIFF", 4) == 0 &&
         std::memcmp(data.data() + 8, "WEBP", 4) == 0;
}

// The encoded bytes of a leaf: a bytes String or a 1-D uint8 array; nullopt for anything else.
std::optional<std::span<const uint8_t>> BytesOf(const Value& leaf) {
  if (leaf.is<String>() && !leaf.as<String>().is_text) {
    const std::string& s = leaf.as<String>().data;
    return std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  if (leaf.is<Array>()) {
    const Array& a = leaf.as<Array>();
    if (a.dtype == DType::kUint8 && a.shape.size() == 1) {
      return std::span(reinterpret_cast<const uint8_t*>(a.data), a.nbytes());
    }
  }
  return std::nullopt;
}

// A uint8 (H, W, C) array with H, W >= 1 and C in 1, 3, 4, as python/spelt/vision/_image.py's
// check_image accepts; nullptr for anything else.
const Array* ImageArrayOf(const Value& leaf) {
  if (!leaf.is<Array>()) return nullptr;
  const Array& a = leaf.as<Array>();
  if (a.dtype != DType::kUint8 || a.shape.size() != 3 || a.shape[0] < 1 || a.shape[1] < 1) {
    return nullptr;
  }
  const int64_t c = a.shape[2];
  return (c == 1 || c == 3 || c == 4) ? &a : nullptr;
}

Image ImageFromArray(const Array& a) {
  Image image;
  image.height = static_cast<int>(a.shape[0]);
  image.width = static_cast<int>(a.shape[1]);
  image.channels = static_cast<int>(a.shape[2]);
  const auto* begin = reinterpret_cast<const uint8_t*>(a.data);
  image.pixels.assign(begin, begin + a.nbytes());
  return image;
}

// The image's pixels as an array, without a copy (the array owns the pixel vector).
Array ArrayFromImage(Image image) {
  auto pixels = std::make_shared<std::vector<uint8_t>>(std::move(image.pixels));
  Array a;
  a.dtype = DType::kUint8;
  a.shape = {image.height, image.width, image.channels};
  a.data = reinterpret_cast<const std::byte*>(pixels->data());
  a.owner = std::move(pixels);
  return a;
}

// One row of `width` pixels of C channels mirrored from `from` into `to` (which may be `from`:
// then in place).
template <int C>
void MirrorRow(const uint8_t* from, uint8_t* to, size_t width) {
  if (from == to) {
    for (size_t x = 0, last = width - 1; x < width / 2; ++x) {
      uint8_t a[C], b[C];
      std::memcpy(a, to + x * C, C);
      std::memcpy(b, to + (last - x) * C, C);
      std::memcpy(to + x * C, b, C);
      std::memcpy(to + (last - x) * C, a, C);
    }
    return;
  }
  uint8_t* dst = to + width * C;
  for (size_t x = 0; x < width; ++x, from += C) std::memcpy(dst -= C, from, C);
}

// The image array `a` (uint8, channels 1, 3 or 4) mirrored left to right into `out`
// (a.nbytes() bytes), which may be a's own pixels (then in place).
void MirrorInto(const Array& a, uint8_t* out) {
  const auto height = static_cast<size_t>(a.shape[0]), width = static_cast<size_t>(a.shape[1]);
  const auto c = static_cast<size_t>(a.shape[2]);
  const auto* src = reinterpret_cast<const uint8_t*>(a.data);
  for (size_t y = 0; y < height; ++y) {
    const uint8_t* from = src + y * width * c;
    uint8_t* to = out + y * width * c;
    if (c == 3) {
      MirrorRow<3>(from, to, width);
    } else if (c == 4) {
      MirrorRow<4>(from, to, width);
    } else {
      MirrorRow<1>(from, to, width);
    }
  }
}

// The image array `a` mirrored left to right, as a new image.
Image Mirrored(const Array& a) {
  Image out = Image::Zeros(static_cast<int>(a.shape[0]), static_cast<int>(a.shape[1]),
                           static_cast<int>(a.shape[2]));
  MirrorInto(a, out.pixels.data());
  return out;
}

// Calls `native` (a decode of the pending JPEG); bytes it refuses as corrupt go to the
// DecodeImage's reference decoder, which raises its own error (or decodes them, as Pillow
// would, and then `from_reference` makes the result from its image).
template <typename Native, typename FromReference>
Image DecodeOrReference(const PendingJpeg& pending, Native native, FromReference from_reference) {
  try {
    return native();
  } catch (const CorruptImageError&) {
    if (pending.decoder == nullptr || !pending.decoder->decode) throw;
  }
  return from_reference(ImageFromArray(pending.decoder->decode(pending.data)));
}

Image DecodePending(const PendingJpeg& pending) {
  return DecodeOrReference(pending, [&] { return DecodeJpeg(pending.data); },
                           [](Image image) { return image; });
}

// JPEG bytes carried undecoded from one chain to the next (ImageOp::defer_decode). It keeps
// a copy of the DecodeImage's fallbacks, which `pending.decoder` points to.
class DeferredJpeg final : public Opaque {
 public:
  DeferredJpeg(PendingJpeg pending, const ImageOpFallbacks* decoder)
      : pending_(std::move(pending)), decoder_(decoder ? *decoder : ImageOpFallbacks{}) {
    pending_.decoder = &decoder_;
    pending_.data = *BytesOf(pending_.owner);  // where the bytes live now
  }
  Value Unpack() const override { return Value(ArrayFromImage(DecodePending(pending_))); }
  std::string Describe() const override {
    return "<JPEG image of " + std::to_string(pending_.data.size()) + " bytes, not yet decoded>";
  }
  int64_t ByteSize() const override { return static_cast<int64_t>(pending_.data.size()); }
  const PendingJpeg& pending() const { return pending_; }

 private:
  PendingJpeg pending_;
  ImageOpFallbacks decoder_;
};

// The working image of a leaf: pending JPEG bytes for a DeferredJpeg, else the unpacked leaf.
Working WorkingOf(const Value& leaf) {
  if (leaf.is<std::shared_ptr<const Opaque>>()) {
    if (const auto* deferred = dynamic_cast<const DeferredJpeg*>(
            leaf.as<std::shared_ptr<const Opaque>>().get())) {
      // The Opaque itself keeps the bytes alive (no copy of them).
      return PendingJpeg{leaf, deferred->pending().data, deferred->pending().decoder,
                         deferred->pending().skip_corrupt};
    }
  }
  return leaf.Unpacked();
}

Value WorkingToValue(Working w, bool defer_decode = false) {
  if (auto* leaf = std::get_if<Value>(&w)) return std::move(*leaf);
  if (auto* pending = std::get_if<PendingJpeg>(&w)) {
    if (defer_decode) {
      const ImageOpFallbacks* decoder = pending->decoder;
      return Value(std::shared_ptr<const Opaque>(
          std::make_shared<DeferredJpeg>(std::move(*pending), decoder)));
    }
    return Value(ArrayFromImage(DecodePending(*pending)));
  }
  if (auto* image = std::get_if<Image>(&w)) return Value(ArrayFromImage(std::move(*image)));
  if (auto* array = std::get_if<Array>(&w)) return Value(std::move(*array));
  throw std::logic_error("image ops: the output went to a slot");
}

void CheckOutputSize(const ImageOp& op, int height, int width, int channels) {
  const int64_t nbytes = int64_t{height} * width * channels;
  if (nbytes > kMaxOutputBytes) {
    throw std::invalid_argument(std::string(op.name()) + ": output image " +
                                std::to_string(height) + "x" + std::to_string(width) + "x" +
                                std::to_string(channels) + " would be " + std::to_string(nbytes) +
                                " bytes, more than the limit of " +
                                std::to_string(kMaxOutputBytes) + " (2**31) bytes");
  }
}

// Python's round((d) / 2) for an int d >= 0: halves to even.
int HalfRoundedToEven(int d) {
  const int half = d / 2;
  return (d % 2 == 0 || half % 2 == 0) ? half : half + 1;
}

// One chain run: the working image and the draws of its random ops.
class Run {
 public:
  // `next`: the op after this one in the chain (nullptr for the last), which this one may do
  // itself (took_next()). `slot`: where the chain's output goes (ApplyImageOpsInto), given to
  // the last op and to the one before it (used only if it takes the last op); or nullptr.
  Run(const ImageOp& op, const ImageOpFallbacks* fallbacks, Philox* rng,
      std::optional<PhiloxCropDraws>& draws, const ImageOp* next, const Array* slot)
      : op_(op), fallbacks_(fallbacks), rng_(rng), draws_(draws), next_(next), slot_(slot) {}

  bool took_next() const { return took_next_; }

  void Apply(Working& w) {
    switch (op_.kind) {
      case Kind::kDecode:
        return Decode(w);
      case Kind::kRandomResizedCrop:
        return RandomResizedCrop(w);
      case Kind::kResize:
        return Resize(w);
      case Kind::kCenterCrop:
        return CenterCrop(w);
      case Kind::kRandomHorizontalFlip:
        return Flip(w);
      case Kind::kNormalize:
        return Normalize(w);
    }
  }

 private:
  // The op's reference (ImageOpFallbacks::op) on a leaf the kernels do not take: its output,
  // or its error. A random op's reference must raise (it would draw from another stream).
  Value Reference(const Value& leaf, const char* expected) {
    if (fallbacks_ == nullptr || !fallbacks_->op) {
      throw std::invalid_argument(std::string(op_.name()) + ": expected " + expected + ", got " +
                                  leaf.Describe());
    }
    Value out = fallbacks_->op(leaf);
    if (op_.random()) {
      throw std::logic_error(std::string(op_.name()) + ": its reference accepted " +
                             leaf.Describe() + ", which the native path refused");
    }
    return out;
  }

  // The working image as a uint8 image (decoding pending JPEG bytes in full), or nullptr when
  // it is not one: then the op's reference ran on it and its output is in `w`.
  Image* ImageOrReference(Working& w) {
    static constexpr char kExpected[] = "a uint8 array (height, width, 1|3|4)";
    if (auto* pending = std::get_if<PendingJpeg>(&w)) {
      w = DecodePending(*pending);
    } else if (auto* leaf = std::get_if<Value>(&w)) {
      const Array* a = ImageArrayOf(*leaf);
      if (a == nullptr) {
        w = Reference(*leaf, kExpected);
        return nullptr;
      }
      w = ImageFromArray(*a);
    } else if (auto* array = std::get_if<Array>(&w)) {
      w = Reference(Value(*array), kExpected);
      return nullptr;
    }
    return &std::get<Image>(w);
  }

  // The slot's bytes if this op makes the chain's output and it has that dtype and shape;
  // else nullptr.
  std::byte* SlotFor(DType dtype, const std::vector<int64_t>& shape) const {
    if (slot_ == nullptr || (next_ != nullptr && !took_next_)) return nullptr;
    if (slot_->dtype != dtype || slot_->shape != shape) return nullptr;
    return slot_->mutable_data();
  }
  uint8_t* ImageSlotFor(int64_t height, int64_t width, int64_t channels) const {
    return reinterpret_cast<uint8_t*>(SlotFor(DType::kUint8, {height, width, channels}));
  }

  PhiloxCropDraws& Draws() {
    if (rng_ == nullptr) {
      throw std::invalid_argument(std::string(op_.name()) + ": no random stream given");
    }
    if (!draws_) draws_.emplace(*rng_);
    return *draws_;
  }

  Image Resized(const Image& image, int height, int width) {
    if (op_.nearest) return ResizeNearest(image, height, width);
    if (image.channels != 4) return ResizeBilinearAntialias(image, height, width);
    if (fallbacks_ == nullptr || !fallbacks_->resize) {
      throw std::invalid_argument(std::string(op_.name()) +
                                  ": 4-channel images need the reference resize");
    }
    return ImageFromArray(fallbacks_->resize(ArrayFromImage(image), height, width));
  }

  void Decode(Working& w) {
    static constexpr char kExpected[] = "encoded image bytes";
    const Value* leaf = std::get_if<Value>(&w);
    if (leaf == nullptr) {
      w = Reference(WorkingToValue(std::move(w)), kExpected);
      return;
    }
    const std::optional<std::span<const uint8_t>> bytes = BytesOf(*leaf);
    if (!bytes) {
      w = Reference(*leaf, kExpected);
      return;
    }
    const bool has_reference = fallbacks_ != nullptr && fallbacks_->decode;
    if (IsJpeg(*bytes)) {
      const int orientation = op_.exif_orientation ? JpegExifOrientation(*bytes) : 1;
      // The bytes move into the pending state, and the span is taken where they now live.
      PendingJpeg& pending = w.emplace<PendingJpeg>(
          PendingJpeg{std::get<Value>(std::move(w)), {}, fallbacks_, op_.skip_corrupt});
      pending.data = *BytesOf(pending.owner);
      if (orientation != 1) {
        // Decoded in full and turned upright now: a fused crop would take its box from the
        // stored image. The reference decoder (EXIF-aware itself) gives its output as is.
        w = DecodeOrReference(
            pending, [&] { return ApplyExifOrientation(DecodeJpeg(pending.data), orientation); },
            [](Image image) { return image; });
      }
      return;
    }
    // PNG and WebP natively, except with EXIF orientation (their EXIF chunks are left to the
    // reference); what libpng or libwebp refuse goes to the reference, whose error is raised.
    if (!op_.exif_orientation && (IsPng(*bytes) || IsWebp(*bytes))) {
      try {
        w = IsPng(*bytes) ? DecodePng(*bytes) : DecodeWebp(*bytes);
        return;
      } catch (const CorruptImageError&) {
        if (!has_reference) throw;
      } catch (const std::invalid_argument&) {  // an animated WebP
        if (!has_reference) throw;
      }
    }
    if (!has_reference) {
      throw CorruptImageError("non-JPEG", bytes->size(),
                              "neither a JPEG, PNG nor WebP image (no fallback decoder given)");
    }
    w = ImageFromArray(fallbacks_->decode(*bytes));
  }

  // Pending JPEG bytes that this op decodes fused with its crop and resize (bilinear only).
  const PendingJpeg* Fusable(const Working& w) const {
    return op_.nearest ? nullptr : std::get_if<PendingJpeg>(&w);
  }

  void RandomResizedCrop(Working& w) {
    const PendingJpeg* pending = Fusable(w);
    if (const std::optional<JpegHeader> header = pending ? HeaderOf(*pending) : std::nullopt) {
      const CropBox box =
          RandomResizedCropParams(header->height, header->width, op_.scale, op_.ratio, Draws());
      const bool mirror = TakeFlip();
      if (uint8_t* out = ImageSlotFor(op_.height, op_.width, 3)) {
        try {
          DecodeJpegCropResizeInto(pending->data, box, op_.height, op_.width, mirror, out);
          w = InSlot{};
          return;
        } catch (const CorruptImageError&) {
          if (pending->decoder == nullptr || !pending->decoder->decode) throw;
        }  // the reference decoder's image, as below
      }
      w = DecodeOrReference(
          *pending,
          [&] { return DecodeJpegCropResize(pending->data, box, op_.height, op_.width, mirror); },
          [&](Image image) {
            Image out = CropResized(image, box);
            return mirror ? FlipHorizontal(std::move(out)) : out;
          });
      return;
    }
    Image* found = ImageOrReference(w);
    if (found == nullptr) return;
    const CropBox box =
        RandomResizedCropParams(found->height, found->width, op_.scale, op_.ratio, Draws());
    w = CropResized(*found, box);
  }

  // A RandomHorizontalFlip right after this op, done by the fused decode's resize (its
  // horizontal pass mirrored, at no cost): its draw, taken now, follows this op's as when it
  // runs on its own. Whether to mirror.
  bool TakeFlip() {
    if (next_ == nullptr || next_->kind != Kind::kRandomHorizontalFlip) return false;
    took_next_ = true;
    return Draws().Uniform(0.0, 1.0) < next_->p;
  }

  // The header of pending JPEG bytes; nullopt if libjpeg refuses it (the full decode then
  // hands the bytes to the reference decoder).
  static std::optional<JpegHeader> HeaderOf(const PendingJpeg& pending) {
    try {
      return ReadJpegHeader(pending.data);
    } catch (const CorruptImageError&) {
      return std::nullopt;
    }
  }

  // RandomResizedCrop's output for the box `box` of `image`.
  Image CropResized(const Image& image, const CropBox& box) {
    Image crop = Image::Zeros(box.height, box.width, image.channels);
    for (int y = 0; y < box.height; ++y) {
      std::memcpy(crop.row(y), image.row(box.top + y) + size_t{1} * box.left * image.channels,
                  crop.row_bytes());
    }
    return Resized(crop, op_.height, op_.width);
  }

  // The output (height, width) of a Resize of a height x width image.
  std::pair<int, int> ResizeShape(int height, int width) const {
    if (op_.shorter_side == 0) return {op_.height, op_.width};
    const int64_t size = op_.shorter_side;
    // torchvision's rule: the longer side int(size * longer / shorter), truncated.
    if (width <= height) {
      return {static_cast<int>(static_cast<double>(size * height) / width), op_.shorter_side};
    }
    return {op_.shorter_side, static_cast<int>(static_cast<double>(size * width) / height)};
  }

  void Resize(Working& w) {
    const PendingJpeg* pending = Fusable(w);
    if (const std::optional<JpegHeader> header = pending ? HeaderOf(*pending) : std::nullopt) {
      const auto [height, width] = ResizeShape(header->height, header->width);
      CheckOutputSize(op_, height, width, 3);
      const CropBox whole{0, 0, header->height, header->width};
      w = DecodeOrReference(
          *pending, [&] { return DecodeJpegCropResize(pending->data, whole, height, width); },
          [&](const Image& image) { return Resized(image, height, width); });
      return;
    }
    Image* found = ImageOrReference(w);
    if (found == nullptr) return;
    const Image& image = *found;
    const auto [height, width] = ResizeShape(image.height, image.width);
    CheckOutputSize(op_, height, width, image.channels);
    w = Resized(image, height, width);
  }

  void CenterCrop(Working& w) {
    Image* found = ImageOrReference(w);
    if (found == nullptr) return;
    const Image& image = *found;
    const int c = image.channels;
    // torchvision's rule: pad to at least the output size ((size - H) // 2 before), then crop
    // from round((H' - height) / 2).
    const int pad_top = std::max(0, op_.height - image.height) / 2;
    const int pad_left = std::max(0, op_.width - image.width) / 2;
    const int top = HalfRoundedToEven(std::max(image.height, op_.height) - op_.height) - pad_top;
    const int left = HalfRoundedToEven(std::max(image.width, op_.width) - op_.width) - pad_left;
    Image out = Image::Zeros(op_.height, op_.width, c);
    for (int y = 0; y < op_.height; ++y) {
      const int sy = top + y;
      if (sy < 0 || sy >= image.height) continue;
      const int x0 = std::max(0, -left);
      const int x1 = std::min(op_.width, image.width - left);
      if (x0 >= x1) continue;
      std::memcpy(out.row(y) + size_t{1} * x0 * c, image.row(sy) + size_t{1} * (left + x0) * c,
                  size_t{1} * (x1 - x0) * c);
    }
    w = std::move(out);
  }

  void Flip(Working& w) {
    // The reference checks the image before it draws, then draws once whatever p.
    if (const auto* leaf = std::get_if<Value>(&w)) {
      // An image array (another node's output) stays as it is, or is mirrored in one pass.
      if (const Array* a = ImageArrayOf(*leaf)) {
        const bool flip = Draws().Uniform(0.0, 1.0) < op_.p;
        if (uint8_t* out = ImageSlotFor(a->shape[0], a->shape[1], a->shape[2])) {
          if (flip) {
            MirrorInto(*a, out);
          } else if (out != reinterpret_cast<const uint8_t*>(a->data)) {
            std::memcpy(out, a->data, a->nbytes());
          }
          w = InSlot{};
        } else if (flip) {
          w = Mirrored(*a);
        }
        return;
      }
    }
    Image* image = ImageOrReference(w);
    if (image == nullptr) return;
    if (Draws().Uniform(0.0, 1.0) < op_.p) *image = FlipHorizontal(std::move(*image));
  }

  void Normalize(Working& w) {
    Image* found = ImageOrReference(w);
    if (found == nullptr) return;
    const Image& image = *found;
    const int c = image.channels;
    const bool per_channel = op_.per_channel;
    if (per_channel && (static_cast<int>(op_.mean.size()) != c ||
                        static_cast<int>(op_.std.size()) != c)) {
      w = Reference(Value(ArrayFromImage(image)), "an image with one channel per mean and std");
      return;
    }
    // (x / 255 - mean) / std in float32, numpy's order of operations, as a table per channel.
    std::vector<float> table(static_cast<size_t>(256) * c);
    for (int ch = 0; ch < c; ++ch) {
      const float mean = op_.mean[per_channel ? ch : 0];
      const float std = op_.std[per_channel ? ch : 0];
      for (int x = 0; x < 256; ++x) {
        table[static_cast<size_t>(ch) * 256 + x] =
            (static_cast<float>(x) / 255.0f - mean) / std;
      }
    }
    const int64_t h = image.height, wd = image.width;
    std::vector<int64_t> shape = op_.chw ? std::vector<int64_t>{c, h, wd}
                                         : std::vector<int64_t>{h, wd, c};
    if (!op_.bfloat16) {
      if (std::byte* out = SlotFor(DType::kFloat32, shape)) {
        Lookup(image, table, reinterpret_cast<float*>(out));
        w = InSlot{};
        return;
      }
      Array out = Array::AllocateUninitialized(DType::kFloat32, std::move(shape));
      Lookup(image, table, reinterpret_cast<float*>(out.mutable_data()));
      w = std::move(out);
      return;
    }
    // bfloat16: the float32 result rounded once, as the reference's astype.
    std::vector<uint16_t> bf16_table(table.size());
    std::ranges::transform(table, bf16_table.begin(), BFloat16FromFloat);
    Array bits = Array::AllocateUninitialized(DType::kUint16, std::move(shape));
    Lookup(image, bf16_table, reinterpret_cast<uint16_t*>(bits.mutable_data()));
    w = Value(std::shared_ptr<const Opaque>(std::make_shared<BFloat16Array>(std::move(bits))));
  }

  // dst[...] = table[channel * 256 + pixel] for every pixel and channel, in the op's layout.
  template <typename T>
  void Lookup(const Image& image, const std::vector<T>& table, T* dst) const {
    const int c = image.channels;
    const uint8_t* src = image.pixels.data();
    const int64_t plane = int64_t{image.height} * image.width;
    for (int64_t i = 0; i < plane; ++i) {
      for (int ch = 0; ch < c; ++ch) {
        const T v = table[static_cast<size_t>(ch) * 256 + src[i * c + ch]];
        dst[op_.chw ? ch * plane + i : i * c + ch] = v;
      }
    }
  }

  const ImageOp& op_;
  const ImageOpFallbacks* fallbacks_;
  Philox* rng_;
  std::optional<PhiloxCropDraws>& draws_;
  const ImageOp* next_;
  const Array* slot_;
  bool took_next_ = false;
};

}  // namespace

std::string_view ImageOp::name() const {
  switch (kind) {
    case Kind::kDecode:
      return "DecodeImage";
    case Kind::kRandomResizedCrop:
      return "RandomResizedCrop";
    case Kind::kResize:
      return "Resize";
    case Kind::kCenterCrop:
      return "CenterCrop";
    case Kind::kRandomHorizontalFlip:
      return "RandomHorizontalFlip";
    case Kind::kNormalize:
      return "Normalize";
  }
  return "ImageOp";
}

namespace {

// What ApplyImageOps and ApplyImageOpsInto check first.
void CheckChain(std::span<const ImageOp> ops, std::span<const ImageOpFallbacks> fallbacks) {
  if (!fallbacks.empty() && fallbacks.size() != ops.size()) {
    throw std::invalid_argument("ApplyImageOps: one fallback per op, or none");
  }
  for (const ImageOp& op : ops) {
    if (op.field != ops.front().field) {
      throw std::invalid_argument("ApplyImageOps: ops on different fields");
    }
  }
}

// DecodeImage(on_error="skip") in the chain, or in the DecodeImage that deferred `w`:
// undecodable bytes make the element None (a MapDataset's filtered element), also where a
// later op (or chain) decodes them.
bool SkipsCorrupt(std::span<const ImageOp> ops, const Working& w) {
  const auto* pending = std::get_if<PendingJpeg>(&w);
  bool skip = pending != nullptr && pending->skip_corrupt;
  for (const ImageOp& op : ops) skip = skip || op.skip_corrupt;
  return skip;
}

// Runs the chain on `w`; `slot` as Run's.
void RunChain(std::span<const ImageOp> ops, std::span<const ImageOpFallbacks> fallbacks,
              Working& w, Philox* rng, const Array* slot) {
  std::optional<PhiloxCropDraws> draws;
  for (size_t i = 0; i < ops.size(); ++i) {
    Run run(ops[i], fallbacks.empty() ? nullptr : &fallbacks[i], rng, draws,
            i + 1 < ops.size() ? &ops[i + 1] : nullptr, i + 2 >= ops.size() ? slot : nullptr);
    run.Apply(w);
    if (run.took_next()) ++i;
  }
}

}  // namespace

Value ApplyImageOps(std::span<const ImageOp> ops, std::span<const ImageOpFallbacks> fallbacks,
                    const Value& element, Philox* rng) {
  if (ops.empty()) return element;
  const ScopedParallelWork work;  // decoding and resampling gain from read threads
  CheckChain(ops, fallbacks);
  const std::optional<std::string>& field = ops.front().field;
  Working w;
  Value unpacked;  // the dict element, when `field` is set
  if (field) {
    unpacked = element.Unpacked();
    if (!unpacked.is<std::shared_ptr<const Mapping>>()) {
      throw std::invalid_argument(std::string(ops.front().name()) + ": field='" + *field +
                                  "' needs dict elements, got " +
                                  std::string(unpacked.KindName()));
    }
    const Value* leaf = unpacked.AsMapping().Find(*field);
    if (leaf == nullptr) {
      throw std::invalid_argument(std::string(ops.front().name()) + ": the element has no key '" +
                                  *field + "'");
    }
    w = WorkingOf(*leaf);
  } else {
    w = WorkingOf(element);
  }
  const bool skip_corrupt = SkipsCorrupt(ops, w);
  Value image;
  try {
    RunChain(ops, fallbacks, w, rng, nullptr);
    image = WorkingToValue(std::move(w), ops.back().defer_decode);
  } catch (const CorruptImageError&) {
    if (!skip_corrupt) throw;
    return Value();
  }
  if (!field) return image;
  // A shallow copy of the dict with the field replaced (the reference's {**element, f: ...}).
  const Mapping& in = unpacked.AsMapping();
  auto out = std::make_shared<Mapping>(in);
  for (auto& [key, value] : out->items) {
    if (key == *field) value = std::move(image);
  }
  return Value(std::shared_ptr<const Mapping>(std::move(out)));
}

bool ApplyImageOpsInto(std::span<const ImageOp> ops, std::span<const ImageOpFallbacks> fallbacks,
                       const Value& element, Philox* rng, const Array& slot) {
  if (ops.empty() || ops.front().field || ops.back().defer_decode) return false;
  const ScopedParallelWork work;
  CheckChain(ops, fallbacks);
  Working w = WorkingOf(element);
  const bool skip_corrupt = SkipsCorrupt(ops, w);
  try {
    RunChain(ops, fallbacks, w, rng, &slot);
  } catch (const CorruptImageError&) {
    if (!skip_corrupt) throw;
    return false;  // None
  }
  if (std::holds_alternative<InSlot>(w)) return true;
  const Value out = WorkingToValue(std::move(w));
  if (!out.is<Array>()) return false;
  const Array& a = out.as<Array>();
  if (a.dtype != slot.dtype || a.shape != slot.shape) return false;
  if (a.data != slot.data) std::memcpy(slot.mutable_data(), a.data, a.nbytes());
  return true;
}

}  // namespace spelt::vision
