// mma.cuh — the rung `mma`: the tc kernel (tc.cuh) with the two ideas it adds over tc, each a
// template switch of that kernel:
//   kM = 2   each warp owns two 16-row fragments (Br = 128): every K and V fragment read from
//            shared memory feeds two mma instead of one
//   Async    cp.async: tile j + 1 is copied into a second buffer while tile j is computed
// Its backward is mma_backward.cuh.
//
// Per block, at head dim d (tc.cuh's arithmetic at kM = 2, two stages):
//   shared memory  2 bytes x (Q: 128 d + K, V: 2 x 2 x 64 d)
//                  d = 64 48 KiB, d = 128 96 KiB (d = 256 would take 192 KiB)
//   registers      O 2 d / 2 + S 2 Bc / 2 (+ Q's A fragments 2 d / 4 at d = 64)
//                  d = 64 160, d = 128 192 of 255; d = 256 would take 320: it needs one row
//                  fragment per warp (tc's kM = 1) or O split across more warps
#pragma once

#include "cuda/host/head_dims.hpp"
#include "cuda/rungs/tc.cuh"

namespace fd::cuda {

inline constexpr bool kMmaAsync = true;
inline constexpr int kMmaM = 2;
static_assert(MmaHeadDims::all<TcFits<kMmaAsync, kMmaM>>(),
              "a head dim of mma (head_dims.hpp) that its tiles do not hold");
static_assert(tc_registers(256, kMmaM) == 320, "mma at d = 256: 320 accumulator registers");
static_assert(kernel_tiles(Impl::mma, 64).Br == 64 * kMmaM &&
                  kernel_tiles(Impl::mma, 64).Bc == kTcBc,
              "the tiles the host says mma computes (cuda_api.hpp)");

}  // namespace fd::cuda
