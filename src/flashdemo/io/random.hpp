// random.hpp — the random inputs of the lecture, drawn exactly as PyTorch's CPU generator does.
//
// torch.manual_seed(s) seeds a 32-bit Mersenne Twister (mt19937) with s. A uniform double takes
// 53 bits of a 64-bit draw (two 32-bit outputs, the first in the high half): u = bits * 2^-53.
// Normals come from the Box-Muller transform, r = sqrt(-2 log(1 - u)), theta = 2 pi u':
//   * fewer than 16 values: one pair at a time, u1 -> theta, u2 -> r; r cos(theta) is returned
//     and r sin(theta) kept for the next draw;
//   * 16 or more values (float64): all uniforms first, then each group of 16 turns into 8 pairs
//     (u_j -> r, u_{j+8} -> theta); a tail that is not a whole group redraws the last 16.
// So flashdemo's default inputs are the lecture's: x = randn(10) * 5 begins 7.70, -1.47, ...
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "flashdemo/attention.hpp"

namespace fd {

class TorchGenerator {
 public:
  explicit TorchGenerator(std::uint32_t seed) : engine_(seed) {}

  // torch.randn(count, dtype=float64) on the CPU.
  std::vector<double> randn(index_t count);

  // torch.randn(rows, cols, dtype=float64), row-major, cast to T.
  template <class T>
  Mat<T> randn_matrix(index_t rows, index_t cols);

 private:
  double uniform();        // [0, 1) from 53 random bits
  double normal_serial();  // one Box-Muller value, caching the second
  std::vector<double> normal_fill(index_t count);

  std::mt19937 engine_;
  std::optional<double> next_normal_;
};

}  // namespace fd
