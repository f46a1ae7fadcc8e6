// The resampling core of ResizeBilinearAntialias, on a strided view, for the fused JPEG path.
#ifndef SPELT_VISION_RESIZE_H_
#define SPELT_VISION_RESIZE_H_

#include <cstddef>
#include <cstdint>

#include "spelt/vision.h"

namespace spelt::vision::internal {

// Pixels not owned: `height` rows of `width` * `channels` bytes, `stride` bytes apart.
struct ImageView {
  const uint8_t* data = nullptr;
  int height = 0;
  int width = 0;
  int channels = 3;
  size_t stride = 0;
  const uint8_t* row(int y) const { return data + static_cast<size_t>(y) * stride; }
};

// Pillow's resize of box (x0, y0, x1, y1) of `in` to out_height x out_width, BILINEAR.
// REQUIRES (checked by the callers): a valid box inside `in`, output sides >= 1.
Image ResampleBilinear(const ImageView& in, double x0, double y0, double x1, double y1,
                       int out_height, int out_width);

}  // namespace spelt::vision::internal

#endif  // SPELT_VISION_RESIZE_H_
