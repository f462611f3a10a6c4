// tiles.cpp — the fast path's tiles for a shape on this machine (fast_attention.hpp, "Tiles"):
//   Bc: the largest of 512, 256, 128, 64 keys (the backward: of 128, 64) whose step fits L2,
//   Br = 128, halved down to 32 in the forward while heads x query tiles < 2 x threads;
//   d' = d padded to whole vectors of the kernels that run (levels.hpp).
#include <unistd.h>

#include <algorithm>

#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/fast/levels.hpp"

namespace fd::fast {

TileSizes tiles_for(const Shape& s, Pass pass, index_t threads, index_t element_bytes,
                    index_t l2_bytes) {
  const index_t l2 = l2_bytes > 0 ? l2_bytes : index_t(1) << 20;
  const index_t W = active_level().kernels->simd_bytes / element_bytes, dp = (s.d + W - 1) / W * W,
                Br = 128;
  auto bytes = [&](index_t Bc) {  // (the backward's dQ partial rows: doubles)
    return pass == Pass::fwd ? (2 * Bc * dp + Br * Bc + 2 * Br * dp) * element_bytes
                             : (5 * Bc * dp + 2 * Br * Bc + 3 * Br * dp) * element_bytes +
                                   Br * dp * index_t(sizeof(double));
  };
  index_t Bc = pass == Pass::fwd ? 512 : 128;
  while (Bc > 64 && bytes(Bc) > l2) Bc /= 2;
  index_t br = Br;
  if (pass == Pass::fwd)
    while (br > 32 && s.heads() * ceil_div(s.n, br) < 2 * threads) br /= 2;
  return {std::max<index_t>(1, std::min(br, s.n)), std::max<index_t>(1, std::min(Bc, s.m))};
}

TileSizes tiles_for(const Shape& s, Pass pass, index_t threads, index_t element_bytes) {
  static const index_t l2 = std::max<long>(0, sysconf(_SC_LEVEL2_CACHE_SIZE));
  return tiles_for(s, pass, threads, element_bytes, l2);
}

}  // namespace fd::fast
