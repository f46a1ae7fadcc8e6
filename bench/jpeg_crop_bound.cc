// jpeg_crop_bound: the binding limit of issue 23's V2 (bench/bench_vision.py), per CPU second
// on one thread: how fast libjpeg-turbo itself decodes only a RandomResizedCrop's box, against
// its full decode and against Spelt's fused decode + crop + resize (+ flip) of the same boxes.
//
// Usage: jpeg_crop_bound DIR [REPS] [SIZE]
//   Reads every *.jpg in DIR (bench_vision writes its records there), draws one
//   RandomResizedCrop box per file (scale 0.08-1, ratio 3/4-4/3; Philox seeded with the file's
//   position, as the pipeline's per-element streams), and times, REPS times (default 5),
//   alternating:
//   - full: libjpeg-turbo decodes the whole image to RGB (jpeg_read_scanlines; DecodeJpeg's
//     settings: accurate IDCT, fancy upsampling);
//   - codec-crop: libjpeg-turbo decodes only the box: jpeg_crop_scanline to its iMCU columns,
//     jpeg_skip_scanlines to its first row, its rows read into one buffer, then abandoned.
//     This is the least a decoder of the box does, with no resize. (Reading one row at a time
//     into a one-row buffer instead measured 1.2x or 1.55x the full decode, depending only on
//     where the heap put the buffers.);
//   - spelt-fused: DecodeJpegCropResize(box, SIZE x SIZE) (default 224), every other image
//     mirrored (RandomHorizontalFlip fused): V2's train recipe without the engine.
//   Prints images per CPU second (std::clock, this thread only runs), median and min-max, and
//   each as a multiple of the full decode.
//
// Built with the C++ tests (`make cpp`): build/cpp/jpeg_crop_bound.
#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "spelt/vision.h"

// After <cstdio> and <cstddef>, which it needs.
#include <jpeglib.h>

namespace {

using spelt::vision::CropBox;

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};

// libjpeg-turbo's crop decode of `box`; false if libjpeg refuses the file.
bool CodecCrop(const std::string& data, const CropBox& box, std::vector<uint8_t>& rows) {
  jpeg_decompress_struct info;
  ErrorManager errors;
  info.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = [](j_common_ptr c) {
    std::longjmp(reinterpret_cast<ErrorManager*>(c->err)->jump, 1);
  };
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  JDIMENSION left = box.left, width = box.width;
  jpeg_crop_scanline(&info, &left, &width);
  jpeg_skip_scanlines(&info, box.top);
  // The box's rows into one buffer, as the fused decode reads them.
  const size_t stride = static_cast<size_t>(info.output_width) * 3;
  rows.resize(stride * box.height);
  const auto end = static_cast<JDIMENSION>(box.top + box.height);
  while (info.output_scanline < end) {
    JSAMPROW row[16];
    const JDIMENSION n = std::min<JDIMENSION>(16, end - info.output_scanline);
    for (JDIMENSION k = 0; k < n; ++k) {
      row[k] = rows.data() + stride * (info.output_scanline - box.top + k);
    }
    jpeg_read_scanlines(&info, row, n);
  }
  jpeg_abort_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [REPS] [SIZE]\n", argv[0]);
    return 2;
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const int size = argc > 3 ? std::atoi(argv[3]) : 224;
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    if (entry.path().extension() == ".jpg") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> files;
  std::vector<CropBox> boxes;
  for (size_t i = 0; i < paths.size(); ++i) {
    std::ifstream in(paths[i], std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>{});
    const auto bytes = std::span(reinterpret_cast<const uint8_t*>(files.back().data()),
                                 files.back().size());
    const spelt::vision::JpegHeader header = spelt::vision::ReadJpegHeader(bytes);
    spelt::Philox philox(spelt::AnySeed(std::vector<uint32_t>{static_cast<uint32_t>(i)}));
    spelt::vision::PhiloxCropDraws draws(philox);
    boxes.push_back(spelt::vision::RandomResizedCropParams(header.height, header.width,
                                                            {0.08, 1.0}, {0.75, 4.0 / 3}, draws));
  }
  if (files.empty()) {
    std::fprintf(stderr, "no .jpg files in %s\n", argv[1]);
    return 2;
  }
  auto bytes_of = [&](size_t i) {
    return std::span(reinterpret_cast<const uint8_t*>(files[i].data()), files[i].size());
  };
  std::vector<uint8_t> rows;
  const std::vector<std::pair<const char*, std::function<void(size_t)>>> cases = {
      {"full", [&](size_t i) { spelt::vision::DecodeJpeg(bytes_of(i)); }},
      {"codec-crop", [&](size_t i) { CodecCrop(files[i], boxes[i], rows); }},
      {"spelt-fused", [&](size_t i) {
         spelt::vision::DecodeJpegCropResize(bytes_of(i), boxes[i], size, size, i % 2 == 1);
       }},
  };
  std::vector<std::vector<double>> rates(cases.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const double start = CpuSeconds();
      for (size_t i = 0; i < files.size(); ++i) cases[c].second(i);
      rates[c].push_back(static_cast<double>(files.size()) / (CpuSeconds() - start));
    }
  }
  std::vector<double> medians;
  for (auto& r : rates) {
    std::sort(r.begin(), r.end());
    medians.push_back(r[r.size() / 2]);
  }
  std::printf("%zu JPEGs, %d reps, %dx%d output: images per CPU second, median (min-max)\n",
              files.size(), reps, size, size);
  for (size_t c = 0; c < cases.size(); ++c) {
    std::printf("  %-12s %8.0f (%.0f-%.0f)  x full %5.2f\n", cases[c].first, medians[c],
                rates[c].front(), rates[c].back(), medians[c] / medians[0]);
  }
  return 0;
}
