// Helpers of the vision_*_test.cc files: fixtures, photographs, hashes and PSNR.
#ifndef SPELT_TESTS_VISION_TEST_UTIL_H_
#define SPELT_TESTS_VISION_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "spelt/vision.h"

namespace spelt::vision::testing {

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// cpp/tests/data/vision/<name> (written by cpp/tests/data/vision/make_fixtures.py).
inline std::vector<uint8_t> Fixture(const std::string& name) {
  return ReadBytes(std::string(SPELT_TEST_DATA_DIR) + "/vision/" + name);
}

// A real photograph of scikit-learn's (china.jpg, flower.jpg) from $SPELT_TEST_PHOTOS_DIR or
// the folder CMake found; nullopt where there is none (the caller skips).
inline std::optional<std::vector<uint8_t>> Photo(const std::string& name) {
  const char* env = std::getenv("SPELT_TEST_PHOTOS_DIR");
  const std::string dir = env != nullptr && *env != '\0' ? env : SPELT_TEST_PHOTOS_DIR;
  if (dir.empty()) return std::nullopt;
  std::ifstream probe(dir + "/" + name, std::ios::binary);
  if (!probe) return std::nullopt;
  return ReadBytes(dir + "/" + name);
}

// FNV-1a 64 (make_fixtures.py's fnv1a64).
inline uint64_t Fnv1a64(std::span<const uint8_t> data) {
  uint64_t h = 0xCBF29CE484222325u;
  for (uint8_t b : data) h = (h ^ b) * 0x100000001B3u;
  return h;
}

// make_fixtures.py's goldens.txt: the hash on the line "<photo> <what> <hash>".
inline std::optional<uint64_t> Golden(const std::string& photo, const std::string& what) {
  std::ifstream in(std::string(SPELT_TEST_DATA_DIR) + "/vision/goldens.txt");
  std::string p, w, hash;
  while (in >> p >> w >> hash) {
    if (p == photo && w == what) return std::stoull(hash, nullptr, 16);
  }
  return std::nullopt;
}

// Peak signal-to-noise ratio in dB of two images of one shape (infinity where equal).
inline double Psnr(const Image& a, const Image& b) {
  if (a.pixels.size() != b.pixels.size()) throw std::invalid_argument("Psnr: shapes differ");
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    const double d = static_cast<double>(a.pixels[i]) - b.pixels[i];
    sum += d * d;
  }
  if (sum == 0) return std::numeric_limits<double>::infinity();
  return 10 * std::log10(255.0 * 255.0 / (sum / static_cast<double>(a.pixels.size())));
}

// The largest difference of two images of one shape, in levels.
inline int MaxAbsDiff(const Image& a, const Image& b) {
  if (a.pixels.size() != b.pixels.size()) throw std::invalid_argument("MaxAbsDiff: shapes");
  int m = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    m = std::max(m, std::abs(static_cast<int>(a.pixels[i]) - b.pixels[i]));
  }
  return m;
}

// image[top:top + h, left:left + w] as a new image.
inline Image Crop(const Image& image, const CropBox& box) {
  Image out = Image::Zeros(box.height, box.width, image.channels);
  for (int y = 0; y < box.height; ++y) {
    const uint8_t* src = image.row(box.top + y) + static_cast<size_t>(box.left) * image.channels;
    std::copy_n(src, out.row_bytes(), out.row(y));
  }
  return out;
}

}  // namespace spelt::vision::testing

#endif  // SPELT_TESTS_VISION_TEST_UTIL_H_
