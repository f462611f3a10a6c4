// params.hpp — the parameters of one attention problem besides its arrays (no Eigen, so CUDA
// code includes it too).
//
//   scale = 1 / sqrt(d) unless given;   mask = causal or not, top-left or bottom-right (mask.hpp)
#pragma once

#include <cmath>
#include <optional>

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/mask.hpp"

namespace fd {

struct AttnParams {
  bool causal = false;
  CausalAlign align = CausalAlign::top_left;
  std::optional<double> scale;  // none: 1 / sqrt(d)

  double scale_for(index_t d) const { return scale ? *scale : 1.0 / std::sqrt(double(d)); }
  Mask mask_for(index_t n, index_t m) const { return Mask{causal, align, n, m}; }
};

}  // namespace fd
