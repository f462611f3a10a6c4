// test_cuda_api.cpp — the tiles the GPU rungs compute (cuda_api.hpp): kernel_tiles per rung, pass
// and d, and problem_tiles, hopper's forward at d = 64 choosing Br = 192 or 128 by how many tile
// products each computes: work(Br) = sum over query tiles i of Br x (key tiles computed).
#include <doctest/doctest.h>

#include "cuda/host/cuda_api.hpp"

using namespace fd;
using cuda::Pass;

namespace {

Mask causal(index_t n, index_t m, CausalAlign align = CausalAlign::top_left) {
  return AttnParams{true, align, {}}.mask_for(n, m);
}
Mask full(index_t n, index_t m) {
  return AttnParams{}.mask_for(n, m);
}

// The count problem_tiles compares, here by hand: rows x key tiles computed.
double work(index_t n, index_t m, index_t Br, const Mask& mask) {
  const Tiling t{n, m, Br, 128};
  double rows = 0.0;
  for (index_t i = 0; i < t.Tr(); ++i) rows += double(Br * computed_key_tiles(t, mask, i));
  return rows;
}

}  // namespace

TEST_CASE("kernel_tiles: each rung's fixed tiles by pass and d") {
  CHECK(cuda::kernel_tiles(Impl::hopper, 64).Br == 192);
  CHECK(cuda::kernel_tiles(Impl::hopper, 128).Br == 128);
  CHECK(cuda::kernel_tiles(Impl::hopper, 64).Bc == 128);
  CHECK(cuda::kernel_tiles(Impl::hopper, 64, Pass::bwd).Br == 128);
  CHECK(cuda::kernel_tiles(Impl::hopper, 128, Pass::bwd).Br == 64);
  CHECK(cuda::kernel_tiles(Impl::mma, 64).Br == 128);
  CHECK(cuda::kernel_tiles(Impl::mma, 64, Pass::bwd).Br == 64);
}

TEST_CASE(
    "problem_tiles: hopper's forward at d = 64 takes Br = 192 where its padding costs less "
    "than three consumer warpgroups gain") {
  // n = m = 1024: 6 query tiles of 192 (the last 64 rows padded) x 8 key tiles = 9216 rows x tiles
  // against 8 x 8 x 128 = 8192 (1.125x): 192. Causal: 192 x (2 + 3 + 5 + 6 + 8 + 8) = 6144
  // against 128 x 36 = 4608 (1.33x): 128.
  CHECK(work(1024, 1024, 192, full(1024, 1024)) == 9216.0);
  CHECK(work(1024, 1024, 128, full(1024, 1024)) == 8192.0);
  CHECK(work(1024, 1024, 192, causal(1024, 1024)) == 6144.0);
  CHECK(work(1024, 1024, 128, causal(1024, 1024)) == 4608.0);
  CHECK(cuda::problem_tiles(Impl::hopper, 1024, 1024, 64, full(1024, 1024)).Br == 192);
  CHECK(cuda::problem_tiles(Impl::hopper, 1024, 1024, 64, causal(1024, 1024)).Br == 128);
  // Long rows: the padding and the diagonal weigh little, 192 either way.
  for (index_t n : {4096, 16384}) {
    CHECK(cuda::problem_tiles(Impl::hopper, n, n, 64, full(n, n)).Br == 192);
    CHECK(cuda::problem_tiles(Impl::hopper, n, n, 64, causal(n, n)).Br == 192);
  }
  // The rule on any shape: 192 exactly where work(192) <= 1.2 work(128).
  for (index_t n : {1, 100, 150, 192, 256, 384, 500, 1000, 2000, 3000})
    for (index_t m : {1, 100, 700, 1024, 2500})
      for (bool c : {false, true})
        for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
          const Mask mask = c ? causal(n, m, align) : full(n, m);
          const bool three =
              work(n, m, 192, mask) <= cuda::kHopperThreeConsumerGain * work(n, m, 128, mask);
          INFO("n " << n << " m " << m << " causal " << c << " align " << int(align));
          CHECK(cuda::problem_tiles(Impl::hopper, n, m, 64, mask).Br == (three ? 192 : 128));
          CHECK(cuda::problem_tiles(Impl::hopper, n, m, 64, mask).Bc == 128);
        }
  // Elsewhere the rung's fixed tiles: d = 128, the backward, the other rungs.
  CHECK(cuda::problem_tiles(Impl::hopper, 1024, 1024, 128, causal(1024, 1024)).Br == 128);
  CHECK(cuda::problem_tiles(Impl::hopper, 1024, 1024, 64, causal(1024, 1024), Pass::bwd).Br == 128);
  CHECK(cuda::problem_tiles(Impl::mma, 1024, 1024, 64, causal(1024, 1024)).Br == 128);
  CHECK(cuda::problem_tiles(Impl::simt, 1024, 1024, 64, full(1024, 1024)).Br == 64);
}
