// Tests of ApplyImageOps (spelt/image_ops.h): chains of spelt.vision ops on elements, against
// the kernels of spelt/vision.h run by hand with the same random draws; fields, the deferred
// decode across chains, CenterCrop's padding, Normalize's arithmetic and layouts (float32 and
// bfloat16), nearest resizing, the flip's one draw, fallbacks and errors.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "spelt/bfloat16_array.h"
#include "spelt/errors.h"
#include "spelt/image_ops.h"
#include "spelt/random.h"
#include "spelt/vision.h"
#include "vision_test_util.h"

namespace spelt::vision {
namespace {

using testing::Fixture;

Value Bytes(const std::vector<uint8_t>& data) {
  return Value::Bytes(std::string(data.begin(), data.end()));
}

Philox Stream(uint64_t key) { return Philox({key, 0}, {0, 0, 0, 0}); }

ImageOp Op(ImageOp::Kind kind, int height = 0, int width = 0) {
  ImageOp op;
  op.kind = kind;
  op.height = height;
  op.width = width;
  return op;
}

// A 1x2 RGB image with dark, middle and bright levels.
Image TwoPixels() {
  Image image = Image::Zeros(1, 2, 3);
  image.pixels = {0, 128, 255, 7, 8, 9};
  return image;
}

// Normalize with ImageNet's per-channel mean and std (HWC float32 unless changed).
ImageOp ImageNetNormalize() {
  ImageOp norm = Op(ImageOp::Kind::kNormalize);
  norm.mean = {0.485f, 0.456f, 0.406f};
  norm.std = {0.229f, 0.224f, 0.225f};
  norm.per_channel = true;
  return norm;
}

// The image of an output array.
Image ImageOf(const Value& v) {
  const Array& a = v.AsArray();
  Image image = Image::Zeros(static_cast<int>(a.shape[0]), static_cast<int>(a.shape[1]),
                             static_cast<int>(a.shape[2]));
  std::memcpy(image.pixels.data(), a.data, a.nbytes());
  return image;
}

Value ArrayOf(const Image& image) {
  Array a = Array::Allocate(DType::kUint8, {image.height, image.width, image.channels});
  std::memcpy(a.mutable_data(), image.pixels.data(), image.pixels.size());
  return Value(std::move(a));
}

TEST(VisionImageOpsTest, DecodeThenRandomResizedCropIsTheFusedKernelWithTheSameDraws) {
  const std::vector<uint8_t> jpeg = Fixture("rgb_420.jpg");
  const std::vector<ImageOp> ops = {Op(ImageOp::Kind::kDecode),
                                    Op(ImageOp::Kind::kRandomResizedCrop, 24, 20)};
  Philox rng = Stream(7);
  const Value out = ApplyImageOps(ops, {}, Bytes(jpeg), &rng);

  Philox same = Stream(7);
  PhiloxCropDraws draws(same);
  const JpegHeader h = ReadJpegHeader(jpeg);
  const CropBox box = RandomResizedCropParams(h.height, h.width, {0.08, 1.0},
                                              {3.0 / 4.0, 4.0 / 3.0}, draws);
  EXPECT_EQ(ImageOf(out).pixels, DecodeJpegCropResize(jpeg, box, 24, 20).pixels);
  EXPECT_EQ(rng.NextUint64(), same.NextUint64());  // the chain consumed the same draws
}

TEST(VisionImageOpsTest, AFieldOfADictIsReplacedAndTheOtherKeysKept) {
  const std::vector<uint8_t> jpeg = Fixture("gray.jpg");
  const Value element = Value::Dict({{"label", Value(3)}, {"image", Bytes(jpeg)}});
  ImageOp decode = Op(ImageOp::Kind::kDecode);
  decode.field = "image";
  const Value out = ApplyImageOps(std::vector<ImageOp>{decode}, {}, element, nullptr);
  EXPECT_EQ(out["label"].AsInt(), 3);
  EXPECT_EQ(out.AsMapping().items[1].first, "image");
  EXPECT_EQ(ImageOf(out["image"]).pixels, DecodeJpeg(jpeg).pixels);
  EXPECT_THROW(ApplyImageOps(std::vector<ImageOp>{decode}, {}, Bytes(jpeg), nullptr),
               std::invalid_argument);  // field= needs a dict
}

TEST(VisionImageOpsTest, ADeferredDecodeIsFusedByTheNextChainAndDecodesInFullWhenUnpacked) {
  const std::vector<uint8_t> jpeg = Fixture("rgb_444.jpg");
  ImageOp decode = Op(ImageOp::Kind::kDecode);
  decode.defer_decode = true;
  const Value deferred = ApplyImageOps(std::vector<ImageOp>{decode}, {}, Bytes(jpeg), nullptr);
  ASSERT_TRUE(deferred.is<std::shared_ptr<const Opaque>>());
  EXPECT_EQ(ImageOf(deferred.Unpacked()).pixels, DecodeJpeg(jpeg).pixels);

  const std::vector<ImageOp> crop = {Op(ImageOp::Kind::kRandomResizedCrop, 16, 16)};
  Philox a = Stream(3), b = Stream(3);
  const Value fused = ApplyImageOps(crop, {}, deferred, &a);
  const std::vector<ImageOp> both = {Op(ImageOp::Kind::kDecode), crop[0]};
  EXPECT_EQ(ImageOf(fused).pixels, ImageOf(ApplyImageOps(both, {}, Bytes(jpeg), &b)).pixels);
}

TEST(VisionImageOpsTest, CenterCropPadsAndRoundsHalvesToEven) {
  // 3 x 5 image of 1 channel, pixel (y, x) = 10 y + x; crop 4 x 2: pad 1 row (0 before, 1
  // after), then rows from round(0 / 2) = 0 and columns from round(3 / 2) = 2.
  Image image = Image::Zeros(3, 5, 1);
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 5; ++x) image.row(y)[x] = static_cast<uint8_t>(10 * y + x);
  }
  const Value out = ApplyImageOps(std::vector<ImageOp>{Op(ImageOp::Kind::kCenterCrop, 4, 2)}, {},
                                  ArrayOf(image), nullptr);
  EXPECT_EQ(ImageOf(out).pixels, (std::vector<uint8_t>{2, 3, 12, 13, 22, 23, 0, 0}));
}

TEST(VisionImageOpsTest, NormalizeIsFloat32InNumpysOrderInBothLayouts) {
  const Image image = TwoPixels();
  ImageOp norm = ImageNetNormalize();
  const Array hwc = ApplyImageOps(std::vector<ImageOp>{norm}, {}, ArrayOf(image), nullptr)
                        .AsArray();
  norm.chw = true;
  const Array chw = ApplyImageOps(std::vector<ImageOp>{norm}, {}, ArrayOf(image), nullptr)
                        .AsArray();
  EXPECT_EQ(hwc.shape, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(chw.shape, (std::vector<int64_t>{3, 1, 2}));
  const auto* h = reinterpret_cast<const float*>(hwc.data);
  const auto* c = reinterpret_cast<const float*>(chw.data);
  for (int x = 0; x < 2; ++x) {
    for (int ch = 0; ch < 3; ++ch) {
      const float want =
          (static_cast<float>(image.pixels[x * 3 + ch]) / 255.0f - norm.mean[ch]) / norm.std[ch];
      EXPECT_EQ(h[x * 3 + ch], want);
      EXPECT_EQ(c[ch * 2 + x], want);
    }
  }
  norm.mean = {0.5f, 0.5f};  // per channel, but 2 values for 3 channels: no fallback, an error
  norm.std = {0.5f, 0.5f};
  EXPECT_THROW(ApplyImageOps(std::vector<ImageOp>{norm}, {}, ArrayOf(image), nullptr),
               std::invalid_argument);
}

TEST(VisionImageOpsTest, BFloat16NormalizeIsTheRoundedFloat32) {
  const Image image = TwoPixels();
  ImageOp norm = ImageNetNormalize();
  norm.chw = true;
  const Array f32 = ApplyImageOps(std::vector<ImageOp>{norm}, {}, ArrayOf(image), nullptr)
                        .AsArray();
  norm.bfloat16 = true;
  const Value out = ApplyImageOps(std::vector<ImageOp>{norm}, {}, ArrayOf(image), nullptr);
  const auto* leaf =
      dynamic_cast<const BFloat16Array*>(out.as<std::shared_ptr<const Opaque>>().get());
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->Describe(), "bfloat16[3,1,2]");
  EXPECT_EQ(leaf->bits().shape, f32.shape);
  const auto* want = reinterpret_cast<const float*>(f32.data);
  const auto* got = reinterpret_cast<const uint16_t*>(leaf->bits().data);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], BFloat16FromFloat(want[i]));
}

TEST(VisionImageOpsTest, NearestResizeAndCropUseResizeNearestOnEveryChannelCount) {
  Image rgba = Image::Zeros(5, 7, 4);
  for (size_t i = 0; i < rgba.pixels.size(); ++i) rgba.pixels[i] = static_cast<uint8_t>(i * 37);
  ImageOp resize = Op(ImageOp::Kind::kResize, 3, 11);
  resize.nearest = true;  // 4 channels with no fallbacks: only the nearest kernel takes them
  const Value out = ApplyImageOps(std::vector<ImageOp>{resize}, {}, ArrayOf(rgba), nullptr);
  EXPECT_EQ(ImageOf(out).pixels, ResizeNearest(rgba, 3, 11).pixels);
  ImageOp crop = Op(ImageOp::Kind::kRandomResizedCrop, 4, 4);
  crop.nearest = true;
  Philox a = Stream(3), b = Stream(3);
  const Value cropped = ApplyImageOps(std::vector<ImageOp>{crop}, {}, ArrayOf(rgba), &a);
  PhiloxCropDraws draws(b);
  const CropBox box = RandomResizedCropParams(5, 7, crop.scale, crop.ratio, draws);
  Image region = Image::Zeros(box.height, box.width, 4);
  for (int y = 0; y < box.height; ++y) {
    std::memcpy(region.row(y), rgba.row(box.top + y) + box.left * 4, region.row_bytes());
  }
  EXPECT_EQ(ImageOf(cropped).pixels, ResizeNearest(region, 4, 4).pixels);
}

TEST(VisionImageOpsTest, TheFlipDrawsOnceWhateverP) {
  Image image = Image::Zeros(2, 3, 1);
  image.pixels = {1, 2, 3, 4, 5, 6};
  for (const double p : {0.0, 1.0}) {
    ImageOp flip = Op(ImageOp::Kind::kRandomHorizontalFlip);
    flip.p = p;
    Philox rng = Stream(11), same = Stream(11);
    const Value out = ApplyImageOps(std::vector<ImageOp>{flip}, {}, ArrayOf(image), &rng);
    same.NextDouble();
    EXPECT_EQ(rng.NextUint64(), same.NextUint64());
    EXPECT_EQ(ImageOf(out).pixels, p == 1.0 ? FlipHorizontal(image).pixels : image.pixels);
  }
}

TEST(VisionImageOpsTest, FallbacksTakeWhatTheKernelsDoNot) {
  // A 4-channel resize goes to `resize`; a float array to `op`, whose output is used.
  ImageOpFallbacks fallbacks;
  int resized = 0;
  fallbacks.resize = [&](const Array& a, int height, int width) {
    ++resized;
    EXPECT_EQ(a.shape[2], 4);
    return Array::Allocate(DType::kUint8, {height, width, 4});
  };
  fallbacks.op = [](const Value&) { return Value(int64_t{42}); };
  const std::vector<ImageOp> resize = {Op(ImageOp::Kind::kResize, 3, 5)};
  const std::vector<ImageOpFallbacks> all = {fallbacks};
  const Value out = ApplyImageOps(resize, all, ArrayOf(Image::Zeros(6, 8, 4)), nullptr);
  EXPECT_EQ(resized, 1);
  EXPECT_EQ(out.AsArray().shape, (std::vector<int64_t>{3, 5, 4}));
  Array floats = Array::Allocate(DType::kFloat32, {2, 2, 3});
  EXPECT_EQ(ApplyImageOps(resize, all, Value(floats), nullptr).AsInt(), 42);
  EXPECT_THROW(ApplyImageOps(resize, {}, Value(floats), nullptr), std::invalid_argument);
}

TEST(VisionImageOpsTest, BytesThatAreNotAJpegNeedTheFallbackDecoder) {
  const std::vector<ImageOp> decode = {Op(ImageOp::Kind::kDecode)};
  const Value png = Value::Bytes(std::string("\x89PNG\r\n\x1a\n", 8) + std::string(20, '\0'));
  EXPECT_THROW(ApplyImageOps(decode, {}, png, nullptr), CorruptImageError);
  std::vector<uint8_t> truncated = Fixture("rgb_420.jpg");
  truncated.resize(truncated.size() / 2);
  EXPECT_THROW(ApplyImageOps(decode, {}, Bytes(truncated), nullptr), CorruptImageError);
  ImageOpFallbacks fallbacks;
  fallbacks.decode = [](std::span<const uint8_t>) {
    return Array::Allocate(DType::kUint8, {2, 2, 3});
  };
  const std::vector<ImageOpFallbacks> all = {fallbacks};
  EXPECT_EQ(ApplyImageOps(decode, all, png, nullptr).AsArray().shape,
            (std::vector<int64_t>{2, 2, 3}));
}

TEST(VisionImageOpsTest, SkipCorruptMakesTheElementNoneAlsoWhereACropDecodesIt) {
  ImageOp decode = Op(ImageOp::Kind::kDecode);
  decode.skip_corrupt = true;
  ImageOp crop = Op(ImageOp::Kind::kRandomResizedCrop, 8, 8);
  std::vector<uint8_t> truncated = Fixture("rgb_420.jpg");
  truncated.resize(truncated.size() / 2);
  std::vector<uint8_t> cut_header = truncated;
  cut_header.resize(40);  // the fused crop reads the header first: it fails there
  Philox rng({1, 0}, {0, 0, 0, 0});
  EXPECT_TRUE(ApplyImageOps(std::vector<ImageOp>{decode}, {}, Bytes(truncated), &rng).is_none());
  for (const std::vector<ImageOp>& ops : {std::vector<ImageOp>{decode},
                                          std::vector<ImageOp>{decode, crop}}) {
    EXPECT_TRUE(ApplyImageOps(ops, {}, Bytes(cut_header), &rng).is_none());
    EXPECT_TRUE(ApplyImageOps(ops, {}, Value::Bytes("not an image"), &rng).is_none());
  }
  // A fallback decoder that refuses the bytes (CorruptImageError) drops the element too.
  ImageOpFallbacks refusing;
  refusing.decode = [](std::span<const uint8_t> data) -> Array {
    throw CorruptImageError("image", data.size(), "refused");
  };
  const std::vector<ImageOpFallbacks> all = {refusing};
  const std::vector<ImageOp> alone = {decode};
  EXPECT_TRUE(ApplyImageOps(alone, all, Value::Bytes("GIF89a"), nullptr).is_none());
  // Without the policy the error is thrown; good bytes decode either way.
  const std::vector<ImageOp> plain = {Op(ImageOp::Kind::kDecode)};
  EXPECT_THROW(ApplyImageOps(plain, {}, Bytes(truncated), nullptr), CorruptImageError);
  EXPECT_EQ(ImageOf(ApplyImageOps(alone, {}, Bytes(Fixture("rgb_420.jpg")), nullptr)).pixels,
            DecodeJpeg(Fixture("rgb_420.jpg")).pixels);
}

TEST(VisionImageOpsTest, OpsOnDifferentFieldsOrARandomOpWithoutAStreamAreRefused) {
  ImageOp a = Op(ImageOp::Kind::kDecode), b = Op(ImageOp::Kind::kResize, 2, 2);
  b.field = "image";
  EXPECT_THROW(ApplyImageOps(std::vector<ImageOp>{a, b}, {}, Value(), nullptr),
               std::invalid_argument);
  const std::vector<ImageOp> flip = {Op(ImageOp::Kind::kRandomHorizontalFlip)};
  EXPECT_THROW(ApplyImageOps(flip, {}, ArrayOf(Image::Zeros(2, 2, 3)), nullptr),
               std::invalid_argument);
}

// ApplyImageOpsInto: the output written into a slot equals ApplyImageOps's, with the same
// draws; false where the output does not fit the slot.
TEST(VisionImageOpsTest, IntoASlotEqualsTheChainsOutput) {
  const std::vector<uint8_t> jpeg = Fixture("rgb_420.jpg");
  ImageOp norm = Op(ImageOp::Kind::kNormalize);
  norm.mean = {0.5f};
  norm.std = {0.25f};
  const std::vector<std::vector<ImageOp>> chains = {
      {Op(ImageOp::Kind::kDecode), Op(ImageOp::Kind::kRandomResizedCrop, 24, 20),
       Op(ImageOp::Kind::kRandomHorizontalFlip)},  // fused decode, crop, resize and flip
      {Op(ImageOp::Kind::kDecode), Op(ImageOp::Kind::kCenterCrop, 9, 7)},  // copied in
      {Op(ImageOp::Kind::kDecode), Op(ImageOp::Kind::kCenterCrop, 9, 7), norm},  // float32
  };
  for (size_t c = 0; c < chains.size(); ++c) {
    for (uint64_t key = 0; key < 8; ++key) {  // flips drawn and not
      Philox a = Stream(key), b = Stream(key);
      const Array want = ApplyImageOps(chains[c], {}, Bytes(jpeg), &a).AsArray();
      const Array slot = Array::Allocate(want.dtype, want.shape);
      ASSERT_TRUE(ApplyImageOpsInto(chains[c], {}, Bytes(jpeg), &b, slot)) << c;
      EXPECT_EQ(std::memcmp(slot.data, want.data, want.nbytes()), 0) << c << " " << key;
      EXPECT_EQ(a.NextUint64(), b.NextUint64());
      const Array other = Array::Allocate(want.dtype, {want.shape[0] + 1, want.shape[1], 3});
      Philox d = Stream(key);
      EXPECT_FALSE(ApplyImageOpsInto(chains[c], {}, Bytes(jpeg), &d, other));
    }
  }
  ImageOp decode = Op(ImageOp::Kind::kDecode);
  decode.field = "image";
  const Array any = Array::Allocate(DType::kUint8, {1, 1, 3});
  EXPECT_FALSE(ApplyImageOpsInto(std::vector<ImageOp>{decode}, {},
                                 Value::Dict({{"image", Bytes(jpeg)}}), nullptr, any));
}

TEST(VisionImageOpsTest, AFlipIntoTheSlotThatHoldsItsImageWorksInPlace) {
  for (int channels : {1, 3, 4}) {
    Image image = Image::Zeros(3, 5, channels);
    for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i);
    const std::vector<ImageOp> flip = {Op(ImageOp::Kind::kRandomHorizontalFlip)};
    for (uint64_t key = 0; key < 8; ++key) {
      Philox a = Stream(key), b = Stream(key);
      const Value want = ApplyImageOps(flip, {}, ArrayOf(image), &a);
      const Value slot = ArrayOf(image);
      ASSERT_TRUE(ApplyImageOpsInto(flip, {}, slot, &b, slot.AsArray()));
      EXPECT_EQ(ImageOf(slot).pixels, ImageOf(want).pixels) << channels << " " << key;
    }
  }
}

}  // namespace
}  // namespace spelt::vision
