// head_dims.hpp — the head dims d each GPU kernel is compiled for: one list per rung, in a header
// that g++ and nvcc both read. The host's refusals (rules.cpp, decode_rules.cpp; in a build
// without CUDA too) and the launch switches (launch/) derive from these lists, and each rung's
// header checks, at every d of its list, that its tiles fit shared memory and its accumulators the
// registers (static_asserts next to its tile constants):
//
//   rung      d        what bounds it                               the arithmetic
//   simt      64, 128  d / 64 float4 columns of O per thread        rungs/simt.cuh
//   tc        64, 128  rows of d / 8 16-byte chunks, whole swizzle  rungs/tc.cuh
//                      groups of 8
//   mma       64, 128  tc's rows; O of two row fragments a warp     rungs/mma.cuh
//   mma bwd   64, 128  tc's rows; dK and dV of a warp's keys        rungs/mma_backward.cuh
//   hopper    64, 128, 64-column chunks; d = 256 with 64-key tiles rungs/hopper.cuh
//             256      (Q and two stages: 192 KiB), O in 128 + 48
//                      registers
//   hopper    64, 128  dK, dV, S^T and dP^T of 64 keys in 240        rungs/hopper_backward.cuh
//     bwd              registers
//   decode    64, 128  a key row of 1 to 32 16-byte chunks          at_scale/decode.cuh
//   teaching  any d whose tiles fit shared memory (checked when launched, launch/teaching.cu)
//
// A new d on a rung: add it to the rung's list; the rung's static_asserts say whether its tiles
// hold it, the launch compiles its kernels at that d, and the refusal names it.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "flashdemo/host_device/base.hpp"

namespace fd::cuda {

// The most shared memory one thread block may opt into on sm_90 (227 KiB), and the most
// registers a thread may hold.
inline constexpr std::size_t kSmemOptIn = 227 * 1024;
inline constexpr int kMaxRegisters = 255;

// A list of head dims, in increasing order, as a type: the launch compiles a kernel per entry.
template <int... Ds>
struct HeadDims {
  static constexpr bool takes(index_t d) { return ((d == Ds) || ...); }
  // Whether Fits::at<d>() holds at every d of the list (a rung's static_assert).
  template <class Fits>
  static constexpr bool all() {
    return (Fits::template at<Ds>() && ...);
  }
  static std::vector<int> list() { return {Ds...}; }
  // The list as a sentence says it: "64 and 128", "64, 128 and 256".
  static std::string english() {
    const int d[] = {Ds...};
    const std::size_t count = sizeof...(Ds);
    std::string out;
    for (std::size_t k = 0; k < count; ++k)
      out += std::string(k == 0 ? "" : k + 1 == count ? " and " : ", ") + std::to_string(d[k]);
    return out;
  }
};

// Calls f(std::integral_constant<int, kD>{}) for the kD of the list equal to d; false when none is.
template <int... Ds, class F>
bool with_head_dim(HeadDims<Ds...>, index_t d, F&& f) {
  return ((d == Ds ? (f(std::integral_constant<int, Ds>{}), true) : false) || ...);
}

using SimtHeadDims = HeadDims<64, 128>;
using TcHeadDims = HeadDims<64, 128>;
using MmaHeadDims = HeadDims<64, 128>;
using MmaBackwardHeadDims = HeadDims<64, 128>;
using HopperHeadDims = HeadDims<64, 128, 256>;
using HopperBackwardHeadDims = HeadDims<64, 128>;
using DecodeHeadDims = HeadDims<64, 128>;

}  // namespace fd::cuda
